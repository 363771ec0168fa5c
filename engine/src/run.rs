//! The ways a batch runs on Redis: on a connection of its own over a
//! stream ([`execute_stream`], `pipelab run` and `compare`), and,
//! crate-private, on a pooled one (`run_pooled`), a session's
//! (`run_on_session`) or a batch's own (`run_fresh`, the lab's): other
//! callers run a batch through [`crate::Engine::run`].
//! Which Redis answers is chosen here, once per target: a single Redis runs
//! the batch in [`crate::exec`]; a Redis Cluster (its command table says
//! so) in [`crate::cluster`], which is built on the executor and known only
//! here. A pooled target is a [`Target`]: its pool, and the cluster once a
//! batch found it is one.

use std::convert::Infallible;
use std::sync::Arc;

use crate::cluster::{self, Cluster, NodeInfo};
use crate::conn::{Conn, ConnectError, RedisTarget};
use crate::exec::{self, validate, Batch, BatchSource, CommandSource, ExecError, ExecOptions, Plan, Pool, PoolConfig, ResultSink, StreamReport};

/// A target that batches run on through a pool: the pool (which it
/// derefs to), and the Redis Cluster behind it, kept once a batch finds
/// the target is one; every batch after goes to [`crate::cluster`]. Here,
/// not in the pool: the executor knows nothing of the cluster built on it.
pub struct Target {
    pool: Arc<Pool>,
    cluster: tokio::sync::OnceCell<Arc<Cluster>>,
}

impl Target {
    /// `pool`'s target, not known to be a cluster yet.
    pub fn new(pool: Arc<Pool>) -> Arc<Target> {
        Arc::new(Target { pool, cluster: tokio::sync::OnceCell::new() })
    }

    /// A target whose every batch connects anew and keeps nothing (no idle
    /// connection, no shared one, the cluster found again by each new
    /// target): a connection of the batch's own, on the pooled path. Its
    /// table is never read from the server by a batch's connection: the
    /// batch's [`ExecOptions::commands`], else the built-in fallback, until
    /// [`Pool::commands_loaded`] reads it.
    pub fn fresh(target: RedisTarget) -> Arc<Target> {
        let config = PoolConfig { max_idle: 0, share: false, ..PoolConfig::default() };
        // A sibling's connections do not refresh the table it shares: a
        // batch's connection sends nothing before the batch's own commands.
        let seed = Pool::new(target.clone(), config.clone());
        Target::new(seed.sibling_unmetered(target, config))
    }

    /// The cluster behind this target, its slot map read on `conn` the
    /// first time (node pools get the pool's [`exec::PoolConfig`]).
    /// Errors: the map could not be read.
    pub async fn cluster(&self, conn: &mut Conn) -> Result<&Arc<Cluster>, ConnectError> {
        let pool = &self.pool;
        let load = || async move { Cluster::load(pool.target(), conn, pool.config.clone()).await };
        self.cluster.get_or_try_init(load).await
    }

    /// The cluster behind this target, once a batch found it is one.
    pub fn known_cluster(&self) -> Option<&Cluster> {
        self.cluster.get().map(|c| &**c)
    }

    /// The cluster's masters if this target was found to be one (`None`
    /// for a single Redis, or before its first batch).
    pub fn cluster_nodes(&self) -> Option<Vec<NodeInfo>> {
        self.known_cluster().map(|c| c.nodes())
    }
}

impl std::ops::Deref for Target {
    type Target = Pool;
    fn deref(&self) -> &Pool {
        &self.pool
    }
}

/// The table `batch` runs with on `pool` (`opts`', else the pool's), the
/// batch checked with it as a whole.
fn checked_table(pool: &Pool, batch: &Batch, opts: &ExecOptions) -> Result<Arc<crate::commands::Table>, ExecError> {
    let table = opts.table(Some(pool));
    validate(batch, &table)?;
    Ok(table)
}

/// Runs `batch` on a connection of its own to `target`, closed after,
/// collecting every result: the lab's [`crate::lab::Direct`], one caller
/// that needs none of what a pool or [`crate::Engine::run`] adds.
///
/// Errors only if nothing was sent: [`ExecError::Invalid`] (checked before
/// connecting) or [`ExecError::Connect`]; after the first write, as for
/// [`run_pooled`].
pub(crate) async fn run_fresh(target: &RedisTarget, batch: &Batch, opts: &ExecOptions) -> Result<exec::Report, ExecError> {
    let table = opts.table(None);
    validate(batch, &table)?;
    let mut source = BatchSource::new(&batch.commands);
    let mut results = Vec::with_capacity(batch.commands.len());
    if table.is_cluster() {
        let out = cluster::execute_stream(target, &batch.plan, opts, cluster::Io { source: &mut source, sink: &mut results, check: false, table }).await?;
        return Ok(out.with_results(results));
    }
    // Validated as a whole above: the execution need not check each command again.
    let out = exec::drive::connect_and_run_plan(target, &batch.plan, &mut source, &mut results, opts, false, table).await?;
    Ok(out.with_results(results))
}

/// Runs `batch` on a connection from `pool`, given back to it if the batch
/// ended cleanly (every reply read, no connection state changed; the rules
/// are in [`exec::pool`]), handing each result to `sink` as it comes (in
/// index order): the API streams a big batch's report while the batch
/// still runs. The report is the same as on a connection of the batch's
/// own; `summary.total_us` never includes connecting. `summary.server`'s
/// `INFO` readings are taken on a connection from `probe_pool`: a batch
/// that runs as a Redis ACL user who may not run `INFO` (the sandbox's,
/// the read-only token's) is measured on the server's own connection
/// (counts only; no key names).
///
/// Errors only if nothing was sent: [`ExecError::Invalid`] (checked before
/// connecting), [`ExecError::CrossSlot`] or [`ExecError::Connect`]. A dead
/// pooled connection that could not be replaced is no error: the sink got
/// `not_sent` for every command and [`StreamReport::reconnect_failed`] says
/// why. Everything after the first write is in the report: a connection
/// lost mid-batch gives `unknown` for written commands without reply and
/// `not_sent` for the rest, never a retry. Dropping the future drops the
/// connection, which closes it.
pub(crate) async fn run_pooled<K: ResultSink>(
    pool: &Target,
    probe_pool: &Pool,
    batch: &Batch,
    opts: &ExecOptions,
    sink: &mut K,
) -> Result<StreamReport<Infallible>, ExecError> {
    let table = checked_table(pool, batch, opts)?;
    // Held to the end: a batch that comes while this one runs shares.
    let _running = if pool.shares() && exec::shared::shareable(batch, opts, &table) {
        let (running, beside_another) = pool.lanes().enter();
        if beside_another || pool.shares_alone() {
            return Ok(exec::shared::run(pool, batch, opts, sink).await);
        }
        Some(running)
    } else {
        None
    };
    let plan = &batch.plan;
    let settings = plan.conn_settings(opts);
    // Boxed, as the other paths a one-command batch does not take
    // (connecting, `summary.server`'s readings): a future holds its
    // largest path inline, and every future around it is moved whole
    // when it is made and awaited (memcpy was a seventh of a
    // one-command request's instructions).
    if let Some(cluster) = pool.known_cluster() {
        // No connection to the seed: it may be the master that was lost.
        return Box::pin(cluster::execute_pooled(cluster, batch, &settings, sink, opts.table(Some(&**pool)))).await;
    }
    let lease = pool.checkout(&settings).await?;
    // The table as the new connection may just have refreshed it.
    let table = opts.table(Some(&**pool));
    if table.is_cluster() {
        let mut conn = lease.conn;
        let cluster = pool.cluster(&mut conn).await?;
        pool.checkin(conn);
        return Box::pin(cluster::execute_pooled(cluster, batch, &settings, sink, table)).await;
    }
    let fallback = lease.reused.then_some((pool.target(), &settings));
    let mut source = BatchSource::new(&batch.commands);
    let probe = exec::server::Probe::pooled(probe_pool, plan, &settings).await;
    let pre = batch.checked_for(&table);
    let mut r = exec::execution::Execution::new(lease.conn, fallback, plan, &mut source, sink, false, table.clone(), pre);
    exec::drive::run_mode(&mut r, plan).await;
    let ran = r.finish();
    let mut out = ran.report;
    exec::server::Probe::finish_pooled(probe, probe_pool, &mut out.summary).await;
    if out.summary.not_sent == out.summary.commands {
        out.reconnect_failed = ran.reconnect_failed;
    }
    if let Some(conn) = ran.reusable {
        pool.checkin(conn);
    }
    Ok(out)
}

/// [`run_pooled`] on a connection of the caller's own (a
/// session's, `api::session`): taken from `conn` while the batch runs and
/// put back if every reply was read and nothing is buffered, whatever
/// state its commands left it in (WATCHed keys, an open MULTI), else left
/// `None` (it failed, or a transaction's EXEC answer did not match). The
/// simulated RTT and RESP version are the connection's; a `pool`
/// connection serves only `summary.server`'s readings. Never reconnects.
///
/// Errors: [`ExecError::Invalid`], or [`ExecError::Connect`] if `conn` is
/// `None` (nothing was sent).
pub(crate) async fn run_on_session<K: ResultSink>(
    conn: &mut Option<Conn>,
    pool: &Target,
    batch: &Batch,
    opts: &ExecOptions,
    sink: &mut K,
) -> Result<StreamReport<Infallible>, ExecError> {
    let table = checked_table(pool, batch, opts)?;
    let mut c = conn.take().ok_or(ConnectError::Gone)?;
    let settings = batch.plan.conn_settings(opts);
    c.prepare_reuse(&settings);
    let probe = exec::server::Probe::pooled(pool, &batch.plan, &settings).await;
    let mut source = BatchSource::new(&batch.commands);
    let pre = batch.checked_for(&table);
    let mut r = exec::execution::Execution::new(c, None, &batch.plan, &mut source, sink, false, table.clone(), pre);
    exec::drive::run_mode(&mut r, &batch.plan).await;
    let ran = r.finish();
    *conn = ran.reusable.or(ran.kept);
    let mut out = ran.report;
    exec::server::Probe::finish_pooled(probe, pool, &mut out.summary).await;
    if let Some(cluster) = pool.known_cluster() {
        cluster::note_session_batch(cluster, pool.target(), &settings, &mut out).await;
    }
    Ok(out)
}

/// The executor over a stream: pulls commands from `source` as it sends
/// them and hands each [`exec::CommandResult`] to `sink`, in index order, so that
/// millions of commands run in constant memory (`pipelab run`). Transaction
/// mode holds the whole batch, as MULTI…EXEC is one write.
///
/// Each command pulled is checked with [`exec::check_command`]; a command that
/// fails the check, or a source error, stops the stream like the end of
/// input, and [`StreamReport::input_error`] says where and how many commands
/// were sent before it.
///
/// Errors only if nothing was sent: [`ExecError::Invalid`] (the plan),
/// [`ExecError::CrossSlot`] (a cluster's transaction) or
/// [`ExecError::Connect`]. Dropping the future drops the connection.
pub async fn execute_stream<S: CommandSource, K: ResultSink>(
    target: &RedisTarget,
    plan: &Plan,
    source: &mut S,
    sink: &mut K,
    opts: &ExecOptions,
) -> Result<StreamReport<S::Error>, ExecError> {
    exec::check_plan(plan)?;
    let table = opts.table(None);
    if table.is_cluster() {
        return cluster::execute_stream(target, plan, opts, cluster::Io { source, sink, check: true, table }).await;
    }
    exec::drive::connect_and_run_plan(target, plan, source, sink, opts, true, table).await
}
