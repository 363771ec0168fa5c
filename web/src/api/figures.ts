// What the page reads from the API's reports beyond each command's reply (docs/api.md):
// sessions, auto mode's coalescing, both sides' syscalls, the sweep's cost
// model and reply latency. Named views of the generated schema's fields, so
// the lessons and views say `ServerWork` rather than `Summary['server']`.
// The cost model is the engine's own, in the wasm module (model/).
import type { BatchResponse, Summary, SweepResponse } from './types.js';
import * as wasm from '../wasm.js';

/** `summary.server`: the Redis server's work for a batch (INFO deltas), null when it could not be asked. */
export type ServerWork = NonNullable<Summary['server']>;
/** `summary.auto`: how auto mode's callers were coalesced into writes. */
export type AutoSummary = NonNullable<Summary['auto']>;
/** One sweep point, with its reply latency (µs). */
export type SweepPoint = SweepResponse['points'][number];
/** The sweep's cost model: `T(b) = ⌈N/b⌉·RTT + N·(wire + t_cmd)`. */
export type SweepModel = NonNullable<SweepResponse['model']>;

/**
 * The model's time for `total` commands at batch size `b`, in µs:
 * `⌈N/b⌉ · RTT + N · (wire + t_cmd)` (RTT the simulated plus the measured
 * loopback one; `wire` a command's bytes at the simulated bandwidth, 0 when unlimited).
 */
export function modelUs(model: Pick<SweepModel, 'rtt_ms' | 't_cmd_us'> & { wire_us_per_cmd?: number }, total: number, b: number): number {
  return wasm.modelUs(model.rtt_ms, model.wire_us_per_cmd ?? 0, model.t_cmd_us, total, b);
}

/** Commands/s the model predicts at batch size `b`; NaN where its time is not positive (a fit below zero). */
export function modelRate(model: Pick<SweepModel, 'rtt_ms' | 't_cmd_us'> & { wire_us_per_cmd?: number }, total: number, b: number): number {
  return wasm.modelRate(model.rtt_ms, model.wire_us_per_cmd ?? 0, model.t_cmd_us, total, b);
}

/**
 * A command's latency as its caller saw it, µs: auto mode's `latency_us`
 * (from the caller's call to the reply); else from the write that carried it
 * to its reply. Undefined for a command without a reply.
 */
export function latencyOf(r: BatchResponse['results'][number]): number | undefined {
  if (r.latency_us != null) return r.latency_us;
  if (r.reply_us == null || r.sent_us == null) return undefined;
  return r.reply_us - r.sent_us;
}

/** The `q`-quantile (0..1) of `xs` (nearest rank); 0 for none. */
export function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** A batch size where the measurement is more than `tolerance` away from the model: `ratio` = measured / model. */
export interface Departure {
  batch_size: number;
  ratio: number;
}

/** The sweep points whose commands/s differ from the model's by more than `tolerance` (0.25: 25%). */
export function departures(points: SweepPoint[], model: SweepModel, total: number, tolerance = 0.25): Departure[] {
  return points
    .map((p) => ({ batch_size: p.batch_size, ratio: p.commands_per_sec / Math.max(1e-9, modelRate(model, total, p.batch_size)) }))
    .filter((d) => Math.abs(d.ratio - 1) > tolerance);
}
