//! The sandbox (`pipelab serve --sandbox`): a public playground where every
//! visitor gets a redis-server of their own.
//!
//! Isolation by construction, not by rules pipelab parses: a visitor's
//! batches, sessions, experiments and Upstash requests run on a child
//! process that only they can reach (a Unix socket in a private directory,
//! no TCP port), whose memory, commands and CPU Redis and the kernel limit
//! ([`child`]). Keys are not rewritten: the visitor sees their own keyspace,
//! so `KEYS *`, `FLUSHALL`, Lua and every `STORE` form reach only their own
//! data. The worst a visitor can do is hurt their own Redis, which is then
//! replaced and they are told why.
//!
//! - [`visitor`]: the visitor's id (the cookie's value) and their caps;
//! - [`child`]: one redis-server child and its limits;
//! - [`supervisor`]: visitors ↔ children, warm spares, the idle reaper,
//!   the cap on visitors, restarts;
//! - [`scripts`]: a visitor's script cache kept inside their quota.
//!
//! What a visitor may run is the command table's to say
//! (`crate::commands::Access::Visitor`); their Redis's ACL says the same,
//! so scripts cannot reach more.

pub mod child;
pub mod scripts;
pub mod supervisor;
pub mod visitor;

use std::time::Duration;

pub use supervisor::{Child, Lease, SandboxError, Supervisor};
pub use visitor::{Visitor, VisitorId};

/// The sandbox's settings (`pipelab serve --sandbox-*`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The redis-server binary (a name looked up in PATH, or a path).
    pub redis_server: String,
    /// A visitor's Redis's `maxmemory` (bytes).
    pub max_bytes: u64,
    /// A visitor idle this long loses their Redis and its keys.
    pub idle: Duration,
    /// Children started ahead, so a new visitor does not wait for one.
    pub spares: usize,
    /// Most visitors holding a Redis at once.
    pub max_visitors: usize,
    /// Most of them from one client address (an IPv6 /64): cookies are
    /// free, so one client must not take every place.
    pub visitors_per_address: usize,
    /// Most batches one visitor runs at once.
    pub visitor_batches: usize,
    /// Most sessions one visitor keeps open.
    pub visitor_sessions: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            redis_server: "redis-server".into(),
            max_bytes: 16 << 20,
            idle: Duration::from_secs(3600),
            spares: 4,
            max_visitors: default_max_visitors(16 << 20),
            visitors_per_address: default_visitors_per_address(default_max_visitors(16 << 20)),
            visitor_batches: 4,
            visitor_sessions: 2,
        }
    }
}

/// As many visitors as half the machine's memory holds at the most each
/// child may map (`child::address_space`: a Lua heap can stay behind a
/// finished script, outside `maxmemory`), at most 1,000.
pub fn default_max_visitors(max_bytes: u64) -> usize {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()))
        .map_or(4 << 30, |kb| kb * 1024);
    ((total / 2) / child::address_space(max_bytes)).clamp(1, 1000) as usize
}

/// An eighth of the places, at least 4: a classroom behind one address
/// still fits, one client with many cookies does not fill the sandbox.
pub fn default_visitors_per_address(max_visitors: usize) -> usize {
    (max_visitors / 8).max(4)
}
