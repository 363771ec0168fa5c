// A duration for people: milliseconds up to 10 s ("812.345 ms" stays exact
// for short runs), seconds past it ("40.5 s"), minutes past 100 s.

/** `ms` as text: "0.812 ms", "9,876.5 ms", "40.5 s", "2 min 5 s". */
export function fmtDuration(ms: number): string {
  if (ms < 10_000) return `${ms.toLocaleString('en-US', { maximumFractionDigits: ms < 100 ? 3 : 1 })} ms`;
  if (ms < 100_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}
