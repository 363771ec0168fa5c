// The RESP view shows RESP bytes as editable text. Valid UTF-8 is shown as
// text; every byte that is not is kept as one lone surrogate U+DC80..U+DCFF
// ("surrogateescape"), so bytes -> text -> bytes is lossless. CR LF is the
// view's line separator (EditorState.lineSeparator), so a lone CR or LF is
// line content and stays visible.

const strict = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/** Length of the well-formed UTF-8 sequence at `i` (Unicode Table 3-7), 0 if none. */
function seqLen(b: Uint8Array, i: number): number {
  const b0 = b[i];
  if (b0 < 0x80) return 1;
  const c = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (b0 >= 0xc2 && b0 <= 0xdf) return c(1) ? 2 : 0;
  if (b0 === 0xe0) return c(1, 0xa0) && c(2) ? 3 : 0;
  if ((b0 >= 0xe1 && b0 <= 0xec) || b0 === 0xee || b0 === 0xef) return c(1) && c(2) ? 3 : 0;
  if (b0 === 0xed) return c(1, 0x80, 0x9f) && c(2) ? 3 : 0;
  if (b0 === 0xf0) return c(1, 0x90) && c(2) && c(3) ? 4 : 0;
  if (b0 >= 0xf1 && b0 <= 0xf3) return c(1) && c(2) && c(3) ? 4 : 0;
  if (b0 === 0xf4) return c(1, 0x80, 0x8f) && c(2) && c(3) ? 4 : 0;
  return 0;
}

/** RESP bytes -> view text (lossless, see above). */
export function bytesToView(bytes: Uint8Array): string {
  try {
    return strict.decode(bytes);
  } catch {
    /* not valid UTF-8: escape the bad bytes */
  }
  const parts: string[] = [];
  let start = 0;
  let i = 0;
  while (i < bytes.length) {
    const n = seqLen(bytes, i);
    if (n > 0) {
      i += n;
      continue;
    }
    if (start < i) parts.push(strict.decode(bytes.subarray(start, i)));
    parts.push(String.fromCharCode(0xdc00 + bytes[i]));
    i += 1;
    start = i;
  }
  if (start < bytes.length) parts.push(strict.decode(bytes.subarray(start)));
  return parts.join('');
}

const ESCAPED = /(?<![\ud800-\udbff])[\udc80-\udcff]/g;

/** View text -> RESP bytes (inverse of bytesToView). */
export function viewToBytes(text: string): Uint8Array {
  ESCAPED.lastIndex = 0;
  if (!ESCAPED.test(text)) return encoder.encode(text);
  const chunks: Uint8Array[] = [];
  let last = 0;
  ESCAPED.lastIndex = 0;
  for (let m = ESCAPED.exec(text); m; m = ESCAPED.exec(text)) {
    chunks.push(encoder.encode(text.slice(last, m.index)));
    chunks.push(Uint8Array.of(text.charCodeAt(m.index) - 0xdc00));
    last = m.index + 1;
  }
  chunks.push(encoder.encode(text.slice(last)));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.length;
  }
  return out;
}

/** Readable one-line form of bytes: printable ASCII as is, CR LF as \r\n, others \xHH. */
export function escapeBytes(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) {
    if (b === 13) s += '\\r';
    else if (b === 10) s += '\\n';
    else if (b === 92) s += '\\\\';
    else if (b >= 0x20 && b < 0x7f) s += String.fromCharCode(b);
    else s += '\\x' + b.toString(16).padStart(2, '0');
  }
  return s;
}
