// An accessibility pass (axe-core, the engine of Lighthouse's and the
// browsers' audits) over the playground, the tutorial, the Compare and
// sweep views and the doctor's page, at a desktop's size and a phone's,
// each with something on it (a run, lessons with wide tables, a compare, a
// doctor watching a client): no serious or critical violation, and every
// view inside the one main landmark. The same visits leave the README's tour
// screenshots: artifacts/tour-<view>-<desktop|phone>.png.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { VIEWPORTS, artifacts, launchBrowser, loopThrough, startDoctor, startRedis, startServe } from '../e2e/harness.mjs';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let redis, serve, doctor, browser, app;

before(async () => {
  redis = await startRedis();
  serve = await startServe(redis.url);
  doctor = await startDoctor(redis.url, serve.base, ['--think-time-us', '100000']);
  app = await loopThrough(doctor);
  browser = await launchBrowser();
});

after(async () => {
  await app?.stop();
  await browser?.close();
  doctor?.stop();
  await serve?.stop();
  await redis?.stop();
});

/** Rules kept at 0 whatever their impact: each view keeps the main landmark, all content in landmarks, roles where they are allowed. */
const ALWAYS = ['landmark-one-main', 'region', 'aria-allowed-role', 'landmark-unique', 'scrollable-region-focusable'];

/** axe-core's serious and critical violations (and any of ALWAYS) on the page as it is now, one line each. */
async function seriousViolations(page) {
  await page.evaluate(axeSource); // evaluated by the driver: the page's CSP does not apply
  const violations = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations));
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical' || ALWAYS.includes(v.id))
    .map((v) => `${v.impact} ${v.id}: ${v.help} — ${v.nodes.slice(0, 10).map((n) => n.target.join(' ')).join(', ')}`);
}

for (const vp of VIEWPORTS) {
  describe(`at ${vp.width}×${vp.height}`, () => {
    let context, page;
    const errors = [];
    before(async () => {
      context = await browser.newContext({ viewport: { width: vp.width, height: vp.height } });
      page = await context.newPage();
      page.on('pageerror', (e) => errors.push(e.message));
    });
    after(async () => {
      await context?.close();
      assert.deepEqual(errors, []);
    });
    const tour = (name) => page.screenshot({ path: join(artifacts, `tour-${name}-${vp.name}.png`) });

    test('the playground, after a run', { timeout: 60_000 }, async () => {
      await page.goto(serve.base);
      await page.waitForSelector('#inline-editor .cm-content');
      await page.check('input[name="mode"][value="pipeline"]');
      await page.click('#run');
      await page.waitForSelector('#summary dl', { timeout: 20_000 });
      await page.waitForTimeout(150);
      await tour('playground');
      assert.deepEqual(await seriousViolations(page), []);
    });

    test('the tutorial, lessons run (their tables, RESP previews and charts on screen)', { timeout: 240_000 }, async () => {
      await page.click('#tab-tutorial');
      // Lessons whose results hold wide tables (3, 4, 11) and RESP previews (7): boxes that scroll on a phone.
      for (const n of [3, 4, 7, 11, 2]) {
        await page.locator(`#lesson-${n} button.run-lesson`).click();
        await page.waitForSelector(`#lesson-${n} .lesson-result[data-state="done"]`, { timeout: 120_000 });
      }
      await page.locator('#lesson-2').scrollIntoViewIfNeeded();
      await page.waitForTimeout(150);
      await tour('tutorial');
      assert.deepEqual(await seriousViolations(page), []);
    });

    test('Compare and the sweep, each run', { timeout: 120_000 }, async () => {
      await page.click('#tab-compare');
      await page.click('#compare-run');
      await page.waitForSelector('#compare-out [data-table="compare"]', { timeout: 60_000 });
      await page.waitForTimeout(150);
      await tour('compare');
      assert.deepEqual(await seriousViolations(page), []);
      await page.click('#tab-sweep');
      await page.fill('#sweep-total', '2000');
      await page.fill('#sweep-sizes', '1, 10, 100, 1000');
      await page.click('#sweep-run');
      await page.waitForSelector('#sweep-out [data-table="sweep"]', { timeout: 80_000 });
      await page.waitForTimeout(150);
      await tour('sweep');
      assert.deepEqual(await seriousViolations(page), []);
    });

    test("the doctor's page, watching a client", { timeout: 60_000 }, async () => {
      await page.goto(doctor.base);
      await page.waitForSelector('li.missed', { timeout: 20_000 });
      await page.waitForSelector('.conn svg');
      await tour('doctor');
      assert.deepEqual(await seriousViolations(page), []);
    });
  });
}
