//! Read-only tokens against a Redis that pipelab manages: their batches and
//! sessions run as the read-only ACL user (`pipelab::acl`), so Redis itself
//! refuses a write that slipped past pipelab's rules; and protected mode.

mod api_inproc;
mod common;

use std::path::PathBuf;
use std::time::Duration;

use api_inproc::{App, RedisServer};
use axum::body::Body;
use axum::http::{header, Method, Request};
use pipelab::acl::Users;
use pipelab::conn::RedisTarget;
use pipelab::exec::{execute, ExecOptions, Mode};
use resp::Value;
use serde_json::{json, Value as Json};

fn bulk(v: &Value) -> Option<String> {
    match v {
        Value::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// The same for a read-only token's batch (the read-only user may not run `INFO` either).
#[tokio::test]
async fn readonly_batches_get_the_servers_counts() {
    let (_redis, app) = readonly_app();
    let body = json!({"text": "GET k\nGET k", "server_stats": true}).to_string();
    let (status, _, body) = app.respond(readonly_request("/api/v1/batch", body)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let body: Json = serde_json::from_slice(&body).unwrap();
    assert!(body["summary"]["server"]["calls"].as_u64().is_some_and(|n| n >= 2), "{}", body["summary"]);
}

fn exec_opts() -> ExecOptions {
    ExecOptions { connect_timeout: Duration::from_secs(5), ..ExecOptions::default() }
}

/// The second wall: the executor called directly as the read-only user
/// (as if a write had slipped past pipelab's own checks) is refused by
/// Redis itself.
#[tokio::test]
async fn redis_refuses_what_slips_past_pipelab() {
    let users = Users::generate();
    let args = users.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let redis = RedisServer::start_with(&args);
    let base = RedisTarget::parse(&redis.url).unwrap();
    redis.cmd_str(&["SET", "k", "v"]);
    let ro = users.readonly.target(&base);
    let report = execute(&ro, &common::batch(Mode::Pipeline, &["GET k", "SET k w", "DEL k", "FLUSHALL", "EVAL \"return 1\" 0", "EVAL_RO \"return redis.call('GET', KEYS[1])\" 1 k"]), &exec_opts()).await.unwrap();
    let r: Vec<&Value> = report.results.iter().map(|r| r.reply.as_ref().unwrap()).collect();
    assert_eq!(r[0], &Value::Bulk(b"v".to_vec()));
    for (i, reply) in r.iter().enumerate().skip(1).take(4) {
        let msg = String::from_utf8_lossy(reply.error_message().unwrap_or_else(|| panic!("{i}: {reply:?}"))).into_owned();
        assert!(msg.starts_with("NOPERM"), "{i}: {msg}");
    }
    assert_eq!(r[5], &Value::Bulk(b"v".to_vec()));
    assert_eq!(bulk(&redis.cmd_str(&["GET", "k"])).as_deref(), Some("v"));
}

/// A redis-server with pipelab's users, and the app (no sandbox) with a
/// full token and the read-only token `ro-token` on it.
fn readonly_app() -> (RedisServer, App) {
    let users = Users::generate();
    let args = users.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let redis = RedisServer::start_with(&args);
    let app = App::configured(&redis.url, &[], PathBuf::from("/nonexistent"), move |s| {
        s.configure(pipelab::api::auth::Auth::new(&["full-token"], &["ro-token"]).unwrap(), Default::default()).with_users(Some(&users))
    });
    (redis, app)
}

/// POST `body` to `path` with the read-only token.
fn readonly_request(path: &str, body: String) -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::AUTHORIZATION, "Bearer ro-token")
        .body(Body::from(body))
        .unwrap()
}

/// Protected mode: a public address with no token and no --sandbox is
/// refused at start-up, in one line naming the three ways out.
#[test]
fn protected_mode_refuses_to_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(["serve", "--listen", "0.0.0.0:0", "--redis", "redis://127.0.0.1:1"])
        .env_remove("PIPELAB_TOKENS")
        .env_remove("PIPELAB_SANDBOX")
        .env_remove("PIPELAB_ALLOW_UNAUTHENTICATED")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    for flag in ["--token", "--sandbox", "--allow-unauthenticated"] {
        assert!(lines[0].contains(flag), "{stderr}");
    }
}

/// A read-only token's batch runs on the read-only user's pool (seen in
/// Redis's CLIENT LIST: the pooled connection's user).
#[tokio::test]
async fn readonly_tokens_run_as_the_readonly_user() {
    let (redis, app) = readonly_app();
    redis.cmd_str(&["SET", "k", "v"]);
    let (status, _, body) = app.respond(readonly_request("/api/v1/batch", r#"{"text": "GET k"}"#.into())).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let body: Json = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["results"][0]["reply"]["value"], "v");
    let clients = bulk(&redis.cmd_str(&["CLIENT", "LIST"])).unwrap();
    assert!(clients.lines().any(|l| l.contains("user=pipelab-readonly")), "{clients}");
}

/// A read-only token's session runs as the read-only user too.
#[tokio::test]
async fn readonly_sessions_run_as_the_readonly_user() {
    let (redis, app) = readonly_app();
    let req = readonly_request;
    let (status, _, body) = app.respond(req("/api/v1/sessions", "{}".into())).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let id = serde_json::from_slice::<Json>(&body).unwrap()["id"].as_str().unwrap().to_string();
    let before = bulk(&redis.cmd_str(&["CLIENT", "LIST"])).unwrap();
    let session: Vec<&str> = before.lines().filter(|l| !l.contains("cmd=client|list")).collect();
    assert!(session.len() == 1 && session[0].contains("user=pipelab-readonly"), "{before}");
    let (status, _, body) = app.respond(req("/api/v1/batch", json!({"session": id, "commands": [["GET", "k"]]}).to_string())).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}
