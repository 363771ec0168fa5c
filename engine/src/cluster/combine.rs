//! One reply for a command fanned out to every master, merged as its
//! `response_policy` tip says (redis.io/docs/latest/develop/reference/command-tips):
//! `agg_sum` (DBSIZE, …) sums the integers, `agg_min` / `agg_max` take the
//! extreme, `agg_logical_and` / `agg_logical_or` combine 0/1,
//! `all_succeeded` gives the first reply if none is an error,
//! `one_succeeded` the first non-error. Without a tip (KEYS) or with
//! `special`, array replies are concatenated in node order (KEYS gives
//! every node's keys) and other replies come as an array of each node's
//! reply (INFO: one text per master). An error reply from any node is the
//! command's reply, except under `one_succeeded`.

use resp::Value;

/// How to merge the per-node replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    Sum,
    Min,
    Max,
    And,
    Or,
    AllSucceeded,
    OneSucceeded,
    /// No tip, or `special`.
    Gather,
}

impl Combine {
    /// From the `response_policy:` tip's value.
    pub fn of(policy: Option<&str>) -> Combine {
        match policy {
            Some("agg_sum") => Combine::Sum,
            Some("agg_min") => Combine::Min,
            Some("agg_max") => Combine::Max,
            Some("agg_logical_and") => Combine::And,
            Some("agg_logical_or") => Combine::Or,
            Some("all_succeeded") => Combine::AllSucceeded,
            Some("one_succeeded") => Combine::OneSucceeded,
            _ => Combine::Gather,
        }
    }

    /// The command's one reply from `replies` (one per master, in node order, never empty).
    pub fn merge(self, replies: Vec<Value>) -> Value {
        if self == Combine::OneSucceeded {
            let first_ok = replies.iter().position(|r| !r.is_error()).unwrap_or(0);
            return replies.into_iter().nth(first_ok).unwrap_or(Value::Null);
        }
        if let Some(err) = replies.iter().find(|r| r.is_error()) {
            return err.clone();
        }
        let ints = || replies.iter().map(|r| match r.unattributed() { Value::Integer(n) => Some(*n), _ => None }).collect::<Option<Vec<i64>>>();
        let int_or_gather = |f: fn(Vec<i64>) -> i64| match ints() {
            Some(ns) => Value::Integer(f(ns)),
            None => Value::Array(replies.clone()),
        };
        match self {
            Combine::Sum => int_or_gather(|ns| ns.iter().sum()),
            Combine::Min => int_or_gather(|ns| ns.into_iter().min().unwrap_or(0)),
            Combine::Max => int_or_gather(|ns| ns.into_iter().max().unwrap_or(0)),
            Combine::And => int_or_gather(|ns| ns.iter().all(|&n| n != 0) as i64),
            Combine::Or => int_or_gather(|ns| ns.iter().any(|&n| n != 0) as i64),
            Combine::AllSucceeded | Combine::OneSucceeded => replies.into_iter().next().unwrap_or(Value::Null),
            Combine::Gather => {
                if replies.iter().all(|r| matches!(r.unattributed(), Value::Array(_))) {
                    Value::Array(replies.into_iter().flat_map(|r| match r { Value::Array(items) => items, _ => Vec::new() }).collect())
                } else {
                    Value::Array(replies)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::{Array, Bulk, Error, Integer, Simple};

    #[test]
    fn policies() {
        assert_eq!(Combine::of(Some("agg_sum")).merge(vec![Integer(2), Integer(3)]), Integer(5));
        assert_eq!(Combine::of(Some("agg_min")).merge(vec![Integer(2), Integer(3)]), Integer(2));
        assert_eq!(Combine::of(Some("agg_logical_and")).merge(vec![Integer(1), Integer(0)]), Integer(0));
        assert_eq!(Combine::of(Some("all_succeeded")).merge(vec![Simple(b"OK".to_vec()), Simple(b"OK".to_vec())]), Simple(b"OK".to_vec()));
        assert_eq!(Combine::of(Some("all_succeeded")).merge(vec![Simple(b"OK".to_vec()), Error(b"ERR x".to_vec())]), Error(b"ERR x".to_vec()));
        assert_eq!(Combine::of(Some("one_succeeded")).merge(vec![Error(b"ERR x".to_vec()), Integer(1)]), Integer(1));
        let keys = Combine::of(None).merge(vec![Array(vec![Bulk(b"a".to_vec())]), Array(vec![]), Array(vec![Bulk(b"b".to_vec())])]);
        assert_eq!(keys, Array(vec![Bulk(b"a".to_vec()), Bulk(b"b".to_vec())]));
        assert_eq!(Combine::of(Some("special")).merge(vec![Bulk(b"x".to_vec()), Bulk(b"y".to_vec())]), Array(vec![Bulk(b"x".to_vec()), Bulk(b"y".to_vec())]));
    }
}
