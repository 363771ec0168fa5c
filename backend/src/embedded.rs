//! The redis-server child that `pipelab serve` starts when no Redis is
//! configured: private temp dir, no persistence, a Unix socket only (no TCP
//! port, so nothing else on the machine can reach it and no port can clash).
//!
//! Stopped by [`EmbeddedRedis::stop`] on a clean exit; `kill_on_drop`-like
//! cleanup in `Drop`; and, on Linux, the kernel sends it SIGTERM if pipelab
//! dies without either (PR_SET_PDEATHSIG).

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long redis-server may take to answer PING after start.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long it may take to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A running redis-server child.
pub struct EmbeddedRedis {
    child: Option<Child>,
    dir: TempDir,
    socket: PathBuf,
}

/// Why the child could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error(
        "{bin} not found in PATH: install Redis (Debian/Ubuntu: sudo apt-get install redis-server; \
         macOS: brew install redis) or point pipelab at a running Redis with --redis redis://HOST:PORT \
         (or REDIS_URL)"
    )]
    NotFound { bin: String },
    #[error("could not start {bin}: {source}")]
    Spawn { bin: String, source: io::Error },
    #[error("{bin} exited at start ({status}); its log ends with:\n{log}")]
    Exited { bin: String, status: String, log: String },
    #[error("{bin} did not accept connections within {secs} s; its log ends with:\n{log}")]
    Timeout { bin: String, secs: u64, log: String },
}

impl EmbeddedRedis {
    /// Start `bin` (a name looked up in PATH, or a path) and wait until its
    /// Unix socket accepts connections and answers PING.
    ///
    /// Call it from the thread that stays alive as long as the server
    /// (the main thread): on Linux the child's death signal is tied to the
    /// thread that spawned it.
    pub fn start(bin: &str) -> Result<EmbeddedRedis, EmbeddedError> {
        let dir = tempfile::Builder::new()
            .prefix("pipelab-redis-")
            .tempdir()
            .map_err(|source| EmbeddedError::Spawn { bin: bin.into(), source })?;
        let socket = dir.path().join("redis.sock");
        let log = dir.path().join("redis.log");
        let mut cmd = Command::new(bin);
        cmd.arg("--port")
            .arg("0") // no TCP listener: the Unix socket is the only way in
            .arg("--unixsocket")
            .arg(&socket)
            .arg("--unixsocketperm")
            .arg("700")
            .arg("--dir")
            .arg(dir.path())
            .arg("--save")
            .arg("")
            .arg("--appendonly")
            .arg("no")
            .arg("--daemonize")
            .arg("no")
            .arg("--logfile")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => EmbeddedError::NotFound { bin: bin.into() },
            _ => EmbeddedError::Spawn { bin: bin.into(), source },
        })?;
        let mut me = EmbeddedRedis { child: Some(child), dir, socket };
        me.wait_ready(bin, &log)?;
        Ok(me)
    }

    /// The Unix socket path (a `unix://` URL for the executor).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn url(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// The child's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn wait_ready(&mut self, bin: &str, log: &Path) -> Result<(), EmbeddedError> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                self.child = None;
                return Err(EmbeddedError::Exited { bin: bin.into(), status: status.to_string(), log: log_tail(log) });
            }
            if ping(&self.socket) {
                return Ok(());
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(EmbeddedError::Timeout { bin: bin.into(), secs: START_TIMEOUT.as_secs(), log: log_tail(log) });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, wait up to 5 s, then SIGKILL; the temp dir goes with `self`.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let start = Instant::now();
        while start.elapsed() < STOP_TIMEOUT {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for EmbeddedRedis {
    fn drop(&mut self) {
        self.terminate();
        let _ = &self.dir; // removed after the child is gone
    }
}

/// True if a PING on `socket` gets `+PONG` within 500 ms.
fn ping(socket: &Path) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(socket) else { return false };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(10)..].join("\n")
}
