//! Probes for process supervisors and load balancers: `/healthz` (the
//! process is alive and Redis not stuck in a script), `/readyz` (Redis answers PING; a cluster serves every slot) and `/metrics`
//! (Prometheus text format, see [`pipelab_http::telemetry`]).

use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::json;

use pipelab_http::error::{ApiCode, ApiError};
use super::run::command;
use super::AppState;

/// 200 while the process serves HTTP, unless Redis has been stuck in a
/// script (PING on a side connection answered `-BUSY`, or nothing) for
/// longer than the batch timeout: then 503 `redis_busy`, so that a
/// supervisor restarts what it can. A Redis that is down does not fail it
/// (`/readyz` reports that; the embedded one is restarted by pipelab).
pub async fn healthz(State(state): State<AppState>) -> axum::response::Response {
    match state.http.engine.busy_for().await {
        Some(busy) if busy > state.http.limits.batch_timeout() => ApiError::new(
            ApiCode::RedisBusy,
            format!(
                "Redis has answered BUSY (a script or function that could not be killed) for {} ms, \
                 longer than the batch timeout of {} ms",
                busy.as_millis(),
                state.http.limits.batch_timeout_ms
            ),
        )
        .into_response(),
        _ => Json(json!({"status": "ok"})).into_response(),
    }
}

/// 200 if Redis answers PING within a second, else 503 with the API's
/// error shape; 503 `shutting_down` once the node drains (SIGTERM). In the sandbox: if a visitor's Redis can be had (a spare
/// is ready, or a new one starts). On a Redis Cluster, 200 only if every
/// hash slot can be served: each master reachable and saying
/// `cluster_state:ok` (`pipelab_engine::cluster::Cluster::readiness`).
pub async fn readyz(State(state): State<AppState>) -> axum::response::Response {
    const WAIT: Duration = Duration::from_secs(1);
    // The balancer takes a draining node out at its next check (`pipelab_http::drain`).
    if state.http.drain.is_draining() {
        return ApiError::new(ApiCode::ShuttingDown, format!("node {} is shutting down: send requests to another node", pipelab_engine::node::id())).into_response();
    }
    let pool = match &state.http.engine.redis {
        super::Redis::Shared(shared) => shared.pool.clone(),
        super::Redis::Sandbox(sandbox) => match sandbox.ready().await {
            Ok(()) => return Json(json!({"status": "ready"})).into_response(),
            Err(e) => return ApiError::unavailable(e.to_string()).into_response(),
        },
    };
    if let Some(cluster) = pool.known_cluster() {
        return cluster_ready(cluster, WAIT).await;
    }
    match command(&pool, &[b"PING"], WAIT).await {
        // The first batch on a cluster (this PING) made its slot map.
        Ok(reply) if !reply.is_error() => match pool.known_cluster() {
            Some(cluster) => cluster_ready(cluster, WAIT).await,
            None => Json(json!({"status": "ready"})).into_response(),
        },
        Ok(reply) => ApiError::new(
            ApiCode::RedisUnavailable,
            format!("Redis answered PING with {}", reply.display()),
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn cluster_ready(cluster: &pipelab_engine::cluster::Cluster, wait: Duration) -> axum::response::Response {
    match cluster.readiness(wait).await {
        Ok(()) => Json(json!({"status": "ready"})).into_response(),
        Err(why) => ApiError::new(ApiCode::RedisUnavailable, why.to_string()).into_response(),
    }
}

/// Prometheus text exposition format 0.0.4.
pub async fn metrics() -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        pipelab_http::telemetry::render_metrics(),
    )
}
