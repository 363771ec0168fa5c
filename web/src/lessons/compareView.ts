// Compare: the playground's batch in all four modes (/api/v1/compare) at a
// chosen RTT, repeated: each mode's median total time and its spread, round
// trips as bar charts, speedups from the medians, a verdict per pair of modes
// that says when their spreads overlap, both sides' system calls per mode (./syscalls.ts).
import { modeBarChart } from '../charts/charts.js';
import type { PlaygroundState } from './bridge.js';
import { compare } from '../api/client.js';
import { batchSizeNote } from './batchSizeNote.js';
import { syscallTable } from './syscalls.js';
import { repeat } from './noise.js';
import type { CompareResponse } from '../api/client.js';
import type { CompareSettings } from '../permalink.js';
import { controls, count, el, errorBox, fmtInt, fmtMs, fmtX, setInputs, table, view, type SettingsView } from './ui.js';
import { followPlaygroundRtt } from './playgroundRtt.js';

/** Comparisons run per click: each mode's figure is the median of this many runs. */
export const REPEATS = 5;

type CompareRun = CompareResponse['runs'][number];

/** One mode over the repeats: its totals (µs, in run order), their median, fastest and slowest, and the run whose total is the median. */
export interface ModeStats {
  mode: string;
  totals: number[];
  median: number;
  min: number;
  max: number;
  medianRun: CompareRun;
}

/** Per mode (in the order of the first report), its runs' figures. */
export function modeStats(reps: CompareResponse[]): ModeStats[] {
  return (reps[0]?.runs ?? []).map((first) => {
    const runs = reps.map((r) => r.runs.find((x) => x.mode === first.mode)).filter((x): x is CompareRun => x !== undefined);
    const sorted = [...runs].sort((a, b) => a.summary.total_us - b.summary.total_us);
    const totals = runs.map((r) => r.summary.total_us);
    const mid = sorted.length >> 1;
    const median = sorted.length % 2 ? sorted[mid]!.summary.total_us : (sorted[mid - 1]!.summary.total_us + sorted[mid]!.summary.total_us) / 2;
    return { mode: first.mode, totals, median, min: sorted[0]!.summary.total_us, max: sorted[sorted.length - 1]!.summary.total_us, medianRun: sorted[mid]! };
  });
}

/**
 * What the repeats say, mode against mode: "N× faster" from the medians
 * only, and only where the spreads are apart; where they overlap, that the
 * runs cannot tell the two apart.
 */
export function compareVerdict(stats: ModeStats[]): HTMLElement {
  const items: HTMLElement[] = [];
  for (let i = 0; i < stats.length; i++) {
    for (let j = i + 1; j < stats.length; j++) {
      const [a, b] = [stats[i]!, stats[j]!];
      const overlap = a.min <= b.max && b.min <= a.max;
      const [fast, slow] = a.median <= b.median ? [a, b] : [b, a];
      const ratio = fast.median > 0 ? slow.median / fast.median : 1;
      const text = overlap
        ? `${a.mode} and ${b.mode}: their spreads overlap (${fmtMs(a.min)}–${fmtMs(a.max)} and ${fmtMs(b.min)}–${fmtMs(b.max)}), so these runs do not tell them apart (medians ${fmtMs(a.median)} and ${fmtMs(b.median)}).`
        : `${fast.mode} was ${fmtX(ratio)} faster than ${slow.mode} (medians ${fmtMs(fast.median)} and ${fmtMs(slow.median)}; every ${fast.mode} run faster than every ${slow.mode} run).`;
      items.push(el('li', { 'data-pair': `${a.mode}/${b.mode}`, 'data-overlap': String(overlap), ...(overlap ? {} : { 'data-faster': fast.mode, 'data-ratio': String(ratio) }) }, text));
    }
  }
  return el('div', { class: 'compare-verdict', 'data-verdict': 'compare' }, el('p', {}, `Mode against mode, over ${count(stats[0]?.totals.length ?? 0, 'run')} each:`), el('ul', {}, ...items));
}

export function compareView(state: PlaygroundState): SettingsView<CompareSettings> {
  const rtt = el('input', { type: 'number', id: 'compare-rtt', min: '0', step: 'any', value: '1' });
  const size = el('input', { type: 'number', id: 'compare-batch-size', min: '1', step: '1', value: '1000' });
  const clients = el('input', { type: 'number', id: 'compare-clients', min: '1', step: '1', value: '10' });
  const run = el('button', { type: 'button', id: 'compare-run', class: 'run' }, 'Run in all four modes');
  const out = el('div', { id: 'compare-out', 'aria-live': 'polite' });
  const root = view(
    'compare',
    'Compare modes',
    `<p>Runs the batch in the playground's editor sequentially, as a pipeline, as
      MULTI/EXEC and auto-pipelined (that many concurrent callers, each awaiting its replies,
      coalesced into one write per tick), each on its own connection, at the RTT below (the playground's,
      once you set that, unless you set this one). It does so ${REPEATS} times, the modes taking turns, and shows
      each mode's median and spread: one run on a busy machine can be off by a factor. The batch really
      runs ${REPEATS * 4} times: its side effects happen ${REPEATS * 4} times (INCRs of one key end at ${REPEATS * 4}). Below the
      charts, both sides' system calls per mode: pipelab's reads and writes, and Redis's.</p>`,
    controls(['RTT (ms) ', rtt], ['Pipeline batch size ', size], ['Auto clients ', clients], run),
    out,
  );
  run.addEventListener('click', async () => {
    const s = state.get();
    run.disabled = true;
    out.replaceChildren(el('p', { class: 'message info' }, `Running 1 of ${REPEATS}…`));
    try {
      // Repeated, one comparison after another, so that each mode's runs
      // alternate with the others' and a moment of a busy machine lands on one run, not on one mode.
      const reps = await repeat(REPEATS, async (i) => {
        if (i > 0) out.replaceChildren(el('p', { class: 'message info' }, `Running ${i + 1} of ${REPEATS}…`));
        return compare({
          text: s.text,
          modes: ['pipeline', 'transaction', 'auto'],
          batch_size: Number(size.value),
          clients: Number(clients.value),
          simulated_rtt_ms: Number(rtt.value),
          on_error: s.on_error,
          ...(s.resp3 ? { resp3: true } : {}),
        });
      });
      const stats = modeStats(reps);
      const runs = stats.map((m) => m.medianRun);
      const seq = stats.find((m) => m.mode === 'sequential');
      const timeCanvas = el('canvas', { id: 'compare-time-chart' });
      const rtCanvas = el('canvas', { id: 'compare-rt-chart' });
      const n = runs[0]?.summary.commands ?? 0;
      const modes = stats.length;
      const ran = el(
        'p',
        { class: 'compare-ran', 'data-metric': 'commands', 'data-value': String(n), 'data-repeats': String(REPEATS) },
        `Ran the playground's ${count(n, 'command')} in each of the ${count(modes, 'mode')}, ${count(REPEATS, 'time')} each, the modes taking turns (${fmtInt(n * modes * REPEATS)} in all) at ${Number(rtt.value).toLocaleString('en-US')} ms RTT, pipeline batch size ${fmtInt(Number(size.value))}, ${count(Number(clients.value), 'auto client')}. Each figure is the median of the ${REPEATS} runs, beside their spread (fastest–slowest).`,
      );
      out.replaceChildren(
        ran,
        el('div', { class: 'chart-row' }, el('div', { class: 'chart-box' }, timeCanvas), el('div', { class: 'chart-box' }, rtCanvas)),
        table(
          ['mode', 'total (median)', 'spread', 'round trips', 'errors', 'speedup vs sequential'],
          stats.map((m) => {
            const speedup = seq && m.median > 0 ? seq.median / m.median : null;
            return [
              m.mode,
              el('span', { 'data-mode': m.mode, 'data-totals': m.totals.join(','), 'data-median': String(m.median) }, fmtMs(m.median)),
              el('span', { 'data-mode': m.mode, 'data-spread': `${m.min},${m.max}` }, `${fmtMs(m.min)}–${fmtMs(m.max)}`),
              fmtInt(m.medianRun.summary.round_trips),
              fmtInt(m.medianRun.summary.errors),
              el('span', { 'data-mode': m.mode, 'data-speedup': String(speedup ?? '') }, speedup == null ? '—' : fmtX(speedup)),
            ];
          }),
          { 'data-table': 'compare' },
        ),
        compareVerdict(stats),
        syscallTable(runs),
        el('p', { class: 'note' }, `${reps[0]!.note} Repeated ${count(REPEATS, 'time')}: they happened ${REPEATS} times per mode. The system calls above are each mode's median run's.`),
        ...batchSizeNote(runs, Number(size.value)),
      );
      modeBarChart(timeCanvas, stats.map((m) => ({ mode: m.mode, value: m.median / 1000 })), { title: 'total time', unit: 'ms', less: 'faster', more: 'slower' });
      modeBarChart(rtCanvas, runs.map((r) => ({ mode: r.mode, value: r.summary.round_trips })), { title: 'round trips', unit: 'round trips', less: 'fewer', more: 'more' });
    } catch (e) {
      out.replaceChildren(errorBox(e));
      const err = e as { code?: string; message?: string };
      // The API's advice ("raise batch_size") cannot help the sequential run every comparison includes.
      if (err.code === 'invalid_rtt' && /batch timeout/.test(err.message ?? '')) {
        out.append(el('p', { class: 'hint' }, 'The comparison always includes the sequential run, one round trip per command: send fewer commands or pick a smaller RTT.'));
      }
    } finally {
      run.disabled = false;
    }
  });
  // A comparison at the link being looked at: the playground's RTT until one is set here.
  const follow = followPlaygroundRtt(rtt);
  const inputs = { simulated_rtt_ms: rtt, batch_size: size, clients };
  return {
    root,
    settings: () => ({ simulated_rtt_ms: Number(rtt.value), batch_size: Number(size.value), clients: Number(clients.value) }),
    apply: (s) => {
      if (s.simulated_rtt_ms !== undefined) follow.own();
      setInputs(inputs, s);
    },
  };
}
