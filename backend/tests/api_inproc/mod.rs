//! The HTTP app in-process for the API tests: `pipelab_server::server::router` over an
//! `AppState` pointing at a real redis-server (tests/common), each request
//! driven through tower's `ServiceExt::oneshot`, as axum's own testing
//! example does. No binary, no socket, no port: what these tests check is
//! the app (routes, validation, replies). What needs the real server
//! (signals, start-up flags, stderr, serving threads, header timeouts,
//! bodies over a socket) stays on `api_harness`.
#![allow(dead_code)]

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{header, HeaderMap, Method, Request, StatusCode};
use clap::{Args, FromArgMatches};
use pipelab_http::guard::{GuardConfig, Policy};
use pipelab_engine::engine::RedisSource;
use pipelab_server::api::{AppState, AppStateBuilder};
use pipelab_server::server::router;
use pipelab_http::config::Limits;
use pipelab_engine::conn::RedisTarget;
use serde_json::Value as Json;
use tower::ServiceExt;

pub use crate::common::RedisServer;

/// The app and its state (for the pool's idle count).
pub struct App {
    pub state: AppState,
    router: pipelab_server::server::App,
}

impl App {
    /// The app against `redis_url`, with the limits `pipelab serve` would
    /// take from `limit_flags` (`--max-commands 10`, …) and no web files.
    pub fn start(redis_url: &str, limit_flags: &[&str]) -> App {
        App::with_web_dir(redis_url, limit_flags, PathBuf::from("/nonexistent/pipelab-web-dist"))
    }

    /// [`App::start`], serving the web files in `web_dir` (`--web-dir`).
    pub fn with_web_dir(redis_url: &str, limit_flags: &[&str], web_dir: PathBuf) -> App {
        App::configured(redis_url, limit_flags, web_dir, |state| state)
    }

    /// [`App::with_web_dir`], the state passed through `configure` first
    /// (tokens, Upstash settings: `AppStateBuilder::configure`).
    pub fn configured(redis_url: &str, limit_flags: &[&str], web_dir: PathBuf, configure: impl FnOnce(AppStateBuilder) -> AppStateBuilder) -> App {
        let state = AppStateBuilder::shared(target(redis_url), RedisSource::Configured, limits(limit_flags), web_dir, Vec::new());
        App::from_state(configure(state).build())
    }

    /// [`App::start`] with the request guards `pipelab serve` would take
    /// from `guard` (`--allowed-origins`, `--allowed-hosts`), listening (as
    /// far as the guards know) on 127.0.0.1:8080.
    pub fn with_guard(redis_url: &str, limit_flags: &[&str], guard: &GuardConfig) -> App {
        let state = AppStateBuilder::shared(
            target(redis_url),
            RedisSource::Configured,
            limits(limit_flags),
            PathBuf::from("/nonexistent/pipelab-web-dist"),
            Vec::new(),
        )
        .with_guard(Policy::new(guard, Some("127.0.0.1:8080".parse().unwrap())))
        .build();
        App::from_state(state)
    }

    /// The app in the sandbox: each visitor (a cookie) on a redis-server
    /// of their own, started by a supervisor with `settings`.
    pub fn sandboxed(settings: pipelab_engine::sandbox::Settings, limit_flags: &[&str]) -> App {
        let supervisor = pipelab_engine::sandbox::Supervisor::start(settings).expect("the sandbox's first redis-server");
        App::from_state(AppStateBuilder::sandboxed(supervisor, limits(limit_flags), PathBuf::from("/nonexistent/pipelab-web-dist"), Vec::new()).build())
    }

    fn from_state(state: AppState) -> App {
        App { router: router(state.clone()), state }
    }

    /// The raw response of `req` (headers and a body still to read: an
    /// event stream never ends).
    pub async fn respond_raw(&self, req: Request<Body>) -> axum::response::Response {
        self.router.clone().oneshot(req).await.expect("the router is infallible").map(axum::body::Body::new)
    }

    /// Sends `req` through the router; status, headers and body.
    pub async fn respond(&self, req: Request<Body>) -> (StatusCode, HeaderMap, Vec<u8>) {
        let res = self.respond_raw(req).await;
        let (parts, body) = res.into_parts();
        let body = axum::body::to_bytes(body, usize::MAX).await.expect("response body");
        (parts.status, parts.headers, body.to_vec())
    }

    /// Sends `req` through the router; status, content type and body.
    pub async fn send(&self, req: Request<Body>) -> (u16, String, Vec<u8>) {
        let (status, headers, body) = self.respond(req).await;
        let ctype = headers
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status.as_u16(), ctype, body)
    }

    /// POST `body` (raw bytes) to `path`; status and parsed JSON body.
    pub async fn post_raw(&self, path: &str, body: impl Into<Body>) -> (u16, Json) {
        let req = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(body.into())
            .unwrap();
        let (status, _, body) = self.send(req).await;
        (status, json(&body))
    }

    pub async fn post(&self, path: &str, body: &Json) -> (u16, Json) {
        self.post_raw(path, serde_json::to_vec(body).unwrap()).await
    }

    /// GET `path`: status, content type and body text.
    pub async fn get_text(&self, path: &str) -> (u16, String, String) {
        let req = Request::builder().uri(path).body(Body::empty()).unwrap();
        let (status, ctype, body) = self.send(req).await;
        (status, ctype, String::from_utf8(body).expect("UTF-8 body"))
    }

    pub async fn get(&self, path: &str) -> (u16, Json) {
        let (status, _, text) = self.get_text(path).await;
        (status, json(text.as_bytes()))
    }

    /// [`crate::common::assert_only_idle_pooled`] with this app's pool
    /// (its own count: `/metrics` is shared by every app of the process).
    pub async fn assert_only_idle_pooled(&self, redis: &RedisServer, max_idle: usize, secs: u64) {
        crate::common::assert_only_idle_pooled(async || { let p = &self.state.http.engine.shared().expect("a shared Redis").pool; p.idle_count() + p.shared_connections() }, redis, max_idle, secs).await;
    }
}

fn target(redis_url: &str) -> RedisTarget {
    RedisTarget::parse(redis_url).expect("test Redis URL")
}

/// The limits `pipelab serve` takes from `flags`, parsed by the same clap
/// definition (defaults for the rest).
fn limits(flags: &[&str]) -> Limits {
    let cmd = Limits::augment_args(clap::Command::new("pipelab-serve"));
    let matches = cmd
        .try_get_matches_from(std::iter::once("pipelab-serve").chain(flags.iter().copied()))
        .unwrap_or_else(|e| panic!("limit flags {flags:?}: {e}"));
    Limits::from_arg_matches(&matches).unwrap()
}

fn json(body: &[u8]) -> Json {
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}

/// The string value of reply JSON (`{"type": ..., "value": "..."}`).
pub fn reply_value(result: &Json) -> &Json {
    &result["reply"]["value"]
}
