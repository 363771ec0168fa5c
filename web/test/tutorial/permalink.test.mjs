// Permalink encode/decode (web/src/permalink.ts) in Node: exact round trips,
// and clear errors naming the field for damaged or edited links.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';

const { encodePermalink, decodePermalink, DAMAGED } = await importTs('permalink.ts');

const base = { text: 'SET k v\nINCR k', mode: 'pipeline', batch_size: 1000, on_error: 'continue', simulated_rtt_ms: 1 };

test('round trip keeps every field exactly, including awkward text', async () => {
  const cases = [
    base,
    { ...base, text: '', mode: 'sequential', batch_size: 1, on_error: 'stop', simulated_rtt_ms: 0, view: 'compare' },
    { ...base, text: 'SET "k\\x00\\xff" "héllo ✓ 🚀"\r\nGET k\r\n\r\n', mode: 'transaction', simulated_rtt_ms: 12.5, view: 'lesson-5' },
    { ...base, resp3: true },
    { ...base, resp3: false, mode: 'sequential', view: 'playground' },
    { ...base, text: Array.from({ length: 5000 }, (_, i) => `SET key:${i} value:${i}`).join('\n') },
  ];
  for (const s of cases) {
    const frag = await encodePermalink(s);
    assert.match(frag, /^#s=[A-Za-z0-9_-]+$/);
    assert.deepEqual(await decodePermalink(frag), s);
    assert.deepEqual(await decodePermalink(frag.slice(1)), s, 'without the leading #');
  }
});

test('RESP3 survives the round trip; links made before the field existed still open', async () => {
  assert.equal((await decodePermalink(await encodePermalink({ ...base, resp3: true }))).resp3, true);
  assert.equal((await decodePermalink(await encodePermalink({ ...base, resp3: false }))).resp3, false);
  // Made by the encoder before \`resp3\` was added (no such field in its JSON).
  const old = '#s=Fcq9CsIwFAbQVwnfHKUWutxVHFwc1FEI0V4wND819zaK4ruLZz4fNNDGQvmlIJx2ZzOZdsn7w_ZoJlikMjIIwo-FswYfYXH1ers7CW8GDZ1FyY5rLfX_tMywkJCW6JVHV1VdElC37geLFvgJQmSRklc9vj8';
  assert.deepEqual(await decodePermalink(old), {
    text: 'SET k v\nINCR k', mode: 'sequential', batch_size: 50, on_error: 'stop', simulated_rtt_ms: 0.25, view: 'lesson-2',
  });
});

test('a repetitive batch compresses: 5000 SETs fit in a few kB of URL', async () => {
  const text = Array.from({ length: 5000 }, (_, i) => `SET key:${i} value:${i}`).join('\n');
  const frag = await encodePermalink({ ...base, text });
  assert.ok(frag.length < text.length / 3, `fragment ${frag.length} chars for ${text.length} chars of text`);
});

test('no permalink in the fragment gives null', async () => {
  assert.equal(await decodePermalink(''), null);
  assert.equal(await decodePermalink('#results'), null);
});

test('damaged or edited links fail with a message naming the problem', async () => {
  await assert.rejects(decodePermalink('#s=!!!'), /^Error: the link is damaged: it holds characters/);
  // Whatever the runtime's own reason (Chromium: "Failed to fetch"), the
  // reader is told the link is damaged, never an internal detail.
  const damaged = (e) => e.message === DAMAGED && !/fetch|inflate|JSON/i.test(e.message);
  await assert.rejects(decodePermalink('#s=AAAA'), damaged);
  await assert.rejects(decodePermalink('#s=AAAAgarbage'), damaged);
  const good = await encodePermalink(base);
  await assert.rejects(decodePermalink(good.slice(0, good.length - 6)), damaged);
  // Deflates fine but is not JSON / not an object.
  const { deflateRawSync } = await import('node:zlib');
  for (const body of ['not json', '[1,2]', 'null']) {
    await assert.rejects(decodePermalink('#s=' + deflateRawSync(body).toString('base64url')), damaged, body);
  }
  for (const [patch, name] of [
    [{ mode: 'turbo' }, 'mode'],
    [{ batch_size: 0 }, 'batch_size'],
    [{ batch_size: 1.5 }, 'batch_size'],
    [{ on_error: 'ignore' }, 'on_error'],
    [{ simulated_rtt_ms: -1 }, 'simulated_rtt_ms'],
    [{ text: 42 }, 'text'],
    [{ view: '<script>' }, 'view'],
    [{ resp3: 'yes' }, 'resp3'],
    [{ resp3: 1 }, 'resp3'],
  ]) {
    const frag = await encodePermalink({ ...base, ...patch });
    await assert.rejects(decodePermalink(frag), new RegExp('field `' + name + '`'), name);
  }
});
