// Typed access to the wasm module (wasm/src/lib.rs, generated into
// ./wasm-pkg by scripts/build-web.sh). Every RESP/inline rule runs there,
// and the server's rules the page applies in advance (model/).
import init, * as pkg from './wasm-pkg/pipelab_wasm.js';
import { replyToJsonText, type ReplyJson } from './replyJson.js';
import type { Mode } from './api/client.js';

export interface InlineError {
  line: number; // 1-based
  column: number; // 1-based, characters
  offset: number; // byte in the UTF-8 text
  pos: number; // UTF-16 index in the text (= CodeMirror position)
  message: string;
}

/** Where each command is, one entry per command in each array. */
export interface CommandSpans {
  /** UTF-16 indices in the inline text (line terminator excluded). */
  textStart: Uint32Array;
  textEnd: Uint32Array;
  /** Byte offsets in the RESP bytes. */
  respStart: Uint32Array;
  respEnd: Uint32Array;
  /** CodeMirror positions of those bytes in the RESP view (CR LF counts as one; see editor/respText.ts). */
  viewStart: Uint32Array;
  viewEnd: Uint32Array;
}

export interface InlineToResp extends CommandSpans {
  resp: Uint8Array;
  commands: number;
  errors: InlineError[];
  /** 1-based line of each command. */
  line: Uint32Array;
}

export interface RespToInline extends CommandSpans {
  text: string;
  commands: number;
  /** `column` only for inline lines; multibulk errors are located by byte (`offset`) and view position (`pos`). */
  error?: { offset: number; pos: number; line: number; column?: number; message: string };
}

export interface DecodedReplies {
  values: ReplyJson[];
  consumed: number;
  incomplete: boolean;
  error?: { offset: number; message: string };
}

let ready: Promise<void> | null = null;

/** Loads and instantiates the .wasm once. */
export function loadWasm(): Promise<void> {
  ready ??= init().then(() => undefined);
  return ready;
}

export const inlineToResp = (text: string): InlineToResp => pkg.inlineToResp(text) as unknown as InlineToResp;
export const respToInline = (bytes: Uint8Array): RespToInline => pkg.respToInline(bytes) as unknown as RespToInline;
export const decodeReplies = (bytes: Uint8Array): DecodedReplies => pkg.decodeReplies(bytes) as unknown as DecodedReplies;

/** A reply in redis-cli's terminal format. */
export function formatReply(reply: ReplyJson): string {
  try {
    return pkg.formatReply(replyToJsonText(reply));
  } catch (e) {
    return `(cannot display: ${(e as Error).message})`;
  }
}

/** A reply's canonical RESP bytes. */
export function replyToResp(reply: ReplyJson): Uint8Array {
  return pkg.replyToResp(replyToJsonText(reply));
}

/** Least number of round trips of `commands` in `mode`, as the server counts them (its simulated-RTT budget). */
export const minRoundTrips = (mode: Mode, commands: number, batchSize: number, clients: number): number =>
  pkg.minRoundTrips(mode, commands, batchSize, clients);

/** The sweep's cost model: the time of `total` commands at batch size `b`, in µs. */
export const modelUs = (rttMs: number, wireUsPerCmd: number, tCmdUs: number, total: number, b: number): number =>
  pkg.modelUs(rttMs, wireUsPerCmd, tCmdUs, total, b);

/** Commands/s the cost model predicts at batch size `b`; NaN where its time is not positive. */
export const modelRate = (rttMs: number, wireUsPerCmd: number, tCmdUs: number, total: number, b: number): number =>
  pkg.modelRate(rttMs, wireUsPerCmd, tCmdUs, total, b);
