//! Rate limits, in-process against a
//! real Redis: a burst past a limit gets 429 with `Retry-After` in each
//! surface's shape and nothing reaches Redis, the client recovers after
//! waiting that long, a token is limited across addresses, and a request
//! bigger than a burst is a 413. Rates of 1 a second with bursts of a few:
//! no assertion depends on how fast the machine answers.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod upstash_inproc;

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request};
use pipelab_http::auth::Auth;
use pipelab_http::rate::{Rate, RateLimits};
use serde_json::{json, Value as Json};
use upstash_inproc::{App, RedisServer, Settings, UpstashConfig, FULL};

fn app(redis: &RedisServer, limits: RateLimits, auth: Auth) -> App {
    let settings = Settings::from_config(&UpstashConfig::default()).unwrap();
    App::configured(&redis.url, &[], "/nonexistent/pipelab-web-dist".into(), move |s| s.configure(auth, settings).with_rate(limits))
}

/// Status, `Retry-After` and JSON body of `method path` from `peer`.
async fn send(app: &App, peer: &str, token: Option<&str>, method: Method, path: &str, body: Body) -> (u16, Option<u64>, Json) {
    let mut req = Request::builder().method(method).uri(path).header("content-type", "application/json");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let mut req = req.body(body).unwrap();
    req.extensions_mut().insert(ConnectInfo(peer.parse::<SocketAddr>().unwrap()));
    let (status, headers, body) = app.respond(req).await;
    let retry = headers.get("retry-after").map(|v| v.to_str().unwrap().parse().unwrap());
    let json = if body.is_empty() { Json::Null } else { serde_json::from_slice(&body).unwrap_or(Json::Null) };
    (status.as_u16(), retry, json)
}

fn incr_batch(n: usize) -> String {
    json!({"commands": vec![["INCR", "counter"]; n]}).to_string()
}

async fn batch(app: &App, peer: &str, token: Option<&str>, n: usize) -> (u16, Option<u64>, Json) {
    send(app, peer, token, Method::POST, "/api/v1/batch", incr_batch(n).into()).await
}

fn counter(redis: &RedisServer) -> i64 {
    match redis.cmd_str(&["GET", "counter"]) {
        resp::Value::Bulk(b) => String::from_utf8(b).unwrap().parse().unwrap(),
        resp::Value::Null => 0,
        other => panic!("{other:?}"),
    }
}

const A: &str = "10.0.0.1:5000";
const B: &str = "10.0.0.2:5000";

#[tokio::test]
async fn a_burst_past_the_request_limit_is_429_then_recovers() {
    let redis = RedisServer::start();
    let app = app(&redis, RateLimits { requests: Some(Rate::new(1, 3)), ..RateLimits::off() }, Auth::none());
    let mut answers = Vec::new();
    for _ in 0..12 {
        answers.push(batch(&app, A, None, 1).await);
    }
    assert_eq!(answers[0].0, 200);
    let limited: Vec<_> = answers.iter().filter(|a| a.0 == 429).collect();
    assert!(!limited.is_empty(), "12 requests at once, 1/s with a burst of 3: {:?}", answers.iter().map(|a| a.0).collect::<Vec<_>>());
    assert!(answers.iter().all(|a| a.0 == 200 || a.0 == 429));
    for (_, retry, body) in &limited {
        assert!(matches!(retry, Some(1..=3)), "Retry-After {retry:?}");
        assert_eq!(body["error"]["code"], "rate_limited", "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("this client address"), "{body}");
    }
    // Only the batches let in reached Redis.
    assert_eq!(counter(&redis), answers.iter().filter(|a| a.0 == 200).count() as i64);
    // The Upstash routes answer in Upstash's shape; the probes are never limited.
    let (status, retry, body) = send(&app, A, None, Method::POST, "/", r#"["INCR","counter"]"#.into()).await;
    assert_eq!((status, retry.is_some()), (429, true), "{body}");
    assert!(body["error"].as_str().unwrap().starts_with("ERR rate limited"), "{body}");
    for probe in ["/healthz", "/readyz"] {
        assert_eq!(send(&app, A, None, Method::GET, probe, Body::empty()).await.0, 200, "{probe}");
    }
    // Another address has its own bucket.
    assert_eq!(batch(&app, B, None, 1).await.0, 200);
    // Waiting as long as Retry-After says lets the next one in.
    let (_, retry, _) = batch(&app, A, None, 1).await;
    tokio::time::sleep(Duration::from_secs(retry.expect("still limited"))).await;
    let (status, _, body) = batch(&app, A, None, 1).await;
    assert_eq!(status, 200, "after Retry-After: {body}");
    let metrics = String::from_utf8(app.respond(Request::get("/metrics").body(Body::empty()).unwrap()).await.2).unwrap();
    assert!(
        metrics.lines().any(|l| l.starts_with("pipelab_rate_limited_total{") && l.contains(r#"limit="requests""#)),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_token_is_limited_across_addresses() {
    let redis = RedisServer::start();
    let limits = RateLimits { requests: Some(Rate::new(1, 4)), ..RateLimits::off() };
    let app = app(&redis, limits, Auth::new(&[FULL, "other-token"], &[]).unwrap());
    // Two requests from each of two addresses: the token's burst of 4 is spent.
    for peer in [A, A, B, B] {
        assert_eq!(batch(&app, peer, Some(FULL), 1).await.0, 200, "{peer}");
    }
    // A third address, fresh as an address, is refused for the token.
    let (status, retry, body) = batch(&app, "10.0.0.3:1", Some(FULL), 1).await;
    assert_eq!((status, retry.is_some()), (429, true), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("this token"), "{body}");
    // Another token from the same address has a bucket of its own.
    assert_eq!(batch(&app, "10.0.0.3:1", Some("other-token"), 1).await.0, 200);
    // A wrong token is no token: limited by address only (and then 401).
    assert_eq!(batch(&app, "10.0.0.4:1", Some("wrong"), 1).await.0, 401);
}

#[tokio::test]
async fn commands_past_the_limit_are_429_and_not_sent() {
    let redis = RedisServer::start();
    let app = app(&redis, RateLimits { commands: Some(Rate::new(1, 20)), ..RateLimits::off() }, Auth::none());
    assert_eq!(batch(&app, A, None, 15).await.0, 200);
    // 5 left, refilled at 1 a second: 15 more wait for 10 s.
    let (status, retry, body) = batch(&app, A, None, 15).await;
    assert_eq!(status, 429, "{body}");
    assert!(retry.unwrap() >= 5, "{retry:?}");
    let upstash = json!(vec![["INCR", "counter"]; 15]).to_string();
    let (status, retry, body) = send(&app, A, None, Method::POST, "/pipeline", upstash.into()).await;
    assert_eq!((status, retry.is_some()), (429, true), "{body}");
    assert!(body["error"].as_str().unwrap().contains("commands per second"), "{body}");
    // More than the burst could never pass: 413, no Retry-After.
    let (status, retry, body) = batch(&app, B, None, 21).await;
    assert_eq!((status, retry, body["error"]["code"].clone()), (413, None, json!("too_many_commands")), "{body}");
    assert_eq!(counter(&redis), 15, "only the first batch ran");
}

#[tokio::test]
async fn body_bytes_past_the_limit_are_429_counted_or_chunked() {
    let redis = RedisServer::start();
    let app = app(&redis, RateLimits { bytes: Some(Rate::new(1, 2000)), ..RateLimits::off() }, Auth::none());
    let body = json!({"commands": [["SET", "k", "v".repeat(1100)]]}).to_string();
    let (status, _, json) = batch_body(&app, A, body.clone().into()).await;
    assert_eq!(status, 200, "{json}");
    let (status, retry, json) = batch_body(&app, A, body.clone().into()).await;
    assert_eq!((status, retry.is_some()), (429, true), "{json}");
    // Without Content-Length: counted as the body arrives, the same 429.
    let (status, retry, json) = batch_body(&app, A, chunked(&body)).await;
    assert_eq!((status, retry.is_some(), json["error"]["code"].clone()), (429, true, json!("rate_limited")), "{json}");
    // A body over the burst is a 413 at once.
    let big = json!({"commands": [["SET", "k", "v".repeat(2100)]]}).to_string();
    let (status, _, json) = batch_body(&app, B, big.into()).await;
    assert_eq!((status, json["error"]["code"].clone()), (413, json!("body_too_large")), "{json}");
}

async fn batch_body(app: &App, peer: &str, body: Body) -> (u16, Option<u64>, Json) {
    send(app, peer, None, Method::POST, "/api/v1/batch", body).await
}

/// A body in chunks, of unknown length (no `Content-Length`).
struct Chunks(std::collections::VecDeque<bytes::Bytes>);

impl http_body::Body for Chunks {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|b| Ok(http_body::Frame::data(b))))
    }
}

/// `body` in two chunks.
fn chunked(body: &str) -> Body {
    let half = body.len() / 2;
    let parts = [&body[..half], &body[half..]].map(|p| bytes::Bytes::copy_from_slice(p.as_bytes()));
    Body::new(Chunks(parts.into_iter().collect()))
}

#[test]
fn the_sandbox_preset_limits_every_kind() {
    let s = RateLimits::sandbox();
    assert!(s.requests.is_some() && s.commands.is_some() && s.bytes.is_some());
    assert_eq!(RateLimits::default(), RateLimits::off());
}

/// A sweep's repeats are taken from the command limit as they run: with
/// room for one run of each size and not three, the sweep answers 200 with
/// fewer runs per size (never a 413 or 429 for its repeats).
#[tokio::test]
async fn sweep_repeats_fit_the_command_limit() {
    let redis = RedisServer::start();
    let limits = RateLimits { commands: Some(Rate::new(1, 450)), ..RateLimits::off() };
    let app = app(&redis, limits, Auth::none());
    let body = json!({"command": ["SET", "sw:{i}", "x"], "total": 100, "batch_sizes": [10, 100], "repeats": 3}).to_string();
    let (status, _, res) = send(&app, A, None, Method::POST, "/api/v1/sweep", body.into()).await;
    assert_eq!(status, 200, "{res}");
    let runs: Vec<usize> = res["points"].as_array().unwrap().iter().map(|p| p["runs_us"].as_array().unwrap().len()).collect();
    // 200 taken up front, then room for 2 repeats of 100 (the 450 burst, 1/s refill).
    assert_eq!(runs.iter().sum::<usize>(), 4, "{runs:?}");
}
