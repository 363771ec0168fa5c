//! A stream of requests split as the Redis server splits them
//! (`processInputBuffer` in `src/networking.c`): a request that starts with
//! `*` is a multibulk of bulk strings, anything else is an inline line.
//! This lets a file mix generated RESP and hand-written lines, as
//! `redis-cli --pipe` input may.
//!
//! Checked against redis-server 7.0 on generated mixed streams
//! (`tests/redis_server.rs`). Differences from the server, all to fail
//! loudly on a broken file rather than hang or guess:
//! - the CRLF after a bulk argument is checked (the server skips two bytes
//!   unseen), and multibulk/bulk headers get byte offsets in their messages;
//! - a NUL byte in an inline line is an error (the server's `strchr` never
//!   finds the end of such a line, so it waits);
//! - the 64 KiB inline and header limit applies to every line, whether or
//!   not its end has arrived (the server checks only while waiting for it),
//!   so the verdict does not depend on how the stream was cut;
//! - at `eof`, a request cut short is an error rather than a wait.

use crate::inline::{column_of, split_line};
use crate::number::parse_i64;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Redis `PROTO_INLINE_MAX_SIZE`: the longest inline line or multibulk
/// header line the server accepts (64 KiB).
pub const PROTO_INLINE_MAX_SIZE: usize = 64 * 1024;
/// Redis `proto-max-bulk-len` default: 512 MiB.
pub const PROTO_MAX_BULK_LEN: u64 = 512 * 1024 * 1024;
/// Redis's cap on a multibulk count (`INT_MAX`).
pub const PROTO_MAX_MULTIBULK_LEN: u64 = i32::MAX as u64;

/// One command read from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub argv: Vec<Vec<u8>>,
    /// Bytes of the buffer this request (and any blank lines or empty
    /// multibulks before it) took.
    pub consumed: usize,
    /// 1-based line where the request starts.
    pub line: usize,
    /// Byte offset in the whole stream where the request starts.
    pub offset: usize,
}

/// A request that cannot be parsed. Inline errors carry a column; multibulk
/// errors are located by byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    /// Byte offset in the whole stream.
    pub offset: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (characters) for inline lines; `None` in a multibulk.
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.column {
            Some(c) => write!(f, "line {}, column {}: {}", self.line, c, self.message),
            None => write!(f, "byte {}: {}", self.offset, self.message),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for RequestError {}

/// Incremental request splitter. Feed it the unconsumed bytes; drop
/// `consumed` bytes after each request.
#[derive(Debug, Clone)]
pub struct RequestReader {
    /// Bytes of the stream already consumed.
    offset: usize,
    /// 1-based line of the first unconsumed byte.
    line: usize,
    /// Longest inline line accepted (default [`PROTO_INLINE_MAX_SIZE`]).
    pub max_inline_len: usize,
    /// Longest bulk argument accepted (default [`PROTO_MAX_BULK_LEN`]).
    pub max_bulk_len: u64,
}

impl Default for RequestReader {
    fn default() -> Self {
        Self::new()
    }
}

/// One request's argv and the offset just after it (empty argv: skipped).
type Parsed = (Vec<Vec<u8>>, usize);

fn count_lines(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

impl RequestReader {
    pub fn new() -> Self {
        RequestReader { offset: 0, line: 1, max_inline_len: PROTO_INLINE_MAX_SIZE, max_bulk_len: PROTO_MAX_BULK_LEN }
    }

    /// Byte offset in the stream of the next unconsumed byte.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// 1-based line of the next unconsumed byte.
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next command at the front of `buf` (the unconsumed bytes).
    ///
    /// `Ok(None)`: more bytes are needed — or, with `eof`, the stream holds
    /// no further command (only blank lines, `*0` or `*-1` may remain). Nothing
    /// is consumed then: call again with the same bytes and more. With `eof`, a last line without `\n` is a
    /// command, and a multibulk cut short is an error.
    pub fn next(&mut self, buf: &[u8], eof: bool) -> Result<Option<Request>, RequestError> {
        let mut pos = 0;
        loop {
            // "More bytes needed" consumes nothing, not even the blank lines
            // skipped on the way: the caller feeds them again, and line and
            // offset counts stay right.
            if pos >= buf.len() {
                return Ok(None);
            }
            let start = pos;
            let parsed = if buf[pos] == b'*' { self.multibulk(buf, pos, eof)? } else { self.inline(buf, pos, eof)? };
            let Some((argv, end)) = parsed else {
                return Ok(None);
            };
            pos = end;
            if argv.is_empty() {
                continue; // blank line or `*0` / `*-1`: skipped, as the server does
            }
            let line = self.line + count_lines(&buf[..start]);
            let offset = self.offset + start;
            self.advance(&buf[..end]);
            return Ok(Some(Request { argv, consumed: end, line, offset }));
        }
    }

    fn advance(&mut self, consumed: &[u8]) {
        self.offset += consumed.len();
        self.line += count_lines(consumed);
    }

    fn err_at(&self, buf: &[u8], at: usize, message: String) -> RequestError {
        RequestError { offset: self.offset + at, line: self.line + count_lines(&buf[..at]), column: None, message }
    }

    fn inline(&self, buf: &[u8], start: usize, eof: bool) -> Result<Option<Parsed>, RequestError> {
        let (line_end, next) = match buf[start..].iter().position(|&b| b == b'\n') {
            Some(p) => (start + p, start + p + 1),
            None if eof => (buf.len(), buf.len()),
            None => {
                // Room for the CR that may come before the LF: the verdict
                // must not depend on where the stream was cut.
                if buf.len() - start > self.max_inline_len + 1 {
                    return Err(self.err_at(buf, start, format!("inline command longer than {} bytes (write it as RESP)", self.max_inline_len)));
                }
                return Ok(None);
            }
        };
        let mut end = line_end;
        if end > start && buf[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &buf[start..end];
        if line.len() > self.max_inline_len {
            return Err(self.err_at(buf, start, format!("inline command longer than {} bytes (write it as RESP)", self.max_inline_len)));
        }
        match split_line(line) {
            Ok(argv) => Ok(Some((argv, next))),
            Err(e) => {
                let mut err = self.err_at(buf, start + e.offset, String::from(e.message));
                err.column = Some(column_of(line, e.offset));
                Err(err)
            }
        }
    }

    /// A header line `<t><number>\r\n` at `at`: the number and the offset after it.
    fn header(&self, buf: &[u8], at: usize, eof: bool, what: &str) -> Result<Option<(i64, usize)>, RequestError> {
        // The same limit whether or not the CR has arrived, so that the
        // verdict does not depend on where the stream was cut.
        let too_long = || self.err_at(buf, at, format!("{} header longer than {} bytes", what, self.max_inline_len));
        let Some(cr) = buf[at..].iter().position(|&b| b == b'\r').map(|p| at + p) else {
            if buf.len() - at > self.max_inline_len {
                return Err(too_long());
            }
            return self.cut(buf, at, eof, what);
        };
        if cr - at > self.max_inline_len {
            return Err(too_long());
        }
        if cr + 1 >= buf.len() {
            return self.cut(buf, at, eof, what);
        }
        if buf[cr + 1] != b'\n' {
            return Err(self.err_at(buf, cr, format!("{} header must end with CRLF", what)));
        }
        let digits = &buf[at + 1..cr];
        match parse_i64(digits) {
            Some(n) => Ok(Some((n, cr + 2))),
            None => Err(self.err_at(buf, at, format!("invalid {} length \"{}\"", what, String::from_utf8_lossy(&digits[..digits.len().min(40)])))),
        }
    }

    fn cut<T>(&self, buf: &[u8], at: usize, eof: bool, what: &str) -> Result<Option<T>, RequestError> {
        if eof {
            Err(self.err_at(buf, at, format!("incomplete {}: the input ends inside it", what)))
        } else {
            Ok(None)
        }
    }

    fn multibulk(&self, buf: &[u8], start: usize, eof: bool) -> Result<Option<Parsed>, RequestError> {
        let Some((n, mut pos)) = self.header(buf, start, eof, "multibulk")? else { return Ok(None) };
        if n <= 0 {
            return Ok(Some((Vec::new(), pos)));
        }
        if n as u64 > PROTO_MAX_MULTIBULK_LEN {
            return Err(self.err_at(buf, start, format!("multibulk length {} exceeds {}", n, PROTO_MAX_MULTIBULK_LEN)));
        }
        // Room for a usual command at once, but never more than 16 from the
        // header alone (a `*2147483647` must not allocate): argv grows as
        // further arguments arrive.
        let mut argv = Vec::with_capacity((n as usize).min(16));
        for _ in 0..n {
            if pos >= buf.len() {
                return self.cut(buf, start, eof, "multibulk");
            }
            if buf[pos] != b'$' {
                return Err(self.err_at(buf, pos, format!("expected '$' for a bulk argument, got '{}'", (buf[pos] as char).escape_default())));
            }
            let Some((len, body)) = self.header(buf, pos, eof, "bulk")? else {
                if eof {
                    return self.cut(buf, start, eof, "multibulk");
                }
                return Ok(None);
            };
            if len < 0 || len as u64 > self.max_bulk_len {
                return Err(self.err_at(buf, pos, format!("invalid bulk length {} (0 to {})", len, self.max_bulk_len)));
            }
            let len = len as usize;
            let Some(end) = body.checked_add(len).and_then(|e| e.checked_add(2)) else {
                return Err(self.err_at(buf, pos, String::from("bulk length overflows this platform's address space")));
            };
            if buf.len() < end {
                // At the end of the input, a CRLF before the end of the
                // bulk is its likely end: say the length is wrong rather
                // than "incomplete" (a value may hold CRLF, so only at eof).
                if let (true, Some(k)) = (eof, crlf_in(&buf[body..])) {
                    return Err(self.err_at(buf, pos, wrong_length(len, k)));
                }
                return self.cut(buf, start, eof, "multibulk");
            }
            if &buf[body + len..end] != b"\r\n" {
                let message = match crlf_in(&buf[body..]) {
                    Some(k) => wrong_length(len, k),
                    None => format!("bulk argument of {} bytes is not followed by CRLF", len),
                };
                return Err(self.err_at(buf, body + len, message));
            }
            argv.push(buf[body..body + len].to_vec());
            pos = end;
        }
        Ok(Some((argv, pos)))
    }
}

/// Bytes before the first CRLF of `body`, if it has one.
fn crlf_in(body: &[u8]) -> Option<usize> {
    body.windows(2).position(|w| w == b"\r\n")
}

/// A bulk whose `$` length disagrees with where its CRLF is.
fn wrong_length(len: usize, before_crlf: usize) -> String {
    format!("bulk length {len} but {before_crlf} bytes before CRLF (the $ length counts the bytes of the argument)")
}
