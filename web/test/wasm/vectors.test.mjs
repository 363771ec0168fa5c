// Every acceptance vector through the wasm module (docs/wasm.md, docs/cli.md#acceptance-vectors).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { wasm, vectors, hex, fromHex } from './load.mjs';

const inline = vectors('inline.json');
const resp = vectors('resp.json');

test('vector files are not empty', () => {
  assert.ok(inline.length >= 10, `inline.json has ${inline.length} cases`);
  assert.ok(resp.length >= 20, `resp.json has ${resp.length} cases`);
});

for (const [i, c] of inline.entries()) {
  test(`inline vector ${i}: ${JSON.stringify(c.input)}`, () => {
    const r = wasm.inlineToResp(c.input);
    if (c.error) {
      assert.equal(r.commands, 0);
      assert.equal(r.resp.length, 0);
      assert.equal(r.errors.length, 1);
      const e = r.errors[0];
      assert.equal(e.line, 1);
      assert.ok(e.column >= 1 && e.column <= c.input.length + 1, `column ${e.column}`);
      assert.ok(e.message.length > 0);
    } else {
      assert.deepEqual(r.errors, []);
      assert.equal(r.commands, 1);
      assert.equal(hex(r.resp), c.resp_hex);
      // Round trip: RESP -> inline text -> the same RESP bytes.
      const back = wasm.respToInline(r.resp);
      assert.equal(back.error, undefined);
      assert.equal(back.commands, 1);
      assert.equal(hex(wasm.inlineToResp(back.text).resp), c.resp_hex);
    }
  });
}

for (const [i, c] of resp.entries()) {
  test(`resp vector ${i} (${c.expect}): ${JSON.stringify(c.input)}`, () => {
    const input = fromHex(c.input_hex);
    const r = wasm.decodeReplies(input);
    if (c.expect === 'values') {
      assert.deepEqual(r.values, c.values);
      assert.equal(r.consumed, input.length);
      assert.equal(r.incomplete, false);
      assert.equal(r.error, undefined);
    } else if (c.expect === 'error') {
      assert.ok(r.error, 'an error is reported');
      assert.equal(typeof r.error.offset, 'number');
      assert.ok(r.error.offset >= 0 && r.error.offset <= input.length, `offset ${r.error.offset}`);
      assert.ok(r.error.message.length > 0);
      assert.equal(r.incomplete, false);
    } else if (c.expect === 'incomplete') {
      assert.equal(r.incomplete, true);
      assert.equal(r.error, undefined);
      assert.ok(r.consumed < input.length);
    } else {
      assert.fail(`unknown expect ${c.expect}`);
    }
  });
}
