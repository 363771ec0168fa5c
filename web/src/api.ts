// The REST API of `pipelab serve` (docs/api.md). Paths are
// relative so the page works under any prefix.
import { parseJsonExact, type ReplyJson } from './replyJson.js';

export type Mode = 'sequential' | 'pipeline' | 'transaction';
export type Status = 'ok' | 'error' | 'not_sent' | 'unknown';

export interface BatchRequest {
  text: string;
  mode: Mode;
  batch_size: number;
  on_error: 'continue' | 'stop';
  simulated_rtt_ms: number;
  resp3?: boolean;
}

export interface CommandResult {
  index: number;
  status: Status;
  reply?: ReplyJson;
  sent_us?: number;
  reply_us?: number;
}

export interface Summary {
  mode?: Mode;
  commands: number;
  ok: number;
  errors: number;
  not_sent?: number;
  unknown?: number;
  round_trips: number;
  bytes_sent: number;
  bytes_received: number;
  total_us: number;
  commands_per_sec?: number;
  simulated_rtt_ms?: number;
}

export interface BatchResponse {
  summary: Summary;
  results: CommandResult[];
  transaction?: { status: 'committed' | 'aborted' | 'watch_conflict'; rejected_index?: number; message?: string };
  /** Why the batch was cut (connection lost, batch timeout, reply-size limit): the rest is `unknown` / `not_sent`. */
  connection_error?: string;
}

/** A failed call: `status` 0 means the API could not be reached at all. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export async function runBatch(req: BatchRequest): Promise<BatchResponse> {
  let res: Response;
  try {
    res = await fetch('api/v1/batch', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(req),
    });
  } catch (e) {
    throw new ApiError(0, 'unreachable', `the pipelab API is unreachable (${(e as Error).message})`);
  }
  const body = await res.text();
  if (!res.ok) {
    let code = `http_${res.status}`;
    let message = body.slice(0, 300) || res.statusText;
    try {
      const err = JSON.parse(body).error;
      if (err) ({ code, message } = err);
    } catch {
      /* not JSON: keep the raw text */
    }
    throw new ApiError(res.status, code, message);
  }
  // Integer replies beyond 2^53 stay exact (BigInt).
  return parseJsonExact(body) as BatchResponse;
}

export type Health = 'ok' | 'redis_down' | 'api_down';

/** GET /readyz: 200 ready, 503 Redis unreachable, anything else: no API. */
export async function checkHealth(): Promise<Health> {
  try {
    const res = await fetch('readyz', { cache: 'no-store' });
    if (res.ok) return 'ok';
    return res.status === 503 ? 'redis_down' : 'api_down';
  } catch {
    return 'api_down';
  }
}

/** The server limits the page checks before sending (GET /api/v1/info, `limits`; times in ms). */
export interface ServerLimits {
  batch_timeout_ms: number;
  max_commands?: number;
}

/** GET /api/v1/info's `limits`, or null when the API cannot be reached (the page then checks nothing extra). */
export async function fetchLimits(): Promise<ServerLimits | null> {
  try {
    const res = await fetch('api/v1/info', { cache: 'no-store' });
    if (!res.ok) return null;
    const limits = (await res.json())?.limits;
    return typeof limits?.batch_timeout_ms === 'number' ? limits : null;
  } catch {
    return null;
  }
}
