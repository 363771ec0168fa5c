// The permalink's fields for everything else on the page (web/src/permalink.ts):
// auto mode's clients, every other control by element id (each lesson's
// sliders and checkboxes, the export menus) and the place in the page, kept
// exactly; an edited link with a wrong one names that field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';

const { encodePermalink, decodePermalink } = await importTs('permalink.ts');

const base = { text: 'SET k v\nINCR k', mode: 'auto', batch_size: 1000, on_error: 'continue', simulated_rtt_ms: 0.2 };

test('clients, every control by id and the place come back exactly', async () => {
  const s = {
    ...base,
    clients: 25,
    view: 'tutorial',
    place: 'lesson-3',
    inputs: { 'l1-rtt': 3, 'l2-same-axis': false, 'l7-n': 30000, 'bw-mbps': 11, 'export-target': 'ioredis', 'export-mode': 'transaction' },
  };
  assert.deepEqual(await decodePermalink(await encodePermalink(s)), s);
  // Links made before these fields existed open with none of them.
  const old = await decodePermalink(await encodePermalink(base));
  assert.equal(old.clients, undefined);
  assert.equal(old.inputs, undefined);
  assert.equal(old.place, undefined);
});

test('an edited link with a wrong value names the field', async () => {
  const cases = [
    [{ clients: 0 }, /field `clients` must be an integer >= 1, got 0/],
    [{ clients: '25' }, /field `clients` must be an integer >= 1/],
    [{ place: 'lesson 3' }, /field `place` must be an element id/],
    [{ place: '#x, body' }, /field `place` must be an element id/],
    [{ inputs: [1] }, /field `inputs` must be an object/],
    [{ inputs: { 'l1-rtt': null } }, /field `inputs.l1-rtt` must be a string, a number or true\/false, got null/],
    [{ inputs: { 'l1-rtt': { v: 1 } } }, /field `inputs.l1-rtt` must be a string, a number or true\/false/],
    [{ inputs: { 'a b': 1 } }, /field `inputs` names "a b", which is not an element id/],
  ];
  for (const [extra, message] of cases) {
    await assert.rejects(decodePermalink(await encodePermalink({ ...base, ...extra })), message, JSON.stringify(extra));
  }
});
