//! A sandbox visitor for the in-process app (`api_inproc`): a client that
//! keeps the cookie the server sets and comes from an address of its own,
//! and what the sandbox tests read beside its answers (the visitor's
//! redis-server, one command on its socket, the replies of a report).
#![allow(dead_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, Method, Request};
use pipelab_engine::sandbox::{Child, Supervisor, VisitorId};
use resp::Value;
use serde_json::{json, Value as Json};

use super::api_inproc::App;

pub fn sandbox(app: &App) -> &Arc<Supervisor> {
    app.state.http.engine.sandbox().expect("the sandbox")
}

/// One client: its cookie (once set) and the address it comes from.
#[derive(Clone)]
pub struct Visitor {
    pub cookie: Option<String>,
    pub from: SocketAddr,
}

impl Visitor {
    pub fn at(ip: &str) -> Visitor {
        Visitor { cookie: None, from: SocketAddr::new(ip.parse().unwrap(), 40000) }
    }

    /// Status, JSON body and headers; keeps the cookie the server sets.
    pub async fn send(&mut self, app: &App, method: Method, path: &str, body: Option<&Json>) -> (u16, Json, HeaderMap) {
        let mut req = Request::builder().method(method).uri(path).header(header::CONTENT_TYPE, "application/json");
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c.as_str());
        }
        let body = body.map_or_else(Body::empty, |b| Body::from(serde_json::to_vec(b).unwrap()));
        let mut req = req.body(body).unwrap();
        req.extensions_mut().insert(ConnectInfo(self.from));
        let (status, headers, body) = app.respond(req).await;
        if let Some(set) = headers.get(header::SET_COOKIE) {
            self.cookie = Some(set.to_str().unwrap().split(';').next().unwrap().to_string());
        }
        (status.as_u16(), serde_json::from_slice(&body).unwrap_or(Json::Null), headers)
    }

    pub async fn post(&mut self, app: &App, path: &str, body: &Json) -> (u16, Json) {
        let (s, r, _) = self.send(app, Method::POST, path, Some(body)).await;
        (s, r)
    }

    pub async fn batch(&mut self, app: &App, text: &str) -> (u16, Json) {
        self.post(app, "/api/v1/batch", &json!({"text": text})).await
    }

    pub async fn commands(&mut self, app: &App, commands: Json) -> (u16, Json) {
        self.post(app, "/api/v1/batch", &json!({"commands": commands})).await
    }

    pub fn id(&self) -> VisitorId {
        VisitorId::parse(self.cookie.as_ref().expect("a cookie").split_once('=').unwrap().1).expect("an id")
    }

    pub fn child(&self, app: &App) -> Arc<Child> {
        sandbox(app).child_of(&self.id()).expect("a redis-server of their own")
    }
}

pub fn replies(report: &Json) -> Vec<Json> {
    report["results"].as_array().unwrap_or_else(|| panic!("results: {report}")).iter().map(|r| r["reply"].clone()).collect()
}

/// One command on `child`'s socket, outside pipelab.
pub fn direct(child: &Child, argv: &[&str]) -> Value {
    let socket = child.target().to_string();
    let path = socket.strip_prefix("unix://").expect("a unix socket");
    let mut s = std::os::unix::net::UnixStream::connect(path).expect("the child's socket");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut out = Vec::new();
    resp::encode_command(argv.iter().map(|a| a.as_bytes()), &mut out);
    s.write_all(&out).unwrap();
    super::common::read_one(&mut s)
}

/// Waits up to `within` for `cond`.
pub async fn until(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cond()
}
