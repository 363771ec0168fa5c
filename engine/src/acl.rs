//! Redis ACL users of the shared service: what Redis itself lets pipelab's
//! batches run, behind pipelab's own rules (`commands::rules`). A script
//! (EVAL, FCALL) runs its `redis.call`s as the batch's user, past
//! pipelab's checks of the batch: only the user can keep it from what the
//! API refuses.
//!
//! Where pipelab manages the Redis (the embedded redis-server,
//! `pipelab::embedded`) it makes these users at start ([`Users::server_args`]):
//!
//! - [`BATCH_USER`]: every batch of a full-access token (or of no token):
//!   all commands but those flagged `admin` (SLOWLOG, CONFIG, DEBUG, MODULE,
//!   ACL SETUSER, CLIENT KILL, SHUTDOWN, PFDEBUG, …), the admin commands that
//!   only read back ([`crate::commands::ADMIN_READS`]), and MIGRATE unless
//!   `--allow-migrate` ([`batch_rules`]).
//! - [`READONLY_USER`]: read-only tokens' batches: `@read`, the
//!   `@transaction` commands (a transaction of reads), EVAL_RO, EVALSHA_RO,
//!   FCALL_RO ([`READONLY_RULES`]).
//!
//! The default user stays whole, for pipelab's own work (ACL SETUSER of
//! the sandbox's users, an operator token's batches); only pipelab reaches
//! the embedded Redis (a Unix socket in a 0700 directory).
//!
//! Where it does not (`--redis`), [`lua_reachable`] tells at start which
//! commands pipelab refuses its user could still run from a script, for
//! `pipelab serve` to warn with the rule to apply
//! ([`rule_to_apply`], docs/security.md#the-redis-user).
//!
//! Passwords are 256 random bits made at start-up, held in memory only and
//! never logged; redis-server gets only their SHA-256 (`#…` in the `user`
//! directive), so not even its command line shows them.

use crate::commands::{Access, Allow, Reason, Table};
use crate::conn::{AskError, Conn, RedisTarget};
use crate::exec::{Commands, Mode};

/// The user of full-access batches on the embedded Redis.
pub const BATCH_USER: &str = "pipelab-batches";
/// The user of read-only tokens' batches on the embedded Redis.
pub const READONLY_USER: &str = "pipelab-readonly";

/// The commands the read-only user may run.
pub const READONLY_RULES: &[&str] = &["-@all", "+@read", "+@connection", "+@transaction", "-@admin", "+eval_ro", "+evalsha_ro", "+fcall_ro"];

/// The commands the batch user may run: all but the `admin` ones (those
/// that only read back added again) and MIGRATE unless `allow.migrate`.
pub fn batch_rules(allow: Allow) -> Vec<String> {
    let mut rules = vec!["+@all".to_string(), "-@admin".into()];
    rules.extend(crate::commands::ADMIN_READS.iter().map(|c| format!("+{c}")));
    if !allow.migrate {
        rules.push("-migrate".into());
    }
    rules
}

/// The `ACL SETUSER` commands that complete the users' rules once the
/// server's table is known, by name: a rule at start naming a command the
/// server lacks would keep it from starting. The read-only user gets the
/// commands the table flags `readonly` outside `@read` (Redis 8's
/// vector-set reads are in no ACL category, so `+@read` misses them); the
/// batch user the [`crate::commands::NEWER_ADMIN_READS`] the server has.
pub fn grants(table: &Table) -> Vec<Vec<String>> {
    let mut readonly = Vec::new();
    let mut batches = Vec::new();
    for cmd in table.iter() {
        for c in std::iter::once(cmd).chain(cmd.subcommands.values()) {
            if c.class.readonly_token() && !c.in_category("read") && !c.in_category("transaction") && !c.in_category("scripting") {
                readonly.push(format!("+{}", c.name));
            }
            if crate::commands::NEWER_ADMIN_READS.contains(&c.name.as_str()) {
                batches.push(format!("+{}", c.name));
            }
        }
    }
    [(READONLY_USER, readonly), (BATCH_USER, batches)]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(user, mut names)| {
            names.sort();
            ["ACL", "SETUSER", user].iter().map(|s| s.to_string()).chain(names).collect()
        })
        .collect()
}

/// A user's name and password. `Debug` never shows the password.
#[derive(Clone)]
pub struct Credentials {
    pub user: String,
    password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials {{ user: {:?}, password: <redacted> }}", self.user)
    }
}

impl Credentials {
    /// `user` with `password`.
    pub fn new(user: String, password: String) -> Credentials {
        Credentials { user, password }
    }

    /// `user` with a fresh random password.
    pub fn random(user: &str) -> Credentials {
        Credentials::new(user.into(), random_hex())
    }

    /// `base` (the server's target) as this user.
    pub fn target(&self, base: &RedisTarget) -> RedisTarget {
        RedisTarget { username: Some(self.user.clone()), password: Some(self.password.clone()), ..base.clone() }
    }

    /// `#` and the SHA-256 of the password in hex, as ACL rules take it.
    fn hashed(&self) -> String {
        let d = ring::digest::digest(&ring::digest::SHA256, self.password.as_bytes());
        format!("#{}", hex(d.as_ref()))
    }

    /// The ACL rules that make this user (`user` directive / `ACL SETUSER`):
    /// keys `keys`, channels `channels` (`None`: none), `commands`.
    pub fn rules<S: AsRef<str>>(&self, keys: &str, channels: Option<&str>, commands: &[S]) -> Vec<String> {
        let mut out = vec!["reset".to_string(), "on".into(), self.hashed(), format!("~{keys}"), "resetchannels".into()];
        out.extend(channels.map(|c| format!("&{c}")));
        out.extend(commands.iter().map(|c| c.as_ref().to_string()));
        out
    }

    /// redis-server arguments that make this user at start (`--user name
    /// rule…`: a new user needs no `reset`).
    pub fn server_args<S: AsRef<str>>(&self, keys: &str, channels: Option<&str>, commands: &[S]) -> Vec<String> {
        let mut out = vec!["--user".to_string(), self.user.clone()];
        out.extend(self.rules(keys, channels, commands).into_iter().skip(1));
        out
    }
}

/// 256 random bits in hex.
pub fn random_hex() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut bytes).expect("the system's random generator");
    hex(&bytes)
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The shared service's users of one embedded Redis.
#[derive(Clone, Debug)]
pub struct Users {
    pub batches: Credentials,
    pub readonly: Credentials,
    allow: Allow,
}

impl Users {
    /// New users with fresh random passwords; the batch user's rules by `allow`.
    pub fn generate(allow: Allow) -> Users {
        Users { batches: Credentials::random(BATCH_USER), readonly: Credentials::random(READONLY_USER), allow }
    }

    /// redis-server arguments that make both users at start.
    pub fn server_args(&self) -> Vec<String> {
        let mut out = self.batches.server_args("*", Some("*"), &batch_rules(self.allow));
        out.extend(self.readonly.server_args("*", None, READONLY_RULES));
        out
    }
}

/// Why [`lua_reachable`] could not tell.
#[derive(Debug, thiserror::Error)]
pub enum ReachError {
    #[error("{0}")]
    Connect(#[from] crate::conn::ConnectError),
    #[error("{0}")]
    Conn(#[from] AskError),
    /// MULTI's error reply, as text.
    #[error("MULTI was refused ({0}), so the user's permissions could not be checked")]
    MultiRefused(String),
}

/// The commands pipelab refuses to a full-access token that a script
/// could still run as `conn`'s user: flagged neither `noscript` (scripts
/// cannot call those) nor refused to the user by Redis. Each is queued
/// inside a MULTI that is then discarded: Redis checks the user's
/// permissions when it queues a command (NOPERM) and runs nothing of a
/// discarded transaction. Names as people write them (`SLOWLOG GET`).
/// Errors: the connection failed, or MULTI itself is refused (nothing can
/// be told).
pub async fn lua_reachable(conn: &mut Conn, table: &Table, allow: Allow) -> Result<Vec<String>, ReachError> {
    let probes = refused_to_scripts(table, allow);
    if probes.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    resp::encode_command([b"MULTI".as_slice()], &mut out);
    for (_, argv) in &probes {
        resp::encode_command(argv.iter(), &mut out);
    }
    resp::encode_command([b"DISCARD".as_slice()], &mut out);
    conn.write(&out).await.map_err(AskError::from)?;
    let multi = conn.read_reply().await.map_err(AskError::from)?.0;
    let mut reachable = Vec::new();
    for (name, _) in &probes {
        let reply = conn.read_reply().await.map_err(AskError::from)?.0;
        if !reply.is_error() {
            reachable.push(name.clone());
        }
    }
    conn.read_reply().await.map_err(AskError::from)?;
    if multi.is_error() {
        return Err(ReachError::MultiRefused(crate::conn::reply_text(&multi)));
    }
    Ok(reachable)
}

/// The start-up check of `pipelab serve --redis`: a warning naming the
/// commands pipelab refuses that scripts could still run as `pool`'s user,
/// and the rule to apply ([`rule_to_apply`]); or that it could not be told.
pub async fn warn_if_scripts_reach_refused(pool: &crate::exec::Pool, allow: Allow, wait: std::time::Duration) {
    let settings = crate::conn::ConnSettings::plain(wait);
    let table = pool.commands_loaded(wait).await;
    let user = pool.target().username.clone().unwrap_or_else(|| "default".into());
    let checked = match Conn::connect(pool.target(), &settings).await {
        Ok(mut conn) => lua_reachable(&mut conn, &table, allow).await,
        Err(e) => Err(e.into()),
    };
    match checked {
        Ok(reachable) if reachable.is_empty() => tracing::info!(%user, "the Redis user may run none of the commands pipelab refuses"),
        Ok(reachable) => tracing::warn!(
            "the Redis user {user:?} may run commands that pipelab refuses, and a script (EVAL, FCALL) can call them: {}; \
             to keep scripts from them, run on Redis: {} (docs/security.md#the-redis-user)",
            reachable.join(", "),
            rule_to_apply(&user, allow)
        ),
        Err(e) => tracing::warn!(%user, "could not check which commands the Redis user may run ({e}); see docs/security.md#the-redis-user"),
    }
}

/// `ACL SETUSER` with the rule that keeps `user` from what the API refuses
/// (as the embedded Redis's batch user has it).
pub fn rule_to_apply(user: &str, allow: Allow) -> String {
    let mut rule = format!("ACL SETUSER {user} -@admin");
    if !allow.migrate {
        rule.push_str(" -migrate");
    }
    rule
}

/// The commands (and subcommands) of `table` that scripts may call and
/// pipelab refuses to a full-access token for what they do to the shared
/// server (admin, secrets, another server): each with an argv of the right
/// arity to queue, never to run.
fn refused_to_scripts(table: &Table, allow: Allow) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut cmds: Vec<(&crate::commands::Command, Vec<Vec<u8>>)> = Vec::new();
    for c in table.iter() {
        if c.subcommands.is_empty() {
            cmds.push((c, vec![c.name.clone().into_bytes()]));
        }
        for s in c.subcommands.values() {
            let sub = s.name.split_once('|').map_or(s.name.as_str(), |(_, sub)| sub);
            cmds.push((s, vec![c.name.clone().into_bytes(), sub.as_bytes().to_vec()]));
        }
    }
    for (cmd, mut argv) in cmds {
        if cmd.has_flag("noscript") {
            continue;
        }
        let arity = cmd.arity.unsigned_abs() as usize;
        while argv.len() < arity {
            argv.push(b"0".to_vec());
        }
        let commands = Commands::from_iter([argv.clone()]);
        let refused = table.refusal(commands.get(0), Mode::Pipeline, Access::Full, allow).is_some_and(|r| matches!(r.reason, Reason::Admin | Reason::Secret | Reason::OtherServer));
        if refused {
            out.push((cmd.display_name(), argv));
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_name_what_the_rules_allow_and_the_categories_miss() {
        use crate::commands::Command;
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let mut commandlog = Command::bare("commandlog", -2, s(&[]), s(&["@slow"]));
        commandlog.subcommands.insert(b"len".as_slice().into(), Command::bare("commandlog|len", -3, s(&["admin"]), s(&["@admin", "@slow", "@dangerous"])));
        let table = Table::new(
            [
                Command::bare("get", 2, s(&["readonly", "fast"]), s(&["@read", "@string"])),
                Command::bare("vcard", -1, s(&["readonly", "module", "fast"]), s(&[])),
                Command::bare("vadd", -1, s(&["write", "module"]), s(&[])),
                commandlog,
            ],
            None,
        );
        assert_eq!(grants(&table), [s(&["ACL", "SETUSER", READONLY_USER, "+vcard"]), s(&["ACL", "SETUSER", BATCH_USER, "+commandlog|len"])]);
        assert!(grants(&crate::commands::fallback::table()).is_empty(), "Redis 7.0: the rules at start say it all");
    }

    #[test]
    fn passwords_never_show() {
        let users = Users::generate(Allow::default());
        let args = users.server_args().join(" ");
        assert!(!args.contains(&users.batches.password) && !args.contains(&users.readonly.password));
        assert!(!format!("{users:?}").contains(&users.batches.password));
        assert!(args.contains("-migrate"));
        assert!(!Users::generate(Allow { migrate: true }).server_args().join(" ").contains("-migrate"));
    }

    fn probes(table: &Table, allow: Allow) -> Vec<String> {
        refused_to_scripts(table, allow).into_iter().map(|(n, _)| n).collect()
    }

    /// By the built-in table: MIGRATE, unless allowed; never a noscript
    /// command (the live server's whole table: tests/shared_service_serve.rs).
    #[test]
    fn what_scripts_could_reach() {
        let names = probes(&crate::commands::fallback::table(), Allow::default());
        assert!(names.iter().any(|n| n == "MIGRATE"), "{names:?}");
        for name in ["SHUTDOWN", "MONITOR", "CLIENT KILL", "GET"] {
            assert!(!names.iter().any(|n| n == name), "{name}: {names:?}");
        }
        assert!(!probes(&crate::commands::fallback::table(), Allow { migrate: true }).iter().any(|n| n == "MIGRATE"));
    }
}
