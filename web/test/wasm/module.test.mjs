// The wasm module's exports beyond the vectors: spans, errors, round trips,
// exact large integers, redis-cli display.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wasm, bytes } from './load.mjs';
import { parseJsonExact, replyToJsonText } from '../../src/replyJson.js';

const utf8 = (s) => new TextEncoder().encode(s);
const text = (b) => new TextDecoder().decode(b);

test('inlineToResp: several lines, blank lines skipped, spans in UTF-16 and bytes', () => {
  const src = 'SET k v\n\nECHO "h€llo 😀"\r\nGET k';
  const r = wasm.inlineToResp(src);
  assert.equal(r.commands, 3);
  assert.deepEqual(r.errors, []);
  const want = '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n' +
    '*2\r\n$4\r\nECHO\r\n$12\r\nh€llo 😀\r\n' + '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n';
  assert.equal(text(r.resp), want);
  assert.equal(r.resp.length, utf8(want).length);
  for (const name of ['line', 'textStart', 'textEnd', 'respStart', 'respEnd', 'viewStart', 'viewEnd']) {
    assert.ok(r[name] instanceof Uint32Array && r[name].length === 3, name);
  }
  const cmd = (k) => [r.line[k], r.textStart[k], r.textEnd[k], r.respStart[k], r.respEnd[k]];
  // line, textStart, textEnd (UTF-16, line break excluded), respStart, respEnd
  assert.deepEqual(cmd(0), [1, 0, 7, 0, 27]);
  assert.equal(src.slice(cmd(1)[1], cmd(1)[2]), 'ECHO "h€llo 😀"');
  assert.equal(cmd(1)[0], 3);
  assert.equal(src.slice(cmd(2)[1], cmd(2)[2]), 'GET k');
  assert.equal(cmd(2)[0], 4);
  assert.equal(cmd(1)[3], 27);
  assert.equal(text(r.resp.subarray(cmd(2)[3], cmd(2)[4])), '*2\r\n$3\r\nGET\r\n$1\r\nk\r\n');
  // View positions: UTF-16 units of the text before, each CR LF counted once.
  const viewPos = (offset) => {
    const before = text(r.resp.subarray(0, offset));
    return before.length - (before.match(/\r\n/g) ?? []).length;
  };
  for (let k = 0; k < 3; k++) {
    assert.equal(r.viewStart[k], viewPos(r.respStart[k]), `viewStart[${k}]`);
    assert.equal(r.viewEnd[k], viewPos(r.respEnd[k]), `viewEnd[${k}]`);
  }
  assert.deepEqual([r.viewStart[1], r.viewEnd[1]], [20, 44]); // SET's 7 lines, then ECHO's 6: 18 units of text (h€llo 😀 is 8) and 6 line breaks
});

test('view positions: a byte that is not UTF-8 is one position, a 4-byte character two, a lone CR or LF one', () => {
  // ECHO with the bytes FF, F0 9F 98 80 (😀), CR, LF: its bulk string line is \xff😀\r\n + CR LF.
  const r = wasm.inlineToResp('ECHO "\\xff\\xf0\\x9f\\x98\\x80\\r"\nECHO "\\n"\nPING');
  assert.deepEqual(r.errors, []);
  assert.equal(r.commands, 3);
  // *2 CRLF $4 CRLF ECHO CRLF $6 CRLF: 2+1+2+1+4+1+2+1 = 14 positions; then FF (1) 😀 (2) CR (1), CR LF (1)
  assert.deepEqual([r.viewStart[0], r.viewEnd[0]], [0, 19]);
  // *2 $4 ECHO $1 lines: 14 positions; LF (1), CR LF (1)
  assert.deepEqual([r.viewStart[1], r.viewEnd[1]], [19, 35]);
  // respToInline gives the same positions for the same bytes, and the error's position.
  const back = wasm.respToInline(r.resp);
  assert.deepEqual(Array.from(back.viewEnd), Array.from(r.viewEnd));
  const stream = 'PING\r\n*1\r\n$9\r\nPING\r\n';
  const bad = wasm.respToInline(bytes(stream));
  assert.ok(bad.error);
  const crlfs = (stream.slice(0, bad.error.offset).match(/\r\n/g) ?? []).length;
  assert.equal(bad.error.pos, bad.error.offset - crlfs); // each CR LF before it counts once
});

test('inlineToResp: unbalanced quote reported at line, column and UTF-16 position; other lines still encoded', () => {
  const src = 'PING\nSET k "é😀 abc\nPING';
  const r = wasm.inlineToResp(src);
  assert.equal(r.commands, 2);
  assert.equal(r.errors.length, 1);
  const e = r.errors[0];
  assert.equal(e.line, 2);
  assert.equal(e.column, 7); // the opening quote
  assert.equal(src[e.pos], '"');
  assert.equal(e.offset, utf8('PING\nSET k ').length);
  assert.match(e.message, /quote/);
});

test('inlineToResp: closing quote followed by a character is an error', () => {
  const r = wasm.inlineToResp('ECHO "foo"bar');
  assert.equal(r.commands, 0);
  assert.equal(r.errors.length, 1);
  assert.equal(r.errors[0].line, 1);
});

test('respToInline: multibulk and inline requests, spans, round trip of binary arguments', () => {
  const argv = ['SET', 'k', '\u0000\xff bin"ary\r\n'];
  const enc = [`*${argv.length}\r\n`, ...argv.map((a) => `$${Buffer.from(a, 'latin1').length}\r\n${a}\r\n`)].join('');
  const stream = bytes(enc + 'PING\r\n');
  const r = wasm.respToInline(stream);
  assert.equal(r.error, undefined);
  assert.equal(r.commands, 2);
  const lines = r.text.split('\n');
  assert.equal(lines[1], 'PING');
  assert.deepEqual([r.respStart[0], r.respEnd[0]], [0, enc.length]);
  assert.deepEqual([r.respStart[1], r.respEnd[1]], [enc.length, enc.length + 6]);
  assert.equal(r.text.slice(r.textStart[0], r.textEnd[0]), lines[0]);
  // The inline text encodes back to the same argvs (the inline PING as a multibulk).
  const back = wasm.inlineToResp(r.text);
  assert.deepEqual(back.errors, []);
  assert.deepEqual(Array.from(back.resp), Array.from(bytes(enc + '*1\r\n$4\r\nPING\r\n')));
});

test('respToInline: truncated multibulk is an error with its byte offset; earlier commands kept', () => {
  const r = wasm.respToInline(bytes('PING\r\n*2\r\n$3\r\nGET\r\n'));
  assert.equal(r.commands, 1);
  assert.equal(r.text, 'PING\n');
  assert.ok(r.error);
  assert.match(r.error.message, /incomplete/);
  assert.equal(r.error.line, 2);
});

test('respToInline: bad bulk length names the byte', () => {
  const r = wasm.respToInline(bytes('*1\r\n$x\r\n'));
  assert.equal(r.commands, 0);
  assert.equal(r.error.offset, 4);
  assert.equal(r.error.column, undefined);
  assert.match(r.error.message, /bulk length/);
});

test('decodeReplies: integers beyond 2^53 are BigInt, others numbers, at any depth', () => {
  const r = wasm.decodeReplies(bytes(':9223372036854775807\r\n*2\r\n:-9223372036854775808\r\n:9007199254740991\r\n%1\r\n:9007199254740992\r\n#t\r\n'));
  assert.equal(r.error, undefined);
  assert.equal(r.values[0].value, 9223372036854775807n);
  assert.equal(r.values[1].value[0].value, -9223372036854775808n);
  assert.equal(r.values[1].value[1].value, 9007199254740991);
  assert.equal(typeof r.values[1].value[1].value, 'number');
  assert.equal(r.values[2].value[0][0].value, 9007199254740992n);
  assert.equal(r.values[2].value[0][1].value, true);
});

test('decodeReplies: values before a malformed one are kept; error offset is in the stream', () => {
  const r = wasm.decodeReplies(bytes('+OK\r\n:1\r\n:12a\r\n'));
  assert.equal(r.values.length, 2);
  assert.equal(r.consumed, 9);
  assert.ok(r.error.offset >= 9 && r.error.offset <= 13, `offset ${r.error.offset}`);
});

test('decodeReplies: RESP3 attributes, non-UTF-8 bulk as base64, doubles', () => {
  const r = wasm.decodeReplies(bytes('|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n$3\r\n\xff\x00\x01\r\n,-inf\r\n,0.25\r\n'));
  assert.equal(r.error, undefined);
  assert.deepEqual(r.values, [
    { type: 'bulk', value: 'hi', attributes: [[{ type: 'simple', value: 'ttl' }, { type: 'integer', value: 3600 }]] },
    { type: 'bulk', base64: '/wAB' },
    { type: 'double', value: '-inf' },
    { type: 'double', value: 0.25 },
  ]);
});

test('decodeReplies -> reply JSON -> replyToResp gives back the bytes (big integers included)', () => {
  const stream = ':9223372036854775807\r\n*3\r\n$1\r\na\r\n:-5\r\n_\r\n%1\r\n+k\r\n,1.5\r\n$3\r\n\xff\x00\x01\r\n';
  const r = wasm.decodeReplies(bytes(stream));
  const out = r.values.map((v) => Buffer.from(wasm.replyToResp(replyToJsonText(v))).toString('latin1')).join('');
  assert.equal(out, stream);
});

test('formatReply: redis-cli terminal format', () => {
  const v = wasm.decodeReplies(bytes('*3\r\n:9223372036854775807\r\n$1\r\na\r\n$-1\r\n')).values[0];
  assert.equal(wasm.formatReply(replyToJsonText(v)).trimEnd(), '1) (integer) 9223372036854775807\n2) "a"\n3) (nil)');
  assert.equal(wasm.formatReply('{"type":"simple","value":"OK"}').trimEnd(), 'OK');
  assert.equal(wasm.formatReply('{"type":"error","value":"ERR x"}').trimEnd(), '(error) ERR x');
  assert.throws(() => wasm.formatReply('{"type":"nope"}'), /nope/);
});

test('parseJsonExact keeps API integers exact', () => {
  const body = '{"results":[{"reply":{"type":"integer","value":9223372036854775807}},{"reply":{"type":"integer","value":12}},{"reply":{"type":"double","value":1234567890123456789.5}}]}';
  const r = parseJsonExact(body);
  assert.equal(r.results[0].reply.value, 9223372036854775807n);
  assert.equal(r.results[1].reply.value, 12);
  assert.equal(r.results[2].reply.value, 1234567890123456789.5);
  assert.equal(replyToJsonText(r.results[0].reply), '{"type":"integer","value":9223372036854775807}');
});

test('decodeReplies: a value needing the serializer fallback inside an aggregate, and values after it', () => {
  const r = wasm.decodeReplies(bytes('+before\r\n*3\r\n+a\r\n$1\r\n\xff\r\n:1\r\n%1\r\n$1\r\nk\r\n|1\r\n+ttl\r\n:1\r\n:2\r\n+after\r\n'));
  assert.equal(r.error, undefined);
  assert.deepEqual(r.values, [
    { type: 'simple', value: 'before' },
    { type: 'array', value: [{ type: 'simple', value: 'a' }, { type: 'bulk', base64: '/w==' }, { type: 'integer', value: 1 }] },
    { type: 'map', value: [[{ type: 'bulk', value: 'k' }, { type: 'integer', value: 2, attributes: [[{ type: 'simple', value: 'ttl' }, { type: 'integer', value: 1 }]] }]] },
    { type: 'simple', value: 'after' },
  ]);
});

test('decodeReplies: UTF-16 ranges of non-ASCII text, verbatim, big number, nan', () => {
  const r = wasm.decodeReplies(new Uint8Array(Buffer.from('$8\r\nh€😀\r\n+ok\r\n=10\r\ntxt:ü😀\r\n(-12345678901234567890\r\n,nan\r\n~1\r\n#f\r\n>1\r\n_\r\n')));
  assert.equal(r.error, undefined);
  assert.deepEqual(r.values, [
    { type: 'bulk', value: 'h€😀' },
    { type: 'simple', value: 'ok' },
    { type: 'verbatim', format: 'txt', value: 'ü😀' },
    { type: 'big_number', value: '-12345678901234567890' },
    { type: 'double', value: 'nan' },
    { type: 'set', value: [{ type: 'boolean', value: false }] },
    { type: 'push', value: [{ type: 'null' }] },
  ]);
});

test('minRoundTrips, modelUs, modelRate: the server\'s rules the page applies in advance', () => {
  assert.equal(wasm.minRoundTrips('sequential', 1000, 100, 10), 1000);
  assert.equal(wasm.minRoundTrips('pipeline', 1001, 100, 10), 11);
  assert.equal(wasm.minRoundTrips('transaction', 1000, 100, 10), 1);
  assert.equal(wasm.minRoundTrips('auto', 1000, 100, 3), 334);
  assert.throws(() => wasm.minRoundTrips('batch', 1, 1, 1), /unknown mode/);
  assert.equal(wasm.modelUs(0.5, 1, 2, 10000, 3), 3334 * 500 + 10000 * 3);
  assert.equal(wasm.modelRate(0.5, 0, 2, 10000, 10000), 10000 * 1e6 / 20500);
  assert.ok(Number.isNaN(wasm.modelRate(0, 0, -1, 100, 100)));
});
