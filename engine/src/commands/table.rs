//! The command table itself: one [`Command`] per name the server has, read
//! from the reply to `COMMAND` (or `COMMAND INFO name…`), and the look-up
//! of an argv's entry (its subcommand's, for a container such as CONFIG).
//!
//! The reply's shape is Redis 7's (`src/commands.c`, `addReplyCommandInfo`):
//! `[name, arity, flags, first key, last key, step, ACL categories, tips,
//! key specs, subcommands]`, in RESP2 (flat arrays, key specs as
//! key/value arrays) or RESP3 (sets and maps). Redis 6 replies stop after
//! the ACL categories; their entries have no tips, key specs or subcommands.

use resp::Value;

use super::command::{Class, Command, TableError};
use super::names::{lookup, Names};
use super::reply::list;
use crate::argv::ArgvRef;

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

