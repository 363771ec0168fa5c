// The sweep's fitted cost model as figures (lesson 3 and the sweep view):
// t_cmd, the RTT the model used, the knee, each with data-metric for the
// end-to-end tests.
import type { SweepResponse } from '../api/client.js';
import { modelText } from '../charts/sweepModel.js';
import { el, fmtInt, metrics } from './ui.js';

export function modelFacts(res: SweepResponse): HTMLElement[] {
  const m = res.model;
  if (!m) return [el('p', { class: 'note' }, 'The server reported no cost model for this run.')];
  return [
    metrics([
      { key: 't_cmd_us', label: 't_cmd (fitted)', value: m.t_cmd_us, text: `${m.t_cmd_us.toFixed(2)} µs per command` },
      { key: 'model_rtt_ms', label: 'RTT in the model', value: m.rtt_ms, text: `${m.rtt_ms.toLocaleString('en-US', { maximumFractionDigits: 3 })} ms` },
      { key: 'knee_batch_size', label: 'knee', value: m.knee_batch_size, text: `batch ${fmtInt(m.knee_batch_size)}` },
    ]),
    el('p', { class: 'note model-text' }, modelText(m, res.total)),
  ];
}
