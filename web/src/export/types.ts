/** One command's argv: the command name and its arguments, as raw bytes. */
export type Argv = Uint8Array[];

/** `pipeline`: all commands written before any reply is read (one round
 * trip per batch). `transaction`: the same, wrapped in MULTI/EXEC. */
export type ExportMode = 'pipeline' | 'transaction';

export type TargetId =
  | 'resp' | 'redis-py' | 'ioredis' | 'redis-rb' | 'go-redis' | 'jedis' | 'redis-rs'
  | 'curl-api' | 'curl-upstash' | 'fetch-api' | 'fetch-upstash' | 'requests-api' | 'requests-upstash';

/** A generated file, ready to download or print. */
export interface Snippet {
  target: TargetId;
  filename: string;
  mime: string;
  /** Source code (text) or, for the RESP file, the exact bytes. */
  content: string | Uint8Array;
  /** The shell commands that run it, as printed in the snippet's header. */
  run: string;
}
