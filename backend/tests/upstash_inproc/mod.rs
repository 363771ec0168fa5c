//! The Upstash-compatible surface in-process: `api_inproc`'s app with
//! tokens and Upstash settings, and requests as the SDKs send them.
#![allow(dead_code)]

use std::path::PathBuf;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request};
use pipelab_http::auth::Auth;
pub use pipelab_http::config::{UpstashConfig, UpstashSettings as Settings};
use serde_json::Value as Json;

pub use crate::api_inproc::{App, RedisServer};

pub const FULL: &str = "full-token";
pub const READONLY: &str = "readonly-token";
pub const OPERATOR: &str = "operator-token";

/// The app with no tokens, Upstash under the root.
pub fn open_app(redis: &RedisServer, limit_flags: &[&str]) -> App {
    app_with(redis, limit_flags, Auth::none(), UpstashConfig::default(), None)
}

/// The app with a full-access, a read-only and an operator token.
pub fn token_app(redis: &RedisServer) -> App {
    let auth = Auth::new(&[FULL], &[READONLY]).unwrap().with_operators(&[OPERATOR]).unwrap();
    app_with(redis, &[], auth, UpstashConfig::default(), None)
}

pub fn app_with(redis: &RedisServer, limit_flags: &[&str], auth: Auth, upstash: UpstashConfig, web_dir: Option<PathBuf>) -> App {
    let settings = Settings::from_config(&upstash).unwrap();
    let dir = web_dir.unwrap_or_else(|| PathBuf::from("/nonexistent/pipelab-web-dist"));
    App::configured(&redis.url, limit_flags, dir, move |state| state.configure(auth, settings))
}

/// An answer: status, headers and body.
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> Json {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

/// `method path` with `headers` and `body`, as an SDK sends it (JSON content type).
pub async fn call(app: &App, method: Method, path: &str, headers: &[(&str, &str)], body: impl Into<Body>) -> Answer {
    let mut req = Request::builder().method(method).uri(path).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = app.respond_raw(req.body(body.into()).unwrap()).await;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    // An event stream never ends: its body is left unread.
    let streaming = headers.get("content-type").is_some_and(|v| v == "text/event-stream");
    let body = if streaming { Vec::new() } else { axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap().to_vec() };
    Answer { status, headers, body }
}

pub async fn post(app: &App, path: &str, body: &str) -> Answer {
    call(app, Method::POST, path, &[], body.to_string()).await
}

/// Every entry of a pipeline answer has exactly one of `result` and `error`.
pub fn assert_entries(entries: &Json) {
    for e in entries.as_array().expect("an array of entries") {
        let o = e.as_object().expect("an entry is an object");
        assert_eq!(o.len(), 1, "one member: {e}");
        assert!(o.contains_key("result") ^ o.contains_key("error"), "{e}");
    }
}
