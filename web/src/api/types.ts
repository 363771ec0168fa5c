// The API's types, by name, from the server's own OpenAPI document:
// `schema.d.ts` is generated at build time (scripts/build-web.sh: `pipelab
// openapi` -> openapi.json -> openapi-typescript), so these cannot drift from
// what the server writes. Replies stay the page's `ReplyJson` (replyJson.d.ts:
// integers beyond 2^53 are BigInt, which the schema cannot say).
import type { components } from './schema.js';
import type { ReplyJson } from '../replyJson.js';

type Schemas = components['schemas'];

export type Mode = Schemas['Mode'];
export type OnError = Schemas['OnError'];
export type Status = Schemas['Status'];
export type Arg = Schemas['Arg'];
export type Summary = Schemas['Summary'];
export type TransactionOutcome = Schemas['TransactionOutcome'];
export type BatchRequest = Schemas['BatchRequest'];
export type CompareRequest = Schemas['CompareRequest'];
export type SweepRequest = Schemas['SweepRequest'];
export type SweepResponse = Schemas['SweepResponse'];
export type InfoResponse = Schemas['InfoResponse'];
export type ErrorBody = Schemas['ErrorBody'];

/** One command's result, its reply as the page parses it. */
export type CommandResult = Omit<Schemas['CommandResult'], 'reply'> & { reply?: ReplyJson | null };
export type BatchResponse = Omit<Schemas['BatchResponse'], 'results'> & { results: CommandResult[] };
export type CompareRun = Omit<Schemas['CompareRun'], 'results'> & { results?: CommandResult[] | null };
export type CompareResponse = Omit<Schemas['CompareResponse'], 'runs'> & { runs: CompareRun[] };
