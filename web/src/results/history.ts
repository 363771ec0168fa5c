// A history of the playground's runs, kept in this browser (localStorage),
// to put two of them side by side later: a change of batch size, of RTT, of
// mode. Each entry holds the run's settings and its summary's figures, never
// the batch itself (it may be large): its first command names it.
import type { BatchRequest, Summary } from '../api/client.js';
import { el } from '../dom.js';
import './history.css';

/** The window event the playground sends after a run (playground/run.ts). */
export const RUN_DONE = 'pipelab-run-done';
/** The localStorage key. */
export const HISTORY_KEY = 'pipelab.history.v1';
/** Runs kept; the oldest go first. */
export const HISTORY_MAX = 50;

export interface HistoryEntry {
  id: string;
  at: number;
  first: string;
  mode: string;
  batch_size: number;
  simulated_rtt_ms: number;
  simulated_bandwidth_mbps: number | null;
  commands: number;
  errors: number;
  round_trips: number;
  total_us: number;
  commands_per_sec: number;
  bytes_sent: number;
  bytes_received: number;
}

export function loadHistory(): HistoryEntry[] {
  try {
    const v = JSON.parse(localStorage.getItem(HISTORY_KEY) ?? '[]');
    return Array.isArray(v) ? (v as HistoryEntry[]) : [];
  } catch {
    return [];
  }
}

function save(entries: HistoryEntry[]) {
  try {
    localStorage.setItem(HISTORY_KEY, JSON.stringify(entries.slice(-HISTORY_MAX)));
  } catch {
    /* storage full or refused (private mode): the history lives as long as the page */
  }
}

/** The entry for a run. */
export function entryOf(req: BatchRequest, s: Summary, first: string): HistoryEntry {
  return {
    id: `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`,
    at: Date.now(),
    first: first.length > 60 ? `${first.slice(0, 59)}…` : first,
    mode: s.mode ?? req.mode ?? 'pipeline',
    batch_size: s.batch_size,
    simulated_rtt_ms: s.simulated_rtt_ms,
    simulated_bandwidth_mbps: req.simulated_bandwidth_mbps ?? null,
    commands: s.commands,
    errors: s.errors,
    round_trips: s.round_trips,
    total_us: s.total_us,
    commands_per_sec: s.commands_per_sec ?? 0,
    bytes_sent: s.bytes_sent,
    bytes_received: s.bytes_received,
  };
}

const int = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (us: number) => `${(us / 1000).toLocaleString('en-US', { maximumFractionDigits: us < 10_000 ? 3 : 1 })} ms`;
const link = (e: HistoryEntry) => `${e.simulated_rtt_ms} ms RTT${e.simulated_bandwidth_mbps ? `, ${e.simulated_bandwidth_mbps} Mbit/s` : ''}`;

/** The figures compared, with which way is better (−1: less is better, +1: more is, 0: neither). */
const FIGURES: Array<{ key: string; label: string; text: (e: HistoryEntry) => string; value?: (e: HistoryEntry) => number; better?: number }> = [
  { key: 'first', label: 'batch', text: (e) => `${int(e.commands)} commands, from ${e.first}` },
  { key: 'mode', label: 'mode', text: (e) => e.mode },
  { key: 'batch_size', label: 'batch size', text: (e) => (e.mode === 'pipeline' ? int(e.batch_size) : '—'), value: (e) => e.batch_size, better: 0 },
  { key: 'link', label: 'link', text: link },
  { key: 'total_us', label: 'total time', text: (e) => ms(e.total_us), value: (e) => e.total_us, better: -1 },
  { key: 'round_trips', label: 'round trips', text: (e) => int(e.round_trips), value: (e) => e.round_trips, better: -1 },
  { key: 'commands_per_sec', label: 'commands/s', text: (e) => int(e.commands_per_sec), value: (e) => e.commands_per_sec, better: 1 },
  { key: 'errors', label: 'errors', text: (e) => int(e.errors), value: (e) => e.errors, better: -1 },
  { key: 'bytes', label: 'bytes sent / received', text: (e) => `${int(e.bytes_sent)} / ${int(e.bytes_received)}` },
];

/** B against A: "2.5× less", "same", or "" when there is nothing to divide. */
function ratio(a: number, b: number): string {
  if (a === b) return 'same';
  if (a <= 0 || b <= 0) return '';
  const r = b > a ? b / a : a / b;
  return `${r.toLocaleString('en-US', { maximumFractionDigits: r < 10 ? 2 : 0 })}× ${b > a ? 'more' : 'less'}`;
}

/** The panel: the runs (newest first), two chosen side by side, Clear. */
export function runHistory(): HTMLElement {
  const list = el('tbody', {});
  const listBox = el(
    'div',
    { class: 'scroll-box history-box' },
    el('table', { class: 'lesson-table', id: 'history-table' }, el('thead', {}, el('tr', {}, ...['compare', 'when', 'batch', 'mode', 'batch size', 'link', 'total', 'round trips'].map((h) => el('th', {}, h)))), list),
  );
  const side = el('div', { id: 'history-compare', 'aria-live': 'polite' });
  const status = el('p', { class: 'history-status', id: 'history-status' });
  const clear = el('button', { type: 'button', id: 'history-clear' }, 'Clear history');
  const chosen: string[] = [];

  const render = () => {
    const entries = loadHistory();
    for (let i = chosen.length - 1; i >= 0; i--) if (!entries.some((e) => e.id === chosen[i])) chosen.splice(i, 1);
    list.replaceChildren(
      ...[...entries].reverse().map((e) => {
        const box = el('input', { type: 'checkbox', 'data-id': e.id, 'aria-label': `Compare the run of ${new Date(e.at).toLocaleTimeString('en-GB')}` });
        box.checked = chosen.includes(e.id);
        box.addEventListener('change', () => {
          if (box.checked) {
            chosen.push(e.id);
            // Two at a time: a third choice replaces the oldest.
            if (chosen.length > 2) chosen.shift();
          } else chosen.splice(chosen.indexOf(e.id), 1);
          // The list stays as it is (focus stays on the box ticked): only the ticks and the comparison follow.
          for (const b of list.querySelectorAll<HTMLInputElement>('input[type="checkbox"]')) b.checked = chosen.includes(b.dataset.id!);
          showPair(entries);
        });
        return el(
          'tr',
          { 'data-id': e.id },
          el('td', {}, box),
          el('td', {}, new Date(e.at).toLocaleTimeString('en-GB')),
          el('td', {}, e.first),
          el('td', {}, e.mode),
          el('td', {}, e.mode === 'pipeline' ? int(e.batch_size) : '—'),
          el('td', {}, link(e)),
          el('td', { 'data-total-us': String(e.total_us) }, ms(e.total_us)),
          el('td', {}, int(e.round_trips)),
        );
      }),
    );
    listBox.hidden = entries.length === 0;
    clear.hidden = entries.length === 0;
    showPair(entries);
  };
  /** The status line and, with two runs ticked, them side by side. */
  const showPair = (entries: HistoryEntry[]) => {
    status.textContent =
      entries.length === 0
        ? 'No runs yet: each Run of the playground is kept here, in this browser, to compare later.'
        : `${int(entries.length)} run${entries.length === 1 ? '' : 's'} kept in this browser (the last ${HISTORY_MAX}). ${chosen.length === 2 ? 'Side by side below.' : 'Tick two to put them side by side.'}`;
    const pair = chosen.map((id) => entries.find((e) => e.id === id)!).sort((x, y) => x.at - y.at);
    if (pair.length !== 2) {
      side.replaceChildren();
      return;
    }
    const [a, b] = pair as [HistoryEntry, HistoryEntry];
    side.replaceChildren(
      el(
        'div',
        { class: 'scroll-box' },
        el(
          'table',
          { class: 'lesson-table', 'data-table': 'history-compare' },
          el('thead', {}, el('tr', {}, el('th', {}, ''), el('th', {}, `A: ${new Date(a.at).toLocaleTimeString('en-GB')}`), el('th', {}, `B: ${new Date(b.at).toLocaleTimeString('en-GB')}`), el('th', {}, 'B against A'))),
          el(
            'tbody',
            {},
            ...FIGURES.map((f) => {
              const [va, vb] = f.value ? [f.value(a), f.value(b)] : [null, null];
              const r = va !== null && vb !== null ? ratio(va, vb) : f.text(a) === f.text(b) ? 'same' : 'differs';
              return el('tr', { 'data-figure': f.key }, el('th', { scope: 'row' }, f.label), el('td', {}, f.text(a)), el('td', {}, f.text(b)), el('td', { 'data-ratio': r }, r));
            }),
          ),
        ),
      ),
    );
  };
  clear.addEventListener('click', () => {
    save([]);
    chosen.length = 0;
    render();
  });
  window.addEventListener(RUN_DONE, (ev) => {
    const { request, summary, first } = (ev as CustomEvent<{ request: BatchRequest; summary: Summary; first: string }>).detail;
    const entry = entryOf(request, summary, first);
    // A task of its own, after the run's results are drawn.
    setTimeout(() => {
      save([...loadHistory(), entry]);
      render();
    }, 0);
  });
  // Another tab's runs, as they are kept.
  window.addEventListener('storage', (ev) => ev.key === HISTORY_KEY && render());
  render();
  return el(
    'section',
    { id: 'history', class: 'history', 'aria-labelledby': 'history-title' },
    el('h2', { id: 'history-title' }, 'History ', el('span', { class: 'sub' }, 'your runs, kept in this browser: tick two to compare them')),
    status,
    listBox,
    side,
    el('p', {}, clear),
  );
}
