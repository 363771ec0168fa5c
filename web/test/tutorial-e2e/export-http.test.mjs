// The batch exported as one HTTP request (web/src/export/http.ts), each run
// for real against a `pipelab serve` and a real redis-server: the curl script
// with bash, the fetch program with node, the requests program with python3,
// posted to /api/v1/batch and to the Upstash-compatible /pipeline
// (/multi-exec for a transaction); the replies they print and what Redis
// holds afterwards are checked, and one run goes through a token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startRedis, startServe } from '../e2e/harness.mjs';
import { importTs, run, tmpDir } from '../tutorial/helpers.mjs';

const ex = await importTs('export/index.ts');
const U = (s) => new Uint8Array(Buffer.from(s, 'utf8'));
const B = (s) => new Uint8Array(Buffer.from(s, 'latin1'));

/** UTF-8 text, a failing INCR at command 3, a list, a nil. */
const MIXED = [
  [U('SET'), U('s'), U('héllo ✓ "q" \\ \'')],
  [U('SET'), U('n'), U('word')],
  [U('INCR'), U('n')],
  [U('RPUSH'), U('list'), U('a'), U('b c')],
  [U('LRANGE'), U('list'), U('0'), U('-1')],
  [U('GET'), U('missing')],
];
/** A queue-time error (INCR without its key): the transaction runs nothing. */
const ABORTING = [[U('SET'), U('k'), U('changed')], [U('INCR')], [U('SET'), U('k2'), U('v')]];

let redis, serve, tokenServe;
const TOKEN = 'export-http-token-1234567890';
const dir = join(tmpDir, 'export-http');
mkdirSync(dir, { recursive: true });

before(async () => {
  redis = await startRedis();
  serve = await startServe(redis.url);
  tokenServe = await startServe(redis.url, ['--token', TOKEN]);
});
after(async () => {
  await tokenServe?.stop();
  await serve?.stop();
  await redis?.stop();
});

const cli = async (...args) => (await run('redis-cli', ['-p', String(redis.port), ...args])).stdout.replace(/\n$/, '');
const origin = (s) => s.base.replace(/\/$/, '');

/** Writes the snippet and runs it with its tool, PIPELAB_URL pointing at `server`. */
async function runSnippet(snippet, server, env = {}) {
  const file = join(dir, snippet.filename);
  writeFileSync(file, snippet.content);
  const tool = { sh: 'bash', mjs: 'node', py: 'python3' }[snippet.filename.split('.').pop()];
  return run(tool, [file], { env: { ...process.env, PIPELAB_URL: origin(server), ...env } });
}

/** `N) text` lines of a program's output. */
const lines = (stdout) => stdout.split('\n').map((l) => /^(\d+)\) (.*)$/.exec(l)).filter(Boolean).map((m) => m[2]);

/** The replies as `[ok, text]` per command, from whichever tool printed them. */
function replies(target, endpoint, out) {
  if (target.startsWith('curl')) {
    const answer = JSON.parse(out.stdout);
    if (endpoint === 'api') return answer.results.map((r) => [r.status === 'ok', JSON.stringify(r.reply.value ?? null)]);
    return answer.map((r) => ('error' in r ? [false, r.error] : [true, JSON.stringify(r.result)]));
  }
  return lines(out.stdout).map((t) => [!t.startsWith('(error)'), t]);
}

for (const tool of ['curl', 'fetch', 'requests']) {
  for (const endpoint of ['api', 'upstash']) {
    const target = `${tool}-${endpoint}`;
    for (const mode of ['pipeline', 'transaction']) {
      test(`${target} (${mode}): the printed request runs the batch and prints each reply`, async () => {
        await cli('FLUSHALL');
        const snippet = ex.exportBatch(target, MIXED, mode, () => new Uint8Array(), null, 'http://127.0.0.1:1');
        const path = endpoint === 'api' ? '/api/v1/batch' : mode === 'transaction' ? '/multi-exec' : '/pipeline';
        assert.ok(String(snippet.content).includes(path), `${target} posts to ${path}`);
        const out = await runSnippet(snippet, serve);
        assert.equal(await cli('GET', 's'), 'héllo ✓ "q" \\ \'', `${target} ${mode}: the UTF-8 value arrived exactly\n${out.stdout}${out.stderr}`);
        assert.equal(await cli('LRANGE', 'list', '0', '-1'), 'a\nb c', `${target} ${mode}: list`);
        const got = replies(tool === 'curl' ? 'curl' : tool, endpoint, out);
        assert.equal(got.length, MIXED.length, `${target} ${mode}: one reply per command\n${out.stdout}${out.stderr}`);
        assert.deepEqual(got.map(([ok]) => ok), [true, true, false, true, true, true], `${target} ${mode}: only INCR failed\n${out.stdout}`);
        assert.match(got[2][1], /not an integer/, out.stdout);
        assert.match(got[3][1], /\b2\b/, 'RPUSH answered the length 2');
        assert.match(got[4][1], /"a".*"b c"/, 'LRANGE shows both elements');
        assert.match(got[5][1], /null/, 'GET of a missing key is nil');
        // curl prints the answer as it came (HTTP 200); the programs exit 1 because a command failed.
        assert.equal(out.code, tool === 'curl' ? 0 : 1, `${target}: exit status\n${out.stdout}${out.stderr}`);
      });
    }
    test(`${target} (transaction): a queue-time error runs nothing and says EXECABORT`, async () => {
      await cli('FLUSHALL');
      await cli('SET', 'k', 'original');
      const out = await runSnippet(ex.exportBatch(target, ABORTING, 'transaction', () => new Uint8Array(), null, 'http://127.0.0.1:1'), serve);
      assert.equal(await cli('GET', 'k'), 'original', `${target}: k unchanged\n${out.stdout}${out.stderr}`);
      assert.equal(await cli('EXISTS', 'k2'), '0');
      assert.match(out.stdout + out.stderr, /EXECABORT/, out.stdout + out.stderr);
      if (tool !== 'curl' || endpoint === 'upstash') assert.notEqual(out.code, 0, `${target}: non-zero exit`);
    });
  }
}

test('the /api/v1/batch exports carry arguments that are not UTF-8 (base64); the Upstash ones refuse them, naming the argument', async () => {
  const binary = [[U('SET'), B('bin\x00key\xff'), B('\xff\x00\x01\r\n end')], [U('STRLEN'), B('bin\x00key\xff')]];
  for (const tool of ['curl', 'fetch', 'requests']) {
    await cli('FLUSHALL');
    const out = await runSnippet(ex.exportBatch(`${tool}-api`, binary, 'pipeline', () => new Uint8Array(), null, 'http://127.0.0.1:1'), serve);
    const strlen = tool === 'curl' ? JSON.parse(out.stdout).results[1].reply.value : Number(lines(out.stdout)[1]);
    assert.equal(strlen, 9, `${tool}: the binary value's 9 bytes arrived under the binary key\n${out.stdout}${out.stderr}`);
    assert.throws(() => ex.exportBatch(`${tool}-upstash`, binary, 'pipeline', () => new Uint8Array()), /command 1, argument 1: not UTF-8/);
  }
});

test('with tokens, each export sends PIPELAB_TOKEN as a bearer token (and is refused without it)', async () => {
  for (const target of ['curl-api', 'fetch-upstash', 'requests-api']) {
    await cli('FLUSHALL');
    const snippet = ex.exportBatch(target, [[U('SET'), U('tok'), U(target)]], 'pipeline', () => new Uint8Array(), null, 'http://127.0.0.1:1');
    const refused = await runSnippet(snippet, tokenServe);
    assert.notEqual(refused.code, 0, `${target}: refused without a token\n${refused.stdout}${refused.stderr}`);
    assert.equal(await cli('EXISTS', 'tok'), '0');
    const ok = await runSnippet(snippet, tokenServe, { PIPELAB_TOKEN: TOKEN });
    assert.equal(ok.code, 0, `${target}: ${ok.stdout}${ok.stderr}`);
    assert.equal(await cli('GET', 'tok'), target);
  }
});

test('the default address is the one given (the page passes its own origin)', () => {
  const s = ex.exportBatch('requests-upstash', MIXED, 'pipeline', () => new Uint8Array(), null, 'https://lab.example:8443');
  assert.match(s.content, /or "https:\/\/lab\.example:8443"/);
  assert.match(s.run, /PIPELAB_URL=https:\/\/lab\.example:8443/);
});
