//! One command as the server describes it ([`Command`], read from an entry
//! of the `COMMAND` reply), and its class: what the rules need to know
//! of it, worked out once when it is read.

use resp::Value;

use super::key_spec::{KeySpec, KeySpecError};
use super::names::Names;
use super::reply::{int, list, text};
use super::timeout;

/// The `@dangerous` commands a sandbox visitor may run: on a Redis of their
/// own they reach only their own keys (KEYS, SORT, FLUSHALL) or read about
/// that Redis (INFO). Their Redis's ACL allows them back by name.
pub const VISITOR_OWN_DATA: &[&str] = &["flushdb", "flushall", "keys", "sort", "sort_ro", "info"];

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

/// What the rules need to know of one command, worked out once when the
/// table is built: one bit test per command on the hot path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Class(pub(super) u16);

impl Class {
    pub(super) const CONNECTION: u16 = 1;
    pub(super) const STREAM: u16 = 1 << 1;
    pub(super) const REPLICA: u16 = 1 << 2;
    pub(super) const REPLY_MODE: u16 = 1 << 3;
    pub(super) const TRANSACTION: u16 = 1 << 4;
    pub(super) const ADMIN: u16 = 1 << 5;
    pub(super) const SECRET: u16 = 1 << 6;
    pub(super) const OTHER_SERVER: u16 = 1 << 7;
    pub(super) const BLOCKING: u16 = 1 << 8;
    pub(super) const STATE: u16 = 1 << 9;
    pub(super) const READONLY: u16 = 1 << 10;
    pub(super) const KILLS_SCRIPT: u16 = 1 << 11;
    /// Sets something on its own connection that later commands see
    /// ([`crate::commands::Table::sets_connection_state`]); always with STATE.
    pub(super) const SETS_STATE: u16 = 1 << 13;
    /// Runs a script or a function ([`crate::commands::Table::runs_script`]).
    pub(super) const SCRIPT: u16 = 1 << 14;
    /// `@admin` or `@dangerous`, and not one of [`VISITOR_OWN_DATA`]:
    /// refused to a sandbox visitor.
    pub(super) const BEYOND_OWN_DATA: u16 = 1 << 15;
    /// The bits [`crate::commands::Table::refusal`] looks at (all but STATE, READONLY, SETS_STATE and SCRIPT).
    pub(super) const REFUSABLE: u16 = !(Self::STATE | Self::READONLY | Self::SETS_STATE | Self::SCRIPT);

    pub(super) fn has(self, bit: u16) -> bool {
        self.0 & bit != 0
    }

    /// A read-only token may run it: flagged `readonly`, or one of the
    /// `@transaction` commands (a transaction of reads).
    pub(crate) fn readonly_token(self) -> bool {
        self.has(Self::READONLY) || self.has(Self::TRANSACTION)
    }

    pub(crate) fn any(self, mask: u16) -> bool {
        self.0 & mask != 0
    }

    pub(crate) fn union(self, o: Class) -> Class {
        Class(self.0 | o.0)
    }

    /// The bits each rule looks at, in `Table::filters` order: refusal,
    /// the executor's reply rule, connection state, scripts.
    pub(crate) const RULES: [u16; 4] = [Self::REFUSABLE, Self::STREAM | Self::REPLY_MODE | Self::TRANSACTION, Self::STATE, Self::SCRIPT];
    pub(super) const FILTER_REFUSAL: usize = 0;
    pub(super) const FILTER_REPLY: usize = 1;
    pub(super) const FILTER_STATE: usize = 2;
    pub(super) const FILTER_SCRIPT: usize = 3;

    /// The class of `cmd` (its subcommands already classed).
    pub(crate) fn of(cmd: &Command) -> Class {
        let name = cmd.name.as_str();
        let mut c = 0;
        // Named: the flags do not say these (see the module doc).
        if matches!(name, "select" | "hello" | "auth" | "quit" | "reset") {
            c |= Self::CONNECTION;
        }
        // Subscribe-style by flags; MONITOR, SYNC, PSYNC are flagged only admin.
        if (cmd.has_flag("pubsub") && cmd.has_flag("noscript")) || matches!(name, "monitor" | "sync" | "psync") {
            c |= Self::STREAM;
        }
        // REPLCONF answers once, but makes the connection a replica's.
        if name == "replconf" {
            c |= Self::REPLICA;
        }
        if matches!(name, "client|reply" | "client|tracking") {
            c |= Self::REPLY_MODE;
        }
        if cmd.in_category("transaction") {
            c |= Self::TRANSACTION;
        }
        // COMMANDLOG (Valkey 8.1+) shows what SLOWLOG shows, and more: classed the same.
        if matches!(name, "config|get" | "acl|list" | "acl|getuser" | "acl|dryrun" | "acl|users" | "acl|log" | "slowlog|get" | "commandlog|get") {
            c |= Self::SECRET;
        } else if cmd.has_flag("admin") && !ADMIN_READS.contains(&name) && !NEWER_ADMIN_READS.contains(&name) {
            c |= Self::ADMIN;
        }
        // Not admin-flagged, but they stop another client's script.
        if matches!(name, "script|kill" | "function|kill") {
            c |= Self::KILLS_SCRIPT;
        }
        if name == "migrate" {
            c |= Self::OTHER_SERVER;
        }
        // SCRIPT DEBUG YES forks the server, and the fork outlives it.
        if ((cmd.in_category("admin") || cmd.in_category("dangerous")) && !VISITOR_OWN_DATA.contains(&name)) || name == "script|debug" {
            c |= Self::BEYOND_OWN_DATA;
        }
        if (cmd.has_flag("blocking") || matches!(name, "wait" | "waitaof")) && timeout::timeout_of(name).is_some() {
            c |= Self::BLOCKING;
        }
        let only_answers = matches!(name, "ping" | "echo" | "wait") || name == "command" || name.starts_with("command|");
        if (cmd.in_category("connection") && !only_answers) || c & (Self::TRANSACTION | Self::STREAM | Self::REPLICA | Self::CONNECTION) != 0 {
            c |= Self::STATE;
        }
        // Narrower (the doctor's connection set-up): within STATE's `@connection` part.
        if cmd.in_category("connection") && !only_answers && !SETS_NOTHING.contains(&name) {
            c |= Self::SETS_STATE;
        }
        // A container (CLIENT, CONFIG…) asked with a subcommand the table
        // lacks may still change the connection: as any of its subcommands.
        for bit in [Self::STATE, Self::SETS_STATE] {
            if cmd.subcommands.values().any(|s| s.class.has(bit)) {
                c |= bit;
            }
        }
        // The SCRIPT and FUNCTION subcommands, also `@scripting`, manage scripts without running one.
        if !name.contains('|') && cmd.in_category("scripting") {
            c |= Self::SCRIPT;
        }
        // The server's own flag decides, not the key specs: Redis 8 flags
        // VCARD, VSIM, VINFO… `readonly` but gives their key spec `RW
        // update`, so a rule reading both would refuse them to a read-only token.
        if cmd.has_flag("readonly") && !cmd.has_flag("write") {
            c |= Self::READONLY;
        }
        Class(c)
    }
}

/// Admin-flagged commands that only read about the server and reveal no
/// secret: allowed. Every other `admin` command is refused (a command a
/// newer Redis adds is refused until it is listed here or in
/// [`NEWER_ADMIN_READS`]).
pub const ADMIN_READS: &[&str] = &[
    "client|list",
    "slowlog|len",
    "latency|doctor",
    "latency|graph",
    "latency|histogram",
    "latency|history",
    "latency|latest",
    "module|list",
    "cluster|replicas",
    "cluster|slaves",
    "cluster|count-failure-reports",
];

/// [`ADMIN_READS`] of servers newer than Redis 7.0: kept apart because the
/// embedded server's ACL names these only once its table shows it has them
/// (`crate::acl::grants`); a rule naming a command the server lacks would
/// keep it from starting.
pub const NEWER_ADMIN_READS: &[&str] = &["commandlog|len"];

/// `@connection` commands that set nothing on their own connection, besides
/// those that only answer (PING, ECHO, WAIT, COMMAND): they read about
/// connections, act on other clients, or close the connection (QUIT). Their
/// flags and categories are those of CLIENT SETNAME, so they are named.
const SETS_NOTHING: &[&str] = &[
    "quit",
    "client|id",
    "client|getname",
    "client|info",
    "client|list",
    "client|trackinginfo",
    "client|getredir",
    "client|help",
    "client|kill",
    "client|pause",
    "client|unpause",
    "client|unblock",
];
