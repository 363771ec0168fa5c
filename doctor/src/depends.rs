//! Evidence that a command depends on an earlier reply: it carries bytes of
//! it. A value read then written (`GET a` → `hello`, then `SET b hello`),
//! an id read then used in a key (`GET next:id` → `42`, then `HSET user:42
//! …`): such a command could not have been written before that reply came,
//! so it could not have shared a pipeline with the command that asked.
//!
//! What is compared: every data part of a reply (bulk and simple strings,
//! numbers as their decimal text, the members of arrays, maps and sets, at
//! most [`ATOMS_PER_REPLY`] per reply) with each argument of a later command
//! (not its name), whole and cut at the separators keys are built with
//! ([`SEPARATORS`]: `user:42:name` holds `42`, `user:42` and `42:name`).
//! Parts shorter than [`MIN_ATOM`] bytes and the status replies `OK`,
//! `QUEUED` and `PONG` are left out: `1` or `OK` would tie any two commands.
//! Only hashes are kept, never the values, and only for the last
//! [`WINDOW`] replies: a dependency further back is not seen.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use resp::Value;

/// Replies remembered, counted back from the latest.
pub const WINDOW: u64 = 256;
/// Data parts taken from one reply (the first ones, depth first).
pub const ATOMS_PER_REPLY: usize = 16;
/// Shortest part compared, in bytes.
pub const MIN_ATOM: usize = 2;
/// Bytes that separate the parts of a key or value (`user:42`, `a/b`, `{tag}`).
pub const SEPARATORS: &[u8] = b":/{}|#,= ;[]()\"'";
/// Parts of one argument considered (its first ones): up to 16·17/2 joins.
const MAX_PARTS: usize = 16;
/// Status replies that are acknowledgements, not data.
const ACKS: [&[u8]; 3] = [b"OK", b"QUEUED", b"PONG"];

/// The hashes of recent replies' data parts, each with the number of the
/// last reply that held it.
pub struct Replies {
    hasher: RandomState,
    atoms: HashMap<u64, u64>,
    /// Replies seen so far: the next reply's number.
    seen: u64,
}

impl Default for Replies {
    fn default() -> Self {
        Replies { hasher: RandomState::new(), atoms: HashMap::new(), seen: 0 }
    }
}

impl Replies {
    /// Remembers one reply's data parts.
    pub fn add(&mut self, reply: &Value) {
        let n = self.seen;
        self.seen += 1;
        let mut left = ATOMS_PER_REPLY;
        self.walk(reply, n, &mut left);
        // Forget what fell out of the window, now and then (amortised).
        if self.atoms.len() > 2 * WINDOW as usize * ATOMS_PER_REPLY {
            let oldest = self.seen.saturating_sub(WINDOW);
            self.atoms.retain(|_, &mut at| at >= oldest);
        }
    }

    fn walk(&mut self, v: &Value, n: u64, left: &mut usize) {
        if *left == 0 {
            return;
        }
        match v {
            Value::Simple(s) if ACKS.contains(&s.as_slice()) => {}
            Value::Simple(b) | Value::Bulk(b) | Value::Verbatim { text: b, .. } | Value::BigNumber(b) => self.atom(b, n, left),
            Value::Integer(i) => self.atom(i.to_string().as_bytes(), n, left),
            Value::Double(d) => self.atom(d.to_string().as_bytes(), n, left),
            Value::Array(items) | Value::Set(items) | Value::Push(items) => {
                for item in items {
                    self.walk(item, n, left);
                }
            }
            Value::Map(pairs) => {
                for (k, v) in pairs {
                    self.walk(k, n, left);
                    self.walk(v, n, left);
                }
            }
            Value::Attributed { value, .. } => self.walk(value, n, left),
            _ => {}
        }
    }

    fn atom(&mut self, bytes: &[u8], n: u64, left: &mut usize) {
        if bytes.len() >= MIN_ATOM {
            self.atoms.insert(self.hasher.hash_one(bytes), n);
            *left -= 1;
        }
    }

    /// Whether an argument of `argv` (its name left out) carries a data part
    /// of one of the last `back` replies; and how many replies that compared
    /// with (at most [`WINDOW`]).
    pub fn carried(&self, argv: &[Vec<u8>], back: u64) -> (bool, u64) {
        let back = back.min(WINDOW).min(self.seen);
        if back == 0 {
            return (false, 0);
        }
        let first = self.seen - back;
        let held = |part: &[u8]| part.len() >= MIN_ATOM && self.atoms.get(&self.hasher.hash_one(part)).is_some_and(|&at| at >= first);
        (argv.iter().skip(1).any(|arg| parts(arg).any(held)), back)
    }
}

/// `arg` whole and every run of its parts between separators.
fn parts(arg: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut bounds: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for (i, b) in arg.iter().enumerate() {
        if SEPARATORS.contains(b) {
            if i > start {
                bounds.push((start, i));
            }
            start = i + 1;
        }
    }
    if arg.len() > start {
        bounds.push((start, arg.len()));
    }
    bounds.truncate(MAX_PARTS);
    let k = bounds.len();
    let joins = (0..k).flat_map(move |i| (i..k).map(move |j| (i, j))).map(move |(i, j)| &arg[bounds[i].0..bounds[j].1]);
    std::iter::once(arg).chain(joins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn an_id_read_then_used_in_a_key_is_carried() {
        let mut r = Replies::default();
        r.add(&Value::Bulk(b"42".to_vec()));
        assert_eq!(r.carried(&argv(&["SET", "user:42", "x"]), 1), (true, 1));
        assert!(r.carried(&argv(&["HSET", "user:{42}:name", "f", "v"]), 1).0);
        assert!(!r.carried(&argv(&["SET", "user:420", "x"]), 1).0, "a part, not a substring");
        assert!(!r.carried(&argv(&["SET", "user:43", "x"]), 1).0);
        // The command's name is not compared.
        r.add(&Value::Bulk(b"SET".to_vec()));
        assert!(!r.carried(&argv(&["SET", "k", "v"]), 2).0);
    }

    #[test]
    fn a_value_read_then_written_is_carried_and_joined_parts_count() {
        let mut r = Replies::default();
        r.add(&Value::Array(vec![Value::Bulk(b"order:7:lines".to_vec()), Value::Integer(1234)]));
        assert!(r.carried(&argv(&["SET", "copy", "order:7:lines"]), 1).0, "whole");
        assert!(r.carried(&argv(&["DEL", "x:order:7:lines:y"]), 1).0, "joined parts");
        assert!(r.carried(&argv(&["INCRBY", "n", "1234"]), 1).0, "an integer as text");
    }

    #[test]
    fn acknowledgements_and_short_parts_tie_nothing() {
        let mut r = Replies::default();
        for v in [Value::Simple(b"OK".to_vec()), Value::Integer(1), Value::Integer(0), Value::Null, Value::Simple(b"PONG".to_vec())] {
            r.add(&v);
        }
        assert!(!r.carried(&argv(&["SET", "loop:1", "OK"]), 5).0);
        assert!(!r.carried(&argv(&["HSET", "h", "f", "1"]), 5).0);
    }

    #[test]
    fn only_the_replies_asked_for_are_compared() {
        let mut r = Replies::default();
        r.add(&Value::Bulk(b"old".to_vec()));
        r.add(&Value::Bulk(b"new".to_vec()));
        assert_eq!(r.carried(&argv(&["GET", "old"]), 1), (false, 1), "before the run");
        assert_eq!(r.carried(&argv(&["GET", "old"]), 2), (true, 2));
        assert_eq!(r.carried(&argv(&["GET", "old"]), 99), (true, 2), "no more than were seen");
        // Past the window, a reply is forgotten.
        for i in 0..WINDOW * 3 {
            r.add(&Value::Bulk(format!("v{i}").into_bytes()));
        }
        assert!(!r.carried(&argv(&["GET", "new"]), u64::MAX).0);
        assert!(r.atoms.len() <= 2 * WINDOW as usize * ATOMS_PER_REPLY + ATOMS_PER_REPLY);
    }

    #[test]
    fn a_reply_gives_at_most_its_first_atoms() {
        let mut r = Replies::default();
        r.add(&Value::Array((0..100).map(|i| Value::Bulk(format!("m{i}").into_bytes())).collect()));
        assert!(r.carried(&argv(&["GET", "m15"]), 1).0);
        assert!(!r.carried(&argv(&["GET", "m16"]), 1).0);
    }
}
