// End to end: the built page (web/dist) served by `pipelab serve` in front of
// a real redis-server, driven in headless Chromium. Screenshots go to
// artifacts/ (git-ignored).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, openPlayground, shot } from './harness.mjs';

let redis;
let serve;
let browser;
let page;
let pageErrors = [];
let lab;

before(async () => {
  lab = await openPlayground({ width: 1280, height: 800 });
  ({ redis, serve, browser, page, pageErrors } = lab);
});

after(async () => {
  await lab?.close();
});

const respDoc = () => page.evaluate(() => window.pipelab.editors.resp.state.doc.sliceString(0, undefined, '\r\n'));
const inlineDoc = () => page.evaluate(() => window.pipelab.editors.inline.state.doc.toString());

async function typeInline(text) {
  await page.click('#inline-editor .cm-content');
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.type(text);
}

async function setBatch(text) {
  await page.evaluate((t) => window.pipelab.editors.setInline(t), text);
}

async function runWith({ mode, batchSize = 1000, rtt = 0, onError = 'continue', keyboard = false }) {
  await page.check(`input[name="mode"][value="${mode}"]`);
  if (mode === 'pipeline') await page.fill('#batch-size', String(batchSize));
  await page.fill('#rtt', String(rtt));
  await page.selectOption('#on-error', onError);
  const before = await page.evaluate(() => document.querySelector('#summary')?.innerHTML ?? '');
  if (keyboard) {
    await page.click('#inline-editor .cm-content');
    await page.keyboard.press('Control+Enter');
  } else {
    await page.click('#run');
  }
  await page.waitForFunction((b) => {
    const s = document.querySelector('#summary');
    return s && s.innerHTML !== b && s.querySelector('dl, .message.error');
  }, before, { timeout: 30000 });
  const error = await page.$eval('#summary', (s) => s.querySelector('.message.error')?.textContent ?? null);
  assert.equal(error, null, `run failed: ${error}`);
  return page.$$eval('#summary dl > div', (divs) => Object.fromEntries(divs.map((d) => [d.dataset.key, d.querySelector('dd').textContent])));
}

const num = (s) => Number(String(s).replace(/,/g, ''));

/** Cells of the rendered result rows (only rows in view exist). */
const rows = () => page.$$eval('#results .rows .row', (rs) => rs
  .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
  .map((r) => ({ cls: r.className, cells: [...r.children].map((c) => c.textContent) })));

/** How many canvas pixels have the colour of `ok` bars (#2f7ed8) per column band. */
const barPixels = () => page.$eval('#timeline', (c) => {
  const ctx = c.getContext('2d');
  const { data, width, height } = ctx.getImageData(0, 0, c.width, c.height);
  let n = 0;
  for (let i = 0; i < width * height; i++) {
    const [r, g, b] = [data[4 * i], data[4 * i + 1], data[4 * i + 2]];
    if (Math.abs(r - 0x2f) < 8 && Math.abs(g - 0x7e) < 8 && Math.abs(b - 0xd8) < 8) n++;
  }
  return n;
});

describe('editor (wasm, no backend needed)', () => {
  test('typing in the inline view updates the RESP view with byte counts', async () => {
    await typeInline('SET user:1 "Ada Lovelace"\nINCR hits');
    assert.equal(await inlineDoc(), 'SET user:1 "Ada Lovelace"\nINCR hits');
    const want = '*3\r\n$3\r\nSET\r\n$6\r\nuser:1\r\n$12\r\nAda Lovelace\r\n*2\r\n$4\r\nINCR\r\n$4\r\nhits\r\n';
    assert.equal(await respDoc(), want);
    const status = await page.textContent('#resp-status');
    assert.match(status, new RegExp(`2 commands · ${want.length} bytes in total`));
    // Per-command byte counts and visible CR LF markers in the RESP view.
    const badges = await page.$$eval('#resp-editor .cm-bytes', (b) => b.map((x) => x.textContent));
    assert.deepEqual(badges, ['44 B', '24 B']);
    const crlf = await page.$$eval('#resp-editor .cm-crlf', (b) => b.length);
    assert.equal(crlf, 12); // one per line break: 7 lines for SET (3 args), 5 for INCR
    await shot(page, 'e2e-01-typed');
  });

  test('editing the RESP view updates the inline view', async () => {
    // Change "hits" ($4) to "visits" ($6) in the RESP view.
    const doc = await page.evaluate(() => window.pipelab.editors.resp.state.doc.toString());
    const from = doc.lastIndexOf('$4\nhits');
    await page.evaluate(({ from }) => {
      const v = window.pipelab.editors.resp;
      v.dispatch({ changes: { from, to: from + '$4\nhits'.length, insert: v.state.toText('$6\r\nvisits') } });
    }, { from });
    assert.equal(await inlineDoc(), 'SET user:1 "Ada Lovelace"\nINCR visits');
  });

  test('typing RESP by keyboard in the RESP view (Enter is CR LF) adds a command to the inline view', async () => {
    await setBatch('GET k');
    await page.click('#resp-editor .cm-content');
    await page.keyboard.press('Control+End');
    await page.keyboard.type('*1\n$4\nPING\n');
    assert.equal(await respDoc(), '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n');
    assert.equal(await inlineDoc(), 'GET k\nPING');
    // Half-typed RESP is an error in the RESP view, and the inline view waits.
    await page.keyboard.type('*1\n$4\nPI');
    assert.match(await page.textContent('#resp-status .error-message'), /incomplete/);
    assert.equal(await inlineDoc(), 'GET k\nPING');
    await page.keyboard.type('NG\n');
    assert.equal(await inlineDoc(), 'GET k\nPING\nPING');
  });

  test('the command under the cursor is highlighted in both views', async () => {
    await setBatch('SET a 1\nGET a\nPING');
    await page.click('#inline-editor .cm-line:nth-child(2)');
    const lines = await page.$$eval('#resp-editor .cm-activeCommand', (ls) => ls.map((l) => l.textContent.replace(/\\r\\n.*$/, '')));
    assert.deepEqual(lines, ['*2', '$3', 'GET', '$1', 'a']);
    assert.equal(await page.$eval('#inline-editor .cm-activeCommand', (l) => l.textContent.replace(/\d+ B$/, '')), 'GET a');
  });

  test('an unbalanced quote is underlined at its line and column, with the message', async () => {
    await typeInline('PING\nECHO "abc\nPING');
    const message = await page.textContent('#inline-status .error-message');
    assert.equal(message, 'line 2, column 6: unbalanced double quote');
    // The underline covers the opening quote, on line 2.
    const mark = await page.$('#inline-editor .cm-lintRange-error');
    assert.ok(mark, 'an error underline is drawn');
    assert.equal(await mark.textContent(), '"');
    const line = await mark.evaluate((el) => [...el.closest('.cm-content').children].indexOf(el.closest('.cm-line')) + 1);
    assert.equal(line, 2);
    // The other lines still reach the RESP view.
    assert.equal(await respDoc(), '*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n');
    await mark.hover();
    await page.waitForSelector('.cm-tooltip-lint', { timeout: 5000 });
    assert.match(await page.textContent('.cm-tooltip-lint'), /unbalanced double quote/);
    await shot(page, 'e2e-02-unbalanced-quote');
    // Running is refused while the inline view has errors.
    await page.click('#run');
    await page.waitForSelector('#summary .message.error');
    assert.match(await page.textContent('#summary'), /Fix the errors/);
  });

  test('a malformed RESP view is reported at its byte', async () => {
    await setBatch('GET k');
    await page.evaluate(() => {
      const v = window.pipelab.editors.resp;
      const doc = v.state.doc.toString();
      const at = doc.indexOf('$1');
      v.dispatch({ changes: { from: at, to: at + 2, insert: '$x' } });
    });
    const message = await page.textContent('#resp-status .error-message');
    assert.match(message, /^byte 13 \(line 4\): invalid bulk length "x"$/);
    assert.equal(await inlineDoc(), 'GET k', 'the inline view keeps its text');
    // Byte 13 is the `$` of `$x`, on line 4 of the RESP view.
    const mark = await page.$('#resp-editor .cm-lintRange-error');
    assert.ok(mark, 'an error underline is drawn');
    assert.equal(await mark.textContent(), '$');
    const line = await mark.evaluate((el) => [...el.closest('.cm-content').children].indexOf(el.closest('.cm-line')) + 1);
    assert.equal(line, 4);
    await shot(page, 'e2e-03-resp-error');
  });
});

describe('runs against a real Redis', () => {
  const batch = ['SET e2e:name pipelab', 'GET e2e:name', 'INCR e2e:count', 'INCR e2e:name', 'DEL e2e:count'].join('\n');

  test('sequential: one round trip per command, a staircase', async () => {
    await setBatch(batch);
    const s = await runWith({ mode: 'sequential', rtt: 1.2 });
    assert.equal(s.mode, 'sequential');
    assert.equal(num(s.commands), 5);
    assert.equal(num(s.round_trips), 5);
    assert.equal(num(s.errors), 1);
    assert.ok(num(s.bytes_sent) > 0 && num(s.bytes_received) > 0);
    assert.ok(parseFloat(s.total) >= 5 * 1.2, `total ${s.total} covers 5 simulated RTTs`);
    const r = await rows();
    assert.equal(r.length, 5);
    assert.deepEqual(r[0].cells.slice(0, 4), ['1', 'SET e2e:name pipelab', 'OK', 'ok']);
    assert.deepEqual(r[1].cells.slice(2, 4), ['"pipelab"', 'ok']);
    assert.deepEqual(r[2].cells.slice(2, 4), ['(integer) 1', 'ok']);
    assert.match(r[3].cells[2], /^\(error\) ERR value is not an integer/);
    assert.equal(r[3].cells[3], 'error');
    assert.match(r[3].cls, /status-error/);
    // Staircase: each command is sent after the previous reply.
    const times = r.map((x) => [parseFloat(x.cells[4]), parseFloat(x.cells[5])]);
    for (let i = 1; i < times.length; i++) assert.ok(times[i][0] >= times[i - 1][1], `command ${i + 1} sent after reply ${i}`);
    assert.ok(await barPixels() > 0, 'timeline bars drawn');
    await shot(page, 'e2e-04-sequential');
  });

  test('pipeline (Ctrl+Enter): one round trip, one block', async () => {
    await setBatch(batch);
    const s = await runWith({ mode: 'pipeline', batchSize: 1000, rtt: 1.2, keyboard: true });
    assert.equal(s.mode, 'pipeline');
    assert.equal(num(s.round_trips), 1);
    assert.equal(num(s.errors), 1);
    const r = await rows();
    assert.equal(r.length, 5);
    const sent = new Set(r.map((x) => x.cells[4]));
    assert.equal(sent.size, 1, 'all commands sent in one write');
    assert.ok(await barPixels() > 0);
    // A single Redis: one unlabelled lane, every row in it (lanes are for cluster nodes).
    const lanes = await page.evaluate(() => window.pipelab.timeline.lanes().map((l) => ({ node: l.node, rows: l.rows })));
    assert.deepEqual(lanes, [{ node: null, rows: [0, 1, 2, 3, 4] }]);
    // The reply in redis-cli format, and its raw RESP on demand.
    await page.click('#results .rows .row[data-index="1"]');
    assert.equal(await page.textContent('#detail .reply-cli'), '"pipelab"');
    await page.click('#detail button');
    assert.match(await page.textContent('#detail .reply-raw'), /^\$7\\r\\n\npipelab\\r\\n\n\(13 bytes\)$/);
    await shot(page, 'e2e-05-pipeline');
  });

  test('pipeline with batch size 2: three round trips', async () => {
    await setBatch(batch);
    const s = await runWith({ mode: 'pipeline', batchSize: 2 });
    assert.equal(num(s.round_trips), 3);
  });

  test('transaction: MULTI/EXEC, results from the EXEC reply', async () => {
    await setBatch(batch);
    const s = await runWith({ mode: 'transaction' });
    assert.equal(s.mode, 'transaction');
    assert.match(s.transaction, /committed/);
    const r = await rows();
    assert.equal(r.length, 5);
    assert.equal(r[0].cells[2], 'OK');
    assert.equal(r[3].cells[3], 'error');
    await shot(page, 'e2e-06-transaction');
  });

  test('RTT takes any decimal (0.05, 0.25, 0.24); an invalid control value gets a message, not silence', async () => {
    await setBatch(batch);
    for (const rtt of [0.05, 0.25, 0.24]) {
      const s = await runWith({ mode: 'pipeline', rtt });
      assert.equal(num(s.commands), 5, `RTT ${rtt} ms runs`);
      assert.equal(await page.$eval('#rtt', (e) => e.validity.valid), true, `RTT ${rtt} is valid for the browser too`);
    }
    const refused = async (fill, value, pattern) => {
      await page.fill(fill, value);
      await page.click('#run');
      await page.waitForSelector('#summary .message.error[data-source="controls"]', { timeout: 5000 });
      assert.match(await page.innerText('#summary'), pattern);
      assert.equal(await page.getAttribute(fill, 'aria-invalid'), 'true');
    };
    await refused('#rtt', '2000', /^Simulated RTT must be a number of milliseconds from 0 to 1000, e\.g\. 0\.25 \(it is 2000\)\.$/);
    await shot(page, 'e2e-12-invalid-rtt');
    // Fixing the value takes the stale message away at once.
    await page.fill('#rtt', '0.3');
    assert.equal(await page.$('#summary .message'), null, 'the stale message is gone');
    assert.equal(await page.getAttribute('#rtt', 'aria-invalid'), null);
    await refused('#rtt', '', /Simulated RTT must be .* \(the field is empty or not a number\)/);
    await page.fill('#rtt', '0');
    await refused('#batch-size', '0', /^Batch size must be a whole number, at least 1 \(it is 0\)\.$/);
    await page.keyboard.press('Control+Enter'); // the shortcut checks the same way
    assert.match(await page.innerText('#summary'), /Batch size must be/);
    await page.fill('#batch-size', '1000');
    const s = await runWith({ mode: 'pipeline', rtt: 0 });
    assert.equal(num(s.commands), 5);
    // The limits are the server's (GET /api/v1/info), not the page's own: the
    // RTT field's max is the server's, and the server caps no batch size.
    const { defaults } = await (await fetch(`${serve.base}api/v1/info`)).json();
    assert.equal(await page.getAttribute('#rtt', 'max'), String(defaults.max_simulated_rtt_ms));
    const big = await runWith({ mode: 'pipeline', batchSize: 250000 });
    assert.equal(num(big.commands), 5, 'a batch size above 100,000 runs');
    assert.equal(num(big.round_trips), 1);
  });

  test('an error clears the previous batch\'s timeline and results', async () => {
    for (const [text, pattern] of [['PING\nECHO "abc', /Fix the errors underlined/], ['', /Nothing to run/]]) {
      await setBatch(batch);
      await runWith({ mode: 'pipeline' });
      assert.equal((await rows()).length, 5);
      assert.ok(await barPixels() > 0);
      await setBatch(text);
      await page.click('#run');
      await page.waitForSelector('#summary .message.error');
      assert.match(await page.innerText('#summary'), pattern);
      assert.equal((await rows()).length, 0, `${pattern}: no result rows of the earlier batch`);
      await page.waitForTimeout(100); // the timeline redraws on the next frame
      assert.equal(await barPixels(), 0, `${pattern}: no timeline bars of the earlier batch`);
      assert.equal(await page.getAttribute('#timeline', 'aria-label'), 'Timeline: no run yet');
    }
    await shot(page, 'e2e-13-error-clears-results');
  });

  test('80 ms, sequential, 1,000 commands: warned before running; refused with advice that fits the mode', async () => {
    const { limits } = await (await fetch(`${serve.base}api/v1/info`)).json();
    const timeout = limits.batch_timeout_ms;
    assert.ok(1000 * 80 > timeout, `the server's batch timeout (${timeout} ms) is below 1,000 × 80 ms`);
    await setBatch(batch);
    await runWith({ mode: 'pipeline' }); // results on screen, to see them cleared
    await page.selectOption('#sample', 'incr1000');
    await page.check('input[name="mode"][value="sequential"]');
    await page.click('.presets button[data-rtt="80"]');
    await page.waitForSelector('#run-warning:not([hidden])');
    const warning = await page.innerText('#run-warning');
    assert.match(warning, new RegExp(`^1,000 round trips × 80 ms = 80,000 ms of simulated RTT, over the server's batch timeout of ${timeout.toLocaleString('en-US')} ms`));
    assert.match(warning, /send fewer commands, pick a smaller RTT, or switch to pipeline mode\.$/);
    assert.doesNotMatch(warning, /batch size/i);
    // The page knows the server would refuse it: Run is off (Ctrl+Enter too), the warning says why, once.
    assert.equal(await page.$eval('#run', (b) => b.disabled), true);
    await page.click('#inline-editor .cm-content');
    await page.keyboard.press('Control+Enter');
    assert.equal(await page.$('#summary .message.error'), null, 'no second, server-side message');
    await shot(page, 'e2e-14-rtt-budget-sequential');
    // Pipeline: one round trip, no warning; batch size 1: the advice is the batch size.
    await page.check('input[name="mode"][value="pipeline"]');
    await page.fill('#batch-size', '1000');
    await page.waitForSelector('#run-warning', { state: 'hidden' });
    await page.fill('#batch-size', '1');
    await page.waitForSelector('#run-warning:not([hidden])');
    assert.match(await page.innerText('#run-warning'), /Raise the batch size/);
    assert.equal(await page.$eval('#run', (b) => b.disabled), true);
    await page.fill('#batch-size', '1000');
    await page.click('.presets button[data-rtt="0"]');
    await page.waitForSelector('#run-warning', { state: 'hidden' });
    assert.equal(await page.$eval('#run', (b) => b.disabled), false, 'Run is back');
  });

  test('summary: errors and unknown are red only when above 0', async () => {
    const colour = (key) => page.$eval(`#summary [data-key="${key}"] dd`, (e) => getComputedStyle(e).color);
    const red = 'rgb(217, 54, 62)';
    await setBatch(batch);
    const s = await runWith({ mode: 'pipeline' });
    assert.equal(num(s.errors), 1);
    assert.equal(await colour('errors'), red, 'errors 1 is red');
    assert.equal(num(s.unknown), 0);
    assert.notEqual(await colour('unknown'), red, 'unknown 0 is not red');
    await setBatch('PING\nECHO fine');
    const t = await runWith({ mode: 'pipeline' });
    assert.equal(num(t.errors), 0);
    assert.notEqual(await colour('errors'), red, 'errors 0 is not red');
    assert.equal(await colour('errors'), await colour('ok'), 'errors 0 looks like any other count');
  });

  test('on_error stop: the chunks after an error are not sent', async () => {
    await setBatch(batch);
    const s = await runWith({ mode: 'pipeline', batchSize: 2, onError: 'stop' });
    assert.equal(num(s.not_sent), 1);
    const r = await rows();
    assert.equal(r[4].cells[3], 'not sent');
    assert.match(r[4].cls, /status-not_sent/);
  });

  test('RESP3: HELLO 3 first, map replies in redis-cli format', async () => {
    await setBatch('DEL e2e:h\nHSET e2e:h a 1\nHGETALL e2e:h');
    await page.check('#resp3');
    try {
      await runWith({ mode: 'pipeline' });
    } finally {
      await page.uncheck('#resp3');
    }
    const r = await rows();
    assert.equal(r[2].cells[2], '1# "a" => "1"');
    await page.click('#results .rows .row[data-index="2"]');
    await page.click('#detail button');
    assert.match(await page.textContent('#detail .reply-raw'), /^%1\\r\\n/);
  });

  test('10 000 commands: table stays virtual, timeline drawn, page responsive', async () => {
    await page.selectOption('#sample', 'set10000');
    assert.match(await page.textContent('#inline-status'), /10,000 commands/);
    const s = await runWith({ mode: 'pipeline', batchSize: 1000 });
    assert.equal(num(s.commands), 10000);
    assert.equal(num(s.ok), 10000);
    assert.equal(num(s.round_trips), 10);
    const rendered = await page.$$eval('#results .rows .row', (r) => r.length);
    assert.ok(rendered > 5 && rendered < 100, `${rendered} rows in the DOM`);
    assert.ok(await barPixels() > 1000);
    // Scroll to the end of the table: the last row appears.
    await page.$eval('#results', (el) => { el.scrollTop = el.scrollHeight; });
    await page.waitForSelector('#results .rows .row[data-index="9999"]');
    const t0 = Date.now();
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
    assert.ok(Date.now() - t0 < 1000, 'a frame is drawn promptly');
    await shot(page, 'e2e-07-10k');
  });

  test('phone-sized screens (390, 420 px): every tab and Copy permalink on screen, the table compact in its box', async () => {
    await setBatch(batch);
    try {
      for (const width of [390, 420]) {
        await page.setViewportSize({ width, height: 844 });
        await page.evaluate(() => window.scrollTo(0, 0));
        await runWith({ mode: 'pipeline' });
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        assert.ok(overflow <= 0, `${width}px: no horizontal scrolling of the page (${overflow}px)`);
        // The tab bar wraps: every tab and the permalink button lie inside the viewport.
        const boxes = await page.$$eval('#tabs button', (bs) => bs.map((b) => {
          const r = b.getBoundingClientRect();
          return { text: b.textContent, left: r.left, right: r.right, w: r.width };
        }));
        assert.equal(boxes.length, 5);
        for (const b of boxes) assert.ok(b.left >= 0 && b.right <= width && b.w > 0, `${width}px: "${b.text}" on screen (${b.left}–${b.right})`);
        await page.evaluate(() => window.scrollTo(0, 0));
        await shot(page, `e2e-08-phone-${width}`);
        // The compact layout (two lines a row): all six columns inside the box, no sideways scrolling.
        const res = await page.$eval('#results', (el) => {
          const box = el.getBoundingClientRect();
          const heads = [...el.querySelectorAll('.row.header > div')].map((h) => ({ text: h.textContent, ...h.getBoundingClientRect().toJSON() }));
          return { scrolls: el.scrollWidth > el.clientWidth, box: box.toJSON(), heads };
        });
        assert.ok(!res.scrolls, `${width}px: the table fits its box`);
        for (const name of ['#', 'command', 'reply', 'status', 'sent ms', 'reply ms']) {
          const h = res.heads.find((x) => x.text === name);
          assert.ok(h && h.width > 0, `${width}px: the ${name} column exists`);
          assert.ok(h.left >= res.box.left - 1 && h.right <= res.box.right + 1, `${width}px: ${name} lies inside the box`);
        }
        const cells = await page.$$eval('#results .rows .row[data-index="0"] .c-time', (cs) => cs.map((c) => c.textContent));
        assert.equal(cells.length, 2);
        for (const c of cells) assert.match(c, /^\d+\.\d{3}$/);
        await page.locator('.results-section').scrollIntoViewIfNeeded();
        await page.locator('.results-section').screenshot({ path: join(artifacts, `e2e-08-phone-${width}-results.png`) });
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  test('the limits come from GET /api/v1/info; without it the page caps nothing and the server answers', async () => {
    const info = await (await fetch(`${serve.base}api/v1/info`)).json();
    /** A page of its own whose GET /api/v1/info goes through `route`. */
    const open = async (route) => {
      const p = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      p.on('pageerror', (e) => pageErrors.push(e.message));
      await p.route('**/api/v1/info', route);
      await p.goto(serve.base);
      await p.waitForSelector('#inline-editor .cm-content');
      return p;
    };
    const refusal = async (p) => {
      await p.click('#run');
      await p.waitForSelector('#summary .message.error');
      return p.innerText('#summary');
    };
    // A server with smaller limits: the page checks those, not its own.
    const small = { ...info, limits: { ...info.limits, max_commands: 3 }, defaults: { ...info.defaults, max_simulated_rtt_ms: 50 } };
    const p1 = await open((r) => r.fulfill({ json: small }));
    await p1.waitForFunction(() => document.querySelector('#rtt')?.getAttribute('max') === '50');
    await p1.evaluate(() => window.pipelab.editors.setInline('PING\nPING'));
    await p1.fill('#rtt', '60');
    assert.match(await refusal(p1), /^Simulated RTT must be a number of milliseconds from 0 to 50, e\.g\. 0\.25 \(it is 60\)\.$/);
    await p1.fill('#rtt', '0');
    await p1.evaluate(() => window.pipelab.editors.setInline('PING\nPING\nPING\nPING'));
    assert.match(await refusal(p1), /^Too many commands: 4; this server runs at most 3 in one batch\.$/);
    await shot(p1, 'e2e-15-limits-from-info');
    await p1.close();
    // /info unreachable: the page caps nothing and the server's 400 speaks.
    const p2 = await open((r) => r.abort());
    await p2.evaluate(() => window.pipelab.editors.setInline('PING'));
    await p2.fill('#rtt', '2000');
    assert.match(await refusal(p2), /^Run failed: .*1000.* \(invalid_rtt\)$/);
    assert.equal(await p2.getAttribute('#rtt', 'max'), null);
    await p2.close();
  });

  test('Redis killed mid-batch: the command in flight is unknown, the rest not sent', async () => {
    await setBatch(Array.from({ length: 40 }, (_, i) => `INCR e2e:slow:${i}`).join('\n'));
    await page.check('input[name="mode"][value="sequential"]');
    await page.fill('#rtt', '80');
    await page.click('#run');
    await page.waitForTimeout(1000); // about 12 of 40 round trips done
    await redis.stop();
    await page.waitForSelector('#summary dl, #summary .message.error', { timeout: 30000 });
    await page.waitForFunction(() => !document.querySelector('#run').disabled, null, { timeout: 30000 });
    const summary = await page.$$eval('#summary dl > div', (divs) => Object.fromEntries(divs.map((d) => [d.dataset.key, d.querySelector('dd').textContent])));
    assert.ok(num(summary.ok) >= 1 && num(summary.ok) < 40, `ok ${summary.ok}`);
    assert.equal(num(summary.ok) + num(summary.unknown) + num(summary.not_sent) + num(summary.errors), 40);
    assert.equal(num(summary.unknown), 1, 'exactly the command in flight is unknown');
    const all = await page.evaluate(() => {
      const el = document.querySelector('#results');
      el.scrollTop = 0;
      return [...el.querySelectorAll('.rows .row')].map((r) => [Number(r.dataset.index), r.className, r.children[3].textContent]);
    });
    const unknown = all.find(([, , status]) => status === 'unknown');
    assert.ok(unknown, 'the unknown row is rendered');
    assert.match(unknown[1], /status-unknown/);
    const notSent = all.filter(([, , status]) => status === 'not sent');
    assert.ok(notSent.length > 0 && notSent.every(([, cls]) => /status-not_sent/.test(cls)));
    await shot(page, 'e2e-09-redis-killed-mid-batch');
    await page.fill('#rtt', '0');
  });

  test('Redis down: a banner says so, the editor still works', async () => {
    await redis.stop();
    await setBatch('PING');
    await page.click('#run');
    await page.waitForSelector('#banner:not([hidden])', { timeout: 15000 });
    assert.match(await page.textContent('#banner'), /Redis is unreachable/);
    assert.match(await page.textContent('#summary'), /Run failed/);
    await typeInline('ECHO still-works');
    assert.equal(await respDoc(), '*2\r\n$4\r\nECHO\r\n$11\r\nstill-works\r\n');
    await shot(page, 'e2e-10-redis-down');
  });

  test('API gone: the banner says the API is unreachable', async () => {
    await serve.stop();
    await page.click('#run');
    await page.waitForFunction(() => /API is unreachable/.test(document.querySelector('#banner')?.textContent ?? ''), null, { timeout: 15000 });
    await shot(page, 'e2e-11-api-down');
  });

  test('no uncaught errors in the page', () => {
    assert.deepEqual(pageErrors, []);
  });
});
