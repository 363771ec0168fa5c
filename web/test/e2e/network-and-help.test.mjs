// End to end in headless Chromium against `pipelab serve` and a real
// redis-server: the playground's simulated link (presets that set the RTT
// and the bandwidth, the request they make, the summary's asked and
// achieved RTT, a bandwidth out of range caught before Run), and the editor
// that knows Redis from the server's own COMMAND DOCS (completion, hover,
// the arity checked before Run).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openPlayground, shot } from './harness.mjs';

let lab;
let page;

before(async () => {
  lab = await openPlayground({ width: 1400, height: 1000 });
  ({ page } = lab);
});

after(async () => {
  await lab?.close();
});

const setBatch = (text) => page.evaluate((t) => window.pipelab.editors.setInline(t), text);
const summary = () => page.$$eval('#summary dl > div', (divs) => Object.fromEntries(divs.map((d) => [d.dataset.key, d.querySelector('dd').textContent])));

async function run() {
  const before = await page.evaluate(() => document.querySelector('#summary')?.innerHTML ?? '');
  const sent = page.waitForRequest((r) => r.url().endsWith('/api/v1/batches'));
  await page.click('#run');
  const req = (await sent).postDataJSON();
  await page.waitForFunction((b) => {
    const s = document.querySelector('#summary');
    return s && s.innerHTML !== b && s.querySelector('dl, .message.error');
  }, before, { timeout: 30000 });
  return req;
}

test('a link preset sets the RTT and the bandwidth; the summary shows them, asked beside achieved', { timeout: 60_000 }, async () => {
  await page.check('input[name="mode"][value="pipeline"]');
  // 40 KB each way at 1 Mbit/s could not take less than 320 ms.
  await setBatch(`SET tut:bw:big ${'v'.repeat(40_000)}\nGET tut:bw:big`);
  await page.click('.link-presets button:has-text("mobile")');
  assert.equal(await page.inputValue('#rtt'), '60');
  assert.equal(await page.inputValue('#bandwidth'), '10');
  assert.equal(await page.getAttribute('.link-presets button:has-text("mobile")', 'aria-pressed'), 'true');
  await page.fill('#bandwidth', '1');
  assert.equal(await page.getAttribute('.link-presets button:has-text("mobile")', 'aria-pressed'), 'false', 'no preset looks chosen once the field differs');
  const req = await run();
  assert.equal(req.simulated_bandwidth_mbps, 1);
  assert.equal(req.simulated_rtt_ms, 60);
  const s = await summary();
  assert.match(s.bandwidth, /^1 Mbit\/s each way$/);
  const m = /^60 ms asked, ([\d.]+) ms achieved$/.exec(s.rtt);
  assert.ok(m && Number(m[1]) >= 60, s.rtt);
  assert.ok(Number(s.total.replace(/[^\d.]/g, '')) >= 320 + 60, `total ${s.total}`);
  await shot(page, 'e2e-network-mobile');
  // Empty: unlimited, and not sent at all.
  await page.fill('#bandwidth', '');
  await page.fill('#rtt', '0');
  await setBatch('PING');
  const plain = await run();
  assert.equal('simulated_bandwidth_mbps' in plain, false);
  assert.equal((await summary()).bandwidth, undefined);
});

test('a bandwidth out of range is named before Run', async () => {
  await page.fill('#bandwidth', '0');
  await page.click('#run');
  await page.waitForSelector('#summary .message.error');
  assert.match(await page.textContent('#summary'), /Bandwidth must be a number of Mbit\/s from 0\.01/);
  assert.equal(await page.getAttribute('#bandwidth', 'aria-invalid'), 'true');
  await page.fill('#bandwidth', '');
});

test('the editor completes command names and shows their docs, from the server', { timeout: 30_000 }, async () => {
  // The server's own words for INCR, to compare with.
  const docs = await (await fetch(`${lab.serve.base}api/v1/commands`)).json();
  const incr = docs.commands.find((c) => c.name === 'INCR');
  assert.ok(incr.summary.length > 0);
  await setBatch('');
  await page.click('#inline-editor .cm-content');
  await page.keyboard.type('INC');
  await page.waitForSelector('.cm-tooltip-autocomplete li');
  const options = await page.$$eval('.cm-tooltip-autocomplete li .cm-completionLabel', (ls) => ls.map((l) => l.textContent));
  assert.ok(options.includes('INCR') && options.includes('INCRBY'), options.join(', '));
  await shot(page, 'e2e-help-completion');
  await page.keyboard.press('Escape');
  await page.keyboard.type('R tut:help:n');
  // Hover on the name: the syntax line, the summary, the arity.
  const name = page.locator('#inline-editor .cm-line').first();
  const box = await name.boundingBox();
  await page.mouse.move(box.x + 8, box.y + box.height / 2);
  await page.waitForSelector('.command-help', { timeout: 10_000 });
  const help = await page.$eval('.command-help', (e) => ({ name: e.dataset.command, text: e.textContent }));
  assert.equal(help.name, 'INCR');
  assert.ok(help.text.includes('INCR key') && help.text.includes(incr.summary) && help.text.includes('exactly 2 words'), help.text);
  await shot(page, 'e2e-help-hover');
});

test('a command with the wrong number of arguments is caught before Run, as Redis would refuse it', async () => {
  await setBatch('SET tut:help:a 1\nINCR\nGET tut:help:a');
  await page.waitForFunction(() => !document.getElementById('run-warning').hidden, null, { timeout: 10_000 });
  const warning = await page.textContent('#run-warning');
  // Said and marked, but Run stays on: a lesson may send one on purpose (EXECABORT).
  assert.equal(await page.isEnabled('#run'), true);
  assert.equal(await page.getAttribute('#run-warning', 'data-blocking'), 'false');
  assert.match(await page.locator('#inline-editor .cm-line').nth(1).getAttribute('class'), /cm-refusedCommand/, 'line 2 is marked');
  // And it runs when asked: Redis answers that command's error, the others run.
  await run();
  assert.equal((await summary()).errors, '1');
  assert.match(warning, /Command 2 \(line 2\): INCR takes exactly 1 argument after its name \(INCR key\), this one has 0/);
  assert.match(warning, /wrong number of arguments/);
  // Subcommands are checked by their own arity; a correct batch runs.
  await setBatch('OBJECT ENCODING');
  await page.waitForFunction(() => /OBJECT ENCODING takes exactly 1 argument after its names/.test(document.getElementById('run-warning').textContent), null, { timeout: 10_000 });
  // Quoted arguments are split as Redis splits them: one argument, not two.
  await setBatch('INCR "tut:help a"');
  await page.waitForFunction(() => document.getElementById('run-warning').hidden);
  await setBatch('SET tut:help:a 1\nINCR tut:help:a\nCLIENT LIST');
  await page.waitForFunction(() => document.getElementById('run-warning').hidden);
  await run();
  assert.equal((await summary()).errors, '0');
  assert.deepEqual(lab.pageErrors, []);
});
