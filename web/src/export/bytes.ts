// Byte helpers shared by the export generators. Arguments are raw bytes
// (Redis bulk strings are binary safe), so every generator decides per
// argument whether a readable text literal is exact or bytes must be spelled
// out.

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The bytes as a string when they are valid UTF-8, else `null`. */
export function asUtf8(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/** True when every byte is printable ASCII (0x20..0x7e). */
export function isPrintableAscii(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b < 0x20 || b > 0x7e) return false;
  return true;
}

/** Lower-case hex, two digits per byte. */
export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** `\xHH` escapes for non-printable bytes, `\\` and the quote escaped:
 * the byte-string literal syntax that Python, Rust and Go share. */
export function escapeBytes(bytes: Uint8Array, quote: '"' | "'"): string {
  let s = '';
  for (const b of bytes) {
    if (b === 0x5c) s += '\\\\';
    else if (b === quote.charCodeAt(0)) s += '\\' + quote;
    else if (b === 0x0a) s += '\\n';
    else if (b === 0x0d) s += '\\r';
    else if (b === 0x09) s += '\\t';
    else if (b >= 0x20 && b <= 0x7e) s += String.fromCharCode(b);
    else s += '\\x' + b.toString(16).padStart(2, '0');
  }
  return s;
}

const enc = new TextEncoder();
/** UTF-8 bytes of a string. */
export const utf8Bytes = (s: string): Uint8Array => enc.encode(s);
