// Small DOM helpers shared by the lessons and the compare/sweep views; the
// numbers they show and their `<dl>` come from ../ui/figures.ts, which the
// doctor's page uses too.

import { el } from '../dom.js';

export { el };

/** HTML for lesson prose: our own constant strings only, never user or Redis data. */
export function prose(html: string): HTMLDivElement {
  const d = el('div', { class: 'prose' });
  d.innerHTML = html;
  // A wide example scrolls sideways: reachable by keyboard too.
  for (const pre of d.querySelectorAll('pre')) pre.tabIndex = 0;
  return d;
}

/** One of the page's experiment views (compare, sweep): a `section.view`
 * with id `{name}-view`, its `h2` title (id `{name}-title`, which labels the
 * section), its `intro` prose (our own constant HTML) and then `children`. */
export function view(name: string, title: string, intro: string, ...children: Node[]): HTMLElement {
  return el(
    'section',
    { id: `${name}-view`, class: 'view', 'aria-labelledby': `${name}-title` },
    el('h2', { id: `${name}-title` }, title),
    prose(intro),
    ...children,
  );
}

/** A view whose inputs a permalink keeps: its element, its settings, and setting them back. */
export interface SettingsView<T> {
  root: HTMLElement;
  settings(): T;
  apply(s: T): void;
}

/** Each input of `inputs` named in `values` gets that value (the others keep theirs). */
export function setInputs(inputs: Record<string, HTMLInputElement>, values: object): void {
  for (const [k, v] of Object.entries(values)) {
    const input = inputs[k];
    if (input && v !== undefined) input.value = String(v);
  }
}

/** A `div.controls` row: each `[label, input]` pair becomes a
 * `label.field` around its input; buttons and other elements stay as given. */
export function controls(...items: Array<[string, HTMLElement] | HTMLElement>): HTMLDivElement {
  return el('div', { class: 'controls' }, ...items.map((i) => (Array.isArray(i) ? el('label', { class: 'field' }, i[0], i[1]) : i)));
}

export { count, fmtInt, fmtMs, fmtX, metrics, type Metric } from '../ui/figures.js';

/** The lesson's claim checked against this run: `holds` true/false. */
export function verdict(holds: boolean, text: string): HTMLParagraphElement {
  return el('p', { class: `verdict ${holds ? 'holds' : 'differs'}`, 'data-verdict': holds ? 'holds' : 'differs' }, (holds ? '✔ ' : '✘ ') + text);
}

export function errorBox(e: unknown): HTMLParagraphElement {
  const err = e as { message?: string; code?: string };
  return el('p', { class: 'message error', role: 'alert' }, `Run failed: ${err.message ?? String(e)}${err.code ? ` (${err.code})` : ''}`);
}

/** A range slider with its value shown, e.g. the simulated RTT. */
export function slider(opts: { id: string; label: string; min: number; max: number; step: number; value: number; unit: string }): { root: HTMLLabelElement; input: HTMLInputElement; value(): number } {
  const input = el('input', { type: 'range', id: opts.id, min: String(opts.min), max: String(opts.max), step: String(opts.step), value: String(opts.value) });
  const show = (v: number) => `${v.toLocaleString('en-US', { maximumFractionDigits: 3 })} ${opts.unit}`;
  const out = el('output', { for: opts.id }, show(opts.value));
  input.addEventListener('input', () => (out.textContent = show(Number(input.value))));
  const root = el('label', { class: 'slider' }, `${opts.label} `, input, out);
  return { root, input, value: () => Number(input.value) };
}

/** The simulated-RTT slider of a lesson (ms, from 0). */
export const rttSlider = (id: string, range: { max: number; step: number; value: number }) => slider({ id, label: 'Simulated RTT', min: 0, unit: 'ms', ...range });

/** A small table: header row and body rows of text cells, in a box that
 * scrolls sideways when the screen is narrower (dom.ts's keyboardScrolling). */
export function table(head: string[], rows: Array<Array<string | Node>>, attrs: Record<string, string> = {}): HTMLDivElement {
  return el(
    'div',
    { class: 'scroll-box' },
    el(
      'table',
      { class: 'lesson-table', ...attrs },
      el('thead', {}, el('tr', {}, ...head.map((h) => el('th', {}, h)))),
      el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, c))))),
    ),
  );
}

/** Lines of text: `N` commands built from `line(i)`. */
export const lines = (n: number, line: (i: number) => string) => Array.from({ length: n }, (_, i) => line(i)).join('\n');
