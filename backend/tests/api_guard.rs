//! Defects found by probing the API as an attacker would, each
//! checked in-process (`api_inproc`: `pipelab_server::server::router` + `oneshot`) against
//! a real redis-server: cross-site requests and DNS rebinding (1), an
//! unbounded `watch` (3), a reply whose JSON is six times its size (4),
//! HTTP-layer errors in the API's error shape (11), security headers (12).

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{json, Value as Json};

use api_inproc::App;
use common::RedisServer;
use pipelab_http::guard::GuardConfig;

/// The app for `redis`, listening (as far as the guards know) on 127.0.0.1:8080.
fn app(redis: &RedisServer, limit_args: &[&str], guard: GuardConfig) -> App {
    App::with_guard(&redis.url, limit_args, &guard)
}

struct Res {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Res {
    fn json(&self) -> Json {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_default().to_string()
    }
}

async fn send(app: &App, req: Request<Body>) -> Res {
    let (status, headers, body) = app.respond(req).await;
    Res { status, headers, body }
}

fn post(path: &str, headers: &[(&str, &str)], body: &Json) -> Request<Body> {
    let mut b = Request::post(path);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Body::from(serde_json::to_vec(body).unwrap())).unwrap()
}

const JSON: (&str, &str) = ("content-type", "application/json");

fn flushall() -> Json {
    json!({"commands": [["SET", "victim", "1"]]})
}

#[tokio::test]
async fn cross_site_requests_and_rebound_hosts_are_refused() {
    let redis = RedisServer::start();
    let app = app(&redis, &[], GuardConfig::default());

    // What a page of another site can send without a preflight: refused, nothing runs.
    for ct in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let res = send(&app, post("/api/v1/batch", &[("content-type", ct)], &flushall())).await;
        assert_eq!(res.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ct}");
        assert_eq!(res.code(), "unsupported_media_type");
        assert!(res.json()["error"]["message"].as_str().unwrap().contains("Content-Type"), "{}", res.json());
        assert_eq!(res.json()["error"]["field"], "header Content-Type");
    }
    let res = send(&app, post("/api/v1/compare", &[], &flushall())).await;
    assert_eq!(res.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "no Content-Type at all");
    let res = send(&app, post("/api/v1/sweep", &[("content-type", "text/plain")], &json!({}))).await;
    assert_eq!(res.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);

    // JSON from another origin (after a preflight pipelab never answers, or by a lax browser).
    let res = send(&app, post("/api/v1/batch", &[JSON, ("origin", "https://evil.example"), ("host", "127.0.0.1:8080")], &flushall())).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.code(), "forbidden_origin");
    let res = send(&app, post("/api/v1/batch", &[JSON, ("origin", "null")], &flushall())).await;
    assert_eq!(res.code(), "forbidden_origin", "a sandboxed frame or file:// page");
    let res = send(&app, post("/api/v1/batch", &[JSON, ("sec-fetch-site", "cross-site")], &flushall())).await;
    assert_eq!(res.code(), "forbidden_origin");

    // DNS rebinding: the page is "same-origin", but the Host is the attacker's name.
    let res = send(
        &app,
        post("/api/v1/batch", &[JSON, ("host", "evil.example:8080"), ("origin", "http://evil.example:8080"), ("sec-fetch-site", "same-origin")], &flushall()),
    )
    .await;
    assert_eq!(res.status, StatusCode::MISDIRECTED_REQUEST);
    assert_eq!(res.code(), "forbidden_host");
    let res = send(&app, Request::get("/api/v1/info").header("host", "evil.example").body(Body::empty()).unwrap()).await;
    assert_eq!(res.code(), "forbidden_host", "reading is refused too");
    assert_eq!(redis.cmd_str(&["EXISTS", "victim"]), resp::Value::Integer(0), "no refused batch ran");

    // The page itself, curl-like clients, and charset parameters pass.
    for headers in [
        vec![JSON, ("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:8080"), ("sec-fetch-site", "same-origin")],
        vec![JSON, ("host", "localhost:9000"), ("origin", "http://localhost:9000")],
        vec![("content-type", "application/json; charset=utf-8"), ("host", "[::1]:8080")],
        vec![JSON],
    ] {
        let res = send(&app, post("/api/v1/batch", &headers, &flushall())).await;
        assert_eq!(res.status, StatusCode::OK, "{headers:?}: {}", String::from_utf8_lossy(&res.body));
    }
    // A navigation from another site to the page is not refused.
    let res = send(&app, Request::get("/").header("sec-fetch-site", "cross-site").body(Body::empty()).unwrap()).await;
    assert_ne!(res.status, StatusCode::FORBIDDEN);

    // Upstash's path style: a GET runs a command, so a cross-site one (an
    // `<img src="http://127.0.0.1:8080/flushall">`) is refused as a POST is.
    redis.cmd_str(&["SET", "kept", "1"]);
    for headers in [[("sec-fetch-site", "cross-site")], [("origin", "https://evil.example")]] {
        let mut req = Request::get("/flushall").header("host", "127.0.0.1:8080");
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let res = send(&app, req.body(Body::empty()).unwrap()).await;
        assert_eq!((res.status, res.code()), (StatusCode::FORBIDDEN, "forbidden_origin".to_string()), "{headers:?}");
    }
    assert_eq!(redis.cmd_str(&["GET", "kept"]), resp::Value::Bulk(b"1".to_vec()), "nothing ran");
    let res = send(&app, Request::get("/get/kept").header("sec-fetch-site", "same-origin").body(Body::empty()).unwrap()).await;
    assert_eq!(res.status, StatusCode::OK, "{}", String::from_utf8_lossy(&res.body));
    // A page or asset of the playground stays open to a cross-site GET.
    let res = send(&app, Request::get("/assets/app.js").header("sec-fetch-site", "cross-site").body(Body::empty()).unwrap()).await;
    assert_ne!(res.status, StatusCode::FORBIDDEN);

    // What an operator allows.
    let allowed = GuardConfig { allowed_origins: vec!["https://team.example".into()], allowed_hosts: vec!["pipelab.team.example".into()] };
    let app = crate::app(&redis, &[], allowed);
    let res = send(
        &app,
        post(
            "/api/v1/batch",
            &[JSON, ("host", "pipelab.team.example"), ("origin", "https://team.example"), ("sec-fetch-site", "cross-site")],
            &flushall(),
        ),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", String::from_utf8_lossy(&res.body));
}

#[tokio::test]
async fn watch_keys_are_capped_in_number_and_bytes() {
    let redis = RedisServer::start();
    let app = app(&redis, &["--max-watch-keys", "3", "--max-arg-bytes", "100"], GuardConfig::default());
    let batch = |watch: Json| json!({"commands": [["INCR", "n"]], "mode": "transaction", "watch": watch});
    let res = send(&app, post("/api/v1/batch", &[JSON], &batch(json!(["a", "b", "c", "d"])))).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{}", res.json());
    assert_eq!(res.code(), "too_many_watch_keys");
    assert_eq!(res.json()["error"]["field"], "watch");
    let long = "k".repeat(60);
    let res = send(&app, post("/api/v1/batch", &[JSON], &batch(json!([long, long])))).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "120 bytes of keys past 100: {}", res.json());
    assert_eq!(res.json()["error"]["field"], "watch");
    assert_eq!(redis.cmd_str(&["EXISTS", "n"]), resp::Value::Integer(0));
    let res = send(&app, post("/api/v1/batch", &[JSON], &batch(json!(["a", "b", "c"])))).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.json());

    // The default is 1000.
    let app = crate::app(&redis, &[], GuardConfig::default());
    let keys: Vec<String> = (0..1001).map(|i| format!("w{i}")).collect();
    let res = send(&app, post("/api/v1/batch", &[JSON], &batch(json!(keys)))).await;
    assert_eq!(res.code(), "too_many_watch_keys");
}

#[tokio::test]
async fn a_reply_is_counted_by_its_json_against_the_reply_limit() {
    let redis = RedisServer::start();
    // 400 KB of NUL bytes: 400 KB of RESP, 2.4 MB of JSON (`\u0000` each).
    redis.cmd_str(&["SETRANGE", "zeros", "399999", "\0"]);
    let app = app(&redis, &["--max-reply-bytes", "1000000"], GuardConfig::default());
    let res = send(&app, post("/api/v1/batch", &[JSON], &json!({"commands": [["GET", "zeros"], ["PING"]]}))).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.body.len() < 1_000_000, "a {} byte response", res.body.len());
    let report = res.json();
    assert_eq!(report["results"][0]["status"], "unknown", "{}", report["results"][0]);
    assert_eq!(report["results"][1]["status"], "unknown", "written in the same round trip, its reply never read");
    assert!(report["connection_error"].as_str().unwrap().contains("reply limit"), "{}", report["connection_error"]);

    // The same in a streamed report (more than one group of results) and a transaction.
    let mut commands = vec![json!(["PING"]); 600];
    commands.push(json!(["GET", "zeros"]));
    let res = send(&app, post("/api/v1/batch", &[JSON], &json!({"commands": commands}))).await;
    assert!(res.body.len() < 1_000_000, "a {} byte response", res.body.len());
    assert_eq!(res.json()["results"][600]["status"], "unknown");
    let res = send(&app, post("/api/v1/batch", &[JSON], &json!({"commands": [["GET", "zeros"]], "mode": "transaction"}))).await;
    assert!(res.body.len() < 1_000_000, "a {} byte response", res.body.len());
    assert_eq!(res.json()["results"][0]["status"], "unknown");

    // Below the limit nothing changes; `"results": "none"` keeps nothing, so counts nothing.
    let res = send(&app, post("/api/v1/batch", &[JSON], &json!({"commands": [["GET", "zeros"]], "results": "none"}))).await;
    assert_eq!(res.json()["summary"]["ok"], 1);
    redis.cmd_str(&["SET", "small", "\0\0\0"]);
    let res = send(&app, post("/api/v1/batch", &[JSON], &json!({"commands": [["GET", "small"]]}))).await;
    assert_eq!(res.json()["results"][0]["reply"]["value"], "\0\0\0");

    // /compare with include_results counts each run's results the same
    // way; without them nothing goes into the response, so nothing counts.
    let compare = |include_results| json!({"commands": [["GET", "zeros"], ["PING"]], "include_results": include_results});
    let res = send(&app, post("/api/v1/compare", &[JSON], &compare(true))).await;
    assert_eq!(res.status, StatusCode::OK);
    assert!(res.body.len() < 1_000_000, "a {} byte response", res.body.len());
    let runs = res.json()["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 4, "sequential, pipeline, transaction, auto");
    for run in &runs {
        assert_eq!(run["results"][0]["status"], "unknown", "{}: {}", run["mode"], run["results"][0]);
        assert_eq!(run["summary"]["ok"], 0, "{}", run["mode"]);
    }
    let res = send(&app, post("/api/v1/compare", &[JSON], &compare(false))).await;
    for run in res.json()["runs"].as_array().unwrap() {
        assert_eq!(run["summary"]["ok"], 2, "{}: {}", run["mode"], run["summary"]);
    }
}

#[tokio::test]
async fn http_layer_errors_have_the_api_error_shape() {
    let redis = RedisServer::start();
    let app = app(&redis, &[], GuardConfig::default());
    let long = format!("/api/v1/info?{}", "x".repeat(9000));
    let res = send(&app, Request::get(long.as_str()).body(Body::empty()).unwrap()).await;
    assert_eq!(res.status, StatusCode::URI_TOO_LONG);
    assert_eq!(res.code(), "uri_too_long");
    let big = "y".repeat(20_000);
    let req = Request::get("/api/v1/info").header("x-a", &big).header("x-b", &big).body(Body::empty()).unwrap();
    let res = send(&app, req).await;
    assert_eq!(res.status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    assert_eq!(res.code(), "headers_too_large");
    let res = send(&app, Request::get("/api/v1/unknown").body(Body::empty()).unwrap()).await;
    assert_eq!((res.status, res.code().as_str()), (StatusCode::NOT_FOUND, "not_found"));
    let res = send(&app, Request::delete("/api/v1/batch").body(Body::empty()).unwrap()).await;
    assert_eq!((res.status, res.code().as_str()), (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"));
}

#[tokio::test]
async fn responses_carry_the_security_headers() {
    let redis = RedisServer::start();
    let app = app(&redis, &[], GuardConfig::default());
    // The page gets its own policy; a data answer (JSON, refusals
    // included, or a live batch's NDJSON) one that loads nothing.
    for (req, ctype, policy) in [
        (Request::get("/").body(Body::empty()).unwrap(), "text/", "script-src 'self' 'wasm-unsafe-eval'"),
        (Request::get("/api/v1/info").body(Body::empty()).unwrap(), "application/json", "default-src 'none'"),
        (post("/api/v1/batch", &[("content-type", "text/plain")], &json!({})), "application/json", "default-src 'none'"),
        (post("/api/v1/batches", &[("content-type", "application/json")], &json!({"commands": [["PING"]]})), "application/x-ndjson", "default-src 'none'"),
    ] {
        let res = send(&app, req).await;
        let got = res.headers.get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        assert!(got.starts_with(ctype), "content type {got:?}, expected {ctype}");
        let csp = res.headers.get("content-security-policy").expect("CSP").to_str().unwrap();
        assert!(csp.contains(policy), "{csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert_eq!(res.headers["x-content-type-options"], "nosniff");
        assert_eq!(res.headers["x-frame-options"], "DENY");
    }
}
