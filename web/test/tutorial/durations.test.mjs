// Times the Compare and sweep tables and the lessons show (web/src/lessons/ui.ts
// fmtMs, given µs): milliseconds up to 10 s, then seconds, as the
// playground's summary and the CLI write them ("45,123 ms" did not read).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';

const { fmtMs } = await importTs('lessons/ui.ts');

test('ms up to 10 s, seconds past it', () => {
  assert.equal(fmtMs(812), '0.81 ms');
  assert.equal(fmtMs(9_999_000), '9,999 ms');
  assert.equal(fmtMs(10_000_000), '10.0 s');
  assert.equal(fmtMs(45_123_000), '45.1 s');
  assert.equal(fmtMs(125_000_000), '2 min 5 s');
});
