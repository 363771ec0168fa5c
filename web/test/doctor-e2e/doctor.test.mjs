// End to end: `pipelab doctor --ui` in front of a real redis-server, an
// ioredis client looping over single SETs (and one pipeline of 100) through
// it, and the doctor's page (web/dist/doctor.html) in headless Chromium: the
// missed pipeline is listed, the depth histogram counts both kinds of round
// trip, the client's flights are drawn on a timeline, and "open in
// playground" opens the pattern as a batch in a real `pipelab serve`.
// Screenshot: artifacts/doctor-ui.png.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser, loopThrough, shot, startDoctor, startRedis, startServe } from '../e2e/harness.mjs';

let redis, serve, doctor, browser, page, app;
const pageErrors = [];

before(async () => {
  redis = await startRedis();
  serve = await startServe(redis.url);
  doctor = await startDoctor(redis.url, serve.base, ['--think-time-us', '1000000']);
  app = await loopThrough(doctor);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
});

after(async () => {
  await app?.stop();
  await browser?.close();
  doctor?.stop();
  await serve?.stop();
  await redis?.stop();
});

test('the --ui page lists the loop as a missed pipeline and draws its flights', async () => {
  await page.goto(doctor.base);
  // Runs of 39 single SETs, each ended by the next pipeline (the first one
  // also holds ioredis's INFO ready check), or still going on.
  const pure = () => {
    const li = [...document.querySelectorAll('li.missed[data-pattern="SET user:*"]')].find((l) => /^SET user:\* ×\d+ sequential$/.test(l.querySelector('.what').textContent));
    // One snapshot of the item (the page redraws it each second).
    return li && { text: li.querySelector('.what').textContent, commands: Number(li.dataset.commands), saving: Number(li.querySelector('[data-metric="saving_ms"]').dataset.value), href: li.querySelector('a.open-playground').getAttribute('href') };
  };
  await page.waitForFunction(pure, null, { timeout: 15000 });
  const m = await page.evaluate(pure);
  assert.equal(m.text, `SET user:* ×${m.commands} sequential`);
  assert.ok(m.commands >= 20, `${m.commands}`);
  assert.equal(m.saving, (m.commands - 1) * 0.5, 'saving = (n − 1) × the default 0.5 ms RTT');
  await page.waitForFunction(() => Number(document.querySelector('.depth-row[data-min="1"]')?.dataset.flights) >= 20);

  // Depth histogram: each pipeline of 100 is one round trip of 100–999.
  assert.ok(Number(await page.locator('.depth-row[data-min="100"]').getAttribute('data-flights')) >= 1);
  assert.ok(Number(await page.locator('.depth-row[data-min="1"]').getAttribute('data-flights')) >= 20);

  // The timeline of the client's connection has bars, among them the deep one.
  const conn = page.locator('.conn').first();
  await page.waitForFunction(() => Number(document.querySelector('.conn svg')?.dataset.flights) >= 20);
  assert.ok((await conn.locator('rect[data-commands="1"]').count()) >= 20);
  await page.waitForFunction(() => document.querySelector('.conn svg rect[data-commands="100"]') !== null);
  await shot(page, 'doctor-ui');

  // "open in playground": the pattern as a batch on the Compare view of the serve.
  const href = m.href;
  assert.ok(href.startsWith(`${serve.base}#s=`), href);
  const pg = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await pg.goto(href);
  // The page opens with its demo batch and restores the permalink after
  // (decodePermalink is async): wait for the restored text, or the error.
  await pg.waitForFunction(() => window.pipelab?.editors?.inline?.state.doc.toString().startsWith('SET user:') || document.getElementById('permalink-error')?.textContent);
  assert.equal(await pg.locator('#permalink-error').count(), 0, 'the permalink opens');
  const text = await pg.evaluate(() => window.pipelab.editors.inline.state.doc.toString());
  const lines = text.split('\n');
  assert.equal(lines[0], 'SET user:0 1');
  assert.ok(lines.length >= 3 && lines.every((l, i) => l === `SET user:${i} 1`), text.slice(0, 200));
  await pg.locator('#compare-view').waitFor({ state: 'visible' });
  // At the doctor's RTT (its default 0.5 ms, which its saving used), not Compare's own default.
  assert.equal(await pg.inputValue('#compare-rtt'), '0.5');
  assert.equal(await pg.inputValue('#rtt'), '0.5');
  await pg.click('#compare-run');
  await pg.waitForSelector('#compare-out .compare-ran', { timeout: 60000 });
  assert.match(await pg.innerText('#compare-out .compare-ran'), / at 0\.5 ms RTT,/);
  await pg.close();
  assert.deepEqual(pageErrors, []);
});
