// The run controls (mode, batch size, simulated RTT, on_error, RESP3; ids in
// index.html): their state, the request they make, and the check of their
// values against the server's limits before a run. The form is `novalidate`:
// the browser's own check would block the submit without a word in headless
// or embedded views, so the page says what is wrong instead.
import type { BatchRequest, InfoResponse, Mode } from '../api/client.js';
import type { BatchSnapshot } from '../editor/snapshot.js';
import { budgetWarning } from '../rttBudget.js';
import { clearSummaryMessage, summaryMessage } from './summary.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** The controls' elements, looked up when used: importing this module touches no DOM. */
const el = {
  get form() { return $<HTMLFormElement>('controls'); },
  get batchSize() { return $<HTMLInputElement>('batch-size'); },
  get rtt() { return $<HTMLInputElement>('rtt'); },
  get bandwidth() { return $<HTMLInputElement>('bandwidth'); },
  get clients() { return $<HTMLInputElement>('clients'); },
  get batchSizeNote() { return $<HTMLElement>('batch-size-note'); },
};

/**
 * What the page checks before sending, from GET /api/v1/info (`limits`,
 * `defaults.max_simulated_rtt_ms`; times in ms). A limit is undefined while
 * /info has not answered or could not be read: then the page checks nothing
 * extra and the server's 4xx message speaks.
 */
export interface ServerLimits {
  maxCommands?: number;
  maxRttMs?: number;
  batchTimeoutMs?: number;
  /** `defaults.min_simulated_bandwidth_mbps` / `max_…`: the bandwidths accepted. */
  minMbps?: number;
  maxMbps?: number;
}

export function limitsOf(info: InfoResponse | null): ServerLimits {
  if (!info) return {};
  return {
    maxCommands: info.limits.max_commands,
    maxRttMs: info.defaults.max_simulated_rtt_ms,
    batchTimeoutMs: info.limits.batch_timeout_ms,
    minMbps: info.defaults.min_simulated_bandwidth_mbps,
    maxMbps: info.defaults.max_simulated_bandwidth_mbps,
  };
}

/** Sets `max` on the inputs of these ids (RTT and command-count fields here and in the tutorial's views). */
export function applyLimits(l: ServerLimits) {
  const setMax = (ids: string[], max: number | undefined) => {
    if (max === undefined) return;
    for (const id of ids) document.getElementById(id)?.setAttribute('max', String(max));
  };
  setMax(['rtt', 'compare-rtt', 'sweep-rtt'], l.maxRttMs);
  setMax(['sweep-total'], l.maxCommands);
}

export function currentMode(): Mode {
  return (document.querySelector<HTMLInputElement>('input[name="mode"]:checked')?.value ?? 'pipeline') as Mode;
}

/** Batch size only in pipeline mode, clients only in auto mode; the RTT preset and the link preset matching the fields look pressed. */
export function syncControls() {
  el.batchSize.disabled = currentMode() !== 'pipeline';
  el.clients.disabled = currentMode() !== 'auto';
  const v = Number(el.rtt.value);
  for (const b of document.querySelectorAll<HTMLButtonElement>('.presets button')) {
    b.setAttribute('aria-pressed', String(Number(b.dataset.rtt) === v));
  }
  for (const b of document.querySelectorAll<HTMLButtonElement>('.link-presets button')) {
    b.setAttribute('aria-pressed', String(Number(b.dataset.rtt) === v && el.bandwidth.value !== '' && Number(b.dataset.mbps) === Number(el.bandwidth.value)));
  }
}

/** The simulated bandwidth in Mbit/s, or undefined (the field is empty: unlimited). */
export function bandwidthMbps(): number | undefined {
  return el.bandwidth.value.trim() === '' && !el.bandwidth.validity.badInput ? undefined : Number(el.bandwidth.value);
}

/**
 * Until the reader types a batch size (`data-auto` on the field, index.html),
 * a pipeline is the whole batch in one round trip, as a transaction always
 * is: a fixed default (1,000) split the 10,000-command sample into 10 round
 * trips and made the transaction look faster than the pipeline.
 * The field follows the batch's size, up to the server's `max_commands`
 * (`/info`; a batch larger than that is refused anyway), at least 1. Typing
 * a value, or a permalink or lesson setting one, makes it the reader's.
 */
export function fitBatchSize(l: ServerLimits, commands: number) {
  if (!('auto' in el.batchSize.dataset)) return;
  el.batchSize.value = String(Math.max(1, Math.min(commands, l.maxCommands ?? Infinity)));
}

/** The batch size is the reader's from now on: the field no longer follows the batch. */
function batchSizeChosen() {
  delete el.batchSize.dataset.auto;
  el.batchSizeNote.textContent = '';
}

/** A run control whose value cannot be sent, and what to tell the reader. */
export interface ControlError {
  input: HTMLInputElement;
  message: string;
}

/**
 * Checks the run controls the way the API will (docs/api.md#batch,
 * backend/src/api/validate.rs): batch_size a whole number, at least 1;
 * simulated_rtt_ms 0 to the server's `max_simulated_rtt_ms` once /info told
 * it. An empty or half-typed number (`validity.badInput`) is an error, never a
 * silent 0.
 */
export function controlError(l: ServerLimits): ControlError | null {
  if (!el.batchSize.disabled) {
    const size = Number(el.batchSize.value);
    if (el.batchSize.validity.badInput || el.batchSize.value.trim() === '' || !Number.isInteger(size) || size < 1) {
      return { input: el.batchSize, message: `Batch size must be a whole number, at least 1${el.batchSize.value ? ` (it is ${el.batchSize.value})` : ''}.` };
    }
  }
  if (!el.clients.disabled) {
    const c = Number(el.clients.value);
    if (el.clients.validity.badInput || el.clients.value.trim() === '' || !Number.isInteger(c) || c < 1) {
      return { input: el.clients, message: `Clients must be a whole number, at least 1${el.clients.value ? ` (it is ${el.clients.value})` : ''}.` };
    }
  }
  const ms = Number(el.rtt.value);
  const max = l.maxRttMs ?? Infinity;
  if (el.rtt.validity.badInput || el.rtt.value.trim() === '' || !Number.isFinite(ms) || ms < 0 || ms > max) {
    const range = max === Infinity ? ', at least 0' : ` from 0 to ${max}`;
    return { input: el.rtt, message: `Simulated RTT must be a number of milliseconds${range}, e.g. 0.25${el.rtt.value ? ` (it is ${el.rtt.value})` : ' (the field is empty or not a number)'}.` };
  }
  const mbps = bandwidthMbps();
  const [lo, hi] = [l.minMbps ?? 0.01, l.maxMbps ?? Infinity];
  if (mbps !== undefined && (el.bandwidth.validity.badInput || !Number.isFinite(mbps) || mbps < lo || mbps > hi)) {
    return { input: el.bandwidth, message: `Bandwidth must be a number of Mbit/s from ${lo} to ${hi === Infinity ? 'any' : hi}, e.g. 100, or empty for unlimited${el.bandwidth.value ? ` (it is ${el.bandwidth.value})` : ''}.` };
  }
  return null;
}

/** The batch request for `snap` with the controls' values (checked by controlError first). */
export function request(snap: BatchSnapshot): BatchRequest {
  const size = Number(el.batchSize.value);
  const req: BatchRequest = {
    text: snap.inlineText,
    mode: currentMode(),
    // Outside pipeline mode the field is disabled and the server ignores it.
    batch_size: Number.isInteger(size) && size >= 1 ? size : 1000,
    on_error: $<HTMLSelectElement>('on-error').value as 'continue' | 'stop',
    simulated_rtt_ms: Number(el.rtt.value),
  };
  const mbps = bandwidthMbps();
  if (mbps !== undefined) req.simulated_bandwidth_mbps = mbps;
  if (req.mode === 'auto') req.clients = Number(el.clients.value);
  if ($<HTMLInputElement>('resp3').checked) req.resp3 = true;
  return req;
}

/** Marks `input` invalid with `message` in the summary; editing any control takes both away. */
export function showControlError({ input, message }: ControlError) {
  for (const i of [el.batchSize, el.rtt, el.clients, el.bandwidth]) i.removeAttribute('aria-invalid');
  input.setAttribute('aria-invalid', 'true');
  summaryMessage(message, 'error', 'controls');
  input.focus();
}

export function clearControlError() {
  for (const i of [el.batchSize, el.rtt, el.clients, el.bandwidth]) i.removeAttribute('aria-invalid');
  clearSummaryMessage('controls');
}

/**
 * Before running: a batch with a command the server refuses (`refused`,
 * from playground/refused.ts), or whose simulated RTT alone exceeds the
 * server's batch timeout, is refused by the API; `#run-warning` says so while the
 * controls change (nothing while the timeout is unknown; `commands` is only
 * asked then: on a large batch it flushes the editors' pending sync).
 */
export function updateWarning(l: ServerLimits, commands: () => number, refused: string | null = null, advice: string | null = null) {
  const warning = $<HTMLParagraphElement>('run-warning');
  const blocking = refused ?? (l.batchTimeoutMs !== undefined && !controlError(l)
    ? budgetWarning(currentMode(), commands(), Number(el.batchSize.value), Number(el.rtt.value), l.batchTimeoutMs, Number(el.clients.value))
    : null);
  // `advice` (a command Redis will answer with an error) is said, but Run stays on.
  const text = blocking ?? advice;
  warning.hidden = !text;
  warning.textContent = text ?? '';
  warning.dataset.blocking = String(!!blocking);
  // The page knows the server would refuse the batch: no Run until the controls change.
  const run = $<HTMLButtonElement>('run');
  if (run.getAttribute('aria-busy') !== 'true') run.disabled = !!blocking;
  if (text) run.setAttribute('aria-describedby', 'run-warning');
  else run.removeAttribute('aria-describedby');
}

/** A blocking warning of `updateWarning` is showing: a run would be refused (advice alone is not). */
export const refusalShown = () => {
  const w = $<HTMLParagraphElement>('run-warning');
  return !w.hidden && w.dataset.blocking === 'true';
};

/** Wires the controls: submit runs, presets set the RTT, a fixed value takes its stale message away, every change calls `changed`. */
export function wireControls(run: () => void, changed: () => void) {
  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    run();
  });
  for (const b of document.querySelectorAll<HTMLButtonElement>('.presets button')) {
    b.addEventListener('click', () => {
      el.rtt.value = b.dataset.rtt ?? '0';
      clearControlError();
      syncControls();
    });
  }
  for (const b of document.querySelectorAll<HTMLButtonElement>('.link-presets button')) {
    b.addEventListener('click', () => {
      el.rtt.value = b.dataset.rtt ?? '0';
      el.bandwidth.value = b.dataset.mbps ?? '';
      clearControlError();
      syncControls();
    });
  }
  el.rtt.addEventListener('input', syncControls);
  el.bandwidth.addEventListener('input', syncControls);
  el.batchSize.addEventListener('input', batchSizeChosen);
  for (const r of document.querySelectorAll('input[name="mode"]')) r.addEventListener('change', syncControls);
  el.form.addEventListener('input', clearControlError);
  el.form.addEventListener('change', clearControlError);
  syncControls();
  el.form.addEventListener('input', changed);
  el.form.addEventListener('change', changed);
  el.form.addEventListener('click', (e) => {
    if ((e.target as HTMLElement).closest('.presets button, .link-presets button')) changed();
  });
}
