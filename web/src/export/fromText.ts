// Inline text -> argv, through the wasm module (the `resp` crate splits the
// lines exactly as Redis's sdssplitargs does): the page never splits
// arguments itself.
import { decodeReplies, inlineToResp, replyToResp } from '../wasm.js';
import type { ReplyJson } from '../replyJson.js';
import { argvFromJson, argvToJson } from './argv.js';
import type { Argv } from './types.js';

/** The commands of an inline text; throws `line L, column C: message` for the first bad line. */
export function commandsOf(text: string): Argv[] {
  const r = inlineToResp(text);
  if (r.errors.length > 0) {
    const e = r.errors[0]!;
    throw new Error(`line ${e.line}, column ${e.column}: ${e.message}`);
  }
  const d = decodeReplies(r.resp);
  if (d.error) throw new Error(`byte ${d.error.offset}: ${d.error.message}`);
  return d.values.map((v) => argvFromJson(v as Parameters<typeof argvFromJson>[0]));
}

/** One argv as RESP bytes (a multibulk), encoded by the wasm module. */
export const encodeCommand = (argv: Argv): Uint8Array => replyToResp(argvToJson(argv) as ReplyJson);

export { argvForApi } from './argv.js';
