//! What a command may do in the sandbox, asked of the server's command
//! table: ACL categories and flags where they say it, the command named
//! here (with why) where they do not.
//!
//! - Keys the key specs locate are rewritten into the namespace
//!   ([`Confine::Keys`]); a command whose key specs are incomplete is
//!   refused, unless a rule below confines it.
//! - Named, because they reach keys by pattern or across the keyspace and
//!   can be confined: `KEYS pattern` ([`Confine::Pattern`]), `SCAN … MATCH`
//!   ([`Confine::Scan`]), `SORT`/`SORT_RO` `BY`/`GET` patterns
//!   ([`Confine::Sort`]; Redis's key spec for them is `unknown`),
//!   `FLUSHDB`/`FLUSHALL` ([`Confine::Flush`]: the namespace only) and
//!   `DBSIZE` ([`Confine::Count`]).
//! - Refused: `@pubsub` (channels are shared by every visitor); `@admin`
//!   and `@dangerous` (the server itself, or every visitor's keys: INFO,
//!   CLIENT LIST, CONFIG, DEBUG, MIGRATE, RESTORE, SWAPDB, …); `@keyspace`
//!   commands without key specs (RANDOMKEY: any visitor's key); MOVE and
//!   COPY … DB (another database, outside the sandbox); FUNCTION … and
//!   FCALL (function libraries are shared by every visitor); SCRIPT FLUSH
//!   (every visitor's cached scripts); scripts (EVAL, EVALSHA) unless each
//!   visitor's scripts run as a Redis user of their own ([`super::acl`]).

use crate::commands::{Command, Table};
use crate::exec::ArgvRef;

/// How a command is kept inside the namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confine {
    /// The keys at the key specs' positions get the prefix.
    Keys,
    /// The argument at this index is a glob over key names (`KEYS`): prefixed.
    Pattern(usize),
    /// `SCAN`: each `MATCH` pattern prefixed, or `MATCH prefix*` added.
    Scan,
    /// `SORT`: its key specs' keys, and `BY`/`GET` patterns, prefixed.
    Sort,
    /// `FLUSHDB`/`FLUSHALL`: the namespace's keys deleted (a script).
    Flush,
    /// `DBSIZE`: the namespace's keys counted (a script).
    Count,
}

/// How `argv` is confined, or why it is refused (for people: "KEYS … is
/// refused in the sandbox: …" is built by the caller). A command the
/// server's table lacks is left to Redis (an unknown command is an error
/// reply); before the server's table is read (the built-in fallback,
/// Redis unreachable) nothing is let through.
pub fn confine(table: &Table, argv: ArgvRef<'_>, scripts_isolated: bool) -> Result<Confine, String> {
    if table.identity().is_none() {
        return Err("the server's command table, which says where its keys are, could not be read yet (is Redis reachable?)".into());
    }
    let Some(cmd) = table.command(argv) else { return Ok(Confine::Keys) };
    let name = cmd.name.as_str();
    match name {
        "keys" => return Ok(Confine::Pattern(1)),
        "scan" => return Ok(Confine::Scan),
        "sort" | "sort_ro" => return Ok(Confine::Sort),
        "flushdb" | "flushall" => return Ok(Confine::Flush),
        "dbsize" => return Ok(Confine::Count),
        _ => {}
    }
    if let Some(why) = refusal(cmd, argv, scripts_isolated) {
        return Err(why.into());
    }
    Ok(Confine::Keys)
}

fn refusal(cmd: &Command, argv: ArgvRef<'_>, scripts_isolated: bool) -> Option<&'static str> {
    let name = cmd.name.as_str();
    if cmd.in_category("pubsub") {
        return Some("channels are shared by every visitor");
    }
    if name == "fcall" || name == "fcall_ro" || name.starts_with("function") {
        return Some("function libraries are shared by every visitor, and none can be loaded in the sandbox");
    }
    if name == "script|flush" {
        return Some("it drops every visitor's cached scripts");
    }
    if cmd.in_category("admin") || cmd.in_category("dangerous") {
        return Some("it reaches the server itself or every visitor's keys");
    }
    if name == "move" || (name == "copy" && (3..argv.len()).any(|i| argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(b"db")))) {
        return Some("it reaches another database, outside the sandbox");
    }
    if cmd.in_category("keyspace") && cmd.key_specs.is_empty() {
        return Some("it reaches keys across the whole keyspace, every visitor's");
    }
    if !name.contains('|') && cmd.in_category("scripting") && !scripts_isolated {
        return Some(
            "a script could build another visitor's key names, and per-visitor isolation inside scripts needs the \
             Redis that pipelab starts itself (its ACL users); this server uses --redis",
        );
    }
    None
}
