// The simulated-RTT budget of a batch: every round trip waits at least the
// simulated RTT, and the server refuses a batch whose waiting alone would
// exceed its batch timeout (backend/src/api/validate.rs, check_rtt_budget).
// The page warns before running, and its advice fits the mode: in sequential
// mode the batch size changes nothing. The round trips are counted by the
// server's own rule, in the wasm module (model/, min_round_trips).
import type { Mode } from './api/client.js';
import { minRoundTrips } from './wasm.js';

/** What to change so the batch fits, for `mode`. */
export function budgetHint(mode: Mode): string {
  switch (mode) {
    case 'sequential':
      return 'In sequential mode every command is one round trip: send fewer commands, pick a smaller RTT, or switch to pipeline mode.';
    case 'pipeline':
      return 'Raise the batch size (fewer round trips), send fewer commands, or pick a smaller RTT.';
    case 'transaction':
      return 'Pick a smaller RTT.';
    case 'auto':
      return 'Raise the number of clients (more commands per round trip), send fewer commands, or pick a smaller RTT.';
  }
}

const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 2 });

/**
 * A warning when `commands` at `rttMs` in `mode` would wait longer than
 * `timeoutMs` (the server's batch timeout, ms) on simulated RTT alone; null
 * when the batch fits.
 */
export function budgetWarning(mode: Mode, commands: number, batchSize: number, rttMs: number, timeoutMs: number, clients = 10): string | null {
  const trips = minRoundTrips(mode, commands, batchSize, clients);
  const waitMs = trips * rttMs;
  if (!(waitMs > timeoutMs)) return null;
  return `${fmt(trips)} round trip${trips === 1 ? '' : 's'} × ${fmt(rttMs)} ms = ${fmt(Math.round(waitMs))} ms of simulated RTT, over the server's batch timeout of ${fmt(timeoutMs)} ms: the server will refuse this batch. ${budgetHint(mode)}`;
}
