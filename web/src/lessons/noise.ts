// How sure a timing verdict can be on this machine. A timing lesson runs its
// experiment twice and compares the two: when the same batch took very
// different times (another process had the CPU), the verdict says the
// machine was too noisy instead of pretending to a conclusion.
import { el, verdict } from './ui.js';

/** Repeats of one measurement differing by more than this (relative to the smaller) make a run noisy. */
export const NOISY_SPREAD = 0.5;

/** `(max − min) / min` of positive measurements; 0 for fewer than two. */
export function spread(xs: number[]): number {
  if (xs.length < 2) return 0;
  const lo = Math.min(...xs);
  return lo > 0 ? (Math.max(...xs) - lo) / lo : 0;
}

/** Runs `fn` `times` times, one after another (never at once: they would share the CPU). */
export async function repeat<T>(times: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  for (let i = 0; i < times; i++) out.push(await fn(i));
  return out;
}

/**
 * The verdict of a timing claim: `holds` judged on the run's numbers, `noise`
 * the largest spread between repeats. Noisy and not holding: "too noisy to
 * tell" (`data-verdict="noisy"`); noisy and holding: it holds, and says how
 * noisy the machine was.
 */
export function timedVerdict(holds: boolean, noise: number, text: string): HTMLParagraphElement {
  const pct = `${Math.round(noise * 100)}%`;
  if (noise > NOISY_SPREAD && !holds) {
    return el(
      'p',
      { class: 'verdict noisy', 'data-verdict': 'noisy', 'data-noise': String(noise) },
      `≈ The machine was too noisy to tell: two runs of the same batch differed by ${pct}. ${text} Run it again when the machine is quieter.`,
    );
  }
  const v = verdict(holds, noise > NOISY_SPREAD ? `${text} (The machine was noisy: two runs of the same batch differed by ${pct}.)` : text);
  v.dataset.noise = String(noise);
  return v;
}

/**
 * Repeated measurements (`reps[i]`: one repeat's, each keyed by `key`): per
 * key of the first repeat, the fastest by `us`, and the largest spread of any
 * key's repeats. A key a later repeat lacks (measured fewer times) counts
 * with the repeats that have it.
 */
export function fastestOf<T, K>(reps: T[][], key: (t: T) => K, us: (t: T) => number): { best: Map<K, T>; noise: number } {
  const best = new Map<K, T>();
  let noise = 0;
  for (const first of reps[0] ?? []) {
    const k = key(first);
    const runs = reps.map((r) => r.find((x) => key(x) === k)).filter((x): x is T => x !== undefined);
    best.set(k, runs.reduce((a, b) => (us(b) < us(a) ? b : a)));
    noise = Math.max(noise, spread(runs.map(us)));
  }
  return { best, noise };
}

/** Repeated `/compare` reports: each mode's fastest run, and the largest spread of any mode's repeats. */
export function bestRuns<R extends { mode: string; summary: { total_us: number } }>(reps: Array<{ runs: R[] }>, modes: string[]): { best: Record<string, R>; noise: number } {
  const { best, noise } = fastestOf(
    reps.map((r) => r.runs.filter((x) => modes.includes(x.mode))),
    (r) => r.mode,
    (r) => r.summary.total_us,
  );
  return { best: Object.fromEntries(best), noise };
}
