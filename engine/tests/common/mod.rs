//! A real `redis-server` for tests: started on a free port (bind
//! 127.0.0.1:0, read the port, release it), no persistence, in its own
//! temporary directory, killed when dropped. Shared by every integration
//! test of the backend (executor, API).
#![allow(dead_code)]

pub mod cluster;
pub mod faults;
pub mod ledger;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running redis-server owned by the test.
pub struct RedisServer {
    pub port: u16,
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
    /// Unix socket path (the server listens there too).
    pub socket: PathBuf,
    extra: Vec<String>,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

/// The server on PATH truly lacks `feature`, so the check that needs it
/// cannot run: said on stderr and, where the server matrix asks for it
/// (`PIPELAB_MATRIX_NOTES`, scripts/test-servers.sh), appended to its notes,
/// so the matrix names what was not checked and why. Never a silent pass.
pub fn lacks(test: &str, feature: &str) {
    let line = format!("{test}: the server lacks {feature}");
    eprintln!("{line}");
    if let Ok(path) = std::env::var("PIPELAB_MATRIX_NOTES") {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path).expect("PIPELAB_MATRIX_NOTES is writable");
        writeln!(f, "{line}").expect("write the matrix notes");
    }
}

/// Does the server know `name`? (`COMMAND INFO` answers nil for a command it lacks.)
pub fn has_command(redis: &RedisServer, name: &str) -> bool {
    matches!(redis.cmd_str(&["COMMAND", "INFO", name]), resp::Value::Array(v) if matches!(v.first(), Some(resp::Value::Array(_))))
}

/// Is `message` Redis's refusal of a command a script's user may not run?
/// Redis 7.0: "The user executing the script can't run this command…";
/// Redis 7.2+, Valkey, Redict: "ACL failure in script: User … has no
/// permissions to run the '…' command".
pub fn is_script_acl_refusal(message: &str) -> bool {
    message.contains("can't run this command") || message.contains("has no permissions to run")
}

/// A port that was free a moment ago, and never handed out before in this
/// test process: a server restarted on its port (`restart`) is not beaten
/// to it by another test's new server, which would then answer in its place.
pub fn free_port() -> u16 {
    free_port_where(|_| true)
}

/// [`free_port`] that also passes `ok`.
pub fn free_port_where(ok: impl Fn(u16) -> bool) -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = l.local_addr().unwrap().port();
        let mut handed = HANDED_OUT.lock().unwrap();
        if !handed.contains(&port) && ok(port) {
            handed.push(port);
            return port;
        }
    }
}

impl RedisServer {
    /// Starts redis-server with the default test settings.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts redis-server with extra arguments (e.g. `["--requirepass", "x"]`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        Self::start_on(free_port(), extra)
    }

    /// [`RedisServer::start_with`], or what the server said if it exited
    /// at start (a build without TLS refuses `--tls-port`).
    pub fn try_start_with(extra: &[&str]) -> Result<RedisServer, String> {
        let mut s = Self::unstarted(free_port(), extra);
        s.try_spawn()?;
        Ok(s)
    }

    /// [`RedisServer::start_with`] on `port`.
    pub fn start_on(port: u16, extra: &[&str]) -> RedisServer {
        let mut s = Self::unstarted(port, extra);
        s.spawn();
        s
    }

    fn unstarted(port: u16, extra: &[&str]) -> RedisServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("redis.sock");
        RedisServer { port, url: format!("redis://127.0.0.1:{port}"), socket, extra: extra.iter().map(|s| s.to_string()).collect(), dir, child: None }
    }

    fn spawn(&mut self) {
        if let Err(log) = self.try_spawn() {
            panic!("redis-server exited at start; args {:?}: {log}", self.extra);
        }
    }

    fn try_spawn(&mut self) -> Result<(), String> {
        let log = self.dir.path().join("stdout.log");
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&self.socket)
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(std::fs::File::create(&log).expect("the server's log file"))
            .stderr(Stdio::null());
        let child = cmd.spawn().expect("redis-server not found on PATH (run scripts/setup.sh)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.ping_raw() {
                return Ok(());
            }
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                return Err(format!("{status}: {}", std::fs::read_to_string(&log).unwrap_or_default().trim()));
            }
            assert!(Instant::now() < deadline, "redis-server did not answer PING within 10 s on port {}", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn ping_raw(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else { return false };
        let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
        if s.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut buf = [0u8; 64];
        // Any reply means it listens (with requirepass it is -NOAUTH).
        matches!(s.read(&mut buf), Ok(n) if n > 0)
    }

    /// Kills the server at once (SIGKILL): connections drop, nothing is saved.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills (if running) and starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Runs one command on a fresh connection and returns its reply
    /// (for assertions; goes around the code under test).
    pub fn cmd(&self, argv: &[&[u8]]) -> resp::Value {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to test redis");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut out = Vec::new();
        resp::encode_command(argv, &mut out);
        s.write_all(&out).unwrap();
        read_one(&mut s)
    }

    /// `cmd` with string arguments.
    pub fn cmd_str(&self, argv: &[&str]) -> resp::Value {
        let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
        self.cmd(&argv)
    }
}

/// Reads exactly one reply from a blocking socket.
pub fn read_one(s: &mut impl Read) -> resp::Value {
    let mut buf = Vec::new();
    let mut dec = resp::Decoder::new();
    let mut chunk = [0u8; 65536];
    loop {
        if !buf.is_empty() {
            match dec.decode(&buf).expect("valid RESP from redis") {
                resp::Decoded::Complete { value, .. } => return value,
                resp::Decoded::Incomplete { .. } => {}
            }
        }
        let n = s.read(&mut chunk).expect("read from test redis");
        assert!(n > 0, "test redis closed the connection");
        buf.extend_from_slice(&chunk[..n]);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A batch of inline `lines` (split as Redis splits them) in `mode`, with
/// the executor's defaults: batch size 1000, `on_error: continue`, no
/// simulated RTT, RESP2, nothing watched.
pub fn batch(mode: pipelab_model::Mode, lines: &[&str]) -> pipelab_engine::exec::Batch {
    let commands: pipelab_engine::exec::Commands =
        lines.iter().map(|l| resp::split_args(l.as_bytes()).expect("test command parses")).collect();
    pipelab_engine::exec::Batch::with_mode(commands, mode)
}

/// Connections named `pipelab` (the executor's CLIENT SETNAME) in CLIENT LIST.
pub fn pipelab_connections(redis: &RedisServer) -> usize {
    pipelab_client_lines(redis).len()
}

/// After batches are done, the only pipelab connections left in Redis are
/// the pool's idle ones: as many as `idle` says the pool holds (at most
/// `max_idle`), none busy (no MULTI, nothing queued, no blocking or pub/sub
/// flag). Waits up to `secs` for dropped connections to close.
pub async fn assert_only_idle_pooled(pool_idle: impl AsyncFn() -> usize, redis: &RedisServer, max_idle: usize, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let idle = pool_idle().await;
        let clients = pipelab_client_lines(redis);
        if clients.len() == idle {
            assert!(idle <= max_idle, "{idle} idle connections, over the bound {max_idle}");
            for line in &clients {
                assert!(
                    // `flags=N`: not in MULTI (x), blocked (b) or pub/sub (P). Not `multi=`,
                    // which is -1 outside a transaction on Redis but 0 on Valkey 8.1+.
                    line.contains(" flags=N ") && line.contains(" qbuf=0 ") && line.contains(" sub=0 "),
                    "a pooled connection is busy: {line}"
                );
            }
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} pipelab connections in Redis, but {idle} idle in the pool: {clients:#?}",
            clients.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// CLIENT LIST lines of the connections named `pipelab`.
pub fn pipelab_client_lines(redis: &RedisServer) -> Vec<String> {
    match redis.cmd_str(&["CLIENT", "LIST"]) {
        resp::Value::Bulk(text) | resp::Value::Verbatim { text, .. } => String::from_utf8_lossy(&text)
            .lines()
            .filter(|l| l.split(' ').any(|f| f == "name=pipelab"))
            .map(str::to_string)
            .collect(),
        other => panic!("CLIENT LIST: {other:?}"),
    }
}

/// The engine's limits for one batch run as `opts` asks: its timeouts (the
/// batch's time limit is `opts.deadline` if it has one, else
/// `opts.read_timeout`), its reply limit; one batch at a time, no sessions.
fn limits_of(opts: &pipelab_engine::exec::ExecOptions) -> pipelab_engine::engine::EngineLimits {
    let batch_timeout = opts.deadline.map_or(opts.read_timeout, |d| d.saturating_duration_since(Instant::now()));
    pipelab_engine::engine::EngineLimits {
        batch_timeout,
        connect_timeout: opts.connect_timeout,
        max_reply_bytes: opts.max_reply_bytes.unwrap_or(u64::MAX),
        max_concurrent_batches: 1,
        max_batches_per_client: 1,
        max_blocking_per_client: 1,
        session_idle: Duration::from_secs(60),
        max_sessions: 0,
        max_sessions_per_client: 0,
        // The pool's own configuration decides.
        shared_connections: false,
    }
}

/// Runs `batch` through `Engine::run` on an engine over `pool` (as the
/// shared Redis, a pooled connection), with [`limits_of`] `opts` and its
/// cancel, each result handed to `sink`. The engine's refusals other than
/// the executor's own cannot happen here (one batch, no client, nothing
/// killed): they panic.
async fn run_on_engine<K: pipelab_engine::exec::ResultSink>(
    pool: &std::sync::Arc<pipelab_engine::run::Target>,
    batch: &pipelab_engine::exec::Batch,
    opts: &pipelab_engine::exec::ExecOptions,
    sink: &mut K,
    cancel: Option<pipelab_engine::conn::Cancel>,
) -> Result<pipelab_engine::exec::StreamReport<std::convert::Infallible>, pipelab_engine::exec::ExecError> {
    use pipelab_engine::engine::{Connection, Engine, EngineError, Redis, RedisSource, RunOptions, Shared, Who};
    let shared = Shared { target: pool.target().clone(), source: RedisSource::Configured, pool: pool.clone(), readonly: None, admin: None };
    let engine = Engine::new(Redis::Shared(shared), limits_of(opts), vec![tokio::runtime::Handle::current()]);
    let who = Who { access: pipelab_engine::commands::Access::Full, visitor: None, client: None };
    let on = engine.backend(who).await.expect("the shared Redis's backend");
    match engine.run(&on, batch, sink, RunOptions { on: Connection::Pooled, cancel }).await {
        Ok(out) => Ok(out),
        Err(EngineError::Exec(e)) => Err(e),
        Err(e) => panic!("the engine refused a test's batch: {e}"),
    }
}

/// Runs `batch` on a connection of its own to `target` (a fresh `Engine`
/// over a [`pipelab_engine::run::Target::fresh`]), every result collected
/// into the report. Checked with `opts.commands` (then read from the server
/// into the engine's pool, as `Engine::run` checks with its pool's), else
/// the built-in table. Errors only if nothing was sent.
pub async fn execute(
    target: &pipelab_engine::conn::RedisTarget,
    batch: &pipelab_engine::exec::Batch,
    opts: &pipelab_engine::exec::ExecOptions,
) -> Result<pipelab_engine::exec::Report, pipelab_engine::exec::ExecError> {
    let pool = pipelab_engine::run::Target::fresh(target.clone());
    if opts.commands.is_some() {
        pool.commands_loaded(opts.connect_timeout).await;
    }
    let mut results = Vec::with_capacity(batch.commands.len());
    let out = run_on_engine(&pool, batch, opts, &mut results, opts.cancel.clone()).await?;
    out.into_report(results).map_err(pipelab_engine::exec::ExecError::Connect)
}

/// Runs `batch` on a connection from `pool` through `Engine::run`, each
/// result handed to `sink`. A pool no connection has opened yet has one
/// opened first (the batch reuses it), which reads the server's command
/// table for `Engine::run` to check with; that batch is not shared (a
/// cancel never flipped), as its sharing was decided on the built-in table.
pub async fn execute_pooled_into<K: pipelab_engine::exec::ResultSink>(
    pool: &std::sync::Arc<pipelab_engine::run::Target>,
    batch: &pipelab_engine::exec::Batch,
    opts: &pipelab_engine::exec::ExecOptions,
    sink: &mut K,
) -> Result<pipelab_engine::exec::StreamReport<std::convert::Infallible>, pipelab_engine::exec::ExecError> {
    let mut cancel = opts.cancel.clone();
    let plan = &batch.plan;
    let settings = pipelab_engine::conn::ConnSettings {
        connect_timeout: opts.connect_timeout,
        read_timeout: opts.read_timeout,
        resp3: plan.resp3,
        simulated_rtt_ms: plan.simulated_rtt_ms,
        simulated_bandwidth_mbps: plan.simulated_bandwidth_mbps,
        max_reply_bytes: opts.max_reply_bytes,
        deadline: opts.deadline,
        cancel: None,
    };
    // A connection behind the delay line reads no table.
    if pool.commands_if_checked().is_none() && !settings.simulates_network() {
        if let Ok(lease) = pool.checkout(&settings).await {
            pool.checkin(lease.conn);
        }
        cancel.get_or_insert_with(pipelab_engine::conn::Cancel::new);
    }
    run_on_engine(pool, batch, opts, sink, cancel).await
}

/// [`execute_pooled_into`], every result collected into the report.
pub async fn execute_pooled(
    pool: &std::sync::Arc<pipelab_engine::run::Target>,
    batch: &pipelab_engine::exec::Batch,
    opts: &pipelab_engine::exec::ExecOptions,
) -> Result<pipelab_engine::exec::Report, pipelab_engine::exec::ExecError> {
    let mut results = Vec::with_capacity(batch.commands.len());
    let out = execute_pooled_into(pool, batch, opts, &mut results).await?;
    out.into_report(results).map_err(pipelab_engine::exec::ExecError::Connect)
}
