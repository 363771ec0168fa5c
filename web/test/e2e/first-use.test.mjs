// The page as a newcomer first meets it, at a desktop's size and a phone's
// (web/test/e2e/harness.mjs VIEWPORTS), against `pipelab serve` in front of
// a real redis-server: every Run where its lesson or view is, links that
// keep every view's settings (or say they cannot be read), a compare chart
// whose bars can be read against one stated baseline, a console and tables
// inside a phone's screen, and the smaller things (the sample menu, on_error
// stop, the long-link warning, the lesson count, the RESP export's
// redis-cli line). Screenshots: artifacts/first-use-*.png.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { VIEWPORTS, artifacts, boxOf, fillFields, inside, openPage, pixelsOf, usePage, useServedBrowser } from './harness.mjs';

const lab = useServedBrowser();
/** A new tab at `vp` on `url` (harness openPage); `errors` collects its uncaught errors. */
const openTab = (vp, url = lab.serve.base) => openPage(lab.browser, url, vp);

const setBatch = (page, text) => page.evaluate((t) => window.pipelab.editors.setInline(t), text);
const shot = (page, name) => page.screenshot({ path: join(artifacts, `first-use-${name}.png`) });

for (const vp of VIEWPORTS) {
  describe(`at ${vp.width}×${vp.height}`, () => {
    const tab = usePage(lab, vp);
    let page;
    before(() => ({ page } = tab));

    test("each lesson's Run sits in its own card, and tapping lesson 2's runs lesson 2", { timeout: 90_000 }, async () => {
      await page.click('#tab-tutorial');
      const cards = await page.$$eval('.lesson', (ls) => ls.map((l) => l.id));
      assert.equal(cards.length, 11);
      for (const id of cards) {
        await page.locator(`#${id} button.run-lesson`).scrollIntoViewIfNeeded();
        assert.ok(inside(await boxOf(page, `#${id} button.run-lesson`), await boxOf(page, `#${id}`)), `${id}: its Run is inside its card`);
      }
      // A tap where lesson 2's Run is drawn, as a finger gives it.
      await page.locator('#lesson-2 button.run-lesson').scrollIntoViewIfNeeded();
      const b = await boxOf(page, '#lesson-2 button.run-lesson');
      await page.mouse.click(b.left + b.width / 2, b.top + b.height / 2);
      await page.waitForSelector('#lesson-2 .lesson-result:is([data-state="done"], [data-state="failed"])', { timeout: 60_000 });
      assert.equal(await page.getAttribute('#lesson-2 .lesson-result', 'data-state'), 'done', await page.innerText('#lesson-2 .lesson-result'));
      const idle = await page.$$eval('.lesson-result', (rs) => rs.filter((r) => r.dataset.state === 'idle').map((r) => r.closest('.lesson').id));
      assert.deepEqual(idle, cards.filter((id) => id !== 'lesson-2'), 'no other lesson ran');
      await page.locator('#lesson-2').screenshot({ path: join(artifacts, `first-use-${vp.name}-lesson-2.png`) });
    });

    test('the tutorial counts its lessons right; the last one does not say "Lessons 1–7"', async () => {
      await page.click('#tab-tutorial');
      const n = await page.locator('.lesson').count();
      const intro = await page.innerText('#tutorial-view .prose');
      assert.match(intro, /^Eleven short lessons\./, `${n} lessons: ${intro.slice(0, 40)}`);
      assert.equal(n, 11);
      assert.doesNotMatch(await page.innerText('#lesson-10'), /Lessons 1–7/);
    });

    test("Compare's RTT follows the playground's until it is set in Compare", async () => {
      await page.click('#tab-playground');
      await page.fill('#rtt', '0.2');
      await page.click('#tab-compare');
      assert.equal(await page.inputValue('#compare-rtt'), '0.2', "the playground's RTT");
      await page.fill('#compare-rtt', '3');
      await page.click('#tab-playground');
      await page.fill('#rtt', '0.5');
      await page.click('#tab-compare');
      assert.equal(await page.inputValue('#compare-rtt'), '3', 'set in Compare, it stays');
      await page.click('#tab-playground');
      await page.fill('#rtt', '0');
    });

    test('Compare: Run beside its settings, bars against sequential that can be read, tables inside the screen', { timeout: 90_000 }, async () => {
      await setBatch(page, Array.from({ length: 1000 }, () => 'INCR first:cmp').join('\n'));
      await page.click('#tab-compare');
      await page.fill('#compare-rtt', '1');
      await page.click('#compare-run');
      await page.waitForSelector('#compare-out [data-table="compare"]', { timeout: 80_000 });
      await page.waitForTimeout(150);
      await page.locator('#compare-view').screenshot({ path: join(artifacts, `first-use-${vp.name}-compare.png`) });
      const run = await boxOf(page, '#compare-run');
      assert.ok(inside(run, await boxOf(page, '#compare-view .controls')), 'Run in all four modes is in its controls row');
      for (const box of await page.$$eval('#compare-out .chart-box', (cs) => cs.map((c) => c.getBoundingClientRect().toJSON()))) {
        const overlap = run.left < box.right && box.left < run.right && run.top < box.bottom && box.top < run.bottom;
        assert.ok(!overlap, 'Run does not cover a chart');
      }
      // One baseline, said on every bar, as the table's "speedup vs sequential".
      const label = await page.getAttribute('#compare-time-chart', 'aria-label');
      assert.match(label, /\(sequential baseline, pipeline [\d.,]+× faster than sequential, transaction [\d.,]+× faster than sequential, auto [\d.,]+× faster than sequential\)$/, label);
      assert.match(await page.getAttribute('#compare-rt-chart', 'aria-label'), /pipeline [\d.,]+× fewer than sequential/);
      // 1,000 round trips of 1 ms against one: a linear axis leaves the
      // pipeline a hairline; on the log axis its bar has area.
      assert.equal(await page.getAttribute('#compare-time-chart', 'data-scale'), 'log');
      const pipelinePixels = await pixelsOf(page, '#compare-time-chart', '#2f7ed8');
      assert.ok(pipelinePixels > 300, `the pipeline's bar is ${pipelinePixels} pixels`);
      // Every table whole on the screen: nothing cut off, nothing to scroll sideways.
      const cut = await page.$$eval('#compare-out table', (ts) => ts.filter((t) => t.getBoundingClientRect().right > innerWidth + 1 || t.scrollWidth > t.clientWidth + 1).map((t) => t.dataset.table));
      assert.deepEqual(cut, [], 'tables cut at the right edge');
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= innerWidth), 'no sideways scrolling of the page');
    });

    test('the interactive console stays inside the screen, and speaks of the session', { timeout: 60_000 }, async () => {
      await page.click('#tab-playground');
      await page.check('#interactive');
      await page.waitForSelector('#console-form');
      const off = await page.$$eval('#console-form > *', (es) => es.filter((e) => {
        const r = e.getBoundingClientRect();
        return r.left < 0 || r.right > innerWidth;
      }).map((e) => e.id || e.className));
      assert.deepEqual(off, [], 'console controls off the screen');
      assert.ok(inside(await boxOf(page, '#console-send'), await boxOf(page, '#interactive-panel')));
      await page.fill('#console-input', 'SET first:console 1');
      await page.click('#console-send');
      await page.waitForSelector('#console-log .entry[data-status="ok"]');
      await page.fill('#console-input', 'SELECT 1');
      await page.click('#console-send');
      await page.waitForSelector('#console-log .console-notice[data-kind="error"]');
      const refusal = await page.innerText('#console-log .console-notice[data-kind="error"]');
      assert.match(refusal, /^SELECT is refused/);
      assert.doesNotMatch(refusal, /\ba batch\b|text, line/, refusal);
      await shot(page, `${vp.name}-console`);
      await page.uncheck('#interactive');
    });

    test('a permalink keeps Compare\'s and the sweep\'s settings; one that cannot be read says so', { timeout: 60_000 }, async () => {
      await page.click('#tab-compare');
      await fillFields(page, { '#compare-rtt': '5', '#compare-batch-size': '2', '#compare-clients': '3' });
      await page.click('#tab-sweep');
      await fillFields(page, { '#sweep-command': 'INCR sw:{i}', '#sweep-total': '500', '#sweep-sizes': '1, 50', '#sweep-rtt': '0.7' });
      await page.click('#permalink');
      await page.waitForFunction(() => location.hash.startsWith('#s='));
      const url = await page.evaluate(() => location.href);

      const other = await openTab(vp, url);
      await other.page.waitForFunction(() => !document.getElementById('sweep-view').hidden);
      const got = await other.page.evaluate(() => Object.fromEntries(['compare-rtt', 'compare-batch-size', 'compare-clients', 'sweep-command', 'sweep-total', 'sweep-sizes', 'sweep-rtt'].map((id) => [id, document.getElementById(id).value])));
      assert.deepEqual(got, { 'compare-rtt': '5', 'compare-batch-size': '2', 'compare-clients': '3', 'sweep-command': 'INCR sw:{i}', 'sweep-total': '500', 'sweep-sizes': '1, 50', 'sweep-rtt': '0.7' });
      // A link pasted into the address bar of the open page changes only
      // the fragment: no reload, and still it is read, or refused aloud.
      await other.page.evaluate(() => (location.hash = '#s=garbage!!'));
      await other.page.waitForSelector('#permalink-error');
      assert.match(await other.page.innerText('#permalink-error'), /^Could not open the permalink: the link is damaged.*The page keeps the batch it had\.$/);
      await other.page.evaluate((u) => (location.hash = new URL(u).hash), url);
      await other.page.waitForFunction(() => !document.getElementById('permalink-error'));
      await other.close();
      assert.deepEqual(other.errors, []);

      const fresh = await openTab(vp, `${lab.serve.base}#s=garbage!!`);
      await fresh.page.waitForSelector('#permalink-error');
      assert.match(await fresh.page.innerText('#permalink-error'), /^Could not open the permalink: the link is damaged.*The default batch was loaded instead\.$/);
      await fresh.page.screenshot({ path: join(artifacts, `first-use-${vp.name}-damaged-link.png`) });
      await fresh.close();
    });

    test('the long-link warning stays out of the tab bar and goes with the view', async () => {
      await page.click('#tab-playground');
      const tabsBefore = await boxOf(page, '#tabs');
      await page.selectOption('#sample', 'set10000');
      await page.click('#permalink');
      await page.waitForSelector('#permalink-status[data-too-long]');
      assert.match(await page.innerText('#permalink-status'), /too long to share reliably/);
      assert.equal((await boxOf(page, '#tabs')).height, tabsBefore.height, 'the tab bar keeps its height');
      await shot(page, `${vp.name}-long-link`);
      await page.click('#tab-tutorial');
      assert.equal(await page.isVisible('#permalink-status'), false);
      await page.click('#tab-playground');
    });

    test('the sample menu lets go of its sample once the batch is edited', async () => {
      await page.click('#tab-playground');
      await page.selectOption('#sample', 'errors');
      assert.equal(await page.inputValue('#sample'), 'errors');
      await page.click('#inline-editor .cm-content');
      await page.keyboard.press('Control+End');
      await page.keyboard.type('\nPING');
      await page.waitForFunction(() => document.getElementById('sample').value === '');
    });

    test('on_error stop says why it stopped nothing in a one-round-trip pipeline', async () => {
      await page.click('#tab-playground');
      await setBatch(page, 'SET first:s x\nINCR first:s\nSET first:t y');
      await page.check('input[name="mode"][value="pipeline"]');
      await page.selectOption('#on-error', 'stop');
      await page.click('#run');
      await page.waitForSelector('#summary [data-key="errors"]');
      assert.equal(await page.innerText('#summary [data-key="not_sent"] dd'), '0');
      assert.match(await page.innerText('#summary [data-note="on-error"]'), /stopped nothing: the whole batch was one round trip.*lower the batch size/);
      await page.fill('#batch-size', '1');
      await page.click('#run');
      await page.waitForFunction(() => document.querySelector('#summary [data-key="not_sent"] dd')?.textContent === '1');
      assert.equal(await page.locator('#summary [data-note="on-error"]').count(), 0, 'it did stop: nothing to explain');
      await page.selectOption('#on-error', 'continue');
    });

    test("the RESP export's redis-cli line names the Redis this page runs on", async () => {
      await page.click('#tab-playground');
      await setBatch(page, 'SET first:export 1');
      await page.selectOption('#export-target', 'resp');
      await page.click('#export');
      await page.waitForSelector('#export-preview[data-target="resp"]');
      assert.match(await page.innerText('#export-calls'), new RegExp(`run: redis-cli -u redis://127\\.0\\.0\\.1:${lab.redis.port} --pipe < pipelab-batch\\.resp`));
    });
  });
}
