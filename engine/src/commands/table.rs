//! The command table itself: one [`Command`] per name the server has, read
//! from the reply to `COMMAND` (or `COMMAND INFO name…`), and the look-up
//! of an argv's entry (its subcommand's, for a container such as CONFIG).
//!
//! The reply's shape is Redis 7's (`src/commands.c`, `addReplyCommandInfo`):
//! `[name, arity, flags, first key, last key, step, ACL categories, tips,
//! key specs, subcommands]`, in RESP2 (flat arrays, key specs as
//! key/value arrays) or RESP3 (sets and maps). Redis 6 replies stop after
//! the ACL categories; their entries have no tips, key specs or subcommands.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use resp::Value;

use super::keys::{KeySpec, KeySpecError};
use super::rules::Class;
use crate::argv::ArgvRef;

/// Longest command or subcommand name looked up (Redis's longest is 30
/// bytes: `cluster|count-failure-reports`); longer names are not commands.
pub const MAX_NAME: usize = 64;

/// FNV-1a: command names are short, and SipHash (std's default) cost more
/// than the rest of a look-up. Not DoS-resistant, and need not be: the
/// keys are the server's command names, not the client's input.
#[derive(Default)]
pub struct NameHasher(u64);

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &b in bytes {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Entries by lowercase name.
pub type Names<T> = HashMap<Box<[u8]>, T, BuildHasherDefault<NameHasher>>;

/// Looks `name` up case-insensitively, lowercasing into a stack buffer:
/// no allocation (this runs for every command of every batch).
pub fn lookup<'n, T>(names: &'n Names<T>, name: &[u8]) -> Option<&'n T> {
    if name.len() > MAX_NAME {
        return None;
    }
    let mut buf = [0u8; MAX_NAME];
    let lower = &mut buf[..name.len()];
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    names.get(&*lower)
}

/// Who the table came from: the server's `run_id`, name and own version
/// (`INFO server`). A restarted server has a new `run_id`: its table is
/// read again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerIdentity {
    pub run_id: String,
    /// `redis`, `valkey` or `redict` (see [`super::server::name`]).
    pub server: String,
    /// The server's own version (`valkey_version` for Valkey, not the
    /// `redis_version` it keeps for compatibility).
    pub version: String,
    /// The server's mode is `cluster` (a node with `cluster_enabled:1`):
    /// batches to this target go through `crate::cluster`, chosen once per target.
    pub cluster: bool,
}

impl ServerIdentity {
    /// From the text of `INFO server`; `None` if it gives no `run_id` or version.
    pub fn from_info(text: &str) -> Option<ServerIdentity> {
        use super::server;
        Some(ServerIdentity {
            run_id: server::info_field(text, "run_id")?.to_string(),
            server: server::name(text).to_string(),
            version: server::version(text)?.to_string(),
            cluster: server::mode(text) == Some("cluster"),
        })
    }
}

/// One command (or subcommand) as the server describes it.
#[derive(Debug, Clone)]
pub struct Command {
    /// Lowercase, as Redis reports it: `set`, `config|get` for a subcommand.
    pub name: String,
    /// Redis's arity: `n` exactly n arguments (the name included), `-n` at least n.
    pub arity: i64,
    /// Command flags as Redis names them: `readonly`, `write`, `admin`,
    /// `blocking`, `noscript`, `pubsub`, `no_multi`, `movablekeys`, …
    pub flags: Vec<String>,
    /// ACL categories with their `@`: `@read`, `@admin`, `@connection`, …
    pub acl_categories: Vec<String>,
    /// Command tips (Redis 7): `request_policy:all_shards`,
    /// `response_policy:agg_sum`, `nondeterministic_output`, …
    pub tips: Vec<String>,
    /// Where its keys are (Redis 7 key specs), in the server's order.
    pub key_specs: Vec<KeySpec>,
    /// The legacy `(first key, last key, step)` of `COMMAND` (all Redis
    /// versions; `(0, 0, 0)`: no keys). Key specs say more: see `keys()`.
    pub legacy_keys: (i64, i64, i64),
    /// Subcommands by their lowercase second word (`get` for `config|get`).
    pub subcommands: Names<Command>,
    /// What the rules need to know of it, worked out once when the table
    /// is built (see `rules`).
    pub(crate) class: Class,
}

impl Command {
    /// Has the command flag `flag` (`readonly`, `admin`, …).
    pub fn has_flag(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Is in the ACL category `category` (with or without the `@`).
    pub fn in_category(&self, category: &str) -> bool {
        let c = category.strip_prefix('@').unwrap_or(category);
        self.acl_categories.iter().any(|a| a.strip_prefix('@').unwrap_or(a) == c)
    }

    /// The `request_policy:` tip's value (`all_shards`, `all_nodes`,
    /// `multi_shard`, `special`), if any: how a cluster client fans it out.
    pub fn request_policy(&self) -> Option<&str> {
        self.tip("request_policy:")
    }

    /// The `response_policy:` tip's value (`agg_sum`, `all_succeeded`,
    /// `one_succeeded`, `agg_logical_and`, `agg_min`, `special`), if any:
    /// how a cluster client merges the fanned-out replies.
    pub fn response_policy(&self) -> Option<&str> {
        self.tip("response_policy:")
    }

    fn tip(&self, prefix: &str) -> Option<&str> {
        self.tips.iter().find_map(|t| t.strip_prefix(prefix))
    }

    /// The name as people write it: `CONFIG GET` for `config|get`.
    pub fn display_name(&self) -> String {
        self.name.replace('|', " ").to_ascii_uppercase()
    }

    /// An entry with no key specs, tips or subcommands (the built-in
    /// fallback's).
    pub(crate) fn bare(name: &str, arity: i64, flags: Vec<String>, acl_categories: Vec<String>) -> Command {
        let mut c = Command {
            name: name.to_string(),
            arity,
            flags,
            acl_categories,
            tips: Vec::new(),
            key_specs: Vec::new(),
            legacy_keys: (0, 0, 0),
            subcommands: Names::default(),
            class: Class::default(),
        };
        c.reclass();
        c
    }

    /// Works out [`Command::class`] again (after subcommands were added).
    pub(crate) fn reclass(&mut self) {
        self.class = Class::of(self);
    }

    /// Parses one entry of a `COMMAND` / `COMMAND INFO` reply.
    pub fn from_reply(v: &Value) -> Result<Command, TableError> {
        let items = list(v).ok_or(TableError::EntryNotArray)?;
        let name = items.first().and_then(text).ok_or(TableError::NoName)?.to_ascii_lowercase();
        let arity = items.get(1).and_then(int).ok_or_else(|| TableError::NoArity { name: name.clone() })?;
        let words = |i: usize| -> Vec<String> { items.get(i).and_then(list).unwrap_or(&[]).iter().filter_map(text).collect() };
        let key_specs = match items.get(8).and_then(list) {
            Some(specs) => specs.iter().map(KeySpec::from_reply).collect::<Result<_, _>>().map_err(|error| TableError::KeySpec { name: name.clone(), error })?,
            None => Vec::new(),
        };
        let mut subcommands = Names::default();
        for sub in items.get(9).and_then(list).unwrap_or(&[]) {
            let sub = Command::from_reply(sub)?;
            let word = sub.name.rsplit('|').next().unwrap_or(&sub.name).as_bytes().into();
            subcommands.insert(word, sub);
        }
        let mut c = Command {
            name,
            arity,
            flags: words(2),
            acl_categories: words(6),
            tips: words(7),
            key_specs,
            legacy_keys: (
                items.get(3).and_then(int).unwrap_or(0),
                items.get(4).and_then(int).unwrap_or(0),
                items.get(5).and_then(int).unwrap_or(0),
            ),
            subcommands,
            class: Class::default(),
        };
        c.reclass();
        Ok(c)
    }
}

/// Why a reply to `COMMAND` / `COMMAND INFO` could not be read as a table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// An error reply (COMMAND renamed or denied by ACL), as Redis wrote it.
    #[error("COMMAND failed: {0}")]
    Failed(String),
    #[error("the reply to COMMAND is not an array")]
    NotArray,
    #[error("a command entry is not an array")]
    EntryNotArray,
    #[error("a command entry has no name")]
    NoName,
    #[error("command {name}: no arity")]
    NoArity { name: String },
    #[error("command {name}: {error}")]
    KeySpec { name: String, error: KeySpecError },
}

/// Longest name a [`Prefilter`] tells apart; longer ones always "may match".
const FILTER_LEN: usize = 24;

/// Which (length, first letter) pairs some command of a rule has: most
/// names (SET, GET, HSET…) are ruled out by one bit test, without hashing.
#[derive(Debug, Clone, Default)]
pub(crate) struct Prefilter([u32; FILTER_LEN + 1]);

/// The bit of a name's first byte: letters case-insensitively (a..z: bits
/// 0..25), anything else in bits 26..31.
const FIRST_BIT: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut b = 0;
    while b < 256 {
        let l = (b as u8).to_ascii_lowercase();
        t[b] = 1 << if l.is_ascii_lowercase() { (l - b'a') as u32 } else { 26 + (b as u32 % 6) };
        b += 1;
    }
    t
};

impl Prefilter {
    fn add(&mut self, name: &[u8]) {
        if let (Some(w), Some(&first)) = (self.0.get_mut(name.len()), name.first()) {
            *w |= FIRST_BIT[first as usize];
        }
    }

    /// False if no command of the rule has this name's length and first letter.
    #[inline]
    pub(crate) fn may_match(&self, name: &[u8]) -> bool {
        match (self.0.get(name.len()), name.first()) {
            (Some(w), Some(&first)) => w & FIRST_BIT[first as usize] != 0,
            (Some(_), None) => false,
            (None, _) => true,
        }
    }
}

/// Every command the server has, by name.
#[derive(Debug, Clone, Default)]
pub struct Table {
    commands: Names<Command>,
    identity: Option<ServerIdentity>,
    /// Per rule (see `Class::RULES`): the names a rule may concern.
    pub(crate) filters: [Prefilter; Class::RULES.len()],
}

impl Table {
    /// A table from `commands` (top-level entries, subcommands inside).
    pub fn new(commands: impl IntoIterator<Item = Command>, identity: Option<ServerIdentity>) -> Table {
        let commands: Names<Command> = commands.into_iter().map(|c| (c.name.as_bytes().into(), c)).collect();
        let mut filters: [Prefilter; Class::RULES.len()] = Default::default();
        for c in commands.values() {
            let class = c.subcommands.values().fold(c.class, |a, s| a.union(s.class));
            for (filter, mask) in filters.iter_mut().zip(Class::RULES) {
                if class.any(mask) {
                    filter.add(c.name.as_bytes());
                }
            }
        }
        Table { commands, identity, filters }
    }

    /// Parses the reply to `COMMAND` (every command) or `COMMAND INFO …`
    /// (null entries, for names the server lacks, are skipped).
    ///
    /// Errors: an error reply (e.g. COMMAND renamed or denied by ACL), or an
    /// entry not shaped as Redis's, with the command's name.
    pub fn from_reply(reply: &Value, identity: Option<ServerIdentity>) -> Result<Table, TableError> {
        if let Some(msg) = reply.error_message() {
            return Err(TableError::Failed(String::from_utf8_lossy(msg).into_owned()));
        }
        let entries = list(reply).ok_or(TableError::NotArray)?;
        let commands = entries
            .iter()
            .filter(|e| !matches!(e, Value::Null | Value::NullArray | Value::NullBulk))
            .map(Command::from_reply)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Table::new(commands, identity))
    }

    /// The server this table was read from (`None`: the built-in fallback).
    pub fn identity(&self) -> Option<&ServerIdentity> {
        self.identity.as_ref()
    }

    /// Read from a cluster node (its mode is `cluster`): the one test that
    /// sends a target's batches to `crate::cluster`.
    pub fn is_cluster(&self) -> bool {
        self.identity().is_some_and(|i| i.cluster)
    }

    /// Top-level commands in the table.
    pub fn len(&self) -> usize {
        self.commands.len()
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// Every top-level command (subcommands are in [`Command::subcommands`]).
    pub fn iter(&self) -> impl Iterator<Item = &Command> {
        self.commands.values()
    }

    /// The top-level command `name`, case-insensitively.
    pub fn get(&self, name: &[u8]) -> Option<&Command> {
        lookup(&self.commands, name)
    }

    /// The entry that rules `argv`: its subcommand's if the command is a
    /// container and `argv[1]` names one of its subcommands (`CONFIG GET`
    /// → `config|get`), else the command's. `None` for a command the
    /// server does not have (or an empty argv). Allocation-free.
    pub fn command(&self, argv: ArgvRef<'_>) -> Option<&Command> {
        let top = self.get(argv.name()?)?;
        if top.subcommands.is_empty() {
            return Some(top);
        }
        Some(argv.get(1).and_then(|sub| lookup(&top.subcommands, sub)).unwrap_or(top))
    }
}

/// The items of an array (RESP2) or set (RESP3).
pub(crate) fn list(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(a) | Value::Set(a) | Value::Push(a) => Some(a),
        Value::Attributed { value, .. } => list(value),
        _ => None,
    }
}

/// A string reply's text (simple, bulk or verbatim), lossily as UTF-8.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::Simple(b) | Value::Bulk(b) | Value::Verbatim { text: b, .. } => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Attributed { value, .. } => text(value),
        _ => None,
    }
}

/// A string reply's bytes (simple, bulk or verbatim).
pub(crate) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Simple(b) | Value::Bulk(b) | Value::Verbatim { text: b, .. } => Some(b),
        Value::Attributed { value, .. } => bytes(value),
        _ => None,
    }
}

pub(crate) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(n) => Some(*n),
        Value::Attributed { value, .. } => int(value),
        _ => None,
    }
}

/// The fields of a map: a RESP3 map, or a RESP2 array of alternating
/// names and values (Redis's key specs in RESP2).
pub(crate) fn fields(v: &Value) -> Option<Vec<(String, &Value)>> {
    match v {
        Value::Map(pairs) => Some(pairs.iter().filter_map(|(k, v)| Some((text(k)?, v))).collect()),
        Value::Attributed { value, .. } => fields(value),
        _ => {
            let items = list(v)?;
            Some(items.chunks_exact(2).filter_map(|kv| Some((text(&kv[0])?, &kv[1]))).collect())
        }
    }
}
