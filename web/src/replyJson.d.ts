/** Reply JSON value (docs/reply-json.md); integers beyond ±(2^53 − 1) are BigInt. */
export interface ReplyJson {
  type: string;
  value?: unknown;
  base64?: string;
  format?: string;
  attributes?: Array<[ReplyJson, ReplyJson]>;
}
export function parseJsonExact(text: string): any;
export function replyToJsonText(reply: unknown): string;
