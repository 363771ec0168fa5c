//! Redis ACL users: the second wall where pipelab manages the Redis (the
//! embedded redis-server, `crate::embedded`). pipelab's own rules refuse
//! and rewrite commands first; these users make Redis itself refuse what
//! a missed rule would let through (NOPERM, reported per command).
//!
//! - [`SANDBOX_USER`]: sandbox batches; keys `~sbx:*` only, no channels,
//!   the data categories ([`SANDBOX_RULES`]).
//! - A visitor's own user (`pipelab-sbx-{id}`, keys `~sbx:{id}:*`), made
//!   with `ACL SETUSER` when that visitor runs a script: Redis checks the
//!   key permissions of every command a script calls, so a script that
//!   builds another visitor's key name in Lua gets NOPERM. Deleted with
//!   `ACL DELUSER` once the namespace is idle past the sandbox TTL.
//! - [`READONLY_USER`]: read-only tokens' batches (`api::auth`); only
//!   `@read` (and EVAL_RO, EVALSHA_RO, FCALL_RO) on any key.
//!
//! Passwords are 256 random bits made at start-up (a visitor's: an HMAC of
//! its id under a start-up secret), held in memory only and never logged;
//! redis-server gets only their SHA-256 (`#…` in the `user` directive), so
//! not even its command line shows them.

use ring::hmac;

use super::Namespace;
use crate::conn::RedisTarget;

/// The user of sandbox batches.
pub const SANDBOX_USER: &str = "pipelab-sandbox";
/// The user of read-only tokens' batches.
pub const READONLY_USER: &str = "pipelab-readonly";

/// The commands a sandbox user may run: the data types, transactions,
/// scripts and the connection's own commands, less everything `@admin`,
/// `@dangerous` or `@pubsub`, functions (shared by every visitor), SELECT
/// and MOVE (another database), SCRIPT FLUSH/KILL/DEBUG (every visitor's
/// scripts); SORT and KEYS back (`@dangerous`, but
/// pipelab confines their patterns).
pub const SANDBOX_RULES: &[&str] = &[
    "-@all", "+@keyspace", "+@read", "+@write", "+@string", "+@list", "+@hash", "+@set", "+@sortedset", "+@stream",
    "+@bitmap", "+@hyperloglog", "+@geo", "+@transaction", "+@scripting", "+@connection", "-@admin", "-@dangerous",
    "-@pubsub", "+sort", "+sort_ro", "+keys", "-select", "-move", "-function", "-fcall", "-fcall_ro", "-script|flush",
    "-script|kill", "-script|debug",
];

/// The commands the read-only user may run.
pub const READONLY_RULES: &[&str] = &["-@all", "+@read", "+@connection", "-@admin", "+eval_ro", "+evalsha_ro", "+fcall_ro"];

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
    /// `base` (the server's target) as this user.
    pub fn target(&self, base: &RedisTarget) -> RedisTarget {
        RedisTarget { username: Some(self.user.clone()), password: Some(self.password.clone()), ..base.clone() }
    }

    /// `#` and the SHA-256 of the password in hex, as ACL rules take it.
    fn hashed(&self) -> String {
        let d = ring::digest::digest(&ring::digest::SHA256, self.password.as_bytes());
        format!("#{}", hex(d.as_ref()))
    }

    /// The ACL rules that make this user (`user` directive / `ACL SETUSER`).
    fn rules(&self, keys: &str, commands: &[&str]) -> Vec<String> {
        let mut out = vec!["reset".to_string(), "on".into(), self.hashed(), format!("~{keys}"), "resetchannels".into()];
        out.extend(commands.iter().map(|c| c.to_string()));
        out
    }
}

/// The users of one embedded Redis.
#[derive(Clone, Debug)]
pub struct Users {
    pub sandbox: Credentials,
    pub readonly: Credentials,
    /// Visitors' passwords are HMACs of their ids under this key.
    secret: Secret,
}

#[derive(Clone)]
struct Secret(hmac::Key);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

fn random_hex() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new().fill(&mut bytes).expect("the system's random generator");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Users {
    /// New users with fresh random passwords.
    pub fn generate() -> Users {
        let key = hmac::Key::new(hmac::HMAC_SHA256, random_hex().as_bytes());
        Users {
            sandbox: Credentials { user: SANDBOX_USER.into(), password: random_hex() },
            readonly: Credentials { user: READONLY_USER.into(), password: random_hex() },
            secret: Secret(key),
        }
    }

    /// redis-server arguments that create the shared users at start
    /// (`--user name rule…`, once per user; passwords only as hashes).
    pub fn server_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (c, keys, rules) in [(&self.sandbox, "sbx:*", SANDBOX_RULES), (&self.readonly, "*", READONLY_RULES)] {
            out.push("--user".to_string());
            out.push(c.user.clone());
            out.extend(c.rules(keys, rules).into_iter().skip(1)); // a new user needs no `reset`
        }
        out
    }

    /// The visitor's own user.
    pub fn visitor(&self, ns: &Namespace) -> Credentials {
        let tag = hmac::sign(&self.secret.0, ns.id().as_bytes());
        Credentials { user: format!("pipelab-sbx-{}", ns.id()), password: hex(tag.as_ref()) }
    }

    /// `ACL SETUSER` for the visitor's own user (idempotent: `reset` first).
    pub fn setuser_argv(&self, ns: &Namespace) -> Vec<Vec<u8>> {
        let c = self.visitor(ns);
        let mut argv = vec![b"ACL".to_vec(), b"SETUSER".to_vec(), c.user.clone().into_bytes()];
        argv.extend(c.rules(&ns.pattern(), SANDBOX_RULES).into_iter().map(String::into_bytes));
        argv
    }

    /// `ACL DELUSER` of the visitor's own user.
    pub fn deluser_argv(&self, ns: &Namespace) -> Vec<Vec<u8>> {
        vec![b"ACL".to_vec(), b"DELUSER".to_vec(), self.visitor(ns).user.into_bytes()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        let users = Users::generate();
        let args = users.server_args().join(" ");
        assert!(!args.contains(&users.sandbox.password) && !args.contains(&users.readonly.password));
        assert!(!format!("{users:?}").contains(&users.sandbox.password));
        let ns = Namespace::random();
        assert_eq!(users.visitor(&ns).password, users.visitor(&ns).password, "derived, not stored");
        assert_ne!(users.visitor(&ns).password, users.visitor(&Namespace::random()).password);
        let set = users.setuser_argv(&ns);
        assert!(set.iter().any(|a| a == format!("~sbx:{{{}}}:*", ns.id()).as_bytes()));
    }
}
