//! Probes for process supervisors and load balancers: `/healthz` (the
//! process is alive), `/readyz` (Redis answers PING) and `/metrics`
//! (Prometheus text format, see [`crate::telemetry`]).

use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use super::error::{ApiCode, ApiError};
use super::run::command;
use super::AppState;

/// 200 while the process serves HTTP; touches nothing else.
pub async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// 200 if Redis answers PING within a second, else 503 with the API's error shape.
pub async fn readyz(State(state): State<AppState>) -> axum::response::Response {
    match command(&state, &[b"PING"], Duration::from_secs(1)).await {
        Ok(reply) if !reply.is_error() => Json(json!({"status": "ready"})).into_response(),
        Ok(reply) => ApiError::new(
            ApiCode::RedisUnavailable,
            format!("Redis answered PING with {}", reply.display()),
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

/// Prometheus text exposition format 0.0.4.
pub async fn metrics() -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::telemetry::render_metrics(),
    )
}
