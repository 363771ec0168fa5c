// Permalinks: the page state (editor text, mode, options, open view, the
// compare and sweep views' own settings, every lesson's controls and the
// place in the page) in the URL fragment, so a link restores exactly what
// its author saw. The fragment never reaches the
// server, and never holds the API token (kept in the tab's sessionStorage).
//
// Format: `#s=` + base64url(deflate-raw(UTF-8 JSON)) — JSON so fields can be
// added, deflate because batches are repetitive (1000 SETs shrink ~50x).

import type { Mode, OnError } from './api/types.js';

export type { Mode, OnError };

/** What a permalink restores. Times in ms, as the RTT slider shows them. */
export interface PageState {
  text: string;
  mode: Mode;
  batch_size: number;
  on_error: OnError;
  simulated_rtt_ms: number;
  /** The simulated bandwidth in Mbit/s; absent: unlimited (and in links made before it was added). */
  simulated_bandwidth_mbps?: number;
  /** RESP3 (`HELLO 3` before the batch). Absent in links made before it was
   * added; those open with RESP3 off, the page's default. */
  resp3?: boolean;
  /** Auto mode's concurrent callers (the Clients field); absent: the field's default. */
  clients?: number;
  /** The open tab: `playground`, `compare`, `sweep` or `lesson-N`. */
  view?: string;
  /** The Compare view's settings; absent fields keep the view's defaults. */
  compare?: CompareSettings;
  /** The sweep view's settings; absent fields keep the view's defaults. */
  sweep?: SweepSettings;
  /** Other controls by element id (each lesson's sliders and checkboxes, the
   * export menus): a number, a string or a checkbox's state. */
  inputs?: Record<string, InputValue>;
  /** The id of the part of the open view the reader had scrolled to (`lesson-3`, `summary`). */
  place?: string;
}

export type InputValue = string | number | boolean;

/** An element id a permalink may name (`l1-rtt`, `lesson-3`): no selectors, no spaces. */
const ID = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** Compare's inputs: RTT (ms), the pipeline's batch size, auto mode's clients. */
export interface CompareSettings {
  simulated_rtt_ms?: number;
  batch_size?: number;
  clients?: number;
}

/** Sweep's inputs, as typed (`batch_sizes`: "1, 10, 100"). */
export interface SweepSettings {
  command?: string;
  total?: number;
  batch_sizes?: string;
  simulated_rtt_ms?: number;
}

/** What a reader is told when the fragment's bytes do not decode. */
export const DAMAGED = 'the link is damaged or incomplete (part of it was probably lost when it was copied)';

const MODES: Mode[] = ['sequential', 'pipeline', 'transaction', 'auto'];
const PREFIX = 's=';

async function pipeThrough(bytes: Uint8Array, stream: CompressionStream | DecompressionStream): Promise<Uint8Array> {
  const out = new Response(new Blob([bytes as BlobPart]).stream().pipeThrough(stream));
  return new Uint8Array(await out.arrayBuffer());
}

function toBase64Url(bytes: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(s: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(s)) throw new Error('the link is damaged: it holds characters a permalink never contains (only A-Z a-z 0-9 - _)');
  let bin: string;
  try {
    bin = atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4));
  } catch {
    throw new Error(DAMAGED);
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The fragment (with its leading `#`) that restores `state`. */
export async function encodePermalink(state: PageState): Promise<string> {
  const json = JSON.stringify({ v: 1, ...state });
  const packed = await pipeThrough(new TextEncoder().encode(json), new CompressionStream('deflate-raw'));
  return '#' + PREFIX + toBase64Url(packed);
}

/** Checks one field; the error names it (`compare.clients` inside an object), as the API's do. */
function field<T>(o: Record<string, unknown>, name: string, ok: (v: unknown) => boolean, what: string, path = name): T {
  if (!ok(o[name])) throw new Error(`field \`${path}\` must be ${what}, got ${JSON.stringify(o[name])}`);
  return o[name] as T;
}

const isInt1 = (v: unknown) => Number.isInteger(v) && (v as number) >= 1;
const isMs = (v: unknown) => typeof v === 'number' && v >= 0 && Number.isFinite(v);
const isString = (v: unknown) => typeof v === 'string';

/** A view's settings object: each field optional, checked when present. */
function settings<T>(r: Record<string, unknown>, name: string, fields: Record<string, [(v: unknown) => boolean, string]>): T | undefined {
  if (r[name] === undefined) return undefined;
  const o = field<Record<string, unknown>>(r, name, (v) => typeof v === 'object' && v !== null && !Array.isArray(v), 'an object');
  const out: Record<string, unknown> = {};
  for (const [k, [ok, what]] of Object.entries(fields)) {
    if (o[k] !== undefined) out[k] = field(o, k, ok, what, `${name}.${k}`);
  }
  return out as T;
}

/**
 * The state in a fragment (`#s=...`, with or without `#`); `null` when the
 * fragment holds no permalink. Throws an Error whose message is meant for the
 * reader: `DAMAGED` when the bytes do not decode (bad base64url, deflate data
 * or JSON: a link cut short), or the field of the wrong type (an edited link).
 */
export async function decodePermalink(fragment: string): Promise<PageState | null> {
  const f = fragment.startsWith('#') ? fragment.slice(1) : fragment;
  if (!f.startsWith(PREFIX)) return null;
  const packed = fromBase64Url(f.slice(PREFIX.length));
  let json: string;
  try {
    json = new TextDecoder('utf-8', { fatal: true }).decode(await pipeThrough(packed, new DecompressionStream('deflate-raw')));
  } catch {
    // The browser's own reason (Chromium says "Failed to fetch") describes its
    // stream plumbing, not the link: it would read like a network failure.
    throw new Error(DAMAGED);
  }
  let o: unknown;
  try {
    o = JSON.parse(json);
  } catch {
    throw new Error(DAMAGED);
  }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error(DAMAGED);
  const r = o as Record<string, unknown>;
  field(r, 'v', (v) => v === 1, 'version 1');
  const state: PageState = {
    text: field(r, 'text', (v) => typeof v === 'string', 'a string'),
    mode: field(r, 'mode', (v) => MODES.includes(v as Mode), 'sequential, pipeline, transaction or auto'),
    batch_size: field(r, 'batch_size', isInt1, 'an integer >= 1'),
    on_error: field(r, 'on_error', (v) => v === 'continue' || v === 'stop', 'continue or stop'),
    simulated_rtt_ms: field(r, 'simulated_rtt_ms', isMs, 'a number of ms >= 0'),
  };
  if (r.simulated_bandwidth_mbps !== undefined) {
    state.simulated_bandwidth_mbps = field(r, 'simulated_bandwidth_mbps', (v) => typeof v === 'number' && Number.isFinite(v) && v > 0, 'a number of Mbit/s > 0');
  }
  if (r.resp3 !== undefined) state.resp3 = field(r, 'resp3', (v) => typeof v === 'boolean', 'true or false');
  if (r.clients !== undefined) state.clients = field(r, 'clients', isInt1, 'an integer >= 1');
  if (r.place !== undefined) state.place = field(r, 'place', (v) => typeof v === 'string' && ID.test(v), 'an element id');
  if (r.inputs !== undefined) {
    const o = field<Record<string, unknown>>(r, 'inputs', (v) => typeof v === 'object' && v !== null && !Array.isArray(v), 'an object');
    const inputs: Record<string, InputValue> = {};
    for (const [k, v] of Object.entries(o)) {
      if (!ID.test(k)) throw new Error(`field \`inputs\` names ${JSON.stringify(k)}, which is not an element id`);
      inputs[k] = field(o, k, (x) => typeof x === 'string' || typeof x === 'boolean' || (typeof x === 'number' && Number.isFinite(x)), 'a string, a number or true/false', `inputs.${k}`);
    }
    state.inputs = inputs;
  }
  if (r.view !== undefined) state.view = field(r, 'view', (v) => typeof v === 'string' && /^[a-z0-9-]{1,32}$/.test(v), 'a view name');
  const compare = settings<CompareSettings>(r, 'compare', {
    simulated_rtt_ms: [isMs, 'a number of ms >= 0'],
    batch_size: [isInt1, 'an integer >= 1'],
    clients: [isInt1, 'an integer >= 1'],
  });
  if (compare) state.compare = compare;
  const sweep = settings<SweepSettings>(r, 'sweep', {
    command: [isString, 'a string'],
    total: [isInt1, 'an integer >= 1'],
    batch_sizes: [isString, 'a string'],
    simulated_rtt_ms: [isMs, 'a number of ms >= 0'],
  });
  if (sweep) state.sweep = sweep;
  return state;
}

const SKIPPED_TYPES = ['button', 'submit', 'reset', 'file', 'password', 'hidden'];

/** Controls of the playground outside its run controls that a link keeps too: the key browser's pattern. */
const ALSO_KEPT = ['keys-pattern'];

/** The values of the form controls that have an id, in or at each of `roots` (a lesson's sliders, a menu), and ALSO_KEPT's. */
export function inputsOf(roots: Array<Element | null>): Record<string, InputValue> {
  const out: Record<string, InputValue> = {};
  for (const root of [...roots, ...ALSO_KEPT.map((id) => document.getElementById(id))]) {
    if (!root) continue;
    const found = root.matches('input[id], select[id]') ? [root] : [...root.querySelectorAll('input[id], select[id]')];
    for (const e of found) {
      if (!ID.test(e.id)) continue;
      if (e instanceof HTMLInputElement) {
        if (SKIPPED_TYPES.includes(e.type)) continue;
        if (e.type === 'checkbox' || e.type === 'radio') out[e.id] = e.checked;
        else if ((e.type === 'range' || e.type === 'number') && e.value !== '' && Number.isFinite(Number(e.value))) out[e.id] = Number(e.value);
        else out[e.id] = e.value;
      } else if (e instanceof HTMLSelectElement) out[e.id] = e.value;
    }
  }
  return out;
}

/** Sets each control named that the page has, firing `input` and `change` as a person's edit does (its output and listeners follow). */
export function applyInputs(inputs: Record<string, InputValue>): void {
  for (const [id, v] of Object.entries(inputs)) {
    const e = document.getElementById(id);
    if (e instanceof HTMLInputElement && (e.type === 'checkbox' || e.type === 'radio')) {
      if (typeof v !== 'boolean' || e.checked === v) continue;
      e.checked = v;
    } else if ((e instanceof HTMLInputElement && !SKIPPED_TYPES.includes(e.type)) || e instanceof HTMLSelectElement) {
      if (typeof v === 'boolean' || e.value === String(v)) continue;
      e.value = String(v);
    } else continue;
    e.dispatchEvent(new Event('input', { bubbles: true }));
    e.dispatchEvent(new Event('change', { bubbles: true }));
  }
}

/**
 * The place in `panel` the reader has scrolled to: the id of the last of its
 * parts with an id (its children, and each lesson) whose top is at or above
 * `top` (the bottom of the tab bar pinned above it, px); none at the top of the page.
 */
export function placeIn(panel: HTMLElement, top = 0): string | undefined {
  if (window.scrollY < 40) return undefined;
  let place: string | undefined;
  for (const part of panel.querySelectorAll<HTMLElement>(':scope > [id], article.lesson[id]')) {
    if (!ID.test(part.id) || part.offsetParent === null) continue;
    if (part.getBoundingClientRect().top <= top + 60) place = part.id;
  }
  return place;
}

/** Scrolls the page so that the element `id` starts right under `bar` (the pinned tab bar), as it was when the link was copied. */
export function scrollToPlace(id: string, bar: HTMLElement): void {
  const e = document.getElementById(id);
  if (e) window.scrollTo({ top: e.getBoundingClientRect().top + window.scrollY - bar.offsetHeight - 8 });
}
