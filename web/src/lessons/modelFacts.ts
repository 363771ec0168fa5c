// The sweep's fitted cost model as figures (lesson 3 and the sweep view):
// t_cmd, the RTT the model used, the knee, each with data-metric for the
// end-to-end tests. The knee is the one of the points the page shows, and
// none while they have not flattened, so that no card names a knee the
// curve beside it does not have.
import type { SweepResponse } from '../api/client.js';
import type { SweepPoint } from '../api/figures.js';
import { modelText } from '../charts/sweepModel.js';
import { el, fmtInt, metrics } from './ui.js';

/** µs with two decimals, or "not measured" when the server could not say. */
const perCmd = (us: number | null | undefined) => (us == null ? 'not measured' : `${us.toFixed(2)} µs per command`);

/**
 * The knee of `points` as the server computes its own: the smallest batch
 * size within 10% of the best commands/s; `knee` null when that is the
 * largest size measured (the curve has not flattened: a larger size may
 * still pay, so it is no knee).
 */
export function shownKnee(points: SweepPoint[]): { knee: number | null; largest: number; best: number } {
  const best = Math.max(...points.map((p) => p.commands_per_sec));
  const largest = Math.max(...points.map((p) => p.batch_size));
  const knee = Math.min(...points.filter((p) => p.commands_per_sec >= 0.9 * best).map((p) => p.batch_size));
  return { knee: knee < largest ? knee : null, largest, best };
}

/** `shown`: the points the page draws, when not the sweep's own (lesson 3 keeps the fastest of repeated runs). */
export function modelFacts(res: SweepResponse, shown: SweepPoint[] = res.points): HTMLElement[] {
  const m = res.model;
  if (!m) return [el('p', { class: 'note' }, 'The server reported no cost model for this run.')];
  const { knee, largest, best } = shownKnee(shown);
  const kneeNote =
    knee === null
      ? `No knee: the best throughput (${fmtInt(best)} commands/s) is at the largest batch size measured, ${fmtInt(largest)}, and no smaller size came within 10% of it, so the curve has not flattened and a larger batch may still pay.` +
        (m.knee_batch_size < largest ? ` (The sweep's single runs put the knee at batch ${fmtInt(m.knee_batch_size)}; the fastest of the repeated runs, shown here, still rose past it.)` : '')
      : knee !== m.knee_batch_size
      ? `The knee is the one of the runs shown (the fastest of the repeated ones); the sweep's single runs alone put it at batch ${fmtInt(m.knee_batch_size)}.`
      : null;
  return [
    metrics([
      { key: 't_cmd_us', label: m.note ? 't_cmd (not fitted)' : 't_cmd (fitted)', value: m.t_cmd_us, text: `${m.t_cmd_us.toFixed(2)} µs per command` },
      { key: 'model_rtt_ms', label: 'RTT in the model', value: m.rtt_ms, text: `${m.rtt_ms.toLocaleString('en-US', { maximumFractionDigits: 3 })} ms` },
      { key: 'knee_batch_size', label: 'knee (within 10% of the best)', value: knee ?? '', text: knee === null ? `not reached by batch ${fmtInt(largest)}` : `batch ${fmtInt(knee)}` },
      { key: 'server_us_per_cmd', label: 'Redis (INFO commandstats)', value: m.server_us_per_cmd ?? '', text: perCmd(m.server_us_per_cmd) },
      { key: 'client_cpu_us_per_cmd', label: 'pipelab (its CPU)', value: m.client_cpu_us_per_cmd ?? '', text: perCmd(m.client_cpu_us_per_cmd) },
    ]),
    el('p', { class: 'note model-text' }, modelText(m, res.total, knee)),
    ...(kneeNote ? [el('p', { class: 'note knee-note', 'data-metric': 'knee_note', 'data-value': knee === null ? 'not_flattened' : 'repeated' }, kneeNote)] : []),
    el(
      'p',
      { class: 'note model-sides' },
      'What each figure covers: t_cmd is wall time per command, both sides and the kernel together (in a pipeline they overlap, so it is not their sum); ' +
        "Redis's is INFO commandstats usec / calls, only each command's execution (not reading and parsing the request, writing the reply or the system calls); " +
        "pipelab's is its own CPU time (encoding RESP, the write and read system calls, parsing the replies, the report), " +
        `both in the run with the fewest round trips${m.fitted_on.length ? ' that was fitted' : ''}.`,
    ),
    ...(m.note ? [el('p', { class: 'note model-note', 'data-metric': 'model_note', 'data-value': m.note }, `Not fitted: ${m.note}.`)] : []),
  ];
}
