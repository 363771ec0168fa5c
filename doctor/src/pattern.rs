//! Key-pattern reduction: `user:1234` → `user:*`, so that the doctor can
//! group an application's commands by the shape of their keys while keeping
//! no key name and no value (values are never looked at; only the argument
//! at a key position is reduced, and only its pattern is kept).
//!
//! Rules, applied to each segment between separators (`:` `/` `.` `#` `|`
//! `,` `;` `=`), the separators kept:
//! - a segment of hex digits, `-` and `_` with at least one decimal digit
//!   (a number, a hex id, a UUID) becomes `*`;
//! - a segment longer than 24 bytes, or with a byte outside printable ASCII,
//!   becomes `*`;
//! - otherwise each run of decimal digits becomes `*` (`user42` → `user*`,
//!   `{user1000}` → `{user*}`).
//!
//! A pattern is at most [`MAX_PATTERN_LEN`] bytes (then cut, ending in `…`).

/// Longest pattern kept, in bytes (before the `…` of a cut one).
pub const MAX_PATTERN_LEN: usize = 64;
/// Longest segment kept as text, in bytes.
const MAX_SEGMENT_LEN: usize = 24;

fn is_separator(b: u8) -> bool {
    matches!(b, b':' | b'/' | b'.' | b'#' | b'|' | b',' | b';' | b'=')
}

fn reduce_segment(seg: &[u8], out: &mut String) {
    if seg.is_empty() {
        return;
    }
    let id_like = seg.iter().all(|b| b.is_ascii_hexdigit() || *b == b'-' || *b == b'_') && seg.iter().any(u8::is_ascii_digit);
    if id_like || seg.len() > MAX_SEGMENT_LEN || seg.iter().any(|b| !b.is_ascii_graphic()) {
        out.push('*');
        return;
    }
    let mut in_digits = false;
    for &b in seg {
        if b.is_ascii_digit() {
            if !in_digits {
                out.push('*');
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(b as char);
        }
    }
}

/// The pattern of one key (see the module rules). An empty key is `""`.
pub fn key_pattern(key: &[u8]) -> String {
    let mut out = String::new();
    let mut start = 0;
    for (i, &b) in key.iter().enumerate() {
        if is_separator(b) {
            reduce_segment(&key[start..i], &mut out);
            out.push(b as char);
            start = i + 1;
        }
    }
    reduce_segment(&key[start..], &mut out);
    if out.len() > MAX_PATTERN_LEN {
        let mut cut = MAX_PATTERN_LEN;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push('…');
    }
    out
}

/// A command name as shown: upper case, printable ASCII only (`?` for other
/// bytes), at most 32 bytes.
pub fn command_name(name: &[u8]) -> String {
    name.iter().take(32).map(|&b| if b.is_ascii_graphic() { b.to_ascii_uppercase() as char } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_stars_and_words_stay() {
        assert_eq!(key_pattern(b"user:1234"), "user:*");
        assert_eq!(key_pattern(b"user:1234:profile"), "user:*:profile");
        assert_eq!(key_pattern(b"session:550e8400-e29b-41d4-a716-446655440000"), "session:*");
        assert_eq!(key_pattern(b"cache/v2/page.html"), "cache/v*/page.html");
        assert_eq!(key_pattern(b"{user1000}.following"), "{user*}.following");
        assert_eq!(key_pattern(b"counter"), "counter");
        assert_eq!(key_pattern(b"deadbeef"), "deadbeef"); // no decimal digit: a word
        assert_eq!(key_pattern(b"k:\x00\xff"), "k:*");
        assert_eq!(key_pattern(b""), "");
    }

    #[test]
    fn long_keys_are_cut_and_names_are_printable() {
        let long = "a:".repeat(100);
        let p = key_pattern(long.as_bytes());
        assert!(p.ends_with('…') && p.len() <= MAX_PATTERN_LEN + '…'.len_utf8(), "{p}");
        assert_eq!(command_name(b"set"), "SET");
        assert_eq!(command_name(b"s\x01t"), "S?T");
    }
}
