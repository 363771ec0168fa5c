// The page's one client of the REST API of `pipelab serve` (docs/api.md; the playground,
// the lessons, the compare and sweep views): one fetch wrapper, one error
// type. Paths are relative so the page works under any prefix. Types come
// from the server's OpenAPI document (./types.ts).
import { parseJsonExact } from '../replyJson.js';
import { noteUnauthorized, withToken } from './token.js';
import type { BatchRequest, BatchResponse, CommandsResponse, CompareRequest, CompareResponse, InfoResponse, Session, SessionOptions, SweepRequest, SweepResponse } from './types.js';

export type * from './types.js';

/** A failed call: `status` 0 means the API could not be reached at all. */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/**
 * fetch() with the API token (./token.ts), if one was given; status 0
 * `unreachable` when fetch itself fails.
 */
export async function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers: withToken(init.headers as Record<string, string> | undefined) });
  } catch (e) {
    throw new ApiError(0, 'unreachable', `the pipelab API is unreachable (${(e as Error).message})`);
  }
  // The sandbox tells a visitor what became of their Redis (moved to
  // another node, saved keys gone) on any answer, not only /info's.
  const notice = res.headers.get(SANDBOX_NOTICE);
  if (notice) window.dispatchEvent(new CustomEvent(SANDBOX_NOTICE, { detail: notice }));
  return res;
}

/** The header, and the window event the page gets it as. */
export const SANDBOX_NOTICE = 'pipelab-sandbox-notice';

/** The error of a failed answer: the server's `{"error": {code, message}}`, or its raw text and `http_<status>`. */
export async function errorOf(res: Response): Promise<ApiError> {
  const body = await res.text();
  let code = `http_${res.status}`;
  let message = body.slice(0, 300) || res.statusText;
  try {
    const err = JSON.parse(body).error;
    if (err) ({ code, message } = err);
  } catch {
    /* not JSON: keep the raw text */
  }
  noteUnauthorized(res.status, message);
  return new ApiError(res.status, code, message);
}

/** Fetches `path` and returns the body of a 2xx answer as text; anything else throws ApiError. */
async function call(path: string, init?: RequestInit): Promise<string> {
  const res = await apiFetch(path, init);
  if (res.ok) return res.text();
  throw await errorOf(res);
}

/** POSTs JSON to a path relative to the page; integer replies beyond 2^53 stay exact (BigInt). */
export async function postJson<T>(path: string, body: unknown): Promise<T> {
  const text = await call(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return parseJsonExact(text) as T;
}

export const batch = (req: BatchRequest) => postJson<BatchResponse>('api/v1/batch', req);
/** GET /api/v1/commands: the server's commands with summary, syntax and arity (from its COMMAND DOCS). */
export const commandDocs = async () => JSON.parse(await call('api/v1/commands')) as CommandsResponse;
export const compare = (req: CompareRequest) => postJson<CompareResponse>('api/v1/compare', req);
export const sweep = (req: SweepRequest) => postJson<SweepResponse>('api/v1/sweep', req);

/**
 * POST /api/v1/sessions: 201 with the new session (503 `too_many_sessions` at
 * the server's cap). Batches on it leave out `resp3` and `simulated_rtt_ms`:
 * they are the session's.
 */
export const createSession = (opts: SessionOptions = {}) => postJson<Session>('api/v1/sessions', opts);

/**
 * DELETE /api/v1/sessions/{id} (204). `keepalive`: the request survives the
 * page being closed (pagehide). A session already gone (404) is not an error.
 */
export async function deleteSession(id: string, keepalive = false): Promise<void> {
  try {
    await call(`api/v1/sessions/${encodeURIComponent(id)}`, { method: 'DELETE', keepalive });
  } catch (e) {
    if ((e as ApiError).status !== 404) throw e;
  }
}

export type Health = 'ok' | 'redis_down' | 'api_down';

/** GET /readyz: 200 ready, 503 Redis unreachable, anything else: no API. */
export async function checkHealth(): Promise<Health> {
  try {
    await call('readyz', { cache: 'no-store' });
    return 'ok';
  } catch (e) {
    return (e as ApiError).status === 503 ? 'redis_down' : 'api_down';
  }
}

/** GET /api/v1/info (the server's limits and defaults), or null when it cannot be read (a 401 also shows the token field). */
export async function fetchInfo(): Promise<InfoResponse | null> {
  try {
    return JSON.parse(await call('api/v1/info', { cache: 'no-store' })) as InfoResponse;
  } catch {
    return null;
  }
}
