// The playground's "interactive" toggle in headless Debian Chromium against
// `pipelab serve` and a real redis-server: one command at a time on a
// session, MULTI … EXEC typed step by step (QUEUED seen, then EXEC's
// replies), a WATCH that holds across commands and a write from another
// client that makes EXEC return null, the session closed when the toggle
// goes off, an idle session expired, and a session whose connection was
// killed answering session_lost plainly, command names completed and hovered
// from the server's COMMAND DOCS. Screenshots: artifacts/interactive-*.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { artifacts, launchBrowser, startRedis, startServe } from '../e2e/harness.mjs';
import { run } from '../tutorial/helpers.mjs';

/** The server's idle timeout for sessions in this test (ms): short, so that expiry is seen. */
const IDLE_MS = 3000;
let redis, serve, browser, page;
const errors = [];

before(async () => {
  redis = await startRedis();
  serve = await startServe(redis.url, ['--session-idle-ms', String(IDLE_MS)]);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(serve.base);
  await page.waitForSelector('#inline-editor .cm-content');
});

after(async () => {
  await browser?.close();
  await serve?.stop();
  await redis?.stop();
});

const cli = async (...args) => (await run('redis-cli', ['-p', String(redis.port), ...args])).stdout.trim();

/** Types one command into the console and waits for its entry; returns { status, code, reply, prompt }. */
async function send(cmd) {
  const before = await page.locator('#console-log .entry').count();
  await page.fill('#console-input', cmd);
  await page.press('#console-input', 'Enter');
  await page.waitForFunction((n) => document.querySelectorAll('#console-log .entry').length > n && !document.getElementById('console-send').disabled, before, { timeout: 20_000 });
  return page.$eval('#console-log .entry:last-of-type', (e) => ({
    status: e.dataset.status,
    code: e.dataset.code ?? null,
    reply: e.querySelector('pre.reply').textContent,
    prompt: e.querySelector('.cmd .prompt').textContent.trim(),
  }));
}

/** The command line's text (a one-line CodeMirror editor; its placeholder is no text). */
const consoleText = () => page.$eval('#console-input', (e) => [...e.querySelectorAll('.cm-line')].map((l) => [...l.childNodes].filter((n) => !n.classList?.contains('cm-placeholder')).map((n) => n.textContent).join('')).join('\n'));

/** The console's last notice: { kind: 'info' | 'error', text }. */
const lastNotice = () => page.$eval('#console-log .console-notice:last-of-type', (e) => ({ kind: e.dataset.kind, text: e.textContent }));

test('the toggle swaps the batch editors for a console', async () => {
  assert.equal(await page.isVisible('#interactive-panel'), false);
  await page.check('#interactive');
  assert.equal(await page.isVisible('#interactive-panel'), true);
  assert.equal(await page.isVisible('#inline-editor'), false, 'the batch editor is hidden');
  assert.equal(await page.isVisible('#run'), false, 'the batch Run is hidden');
  assert.equal(await page.isVisible('#rtt'), true, 'the RTT still applies');
  assert.match(await page.innerText('#session-status'), /No session yet/);
});

test('the console completes command names and shows their docs, from the server\'s COMMAND DOCS', { timeout: 60_000 }, async () => {
  const docs = await (await fetch(`${serve.base}api/v1/commands`)).json();
  const incr = docs.commands.find((c) => c.name === 'INCR');
  assert.ok(incr.summary.length > 0);
  await page.click('#console-input');
  await page.keyboard.type('INC');
  await page.waitForSelector('.cm-tooltip-autocomplete li', { timeout: 10_000 });
  const options = await page.$$eval('.cm-tooltip-autocomplete li .cm-completionLabel', (ls) => ls.map((l) => l.textContent));
  assert.ok(options.includes('INCR') && options.includes('INCRBY'), options.join(', '));
  await page.locator('#interactive-panel').screenshot({ path: join(artifacts, 'interactive-completion.png') });
  await page.keyboard.press('Escape');
  await page.keyboard.type('R tut:i:help');
  // The line under the prompt: the typed command's syntax and summary.
  await page.waitForFunction(() => document.getElementById('console-help').dataset.command === 'INCR');
  const line = await page.textContent('#console-help');
  assert.ok(line.includes('INCR key') && line.includes(incr.summary), line);
  // Hover on the name: the inline editor's card (syntax, summary, arity).
  const box = await page.locator('#console-input .cm-line').boundingBox();
  await page.mouse.move(box.x + 8, box.y + box.height / 2);
  await page.waitForSelector('.command-help[data-command="INCR"]', { timeout: 10_000 });
  const card = await page.textContent('.command-help');
  assert.ok(card.includes('INCR key') && card.includes(incr.summary) && card.includes('exactly 2 words'), card);
  await page.locator('#interactive-panel').screenshot({ path: join(artifacts, 'interactive-hover.png') });
  await page.mouse.move(0, 0);
  // Enter sends the line as typed, even with a completion list open on it.
  await page.keyboard.press('Enter');
  await page.waitForSelector('#console-log .entry[data-status="ok"]', { timeout: 20_000 });
  assert.equal(await page.textContent('#console-log .entry:last-of-type pre.reply'), '(integer) 1');
  await page.click('#console-input');
  await page.keyboard.type('PING');
  await page.waitForSelector('.cm-tooltip-autocomplete li', { timeout: 10_000 });
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#console-log .entry:last-of-type pre.reply')?.textContent === 'PONG', null, { timeout: 20_000 });
  assert.equal(await consoleText(), '', 'the line is empty again');
  // Tab takes the completion offered.
  await page.keyboard.type('HGETA');
  await page.waitForSelector('.cm-tooltip-autocomplete li', { timeout: 10_000 });
  // CodeMirror takes no key in a list open for less than its interaction delay (75 ms): a person's pace.
  await page.waitForTimeout(300);
  await page.keyboard.press('Tab');
  assert.equal(await consoleText(), 'HGETALL');
  await page.fill('#console-input', '');
  assert.equal(await cli('GET', 'tut:i:help'), '1');
});

test('MULTI … EXEC typed step by step: QUEUED, then the replies; the prompt shows (TX)', { timeout: 60_000 }, async () => {
  assert.equal((await send('SET tut:i:k 10')).reply, 'OK');
  assert.match(await lastNotice().then((n) => n.text), /Opened a session/);
  assert.match(await page.innerText('#session-status'), /Session .* open/);
  const multi = await send('MULTI');
  assert.equal(multi.reply, 'OK');
  assert.equal((await page.innerText('#console-prompt')).trim(), 'redis(TX)>');
  const q1 = await send('INCR tut:i:k');
  assert.equal(q1.reply, 'QUEUED');
  assert.equal(q1.prompt, 'redis(TX)>');
  assert.equal((await send('INCR tut:i:k')).reply, 'QUEUED');
  // Nothing ran yet: another client still sees 10.
  assert.equal(await cli('GET', 'tut:i:k'), '10');
  const exec = await send('EXEC');
  assert.equal(exec.reply, '1) (integer) 11\n2) (integer) 12');
  assert.equal((await page.innerText('#console-prompt')).trim(), 'redis>');
  assert.equal(await cli('GET', 'tut:i:k'), '12');
});

test('a WATCH holds across commands; another client\'s write makes EXEC return null', { timeout: 60_000 }, async () => {
  assert.equal((await send('WATCH tut:i:k')).reply, 'OK');
  assert.equal((await send('GET tut:i:k')).reply, '"12"');
  await cli('INCR', 'tut:i:k'); // the other client, outside the session
  await send('MULTI');
  assert.equal((await send('SET tut:i:k 24')).reply, 'QUEUED');
  const exec = await send('EXEC');
  assert.equal(exec.reply, '(nil)', 'the watched key changed: nothing ran');
  assert.equal(await cli('GET', 'tut:i:k'), '13');
  // History: ArrowUp brings back the last command.
  await page.press('#console-input', 'ArrowUp');
  assert.equal(await consoleText(), 'EXEC');
  await page.fill('#console-input', '');
  await page.locator('#interactive-panel').screenshot({ path: join(artifacts, 'interactive-watch.png') });
});

test('a killed connection is session_lost, said plainly, and not reopened silently', { timeout: 60_000 }, async () => {
  await send('MULTI');
  await cli('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
  const r = await send('INCR tut:i:k');
  // The connection may fail under this very command (its outcome unknown) or be found dead first (not run).
  if (r.code !== 'session_lost') {
    assert.equal(r.status, 'unknown', JSON.stringify(r));
    const next = await send('PING');
    assert.equal(next.code, 'session_lost', JSON.stringify(next));
  }
  const n = await lastNotice();
  assert.equal(n.kind, 'error');
  assert.match(n.text, /connection to Redis was lost \(session_lost\).*WATCH and MULTI state are gone.*not reopened/);
  assert.equal((await page.innerText('#console-prompt')).trim(), 'redis>', 'the transaction went with the session');
  assert.match(await page.innerText('#session-status'), /No session/);
  await page.locator('#interactive-panel').screenshot({ path: join(artifacts, 'interactive-lost.png') });
  // The next command opens a new session.
  assert.equal((await send('PING')).reply, 'PONG');
  assert.match((await lastNotice()).text, /Opened a session/);
});

test('an idle session expires; the console says so and the command is not run', { timeout: 60_000 }, async () => {
  assert.equal((await send('SET tut:i:idle 1')).reply, 'OK');
  await page.waitForTimeout(IDLE_MS + 2000);
  const r = await send('INCR tut:i:idle');
  assert.equal(r.code, 'session_not_found', JSON.stringify(r));
  assert.match((await lastNotice()).text, /session is gone \(session_not_found\).*after 3 s without a command.*not run/);
  assert.equal(await cli('GET', 'tut:i:idle'), '1', 'the INCR did not run');
});

test('each command shows its own round trip, and guided practice checks, explains and moves on', { timeout: 60_000 }, async () => {
  const r = await send('PING');
  assert.equal(r.reply, 'PONG', 'the reply alone, the time beside it');
  const took = await page.$eval('#console-log .entry:last-of-type .took', (e) => ({ us: Number(e.dataset.us), text: e.textContent }));
  assert.ok(took.us > 0, JSON.stringify(took));
  assert.equal(took.text, `(${(took.us / 1000).toFixed(3)} ms)`);
  await page.click('#practice-start');
  assert.match(await page.innerText('#practice'), /Step 1 of 6: type PING/);
  // A wrong command runs all the same; the step says what it wanted.
  assert.equal((await send('ECHO hi')).reply, '"hi"');
  assert.match(await page.innerText('#practice .practice-expected'), /Not this step: type PING exactly/);
  assert.match(await page.innerText('#practice'), /Step 1 of 6/);
  await cli('DEL', 'visits');
  for (const [cmd, reply] of [['PING', 'PONG'], ['SET visits 0', 'OK'], ['INCR visits', '(integer) 1'], ['MULTI', 'OK'], ['INCR visits', 'QUEUED']]) {
    assert.equal((await send(cmd)).reply, reply, cmd);
    const us = await page.$eval('#console-log .entry:last-of-type', (e) => Number(e.dataset.us));
    const passed = await page.innerText('#practice .practice-passed');
    assert.match(passed, /^✔ /, cmd);
    if (cmd !== 'MULTI') assert.ok(passed.includes(`${(us / 1000).toFixed(3)} ms`), `${cmd}: the explanation names the time shown: ${passed}`);
  }
  assert.match(await page.innerText('#practice .practice-passed'), /QUEUED.*costs a round trip/);
  assert.match((await send('EXEC')).reply, /\(integer\) 2/);
  assert.equal(await page.getAttribute('#practice .practice-done', 'data-step'), 'done');
  assert.equal(await cli('GET', 'visits'), '2');
  await page.locator('#interactive-panel').screenshot({ path: join(artifacts, 'interactive-practice.png') });
});

test('turning interactive off closes the session and brings the batch editor back', { timeout: 30_000 }, async () => {
  assert.equal((await send('PING')).reply, 'PONG');
  const id = await page.evaluate(() => document.getElementById('session-status').textContent);
  assert.match(id, /Session .* open/);
  const open = await fetch(`${serve.base}metrics`).then((r) => r.text());
  await page.uncheck('#interactive');
  assert.equal(await page.isVisible('#inline-editor'), true);
  assert.equal(await page.isVisible('#interactive-panel'), false);
  // The page sent DELETE: the server's open-session gauge drops back.
  const gauge = (t) => Number(/^pipelab_sessions_open\s+(\d+)/m.exec(t)?.[1] ?? NaN);
  await page.waitForTimeout(300);
  const after = await fetch(`${serve.base}metrics`).then((r) => r.text());
  assert.ok(gauge(after) < gauge(open) || gauge(after) === 0, `sessions open: ${gauge(open)} -> ${gauge(after)}`);
  // The batch Run works again.
  await page.evaluate(() => window.pipelab.editors.setInline('PING'));
  await page.click('#run');
  await page.waitForSelector('#summary [data-key="commands"]');
  assert.equal(errors.length, 0, `page errors: ${errors.join('; ')}`);
});
