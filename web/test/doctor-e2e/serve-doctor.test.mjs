// The doctor's page as `pipelab serve` serves it, at /doctor.html, in
// headless Chromium at both sizes. Without --doctor-listen the page says
// plainly that this server runs no doctor and how to get one (no red "does
// not answer", no empty cards, no request answered 4xx); with it the page
// reads the server's doctor at /api/v1/doctor while an ioredis loop runs
// through the doctor's port.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, launchBrowser, loopThrough, seriousAxeViolations, shot, startRedis, startServe, VIEWPORTS } from '../e2e/harness.mjs';

let redis, browser;

before(async () => {
  redis = await startRedis();
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await redis?.stop();
});

/** `url` in a fresh context at `viewport`, with every response of 400 or more, console error and uncaught error it met. */
async function open(url, viewport) {
  const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } });
  const page = await context.newPage();
  const failed = [];
  const errors = [];
  page.on('response', (r) => r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  return { page, failed, errors, close: () => context.close() };
}

describe('pipelab serve without --doctor-listen', () => {
  let serve;
  before(async () => {
    serve = await startServe(redis.url);
  });
  after(async () => {
    await serve?.stop();
  });

  for (const viewport of VIEWPORTS) {
    test(`/doctor.html says no doctor runs here and how to get one (${viewport.name})`, async () => {
      const { page, failed, errors, close } = await open(`${serve.base}doctor.html`, viewport);
      try {
        await page.waitForSelector('#no-doctor', { timeout: 15000 });
        assert.equal(await page.getAttribute('#no-doctor', 'data-why'), 'no_doctor');
        const text = await page.textContent('#no-doctor');
        assert.match(text, /No doctor runs on this server/);
        assert.match(text, /started without --doctor-listen/);
        assert.match(text, /pipelab serve --doctor-listen 127\.0\.0\.1:6380/);
        assert.match(text, /pipelab doctor --listen 127\.0\.0\.1:6380 --upstream redis:\/\/127\.0\.0\.1:6379 --ui 127\.0\.0\.1:8081/);
        assert.match(text, /docs\/doctor\.md/);
        assert.equal(await page.getAttribute('#no-doctor a', 'href'), './', 'a way back to the playground');

        // Neither the red banner nor the empty cards.
        assert.equal(await page.isVisible('#banner'), false, await page.textContent('#banner'));
        assert.doesNotMatch(await page.textContent('body'), /does not answer|may have stopped/);
        for (const id of ['totals', 'missed', 'depth', 'timelines']) assert.equal(await page.isVisible(`#${id}`), false, `#${id} is hidden`);

        // It does not poll a doctor that is not there: still so a while later, with no request refused.
        await page.waitForTimeout(2500);
        assert.equal(await page.locator('#no-doctor').count(), 1);
        assert.equal(await page.isVisible('#banner'), false);
        assert.deepEqual(failed, [], 'no response of 400 or more');
        assert.deepEqual(errors, [], 'no console or page error');

        // Readable on a phone: the long commands wrap instead of widening the page.
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 0, `the page is ${overflow} px wider than the screen`);
        assert.deepEqual(await seriousAxeViolations(page, 'body'), []);
        await shot(page, `doctor-serve-none-${viewport.name}`);
      } finally {
        await close();
      }
    });
  }
});

describe('pipelab serve --doctor-listen', () => {
  let serve, app;
  before(async () => {
    const port = await freePort();
    serve = await startServe(redis.url, ['--doctor-listen', `127.0.0.1:${port}`]);
    app = await loopThrough({ host: '127.0.0.1', port });
  });
  after(async () => {
    await app?.stop();
    await serve?.stop();
  });

  for (const viewport of VIEWPORTS) {
    test(`/doctor.html reads the server's doctor (${viewport.name})`, async () => {
      const { page, failed, errors, close } = await open(`${serve.base}doctor.html`, viewport);
      try {
        // The loop's commands counted and its single SETs listed as a missed pipeline.
        await page.waitForFunction(() => Number(document.querySelector('#totals [data-metric="commands"]')?.dataset.value) >= 20, null, { timeout: 20000 });
        await page.waitForSelector('li.missed[data-pattern="SET user:*"]', { timeout: 20000 });
        await page.waitForFunction(() => Number(document.querySelector('.depth-row[data-min="1"]')?.dataset.flights) >= 20, null, { timeout: 20000 });
        assert.equal(await page.locator('#no-doctor').count(), 0);
        assert.equal(await page.isVisible('#banner'), false, await page.textContent('#banner'));
        assert.deepEqual(failed, [], 'no response of 400 or more');
        assert.deepEqual(errors, [], 'no console or page error');
      } finally {
        await close();
      }
    });
  }
});
