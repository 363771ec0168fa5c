//! Draining, so that a node leaves a balancer without cutting anyone off:
//! after SIGTERM (or Ctrl-C) `/readyz` answers 503 at once (the balancer's
//! next health check takes the node out), while what the node already
//! serves goes on — running batches, open sessions, its sandbox visitors —
//! until it is done or the grace period is over. What would start
//! something new here (a new sandbox visitor, a new session) gets 503
//! `shutting_down` with `Retry-After`: a balancer that retries, or the
//! client, lands on another node.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::http::Method;

use super::error::{ApiCode, ApiError};
use super::HttpState;

/// When to come back: about one health-check interval, by when the
/// balancer has taken this node out.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Whether, and since when, the node drains.
#[derive(Default)]
pub struct Drain {
    since: OnceLock<Instant>,
}

impl Drain {
    /// Draining starts now (a second call changes nothing).
    pub fn start(&self) {
        if self.since.set(Instant::now()).is_ok() {
            metrics::gauge!("pipelab_node_draining").set(1.0);
            tracing::info!(node = pipelab_engine::node::id(), "draining: /readyz answers 503; running batches and open sessions may finish");
        }
    }

    pub fn is_draining(&self) -> bool {
        self.since.get().is_some()
    }

    /// When `grace` after draining started is over (now if it has not started).
    pub fn deadline(&self, grace: Duration) -> Instant {
        self.since.get().copied().unwrap_or_else(Instant::now) + grace
    }
}

/// Lets `req` in unless the node drains and it would start something new
/// here: a sandbox request naming no visitor of this node, or a new
/// session. Probes always pass.
#[allow(clippy::result_large_err)]
pub fn admit(state: &HttpState, req: &Request) -> Result<(), ApiError> {
    if !state.drain.is_draining() || matches!(req.uri().path(), "/healthz" | "/readyz" | "/metrics") {
        return Ok(());
    }
    let new = match state.engine.sandbox() {
        Some(_) => {
            let token = || super::auth::presented(req.headers(), req.uri()).and_then(|t| pipelab_engine::sandbox::VisitorId::parse(std::str::from_utf8(&t).ok()?));
            let named = super::visitor::from_headers(req.headers()).or_else(token);
            !matches!(named, Some(id) if id.elsewhere().is_none())
        }
        None => req.method() == Method::POST && req.uri().path() == "/api/v1/sessions",
    };
    match new {
        false => Ok(()),
        true => Err(ApiError::new(
            ApiCode::ShuttingDown,
            format!("node {} is shutting down and takes nothing new: retry, and the balancer sends you to another node", pipelab_engine::node::id()),
        )
        .retry_after(RETRY_AFTER)),
    }
}

/// Waits until nothing of the node's is under way (no batch running, no
/// session open), or until `grace` after draining started.
pub async fn settled(state: &HttpState, grace: Duration) {
    let deadline = state.drain.deadline(grace);
    loop {
        let (batches, sessions) = (crate::telemetry::batches_running(), state.engine.sessions.len());
        if batches == 0 && sessions == 0 {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!(batches, sessions, "still under way at the end of the grace period; stopping anyway");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
