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

use crate::api::AppState;

pub use crate::config::UpstashConfig;

/// The Upstash surface's settings and its sync token.
#[derive(Debug, Default)]
pub struct Settings {
    /// `--upstash-prefix`, normalized: starts with `/`, no trailing `/`;
    /// `None`: the root.
    pub prefix: Option<String>,
    /// `--upstash-cors-origin`.
    pub cors_origins: Vec<HeaderValue>,
    /// Any origin (`*`).
    pub cors_any: bool,
    pub sync: sync::SyncToken,
}

impl Settings {
    /// Checks the flags: the prefix must be a path of its own (not `/`,
    /// not under `/api/v1`), each origin a valid header value.
    pub fn from_config(cfg: &UpstashConfig) -> Result<Settings, String> {
        let prefix = match cfg.upstash_prefix.as_deref().map(|p| p.trim_end_matches('/')) {
            None | Some("") => None,
            Some(p) if !p.starts_with('/') => return Err(format!("--upstash-prefix {p:?}: must start with /")),
            Some(p) if p == "/api" || p.starts_with("/api/") || p.contains(['{', '}', '?', '#', '*']) => {
                return Err(format!("--upstash-prefix {p:?}: must be a plain path outside /api"))
            }
            Some(p) => Some(p.to_string()),
        };
        let mut settings = Settings { prefix, ..Settings::default() };
        for origin in &cfg.cors_origins {
            match origin.trim() {
                "" => {}
                "*" => settings.cors_any = true,
                o => settings.cors_origins.push(
                    HeaderValue::from_str(o).map_err(|_| format!("--upstash-cors-origin {o:?}: not a valid origin"))?,
                ),
            }
        }
        Ok(settings)
    }

    /// The path the Upstash routes see, without the prefix.
    pub fn strip_prefix<'a>(&self, path: &'a str) -> &'a str {
        match &self.prefix {
            Some(p) => path.strip_prefix(p.as_str()).unwrap_or(path),
            None => path,
        }
    }

    fn cors(&self) -> Option<CorsLayer> {
        let origins = if self.cors_any {
            AllowOrigin::any()
        } else if !self.cors_origins.is_empty() {
            AllowOrigin::list(self.cors_origins.clone())
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

/// The Upstash routes, under the root or `--upstash-prefix`; put together
/// with the API's by `crate::server`.
pub fn router(state: &AppState) -> Router<AppState> {
    let settings = &state.upstash;
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
    if let Some(cors) = settings.cors() {
        routes = routes.layer(cors);
    }
    routes
}

/// The Upstash surface behind the gate: its paths (under the root, every
/// path the API does not serve), refused in Upstash's error shape.
pub struct Surface {
    prefix: Option<String>,
}

impl Surface {
    pub fn new(settings: &Settings) -> Surface {
        Surface { prefix: settings.prefix.clone() }
    }
}

impl crate::api::gate::Surface for Surface {
    fn serves(&self, path: &str) -> bool {
        self.prefix.as_deref().is_none_or(|p| path.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
    }

    fn refusal(&self, e: crate::api::error::ApiError) -> Response {
        response::UpstashError::new(e.status(), format!("ERR {}", e.body.message)).into_response()
    }
}

/// Every Upstash response (not the playground's files served on the same
/// paths): the sync token, a `Server-Timing` (`redis;dur=0` if no batch
/// ran), and its count in `/metrics`.
async fn finish(State(state): State<AppState>, mut res: Response) -> Response {
    let Some(family) = res.extensions().get::<Family>().copied() else { return res };
    crate::telemetry::upstash_request(family.name(), res.status().as_u16());
    const NOT_RUN: HeaderValue = HeaderValue::from_static("redis;dur=0;desc=\"not run\"");
    let headers = res.headers_mut();
    headers.insert(sync::HEADER_NAME, state.upstash.sync.header());
    headers.entry(SERVER_TIMING).or_insert(NOT_RUN);
    res
}

/// `Server-Timing`, made once (a name made from a `&str` is checked each time).
pub const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");
