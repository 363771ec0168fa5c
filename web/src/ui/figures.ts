// Numbers for people, and the `<dl>` of measured values every view shows
// (lessons, compare, sweep, the doctor's page). Each value carries
// `data-metric` and `data-value` (the raw number), so a screen reader and
// the end-to-end tests read the same values.

import { el } from '../dom.js';
import { fmtDuration } from '../playground/duration.js';

export const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US');
/** `1 round trip`, `2 round trips`, `1,000 round trips` (English plural in `s`). */
export const count = (n: number, noun: string) => `${fmtInt(n)} ${noun}${n === 1 ? '' : 's'}`;
/** A time given in µs, for people: ms up to 10 s, seconds past it (as the playground's summary and the CLI). */
export const fmtMs = (us: number) => {
  const ms = us / 1000;
  if (ms >= 10_000) return fmtDuration(ms);
  return `${ms.toLocaleString('en-US', { maximumFractionDigits: ms < 10 ? 2 : ms < 100 ? 1 : 0 })} ms`;
};
export const fmtX = (x: number) => `${x.toLocaleString('en-US', { maximumFractionDigits: x < 10 ? 1 : 0 })}×`;

export interface Metric {
  key: string;
  label: string;
  value: number | string;
  text: string;
}

/** A `<dl>` of measured values. */
export function metrics(items: Metric[]): HTMLDListElement {
  const dl = el('dl', { class: 'metrics' });
  for (const m of items) {
    dl.append(el('div', { 'data-metric': m.key, 'data-value': String(m.value) }, el('dt', {}, m.label), el('dd', {}, m.text)));
  }
  return dl;
}
