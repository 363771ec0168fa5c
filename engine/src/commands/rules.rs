//! Every rule about what a command does to pipelab, asked of the table:
//! which commands are refused and why ([`Table::refusal`]), which break
//! the executor's one-reply-per-command count ([`Table::reply_rule`]),
//! which change the connection they run on so that it must not be pooled
//! ([`Table::changes_connection_state`]), which only read
//! ([`Table::is_readonly`]), and what the doctor watches for: connection
//! set-up ([`Table::sets_connection_state`]), a transaction's steps
//! ([`Table::transaction_step`]), scripts ([`Table::runs_script`]).
//!
//! Where Redis's flags say it, the rule is the flag: `pubsub` + `noscript`
//! is a subscribe-style command (SUBSCRIBE … SUNSUBSCRIBE, not PUBLISH or
//! PUBSUB CHANNELS); ACL category `@transaction` is MULTI/EXEC/DISCARD/
//! WATCH/UNWATCH; `@connection` changes the connection; `admin` administers
//! the server; `blocking` can block; `readonly` only reads. Where the flags
//! do not say it, the rule names the command here, and says why:
//! MONITOR/SYNC/PSYNC answer with a stream (flagged only `admin`), MIGRATE
//! connects to another server (flagged only `write`), the admin commands
//! that merely read (CLIENT LIST, SLOWLOG LEN, LATENCY …) are allowed, the
//! secret-revealing ones need an operator, and the `@connection` commands
//! that only answer (PING, ECHO, COMMAND, WAIT) leave the connection as it was
//! (and, for the doctor's narrower question, those that read about
//! connections or act on other clients set nothing on their own).

use super::command::{Class, Command};
use super::table::Table;
use super::timeout;
use crate::argv::ArgvRef;
use pipelab_model::Mode;

/// Why a command breaks the executor's one-reply-per-command rule
/// ([`Table::reply_rule`]); each names the command as the user wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyRuleError {
    #[error("empty command")]
    Empty,
    /// A subscribe-style command, MONITOR, SYNC/PSYNC: a stream of replies.
    #[error("{0} is not supported: it does not answer with exactly one reply, so later replies could not be matched to their commands")]
    NotOneReply(String),
    #[error("CLIENT REPLY OFF/SKIP is not supported: commands without a reply could not be matched")]
    ClientReplyOff,
    /// An `@transaction` command in a transaction batch.
    #[error("{0} cannot be part of a transaction batch: pipelab sends MULTI/EXEC itself (keys to WATCH go in the batch's watch list: \"watch\" in the API, --watch in the CLI)")]
    InTransaction(String),
}

/// Who is asking: a read-only token (`http::auth`) asks with [`Access::ReadOnly`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Every command pipelab runs at all.
    #[default]
    Full,
    /// Only commands the server flags `readonly` ([`Table::allows_readonly`]).
    ReadOnly,
    /// [`Access::Full`] plus the commands that reveal secrets (CONFIG GET,
    /// ACL LIST/GETUSER/DRYRUN/USERS/LOG, SLOWLOG GET, COMMANDLOG GET).
    Operator,
    /// A sandbox visitor on a redis-server of their own (`crate::sandbox`):
    /// [`Access::Full`] less every command of `@admin` or `@dangerous`
    /// but those that touch only the visitor's own data ([`super::VISITOR_OWN_DATA`]).
    /// Their Redis's `default` user lacks the same, so Lua cannot reach them.
    Visitor,
}

/// What the operator allows beyond the defaults (`pipelab serve` flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Allow {
    /// `--allow-migrate`: let MIGRATE connect to the servers it names.
    pub migrate: bool,
}

/// Why a command is refused; `message` is for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: Reason,
    pub message: String,
}

/// The rule a refusal comes from (in JSON: `connection`, `stream`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Changes the connection itself (SELECT, HELLO, AUTH, QUIT, RESET).
    Connection,
    /// Turns the connection into a stream of messages (SUBSCRIBE…, MONITOR, SYNC).
    Stream,
    /// Changes which replies the connection gets (CLIENT REPLY, CLIENT TRACKING).
    ReplyMode,
    /// MULTI/EXEC/DISCARD/WATCH/UNWATCH in transaction mode.
    Transaction,
    /// Administers the shared server.
    Admin,
    /// Reveals secrets: needs an operator token.
    Secret,
    /// Connects to another server (MIGRATE).
    OtherServer,
    /// A blocking command with timeout 0.
    BlockingForever,
    /// Not flagged `readonly`, asked with [`Access::ReadOnly`].
    NotReadOnly,
    /// Beyond a sandbox visitor's own data, asked with [`Access::Visitor`].
    Sandbox,
}

/// What a command does to its connection's transaction state, as Redis's
/// `src/multi.c` runs it ([`Table::transaction_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStep {
    /// MULTI: the commands after it are queued.
    Multi,
    /// WATCH: EXEC will fail if its keys change.
    Watch,
    /// UNWATCH: every WATCH ends (queued, like any command, inside MULTI).
    Unwatch,
    /// EXEC or DISCARD: the queue runs or is dropped, and every WATCH ends;
    /// RESET as well (`resetCommand` discards the transaction and unwatches,
    /// `src/networking.c`).
    End,
}

impl Table {
    /// Why `argv` may not run in `mode` for a caller with `access`, or
    /// `None` if it may. A command the server does not have is not refused
    /// (Redis answers it with an error). Allocation-free unless refused.
    pub fn refusal(&self, argv: ArgvRef<'_>, mode: Mode, access: Access, allow: Allow) -> Option<Refusal> {
        if access != Access::ReadOnly && !self.may_concern(Class::FILTER_REFUSAL, argv) {
            return None;
        }
        let Some(cmd) = self.command(argv) else {
            // Fail closed: a command the table lacks (renamed, or a module's
            // loaded since) cannot be shown to only read.
            return (access == Access::ReadOnly).then(|| unknown_to_readonly(argv));
        };
        let class = cmd.class;
        if class.0 & Class::REFUSABLE == 0 {
            return (access == Access::ReadOnly && !class.readonly_token()).then(|| {
                refuse(Reason::NotReadOnly, format!("{} is refused: {READONLY_RULE}", cmd.display_name()))
            });
        }
        let name = cmd.display_name();
        if class.has(Class::CONNECTION) {
            let hint = match cmd.name.as_str() {
                "select" => " (choose the database in the server's Redis URL, redis://host:port/DB)",
                "hello" => " (set \"resp3\": true to speak RESP3)",
                "auth" => " (credentials belong in the server's Redis URL)",
                _ => "",
            };
            return Some(refuse(
                Reason::Connection,
                format!("{name} is refused: it changes the connection itself, which pipelab sets up for every batch and session{hint}"),
            ));
        }
        if class.has(Class::STREAM) || class.has(Class::REPLICA) {
            return Some(refuse(Reason::Stream, format!("{name} is refused: it turns the connection into a stream of messages that outlives the request")));
        }
        if class.has(Class::REPLY_MODE) {
            return Some(refuse(
                Reason::ReplyMode,
                format!("{name} is refused: it changes which replies the connection gets, and pipelab expects exactly one reply per command"),
            ));
        }
        if class.has(Class::TRANSACTION) && mode == Mode::Transaction {
            let how = match cmd.name.as_str() {
                "watch" | "unwatch" => "list the keys in the request's \"watch\" field",
                _ => "the executor sends MULTI and EXEC itself (use pipeline mode to write them by hand)",
            };
            return Some(refuse(Reason::Transaction, format!("{name} is refused in transaction mode: {how}")));
        }
        if access == Access::Visitor && class.any(Class::BEYOND_OWN_DATA | Class::SECRET | Class::ADMIN | Class::KILLS_SCRIPT | Class::OTHER_SERVER) {
            return Some(refuse(
                Reason::Sandbox,
                format!("{name} is not available in the sandbox: it administers the server or reaches beyond your own keys (the Redis here is yours alone, with the commands of a data user)"),
            ));
        }
        if class.has(Class::SECRET) && access != Access::Operator {
            return Some(refuse(
                Reason::Secret,
                format!("{name} is refused: it can reveal secrets (passwords, ACL rules, other clients' arguments) and needs an operator token"),
            ));
        }
        if class.has(Class::ADMIN) || class.has(Class::KILLS_SCRIPT) {
            return Some(refuse(
                Reason::Admin,
                format!("{name} is refused: it administers the Redis server that everyone using this pipelab shares (run it with redis-cli against a Redis of your own)"),
            ));
        }
        if class.has(Class::OTHER_SERVER) && !allow.migrate {
            return Some(refuse(
                Reason::OtherServer,
                format!("{name} is refused: it makes Redis connect to another server the command names (an operator can allow it with --allow-migrate)"),
            ));
        }
        // Inside MULTI a blocking command does not block.
        if class.has(Class::BLOCKING) && mode != Mode::Transaction && timeout::timeout_of(&cmd.name).is_some_and(|t| arity_ok(cmd, argv) && timeout::waits_forever(t, argv)) {
            return Some(refuse(
                Reason::BlockingForever,
                format!("{name} with timeout 0 is refused: it could block the connection forever (give it a timeout)"),
            ));
        }
        if access == Access::ReadOnly && !class.readonly_token() {
            return Some(refuse(Reason::NotReadOnly, format!("{name} is refused: {READONLY_RULE}")));
        }
        None
    }

    /// The executor's own rule: `argv` answers with exactly one reply
    /// ([`Table::answers_once`]), and in transaction mode is not one of the
    /// `@transaction` commands pipelab sends itself. Errors: a message for a person.
    #[inline]
    pub fn reply_rule(&self, argv: ArgvRef<'_>, mode: Mode) -> Result<(), ReplyRuleError> {
        self.answers_once(argv)?;
        if mode == Mode::Transaction && self.may_concern(Class::FILTER_REPLY, argv) {
            return self.outside_transactions(argv);
        }
        Ok(())
    }

    /// [`Table::reply_rule`]'s check of a transaction's command.
    fn outside_transactions(&self, argv: ArgvRef<'_>) -> Result<(), ReplyRuleError> {
        match self.command(argv).filter(|c| c.class.has(Class::TRANSACTION)) {
            Some(cmd) => Err(ReplyRuleError::InTransaction(cmd.display_name())),
            None => Ok(()),
        }
    }

    /// Does `argv` answer with exactly one reply, so that the replies after
    /// it can still be matched to their commands in order? Not a
    /// subscribe-style command (flags `pubsub` + `noscript`), MONITOR,
    /// SYNC/PSYNC (flagged only `admin`: named) or CLIENT REPLY OFF/SKIP.
    /// A command the server lacks answers once (with an error). Errors: an
    /// empty argv, or why not, for a person. Allocation-free unless it errs.
    #[inline]
    pub fn answers_once(&self, argv: ArgvRef<'_>) -> Result<(), ReplyRuleError> {
        if !argv.is_empty() && !self.may_concern(Class::FILTER_REPLY, argv) {
            return Ok(());
        }
        self.answers_once_checked(argv)
    }

    /// [`Table::answers_once`] past its pre-filter.
    fn answers_once_checked(&self, argv: ArgvRef<'_>) -> Result<(), ReplyRuleError> {
        if argv.is_empty() {
            return Err(ReplyRuleError::Empty);
        }
        let Some(cmd) = self.command(argv) else { return Ok(()) };
        if cmd.class.has(Class::STREAM) {
            return Err(ReplyRuleError::NotOneReply(cmd.display_name()));
        }
        if cmd.name == "client|reply" && argv.get(2).is_some_and(|a| a.eq_ignore_ascii_case(b"off") || a.eq_ignore_ascii_case(b"skip")) {
            return Err(ReplyRuleError::ClientReplyOff);
        }
        Ok(())
    }

    /// True if `argv` may change the state of the connection it runs on, so
    /// that the connection must not serve another batch: `@connection`
    /// commands (SELECT, HELLO, AUTH, RESET, QUIT, CLIENT …, READONLY,
    /// READWRITE, ASKING) but those that only answer (PING, ECHO, COMMAND,
    /// WAIT), `@transaction` (a MULTI without EXEC would queue the next
    /// batch's commands), subscribe-style commands, MONITOR, SYNC/PSYNC and
    /// REPLCONF. Scripts cannot change their caller's state (SELECT inside
    /// EVAL is script-local since Redis 2.8.12). Allocation-free.
    #[inline]
    pub fn changes_connection_state(&self, argv: ArgvRef<'_>) -> bool {
        self.may_concern(Class::FILTER_STATE, argv) && self.command(argv).is_some_and(|c| c.class.has(Class::STATE))
    }

    /// True if `argv` sets something on its own connection that the commands
    /// after it see: a database, a protocol, a user, a name, key tracking,
    /// a reply mode, a cluster flag (SELECT, HELLO, AUTH, RESET, READONLY,
    /// READWRITE, ASKING, CLIENT SETNAME/TRACKING/CACHING/REPLY/NO-EVICT, and
    /// CLIENT SETINFO/NO-TOUCH on Redis 7.2). The rule: ACL category
    /// `@connection`, but those that only answer (PING, ECHO, WAIT, COMMAND)
    /// and the named few that read about connections, act on other clients
    /// or close it (CLIENT ID/GETNAME/INFO/LIST/KILL/PAUSE…, QUIT). A
    /// container asked with a subcommand the table lacks counts (CLIENT
    /// SETINFO on Redis 7.0, which answers it with an error). Narrower than
    /// [`Table::changes_connection_state`] (no `@transaction`, no streams):
    /// what `pipelab doctor` counts as connection set-up. Allocation-free.
    #[inline]
    pub fn sets_connection_state(&self, argv: ArgvRef<'_>) -> bool {
        self.may_concern(Class::FILTER_STATE, argv) && self.command(argv).is_some_and(|c| c.class.has(Class::SETS_STATE))
    }

    /// What `argv` does to its connection's MULTI/WATCH state, if anything:
    /// the five commands of ACL category `@transaction`, told apart by name
    /// (no flag says which opens and which ends), and RESET. `None` for
    /// every other command and for commands the server lacks. Allocation-free.
    pub fn transaction_step(&self, argv: ArgvRef<'_>) -> Option<TransactionStep> {
        if !self.may_concern(Class::FILTER_STATE, argv) {
            return None;
        }
        let cmd = self.command(argv)?;
        if cmd.name == "reset" {
            return Some(TransactionStep::End);
        }
        if !cmd.class.has(Class::TRANSACTION) {
            return None;
        }
        match cmd.name.as_str() {
            "multi" => Some(TransactionStep::Multi),
            "watch" => Some(TransactionStep::Watch),
            "unwatch" => Some(TransactionStep::Unwatch),
            "exec" | "discard" => Some(TransactionStep::End),
            _ => None,
        }
    }

    /// The pre-filter of rule `i`: false if the rule cannot concern `argv`.
    #[inline]
    fn may_concern(&self, i: usize, argv: ArgvRef<'_>) -> bool {
        argv.name().is_some_and(|n| self.filters[i].may_match(n))
    }

    /// True if the server flags `argv`'s command (or subcommand) `readonly`
    /// (GET, EVAL_RO, FCALL_RO, CONFIG GET…); false for writes, EVAL,
    /// admin and pub/sub commands and for commands the server lacks.
    pub fn is_readonly(&self, argv: ArgvRef<'_>) -> bool {
        self.command(argv).is_some_and(|c| c.class.has(Class::READONLY))
    }

    /// May a read-only token run `argv`? Only if the server flags its
    /// command (or subcommand: CONFIG GET, not CONFIG SET) `readonly`, or it
    /// is one of the `@transaction` commands (MULTI, EXEC, DISCARD, WATCH,
    /// UNWATCH: a transaction of reads). The flag alone decides: key specs
    /// can contradict it (Redis 8's VCARD is `readonly` with an `RW` spec).
    /// False for a command the
    /// server's table lacks: a `rename-command`ed SET or CONFIG is not in
    /// it under its new name, and nothing says it only reads (fail closed).
    /// The rule of [`Access::ReadOnly`] in [`Table::refusal`]; allocation-free.
    pub fn allows_readonly(&self, argv: ArgvRef<'_>) -> bool {
        self.command(argv).is_some_and(|c| c.class.readonly_token())
    }

    /// Why a read-only token may not run `argv` ([`Table::allows_readonly`]),
    /// for a person; `None` if it may.
    pub fn readonly_refusal(&self, argv: ArgvRef<'_>) -> Option<String> {
        match self.command(argv) {
            None => Some(unknown_to_readonly(argv).message),
            Some(c) if !c.class.readonly_token() => Some(format!("{} is refused: {READONLY_RULE}", c.display_name())),
            Some(_) => None,
        }
    }

    /// True if `argv` may block its connection until its timeout (flagged
    /// `blocking`, or WAIT/WAITAOF: BLPOP, XREAD BLOCK, …), outside a
    /// transaction. Allocation-free.
    #[inline]
    pub fn may_block(&self, argv: ArgvRef<'_>) -> bool {
        self.may_concern(Class::FILTER_REFUSAL, argv) && self.command(argv).is_some_and(|c| c.class.has(Class::BLOCKING))
    }

    /// True if `argv` runs a script or a function until it returns: a
    /// top-level command of Redis's `@scripting` category (EVAL, EVALSHA,
    /// EVAL_RO, EVALSHA_RO, FCALL, FCALL_RO). The SCRIPT and FUNCTION
    /// subcommands, also `@scripting`, manage scripts without running one.
    /// False for commands the server lacks. Allocation-free.
    #[inline]
    pub fn runs_script(&self, argv: ArgvRef<'_>) -> bool {
        self.may_concern(Class::FILTER_SCRIPT, argv) && self.command(argv).is_some_and(|c| c.class.has(Class::SCRIPT))
    }
}

/// Redis checks arity before the command runs: a wrong count is an error
/// reply, not a wait.
fn arity_ok(cmd: &Command, argv: ArgvRef<'_>) -> bool {
    let n = argv.len() as i64;
    if cmd.arity >= 0 { n == cmd.arity } else { n >= -cmd.arity }
}

/// Why a read-only token is refused, for people.
const READONLY_RULE: &str = "a read-only token runs only commands the server flags readonly";

/// A command the table lacks, asked with [`Access::ReadOnly`].
fn unknown_to_readonly(argv: ArgvRef<'_>) -> Refusal {
    let name = String::from_utf8_lossy(argv.name().unwrap_or_default()).to_uppercase();
    refuse(
        Reason::NotReadOnly,
        format!(
            "{name} is refused: the server's command table does not know it (renamed with rename-command, or a module's \
             command), so nothing says it only reads; {READONLY_RULE}"
        ),
    )
}

fn refuse(reason: Reason, message: String) -> Refusal {
    Refusal { reason, message }
}
