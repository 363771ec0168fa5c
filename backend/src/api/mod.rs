//! The REST API (`/api/v1`), health probes and the web playground's files,
//! on the HTTP layer both surfaces share (`pipelab_http`).
//!
//! Thin adapter over the executor: each endpoint validates its JSON
//! ([`validate`]), builds a [`pipelab_engine::exec::Batch`], runs it through [`run`]
//! (limits, timeout, Redis errors → HTTP) and serializes the executor's
//! `Report` as it is, so the API and `pipelab run --json` cannot drift apart.
//!
//! The Redis target comes only from the server's configuration, never from
//! a request.

pub mod arg;
pub mod backend;
pub mod batch;
pub mod compare;
pub mod commands;
pub mod extract;
pub mod health;
pub mod incremental;
pub mod info;
pub mod json;
pub mod kept;
pub mod live;
pub mod openapi;
pub mod refuse;
pub mod run;
pub mod schema;
pub mod session;
pub mod stream;
pub mod sweep;
pub mod validate;
pub mod web;

use std::sync::Arc;

use axum::extract::Request;
use axum::routing::{any, delete, get, post};
use axum::Router;

use pipelab_http::config::Limits;
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::engine::{Engine, EngineLimits};
use pipelab_http::{HttpInner, HttpState};
use pipelab_http::error::{ApiCode, ApiError};
use pipelab_http::{auth, budget, guard, rate};

use pipelab_engine::engine::{Redis, RedisSource, Shared};

/// Shared by every request; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

/// The HTTP layer's state (the engine and the policy in front of it,
/// [`HttpState`]) and what the API's routes add to it.
pub struct Inner {
    pub http: HttpState,
    /// The page's files at `/` ([`pipelab_http::page::Page`]: built in, or `--web-dir`).
    pub page: pipelab_http::page::Page,
    /// Commands the operator allows beyond the defaults (`--allow-migrate`).
    pub allow: pipelab_engine::commands::Allow,
    /// The batches of `POST /batches` running now, to cancel by id ([`live`]).
    pub live: live::Registry,
    /// `GET /api/v1/commands`'s answer for the server's current run ([`commands`]).
    pub docs: commands::DocsCache,
    /// `--doctor-listen`: where the doctor listens (for `/info`) and its JSON
    /// routes, mounted at `/api/v1/doctor` ([`AppStateBuilder::with_doctor`]).
    pub doctor: Option<(info::DoctorInfo, Router)>,
}


impl AsRef<HttpState> for AppState {
    fn as_ref(&self) -> &HttpState {
        &self.0.http
    }
}

/// The engine's limits within the server's.
fn engine_limits(limits: &Limits) -> EngineLimits {
    EngineLimits {
        batch_timeout: limits.batch_timeout(),
        connect_timeout: limits.connect_timeout(),
        max_reply_bytes: limits.max_reply_bytes,
        max_concurrent_batches: limits.max_concurrent_batches,
        max_batches_per_client: limits.max_batches_per_client,
        max_blocking_per_client: limits.max_blocking_per_client,
        session_idle: std::time::Duration::from_millis(limits.session_idle_ms),
        max_sessions: limits.max_sessions,
        max_sessions_per_client: limits.max_sessions_per_client,
        shared_connections: limits.shared_connections,
    }
}

/// An [`AppState`] being put together at start-up: the settings go in by
/// value, and [`AppStateBuilder::build`] makes the engine and the state
/// and shares them.
pub struct AppStateBuilder {
    redis: Redis,
    limits: Limits,
    page: pipelab_http::page::Page,
    runtimes: Vec<tokio::runtime::Handle>,
    guard: guard::Policy,
    allow: pipelab_engine::commands::Allow,
    auth: auth::Auth,
    upstash: pipelab_http::config::UpstashSettings,
    rate: rate::Limiter,
    doctor: Option<(info::DoctorInfo, Router)>,
}

impl AppStateBuilder {
    /// The API on one Redis (or cluster) shared by every caller.
    pub fn shared(
        target: RedisTarget,
        source: RedisSource,
        limits: Limits,
        page: impl Into<pipelab_http::page::Page>,
        runtimes: Vec<tokio::runtime::Handle>,
    ) -> Self {
        let shared = Shared::new(target, source, &engine_limits(&limits));
        Self::with_redis(Redis::Shared(shared), limits, page.into(), runtimes)
    }

    /// The API in the sandbox: each visitor on a redis-server of their own.
    pub fn sandboxed(supervisor: Arc<pipelab_engine::sandbox::Supervisor>, limits: Limits, page: impl Into<pipelab_http::page::Page>, runtimes: Vec<tokio::runtime::Handle>) -> Self {
        Self::with_redis(Redis::Sandbox(supervisor), limits, page.into(), runtimes)
    }

    fn with_redis(redis: Redis, limits: Limits, page: pipelab_http::page::Page, runtimes: Vec<tokio::runtime::Handle>) -> Self {
        AppStateBuilder {
            redis,
            limits,
            page,
            runtimes,
            guard: guard::Policy::new(&guard::GuardConfig::default(), None),
            allow: Default::default(),
            auth: auth::Auth::none(),
            upstash: Default::default(),
            rate: Default::default(),
            doctor: None,
        }
    }

    /// A doctor listening as `info` says, its JSON API `routes` (paths
    /// `/summary` and `/flights`, the doctor's own) served
    /// under `/api/v1/doctor` behind the same rules as every route.
    pub fn with_doctor(mut self, info: info::DoctorInfo, routes: Router) -> Self {
        self.doctor = Some((info, routes));
        self
    }

    /// The request guards of `policy`.
    pub fn with_guard(mut self, policy: guard::Policy) -> Self {
        self.guard = policy;
        self
    }

    /// The commands the operator allows beyond the defaults.
    pub fn with_allow(mut self, allow: pipelab_engine::commands::Allow) -> Self {
        self.allow = allow;
        self
    }

    /// Rate limits `limits`.
    pub fn with_rate(mut self, limits: rate::RateLimits) -> Self {
        self.rate = rate::Limiter::new(limits);
        self
    }

    /// The tokens and the Upstash surface's settings.
    pub fn configure(mut self, auth: auth::Auth, upstash: pipelab_http::config::UpstashSettings) -> Self {
        self.auth = auth;
        // The Upstash routes' CORS origins pass the request guards there.
        let origins: Vec<&str> = upstash.cors_origins.iter().filter_map(|o| o.to_str().ok()).collect();
        let any = if upstash.cors_any { vec!["*"] } else { Vec::new() };
        self.guard = self.guard.with_upstash_origins(origins.into_iter().chain(any));
        self.upstash = upstash;
        self
    }

    /// The embedded Redis's ACL users (`pipelab_engine::acl`; the state's target is
    /// the batch user's already): read-only tokens' batches run as the
    /// read-only user, operator tokens' as `admin` (the default user's
    /// target).
    pub fn with_users(mut self, users: &pipelab_engine::acl::Users, admin: RedisTarget) -> Self {
        if let Redis::Shared(shared) = self.redis {
            self.redis = Redis::Shared(shared.with_users(users, admin, &engine_limits(&self.limits)));
        }
        self
    }

    /// The engine and the state, ready to be shared by every request.
    pub fn build(self) -> AppState {
        let limits = self.limits;
        let http = HttpState::new(HttpInner {
            engine: Engine::new(self.redis, engine_limits(&limits), self.runtimes),
            budget: budget::Budget::new(limits.max_response_memory),
            drain: Default::default(),
            limits,
            guard: self.guard,
            auth: self.auth,
            rate: self.rate,
            upstash: self.upstash,
        });
        AppState(Arc::new(Inner { http, page: self.page, allow: self.allow, live: Default::default(), docs: Default::default(), doctor: self.doctor }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.0
    }
}

/// The API's routes: /api/v1/*, /healthz, /readyz, /metrics
/// (`crate::server` puts them together with the other surfaces).
pub fn routes(state: &AppState) -> Router<AppState> {
    // Full paths and a catch-all rather than `nest("/api/v1", ...)`: a nest
    // rewrites every request's URI and routes it twice, and the router's
    // layers were a measurable share of a one-command request's CPU.
    let api = Router::new()
        .route("/api/v1/batch", post(batch::batch))
        .route("/api/v1/batches", post(live::start))
        .route("/api/v1/batches/{id}/cancel", post(live::cancel))
        .route("/api/v1/compare", post(compare::compare))
        .route("/api/v1/sweep", post(sweep::sweep))
        .route("/api/v1/sessions", post(session::create))
        .route("/api/v1/sessions/{id}", delete(session::delete))
        .route("/api/v1/sessions/{id}/batch", post(batch::on_session))
        .route("/api/v1/info", get(info::info))
        .route("/api/v1/commands", get(commands::commands))
        .route("/api/v1/openapi.json", get(openapi::openapi_json))
        // Only the routes above: a wrong method there is a JSON 405.
        .method_not_allowed_fallback(api_method_not_allowed)
        .route("/api/v1", any(api_not_found))
        .route("/api/v1/", any(api_not_found))
        .route("/api/v1/{*rest}", any(api_not_found));
    let api = match &state.doctor {
        Some((_, doctor)) => api.nest_service("/api/v1/doctor", doctor.clone()),
        None => api.route("/api/v1/doctor/{*rest}", any(no_doctor)),
    };
    Router::new()
        .merge(api)
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        // Where tools look first; the page's fallback would answer it with HTML.
        .route("/openapi.json", get(|| async { axum::response::Redirect::permanent("/api/v1/openapi.json") }))
}

async fn api_not_found(req: Request) -> ApiError {
    ApiError::new(
        ApiCode::NotFound,
        format!(
            "no endpoint {} {} (see GET /api/v1/openapi.json)",
            req.method(),
            req.uri().path()
        ),
    )
}

async fn no_doctor() -> ApiError {
    ApiError::new(ApiCode::NotFound, "no doctor is listening: start pipelab serve with --doctor-listen ADDR (not with --sandbox), or run pipelab doctor")
}

async fn api_method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        ApiCode::MethodNotAllowed,
        format!("{} is not allowed on {} (see GET /api/v1/openapi.json)", req.method(), req.uri().path()),
    )
}
