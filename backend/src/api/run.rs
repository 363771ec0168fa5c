//! Running a batch on behalf of a request: a concurrency slot, the per-batch
//! timeout, the reply-size limit, and executor errors mapped to HTTP.
//!
//! Each batch runs on a connection from the server's pool
//! (`crate::exec::pool`): an idle one that passes a liveness probe, or a
//! new one. It goes back to the pool only if the batch ended cleanly, so a
//! Redis restart needs no recovery here: dead idle connections are
//! discarded and the next batch connects again. If the client goes away,
//! the handler's future is dropped with the connection in it, which closes
//! it: a cancelled batch never returns its connection to the pool.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::{timeout_at, Instant};

use super::budget::Charge;
use super::busy::{KillOnCut, Traits};
use super::error::{ApiCode, ApiError};
use super::stream::{Keep, KeptResults};
use super::AppState;
use crate::telemetry::BatchSpan;
use super::backend::Backend;
use crate::exec::{ExecOptions, Pool, ResultSink, StreamReport};
use crate::run::{execute_on_into, execute_pooled, execute_pooled_probed_into};
use crate::exec::{Batch, Commands, Mode, Plan, Report, Status};

/// Run `batch` on `on` within the server's limits and collect its report.
///
/// A batch that reaches `limits.batch_timeout_ms` is cut like a lost
/// connection: commands awaiting replies are `unknown`, the rest
/// `not_sent`, and `connection_error` says it was the batch timeout.
///
/// Errors: 503 `busy` (no free slot before the timeout), 503
/// `redis_unavailable` (could not connect: nothing was written), 429
/// `too_many_batches` (a sandbox visitor's own cap), 400 for a batch the
/// executor refuses.
pub async fn run_batch(state: &AppState, on: &Backend, batch: &Batch) -> Result<Report, ApiError> {
    let mut results = Vec::with_capacity(batch.commands.len());
    let out = run_batch_into(state, on, batch, &mut results, None).await?;
    out.into_report(results).map_err(ApiError::from)
}

/// [`run_batch`], each reply's JSON counted against the reply limit as
/// `/batch` counts it (`stream::KeptResults`) and charged to the server's budget
/// for answers, the charge added to `held`: for runs whose every result
/// goes into the response. Past either the run is cut, as at the reply limit.
pub async fn run_batch_counted(state: &AppState, on: &Backend, batch: &Batch, held: &Mutex<Charge>) -> Result<Report, ApiError> {
    let mut kept = KeptResults::new(state, Keep::All, batch.commands.len());
    let out = run_batch_into(state, on, batch, &mut kept, None).await;
    if let Ok(mut held) = held.lock() {
        held.absorb(kept.charge_mut().take());
    }
    out?.into_report(kept.results).map_err(ApiError::from)
}

/// [`run_batch`], handing each result to `sink` as it comes; `cancel`
/// can cut it short (then as at the batch timeout, `connection_error`
/// saying it was cancelled: `crate::conn::Cancel`). A dead pooled
/// connection that could not be replaced is not an error here (the sink
/// has its `not_sent` results): see [`StreamReport::reconnect_failed`].
pub async fn run_batch_into<K: ResultSink>(
    state: &AppState,
    on: &Backend,
    batch: &Batch,
    sink: &mut K,
    cancel: Option<crate::conn::Cancel>,
) -> Result<StreamReport<Infallible>, ApiError> {
    let span = BatchSpan::start(batch.plan.mode, batch.commands.len());
    let result = run_limited_on(state, on, batch, sink, None, cancel).await;
    match &result {
        Ok(out) if out.reconnect_failed.is_some() => span.fail("redis_unavailable"),
        Ok(out) => span.finish(&out.summary, out.transaction.as_ref()),
        Err(e) => span.fail(match e.code() {
            ApiCode::Busy | ApiCode::TooManyBatches => "busy",
            ApiCode::BatchTimeout => "timeout",
            ApiCode::RedisUnavailable => "redis_unavailable",
            _ => "invalid",
        }),
    }
    result
}

/// How long past its deadline a batch may take to wind up (drop its
/// connection, mark the rest) before the request gives up on it.
const WIND_UP: Duration = Duration::from_secs(2);

/// [`run_batch_into`] on a session's connection (`super::session`):
/// taken from `conn` while the batch runs, put back if it is still fit
/// for the next batch (whatever state its commands left it in), else left
/// `None` (the session is lost).
pub async fn run_session_batch<K: ResultSink>(
    state: &AppState,
    on: &Backend,
    batch: &Batch,
    conn: &mut Option<crate::conn::Conn>,
    sink: &mut K,
) -> Result<StreamReport<Infallible>, ApiError> {
    let span = BatchSpan::start(batch.plan.mode, batch.commands.len());
    let result = run_limited_on(state, on, batch, sink, Some(conn), None).await;
    match &result {
        Ok(out) => span.finish(&out.summary, out.transaction.as_ref()),
        Err(_) => span.fail("invalid"),
    }
    result
}

/// The batch on a pooled connection of `on`, or on `session`'s; `cancel`
/// ends it early, as the batch timeout does (`POST /api/v1/batches/{id}/cancel`).
async fn run_limited_on<K: ResultSink>(
    state: &AppState,
    on: &Backend,
    batch: &Batch,
    sink: &mut K,
    session: Option<&mut Option<crate::conn::Conn>>,
    cancel: Option<crate::conn::Cancel>,
) -> Result<StreamReport<Infallible>, ApiError> {
    let limits = &state.limits;
    state.budget.check()?;
    // A sandbox visitor's own share of the batch slots, taken first: one
    // visitor cannot hold everyone's.
    let _visitor_slot = match &on.visitor {
        Some(lease) => Some(lease.visitor.batches.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                ApiCode::TooManyBatches,
                format!("you already run {} batches at once, the most one visitor may; retry when one ends", state.sandbox().map_or(0, |s| s.settings().visitor_batches)),
            )
            .retry_after(Duration::from_secs(1))
        })?),
        None => None,
    };
    let deadline = Instant::now() + limits.batch_timeout();
    let traits = Traits::of(batch, &on.pool.commands());
    // The client's own share first: its queue holds none of the server's slots.
    let _share = match on.client {
        Some(client) => Some(state.shares.take(client, traits.blocks, deadline).await?),
        None => None,
    };
    // A free slot is taken without arming a timer (the usual case; a
    // free permit means no one waits before us); the wait is boxed, to keep
    // this future small.
    let _slot = match state.slots.try_acquire() {
        Ok(slot) => slot,
        Err(_) => Box::pin(timeout_at(deadline, state.slots.acquire()))
            .await
            .map_err(|_| {
                ApiError::new(
                    ApiCode::Busy,
                    format!(
                        "all {} batch slots stayed busy for {} ms; try again later",
                        limits.max_concurrent_batches, limits.batch_timeout_ms
                    ),
                )
            })?
            .expect("the semaphore is never closed"),
    };
    // A script a cut batch left is being killed: Redis would answer BUSY.
    if state.kills.wait(deadline).await.is_err() {
        return Err(ApiError::new(
            ApiCode::Busy,
            format!(
                "Redis stayed busy running a script of a cut batch, which pipelab is killing, for {} ms; nothing was sent; try again",
                limits.batch_timeout_ms
            ),
        ));
    }
    let opts = ExecOptions {
        connect_timeout: limits.connect_timeout(),
        read_timeout: limits.batch_timeout(),
        max_reply_bytes: Some(limits.max_reply_bytes),
        deadline: Some(deadline.into_std()),
        commands: None,
        cancel,
    };
    // The executor stops at the deadline by itself; this outer limit only
    // guards against a wait the executor does not bound.
    // A script still running when the batch is cut (here, or by the
    // request's future being dropped) is killed: see `busy`.
    let kill = KillOnCut::new(state, on, traits.scripts);
    // Boxed: the executor's future is large (every mode), and `timeout_at`
    // and the polls that follow would otherwise copy it whole; a
    // one-command request spent more time in memcpy than anywhere else
    // (callgrind, 2000 one-SET requests).
    let run = Box::pin(async {
        match session {
            Some(conn) => execute_on_into(conn, &on.probe, batch, &opts, sink).await,
            None => execute_pooled_probed_into(&on.pool, &on.probe, batch, &opts, sink).await,
        }
    });
    let mut out = match timeout_at(deadline + WIND_UP, run).await {
        Ok(Ok(out)) => out,
        // Nothing was sent: no script to kill.
        Ok(Err(e)) => {
            kill.disarm();
            return Err(e.into());
        }
        Err(_) => {
            return Err(ApiError::new(
                ApiCode::BatchTimeout,
                format!(
                    "the batch ran longer than the server's limit of {} ms and could not be cut in \
                     time; commands already written may have run (their outcome is unknown)",
                    limits.batch_timeout_ms
                ),
            ))
        }
    };
    match (&on.visitor, out.connection_error.take()) {
        (_, None) => kill.disarm(),
        // Boxed, as a visitor's lost Redis is rare: this future stays small.
        (Some(lease), Some(lost)) => out.connection_error = Some(Box::pin(super::backend::explain_lost(lease, lost)).await),
        (None, lost) => out.connection_error = lost,
    }
    Ok(out)
}

/// Run one command (on a pooled connection) with short timeouts (info,
/// readiness, sweep bookkeeping). Returns the reply, which may be an error
/// reply; 503 if Redis cannot be reached or did not answer.
pub async fn command(pool: &Pool, argv: &[&[u8]], wait: Duration) -> Result<resp::Value, ApiError> {
    let batch = Batch::new(Commands::from_iter([argv.to_vec()]), Plan { batch_size: 1, ..Plan::new(Mode::Sequential) });
    let opts = ExecOptions {
        connect_timeout: wait,
        read_timeout: wait,
        max_reply_bytes: None,
        deadline: None,
        commands: None,
        cancel: None,
    };
    let report =
        match tokio::time::timeout(wait * 2, execute_pooled(pool, &batch, &opts)).await {
            Ok(Ok(report)) => report,
            Ok(Err(e)) => return Err(e.into()),
            Err(_) => return Err(ApiError::unavailable("no answer in time")),
        };
    let result = report.results.into_iter().next();
    match result {
        Some(r) if matches!(r.status, Status::Ok | Status::Error) && r.reply.is_some() => {
            Ok(r.reply.unwrap())
        }
        _ => Err(ApiError::unavailable(
            "the connection failed before the reply",
        )),
    }
}

/// The API as the experiments' runner (`crate::lab`): each batch runs as
/// any request's does, on the Redis the request was given ([`Backend`]),
/// [`run_batch`] within the server's limits and [`command`] with the
/// connect timeout, checked with that Redis's table.
#[derive(Clone)]
pub struct OnBackend {
    pub state: AppState,
    pub on: Backend,
}

impl crate::lab::Runner for OnBackend {
    type Error = ApiError;

    async fn run(&self, batch: &Batch) -> Result<Report, ApiError> {
        run_batch(&self.state, &self.on, batch).await
    }

    async fn command(&self, argv: &[&[u8]]) -> Result<Option<resp::Value>, ApiError> {
        command(&self.on.pool, argv, self.state.limits.connect_timeout()).await.map(Some)
    }

    fn batch_timeout(&self) -> Duration {
        self.state.limits.batch_timeout()
    }

    /// The table the API's rules check with ([`super::refuse::Rules::of`]).
    async fn commands(&self) -> std::sync::Arc<crate::commands::Table> {
        super::refuse::Rules::of(&self.state, &self.on).await.table
    }
}

/// [`OnBackend`] for experiments whose per-command results go into the
/// response (`/compare` with `include_results`): each run's reply JSON
/// counted against the reply limit ([`run_batch_counted`]), so that each
/// run's results are no larger than a `/batch` response could be, and
/// charged to the budget for answers until the answer made of every run
/// is written (`charge`, handed to it). `/sweep` returns no results: it
/// runs on [`OnBackend`], whose replies only the executor's RESP count limits.
#[derive(Clone)]
pub struct WithResults {
    pub runner: OnBackend,
    pub charge: Arc<Mutex<Charge>>,
}

impl WithResults {
    pub fn new(runner: OnBackend) -> WithResults {
        let charge = Charge::new(&runner.state.budget);
        WithResults { runner, charge: Arc::new(Mutex::new(charge)) }
    }
}

impl crate::lab::Runner for WithResults {
    type Error = ApiError;

    async fn run(&self, batch: &Batch) -> Result<Report, ApiError> {
        run_batch_counted(&self.runner.state, &self.runner.on, batch, &self.charge).await
    }

    async fn command(&self, argv: &[&[u8]]) -> Result<Option<resp::Value>, ApiError> {
        self.runner.command(argv).await
    }

    fn batch_timeout(&self) -> Duration {
        self.runner.batch_timeout()
    }

    async fn commands(&self) -> std::sync::Arc<crate::commands::Table> {
        self.runner.commands().await
    }
}
