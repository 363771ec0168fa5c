// Lesson "bandwidth": lesson 3's curve on a link of limited bandwidth. Each
// direction sends its bytes one after another, so a batch pays its bytes
// on the wire besides its round trip; once a batch's bytes take longer to
// send than one RTT (the bandwidth-delay product), a bigger batch saves
// only the round trips that are left, a small share of the time.
import { sweepModelChart } from '../charts/sweepModel.js';
import { sweep, type SweepResponse } from '../api/client.js';
import { modelFacts, shownKnee } from './modelFacts.js';
import type { Lesson } from './types.js';
import { el, fmtInt, fmtMs, fmtX, metrics, slider, table, verdict } from './ui.js';

const SIZES = [10, 100, 1000, 2000];
const TOTAL = 2000;
/** Value bytes per SET: enough bytes per command for the wire to matter at a few Mbit/s. */
const VALUE = 500;
const TEMPLATE = ['SET', 'tut:l11:key:{i}', 'v'.repeat(VALUE)];
/** Past the bandwidth-delay product, 20× the batch must buy less than this… */
const FLAT = 2;

export const lessonBandwidth: Lesson = {
  title: 'Bandwidth: where a bigger batch stops helping',
  claim: 'On a link of limited bandwidth a batch also pays for its bytes on the wire: once a batch takes longer to send than one round trip (the bandwidth-delay product), a bigger batch buys little, where on an unlimited link it kept paying.',
  text: `
    <p>Lesson 3 paid one RTT per batch and nothing for the bytes: on loopback they cost almost nothing.
    A real link carries so many bits per second in each direction. pipelab's delay line can simulate that
    (<code>simulated_bandwidth_mbps</code>, the playground's "Simulated link" presets): each direction sends
    its bytes one after another at the bandwidth, and each byte arrives RTT/2 after it left.</p>
    <p>This sends ${fmtInt(TOTAL)} <code>SET</code>s of ${fmtInt(VALUE)}-byte values at batch sizes
    ${SIZES.map(fmtInt).join(', ')}, twice at the same RTT: once at the bandwidth below, once unlimited
    (<code>/api/v1/sweep</code>, keys deleted afterwards). The cost model gains a term:
    <code>T(b) = ⌈N/b⌉·RTT + N·(wire + t_cmd)</code>, where <code>wire</code> is a command's bytes
    (the larger of its request and its reply: in a pipeline the two directions overlap) at the bandwidth.
    The wire term does not shrink with the batch size. The batch whose bytes take one RTT to send is the
    <b>bandwidth-delay product</b> in commands: below it the round trips dominate and batching pays almost
    ×10 per ×10, above it the wire sets the pace.</p>`,
  build() {
    const rtt = slider({ id: 'bw-rtt', label: 'Simulated RTT', min: 1, max: 40, step: 1, value: 10, unit: 'ms' });
    const mbps = slider({ id: 'bw-mbps', label: 'Bandwidth', min: 1, max: 100, step: 1, value: 10, unit: 'Mbit/s' });
    return {
      controls: el('div', {}, rtt.root, mbps.root),
      example: () => ({
        text: Array.from({ length: TOTAL }, (_, i) => `SET tut:l11:key:${i} ${'v'.repeat(VALUE)}`).join('\n'),
        mode: 'pipeline',
        batch_size: 100,
        simulated_rtt_ms: rtt.value(),
        simulated_bandwidth_mbps: mbps.value(),
        on_error: 'continue',
      }),
      async run(out) {
        const ms = rtt.value();
        const bw = mbps.value();
        const limited = await sweep({ command: TEMPLATE, total: TOTAL, batch_sizes: SIZES, simulated_rtt_ms: ms, simulated_bandwidth_mbps: bw, repeats: 1 });
        const open = await sweep({ command: TEMPLATE, total: TOTAL, batch_sizes: SIZES, simulated_rtt_ms: ms, repeats: 1 });
        const cps = (r: SweepResponse, b: number) => r.points.find((p) => p.batch_size === b)?.commands_per_sec ?? 0;
        const [lo, hi] = [SIZES[1]!, SIZES[SIZES.length - 1]!];
        const gainLimited = cps(limited, hi) / Math.max(1e-9, cps(limited, lo));
        const gainOpen = cps(open, hi) / Math.max(1e-9, cps(open, lo));
        const m = limited.model;
        const bdp = m?.bdp_batch_size ?? 0;
        const canvas = el('canvas', { id: 'bw-chart' });
        const holds = gainLimited < FLAT && gainOpen > 2 * gainLimited;
        out.replaceChildren(
          el('div', { class: 'chart-box' }, canvas),
          table(
            ['batch size', `${bw} Mbit/s: total`, 'commands/s', 'unlimited: total', 'commands/s'],
            SIZES.map((b) => {
              const p = limited.points.find((x) => x.batch_size === b);
              const q = open.points.find((x) => x.batch_size === b);
              return [fmtInt(b), p ? fmtMs(p.total_us) : '—', fmtInt(cps(limited, b)), q ? fmtMs(q.total_us) : '—', fmtInt(cps(open, b))];
            }),
            { 'data-table': 'bandwidth' },
          ),
          ...modelFacts(limited),
          metrics([
            { key: 'bdp_batch_size', label: 'bandwidth-delay product', value: bdp, text: `${fmtInt(bdp)} commands` },
            { key: 'wire_us_per_cmd', label: 'wire per command', value: m?.wire_us_per_cmd ?? 0, text: `${(m?.wire_us_per_cmd ?? 0).toFixed(1)} µs (${fmtInt(Math.round(m?.bytes_per_cmd ?? 0))} bytes)` },
            { key: 'gain_limited', label: `batch ${fmtInt(lo)} → ${fmtInt(hi)}, ${bw} Mbit/s`, value: gainLimited, text: fmtX(gainLimited) },
            { key: 'gain_unlimited', label: `batch ${fmtInt(lo)} → ${fmtInt(hi)}, unlimited`, value: gainOpen, text: fmtX(gainOpen) },
          ]),
          el('div', {
            class: 'metrics-hidden',
            'data-metric': 'points',
            'data-value': JSON.stringify({ limited: limited.points.map((p) => [p.batch_size, p.commands_per_sec]), unlimited: open.points.map((p) => [p.batch_size, p.commands_per_sec]) }),
          }),
          verdict(
            holds,
            `At ${ms} ms RTT and ${bw} Mbit/s a command's ${fmtInt(Math.round(m?.bytes_per_cmd ?? 0))} bytes take ${(m?.wire_us_per_cmd ?? 0).toFixed(1)} µs on the wire, so one RTT holds about ${fmtInt(bdp)} commands. ` +
              `From batch ${fmtInt(lo)} to ${fmtInt(hi)} throughput rose ${fmtX(gainLimited)} on that link, against ${fmtX(gainOpen)} unlimited: ` +
              (holds ? 'past the bandwidth-delay product the wire, not the round trips, set the pace.' : `the bigger batch still paid (${fmtX(gainLimited)}, not under ${fmtX(FLAT)}), or the unlimited link did not gain twice as much.`),
          ),
        );
        sweepModelChart(canvas, [
          { label: `${bw} Mbit/s, RTT ${ms} ms`, total: TOTAL, points: limited.points, model: limited.model, knee: shownKnee(limited.points).knee },
          { label: `unlimited, RTT ${ms} ms`, total: TOTAL, points: open.points, model: open.model, knee: shownKnee(open.points).knee },
        ]);
      },
    };
  },
};
