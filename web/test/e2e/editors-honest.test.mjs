// What a newcomer meets in the editors and the summary, at a desktop's size
// and a phone's: malformed RESP keeps the last good inline view, its command
// count and the batch size, and marks the RESP error; after a refused Run,
// fixing the line takes the old reason out of the summary; lesson 3 lets the
// learner run first and read the explanation beside the result.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, boxOf, setBatch, shot, usePlayground, VIEWPORTS } from './harness.mjs';

for (const vp of VIEWPORTS) {
  describe(`editors at ${vp.name} size`, () => {
    const lab = usePlayground(vp);
    let page;
    before(() => ({ page } = lab));

    const inlineDoc = () => page.evaluate(() => window.pipelab.editors.inline.state.doc.toString());

    test('malformed RESP keeps the last good inline view, its count and the batch size; the RESP error is marked', async () => {
      const batch = ['SET hon:a 1', 'INCR hon:a', 'GET hon:a', 'DEL hon:a', 'PING'].join('\n');
      await setBatch(page, batch);
      const sizeBefore = { value: await page.inputValue('#batch-size'), placeholder: await page.getAttribute('#batch-size', 'placeholder') };
      assert.match(await page.textContent('#inline-status'), /^5 commands/);
      // Break the third command's bulk length in the RESP view, as a person typing would.
      await page.evaluate(() => {
        const v = window.pipelab.editors.resp;
        const doc = v.state.doc.toString();
        const at = doc.indexOf('$3', doc.indexOf('GET'));
        v.dispatch({ changes: { from: at, to: at + 2, insert: '$x' }, userEvent: 'input.type' });
      });
      await page.waitForSelector('#resp-status .error-message');
      assert.match(await page.textContent('#resp-status .error-message'), /invalid bulk length "x"/);
      assert.ok(await page.$('#resp-editor .cm-lintRange-error'), 'the RESP error is underlined');
      assert.equal(await inlineDoc(), batch, 'the inline view keeps the last good batch');
      assert.match(await page.textContent('#inline-status'), /^5 commands/, 'its count stays');
      assert.equal(await page.evaluate(() => window.pipelab.editors.snapshot().commands), 5);
      const sizeAfter = { value: await page.inputValue('#batch-size'), placeholder: await page.getAttribute('#batch-size', 'placeholder') };
      assert.deepEqual(sizeAfter, sizeBefore, 'the batch size does not drop');
      await shot(page, `editors-${vp.name}-resp-error`);
      // Run is refused, naming the RESP error; fixed, the batch runs whole.
      await page.click('#run');
      await page.waitForSelector('#summary .message.error');
      assert.match(await page.textContent('#summary'), /Fix the RESP view first/);
      await page.evaluate(() => {
        const v = window.pipelab.editors.resp;
        const doc = v.state.doc.toString();
        const at = doc.indexOf('$x');
        v.dispatch({ changes: { from: at, to: at + 2, insert: '$3' }, userEvent: 'input.type' });
      });
      await page.waitForFunction(() => !document.querySelector('#resp-status .error-message'));
      assert.equal(await inlineDoc(), batch);
      await page.waitForFunction(() => !/Fix the RESP view/.test(document.getElementById('summary').textContent), null, { timeout: 5000 });
    });

    test('after a refused Run, fixing the line takes the old reason out of the summary', async () => {
      // The server refuses BLPOP with timeout 0 by its arguments: the page cannot tell before Run.
      await setBatch(page, 'SET hon:b 1\nBLPOP hon:list 0');
      await page.click('#run');
      await page.waitForSelector('#summary .message.error');
      assert.match(await page.textContent('#summary'), /BLPOP with timeout 0 is refused.*\(refused_command\)/);
      // Another refusal: the warning above Run names it, and the summary no longer names the old one.
      await setBatch(page, 'SET hon:b 1\nSELECT 1');
      await page.waitForFunction(() => /SELECT is refused/.test(document.getElementById('run-warning')?.textContent ?? ''));
      assert.doesNotMatch(await page.textContent('#summary'), /BLPOP/, 'the old reason is gone');
      // Fixed: the summary is clear until the next Run, which runs it.
      await setBatch(page, 'SET hon:b 1\nBLPOP hon:list 0.1');
      assert.doesNotMatch(await page.textContent('#summary'), /refused|Run failed/);
      const before = await page.evaluate(() => document.getElementById('summary').innerHTML);
      await page.click('#run');
      await page.waitForFunction((b) => document.getElementById('summary').innerHTML !== b && !document.querySelector('#summary .progress'), before, { timeout: 30_000 });
      await page.waitForSelector('#summary [data-key="commands"]', { timeout: 30_000 });
      assert.doesNotMatch(await page.textContent('#summary'), /Run failed/);
    });

    test('lesson 3: Run comes after a short text, the explanation beside the result (under it on a phone)', { timeout: 150_000 }, async () => {
      await page.click('#tab-tutorial');
      const card = page.locator('#lesson-3');
      await card.scrollIntoViewIfNeeded();
      // The words a learner reads before reaching Run: title, claim, text, controls.
      const before = await page.$eval('#lesson-3', (c) => {
        const run = c.querySelector('button.run-lesson');
        const walker = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
        let text = '';
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          if (run.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_PRECEDING) text += ` ${n.textContent}`;
        }
        return text.split(/\s+/).filter(Boolean).length;
      });
      assert.ok(before <= 150, `${before} words before Run`);
      const explain = await page.innerText('#lesson-3 .lesson-explain');
      assert.match(explain, /cost model.*T\(b\) = ⌈N\/b⌉·RTT \+ N·t_cmd/s, 'the cost model is explained');
      assert.match(explain, /knee/);
      await card.locator('button.run-lesson').click();
      await page.waitForSelector('#lesson-3 .lesson-result:is([data-state="done"], [data-state="failed"])', { timeout: 140_000 });
      assert.equal(await page.getAttribute('#lesson-3 .lesson-result', 'data-state'), 'done', await page.innerText('#lesson-3 .lesson-result'));
      const result = await boxOf(page, '#lesson-3 .lesson-result');
      const aside = await boxOf(page, '#lesson-3 .lesson-explain');
      const runBox = await boxOf(page, '#lesson-3 button.run-lesson');
      assert.ok(aside.top >= runBox.bottom - 1 && result.top >= runBox.bottom - 1, 'both after Run');
      if (vp.name === 'desktop') {
        assert.ok(aside.left >= result.right - 1 && aside.top < result.bottom, `beside the result: ${JSON.stringify({ result, aside })}`);
      } else {
        assert.ok(aside.top >= result.bottom - 1, 'under the result on a phone');
      }
      assert.ok(aside.right <= vp.width + 1 && result.right <= vp.width + 1, 'inside the screen');
      await card.screenshot({ path: join(artifacts, `editors-${vp.name}-lesson-3.png`) });
    });
  });
}
