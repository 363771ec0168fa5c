// The API calls the tutorial makes: /api/v1/batch (docs/api.md#batch),
// /api/v1/compare and /api/v1/sweep (backend/src/api/compare.rs, sweep.rs).
// Errors become ApiError with the server's `{"error": {code, message}}`.
import { ApiError, type BatchRequest, type BatchResponse, type Mode, type Summary } from '../api.js';
import { parseJsonExact } from '../replyJson.js';

export { ApiError };
export type { BatchRequest, BatchResponse, Mode, Summary };

/** A batch request as the lessons send it: text, or argv arrays; options default server-side. */
export interface LessonBatch {
  text?: string;
  commands?: Array<Array<string | { base64: string }>>;
  mode: Mode;
  batch_size?: number;
  on_error?: 'continue' | 'stop';
  simulated_rtt_ms?: number;
  watch?: string[];
}

export interface CompareRun {
  mode: Mode;
  /** Sequential total time / this run's total time (1 for sequential). */
  speedup_vs_sequential: number | null;
  summary: Summary;
  transaction?: BatchResponse['transaction'];
  results?: BatchResponse['results'];
}

export interface CompareResponse {
  note: string;
  runs: CompareRun[];
}

export interface CompareRequest {
  text: string;
  modes?: Mode[];
  batch_size?: number;
  on_error?: 'continue' | 'stop';
  simulated_rtt_ms?: number;
  resp3?: boolean;
  include_results?: boolean;
}

export interface SweepPoint {
  batch_size: number;
  /** Wall time of the run, µs. */
  total_us: number;
  commands_per_sec: number;
  round_trips: number;
  ok: number;
  errors: number;
  incomplete: number;
}

export interface SweepResponse {
  total: number;
  simulated_rtt_ms: number;
  points: SweepPoint[];
  cleanup: { keys: number; preexisting: number; deleted: number };
}

export interface SweepRequest {
  /** argv template; `{i}` becomes the command's index. */
  command: Array<string | { base64: string }>;
  total: number;
  batch_sizes: number[];
  simulated_rtt_ms?: number;
}

/** POSTs JSON to a path relative to the page; throws ApiError (status 0: unreachable). */
export async function postJson<T>(path: string, body: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch (e) {
    throw new ApiError(0, 'unreachable', `the pipelab API is unreachable (${(e as Error).message})`);
  }
  const text = await res.text();
  if (!res.ok) {
    let code = `http_${res.status}`;
    let message = text.slice(0, 300) || res.statusText;
    try {
      const err = JSON.parse(text).error;
      if (err) ({ code, message } = err);
    } catch {
      /* not JSON: keep the raw text */
    }
    throw new ApiError(res.status, code, message);
  }
  return parseJsonExact(text) as T;
}

export const batch = (req: LessonBatch) => postJson<BatchResponse>('api/v1/batch', req);
export const compare = (req: CompareRequest) => postJson<CompareResponse>('api/v1/compare', req);
export const sweep = (req: SweepRequest) => postJson<SweepResponse>('api/v1/sweep', req);
