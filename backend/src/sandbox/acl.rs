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
//!
//! (The shared service's users, full-access and read-only, are
//! [`crate::acl`]'s.) Passwords are 256 random bits made at start-up (a visitor's: an HMAC of
//! its id under a start-up secret), held in memory only and never logged;
//! redis-server gets only their SHA-256 (`#…` in the `user` directive), so
//! not even its command line shows them.

use ring::hmac;

use super::Namespace;
use crate::acl::{hex, random_hex, Credentials};

/// The user of sandbox batches.
pub const SANDBOX_USER: &str = "pipelab-sandbox";

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

/// The users of one embedded Redis.
#[derive(Clone, Debug)]
pub struct Users {
    pub sandbox: Credentials,
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

impl Users {
    /// New users with fresh random passwords.
    pub fn generate() -> Users {
        let key = hmac::Key::new(hmac::HMAC_SHA256, random_hex().as_bytes());
        Users { sandbox: Credentials::random(SANDBOX_USER), secret: Secret(key) }
    }

    /// redis-server arguments that create the sandbox user at start
    /// (`--user name rule…`; its password only as a hash).
    pub fn server_args(&self) -> Vec<String> {
        self.sandbox.server_args("sbx:*", None, SANDBOX_RULES)
    }

    /// The visitor's own user.
    pub fn visitor(&self, ns: &Namespace) -> Credentials {
        let tag = hmac::sign(&self.secret.0, ns.id().as_bytes());
        Credentials::new(format!("pipelab-sbx-{}", ns.id()), hex(tag.as_ref()))
    }

    /// `ACL SETUSER` for the visitor's own user (idempotent: `reset` first).
    pub fn setuser_argv(&self, ns: &Namespace) -> Vec<Vec<u8>> {
        let c = self.visitor(ns);
        let mut argv = vec![b"ACL".to_vec(), b"SETUSER".to_vec(), c.user.clone().into_bytes()];
        argv.extend(c.rules(&ns.pattern(), None, SANDBOX_RULES).into_iter().map(String::into_bytes));
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
        let ns = Namespace::random();
        let visitor = format!("{:?}", users.visitor(&ns));
        assert_eq!(visitor, format!("{:?}", users.visitor(&ns)), "derived, not stored");
        assert!(visitor.contains("redacted"));
        assert_ne!(users.setuser_argv(&ns), users.setuser_argv(&Namespace::random()));
        let set = users.setuser_argv(&ns);
        assert!(set.iter().any(|a| a == format!("~sbx:{{{}}}:*", ns.id()).as_bytes()));
    }
}
