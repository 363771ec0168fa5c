// The key browser under the playground (web/src/results/keys.ts), at a
// desktop's size and a phone's, against `pipelab serve` and a real
// redis-server: the keys a batch left behind with their type, memory and TTL
// as Redis itself reports them, a binary key shown byte for byte, a pattern,
// and "Scan more" going on until SCAN's cursor comes back to 0.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, boxOf, seriousAxeViolations, setBatch, usePlayground, VIEWPORTS } from './harness.mjs';
import { run } from '../tutorial/helpers.mjs';

for (const vp of VIEWPORTS) {
  describe(`key browser at ${vp.name} size`, () => {
    const lab = usePlayground(vp);
    let page;
    before(() => ({ page } = lab));
    const cli = async (...args) => (await run('redis-cli', ['-p', String(lab.redis.port), ...args])).stdout.replace(/\n$/, '');

    /** Runs `text` as the playground's batch and waits for its summary. */
    async function runBatch(text) {
      await setBatch(page, text);
      const before = await page.evaluate(() => document.getElementById('summary').innerHTML);
      await page.click('#run');
      await page.waitForFunction((b) => document.getElementById('summary').innerHTML !== b && document.querySelector('#summary [data-key="commands"]'), before, { timeout: 60_000 });
    }

    /** The table's rows: { key, type, bytes, ttlMs }. */
    const rows = () =>
      page.$$eval('#keys-table tbody tr', (trs) =>
        trs.map((tr) => ({ key: tr.children[0].textContent, type: tr.children[1].textContent, bytes: tr.children[2].dataset.bytes, ttlMs: tr.children[3].dataset.ttlMs, ttl: tr.children[3].textContent })),
      );

    test('the keys a batch left, with the type, memory and TTL Redis reports', async () => {
      await cli('FLUSHALL');
      await runBatch(['SET kb:s hello EX 100', 'RPUSH kb:l a b c', 'HSET kb:h f v', 'SADD kb:set m', 'SET "kb:bin\\xff\\x00" v'].join('\n'));
      await page.click('#keys-scan');
      await page.waitForFunction(() => /keys? matching/.test(document.getElementById('keys-status').textContent), null, { timeout: 30_000 });
      const got = await rows();
      const byKey = Object.fromEntries(got.map((r) => [r.key, r]));
      assert.deepEqual(Object.keys(byKey).sort(), ['"kb:bin\\xff\\x00"', '"kb:h"', '"kb:l"', '"kb:s"', '"kb:set"'].sort(), JSON.stringify(got));
      for (const [key, name] of [['"kb:s"', 'kb:s'], ['"kb:l"', 'kb:l'], ['"kb:h"', 'kb:h'], ['"kb:set"', 'kb:set']]) {
        assert.equal(byKey[key].type, await cli('TYPE', name), `${name}: the type Redis reports`);
        const usage = Number(await cli('MEMORY', 'USAGE', name));
        assert.ok(Math.abs(Number(byKey[key].bytes) - usage) <= 64, `${name}: ${byKey[key].bytes} B against MEMORY USAGE ${usage}`);
      }
      const ttl = Number(byKey['"kb:s"'].ttlMs);
      assert.ok(ttl > 60_000 && ttl <= 100_000, `kb:s expires in 100 s: ${ttl} ms`);
      assert.equal(byKey['"kb:l"'].ttl, 'none');
      assert.equal(byKey['"kb:bin\\xff\\x00"'].type, 'string', 'the binary key was asked about by its exact bytes');
      assert.match(await page.textContent('#keys-status'), /5 keys matching "\*", the whole keyspace scanned/);
      assert.equal(await page.isVisible('#keys-more'), false);
      const box = await boxOf(page, '#keys');
      assert.ok(box.right <= vp.width + 1 && box.left >= -1, 'inside the screen');
      await page.locator('#keys').screenshot({ path: join(artifacts, `keys-${vp.name}.png`) });
    });

    test('a pattern narrows the scan; "Scan more" goes on until the whole keyspace is scanned', { timeout: 120_000 }, async () => {
      await cli('FLUSHALL');
      await runBatch(Array.from({ length: 450 }, (_, i) => `SET kb:many:${i} x`).concat(['SET other 1']).join('\n'));
      await page.fill('#keys-pattern', 'kb:many:*');
      await page.click('#keys-scan');
      await page.waitForFunction(() => /keys? matching/.test(document.getElementById('keys-status').textContent), null, { timeout: 30_000 });
      let pages = 1;
      while (await page.isVisible('#keys-more')) {
        const n = (await rows()).length;
        await page.click('#keys-more');
        await page.waitForFunction((m) => document.querySelectorAll('#keys-table tbody tr').length > m || document.getElementById('keys-more').hidden, n, { timeout: 30_000 });
        await page.waitForFunction(() => !document.getElementById('keys-scan').disabled);
        pages++;
        assert.ok(pages < 50, 'the scan ends');
      }
      const got = await rows();
      assert.ok(pages > 1, `450 keys at COUNT 100 take more than one page (${pages})`);
      assert.equal(new Set(got.map((r) => r.key)).size, 450, 'every kb:many key, once or more (SCAN may repeat one), and nothing else');
      assert.ok(got.every((r) => r.key.startsWith('"kb:many:')), 'the pattern holds');
      assert.match(await page.textContent('#keys-status'), /matching "kb:many:\*", the whole keyspace scanned/);
      // A long table scrolls in its box: reachable by keyboard, and nothing serious for axe in the panel.
      assert.deepEqual(await seriousAxeViolations(page, '#keys'), []);
    });
  });
}
