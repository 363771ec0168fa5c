// Lesson "your application": point a real application at `pipelab doctor`
// (doctor/src/) and read what it says about the application's round
// trips. When this server runs a doctor (`pipelab serve --doctor-listen`,
// GET /api/v1/info's `doctor`), a live panel polls its summary while the
// lesson is on screen, at the lesson's RTT; otherwise it says how to run one.
// Either way the run replays the doctor's example, a redis-py loop of SETs,
// here sequentially and as one pipeline, and checks the doctor's predicted
// saving `(n − 1) × RTT` against the measured one.
import { apiFetch, compare, errorOf, fetchInfo } from '../api/client.js';
import { playgroundLink } from '../doctor/playgroundLink.js';
import type { ConnectionFlights, UiSummary } from '../doctor/types.js';
import { FlightLog, missedList } from '../doctor/views.js';
import type { Lesson } from './types.js';
import { count, el, fmtInt, fmtMs, lines, metrics, rttSlider, verdict } from './ui.js';

const N = 1000;
const text = lines(N, (i) => `SET tut:app:user:${i} x`);
/** The measured saving must reach this share of the predicted one for the claim to hold. */
const SHARE = 0.9;
/** How often the live panel asks the doctor, and asks /info again while it cannot be read. */
const POLL_MS = 1000;
const INFO_RETRY_MS = 5000;

async function getJson<T>(path: string): Promise<T> {
  const res = await apiFetch(path, { cache: 'no-store' });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

/** `listen` as an application reaches it: an any-address bind (`0.0.0.0`, `[::]`) by this page's host. */
function reachable(listen: string): string {
  const m = /^(0\.0\.0\.0|\[::\]):(\d+)$/.exec(listen);
  return m ? `${location.hostname}:${m[2]}` : listen;
}

/**
 * The doctor of this server, live: "point your application at HOST:PORT",
 * the totals, the missed pipelines (saving at `rtt()` ms, why each was
 * judged independent) and each connection's flights, redrawn each second
 * while the panel is on screen. Without a doctor: how to run one locally.
 * `data-state`: asking, live, none (no doctor), unknown (/info unreadable).
 */
function livePanel(rtt: () => number): HTMLElement {
  const head = el('p', { class: 'message info' }, 'Asking this server whether a doctor is listening…');
  const totals = el('div', { class: 'doctor-totals', 'aria-live': 'polite' });
  const missed = el('div', { class: 'doctor-missed' });
  const conns = el('div', { class: 'doctor-timelines' });
  const panel = el('section', { id: 'lapp-live', class: 'doctor-live', 'data-state': 'asking', 'aria-label': 'Your application, live' }, head, totals, missed, conns);
  const log = new FlightLog((c, since) => getJson<ConnectionFlights>(`api/v1/doctor/flights?connection=${c}&since=${since}`).catch(() => null));
  let listen: string | null = null;
  const none = () => {
    panel.dataset.state = 'none';
    head.className = 'doctor-none';
    head.innerHTML = `No doctor is listening on this server (a public sandbox never opens one). To watch your own
      application live in this lesson, run pipelab on your machine with a doctor beside it:
      <code>scripts/run.sh --doctor-listen 127.0.0.1:6380</code> (or <code>pipelab serve --doctor-listen 127.0.0.1:6380</code>),
      open its page, and point the application at port 6380; or run <code>pipelab doctor</code> with its own page, as above.
      Meanwhile the run below replays the loop's shape.`;
  };
  const draw = async (u: UiSummary) => {
    const s = u.summary;
    const depth = s.flights ? s.commands / s.flights : 0;
    // The summary counts runs once they end; those going on are in `missed` only.
    const going = u.missed.filter((m) => m.going_on);
    const saving = s.saving_ms + going.reduce((a, m) => a + m.saving_ms, 0);
    // Everything built before anything is replaced: the totals never show
    // a run ended while its list still shows it going on.
    const list = await missedList(u.missed, (m) => playgroundLink(u.playground_url, m));
    const rows = await log.rows(s.recent_connections);
    totals.replaceChildren(
      metrics([
        { key: 'live_connections', label: 'connections', value: s.connections, text: fmtInt(s.connections) },
        { key: 'live_commands', label: 'commands', value: s.commands, text: fmtInt(s.commands) },
        { key: 'live_round_trips', label: 'round trips', value: s.flights, text: fmtInt(s.flights) },
        { key: 'live_mean_depth', label: 'mean depth', value: depth, text: depth.toLocaleString('en-US', { maximumFractionDigits: 2 }) },
        { key: 'live_missed', label: 'missed pipelines', value: s.missed_pipelines + going.length, text: `${fmtInt(s.missed_pipelines)} ended, ${fmtInt(going.length)} going on` },
        { key: 'live_saving_ms', label: `a pipeline would save, at ${s.rtt_ms} ms RTT`, value: saving, text: `${saving.toFixed(1)} ms` },
      ]),
    );
    missed.replaceChildren(list);
    conns.replaceChildren(...rows);
  };
  const tick = async (): Promise<number | null> => {
    // Only while the lesson is on screen (the tutorial tab shown, the page visible).
    if (!panel.isConnected || panel.offsetParent === null || document.visibilityState !== 'visible') return POLL_MS;
    if (listen === null) {
      const info = await fetchInfo();
      if (info === null) {
        panel.dataset.state = 'unknown';
        head.textContent = 'This server does not answer /api/v1/info yet (a token may be needed): asking again shortly.';
        return INFO_RETRY_MS;
      }
      if (!info.doctor) {
        none();
        return null;
      }
      listen = reachable(info.doctor.listen);
      panel.dataset.state = 'live';
      head.className = 'doctor-point';
      head.replaceChildren(
        'A doctor is listening beside this server. Point your application at ',
        el('code', { id: 'lapp-doctor-addr' }, listen),
        ` instead of Redis (REDIS_URL=redis://${listen}) and run it: its round trips appear here as it runs, savings at the RTT above.`,
      );
    }
    try {
      await draw(await getJson<UiSummary>(`api/v1/doctor/summary?rtt_ms=${rtt()}`));
      panel.dataset.state = 'live';
    } catch (e) {
      panel.dataset.state = 'unknown';
      totals.replaceChildren(el('p', { class: 'message error', role: 'alert' }, `The doctor does not answer: ${(e as Error).message}`));
    }
    return POLL_MS;
  };
  const loop = async () => {
    const next = await tick().catch(() => POLL_MS);
    if (next !== null) setTimeout(() => void loop(), next);
  };
  void loop();
  return panel;
}

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
    depth 1, none carrying bytes of an earlier reply (the loop did not compute the next command from a
    reply; <code>why</code> says what was compared), each written within <code>--think-time-us</code>
    (1 s by default) of the previous reply. That is a <b>missed pipeline</b>;
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
    <p>A <code>pipelab serve</code> started with <code>--doctor-listen 127.0.0.1:6380</code> (on your own machine:
    never with <code>--sandbox</code>) runs the doctor itself, forwarding to the Redis behind this page; the panel
    below then shows your application live, its savings at the RTT you choose here. The run below replays the
    loop's shape here, sequentially and as one pipeline, at that RTT (the doctor's <code>--rtt</code>), and
    checks the doctor's prediction against the measured saving.</p>`,
  build() {
    const rtt = rttSlider('lapp-rtt', { max: 2, step: 0.1, value: 0.5 });
    return {
      controls: rtt.root,
      panel: livePanel(rtt.value),
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
