// Real parts for the browser tests: a redis-server on a free port, `pipelab
// serve` in front of it serving web/dist, and headless Debian Chromium
// driven by playwright-core (no browser download).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '../../..');
export const artifacts = join(repoRoot, 'artifacts');
/** The built page `pipelab serve` serves (PIPELAB_WEB_DIST: another build of it, e.g. an older one to compare). */
export const webDist = process.env.PIPELAB_WEB_DIST ?? join(repoRoot, 'web/dist');
mkdirSync(artifacts, { recursive: true });

/** A port that was free a moment ago (bind 127.0.0.1:0, then release it). */
export function freePort() {
  return new Promise((res, rej) => {
    const srv = net.createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, fn, timeoutMs = 15000) {
  const end = Date.now() + timeoutMs;
  let last;
  while (Date.now() < end) {
    try {
      if (await fn()) return;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

async function stop(child) {
  if (!child || exited(child)) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await Promise.race([done, sleep(3000)]);
  if (!exited(child)) child.kill('SIGKILL');
}

export async function startRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitFor('redis-server', () => new Promise((res) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.write('PING\r\n');
      s.once('data', (d) => { s.destroy(); res(d.toString().startsWith('+PONG')); });
    });
    s.once('error', () => res(false));
  }));
  return { port, url: `redis://127.0.0.1:${port}`, stop: () => stop(child) };
}

/**
 * A real 3-master Redis Cluster (scripts/lib/cluster.sh: `redis-server
 * --cluster-enabled yes` ×3 on free ports, `redis-cli --cluster create …
 * --cluster-replicas 0 --cluster-yes`). `addresses`: the masters'
 * `127.0.0.1:PORT`; `url`: `redis://` naming all three; `stop()` ends it
 * (the script stops its nodes when its stdin closes).
 */
export async function startCluster() {
  const child = spawn('bash', [join(repoRoot, 'scripts/lib/cluster.sh')], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise((res, rej) => {
    let out = '';
    const timer = setTimeout(() => rej(new Error(`the cluster did not start within 90 s: ${out}`)), 90000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^ready (.*)$/m);
      if (m) clearTimeout(timer), res(m[1]);
    });
    child.once('exit', (code) => rej(new Error(`scripts/lib/cluster.sh exited (${code}): ${out}`)));
  });
  const addresses = line.trim().split(/\s+/);
  const done = new Promise((r) => child.once('exit', r));
  const stopCluster = async () => {
    if (exited(child)) return;
    child.stdin.end();
    await Promise.race([done, sleep(10000)]);
    if (!exited(child)) child.kill('SIGTERM');
  };
  return { addresses, url: `redis://${addresses.join(',')}`, stop: stopCluster };
}

export function pipelabBin() {
  if (process.env.PIPELAB_BIN) return process.env.PIPELAB_BIN;
  for (const p of ['target/debug/pipelab', 'target/release/pipelab']) {
    if (existsSync(join(repoRoot, p))) return join(repoRoot, p);
  }
  throw new Error('no pipelab binary: run cargo build -p pipelab (or set PIPELAB_BIN)');
}

/**
 * `pipelab serve` in front of `redisUrl` (null: its own redis-server),
 * serving web/dist; `extraArgs`: more flags (e.g. `--session-idle-ms`).
 */
export async function startServe(redisUrl, extraArgs = []) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}/`;
  // PIPELAB_E2E_EMBEDDED=1: no --redis, so pipelab starts its own (with
  // PIPELAB_SANDBOX=1: a redis-server per visitor, as a public deployment runs).
  const redisArgs = process.env.PIPELAB_E2E_EMBEDDED === '1' || redisUrl === null ? [] : ['--redis', redisUrl];
  const child = spawn(pipelabBin(), ['serve', '--listen', `127.0.0.1:${port}`, ...redisArgs, '--web-dir', webDist, ...extraArgs], {
    cwd: repoRoot,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  await waitFor('pipelab serve', async () => (await fetch(`${base}readyz`)).ok);
  return { base, port, stop: () => stop(child) };
}

/**
 * `pipelab doctor --ui` in front of `upstream`, its "open in playground"
 * links to `playgroundUrl`; `extraArgs`: more flags (`--think-time-us`).
 * Resolves once it listens: `host`/`port` for the application, `base` for
 * the page; `stop()` sends SIGTERM.
 */
export async function startDoctor(upstream, playgroundUrl, extraArgs = []) {
  const ui = await freePort();
  const child = spawn(
    pipelabBin(),
    ['doctor', '--listen', '127.0.0.1:0', '--upstream', upstream, '--ui', `127.0.0.1:${ui}`, '--json', '--playground-url', playgroundUrl, '--web-dir', webDist, ...extraArgs],
    { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const listen = await new Promise((res, rej) => {
    createInterface({ input: child.stderr }).on('line', (l) => {
      const m = /^pipelab doctor: listening on ([^,]+),/.exec(l);
      if (m) res(m[1]);
      else if (!/^pipelab doctor: page on/.test(l)) process.stderr.write(`doctor: ${l}\n`);
    });
    child.once('exit', (code) => rej(new Error(`pipelab doctor exited (${code}) before listening`)));
  });
  const [host, port] = listen.split(':');
  return { host, port: Number(port), base: `http://127.0.0.1:${ui}/`, stop: () => child.kill('SIGTERM') };
}

/**
 * An application through `doctor` (ioredis): 39 single SETs (`user:N`),
 * then a pipeline of 100 (`batch:N`), over and over, so that the doctor
 * sees a missed pipeline and both depths in its last flights of the
 * connection. `stop()` ends the loop and disconnects.
 */
export async function loopThrough(doctor) {
  const { default: Redis } = await import('ioredis');
  const client = new Redis({ host: doctor.host, port: doctor.port, lazyConnect: true });
  await client.connect();
  let looping = true;
  const loop = (async () => {
    for (let i = 0; looping; i++) {
      if (i % 40 === 39) await client.pipeline(Array.from({ length: 100 }, (_, j) => ['set', `batch:${j}`, 'x'])).exec();
      else await client.set(`user:${i}`, 'x');
    }
  })();
  return {
    async stop() {
      looping = false;
      await loop.catch(() => {});
      client.disconnect();
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

export const shot = (page, name) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });

/**
 * A redis-server, `pipelab serve` in front of it and the playground open in
 * headless Chromium at `viewport`, its editors ready. `pageErrors` collects
 * the page's uncaught errors; `close()` stops all three.
 */
export async function openPlayground(viewport) {
  const redis = await startRedis();
  const serve = await startServe(redis.url);
  const browser = await launchBrowser();
  const page = await browser.newPage({ viewport });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(serve.base);
  await page.waitForSelector('#inline-editor .cm-content');
  await page.waitForFunction(() => document.querySelector('#resp-status')?.textContent?.includes('bytes'));
  const close = async () => {
    await browser?.close();
    await serve?.stop();
    await redis?.stop();
  };
  return { redis, serve, browser, page, pageErrors, close };
}

/**
 * Registers before/after hooks (in the file or the calling describe) that
 * start a redis-server, `pipelab serve` in front of it and headless Chromium,
 * and stop all three. Returns the object the before hook fills in:
 * `{ redis, serve, browser }`.
 */
export function useServedBrowser() {
  const parts = {};
  before(async () => {
    parts.redis = await startRedis();
    parts.serve = await startServe(parts.redis.url);
    parts.browser = await launchBrowser();
  });
  after(async () => {
    await parts.browser?.close();
    await parts.serve?.stop();
    await parts.redis?.stop();
  });
  return parts;
}

/**
 * A new browser context (no state shared with any other) at `viewport` on
 * `url`, its editors, tabs and `window.pipelab.editors` ready; `errors`
 * collects its uncaught errors; `close()` closes the context.
 */
export async function openPage(browser, url, viewport) {
  const context = await browser.newContext({ viewport: { width: viewport.width, height: viewport.height } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForSelector('#inline-editor .cm-content', { state: 'attached' });
  await page.waitForSelector('#tabs');
  await page.waitForFunction(() => window.pipelab?.editors);
  return { page, errors, close: () => context.close() };
}

/**
 * Registers before/after hooks in the calling describe: a page (openPage) on
 * `parts.serve` (useServedBrowser) at `viewport`, closed after, which must
 * have had no uncaught errors. Returns the object the before hook fills in.
 */
export function usePage(parts, viewport) {
  const tab = {};
  before(async () => Object.assign(tab, await openPage(parts.browser, parts.serve.base, viewport)));
  after(async () => {
    await tab.close?.();
    assert.deepEqual(tab.errors ?? [], []);
  });
  return tab;
}

/**
 * Registers before/after hooks in the calling describe: the playground at
 * `viewport` (openPlayground), closed after, which must have had no uncaught
 * errors. Returns the object the before hook fills with openPlayground's parts.
 */
export function usePlayground(viewport) {
  const lab = {};
  before(async () => Object.assign(lab, await openPlayground({ width: viewport.width, height: viewport.height })));
  after(async () => {
    try {
      assert.deepEqual(lab.pageErrors ?? [], [], 'page errors');
    } finally {
      await lab.close?.();
    }
  });
  return lab;
}

/** Sets the playground's batch (the inline editor) and waits until the editors hold it. */
export async function setBatch(page, text) {
  await page.evaluate((t) => window.pipelab.editors.setInline(t), text);
  await page.waitForFunction((t) => window.pipelab.editors.snapshot().inlineText === t, text);
}

/** Fills each field (`selector: value`), in order, as page.fill does. */
export async function fillFields(page, fields) {
  for (const [selector, value] of Object.entries(fields)) await page.fill(selector, value);
}

let axeSource;
/** axe-core's serious and critical violations under `selector`, and any scrollable region keyboard users cannot reach, as `id: help`. */
export async function seriousAxeViolations(page, selector) {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const violations = await page.evaluate((s) => window.axe.run(s, { resultTypes: ['violations'] }).then((r) => r.violations), selector);
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical' || v.id === 'scrollable-region-focusable').map((v) => `${v.id}: ${v.help}`);
}

/** The two screens every page test runs at: a desktop and a phone (iPhone 12–15, CSS pixels). */
export const VIEWPORTS = [
  { name: 'desktop', width: 1400, height: 1000 },
  { name: 'phone', width: 390, height: 844 },
];

/** The box of `selector` in the viewport (getBoundingClientRect). */
export const boxOf = (page, selector) => page.$eval(selector, (e) => e.getBoundingClientRect().toJSON());

/** Whether `inner` lies within `outer` (boxes as getBoundingClientRect gives them), to the pixel. */
export const inside = (inner, outer) => inner.left >= outer.left - 1 && inner.right <= outer.right + 1 && inner.top >= outer.top - 1 && inner.bottom <= outer.bottom + 1;

/** Pixels of a canvas within 8 of colour `hex` (#rrggbb) in each channel. */
export function pixelsOf(page, selector, hex) {
  const rgb = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return page.$eval(selector, (c, [r, g, b]) => {
    const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - r) < 8 && Math.abs(data[i + 1] - g) < 8 && Math.abs(data[i + 2] - b) < 8) n++;
    return n;
  }, rgb);
}
