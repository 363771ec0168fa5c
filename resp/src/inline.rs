//! Inline commands (`SET k "a b"`), split exactly as Redis `sdssplitargs`
//! (`src/sds.c`), which the server uses for inline requests and redis-cli for
//! what the user types:
//!
//! - blanks (`isspace`: space, `\t`, `\n`, `\v`, `\f`, `\r`) separate arguments;
//!   an unquoted argument ends only at space, `\t`, `\n`, `\r` or NUL;
//! - `"double quotes"` take `\n \r \t \b \a`, `\xHH` and `\` + any other byte
//!   (that byte itself: `\\`, `\"`);
//! - `'single quotes'` take only `\'`;
//! - a quote may open in the middle of an argument (`a"b c"` is `ab c`), but a
//!   closing quote must be followed by a blank or the end;
//! - an unterminated quote is an error;
//! - a NUL byte ends the line, as the C string it is in Redis.
//!
//! [`parse_inline`] (and [`crate::RequestReader`]) read lines as the server
//! does, and there a NUL byte is an error: the server looks for the end of
//! an inline request with `strchr(querybuf, '\n')`, which stops at the NUL,
//! so it never executes the line and waits until the 64 KiB inline limit
//! (checked against redis-server 7.0 in `tests/redis_server.rs`). Write such
//! an argument as `"\x00"`.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Why [`split_args`] rejected a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitError {
    /// Byte offset in the line: the opening quote of an unterminated string,
    /// or the byte right after a closing quote that is not followed by a blank.
    pub offset: usize,
    /// What is wrong, for a person.
    pub message: &'static str,
}

/// `isspace` in the C locale.
#[inline]
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Splits one line into argv, as Redis `sdssplitargs`.
///
/// An empty or blank line gives an empty argv (the server skips it).
/// Errors: unbalanced quotes, or a closing quote followed by something other
/// than a blank; [`SplitError::offset`] says where.
pub fn split_args(line: &[u8]) -> Result<Vec<Vec<u8>>, SplitError> {
    // The line as the C string sdssplitargs sees: up to the first NUL.
    let line = match line.iter().position(|&b| b == 0) {
        Some(n) => &line[..n],
        None => line,
    };
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut argv = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && is_space(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Ok(argv);
        }
        let mut current = Vec::new();
        let mut quote: Option<(u8, usize)> = None; // the quote byte and where it opened
        loop {
            let c = at(p);
            match quote {
                Some((b'"', open)) => {
                    if c == b'\\' && at(p + 1) == b'x' && hex(at(p + 2)).is_some() && hex(at(p + 3)).is_some() {
                        current.push(hex(at(p + 2)).unwrap_or(0) * 16 + hex(at(p + 3)).unwrap_or(0));
                        p += 3;
                    } else if c == b'\\' && at(p + 1) != 0 {
                        p += 1;
                        current.push(match at(p) {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    } else if c == b'"' {
                        if at(p + 1) != 0 && !is_space(at(p + 1)) {
                            return Err(SplitError { offset: p + 1, message: "closing quote must be followed by a space or the end of the line" });
                        }
                        p += 1;
                        break;
                    } else if c == 0 {
                        return Err(SplitError { offset: open, message: "unbalanced double quote" });
                    } else {
                        current.push(c);
                    }
                }
                Some((_, open)) => {
                    if c == b'\\' && at(p + 1) == b'\'' {
                        p += 1;
                        current.push(b'\'');
                    } else if c == b'\'' {
                        if at(p + 1) != 0 && !is_space(at(p + 1)) {
                            return Err(SplitError { offset: p + 1, message: "closing quote must be followed by a space or the end of the line" });
                        }
                        p += 1;
                        break;
                    } else if c == 0 {
                        return Err(SplitError { offset: open, message: "unbalanced single quote" });
                    } else {
                        current.push(c);
                    }
                }
                None => match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' | b'\'' => quote = Some((c, p)),
                    _ => {
                        // A run of plain bytes at once: most arguments have no quotes.
                        let end = line[p..].iter().position(|&b| matches!(b, b' ' | b'\n' | b'\r' | b'\t' | b'"' | b'\'')).map_or(line.len(), |n| p + n);
                        current.extend_from_slice(&line[p..end]);
                        p = end;
                        continue;
                    }
                },
            }
            p += 1;
        }
        argv.push(current);
    }
}

/// One command of a multi-line inline text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineCommand {
    pub argv: Vec<Vec<u8>>,
    /// 1-based line number.
    pub line: usize,
    /// Byte range of the line in the text, without its line break.
    pub start: usize,
    pub end: usize,
}

/// A line that could not be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineError {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters (UTF-8 code points; a byte that is not
    /// valid UTF-8 counts as one).
    pub column: usize,
    /// Byte offset in the whole text.
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for InlineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for InlineError {}

/// What [`parse_inline`] found: every command that split, and every line that did not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InlineParse {
    pub commands: Vec<InlineCommand>,
    pub errors: Vec<InlineError>,
}

/// 1-based character column of byte `offset` in `line`.
pub fn column_of(line: &[u8], offset: usize) -> usize {
    1 + line[..offset.min(line.len())].iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// Splits a text of inline commands, one per line (`\n` or `\r\n`), as the
/// server reads inline requests: blank lines are skipped, each line goes
/// through [`split_args`], and a NUL byte is an error. Every line is tried,
/// so all errors are reported.
pub fn parse_inline(text: &[u8]) -> InlineParse {
    let mut out = InlineParse::default();
    let mut start = 0;
    let mut line_no = 0;
    while start <= text.len() {
        line_no += 1;
        let nl = text[start..].iter().position(|&b| b == b'\n').map(|p| start + p);
        let mut end = nl.unwrap_or(text.len());
        if end > start && text[end - 1] == b'\r' {
            end -= 1;
        }
        let line = &text[start..end];
        match split_line(line) {
            Ok(argv) if argv.is_empty() => {}
            Ok(argv) => out.commands.push(InlineCommand { argv, line: line_no, start, end }),
            Err(e) => out.errors.push(InlineError {
                line: line_no,
                column: column_of(line, e.offset),
                offset: start + e.offset,
                message: String::from(e.message),
            }),
        }
        match nl {
            Some(n) => start = n + 1,
            None => break,
        }
    }
    out
}

/// The message for a NUL byte in an inline request.
pub(crate) const NUL_IN_INLINE: &str = "NUL byte in an inline command: redis-server never finds the end of such a line (write it as \"\\x00\")";

/// [`split_args`] for a line of an inline request stream: a NUL byte is an
/// error (see the module docs).
pub(crate) fn split_line(line: &[u8]) -> Result<Vec<Vec<u8>>, SplitError> {
    if let Some(at) = line.iter().position(|&b| b == 0) {
        return Err(SplitError { offset: at, message: NUL_IN_INLINE });
    }
    split_args(line)
}

/// Writes argv back as one inline line that [`split_args`] reads as the same
/// argv: bare words where that is safe, else double quotes with the
/// `sdscatrepr` escapes. Text that is valid UTF-8 keeps its printable
/// characters (`héllo` stays `héllo`); control characters and bytes that are
/// not UTF-8 become `\xHH`.
pub fn to_inline(argv: &[impl AsRef<[u8]>]) -> String {
    let mut s = String::new();
    for (i, a) in argv.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let a = a.as_ref();
        match core::str::from_utf8(a) {
            Ok(text) if !text.is_empty() && text.chars().all(|c| !c.is_control() && !c.is_whitespace() && c != '"' && c != '\'' && c != '\u{0}') => {
                s.push_str(text)
            }
            Ok(text) => {
                s.push('"');
                for c in text.chars() {
                    match c {
                        '\\' => s.push_str("\\\\"),
                        '"' => s.push_str("\\\""),
                        '\n' => s.push_str("\\n"),
                        '\r' => s.push_str("\\r"),
                        '\t' => s.push_str("\\t"),
                        '\u{7}' => s.push_str("\\a"),
                        '\u{8}' => s.push_str("\\b"),
                        c if c.is_control() => {
                            let mut b = [0u8; 4];
                            for byte in c.encode_utf8(&mut b).bytes() {
                                let _ = core::fmt::Write::write_fmt(&mut s, format_args!("\\x{:02x}", byte));
                            }
                        }
                        c => s.push(c),
                    }
                }
                s.push('"');
            }
            Err(_) => crate::display::push_repr(&mut s, a),
        }
    }
    s
}
