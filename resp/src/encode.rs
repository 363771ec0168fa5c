//! RESP encoding: argv → multibulk (what clients send), and every [`Value`]
//! back to its canonical bytes, so that decode → encode is the identity on
//! canonical input.

use crate::number::{digits, write_i64};
use crate::value::Value;
use alloc::vec::Vec;
use core::fmt::Write as _;

/// Appends the multibulk form of `argv` to `out`: `*N\r\n` then `$len\r\narg\r\n`
/// per argument, as every Redis client sends a command.
///
/// `argv` is any exact-size sequence of byte strings: `&[Vec<u8>]`,
/// `&[&str]`, or a view into a flat buffer of arguments.
pub fn encode_command<I>(argv: I, out: &mut Vec<u8>)
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
    I::IntoIter: ExactSizeIterator + Clone,
{
    let args = argv.into_iter();
    out.reserve(encoded_command_len(args.clone()));
    header(out, b'*', args.len() as i64);
    for a in args {
        bulk(out, b'$', a.as_ref());
    }
}

/// The exact number of bytes [`encode_command`] writes for `argv`.
pub fn encoded_command_len<I>(argv: I) -> usize
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
    I::IntoIter: ExactSizeIterator,
{
    let args = argv.into_iter();
    let mut n = 3 + digits(args.len());
    for a in args {
        let l = a.as_ref().len();
        n += 5 + digits(l) + l;
    }
    n
}

#[inline]
fn header(out: &mut Vec<u8>, t: u8, n: i64) {
    out.push(t);
    write_i64(out, n);
    out.extend_from_slice(b"\r\n");
}

#[inline]
fn bulk(out: &mut Vec<u8>, t: u8, data: &[u8]) {
    header(out, t, data.len() as i64);
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

fn line(out: &mut Vec<u8>, t: u8, data: &[u8]) {
    out.push(t);
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// `core::fmt` into a byte vector, for doubles.
struct Bytes<'a>(&'a mut Vec<u8>);
impl core::fmt::Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Writes a double as RESP3 spells it: `inf`, `-inf`, `nan`, else the
/// shortest decimal that reads back to the same f64 (Rust's `{:?}`), with
/// integral values written without `.0` (`3`, `-0`) as Redis sends them
/// (`,3\r\n` from `ZSCORE` under RESP3), so that a real reply re-encodes to
/// its own bytes and redis-cli's `(double) 3` is reproduced.
pub(crate) fn write_double(out: &mut Vec<u8>, d: f64) {
    if d.is_nan() {
        out.extend_from_slice(b"nan");
    } else if d.is_infinite() {
        out.extend_from_slice(if d > 0.0 { b"inf" } else { b"-inf" });
    } else {
        let start = out.len();
        let _ = write!(Bytes(out), "{:?}", d);
        if out[start..].ends_with(b".0") {
            out.truncate(out.len() - 2);
        }
    }
}

impl Value {
    /// Appends the canonical RESP bytes of this value to `out`.
    ///
    /// Simple strings and errors are written as they are: a CR LF inside one
    /// (which no decoder produces) would break the framing, so callers that
    /// build values by hand must not put one there.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Simple(s) => line(out, b'+', s),
            Value::Error(s) => line(out, b'-', s),
            Value::Integer(i) => header(out, b':', *i),
            Value::Bulk(b) => bulk(out, b'$', b),
            Value::Null => out.extend_from_slice(b"_\r\n"),
            Value::NullBulk => out.extend_from_slice(b"$-1\r\n"),
            Value::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Value::Array(items) => aggregate(out, b'*', items),
            Value::Set(items) => aggregate(out, b'~', items),
            Value::Push(items) => aggregate(out, b'>', items),
            Value::Double(d) => {
                out.push(b',');
                write_double(out, *d);
                out.extend_from_slice(b"\r\n");
            }
            Value::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Value::BlobError(b) => bulk(out, b'!', b),
            Value::Verbatim { format, text } => {
                header(out, b'=', (text.len() + 4) as i64);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Value::BigNumber(n) => line(out, b'(', n),
            Value::Map(kv) => pairs(out, b'%', kv),
            Value::Attributed { attributes, value } => {
                pairs(out, b'|', attributes);
                value.encode(out);
            }
        }
    }

    /// The canonical RESP bytes of this value.
    pub fn to_resp(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode(&mut out);
        out
    }
}

fn aggregate(out: &mut Vec<u8>, t: u8, items: &[Value]) {
    header(out, t, items.len() as i64);
    for v in items {
        v.encode(out);
    }
}

fn pairs(out: &mut Vec<u8>, t: u8, kv: &[(Value, Value)]) {
    header(out, t, kv.len() as i64);
    for (k, v) in kv {
        k.encode(out);
        v.encode(out);
    }
}
