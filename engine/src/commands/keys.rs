//! Key positions from the server's key specs (Redis 7), found as Redis
//! itself finds them (`getKeysUsingKeySpecs` in `src/db.c`), and
//! `COMMAND GETKEYSANDFLAGS` as the fallback for what the specs cannot
//! locate.
//!
//! A key spec says where the search for keys begins (`begin_search`: a
//! fixed index, or after a keyword such as `STREAMS`) and how keys follow
//! from there (`find_keys`: a range with a step, or a count argument such
//! as EVAL's `numkeys`). A spec of type `unknown`, or flagged
//! `incomplete`, means the keys cannot all be found from the argv alone:
//! SORT's `BY`/`GET` patterns name keys from the data, MIGRATE's `KEYS`
//! may be anywhere. Such an argv is reported [`Keys::complete`]` = false`.

use resp::Value;

use super::command::Command;
use super::key_spec::{BeginSearch, FindKeys, KeyFlags};
use super::reply::{bytes, list, text};
use super::table::Table;
use crate::argv::ArgvRef;

/// Why the reply to [`getkeys_argv`] names no keys.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GetKeysError {
    /// An error reply (unknown command, wrong arity), as Redis wrote it.
    #[error("{0}")]
    Refused(String),
    #[error("COMMAND GETKEYSANDFLAGS gave no key list")]
    NoKeyList,
}

/// One key of an argv: its index and the flags of the spec that found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyPosition {
    pub index: usize,
    pub flags: KeyFlags,
}

/// The keys of an argv, as far as the key specs locate them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    /// In spec order, then argument order (a key named twice appears twice).
    pub positions: Vec<KeyPosition>,
    /// False if a spec is `unknown` or `incomplete`: the command may reach
    /// keys not listed (SORT … BY/GET, MIGRATE … KEYS). Ask the server with
    /// [`getkeys_argv`] for what it can tell, and treat the rest as unknown.
    pub complete: bool,
}

impl Keys {
    /// Just the indexes.
    pub fn indexes(&self) -> Vec<usize> {
        self.positions.iter().map(|p| p.index).collect()
    }
}

/// The keys of `argv` for `cmd` (its entry from `Table::command`), found
/// from the key specs exactly as Redis's `getKeysUsingKeySpecs` does
/// (`src/db.c`), including its partial mode: a spec that does not match
/// the argv (a keyword absent, a bad numkeys, out of bounds) finds nothing.
/// A command without key specs has no keys: complete, unless it is
/// flagged `movablekeys` or has legacy key positions (a Redis 6 table,
/// which has no key specs at all: ask `COMMAND GETKEYS`).
pub fn keys(cmd: &Command, argv: ArgvRef<'_>) -> Keys {
    let mut positions = Vec::new();
    let complete = visit_keys(cmd, argv, |p| {
        positions.push(p);
        true
    });
    Keys { positions, complete: complete && !(cmd.key_specs.is_empty() && (cmd.has_flag("movablekeys") || cmd.legacy_keys.0 != 0)) }
}

/// The first key [`keys()`] finds, without collecting the others: cluster
/// routing asks it for every command of a batch, so it allocates nothing.
pub fn first_key(cmd: &Command, argv: ArgvRef<'_>) -> Option<KeyPosition> {
    let mut first = None;
    visit_keys(cmd, argv, |p| {
        first = Some(p);
        false
    });
    first
}

/// Calls `found` with each key position in [`keys()`]'s order until it
/// returns false. Returns false if a spec visited is `incomplete`
/// (the command may reach keys not listed).
fn visit_keys(cmd: &Command, argv: ArgvRef<'_>, mut found: impl FnMut(KeyPosition) -> bool) -> bool {
    let argc = argv.len() as i64;
    let mut complete = true;
    for spec in &cmd.key_specs {
        if spec.is_incomplete() {
            complete = false;
        }
        let first = match &spec.begin_search {
            BeginSearch::Index(i) => *i as i64,
            BeginSearch::Keyword { keyword, startfrom } => {
                let (start, end) = if *startfrom > 0 { (*startfrom, argc - 1) } else { (argc + startfrom, 1) };
                // As Redis's loop: `end` itself is not searched.
                let mut found = 0;
                let mut i = start;
                while i != end {
                    if i >= argc || i < 1 {
                        break;
                    }
                    if argv.get(i as usize).is_some_and(|a| a.eq_ignore_ascii_case(keyword.as_bytes())) {
                        found = i + 1;
                        break;
                    }
                    i += if start <= end { 1 } else { -1 };
                }
                if found == 0 {
                    continue;
                }
                found
            }
            BeginSearch::Unknown => continue,
        };
        let (first, last, step) = match spec.find_keys {
            FindKeys::Range { lastkey, keystep, limit } => {
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit <= 1 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (first, last, keystep as i64)
            }
            FindKeys::Keynum { keynumidx, firstkey, keystep } => {
                let at = first + keynumidx as i64;
                let Some(n) = argv.get(at as usize).and_then(|a| std::str::from_utf8(a).ok()).and_then(|s| s.parse::<i64>().ok()) else {
                    continue;
                };
                if n < 0 {
                    continue;
                }
                // Redis: `last = first + numkeys - 1`, whatever the step.
                let first = first + firstkey as i64;
                (first, first + n - 1, keystep as i64)
            }
            FindKeys::Unknown => continue,
        };
        // Out of bounds is a syntax error Redis reports itself: no keys.
        if last >= argc || last < first || first >= argc {
            continue;
        }
        let mut i = first;
        while i <= last {
            if !found(KeyPosition { index: i as usize, flags: spec.flags }) {
                return complete;
            }
            i += step;
        }
    }
    complete
}

impl Table {
    /// [`keys()`] of `argv`'s entry ([`Table::command`]); `None` for a
    /// command the table lacks (ask the server with [`getkeys_argv`]).
    pub fn keys(&self, argv: ArgvRef<'_>) -> Option<Keys> {
        self.command(argv).map(|cmd| keys(cmd, argv))
    }
}

/// `COMMAND GETKEYSANDFLAGS argv…`: the server's own answer for an argv
/// whose keys the specs cannot all find (run it on any connection).
pub fn getkeys_argv<'a>(argv: ArgvRef<'a>) -> Vec<&'a [u8]> {
    let mut out: Vec<&[u8]> = vec![b"COMMAND", b"GETKEYSANDFLAGS"];
    out.extend(argv.iter());
    out
}

/// The key positions in `argv` named by the reply to [`getkeys_argv`]
/// (`[[key, [flags…]], …]`; plain `COMMAND GETKEYS`'s `[key, …]` too):
/// each key is matched to the first argument after the name equal to it
/// and not matched yet. `Ok(empty)` for Redis's "no key arguments" /
/// "Invalid arguments" replies about a command without keys.
///
/// Errors: any other error reply (unknown command, wrong arity), as Redis wrote it.
pub fn from_getkeys_reply(argv: ArgvRef<'_>, reply: &Value) -> Result<Vec<KeyPosition>, GetKeysError> {
    if let Some(msg) = reply.error_message() {
        let msg = String::from_utf8_lossy(msg).into_owned();
        return if msg.contains("no key arguments") { Ok(Vec::new()) } else { Err(GetKeysError::Refused(msg)) };
    }
    let items = list(reply).ok_or(GetKeysError::NoKeyList)?;
    let mut out: Vec<KeyPosition> = Vec::new();
    for item in items {
        let (key, flags) = match list(item) {
            Some([key, flags, ..]) => (
                bytes(key),
                list(flags).unwrap_or(&[]).iter().filter_map(text).filter_map(|n| KeyFlags::from_name(&n)).fold(KeyFlags::default(), |a, b| a | b),
            ),
            _ => (bytes(item), KeyFlags::default()),
        };
        let Some(key) = key else { continue };
        if let Some(index) = (1..argv.len()).find(|&j| argv.get(j) == Some(key) && !out.iter().any(|p| p.index == j)) {
            out.push(KeyPosition { index, flags });
        }
    }
    Ok(out)
}
