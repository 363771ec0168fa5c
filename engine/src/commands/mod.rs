//! The command table: what each command of the connected server does and
//! where its keys are, learned from the server itself.
//!
//! Why: the rules about commands (what is refused, what breaks the
//! executor's one-reply-per-command count, what changes a connection so
//! it must not be pooled, what only reads, where keys are) as hand-written
//! name lists would drift apart and miss a command added by a newer Redis
//! or a module. Redis describes
//! its commands itself: `COMMAND` gives, for every command and subcommand,
//! its arity, flags (`readonly`, `write`, `admin`, `blocking`, `noscript`,
//! `pubsub`, `no_multi`, …), ACL categories, key specs and (Redis 7) its
//! request/response policy tips. This module reads that once per target
//! and answers every such question from it.
//!
//! - [`table`]: [`Table`] and [`Command`], parsed from the `COMMAND` reply;
//!   [`Table::command`] finds an argv's entry (a container's subcommand:
//!   `CONFIG GET` → `config|get`) with one hash look-up on the lowercased
//!   name, in a stack buffer (no allocation per command).
//! - [`mod@keys`]: key positions from the key specs, as Redis's
//!   `getKeysUsingKeySpecs` (`src/db.c`); `COMMAND GETKEYSANDFLAGS` for
//!   what the specs cannot locate ([`Keys::complete`] false: SORT … BY/GET,
//!   MIGRATE … KEYS).
//! - [`rules`]: refusals ([`Table::refusal`], with an [`Access`] hook for
//!   tokens and [`Allow`] for operator flags), the executor's reply rule
//!   ([`Table::reply_rule`], [`Table::answers_once`]), [`Table::changes_connection_state`],
//!   [`Table::is_readonly`], [`Table::runs_script`], and what `pipelab doctor`
//!   asks of the commands it watches ([`Table::sets_connection_state`],
//!   [`Table::transaction_step`]); each rule says whether it is a flag's or,
//!   where the flags do not say it, names the command and why.
//! - [`refused`]: [`Table::refused_commands`], the commands refused whatever
//!   their arguments, listed for clients (`GET /api/v1/info`).
//! - `timeout`: blocking commands' timeouts read as Redis reads them
//!   (`getTimeoutFromObjectOrReply`, `xreadCommand`).
//! - [`fallback`]: the built-in table of the handful of commands that must
//!   be refused before the server is reachable (Redis 7.0.15's own entries).
//! - [`docs`]: each command for people (`COMMAND DOCS`: summary, arguments,
//!   the syntax line) with the table's arity, for the page's editor.
//! - [`server`]: the server's name, real version and mode from `INFO
//!   server`, in Redis's, Valkey's and Redict's words.
//! - [`cache`]: the table of one target, refreshed when the server's
//!   `run_id` or version changes (checked on each new pooled
//!   connection).
//!
//! Sources: `COMMAND` for the rules. Redis 7.0 already puts the tips and key
//! specs in it; `COMMAND DOCS` (argument names and types) is read only for
//! people ([`docs`], on the API's request). Redis
//! 6 gives no tips or key specs (every [`Keys`] of a command with keys is
//! then incomplete, so callers fall back to `COMMAND GETKEYS`). Cost: one `INFO server` round trip per
//! new pooled connection (not behind the simulated-RTT delay line, not in
//! the batch's stats), one `COMMAND` (about 90 KB) per server start.
//!
//! Who asks: the API's validation (`api::refuse`), the executor's checks
//! (`exec::validate`, the runner's pooling decision), the pool (which
//! keeps the [`Cache`]), sweep's key clean-up (`lab::cleanup`, through
//! `lab::Runner::commands`), the script kill of a cut batch (`engine::kill`),
//! the Upstash surface's transaction check and `pipelab doctor`'s tracker. Next:
//! read-only tokens ([`Access::ReadOnly`], [`Table::is_readonly`]), cluster
//! slot routing ([`keys()`],
//! [`Command::request_policy`], [`Command::response_policy`]).

pub mod cache;
pub mod command;
pub mod docs;
pub mod fallback;
pub mod key_spec;
pub mod keys;
pub mod names;
pub mod refused;
pub mod reply;
pub mod rules;
pub mod server;
pub mod table;
mod timeout;

pub use cache::Cache;
pub use command::{Command, TableError, ADMIN_READS, NEWER_ADMIN_READS, VISITOR_OWN_DATA};
pub use key_spec::{BeginSearch, FindKeys, KeyFlags, KeySpec, KeySpecError};
pub use keys::{first_key, from_getkeys_reply, getkeys_argv, keys, GetKeysError, KeyPosition, Keys};
pub use refused::RefusedCommand;
pub use rules::{Access, Allow, Reason, Refusal, ReplyRuleError, TransactionStep};
pub use table::{ServerIdentity, Table};
