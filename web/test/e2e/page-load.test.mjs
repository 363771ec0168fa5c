// A page load asks for nothing the server does not have and logs no error:
// the playground at `/`, the tutorial view (scrolled through, so that every
// lesson's panel has drawn and asked what it asks) and the doctor's page at
// /doctor.html (which, on a `pipelab serve` without --doctor-listen, says so
// without a request answered 404), at a desktop's size and a phone's.
// Every response of 400 or more, failed request, console error and uncaught
// error is listed in the failure.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { VIEWPORTS, openPage, useServedBrowser } from './harness.mjs';

const lab = useServedBrowser();

/** Starts recording what went wrong on `page`: responses of 400 or more, failed requests, console and uncaught errors. */
function record(page) {
  const bad = [];
  page.on('response', (r) => r.status() >= 400 && bad.push(`HTTP ${r.status()} ${r.request().method()} ${r.url()}`));
  page.on('requestfailed', (r) => bad.push(`failed ${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on('console', (m) => m.type() === 'error' && bad.push(`console error: ${m.text()}`));
  page.on('pageerror', (e) => bad.push(`page error: ${e.message}`));
  return bad;
}

/** Waits until the page has asked for nothing for a while (its start-up fetches, the first polls). */
async function settle(page) {
  await page.waitForLoadState('networkidle', { timeout: 30_000 });
  await page.waitForTimeout(1500);
}

for (const vp of VIEWPORTS) {
  describe(`at ${vp.width}×${vp.height}`, () => {
    let tab;
    before(async () => {
      tab = await openPage(lab.browser, lab.serve.base, vp);
      // Nothing of this first load in flight: a reload would abort it, and that is no failure of the page.
      await settle(tab.page);
    });

    test('the playground at / loads with no failed request and no error', { timeout: 60_000 }, async () => {
      const { page } = tab;
      const bad = record(page);
      // The whole load again, recorded from its first request.
      await page.reload();
      await page.waitForSelector('#inline-editor .cm-content', { state: 'attached' });
      await page.waitForFunction(() => window.pipelab?.editors);
      await settle(page);
      assert.deepEqual(bad, []);
      // The page reports what it asked for, so a request that was never made cannot pass for one that succeeded.
      const asked = await page.evaluate(() => performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname));
      assert.ok(asked.includes('/api/v1/info'), `the page asked its server: ${asked.join(', ')}`);
    });

    test('the tutorial view, scrolled through, with no failed request and no error', { timeout: 90_000 }, async () => {
      const { page } = tab;
      const bad = record(page);
      await page.reload();
      await page.waitForSelector('#tabs');
      await page.click('#tab-tutorial');
      const lessons = await page.$$eval('.lesson', (ls) => ls.map((l) => l.id));
      assert.ok(lessons.length >= 10, `lessons: ${lessons}`);
      // Each lesson on screen in turn: panels that ask the server while visible (lesson 10's doctor) do.
      for (const id of lessons) {
        await page.locator(`#${id}`).scrollIntoViewIfNeeded();
        await page.waitForTimeout(300);
      }
      await settle(page);
      assert.deepEqual(bad, []);
    });

    test('/doctor.html loads with no failed request and no error', { timeout: 60_000 }, async () => {
      const { page } = tab;
      const bad = record(page);
      await page.goto(`${lab.serve.base}doctor.html`);
      // What this server has to say (it runs no doctor), or the banner of a doctor that does not answer.
      await page.waitForSelector('#no-doctor, #banner:not([hidden])', { timeout: 15_000 });
      await settle(page);
      assert.deepEqual(bad, []);
      assert.equal(await page.locator('#no-doctor').count(), 1, await page.innerText('body'));
      await tab.close();
      assert.deepEqual(tab.errors, []);
    });
  });
}
