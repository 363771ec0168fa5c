// The page served by the deployments a newcomer meets, at a desktop's size
// and a phone's: a team API behind `pipelab serve --token … --readonly-token
// …` (a place to give the token, kept in the tab's sessionStorage only,
// never in a URL, a cookie or a permalink; what a read-only token may not
// run marked before Run), and the public sandbox (`--sandbox`, on its own
// redis-server: what it refuses marked before Run, in every mode).
// Screenshots: artifacts/deployments-*.png.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { VIEWPORTS, artifacts, launchBrowser, startRedis, startServe } from './harness.mjs';

const TOKEN = 'team-secret-4f9c';
const READONLY = 'look-only-77ab';
const MODES = ['sequential', 'pipeline', 'transaction', 'auto'];

let redis, team, sandbox, browser;

before(async () => {
  redis = await startRedis();
  team = await startServe(redis.url, ['--token', TOKEN, '--readonly-token', READONLY]);
  sandbox = await startServe(null, ['--sandbox']);
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await team?.stop();
  await sandbox?.stop();
  await redis?.stop();
});

/** A new tab (its own sessionStorage) at `vp` on `url`; `urls` lists every URL it requested. */
async function openTab(vp, url) {
  const context = await browser.newContext({ viewport: { width: vp.width, height: vp.height } });
  const page = await context.newPage();
  const errors = [];
  const urls = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('request', (r) => urls.push(r.url()));
  await page.goto(url);
  await page.waitForSelector('#inline-editor .cm-content');
  return { page, errors, urls, close: () => context.close() };
}

const setBatch = (page, text) => page.evaluate((t) => window.pipelab.editors.setInline(t), text);

async function giveToken(page, token) {
  await page.fill('#token-input', token);
  await page.click('#token-use');
}

/** The JSON a permalink fragment holds (base64url of deflate-raw), decoded in the page. */
const permalinkJson = (page) => page.evaluate(async () => {
  const b64 = location.hash.slice(3).replace(/-/g, '+').replace(/_/g, '/');
  const bytes = Uint8Array.from(atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4)), (c) => c.charCodeAt(0));
  return new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate-raw'))).text();
});

for (const vp of VIEWPORTS) {
  describe(`at ${vp.width}×${vp.height}`, () => {
    test('a token-protected server: the page asks for the token, keeps it in the tab, never in a URL', { timeout: 60_000 }, async () => {
      const tab = await openTab(vp, team.base);
      const { page } = tab;
      // The page's first API call met 401: the field shows, asking.
      await page.waitForSelector('#token-form[data-state="asking"]');
      assert.match(await page.innerText('#token-note'), /needs an API token/);
      await page.screenshot({ path: join(artifacts, `deployments-${vp.name}-token.png`) });

      await giveToken(page, 'not-the-token');
      await page.waitForFunction(() => /refused the token/.test(document.getElementById('token-note').textContent));
      assert.equal(await page.getAttribute('#token-form', 'data-state'), 'asking');

      await giveToken(page, TOKEN);
      await page.waitForSelector('#token-form[data-state="set"]');
      await setBatch(page, 'SET tok:k 1\nINCR tok:k\nGET tok:k');
      await page.click('#run');
      await page.waitForSelector('#summary [data-key="ok"]', { timeout: 20_000 });
      assert.equal(await page.innerText('#summary [data-key="ok"] dd'), '3');

      // Where the token is, and where it never is.
      const stored = await page.evaluate(() => ({ session: sessionStorage.getItem('pipelab.token'), local: JSON.stringify({ ...localStorage }), cookie: document.cookie }));
      assert.equal(stored.session, TOKEN);
      assert.ok(!stored.local.includes(TOKEN) && !stored.cookie.includes(TOKEN), JSON.stringify(stored));
      await page.click('#permalink');
      await page.waitForFunction(() => location.hash.startsWith('#s='));
      assert.ok(!(await page.evaluate(() => location.href)).includes(TOKEN));
      const link = await permalinkJson(page);
      assert.match(link, /tok:k/);
      assert.ok(!link.includes(TOKEN), 'not in the permalink');
      assert.deepEqual(tab.urls.filter((u) => u.includes(TOKEN)), [], 'never in a request URL');

      // The same tab reloaded keeps it; Forget takes it away.
      await page.reload();
      await page.waitForSelector('#token-form[data-state="set"]');
      await page.click('#tab-playground');
      await setBatch(page, 'GET tok:k');
      await page.click('#run');
      await page.waitForFunction(() => document.querySelector('#summary [data-key="ok"] dd')?.textContent === '1');
      await page.click('#token-forget');
      assert.equal(await page.evaluate(() => sessionStorage.getItem('pipelab.token')), null);
      await page.waitForSelector('#token-form[data-state="asking"]');
      await tab.close();
      assert.deepEqual(tab.errors, []);

      // Another tab has to be given it again.
      const other = await openTab(vp, team.base);
      await other.page.waitForSelector('#token-form[data-state="asking"]');
      await other.close();
    });

    test('a read-only token: what it may not run is marked before Run, and Run stays off', { timeout: 60_000 }, async () => {
      const tab = await openTab(vp, team.base);
      const { page } = tab;
      await page.waitForSelector('#token-form[data-state="asking"]');
      await giveToken(page, READONLY);
      await page.waitForSelector('#token-form[data-state="set"]');
      await setBatch(page, 'GET tok:k\nSET tok:k 2');
      await page.waitForSelector('#run-warning:not([hidden])');
      assert.match(await page.innerText('#run-warning'), /^Command 2 \(line 2\) will be refused by this server: SET is refused/);
      assert.equal(await page.$eval('#run', (b) => b.disabled), true);
      await setBatch(page, 'GET tok:k');
      await page.waitForSelector('#run-warning', { state: 'hidden' });
      await page.click('#run');
      await page.waitForSelector('#summary dl, #summary .message.error', { timeout: 20_000 });
      assert.equal(await page.innerText('#summary [data-key="ok"] dd').catch(() => ''), '1', await page.innerText('#summary'));
      await tab.close();
      assert.deepEqual(tab.errors, []);
    });

    test('the sandbox: what it refuses (CONFIG SET) is marked before Run in every mode', { timeout: 60_000 }, async () => {
      const tab = await openTab(vp, sandbox.base);
      const { page } = tab;
      await page.waitForSelector('#sandbox-note:not([hidden])');
      await setBatch(page, 'SET k 1\nCONFIG SET dir /tmp');
      for (const mode of MODES) {
        await page.check(`input[name="mode"][value="${mode}"]`);
        await page.waitForSelector('#run-warning:not([hidden])');
        assert.match(await page.innerText('#run-warning'), /^Command 2 \(line 2\) will be refused by this server: CONFIG SET is not available in the sandbox/, mode);
        assert.equal(await page.$eval('#run', (b) => b.disabled), true, `${mode}: Run is off`);
      }
      await page.screenshot({ path: join(artifacts, `deployments-${vp.name}-sandbox-refused.png`) });
      await setBatch(page, 'SET k 1\nINFO server');
      await page.waitForSelector('#run-warning', { state: 'hidden' });
      await page.click('#run');
      await page.waitForFunction(() => document.querySelector('#summary [data-key="ok"] dd')?.textContent === '2');
      await tab.close();
      assert.deepEqual(tab.errors, []);
    });

    test('the sandbox: a visitor whose node went away is told on the answer of their next batch', { timeout: 60_000 }, async () => {
      const tab = await openTab(vp, sandbox.base);
      const { page } = tab;
      await page.waitForSelector('#sandbox-note:not([hidden])');
      assert.doesNotMatch(await page.innerText('#sandbox-note'), /gone-node/);
      // No answer still on its way to set the visitor's cookie after ours.
      await page.waitForLoadState('networkidle');
      // As a balancer leaves it after the visitor's node stopped: a cookie of another node.
      await page.context().addCookies([{ name: 'pipelab_sandbox', value: `gone-node.${'0'.repeat(32)}`, url: sandbox.base }]);
      await setBatch(page, 'PING');
      await page.click('#run');
      await page.waitForFunction(() => document.querySelector('#summary [data-key="ok"] dd')?.textContent === '1');
      assert.match(await page.innerText('#sandbox-note'), /Your Redis was on node gone-node, which is not reachable now: this is a new one/);
      await tab.close();
      assert.deepEqual(tab.errors, []);
    });
  });
}
