//! Idle Redis connections kept between batches, so that a small batch pays
//! one round trip instead of a TCP connect, a handshake round trip and a
//! close (Webdis, redis-py and Jedis keep pools for the same reason).
//!
//! A pool must never let one batch see what another left behind. The rules,
//! each enforced here or by the executor before [`Pool::checkin`]:
//!
//! - A connection that may hold unread replies is never reused: drop it
//!   (executor issue; redis-py#2624, ioredis#800, redis-rs#698). So only a
//!   batch that read every reply it wrote gives its connection back: not
//!   after an I/O error, a timeout, a reply-size cut, or a cancelled batch
//!   (its future is dropped with the connection inside).
//! - No connection state leaks: a batch that ran a command which can change
//!   the connection's own state (MULTI, WATCH, CLIENT …, see
//!   [`Table::changes_connection_state`]) does not give it back. The API
//!   refuses SELECT, HELLO, AUTH, RESET and the rest up front; the table's
//!   rule covers them too, so the executor is safe on its own.
//! - The pool keeps the target's command table ([`Pool::commands`]): each
//!   connection it opens checks the server's `run_id` first (`INFO
//!   server`, before the batch's clock and stats start) and a changed
//!   server's table is read again (`crate::commands::cache`).
//! - RESP2 and RESP3 connections are kept apart (`HELLO 3` is part of the
//!   handshake).
//! - Connections behind the simulated-RTT delay line are never pooled: each
//!   RTT batch gets a fresh connection.
//! - Before reuse, an idle connection is probed without reading
//!   ([`Conn::probe_idle`]): EOF (Redis restarted, or killed the client) or
//!   stray bytes discard it and the next one is tried, then a fresh one.
//!   If the first write of a batch still fails on a reused connection with
//!   not one byte accepted by the socket, the executor switches to a fresh
//!   connection; once anything may have been written, nothing is re-sent.
//! - Bounded: at most `max_idle` idle connections; each is closed after
//!   `idle_timeout` unused (checked at checkout and by a reaper task).
//! - A connection is reused only on the tokio runtime it was opened on
//!   (`pipelab serve` runs one per thread), so that its replies wake the
//!   thread that waits for them; when the pool is full, a connection given
//!   back replaces the oldest idle one of another runtime, if any.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::commands::{Cache, Table};
use crate::conn::{Conn, ConnectError, ConnSettings, RedisTarget};

/// How many idle connections a pool keeps, and for how long.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Most idle connections kept (0: no pooling, every batch connects).
    pub max_idle: usize,
    /// An idle connection unused this long is closed.
    pub idle_timeout: Duration,
    /// Small batches of concurrent requests may share a connection
    /// (`super::shared`); only with `max_idle` > 0.
    pub share: bool,
    /// A shareable batch goes through the shared connection even when no
    /// other is running beside it (by default it then takes a pooled
    /// connection of its own: there is nothing to share a write with, and
    /// the lane's task is one more hop). For the shared connection's tests.
    pub share_alone: bool,
}

impl Default for PoolConfig {
    /// 64 idle connections (Webdis's default pool size), 30 s idle timeout,
    /// shared connections on.
    fn default() -> Self {
        PoolConfig { max_idle: 64, idle_timeout: Duration::from_secs(30), share: true, share_alone: false }
    }
}

struct Idle {
    conn: Conn,
    since: Instant,
}

/// A pool of handshaken connections to one Redis target.
pub struct Pool {
    target: RedisTarget,
    pub(crate) config: PoolConfig,
    /// Most recently returned last (reused first: the warmest socket).
    idle: Mutex<Vec<Idle>>,
    /// The [`IDLE_GAUGE`] handle, registered once with the recorder
    /// installed when the pool was made: set twice per batch, a look-up by
    /// name each time cost a registry search (hash, lock) per call.
    gauge: metrics::Gauge,
    /// The target's command table, refreshed by each connection opened
    /// (shared with [`Pool::sibling`]s, which do not refresh it).
    commands: Arc<Cache>,
    /// Connections opened check the server's identity (`INFO server`):
    /// false for a sibling, whose ACL user may not run INFO.
    refresh: bool,
    /// The shared connections of this pool, one per runtime (`super::shared`).
    lanes: super::shared::Lanes,
    /// This pool, for its shared connections' tasks (which must not keep it alive).
    me: Weak<Pool>,
}

/// A connection taken from a [`Pool`] for one batch.
pub struct Lease {
    pub conn: Conn,
    /// Came from the pool (was idle), rather than connected for this batch.
    pub reused: bool,
}

/// Name of the gauge of idle pooled connections on `/metrics`.
pub const IDLE_GAUGE: &str = "pipelab_redis_pool_idle";

impl Pool {
    /// A pool for `target`. Inside a tokio runtime it also starts a reaper
    /// task that closes idle connections past `idle_timeout` or found dead;
    /// the task ends when the pool is dropped.
    pub fn new(target: RedisTarget, config: PoolConfig) -> Arc<Pool> {
        Pool::spawn(Pool { target, config, idle: Mutex::new(Vec::new()), gauge: metrics::gauge!(IDLE_GAUGE), commands: Arc::new(Cache::new()), refresh: true, lanes: super::shared::Lanes::new(metrics::gauge!(super::shared::SHARED_GAUGE)), me: Weak::new() })
    }

    /// A pool of connections to the same server as another user (`target`
    /// differs in its ACL user and password), sharing this pool's command
    /// table, which its connections do not refresh: the API keeps one per
    /// Redis ACL user it runs batches as (`crate::acl`).
    pub fn sibling(&self, target: RedisTarget, config: PoolConfig) -> Arc<Pool> {
        // Its own series of the gauge, by user (the server pool's stays
        // unlabelled); a pool that keeps nothing never sets one.
        let user = target.username.clone().unwrap_or_default();
        let (gauge, shared) = match config.max_idle {
            0 => (metrics::gauge!(IDLE_GAUGE), metrics::gauge!(super::shared::SHARED_GAUGE)),
            _ => (metrics::gauge!(IDLE_GAUGE, "user" => user.clone()), metrics::gauge!(super::shared::SHARED_GAUGE, "user" => user)),
        };
        Pool::spawn(Pool { target, config, idle: Mutex::new(Vec::new()), gauge, commands: self.commands.clone(), refresh: false, lanes: super::shared::Lanes::new(shared), me: Weak::new() })
    }

    /// [`Pool::sibling`] without a series of its own on `/metrics`: for the
    /// many small pools of the sandbox's children, counted there instead.
    pub fn sibling_unmetered(&self, target: RedisTarget, config: PoolConfig) -> Arc<Pool> {
        let (gauge, shared) = (metrics::Gauge::noop(), metrics::Gauge::noop());
        Pool::spawn(Pool { target, config, idle: Mutex::new(Vec::new()), gauge, commands: self.commands.clone(), refresh: false, lanes: super::shared::Lanes::new(shared), me: Weak::new() })
    }

    fn spawn(pool: Pool) -> Arc<Pool> {
        let pool = Arc::new_cyclic(|me| Pool { me: me.clone(), ..pool });
        if pool.config.max_idle > 0 {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let weak = Arc::downgrade(&pool);
                let every = (pool.config.idle_timeout / 2).clamp(Duration::from_millis(50), Duration::from_secs(5));
                rt.spawn(reap(weak, every));
            }
        }
        pool
    }

    /// The target every connection of this pool talks to.
    pub fn target(&self) -> &RedisTarget {
        &self.target
    }

    /// Small batches may share a connection here (`super::shared`).
    pub fn shares(&self) -> bool {
        self.config.share && self.config.max_idle > 0
    }

    /// Connections the shared lanes hold now (`super::shared`).
    pub fn shared_connections(&self) -> usize {
        self.lanes.connections()
    }

    /// A lone shareable batch uses the shared connection too ([`PoolConfig::share_alone`]).
    pub(crate) fn shares_alone(&self) -> bool {
        self.config.share_alone
    }

    /// The shared connections (`super::shared`).
    pub(crate) fn lanes(&self) -> &super::shared::Lanes {
        &self.lanes
    }

    /// This pool, not kept alive by the holder.
    pub(super) fn weak(&self) -> Weak<Pool> {
        self.me.clone()
    }

    /// How long an unused connection is kept.
    pub(super) fn idle_timeout(&self) -> Duration {
        self.config.idle_timeout
    }

    /// Idle connections now.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().expect("pool lock").len()
    }

    /// A connection for a batch with `settings`: an idle one that passes the
    /// probe (RESP2/RESP3 as asked, no simulated network), else a new one.
    ///
    /// Errors: as [`Conn::connect`] (nothing was sent).
    pub async fn checkout(&self, settings: &ConnSettings) -> Result<Lease, ConnectError> {
        if !settings.simulates_network() && self.config.max_idle > 0 {
            // Take the most recent idle connection of the right protocol,
            // then probe it outside the lock (a system call); a stale or
            // dead one is closed and the next is tried.
            while let Some(entry) = self.take_idle(settings.resp3) {
                if entry.since.elapsed() < self.config.idle_timeout && entry.conn.probe_idle() {
                    let mut conn = entry.conn;
                    conn.prepare_reuse(settings);
                    return Ok(Lease { conn, reused: true });
                }
            }
        }
        // Behind the delay line the check would cost the batch a simulated
        // RTT: such connections leave it to the next one without.
        // Boxed: connecting is the rare path, and its state inline would
        // make every batch's future larger (each is moved whole when made).
        Box::pin(self.connect(settings)).await
    }

    /// A new connection for [`Pool::checkout`].
    async fn connect(&self, settings: &ConnSettings) -> Result<Lease, ConnectError> {
        if settings.simulates_network() {
            return Ok(Lease { conn: Conn::connect(&self.target, settings).await?, reused: false });
        }
        // The table is read before the reply-size limit applies.
        let unlimited = ConnSettings { max_reply_bytes: None, ..settings.clone() };
        let mut conn = Conn::connect(&self.target, &unlimited).await?;
        if self.refresh {
            self.commands.refresh(&mut conn).await.map_err(|reason| ConnectError::CommandTable { target: self.target.to_string(), reason: reason.to_string() })?;
        }
        conn.prepare_reuse(settings);
        Ok(Lease { conn, reused: false })
    }

    /// The target's command table: the server's once a connection was
    /// opened, the built-in fallback before.
    pub fn commands(&self) -> std::sync::Arc<Table> {
        self.commands.table()
    }

    /// [`Pool::commands`] if a server answered for it already
    /// ([`Pool::commands_loaded`] would not wait), else `None`.
    pub fn commands_if_checked(&self) -> Option<std::sync::Arc<Table>> {
        self.commands.was_checked().then(|| self.commands())
    }

    /// [`Pool::commands`], read from the server first if no connection
    /// checked it yet: on a connection of its own (within `wait` for
    /// connecting and each reply), closed after, so that no idle
    /// connection is left behind by it. Redis unreachable: the fallback
    /// (the batch will then fail to connect too).
    pub async fn commands_loaded(&self, wait: std::time::Duration) -> std::sync::Arc<Table> {
        if !self.commands.was_checked() {
            // Boxed: once per server, and every request's future awaits this one.
            Box::pin(self.load_commands(wait)).await;
        }
        self.commands()
    }

    /// Reads the table for [`Pool::commands_loaded`].
    async fn load_commands(&self, wait: std::time::Duration) {
        let settings = ConnSettings::plain(wait);
        if let Ok(mut conn) = Conn::connect(&self.target, &settings).await {
            if let Err(e) = self.commands.refresh(&mut conn).await {
                tracing::warn!(error = %e, "reading the command table failed");
            }
        }
    }

    /// Removes and returns the most recently returned idle connection
    /// speaking RESP3 (`resp3`) or RESP2 that was opened on the caller's
    /// tokio runtime ([`Conn::runtime`]).
    ///
    /// Why only those: `pipelab serve` runs one single-threaded runtime per
    /// thread (backend/src/serve.rs). A connection registered with another
    /// thread's runtime works, but each of its replies then wakes that
    /// thread first, which wakes ours: the cross-thread wake-ups that
    /// design removes. (Falling back to such a connection when the
    /// caller's runtime had none kept a single-connection benchmark on a
    /// foreign connection for its whole run.) With one runtime (tests, a
    /// multi-threaded runtime) every connection matches.
    fn take_idle(&self, resp3: bool) -> Option<Idle> {
        let here = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
        let mut idle = self.idle.lock().expect("pool lock");
        let i = idle.iter().rposition(|e| e.conn.is_resp3() == resp3 && e.conn.runtime() == here)?;
        let entry = idle.remove(i);
        self.gauge.set(idle.len() as f64);
        Some(entry)
    }

    /// Takes back a connection whose batch ended cleanly (the executor
    /// decides: see the module rules). Closes it instead if it is behind the
    /// delay line, has bytes buffered, or the pool is full.
    pub fn checkin(&self, mut conn: Conn) {
        if conn.is_delayed() || !conn.buffer_empty() || self.config.max_idle == 0 {
            return;
        }
        // 64 idle connections must not each hold a buffer grown for a big reply.
        conn.shrink_buffer();
        let mut evicted = None;
        let mut idle = self.idle.lock().expect("pool lock");
        if idle.len() >= self.config.max_idle {
            // Full. Connections serve only their own runtime (see
            // `take_idle`), so one runtime's idle connections must not
            // crowd out another's: close the oldest idle one of another
            // runtime, if any, to keep this one; else drop this one.
            // Either is closed after the lock is released.
            let here = conn.runtime();
            match idle.iter().position(|e| e.conn.runtime() != here) {
                Some(i) => evicted = Some(idle.remove(i)),
                None => return,
            }
        }
        idle.push(Idle { conn, since: Instant::now() });
        self.gauge.set(idle.len() as f64);
        drop(idle);
        drop(evicted);
    }

    /// Closes idle connections past the idle timeout or failing the probe.
    pub fn reap(&self) {
        let stale: Vec<Idle> = {
            let mut idle = self.idle.lock().expect("pool lock");
            let (keep, stale) = std::mem::take(&mut *idle)
                .into_iter()
                .partition(|e| e.since.elapsed() < self.config.idle_timeout && e.conn.probe_idle());
            *idle = keep;
            self.gauge.set(idle.len() as f64);
            stale
        };
        drop(stale);
    }
}

async fn reap(pool: Weak<Pool>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match pool.upgrade() {
            Some(p) => p.reap(),
            None => return,
        }
    }
}
