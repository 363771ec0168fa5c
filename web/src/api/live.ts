// A batch whose results arrive while it runs: POST /api/v1/batches answers
// NDJSON (docs/api.md#live-batches): a `start` line with the batch id, then
// `results` lines, then `end` (the summary) or `error`. `cancel()` posts
// /api/v1/batches/{id}/cancel: the batch then ends as at its timeout
// (commands awaiting replies `unknown`, the rest `not_sent`) and its `end`
// line still comes, so the promise resolves with the true statuses.
import { parseJsonExact } from '../replyJson.js';
import { ApiError, apiFetch, errorOf } from './client.js';
import type { BatchRequest, BatchResponse, CommandResult } from './types.js';

export interface LiveBatch {
  /** The whole report, once the `end` line came (or ApiError). */
  done: Promise<BatchResponse>;
  /** Asks the server to cut the batch; resolves when it answered. */
  cancel: () => Promise<void>;
}

export interface LiveEvents {
  /** The batch was accepted: `commands` results to expect. */
  start?: (commands: number) => void;
  /** More results, in index order; `all` is every result so far. */
  results?: (all: CommandResult[]) => void;
}

export function liveBatch(req: BatchRequest, events: LiveEvents = {}): LiveBatch {
  let cancelPath: string | null = null;
  let cancelWanted = false;
  const postCancel = async () => {
    if (!cancelPath) return;
    try {
      await apiFetch(cancelPath.replace(/^\//, ''), { method: 'POST' });
    } catch {
      /* the stream's end or error tells what happened */
    }
  };
  const done = (async (): Promise<BatchResponse> => {
    const res = await apiFetch('api/v1/batches', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(req) });
    if (!res.ok || !res.body) throw await errorOf(res);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const results: CommandResult[] = [];
    let pending = '';
    for (;;) {
      const { value, done: eof } = await reader.read();
      if (eof) throw new ApiError(0, 'incomplete', 'the batch\'s stream ended before its summary (the connection to the server was lost)');
      pending += value;
      let eol: number;
      while ((eol = pending.indexOf('\n')) >= 0) {
        const line = parseJsonExact(pending.slice(0, eol));
        pending = pending.slice(eol + 1);
        if (line.type === 'start') {
          cancelPath = line.cancel;
          events.start?.(line.commands);
          if (cancelWanted) void postCancel();
        } else if (line.type === 'results') {
          for (const r of line.results) results.push(r);
          events.results?.(results);
        } else if (line.type === 'end') {
          return { results, summary: line.summary, transaction: line.transaction ?? null, connection_error: line.connection_error ?? null } as BatchResponse;
        } else if (line.type === 'error') {
          throw new ApiError(200, line.error.code, line.error.message);
        }
      }
    }
  })();
  return {
    done,
    cancel: async () => {
      cancelWanted = true;
      await postCancel();
    },
  };
}
