// Lesson 2: pipelining. The same batch written at once costs one round trip.
import { compare } from '../api/client.js';
import { timelines } from './timelines.js';
import type { Lesson } from './types.js';
import { count, el, fmtInt, fmtMs, fmtX, lines, metrics, rttSlider, verdict } from './ui.js';

const N = 1000;
const text = lines(N, (i) => `SET tut:l2:key:${i} value-${i}`);

export const lesson2: Lesson = {
  title: 'Pipelining: the whole batch in one round trip',
  claim: `Written at once, the same ${fmtInt(N)} SETs cost one round trip: at 1 ms RTT, ten times faster or more.`,
  text: `
    <p>A <b>pipeline</b> writes every command before reading any reply. Redis reads them from
    its socket buffer, runs them in order and writes the replies back; the client reads them
    all at the end. The network is crossed once each way for the whole batch, so the RTT is
    paid once instead of ${fmtInt(N)} times.</p>
    <p>This runs the batch of lesson 1 twice: sequentially, then as one pipeline
    (<code>/api/v1/compare</code>). With <i>same time axis</i> ticked, both timelines share the
    sequential run's time axis: the whole pipeline is the thin sliver at the left edge of its
    chart (drawn at least 2 pixels wide; at its true width it would be invisible). Untick it to
    give the pipeline its own axis: one block, every command sent at once, every reply read in
    one round trip. Nothing else changed: the same commands, the same replies.</p>`,
  build() {
    const rtt = rttSlider('l2-rtt', { max: 5, step: 0.1, value: 1 });
    const same = el('input', { type: 'checkbox', id: 'l2-same-axis', checked: '' });
    return {
      controls: el('div', {}, rtt.root, el('label', { class: 'check' }, same, ' same time axis')),
      example: () => ({ text, mode: 'pipeline', simulated_rtt_ms: rtt.value(), batch_size: 1000, on_error: 'continue' }),
      async run(out) {
        const ms = rtt.value();
        const res = await compare({ text, modes: ['pipeline'], batch_size: 1000, simulated_rtt_ms: ms, include_results: true });
        const seq = res.runs.find((r) => r.mode === 'sequential')!;
        const pipe = res.runs.find((r) => r.mode === 'pipeline')!;
        const speedup = pipe.speedup_vs_sequential ?? seq.summary.total_us / Math.max(1, pipe.summary.total_us);
        const label = (i: number) => `SET tut:l2:key:${i}`;
        out.replaceChildren(
          metrics([
            { key: 'sequential_us', label: 'sequential', value: seq.summary.total_us, text: `${fmtMs(seq.summary.total_us)} · ${count(seq.summary.round_trips, 'round trip')}` },
            { key: 'pipeline_us', label: 'pipeline', value: pipe.summary.total_us, text: `${fmtMs(pipe.summary.total_us)} · ${count(pipe.summary.round_trips, 'round trip')}` },
            { key: 'pipeline_round_trips', label: 'pipeline round trips', value: pipe.summary.round_trips, text: fmtInt(pipe.summary.round_trips) },
            { key: 'speedup', label: 'speedup', value: speedup, text: fmtX(speedup) },
          ]),
          verdict(
            pipe.summary.round_trips === 1 && (ms < 1 || speedup >= 10),
            `At ${ms} ms RTT the pipeline took ${fmtMs(pipe.summary.total_us)} in ${count(pipe.summary.round_trips, 'round trip')}, ${fmtX(speedup)} faster than ${fmtMs(seq.summary.total_us)} sequentially.`,
          ),
        );
        const runs = [
          { title: `sequential: ${fmtMs(seq.summary.total_us)}`, results: seq.results ?? [], totalUs: seq.summary.total_us, label },
          { title: `pipeline: ${fmtMs(pipe.summary.total_us)}`, sharedTitle: `pipeline: ${fmtMs(pipe.summary.total_us)} (the sliver at the left edge)`, results: pipe.results ?? [], totalUs: pipe.summary.total_us, label },
        ];
        let shown = timelines(runs, same.checked);
        out.append(shown);
        // Toggling the axis redraws this run's timelines.
        same.onchange = () => {
          const next = timelines(runs, same.checked);
          shown.replaceWith(next);
          shown = next;
        };
      },
    };
  },
};
