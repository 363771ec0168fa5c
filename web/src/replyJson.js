// Reply JSON (docs/reply-json.md#integers-in-javascript) with integers beyond what a JS number
// holds exactly (±(2^53 − 1)) kept as BigInt. Plain JS so that both the page
// and the Node tests of the wasm module use it.

const LONG_VALUE = /"value":(-?\d{16,})(?=\s*[,}\]])/g;

/**
 * JSON.parse for API responses: an integer reply's `value` that a JS number
 * cannot hold becomes a BigInt instead of silently losing digits.
 * @param {string} text
 */
export function parseJsonExact(text) {
  if (!LONG_VALUE.test(text)) return JSON.parse(text);
  LONG_VALUE.lastIndex = 0;
  // Quote long integers first, then turn them back into numbers or BigInts
  // where they are the value of an integer reply.
  const quoted = text.replace(LONG_VALUE, '"value":"$1"');
  return JSON.parse(quoted, function (key, value) {
    if (key === 'value' && typeof value === 'string' && this && this.type === 'integer') {
      const big = BigInt(value);
      return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
    }
    return value;
  });
}

/**
 * JSON text of a reply whose integers may be BigInt, with those written as
 * plain JSON numbers (what the wasm module's formatReply / replyToResp read).
 * @param {unknown} reply
 */
export function replyToJsonText(reply) {
  let sawBig = false;
  const text = JSON.stringify(reply, (_key, value) => {
    if (typeof value === 'bigint') {
      sawBig = true;
      return `\u0000big:${value}`;
    }
    return value;
  });
  return sawBig ? text.replace(/"\\u0000big:(-?\d+)"/g, '$1') : text;
}
