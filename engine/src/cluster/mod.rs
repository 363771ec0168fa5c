//! Redis Cluster: a batch split by hash slot across the masters, replies
//! put back in request order, MOVED/ASK redirections followed, and a
//! transaction refused unless all its keys share one slot.
//!
//! Why: client libraries get this wrong in public (go-redis#3019 split a
//! cross-slot TxPipeline silently; `redis-cli --pipe` has no cluster mode).
//! The executor (`crate::exec`) chooses this path once per target, when the
//! server's `INFO server` says `redis_mode:cluster` (read with its command
//! table, `crate::commands::ServerIdentity::cluster`); a single Redis never
//! comes here.
//!
//! - [`slot`]: CRC16 and the `{hash tag}` rule, as Redis computes a key's slot.
//! - [`topology`]: the slot map (`CLUSTER SHARDS`, `CLUSTER SLOTS` fallback).
//! - [`route`]: where each command goes, asked of the command table (key
//!   specs, request-policy tip).
//! - `combine`: a fanned-out command's replies merged per its response-policy tip.
//! - `redirect`: what a MOVED, ASK, TRYAGAIN or CLUSTERDOWN reply asks for.
//! - `pipeline`: pipeline and sequential modes, every node at once.
//! - `transaction`: MULTI/EXEC on the one slot's master.
//!
//! [`Cluster`] is one target's state: the current slot map and a pool of
//! connections per master (`crate::exec::Pool`, with the same reuse rules).

pub mod combine;
mod pipeline;
mod redirect;
pub mod route;
pub mod slot;
pub mod topology;
mod transaction;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use serde::Serialize;

use crate::commands::Table;
use crate::conn::{Conn, ConnSettings, RedisTarget};
use crate::exec::{BatchSource, CommandSource, ExecError, ExecOptions, Mode, Plan, Pool, PoolConfig, ResultSink, StreamReport};

pub use topology::{Node, Topology};

/// True if `table` came from a cluster node (`redis_mode:cluster`): the
/// one test that sends a target's batches here.
pub fn is_cluster(table: &Table) -> bool {
    table.identity().is_some_and(|i| i.cluster)
}

/// What one run pulls its commands from and hands its results to, and the
/// command table it routes (and, with `check`, checks each command) by.
pub(crate) struct Io<'a, S, K> {
    pub source: &'a mut S,
    pub sink: &'a mut K,
    /// Check each command pulled (`exec::check_command`), as `exec::execute_stream` does.
    pub check: bool,
    pub table: Arc<Table>,
}

/// One run's cluster, connection settings and plan: what every mode's
/// runner is handed along with its [`Io`].
#[derive(Clone, Copy)]
pub(crate) struct Run<'a> {
    pub cluster: &'a Cluster,
    pub settings: &'a ConnSettings,
    pub plan: &'a Plan,
}

/// `run.plan` on `run.cluster`: transaction mode on one master, the others split
/// by node. Errors: [`ExecError::CrossSlot`] for a cross-slot transaction,
/// [`ExecError::Connect`] if its master cannot be reached.
pub(crate) async fn run<S: CommandSource, K: ResultSink>(run: Run<'_>, io: Io<'_, S, K>) -> Result<StreamReport<S::Error>, ExecError> {
    match run.plan.mode {
        Mode::Transaction => transaction::run(run, io).await,
        Mode::Pipeline | Mode::Sequential => Ok(pipeline::run(run, io).await),
        // Simulated callers coalesced on one connection have no meaning
        // across masters yet: say so rather than run another mode.
        Mode::Auto => Err(ExecError::Invalid(crate::exec::BatchError {
            field: "mode".into(),
            message: "auto mode is not supported on a Redis Cluster yet (use pipeline or sequential)".into(),
        })),
    }
}

/// `exec::execute` / `exec::execute_stream` on a cluster: the slot map read
/// from `target` (or its other hosts), node connections opened for this
/// run and closed after. Errors: no node answered ([`ExecError::Connect`]), and as [`run`].
pub(crate) async fn execute_stream<S: CommandSource, K: ResultSink>(
    target: &RedisTarget,
    plan: &Plan,
    opts: &ExecOptions,
    io: Io<'_, S, K>,
) -> Result<StreamReport<S::Error>, ExecError> {
    let settings = crate::exec::runner::settings(plan, opts);
    let config = PoolConfig { max_idle: 0, ..PoolConfig::default() };
    let cluster = Cluster::connect(target, &settings, config).await.map_err(ExecError::Connect)?;
    run(Run { cluster: &cluster, settings: &settings, plan }, io).await
}

/// `exec::execute_pooled_into` on a cluster: `conn` (just checked out of
/// `pool`, the seed's) reads the slot map the first time and goes back;
/// each master's connections come from its own pool, kept in `pool`.
pub(crate) async fn execute_pooled<K: ResultSink>(
    pool: &Pool,
    mut conn: Conn,
    batch: &crate::exec::Batch,
    settings: &ConnSettings,
    sink: &mut K,
    table: Arc<Table>,
) -> Result<StreamReport<std::convert::Infallible>, ExecError> {
    let cluster = pool.cluster(&mut conn).await.map_err(ExecError::Connect)?;
    if !conn.is_delayed() {
        pool.checkin(conn);
    }
    let mut source = BatchSource::new(&batch.commands);
    run(Run { cluster: &cluster, settings, plan: &batch.plan }, Io { source: &mut source, sink, check: false, table }).await
}

/// Most commands a master has in flight in pipeline mode (written, replies
/// not read yet), when the batch size allows more than two windows. Why
/// more than two: each window is read from every master before the next is
/// written, so a master the scheduler delays leaves the others idle unless
/// they have windows queued. A sweep of 1M SETs on 2 loaded cores gave
/// 114k/177k SETs/s with 2 windows of 1000 in flight and 299k/396k with 16
/// (two rounds; bench/README.md has the paired figures, noisier).
/// `redis-benchmark --cluster -P 100` keeps 50 × 100 in flight.
pub const MAX_IN_FLIGHT_COMMANDS: usize = 16_384;

/// Windows a pipeline keeps in flight on a cluster for `batch_size`
/// (commands per master per window): [`MAX_IN_FLIGHT_COMMANDS`] / `batch_size`,
/// at least 2 (the next window always written before the current one is
/// read) and at most 32.
pub fn in_flight_windows(batch_size: usize) -> usize {
    (MAX_IN_FLIGHT_COMMANDS / batch_size.max(1)).clamp(2, 32)
}

/// One cluster target: its slot map, refreshed after a MOVED, and one
/// connection pool per master.
pub struct Cluster {
    /// The configured node(s): where the map is read when no known master answers.
    seed: RedisTarget,
    topology: RwLock<Arc<Topology>>,
    pools: Mutex<HashMap<String, Arc<Pool>>>,
    config: PoolConfig,
}

impl Cluster {
    /// The cluster behind `seed`, its map read on `conn` (a connection to
    /// the seed). Node connections are pooled with `config` (`max_idle: 0`:
    /// none kept, as for `pipelab run`).
    pub async fn load(seed: &RedisTarget, conn: &mut Conn, config: PoolConfig) -> Result<Arc<Cluster>, String> {
        let topology = Topology::load(conn, seed).await.map_err(|e| format!("{seed}: reading the slot map: {e}"))?;
        Ok(Arc::new(Cluster { seed: seed.clone(), topology: RwLock::new(Arc::new(topology)), pools: Mutex::new(HashMap::new()), config }))
    }

    /// [`Cluster::load`] on a connection of its own to the seed, or to each
    /// of its other hosts (`redis://a:7000,b:7001`) in turn.
    pub async fn connect(seed: &RedisTarget, settings: &ConnSettings, config: PoolConfig) -> Result<Arc<Cluster>, String> {
        let mut last = String::new();
        for endpoint in std::iter::once(&seed.endpoint).chain(&seed.seeds) {
            let one = seed.at(endpoint.clone());
            let unlimited = ConnSettings { simulated_rtt_ms: 0.0, max_reply_bytes: None, ..settings.clone() };
            match Conn::connect(&one, &unlimited).await {
                Ok(mut conn) => match Cluster::load(seed, &mut conn, config.clone()).await {
                    Ok(c) => return Ok(c),
                    Err(e) => last = e,
                },
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The current slot map.
    pub fn topology(&self) -> Arc<Topology> {
        self.topology.read().expect("topology lock").clone()
    }

    /// Reads the slot map again (after a MOVED: a slot changed owner), from
    /// the first known master or seed that answers. Errors: none did (the
    /// old map stays).
    pub async fn refresh(&self, settings: &ConnSettings) -> Result<(), String> {
        let settings = ConnSettings { simulated_rtt_ms: 0.0, max_reply_bytes: None, ..settings.clone() };
        let known: Vec<RedisTarget> = self.topology().nodes.iter().map(|n| n.target.clone()).collect();
        let seeds = std::iter::once(&self.seed.endpoint).chain(&self.seed.seeds).map(|e| self.seed.at(e.clone()));
        let mut last = "no node to ask".to_string();
        for target in known.into_iter().chain(seeds) {
            let loaded = match Conn::connect(&target, &settings).await {
                Ok(mut conn) => Topology::load(&mut conn, &self.seed).await,
                Err(e) => Err(e),
            };
            match loaded {
                Ok(t) => {
                    *self.topology.write().expect("topology lock") = Arc::new(t);
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// The connection pool of the node at `address` (made on first use).
    pub fn pool(&self, address: &str, target: &RedisTarget) -> Arc<Pool> {
        let mut pools = self.pools.lock().expect("cluster pools lock");
        pools.entry(address.to_string()).or_insert_with(|| Pool::new(target.clone(), self.config.clone())).clone()
    }

    /// A connection to the master at `address`: from its pool, or, when
    /// nothing is pooled (`max_idle: 0`, `pipelab run`), a fresh one without
    /// the pool's server check (the seed's command table serves every master).
    pub async fn checkout(&self, address: &str, target: &RedisTarget, settings: &ConnSettings) -> Result<crate::exec::Lease, String> {
        if self.config.max_idle == 0 {
            return Conn::connect(target, settings).await.map(|conn| crate::exec::Lease { conn, reused: false });
        }
        self.pool(address, target).checkout(settings).await
    }

    /// Gives back a connection whose batch ended cleanly (see `exec::pool`'s rules).
    pub fn checkin(&self, address: &str, target: &RedisTarget, conn: Conn) {
        if self.config.max_idle > 0 {
            self.pool(address, target).checkin(conn);
        }
    }

    /// The masters and their slot ranges, for `GET /api/v1/info`.
    pub fn nodes(&self) -> Vec<NodeInfo> {
        self.topology().nodes.iter().map(|n| NodeInfo { address: n.address.clone(), slots: n.slots.iter().map(|&(a, b)| [a, b]).collect() }).collect()
    }
}

/// One master of a cluster (`GET /api/v1/info` `redis.nodes`).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeInfo {
    /// `host:port` as the cluster announces it.
    #[cfg_attr(feature = "openapi", schema(example = "127.0.0.1:7000"))]
    pub address: String,
    /// Inclusive hash-slot ranges `[first, last]` it serves.
    #[cfg_attr(feature = "openapi", schema(example = json!([[0, 5460]])))]
    pub slots: Vec<[u16; 2]>,
}

/// One node's share of a batch (`summary.nodes`; cluster only).
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeSummary {
    /// `host:port` of the master.
    pub address: String,
    /// Commands written to it (a redirected command counts on each node it
    /// was written to; `ASKING` is not counted).
    pub commands: usize,
    /// Rounds in which pipelab wrote to it and waited for its replies.
    pub round_trips: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// MOVED and ASK replies it gave (each followed once, never a double execution).
    pub redirections: u64,
}
