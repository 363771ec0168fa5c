//! Redis Cluster: a batch split by hash slot across the masters, replies
//! put back in request order, MOVED/ASK redirections followed, and a
//! transaction refused unless all its keys share one slot.
//!
//! Why: client libraries get this wrong in public (go-redis#3019 split a
//! cross-slot TxPipeline silently; `redis-cli --pipe` has no cluster mode).
//! `crate::run` chooses this path once per target, when the
//! server's `INFO server` gives its mode as `cluster` (read with its command
//! table, `crate::commands::ServerIdentity::cluster`); a single Redis never
//! comes here.
//!
//! - [`slot`]: CRC16 and the `{hash tag}` rule, as Redis computes a key's slot.
//! - [`topology`]: the slot map (`CLUSTER SHARDS`, `CLUSTER SLOTS` fallback).
//! - [`route`]: where each command goes, asked of the command table (key
//!   specs, request-policy tip).
//! - `combine`: a fanned-out command's replies merged per its response-policy tip.
//! - `redirect`: what a MOVED, ASK, TRYAGAIN, CLUSTERDOWN or READONLY reply asks for.
//! - [`reload`]: why and how often the slot map is read again (a lost
//!   master never answers MOVED).
//! - `pipeline`: pipeline and sequential modes, every node at once.
//! - `transaction`: MULTI/EXEC on the one slot's master.
//!
//! [`Cluster`] is one target's state (kept by `crate::run::Target` once a
//! batch finds the target is a cluster): the current slot map, a pool of
//! connections per master (`crate::exec::Pool`, with the same reuse
//! rules), and the masters whose connection failed (`/readyz`:
//! [`Cluster::readiness`]).

pub mod combine;
mod pipeline;
mod redirect;
pub mod reload;
pub mod route;
pub mod slot;
pub mod topology;
mod transaction;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::commands::Table;
use crate::conn::{AskError, Conn, ConnectError, ConnSettings, RedisTarget};
use crate::exec::{BatchSource, CommandSource, ExecError, ExecOptions, Mode, NodeSummary, Plan, Pool, PoolConfig, ResultSink, StreamReport};

pub use reload::Cause;
pub use topology::{Node, Topology, TopologyError};

/// What one run pulls its commands from and hands its results to, and the
/// command table it routes (and, with `check`, checks each command) by.
pub(crate) struct Io<'a, S, K> {
    pub source: &'a mut S,
    pub sink: &'a mut K,
    /// Check each command pulled (`exec::check_command`), as `run::execute_stream` does.
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

/// `run::execute_stream` on a cluster: the slot map read
/// from `target` (or its other hosts), node connections opened for this
/// run and closed after. Errors: no node answered ([`ExecError::Connect`]), and as [`run`].
pub(crate) async fn execute_stream<S: CommandSource, K: ResultSink>(
    target: &RedisTarget,
    plan: &Plan,
    opts: &ExecOptions,
    io: Io<'_, S, K>,
) -> Result<StreamReport<S::Error>, ExecError> {
    let settings = plan.conn_settings(opts);
    let config = PoolConfig { max_idle: 0, ..PoolConfig::default() };
    let cluster = Cluster::connect(target, &settings, config).await?;
    run(Run { cluster: &cluster, settings: &settings, plan }, io).await
}

/// `run::run_pooled` on a cluster: each master's connections
/// come from its own pool, kept in `cluster`.
pub(crate) async fn execute_pooled<K: ResultSink>(
    cluster: &Cluster,
    batch: &crate::exec::Batch,
    settings: &ConnSettings,
    sink: &mut K,
    table: Arc<Table>,
) -> Result<StreamReport<std::convert::Infallible>, ExecError> {
    let mut source = BatchSource::new(&batch.commands);
    run(Run { cluster, settings, plan: &batch.plan }, Io { source: &mut source, sink, check: false, table }).await
}

/// After a session's batch on a cluster (`run::run_on_session`): a
/// session is one connection, to the node it was opened on (`on`), which
/// answers MOVED for another master's slot as any connection would. Its
/// share goes into `summary.nodes`; a lost link marks that node down and
/// reads the slot map again, as a batch's would (the session itself is
/// lost: its connection's state went with it).
pub(crate) async fn note_session_batch<E>(cluster: &Cluster, on: &RedisTarget, settings: &ConnSettings, out: &mut StreamReport<E>) {
    let address = topology::address(&on.endpoint);
    let failed = out.connection_error.clone().filter(|e| !crate::conn::batch_cut(e));
    let s = &mut out.summary;
    s.nodes = vec![NodeSummary {
        address: address.clone(),
        commands: s.commands - s.not_sent,
        round_trips: s.round_trips,
        bytes_sent: s.bytes_sent,
        bytes_received: s.bytes_received,
        redirections: 0,
        failed: failed.clone(),
    }];
    if let Some(why) = failed {
        cluster.mark_down(&address, &why);
        cluster.reload(&cluster.topology(), Cause::Connection, settings).await;
    }
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

/// One cluster target: its slot map, read again when a batch finds it
/// stale (`reload`), one connection pool per master, and the masters
/// whose connection failed.
pub struct Cluster {
    /// The configured node(s): where the map is read when no known node answers.
    seed: RedisTarget,
    topology: RwLock<Arc<Topology>>,
    pools: Mutex<HashMap<String, Arc<Pool>>>,
    config: PoolConfig,
    /// When the last slot-map reload ended; held while one runs, so that
    /// concurrent batches share it.
    last_reload: tokio::sync::Mutex<Option<Instant>>,
    /// Masters whose connection failed since one to them last worked, and why.
    down: Mutex<HashMap<String, String>>,
    /// `down` is not empty: read without its lock on each connection opened.
    any_down: AtomicBool,
}

/// Why the slot map could not be read again from any node.
#[derive(Debug, thiserror::Error)]
enum ReadMapError {
    #[error("no node to ask")]
    NoNode,
    #[error("{0}")]
    Connect(ConnectError),
    #[error("{0}")]
    Map(TopologyError),
}

/// Why a master does not serve its slots now ([`Cluster::readiness`]).
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("{0}")]
    Connect(#[from] ConnectError),
    #[error("{0}")]
    Ask(#[from] AskError),
    /// A `cluster_state` other than `ok`.
    #[error("cluster_state:{0}")]
    State(String),
    /// `CLUSTER INFO` named no `cluster_state` (the reply, shown whole).
    #[error("CLUSTER INFO: {0}")]
    NoState(String),
}

/// Why not every hash slot can be served ([`Cluster::readiness`]).
#[derive(Debug)]
pub struct Unready {
    /// Slots without a master or whose master did not answer.
    pub unserved: usize,
    /// Each master that did not answer `cluster_state:ok`: its address and why.
    pub why: Vec<(String, NodeError)>,
    /// Slots the map gives no master.
    pub unowned: usize,
}

impl std::fmt::Display for Unready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the cluster cannot serve {} of {} hash slots", self.unserved, slot::SLOTS)?;
        if !self.why.is_empty() {
            let why: Vec<String> = self.why.iter().map(|(address, e)| format!("{address}: {e}")).collect();
            write!(f, " ({})", why.join("; "))?;
        }
        if self.unowned > 0 {
            write!(f, "; {} slots have no master", self.unowned)?;
        }
        Ok(())
    }
}

impl std::error::Error for Unready {}

impl Cluster {
    /// The cluster behind `seed`, its map read on `conn` (a connection to
    /// the seed). Node connections are pooled with `config` (`max_idle: 0`:
    /// none kept, as for `pipelab run`).
    pub async fn load(seed: &RedisTarget, conn: &mut Conn, config: PoolConfig) -> Result<Arc<Cluster>, ConnectError> {
        let topology = Topology::load(conn, seed).await.map_err(|e| ConnectError::Cluster(format!("{seed}: reading the slot map: {e}")))?;
        // Listed at 0 from the start, so that their rates can be alerted on.
        for cause in Cause::ALL {
            metrics::counter!(reload::RELOADS_TOTAL, "cause" => cause.name()).increment(0);
        }
        Ok(Arc::new(Cluster {
            seed: seed.clone(),
            topology: RwLock::new(Arc::new(topology)),
            pools: Mutex::new(HashMap::new()),
            config,
            last_reload: tokio::sync::Mutex::new(None),
            down: Mutex::new(HashMap::new()),
            any_down: AtomicBool::new(false),
        }))
    }

    /// [`Cluster::load`] on a connection of its own to the seed, or to each
    /// of its other hosts (`redis://a:7000,b:7001`) in turn.
    pub async fn connect(seed: &RedisTarget, settings: &ConnSettings, config: PoolConfig) -> Result<Arc<Cluster>, ConnectError> {
        let mut last = ConnectError::Cluster(String::new());
        for endpoint in std::iter::once(&seed.endpoint).chain(&seed.seeds) {
            let one = seed.at(endpoint.clone());
            let unlimited = ConnSettings { simulated_rtt_ms: 0.0, max_reply_bytes: None, ..settings.clone() };
            match Conn::connect(&one, &unlimited).await {
                Ok(mut conn) => match Cluster::load(seed, &mut conn, config.clone()).await {
                    Ok(c) => return Ok(c),
                    Err(e) => last = e,
                },
                // Any failure here is the cluster's: one message, as the map's.
                Err(e) => last = ConnectError::Cluster(e.to_string()),
            }
        }
        Err(last)
    }

    /// The current slot map.
    pub fn topology(&self) -> Arc<Topology> {
        self.topology.read().expect("topology lock").clone()
    }

    /// Reads the slot map again for `cause`, unless it changed since `seen`
    /// (the map the caller found stale) or was read within
    /// [`reload::MIN_INTERVAL`]; one reload at a time, a caller arriving
    /// meanwhile waits for it (see `reload`). Returns the map to use now
    /// (the old one if no node answered).
    pub async fn reload(&self, seen: &Arc<Topology>, cause: Cause, settings: &ConnSettings) -> Arc<Topology> {
        let mut last = self.last_reload.lock().await;
        let now = self.topology();
        if !Arc::ptr_eq(&now, seen) || last.is_some_and(|t| t.elapsed() < reload::MIN_INTERVAL) {
            return now;
        }
        reload::count(cause);
        let read = self.read_map(&now, settings).await;
        *last = Some(Instant::now());
        match read {
            Ok(map) => self.install(map),
            Err(e) => {
                tracing::warn!(error = %e, cause = cause.name(), "reading the cluster slot map again failed");
                now
            }
        }
    }

    /// The map from the first node that gives one: the masters of `map`
    /// (those marked down last), its other nodes, the seeds.
    async fn read_map(&self, map: &Topology, settings: &ConnSettings) -> Result<Topology, ReadMapError> {
        let settings = ConnSettings {
            connect_timeout: settings.connect_timeout.min(reload::ASK_TIMEOUT),
            read_timeout: settings.read_timeout.min(reload::ASK_TIMEOUT),
            simulated_rtt_ms: 0.0,
            max_reply_bytes: None,
            cancel: None,
            ..settings.clone()
        };
        let down = self.down.lock().expect("cluster down lock").clone();
        let (up, down): (Vec<&Node>, Vec<&Node>) = map.nodes.iter().partition(|n| !down.contains_key(&n.address));
        let seeds = std::iter::once(&self.seed.endpoint).chain(&self.seed.seeds).map(|e| self.seed.at(e.clone()));
        let mut asked = Vec::new();
        let mut last = ReadMapError::NoNode;
        let known = up.into_iter().chain(&map.others).map(|n| n.target.clone());
        for target in known.chain(seeds).chain(down.into_iter().map(|n| n.target.clone())) {
            let address = topology::address(&target.endpoint);
            if asked.contains(&address) {
                continue;
            }
            asked.push(address);
            let loaded = match Conn::connect(&target, &settings).await {
                Ok(mut conn) => Topology::load(&mut conn, &self.seed).await.map_err(ReadMapError::Map),
                Err(e) => Err(ReadMapError::Connect(e)),
            };
            match loaded {
                Ok(t) => return Ok(t),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Makes `map` the current one; the pools and down marks of masters
    /// that left it are dropped.
    fn install(&self, map: Topology) -> Arc<Topology> {
        let map = Arc::new(map);
        *self.topology.write().expect("topology lock") = map.clone();
        let serves = |address: &String| map.index_of(address).is_some();
        self.pools.lock().expect("cluster pools lock").retain(|a, _| serves(a));
        let mut down = self.down.lock().expect("cluster down lock");
        down.retain(|a, _| serves(a));
        self.any_down.store(!down.is_empty(), Ordering::Relaxed);
        map
    }

    /// The connection to master `address` failed or timed out (`why`).
    pub fn mark_down(&self, address: &str, why: &str) {
        let mut down = self.down.lock().expect("cluster down lock");
        down.insert(address.to_string(), why.to_string());
        self.any_down.store(true, Ordering::Relaxed);
    }

    /// A new connection to master `address` worked.
    pub fn mark_up(&self, address: &str) {
        if self.any_down.load(Ordering::Relaxed) {
            let mut down = self.down.lock().expect("cluster down lock");
            down.remove(address);
            self.any_down.store(!down.is_empty(), Ordering::Relaxed);
        }
    }

    /// Whether every hash slot can be served now (`/readyz`): each master
    /// of the map is asked `CLUSTER INFO` on a pooled connection within
    /// `wait`, and its slots count as served if it answered
    /// `cluster_state:ok`. A master that cannot be reached is marked down
    /// and the map read again once (its replica may have taken over), as
    /// it is when some slots have no master.
    /// Errors: how many slots cannot be served, and each master's reason.
    pub async fn readiness(&self, wait: Duration) -> Result<(), Unready> {
        let settings = ConnSettings::plain(wait);
        let mut map = self.topology();
        for again in [true, false] {
            let answers = futures_util::future::join_all(map.nodes.iter().map(|n| self.cluster_state(n, &settings))).await;
            let failed: Vec<(&Node, NodeError)> = map.nodes.iter().zip(answers).filter_map(|(n, a)| a.err().map(|e| (n, e))).collect();
            if failed.is_empty() && map.unowned_slots() == 0 {
                return Ok(());
            }
            // Slots with no master (read while a failed one awaited its
            // replica's promotion) are read again too, as a master marked down is.
            let stale = map.unowned_slots() > 0 || failed.iter().any(|(n, _)| self.down.lock().expect("cluster down lock").contains_key(&n.address));
            if again && stale {
                let reloaded = self.reload(&map, Cause::Connection, &settings).await;
                if !Arc::ptr_eq(&reloaded, &map) {
                    map = reloaded;
                    continue;
                }
            }
            let unserved: usize = map.unowned_slots() + failed.iter().map(|(n, _)| n.slots.iter().map(|&(a, b)| (b - a) as usize + 1).sum::<usize>()).sum::<usize>();
            let why = failed.into_iter().map(|(n, e)| (n.address.clone(), e)).collect();
            return Err(Unready { unserved, why, unowned: map.unowned_slots() });
        }
        unreachable!("the second pass returns")
    }

    /// `CLUSTER INFO` on master `node`: `Ok` if it says `cluster_state:ok`.
    async fn cluster_state(&self, node: &Node, settings: &ConnSettings) -> Result<(), NodeError> {
        let lease = match self.checkout(&node.address, &node.target, settings).await {
            Ok(lease) => lease,
            Err(e) => {
                self.mark_down(&node.address, &e.to_string());
                return Err(e.into());
            }
        };
        let mut conn = lease.conn;
        match conn.ask(&[b"CLUSTER", b"INFO"]).await {
            Ok(reply) => {
                self.mark_up(&node.address);
                self.checkin(&node.address, &node.target, conn);
                let text = crate::conn::reply_text(&reply);
                match text.lines().find_map(|l| l.trim().strip_prefix("cluster_state:")) {
                    Some("ok") => Ok(()),
                    Some(state) => Err(NodeError::State(state.to_string())),
                    None => Err(NodeError::NoState(reply.display())),
                }
            }
            Err(e) => {
                self.mark_down(&node.address, &e.to_string());
                Err(e.into())
            }
        }
    }

    /// The connection pool of the node at `address` (made on first use).
    pub fn pool(&self, address: &str, target: &RedisTarget) -> Arc<Pool> {
        let mut pools = self.pools.lock().expect("cluster pools lock");
        pools.entry(address.to_string()).or_insert_with(|| Pool::new(target.clone(), self.config.clone())).clone()
    }

    /// A connection to the master at `address`: from its pool, or, when
    /// nothing is pooled (`max_idle: 0`, `pipelab run`), a fresh one without
    /// the pool's server check (the seed's command table serves every master).
    /// A master marked down gets at most [`reload::ASK_TIMEOUT`] to connect:
    /// one that drops packets must not hold every batch for the whole
    /// connect timeout.
    pub async fn checkout(&self, address: &str, target: &RedisTarget, settings: &ConnSettings) -> Result<crate::exec::Lease, ConnectError> {
        let shorter;
        let settings = if self.any_down.load(Ordering::Relaxed) && self.down.lock().expect("cluster down lock").contains_key(address) {
            shorter = ConnSettings { connect_timeout: settings.connect_timeout.min(reload::ASK_TIMEOUT), ..settings.clone() };
            &shorter
        } else {
            settings
        };
        if self.config.max_idle == 0 {
            return Conn::connect(target, settings).await.map(|conn| crate::exec::Lease { conn, reused: false });
        }
        self.pool(address, target).checkout(settings).await
    }

    /// Gives back a connection whose batch ended cleanly (see `exec::pool`'s
    /// rules), if `address` is still a master of the map.
    pub fn checkin(&self, address: &str, target: &RedisTarget, conn: Conn) {
        if self.config.max_idle > 0 && self.topology().index_of(address).is_some() {
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

