//! The redis-cli TTY format (`cliFormatReplyTTY` in Redis `src/redis-cli.c`),
//! so that the playground shows replies the way a learner has seen them:
//!
//! ```text
//! 1) "a"
//! 2) (integer) 1
//! 3) 1) (nil)
//!    2) (error) ERR x
//! ```
//!
//! Bulk strings are quoted with `sdscatrepr` escapes; verbatim strings are
//! printed raw; maps use `1# key => value` (a multi-line value starts on the
//! next line, as redis-cli 7.0.12+ prints it), sets `1~`; attributes are not
//! shown (redis-cli does not show them either). Checked against the real
//! redis-cli in `tests/display.rs`.

use crate::encode::write_double;
use crate::value::Value;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write as _;

/// Appends `bytes` quoted as Redis `sdscatrepr` does: `"`, `\\`, `\"`,
/// `\n \r \t \a \b`, printable ASCII as is, every other byte as `\xHH`.
pub fn push_repr(s: &mut String, bytes: &[u8]) {
    s.push('"');
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0x07 => s.push_str("\\a"),
            0x08 => s.push_str("\\b"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{:02x}", b);
            }
        }
    }
    s.push('"');
}

fn push_lossy(s: &mut String, bytes: &[u8]) {
    s.push_str(&String::from_utf8_lossy(bytes));
}

impl Value {
    /// This value as redis-cli prints it in a terminal, each line ending in `\n`.
    pub fn display(&self) -> String {
        let mut out = String::new();
        tty(self, "", &mut out);
        out
    }
}

fn tty(v: &Value, prefix: &str, out: &mut String) {
    match v {
        Value::Attributed { value, .. } => tty(value, prefix, out),
        Value::Error(e) | Value::BlobError(e) => {
            out.push_str("(error) ");
            push_lossy(out, e);
            out.push('\n');
        }
        Value::Simple(s) => {
            push_lossy(out, s);
            out.push('\n');
        }
        Value::Integer(i) => {
            let _ = writeln!(out, "(integer) {}", i);
        }
        Value::Double(d) => {
            let mut b = Vec::new();
            write_double(&mut b, *d);
            out.push_str("(double) ");
            push_lossy(out, &b);
            out.push('\n');
        }
        Value::Bulk(b) => {
            push_repr(out, b);
            out.push('\n');
        }
        Value::Verbatim { text, .. } => {
            push_lossy(out, text);
            out.push('\n');
        }
        Value::Null | Value::NullBulk | Value::NullArray => out.push_str("(nil)\n"),
        Value::Boolean(b) => out.push_str(if *b { "(true)\n" } else { "(false)\n" }),
        Value::BigNumber(n) => {
            out.push_str("(big number) ");
            push_lossy(out, n);
            out.push('\n');
        }
        Value::Array(items) | Value::Push(items) | Value::Set(items) => {
            if items.is_empty() {
                out.push_str(match v {
                    Value::Array(_) => "(empty array)\n",
                    Value::Set(_) => "(empty set)\n",
                    _ => "(empty push)\n",
                });
                return;
            }
            let sep = if matches!(v, Value::Set(_)) { '~' } else { ')' };
            let (width, child) = child_prefix(prefix, items.len());
            for (i, item) in items.iter().enumerate() {
                index(out, if i == 0 { "" } else { prefix }, i + 1, width, sep);
                tty(item, &child, out);
            }
        }
        Value::Map(kv) => {
            if kv.is_empty() {
                out.push_str("(empty hash)\n");
                return;
            }
            let (width, child) = child_prefix(prefix, kv.len());
            for (i, (k, val)) in kv.iter().enumerate() {
                index(out, if i == 0 { "" } else { prefix }, i + 1, width, '#');
                tty(k, &child, out);
                out.pop(); // the key's newline
                out.push_str(" => ");
                if multiline(val) {
                    // redis-cli (7.0.12+) starts a multi-line value on its own
                    // line, so that its items align.
                    out.push('\n');
                    out.push_str(&child);
                }
                tty(val, &child, out);
            }
        }
    }
}

/// Whether redis-cli prints `v` on several lines (`cliIsMultilineValueTTY`).
fn multiline(v: &Value) -> bool {
    match v {
        Value::Attributed { value, .. } => multiline(value),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => match items.len() {
            0 => false,
            1 => multiline(&items[0]),
            _ => true,
        },
        Value::Map(kv) => match kv.len() {
            0 => false,
            1 => multiline(&kv[0].1),
            _ => true,
        },
        _ => false,
    }
}

/// Width of the largest index, and the prefix nested lines get (that width + 2 spaces).
fn child_prefix(prefix: &str, n: usize) -> (usize, String) {
    let width = crate::number::digits(n);
    let mut child = String::from(prefix);
    child.extend(core::iter::repeat_n(' ', width + 2));
    (width, child)
}

fn index(out: &mut String, prefix: &str, i: usize, width: usize, sep: char) {
    let _ = write!(out, "{}{:>width$}{} ", prefix, i, sep, width = width);
}
