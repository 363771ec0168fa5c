//! The redis-server child that `pipelab serve` starts when no Redis is
//! configured: private temp dir, no persistence, a Unix socket only (no TCP
//! port, so nothing else on the machine can reach it and no port can clash).
//!
//! Launched as every redis-server child of pipelab's is
//! (`pipelab_engine::launch`). Stopped by [`EmbeddedRedis::stop`] on a clean
//! exit; `kill_on_drop`-like cleanup in `Drop`; and, on Linux, the kernel
//! sends it SIGTERM if pipelab dies without either (PR_SET_PDEATHSIG).

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pipelab_engine::launch::{self, NotReady, START_TIMEOUT};
use pipelab_http::config::EmbeddedConfig;
use tempfile::TempDir;
use tokio::process::Child;

/// The embedded redis-server's private directory in the temporary directory.
const PRIVATE_PREFIX: &str = "pipelab-redis-";
/// Older than this, a private directory no child listens in was abandoned
/// (a child starting has not listened yet).
const SETTLED: Duration = Duration::from_secs(60);

/// How long it may take to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// A running redis-server child.
pub struct EmbeddedRedis {
    child: Option<Child>,
    dir: TempDir,
    socket: PathBuf,
    config: EmbeddedConfig,
    /// Drives the launcher's waits: this lives on a thread of its own, in no runtime.
    rt: tokio::runtime::Runtime,
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
    #[error("{bin} does not exist: give the path of a redis-server binary with --redis-server, or point pipelab at a running Redis with --redis redis://HOST:PORT (or REDIS_URL)")]
    Missing { bin: String },
    #[error("could not start {bin}: {source}")]
    Spawn { bin: String, source: io::Error },
    #[error("{bin} exited at start ({status}); its log ends with:\n{log}")]
    Exited {
        bin: String,
        status: String,
        log: String,
    },
    #[error("{bin} did not accept connections within {secs} s; its log ends with:\n{log}")]
    Timeout { bin: String, secs: u64, log: String },
}

impl EmbeddedRedis {
    /// Start `bin` (a name looked up in PATH, or a path) and wait until its
    /// Unix socket accepts connections and answers PING.
    ///
    /// Call it from the thread that stays alive as long as the server
    /// (the main thread), outside any async runtime: on Linux the child's
    /// death signal is tied to the thread that spawned it.
    pub fn start(bin: &str, config: &EmbeddedConfig) -> Result<EmbeddedRedis, EmbeddedError> {
        let spawn_err = |source| EmbeddedError::Spawn { bin: bin.into(), source };
        // What a pipelab killed outright left there, its child gone with it.
        let swept = launch::sweep_abandoned(PRIVATE_PREFIX, &std::env::temp_dir(), SETTLED);
        if swept > 0 {
            tracing::info!(swept, "removed the private directories of embedded redis-servers whose pipelab was killed");
        }
        let dir = launch::private_dir(PRIVATE_PREFIX, &std::env::temp_dir()).map_err(spawn_err)?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(spawn_err)?;
        let mut me = EmbeddedRedis {
            child: None,
            socket: launch::socket(dir.path()),
            dir,
            config: config.clone(),
            rt,
        };
        me.launch(bin)?;
        Ok(me)
    }

    /// Spawns redis-server on this instance's socket and waits until it answers.
    fn launch(&mut self, bin: &str) -> Result<(), EmbeddedError> {
        let mut cmd = launch::command(bin, self.dir.path(), libc::SIGTERM);
        cmd.args(self.config.redis_args());
        let child = self.rt.block_on(async { launch::spawn(cmd) }).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound if !bin.contains('/') => EmbeddedError::NotFound { bin: bin.into() },
            io::ErrorKind::NotFound => EmbeddedError::Missing { bin: bin.into() },
            _ => EmbeddedError::Spawn {
                bin: bin.into(),
                source,
            },
        })?;
        self.child = Some(child);
        self.wait_ready(bin)?;
        if !self.config.acl_args.is_empty() {
            if let Err(e) = grant(&self.socket) {
                tracing::warn!(error = %e, "could not complete the ACL users' rules from the server's command table");
            }
        }
        Ok(())
    }

    /// If the child has exited (killed, or `SHUTDOWN` slipped through),
    /// reaps it and starts a new one on the same socket, so the server's
    /// Redis URL stays valid. `None` while it runs; else how it had exited
    /// and whether the restart worked.
    pub fn revive(&mut self, bin: &str) -> Option<(String, Result<(), EmbeddedError>)> {
        let status = match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => return None,
            Some(Ok(Some(status))) => status.to_string(),
            Some(Err(e)) => e.to_string(),
            None => String::from("not running"),
        };
        self.child = None;
        let _ = std::fs::remove_file(&self.socket);
        Some((status, self.launch(bin)))
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
        self.child.as_ref().and_then(Child::id)
    }

    fn wait_ready(&mut self, bin: &str) -> Result<(), EmbeddedError> {
        let child = &mut self.child;
        let exited = || {
            let status = child.as_mut().and_then(|c| c.try_wait().ok().flatten())?;
            *child = None;
            Some(status.to_string())
        };
        let ready = self.rt.block_on(launch::wait_ready(&self.socket, exited));
        let log = || launch::log_tail(&launch::log(self.dir.path()), 10);
        match ready {
            Ok(()) => Ok(()),
            Err(NotReady::Exited(status)) => Err(EmbeddedError::Exited { bin: bin.into(), status, log: log() }),
            Err(NotReady::Timeout) => Err(EmbeddedError::Timeout { bin: bin.into(), secs: START_TIMEOUT.as_secs(), log: log() }),
        }
    }

    /// SIGTERM, wait up to 5 s, then SIGKILL; the temp dir goes with `self`.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        self.rt.block_on(launch::stop(&mut child, STOP_TIMEOUT));
    }
}

impl Drop for EmbeddedRedis {
    fn drop(&mut self) {
        self.terminate();
        let _ = &self.dir; // removed after the child is gone
    }
}

/// Why the users' rules could not be completed from the server's table.
#[derive(Debug, thiserror::Error)]
enum GrantError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error("the connection closed")]
    Closed,
    #[error("{0}")]
    Decode(#[from] resp::DecodeError),
    #[error("{0}")]
    Table(#[from] pipelab_engine::commands::TableError),
    #[error("{0}")]
    Refused(String),
}

/// Completes the users' rules with what `pipelab_engine::acl::grants` finds in this
/// server's own `COMMAND` (the rules of its command line cannot name
/// commands a server may lack).
fn grant(socket: &Path) -> Result<(), GrantError> {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut ask = |argv: &[&[u8]]| -> Result<resp::Value, GrantError> {
        let mut out = Vec::new();
        resp::encode_command(argv, &mut out);
        s.write_all(&out)?;
        let (mut dec, mut buf, mut chunk) = (resp::Decoder::new(), Vec::new(), [0u8; 65536]);
        loop {
            let n = s.read(&mut chunk)?;
            if n == 0 {
                return Err(GrantError::Closed);
            }
            buf.extend_from_slice(&chunk[..n]);
            if let resp::Decoded::Complete { value, .. } = dec.decode(&buf)? {
                return Ok(value);
            }
        }
    };
    let table = pipelab_engine::commands::Table::from_reply(&ask(&[b"COMMAND"])?, None)?;
    for argv in pipelab_engine::acl::grants(&table) {
        let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        let reply = ask(&argv)?;
        if reply.is_error() {
            return Err(GrantError::Refused(pipelab_engine::conn::reply_text(&reply)));
        }
    }
    Ok(())
}

/// The embedded redis-server, watched by a thread of its own for as long
/// as `pipelab serve` runs: if the child dies, the thread starts a new one on
/// the same socket (Redis data is lost, as in any restart of a server without
/// persistence). The same thread spawns every child, so the kernel's
/// parent-death signal (tied to the spawning thread) fires only when the
/// server itself goes.
pub struct Supervised {
    url: String,
    socket: PathBuf,
    pid: Option<u32>,
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

/// How often the supervisor looks at the child.
const WATCH_EVERY: Duration = Duration::from_millis(250);

impl Supervised {
    /// Starts redis-server (`bin`) and its supervisor; returns once it answers PING.
    pub fn start(bin: &str, config: &EmbeddedConfig) -> Result<Supervised, EmbeddedError> {
        let config = config.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = std::sync::mpsc::channel::<()>();
        let bin = bin.to_string();
        let thread = std::thread::Builder::new()
            .name("redis-supervisor".into())
            .spawn(move || {
                let mut redis = match EmbeddedRedis::start(&bin, &config) {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok((redis.url(), redis.socket().to_path_buf(), redis.pid())));
                // Until stop() (or the sender is dropped): watch and revive,
                // backing off (up to 10 s) while restarts keep failing.
                let mut wait = WATCH_EVERY;
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stop_rx.recv_timeout(wait) {
                    if let Some((status, restarted)) = redis.revive(&bin) {
                        match restarted {
                            Ok(()) => {
                                wait = WATCH_EVERY;
                                tracing::warn!(%status, pid = redis.pid(), "redis-server exited; started a new one (its data is gone)")
                            }
                            Err(e) => {
                                wait = (wait * 2).min(Duration::from_secs(10));
                                tracing::error!(%status, error = %e, retry_in_ms = wait.as_millis() as u64, "redis-server exited and could not be restarted")
                            }
                        }
                    }
                }
                redis.stop();
            })
            .map_err(|source| EmbeddedError::Spawn { bin: "redis-supervisor thread".into(), source })?;
        match ready_rx.recv() {
            Ok(Ok((url, socket, pid))) => Ok(Supervised { url, socket, pid, stop, thread }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(EmbeddedError::Spawn {
                bin: "redis-supervisor thread".into(),
                source: io::Error::other("the supervisor thread ended before redis-server started"),
            }),
        }
    }

    /// `unix:///…/redis.sock`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The first child's pid.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Stops the child (SIGTERM, then SIGKILL after 5 s) and the supervisor.
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
