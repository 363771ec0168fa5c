//! Does a blocking command wait forever? Its timeout read exactly as the
//! server reads it, so that pipelab refuses what Redis would block on for
//! ever and nothing else.
//!
//! - Seconds (BLPOP and friends): `getTimeoutFromObjectOrReply` in Redis
//!   `src/timeout.c` takes a long double (`string2ld` in `src/util.c`, on
//!   `strtold`), multiplies by 1000 and rounds *up* (`ceill`): any positive
//!   value, `1e-400` included, is at least 1 ms. Only a value that is
//!   exactly zero (`0`, `-0`, `0.0e9`, `0x0p3`) waits forever; what
//!   `string2ld` rejects (leading space, trailing bytes, `nan`, an underflow
//!   to zero such as `1e-5000`) is an error reply, not a wait.
//! - Milliseconds (XREAD BLOCK, WAIT): a long long (`string2ll`): only the
//!   text `0` is zero; `+0`, `-0`, `00` are errors.
//! - XREAD / XREADGROUP: options are read left to right up to `STREAMS`,
//!   as `xreadCommand` in `src/t_stream.c` does: the last `BLOCK` wins,
//!   `COUNT` and `GROUP` skip their values, a bad value or an unknown
//!   option is an error.

/// Where a blocking command's timeout is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timeout {
    /// The last argument, in seconds (BLPOP, BRPOP, BZPOPMIN, BZPOPMAX, BLMOVE, BRPOPLPUSH).
    LastSeconds,
    /// Argument `n`, in seconds (BLMPOP, BZMPOP: 1).
    Seconds(usize),
    /// Argument `n`, in milliseconds (WAIT: 2, WAITAOF: 3).
    Millis(usize),
    /// `BLOCK ms` among XREAD's options.
    XreadBlock,
}

/// The timeout of each command that can block, by name: Redis's flags
/// say *that* a command blocks (`blocking`; WAIT and WAITAOF are not
/// flagged in 7.0 but block all the same), not where its timeout is. The
/// positions follow the command reference and each command's source.
pub(crate) fn timeout_of(name: &str) -> Option<Timeout> {
    Some(match name {
        "blpop" | "brpop" | "bzpopmin" | "bzpopmax" | "blmove" | "brpoplpush" => Timeout::LastSeconds,
        "blmpop" | "bzmpop" => Timeout::Seconds(1),
        "wait" => Timeout::Millis(2),
        "waitaof" => Timeout::Millis(3),
        "xread" | "xreadgroup" => Timeout::XreadBlock,
        _ => return None,
    })
}

/// True if `argv` would wait for ever by `timeout`'s rule.
pub(crate) fn waits_forever(timeout: Timeout, argv: crate::argv::ArgvRef<'_>) -> bool {
    match timeout {
        Timeout::LastSeconds => argv.len() >= 3 && argv.get(argv.len() - 1).is_some_and(seconds_is_zero),
        Timeout::Seconds(i) => argv.get(i).is_some_and(seconds_is_zero),
        Timeout::Millis(i) => argv.get(i).is_some_and(millis_is_zero),
        Timeout::XreadBlock => xread_blocks_forever(argv),
    }
}

/// `xreadCommand`'s option loop: `Some(timeout)` of the last BLOCK, or
/// false if Redis would answer an error instead (or not block).
fn xread_blocks_forever(argv: crate::argv::ArgvRef<'_>) -> bool {
    let argc = argv.len();
    let group_allowed = argv.name().is_some_and(|n| n.eq_ignore_ascii_case(b"xreadgroup"));
    let mut forever = false;
    let mut streams = false;
    let mut i = 1;
    while i < argc {
        let more = argc - i - 1;
        let o = argv.get(i).unwrap_or_default();
        if o.eq_ignore_ascii_case(b"BLOCK") && more > 0 {
            i += 1;
            let v = argv.get(i).unwrap_or_default();
            match string2ll(v) {
                Some(ms) if ms >= 0 => forever = ms == 0,
                _ => return false, // "timeout is not an integer" / "negative"
            }
        } else if o.eq_ignore_ascii_case(b"COUNT") && more > 0 {
            i += 1;
            if string2ll(argv.get(i).unwrap_or_default()).is_none() {
                return false;
            }
        } else if o.eq_ignore_ascii_case(b"STREAMS") && more > 0 {
            // Stream names and IDs in pairs, or "Unbalanced" error.
            streams = (argc - i - 1).is_multiple_of(2);
            break;
        } else if o.eq_ignore_ascii_case(b"GROUP") && more >= 2 && group_allowed {
            i += 2;
        } else if o.eq_ignore_ascii_case(b"NOACK") && group_allowed {
        } else {
            return false; // syntax error
        }
        i += 1;
    }
    streams && forever
}

/// `string2ll` in Redis `src/util.c`: optional `-`, no `+`, no leading
/// zeros (the text `0` alone is zero), no spaces, fits in an i64.
pub(crate) fn string2ll(s: &[u8]) -> Option<i64> {
    if s == b"0" {
        return Some(0);
    }
    let digits = s.strip_prefix(b"-").unwrap_or(s);
    if digits.is_empty() || !(b'1'..=b'9').contains(&digits[0]) || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn millis_is_zero(s: &[u8]) -> bool {
    string2ll(s) == Some(0)
}

/// True if Redis's `string2ld` accepts `s` and its value is zero.
fn seconds_is_zero(s: &[u8]) -> bool {
    // string2ld copies into a C string: a NUL ends it.
    let s = s.iter().position(|&b| b == 0).map_or(s, |n| &s[..n]);
    // MAX_LONG_DOUBLE_CHARS (5 KiB): longer is rejected.
    if s.is_empty() || s.len() >= 5 * 1024 || matches!(s[0], b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        return false;
    }
    strtold_zero(s) == Some(true)
}

/// `Some(is_zero)` if `strtold` consumes all of `s` as a finite number,
/// `None` if it stops early or reads inf / nan. A value is exactly zero iff
/// every mantissa digit is 0, whatever the exponent (a nonzero mantissa
/// that underflows to zero sets ERANGE, which `string2ld` rejects).
fn strtold_zero(s: &[u8]) -> Option<bool> {
    let s = s.strip_prefix(b"+").or_else(|| s.strip_prefix(b"-")).unwrap_or(s);
    let (hex, body) = match s {
        [b'0', b'x' | b'X', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    let is_digit = |b: &u8| if hex { b.is_ascii_hexdigit() } else { b.is_ascii_digit() };
    let int_len = body.iter().take_while(|b| is_digit(b)).count();
    let mut rest = &body[int_len..];
    let mut mantissa: Vec<u8> = body[..int_len].to_vec();
    if let Some(after) = rest.strip_prefix(b".") {
        let frac = after.iter().take_while(|b| is_digit(b)).count();
        mantissa.extend_from_slice(&after[..frac]);
        rest = &after[frac..];
    }
    if mantissa.is_empty() {
        return None; // "inf", "nan", "0x" alone (strtold reads "0", leaving "x"), "."
    }
    if !rest.is_empty() {
        let marker: &[u8] = if hex { b"pP" } else { b"eE" };
        if !marker.contains(&rest[0]) {
            return None;
        }
        let exp = &rest[1..];
        let exp = exp.strip_prefix(b"+").or_else(|| exp.strip_prefix(b"-")).unwrap_or(exp);
        if exp.is_empty() || !exp.iter().all(u8::is_ascii_digit) {
            return None; // strtold stops before the marker: trailing bytes
        }
    }
    Some(mantissa.iter().all(|&b| b == b'0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_as_redis_reads_them() {
        for zero in ["0", "-0", "+0", "0.0", ".0", "0.", "0e5", "0E-9999", "0x0", "0X0.0p4", "-0x0p-3", "000"] {
            assert!(seconds_is_zero(zero.as_bytes()), "{zero}");
        }
        for not in ["1", "1e-400", "0.0001", "0x1", "1e-5000", " 0", "0 ", "0x", "inf", "nan", "", "0e", "0x0p", "abc", "-1"] {
            assert!(!seconds_is_zero(not.as_bytes()), "{not}");
        }
    }

    #[test]
    fn millis_as_redis_reads_them() {
        assert!(millis_is_zero(b"0"));
        for not in ["00", "-0", "+0", "0.0", " 0", "5"] {
            assert!(!millis_is_zero(not.as_bytes()), "{not}");
        }
        assert_eq!(string2ll(b"-12"), Some(-12));
        assert_eq!(string2ll(b"99999999999999999999"), None);
    }
}
