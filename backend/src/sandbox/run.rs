//! The one hook of the sandbox and of the ACL users on the batch path:
//! `api::run` hands every batch to [`execute_into`], which picks the
//! connection's Redis user by the batch's [`RunsAs`] and, for a sandbox
//! batch, applies the quotas, shows replies with the visitor's names and
//! sets the TTLs.

use std::convert::Infallible;
use std::sync::Arc;

use crate::api::AppState;
use crate::exec::{execute_pooled_into, Batch, CommandResult, ExecError, ExecOptions, Pool, PoolConfig, ResultSink, RunsAs, StreamReport, Summary};

use super::acl::Users;
use super::reply::Unprefix;
use super::{quota, Namespace};

/// A pool per Redis ACL user pipelab runs batches as (siblings of the
/// server's pool: same Redis, same command table).
pub struct Pools {
    pub sandbox: Arc<Pool>,
    pub readonly: Arc<Pool>,
}

impl Pools {
    pub fn new(server: &Pool, users: &Users, config: PoolConfig) -> Pools {
        let target = server.target();
        Pools {
            sandbox: server.sibling(users.sandbox.target(target), config.clone()),
            readonly: server.sibling(users.readonly.target(target), config),
        }
    }
}

/// Runs `batch` as its [`RunsAs`] says: on the server's pool, the
/// read-only user's, or, in the sandbox, the sandbox user's (a visitor's
/// own for a batch with scripts), within the namespace's quotas.
/// Errors as `exec::execute_pooled_into`.
pub async fn execute_into<K: ResultSink>(state: &AppState, batch: &Batch, opts: &ExecOptions, sink: &mut K) -> Result<StreamReport<Infallible>, ExecError> {
    match &batch.plan.runs_as {
        RunsAs::Server => execute_pooled_into(&state.pool, batch, opts, sink).await,
        RunsAs::ReadOnly => execute_pooled_into(state.pools.as_ref().map_or(&state.pool, |p| &p.readonly), batch, opts, sink).await,
        RunsAs::Sandbox(prefix) => sandboxed(state, prefix, batch, opts, sink).await,
    }
}

async fn sandboxed<K: ResultSink>(state: &AppState, prefix: &Arc<str>, batch: &Batch, opts: &ExecOptions, sink: &mut K) -> Result<StreamReport<Infallible>, ExecError> {
    let (Some(sbx), Some(ns)) = (state.sandbox.as_ref(), Namespace::from_prefix(prefix)) else {
        return Err(ExecError::Connect("a sandbox batch on a server without --sandbox".into()));
    };
    let table = opts.table(Some(&state.pool));
    let n = batch.commands.len();
    let mut cut = sbx.quotas.check(state, &ns, batch, &table, &sbx.config).await;
    if let Some((i, _)) = cut.as_mut() {
        // A transaction runs whole or not at all.
        if batch.plan.mode == crate::exec::Mode::Transaction {
            *i = 0;
        }
    }
    let sent = cut.as_ref().map_or(n, |(i, _)| *i);
    let mut plan = batch.plan.clone();
    plan.watch = plan.watch.iter().map(|k| [prefix.as_bytes(), k].concat()).collect();
    let run = Batch::new(batch.commands.iter().take(sent).map(|a| a.to_vec()).collect::<crate::exec::Commands>(), plan);
    let scripts = run.commands.iter().any(|a| table.runs_script(a));
    let visitor;
    let pool: &Pool = match (&sbx.users, &state.pools) {
        (Some(users), _) if scripts => {
            // The visitor's own user: scripts reach only their keys.
            quota::side(state, [users.setuser_argv(&ns)].into_iter().collect()).await;
            visitor = state.pool.sibling(users.visitor(&ns).target(&state.target), PoolConfig { max_idle: 0, ..PoolConfig::default() });
            &visitor
        }
        (_, Some(pools)) => &pools.sandbox,
        _ => &state.pool,
    };
    let mut unprefixed = Unprefix { inner: sink, prefix: prefix.as_bytes() };
    let mut out = if sent > 0 {
        execute_pooled_into(pool, &run, opts, &mut unprefixed).await?
    } else {
        let plan = &run.plan;
        let summary = Summary { mode: Some(plan.mode), batch_size: plan.batch_size, resp3: plan.resp3, simulated_rtt_ms: plan.simulated_rtt_ms, ..Summary::default() };
        StreamReport { summary, transaction: None, connection_error: None, input_error: None, reconnect_failed: None }
    };
    if let Some((_, reason)) = cut {
        for index in sent..n {
            sink.push(CommandResult::not_sent(index));
        }
        out.summary.commands = n;
        out.summary.not_sent += n - sent;
        out.connection_error.get_or_insert(reason);
    }
    if let Some(t) = out.transaction.as_mut() {
        for m in t.message.iter_mut().chain(t.rejected.iter_mut().map(|r| &mut r.message)) {
            *m = m.replace(&**prefix, "");
        }
    }
    quota::expire_later(state, quota::written_keys(&table, &run.commands), sbx.config.sandbox_ttl);
    if scripts {
        quota::expire_namespace_later(state, ns.clone(), sbx.config.sandbox_ttl);
    }
    if let Some(users) = &sbx.users {
        let gone: Vec<_> = sbx.quotas.prune(sbx.config.sandbox_ttl).iter().map(|ns| users.deluser_argv(ns)).collect();
        if !gone.is_empty() {
            let state = state.clone();
            tokio::spawn(async move { quota::side(&state, gone.into_iter().collect()).await });
        }
    }
    Ok(out)
}
