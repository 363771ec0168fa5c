// Lesson 1: one round trip per command. 1 000 SETs sent one at a time take
// at least 1 000 × RTT, whatever Redis's own speed.
import { batch } from '../api/client.js';
import { timelines } from './timelines.js';
import type { Lesson } from './types.js';
import { fmtInt, fmtMs, lines, metrics, rttSlider, verdict } from './ui.js';

const N = 1000;
/** Commands shown in the zoomed timeline. */
const ZOOM = 20;
/** When the last of the zoomed commands got its reply, µs. */
const zoomUs = (results: { reply_us?: number | null; sent_us?: number | null }[]) =>
  Math.max(1, ...results.slice(0, ZOOM).map((r) => r.reply_us ?? r.sent_us ?? 0));
const text = lines(N, (i) => `SET tut:l1:key:${i} value-${i}`);
/** The median command's round trip (`reply_us − sent_us`), µs: what one
 * round trip took. The total over N also holds the machine's stalls,
 * which come and go from run to run. */
const medianRoundTripUs = (results: { reply_us?: number | null; sent_us?: number | null }[]) => {
  const us = results.flatMap((r) => (r.reply_us != null && r.sent_us != null ? [r.reply_us - r.sent_us] : [])).sort((a, b) => a - b);
  if (us.length === 0) return 0;
  const mid = us.length >> 1;
  return us.length % 2 ? us[mid] : (us[mid - 1] + us[mid]) / 2;
};

export const lesson1: Lesson = {
  title: 'A round trip per command',
  claim: `Sent one at a time, ${fmtInt(N)} commands take at least ${fmtInt(N)} × RTT, however fast Redis is.`,
  text: `
    <p>A client that waits for each reply before sending the next command pays one network
    <b>round trip</b> (RTT) per command. Redis needs a few microseconds for a SET; the
    network between you and Redis needs 0.2 ms inside one zone, 1–2 ms across zones,
    tens of ms across regions. So the wait dominates.</p>
    <p>This runs ${fmtInt(N)} <code>SET</code>s in <b>sequential</b> mode, with the RTT you choose
    added to each round trip by pipelab's delay line. Predicted: total ≈ ${fmtInt(N)} × RTT
    + Redis's own time. Move the slider and run again: the total follows the RTT, not Redis.</p>`,
  build() {
    const rtt = rttSlider('l1-rtt', { max: 5, step: 0.1, value: 1 });
    return {
      controls: rtt.root,
      example: () => ({ text, mode: 'sequential', simulated_rtt_ms: rtt.value(), batch_size: 1000, on_error: 'continue' }),
      async run(out) {
        const ms = rtt.value();
        const res = await batch({ text, mode: 'sequential', simulated_rtt_ms: ms });
        const s = res.summary;
        const floorUs = N * ms * 1000;
        const perCmdUs = medianRoundTripUs(res.results);
        out.replaceChildren(
          metrics([
            { key: 'commands', label: 'commands', value: s.commands, text: fmtInt(s.commands) },
            { key: 'round_trips', label: 'round trips', value: s.round_trips, text: fmtInt(s.round_trips) },
            // Asked beside achieved, as in the playground's summary: a machine that could not keep the RTT shows it here.
            { key: 'rtt_ms', label: 'simulated RTT', value: ms, text: s.achieved_rtt_ms != null ? `${ms} ms asked, ${s.achieved_rtt_ms.toFixed(3)} ms achieved` : `${ms} ms` },
            { key: 'predicted_us', label: `${fmtInt(N)} × RTT`, value: floorUs, text: fmtMs(floorUs) },
            { key: 'total_us', label: 'measured total', value: s.total_us, text: fmtMs(s.total_us) },
            { key: 'per_command_us', label: 'per command (median round trip)', value: perCmdUs, text: fmtMs(perCmdUs) },
            { key: 'overhead_us', label: 'beyond N × RTT', value: s.total_us - floorUs, text: fmtMs(Math.max(0, s.total_us - floorUs)) },
          ]),
          verdict(
            s.round_trips === s.commands && s.total_us >= floorUs * 0.98,
            `${fmtInt(s.round_trips)} round trips for ${fmtInt(s.commands)} commands; ${fmtMs(s.total_us)} measured against ${fmtMs(floorUs)} of pure waiting: ` +
              (floorUs > 0 ? `${Math.round((100 * floorUs) / Math.max(1, s.total_us))}% of the time was the round trips.` : 'at 0 ms only the loopback RTT remains, still one per command.'),
          ),
          // At 1,000 steps the staircase looks like a straight line: the first 20 show its steps.
          timelines([
            { title: `sequential, RTT ${ms} ms: a staircase, one step per round trip`, results: res.results, totalUs: s.total_us, label: (i) => `SET tut:l1:key:${i}` },
            { title: `the first ${ZOOM} commands, zoomed: each step is one round trip`, results: res.results.slice(0, ZOOM), totalUs: zoomUs(res.results), label: (i) => `SET tut:l1:key:${i}` },
          ], false),
        );
      },
    };
  },
};
