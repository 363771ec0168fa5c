// The run history under the playground (web/src/results/history.ts), at a
// desktop's size and a phone's, against `pipelab serve` and a real
// redis-server: each Run kept in localStorage, still there after a reload,
// two runs side by side (a change of batch size), Clear.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, boxOf, seriousAxeViolations, setBatch, usePlayground, VIEWPORTS } from './harness.mjs';

for (const vp of VIEWPORTS) {
  describe(`run history at ${vp.name} size`, () => {
    const lab = usePlayground(vp);
    let page;
    before(() => ({ page } = lab));

    async function runBatch(text, batchSize) {
      await setBatch(page, text);
      await page.fill('#batch-size', String(batchSize));
      const before = await page.locator('#history-table tbody tr').count();
      await page.click('#run');
      await page.waitForFunction((n) => document.querySelectorAll('#history-table tbody tr').length > n, before, { timeout: 60_000 });
    }

    test('runs are kept across a reload; two side by side show what changed', { timeout: 120_000 }, async () => {
      await page.evaluate(() => localStorage.clear());
      await page.reload();
      await page.waitForSelector('#inline-editor .cm-content');
      assert.match(await page.textContent('#history-status'), /No runs yet/);
      const batch = Array.from({ length: 100 }, (_, i) => `SET hist:${i} x`).join('\n');
      await runBatch(batch, 10);
      await runBatch(batch, 100);
      // Kept in this browser: a reload finds both, newest first.
      await page.reload();
      await page.waitForSelector('#history-table tbody tr');
      const kept = await page.$$eval('#history-table tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
      assert.equal(kept.length, 2, JSON.stringify(kept));
      assert.deepEqual(kept.map((r) => r[4]), ['100', '10'], 'batch sizes, newest first');
      assert.deepEqual(kept.map((r) => r[7]), ['1', '10'], 'round trips');
      assert.match(kept[0][2], /^SET hist:0 x$/);
      for (const box of await page.$$('#history-table tbody input[type="checkbox"]')) await box.check();
      await page.waitForSelector('[data-table="history-compare"]');
      const fig = Object.fromEntries(
        await page.$$eval('[data-table="history-compare"] tbody tr', (trs) => trs.map((tr) => [tr.dataset.figure, [...tr.children].slice(1).map((td) => td.textContent)])),
      );
      // A is the older run (batch size 10), B the newer (100).
      assert.deepEqual(fig.batch_size, ['10', '100', '10× more']);
      assert.deepEqual(fig.round_trips, ['10', '1', '10× less']);
      assert.equal(fig.mode[2], 'same');
      const totals = await page.$$eval('#history-table tbody td[data-total-us]', (tds) => tds.map((td) => Number(td.dataset.totalUs)));
      const [newer, older] = totals;
      assert.match(fig.total_us[2], newer === older ? /same/ : new RegExp(`× ${newer > older ? 'more' : 'less'}$`));
      const box = await boxOf(page, '#history');
      assert.ok(box.right <= vp.width + 1, 'inside the screen');
      await page.locator('#history').screenshot({ path: join(artifacts, `history-${vp.name}.png`) });
      assert.deepEqual(await seriousAxeViolations(page, '#history'), []);
      await page.click('#history-clear');
      assert.match(await page.textContent('#history-status'), /No runs yet/);
      assert.equal(await page.evaluate(() => localStorage.getItem('pipelab.history.v1')), '[]');
    });
  });
}
