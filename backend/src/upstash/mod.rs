//! An Upstash-compatible REST surface, so that the official SDKs
//! (`@upstash/redis`, `upstash-redis`) work unmodified against `pipelab
//! serve`: `POST /` with one JSON command, path-style `/set/k/v`,
//! `/pipeline`, `/multi-exec`, `/subscribe/<channel>` as Server-Sent
//! Events, in Upstash's shapes (`{"result"}` / `{"error"}`), encodings
//! (`Upstash-Encoding: base64`, `Upstash-Response-Format: resp2`) and
//! status codes, with its tokens (`Authorization: Bearer`, `?_token=`),
//! its read-your-writes header and CORS for browsers.
//!
//! A thin adapter over the executor, as the API is: the commands run as a
//! batch through `api::run` ([`run`]) with the same limits, pool and
//! timeout. Beyond Upstash, every response has a `Server-Timing` header
//! (the batch's time in Redis and its round trips), and `/metrics` counts
//! the requests per endpoint family.
//!
//! One job per file: [`routes`] (handlers), [`request`] (parsing),
//! [`response`] (shapes and encodings), [`run`] (checks and execution),
//! [`sync`] (the sync token), [`subscribe`] (SSE).

pub mod request;
pub mod response;
pub mod routes;
pub mod run;
pub mod subscribe;
pub mod sync;

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use tower_http::cors::{AllowOrigin, CorsLayer};

use std::sync::Arc;

use crate::api::AppState;

use pipelab_http::config::UpstashSettings as Settings;

/// The state of the Upstash routes: the server's, and the sync token of
/// the writes they ran ([`sync`]).
#[derive(Clone)]
pub struct Upstash {
    app: AppState,
    pub sync: Arc<sync::SyncToken>,
}

impl std::ops::Deref for Upstash {
    type Target = AppState;

    fn deref(&self) -> &AppState {
        &self.app
    }
}

/// The CORS layer of `--upstash-cors-origin`, if any.
fn cors(settings: &Settings) -> Option<CorsLayer> {
    let origins = if settings.cors_any {
        AllowOrigin::any()
    } else if !settings.cors_origins.is_empty() {
        AllowOrigin::list(settings.cors_origins.clone())
    } else {
        return None;
    };
    let names = [
        "authorization", "content-type", "accept", "cache-control", "upstash-encoding",
        "upstash-response-format", "upstash-sync-token", "upstash-telemetry-sdk",
        "upstash-telemetry-runtime", "upstash-telemetry-platform", "upstash-telemetry-retry",
    ];
    Some(
        CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::GET, Method::HEAD, Method::POST, Method::PUT])
            .allow_headers(names.map(HeaderName::from_static))
            .expose_headers([sync::HEADER_NAME, SERVER_TIMING]),
    )
}

/// Which endpoint a response came from, for `pipelab_upstash_requests_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `POST /` with one JSON command.
    Command,
    /// A path-style command.
    Path,
    Pipeline,
    MultiExec,
    Subscribe,
}

impl Family {
    pub const ALL: [Family; 5] = [Family::Command, Family::Path, Family::Pipeline, Family::MultiExec, Family::Subscribe];

    /// The metric label.
    pub fn name(self) -> &'static str {
        match self {
            Family::Command => "command",
            Family::Path => "path",
            Family::Pipeline => "pipeline",
            Family::MultiExec => "multi_exec",
            Family::Subscribe => "subscribe",
        }
    }
}

/// The Upstash routes, under the root or `--upstash-prefix`, their state
/// given; put together with the API's by `crate::server`.
pub fn router(app: &AppState) -> Router {
    let state = Upstash { app: app.clone(), sync: Arc::default() };
    let settings = &app.http.upstash;
    let p = settings.prefix.clone().unwrap_or_default();
    let root = if p.is_empty() { "/".to_string() } else { p.clone() };
    let mut routes = Router::new()
        .route(&root, any(routes::root))
        .route(&format!("{p}/pipeline"), any(routes::pipeline))
        .route(&format!("{p}/multi-exec"), any(routes::multi_exec))
        .route(&format!("{p}/subscribe/{{*channels}}"), any(subscribe::subscribe))
        .route(&format!("{p}/psubscribe/{{*patterns}}"), any(subscribe::psubscribe))
        .route(&format!("{p}/{{*command}}"), any(routes::path_style))
        .layer(axum::middleware::map_response_with_state(state.clone(), finish));
    if let Some(cors) = cors(settings) {
        routes = routes.layer(cors);
    }
    routes.with_state(state)
}

/// The Upstash surface behind the gate: its paths (under the root, every
/// path the API does not serve), refused in Upstash's error shape.
pub struct Surface {
    prefix: Option<String>,
}

impl Surface {
    /// The surface of the routes `settings` put under the root or `--upstash-prefix`.
    pub fn new(settings: &Settings) -> Surface {
        Surface { prefix: settings.prefix.clone() }
    }
}

impl pipelab_http::surface::Surface for Surface {
    fn serves(&self, path: &str) -> bool {
        self.prefix.as_deref().is_none_or(|p| path.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
    }

    fn refusal(&self, e: pipelab_http::error::ApiError) -> Response {
        response::UpstashError::new(e.status(), format!("ERR {}", e.body.message)).into_response()
    }
}

/// Every Upstash response (not the playground's files served on the same
/// paths): the sync token, a `Server-Timing` (`redis;dur=0` if no batch
/// ran), and its count in `/metrics`.
async fn finish(State(state): State<Upstash>, visitor: Option<axum::Extension<pipelab_engine::sandbox::VisitorId>>, mut res: Response) -> Response {
    let Some(family) = res.extensions().get::<Family>().copied() else { return res };
    pipelab_http::telemetry::upstash_request(family.name(), res.status().as_u16());
    const NOT_RUN: HeaderValue = HeaderValue::from_static("redis;dur=0;desc=\"not run\"");
    let visitor = visitor.and_then(|axum::Extension(id)| state.http.engine.sandbox()?.visitor(&id));
    let headers = res.headers_mut();
    headers.insert(sync::HEADER_NAME, state.sync.header(visitor.as_ref().map(|v| &v.writes)));
    headers.entry(SERVER_TIMING).or_insert(NOT_RUN);
    res
}

/// `Server-Timing`, made once (a name made from a `&str` is checked each time).
pub const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");
