// Lesson 6: read-then-write. A pipeline cannot use an earlier reply; the
// answers are WATCH + MULTI/EXEC (optimistic: detect and retry) and a Lua
// script (EVAL: the read and the write run inside Redis, atomically).
import { batch, type BatchResponse } from '../api/client.js';
import type { Lesson } from './types.js';
import { el, fmtMs, verdict } from './ui.js';

const KEY = 'tut:l6:counter';
const RTT = 40;
const START = 10;
const SCRIPT = `EVAL "local v = tonumber(redis.call('GET', KEYS[1]) or '0') redis.call('SET', KEYS[1], v * 2) return v * 2" 1 ${KEY}`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
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

function step(title: string, body: string, attrs: Record<string, string>): HTMLElement {
  return el('div', { class: 'step', ...attrs }, el('h4', {}, title), el('p', {}, body));
}

export const lesson6: Lesson = {
  n: 6,
  title: 'Read, then write',
  claim: 'A pipeline cannot use an earlier reply, and a read-then-write over two round trips loses concurrent updates; WATCH + MULTI/EXEC detects them, a Lua script prevents them.',
  text: `
    <p>Task: double a counter. The value to write depends on the value read. In a pipeline
    every command is written before any reply comes back, so <code>SET counter ?</code> has to be
    written before <code>GET counter</code> has answered: a pipeline cannot do it.</p>
    <p>Doing it in two round trips (GET, compute, SET) works alone but leaves a window: another
    client's <code>INCR</code> between your GET and your SET is overwritten — a <b>lost update</b>.</p>
    <p><b>WATCH</b> + MULTI/EXEC closes the window optimistically: <code>WATCH counter</code>,
    <code>GET counter</code>, then <code>MULTI</code>, <code>SET counter 2v</code>, <code>EXEC</code>.
    If anyone changed the counter after WATCH, EXEC returns null and runs nothing; you read again and retry.</p>
    <p>A <b>Lua script</b> (<code>EVAL</code>) moves the read and the write into Redis: one round trip,
    and no other command runs while a script runs.</p>
    <p>Each step runs on your Redis with ${RTT} ms RTT; the "other client" is a second batch on its own connection.
    pipelab runs each batch on a connection of its own, so the page reads the counter first and then sends
    <code>WATCH</code>, <code>GET</code>, <code>MULTI</code>, <code>SET</code>, <code>EXEC</code> as one sequential batch with the value it computed;
    a real client does the GET after WATCH on the same connection and computes in between. What EXEC does when the
    key changed after WATCH is the same either way, and that is what this step measures.</p>`,
  build() {
    return {
      example: () => ({ text: [`SET ${KEY} ${START}`, `WATCH ${KEY}`, `GET ${KEY}`, 'MULTI', `SET ${KEY} ${2 * START}`, 'EXEC', SCRIPT, `GET ${KEY}`].join('\n'), mode: 'sequential', batch_size: 1, on_error: 'continue', simulated_rtt_ms: RTT }),
      async run(out) {
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

        // (c) WATCH + MULTI/EXEC, in sequential mode on one connection. Attempt 1: the other
        // client writes while we are between WATCH and EXEC. Attempt 2: retry, alone.
        await resetCounter();
        const v1 = await counter();
        const watched = (x: number) => [`WATCH ${KEY}`, `GET ${KEY}`, 'MULTI', `SET ${KEY} ${2 * x}`, 'EXEC'].join('\n');
        const attempt1 = batch({ text: watched(v1), mode: 'sequential', simulated_rtt_ms: RTT });
        await sleep(2.5 * RTT);
        await otherIncr();
        const a1 = await attempt1;
        const v2 = await counter();
        const a2 = await batch({ text: watched(v2), mode: 'sequential', simulated_rtt_ms: RTT });
        const afterWatch = await counter();
        const exec1 = reply(a1, 4);
        const exec2 = reply(a2, 4);

        // (d) EVAL, with the other client's INCR sent while the script is on its way.
        await resetCounter();
        const script = batch({ text: SCRIPT, mode: 'pipeline', simulated_rtt_ms: RTT });
        await sleep(RTT / 4);
        await otherIncr();
        const s = await script;
        const afterScript = await counter();
        const scriptOk = afterScript === 2 * START + 1 || afterScript === 2 * (START + 1);

        out.replaceChildren(
          step('Pipeline', `SET was sent at ${fmtMs(setSent)}, GET's reply arrived at ${fmtMs(getReply)}: the write left before the value it depends on.`, { 'data-metric': 'pipeline_order', 'data-value': String(getReply - setSent) }),
          step('Two round trips', `Read ${v}, the other client incremented to ${v + 1}, we wrote ${2 * v}: counter = ${lost}. The increment is lost.`, { 'data-metric': 'lost_update', 'data-value': String(lost) }),
          step(
            'WATCH + MULTI/EXEC',
            `Attempt 1 (the other client wrote after WATCH): EXEC returned ${exec1?.type === 'null' ? 'null — nothing ran' : JSON.stringify(exec1?.value)}. ` +
              `Retry: read ${v2}, EXEC returned ${exec2?.type === 'array' ? 'its replies — committed' : exec2?.type}: counter = ${afterWatch} (= 2 × ${v2}).`,
            { 'data-metric': 'watch', 'data-exec1': exec1?.type ?? '', 'data-exec2': exec2?.type ?? '', 'data-value': String(afterWatch), 'data-expected': String(2 * v2) },
          ),
          step('Lua script (EVAL)', `The script returned ${String(reply(s, 0)?.value)}; with the other client's INCR, counter = ${afterScript}: both updates kept (2 × ${START} + 1 or 2 × (${START} + 1)).`, { 'data-metric': 'script', 'data-value': String(afterScript) }),
          verdict(
            setSent <= getReply && lost === 2 * v && exec1?.type === 'null' && exec2?.type === 'array' && afterWatch === 2 * v2 && scriptOk,
            `Lost update: ${lost} instead of ${2 * v + 1} or more; WATCH caught the conflict and the retry wrote ${afterWatch}; the script kept both updates (${afterScript}).`,
          ),
        );
      },
    };
  },
};
