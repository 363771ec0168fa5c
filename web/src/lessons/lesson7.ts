// Lesson 7: mass insertion. Generate the RESP bytes (what redis-cli --pipe
// and `pipelab run` read) instead of inline commands.
import { inlineToResp } from '../wasm.js';
import { download } from '../export/download.js';
import { batch } from '../api/client.js';
import type { Lesson } from './types.js';
import { el, fmtInt, fmtMs, lines, metrics, slider, verdict } from './ui.js';

const tricky = 'SET tut:l7:tricky "two words, a \\"quote\\" and a\\nnewline"';

export const lesson7: Lesson = {
  title: 'Mass insertion: generate RESP',
  claim: 'For bulk loads, write the commands as RESP and stream them in large pipelines: redis-cli --pipe or pipelab run.',
  text: `
    <p>To load a lot of data, do not send commands one by one (lesson 1), and do not type them
    as inline text either. Generate the <b>RESP</b> bytes a client would send — each command a
    multibulk: <code>*3\\r\\n$3\\r\\nSET\\r\\n$…</code> — into a file and stream it:</p>
    <pre>redis-cli --pipe &lt; data.resp
pipelab run data.resp --mode pipeline --batch-size 10000</pre>
    <p>Why RESP beats inline: every argument carries its length, so any byte — spaces, quotes,
    newlines, binary — goes through untouched, with no quoting rules to get wrong (an inline
    line is split on spaces and needs <code>"…"</code> with escapes); Redis reads a bulk string by its
    length instead of scanning for separators; and the file is exactly what goes on the wire,
    so <code>redis-cli --pipe</code> only has to copy it and count the replies.</p>
    <p>The run below converts the batch to RESP in your browser (the same codec as the server),
    lets you download it, and runs it as a pipeline with batches of 10,000.</p>`,
  build() {
    const n = slider({ id: 'l7-n', label: 'Commands', min: 1000, max: 100000, step: 1000, value: 20000, unit: 'SETs' });
    const text = () => lines(n.value(), (i) => `SET tut:l7:key:${i} value-${i}`);
    return {
      controls: n.root,
      example: () => ({ text: text(), mode: 'pipeline', batch_size: 10000, on_error: 'continue', simulated_rtt_ms: 0 }),
      async run(out) {
        const inline = text();
        const enc = inlineToResp(inline);
        const inlineBytes = new TextEncoder().encode(inline).length;
        const trickyResp = inlineToResp(tricky);
        const res = await batch({ text: inline, mode: 'pipeline', batch_size: 10000, results: 'errors' });
        const s = res.summary;
        const cps = s.commands_per_sec ?? (s.commands * 1e6) / Math.max(1, s.total_us);
        const dl = el('button', { type: 'button', class: 'download-resp' }, `Download ${fmtInt(enc.resp.length)} bytes of RESP`);
        dl.addEventListener('click', () => download('tut-mass-insert.resp', enc.resp, 'application/octet-stream'));
        // The first two commands, one per line, CR LF shown as \r\n.
        const firstTwo = enc.commands >= 2 ? enc.resp.subarray(0, enc.respEnd[1]) : enc.resp.subarray(0, 80);
        const preview = new TextDecoder().decode(firstTwo).replace(/\r\n/g, '\\r\\n').replace(/\\r\\n\*/g, '\\r\\n\n*');
        const trickyText = new TextDecoder().decode(trickyResp.resp).replace(/\r\n/g, '\\r\\n').replace(/\n(?!$)/g, '\\n');
        out.replaceChildren(
          metrics([
            { key: 'commands', label: 'commands', value: s.commands, text: fmtInt(s.commands) },
            { key: 'inline_bytes', label: 'as inline text', value: inlineBytes, text: `${fmtInt(inlineBytes)} bytes` },
            { key: 'resp_bytes', label: 'as RESP', value: enc.resp.length, text: `${fmtInt(enc.resp.length)} bytes` },
            { key: 'round_trips', label: 'round trips', value: s.round_trips, text: fmtInt(s.round_trips) },
            { key: 'total_us', label: 'total', value: s.total_us, text: fmtMs(s.total_us) },
            { key: 'commands_per_sec', label: 'commands/s', value: cps, text: fmtInt(cps) },
          ]),
          el('p', {}, 'The start of the RESP file:'),
          el('pre', { class: 'resp-preview' }, preview + '…'),
          el('p', {}, 'An argument with spaces, quotes and a newline, inline (quoted, escaped) and as RESP (length-prefixed; CR LF and LF shown as \\r\\n and \\n):'),
          el('pre', { class: 'resp-preview' }, `${tricky}\n→ ${trickyText}`),
          dl,
          verdict(
            s.errors === 0 && s.commands === n.value() && s.round_trips === Math.ceil(n.value() / 10000),
            `${fmtInt(s.commands)} SETs in ${fmtInt(s.round_trips)} round trips and ${fmtMs(s.total_us)}: ${fmtInt(cps)} commands/s. The RESP file is ${fmtInt(enc.resp.length)} bytes, ${Math.round((100 * enc.resp.length) / inlineBytes)}% of the inline text's size, and needs no escaping.`,
          ),
        );
      },
    };
  },
};
