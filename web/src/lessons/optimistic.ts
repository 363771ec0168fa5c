// Lesson 6's two read-compute-write loops against the same concurrent
// writer: WATCH + MULTI/EXEC on a session (optimistic: EXEC returns null
// when a watched key changed, and the loop retries), and EVAL (the read and
// the write inside Redis: nothing to retry). "Another client" is a batch
// sent outside the session, on a connection of its own.
import { batch, createSession, deleteSession, type BatchResponse } from '../api/client.js';

/** One pass of the WATCH loop: what it read, what the other client did, what EXEC answered. */
export interface Attempt {
  attempt: number;
  read: number;
  /** The counter after the other client's INCR in this attempt's window, if it wrote. */
  other: number | null;
  wrote: number;
  /** EXEC's reply type: `array` committed, `null` a watched key changed (nothing ran). */
  exec: string;
}

export interface LoopRun {
  attempts: Attempt[];
  committed: boolean;
  /** Round trips the session's batches took, summed from their summaries. */
  roundTrips: number;
  totalUs: number;
}

const reply = (r: BatchResponse, i: number) => r.results[i]?.reply;
const intOf = (r: BatchResponse, i: number) => Number(reply(r, i)?.value);

/** Most attempts before the loop gives up, as a real client would bound it. */
export const MAX_ATTEMPTS = 10;

/**
 * Doubles `key` with WATCH + MULTI/EXEC on a session, retrying until EXEC
 * commits (at most MAX_ATTEMPTS). In each of the first `conflicts` attempts the
 * other client's `INCR key` runs after our GET and before our EXEC.
 */
export async function watchLoop(key: string, conflicts: number, rttMs: number): Promise<LoopRun> {
  const s = await createSession({ simulated_rtt_ms: rttMs });
  const on = { mode: 'pipeline' as const, session: s.id };
  const run: LoopRun = { attempts: [], committed: false, roundTrips: 0, totalUs: 0 };
  const count = (r: BatchResponse) => {
    run.roundTrips += r.summary.round_trips;
    run.totalUs += r.summary.total_us;
    return r;
  };
  try {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS && !run.committed; attempt++) {
      count(await batch({ text: `WATCH ${key}`, ...on }));
      const v = intOf(count(await batch({ text: `GET ${key}`, ...on })), 0);
      const next = 2 * v; // computed here, in the client, between two round trips
      const other = attempt <= conflicts ? intOf(await batch({ text: `INCR ${key}`, mode: 'pipeline' }), 0) : null;
      const tx = count(await batch({ text: `MULTI\nSET ${key} ${next}\nEXEC`, ...on }));
      const exec = reply(tx, 2)?.type ?? tx.results[2]?.status ?? '?';
      run.attempts.push({ attempt, read: v, other, wrote: next, exec });
      run.committed = exec === 'array';
    }
  } finally {
    await deleteSession(s.id).catch(() => undefined);
  }
  return run;
}

export interface ScriptRun {
  /** The script's return value: the value it wrote. */
  wrote: number;
  /** The other client's INCR replies. */
  others: number[];
  roundTrips: number;
  totalUs: number;
}

/** A Lua script that doubles KEYS[1] and returns the new value. */
export const DOUBLE_SCRIPT = `"local v = tonumber(redis.call('GET', KEYS[1]) or '0') redis.call('SET', KEYS[1], v * 2) return v * 2"`;

/** Doubles `key` with EVAL while the other client sends `conflicts` INCRs at the same time. */
export async function scriptRun(key: string, conflicts: number, rttMs: number): Promise<ScriptRun> {
  const script = batch({ text: `EVAL ${DOUBLE_SCRIPT} 1 ${key}`, mode: 'pipeline', ...(rttMs > 0 ? { simulated_rtt_ms: rttMs } : {}) });
  const others = Array.from({ length: conflicts }, () => batch({ text: `INCR ${key}`, mode: 'pipeline' }));
  const [s, ...o] = await Promise.all([script, ...others]);
  return { wrote: intOf(s!, 0), others: o.map((r) => intOf(r, 0)), roundTrips: s!.summary.round_trips, totalUs: s!.summary.total_us };
}

/**
 * Whether the script's outcome kept every update: the final counter is
 * 2 × (start + k) + (n − k) for some k of the n INCRs that ran before it.
 */
export function keptAll(start: number, n: number, final: number, wrote: number): boolean {
  for (let k = 0; k <= n; k++) if (wrote === 2 * (start + k) && final === wrote + (n - k)) return true;
  return false;
}
