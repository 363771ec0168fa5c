// The Sweep's RTT follows the playground's, as Compare's does, until it is
// set in the Sweep (by hand or a permalink), and a sweep runs at the RTT it
// shows: at a desktop's size and a phone's, against `pipelab serve` in front
// of a real redis-server.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { VIEWPORTS, fillFields, openPage, usePage, useServedBrowser } from './harness.mjs';

const lab = useServedBrowser();

for (const vp of VIEWPORTS) {
  describe(`at ${vp.width}×${vp.height}`, () => {
    const tab = usePage(lab, vp);
    let page;
    before(() => ({ page } = tab));

    test("the Sweep's RTT is the playground's until it is set in the Sweep", { timeout: 90_000 }, async () => {
      await page.click('#tab-playground');
      await page.fill('#rtt', '0.7');
      await page.click('#tab-sweep');
      assert.equal(await page.inputValue('#sweep-rtt'), '0.7', "the playground's RTT");
      assert.equal(await page.inputValue('#compare-rtt'), '0.7', 'as Compare follows it');

      // A sweep runs at it: the series is labelled with the RTT the server simulated.
      await fillFields(page, { '#sweep-command': 'INCR sweep-rtt:{i}', '#sweep-total': '60', '#sweep-sizes': '1, 20' });
      await page.click('#sweep-run');
      await page.waitForSelector('#sweep-out [data-table="sweep"], #sweep-out .error', { timeout: 60_000 });
      assert.equal(await page.locator('#sweep-out [data-table="sweep"]').count(), 1, await page.innerText('#sweep-out'));
      const label = await page.getAttribute('#sweep-chart', 'aria-label');
      assert.match(label ?? '', /RTT 0\.7 ms/, `the chart's series: ${label}`);

      // Set in the Sweep, it stays when the playground's changes (Compare still follows).
      await page.fill('#sweep-rtt', '3');
      await page.click('#tab-playground');
      await page.fill('#rtt', '0.5');
      await page.click('#tab-sweep');
      assert.equal(await page.inputValue('#sweep-rtt'), '3', 'set in the Sweep, it stays');
      assert.equal(await page.inputValue('#compare-rtt'), '0.5');
    });

    test('a permalink sets the Sweep\'s RTT, and the playground\'s no longer moves it', { timeout: 60_000 }, async () => {
      await page.click('#tab-playground');
      await page.fill('#rtt', '0.4');
      await page.click('#tab-sweep');
      await page.fill('#sweep-rtt', '1.5');
      await page.click('#permalink');
      await page.waitForFunction(() => location.hash.startsWith('#s='));
      const url = await page.evaluate(() => location.href);
      const other = await openPage(lab.browser, url, vp);
      try {
        await other.page.waitForFunction(() => document.getElementById('sweep-rtt').value === '1.5');
        await other.page.click('#tab-playground');
        await other.page.fill('#rtt', '2');
        await other.page.click('#tab-sweep');
        assert.equal(await other.page.inputValue('#sweep-rtt'), '1.5', "the link's RTT, not the playground's");
        assert.deepEqual(other.errors, []);
      } finally {
        await other.close();
      }
    });
  });
}
