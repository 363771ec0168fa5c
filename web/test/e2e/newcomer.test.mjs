// End to end, what a newcomer met: live progress and Cancel,
// one numbering from 1, and the other items, each in the built page served
// by `pipelab serve` in front of a real redis-server. Screenshots go to
// artifacts/newcomer-*.png.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { openPlayground, shot } from './harness.mjs';

let redis;
let page;
let pageErrors = [];
let lab;

before(async () => {
  lab = await openPlayground({ width: 1280, height: 900 });
  ({ redis, page, pageErrors } = lab);
});

after(async () => {
  await lab?.close();
  assert.deepEqual(pageErrors, []);
});

const setBatch = (text) => page.evaluate((t) => window.pipelab.editors.setInline(t), text);

async function controls({ mode, rtt = 0, batchSize = 1000, onError = 'continue' }) {
  await page.check(`input[name="mode"][value="${mode}"]`);
  if (mode === 'pipeline') await page.fill('#batch-size', String(batchSize));
  await page.fill('#rtt', String(rtt));
  await page.selectOption('#on-error', onError);
}

const summary = () => page.$$eval('#summary dl > div', (divs) => Object.fromEntries(divs.map((d) => [d.dataset.key, d.querySelector('dd').textContent])));
/** redis-cli against the test's redis-server. */
const cli = (...args) => execFileSync('redis-cli', ['-p', String(redis.port), ...args]).toString().trim();
const num = (s) => Number(String(s).replace(/,/g, ''));

describe('a long run (item 1)', () => {
  test('shows results, elapsed and estimated time while it runs, and Cancel ends it with true statuses', async () => {
    await setBatch(Array.from({ length: 1000 }, () => 'INCR live:page').join('\n'));
    await controls({ mode: 'sequential', rtt: 10 });
    const t0 = Date.now();
    await page.click('#run');
    // Rows and timeline bars arrive while the batch (at least 10 s) runs.
    await page.waitForFunction(() => document.querySelectorAll('#results .rows .row').length >= 10, null, { timeout: 8000 });
    await page.waitForFunction(() => /of 1,000 done · .* elapsed · about .* left/.test(document.querySelector('#summary .progress')?.textContent ?? ''));
    const seenAfter = Date.now() - t0;
    assert.ok(seenAfter < 8000, `results after ${seenAfter} ms of a 10 s batch`);
    assert.match(await page.$eval('#timeline', (c) => c.getAttribute('aria-label')), /^Timeline of \d+ commands/);
    assert.equal(await page.$eval('#run', (b) => b.disabled), true);
    await shot(page, 'newcomer-progress');

    const cancelledAt = Date.now();
    await page.click('#cancel-run');
    await page.waitForSelector('#summary dl', { timeout: 5000 });
    const took = Date.now() - cancelledAt;
    // Well under 100 ms on an idle machine; generous on a loaded one, yet far
    // before the ~9 s the batch had left.
    assert.ok(took < 3000, `Cancel took ${took} ms`);
    const sum = await summary();
    assert.equal(num(sum.commands), 1000);
    const ok = num(sum.ok);
    const unknown = num(sum.unknown);
    assert.ok(ok > 0 && ok < 900, `cut early: ${ok} ok`);
    assert.ok(unknown <= 1, 'at most the command in flight is unknown');
    assert.equal(num(sum.not_sent), 1000 - ok - unknown);
    assert.match(sum.connection_error, /cancelled/);
    assert.equal(await page.$eval('#run', (b) => b.disabled), false);
    // True statuses: Redis's counter agrees.
    const counter = Number(cli('GET', 'live:page'));
    assert.ok(counter === ok || counter === ok + unknown, `Redis counted ${counter}, the page says ${ok} ok + ${unknown} unknown`);
    await shot(page, 'newcomer-cancelled');
  });
});

const respDoc = () => page.evaluate(() => window.pipelab.editors.resp.state.doc.sliceString(0, undefined, '\r\n'));
const inlineDoc = () => page.evaluate(() => window.pipelab.editors.inline.state.doc.toString());

async function runAndWait() {
  const before = await page.evaluate(() => document.querySelector('#summary')?.innerHTML ?? '');
  await page.click('#run');
  await page.waitForFunction((b) => {
    const s = document.querySelector('#summary');
    return s && s.innerHTML !== b && s.querySelector('dl, .message.error');
  }, before, { timeout: 30000 });
}

describe('one numbering (item 2)', () => {
  test('a transaction message counts commands from 1, as the table does', async () => {
    await setBatch('SET n:a 1\nINCR\nSET n:b 2');
    await controls({ mode: 'transaction' });
    await runAndWait();
    const s = await summary();
    assert.match(s.transaction, /command 2 was rejected at queue time/);
    const row2 = await page.$eval('#results .rows .row[data-index="1"]', (r) => [...r.children].map((c) => c.textContent));
    assert.equal(row2[0], '2');
    assert.equal(row2[1], 'INCR');
  });
});

describe('the reply detail (item 3)', () => {
  test('opens beside its row, in view, with the whole reply, its RESP bytes and an escaped / UTF-8 toggle', async () => {
    const items = Array.from({ length: 30 }, (_, i) => `item${i + 1}`).join(' ');
    await setBatch(`SET r:u héllo\nGET r:u\nDEL r:l\nRPUSH r:l ${items}\nLRANGE r:l 0 -1`);
    await controls({ mode: 'pipeline' });
    await runAndWait();
    await page.click('#results .rows .row[data-index="4"]');
    const detail = await page.$('#detail');
    const box = await detail.boundingBox();
    const table = await (await page.$('#results')).boundingBox();
    const viewport = page.viewportSize();
    assert.ok(box.x > table.x + table.width - 1, 'beside the table');
    const rowBox = await (await page.$('#results .rows .row[data-index="4"]')).boundingBox();
    assert.ok(box.y < viewport.height && rowBox.y < viewport.height, 'detail and row in view at 1280×900');
    const whole = await page.textContent('#detail .reply-cli');
    assert.equal(whole.split('\n').length, 30, 'all 30 elements');
    assert.match(whole, /30\) "item30"/);
    assert.match(await page.textContent('#detail .reply-raw'), /^\*30\\r\\n/);
    await shot(page, 'newcomer-reply-detail');

    await page.click('#results .rows .row[data-index="1"]');
    assert.equal(await page.textContent('#detail .reply-cli'), '"h\\xc3\\xa9llo"');
    await page.click('#detail button.encoding');
    assert.equal(await page.textContent('#detail .reply-cli'), '"héllo"');
    await page.click('#detail button.encoding');
    assert.equal(await page.textContent('#detail .reply-cli'), '"h\\xc3\\xa9llo"');
    await page.click('#detail button.close');
    assert.equal(await page.$eval('#detail', (d) => d.hidden), true);
  });
});

describe('the RESP pane (item 5)', () => {
  test('takes RESP typed the way it shows it, and says which length is wrong', async () => {
    await setBatch('');
    await page.click('#resp-editor .cm-content');
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText('*2\\r\\n$4\\r\\nECHO\\r\\n$5\\r\\nhello\\r\\n');
    await page.waitForFunction(() => window.pipelab.editors.inline.state.doc.toString() === 'ECHO hello');
    assert.equal(await respDoc(), '*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n');

    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText('*2\\r\\n$4\\r\\nECHO\\r\\n$9\\r\\nhello\\r\\n');
    await page.waitForFunction(() => /bulk length 9 but 5 bytes before CRLF/.test(document.querySelector('#resp-status')?.textContent ?? ''));
    await shot(page, 'newcomer-resp-wrong-length');
    // Typed with real line breaks: the same plain message.
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    await page.keyboard.type('*1\n$9\nhello\n');
    await page.waitForFunction(() => /bulk length 9 but 5 bytes before CRLF/.test(document.querySelector('#resp-status')?.textContent ?? ''));
    assert.match(await page.textContent('#resp-status'), /line 2/, 'the line of the bad length');
  });
});

describe('the compare chart (item 4) and the batch size (item 6)', () => {
  test('bars with the ratio to sequential written on each, no red for a mode, and why the pipeline took more round trips', async () => {
    await setBatch(Array.from({ length: 30 }, () => 'INCR cmp:c').join('\n'));
    await page.click('#tabs button:has-text("Compare modes")');
    await page.fill('#compare-rtt', '2');
    await page.fill('#compare-batch-size', '10');
    await page.click('#compare-run');
    await page.waitForSelector('#compare-out table', { timeout: 60000 });
    const label = await page.$eval('#compare-time-chart', (c) => c.getAttribute('aria-label'));
    assert.match(label, /^total time(?: \(median\))?: sequential [\d.,]+ ms, pipeline [\d.,]+ ms, transaction [\d.,]+ ms(, auto [\d.,]+ ms)? \(/);
    assert.match(label, /\(sequential baseline, pipeline [\d.,]+× faster than sequential, transaction [\d.,]+× faster than sequential/);
    // The timeline's error red (#d9363e) is nowhere in the chart.
    const red = await page.$eval('#compare-time-chart', (c) => {
      const { data } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      let n = 0;
      for (let i = 0; i < data.length; i += 4) if (Math.abs(data[i] - 0xd9) < 8 && Math.abs(data[i + 1] - 0x36) < 8 && Math.abs(data[i + 2] - 0x3e) < 8) n++;
      return n;
    });
    assert.equal(red, 0, 'no red bars');
    const note = await page.textContent('#compare-out [data-note="batch-size"]');
    assert.match(note, /The pipeline took 3 round trips: its batch size \(10 commands per round trip\) is smaller than the batch \(30 commands\)/);
    assert.match(note, /Batch size applies to pipelines only; the transaction was always one round trip/);
    await shot(page, 'newcomer-compare');
    await page.click('#tabs button:has-text("Playground")');
  });

  test('the playground summary shows the batch size of a pipeline', async () => {
    await setBatch('PING\nPING\nPING');
    await controls({ mode: 'pipeline', batchSize: 2 });
    await runAndWait();
    const s = await summary();
    assert.equal(s.batch_size, '2 per round trip');
    assert.equal(s.round_trips, '2');
  });
});

describe('a fair default batch size (item 6)', () => {
  test('the 10k sample: a pipeline is one round trip, as a transaction, until a batch size is typed; the summary says why', async () => {
    await page.goto(lab.serve.base); // a fresh page: no batch size typed yet
    await page.waitForFunction(() => document.querySelector('#resp-status')?.textContent?.includes('bytes'));
    await page.selectOption('#sample', 'set10000');
    await page.check('input[name="mode"][value="pipeline"]');
    await page.waitForFunction(() => document.querySelector('#batch-size').value === '10000');
    assert.equal(await page.innerText('#batch-size-note'), 'whole batch');
    const note = () => page.innerText('#summary [data-note="round-trips"]');
    await runAndWait();
    let s = await summary();
    assert.equal(s.round_trips, '1');
    assert.equal(s.batch_size, '10,000 per round trip');
    assert.equal(await note(), 'Pipeline: 10,000 commands in 1 round trip, the batch size (10,000) holding the whole batch. Batch size applies to pipelines only; a transaction is always one round trip.');
    await shot(page, 'newcomer-round-trip-note');

    await page.check('input[name="mode"][value="transaction"]');
    await runAndWait();
    s = await summary();
    assert.equal(s.round_trips, '1');
    assert.equal(s.batch_size, undefined, 'no batch size for a transaction');
    assert.match(await note(), /^Transaction: 10,000 commands between MULTI and EXEC in one write, one round trip\. Batch size applies to pipelines only: a transaction is always one round trip\.$/);

    // A batch size typed is the reader's: it stays, and the summary says how to compare fairly.
    await page.check('input[name="mode"][value="pipeline"]');
    await page.fill('#batch-size', '1000');
    assert.equal(await page.innerText('#batch-size-note'), '');
    await runAndWait();
    s = await summary();
    assert.equal(s.round_trips, '10');
    assert.match(await note(), /^Pipeline: 10,000 commands in 10 round trips of up to 1,000 \(the batch size\)\. A transaction is always one round trip whatever the batch size: to compare the two fairly, give the pipeline a batch size of 10,000 or more\.$/);
    await setBatch('PING\nPING');
    assert.equal(await page.$eval('#batch-size', (e) => e.value), '1000');
    await page.check('input[name="mode"][value="sequential"]');
    await runAndWait();
    assert.equal(await note(), 'Sequential: one round trip per command, 2 round trips.');
  });
});

describe('a refused command before Run (item 8)', () => {
  test("the server's refused list marks SELECT in the editor and keeps Run off with the reason; MULTI only in transaction mode", async () => {
    const refused = await page.evaluate(async () => (await (await fetch('/api/v1/info')).json()).refused);
    const select = refused.find((r) => r.command === 'SELECT');
    await page.check('input[name="mode"][value="pipeline"]');
    await setBatch('SET a 1\nselect 1\nGET a');
    await page.waitForSelector('#run-warning:not([hidden])');
    assert.equal(await page.innerText('#run-warning'), `Command 2 (line 2) will be refused by this server: ${select.message}. Remove it to run the batch.`);
    assert.equal(await page.$eval('#run', (b) => b.disabled), true);
    assert.equal(await page.$eval('#run', (b) => b.getAttribute('aria-describedby')), 'run-warning');
    assert.equal(await page.locator('#inline-editor .cm-refusedCommand').count(), 1);
    assert.match(await page.getAttribute('#inline-editor .cm-refused', 'title'), /^command 2: SELECT is refused/);
    assert.equal(await page.locator('#resp-editor .cm-refusedCommand').count() > 0, true, 'the RESP view marks it too');
    await shot(page, 'newcomer-refused-select');
    // Ctrl+Enter does not send it either: no server-side error under the warning.
    await page.keyboard.press('Control+Enter');
    assert.equal(await page.$('#summary .message.error'), null);

    // A subcommand, quoted and in any case; MULTI is refused in transaction mode only.
    await setBatch('"client" Kill ID 3');
    await page.waitForFunction(() => /CLIENT KILL is refused/.test(document.querySelector('#run-warning').textContent));
    await setBatch('MULTI\nINCR n\nEXEC');
    await page.waitForSelector('#run-warning', { state: 'hidden' });
    assert.equal(await page.$eval('#run', (b) => b.disabled), false);
    await page.check('input[name="mode"][value="transaction"]');
    await page.waitForFunction(() => /^Command 1 \(line 1\) will be refused by this server: MULTI is refused in transaction mode/.test(document.querySelector('#run-warning').textContent));
    assert.equal(await page.locator('#inline-editor .cm-refused').count(), 2, 'MULTI and EXEC marked');
    assert.match(await page.innerText('#run-warning'), /\(2 commands of this batch are refused, marked in the editor\)/);
    await page.check('input[name="mode"][value="pipeline"]');
    await page.waitForSelector('#run-warning', { state: 'hidden' });
    assert.equal(await page.locator('#inline-editor .cm-refused').count(), 0);
    await setBatch('PING');
  });

  test('a time past 10 s reads in seconds', async () => {
    const f = await page.evaluate(() => [812.3456, 9876.5, 40537.586, 125000].map(window.pipelab.fmtDuration));
    assert.deepEqual(f, ['812.3 ms', '9,876.5 ms', '40.5 s', '2 min 5 s']);
  });
});

describe('smaller ones (item 8) and phone width (item 9)', () => {
  test('the Sample menu shows the sample loaded; Run is off while the page knows the batch would be refused', async () => {
    await page.selectOption('#sample', 'incr1000');
    assert.equal(await page.$eval('#sample', (s) => s.value), 'incr1000');
    await controls({ mode: 'sequential', rtt: 80 });
    await page.waitForSelector('#run-warning:not([hidden])');
    assert.equal(await page.$eval('#run', (b) => b.disabled), true);
    await controls({ mode: 'sequential', rtt: 0 });
    await page.waitForSelector('#run-warning', { state: 'hidden' });
    assert.equal(await page.$eval('#run', (b) => b.disabled), false);
  });

  test('the export preview shows bytes that are not UTF-8 as escapes; a permalink too long to share says so', async () => {
    await setBatch('SET bin "\\xff\\x00é"');
    await page.selectOption('#export-target', 'resp');
    await page.selectOption('#export-mode', 'pipeline');
    await page.click('#export');
    await page.waitForSelector('#export-preview[data-target="resp"][data-mode="pipeline"]');
    const preview = await page.innerText('#export-preview');
    assert.match(preview, /\\xff/, preview);
    assert.doesNotMatch(preview, /\ufffd/, 'no replacement character');
    assert.match(preview, /é/, 'UTF-8 stays text');

    await page.selectOption('#sample', 'set10000');
    await page.click('#permalink');
    await page.waitForSelector('#permalink-status[data-too-long]');
    assert.match(await page.innerText('#permalink-status'), /too long to share reliably: export the batch as a RESP file/);
    await setBatch('PING');
    await page.click('#permalink');
    await page.waitForFunction(() => !document.querySelector('#permalink-status').hasAttribute('data-too-long'));

  });

  test('at 390 px Run stays on screen wherever the page is scrolled', async () => {
    try {
      await page.setViewportSize({ width: 390, height: 844 });
      await setBatch('PING');
      for (const y of [0, 100000]) {
        await page.evaluate((to) => window.scrollTo(0, to), y);
        // Run is placed (in the controls or floating) on the frame after a scroll.
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        const b = await page.$eval('#run', (el) => el.getBoundingClientRect().toJSON());
        assert.ok(b.top >= 0 && b.bottom <= 844 && b.left >= 0 && b.right <= 390, `Run on screen at scroll ${y}: ${JSON.stringify(b)}`);
      }
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, 'no sideways scrolling of the page');
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: `${process.cwd()}/../artifacts/newcomer-phone-390.png` });
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });
});

describe('timings under load (item 10)', () => {
  test("lesson 1 shows its staircase: the first 20 commands zoomed beside the 1,000", async () => {
    await page.click('#tab-tutorial');
    await page.$eval('#l1-rtt', (e) => {
      e.value = '1';
      e.dispatchEvent(new Event('input', { bubbles: true }));
    });
    const card = page.locator('#lesson-1');
    await card.scrollIntoViewIfNeeded();
    await card.locator('button.run-lesson').click();
    await page.waitForSelector('#lesson-1 .lesson-result[data-state="done"]', { timeout: 60000 });
    await page.waitForTimeout(150);
    const labels = await page.$$eval('#lesson-1 canvas.lesson-timeline', (cs) => cs.map((c) => c.getAttribute('aria-label')));
    assert.equal(labels.length, 2);
    assert.match(labels[0], /^Timeline of 1000 commands/);
    assert.match(labels[1], /^Timeline of 20 commands over ([\d.]+) ms/);
    const zoomMs = Number(labels[1].match(/over ([\d.]+) ms/)[1]);
    assert.ok(zoomMs >= 20 * 1 * 0.98, `20 round trips of 1 ms: ${zoomMs} ms`);
    await card.screenshot({ path: `${process.cwd()}/../artifacts/newcomer-lesson1-zoom.png` });
    await page.click('#tab-playground');
  });
});

