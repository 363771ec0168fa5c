// Why a transaction can beat a pipeline in a comparison: the batch size
// splits a pipeline into round trips, while MULTI/EXEC is always one (the
// 10k sample at batch size 1,000: pipeline 10 round trips, transaction 1).
// Said where the figures are shown, with what to change.
import type { CompareResponse } from '../api/client.js';
import { el, fmtInt } from './ui.js';

/** A note when the pipeline run took more round trips than the transaction; none otherwise. */
export function batchSizeNote(runs: CompareResponse['runs'], batchSize: number): HTMLElement[] {
  const pipe = runs.find((r) => r.mode === 'pipeline');
  const tx = runs.find((r) => r.mode === 'transaction');
  if (!pipe || pipe.summary.round_trips <= 1) return [];
  const n = pipe.summary.commands;
  const text =
    `The pipeline took ${fmtInt(pipe.summary.round_trips)} round trips: its batch size (${fmtInt(batchSize)} commands per round trip) ` +
    `is smaller than the batch (${fmtInt(n)} commands), and each chunk waits for its replies before the next is written. ` +
    `Batch size applies to pipelines only; ${tx ? 'the transaction was' : 'a transaction is'} always one round trip` +
    `${tx ? ` (MULTI, the commands and EXEC written at once)` : ''}. Set the pipeline batch size to ${fmtInt(n)} to compare them round trip for round trip.`;
  return [el('p', { class: 'note', 'data-note': 'batch-size' }, text)];
}
