//! Running a batch on behalf of a request: the engine's run
//! ([`pipelab_engine::engine::Engine::run`]: the Redis the request was given, its
//! limits, shares and timeout) within the budget for answers, with its
//! log line and metrics, and its errors in the API's words; and the API as
//! the experiments' runner.
//!
//! If the client goes away, the handler's future is dropped with the
//! connection in it, which closes it: a cancelled batch never returns its
//! connection to the pool.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pipelab_engine::engine::Backend;
use pipelab_http::budget::{Asker, Charge};
use pipelab_http::error::ApiError;
use super::kept::{Keep, KeptResults};
use super::AppState;
use pipelab_engine::engine::{EngineError, RunOptions};
use pipelab_engine::exec::{Batch, ExecError, Report, ResultSink, StreamReport};
use pipelab_engine::run::Target;
use pipelab_http::telemetry::BatchSpan;

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
    let out = run_logged(state, on, batch, &mut results, RunOptions::default()).await?;
    out.into_report(results).map_err(ApiError::from)
}

/// [`run_batch`], each reply's JSON counted against the reply limit as
/// `/batch` counts it (`kept::KeptResults`) and charged to the server's budget
/// for answers, the charge added to `held`: for runs whose every result
/// goes into the response. Past the reply limit the run is cut; past the
/// budget the answer is refused (`pipelab_http::budget::refused`).
pub async fn run_batch_counted(state: &AppState, on: &Backend, batch: &Batch, held: &Mutex<Charge>) -> Result<Report, ApiError> {
    let mut kept = KeptResults::new(state, Keep::All, batch.commands.len());
    let out = run_logged(state, on, batch, &mut kept, RunOptions::default()).await?;
    if let Some(refused) = pipelab_http::budget::refused(out.connection_error.as_deref()) {
        return Err(refused);
    }
    if let Ok(mut held) = held.lock() {
        held.absorb(kept.charge_mut().take());
    }
    out.into_report(kept.results).map_err(ApiError::from)
}

/// `batch` on `on` through the engine (`opts`: a pooled connection or a
/// session's, and a cancel switch that cuts it short as its timeout does),
/// each result handed to `sink` as it comes; logged and counted. A dead
/// pooled connection that could not be replaced is not an error here (the
/// sink has its `not_sent` results): see [`StreamReport::reconnect_failed`].
/// Not refused up front when the budget for answers is spent (a small
/// answer takes none of it, and a large one is refused as its replies
/// come: `pipelab_http::budget`), unless the caller's own answer was just
/// refused for it (503 `busy`, `Budget::refuse_again`).
pub async fn run_logged<K: ResultSink>(state: &AppState, on: &Backend, batch: &Batch, sink: &mut K, opts: RunOptions<'_>) -> Result<StreamReport<Infallible>, ApiError> {
    let asker = || Asker::of(on.visitor.as_ref().map(|lease| &lease.visitor.id), on.client);
    if let Some(refused) = state.http.budget.refuse_again(asker) {
        return Err(refused);
    }
    let span = BatchSpan::start(batch.plan.mode, batch.commands.len());
    let result = state.http.engine.run(on, batch, sink, opts).await;
    if let Ok(out) = &result {
        state.http.budget.note_refusal(asker, out.connection_error.as_deref());
    }
    match &result {
        Ok(out) if out.reconnect_failed.is_some() => span.fail("redis_unavailable"),
        Ok(out) => span.finish(&out.summary, out.transaction.as_ref()),
        Err(e) => span.fail(match e {
            EngineError::ShareFull { .. } | EngineError::SlotsBusy { .. } | EngineError::KillPending { .. } | EngineError::VisitorBatches { .. } => "busy",
            EngineError::Overran { .. } => "timeout",
            EngineError::Exec(ExecError::Connect(_)) | EngineError::Sandbox(_) | EngineError::NoVisitor | EngineError::Unanswered { .. } => "redis_unavailable",
            _ => "invalid",
        }),
    }
    Ok(result?)
}

/// Run one command (on a pooled connection) with short timeouts (info,
/// readiness, sweep bookkeeping). Returns the reply, which may be an error
/// reply; 503 if Redis cannot be reached or did not answer.
pub async fn command(pool: &Target, argv: &[&[u8]], wait: Duration) -> Result<resp::Value, ApiError> {
    Ok(pipelab_engine::engine::command(pool, argv, wait).await?)
}

/// The API as the experiments' runner (`pipelab_engine::lab`): each batch runs as
/// any request's does, on the Redis the request was given ([`Backend`]),
/// [`run_batch`] within the server's limits and [`command`] with the
/// connect timeout, checked with that Redis's table.
#[derive(Clone)]
pub struct OnBackend {
    pub state: AppState,
    pub on: Backend,
}

impl pipelab_engine::lab::Runner for OnBackend {
    type Error = ApiError;

    async fn run(&self, batch: &Batch) -> Result<Report, ApiError> {
        run_batch(&self.state, &self.on, batch).await
    }

    async fn command(&self, argv: &[&[u8]]) -> Result<Option<resp::Value>, ApiError> {
        command(&self.on.pool, argv, self.state.http.limits.connect_timeout()).await.map(Some)
    }

    fn batch_timeout(&self) -> Duration {
        self.state.http.limits.batch_timeout()
    }

    /// The table the API's rules check with ([`super::refuse::Rules::of`]).
    async fn commands(&self) -> std::sync::Arc<pipelab_engine::commands::Table> {
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
        let charge = Charge::new(&runner.state.http.budget);
        WithResults { runner, charge: Arc::new(Mutex::new(charge)) }
    }
}

impl pipelab_engine::lab::Runner for WithResults {
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

    async fn commands(&self) -> std::sync::Arc<pipelab_engine::commands::Table> {
        self.runner.commands().await
    }
}
