//! `pipelab doctor --ui ADDR`: the doctor's page and the small JSON API it
//! polls, served by the doctor itself (axum; loopback unless ADDR says
//! otherwise). Everything comes from the doctor's bounded state in memory
//! ([`crate::stats`]): key patterns, counts and times, never a value.
//!
//! - `GET /api/doctor/summary[?rtt_ms=MS]` → [`UiSummary`]: the summary as
//!   it stands (runs going on are not ended), the missed pipelines (ended
//!   and going on) with a playground batch each, and where the playground
//!   is; savings at `rtt_ms` (0 to 1000) when given, else at `--rtt`;
//! - `GET /api/doctor/flights?connection=N[&since=US]` → the connection's
//!   kept flights ([`crate::tracker::FLIGHT_RING`] per connection, the most
//!   recent) that started after `since` µs ([`ConnectionFlights`]); 400
//!   naming the field for a bad query, 404 for a connection not known (any
//!   more: closed connections stay for the 20 most recent);
//! - anything else: the page, `doctor.html` and its assets, built into the
//!   binary or from `--web-dir` ([`pipelab_http::page::Page`]; Vite builds it
//!   with the playground: `scripts/build-web.sh`).
//!
//! `pipelab serve --doctor-listen` starts the doctor with [`start_in_serve`]
//! and mounts the same two routes under `/api/v1/doctor` ([`mounted`]),
//! behind its own rules (tokens, guards).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;

use crate::report::{ConnectionFlights, MissedPipeline, Summary};
use crate::stats::Doctor;
use pipelab_engine::conn::RedisTarget;
use pipelab_http::config::ServeConfig;
use pipelab_http::error::{ApiCode, ApiError};
use pipelab_http::page::Page;

/// Most commands in a missed pipeline's playground batch (the run's own
/// count when smaller).
pub const EXAMPLE_COMMANDS: u64 = 1000;
/// The page's file among the page's files.
pub const PAGE: &str = "doctor.html";

/// What the UI's handlers share.
#[derive(Clone)]
pub struct UiState {
    pub doctor: Arc<Doctor>,
    /// The playground page "open in playground" links to (`--playground-url`).
    pub playground_url: String,
    /// The page's files (built in, or `--web-dir`).
    pub page: Page,
}

/// A missed pipeline as the page lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiMissed {
    #[serde(flatten)]
    pub missed: MissedPipeline,
    /// True for a run still going on (it may grow; `--json` reports it when it ends).
    pub going_on: bool,
    /// The run's shape as a playground batch, one inline command a line (at
    /// most [`EXAMPLE_COMMANDS`]; see [`crate::KeyTable::example_command`]).
    pub example: String,
}

/// `GET /api/doctor/summary`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UiSummary {
    /// As the final `summary`, so far; its `top_missed` is empty (see
    /// `missed`) and its connections' `recent_flights` too (see
    /// `/api/doctor/flights`).
    pub summary: Summary,
    /// The largest missed pipelines by saving, ended or going on (at most 10).
    pub missed: Vec<UiMissed>,
    /// The playground page to open a batch in (`--playground-url`).
    pub playground_url: String,
}

/// The router of `--ui`, behind `pipelab serve`'s request guards (a
/// `Host` that is not an IP address, `localhost` or `*.localhost` is 421:
/// a rebound name cannot read the doctor; another site's page is 403) and
/// with its security headers (CSP, `nosniff`, no framing).
pub fn router(state: UiState) -> Router {
    let policy = Arc::new(pipelab_http::guard::Policy::new(&pipelab_http::guard::GuardConfig::default(), None));
    Router::new()
        .route("/api/doctor/summary", get(summary))
        .route("/api/doctor/flights", get(flights))
        .route("/api/doctor/{*rest}", get(|| not_found("/api/doctor")))
        .fallback(page)
        .with_state(state)
        .layer(axum::middleware::from_fn(move |req: Request, next: axum::middleware::Next| {
            let policy = policy.clone();
            async move {
                let mut res = match policy.check(req.method(), req.uri(), req.headers()) {
                    Ok(()) => next.run(req).await,
                    Err(refused) => refused.into_response(),
                };
                pipelab_http::headers::set(&mut res);
                res
            }
        }))
}

/// The JSON API alone, for a router that nests it at `prefix` (its paths
/// are `/summary` and `/flights`) and has the rules in front of it: JSON
/// 404 and 405 naming the two routes.
pub fn mounted(prefix: &'static str, state: UiState) -> Router {
    Router::new()
        .route("/summary", get(summary))
        .route("/flights", get(flights))
        .method_not_allowed_fallback(move || async move { ApiError::new(ApiCode::MethodNotAllowed, format!("only GET is allowed on {prefix}/summary and {prefix}/flights")) })
        .fallback(move || not_found(prefix))
        .with_state(state)
}

/// A batch of a missed pipeline's shape: each pattern in proportion to its
/// commands (the `…` of patterns not kept is left out), keys numbered from 0.
pub fn example_batch(doctor: &Doctor, m: &MissedPipeline) -> String {
    let total = m.commands.min(EXAMPLE_COMMANDS);
    let mut lines = Vec::new();
    let mut i = 0u64;
    for p in m.patterns.iter().filter(|p| p.pattern != "…") {
        let n = (p.commands * total).div_ceil(m.commands.max(1)).min(total - i.min(total));
        for _ in 0..n {
            lines.push(doctor.keys().example_command(&p.pattern, i));
            i += 1;
        }
    }
    lines.join("\n")
}

async fn summary(State(s): State<UiState>, Query(q): Query<HashMap<String, String>>) -> Result<Json<UiSummary>, ApiError> {
    if let Some(unknown) = q.keys().find(|k| k.as_str() != "rtt_ms") {
        return Err(ApiError::field(ApiCode::InvalidField, unknown.clone(), "unknown query parameter (expected `rtt_ms`)"));
    }
    let rtt_ms = q.get("rtt_ms").map(|v| pipelab_http::config::rtt_ms(v).map_err(|e| ApiError::field(ApiCode::InvalidField, "rtt_ms", format!("{e}, got {v:?}")))).transpose()?;
    let (mut summary, mut going_on) = s.doctor.live_summary();
    if let Some(rtt_ms) = rtt_ms {
        summary.at_rtt(rtt_ms);
        going_on.iter_mut().for_each(|m| m.at_rtt(rtt_ms));
    }
    let ended = std::mem::take(&mut summary.missed.top_missed);
    for c in &mut summary.recent_connections {
        c.recent_flights = Vec::new();
    }
    let mut missed: Vec<(MissedPipeline, bool)> = ended.into_iter().map(|m| (m, false)).chain(going_on.into_iter().map(|m| (m, true))).collect();
    missed.sort_by(|a, b| b.0.saving_ms.total_cmp(&a.0.saving_ms));
    missed.truncate(10);
    let missed = missed
        .into_iter()
        .map(|(m, going_on)| UiMissed { example: example_batch(&s.doctor, &m), missed: m, going_on })
        .collect();
    Ok(Json(UiSummary { summary, missed, playground_url: s.playground_url.clone() }))
}

fn number(q: &HashMap<String, String>, field: &str) -> Result<Option<u64>, ApiError> {
    q.get(field)
        .map(|v| v.parse::<u64>().map_err(|_| ApiError::field(ApiCode::InvalidField, field, format!("must be a whole number ≥ 0, got {v:?}"))))
        .transpose()
}

async fn flights(State(s): State<UiState>, Query(q): Query<HashMap<String, String>>) -> Result<Json<ConnectionFlights>, ApiError> {
    if let Some(unknown) = q.keys().find(|k| !matches!(k.as_str(), "connection" | "since")) {
        return Err(ApiError::field(ApiCode::InvalidField, unknown.clone(), "unknown query parameter (expected `connection`, `since`)"));
    }
    let id = number(&q, "connection")?.ok_or_else(|| ApiError::field(ApiCode::InvalidField, "connection", "is required: the connection's number (as listed by /api/doctor/summary)"))?;
    let since = number(&q, "since")?.unwrap_or(0);
    s.doctor
        .flights(id, since)
        .map(Json)
        .ok_or_else(|| ApiError::field(ApiCode::NotFound, "connection", format!("no connection {id} open or among the 20 most recently closed")))
}

async fn not_found(prefix: &str) -> ApiError {
    ApiError::new(ApiCode::NotFound, format!("no such endpoint (the doctor serves {prefix}/summary and {prefix}/flights)"))
}

async fn page(State(s): State<UiState>, req: Request) -> Response {
    match s.page.respond(req, PAGE).await {
        Ok(res) => res,
        Err(pipelab_http::page::NotBuilt) => (StatusCode::NOT_FOUND, pipelab_http::page::doctor_not_built(&s.page)).into_response(),
    }
}

/// `pipelab serve --doctor-listen`: the doctor's proxy accepting on
/// `listener` (on `rt`), each connection to `upstream` logged in as the
/// batches' user; where it listens and the routes `/api/v1/doctor` mounts.
pub fn start_in_serve(cfg: &ServeConfig, rt: &tokio::runtime::Runtime, listener: tokio::net::TcpListener, upstream: RedisTarget) -> (String, Router) {
    use crate::{missed, KeyTable, Rule};
    let wait = cfg.limits.connect_timeout();
    let keys = rt.block_on(crate::key_table(&upstream, wait)).unwrap_or_else(|e| {
        tracing::warn!("doctor: no key table from {upstream} (commands are grouped by name only): {e}");
        KeyTable::default()
    });
    let rule = Rule { think_time_us: missed::THINK_TIME_US, min_run: missed::MIN_RUN, rtt_ms: cfg.doctor_rtt };
    let doc = Arc::new(Doctor::new(rule, Arc::new(keys), SERVE_CONNECTIONS, Box::new(|_| {})));
    let listen = listener.local_addr().map_or_else(|_| cfg.doctor_listen.map(|d| d.to_string()).unwrap_or_default(), |a| a.to_string());
    tracing::info!(%listen, rtt_ms = cfg.doctor_rtt, "doctor listening: point an application here instead of Redis");
    pipelab_http::telemetry::banner(cfg.log_format, &format!("pipelab serve: doctor listening on {listen} (point your application here instead of Redis)"));
    rt.spawn(crate::serve_logged_in(listener, upstream, wait, pipelab_engine::delay::Link::default(), doc.clone()));
    // "open in playground" opens the page that asked, relative to it.
    let ui = UiState { doctor: doc, playground_url: "./".into(), page: Page::from_flag(cfg.web_dir.clone()) };
    (listen, mounted("/api/v1/doctor", ui))
}

/// Most connections the doctor of `--doctor-listen` relays at once.
const SERVE_CONNECTIONS: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::PatternCount;
    use crate::{KeyTable, Rule};

    fn missed(commands: u64, patterns: &[(&str, u64)]) -> MissedPipeline {
        MissedPipeline {
            connection: 1,
            peer: "p".into(),
            commands,
            pattern: patterns[0].0.into(),
            description: String::new(),
            patterns: patterns.iter().map(|&(p, c)| PatternCount { pattern: p.into(), commands: c }).collect(),
            start_us: 0,
            duration_ms: 0.0,
            think_us_max: 0,
            why: String::new(),
            replies_compared: 0,
            rtt_ms: 1.0,
            saving_ms: 0.0,
        }
    }

    #[test]
    fn savings_at_another_rtt_are_n_minus_one_round_trips_each() {
        let mut s = crate::report::Summary { rtt_ms: 1.0, ..Default::default() };
        for n in [200, 3] {
            let mut m = missed(n, &[("SET user:*", n)]);
            m.saving_ms = (n - 1) as f64;
            s.missed.add(m, 10);
        }
        s.at_rtt(2.5);
        assert_eq!((s.rtt_ms, s.missed.saving_ms), (2.5, (199.0 + 2.0) * 2.5));
        assert_eq!(s.missed.top_missed.iter().map(|m| (m.rtt_ms, m.saving_ms)).collect::<Vec<_>>(), [(2.5, 199.0 * 2.5), (2.5, 2.0 * 2.5)]);
    }

    #[test]
    fn an_example_batch_keeps_the_shape_and_the_proportions() {
        let d = Doctor::new(Rule { think_time_us: 50, min_run: 3, rtt_ms: 1.0 }, Arc::new(KeyTable::default()), 4, Box::new(|_| {}));
        let b = example_batch(&d, &missed(4000, &[("SET user:*", 3000), ("GET user:*:name", 999), ("…", 1)]));
        let lines: Vec<&str> = b.lines().collect();
        assert_eq!(lines.len(), 1000);
        assert_eq!(lines[0], "SET user:0");
        assert_eq!(lines.iter().filter(|l| l.starts_with("GET ")).count(), 250);
        assert_eq!(lines[999], "GET user:999:name");
    }
}
