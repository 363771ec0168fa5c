//! Sessions: a Redis connection that outlives a batch (docs/api.md#sessions).
//!
//! A batch normally has its connection only while it runs (an idle pooled
//! one, given back only if no command changed its state), so `WATCH` in
//! one batch and `MULTI`/`EXEC` in the next cannot be shown. A session owns
//! one connection: `POST /api/v1/sessions` opens it, `POST /api/v1/batch`
//! with `"session": id` runs on it, keeping whatever state the commands
//! left (WATCHed keys, an open MULTI whose commands answer `QUEUED`), and
//! `DELETE /api/v1/sessions/{id}` closes it. One batch at a time (409
//! `session_busy`); a session idle for `--session-idle-ms` is closed (404
//! `session_not_found` afterwards), at most `--max-sessions` are open (503
//! `too_many_sessions`). A session whose connection failed (the server
//! closed it, a batch was cut) answers 409 `session_lost` and is never
//! reopened behind the caller's back: its WATCH and MULTI state is gone.
//!
//! A session belongs to the access it was opened with (`http::auth`): a
//! batch with another token's access does not find it (404), and each
//! batch's commands are checked as any batch's; a read-only token's
//! session runs as the read-only Redis user where pipelab has one.
//!
//! In the sandbox (`pipelab_engine::sandbox`) a session belongs to the visitor too
//! (a batch with another cookie, or none, does not find it), its
//! connection is to the visitor's own Redis, and a visitor keeps at most
//! `--sandbox-visitor-sessions` open.
//!
//! The sessions themselves (the connection, the caps, expiry) are the
//! engine's (`pipelab_engine::engine::session`); here are their routes.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use pipelab_engine::engine::Backend;
use pipelab_http::error::{ApiCode, ApiError};
use super::kept::{Keep, KeptResults};
use super::stream;
use super::AppState;
use pipelab_engine::engine::{Connection, RunOptions, Session, SessionSettings};
use pipelab_engine::exec::Batch;

/// `POST /api/v1/sessions`'s body (optional: an empty body takes the defaults).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"resp3": false}))]
pub struct SessionRequest {
    /// Speak RESP3 (HELLO 3) on the session's connection. Default false.
    pub resp3: Option<bool>,
    /// Simulated round-trip time of the session's connection, in ms (0 to
    /// 1000). Default 0. Every batch on the session pays it.
    #[schema(minimum = 0, maximum = 1000)]
    pub simulated_rtt_ms: Option<f64>,
    /// Simulated bandwidth in each direction, in Mbit/s (0.01 to 100000).
    /// Default: unlimited. Every batch on the session is carried at it.
    #[schema(minimum = 0.01, maximum = 100000)]
    pub simulated_bandwidth_mbps: Option<f64>,
}

/// An open session (201).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"id": "3f2a9c0e5b7d41e8a6c4f0b2d9e7a1c3", "idle_ms": 60000, "expires_at_ms": 1764633600000u64}))]
pub struct SessionResponse {
    /// Pass as `"session"` to `POST /api/v1/batch`.
    pub id: String,
    /// The session is closed after this many ms without a batch (`--session-idle-ms`).
    pub idle_ms: u64,
    /// When it expires if no batch runs on it, in ms since the Unix epoch
    /// (each batch's end pushes it back by `idle_ms`).
    pub expires_at_ms: u64,
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Open a session: a Redis connection of its own that keeps its state between batches.
///
/// The body is optional (`{}` or none: RESP2, no simulated RTT).
#[utoipa::path(post, path = "/api/v1/sessions", tag = "sessions",
    request_body(content = Option<SessionRequest>, description = "Optional"),
    responses(
        (status = 201, description = "The session is open", body = SessionResponse),
        (status = 400, description = "A bad field", body = pipelab_http::error::ErrorBody),
        (status = 503, description = "`too_many_sessions` (--max-sessions are open, --max-sessions-per-client of this client's, or in the sandbox the visitor's own cap) or `redis_unavailable`", body = pipelab_http::error::ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: pipelab_http::caller::Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: SessionRequest = if body.iter().all(u8::is_ascii_whitespace) {
        SessionRequest::default()
    } else {
        super::json::parse_json(&body)?
    };
    let backend = state.backend(&caller).await?;
    let settings = SessionSettings {
        resp3: req.resp3.unwrap_or(false),
        simulated_rtt_ms: super::validate::rtt(req.simulated_rtt_ms)?,
        simulated_bandwidth_mbps: super::validate::bandwidth(req.simulated_bandwidth_mbps)?,
    };
    let id = state.http.engine.open_session(&backend, caller.who(), settings).await?;
    let idle = state.http.engine.sessions.idle();
    let body = SessionResponse { id, idle_ms: idle.as_millis() as u64, expires_at_ms: unix_ms(SystemTime::now() + idle) };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Close a session and its connection.
///
/// A batch running on it finishes first, its connection then closed.
#[utoipa::path(delete, path = "/api/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 204, description = "Closed"),
        (status = 404, description = "`session_not_found`", body = pipelab_http::error::ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    caller: pipelab_http::caller::Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.http.engine.sessions.close(&id, caller.access.rules(), caller.visitor.as_ref())?;
    Ok(StatusCode::NO_CONTENT)
}

/// A batch's `resp3` / `simulated_rtt_ms` / `simulated_bandwidth_mbps`,
/// if given, must be the session's: its connection was opened with them.
/// Errors: 400 `invalid_field`.
pub fn check_settings(session: &Session, resp3: Option<bool>, simulated_rtt_ms: Option<f64>, mbps: Option<f64>) -> Result<(), ApiError> {
    let s = &session.settings;
    if resp3.is_some_and(|r| r != s.resp3) {
        return Err(ApiError::field(
            ApiCode::InvalidField,
            "resp3",
            format!("the session's connection speaks {} (set when it was opened); leave resp3 out", if s.resp3 { "RESP3" } else { "RESP2" }),
        ));
    }
    if simulated_rtt_ms.is_some_and(|r| r != s.simulated_rtt_ms) {
        return Err(ApiError::field(
            ApiCode::InvalidField,
            "simulated_rtt_ms",
            format!("the session's connection has {} ms (set when it was opened); leave simulated_rtt_ms out", s.simulated_rtt_ms),
        ));
    }
    if mbps.is_some() && mbps != s.simulated_bandwidth_mbps {
        return Err(ApiError::field(
            ApiCode::InvalidField,
            "simulated_bandwidth_mbps",
            "the session's connection has its own bandwidth (set when it was opened); leave simulated_bandwidth_mbps out",
        ));
    }
    Ok(())
}

/// Runs `batch` on `session`'s connection and answers with its report.
///
/// Errors: 409 `session_busy` (a batch runs on it), 409 `session_lost`
/// (its connection failed: the session is closed), and those of any batch.
pub async fn run(state: AppState, on: &Backend, id: &str, session: Arc<Session>, batch: Batch, keep: Keep) -> Result<Response, ApiError> {
    let sessions = &state.http.engine.sessions;
    let mut taken = sessions.take(id, session)?;
    let mut kept = KeptResults::new(&state, keep, batch.commands.len());
    let out = super::run::run_logged(&state, on, &batch, &mut kept, RunOptions { on: Connection::Session(&mut taken.conn), cancel: None }).await;
    sessions.put_back(taken, &out);
    let out = out?;
    if let Some(refused) = pipelab_http::budget::refused(out.connection_error.as_deref()) {
        return Err(refused);
    }
    Ok(stream::report_response(&mut kept, &out))
}
