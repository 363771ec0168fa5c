// End to end on a real 3-master Redis Cluster: the page served by `pipelab
// serve --redis` naming the cluster's nodes, a pipeline of SETs run from
// the playground, and its timeline drawn with one lane per master,
// labelled with the master's address, each command in the lane of the
// master that owns its key's hash slot (asked of Redis: CLUSTER KEYSLOT and
// CLUSTER SLOTS, and the key read back there). Screenshot in artifacts/.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Redis from 'ioredis';
import { launchBrowser, shot, startCluster, startServe } from '../e2e/harness.mjs';

const N = 45;
let cluster;
let serve;
let browser;
let page;
const pageErrors = [];

before(async () => {
  cluster = await startCluster();
  serve = await startServe(cluster.url);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  await page.goto(serve.base);
  await page.waitForSelector('#inline-editor .cm-content');
  await page.waitForFunction(() => document.querySelector('#resp-status')?.textContent?.includes('bytes'));
});

after(async () => {
  await browser?.close();
  await serve?.stop();
  await cluster?.stop();
});

/** The master (`host:port`) owning each of `keys`, as the cluster says. */
async function owners(keys) {
  const [host, port] = cluster.addresses[0].split(':');
  const r = new Redis({ host, port: Number(port), lazyConnect: true, enableOfflineQueue: true });
  try {
    const ranges = await r.call('CLUSTER', 'SLOTS');
    const out = [];
    for (const key of keys) {
      const slot = await r.call('CLUSTER', 'KEYSLOT', key);
      const range = ranges.find(([a, b]) => slot >= a && slot <= b);
      out.push(`${range[2][0]}:${range[2][1]}`);
    }
    return out;
  } finally {
    r.disconnect();
  }
}

/** GET `key` on the master at `address` (no redirection followed). */
async function getOn(address, key) {
  const [host, port] = address.split(':');
  const r = new Redis({ host, port: Number(port), lazyConnect: true });
  try {
    return await r.get(key);
  } finally {
    r.disconnect();
  }
}

test('a pipeline on a cluster: one timeline lane per master, each command in its master\'s lane', async () => {
  const keys = Array.from({ length: N }, (_, i) => `lane:${i}`);
  await page.evaluate((t) => window.pipelab.editors.setInline(t), keys.map((k, i) => `SET ${k} v${i}`).join('\n'));
  await page.check('input[name="mode"][value="pipeline"]');
  await page.fill('#batch-size', '10');
  await page.fill('#rtt', '0');
  await page.click('#run');
  await page.waitForFunction(() => document.querySelector('#summary dl, #summary .message.error'), null, { timeout: 30000 });
  const error = await page.$eval('#summary', (s) => s.querySelector('.message.error')?.textContent ?? null);
  assert.equal(error, null, `run failed: ${error}`);
  // The final redraw (after the summary) has all N rows.
  await page.waitForFunction((n) => window.pipelab.timeline.lanes().reduce((s, l) => s + l.rows.length, 0) === n, N);

  const lanes = await page.evaluate(() => window.pipelab.timeline.lanes());
  const expected = await owners(keys);
  assert.equal(lanes.length, 3, `one lane per master: ${JSON.stringify(lanes.map((l) => l.node))}`);
  assert.deepEqual(lanes.map((l) => l.node).sort(), [...cluster.addresses].sort(), 'lanes labelled with the masters\' addresses');
  for (const lane of lanes) {
    assert.ok(lane.rows.length > 0, `lane ${lane.node} has rows`);
    assert.deepEqual(lane.rows, [...lane.rows].sort((a, b) => a - b), `lane ${lane.node}: rows in request order`);
    for (const i of lane.rows) {
      assert.equal(lane.node, expected[i], `command #${i + 1} (${keys[i]}) in the lane of its slot's master`);
    }
  }
  // Every row in exactly one lane; lanes stacked without overlap.
  assert.deepEqual(lanes.flatMap((l) => l.rows).sort((a, b) => a - b), keys.map((_, i) => i));
  for (let k = 1; k < lanes.length; k++) assert.ok(Math.abs(lanes[k].top - lanes[k - 1].bottom) < 1e-6, 'lanes adjacent');
  // The write landed where the lane says.
  for (const lane of lanes) assert.equal(await getOn(lane.node, keys[lane.rows[0]]), `v${lane.rows[0]}`);

  // What is drawn: hovering each lane's first and last row shows that command and its node.
  const box = await page.$eval('#timeline', (c) => {
    c.scrollIntoView({ block: 'center' });
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, w: r.width };
  });
  for (const lane of lanes) {
    const rowH = (lane.bottom - lane.top) / lane.rows.length;
    for (const [k, i] of [[0, lane.rows[0]], [lane.rows.length - 1, lane.rows.at(-1)]]) {
      await page.mouse.move(box.x + box.w / 2, box.y + lane.top + (k + 0.5) * rowH);
      const tip = await page.$eval('#timeline-tip', (t) => (t.hidden ? '' : t.textContent));
      assert.ok(tip.startsWith(`#${i + 1} SET ${keys[i]} `), `tooltip of row #${i + 1}: ${tip}`);
      assert.ok(tip.endsWith(` · ${lane.node}`), `tooltip names the lane's node: ${tip}`);
    }
  }
  const aria = await page.$eval('#timeline', (c) => c.getAttribute('aria-label'));
  for (const lane of lanes) assert.ok(aria.includes(`${lane.node} (${lane.rows.length})`), aria);
  await page.mouse.move(0, 0);
  await shot(page, 'cluster-timeline-lanes');
  assert.deepEqual(pageErrors, []);
});
