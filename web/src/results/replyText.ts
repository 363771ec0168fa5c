// A reply's text two ways, as RedisInsight offers: redis-cli's escaped form
// (`"h\xc3\xa9llo"`, what `formatReply` gives: bytes outside printable
// ASCII as \xHH) and UTF-8 text (`"héllo"`: each run of \xHH escapes that is
// valid UTF-8 shown as its characters; bytes that are not stay escaped).

const decoder = new TextDecoder('utf-8', { fatal: true });

/** redis-cli's escaped reply text with its valid UTF-8 escape runs decoded. */
export function asUtf8(escaped: string): string {
  // `\\` is an escaped backslash: matched first so its `\` never starts a `\x`.
  return escaped.replace(/\\\\|(?:\\x[0-9a-f]{2})+/g, (run) => {
    if (run === '\\\\') return run;
    const bytes = Uint8Array.from(run.match(/[0-9a-f]{2}/g)!.map((h) => parseInt(h, 16)));
    try {
      const text = decoder.decode(bytes);
      // Control characters stay escaped: they are what the escapes are for.
      return /[\u0000-\u001f\u007f-\u009f]/.test(text) ? run : text;
    } catch {
      return run;
    }
  });
}
