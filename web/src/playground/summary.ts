// The summary box under the run controls: a run's figures, or one message
// (a refusal, "Running…", an API error with the page's advice).
import type { ApiError, BatchResponse, Mode } from '../api/client.js';
import { budgetHint } from '../rttBudget.js';
import { fmtDuration } from './duration.js';
import { ioCountItems } from './ioCounts.js';

const summaryEl = () => document.getElementById('summary') as HTMLElement;

/** A batch's summary as a `<dl>`, one `div[data-key]` per figure; `mode` when the response has none. */
export function renderSummary(res: BatchResponse, mode: Mode, onError: 'continue' | 'stop' = 'continue') {
  const s = res.summary;
  const n = (x: number | undefined) => (x ?? 0).toLocaleString('en-US');
  const totalMs = s.total_us / 1000;
  const perSec = s.commands_per_sec ?? (s.total_us > 0 ? (s.commands * 1e6) / s.total_us : 0);
  const items: [string, string, string][] = [
    ['mode', s.mode ?? mode, 'mode'],
    ['commands', n(s.commands), 'commands'],
    ['ok', n(s.ok), 'ok'],
    ['errors', n(s.errors), 'errors'],
    ['not sent', n(s.not_sent), 'not_sent'],
    ['unknown', n(s.unknown), 'unknown'],
    ['round trips', n(s.round_trips), 'round_trips'],
    ['bytes sent', n(s.bytes_sent), 'bytes_sent'],
    ['bytes received', n(s.bytes_received), 'bytes_received'],
    // Seconds past 10 s: "40.5 s" reads, "40537.586 ms" does not.
    ['total time', totalMs < 10_000 ? `${totalMs.toFixed(3)} ms` : fmtDuration(totalMs), 'total'],
    ['commands/s', Math.round(perSec).toLocaleString('en-US'), 'rate'],
    // Asked beside achieved: a machine that could not keep the RTT shows it here.
    ...(s.achieved_rtt_ms != null
      ? [['simulated RTT', `${s.simulated_rtt_ms} ms asked, ${s.achieved_rtt_ms.toFixed(3)} ms achieved`, 'rtt'] as [string, string, string]]
      : []),
    ...(s.simulated_bandwidth_mbps != null ? [['bandwidth', `${s.simulated_bandwidth_mbps} Mbit/s each way`, 'bandwidth'] as [string, string, string]] : []),
    ...ioCountItems(s),
  ];
  // Batch size is what splits a pipeline into round trips (a transaction is always one).
  if ((s.mode ?? mode) === 'pipeline') items.splice(7, 0, ['batch size', `${n(s.batch_size)} per round trip`, 'batch_size']);
  if (res.transaction) {
    const t = res.transaction;
    items.push(['transaction', t.status.replace('_', ' ') + (t.message ? `: ${t.message}` : ''), 'transaction']);
  }
  if (res.connection_error) items.push(['cut short', res.connection_error, 'connection_error']);
  const dl = document.createElement('dl');
  for (const [k, v, key] of items) {
    const div = document.createElement('div');
    div.dataset.key = key;
    // Alarm colour only when there is something to see (CSS: [data-alarm]).
    if ((key === 'errors' && s.errors > 0) || (key === 'unknown' && (s.unknown ?? 0) > 0) || key === 'connection_error') div.dataset.alarm = '';
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = v;
    div.append(dt, dd);
    dl.append(div);
  }
  const notes: HTMLElement[] = [];
  for (const [key, text] of [['round-trips', roundTripNote(res, s.mode ?? mode)], ['on-error', onErrorNote(res, s.mode ?? mode, onError)]] as const) {
    if (!text) continue;
    const p = document.createElement('p');
    p.className = 'round-trip-note';
    p.dataset.note = key;
    p.textContent = text;
    notes.push(p);
  }
  summaryEl().replaceChildren(dl, ...notes);
}

/**
 * Why `on_error: stop` stopped nothing, when it did not: a pipeline's round
 * trip is written whole before any reply comes back, so it stops only
 * between round trips, and a transaction runs all or nothing at EXEC.
 */
export function onErrorNote(res: BatchResponse, mode: Mode, onError: 'continue' | 'stop'): string {
  const s = res.summary;
  if (onError !== 'stop' || s.errors === 0 || s.not_sent > 0) return '';
  if (mode === 'pipeline' && s.round_trips <= 1) {
    return 'On error "stop" stopped nothing: the whole batch was one round trip, written before the first error came back. It stops between round trips: lower the batch size to stop sooner (sequential mode stops at the first error).';
  }
  if (mode === 'pipeline') {
    return "On error \"stop\" stopped nothing: the error came back in the batch's last round trip, whose commands were all written already.";
  }
  if (mode === 'transaction') {
    return 'On error "stop" does not apply inside MULTI/EXEC: Redis runs every queued command at EXEC, an error reply among them or not.';
  }
  return '';
}

/**
 * Why the batch took the round trips it did, in words (a
 * transaction looked faster than a pipeline split by its batch size, and
 * nothing said why). Batch size applies to pipelines only; a transaction is
 * always its commands in one write between MULTI and EXEC.
 */
export function roundTripNote(res: BatchResponse, mode: Mode): string {
  const s = res.summary;
  const n = (x: number) => x.toLocaleString('en-US');
  const trips = (x: number) => `${n(x)} round trip${x === 1 ? '' : 's'}`;
  const cmds = `${n(s.commands)} command${s.commands === 1 ? '' : 's'}`;
  switch (mode) {
    case 'pipeline': {
      const b = s.batch_size ?? 0;
      if (b >= s.commands) {
        return `Pipeline: ${cmds} in ${trips(s.round_trips)}, the batch size (${n(b)}) holding the whole batch. Batch size applies to pipelines only; a transaction is always one round trip.`;
      }
      return `Pipeline: ${cmds} in ${trips(s.round_trips)} of up to ${n(b)} (the batch size). A transaction is always one round trip whatever the batch size: to compare the two fairly, give the pipeline a batch size of ${n(s.commands)} or more.`;
    }
    case 'transaction':
      return `Transaction: ${cmds} between MULTI and EXEC in one write${s.round_trips > 1 ? ` (${trips(s.round_trips)} in all, WATCH's included)` : ', one round trip'}. Batch size applies to pipelines only: a transaction is always one round trip.`;
    case 'sequential':
      return `Sequential: one round trip per command, ${trips(s.round_trips)}.`;
    default:
      return '';
  }
}

/** A message in place of the summary; `source` tells what it is about (`controls`: a run control's value). */
export function summaryMessage(text: string, kind: 'error' | 'info' = 'error', source = '', hint = '') {
  const el = summaryEl();
  const p = document.createElement('p');
  p.className = `message ${kind}`;
  p.textContent = text;
  if (source) p.dataset.source = source;
  el.replaceChildren(p);
  if (hint) {
    const h = document.createElement('p');
    h.className = 'hint';
    h.textContent = hint;
    el.append(h);
  }
}

/** Takes away a message about `source`, if that is what the summary shows. */
export function clearSummaryMessage(source: string) {
  const el = summaryEl();
  if (el.querySelector(`.message[data-source="${source}"]`)) el.replaceChildren();
}

/** The page's advice for an API error, when the page knows better than the API's generic wording. */
export function apiHint(err: ApiError, mode: Mode): string {
  // The API's own message suggests raising batch_size, which does nothing in sequential mode.
  if ((err.code === 'invalid_rtt' && /batch timeout/.test(err.message)) || err.code === 'batch_timeout') return budgetHint(mode);
  return '';
}
