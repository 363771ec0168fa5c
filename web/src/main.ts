// The playground: editors (wasm only, work offline), run controls, and the
// results of `POST /api/v1/batch` as a summary, a timeline and a table.
import { keymap } from '@codemirror/view';
import { Prec } from '@codemirror/state';
import { ApiError, checkHealth, fetchLimits, runBatch, type BatchRequest, type BatchResponse, type Health, type Mode, type ServerLimits } from './api.js';
import { budgetHint, budgetWarning } from './rttBudget.js';
import { createEditors, type BatchSnapshot } from './editor/views.js';
import { ResultsTable } from './results/table.js';
import { sample } from './samples.js';
import { Timeline } from './timeline/timeline.js';
import * as wasm from './wasm.js';
import * as respText from './editor/respText.js';
import { mountTutorial } from './lessons/index.js';

const { loadWasm } = wasm;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

const banner = $<HTMLDivElement>('banner');
const summaryEl = $<HTMLElement>('summary');
const runButton = $<HTMLButtonElement>('run');
const batchSize = $<HTMLInputElement>('batch-size');
const rtt = $<HTMLInputElement>('rtt');

function showBanner(health: Health, detail?: string) {
  if (health === 'ok') {
    banner.hidden = true;
    banner.textContent = '';
    return;
  }
  banner.hidden = false;
  banner.dataset.kind = health;
  const why = detail ? ` Server said: ${detail.replace(/^Redis is unreachable:\s*/i, '')}.` : '';
  banner.textContent = health === 'redis_down'
    ? `Redis is unreachable: runs fail until it is back. The editors still work (they run in your browser).${why}`
    : `The pipelab API is unreachable: start it with \`pipelab serve\` to run batches. The editors still work (they run in your browser).${why}`;
}

async function refreshHealth() {
  showBanner(await checkHealth());
}

function currentMode(): Mode {
  return (document.querySelector<HTMLInputElement>('input[name="mode"]:checked')?.value ?? 'pipeline') as Mode;
}

function syncControls() {
  batchSize.disabled = currentMode() !== 'pipeline';
  const v = Number(rtt.value);
  for (const b of document.querySelectorAll<HTMLButtonElement>('.presets button')) {
    b.setAttribute('aria-pressed', String(Number(b.dataset.rtt) === v));
  }
}

/** A run control whose value cannot be sent, and what to tell the reader. */
interface ControlError {
  input: HTMLInputElement;
  message: string;
}

/**
 * Checks the run controls the way the API will (docs/api.md#batch: batch_size
 * 1..100,000, simulated_rtt_ms 0..1000). The form is `novalidate`: the
 * browser's own check would block the submit without a word in headless or
 * embedded views, so the page says what is wrong instead. An empty or
 * half-typed number (`validity.badInput`) is an error, never a silent 0.
 */
function controlError(): ControlError | null {
  if (!batchSize.disabled) {
    const size = Number(batchSize.value);
    if (batchSize.validity.badInput || batchSize.value.trim() === '' || !Number.isInteger(size) || size < 1 || size > 100000) {
      return { input: batchSize, message: `Batch size must be a whole number from 1 to 100,000${batchSize.value ? ` (it is ${batchSize.value})` : ''}.` };
    }
  }
  const ms = Number(rtt.value);
  if (rtt.validity.badInput || rtt.value.trim() === '' || !Number.isFinite(ms) || ms < 0 || ms > 1000) {
    return { input: rtt, message: `Simulated RTT must be a number of milliseconds from 0 to 1000, e.g. 0.25${rtt.value ? ` (it is ${rtt.value})` : ' (the field is empty or not a number)'}.` };
  }
  return null;
}

function request(snap: BatchSnapshot): BatchRequest {
  const size = Number(batchSize.value);
  const req: BatchRequest = {
    text: snap.inlineText,
    mode: currentMode(),
    // Outside pipeline mode the field is disabled and the server ignores it.
    batch_size: Number.isInteger(size) && size >= 1 && size <= 100000 ? size : 1000,
    on_error: $<HTMLSelectElement>('on-error').value as 'continue' | 'stop',
    simulated_rtt_ms: Number(rtt.value),
  };
  if ($<HTMLInputElement>('resp3').checked) req.resp3 = true;
  return req;
}

function renderSummary(res: BatchResponse) {
  const s = res.summary;
  const n = (x: number | undefined) => (x ?? 0).toLocaleString('en-US');
  const totalMs = s.total_us / 1000;
  const perSec = s.commands_per_sec ?? (s.total_us > 0 ? (s.commands * 1e6) / s.total_us : 0);
  const items: [string, string, string][] = [
    ['mode', s.mode ?? currentMode(), 'mode'],
    ['commands', n(s.commands), 'commands'],
    ['ok', n(s.ok), 'ok'],
    ['errors', n(s.errors), 'errors'],
    ['not sent', n(s.not_sent), 'not_sent'],
    ['unknown', n(s.unknown), 'unknown'],
    ['round trips', n(s.round_trips), 'round_trips'],
    ['bytes sent', n(s.bytes_sent), 'bytes_sent'],
    ['bytes received', n(s.bytes_received), 'bytes_received'],
    ['total time', `${totalMs.toFixed(3)} ms`, 'total'],
    ['commands/s', Math.round(perSec).toLocaleString('en-US'), 'rate'],
  ];
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
  summaryEl.replaceChildren(dl);
}

/** A message in place of the summary; `source` tells what it is about (`controls`: a run control's value). */
function summaryMessage(text: string, kind: 'error' | 'info' = 'error', source = '', hint = '') {
  const p = document.createElement('p');
  p.className = `message ${kind}`;
  p.textContent = text;
  if (source) p.dataset.source = source;
  summaryEl.replaceChildren(p);
  if (hint) {
    const h = document.createElement('p');
    h.className = 'hint';
    h.textContent = hint;
    summaryEl.append(h);
  }
}

/** The page's advice for an API error, when the page knows better than the API's generic wording. */
function apiHint(err: ApiError, mode: Mode): string {
  // The API's own message suggests raising batch_size, which does nothing in sequential mode.
  if ((err.code === 'invalid_rtt' && /batch timeout/.test(err.message)) || err.code === 'batch_timeout') return budgetHint(mode);
  return '';
}

/** Marks `input` invalid with `message` in the summary; editing any control takes both away. */
function showControlError({ input, message }: ControlError) {
  for (const i of [batchSize, rtt]) i.removeAttribute('aria-invalid');
  input.setAttribute('aria-invalid', 'true');
  summaryMessage(message, 'error', 'controls');
  input.focus();
}

function clearControlError() {
  for (const i of [batchSize, rtt]) i.removeAttribute('aria-invalid');
  if (summaryEl.querySelector('.message[data-source="controls"]')) summaryEl.replaceChildren();
}

async function main() {
  await loadWasm();
  const timeline = new Timeline($<HTMLCanvasElement>('timeline'), $<HTMLElement>('timeline-tip'));
  const table = new ResultsTable($<HTMLElement>('results'), $<HTMLElement>('detail'));
  timeline.set(null);
  /** No timeline or table of an earlier batch under a new error message. */
  const clearResults = () => {
    timeline.set(null);
    table.set(null, () => '');
  };
  const refuse = (message: string) => {
    clearResults();
    summaryMessage(message);
    return true;
  };

  let running = false;
  const run = async () => {
    if (running) return true;
    const snap = editors.snapshot();
    if (snap.respError) return refuse(`Fix the RESP view first: ${snap.respError}`);
    if (snap.inlineErrors > 0) return refuse('Fix the errors underlined in the inline view first.');
    if (snap.commands === 0) return refuse('Nothing to run: type a command, one per line.');
    const bad = controlError();
    if (bad) return clearResults(), showControlError(bad), true;
    const req = request(snap);
    running = true;
    runButton.disabled = true;
    runButton.setAttribute('aria-busy', 'true');
    summaryMessage(`Running ${snap.commands.toLocaleString('en-US')} commands…`, 'info');
    try {
      const res = await runBatch(req);
      const label = (i: number) => (i < snap.commands ? snap.inlineText.slice(snap.textFrom[i], snap.textTo[i]) : '');
      renderSummary(res);
      timeline.set({ results: res.results, totalUs: res.summary.total_us, label });
      table.set(res, label);
      showBanner('ok');
    } catch (e) {
      const err = e as ApiError;
      clearResults();
      summaryMessage(`Run failed: ${err.message}${err.code ? ` (${err.code})` : ''}`, 'error', 'api', apiHint(err, req.mode));
      if (err.status === 0) showBanner('api_down');
      else if (err.status === 503) showBanner('redis_down', err.message);
      else void refreshHealth();
    } finally {
      running = false;
      runButton.disabled = false;
      runButton.removeAttribute('aria-busy');
    }
    return true;
  };

  // Before running: a batch whose simulated RTT alone exceeds the server's
  // batch timeout is refused by the API; say so while the controls change.
  const warning = $<HTMLParagraphElement>('run-warning');
  let limits: ServerLimits | null = null;
  const updateWarning = () => {
    const size = Number(batchSize.value);
    const ms = Number(rtt.value);
    const text = limits && !controlError()
      ? budgetWarning(currentMode(), editors.snapshot().commands, size, ms, limits.batch_timeout_ms)
      : null;
    warning.hidden = !text;
    warning.textContent = text ?? '';
  };

  const runKeys = Prec.highest(keymap.of([{ key: 'Mod-Enter', run: () => (void run(), true) }]));
  const editors = createEditors({
    inlineParent: $('inline-editor'),
    respParent: $('resp-editor'),
    inlineStatus: $('inline-status'),
    respStatus: $('resp-status'),
    initial: sample('demo')!,
    extraKeys: runKeys,
  });
  // Expose for tests and the console.
  (window as unknown as { pipelab: unknown }).pipelab = { editors, run, wasm, respText };

  $<HTMLFormElement>('controls').addEventListener('submit', (e) => {
    e.preventDefault();
    void run();
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.defaultPrevented) {
      e.preventDefault();
      void run();
    }
  });
  for (const b of document.querySelectorAll<HTMLButtonElement>('.presets button')) {
    b.addEventListener('click', () => {
      rtt.value = b.dataset.rtt ?? '0';
      clearControlError();
      syncControls();
    });
  }
  rtt.addEventListener('input', syncControls);
  for (const r of document.querySelectorAll('input[name="mode"]')) r.addEventListener('change', syncControls);
  // A fixed value takes its stale "must be …" message away.
  $<HTMLFormElement>('controls').addEventListener('input', clearControlError);
  $<HTMLFormElement>('controls').addEventListener('change', clearControlError);
  $<HTMLSelectElement>('sample').addEventListener('change', (e) => {
    const select = e.target as HTMLSelectElement;
    const text = sample(select.value);
    if (text !== null) editors.setInline(text);
    select.value = '';
  });
  syncControls();
  editors.onChange(updateWarning);
  const form = $<HTMLFormElement>('controls');
  form.addEventListener('input', updateWarning);
  form.addEventListener('change', updateWarning);
  form.addEventListener('click', (e) => {
    if ((e.target as HTMLElement).closest('.presets button')) updateWarning();
  });
  void fetchLimits().then((l) => {
    limits = l;
    updateWarning();
  });
  // Tutorial, compare and sweep views, share bar; restores a permalink.
  await mountTutorial({ editors });

  await refreshHealth();
  setInterval(() => {
    if (document.visibilityState === 'visible') void refreshHealth();
  }, 5000);
}

main().catch((e) => {
  showBanner('api_down');
  banner.textContent = `The playground failed to start: ${(e as Error).message}`;
  console.error(e);
});
