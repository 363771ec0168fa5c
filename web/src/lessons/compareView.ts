// Compare: the playground's batch in all four modes (/api/v1/compare) at a
// chosen RTT: total time and round trips as bar charts, speedup vs sequential,
// both sides' system calls per mode (./syscalls.ts).
import { modeBarChart } from '../charts/charts.js';
import type { PlaygroundState } from './bridge.js';
import { compare } from '../api/client.js';
import { batchSizeNote } from './batchSizeNote.js';
import { syscallTable } from './syscalls.js';
import type { CompareSettings } from '../permalink.js';
import { controls, count, el, errorBox, fmtInt, fmtMs, fmtX, setInputs, table, view, type SettingsView } from './ui.js';

export function compareView(state: PlaygroundState): SettingsView<CompareSettings> {
  const rtt = el('input', { type: 'number', id: 'compare-rtt', min: '0', step: 'any', value: '1' });
  const size = el('input', { type: 'number', id: 'compare-batch-size', min: '1', step: '1', value: '1000' });
  const clients = el('input', { type: 'number', id: 'compare-clients', min: '1', step: '1', value: '10' });
  const run = el('button', { type: 'button', id: 'compare-run', class: 'run' }, 'Run in all four modes');
  const out = el('div', { id: 'compare-out', 'aria-live': 'polite' });
  const root = view(
    'compare',
    'Compare modes',
    `<p>Runs the batch in the playground's editor once sequentially, once as a pipeline, once as
      MULTI/EXEC and once auto-pipelined (that many concurrent callers, each awaiting its replies,
      coalesced into one write per tick), each on its own connection, at the RTT below (the playground's,
      once you set that, unless you set this one). The batch really
      runs four times: its side effects happen four times (four INCRs of one key end at 4). Below the
      charts, both sides' system calls per mode: pipelab's reads and writes, and Redis's.</p>`,
    controls(['RTT (ms) ', rtt], ['Pipeline batch size ', size], ['Auto clients ', clients], run),
    out,
  );
  run.addEventListener('click', async () => {
    const s = state.get();
    run.disabled = true;
    out.replaceChildren(el('p', { class: 'message info' }, 'Running…'));
    try {
      const res = await compare({
        text: s.text,
        modes: ['pipeline', 'transaction', 'auto'],
        batch_size: Number(size.value),
        clients: Number(clients.value),
        simulated_rtt_ms: Number(rtt.value),
        on_error: s.on_error,
        ...(s.resp3 ? { resp3: true } : {}),
      });
      const timeCanvas = el('canvas', { id: 'compare-time-chart' });
      const rtCanvas = el('canvas', { id: 'compare-rt-chart' });
      const n = res.runs[0]?.summary.commands ?? 0;
      const ran = el(
        'p',
        { class: 'compare-ran', 'data-metric': 'commands', 'data-value': String(n) },
        `Ran the playground's ${count(n, 'command')} in each of the ${count(res.runs.length, 'mode')} (${fmtInt(n * res.runs.length)} in all) at ${Number(rtt.value).toLocaleString('en-US')} ms RTT, pipeline batch size ${fmtInt(Number(size.value))}, ${count(Number(clients.value), 'auto client')}.`,
      );
      out.replaceChildren(
        ran,
        el('div', { class: 'chart-row' }, el('div', { class: 'chart-box' }, timeCanvas), el('div', { class: 'chart-box' }, rtCanvas)),
        table(
          ['mode', 'total', 'round trips', 'commands/s', 'errors', 'speedup vs sequential'],
          res.runs.map((r) => [
            r.mode,
            fmtMs(r.summary.total_us),
            fmtInt(r.summary.round_trips),
            fmtInt(r.summary.commands_per_sec ?? 0),
            fmtInt(r.summary.errors),
            el('span', { 'data-mode': r.mode, 'data-speedup': String(r.speedup_vs_sequential ?? '') }, r.speedup_vs_sequential == null ? '—' : fmtX(r.speedup_vs_sequential)),
          ]),
          { 'data-table': 'compare' },
        ),
        syscallTable(res.runs),
        el('p', { class: 'note' }, res.note),
        ...batchSizeNote(res.runs, Number(size.value)),
      );
      modeBarChart(timeCanvas, res.runs.map((r) => ({ mode: r.mode, value: r.summary.total_us / 1000 })), { title: 'total time', unit: 'ms', less: 'faster', more: 'slower' });
      modeBarChart(rtCanvas, res.runs.map((r) => ({ mode: r.mode, value: r.summary.round_trips })), { title: 'round trips', unit: 'round trips', less: 'fewer', more: 'more' });
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
  // The RTT follows the playground's once that is set, until it is set here
  // (by hand or by a permalink): a comparison at the link being looked at.
  let ownRtt = false;
  rtt.addEventListener('input', () => (ownRtt = true));
  const playgroundRtt = document.getElementById('rtt') as HTMLInputElement | null;
  playgroundRtt?.addEventListener('input', () => {
    if (!ownRtt && playgroundRtt.value !== '') rtt.value = playgroundRtt.value;
  });
  const inputs = { simulated_rtt_ms: rtt, batch_size: size, clients };
  return {
    root,
    settings: () => ({ simulated_rtt_ms: Number(rtt.value), batch_size: Number(size.value), clients: Number(clients.value) }),
    apply: (s) => {
      if (s.simulated_rtt_ms !== undefined) ownRtt = true;
      setInputs(inputs, s);
    },
  };
}
