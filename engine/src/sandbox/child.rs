//! One visitor's redis-server: a child process listening only on a Unix
//! socket in a private directory (mode 0700, no TCP port), with limits that
//! Redis and the kernel enforce, whatever the visitor sends:
//!
//! - `maxmemory` (the visitor's quota) with `noeviction`, and the longest
//!   string (`proto-max-bulk-len`) no longer than the quota, so that one
//!   `SETRANGE` or `SETBIT` cannot pass it;
//! - the `default` user without `@dangerous` and `@admin` (CONFIG, MODULE,
//!   DEBUG, SAVE, REPLICAOF, MIGRATE, SHUTDOWN, ACL, MONITOR, CLIENT KILL,
//!   FAILOVER, …) but for the few that only touch the visitor's own data
//!   (`crate::commands::VISITOR_OWN_DATA`): Lua's `redis.call` is checked against
//!   the same user, so a script cannot reach them either;
//! - `enable-debug-command`, `enable-module-command` and
//!   `enable-protected-configs` off; one database; no persistence of its
//!   own: pipelab's own user (a password only pipelab knows, `SAVE` and
//!   `PING` only) saves it to `dump.rdb` in its directory when it hibernates;
//! - a low `busy-reply-threshold`, so that a cut script can be killed at once;
//! - `RLIMIT_AS` (a Lua heap bomb fails inside the script, or at worst ends
//!   this process only), `RLIMIT_NOFILE`, `RLIMIT_FSIZE` (a script's
//!   `redis.log` cannot fill the disk), no core dumps, a lower CPU
//!   priority than pipelab's, and the kernel's SIGKILL if the thread that
//!   started it (the supervisor's) goes.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::jail::Jail;
use crate::conn::RedisTarget;
use crate::exec::Pool;
use crate::launch::{self, NotReady, START_TIMEOUT};

/// Most clients one child accepts: the pool, a session or two, the side
/// connections that read `INFO` or kill a script.
pub const MAX_CLIENTS: u64 = 32;
/// After this long a script answers BUSY and can be killed (ms).
pub const BUSY_REPLY_THRESHOLD_MS: u64 = 100;
/// How much lower than pipelab's the child's CPU priority is (`nice`).
pub const NICENESS: i32 = 5;
/// The largest file a child may write (`RLIMIT_FSIZE`): its log only, which
/// Lua's `redis.log` writes to at any log level.
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// pipelab's own ACL user on each child: it may only `SAVE` and `PING`.
pub const SAVE_USER: &str = "pipelab";
/// How long a `SAVE` may take (a full 512 MB quota on a slow disk).
const SAVE_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest RDB file a child may write while pipelab saves it: the
/// soft `RLIMIT_FSIZE` is raised to this (its hard limit) only during the
/// `SAVE`, which blocks the child, so no script can log past the soft one.
pub fn max_rdb_bytes(max_bytes: u64) -> u64 {
    2 * max_bytes + MAX_FILE_BYTES
}

/// The ACL user that pipelab saves a child through (`SAVE`, `PING`; no key,
/// no channel), with `password`.
pub fn save_user_args(password: &str) -> Vec<OsString> {
    ["--user", SAVE_USER, "on", "resetkeys", "resetchannels", "-@all", "+save", "+ping"].into_iter().map(OsString::from).chain([OsString::from(format!(">{password}"))]).collect()
}

/// The address space a child may map: redis-server's own (about 80 MB
/// mapped at start, most of it never touched) plus twice the quota for
/// data, buffers and the Lua heap.
pub fn address_space(max_bytes: u64) -> u64 {
    (160 << 20) + 2 * max_bytes
}

/// The redis-server arguments of a child whose quota is `max_bytes`, past
/// those of every child pipelab launches ([`launch::command`]: its socket,
/// directory and log, no persistence).
pub fn args(max_bytes: u64) -> Vec<OsString> {
    let bulk = max_bytes.clamp(1 << 20, 512 << 20);
    let mut args: Vec<OsString> = [
        ("--dbfilename", "dump.rdb".into()),
        ("--databases", "1".into()),
        ("--maxmemory", max_bytes.to_string()),
        ("--maxmemory-policy", "noeviction".into()),
        ("--proto-max-bulk-len", bulk.to_string()),
        ("--maxclients", MAX_CLIENTS.to_string()),
        ("--busy-reply-threshold", BUSY_REPLY_THRESHOLD_MS.to_string()),
        ("--enable-debug-command", "no".into()),
        ("--enable-module-command", "no".into()),
        ("--enable-protected-configs", "no".into()),
        // A child mostly waits: one background tick a second instead of ten.
        ("--hz", "1".into()),
        ("--loglevel", "warning".into()),
    ]
    .into_iter()
    .flat_map(|(k, v)| [OsString::from(k), OsString::from(v)])
    .collect();
    args.push("--user".into());
    args.extend(["default", "on", "nopass", "~*", "&*", "+@all", "-@dangerous", "-@admin"].map(OsString::from));
    args.extend(crate::commands::VISITOR_OWN_DATA.iter().map(|c| OsString::from(format!("+{c}"))));
    // SCRIPT DEBUG YES forks a child that the parent-death signal does not reach.
    args.push("-script|debug".into());
    args
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// pipelab stopped it, for this reason (idle, a script that could not be killed, shutdown).
    Stopped(&'static str),
    /// It could not allocate memory (its address-space limit).
    OutOfMemory,
    /// It ended by a signal pipelab did not send, or exited on its own.
    Crashed(String),
}

impl Exit {
    /// The cause as a metric label.
    pub fn cause(&self) -> &'static str {
        match self {
            Exit::Stopped(reason) => reason,
            Exit::OutOfMemory => "out_of_memory",
            Exit::Crashed(_) => "crashed",
        }
    }

    /// For the visitor: why their Redis is gone.
    pub fn describe(&self) -> String {
        match self {
            Exit::Stopped("idle") => "it was idle for too long".into(),
            Exit::Stopped("hibernated") => "it hibernated while you were idle (your keys were saved to disk and come back with your next request; a session's connection, its WATCH and MULTI state, does not)".into(),
            Exit::Stopped("script") => "a script that had written could not be stopped".into(),
            Exit::Stopped("stalled") => "it stopped answering (a command was still running when your batch was cut)".into(),
            Exit::Stopped(reason) => format!("it was stopped ({reason})"),
            Exit::OutOfMemory => "it ran out of memory".into(),
            Exit::Crashed(how) => format!("it crashed ({how})"),
        }
    }
}

/// Why a child could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{bin} not found: install Redis (Debian/Ubuntu: sudo apt-get install redis-server) or give its path with --redis-server")]
    NotFound { bin: String },
    #[error("could not start {bin}: {source}")]
    Spawn { bin: String, source: io::Error },
    #[error("{bin} ended at start ({status}); its log ends with:\n{log}")]
    Exited { bin: String, status: String, log: String },
    #[error("{bin} did not answer PING within {} s", START_TIMEOUT.as_secs())]
    Timeout { bin: String },
    #[error("could not start {bin} in its jail ({jail}): {source}; where this machine allows no jail, --sandbox-unjailed (PIPELAB_SANDBOX_UNJAILED=1) runs every visitor's redis-server without one")]
    Jailed { bin: String, jail: String, source: io::Error },
    #[error(transparent)]
    NoJail(#[from] super::jail::NoJail),
}

/// The environment variables a child keeps: its programs' search path and
/// the locale and time zone Redis's `SORT ALPHA` and log use.
const KEPT_ENV: [&str; 6] = ["PATH", "LANG", "LC_ALL", "LC_COLLATE", "LC_CTYPE", "TZ"];

/// A running child: its socket, and the task that waits for its end.
pub struct Process {
    pub pid: u32,
    pub socket: PathBuf,
    /// The private directory (socket, log); removed when this is dropped.
    dir: tempfile::TempDir,
    /// `Some` once it has ended.
    exit: watch::Receiver<Option<Exit>>,
    /// Asks the waiting task to kill it, with the reason.
    kill: Mutex<Option<oneshot::Sender<&'static str>>>,
}

impl Process {
    /// Starts `bin` in a new private directory under `root`, confined by
    /// `jail`, and waits until it answers PING. Must run on the thread that
    /// lives as long as the children (the kernel kills a child when that
    /// thread ends).
    pub async fn start(bin: &str, root: &Path, max_bytes: u64, jail: &Arc<Jail>) -> Result<Process, StartError> {
        Process::start_from(bin, root, max_bytes, None, None, jail).await
    }

    /// [`Process::start`] with pipelab's own user (`save_password`) and,
    /// if `rdb` is given, that file's keys: placed in the private directory
    /// as `dump.rdb` before redis-server starts, and loaded before it
    /// answers PING (`LOADING` until then).
    pub async fn start_from(bin: &str, root: &Path, max_bytes: u64, save_password: Option<&str>, rdb: Option<&Path>, jail: &Arc<Jail>) -> Result<Process, StartError> {
        let dir = launch::private_dir("v", root).map_err(|source| StartError::Spawn { bin: bin.into(), source })?;
        if let Some(rdb) = rdb {
            // A link where it can be (one filesystem), else a copy: the saved file stays until the child is up.
            let dump = dir.path().join("dump.rdb");
            std::fs::hard_link(rdb, &dump).or_else(|_| std::fs::copy(rdb, &dump).map(drop)).map_err(|source| StartError::Spawn { bin: bin.into(), source })?;
        }
        let socket = launch::socket(dir.path());
        let mut cmd = launch::command(bin, dir.path(), libc::SIGKILL);
        cmd.args(args(max_bytes)).args(save_password.map(save_user_args).unwrap_or_default());
        let (limit, rdb_limit) = (address_space(max_bytes), max_rdb_bytes(max_bytes));
        // Nothing of pipelab's environment (its tokens) for a child to read.
        cmd.env_clear().envs(std::env::vars_os().filter(|(k, _)| KEPT_ENV.iter().any(|kept| k == kept)));
        let confinement = jail.prepare(dir.path()).map_err(|source| StartError::Spawn { bin: bin.into(), source })?;
        let mut enter = confinement.entry();
        // SAFETY: only async-signal-safe calls (setrlimit, signal, setsid,
        // then the jail's raw system calls on what was
        // built before the fork) between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                limit_self(limit, rdb_limit)?;
                enter()
            });
        }
        let spawned = launch::spawn(cmd);
        // The ruleset is the child's now (or was refused): the parent's copy goes.
        drop(confinement);
        let mut child = spawned.map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => StartError::NotFound { bin: bin.into() },
            _ if jail.is_jailed() => StartError::Jailed { bin: bin.into(), jail: jail.describe(), source },
            _ => StartError::Spawn { bin: bin.into(), source },
        })?;
        let pid = child.id().unwrap_or_default();
        // The confinement is entered in the child before its exec, which
        // `spawn` waited for: the kernel's own account must show it now.
        if let Err(source) = jail.check(pid) {
            let _ = child.start_kill();
            return Err(StartError::Jailed { bin: bin.into(), jail: jail.describe(), source });
        }
        let (exit_tx, exit) = watch::channel(None);
        let (kill_tx, kill_rx) = oneshot::channel::<&'static str>();
        let log = launch::log(dir.path());
        tokio::spawn(async move {
            let ended = tokio::select! {
                status = child.wait() => classify(status, &log),
                reason = kill_rx => {
                    launch::stop(&mut child, Duration::ZERO).await;
                    Exit::Stopped(reason.unwrap_or("shutdown"))
                }
            };
            let _ = exit_tx.send(Some(ended));
        });
        let process = Process { pid, socket, dir, exit, kill: Mutex::new(Some(kill_tx)) };
        process.wait_ready(bin).await?;
        lower_priority(pid).map_err(|source| StartError::Spawn { bin: bin.into(), source })?;
        Ok(process)
    }

    async fn wait_ready(&self, bin: &str) -> Result<(), StartError> {
        match launch::wait_ready(&self.socket, || self.exit().map(|exit| exit.describe())).await {
            Ok(()) => Ok(()),
            Err(NotReady::Exited(status)) => Err(StartError::Exited { bin: bin.into(), status, log: launch::log_tail(&launch::log(self.dir.path()), 5) }),
            Err(NotReady::Timeout) => {
                self.stop("start timeout");
                Err(StartError::Timeout { bin: bin.into() })
            }
        }
    }

    /// How it ended, if it has.
    pub fn exit(&self) -> Option<Exit> {
        self.exit.borrow().clone()
    }

    /// A receiver of how it ended (`None` while it runs).
    pub fn exit_watch(&self) -> watch::Receiver<Option<Exit>> {
        self.exit.clone()
    }

    /// Waits until it has ended (at once if it has).
    pub async fn ended(&self) -> Exit {
        let mut rx = self.exit.clone();
        let ended = match rx.wait_for(Option::is_some).await {
            Ok(exit) => exit.clone().expect("waited for Some"),
            Err(_) => Exit::Crashed("its watcher ended".into()),
        };
        ended
    }

    /// Kills it (SIGKILL: it holds nothing worth saving), for `reason`.
    pub fn stop(&self, reason: &'static str) {
        if let Some(kill) = self.kill.lock().expect("kill lock").take() {
            let _ = kill.send(reason);
        }
    }

    /// Its private directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Its keys saved to `dump.rdb` in its private directory, through
    /// pipelab's own user: the path. `SAVE` blocks the child, so nothing of
    /// the visitor's runs meanwhile; its file-size limit is raised for it.
    pub async fn save(&self, password: &str) -> io::Result<PathBuf> {
        set_file_limit(self.pid, true)?;
        let saved = tokio::time::timeout(SAVE_TIMEOUT, save_on(&self.socket, password)).await;
        let lowered = set_file_limit(self.pid, false);
        match saved {
            Ok(Ok(())) => lowered.map(|()| self.dir.path().join("dump.rdb")),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "SAVE did not end in time")),
        }
    }

    /// The memory it holds on its own: resident pages less those shared
    /// with other processes (redis-server's code), from `/proc/<pid>/statm`.
    pub fn private_bytes(&self) -> u64 {
        let Ok(statm) = std::fs::read_to_string(format!("/proc/{}/statm", self.pid)) else { return 0 };
        let mut fields = statm.split_ascii_whitespace().skip(1).map(|f| f.parse::<u64>().unwrap_or(0));
        let (resident, shared) = (fields.next().unwrap_or(0), fields.next().unwrap_or(0));
        // SAFETY: sysconf only reads a system value.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
        resident.saturating_sub(shared) * page
    }
}

/// The soft `RLIMIT_FSIZE` of child `pid`: its hard limit (an RDB file's
/// room) while pipelab saves it, else [`MAX_FILE_BYTES`].
fn set_file_limit(pid: u32, saving: bool) -> io::Result<()> {
    let mut now = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: prlimit on a child of ours, reading into a valid struct.
    if unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_FSIZE, std::ptr::null(), &mut now) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let cur = if saving { now.rlim_max } else { (MAX_FILE_BYTES as libc::rlim_t).min(now.rlim_max) };
    let new = libc::rlimit { rlim_cur: cur, rlim_max: now.rlim_max };
    // SAFETY: as above, with a valid struct to set.
    if unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_FSIZE, &new, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `AUTH` as pipelab's own user, then `SAVE`, on `socket`.
async fn save_on(socket: &Path, password: &str) -> io::Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let s = tokio::net::UnixStream::connect(socket).await?;
    let mut s = tokio::io::BufReader::new(s);
    let auth = format!("*3\r\n$4\r\nAUTH\r\n${}\r\n{SAVE_USER}\r\n${}\r\n{password}\r\n*1\r\n$4\r\nSAVE\r\n", SAVE_USER.len(), password.len());
    s.get_mut().write_all(auth.as_bytes()).await?;
    for what in ["AUTH", "SAVE"] {
        let mut line = String::new();
        s.read_line(&mut line).await?;
        if line.trim_end() != "+OK" {
            return Err(io::Error::other(format!("{what}: {}", line.trim_end())));
        }
    }
    Ok(())
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop("shutdown");
    }
}

/// In the child between fork and exec (after [`launch::command`]'s
/// parent-death signal): its limits.
fn limit_self(address_space: u64, rdb_bytes: u64) -> io::Result<()> {
    let set_both = |resource, value: u64, max: u64| {
        let lim = libc::rlimit { rlim_cur: value as libc::rlim_t, rlim_max: max as libc::rlim_t };
        // SAFETY: setrlimit on this process with a valid struct.
        if unsafe { libc::setrlimit(resource, &lim) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    let set = |resource, value: u64| set_both(resource, value, value);
    set(libc::RLIMIT_AS, address_space)?;
    set(libc::RLIMIT_NOFILE, MAX_CLIENTS + 64)?;
    set(libc::RLIMIT_CORE, 0)?;
    // The hard limit leaves room for an RDB file: pipelab raises the soft
    // one to it only while it saves the child ([`Process::save`]).
    set_both(libc::RLIMIT_FSIZE, MAX_FILE_BYTES, rdb_bytes.max(MAX_FILE_BYTES))?;
    // SAFETY: plain system calls on this process.
    unsafe {
        // A write past RLIMIT_FSIZE then fails (EFBIG) rather than ending Redis.
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        // Its own session: a Ctrl-C meant for pipelab's terminal is not its.
        libc::setsid();
    }
    Ok(())
}

/// Every thread of child `pid` [`NICENESS`] below pipelab's priority, before
/// it is given to anyone: its start (redis-server's own, and loading a
/// visitor's saved keys) runs at pipelab's priority, so a busy machine does
/// not hold a newcomer's first answer behind every other process.
fn lower_priority(pid: u32) -> io::Result<()> {
    // SAFETY: reads the calling thread's priority.
    let nice = (unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) } + NICENESS).min(19);
    // Linux sets a priority per thread, and redis-server's background threads run from its start.
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Some(tid) = task?.file_name().to_str().and_then(|t| t.parse::<libc::id_t>().ok()) else { continue };
        // SAFETY: a plain system call on a thread of our own child.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, nice) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// How an unexpected end looks to the visitor: out of memory when its log
/// says so (`zmalloc`'s "Out Of Memory allocating"), else the signal or status.
fn classify(status: io::Result<std::process::ExitStatus>, log: &Path) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if text.contains("Out Of Memory") || text.contains("OUT OF MEMORY") {
        return Exit::OutOfMemory;
    }
    match status {
        Ok(s) => match (s.signal(), s.code()) {
            (Some(sig), _) => Exit::Crashed(format!("signal {sig}")),
            (None, Some(code)) => Exit::Crashed(format!("exit status {code}")),
            _ => Exit::Crashed(s.to_string()),
        },
        Err(e) => Exit::Crashed(e.to_string()),
    }
}

/// One visitor's redis-server and the pool of connections to it.
pub struct Child {
    pub process: Process,
    pub pool: Arc<Pool>,
}

impl Child {
    pub fn target(&self) -> &RedisTarget {
        self.pool.target()
    }

    /// It has not ended.
    pub fn is_alive(&self) -> bool {
        self.process.exit().is_none()
    }
}
