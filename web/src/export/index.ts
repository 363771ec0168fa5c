// "Export": the batch as a RESP file for redis-cli --pipe, as a runnable
// program for six client libraries, or as one HTTP request to pipelab
// (curl, fetch, Python requests: ./http.ts), each in pipeline or MULTI/EXEC
// form. Every library program connects to $REDIS_URL (default
// redis://127.0.0.1:6379), the HTTP ones to $PIPELAB_URL; each prints one
// line per reply (`N) reply` or `N) (error) message`; curl the answer's
// JSON) and exits 1 when any command failed, as `redis-cli --pipe` does.
import { httpSnippet, type HttpEndpoint, type HttpTool } from './http.js';
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
  // The HTTP exports: each endpoint once per tool, in the menu's order (every tool for /api/v1/batch, then for Upstash).
  ...([
    ['api', '/api/v1/batch', { pipeline: 'POST /api/v1/batch, mode pipeline', transaction: 'POST /api/v1/batch, mode transaction' }],
    ['upstash', 'Upstash /pipeline', { pipeline: 'POST /pipeline (Upstash REST)', transaction: 'POST /multi-exec (Upstash REST)' }],
  ] as Array<[HttpEndpoint, string, Record<ExportMode, string>]>).flatMap(([endpoint, where, calls]) =>
    ([['curl', 'curl'], ['fetch', 'fetch (Node)'], ['requests', 'Python requests']] as Array<[HttpTool, string]>).map(([tool, name]) => ({ id: `${tool}-${endpoint}` as TargetId, label: `${name} → ${where}`, calls })),
  ),
];

/**
 * Generates one export. `encode` turns an argv into RESP (needed for
 * `resp`); `redis`: the Redis the page runs on (/info's `redis.target`),
 * which the RESP file's redis-cli line names; `base`: the pipelab the HTTP
 * exports post to (the page's origin).
 */
export function exportBatch(target: TargetId, commands: Argv[], mode: ExportMode, encode: EncodeCommand, redis?: string | null, base = 'http://127.0.0.1:8080'): Snippet {
  switch (target) {
    case 'curl-api':
    case 'curl-upstash':
    case 'fetch-api':
    case 'fetch-upstash':
    case 'requests-api':
    case 'requests-upstash': {
      const [tool, endpoint] = target.split('-') as [HttpTool, HttpEndpoint];
      return httpSnippet(tool, endpoint, commands, mode, base);
    }
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
