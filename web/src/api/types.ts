// The API's types, by name, from the server's own OpenAPI document:
// `schema.d.ts` is generated at build time (scripts/build-web.sh: `pipelab
// openapi` -> openapi.json -> openapi-typescript), so these cannot drift from
// what the server writes. Replies stay the page's `ReplyJson` (replyJson.d.ts:
// integers beyond 2^53 are BigInt, which the schema cannot say).
import type * as Schema from './schema.js';
import type { ReplyJson } from '../replyJson.js';

export type {
  Arg, ArgDoc, BatchRequest, CommandDoc, CommandsResponse, CompareRequest, ErrorBody, InfoResponse, Mode, OnError, SessionRequest, SessionResponse, Status, Summary, SweepRequest, SweepResponse, TransactionOutcome,
} from './schema.js';

/** One command's result, its reply as the page parses it. */
export type CommandResult = Omit<Schema.CommandResult, 'reply'> & { reply?: ReplyJson | null };
export type BatchResponse = Omit<Schema.BatchResponse, 'results'> & { results: CommandResult[] };
export type CompareRun = Omit<Schema.CompareRun, 'results'> & { results?: CommandResult[] | null };
export type CompareResponse = Omit<Schema.CompareResponse, 'runs'> & { runs: CompareRun[] };

/** A session: a Redis connection that outlives a batch (docs/api.md#sessions); times in ms. */
export type Session = Schema.SessionResponse;
/** A session's connection settings, fixed when it opens: every batch on it pays its simulated RTT. */
export type SessionOptions = Schema.SessionRequest;
