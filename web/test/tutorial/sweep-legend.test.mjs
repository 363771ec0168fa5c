// The sweep chart's reply-latency lines (web/src/charts/sweepModel.ts):
// p50 and p99 must look different in the legend's small swatch, which
// draws only the line's dash pattern and width, and on the chart, where
// the points show too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';

const { LATENCY_STYLE } = await importTs('charts/sweepModel.ts');

/** Share of a dash pattern that is drawn (on / (on + off)). */
const ink = (dash) => dash.filter((_, i) => i % 2 === 0).reduce((a, b) => a + b, 0) / dash.reduce((a, b) => a + b, 0);

test('p50 and p99 differ in dash, in how much of the line is drawn, and in point', () => {
  const { p50, p99 } = LATENCY_STYLE;
  assert.notDeepEqual(p50.dash, p99.dash);
  assert.ok(ink(p50.dash) >= 2 * ink(p99.dash), `p50 draws ${ink(p50.dash)} of its line, p99 ${ink(p99.dash)}`);
  const longest = (dash) => Math.max(...dash.filter((_, i) => i % 2 === 0));
  assert.ok(longest(p50.dash) >= 3 * longest(p99.dash), 'long dashes against dots');
  assert.notEqual(p50.point, p99.point);
});
