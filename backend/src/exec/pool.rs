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
//!   [`changes_connection_state`]) does not give it back. The API refuses
//!   SELECT, HELLO, AUTH, RESET and the rest up front (api/refuse.rs); the
//!   list here covers them too, so the executor is safe on its own.
//! - RESP2 and RESP3 connections are kept apart (`HELLO 3` is part of the
//!   handshake).
//! - Connections behind the simulated-RTT delay line are never pooled: each
//!   RTT batch gets a fresh connection, as before.
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

use super::ArgvRef;
use crate::conn::{Conn, ConnSettings, RedisTarget};

/// How many idle connections a pool keeps, and for how long.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// Most idle connections kept (0: no pooling, every batch connects).
    pub max_idle: usize,
    /// An idle connection unused this long is closed.
    pub idle_timeout: Duration,
}

impl Default for PoolConfig {
    /// 64 idle connections (Webdis's default pool size), 30 s idle timeout.
    fn default() -> Self {
        PoolConfig { max_idle: 64, idle_timeout: Duration::from_secs(30) }
    }
}

struct Idle {
    conn: Conn,
    since: Instant,
}

/// A pool of handshaken connections to one Redis target.
pub struct Pool {
    target: RedisTarget,
    config: PoolConfig,
    /// Most recently returned last (reused first: the warmest socket).
    idle: Mutex<Vec<Idle>>,
    /// The [`IDLE_GAUGE`] handle, registered once with the recorder
    /// installed when the pool was made: set twice per batch, a look-up by
    /// name each time cost a registry search (hash, lock) per call.
    gauge: metrics::Gauge,
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
        let pool = Arc::new(Pool { target, config, idle: Mutex::new(Vec::new()), gauge: metrics::gauge!(IDLE_GAUGE) });
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

    /// Idle connections now.
    pub fn idle_count(&self) -> usize {
        self.idle.lock().expect("pool lock").len()
    }

    /// A connection for a batch with `settings`: an idle one that passes the
    /// probe (RESP2/RESP3 as asked, no simulated RTT), else a new one.
    ///
    /// Errors: as [`Conn::connect`] (nothing was sent).
    pub async fn checkout(&self, settings: &ConnSettings) -> Result<Lease, String> {
        if settings.simulated_rtt_ms == 0.0 && self.config.max_idle > 0 {
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
        let conn = Conn::connect(&self.target, settings).await?;
        Ok(Lease { conn, reused: false })
    }

    /// Removes and returns the most recently returned idle connection
    /// speaking RESP3 (`resp3`) or RESP2 that was opened on the caller's
    /// tokio runtime ([`Conn::runtime`]).
    ///
    /// Why only those: `pipelab serve` runs one single-threaded runtime per
    /// thread (cli/serve.rs). A connection registered with another
    /// thread's runtime works, but each of its replies then wakes that
    /// thread first, which wakes ours: the cross-thread wake-ups that
    /// design removes. (Falling back to such a connection when the
    /// caller's runtime had none kept a single-connection benchmark on a
    /// foreign connection for its whole run.) With one runtime (tests, a
    /// multi-threaded runtime) every connection matches, as before.
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

/// True if `argv` may change the state of the connection it runs on, so
/// that the connection must not serve another batch: transactions and
/// watched keys (MULTI, EXEC, DISCARD, WATCH, UNWATCH: a MULTI without EXEC
/// would queue the next batch's commands), anything under CLIENT (SETNAME,
/// NO-EVICT, NO-TOUCH, TRACKING, REPLY, CACHING…), the database, protocol
/// and user (SELECT, HELLO, AUTH, RESET), cluster read modes (READONLY,
/// READWRITE, ASKING), and the modes that turn a connection into a stream
/// (SUBSCRIBE family, MONITOR, SYNC/PSYNC, REPLCONF, QUIT).
///
/// Scripts cannot change their caller's state (SELECT inside EVAL is
/// script-local since Redis 2.8.12), so EVAL and FCALL are not listed.
/// Allocation-free: it runs for every command of every batch.
pub fn changes_connection_state(argv: ArgvRef<'_>) -> bool {
    let Some(name) = argv.name() else { return false };
    if name.len() < 4 || name.len() > 12 {
        return false;
    }
    const NAMES: &[&[u8]] = &[
        b"MULTI", b"EXEC", b"DISCARD", b"WATCH", b"UNWATCH", b"CLIENT", b"SELECT", b"HELLO", b"AUTH", b"RESET",
        b"QUIT", b"READONLY", b"READWRITE", b"ASKING", b"SUBSCRIBE", b"PSUBSCRIBE", b"SSUBSCRIBE", b"UNSUBSCRIBE",
        b"PUNSUBSCRIBE", b"SUNSUBSCRIBE", b"MONITOR", b"SYNC", b"PSYNC", b"REPLCONF",
    ];
    NAMES.iter().any(|n| n.len() == name.len() && n.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(s: &str) -> bool {
        let argv: Vec<&str> = s.split(' ').filter(|a| !a.is_empty()).collect();
        changes_connection_state(crate::exec::Commands::from_iter([argv]).get(0))
    }

    #[test]
    fn connection_state_commands() {
        for cmd in ["MULTI", "exec", "Discard", "WATCH k", "unwatch", "CLIENT SETNAME x", "client no-evict on", "SELECT 1", "HELLO 3", "AUTH x", "RESET", "READONLY", "readwrite", "ASKING", "SUBSCRIBE c", "QUIT"] {
            assert!(changes(cmd), "{cmd}");
        }
        for cmd in ["SET k v", "GET k", "EVAL x 0", "INCR n", "CLIENTS", "WATCHER", "PING", "DEL a b"] {
            assert!(!changes(cmd), "{cmd}");
        }
        assert!(!changes(""));
    }
}
