// Lesson "your application": point a real application at `pipelab doctor`
// (backend/src/doctor/) and read what it says about the application's round
// trips; the run replays the doctor's example, a redis-py loop of SETs, here
// sequentially and as one pipeline, and checks the doctor's predicted saving
// `(n − 1) × RTT` against the measured one.
import { compare } from '../api/client.js';
import type { Lesson } from './types.js';
import { count, el, fmtInt, fmtMs, lines, metrics, rttSlider, verdict } from './ui.js';

const N = 1000;
const text = lines(N, (i) => `SET tut:app:user:${i} x`);
/** The measured saving must reach this share of the predicted one for the claim to hold. */
const SHARE = 0.9;

export const lessonApp: Lesson = {
  title: 'Your application: ask the doctor',
  claim: 'pipelab doctor, put between your application and Redis, finds the loops that should be pipelines, and the time a pipeline saves is (n − 1) × RTT.',
  text: `
    <p>The lessons before this one measured batches typed here. Your own code is the real question: does it
    pipeline? Client libraries do not say, and <code>MONITOR</code> shows commands but not round
    trips. <code>pipelab doctor</code> is a proxy that decodes both directions and groups the
    commands into <b>flights</b> (the commands written before a reply came back: one round trip each):</p>
    <pre>pipelab doctor --listen 127.0.0.1:6380 --upstream redis://127.0.0.1:6379 --rtt 0.5 --ui 127.0.0.1:8081</pre>
    <p>Then point the application at port 6380 instead of 6379 (<code>REDIS_URL=redis://127.0.0.1:6380</code>,
    or the port in your client's settings) and use it as usual. Every byte is forwarded untouched; keys
    are kept only as patterns (<code>user:42</code> → <code>user:*</code>), values never. Set <code>--rtt</code>
    to the round-trip time between your application and its production Redis: the doctor runs next to
    Redis on loopback, so it computes savings at that RTT rather than measuring them.</p>
    <p>The example: a redis-py loop, one <code>set</code> per call.</p>
    <pre>import redis
r = redis.Redis(port=6380)          # the doctor, not Redis
for i in range(1000):
    r.set(f"user:{i}", "x")         # waits for each reply</pre>
    <p>Each <code>set</code> waits for its reply before the next one is written: 1,000 flights of
    depth 1, written back to back (within <code>--think-time-us</code>, 50 µs by default, of the previous
    reply: the loop did not compute the next command from the reply). That is a <b>missed pipeline</b>;
    with <code>--json</code> the doctor prints, when the run ends:</p>
    <pre>{"type":"missed_pipeline","connection":1,"commands":1000,"pattern":"SET user:*",
 "description":"SET user:* ×1000 sequential","rtt_ms":0.5,"saving_ms":499.5,…}</pre>
    <p><code>saving_ms</code> is (1000 − 1) × 0.5 ms: a pipeline sends the 1,000 commands in one round
    trip instead of 1,000. Without <code>--json</code> it prints a line a second (connections, commands/s,
    round trips/s, mean depth, missed pipelines, saving) and a summary at the end, with the depth
    histogram; with <code>--ui</code> the page at <code>http://127.0.0.1:8081/</code> shows each
    connection's flights on a timeline and lists the missed pipelines, each with <i>open in
    playground</i>, which opens its shape here as a batch on the Compare view. The fix in redis-py:
    <code>p = r.pipeline(transaction=False)</code>, <code>p.set(…)</code> in the loop, then
    <code>p.execute()</code>; run through the doctor again, the 1,000 commands go in a few deep flights (as redis-py writes them) and no missed pipeline is reported.
    MULTI/EXEC blocks, WATCH loops and a connection's set-up (HELLO, AUTH, SELECT) are never reported.</p>
    <p>The run below replays the loop's shape here, sequentially and as one pipeline, at the RTT you
    choose (the doctor's <code>--rtt</code>), and checks the doctor's prediction against the measured saving.</p>`,
  build() {
    const rtt = rttSlider('lapp-rtt', { max: 2, step: 0.1, value: 0.5 });
    return {
      controls: rtt.root,
      example: () => ({ text, mode: 'sequential', batch_size: N, on_error: 'continue', simulated_rtt_ms: rtt.value() }),
      async run(out) {
        const ms = rtt.value();
        const res = await compare({ text, modes: ['pipeline'], batch_size: N, simulated_rtt_ms: ms });
        const seq = res.runs.find((r) => r.mode === 'sequential')!;
        const pipe = res.runs.find((r) => r.mode === 'pipeline')!;
        const predictedUs = (seq.summary.commands - 1) * ms * 1000;
        const savedUs = seq.summary.total_us - pipe.summary.total_us;
        const holds = ms > 0 && savedUs >= SHARE * predictedUs;
        out.replaceChildren(
          metrics([
            { key: 'commands', label: 'commands', value: seq.summary.commands, text: fmtInt(seq.summary.commands) },
            { key: 'sequential_us', label: 'sequential (the loop)', value: seq.summary.total_us, text: `${fmtMs(seq.summary.total_us)} · ${count(seq.summary.round_trips, 'round trip')}` },
            { key: 'pipeline_us', label: 'one pipeline', value: pipe.summary.total_us, text: `${fmtMs(pipe.summary.total_us)} · ${count(pipe.summary.round_trips, 'round trip')}` },
            { key: 'saved_us', label: 'measured saving', value: savedUs, text: fmtMs(savedUs) },
            { key: 'predicted_us', label: `doctor's saving_ms at ${ms} ms RTT`, value: predictedUs, text: fmtMs(predictedUs) },
          ]),
          verdict(
            holds,
            holds
              ? `The pipeline saved ${fmtMs(savedUs)}, at least ${SHARE * 100}% of the (n − 1) × RTT = ${fmtMs(predictedUs)} the doctor would report for this loop.`
              : `The pipeline saved ${fmtMs(savedUs)}, less than ${SHARE * 100}% of the (n − 1) × RTT = ${fmtMs(predictedUs)} predicted${ms > 0 ? ' (a busy server or machine adds time to the pipeline too)' : ': at 0 ms RTT there is no round trip to save'}.`,
          ),
        );
      },
    };
  },
};
