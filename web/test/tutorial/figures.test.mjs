// The page's pure rules behind the lessons on batch size, in Node: the sweep's cost
// model and where a measurement leaves it, reply-latency quantiles, the
// noise rule of timing verdicts, lesson 6's "every update kept" check, and
// the console's MULTI state for the (TX) prompt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importTs } from './helpers.mjs';
import '../wasm/load.mjs'; // the cost model runs in the wasm module

const { modelUs, modelRate, departures, quantile, latencyOf } = await importTs('api/figures.ts');
const { spread, NOISY_SPREAD, bestRuns, fastestOf } = await importTs('lessons/noise.ts');
const { keptAll } = await importTs('lessons/optimistic.ts');
const { nextTxState } = await importTs('interactive/txState.ts');

test('T(b) = ⌈N/b⌉·RTT + N·t_cmd, in µs, and its commands/s', () => {
  const m = { rtt_ms: 0.5, t_cmd_us: 2 };
  assert.equal(modelUs(m, 10000, 1), 10000 * 500 + 10000 * 2);
  assert.equal(modelUs(m, 10000, 3), 3334 * 500 + 20000, 'a partial last batch is one more round trip');
  assert.equal(modelUs(m, 10000, 10000), 500 + 20000);
  assert.equal(modelRate(m, 10000, 10000), 10000 * 1e6 / 20500);
  assert.ok(Number.isNaN(modelRate({ rtt_ms: 0, t_cmd_us: -1 }, 100, 100)), 'a fit below zero predicts no rate');
});

test('departures: the batch sizes where the measurement is more than 25% off the model', () => {
  const model = { rtt_ms: 1, t_cmd_us: 1, knee_batch_size: 100 };
  const total = 1000;
  const at = (b, factor) => ({ batch_size: b, commands_per_sec: modelRate(model, total, b) * factor });
  const d = departures([at(1, 1.1), at(10, 0.9), at(100, 0.5), at(1000, 1.3)], model, total);
  assert.deepEqual(d.map((x) => x.batch_size), [100, 1000]);
  assert.ok(Math.abs(d[0].ratio - 0.5) < 1e-9 && Math.abs(d[1].ratio - 1.3) < 1e-9);
});

test('quantile is nearest-rank; latency is auto mode\'s latency_us, else write to reply', () => {
  const xs = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted
  assert.equal(quantile(xs, 0.5), 50);
  assert.equal(quantile(xs, 0.99), 99);
  assert.equal(quantile(xs, 1), 100);
  assert.equal(quantile([], 0.5), 0);
  assert.equal(latencyOf({ latency_us: 700, sent_us: 100, reply_us: 500 }), 700);
  assert.equal(latencyOf({ sent_us: 100, reply_us: 500 }), 400);
  assert.equal(latencyOf({ sent_us: 100 }), undefined, 'no reply, no latency');
});

test('noise: the spread of repeats relative to the smaller one', () => {
  assert.equal(spread([100, 150]), 0.5);
  assert.equal(spread([100]), 0);
  assert.ok(spread([100, 151]) > NOISY_SPREAD);
});

test('bestRuns: each mode\'s fastest repeat, and the widest spread of any mode', () => {
  const run = (mode, us) => ({ mode, summary: { total_us: us } });
  const reps = [{ runs: [run('sequential', 1000), run('pipeline', 30)] }, { runs: [run('sequential', 1200), run('pipeline', 20)] }];
  const { best, noise } = bestRuns(reps, ['sequential', 'pipeline']);
  assert.equal(best.sequential.summary.total_us, 1000);
  assert.equal(best.pipeline.summary.total_us, 20);
  assert.equal(noise, 0.5, 'the pipeline repeats differ by half the faster one');
});

test('fastestOf: lesson 3\'s sweeps, the short batch sizes repeated and batch 1 measured once', () => {
  const pt = (b, us) => ({ batch_size: b, total_us: us });
  const first = [pt(1, 9_000_000), pt(10, 923_000), pt(100, 60_000)];
  const again = [[pt(10, 283_000), pt(100, 50_000)], [pt(10, 300_000), pt(100, 55_000)]];
  const { best, noise } = fastestOf([first, ...again], (p) => p.batch_size, (p) => p.total_us);
  assert.deepEqual([...best.keys()], [1, 10, 100], 'the first repeat\'s order');
  assert.equal(best.get(1).total_us, 9_000_000, 'measured once: kept as it is');
  assert.equal(best.get(10).total_us, 283_000);
  assert.equal(best.get(100).total_us, 50_000);
  assert.equal(noise, (923_000 - 283_000) / 283_000, 'the widest spread: batch 10');
  assert.ok(noise > NOISY_SPREAD);
});

test('lesson 6: EVAL kept every update when the counter is 2(start+k) + (n−k)', () => {
  assert.ok(keptAll(10, 2, 22, 20), 'both INCRs after the script');
  assert.ok(keptAll(10, 2, 23, 22), 'one before, one after');
  assert.ok(keptAll(10, 2, 24, 24), 'both before');
  assert.ok(!keptAll(10, 2, 20, 20), 'an INCR lost');
  assert.ok(!keptAll(10, 0, 21, 20));
});

test('the (TX) prompt: MULTI enters, EXEC and DISCARD leave (EXECABORT is EXEC\'s reply)', () => {
  assert.equal(nextTxState(false, 'multi', 'simple'), true);
  assert.equal(nextTxState(false, 'MULTI', 'error'), false);
  assert.equal(nextTxState(true, 'MULTI', 'error'), true, 'a nested MULTI keeps the transaction');
  assert.equal(nextTxState(true, 'INCR', 'simple'), true);
  assert.equal(nextTxState(true, 'exec', 'null'), false);
  assert.equal(nextTxState(true, 'DISCARD', 'simple'), false);
  assert.equal(nextTxState(true, 'EXEC', 'error'), false);
  assert.equal(nextTxState(true, 'GET', 'error'), true, 'a queue-time error keeps MULTI open until EXEC');
});
