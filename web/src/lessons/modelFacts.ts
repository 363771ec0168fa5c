// The sweep's fitted cost model as figures (lesson 3 and the sweep view):
// t_cmd, the RTT the model used, the knee, each with data-metric for the
// end-to-end tests.
import type { SweepResponse } from '../api/client.js';
import { modelText } from '../charts/sweepModel.js';
import { el, fmtInt, metrics } from './ui.js';

/** µs with two decimals, or "not measured" when the server could not say. */
const perCmd = (us: number | null | undefined) => (us == null ? 'not measured' : `${us.toFixed(2)} µs per command`);

export function modelFacts(res: SweepResponse): HTMLElement[] {
  const m = res.model;
  if (!m) return [el('p', { class: 'note' }, 'The server reported no cost model for this run.')];
  return [
    metrics([
      { key: 't_cmd_us', label: m.note ? 't_cmd (not fitted)' : 't_cmd (fitted)', value: m.t_cmd_us, text: `${m.t_cmd_us.toFixed(2)} µs per command` },
      { key: 'model_rtt_ms', label: 'RTT in the model', value: m.rtt_ms, text: `${m.rtt_ms.toLocaleString('en-US', { maximumFractionDigits: 3 })} ms` },
      { key: 'knee_batch_size', label: 'knee', value: m.knee_batch_size, text: `batch ${fmtInt(m.knee_batch_size)}` },
      { key: 'server_us_per_cmd', label: 'Redis (INFO commandstats)', value: m.server_us_per_cmd ?? '', text: perCmd(m.server_us_per_cmd) },
      { key: 'client_cpu_us_per_cmd', label: 'pipelab (its CPU)', value: m.client_cpu_us_per_cmd ?? '', text: perCmd(m.client_cpu_us_per_cmd) },
    ]),
    el('p', { class: 'note model-text' }, modelText(m, res.total)),
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
