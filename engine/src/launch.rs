//! Launching a redis-server child that pipelab owns: the embedded Redis of
//! `pipelab serve` (the server's `embedded.rs`) and each sandbox visitor's
//! ([`crate::sandbox::child`]). What they share lives here:
//!
//! - a private directory (mode 0700) holding the child's Unix socket and
//!   log; no TCP port, so nothing else on the machine can reach it;
//! - the [`Command`] with no persistence, null stdio and the kernel's
//!   parent-death signal, to which each caller adds its arguments and its
//!   own `pre_exec` hooks (the sandbox's limits and jail);
//! - readiness: the child answers PING on its socket, or has ended, or
//!   [`START_TIMEOUT`] passed;
//! - the stop: SIGTERM, a grace, then SIGKILL;
//! - the last lines of its log, for an error.
//!
//! The child is a [`tokio::process::Child`]; a caller outside a runtime
//! drives these with one of its own (`block_on`).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a child may take to answer PING after it starts.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A new private directory (mode 0700) under `root`, its name starting
/// with `prefix`; removed when the returned value is dropped.
pub fn private_dir(prefix: &str, root: &Path) -> io::Result<tempfile::TempDir> {
    let mut private = tempfile::Builder::new();
    private.prefix(prefix).permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
    private.tempdir_in(root)
}

/// Removes the private directories under `root` named `prefix…` that a
/// pipelab killed outright left behind (its child died with it, by the
/// parent-death signal, but nothing removed the directory): those older
/// than `settled` whose socket no process listens on. A directory whose
/// child is starting is younger; one whose child serves accepts a
/// connection; one that is not this user's cannot be removed and stays.
/// Returns how many went.
pub fn sweep_abandoned(prefix: &str, root: &Path, settled: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else { return 0 };
    let mut removed = 0;
    for entry in entries.flatten() {
        let named = entry.file_name().to_str().is_some_and(|n| n.starts_with(prefix));
        let old = || entry.metadata().ok().filter(|m| m.is_dir()).and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok()).is_some_and(|age| age > settled);
        let dir = entry.path();
        if named && old() && std::os::unix::net::UnixStream::connect(socket(&dir)).is_err() && std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The child's Unix socket in its private directory `dir`.
pub fn socket(dir: &Path) -> PathBuf {
    dir.join("redis.sock")
}

/// The child's log in its private directory `dir`.
pub fn log(dir: &Path) -> PathBuf {
    dir.join("redis.log")
}

/// redis-server `bin` serving only the socket in `dir`, its files there,
/// no persistence of its own, stdio to /dev/null; the kernel sends it
/// `death_signal` when the thread that spawns it ends (Linux).
///
/// Its `pre_exec` hooks run first: a caller's own run after them.
pub fn command(bin: &str, dir: &Path, death_signal: libc::c_int) -> Command {
    let mut cmd = Command::new(bin);
    let args: [(&str, OsString); 8] = [
        // No TCP listener: the Unix socket is the only way in.
        ("--port", "0".into()),
        ("--unixsocket", socket(dir).into()),
        ("--unixsocketperm", "700".into()),
        ("--dir", dir.into()),
        ("--logfile", log(dir).into()),
        ("--save", "".into()),
        ("--appendonly", "no".into()),
        ("--daemonize", "no".into()),
    ];
    for (k, v) in args {
        cmd.arg(k).arg(v);
    }
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    let parent = std::process::id();
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            #[cfg(target_os = "linux")]
            if libc::prctl(libc::PR_SET_PDEATHSIG, death_signal) != 0 {
                return Err(io::Error::last_os_error());
            }
            #[cfg(not(target_os = "linux"))]
            let _ = death_signal;
            // pipelab ended between fork and prctl: no signal will come, and
            // the child would outlive it.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    cmd
}

/// Spawns `cmd` (from [`command`]) as a child tokio waits for; in a runtime.
pub fn spawn(cmd: Command) -> io::Result<tokio::process::Child> {
    tokio::process::Command::from(cmd).spawn()
}

/// Why a child did not become ready.
#[derive(Debug)]
pub enum NotReady {
    /// It ended; how, as its caller tells it.
    Exited(String),
    /// It did not answer PING within [`START_TIMEOUT`].
    Timeout,
}

/// Waits until the child on `socket` answers PING. `exited` tells how it
/// ended if it has (`None` while it runs).
pub async fn wait_ready(socket: &Path, mut exited: impl FnMut() -> Option<String>) -> Result<(), NotReady> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = exited() {
            return Err(NotReady::Exited(status));
        }
        if ping(socket).await {
            return Ok(());
        }
        if started.elapsed() > START_TIMEOUT {
            return Err(NotReady::Timeout);
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// `+PONG` to a PING on `socket` within 500 ms.
async fn ping(socket: &Path) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let io = async {
        let mut s = tokio::net::UnixStream::connect(socket).await?;
        s.write_all(b"PING\r\n").await?;
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).await?;
        Ok::<_, io::Error>(&buf == b"+PONG\r\n")
    };
    matches!(tokio::time::timeout(Duration::from_millis(500), io).await, Ok(Ok(true)))
}

/// Ends `child`: SIGTERM, up to `grace` for it to exit, then SIGKILL
/// (at once if `grace` is zero); returns once it is reaped.
pub async fn stop(child: &mut tokio::process::Child, grace: Duration) {
    if !grace.is_zero() {
        if let Some(pid) = child.id() {
            // SAFETY: plain kill(2) on our own child's pid, not yet reaped.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
            if tokio::time::timeout(grace, child.wait()).await.is_ok() {
                return;
            }
        }
    }
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// The last `lines` lines of the log at `log`.
pub fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `name` under `root` holding a socket file: listened on (the listener
    /// returned) or not (bound, then closed), its time set `age` back.
    fn private(root: &Path, name: &str, listening: bool, age: Duration) -> Option<std::os::unix::net::UnixListener> {
        let dir = root.join(name);
        std::fs::create_dir(&dir).unwrap();
        let listener = std::os::unix::net::UnixListener::bind(socket(&dir)).unwrap();
        let when = std::time::SystemTime::now() - age;
        std::fs::File::open(&dir).unwrap().set_modified(when).unwrap();
        listening.then_some(listener)
    }

    #[test]
    fn only_old_directories_that_nobody_listens_in_are_swept() {
        let root = tempfile::tempdir().unwrap();
        let hour = Duration::from_secs(3600);
        private(root.path(), "pipelab-redis-abandoned", false, hour);
        let _serving = private(root.path(), "pipelab-redis-serving", true, hour);
        private(root.path(), "pipelab-redis-starting", false, Duration::ZERO);
        private(root.path(), "someone-else", false, hour);
        assert_eq!(sweep_abandoned("pipelab-redis-", root.path(), Duration::from_secs(60)), 1);
        let mut left: Vec<String> = std::fs::read_dir(root.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["pipelab-redis-serving", "pipelab-redis-starting", "someone-else"]);
    }
}
