// Lesson 8: auto-pipelining. N concurrent callers, each awaiting every reply
// before its next command (code written as if sequential), coalesced by the
// client into one write per event-loop tick, as ioredis's
// `enableAutoPipelining` and @upstash/redis do: most of the throughput of a
// pipeline with as many commands in flight, without changing the caller's
// code, for a little latency per call; and how far that is from one pipeline
// of everything.
import { batch, compare, type CompareRun } from '../api/client.js';
import { latencyOf, quantile } from '../api/figures.js';
import { bestRuns, repeat, timedVerdict } from './noise.js';
import type { Lesson } from './types.js';
import { count, el, fmtInt, fmtMs, fmtX, lines, metrics, rttSlider, slider, table, verdict } from './ui.js';

const N = 1000;
const text = lines(N, (i) => `SET tut:l8:key:${i} v${i}`);
/** Auto's throughput at least this share of a pipeline with as many commands in flight: "most of". */
const MOST = 0.5;

const rate = (r: CompareRun) => r.summary.commands_per_sec ?? (r.summary.commands * 1e6) / Math.max(1, r.summary.total_us);
const latencies = (r: CompareRun) => (r.results ?? []).map(latencyOf).filter((x): x is number => x != null);

export const lesson8: Lesson = {
  title: 'Auto-pipelining: concurrency without a pipeline',
  claim: 'Many callers that each await every reply, coalesced by the client into one write per tick, reach most of the throughput of a pipeline with as many commands in flight, without changing their code; each call pays a little latency for it. A single pipeline of everything is faster still.',
  text: `
    <p>Most application code is not written as a pipeline: a web handler calls
    <code>await redis.get(k)</code>, uses the answer, calls again. Each handler alone is
    sequential (lesson 1). But a server runs many handlers at once, and their commands are
    pending at the same moment. <b>Auto-pipelining</b> (ioredis's
    <code>enableAutoPipelining</code>, @upstash/redis's default) collects the commands issued during
    one tick of the event loop and writes them together: one write, one round trip, for whatever
    is pending.</p>
    <p>pipelab's <code>auto</code> mode simulates that: <i>clients</i> concurrent callers share the
    ${fmtInt(N)} SETs (round-robin), each sends one and awaits its reply before the next; every tick
    pipelab writes what is pending in one write. The run compares it with sequential (one caller) and
    with a pipeline of <i>clients</i> commands per batch — the same number of commands in flight,
    but written by hand as a pipeline — and with one pipeline of all ${fmtInt(N)}, and reports each
    call's latency, from the caller's call to its reply. The claim is about the first comparison:
    auto-pipelining cannot put more commands in flight than there are callers, so one pipeline of
    everything (one round trip in all) stays ahead by about as many round trips as it saves.</p>
    <p>What it costs: a call now waits for its tick and for the replies written before its own in the
    same round trip, so its latency is a little above one RTT; and with fewer concurrent callers
    there is less to coalesce (at 1 client, auto is sequential).</p>`,
  build() {
    const rtt = rttSlider('l8-rtt', { max: 5, step: 0.1, value: 1 });
    const clients = slider({ id: 'l8-clients', label: 'Concurrent callers', min: 1, max: 50, step: 1, value: 10, unit: 'clients' });
    return {
      controls: el('div', {}, rtt.root, clients.root),
      example: () => ({ text, mode: 'auto', simulated_rtt_ms: rtt.value(), batch_size: 1000, on_error: 'continue' }),
      async run(out) {
        const ms = rtt.value();
        const c = clients.value();
        // Twice: the two runs of each mode say how noisy the machine is.
        const reps = await repeat(2, () =>
          compare({ text, modes: ['auto', 'pipeline'], batch_size: c, clients: c, window_us: 0, simulated_rtt_ms: ms, include_results: true }),
        );
        const whole = await batch({ text, mode: 'pipeline', batch_size: N, simulated_rtt_ms: ms, results: 'none' });
        const { best, noise } = bestRuns(reps, ['sequential', 'auto', 'pipeline']);
        const seq = best.sequential!;
        const auto = best.auto!;
        const pipe = best.pipeline!;
        const wholeRate = whole.summary.commands_per_sec ?? 0;
        const a = auto.summary.auto;
        const share = rate(auto) / Math.max(1e-9, rate(pipe));
        const wholeShare = rate(auto) / Math.max(1e-9, wholeRate);
        const lat = (r: CompareRun, q: number) => quantile(latencies(r), q);
        const extraP50 = lat(auto, 0.5) - lat(seq, 0.5);
        const holds = c > 1 && share >= MOST && rate(auto) > 2 * rate(seq) && (a?.writes ?? N) < auto.summary.commands && wholeRate > rate(auto);
        out.replaceChildren(
          table(
            ['mode', 'total', 'round trips', 'commands/s', 'call latency p50', 'p99'],
            [
              ['sequential (1 caller)', seq],
              [`auto (${count(c, 'caller')})`, auto],
              [`pipeline (batch size ${fmtInt(c)})`, pipe],
            ].map(([label, r]) => {
              const run = r as CompareRun;
              return [label as string, fmtMs(run.summary.total_us), fmtInt(run.summary.round_trips), fmtInt(rate(run)), fmtMs(lat(run, 0.5)), fmtMs(lat(run, 0.99))];
            }).concat([[`pipeline (all ${fmtInt(N)} in one batch)`, fmtMs(whole.summary.total_us), fmtInt(whole.summary.round_trips), fmtInt(wholeRate), '—', '—']]),
            { 'data-table': 'auto' },
          ),
          metrics([
            { key: 'sequential_cps', label: 'sequential', value: rate(seq), text: `${fmtInt(rate(seq))}/s` },
            { key: 'auto_cps', label: 'auto', value: rate(auto), text: `${fmtInt(rate(auto))}/s` },
            { key: 'pipeline_cps', label: `pipeline, batch ${fmtInt(c)}`, value: rate(pipe), text: `${fmtInt(rate(pipe))}/s` },
            { key: 'whole_pipeline_cps', label: 'one pipeline of all', value: wholeRate, text: `${fmtInt(wholeRate)}/s` },
            { key: 'auto_share', label: `auto / pipeline of ${fmtInt(c)}`, value: share, text: `${Math.round(share * 100)}%` },
            { key: 'auto_whole_share', label: 'auto / one pipeline of all', value: wholeShare, text: `${Math.round(wholeShare * 100)}%` },
            { key: 'auto_writes', label: 'auto: writes', value: a?.writes ?? 0, text: fmtInt(a?.writes ?? 0) },
            { key: 'auto_mean_per_write', label: 'commands per write', value: a?.mean_commands_per_write ?? 0, text: `${(a?.mean_commands_per_write ?? 0).toFixed(1)} (max ${fmtInt(a?.max_commands_per_write ?? 0)})` },
            { key: 'sequential_p50_us', label: 'sequential call p50', value: lat(seq, 0.5), text: fmtMs(lat(seq, 0.5)) },
            { key: 'auto_p50_us', label: 'auto call p50', value: lat(auto, 0.5), text: fmtMs(lat(auto, 0.5)) },
            { key: 'auto_p99_us', label: 'auto call p99', value: lat(auto, 0.99), text: fmtMs(lat(auto, 0.99)) },
            { key: 'noise', label: 'repeat spread', value: noise, text: `${Math.round(noise * 100)}%` },
          ]),
          c === 1
            ? verdict(false, `With one caller there is nothing to coalesce: each write carried ${(a?.mean_commands_per_write ?? 0).toFixed(1)} commands, ${fmtInt(a?.writes ?? 0)} writes for ${fmtInt(auto.summary.commands)} calls, and auto ran as sequential does (${fmtInt(rate(auto))} against ${fmtInt(rate(seq))} commands/s). Auto-pipelining needs concurrent callers.`)
            : timedVerdict(
                holds,
                noise,
                `${fmtInt(c)} callers awaiting every reply, coalesced into ${fmtInt(a?.writes ?? 0)} writes (${(a?.mean_commands_per_write ?? 0).toFixed(1)} commands each): ${fmtInt(rate(auto))} commands/s, ` +
                  `${Math.round(share * 100)}% of a hand-written pipeline of ${fmtInt(c)} (${fmtInt(rate(pipe))}/s), the same number in flight, and ${fmtX(rate(auto) / Math.max(1e-9, rate(seq)))} sequential. ` +
                  `One pipeline of all ${fmtInt(N)} (${fmtInt(wholeRate)}/s, ${fmtInt(whole.summary.round_trips)} round trip) is ${fmtX(wholeRate / Math.max(1e-9, rate(auto)))} auto: auto reached ${Math.round(wholeShare * 100)}% of it. ` +
                  `Each call waited ${fmtMs(lat(auto, 0.5))} at the median (${extraP50 >= 0 ? '+' : '−'}${fmtMs(Math.abs(extraP50))} against one call alone), ${fmtMs(lat(auto, 0.99))} at p99.`,
              ),
        );
      },
    };
  },
};
