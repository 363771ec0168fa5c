//! The engine as many callers share it: the Redis behind them (one shared
//! Redis or cluster, or a redis-server per sandbox visitor), the batch
//! slots, each client's fair share, the script kills a cut batch needs and
//! the threads big batches run on, the open sessions; and [`Engine::run`], the one way a
//! caller runs a batch on it. It knows nothing of HTTP: the server maps
//! [`EngineError`] to its responses and names its own flags.
//!
//! A caller first gets its Redis ([`Engine::backend`], from [`Who`] it
//! is), checks its batch with that Redis's command table, then runs it on
//! a pooled connection or on a session's ([`Connection`]).

pub mod backend;
pub mod error;
pub mod kill;
pub mod session;
pub mod share;

use std::convert::Infallible;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::{timeout_at, Instant};

pub use backend::{explain_lost, Backend, Who};
pub use error::{EngineError, SessionsFull, ShareFull};
pub use session::{Session, SessionSettings, Sessions, Taken};
pub use share::{ClientKey, Shares};

use crate::conn::{Cancel, Conn, RedisTarget};
use crate::exec::{Batch, Commands, ExecError, ExecOptions, Mode, Plan, Pool, PoolConfig, ResultSink, Status, StreamReport};
use crate::run::{run_on_session, run_pooled, Target};
use crate::sandbox::scripts;
use kill::{KillOnCut, Kills, Traits};

/// Where the shared Redis came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisSource {
    /// Given (`--redis`, `REDIS_URL`).
    Configured,
    /// A redis-server child pipelab started.
    Embedded,
}

/// The Redis behind the engine: one for everyone, or one per sandbox
/// visitor (each caller's is chosen by [`Engine::backend`]).
pub enum Redis {
    Shared(Shared),
    Sandbox(Arc<crate::sandbox::Supervisor>),
}

/// The one Redis (or cluster) every caller shares.
pub struct Shared {
    pub target: RedisTarget,
    pub source: RedisSource,
    /// Idle Redis connections reused between batches ([`crate::exec::pool`]),
    /// and the cluster once a batch found one ([`Target`]).
    pub pool: Arc<Target>,
    /// Where pipelab manages the Redis ([`crate::acl`]): the read-only
    /// user's pool (read-only callers' batches) and the default user's
    /// (operators' batches), while [`Shared::pool`] is the batch user's.
    /// `None`: [`Shared::pool`].
    pub readonly: Option<Arc<Target>>,
    pub admin: Option<Arc<Target>>,
}

impl Shared {
    /// `target`, its pool sized for `limits`.
    pub fn new(target: RedisTarget, source: RedisSource, limits: &EngineLimits) -> Shared {
        let pool = Target::new(Pool::new(target.clone(), limits.pool_config()));
        Shared { target, source, pool, readonly: None, admin: None }
    }

    /// The ACL users of a Redis pipelab manages ([`crate::acl`]; `target`
    /// is the batch user's already): read-only callers' batches run as the
    /// read-only user, operators' as `admin` (the default user's target).
    pub fn with_users(mut self, users: &crate::acl::Users, admin: RedisTarget, limits: &EngineLimits) -> Shared {
        self.readonly = Some(Target::new(self.pool.sibling(users.readonly.target(&self.target), limits.pool_config())));
        self.admin = Some(Target::new(self.pool.sibling(admin, limits.pool_config())));
        self
    }
}

/// The engine's limits, as the server's configuration sets them.
#[derive(Debug, Clone)]
pub struct EngineLimits {
    /// A batch's whole run, from taking its place to its last reply.
    pub batch_timeout: Duration,
    pub connect_timeout: Duration,
    /// The most bytes of replies one batch may read.
    pub max_reply_bytes: u64,
    /// Batches running at once, for everyone.
    pub max_concurrent_batches: usize,
    /// Batches running at once per client, and how many of them may block.
    pub max_batches_per_client: usize,
    pub max_blocking_per_client: usize,
    /// Sessions: closed after this long idle; open at once, and per client.
    pub session_idle: Duration,
    pub max_sessions: usize,
    pub max_sessions_per_client: usize,
    /// Small batches of concurrent callers written together on one
    /// connection per serving thread ([`crate::exec::shared`]).
    pub shared_connections: bool,
}

impl EngineLimits {
    /// As many idle connections as batches may run at once, up to 64.
    fn pool_config(&self) -> PoolConfig {
        PoolConfig { max_idle: self.max_concurrent_batches.clamp(1, 64), share: self.shared_connections, ..PoolConfig::default() }
    }
}

/// The connection a batch runs on.
pub enum Connection<'a> {
    /// One of its Redis's pool.
    Pooled,
    /// A session's connection, taken while the batch runs and put back if
    /// it is still fit for the next batch (whatever state its commands
    /// left it in), else left `None`.
    Session(&'a mut Option<Conn>),
}

/// How [`Engine::run`] runs a batch.
pub struct RunOptions<'a> {
    pub on: Connection<'a>,
    /// Cuts the batch short, as its timeout does ([`crate::conn::Cancel`]).
    pub cancel: Option<Cancel>,
}

/// A pooled connection, nothing to cancel it.
impl Default for RunOptions<'_> {
    fn default() -> Self {
        RunOptions { on: Connection::Pooled, cancel: None }
    }
}

/// Shared by every caller; cheap to clone.
#[derive(Clone)]
pub struct Engine(Arc<Inner>);

pub struct Inner {
    pub redis: Redis,
    pub limits: EngineLimits,
    /// One permit per running batch (`limits.max_concurrent_batches`).
    slots: Semaphore,
    /// Each client's share of the batch slots ([`share`]).
    pub shares: Arc<Shares>,
    /// Open sessions: connections kept between batches ([`session`]).
    pub sessions: Arc<Sessions>,
    /// Script kills in flight ([`kill::Kills`]): batches wait for them.
    pub kills: Kills,
    /// Since when Redis answers BUSY (a script that outlived its kill).
    busy_since: Mutex<Option<std::time::Instant>>,
    /// The serving threads' runtimes: a big batch runs on another thread
    /// than its caller's. Empty: the current runtime only.
    runtimes: Vec<tokio::runtime::Handle>,
    /// Which runtime the next big batch goes to.
    next_runtime: AtomicUsize,
}

impl std::ops::Deref for Engine {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// How long past its deadline a batch may take to wind up (drop its
/// connection, mark the rest) before the caller gives up on it.
const WIND_UP: Duration = Duration::from_secs(2);

impl Engine {
    /// The engine on `redis`, its batches spread over `runtimes`.
    pub fn new(redis: Redis, limits: EngineLimits, runtimes: Vec<tokio::runtime::Handle>) -> Engine {
        Engine(Arc::new(Inner {
            redis,
            slots: Semaphore::new(limits.max_concurrent_batches.max(1)),
            shares: Shares::new(limits.max_batches_per_client, limits.max_blocking_per_client),
            sessions: Sessions::new(limits.session_idle, limits.max_sessions, limits.max_sessions_per_client),
            kills: Kills::default(),
            busy_since: Mutex::default(),
            runtimes,
            next_runtime: AtomicUsize::new(0),
            limits,
        }))
    }

    /// The shared Redis (`None` in the sandbox).
    pub fn shared(&self) -> Option<&Shared> {
        match &self.redis {
            Redis::Shared(s) => Some(s),
            Redis::Sandbox(_) => None,
        }
    }

    /// The sandbox's supervisor (`None` outside the sandbox).
    pub fn sandbox(&self) -> Option<&Arc<crate::sandbox::Supervisor>> {
        match &self.redis {
            Redis::Sandbox(s) => Some(s),
            Redis::Shared(_) => None,
        }
    }

    /// A serving runtime other than the caller's, in turn (the caller's if
    /// there is no other).
    pub fn other_runtime(&self) -> tokio::runtime::Handle {
        let current = tokio::runtime::Handle::current();
        let others: Vec<&tokio::runtime::Handle> = self.runtimes.iter().filter(|h| h.id() != current.id()).collect();
        if others.is_empty() {
            return current;
        }
        let i = self.next_runtime.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        others[i % others.len()].clone()
    }

    /// Runs `batch` on `on`'s Redis within the engine's limits, handing
    /// each result to `sink` as it comes: in the sandbox the visitor's
    /// own cap first, then the client's share, a batch slot, no script
    /// kill in flight; the batch timeout; a script still running when the
    /// batch is cut is killed ([`kill`]).
    ///
    /// A batch that reaches the timeout (or `opts.cancel`) is cut like a
    /// lost connection: commands awaiting replies are `unknown`, the rest
    /// `not_sent`, and `connection_error` says why. A dead pooled
    /// connection that could not be replaced is not an error (the sink has
    /// its `not_sent` results: [`StreamReport::reconnect_failed`]).
    ///
    /// Errors, nothing sent: [`EngineError::VisitorBatches`],
    /// [`EngineError::ScriptCacheFull`],
    /// [`EngineError::ShareFull`], [`EngineError::SlotsBusy`],
    /// [`EngineError::KillPending`], [`EngineError::Exec`] (refused, or
    /// could not connect); and [`EngineError::Overran`] when the batch
    /// could not be cut in time.
    pub async fn run<K: ResultSink>(&self, on: &Backend, batch: &Batch, sink: &mut K, opts: RunOptions<'_>) -> Result<StreamReport<Infallible>, EngineError> {
        let limits = &self.limits;
        // A sandbox visitor's own share of the batch slots, taken first: one
        // visitor cannot hold everyone's.
        let _visitor_slot = match &on.visitor {
            Some(lease) => Some(lease.visitor.batches.clone().try_acquire_owned().map_err(|_| EngineError::VisitorBatches {
                cap: self.sandbox().map_or(0, |s| s.settings().visitor_batches),
            })?),
            None => None,
        };
        let deadline = Instant::now() + limits.batch_timeout;
        // Read once: the executor checks the batch with the same table.
        let table = on.pool.commands();
        let traits = Traits::of(batch, &table);
        if let (Some(_), Some(sandbox)) = (&on.visitor, self.sandbox()) {
            let cached = scripts::cached(&table, batch);
            // A child that does not answer is not refused here: the batch then meets the same failure.
            if !cached.is_empty() {
                if let Ok(info) = command(&on.pool, &[b"INFO", b"memory"], limits.connect_timeout).await {
                    if let Some(info) = crate::commands::reply::text(&info) {
                        scripts::fit(&info, cached, sandbox.settings().max_bytes).map_err(EngineError::ScriptCacheFull)?;
                    }
                }
            }
        }
        // The client's own share first: its queue holds none of the server's slots.
        let _share = match on.client {
            Some(client) => Some(self.shares.take(client, traits.blocks, deadline).await?),
            None => None,
        };
        // A free slot is taken without arming a timer (the usual case; a
        // free permit means no one waits before us); the wait is boxed, to
        // keep this future small.
        let _slot = match self.slots.try_acquire() {
            Ok(slot) => slot,
            Err(_) => Box::pin(timeout_at(deadline, self.slots.acquire()))
                .await
                .map_err(|_| EngineError::SlotsBusy { slots: limits.max_concurrent_batches, waited: limits.batch_timeout })?
                .expect("the semaphore is never closed"),
        };
        // A script a cut batch left is being killed: Redis would answer BUSY.
        if self.kills.wait(deadline).await.is_err() {
            return Err(EngineError::KillPending { waited: limits.batch_timeout });
        }
        let exec = ExecOptions {
            connect_timeout: limits.connect_timeout,
            read_timeout: limits.batch_timeout,
            max_reply_bytes: Some(limits.max_reply_bytes),
            deadline: Some(deadline.into_std()),
            commands: Some(table),
            cancel: opts.cancel,
        };
        // The executor stops at the deadline by itself; this outer limit only
        // guards against a wait the executor does not bound. A script still
        // running when the batch is cut (here, or by the caller's future
        // being dropped) is killed.
        let kill = KillOnCut::new(self, on, traits.scripts);
        // Boxed: the executor's future is large (every mode), and `timeout_at`
        // and the polls that follow would otherwise copy it whole; a
        // one-command request spent more time in memcpy than anywhere else
        // (callgrind, 2000 one-SET requests).
        let run = Box::pin(async {
            match opts.on {
                Connection::Session(conn) => run_on_session(conn, on.probe(), batch, &exec, sink).await,
                Connection::Pooled => run_pooled(&on.pool, on.probe(), batch, &exec, sink).await,
            }
        });
        let mut out = match timeout_at(deadline + WIND_UP, run).await {
            Ok(Ok(out)) => out,
            // Nothing was sent: no script to kill.
            Ok(Err(e)) => {
                kill.disarm();
                return Err(e.into());
            }
            Err(_) => return Err(EngineError::Overran { limit: limits.batch_timeout }),
        };
        match (&on.visitor, out.connection_error.take()) {
            (_, None) => kill.disarm(),
            // Boxed, as a visitor's lost Redis is rare: this future stays small.
            (Some(lease), Some(lost)) => out.connection_error = Some(Box::pin(explain_lost(lease, lost)).await),
            (None, lost) => out.connection_error = lost,
        }
        Ok(out)
    }

    /// How long the shared Redis has stayed stuck (`None`: it is not, or
    /// in the sandbox, where a visitor's busy Redis stalls only them), as
    /// seen by this probe and the previous ones: a PING on a side
    /// connection, within 2 s in all.
    pub async fn busy_for(&self) -> Option<Duration> {
        let shared = self.shared()?;
        let wait = Duration::from_secs(1);
        let busy = kill::redis_busy(&shared.target, self.limits.connect_timeout.min(wait), wait).await;
        let mut since = self.busy_since.lock().expect("busy_since lock");
        if !busy {
            *since = None;
            return None;
        }
        Some(since.get_or_insert_with(std::time::Instant::now).elapsed())
    }
}

/// One command on a pooled connection of `pool`, with short timeouts
/// (a look at the server, bookkeeping): its reply, which may be an
/// error reply. Errors: [`EngineError::Exec`] (could not connect),
/// [`EngineError::Unanswered`].
pub async fn command(pool: &Target, argv: &[&[u8]], wait: Duration) -> Result<resp::Value, EngineError> {
    let batch = Batch::new(Commands::from_iter([argv.to_vec()]), Plan { batch_size: 1, ..Plan::new(Mode::Sequential) });
    let opts = ExecOptions { connect_timeout: wait, read_timeout: wait, max_reply_bytes: None, deadline: None, commands: None, cancel: None };
    let mut results = Vec::with_capacity(1);
    let out = match tokio::time::timeout(wait * 2, run_pooled(pool, pool, &batch, &opts, &mut results)).await {
        Ok(out) => out?,
        Err(_) => return Err(EngineError::Unanswered { why: "no answer in time" }),
    };
    let report = out.into_report(results).map_err(ExecError::Connect)?;
    match report.results.into_iter().next() {
        Some(r) if matches!(r.status, Status::Ok | Status::Error) && r.reply.is_some() => Ok(r.reply.expect("checked")),
        _ => Err(EngineError::Unanswered { why: "the connection failed before the reply" }),
    }
}
