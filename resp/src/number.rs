//! Strict number parsing, as Redis `string2ll` (`src/util.c`) and hiredis: no
//! `+`, no leading zeros, no `-0`, no spaces, full i64 range.

/// Parses a signed 64-bit integer exactly as Redis `string2ll` accepts it.
pub(crate) fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i64).wrapping_neg())
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// Writes `v` in decimal into `out` (no allocation; faster than `core::fmt`).
pub(crate) fn write_i64(out: &mut alloc::vec::Vec<u8>, v: i64) {
    // One or two digits (argument counts, short lengths: most of a
    // pipeline's headers) without the copy of a digit buffer.
    if (0..100).contains(&v) {
        let v = v as u8;
        if v >= 10 {
            out.push(b'0' + v / 10);
        }
        out.push(b'0' + v % 10);
        return;
    }
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let neg = v < 0;
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if neg {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

/// Decimal digits of `n` (for sizing buffers).
pub(crate) fn digits(mut n: usize) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn strict_integers() {
        for ok in [&b"0"[..], b"1", b"-1", b"9223372036854775807", b"-9223372036854775808", b"10"] {
            assert!(parse_i64(ok).is_some(), "{:?}", core::str::from_utf8(ok));
        }
        for bad in [&b""[..], b"+1", b"01", b"-0", b"-", b" 1", b"1 ", b"9223372036854775808", b"-9223372036854775809", b"1a", b"00"] {
            assert_eq!(parse_i64(bad), None, "{:?}", core::str::from_utf8(bad));
        }
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
    }
    #[test]
    fn writes_integers() {
        for v in [0i64, 1, -1, 9, 10, 42, 99, 100, -99, i64::MAX, i64::MIN] {
            let mut out = alloc::vec::Vec::new();
            write_i64(&mut out, v);
            assert_eq!(parse_i64(&out), Some(v));
        }
    }
}
