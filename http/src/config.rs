//! Configuration of `pipelab serve`: every setting is a flag and an
//! environment variable alike (`--listen` / `PIPELAB_LISTEN`, `--redis` /
//! `REDIS_URL`, ...), so the same binary runs from a terminal or a container.
//!
//! The limits exist because the API runs arbitrary batches for whoever can
//! reach it: each one bounds a resource a single request could otherwise
//! exhaust (memory for the body, the arguments and the replies; time; Redis
//! connections).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use pipelab_engine::node::NodeIdError;
use serde::Serialize;
use utoipa::ToSchema;

/// `pipelab serve` flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeConfig {
    /// Address to listen on (HTTP).
    #[arg(long, env = "PIPELAB_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Redis to run batches against: `redis://[user:pass@]host:port[/db]`,
    /// `rediss://...`, or `unix:///path.sock`. Without it, pipelab starts its own
    /// redis-server (from PATH) and stops it on exit.
    #[arg(long, env = "REDIS_URL")]
    pub redis: Option<String>,

    /// The redis-server binary started when no --redis is given.
    #[arg(long, env = "PIPELAB_REDIS_SERVER", default_value = "redis-server")]
    pub redis_server: String,

    /// Serve the page's files from this directory (a built web/dist,
    /// `scripts/build-web.sh`), read per request, instead of the page
    /// built into the binary.
    #[arg(long, env = "PIPELAB_WEB_DIR", value_name = "DIR")]
    pub web_dir: Option<PathBuf>,

    /// Log format on stderr: `text` or `json` (one object per line). The
    /// level comes from PIPELAB_LOG, else RUST_LOG (default `info`).
    #[arg(long, env = "PIPELAB_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: crate::telemetry::LogFormat,

    /// After SIGTERM or Ctrl-C (ms): the node drains (`/readyz` answers
    /// 503 at once, new visitors and new sessions 503 with `Retry-After`)
    /// until its running batches and open sessions are done or this long
    /// has passed, then stops accepting; requests still running get what
    /// is left of it.
    #[arg(long, env = "PIPELAB_SHUTDOWN_GRACE_MS", default_value_t = 10_000)]
    pub shutdown_grace_ms: u64,

    /// This node's id, the prefix of every visitor cookie, session id and
    /// live-batch id it makes (`<node>.<random>`), so that a balancer in
    /// front of many nodes routes by it: 1 to 32 of a-z, 0-9 and inner
    /// `-`. Default: the host name (a pod's name in a StatefulSet).
    #[arg(long, env = "PIPELAB_NODE_ID")]
    pub node_id: Option<String>,

    /// Longest a client may take to send a request's headers (ms), counted
    /// on a kept-alive connection from the previous response: a connection
    /// that stalls in them, or stays idle that long, is closed (a request
    /// body has the batch timeout).
    #[arg(long, env = "PIPELAB_HEADER_TIMEOUT_MS", value_parser = at_least_one::<u64>(), default_value_t = 30_000)]
    pub header_timeout_ms: u64,

    /// Threads serving HTTP, each with its own single-threaded async
    /// runtime; connections are dealt to them in turn (0: one per CPU).
    #[arg(long, env = "PIPELAB_THREADS", default_value_t = 0)]
    pub threads: usize,

    /// Let MIGRATE run: it makes Redis connect to whatever host:port the
    /// request names (refused by default: a request could make Redis reach any
    /// host and port pipelab's machine can).
    #[arg(long, env = "PIPELAB_ALLOW_MIGRATE")]
    pub allow_migrate: bool,
    /// Most HTTP connections open at once; past it a new connection is
    /// closed at once (counted in /metrics). 0: min(1024, half the
    /// process's open-file limit `RLIMIT_NOFILE`), so that accepting never
    /// runs out of descriptors for Redis connections and files.
    #[arg(long, env = "PIPELAB_MAX_CONNECTIONS", default_value_t = 0)]
    pub max_connections: usize,

    /// Most HTTP connections open at once from one client IP address; past
    /// it a new connection from that address is closed at once.
    #[arg(long, env = "PIPELAB_MAX_CONNECTIONS_PER_IP", value_parser = at_least_one::<usize>(), default_value_t = 256)]
    pub max_connections_per_ip: usize,

    /// Longest a response write may wait for the client to read (ms): a
    /// client that stops reading its response that long is disconnected,
    /// freeing the report it held.
    #[arg(long, env = "PIPELAB_WRITE_TIMEOUT_MS", value_parser = at_least_one::<u64>(), default_value_t = 30_000)]
    pub write_timeout_ms: u64,

    #[command(flatten)]
    pub guard: GuardConfig,

    #[command(flatten)]
    pub embedded: EmbeddedConfig,

    #[command(flatten)]
    pub limits: Limits,

    #[command(flatten)]
    pub auth: AuthConfig,

    #[command(flatten)]
    pub upstash: UpstashConfig,

    /// `--sandbox` and its limits (rate limits on by default in the sandbox
    /// read `sandbox.sandbox`).
    #[command(flatten)]
    pub sandbox: SandboxConfig,

    /// Serve on a non-loopback address without a token and without
    /// `--sandbox` (protected mode refuses to start otherwise: anyone who
    /// reaches the address could read and delete every key).
    #[arg(long, env = "PIPELAB_ALLOW_UNAUTHENTICATED", value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_unauthenticated: bool,

    /// Also run `pipelab doctor`'s proxy on this address (e.g. 127.0.0.1:6380),
    /// forwarding to this server's Redis as its batches' user: an application
    /// pointed here is watched live, its summary at `/api/v1/doctor/summary`
    /// and in the tutorial's lesson "Your application". A raw Redis port with
    /// no token: refused with --sandbox, and on a non-loopback address without
    /// --allow-unauthenticated.
    #[arg(long, env = "PIPELAB_DOCTOR_LISTEN", value_name = "ADDR")]
    pub doctor_listen: Option<SocketAddr>,

    /// The RTT the doctor's savings are computed at when a request names
    /// none (`?rtt_ms=`), in ms (0 to 1000), as `pipelab doctor --rtt`.
    #[arg(long, env = "PIPELAB_DOCTOR_RTT", value_name = "MS", value_parser = rtt_ms, default_value_t = 0.5)]
    pub doctor_rtt: f64,

    #[command(flatten)]
    pub rate: RateConfig,
}

/// `pipelab serve --sandbox` and its limits (`pipelab_engine::sandbox`).
#[derive(clap::Args, Debug, Clone)]
pub struct SandboxConfig {
    /// A public playground: each visitor (a cookie) gets a redis-server of
    /// their own, started by pipelab, that only they can reach; commands
    /// that administer a server are refused. Needs redis-server (not --redis).
    #[arg(long, env = "PIPELAB_SANDBOX", value_parser = clap::builder::BoolishValueParser::new())]
    pub sandbox: bool,

    /// Runs every visitor's redis-server WITHOUT its jail (Landlock, seccomp,
    /// no_new_privs: docs/sandbox.md): a visitor who takes over their Redis
    /// can then reach the other visitors' and pipelab's files. Only for a
    /// machine where no jail works (`--sandbox` refuses to start there).
    #[arg(long, env = "PIPELAB_SANDBOX_UNJAILED", value_parser = clap::builder::BoolishValueParser::new())]
    pub sandbox_unjailed: bool,

    /// A visitor's Redis's memory (`maxmemory`, noeviction; Redis's units:
    /// `16mb`); its longest string is no longer.
    #[arg(long, env = "PIPELAB_SANDBOX_MAX_BYTES", value_parser = parse_memory, default_value = "16mb")]
    pub sandbox_max_bytes: u64,

    /// A visitor idle this long loses their keys, saved or not (and their
    /// cookie lapses): `3600`, `90s`, `30m`, `1h`.
    #[arg(long, env = "PIPELAB_SANDBOX_IDLE", value_parser = parse_duration, default_value = "24h")]
    pub sandbox_idle: Duration,

    /// A visitor idle this long hibernates: their keys are saved to the
    /// state directory and their redis-server stopped; their next request
    /// starts one on those keys.
    #[arg(long, env = "PIPELAB_SANDBOX_HIBERNATE_AFTER", value_parser = parse_duration, default_value = "2m")]
    pub sandbox_hibernate_after: Duration,

    /// Where hibernated visitors' keys are kept (`<visitor>.rdb`, mode
    /// 0700; one node's own): a volume, so that they outlive a restart.
    /// Default: `pipelab-sandbox-state` in the temporary directory.
    #[arg(long, env = "PIPELAB_SANDBOX_STATE_DIR", value_name = "DIR")]
    pub sandbox_state_dir: Option<std::path::PathBuf>,

    /// The memory the visitors' redis-servers may hold together (their
    /// private resident memory; Redis's units: `8gb`): past it the least
    /// recently active hibernate. 0: half the memory pipelab may use (the
    /// machine's, or its control group's limit where lower).
    #[arg(long, env = "PIPELAB_SANDBOX_MEMORY", value_parser = parse_budget, default_value = "0")]
    pub sandbox_memory: u64,

    /// The room saved keys may take in the state directory (`1gb`): past
    /// it, the visitors idle longest lose theirs (and are told). 0: the
    /// smaller of 1 GiB and a tenth of the directory's filesystem.
    #[arg(long, env = "PIPELAB_SANDBOX_DISK", value_parser = parse_budget, default_value = "0")]
    pub sandbox_disk: u64,

    /// Redis children started ahead, so that a new visitor's first answer
    /// does not wait for one to start; while new visitors come fast, more
    /// are kept (a quarter second of arrivals, up to 4 times this).
    #[arg(long, env = "PIPELAB_SANDBOX_SPARES", default_value_t = 4)]
    pub sandbox_spares: usize,

    /// Most visitors with a running redis-server at once; past it the
    /// least recently active hibernate (nobody is refused).
    #[arg(long, env = "PIPELAB_SANDBOX_MAX_VISITORS", value_parser = at_least_one::<usize>(), default_value_t = pipelab_engine::sandbox::MAX_RUNNING)]
    pub sandbox_max_visitors: usize,

    /// New visitors one client address (an IPv6 /64) may start a minute
    /// (more: 429 `too_many_visitors` with `Retry-After`); returning
    /// visitors are not counted. 0: no limit.
    #[arg(long, env = "PIPELAB_SANDBOX_NEW_VISITORS_PER_MINUTE", default_value_t = 30)]
    pub sandbox_new_visitors_per_minute: u32,

    /// Most batches one visitor runs at once (more: 429 `too_many_batches`).
    #[arg(long, env = "PIPELAB_SANDBOX_VISITOR_BATCHES", value_parser = at_least_one::<usize>(), default_value_t = 4)]
    pub sandbox_visitor_batches: usize,

    /// Most sessions one visitor keeps open (more: 503 `too_many_sessions`).
    #[arg(long, env = "PIPELAB_SANDBOX_VISITOR_SESSIONS", value_parser = at_least_one::<usize>(), default_value_t = 2)]
    pub sandbox_visitor_sessions: usize,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        let s = pipelab_engine::sandbox::Settings::default();
        SandboxConfig {
            sandbox: false,
            sandbox_unjailed: false,
            sandbox_max_bytes: s.max_bytes,
            sandbox_idle: s.idle,
            sandbox_hibernate_after: s.hibernate_after,
            sandbox_state_dir: None,
            sandbox_memory: 0,
            sandbox_disk: 0,
            sandbox_spares: s.spares,
            sandbox_max_visitors: s.max_visitors,
            sandbox_new_visitors_per_minute: s.new_visitors_per_minute,
            sandbox_visitor_batches: s.visitor_batches,
            sandbox_visitor_sessions: s.visitor_sessions,
        }
    }
}

impl SandboxConfig {
    /// The supervisor's settings, its children started from `redis_server`.
    pub fn settings(&self, redis_server: &str) -> pipelab_engine::sandbox::Settings {
        pipelab_engine::sandbox::Settings {
            redis_server: redis_server.to_string(),
            unjailed: self.sandbox_unjailed,
            max_bytes: self.sandbox_max_bytes,
            idle: self.sandbox_idle,
            hibernate_after: self.sandbox_hibernate_after,
            state_dir: Some(self.sandbox_state_dir.clone().unwrap_or_else(pipelab_engine::sandbox::default_state_dir)),
            memory: match self.sandbox_memory {
                0 => pipelab_engine::sandbox::default_memory(),
                n => n,
            },
            disk: self.sandbox_disk,
            spares: self.sandbox_spares,
            max_visitors: self.sandbox_max_visitors,
            new_visitors_per_minute: self.sandbox_new_visitors_per_minute,
            visitor_batches: self.sandbox_visitor_batches,
            visitor_sessions: self.sandbox_visitor_sessions,
        }
    }
}

/// A budget as `--sandbox-memory` takes it: 0 (the default's), or a size
/// such as `8gb` (at least 1mb).
pub fn parse_budget(s: &str) -> Result<u64, String> {
    match s.trim() {
        "0" => Ok(0),
        _ => parse_memory(s),
    }
}

/// A duration as `--sandbox-idle` takes it: whole seconds, or a number with
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

impl ServeConfig {
    /// `--node-id`, else the host name, lowercased and checked
    /// (`pipelab_engine::node::check`). Errors: the message names the flag.
    pub fn node_id(&self) -> Result<String, NodeIdFlagError> {
        match &self.node_id {
            Some(id) => pipelab_engine::node::check(id).map_err(NodeIdFlagError::Given),
            None => {
                let host = host_name().ok_or(NodeIdFlagError::NoHostName)?;
                pipelab_engine::node::check(&host).map_err(NodeIdFlagError::HostName)
            }
        }
    }

    /// `--max-connections`, with 0 resolved: min(1024, RLIMIT_NOFILE / 2).
    pub fn connection_cap(&self) -> usize {
        if self.max_connections > 0 {
            return self.max_connections;
        }
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit only writes the struct it is given.
        let nofile = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 { lim.rlim_cur } else { 1024 };
        (nofile / 2).clamp(1, 1024) as usize
    }
}

/// Why `--node-id` (or the host name in its stead) cannot be this node's id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeIdFlagError {
    #[error("--node-id / PIPELAB_NODE_ID: {0}")]
    Given(NodeIdError),
    #[error("--node-id / PIPELAB_NODE_ID: the host name cannot be read; give the node an id")]
    NoHostName,
    #[error("--node-id / PIPELAB_NODE_ID: not given, and the host name {0}: give the node an id")]
    HostName(NodeIdError),
    /// Another id was set in this process already.
    #[error("{0}")]
    Set(NodeIdError),
}

/// The machine's host name (`gethostname`), if it is UTF-8.
fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8(buf[..end].to_vec()).ok()
}

/// Per-request limits. All sizes in bytes, all times in ms; each at least 1
/// (0 would refuse or cut every request, so it is refused at start-up).
#[derive(clap::Args, Debug, Clone, Serialize, ToSchema)]
pub struct Limits {
    /// Largest request body accepted (bytes); larger bodies get 413.
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_BODY_BYTES", default_value_t = 32 * 1024 * 1024)]
    pub max_body_bytes: usize,

    /// Most commands in one batch (also the largest sweep `total`).
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_COMMANDS", default_value_t = 200_000)]
    pub max_commands: usize,

    /// Largest single argument (bytes, after base64 decoding).
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_ARG_BYTES", default_value_t = 8 * 1024 * 1024)]
    pub max_arg_bytes: usize,

    /// Most reply bytes read for one batch, and most bytes of the replies'
    /// JSON in its report (a NUL byte is 6: `\u0000`); past either the
    /// executor stops reading, drops the connection and reports the rest
    /// `unknown`.
    #[arg(long, value_parser = at_least_one::<u64>(), env = "PIPELAB_MAX_REPLY_BYTES", default_value_t = 64 * 1024 * 1024)]
    pub max_reply_bytes: u64,

    /// Longest a batch may run (ms), simulated RTT included; past it the
    /// batch is cut as if its connection were lost: the connection is
    /// dropped, commands awaiting replies are `unknown`, the rest `not_sent`.
    #[arg(long, value_parser = at_least_one::<u64>(), env = "PIPELAB_BATCH_TIMEOUT_MS", default_value_t = 30_000)]
    pub batch_timeout_ms: u64,

    /// Longest wait for the TCP/Unix connection to Redis and its handshake (ms).
    #[arg(long, value_parser = at_least_one::<u64>(), env = "PIPELAB_CONNECT_TIMEOUT_MS", default_value_t = 2_000)]
    pub connect_timeout_ms: u64,

    /// Batches running at once (each holds one Redis connection); more wait
    /// for a free slot, up to the batch timeout.
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_CONCURRENT_BATCHES", default_value_t = 256)]
    pub max_concurrent_batches: usize,

    /// Most keys in a batch's `watch` (WATCH is quadratic in the number of
    /// keys in Redis 7.0: 10k keys took 1.1 s, 40k 16 s); more get 400.
    /// Together the keys may not exceed `max_arg_bytes` (one WATCH command).
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_WATCH_KEYS", default_value_t = 1000)]
    pub max_watch_keys: usize,

    /// Most entries in a sweep's `batch_sizes`.
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_SWEEP_POINTS", default_value_t = 16)]
    pub max_sweep_points: usize,

    /// A session (`POST /api/v1/sessions`) without a batch for this long
    /// (ms) is closed with its Redis connection.
    #[arg(long, value_parser = at_least_one::<u64>(), env = "PIPELAB_SESSION_IDLE_MS", default_value_t = 60_000)]
    pub session_idle_ms: u64,

    /// Most sessions open at once (each holds one Redis connection); past
    /// it `POST /api/v1/sessions` gets 503 `too_many_sessions`.
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_SESSIONS", default_value_t = 100)]
    pub max_sessions: usize,

    /// Sessions one client (its token, else its address) may have open at
    /// once; past it its `POST /api/v1/sessions` gets 503 `too_many_sessions`.
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_SESSIONS_PER_CLIENT", default_value_t = 10)]
    pub max_sessions_per_client: usize,

    /// Batches one client (its token, else its address) may run at once;
    /// more wait for one of its own to end (up to the batch timeout), not
    /// taking a slot of `max_concurrent_batches` meanwhile.
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_BATCHES_PER_CLIENT", default_value_t = 64)]
    pub max_batches_per_client: usize,

    /// Batches with a command that may block (BLPOP, XREAD BLOCK, WAIT…)
    /// one client may run at once; more wait, as above.
    #[arg(long, value_parser = at_least_one::<usize>(), env = "PIPELAB_MAX_BLOCKING_PER_CLIENT", default_value_t = 8)]
    pub max_blocking_per_client: usize,

    /// Bytes of answers being made or not yet read by their clients, all
    /// together (each of 64 KiB or more counts, before it is made, until it
    /// is written or its client gone); past it an answer is refused: 503
    /// `busy`, or 413 `answer_too_large` if it alone is larger. Bytes, or
    /// Redis's units (`512mb`).
    #[arg(long, env = "PIPELAB_MAX_RESPONSE_MEMORY", value_parser = parse_memory, default_value = "512mb")]
    pub max_response_memory: u64,

    /// Small batches of concurrent requests (one pipeline chunk of up to
    /// 64 data commands, no RTT, no WATCH…) share one Redis connection per
    /// serving thread and go out together in one write (docs/api.md#shared-connections);
    /// `false`: every batch has a connection to itself.
    #[arg(long, env = "PIPELAB_SHARED_CONNECTIONS", default_value_t = true, action = clap::ArgAction::Set)]
    pub shared_connections: bool,
}

/// A limit's parser: a whole number, at least 1.
fn at_least_one<T>() -> clap::builder::RangedU64ValueParser<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
    <T as TryFrom<u64>>::Error: std::error::Error + Send + Sync + 'static,
{
    clap::builder::RangedU64ValueParser::new().range(1..)
}

/// The largest `simulated_rtt_ms` accepted (docs/api.md#limits: 0 to 1000 ms).
pub const MAX_SIMULATED_RTT_MS: f64 = 1000.0;

/// An RTT flag's parser: ms from 0 to [`MAX_SIMULATED_RTT_MS`], fractions allowed.
pub fn rtt_ms(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=MAX_SIMULATED_RTT_MS).contains(&v) => Ok(v),
        _ => Err(String::from("must be a number of ms from 0 to 1000 (fractions allowed, e.g. 0.2)")),
    }
}

impl Limits {
    pub fn batch_timeout(&self) -> Duration {
        Duration::from_millis(self.batch_timeout_ms)
    }
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }
}

// The flags of the HTTP surface, read here so that configuration depends
// on nothing above it; `api` and `upstash` take them from here.

/// Token flags of `pipelab serve`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AuthConfig {
    /// Full-access token (repeatable; the environment variable takes a
    /// comma-separated list). With any token set, /api/v1/* and the Upstash
    /// routes need one. A value on the command line shows in `ps` to every
    /// user of the machine: prefer PIPELAB_TOKENS or --tokens-file (as for
    /// every token flag below).
    #[arg(long = "token", env = "PIPELAB_TOKENS", value_delimiter = ',')]
    pub tokens: Vec<String>,

    /// File of full-access tokens, one a line (blank lines and lines
    /// starting with `#` are skipped).
    #[arg(long, env = "PIPELAB_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,

    /// Read-only token (repeatable; comma-separated in the environment):
    /// accepted, but every command that writes is refused (NOPERM). Prefer
    /// PIPELAB_READONLY_TOKENS to the flag (`ps` shows a flag's value).
    #[arg(long = "readonly-token", env = "PIPELAB_READONLY_TOKENS", value_delimiter = ',')]
    pub readonly_tokens: Vec<String>,

    /// Operator token (repeatable; comma-separated in the environment): full
    /// access plus the commands that reveal secrets (CONFIG GET, ACL LIST,
    /// ACL GETUSER, ACL DRYRUN, ...), refused to every other token. Prefer
    /// PIPELAB_OPERATOR_TOKENS to the flag (`ps` shows a flag's value).
    #[arg(long = "operator-token", env = "PIPELAB_OPERATOR_TOKENS", value_delimiter = ',')]
    pub operator_tokens: Vec<String>,

    /// Serve /metrics without a token even when tokens are configured.
    #[arg(long, env = "PIPELAB_METRICS_PUBLIC")]
    pub metrics_public: bool,
}

/// `pipelab serve` flags of the guards.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GuardConfig {
    /// Origins (`scheme://host[:port]`, comma-separated) whose pages may call
    /// the API besides the page's own; `*` allows any (not for a Redis you care about).
    #[arg(long, env = "PIPELAB_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Host names (comma-separated, `name` or `name:port`; `.example.com`
    /// for its subdomains too; `*` for any) accepted in the `Host` header
    /// besides IP addresses, `localhost` and `*.localhost`.
    #[arg(long, env = "PIPELAB_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
}

/// Rate-limit flags of `pipelab serve`. A limit not given keeps the
/// preset's (none, or `http::rate::RateLimits::sandbox`'s); 0 turns it off.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RateConfig {
    /// Requests per second per client address and per token (0: no limit).
    #[arg(long, env = "PIPELAB_RATE_REQUESTS")]
    pub rate_requests: Option<u32>,
    /// Requests a client may send at once above the rate (default: the rate).
    #[arg(long, env = "PIPELAB_RATE_REQUESTS_BURST", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_requests_burst: Option<u32>,
    /// Commands per second per client address and per token (0: no limit).
    #[arg(long, env = "PIPELAB_RATE_COMMANDS")]
    pub rate_commands: Option<u32>,
    /// Commands a client may send at once; also the most commands one
    /// request may hold while the limit is on (default: the rate).
    #[arg(long, env = "PIPELAB_RATE_COMMANDS_BURST", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_commands_burst: Option<u32>,
    /// Request-body bytes per second per client address and per token (0: no limit).
    #[arg(long, env = "PIPELAB_RATE_BYTES")]
    pub rate_bytes: Option<u32>,
    /// Body bytes a client may send at once; also the largest body one
    /// request may have while the limit is on (default: the rate).
    #[arg(long, env = "PIPELAB_RATE_BYTES_BURST", value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_bytes_burst: Option<u32>,
    /// Take the client address from the last `X-Forwarded-For` entry rather
    /// than the socket's peer: only behind a proxy that appends it.
    #[arg(long, env = "PIPELAB_TRUST_FORWARDED_FOR")]
    pub trust_forwarded_for: bool,
}

/// Flags of `pipelab serve` for the Upstash surface.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct UpstashConfig {
    /// Serve the Upstash-compatible routes under this path (`/upstash`:
    /// `POST /upstash`, `/upstash/pipeline`, …) instead of the root, where
    /// `GET /` stays the playground and `POST /` is a command.
    #[arg(long, env = "PIPELAB_UPSTASH_PREFIX")]
    pub upstash_prefix: Option<String>,

    /// Origins that browsers may call the Upstash routes from (CORS):
    /// repeatable or comma-separated, `*` for any; none by default.
    #[arg(long = "upstash-cors-origin", env = "PIPELAB_UPSTASH_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
}

/// An Upstash flag refused; each quotes the value given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstashFlagError {
    #[error("--upstash-prefix {0:?}: must start with /")]
    PrefixNotAbsolute(String),
    #[error("--upstash-prefix {0:?}: must be a plain path outside /api")]
    PrefixNotPlain(String),
    #[error("--upstash-cors-origin {0:?}: not a valid origin")]
    Origin(String),
}

/// The Upstash surface's settings, checked ([`UpstashSettings::from_config`]).
#[derive(Debug, Clone, Default)]
pub struct UpstashSettings {
    /// `--upstash-prefix`, normalized: starts with `/`, no trailing `/`;
    /// `None`: the root.
    pub prefix: Option<String>,
    /// `--upstash-cors-origin`.
    pub cors_origins: Vec<axum::http::HeaderValue>,
    /// Any origin (`*`).
    pub cors_any: bool,
}

impl UpstashSettings {
    /// Checks the flags: the prefix must be a path of its own (not `/`,
    /// not under `/api/v1`), each origin a valid header value.
    pub fn from_config(cfg: &UpstashConfig) -> Result<UpstashSettings, UpstashFlagError> {
        let prefix = match cfg.upstash_prefix.as_deref().map(|p| p.trim_end_matches('/')) {
            None | Some("") => None,
            Some(p) if !p.starts_with('/') => return Err(UpstashFlagError::PrefixNotAbsolute(p.to_string())),
            Some(p) if p == "/api" || p.starts_with("/api/") || p.contains(['{', '}', '?', '#', '*']) => {
                return Err(UpstashFlagError::PrefixNotPlain(p.to_string()))
            }
            Some(p) => Some(p.to_string()),
        };
        let mut settings = UpstashSettings { prefix, ..UpstashSettings::default() };
        for origin in &cfg.cors_origins {
            match origin.trim() {
                "" => {}
                "*" => settings.cors_any = true,
                o => settings.cors_origins.push(
                    axum::http::HeaderValue::from_str(o).map_err(|_| UpstashFlagError::Origin(o.to_string()))?,
                ),
            }
        }
        Ok(settings)
    }

    /// The path the Upstash routes see, without the prefix.
    pub fn strip_prefix<'a>(&self, path: &'a str) -> &'a str {
        match &self.prefix {
            Some(p) => path.strip_prefix(p.as_str()).unwrap_or(path),
            None => path,
        }
    }
}

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
    pub fn redis_args(&self) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::Limits;
    use clap::{Args, FromArgMatches};

    fn parse(args: &[&str]) -> Result<Limits, clap::Error> {
        let matches = Limits::augment_args(clap::Command::new("x")).try_get_matches_from(args)?;
        Limits::from_arg_matches(&matches)
    }

    #[test]
    fn every_limit_is_at_least_one() {
        assert_eq!(parse(&["x"]).unwrap().max_commands, 200_000);
        for flag in [
            "--max-body-bytes",
            "--max-commands",
            "--max-arg-bytes",
            "--max-reply-bytes",
            "--batch-timeout-ms",
            "--connect-timeout-ms",
            "--max-concurrent-batches",
            "--max-sweep-points",
            "--max-watch-keys",
            "--session-idle-ms",
            "--max-sessions",
            "--max-sessions-per-client",
            "--max-batches-per-client",
            "--max-blocking-per-client",
        ] {
            let err = parse(&["x", flag, "0"]).unwrap_err().to_string();
            assert!(err.contains(flag), "{flag}: {err}");
            assert!(parse(&["x", flag, "1"]).is_ok(), "{flag} 1");
        }
    }
}

#[cfg(test)]
mod duration_tests {
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
