//! Running a batch on behalf of a request: a concurrency slot, the per-batch
//! timeout, the reply-size limit, and executor errors mapped to HTTP.
//!
//! Each batch runs on a connection from the server's pool
//! (`pipelab::exec::pool`): an idle one that passes a liveness probe, or a
//! new one. It goes back to the pool only if the batch ended cleanly, so a
//! Redis restart needs no recovery here: dead idle connections are
//! discarded and the next batch connects again. If the client goes away,
//! the handler's future is dropped with the connection in it, which closes
//! it: a cancelled batch never returns its connection to the pool.

use std::time::Duration;

use axum::http::StatusCode;
use tokio::time::{timeout_at, Instant};

use super::error::ApiError;
use super::AppState;
use crate::telemetry::BatchSpan;
use pipelab::exec::{execute_pooled, ExecError, ExecOptions};
use pipelab::exec::{Batch, Mode, OnError, Report, Status};

/// Run `batch` within the server's limits.
///
/// Errors: 503 `busy` (no free slot before the timeout), 503
/// `redis_unavailable` (could not connect: nothing was written), 504
/// `batch_timeout` (ran past `limits.batch_timeout_ms`; commands already
/// written may have run).
pub async fn run_batch(state: &AppState, batch: &Batch) -> Result<Report, ApiError> {
    let span = BatchSpan::start(batch.mode, batch.commands.len());
    let result = run_limited(state, batch).await;
    match &result {
        Ok(report) => span.finish(report),
        Err(e) => span.fail(match e.code() {
            "busy" => "busy",
            "batch_timeout" => "timeout",
            "redis_unavailable" => "redis_unavailable",
            _ => "invalid",
        }),
    }
    result
}

async fn run_limited(state: &AppState, batch: &Batch) -> Result<Report, ApiError> {
    let limits = &state.limits;
    let deadline = Instant::now() + limits.batch_timeout();
    let _slot = timeout_at(deadline, state.slots.acquire())
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "busy",
                format!(
                    "all {} batch slots stayed busy for {} ms; try again later",
                    limits.max_concurrent_batches, limits.batch_timeout_ms
                ),
            )
        })?
        .expect("the semaphore is never closed");
    let opts = ExecOptions {
        connect_timeout: limits.connect_timeout(),
        read_timeout: limits.batch_timeout(),
        max_reply_bytes: Some(limits.max_reply_bytes),
    };
    match timeout_at(deadline, execute_pooled(&state.pool, batch, &opts)).await {
        Ok(Ok(report)) => Ok(report),
        Ok(Err(ExecError::Connect(msg))) => Err(ApiError::unavailable(msg)),
        Ok(Err(ExecError::Invalid(e))) => Err(ApiError::field("invalid_batch", e.field, e.message)),
        Err(_) => Err(ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "batch_timeout",
            format!(
                "the batch ran longer than the server's limit of {} ms and was cut; commands \
                 already written may have run (their outcome is unknown)",
                limits.batch_timeout_ms
            ),
        )),
    }
}

/// Run one command (on a pooled connection) with short timeouts (info,
/// readiness, sweep bookkeeping). Returns the reply, which may be an error
/// reply; 503 if Redis cannot be reached or did not answer.
pub async fn command(
    state: &AppState,
    argv: &[&[u8]],
    wait: Duration,
) -> Result<resp::Value, ApiError> {
    let batch = Batch {
        commands: vec![argv.iter().map(|a| a.to_vec()).collect()],
        mode: Mode::Sequential,
        batch_size: 1,
        on_error: OnError::Continue,
        simulated_rtt_ms: 0.0,
        resp3: false,
        watch: Vec::new(),
    };
    let opts = ExecOptions {
        connect_timeout: wait,
        read_timeout: wait,
        max_reply_bytes: None,
    };
    let report =
        match tokio::time::timeout(wait * 2, execute_pooled(&state.pool, &batch, &opts)).await {
            Ok(Ok(report)) => report,
            Ok(Err(ExecError::Connect(msg))) => return Err(ApiError::unavailable(msg)),
            Ok(Err(ExecError::Invalid(e))) => {
                return Err(ApiError::field("invalid_batch", e.field, e.message))
            }
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
