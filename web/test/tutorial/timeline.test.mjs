// The timeline's axis labels (web/src/timeline/timeline.ts) in Node: one
// precision per axis, the step's, and thousands with a comma.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';

const { tickFormat } = await importTs('timeline/timeline.ts');

const labels = (step, n) => Array.from({ length: n }, (_, k) => tickFormat(step)(k * step));

test('every label of an axis has the precision of its step', () => {
  assert.deepEqual(labels(1, 3), ['0', '1', '2']);
  assert.deepEqual(labels(0.05, 4), ['0.00', '0.05', '0.10', '0.15']);
  assert.deepEqual(labels(0.1, 4), ['0.0', '0.1', '0.2', '0.3']);
  assert.deepEqual(labels(0.2, 4), ['0.0', '0.2', '0.4', '0.6']);
  assert.deepEqual(labels(0.5, 3), ['0.0', '0.5', '1.0']);
  assert.deepEqual(labels(0.001, 3), ['0.000', '0.001', '0.002']);
  assert.deepEqual(labels(500, 3), ['0', '500', '1,000']);
  assert.deepEqual(labels(20000, 3), ['0', '20,000', '40,000']);
  for (const step of [0.0001, 0.002, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 200, 5000]) {
    const ls = labels(step, 12);
    const decimals = new Set(ls.map((l) => (l.split('.')[1] ?? '').length));
    assert.equal(decimals.size, 1, `step ${step}: ${ls.join(', ')}`);
  }
});

