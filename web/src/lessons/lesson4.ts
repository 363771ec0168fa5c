// Lesson 4: errors inside a pipeline. A failing command answers with an error
// reply at its index; the others run; nothing is thrown.
import { batch, type BatchResponse } from '../api/client.js';
import type { Lesson } from './types.js';
import { el, table, verdict } from './ui.js';

const text = ['SET tut:l4:greeting hello', 'INCR tut:l4:greeting', 'SET tut:l4:after still-ran', 'GET tut:l4:after'].join('\n');
const reset = 'DEL tut:l4:greeting tut:l4:after';

/** The three runs: what `on_error` and the batch size change. */
const RUNS = [
  { key: 'continue', title: 'on_error: continue', on_error: 'continue' as const, batch_size: 1000 },
  { key: 'stop-one-write', title: 'on_error: stop, all 4 in one write', on_error: 'stop' as const, batch_size: 1000 },
  { key: 'stop-batch-1', title: 'on_error: stop, batch size 1', on_error: 'stop' as const, batch_size: 1 },
];

function replyText(r: BatchResponse['results'][number]): string {
  if (!r.reply) return '—';
  const v = r.reply.value ?? r.reply.base64;
  return r.reply.type === 'null' ? '(nil)' : String(v);
}

export const lesson4: Lesson = {
  title: 'Errors inside a pipeline',
  claim: 'A command that fails inside a pipeline returns an error reply at its own index; the commands after it still run, and nothing is thrown.',
  text: `
    <p><code>INCR</code> on a key that holds <code>hello</code> fails:
    <code>ERR value is not an integer or out of range</code>. In a pipeline this is just the
    reply at that command's index. Redis does not stop, the connection does not fail, and the
    HTTP status is 200: the error is data. A client library that "throws on error" usually
    raises only when you read that reply, after every other command has run.</p>
    <p>To fail loudly, check every reply, or ask pipelab to <b>stop</b> at the first error
    (<code>on_error: stop</code>): it writes no further batches. What stop cannot do is undo:
    commands before the error already ran, and so did every command that was in the same
    write as the failing one, because they were on the wire before its error came back.
    Only a smaller batch size narrows that window; only a transaction or a script
    (lessons 5 and 6) changes what "all or nothing" means.</p>`,
  build() {
    return {
      example: () => ({ text, mode: 'pipeline', batch_size: 1000, on_error: 'continue', simulated_rtt_ms: 0 }),
      async run(out) {
        const results: Array<{ key: string; title: string; res: BatchResponse; after: string }> = [];
        for (const r of RUNS) {
          await batch({ text: reset, mode: 'pipeline' });
          const res = await batch({ text, mode: 'pipeline', on_error: r.on_error, batch_size: r.batch_size });
          const check = await batch({ text: 'GET tut:l4:after', mode: 'pipeline' });
          results.push({ ...r, res, after: check.results[0]?.reply?.type === 'null' ? '(nil)' : String(check.results[0]?.reply?.value) });
        }
        const cmds = text.split('\n');
        const rows = cmds.map((c, i) => [
          el('code', {}, c),
          ...results.map((r) => {
            const x = r.res.results[i];
            return el('span', { class: `status ${x?.status}`, 'data-run': r.key, 'data-index': String(i), 'data-status': x?.status ?? '' }, `${x?.status ?? '?'}${x?.status === 'not_sent' ? '' : `: ${replyText(x!)}`}`);
          }),
        ]);
        rows.push([el('i', {}, 'afterwards, GET tut:l4:after'), ...results.map((r) => el('span', { 'data-run': r.key, 'data-after': r.after }, r.after))]);
        const [cont, stopOne, stopB1] = results;
        const statuses = (r: (typeof results)[number]) => r.res.results.map((x) => x.status).join(',');
        out.replaceChildren(
          table(['command', ...results.map((r) => r.title)], rows, { 'data-table': 'errors' }),
          verdict(
            statuses(cont) === 'ok,error,ok,ok' && statuses(stopOne) === 'ok,error,ok,ok' && statuses(stopB1) === 'ok,error,not_sent,not_sent',
            `continue: the error stayed at index 1 (HTTP 200, ${cont.res.summary.errors} error, ${cont.res.summary.ok} ok). ` +
              `stop with everything in one write: the ${stopOne.res.results.slice(2).filter((x) => x.status === 'ok').length} commands after the error still ran — they were on the wire before its reply. ` +
              `stop with batch size 1: ${stopB1.res.summary.not_sent ?? 0} not sent, but index 0's SET is not undone.`,
          ),
        );
      },
    };
  },
};
