//! The sandbox (`pipelab serve --sandbox`): a public playground on one
//! shared Redis, where each visitor sees only their own keys, as the old
//! try.redis did.
//!
//! Why: the tutorial on a public page runs whatever a stranger types
//! against one Redis. Without a sandbox every visitor reads and deletes
//! everyone's keys (`KEYS *`, `FLUSHALL`). With it:
//!
//! - [`namespace`]: each visitor gets an unguessable id in an HttpOnly,
//!   SameSite cookie; their keys live under `sbx:{id}:` (the braces are a
//!   hash tag: one visitor's keys share a hash slot).
//! - [`rules`]: what each command may do in the sandbox, asked of the
//!   command table (ACL categories, flags, key specs): its keys rewritten,
//!   a pattern confined to the namespace (KEYS, SCAN, SORT … BY/GET),
//!   FLUSHDB/FLUSHALL/DBSIZE on the namespace only, or refused (403
//!   `sandbox_refused`, naming the command and why).
//! - [`keys`]: the rewriting itself, at the key specs' positions
//!   (`commands::Table::keys`).
//! - [`reply`]: replies shown with the visitor's own names (the prefix
//!   taken out of key names and error messages).
//! - [`quota`]: keys and bytes per namespace (`--sandbox-max-keys`,
//!   `--sandbox-max-bytes`; commands past a quota `not_sent`), and a TTL on
//!   every key a batch writes (`--sandbox-ttl`).
//! - [`acl`]: Redis ACL users, the second wall where pipelab manages the
//!   Redis (embedded): sandbox batches run as a user limited to `~sbx:*`,
//!   batches with scripts as one limited to the visitor's own `sbx:{id}:*`
//!   (so a script that builds another key name in Lua gets Redis's NOPERM),
//!   read-only tokens' batches as a user that can only read.
//! - [`run`]: the one hook on the batch path (`api::run`): the connection's
//!   user, the quotas, the reply rewriting, the TTLs.
//!
//! Rate limits, on by default in the sandbox, are the API's
//! (`ServeConfig::sandbox.sandbox` tells them the sandbox is on).

pub mod acl;
pub mod keys;
pub mod namespace;
pub mod quota;
pub mod reply;
pub mod rules;
pub mod run;

use std::time::Duration;

pub use namespace::Namespace;

/// `pipelab serve` sandbox flags.
#[derive(clap::Args, Debug, Clone)]
pub struct SandboxConfig {
    /// A public playground: each visitor (a cookie) gets a private key
    /// namespace on the shared Redis; commands that could reach other keys
    /// or the server are confined or refused.
    #[arg(long, env = "PIPELAB_SANDBOX", value_parser = clap::builder::BoolishValueParser::new())]
    pub sandbox: bool,

    /// How long a visitor's keys live after the batch that last wrote them,
    /// and their cookie after their last request: `3600`, `90s`, `30m`, `1h`.
    #[arg(long, env = "PIPELAB_SANDBOX_TTL", value_parser = parse_duration, default_value = "1h")]
    pub sandbox_ttl: Duration,

    /// Most keys in one visitor's namespace; commands past it are not sent.
    #[arg(long, env = "PIPELAB_SANDBOX_MAX_KEYS", value_parser = clap::value_parser!(u64).range(1..), default_value_t = 100_000)]
    pub sandbox_max_keys: u64,

    /// Most bytes in one visitor's namespace (Redis's units: `16mb`), as
    /// `MEMORY USAGE` counts them plus the argument bytes of the writes
    /// since it was last measured; commands past it are not sent.
    #[arg(long, env = "PIPELAB_SANDBOX_MAX_BYTES", value_parser = crate::embedded::parse_memory, default_value = "16mb")]
    pub sandbox_max_bytes: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig { sandbox: false, sandbox_ttl: Duration::from_secs(3600), sandbox_max_keys: 100_000, sandbox_max_bytes: 16 << 20 }
    }
}

/// A duration as `--sandbox-ttl` takes it: whole seconds, or a number with
/// `s`, `m` or `h`; at least 1 s.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a duration such as 3600, 90s, 30m or 1h"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        other => return Err(format!("unknown unit {other:?} (use s, m or h)")),
    };
    if secs == 0 {
        return Err("must be at least 1 s".into());
    }
    Ok(Duration::from_secs(secs))
}

/// The sandbox of a running server: its settings, the per-namespace usage
/// and, where pipelab manages the Redis, its ACL users.
pub struct Sandbox {
    pub config: SandboxConfig,
    pub quotas: quota::Quotas,
    /// The embedded Redis's users (`None` with `--redis`: no second wall,
    /// and scripts are refused).
    pub users: Option<acl::Users>,
}

impl Sandbox {
    pub fn new(config: SandboxConfig, users: Option<acl::Users>) -> Sandbox {
        Sandbox { quotas: quota::Quotas::default(), config, users }
    }

    /// Scripts can be isolated per visitor: only with the embedded Redis's
    /// ACL users (a visitor's own user, `~sbx:{id}:*`).
    pub fn scripts_isolated(&self) -> bool {
        self.users.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("1d").is_err());
        assert!(parse_duration("h").is_err());
    }
}
