// The batch as a RESP file for `redis-cli --pipe`: each command as a
// multibulk (an array of bulk strings), exactly what a client writes to the
// socket. The bytes come from the caller's encoder (the wasm module's, i.e.
// the `resp` crate), so the page and the CLI agree byte for byte.
import { utf8Bytes } from './bytes.js';
import type { Argv, ExportMode, Snippet } from './types.js';

/** argv -> the multibulk bytes Redis reads. */
export type EncodeCommand = (argv: Argv) => Uint8Array;

/**
 * How redis-cli reaches `target` (the Redis the server runs batches on, as
 * GET /api/v1/info's `redis.target` names it; default 127.0.0.1:6379):
 * `-s PATH` for a Unix socket, `-u URL` (`--tls` for rediss://) else; a
 * cluster's first seed node (its password is never in `target`: add `-a`).
 */
export function redisCliTarget(target: string | null | undefined): string {
  const t = (target ?? '').split(',')[0]!.trim();
  if (t.startsWith('unix://')) return `-s ${t.slice('unix://'.length).replace(/\?.*$/, '')}`;
  if (t.startsWith('rediss://')) return `-u ${t} --tls`;
  if (t.startsWith('redis://')) return `-u ${t}`;
  return '-u redis://127.0.0.1:6379';
}

export function respSnippet(commands: Argv[], mode: ExportMode, encode: EncodeCommand, redis?: string | null): Snippet {
  const all = mode === 'transaction' ? [[utf8Bytes('MULTI')], ...commands, [utf8Bytes('EXEC')]] : commands;
  const parts = all.map(encode);
  const content = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    content.set(p, at);
    at += p.length;
  }
  return {
    target: 'resp',
    filename: 'pipelab-batch.resp',
    mime: 'application/octet-stream',
    content,
    run: `redis-cli ${redisCliTarget(redis)} --pipe < pipelab-batch.resp`,
  };
}
