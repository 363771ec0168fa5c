// Benchmark (not a test): decodeReplies (wasm) vs npm redis-parser 3.0.0 on
// the same mixed stream of small replies. Prints replies/s for each.
//   node bench/decode.bench.mjs [replies=200000] [rounds=7]
import { createRequire } from 'node:module';
import { wasm } from '../test/wasm/load.mjs';

const require = createRequire(import.meta.url);
const Parser = require('redis-parser');

const n = Number(process.argv[2] ?? 200000);
const rounds = Number(process.argv[3] ?? 21);

// A mix like a pipeline of everyday commands: OK, integers, short bulks, nulls, errors, small arrays.
const kinds = [
  '+OK\r\n',
  ':1234\r\n',
  '$5\r\nhello\r\n',
  '$11\r\nvalue:12345\r\n',
  '$-1\r\n',
  ':-7\r\n',
  '-ERR value is not an integer or out of range\r\n',
  '*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n',
];
const parts = [];
for (let i = 0; i < n; i++) parts.push(kinds[i % kinds.length]);
const buf = Buffer.from(parts.join(''), 'latin1');
const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.length);

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

function once(fn) {
  const t = process.hrtime.bigint();
  const got = fn();
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (got !== n) throw new Error(`decoded ${got} replies, expected ${n}`);
  return ms;
}

const decodeWasm = () => wasm.decodeReplies(bytes).values.length;
const decodeParser = () => {
  let count = 0;
  const p = new Parser({ returnReply: () => count++, returnError: () => count++ });
  p.execute(buf);
  return count;
};

// Interleaved rounds so that load from other processes hits both alike.
once(decodeWasm);
once(decodeParser);
const wasmRuns = [];
const parserRuns = [];
for (let r = 0; r < rounds; r++) {
  wasmRuns.push(once(decodeWasm));
  parserRuns.push(once(decodeParser));
}
const wasmMs = median(wasmRuns);
const parserMs = median(parserRuns);
const wasmBest = Math.min(...wasmRuns);
const parserBest = Math.min(...parserRuns);

const rate = (ms) => Math.round((n / ms) * 1000);
console.log(`stream: ${n} replies, ${buf.length} bytes; ${rounds} interleaved rounds (median, best)`);
console.log(`wasm decodeReplies  : ${wasmMs.toFixed(1)} ms (best ${wasmBest.toFixed(1)}), ${rate(wasmMs).toLocaleString('en-US')} replies/s`);
console.log(`redis-parser 3.0.0  : ${parserMs.toFixed(1)} ms (best ${parserBest.toFixed(1)}), ${rate(parserMs).toLocaleString('en-US')} replies/s`);
console.log(`ratio (wasm / redis-parser replies/s): median ${(parserMs / wasmMs).toFixed(2)}x, best ${(parserBest / wasmBest).toFixed(2)}x`);
