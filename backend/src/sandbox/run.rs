//! The one hook of the sandbox and of the ACL users on the batch path:
//! `api::run` hands every batch to [`execute_into`], which picks the
//! connection's Redis user by the batch's [`RunsAs`] and, for a sandbox
//! batch, applies the quotas, shows replies with the visitor's names and
//! sets the TTLs, whether it runs on a pooled connection or on a
//! session's (opened as the visitor's own user, [`session_target`]).

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;

use crate::api::AppState;
use crate::commands::Table;
use crate::conn::{Conn, RedisTarget};
use crate::exec::{execute_on_into, execute_pooled_into, execute_pooled_probed_into, Batch, CommandResult, Commands, ExecError, ExecOptions, Pool, PoolConfig, ResultSink, RunsAs, StreamReport, Summary};

use super::acl::Users;
use super::reply::Unprefix;
use super::{quota, Namespace};

/// The sandbox user's pool (a sibling of the server's pool: same Redis,
/// same command table).
pub struct Pools {
    pub sandbox: Arc<Pool>,
}

impl Pools {
    pub fn new(server: &Pool, users: &Users, config: PoolConfig) -> Pools {
        Pools { sandbox: server.sibling(users.sandbox.target(server.target()), config) }
    }
}

/// Where a batch runs: on a pooled connection of the user its [`RunsAs`]
/// picks, or on a session's own connection (`api::session`), opened as
/// that user already ([`session_target`]).
pub enum On<'a> {
    Pool,
    Session(&'a mut Option<Conn>),
}

/// Runs `batch` as its [`RunsAs`] says: on the server's pool, the
/// read-only user's, or, in the sandbox, the sandbox user's (a visitor's
/// own for a batch with scripts), within the namespace's quotas; or on a
/// session's connection, a sandbox batch with the same quotas, prefixed
/// `watch` keys, unprefixed replies and TTLs.
/// Errors as `exec::execute_pooled_into`.
pub async fn execute_into<K: ResultSink>(state: &AppState, batch: &Batch, opts: &ExecOptions, sink: &mut K, on: On<'_>) -> Result<StreamReport<Infallible>, ExecError> {
    match (&batch.plan.runs_as, on) {
        // Boxed: the sandbox's future would make every batch's as large.
        (RunsAs::Sandbox(prefix), on) => Box::pin(sandboxed(state, prefix, batch, opts, sink, on)).await,
        (_, On::Session(conn)) => execute_on_into(conn, &state.pool, batch, opts, sink).await,
        (RunsAs::Server, On::Pool) => execute_pooled_into(&state.pool, batch, opts, sink).await,
        // summary.server's INFO readings on the server's own connection: the
        // read-only user may not run INFO.
        (RunsAs::ReadOnly, On::Pool) => execute_pooled_probed_into(state.readonly_pool(), &state.pool, batch, opts, sink).await,
        (RunsAs::Operator, On::Pool) => execute_pooled_into(state.admin_pool(), batch, opts, sink).await,
    }
}

/// The Redis target of a sandbox session's connection: the visitor's own
/// ACL user (made now), so that scripts on it reach only the visitor's
/// keys. The namespace counts as used from now on, so that its user is
/// deleted once it has been idle past the sandbox TTL (a session open
/// that long, `--session-idle-ms` above `--sandbox-ttl`, is then lost).
/// `None` without ACL users (`--redis`): sessions are refused there.
pub async fn session_target(state: &AppState, ns: &Namespace) -> Option<RedisTarget> {
    let sbx = state.sandbox.as_ref()?;
    let users = sbx.users.as_ref()?;
    sbx.quotas.touch(ns);
    Some(visitor_target(state, users, ns).await)
}

/// The visitor's own user, made (or remade: `ACL SETUSER` starts with
/// `reset`) on a side connection, as a target on the server's Redis.
async fn visitor_target(state: &AppState, users: &Users, ns: &Namespace) -> RedisTarget {
    quota::side(state, [users.setuser_argv(ns)].into_iter().collect()).await;
    users.visitor(ns).target(&state.target)
}

/// `commands` contain EXEC (by the server's table): on a session, the
/// commands it runs were queued by earlier batches.
fn runs_exec(table: &Table, commands: &Commands) -> bool {
    commands.iter().any(|argv| table.command(argv).is_some_and(|c| c.name == "exec"))
}

/// A [`ResultSink`] that notes which commands were queued (answered
/// `+QUEUED`: inside a MULTI, to run at EXEC), handing every result on.
struct Queued<'a, K> {
    inner: &'a mut K,
    indices: HashSet<usize>,
}

impl<K: ResultSink> ResultSink for Queued<'_, K> {
    fn push(&mut self, result: CommandResult) {
        if matches!(&result.reply, Some(resp::Value::Simple(s)) if s == b"QUEUED") {
            self.indices.insert(result.index);
        }
        self.inner.push(result);
    }

    fn admit(&mut self, reply: &resp::Value) -> Result<(), u64> {
        self.inner.admit(reply)
    }
}

async fn sandboxed<K: ResultSink>(state: &AppState, prefix: &Arc<str>, batch: &Batch, opts: &ExecOptions, sink: &mut K, on: On<'_>) -> Result<StreamReport<Infallible>, ExecError> {
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
    let mut unprefixed = Unprefix { inner: sink, prefix: prefix.as_bytes() };
    let mut queued = Queued { inner: &mut unprefixed, indices: HashSet::new() };
    let session = matches!(on, On::Session(_));
    let mut out = match on {
        _ if sent == 0 => {
            let plan = &run.plan;
            let summary = Summary { mode: Some(plan.mode), batch_size: plan.batch_size, resp3: plan.resp3, simulated_rtt_ms: plan.simulated_rtt_ms, ..Summary::default() };
            StreamReport { summary, transaction: None, connection_error: None, input_error: None, reconnect_failed: None }
        }
        // The session's connection is the visitor's own user already.
        On::Session(conn) => execute_on_into(conn, &state.pool, &run, opts, &mut queued).await?,
        On::Pool => {
            let visitor;
            let pool: &Pool = match (&sbx.users, &state.pools) {
                (Some(users), _) if scripts => {
                    // The visitor's own user: scripts reach only their keys.
                    visitor = state.pool.sibling(visitor_target(state, users, &ns).await, PoolConfig { max_idle: 0, ..PoolConfig::default() });
                    &visitor
                }
                (_, Some(pools)) => &pools.sandbox,
                _ => &state.pool,
            };
            // summary.server's INFO readings on the server's own connection
            // (the sandbox user may not run INFO): counts only, `approximate`
            // when other visitors share the server.
            execute_pooled_probed_into(pool, &state.pool, &run, opts, &mut queued).await?
        }
    };
    let queued = queued.indices;
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
    // TTLs. `EXPIRE` on a key touches it, which breaks a WATCH on it: on a
    // session, whose WATCH outlives the batch, the TTLs are set before its
    // answer (so never during the next batch), and a queued command's keys
    // get theirs only from the batch with EXEC, when it has run (every key
    // of the namespace without a TTL, `EXPIRE … NX`, then gets one).
    let written = run.commands.iter().enumerate().filter(|(i, _)| !(session && queued.contains(i))).map(|(_, a)| a);
    let mut ttls: Vec<_> = quota::expire_later(state, quota::written_keys(&table, written), sbx.config.sandbox_ttl).into_iter().collect();
    if scripts || (session && runs_exec(&table, &run.commands)) {
        ttls.push(quota::expire_namespace_later(state, ns.clone(), sbx.config.sandbox_ttl));
    }
    if session {
        for t in ttls {
            let _ = t.await;
        }
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
