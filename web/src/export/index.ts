// "Export": the batch as a RESP file for redis-cli --pipe, or as a runnable
// program for six client libraries, each in pipeline or MULTI/EXEC form.
// Every program connects to $REDIS_URL (default redis://127.0.0.1:6379),
// prints one line per reply (`N) reply` or `N) (error) message`) and exits 1
// when any command failed, as `redis-cli --pipe` does.
import { ioredisSnippet } from './ioredis.js';
import { goSnippet } from './goredis.js';
import { jedisSnippet } from './jedis.js';
import { pythonSnippet } from './python.js';
import { rubySnippet } from './redisrb.js';
import { respSnippet, type EncodeCommand } from './resp.js';
import { rustSnippet } from './redisrs.js';
import type { Argv, ExportMode, Snippet, TargetId } from './types.js';

export type { Argv, ExportMode, Snippet, TargetId, EncodeCommand };

export interface TargetInfo {
  id: TargetId;
  label: string;
  /** The library calls used, per mode. */
  calls: Record<ExportMode, string>;
}

export const TARGETS: TargetInfo[] = [
  { id: 'resp', label: 'RESP file (redis-cli --pipe)', calls: { pipeline: 'redis-cli --pipe', transaction: 'MULTI … EXEC, redis-cli --pipe' } },
  { id: 'redis-py', label: 'Python (redis-py)', calls: { pipeline: 'pipeline(transaction=False)', transaction: 'pipeline(transaction=True)' } },
  { id: 'ioredis', label: 'Node.js (ioredis)', calls: { pipeline: 'pipeline()', transaction: 'multi()' } },
  { id: 'redis-rb', label: 'Ruby (redis-rb)', calls: { pipeline: 'pipelined', transaction: 'pipelined MULTI … EXEC' } },
  { id: 'go-redis', label: 'Go (go-redis v9)', calls: { pipeline: 'Pipeline()', transaction: 'TxPipeline()' } },
  { id: 'jedis', label: 'Java (Jedis)', calls: { pipeline: 'pipelined()', transaction: 'multi()' } },
  { id: 'redis-rs', label: 'Rust (redis-rs)', calls: { pipeline: 'redis::pipe()', transaction: 'redis::pipe().atomic()' } },
];

/**
 * Generates one export. `encode` turns an argv into RESP (needed for
 * `resp`); `redis`: the Redis the page runs on (/info's `redis.target`),
 * which the RESP file's redis-cli line names.
 */
export function exportBatch(target: TargetId, commands: Argv[], mode: ExportMode, encode: EncodeCommand, redis?: string | null): Snippet {
  switch (target) {
    case 'resp':
      return respSnippet(commands, mode, encode, redis);
    case 'redis-py':
      return pythonSnippet(commands, mode);
    case 'ioredis':
      return ioredisSnippet(commands, mode);
    case 'redis-rb':
      return rubySnippet(commands, mode);
    case 'go-redis':
      return goSnippet(commands, mode);
    case 'jedis':
      return jedisSnippet(commands, mode);
    case 'redis-rs':
      return rustSnippet(commands, mode);
  }
}
