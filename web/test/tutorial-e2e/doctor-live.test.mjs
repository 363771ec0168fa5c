// Lesson 10 watching a real application live, in headless Debian Chromium:
// `pipelab serve --doctor-listen` with its own redis-server (as scripts/run.sh
// starts it), an application written here with node's `net` (RESP SETs one at
// a time, each reply awaited) through the doctor's port, and the lesson's
// panel showing the loop as a missed pipeline, at the lesson's RTT, on a
// desktop and a phone. Screenshots: artifacts/tutorial-doctor-live-*.png.
// (Without the flag, tutorial.test.mjs checks the fallback and the replay.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { join } from 'node:path';
import { artifacts, launchBrowser, startServe, VIEWPORTS } from '../e2e/harness.mjs';

const N = 200;
let serve, browser, page, app;
const errors = [];

/** A client of the doctor's port: `set(key)` writes one SET and resolves on its reply. */
function connect(host, port) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, host);
    let pending = null;
    let buf = '';
    socket.on('data', (d) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n');
      if (end >= 0 && pending) {
        const line = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const p = pending;
        pending = null;
        p(line);
      }
    });
    socket.once('error', reject);
    socket.once('connect', () =>
      resolve({
        set(key) {
          const arg = (a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
          return new Promise((res) => {
            pending = res;
            socket.write(`*3\r\n${arg('SET')}${arg(key)}${arg('x')}`);
          });
        },
        close: () => new Promise((res) => socket.end(res)),
      }),
    );
  });
}

before(async () => {
  serve = await startServe(null, ['--doctor-listen', '127.0.0.1:0']);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: VIEWPORTS[0] });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(serve.base);
  await page.click('#tab-tutorial');
  await page.locator('#lesson-10').scrollIntoViewIfNeeded();
});

after(async () => {
  await app?.close().catch(() => {});
  await browser?.close();
  await serve?.stop();
});

const panelMetrics = () => page.$$eval('#lapp-live .metrics [data-metric]', (els) => Object.fromEntries(els.map((e) => [e.dataset.metric, Number(e.dataset.value)])));

/** The `SET user:*` missed pipeline as the panel lists it now. */
const loopItem = () =>
  page.$$eval('#lapp-live li.missed[data-pattern="SET user:*"]', (lis) =>
    lis.map((li) => ({
      commands: Number(li.dataset.commands),
      saving: Number(li.querySelector('[data-metric="saving_ms"]').dataset.value),
      what: li.querySelector('.what').textContent,
      why: li.querySelector('.why')?.textContent ?? '',
      goingOn: li.querySelector('.badge') !== null,
    })),
  );

test('the lesson names the doctor, and its panel shows a real loop through it as a missed pipeline', { timeout: 90_000 }, async () => {
  await page.waitForSelector('#lapp-live[data-state="live"] #lapp-doctor-addr');
  const info = await (await fetch(`${serve.base}api/v1/info`)).json();
  const addr = await page.innerText('#lapp-doctor-addr');
  assert.equal(addr, info.doctor.listen, 'the address /api/v1/info gives');
  assert.match(await page.innerText('#lapp-live'), /Point your application at 127\.0\.0\.1:\d+ instead of Redis/);
  assert.equal(await page.locator('#lesson-10 button.run-lesson').count(), 1, 'the replay is still there');

  const [host, port] = addr.split(':');
  app = await connect(host, Number(port));
  for (let i = 0; i < N; i++) assert.equal(await app.set(`user:${i}`), '+OK');

  // Going on (the connection is open), saving at the lesson's 0.5 ms.
  await page.waitForFunction((n) => [...document.querySelectorAll('#lapp-live li.missed[data-pattern="SET user:*"]')].some((li) => Number(li.dataset.commands) === n), N, { timeout: 20_000 });
  let [m] = await loopItem();
  assert.deepEqual({ commands: m.commands, what: m.what, goingOn: m.goingOn }, { commands: N, what: `SET user:* ×${N} sequential`, goingOn: true });
  assert.equal(m.saving, (N - 1) * 0.5);
  assert.ok(m.why.length > 0, 'why it was judged independent');
  let live = await panelMetrics();
  assert.ok(live.live_commands >= N, JSON.stringify(live));
  assert.equal(live.live_round_trips, live.live_commands, 'one round trip per command');
  assert.equal(live.live_mean_depth, 1);
  assert.equal(live.live_missed, 1);
  assert.equal(live.live_saving_ms, (N - 1) * 0.5);
  // Its flights on a timeline, each of depth 1.
  await page.waitForFunction(() => Number(document.querySelector('#lapp-live .conn svg')?.dataset.flights) >= 20);
  assert.ok((await page.locator('#lapp-live .conn rect[data-commands="1"]').count()) >= 20);

  // The lesson's RTT slider sets the RTT of the savings.
  await page.$eval('#lapp-rtt', (e) => {
    e.value = '2';
    e.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await page.waitForFunction((want) => Number(document.querySelector('#lapp-live li.missed[data-pattern="SET user:*"] [data-metric="saving_ms"]')?.dataset.value) === want, (N - 1) * 2, { timeout: 10_000 });
  await page.locator('#lapp-live').screenshot({ path: join(artifacts, 'tutorial-doctor-live-desktop.png') });

  // Closed, the run ends: counted in the summary, no longer going on.
  await app.close();
  app = null;
  await page.waitForFunction(() => document.querySelector('#lapp-live [data-metric="live_missed"] dd')?.textContent.startsWith('1 ended'), null, { timeout: 20_000 });
  [m] = await loopItem();
  assert.equal(m.goingOn, false);
  assert.equal(m.saving, (N - 1) * 2);
  live = await panelMetrics();
  assert.equal(live.live_saving_ms, (N - 1) * 2);
  assert.equal(errors.length, 0, `page errors: ${errors.join('; ')}`);
});

test('on a phone the live panel fits the screen', async () => {
  const phone = VIEWPORTS.find((v) => v.name === 'phone');
  try {
    await page.setViewportSize(phone);
    await page.locator('#lapp-live').scrollIntoViewIfNeeded();
    await page.waitForSelector('#lapp-live li.missed[data-pattern="SET user:*"]');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no horizontal scrolling (${overflow}px)`);
    const box = await page.$eval('#lapp-live', (e) => e.getBoundingClientRect().toJSON());
    assert.ok(box.left >= 0 && box.right <= phone.width, `the panel within the screen: ${JSON.stringify(box)}`);
    await page.locator('#lapp-live').screenshot({ path: join(artifacts, 'tutorial-doctor-live-phone.png') });
  } finally {
    await page.setViewportSize(VIEWPORTS[0]);
  }
});
