// Lesson 6: read-then-write. A pipeline cannot use an earlier reply; the
// answers are WATCH + MULTI/EXEC (optimistic: detect and retry), run here as
// a real loop on a session (./optimistic.ts), and a Lua script (EVAL: the
// read and the write run inside Redis, atomically).
import { batch, type BatchResponse } from '../api/client.js';
import { DOUBLE_SCRIPT, keptAll, MAX_ATTEMPTS, scriptRun, watchLoop } from './optimistic.js';
import type { Lesson } from './types.js';
import { count, el, fmtInt, fmtMs, slider, table, verdict } from './ui.js';

const KEY = 'tut:l6:counter';
const RTT = 20;
const START = 10;
const SCRIPT = `EVAL ${DOUBLE_SCRIPT} 1 ${KEY}`;

const reply = (r: BatchResponse, i: number) => r.results[i]?.reply;
const intOf = (r: BatchResponse, i: number) => Number(reply(r, i)?.value);
async function counter(): Promise<number> {
  return intOf(await batch({ text: `GET ${KEY}`, mode: 'pipeline' }), 0);
}
async function resetCounter() {
  await batch({ text: `SET ${KEY} ${START}`, mode: 'pipeline' });
}
/** The other client: one INCR on its own connection. */
const otherIncr = () => batch({ text: `INCR ${KEY}`, mode: 'pipeline' });

const retryCount = (n: number) => `${fmtInt(n)} ${n === 1 ? 'retry' : 'retries'}`;

function step(title: string, body: string, attrs: Record<string, string>): HTMLElement {
  return el('div', { class: 'step', ...attrs }, el('h4', {}, title), el('p', {}, body));
}

export const lesson6: Lesson = {
  title: 'Read, then write',
  claim: 'A pipeline cannot use an earlier reply, and a read-then-write over two round trips loses concurrent updates; WATCH + MULTI/EXEC detects them and retries, a Lua script prevents them.',
  text: `
    <p>Task: double a counter. The value to write depends on the value read. In a pipeline
    every command is written before any reply comes back, so <code>SET counter ?</code> has to be
    written before <code>GET counter</code> has answered: a pipeline cannot do it.</p>
    <p>Doing it in two round trips (GET, compute, SET) works alone but leaves a window: another
    client's <code>INCR</code> between your GET and your SET is overwritten — a <b>lost update</b>.</p>
    <p><b>WATCH</b> + MULTI/EXEC closes the window optimistically. On one connection:
    <code>WATCH counter</code>, <code>GET counter</code>, compute <code>2v</code> in the client, then
    <code>MULTI</code>, <code>SET counter 2v</code>, <code>EXEC</code>. If anyone changed the counter after WATCH,
    EXEC returns null and runs nothing; the client reads again and retries:</p>
    <pre>for attempt in 1..${MAX_ATTEMPTS}:
    WATCH counter
    v = GET counter
    MULTI; SET counter 2v; r = EXEC
    if r is not null: break      # committed
    # null: someone wrote between WATCH and EXEC; nothing ran: retry</pre>
    <p>The run does exactly that on a <b>session</b> (<code>POST /api/v1/sessions</code>: a connection
    that outlives a batch, so the WATCH of one request holds for the next), with ${RTT} ms RTT. The
    "other client" is a request outside the session, on its own connection: in each of the first
    <i>N</i> attempts its <code>INCR</code> lands after our GET and before our EXEC. Every
    such attempt must fail, and the loop retries until one commits.</p>
    <p>A <b>Lua script</b> (<code>EVAL</code>) moves the read and the write into Redis: one round trip,
    no other command runs while a script runs, so there is nothing to detect and nothing to retry.
    Beside the loop, the same doubling as a script with the same <i>N</i> INCRs sent at the same time.</p>`,
  build() {
    const conflicts = slider({ id: 'l6-conflicts', label: "Other client's writes", min: 0, max: 5, step: 1, value: 2, unit: 'INCRs' });
    return {
      controls: conflicts.root,
      example: () => ({ text: [`SET ${KEY} ${START}`, `WATCH ${KEY}`, `GET ${KEY}`, 'MULTI', `SET ${KEY} ${2 * START}`, 'EXEC', SCRIPT, `GET ${KEY}`].join('\n'), mode: 'sequential', batch_size: 1, on_error: 'continue', simulated_rtt_ms: RTT }),
      async run(out) {
        const n = conflicts.value();
        // (a) In a pipeline, the SET leaves before the GET's reply arrives.
        await resetCounter();
        const piped = await batch({ text: `GET ${KEY}\nSET ${KEY} ${2 * START}`, mode: 'pipeline', simulated_rtt_ms: RTT });
        const setSent = piped.results[1]?.sent_us ?? 0;
        const getReply = piped.results[0]?.reply_us ?? 0;

        // (b) Two round trips, with the other client's INCR in the window.
        await resetCounter();
        const read = await batch({ text: `GET ${KEY}`, mode: 'pipeline', simulated_rtt_ms: RTT });
        const v = intOf(read, 0);
        await otherIncr();
        await batch({ text: `SET ${KEY} ${2 * v}`, mode: 'pipeline', simulated_rtt_ms: RTT });
        const lost = await counter();

        // (c) The optimistic-locking loop on a session.
        await resetCounter();
        const loop = await watchLoop(KEY, n, RTT);
        const afterLoop = await counter();
        const last = loop.attempts[loop.attempts.length - 1];
        const retries = loop.attempts.length - 1;
        const conflictsSeen = loop.attempts.filter((a) => a.exec === 'null').length;
        // Every failed attempt is one the other client wrote in; the commit used the value with all INCRs in it.
        const loopHolds = loop.committed && retries === n && conflictsSeen === n && last?.read === START + n && afterLoop === 2 * (START + n);

        // (d) The same with EVAL, the other client's INCRs sent at the same time.
        await resetCounter();
        const s = await scriptRun(KEY, n, RTT);
        const afterScript = await counter();
        const scriptHolds = keptAll(START, n, afterScript, s.wrote);

        const rows = loop.attempts.map((a) => [
          String(a.attempt),
          `WATCH, GET → ${a.read}`,
          a.other == null ? '—' : `INCR → ${a.other}`,
          `MULTI, SET ${a.wrote}, EXEC`,
          el('span', { 'data-attempt': String(a.attempt), 'data-exec': a.exec, class: a.exec === 'array' ? 'status ok' : 'status error' }, a.exec === 'array' ? 'committed' : a.exec === 'null' ? 'null: nothing ran, retry' : a.exec),
        ]);
        out.replaceChildren(
          step('Pipeline', `SET was sent at ${fmtMs(setSent)}, GET's reply arrived at ${fmtMs(getReply)}: the write left before the value it depends on.`, { 'data-metric': 'pipeline_order', 'data-value': String(getReply - setSent) }),
          step('Two round trips', `Read ${v}, the other client incremented to ${v + 1}, we wrote ${2 * v}: counter = ${lost}. The increment is lost.`, { 'data-metric': 'lost_update', 'data-value': String(lost) }),
          el('h4', {}, 'WATCH + MULTI/EXEC, retried until it commits (one session)'),
          table(['attempt', 'read', 'other client', 'write', 'EXEC'], rows, { 'data-table': 'watch-loop' }),
          el(
            'p',
            { 'data-metric': 'retries', 'data-value': String(retries), 'data-attempts': String(loop.attempts.length), 'data-committed': String(loop.committed), 'data-final': String(afterLoop), 'data-round-trips': String(loop.roundTrips) },
            `${retryCount(retries)} after ${count(conflictsSeen, 'conflict')}; committed ${last?.wrote ?? '?'} (= 2 × ${last?.read ?? '?'}) in attempt ${loop.attempts.length}: ${count(loop.roundTrips, 'round trip')}, ${fmtMs(loop.totalUs)} on the session. Counter = ${afterLoop}.`,
          ),
          el('h4', {}, 'The same with EVAL'),
          el(
            'p',
            { 'data-metric': 'script', 'data-value': String(afterScript), 'data-wrote': String(s.wrote), 'data-round-trips': String(s.roundTrips) },
            `The script wrote ${s.wrote} in ${count(s.roundTrips, 'round trip')} (${fmtMs(s.totalUs)}), no retry; with the other client's ${fmtInt(n)} INCR${n === 1 ? '' : 's'} (${s.others.join(', ') || 'none'}), counter = ${afterScript}: every update kept.`,
          ),
          verdict(
            setSent <= getReply && lost === 2 * v && loopHolds && scriptHolds,
            `Lost update: ${lost} instead of ${2 * v + 1} or more. WATCH caught ${count(conflictsSeen, 'conflict')} of ${fmtInt(n)} and the loop committed ${afterLoop} after ${retryCount(retries)} (${count(loop.roundTrips, 'round trip')}); the script kept every update (${afterScript}) in ${count(s.roundTrips, 'round trip')}.`,
          ),
        );
      },
    };
  },
};
