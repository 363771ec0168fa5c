//! Redis ACL users of the Redis pipelab manages (the embedded redis-server,
//! `crate::embedded`): a second wall behind pipelab's own rules, where Redis
//! itself refuses what a missed rule would let through (NOPERM, per command).
//!
//! - [`READONLY_USER`]: read-only tokens' batches (`api::auth`); only
//!   `@read` (and EVAL_RO, EVALSHA_RO, FCALL_RO) on any key.
//!
//! Passwords are 256 random bits made at start-up, held in memory only and
//! never logged; redis-server gets only their SHA-256 (`#…` in the `user`
//! directive), so not even its command line shows them.

use crate::conn::RedisTarget;

/// The user of read-only tokens' batches.
pub const READONLY_USER: &str = "pipelab-readonly";

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
}

/// The users of one embedded Redis.
#[derive(Clone, Debug)]
pub struct Users {
    pub readonly: Credentials,
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
        Users { readonly: Credentials { user: READONLY_USER.into(), password: random_hex() } }
    }

    /// redis-server arguments that create the users at start (`--user name
    /// rule…`, once per user; passwords only as hashes).
    pub fn server_args(&self) -> Vec<String> {
        let c = &self.readonly;
        let mut out = vec!["--user".to_string(), c.user.clone(), "on".into(), c.hashed(), "~*".into(), "resetchannels".into()];
        out.extend(READONLY_RULES.iter().map(|r| r.to_string()));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        let users = Users::generate();
        let args = users.server_args().join(" ");
        assert!(!args.contains(&users.readonly.password));
        assert!(!format!("{users:?}").contains(&users.readonly.password));
    }
}
