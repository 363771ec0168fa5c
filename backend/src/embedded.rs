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
use tempfile::TempDir;
use tokio::process::Child;

/// How long it may take to exit after SIGTERM before it gets SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// The embedded redis-server's default `busy-reply-threshold` (ms).
pub const DEFAULT_BUSY_REPLY_THRESHOLD_MS: u64 = 250;

/// Limits of the embedded redis-server (`pipelab serve` flags): it serves
/// whoever can reach pipelab, so one request must not be able to take the
/// machine's memory or freeze it with a script.
#[derive(clap::Args, Debug, Clone)]
pub struct EmbeddedConfig {
    /// The embedded redis-server's `maxmemory` (bytes, or Redis's units:
    /// `256mb`, `1gb`); past it writes get Redis's OOM error. Its largest
    /// string (`proto-max-bulk-len`) is capped to the same (at least 1mb,
    /// at most Redis's 512mb), so that one `SETRANGE` cannot pass it.
    #[arg(long, env = "PIPELAB_EMBEDDED_MAXMEMORY", value_parser = parse_memory, default_value = "256mb")]
    pub embedded_maxmemory: u64,

    /// The embedded redis-server's `maxmemory-policy` (`noeviction`:
    /// writes past the cap fail; `allkeys-lru`: old keys are evicted).
    #[arg(long, env = "PIPELAB_EMBEDDED_MAXMEMORY_POLICY", default_value = "noeviction")]
    pub embedded_maxmemory_policy: String,

    /// The embedded redis-server's `busy-reply-threshold` (ms, `lua-time-limit`
    /// before Redis 7.0): after this long a running script or function makes
    /// Redis answer BUSY and can be killed (pipelab sends `SCRIPT KILL` /
    /// `FUNCTION KILL` when it cuts the batch that runs it, and the next
    /// batches wait for the kill). Low (Redis's default is 5000), so that a
    /// cut script is killed at once; a script that runs longer makes other
    /// batches' commands answer BUSY while it runs.
    #[arg(long, env = "PIPELAB_EMBEDDED_BUSY_REPLY_THRESHOLD_MS", value_parser = clap::value_parser!(u64).range(1..), default_value_t = DEFAULT_BUSY_REPLY_THRESHOLD_MS)]
    pub embedded_busy_reply_threshold_ms: u64,

    /// redis-server arguments that make ACL users at start (`--user name
    /// rule…`: `pipelab serve` generates them, `pipelab_engine::acl`; passwords
    /// only as hashes).
    #[arg(skip)]
    pub acl_args: Vec<String>,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        EmbeddedConfig {
            embedded_maxmemory: 256 << 20,
            embedded_maxmemory_policy: "noeviction".into(),
            embedded_busy_reply_threshold_ms: DEFAULT_BUSY_REPLY_THRESHOLD_MS,
            acl_args: Vec::new(),
        }
    }
}

impl EmbeddedConfig {
    /// The redis-server arguments these settings become.
    fn args(&self) -> Vec<String> {
        let bulk = self.embedded_maxmemory.clamp(1 << 20, 512 << 20);
        [
            ("--maxmemory", self.embedded_maxmemory.to_string()),
            ("--maxmemory-policy", self.embedded_maxmemory_policy.clone()),
            ("--proto-max-bulk-len", bulk.to_string()),
            ("--busy-reply-threshold", self.embedded_busy_reply_threshold_ms.to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_string(), v])
        .chain(self.acl_args.iter().cloned())
        .collect()
    }
}

/// A memory size as Redis reads one (`memtoll` in Redis `src/util.c`): a
/// number of bytes, or with `k`/`kb`/`m`/`mb`/`g`/`gb` (`k` = 1000, `kb` =
/// 1024, ...), case-insensitive; at least 1mb (less would refuse every write).
pub fn parse_memory(s: &str) -> Result<u64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let mul: u64 = match &lower[digits.len()..] {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        unit => return Err(format!("unknown unit {unit:?} (use b, k, kb, m, mb, g or gb)")),
    };
    let n: u64 = digits.parse().map_err(|_| format!("{s:?} is not a size such as 256mb"))?;
    let bytes = n.checked_mul(mul).ok_or_else(|| format!("{s:?} is too large"))?;
    if bytes < 1 << 20 {
        return Err(format!("{s:?} is less than 1mb"));
    }
    Ok(bytes)
}

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
        let dir = launch::private_dir("pipelab-redis-", &std::env::temp_dir()).map_err(spawn_err)?;
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
        cmd.args(self.config.args());
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

#[cfg(test)]
mod tests {
    use super::parse_memory;

    #[test]
    fn sizes_as_redis_reads_them() {
        assert_eq!(parse_memory("256mb"), Ok(256 << 20));
        assert_eq!(parse_memory("1GB"), Ok(1 << 30));
        assert_eq!(parse_memory("2m"), Ok(2_000_000));
        assert_eq!(parse_memory("1048576"), Ok(1 << 20));
        assert!(parse_memory("10kb").is_err(), "below 1mb");
        assert!(parse_memory("12tb").is_err());
        assert!(parse_memory("lots").is_err());
    }
}
