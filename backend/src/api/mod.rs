//! The REST API (`/api/v1`), health probes and the web playground's files.
//!
//! Thin adapter over the executor: each endpoint validates its JSON
//! ([`validate`]), builds a [`crate::exec::Batch`], runs it through [`run`]
//! (limits, timeout, Redis errors → HTTP) and serializes the executor's
//! `Report` as it is, so the API and `pipelab run --json` cannot drift apart.
//!
//! The Redis target comes only from the server's configuration, never from
//! a request.

pub mod arg;
pub mod auth;
pub mod backend;
pub mod batch;
pub mod budget;
pub mod busy;
pub mod caller;
pub mod compare;
pub mod commands;
pub mod error;
pub mod extract;
pub mod gate;
pub mod guard;
pub mod headers;
pub mod health;
pub mod incremental;
pub mod info;
pub mod live;
pub mod openapi;
pub mod protected;
pub mod rate;
pub mod refuse;
pub mod run;
pub mod schema;
pub mod session;
pub mod share;
pub mod stream;
pub mod sweep;
pub mod validate;
pub mod visitor;
pub mod web;

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::Request;
use axum::routing::{any, delete, get, post};
use axum::Router;
use tokio::sync::Semaphore;

use crate::config::Limits;
use error::{ApiCode, ApiError};
use crate::conn::RedisTarget;
use crate::exec::{Pool, PoolConfig};

/// Where the Redis target came from (shown by GET /api/v1/info).
#[derive(Debug, Clone)]
pub enum RedisSource {
    /// `--redis` / `REDIS_URL`.
    Configured,
    /// A redis-server child started by `pipelab serve`.
    Embedded,
}

/// The Redis behind the API: one for everyone, or one per sandbox visitor
/// (each request's is chosen by [`AppState::backend`]).
pub enum Redis {
    Shared(Shared),
    Sandbox(Arc<crate::sandbox::Supervisor>),
}

/// The one Redis (or cluster) every caller shares.
pub struct Shared {
    pub target: RedisTarget,
    pub source: RedisSource,
    /// Idle Redis connections reused between batches (see `crate::exec::pool`).
    pub pool: Arc<Pool>,
    /// Where pipelab manages the Redis ([`crate::acl`]): the read-only
    /// user's pool (read-only tokens' batches) and the default user's
    /// (operator tokens' batches), while [`Shared::pool`] is the batch
    /// user's. `None`: [`Shared::pool`].
    pub readonly: Option<Arc<Pool>>,
    pub admin: Option<Arc<Pool>>,
}

/// Shared by every request; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

pub struct Inner {
    pub redis: Redis,
    pub limits: Limits,
    pub web_dir: PathBuf,
    /// One permit per running batch (`limits.max_concurrent_batches`).
    pub slots: Semaphore,
    /// The serving threads' runtimes: a big batch runs on another thread
    /// than its request's (`stream`). Empty: the current runtime only.
    pub runtimes: Vec<tokio::runtime::Handle>,
    /// Which runtime the next big batch goes to.
    next_runtime: std::sync::atomic::AtomicUsize,
    /// Who may send requests ([`guard`]); [`AppStateBuilder::with_guard`] sets it.
    pub guard: Arc<guard::Policy>,
    /// Since when Redis answers BUSY (a script that outlived its kill), for `/healthz`.
    pub busy_since: std::sync::Mutex<Option<std::time::Instant>>,
    /// Script kills in flight ([`busy::Kills`]): batches wait for them.
    pub kills: busy::Kills,
    /// Commands the operator allows beyond the defaults (`--allow-migrate`).
    pub allow: crate::commands::Allow,
    /// The tokens requests need (none: open); see [`auth`].
    pub auth: auth::Auth,
    /// The Upstash-compatible surface's settings and state.
    pub upstash: crate::config::UpstashSettings,
    /// Open sessions: connections kept between batches ([`session`]).
    pub sessions: Arc<session::Sessions>,
    /// Each client's share of the batch slots ([`share`]).
    pub shares: Arc<share::Shares>,
    /// The memory of answers being written ([`budget`]).
    pub budget: Arc<budget::Budget>,
    /// The batches of `POST /batches` running now, to cancel by id ([`live`]).
    pub live: live::Registry,
    /// Rate limits per client address and token ([`rate`]); off unless
    /// [`AppStateBuilder::with_rate`].
    pub rate: rate::Limiter,
    /// `GET /api/v1/commands`'s answer for the server's current run ([`commands`]).
    pub docs: commands::DocsCache,
    /// `--doctor-listen`: where the doctor listens (for `/info`) and its JSON
    /// routes, mounted at `/api/v1/doctor` ([`AppStateBuilder::with_doctor`]).
    pub doctor: Option<(info::DoctorInfo, Router)>,
}

/// The pool settings of the shared Redis: as many idle connections as
/// batches may run at once, up to 64.
fn pool_config(limits: &Limits) -> PoolConfig {
    PoolConfig { max_idle: limits.max_concurrent_batches.clamp(1, 64), share: limits.shared_connections, ..PoolConfig::default() }
}

/// An [`AppState`] being put together at start-up: the settings go in by
/// value, and [`AppStateBuilder::build`] shares the result.
pub struct AppStateBuilder(Inner);

impl AppStateBuilder {
    /// The API on one Redis (or cluster) shared by every caller.
    pub fn shared(
        target: RedisTarget,
        source: RedisSource,
        limits: Limits,
        web_dir: PathBuf,
        runtimes: Vec<tokio::runtime::Handle>,
    ) -> Self {
        let pool = Pool::new(target.clone(), pool_config(&limits));
        let shared = Shared { target, source, pool, readonly: None, admin: None };
        Self::with_redis(Redis::Shared(shared), limits, web_dir, runtimes)
    }

    /// The API in the sandbox: each visitor on a redis-server of their own.
    pub fn sandboxed(supervisor: Arc<crate::sandbox::Supervisor>, limits: Limits, web_dir: PathBuf, runtimes: Vec<tokio::runtime::Handle>) -> Self {
        Self::with_redis(Redis::Sandbox(supervisor), limits, web_dir, runtimes)
    }

    fn with_redis(redis: Redis, limits: Limits, web_dir: PathBuf, runtimes: Vec<tokio::runtime::Handle>) -> Self {
        let slots = Semaphore::new(limits.max_concurrent_batches.max(1));
        let sessions = session::Sessions::new(limits.session_idle_ms, limits.max_sessions, limits.max_sessions_per_client);
        let shares = share::Shares::new(limits.max_batches_per_client, limits.max_blocking_per_client);
        let budget = budget::Budget::new(limits.max_response_memory);
        AppStateBuilder(Inner {
            redis,
            sessions,
            shares,
            budget,
            limits,
            web_dir,
            slots,
            runtimes,
            next_runtime: Default::default(),
            guard: Arc::new(guard::Policy::new(&guard::GuardConfig::default(), None)),
            busy_since: Default::default(),
            kills: Default::default(),
            allow: Default::default(),
            auth: auth::Auth::none(),
            upstash: Default::default(),
            live: Default::default(),
            rate: Default::default(),
            docs: Default::default(),
            doctor: None,
        })
    }

    /// A doctor listening as `info` says, its JSON API `routes` (paths
    /// `/summary` and `/flights`: `crate::doctor::ui::mounted`) served
    /// under `/api/v1/doctor` behind the same rules as every route.
    pub fn with_doctor(mut self, info: info::DoctorInfo, routes: Router) -> Self {
        self.0.doctor = Some((info, routes));
        self
    }

    /// The request guards of `policy`.
    pub fn with_guard(mut self, policy: guard::Policy) -> Self {
        self.0.guard = Arc::new(policy);
        self
    }

    /// The commands the operator allows beyond the defaults.
    pub fn with_allow(mut self, allow: crate::commands::Allow) -> Self {
        self.0.allow = allow;
        self
    }

    /// Rate limits `limits`.
    pub fn with_rate(mut self, limits: rate::RateLimits) -> Self {
        self.0.rate = rate::Limiter::new(limits);
        self
    }

    /// The tokens and the Upstash surface's settings.
    pub fn configure(mut self, auth: auth::Auth, upstash: crate::config::UpstashSettings) -> Self {
        let inner = &mut self.0;
        inner.auth = auth;
        // The Upstash routes' CORS origins pass the request guards there.
        let origins: Vec<&str> = upstash.cors_origins.iter().filter_map(|o| o.to_str().ok()).collect();
        let any = if upstash.cors_any { vec!["*"] } else { Vec::new() };
        inner.guard = Arc::new((*inner.guard).clone().with_upstash_origins(origins.into_iter().chain(any)));
        inner.upstash = upstash;
        self
    }

    /// The embedded Redis's ACL users (`crate::acl`; the state's target is
    /// the batch user's already): read-only tokens' batches run as the
    /// read-only user, operator tokens' as `admin` (the default user's
    /// target).
    pub fn with_users(mut self, users: &crate::acl::Users, admin: RedisTarget) -> Self {
        let config = pool_config(&self.0.limits);
        if let Redis::Shared(shared) = &mut self.0.redis {
            shared.readonly = Some(shared.pool.sibling(users.readonly.target(&shared.target), config.clone()));
            shared.admin = Some(shared.pool.sibling(admin, config));
        }
        self
    }

    /// The state, ready to be shared by every request.
    pub fn build(self) -> AppState {
        AppState(Arc::new(self.0))
    }
}

impl AppState {
    /// The shared Redis (`None` in the sandbox).
    pub fn shared(&self) -> Option<&Shared> {
        match &self.redis {
            Redis::Shared(s) => Some(s),
            Redis::Sandbox(_) => None,
        }
    }

    /// The sandbox's supervisor (`None` outside the sandbox).
    pub fn sandbox(&self) -> Option<&Arc<crate::sandbox::Supervisor>> {
        match &self.redis {
            Redis::Sandbox(s) => Some(s),
            Redis::Shared(_) => None,
        }
    }

    /// A serving runtime other than the caller's, in turn (the caller's if
    /// there is no other).
    pub fn other_runtime(&self) -> tokio::runtime::Handle {
        let current = tokio::runtime::Handle::current();
        let others: Vec<&tokio::runtime::Handle> =
            self.runtimes.iter().filter(|h| h.id() != current.id()).collect();
        if others.is_empty() {
            return current;
        }
        let i = self.next_runtime.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        others[i % others.len()].clone()
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
