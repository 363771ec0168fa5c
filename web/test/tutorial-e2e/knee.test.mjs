// The knee the sweep's cards name is the curve's own: while the best
// commands/s is at the largest batch size measured, the curve has not
// flattened, and neither the knee card, the model's line nor the chart
// claims a knee (lesson 3 shows the same cards: tutorial.test.mjs). A sweep
// whose round trips dominate (5 ms RTT, batch 1 and 2) cannot flatten: batch
// 2 takes half the round trips. Against `pipelab serve` and a real
// redis-server, at a desktop's size and a phone's.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { VIEWPORTS, fillFields, usePage, useServedBrowser } from '../e2e/harness.mjs';

const lab = useServedBrowser();

for (const vp of VIEWPORTS) {
  describe(`at ${vp.width}×${vp.height}`, () => {
    const tab = usePage(lab, vp);
    let page;
    before(() => ({ page } = tab));

    test('a curve still rising at its largest batch size has no knee on any card', { timeout: 90_000 }, async () => {
      await page.click('#tab-sweep');
      await fillFields(page, { '#sweep-command': 'SET knee:{i} x', '#sweep-total': '40', '#sweep-sizes': '1, 2', '#sweep-rtt': '5' });
      await page.click('#sweep-run');
      await page.waitForSelector('#sweep-out [data-table="sweep"], #sweep-out .error', { timeout: 60_000 });
      assert.equal(await page.locator('#sweep-out [data-table="sweep"]').count(), 1, await page.innerText('#sweep-out'));
      const rows = await page.$$eval('#sweep-out [data-table="sweep"] tbody tr', (trs) => trs.map((tr) => Number(tr.children[3].textContent.replace(/,/g, ''))));
      assert.ok(rows[1] > 1.1 * rows[0], `batch 2 (${rows[1]}/s) well over batch 1 (${rows[0]}/s): the curve still rises`);

      const card = page.locator('#sweep-out [data-metric="knee_batch_size"]');
      assert.equal(await card.getAttribute('data-value'), '', 'no knee claimed');
      assert.match(await card.innerText(), /not reached by batch 2$/);
      assert.equal(await page.getAttribute('#sweep-out .knee-note', 'data-value'), 'not_flattened');
      assert.match(await page.innerText('#sweep-out .knee-note'), /^No knee: the best throughput \([\d,]+ commands\/s\) is at the largest batch size measured, 2, .*a larger batch may still pay\.$/);
      assert.match(await page.innerText('#sweep-out .model-text'), /no knee: still rising at the largest batch size$/);
      const label = await page.getAttribute('#sweep-chart', 'aria-label');
      assert.doesNotMatch(label, /knee at batch|knee \(batch/, label);
      assert.match(label, /no knee: still rising/);
      await page.click('#sweep-clear');
    });
  });
}
