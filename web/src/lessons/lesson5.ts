// Lesson 5: pipeline vs MULTI/EXEC. A pipeline is not atomic: another
// client's commands run between its commands. MULTI/EXEC runs its commands
// with nothing in between; a queue-time error aborts it (EXECABORT), a
// run-time error does not roll back.
//
// "Another client": the API runs every batch on its own connection, so a
// second batch sent at the same time by the page is a second client.
import { batch, type BatchResponse, type Mode } from '../api/client.js';
import type { Lesson } from './types.js';
import { el, fmtInt, lines, table, verdict } from './ui.js';

const A = 2000;
const B = 40;
const RTT = 5;
const A_BATCH = 100;
const aText = lines(A, () => 'RPUSH tut:l5:log A');
const bText = lines(B, () => 'RPUSH tut:l5:log b');

/** Runs of equal letters: "AAAb" -> [["A",3],["b",1]]. */
function runs(items: string[]): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const x of items) {
    const last = out[out.length - 1];
    if (last && last[0] === x) last[1]++;
    else out.push([x, 1]);
  }
  return out;
}

/** The list as a strip of coloured runs, widths in proportion. */
function strip(items: string[], key: string): HTMLElement {
  const s = el('div', { class: 'strip', 'data-strip': key, role: 'img' });
  const r = runs(items);
  s.setAttribute('aria-label', r.map(([x, n]) => `${n}×${x}`).join(' '));
  for (const [x, n] of r) {
    const seg = el('span', { class: x === 'A' ? 'seg a' : 'seg b', title: `${n} × ${x === 'A' ? 'the batch under test' : 'the other client'}` });
    seg.style.flexGrow = String(x === 'A' ? n : n * 8);
    s.append(seg);
  }
  return s;
}

/** B entries strictly between the first and the last A: the other client's commands that ran inside the batch. */
function inside(items: string[]): number {
  const first = items.indexOf('A');
  const last = items.lastIndexOf('A');
  return first < 0 ? 0 : items.slice(first, last + 1).filter((x) => x !== 'A').length;
}

async function listOf(key: string): Promise<string[]> {
  const r = await batch({ text: `LRANGE ${key} 0 -1`, mode: 'pipeline' });
  const v = r.results[0]?.reply?.value;
  return Array.isArray(v) ? v.map((e: { value?: unknown }) => String(e.value)) : [];
}

/** The batch under test and, started first, the other client's batch, at the same time. */
async function interleave(mode: Mode): Promise<{ items: string[]; res: BatchResponse }> {
  await batch({ text: 'DEL tut:l5:log', mode: 'pipeline' });
  const other = batch({ text: bText, mode: 'sequential', simulated_rtt_ms: RTT });
  await new Promise((r) => setTimeout(r, 3 * RTT));
  const [res] = await Promise.all([batch({ text: aText, mode, batch_size: A_BATCH, simulated_rtt_ms: RTT }), other]);
  return { items: await listOf('tut:l5:log'), res };
}

const getValue = (r: BatchResponse, i: number) => {
  const rep = r.results[i]?.reply;
  return rep?.type === 'null' ? '(nil)' : String(rep?.value ?? '');
};

export const lesson5: Lesson = {
  title: 'Pipeline vs MULTI/EXEC',
  claim: 'A pipeline is not atomic: other clients run between its commands. MULTI/EXEC is: nothing runs inside it. Yet a transaction only aborts on queue-time errors; a run-time error does not roll back.',
  text: `
    <p>A pipeline saves round trips; it promises nothing about other clients. Redis serves
    every connection in turn, so between two of your pipeline's writes, and even inside
    one large write, another client's commands run. <code>MULTI</code> … <code>EXEC</code> queues
    your commands and runs them all at <code>EXEC</code>, with no other client's command in between.</p>
    <p><b>Experiment 1.</b> pipelab sends ${fmtInt(A)} × <code>RPUSH tut:l5:log A</code>
    (batch size ${A_BATCH}, ${RTT} ms RTT) while a second client — a second batch sent by this page at the
    same time, on its own connection — pushes ${B} × <code>b</code> one round trip at a time. The
    list records the order in which Redis ran them: blue is your batch, orange the other client.
    Once as a pipeline, once as a transaction.</p>
    <p><b>Experiment 2.</b> A command rejected while queueing (here <code>INCR</code> without a key:
    wrong number of arguments) makes <code>EXEC</code> answer <code>EXECABORT</code>: nothing runs.</p>
    <p><b>Experiment 3.</b> A command that fails only when it runs (<code>INCR</code> on a string) fails
    alone: the commands before and after it in the transaction are applied and stay applied.
    Redis has no rollback.</p>`,
  build() {
    return {
      example: () => ({ text: ['SET tut:l5:k original', 'MULTI', 'SET tut:l5:k changed', 'INCR', 'EXEC', 'GET tut:l5:k'].join('\n'), mode: 'pipeline', batch_size: 1000, on_error: 'continue', simulated_rtt_ms: 0 }),
      async run(out) {
        // 1. Interleaving.
        const p = await interleave('pipeline');
        const t = await interleave('transaction');
        const pIn = inside(p.items);
        const tIn = inside(t.items);
        // 2. EXECABORT.
        await batch({ text: 'SET tut:l5:k original\nDEL tut:l5:k2', mode: 'pipeline' });
        const abort = await batch({ text: 'SET tut:l5:k changed\nINCR\nSET tut:l5:k2 x', mode: 'transaction' });
        const afterAbort = await batch({ text: 'GET tut:l5:k\nEXISTS tut:l5:k2', mode: 'pipeline' });
        // 3. Run-time error.
        await batch({ text: 'SET tut:l5:k original\nSET tut:l5:s text\nDEL tut:l5:k2', mode: 'pipeline' });
        const rt = await batch({ text: 'SET tut:l5:k changed\nINCR tut:l5:s\nSET tut:l5:k2 x', mode: 'transaction' });
        const afterRt = await batch({ text: 'GET tut:l5:k\nEXISTS tut:l5:k2', mode: 'pipeline' });

        const statusCell = (r: BatchResponse, i: number, key: string) =>
          el('span', { class: `status ${r.results[i]?.status}`, 'data-exp': key, 'data-index': String(i), 'data-status': r.results[i]?.status ?? '' }, `${r.results[i]?.status} ${r.results[i]?.reply?.type === 'error' ? String(r.results[i]?.reply?.value) : ''}`);
        out.replaceChildren(
          el('h4', {}, 'Experiment 1: who ran in between?'),
          el('p', { 'data-metric': 'pipeline_inside', 'data-value': String(pIn) }, `pipeline: ${pIn} of the other client's ${B} commands ran inside your batch`),
          strip(p.items, 'pipeline'),
          el('p', { 'data-metric': 'transaction_inside', 'data-value': String(tIn) }, `MULTI/EXEC: ${tIn} ran inside (transaction ${t.res.transaction?.status ?? '?'})`),
          strip(t.items, 'transaction'),
          el('h4', {}, 'Experiment 2: a queue-time error'),
          table(['command', 'status'], ['SET tut:l5:k changed', 'INCR', 'SET tut:l5:k2 x'].map((c, i) => [el('code', {}, c), statusCell(abort, i, 'abort')]), { 'data-table': 'abort' }),
          el('p', { 'data-metric': 'abort', 'data-transaction': abort.transaction?.status ?? '', 'data-k': getValue(afterAbort, 0), 'data-k2': getValue(afterAbort, 1) },
            `transaction ${abort.transaction?.status ?? '?'}${abort.transaction?.message ? ` (${abort.transaction.message})` : ''}; afterwards tut:l5:k = ${getValue(afterAbort, 0)}, tut:l5:k2 exists: ${getValue(afterAbort, 1)}`),
          el('h4', {}, 'Experiment 3: a run-time error'),
          table(['command', 'status'], ['SET tut:l5:k changed', 'INCR tut:l5:s', 'SET tut:l5:k2 x'].map((c, i) => [el('code', {}, c), statusCell(rt, i, 'runtime')]), { 'data-table': 'runtime' }),
          el('p', { 'data-metric': 'runtime', 'data-transaction': rt.transaction?.status ?? '', 'data-k': getValue(afterRt, 0), 'data-k2': getValue(afterRt, 1) },
            `transaction ${rt.transaction?.status ?? '?'}; afterwards tut:l5:k = ${getValue(afterRt, 0)}, tut:l5:k2 exists: ${getValue(afterRt, 1)} — nothing was rolled back`),
          verdict(
            pIn > 0 && tIn === 0 && abort.transaction?.status === 'aborted' && getValue(afterAbort, 0) === 'original' && rt.transaction?.status === 'committed' && getValue(afterRt, 0) === 'changed',
            `Pipeline: ${pIn} foreign commands inside; MULTI/EXEC: ${tIn}. EXECABORT left tut:l5:k "${getValue(afterAbort, 0)}"; the run-time error left it "${getValue(afterRt, 0)}".`,
          ),
        );
      },
    };
  },
};
