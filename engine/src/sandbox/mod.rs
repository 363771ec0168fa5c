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
//! - [`jail`]: what confines a child to its own directory (Landlock,
//!   seccomp, `no_new_privs`);
//! - [`supervisor`]: visitors ↔ children, warm spares, the idle reaper,
//!   hibernation, the memory and disk budgets, restarts;
//! - [`scripts`]: a visitor's script cache kept inside their quota.
//!
//! What a visitor may run is the command table's to say
//! (`crate::commands::Access::Visitor`); their Redis's ACL says the same,
//! so scripts cannot reach more.

pub mod child;
pub mod jail;
pub mod scripts;
pub mod supervisor;
pub mod visitor;

use std::time::Duration;

pub use jail::Jail;
pub use child::Child;
pub use supervisor::{Lease, SandboxError, Supervisor};
pub use visitor::{Visitor, VisitorId};

/// The sandbox's settings (`pipelab serve --sandbox-*`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The redis-server binary (a name looked up in PATH, or a path).
    pub redis_server: String,
    /// A visitor's Redis's `maxmemory` (bytes).
    pub max_bytes: u64,
    /// A visitor idle this long loses their keys (saved or not) and is forgotten.
    pub idle: Duration,
    /// A visitor idle this long is saved to the state directory and their
    /// child stopped (hibernated); their next request starts one on the file.
    pub hibernate_after: Duration,
    /// Where hibernated visitors' keys are kept (`<id>.rdb`); `None`: a
    /// directory inside the children's root, gone with this process.
    pub state_dir: Option<std::path::PathBuf>,
    /// The memory the children may hold together (their private resident
    /// memory): past it the least recently active visitors hibernate.
    pub memory: u64,
    /// The bytes the saved keys may take in the state directory (0: the
    /// smaller of 1 GiB and a tenth of its filesystem): past it the
    /// visitors idle longest lose theirs.
    pub disk: u64,
    /// Spares ready at once, so a new visitor does not wait for one (more,
    /// up to four times this, while new visitors come fast).
    pub spares: usize,
    /// Most visitors with a running child at once: past it the least
    /// recently active hibernate (each child holds a process and sockets).
    pub max_visitors: usize,
    /// New visitors one client address (an IPv6 /64) may start a minute:
    /// cookies are free, so one client must not make them without end.
    pub new_visitors_per_minute: u32,
    /// Most batches one visitor runs at once.
    pub visitor_batches: usize,
    /// Most sessions one visitor keeps open.
    pub visitor_sessions: usize,
    /// The children run without a jail ([`jail`]): only where none works
    /// and the operator said so (`--sandbox-unjailed`).
    pub unjailed: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            redis_server: "redis-server".into(),
            max_bytes: 16 << 20,
            idle: Duration::from_secs(24 * 3600),
            hibernate_after: Duration::from_secs(120),
            state_dir: None,
            memory: default_memory(),
            disk: 0,
            spares: 4,
            max_visitors: MAX_RUNNING,
            new_visitors_per_minute: 30,
            visitor_batches: 4,
            visitor_sessions: 2,
            unjailed: false,
        }
    }
}

/// Most running children by default: each is a process, and pipelab keeps
/// a few sockets to it.
pub const MAX_RUNNING: usize = 1000;

/// The children's memory budget by default: half the memory pipelab may
/// use (the machine's, or its control group's limit where lower).
pub fn default_memory() -> u64 {
    memory() / 2
}

/// The state directory by default: `pipelab-sandbox-state` in the temporary
/// directory, where the children's own root is made too.
pub fn default_state_dir() -> std::path::PathBuf {
    std::env::temp_dir().join("pipelab-sandbox-state")
}

/// The memory this process may use: the machine's, or its control
/// group's limit where lower (a container's `--memory`).
fn memory() -> u64 {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let machine = read("/proc/meminfo")
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()))
        .map_or(4 << 30, |kb| kb * 1024);
    let cgroups = read("/proc/self/cgroup").unwrap_or_default();
    // And the mount points' own: a container without a cgroup namespace
    // sees its group's files there, not under the host's path.
    let roots = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"].map(String::from);
    cgroup_limits(&cgroups).chain(roots).filter_map(|path| read(&path)?.trim().parse::<u64>().ok()).fold(machine, u64::min)
}

/// The files that hold the memory limit of the control groups in
/// `/proc/self/cgroup`'s text: v2's `memory.max` (`0::/path`), v1's
/// `memory.limit_in_bytes` (`N:memory:/path`). Without a limit v2 says
/// `max` (not a number) and v1 a number past any machine's memory.
fn cgroup_limits(proc_self_cgroup: &str) -> impl Iterator<Item = String> + '_ {
    proc_self_cgroup.lines().filter_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_end_matches('/');
        if controllers.is_empty() {
            Some(format!("/sys/fs/cgroup{path}/memory.max"))
        } else if controllers.split(',').any(|c| c == "memory") {
            Some(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_memory_limit_comes_from_either_cgroup_version() {
        let v2: Vec<String> = super::cgroup_limits("0::/\n").collect();
        assert_eq!(v2, ["/sys/fs/cgroup/memory.max"]);
        let v2: Vec<String> = super::cgroup_limits("0::/system.slice/pipelab.service\n").collect();
        assert_eq!(v2, ["/sys/fs/cgroup/system.slice/pipelab.service/memory.max"]);
        let hybrid = "12:cpu,cpuacct:/x\n11:memory:/docker/abc\n0::/docker/abc\n";
        let limits: Vec<String> = super::cgroup_limits(hybrid).collect();
        assert_eq!(limits, ["/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "/sys/fs/cgroup/docker/abc/memory.max"]);
        assert!(super::memory() > 0);
    }
}
