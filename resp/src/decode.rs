//! Incremental RESP2/RESP3 decoder.
//!
//! Decoding is two passes over the bytes of one top-level value: a *check*
//! pass that validates the framing and finds where the value ends, then a
//! *build* pass that allocates. The check pass never allocates from a length
//! header (so `*2305843009213693954\r\n` costs nothing but an error or an
//! "incomplete"), and it is resumable: its position and the stack of open
//! aggregates survive an "incomplete" answer, so a value arriving in many
//! chunks is not rescanned from its start. The build pass only runs on bytes
//! already checked, and every aggregate it allocates has its elements present
//! in the buffer. Both passes are iterative (explicit stacks), so the 1024
//! levels the default limits allow cannot overflow a thread's stack. A whole
//! `+`, `-`, `:` or `$` value with no value under way (most of a pipeline's
//! replies) takes one pass instead; anything it does not accept as is goes
//! the two passes, which give every error and every "incomplete".
//!
//! A length that does not fit the platform's `usize` (beyond 4 GiB on
//! wasm32, where the playground runs this code) is an error even when the
//! limits would allow it (`resp/wasm32-check`).
//!
//! Number rules are those of Redis `string2ll` and hiredis `read.c`: `:+1`,
//! `:01`, `$-2`, `*-2` are errors; integers cover the full i64 range. Simple
//! strings and errors with a lone CR or LF are errors, as in hiredis.
//!
//! Checked against hiredis on thousands of generated inputs
//! (`tests/hiredis_diff.rs`). Deliberate differences, where we follow the
//! RESP3 specification and Redis rather than hiredis's leniency:
//! - `#T`/`#F` are errors (hiredis takes upper case);
//! - a big number needs digits: `(` and `(-` are errors;
//! - the CRLF after a bulk body is checked (hiredis skips two bytes unseen);
//! - only `$-1` and `*-1` are nulls: `-1` as the length of `%`, `~`, `>`,
//!   `|`, `=`, `!` is an error (hiredis reads a null);
//! - [`Limits`]: a bulk string over 512 MiB is an error, not a wait;
//! - blob errors `!`, streamed strings and aggregates, and doubles of 326 or
//!   more characters are accepted (the PyPI hiredis build rejects them), and
//!   doubles with a leading `+` or that underflow to 0 (`1e-400`) are
//!   accepted as the RESP3 grammar and C hiredis (`strtod`) do (the PyPI
//!   hiredis build rejects them).

use crate::number::parse_i64;
use crate::value::Value;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Bounds on what the decoder accepts, so a hostile or broken peer cannot
/// make it recurse or wait for gigabytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum nesting of aggregates (arrays, maps, sets, pushes,
    /// attributes, streamed strings); an empty aggregate nests nothing.
    /// Default 1024.
    pub max_depth: usize,
    /// Maximum length of one bulk string, blob error, verbatim string or
    /// streamed string (each chunk and the whole), in bytes. Default
    /// 512 MiB, Redis's `proto-max-bulk-len` default.
    pub max_bulk_len: u64,
    /// Maximum element count of one aggregate, streamed ones included (a map
    /// of N pairs counts N). Default 2^32 − 1, hiredis's
    /// `REDIS_READER_MAX_ARRAY_ELEMENTS`.
    pub max_aggregate_len: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_depth: 1024, max_bulk_len: 512 * 1024 * 1024, max_aggregate_len: u32::MAX as u64 }
    }
}

/// Malformed input: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset, from the start of the buffer given to the decoder, of the
    /// first byte that is wrong (for a bad header line: its type byte).
    pub offset: usize,
    /// What is wrong, for a person.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.message)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for DecodeError {}

/// The answer for one call of [`Decoder::decode`].
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A whole value, and how many bytes of the buffer it took.
    Complete { value: Value, consumed: usize },
    /// The buffer ends inside a value. `needed` is the number of further
    /// bytes that are certainly required when the decoder knows it (inside a
    /// bulk string), `None` when at least one more byte is.
    Incomplete { needed: Option<usize> },
}

/// One open aggregate in the check pass.
#[derive(Debug, Clone, Copy)]
enum Frame {
    /// Elements still expected (a map of N pairs expects 2N, attributes of N
    /// pairs 2N + 1: the pairs and the value they belong to).
    Counted { remaining: u64 },
    /// `*?`, `~?`, `%?`: elements until `.`; a map asks for an even count.
    Streamed { map: bool, count: u64 },
    /// `$?`: `;N` chunks until `;0`, `total` bytes so far.
    StreamedString { total: u64 },
}

/// Incremental decoder for one stream of RESP values.
///
/// Call [`decode`](Decoder::decode) with the bytes received so far. After
/// `Incomplete`, call it again with the same bytes followed by more (the
/// check pass resumes where it stopped). After `Complete { consumed }`, drop
/// `consumed` bytes from the front before the next call. After an error the
/// stream cannot be resynchronised: the decoder resets, and the caller should
/// stop reading (as hiredis does).
#[derive(Debug, Clone, Default)]
pub struct Decoder {
    limits: Limits,
    /// Bytes of the current value already checked.
    pos: usize,
    /// Open aggregates of the current value; its length is bounded by
    /// `limits.max_depth`, never by a length header.
    stack: Vec<Frame>,
    /// The build pass's stack, kept between values to save an allocation
    /// per aggregate (empty between calls).
    build_stack: Vec<Open>,
}

/// What [`decode_all`] found in a buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeAll {
    /// Every complete value, in order.
    pub values: Vec<Value>,
    /// Bytes taken by `values`.
    pub consumed: usize,
    /// The first malformed value, if any (decoding stops there).
    pub error: Option<DecodeError>,
    /// True if the buffer ends inside a value.
    pub incomplete: bool,
}

/// Decodes every value in `buf` with default limits (a convenience for
/// whole buffers: CLI files, the page's RESP view, tests).
pub fn decode_all(buf: &[u8]) -> DecodeAll {
    let mut decoder = Decoder::new();
    let mut out = DecodeAll { values: Vec::new(), consumed: 0, error: None, incomplete: false };
    while out.consumed < buf.len() {
        match decoder.decode(&buf[out.consumed..]) {
            Ok(Decoded::Complete { value, consumed }) => {
                out.values.push(value);
                out.consumed += consumed;
            }
            Ok(Decoded::Incomplete { .. }) => {
                out.incomplete = true;
                break;
            }
            Err(mut e) => {
                e.offset += out.consumed;
                out.error = Some(e);
                break;
            }
        }
    }
    out
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Nonzero where a byte of `w` is zero; its lowest set bit is exact (higher
/// ones may be false positives, which finding the first match ignores).
#[inline(always)]
fn zero_bytes(w: u64) -> u64 {
    w.wrapping_sub(LO) & !w & HI
}

/// The first `a` or `b` in `hay`, eight bytes at a time (no `unsafe`, no
/// dependency: this crate builds for wasm32 with `core` alone).
#[inline(always)]
fn find_either(hay: &[u8], a: u8, b: u8) -> Option<usize> {
    let (pa, pb) = (LO * a as u64, LO * b as u64);
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let hit = zero_bytes(w ^ pa) | zero_bytes(w ^ pb);
        if hit != 0 {
            return Some(base + (hit.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    chunks.remainder().iter().position(|&c| c == a || c == b).map(|p| base + p)
}

#[inline(always)]
fn find_byte(hay: &[u8], a: u8) -> Option<usize> {
    find_either(hay, a, a)
}

/// The line that starts at `start` (type byte included), without its CRLF:
/// `Some((line_end, next))` where `next` is the offset after the CRLF.
#[inline]
fn find_line(buf: &[u8], start: usize) -> Option<(usize, usize)> {
    let mut i = start + 1;
    while i + 1 < buf.len() {
        // Jump to the next CR; LF must follow it.
        match find_byte(&buf[i..buf.len() - 1], b'\r') {
            None => return None,
            Some(p) => {
                i += p;
                if buf[i + 1] == b'\n' {
                    return Some((i, i + 2));
                }
                i += 1;
            }
        }
    }
    None
}

/// A whole `+`, `-`, `:` or `$` value at the front of `buf`, when it is one
/// the check pass accepts as is, and the bytes it takes; `None` otherwise.
#[inline(always)]
fn whole_scalar(buf: &[u8], max_bulk_len: u64) -> Option<(Value, usize)> {
    // `+OK`, the reply of SET and most writes, is worth its own test: no search, a copy of constant length.
    if buf.starts_with(b"+OK\r\n") {
        return Some((Value::Simple(b"OK".to_vec()), 5));
    }
    let (&t, rest) = buf.split_first().filter(|(t, _)| matches!(t, b'+' | b'-' | b':' | b'$'))?;
    // The line ends at the first CR or LF, which must be a CR LF pair.
    let p = find_either(rest, b'\r', b'\n')?;
    if rest[p] != b'\r' || rest.get(p + 1) != Some(&b'\n') {
        return None;
    }
    let (line, next) = (&rest[..p], p + 3);
    match t {
        b'+' => Some((Value::Simple(line.to_vec()), next)),
        b'-' => Some((Value::Error(line.to_vec()), next)),
        b':' => Some((Value::Integer(fast_len(line).map(|n| n as i64).or_else(|| parse_i64(line))?), next)),
        b'$' if line == b"-1" => Some((Value::NullBulk, next)),
        b'$' => {
            let n = usize::try_from(fast_len(line).filter(|&n| n <= max_bulk_len)?).ok()?;
            let end = next.checked_add(n)?.checked_add(2)?;
            let (body, crlf) = buf.get(next..end)?.split_at(n);
            (crlf == b"\r\n").then(|| (Value::Bulk(body.to_vec()), end))
        }
        _ => None,
    }
}

#[cold]
fn err(offset: usize, message: String) -> DecodeError {
    DecodeError { offset, message }
}

fn show(bytes: &[u8]) -> String {
    const MAX: usize = 40;
    let mut s = String::with_capacity(bytes.len().min(MAX) + 2);
    s.push('"');
    for &b in bytes.iter().take(MAX) {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{:02x}", b)),
        }
    }
    if bytes.len() > MAX {
        s.push_str("...");
    }
    s.push('"');
    s
}

fn type_name(t: u8) -> &'static str {
    match t {
        b'$' => "bulk string",
        b'!' => "blob error",
        b'=' => "verbatim string",
        b'*' => "array",
        b'%' => "map",
        b'~' => "set",
        b'>' => "push",
        b'|' => "attribute",
        b';' => "streamed string chunk",
        _ => "value",
    }
}

/// A plain length (`0`, or 1 to 18 digits without a leading zero), parsed
/// without overflow checks: the common case of every header, kept inline.
#[inline(always)]
fn fast_len(line: &[u8]) -> Option<u64> {
    match line {
        [b'0'] => Some(0),
        [b'1'..=b'9', ..] if line.len() <= 18 => {
            let mut n = 0u64;
            for &c in line {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    return None;
                }
                n = n * 10 + d as u64;
            }
            Some(n)
        }
        _ => None,
    }
}

/// Parses a length header (`$`, `*`, …) strictly; `-1` is returned as `None`
/// only where `allow_null`.
#[inline(always)]
fn parse_len(line: &[u8], t: u8, at: usize, allow_null: bool, max: u64, what: &str) -> Result<Option<u64>, DecodeError> {
    match fast_len(line) {
        Some(n) if n <= max && usize::try_from(n).is_ok() => Ok(Some(n)),
        None if allow_null && line == b"-1" => Ok(None),
        _ => parse_len_slow(line, t, at, allow_null, max, what),
    }
}

#[cold]
#[inline(never)]
fn parse_len_slow(line: &[u8], t: u8, at: usize, allow_null: bool, max: u64, what: &str) -> Result<Option<u64>, DecodeError> {
    let n = parse_i64(line).ok_or_else(|| err(at, format!("invalid {} length {}", type_name(t), show(line))))?;
    if n == -1 && allow_null {
        return Ok(None);
    }
    if n < 0 {
        return Err(err(at, format!("invalid {} length {} (must be >= 0{})", type_name(t), n, if allow_null { " or -1" } else { "" })));
    }
    let n = n as u64;
    if n > max {
        return Err(err(at, format!("{} length {} exceeds the limit of {} {}", type_name(t), n, max, what)));
    }
    if usize::try_from(n).is_err() {
        return Err(err(at, format!("{} length {} does not fit this platform's address space", type_name(t), n)));
    }
    Ok(Some(n))
}

fn parse_double(line: &[u8]) -> Option<f64> {
    // As hiredis: "inf", "-inf", "nan", "-nan" (any case), else a finite strtod value.
    let s = core::str::from_utf8(line).ok()?;
    if s.eq_ignore_ascii_case("inf") {
        return Some(f64::INFINITY);
    }
    if s.eq_ignore_ascii_case("-inf") {
        return Some(f64::NEG_INFINITY);
    }
    if s.eq_ignore_ascii_case("nan") || s.eq_ignore_ascii_case("-nan") {
        return Some(f64::NAN);
    }
    // Only the plain decimal grammar: no spelled-out infinities, no spaces.
    if !s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')) {
        return None;
    }
    let v: f64 = s.parse().ok()?;
    v.is_finite().then_some(v)
}

fn valid_big_number(line: &[u8]) -> bool {
    let digits = line.strip_prefix(b"-").unwrap_or(line);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
}

impl Decoder {
    /// A decoder with [`Limits::default`].
    pub fn new() -> Self {
        Self::with_limits(Limits::default())
    }

    /// A decoder with the given limits.
    pub fn with_limits(limits: Limits) -> Self {
        Decoder { limits, pos: 0, stack: Vec::new(), build_stack: Vec::new() }
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Forgets a value under way (for a caller that changes buffers).
    pub fn reset(&mut self) {
        self.pos = 0;
        self.stack.clear();
    }

    /// Decodes one value from the front of `buf`.
    ///
    /// Errors: [`DecodeError`] with the byte offset in `buf` of the first
    /// bad byte; the decoder is reset.
    pub fn decode(&mut self, buf: &[u8]) -> Result<Decoded, DecodeError> {
        // A pipeline's replies are mostly whole `+OK`, `:N` and short bulk strings: with no value under way, take
        // those in one pass; anything else (incomplete, malformed, over a limit, other types) goes the general way.
        if self.pos == 0 && self.stack.is_empty() {
            if let Some((value, consumed)) = whole_scalar(buf, self.limits.max_bulk_len) {
                return Ok(Decoded::Complete { value, consumed });
            }
        }
        self.decode_general(buf)
    }

    /// [`Decoder::decode`] by the check and build passes, for every value.
    fn decode_general(&mut self, buf: &[u8]) -> Result<Decoded, DecodeError> {
        match self.check(buf) {
            Ok(Some(end)) => {
                self.reset();
                let mut at = 0;
                let value = build(&buf[..end], &mut at, &mut self.build_stack);
                debug_assert_eq!(at, end);
                Ok(Decoded::Complete { value, consumed: end })
            }
            Ok(None) => Ok(Decoded::Incomplete { needed: self.needed(buf) }),
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }

    /// Bytes certainly needed after an incomplete check, when known.
    fn needed(&self, buf: &[u8]) -> Option<usize> {
        // Only inside a bulk body is the count known; recompute it from the header at `pos`.
        let start = self.pos;
        let t = *buf.get(start)?;
        if !matches!(t, b'$' | b'!' | b'=' | b';') {
            return None;
        }
        let (line_end, next) = find_line(buf, start)?;
        let n = parse_i64(&buf[start + 1..line_end])?;
        let total = next.checked_add(usize::try_from(n).ok()?)?.checked_add(2)?;
        total.checked_sub(buf.len()).filter(|&n| n > 0)
    }

    /// The check pass: `Ok(Some(end))` when a whole value ends at `end`,
    /// `Ok(None)` when more bytes are needed.
    fn check(&mut self, buf: &[u8]) -> Result<Option<usize>, DecodeError> {
        if self.pos > buf.len() {
            // The caller changed buffers: start over.
            self.reset();
        }
        loop {
            let start = self.pos;
            if start >= buf.len() {
                return Ok(None);
            }
            let t = buf[start];
            let streamed_total = match self.stack.last() {
                Some(Frame::StreamedString { total }) => Some(*total),
                Some(&Frame::Streamed { map, count }) if t != b'.' => {
                    // One more element in a streamed aggregate: within the limit?
                    let max = self.limits.max_aggregate_len;
                    if count >= if map { max.saturating_mul(2) } else { max } {
                        return Err(too_many(map, start, max));
                    }
                    None
                }
                _ => None,
            };
            let in_streamed_string = streamed_total.is_some();
            let Some((line_end, next)) = find_line(buf, start) else {
                // Fail early on a bad type byte rather than waiting for a CRLF.
                if !in_streamed_string && !is_type_byte(t) {
                    return Err(self.bad_type(t, start));
                }
                return Ok(None);
            };
            let line = &buf[start + 1..line_end];

            if in_streamed_string {
                if t != b';' {
                    return Err(err(start, format!("expected a streamed string chunk ';', found {}", show(&[t]))));
                }
                let n = parse_len(line, t, start, false, self.limits.max_bulk_len, "bytes")?.unwrap_or(0);
                // The whole string is one bulk string: its total is limited too.
                let total = streamed_total.unwrap_or(0).saturating_add(n);
                if total > self.limits.max_bulk_len {
                    return Err(too_long(start, total, self.limits.max_bulk_len));
                }
                if n == 0 {
                    self.pos = next;
                    self.stack.pop();
                    if let Some(end) = self.element_done() {
                        return Ok(Some(end));
                    }
                    continue;
                }
                if !self.body_present(buf, next, n, t)? {
                    return Ok(None);
                }
                self.pos = next + n as usize + 2;
                if let Some(Frame::StreamedString { total: t }) = self.stack.last_mut() {
                    *t = total;
                }
                continue;
            }

            match t {
                b'+' | b'-' => {
                    // As hiredis: a line with a lone CR or LF is not a
                    // simple string (RESP forbids them; a CR LF pair would end it).
                    if let Some(p) = find_either(line, b'\r', b'\n') {
                        return Err(err(
                            start + 1 + p,
                            format!("{} contains a {} byte (not allowed in a simple string or error)", if t == b'+' { "simple string" } else { "simple error" }, if line[p] == b'\r' { "CR" } else { "LF" }),
                        ));
                    }
                }
                b':' => {
                    if fast_len(line).is_none() && parse_i64(line).is_none() {
                        return Err(err(start, format!("invalid integer {}", show(line))));
                    }
                }
                b'_' => {
                    if !line.is_empty() {
                        return Err(err(start, format!("null '_' must be followed by CRLF, found {}", show(line))));
                    }
                }
                b',' => {
                    if parse_double(line).is_none() {
                        return Err(err(start, format!("invalid double {}", show(line))));
                    }
                }
                b'#' => {
                    if line != b"t" && line != b"f" {
                        return Err(err(start, format!("invalid boolean {} (expected t or f)", show(line))));
                    }
                }
                b'(' => {
                    if !valid_big_number(line) {
                        return Err(err(start, format!("invalid big number {} (expected digits with an optional '-')", show(line))));
                    }
                }
                b'$' | b'!' | b'=' => {
                    if t == b'$' && line.len() == 1 && line[0] == b'?' {
                        self.open(Frame::StreamedString { total: 0 }, start)?;
                        self.pos = next;
                        continue;
                    }
                    let Some(n) = parse_len(line, t, start, t == b'$', self.limits.max_bulk_len, "bytes")? else {
                        self.pos = next;
                        if let Some(end) = self.element_done() {
                            return Ok(Some(end));
                        }
                        continue;
                    };
                    if !self.body_present(buf, next, n, t)? {
                        return Ok(None);
                    }
                    if t == b'=' && (n < 4 || buf[next + 3] != b':') {
                        return Err(err(next, String::from("verbatim string must start with a 3-byte format and ':' (as \"txt:\")")));
                    }
                    self.pos = next + n as usize + 2;
                    if let Some(end) = self.element_done() {
                        return Ok(Some(end));
                    }
                    continue;
                }
                b'*' | b'~' | b'>' | b'%' | b'|' => {
                    if line.len() == 1 && line[0] == b'?' && matches!(t, b'*' | b'~' | b'%') {
                        self.open(Frame::Streamed { map: t == b'%', count: 0 }, start)?;
                        self.pos = next;
                        continue;
                    }
                    let Some(n) = parse_len(line, t, start, t == b'*', self.limits.max_aggregate_len, "elements")? else {
                        self.pos = next;
                        if let Some(end) = self.element_done() {
                            return Ok(Some(end));
                        }
                        continue;
                    };
                    let remaining = match t {
                        b'%' => n * 2,
                        b'|' => n * 2 + 1,
                        _ => n,
                    };
                    self.pos = next;
                    if remaining == 0 {
                        if let Some(end) = self.element_done() {
                            return Ok(Some(end));
                        }
                    } else {
                        self.open(Frame::Counted { remaining }, start)?;
                    }
                    continue;
                }
                b'.' => {
                    let Some(Frame::Streamed { map, count }) = self.stack.last().copied() else {
                        return Err(err(start, String::from("end of stream '.' outside a streamed aggregate")));
                    };
                    if !line.is_empty() {
                        return Err(err(start, format!("end of stream '.' must be followed by CRLF, found {}", show(line))));
                    }
                    if map && count % 2 == 1 {
                        return Err(err(start, String::from("streamed map ended after a key without its value")));
                    }
                    self.stack.pop();
                }
                b';' => return Err(err(start, String::from("streamed string chunk ';' outside a streamed string '$?'"))),
                _ => return Err(self.bad_type(t, start)),
            }
            self.pos = next;
            if let Some(end) = self.element_done() {
                return Ok(Some(end));
            }
        }
    }

    fn bad_type(&self, t: u8, at: usize) -> DecodeError {
        err(at, format!("invalid type byte {} (expected one of + - : $ * _ , # ! = ( % ~ | >)", show(&[t])))
    }

    /// Checks that the `n` bytes of a bulk body and their CRLF are present.
    fn body_present(&self, buf: &[u8], body: usize, n: u64, t: u8) -> Result<bool, DecodeError> {
        let n = n as usize; // fits: checked by parse_len
        let Some(end) = body.checked_add(n).and_then(|e| e.checked_add(2)) else {
            return Err(err(body, String::from("length overflows this platform's address space")));
        };
        if buf.len() < end {
            return Ok(false);
        }
        if buf[body + n] != b'\r' || buf[body + n + 1] != b'\n' {
            return Err(err(body + n, format!("{} of {} bytes is not followed by CRLF", type_name(t), n)));
        }
        Ok(true)
    }

    fn open(&mut self, frame: Frame, at: usize) -> Result<(), DecodeError> {
        if self.stack.len() >= self.limits.max_depth {
            return Err(err(at, format!("nesting deeper than the limit of {} levels", self.limits.max_depth)));
        }
        self.stack.push(frame);
        Ok(())
    }

    /// Records that one element ended at `self.pos`; returns the end of the
    /// top-level value when that completes it.
    fn element_done(&mut self) -> Option<usize> {
        loop {
            match self.stack.last_mut() {
                None => return Some(self.pos),
                Some(Frame::Counted { remaining }) => {
                    *remaining -= 1;
                    if *remaining > 0 {
                        return None;
                    }
                    self.stack.pop();
                }
                Some(Frame::Streamed { count, .. }) => {
                    // Checked against the limit when the next element starts.
                    *count += 1;
                    return None;
                }
                Some(Frame::StreamedString { .. }) => return None, // unreachable: chunks are not elements
            }
        }
    }
}

#[cold]
#[inline(never)]
fn too_many(map: bool, at: usize, max: u64) -> DecodeError {
    let what = if map { "streamed map" } else { "streamed aggregate" };
    err(at, format!("{} has more than the limit of {} elements", what, max))
}

#[cold]
#[inline(never)]
fn too_long(at: usize, total: u64, max: u64) -> DecodeError {
    err(at, format!("streamed string of {} bytes exceeds the limit of {} bytes", total, max))
}

fn is_type_byte(t: u8) -> bool {
    matches!(t, b'+' | b'-' | b':' | b'$' | b'*' | b'_' | b',' | b'#' | b'!' | b'=' | b'(' | b'%' | b'~' | b'|' | b'>' | b'.' | b';')
}

/// An aggregate being built: its kind, the elements so far, and how many
/// are still expected (`None`: streamed, until `.`).
#[derive(Debug, Clone)]
struct Open {
    kind: u8,
    items: Vec<Value>,
    remaining: Option<usize>,
}

impl Open {
    fn finish(self) -> Value {
        match self.kind {
            b'*' => Value::Array(self.items),
            b'~' => Value::Set(self.items),
            b'>' => Value::Push(self.items),
            b'%' => Value::Map(pairs(self.items)),
            _ => {
                // `|`: the pairs, then the value they belong to.
                let mut items = self.items;
                let value = if items.len() % 2 == 1 { items.pop().unwrap_or(Value::Null) } else { Value::Null };
                Value::Attributed { attributes: pairs(items), value: Box::new(value) }
            }
        }
    }
}

/// The build pass over bytes the check pass accepted. Iterative, with an
/// explicit stack, so that the 1024 levels the limits allow cannot overflow
/// a thread's stack (a wasm module has 1 MiB). It cannot fail, and falls
/// back to harmless values rather than panicking should it ever be handed
/// unchecked bytes.
fn build(buf: &[u8], at: &mut usize, stack: &mut Vec<Open>) -> Value {
    stack.clear();
    loop {
        let start = *at;
        let item = match (buf.get(start), find_line(buf, start)) {
            (Some(&t), Some((line_end, next))) => {
                *at = next;
                build_item(buf, t, &buf[start + 1..line_end], at, stack)
            }
            // Unchecked bytes: close what is open.
            _ => {
                *at = buf.len();
                match stack.pop() {
                    Some(open) => Some(open.finish()),
                    None => return Value::Null,
                }
            }
        };
        let Some(mut value) = item else { continue };
        // Hand the value to the aggregates it completes.
        loop {
            let Some(top) = stack.last_mut() else { return value };
            top.items.push(value);
            match &mut top.remaining {
                Some(r) if *r <= 1 => {
                    value = stack.pop().map(Open::finish).unwrap_or(Value::Null);
                }
                Some(r) => {
                    *r -= 1;
                    break;
                }
                None => break,
            }
        }
    }
}

/// One header line (type `t`, content `line`) and its body: `Some(value)`
/// for a scalar or a finished aggregate, `None` when an aggregate opened.
fn build_item(buf: &[u8], t: u8, line: &[u8], at: &mut usize, stack: &mut Vec<Open>) -> Option<Value> {
    let len = || fast_len(line).map(|n| n as i64).or_else(|| parse_i64(line)).unwrap_or(0);
    let mut body = |n: i64| -> Vec<u8> {
        let n = (n.max(0) as usize).min(buf.len() - *at);
        let v = buf[*at..*at + n].to_vec();
        *at = (*at + n + 2).min(buf.len());
        v
    };
    Some(match t {
        b'+' => Value::Simple(line.to_vec()),
        b'-' => Value::Error(line.to_vec()),
        b':' => Value::Integer(len()),
        b'_' => Value::Null,
        b',' => Value::Double(parse_double(line).unwrap_or(f64::NAN)),
        b'#' => Value::Boolean(line == b"t"),
        b'(' => Value::BigNumber(line.to_vec()),
        b'$' if line.len() == 1 && line[0] == b'?' => {
            let mut out = Vec::new();
            while *at < buf.len() {
                let Some((le, nx)) = find_line(buf, *at) else { break };
                let n = parse_i64(&buf[*at + 1..le]).unwrap_or(0).max(0) as usize;
                *at = nx;
                if n == 0 {
                    break;
                }
                let n = n.min(buf.len() - *at);
                out.extend_from_slice(&buf[*at..*at + n]);
                *at = (*at + n + 2).min(buf.len());
            }
            Value::Bulk(out)
        }
        b'$' => match len() {
            -1 => Value::NullBulk,
            n => Value::Bulk(body(n)),
        },
        b'!' => Value::BlobError(body(len())),
        b'=' => {
            let v = body(len());
            let mut format = [0u8; 3];
            for (f, b) in format.iter_mut().zip(&v) {
                *f = *b;
            }
            Value::Verbatim { format, text: v.get(4..).unwrap_or_default().to_vec() }
        }
        b'*' | b'~' | b'%' if line.len() == 1 && line[0] == b'?' => {
            stack.push(Open { kind: t, items: Vec::new(), remaining: None });
            return None;
        }
        b'.' => stack.pop().map(Open::finish).unwrap_or(Value::Null),
        b'*' if line == b"-1" => Value::NullArray,
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = len().max(0) as u64;
            let count = match t {
                b'%' => n.saturating_mul(2),
                b'|' => n.saturating_mul(2).saturating_add(1),
                _ => n,
            };
            if count == 0 {
                return Some(Open { kind: t, items: Vec::new(), remaining: Some(0) }.finish());
            }
            // Safe capacity: every element takes at least 3 checked bytes.
            let cap = (count.min(usize::MAX as u64) as usize).min((buf.len() - *at) / 3);
            stack.push(Open { kind: t, items: Vec::with_capacity(cap), remaining: Some(count.min(usize::MAX as u64) as usize) });
            return None;
        }
        _ => Value::Null,
    })
}

fn pairs(items: Vec<Value>) -> Vec<(Value, Value)> {
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        out.push((k, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time search finds exactly what a byte loop finds, at
    /// every alignment and length, with decoys that trip the zero-byte trick
    /// (0x0c, 0x0e: one off CR; 0x8d: CR with the top bit set).
    #[test]
    fn find_either_matches_a_byte_loop() {
        let alphabet = [b'a', b'\r', b'\n', 0x0c, 0x0e, 0x8d, 0x00, 0xff, 0x0b];
        let mut seed = 1u64;
        for _ in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (seed >> 58) as usize;
            let hay: Vec<u8> = (0..len).map(|i| alphabet[((seed >> (i % 50)) as usize + i * 7) % alphabet.len()]).collect();
            let slow = hay.iter().position(|&c| c == b'\r' || c == b'\n');
            assert_eq!(find_either(&hay, b'\r', b'\n'), slow, "{hay:?}");
            assert_eq!(find_byte(&hay, b'\r'), hay.iter().position(|&c| c == b'\r'), "{hay:?}");
        }
    }

    /// Every answer of a decoder fed growing prefixes of `input` ending at
    /// `cuts` (as a socket reader feeds it), through [`Decoder::decode`] or
    /// the two passes alone.
    fn answers(input: &[u8], limits: Limits, cuts: &[usize], fast: bool) -> Vec<Result<Decoded, DecodeError>> {
        let mut d = Decoder::with_limits(limits);
        let (mut out, mut start) = (Vec::new(), 0);
        for &end in cuts.iter().chain([input.len()].iter()) {
            while start < end {
                let answer = if fast { d.decode(&input[start..end]) } else { d.decode_general(&input[start..end]) };
                let consumed = match &answer {
                    Ok(Decoded::Complete { consumed, .. }) => *consumed,
                    _ => 0,
                };
                let error = answer.is_err();
                out.push(answer);
                if error {
                    return out;
                }
                if consumed == 0 {
                    break;
                }
                start += consumed;
            }
        }
        out
    }

    /// The fast path answers as the two passes do, whole, cut at every byte,
    /// and byte by byte.
    fn assert_same_answers(input: &[u8], limits: Limits) {
        let same = |cuts: &[usize]| assert_eq!(answers(input, limits, cuts, true), answers(input, limits, cuts, false), "{:?} cut at {cuts:?}", show(input));
        for cut in 0..=input.len() {
            same(&[cut]);
        }
        same(&(0..input.len()).collect::<Vec<_>>());
    }

    const SMALL: Limits = Limits { max_depth: 2, max_bulk_len: 5, max_aggregate_len: 3 };

    #[test]
    fn fast_path_gives_the_values_of_the_two_passes_at_every_split() {
        let replies: &[&[u8]] = &[
            b"+OK\r\n", b":123\r\n", b":-5\r\n", b":0\r\n", b":-9223372036854775808\r\n", b"$5\r\nhello\r\n", b"$0\r\n\r\n", b"$-1\r\n",
            b"$3\r\na\rb\r\n", b"$4\r\n\r\n\r\n\r\n", b"-ERR wrong type\r\n", b"+\r\n", b"*2\r\n+OK\r\n:1\r\n", b"*-1\r\n", b"%1\r\n+a\r\n$1\r\nb\r\n",
            b"_\r\n", b"#t\r\n", b"$?\r\n;2\r\nab\r\n;0\r\n", b"*?\r\n:1\r\n.\r\n", b"+PONG\r\n",
        ];
        let all = replies.concat();
        assert_eq!(decode_all(&all).values.len(), replies.len());
        assert_same_answers(&all, Limits::default());
        for reply in replies {
            assert_same_answers(reply, Limits::default());
            assert_same_answers(reply, SMALL);
        }
    }

    #[test]
    fn fast_path_refuses_what_the_limits_refuse() {
        let limits = Limits { max_bulk_len: 4, ..Limits::default() };
        let mut d = Decoder::with_limits(limits);
        assert_eq!(d.decode(b"$4\r\nhell\r\n"), Ok(Decoded::Complete { value: Value::Bulk(b"hell".to_vec()), consumed: 10 }));
        let e = d.decode(b"$5\r\nhello\r\n").unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (0, "bulk string length 5 exceeds the limit of 4 bytes"));
        assert_same_answers(b"+OK\r\n$4\r\nhell\r\n$5\r\nhello\r\n:1\r\n", limits);
        assert_same_answers(b"$5\r\nhello\r\n", SMALL);
        assert_same_answers(b"$6\r\nhello!\r\n", SMALL);
        assert_same_answers(b"$18446744073709551616\r\n", Limits { max_bulk_len: u64::MAX, ..Limits::default() });
    }

    #[test]
    fn fast_path_leaves_malformed_one_liners_to_the_two_passes() {
        // (input, offset and start of the message the two passes give)
        let cases: &[(&[u8], usize, &str)] = &[
            (b":12a\r\n", 0, "invalid integer"),
            (b":\r\n", 0, "invalid integer"),
            (b":+1\r\n", 0, "invalid integer"),
            (b":01\r\n", 0, "invalid integer"),
            (b":9223372036854775808\r\n", 0, "invalid integer"),
            (b"+OK\nX\r\n", 3, "simple string contains a LF byte"),
            (b"+O\rK\r\n", 2, "simple string contains a CR byte"),
            (b"-E\nR\r\n", 2, "simple error contains a LF byte"),
            (b"$5\r\nhello!\r\n", 9, "bulk string of 5 bytes is not followed by CRLF"),
            (b"$1\r\nab\r\n", 5, "bulk string of 1 bytes is not followed by CRLF"),
            (b"$-2\r\n", 0, "invalid bulk string length -2"),
            (b"$01\r\nx\r\n", 0, "invalid bulk string length"),
            (b"$ 1\r\nx\r\n", 0, "invalid bulk string length"),
            (b"+OK\r\n:1\r\n:12a\r\n", 9, "invalid integer"),
        ];
        for &(input, offset, message) in cases {
            let got = decode_all(input).error.unwrap_or_else(|| panic!("{} decoded", show(input)));
            assert_eq!(got.offset, offset, "{}: {}", show(input), got.message);
            assert!(got.message.starts_with(message), "{}: {}", show(input), got.message);
            assert_same_answers(input, Limits::default());
        }
        // A line without its CR LF yet (`+OK\n`, `+OK\r`, a lone CR) is incomplete, as before.
        for input in [&b"+OK\n"[..], b"+OK\r", b"+O\rK", b":12", b"$5\r\nhel", b"$5\r\nhello\r"] {
            assert_eq!(Decoder::new().decode(input), Decoder::new().decode_general(input), "{}", show(input));
            assert!(matches!(Decoder::new().decode(input), Ok(Decoded::Incomplete { .. })), "{}", show(input));
            assert_same_answers(input, Limits::default());
        }
    }

    /// With a value under way, even a caller that changed buffers gets what
    /// the two passes give (they resume at the position they had reached).
    #[test]
    fn fast_path_waits_while_a_value_is_under_way() {
        let calls: &[&[u8]] = &[b"*2\r\n:1\r\n", b"+OK\r\n:2\r\n:3\r\n", b"$?\r\n;1\r\na\r\n", b":7\r\n:8\r\n;0\r\n"];
        let (mut fast, mut general) = (Decoder::new(), Decoder::new());
        for buf in calls {
            assert_eq!(fast.decode(buf), general.decode_general(buf), "{}", show(buf));
        }
    }

    /// Random strings of RESP fragments: the fast path and the two passes
    /// give the same answers, whatever the bytes and the cuts.
    #[test]
    fn fast_path_matches_the_two_passes_on_random_fragments() {
        let fragments: &[&[u8]] = &[b"+", b"-", b":", b"$", b"*", b"\r\n", b"\r", b"\n", b"OK", b"1", b"2", b"-1", b"0", b"12", b"a", b"?", b";", b"_", b"5", b"ab"];
        let mut seed = 7u64;
        for _ in 0..3000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let n = (seed >> 59) as usize + 1;
            let mut input = Vec::new();
            let mut s = seed;
            for _ in 0..n {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                input.extend_from_slice(fragments[(s >> 33) as usize % fragments.len()]);
            }
            assert_same_answers(&input, Limits::default());
            assert_same_answers(&input, SMALL);
        }
    }
}
