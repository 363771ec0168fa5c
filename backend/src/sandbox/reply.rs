//! Replies shown with the visitor's own key names: the namespace's prefix
//! is taken out of every string that starts with it (KEYS, SCAN, BLPOP's,
//! XREAD's and LMPOP's key names, SORT's…) and out of every error message
//! and simple string that quotes a key, wherever it appears. Rewriting
//! every reply, rather than those of a list of commands, also covers the
//! replies of commands added later and of scripts.

use resp::Value;

use crate::exec::{CommandResult, ResultSink};

/// `v` with `prefix` taken out.
pub fn unprefix(v: &mut Value, prefix: &[u8]) {
    match v {
        Value::Bulk(b) | Value::Verbatim { text: b, .. } if b.starts_with(prefix) => {
            b.drain(..prefix.len());
        }
        Value::Simple(b) | Value::Error(b) | Value::BlobError(b) => remove_all(b, prefix),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => items.iter_mut().for_each(|i| unprefix(i, prefix)),
        Value::Map(pairs) => pairs.iter_mut().for_each(|(k, v)| {
            unprefix(k, prefix);
            unprefix(v, prefix);
        }),
        Value::Attributed { value, .. } => unprefix(value, prefix),
        _ => {}
    }
}

/// Every occurrence of `pat` removed from `b`.
pub fn remove_all(b: &mut Vec<u8>, pat: &[u8]) {
    if pat.is_empty() || b.len() < pat.len() {
        return;
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(pat) {
            i += pat.len();
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    *b = out;
}

/// A [`ResultSink`] that hands on each result with its reply unprefixed.
pub struct Unprefix<'a, K> {
    pub inner: &'a mut K,
    pub prefix: &'a [u8],
}

impl<K: ResultSink> ResultSink for Unprefix<'_, K> {
    fn push(&mut self, mut result: CommandResult) {
        if let Some(reply) = result.reply.as_mut() {
            unprefix(reply, self.prefix);
        }
        self.inner.push(result);
    }

    fn admit(&mut self, reply: &Value) -> Result<(), u64> {
        self.inner.admit(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_taken_out() {
        let p = b"sbx:{0123}:";
        let mut v = Value::Array(vec![
            Value::Bulk(b"sbx:{0123}:k".to_vec()),
            Value::Bulk(b"value sbx:{0123}:k".to_vec()),
            Value::Error(b"ERR no such key sbx:{0123}:a or sbx:{0123}:b".to_vec()),
            Value::Map(vec![(Value::Bulk(b"sbx:{0123}:s".to_vec()), Value::Integer(1))]),
        ]);
        unprefix(&mut v, p);
        assert_eq!(
            v,
            Value::Array(vec![
                Value::Bulk(b"k".to_vec()),
                Value::Bulk(b"value sbx:{0123}:k".to_vec()),
                Value::Error(b"ERR no such key a or b".to_vec()),
                Value::Map(vec![(Value::Bulk(b"s".to_vec()), Value::Integer(1))]),
            ])
        );
    }
}
