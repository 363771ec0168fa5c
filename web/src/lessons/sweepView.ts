// Sweep: commands/s by batch size for one command template (/api/v1/sweep)
// at any RTT; each run adds a line, so RTTs compare on one chart, with its
// cost model, knee and reply latency (charts/sweepModel.ts).
import { sweepModelChart, type ModelSeries } from '../charts/sweepModel.js';
import { modelFacts, shownKnee } from './modelFacts.js';
import { followPlaygroundRtt } from './playgroundRtt.js';
import { argvForApi, commandsOf } from '../export/fromText.js';
import { sweep } from '../api/client.js';
import type { SweepSettings } from '../permalink.js';
import { controls, el, errorBox, fmtInt, fmtMs, setInputs, table, view, type SettingsView } from './ui.js';

/** `"1, 10, 100"` -> [1, 10, 100]; throws naming the bad entry. */
export function parseSizes(s: string): number[] {
  const parts = s.split(/[\s,]+/).filter(Boolean);
  if (parts.length === 0) throw new Error('batch sizes: give at least one, e.g. 1, 10, 100');
  return parts.map((p, i) => {
    const n = Number(p.replace(/_/g, ''));
    if (!Number.isInteger(n) || n < 1) throw new Error(`batch sizes: entry ${i + 1} "${p}" is not a whole number >= 1`);
    return n;
  });
}

export function sweepView(): SettingsView<SweepSettings> {
  const command = el('input', { type: 'text', id: 'sweep-command', value: 'SET sweep:{i} x', size: '28', spellcheck: 'false' });
  const total = el('input', { type: 'number', id: 'sweep-total', min: '1', value: '10000' });
  const sizes = el('input', { type: 'text', id: 'sweep-sizes', value: '1, 10, 100, 1000, 10000', size: '24' });
  const rtt = el('input', { type: 'number', id: 'sweep-rtt', min: '0', step: 'any', value: '0.2' });
  const run = el('button', { type: 'button', id: 'sweep-run', class: 'run' }, 'Run sweep');
  const clear = el('button', { type: 'button', id: 'sweep-clear' }, 'Clear chart');
  const canvas = el('canvas', { id: 'sweep-chart' });
  const out = el('div', { id: 'sweep-out', 'aria-live': 'polite' });
  const series: ModelSeries[] = [];
  const root = view(
    'sweep',
    'Batch-size sweep',
    `<p>Sends <i>total</i> copies of one command (<code>{i}</code> becomes 0, 1, 2, …) as a
      pipeline, once per batch size, and plots commands per second beside the cost model
      <code>T(b) = ⌈N/b⌉·RTT + N·t_cmd</code> (dashed; <code>t_cmd</code> fitted to the run, ▲ the knee) and
      each batch size's reply latency p50 and p99 (dotted, right axis). The keys it creates are deleted
      afterwards. Run it at several RTTs: each run adds its lines.</p>`,
    controls(['Command ', command], ['Total ', total], ['Batch sizes ', sizes], ['RTT (ms) ', rtt], run, clear),
    el('div', { class: 'chart-box tall' }, canvas),
    out,
  );
  clear.addEventListener('click', () => {
    series.length = 0;
    sweepModelChart(canvas, series);
    out.replaceChildren();
  });
  run.addEventListener('click', async () => {
    run.disabled = true;
    out.replaceChildren(el('p', { class: 'message info' }, 'Running…'));
    try {
      let cmds;
      try {
        cmds = commandsOf(command.value);
      } catch (e) {
        throw new Error(`command: ${(e as Error).message}`);
      }
      if (cmds.length !== 1) throw new Error('command: type exactly one command, e.g. SET sweep:{i} x');
      const argv = argvForApi(cmds[0]!);
      const res = await sweep({ command: argv, total: Number(total.value), batch_sizes: parseSizes(sizes.value), simulated_rtt_ms: Number(rtt.value) });
      series.push({ label: `${String(argv[0])} · RTT ${res.simulated_rtt_ms} ms`, total: res.total, points: res.points, model: res.model, knee: shownKnee(res.points).knee });
      sweepModelChart(canvas, series);
      out.replaceChildren(
        ...modelFacts(res),
        table(
          ['batch size', 'round trips', 'total', 'commands/s', 'reply p50', 'reply p99', 'errors'],
          res.points.map((p) => [fmtInt(p.batch_size), fmtInt(p.round_trips), fmtMs(p.total_us), fmtInt(p.commands_per_sec), p.latency_us ? fmtMs(p.latency_us.p50) : '—', p.latency_us ? fmtMs(p.latency_us.p99) : '—', fmtInt(p.errors)]),
          { 'data-table': 'sweep' },
        ),
        el('p', { class: 'note' }, `Cleanup: ${fmtInt(res.cleanup.deleted)} keys deleted, ${fmtInt(res.cleanup.preexisting)} existed before and were kept.`),
      );
    } catch (e) {
      out.replaceChildren(errorBox(e));
    } finally {
      run.disabled = false;
    }
  });
  // As Compare's: the playground's RTT until one is set here (by hand or a permalink).
  const follow = followPlaygroundRtt(rtt);
  const inputs = { command, total, batch_sizes: sizes, simulated_rtt_ms: rtt };
  return {
    root,
    settings: () => ({ command: command.value, total: Number(total.value), batch_sizes: sizes.value, simulated_rtt_ms: Number(rtt.value) }),
    apply: (s) => {
      if (s.simulated_rtt_ms !== undefined) follow.own();
      setInputs(inputs, s);
    },
  };
}
