// argv <-> reply JSON (docs/reply-json.md). A command on the wire is a
// multibulk, i.e. an array of bulk strings, so the wasm module's
// decodeReplies (RESP -> reply JSON) and replyToResp (reply JSON -> RESP)
// convert commands too: the page never splits or encodes argv itself.
import { asUtf8 } from './bytes.js';
import type { Argv } from './types.js';

interface BulkJson {
  type: string;
  value?: unknown;
  base64?: string;
}

function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function toBase64(b: Uint8Array): string {
  let bin = '';
  for (const c of b) bin += String.fromCharCode(c);
  return btoa(bin);
}

/** A decoded multibulk (reply JSON array of bulk strings) -> argv.
 * Throws naming the index when an element is not a bulk string. */
export function argvFromJson(value: BulkJson): Argv {
  if (value.type !== 'array' || !Array.isArray(value.value)) throw new Error(`a command must be an array of bulk strings, got ${value.type}`);
  return (value.value as BulkJson[]).map((el, i) => {
    if (el.type !== 'bulk') throw new Error(`argument ${i}: expected a bulk string, got ${el.type}`);
    return el.base64 !== undefined ? fromBase64(el.base64) : new TextEncoder().encode(String(el.value));
  });
}

/** argv -> reply JSON array of bulk strings (base64 for non-UTF-8 bytes). */
export function argvToJson(argv: Argv): BulkJson {
  return {
    type: 'array',
    value: argv.map((a) => {
      const s = asUtf8(a);
      return s !== null ? { type: 'bulk', value: s } : { type: 'bulk', base64: toBase64(a) };
    }),
  };
}

/** argv as the API's JSON arguments: strings, or `{"base64": ...}` for non-UTF-8 bytes (docs/reply-json.md#command-arguments). */
export function argvForApi(argv: Argv): Array<string | { base64: string }> {
  return argv.map((a) => {
    const s = asUtf8(a);
    return s !== null ? s : { base64: toBase64(a) };
  });
}
