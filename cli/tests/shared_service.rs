//! The shared service as an attacker tries it, in-process (`api_inproc`:
//! `pipelab_server::server::router` + `oneshot`) against a real redis-server: every
//! state-changing route under one cross-site rule, and read-only tokens
//! that fail closed.

#[path = "../../backend/tests/api_inproc/mod.rs"]
mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
#[path = "../../backend/tests/upstash_inproc/mod.rs"]
mod upstash_inproc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use pipelab_http::auth::Auth;
use pipelab_http::guard::{GuardConfig, Policy};
use serde_json::{json, Value as Json};

use api_inproc::App;
use common::RedisServer;
use upstash_inproc::{Settings, UpstashConfig};

/// The app listening (as far as the guards know) on 127.0.0.1:8080, with
/// `--upstash-cors-origin cors` (none if empty) and tokens `auth`.
fn app(redis: &RedisServer, cors: &[&str], auth: Auth) -> App {
    let upstash = Settings::from_config(&UpstashConfig { cors_origins: cors.iter().map(|s| s.to_string()).collect(), ..Default::default() }).unwrap();
    App::configured(&redis.url, &[], "/nonexistent/pipelab-web-dist".into(), move |state| {
        state.with_guard(Policy::new(&GuardConfig::default(), Some("127.0.0.1:8080".parse().unwrap()))).configure(auth, upstash)
    })
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Request<Body> {
    let mut b = Request::builder().method(method).uri(path).header("host", "127.0.0.1:8080");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(Body::from(body.to_string())).unwrap()
}

/// Every route that changes something, with a body that would write `victim`.
const STATE_CHANGING: &[(&str, &str, &str)] = &[
    ("POST", "/api/v1/batch", r#"{"commands":[["SET","victim","1"]]}"#),
    ("POST", "/api/v1/batches", r#"{"commands":[["SET","victim","1"]]}"#),
    ("POST", "/api/v1/batches/0123456789abcdef0123456789abcdef/cancel", ""),
    ("POST", "/api/v1/sessions", "{}"),
    ("POST", "/api/v1/compare", r#"{"commands":[["SET","victim","1"]]}"#),
    ("POST", "/api/v1/sweep", r#"{"command":["SET","victim","1"],"batch_sizes":[1],"total":1}"#),
    ("POST", "/", r#"["SET","victim","1"]"#),
    ("POST", "/pipeline", r#"[["SET","victim","1"]]"#),
    ("POST", "/multi-exec", r#"[["SET","victim","1"]]"#),
    ("POST", "/set/victim/1", ""),
    ("PUT", "/set/victim/1", ""),
    ("POST", "/subscribe/news", ""),
];

/// A page of another site can send these without asking first (no preflight).
const SIMPLE_CROSS_SITE: &[&[(&str, &str)]] = &[
    &[("origin", "https://evil.example"), ("content-type", "text/plain")],
    &[("origin", "https://evil.example"), ("content-type", "application/x-www-form-urlencoded")],
    &[("origin", "https://evil.example")],
    &[("sec-fetch-site", "cross-site"), ("content-type", "text/plain")],
    &[("origin", "https://evil.example"), ("sec-fetch-site", "cross-site"), ("content-type", "multipart/form-data; boundary=x")],
];

async fn refused_everywhere(app: &App, redis: &RedisServer) {
    for (method, path, body) in STATE_CHANGING {
        for headers in SIMPLE_CROSS_SITE {
            let (status, _, answer) = app.respond(request(method, path, headers, body)).await;
            assert!(
                matches!(status, StatusCode::FORBIDDEN | StatusCode::UNSUPPORTED_MEDIA_TYPE),
                "{method} {path} {headers:?}: {status} {}",
                String::from_utf8_lossy(&answer)
            );
        }
    }
    assert_eq!(redis.cmd_str(&["EXISTS", "victim"]), resp::Value::Integer(0), "a refused request ran");
    assert!(app.state.http.engine.sessions.is_empty(), "a refused request opened a session");
    // A cross-site GET that subscribes (an EventSource of another site) or runs a command.
    for path in ["/subscribe/news", "/psubscribe/n*", "/set/victim/1"] {
        for headers in SIMPLE_CROSS_SITE {
            let res = app.respond_raw(request("GET", path, headers, "")).await;
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "GET {path} {headers:?}");
        }
    }
    assert_eq!(redis.cmd_str(&["EXISTS", "victim"]), resp::Value::Integer(0));
}

#[tokio::test]
async fn every_state_changing_route_refuses_a_simple_cross_site_request() {
    let redis = RedisServer::start();
    refused_everywhere(&app(&redis, &[], Auth::none()), &redis).await;
}

/// `--upstash-cors-origin '*'` lets any page call the Upstash routes after a
/// preflight (JSON, or a token in `Authorization`), not send them simple
/// requests, and it opens nothing of `/api/v1`.
#[tokio::test]
async fn upstash_cors_for_any_origin_opens_neither_the_api_nor_simple_requests() {
    let redis = RedisServer::start();
    let app = app(&redis, &["*"], Auth::none());
    refused_everywhere(&app, &redis).await;

    let evil_json = [("origin", "https://evil.example"), ("content-type", "application/json")];
    for (path, body) in [("/api/v1/batch", r#"{"commands":[["SET","victim","1"]]}"#), ("/api/v1/batches", r#"{"commands":[["SET","victim","1"]]}"#)] {
        let (status, _, answer) = app.respond(request("POST", path, &evil_json, body)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {}", String::from_utf8_lossy(&answer));
    }
    assert_eq!(redis.cmd_str(&["EXISTS", "victim"]), resp::Value::Integer(0));

    // What the operator allowed: a preflighted request from any page, to the Upstash routes.
    let (status, _, answer) = app.respond(request("POST", "/", &evil_json, r#"["SET","allowed","1"]"#)).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer));
    // Clients that are not browsers (curl: no Origin, a form content type) are unchanged.
    let (status, _, answer) = app.respond(request("POST", "/", &[("content-type", "application/x-www-form-urlencoded")], r#"["SET","curl","1"]"#)).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer));
    let res = app.respond_raw(request("GET", "/subscribe/news", &[], "")).await;
    assert_eq!(res.status(), StatusCode::OK);
}

/// The page itself (same origin) still uses every route.
#[tokio::test]
async fn the_page_itself_passes() {
    let redis = RedisServer::start();
    let app = app(&redis, &[], Auth::none());
    let same = [("origin", "http://127.0.0.1:8080"), ("sec-fetch-site", "same-origin"), ("content-type", "application/json")];
    let (status, _, answer) = app.respond(request("POST", "/api/v1/batches", &same, r#"{"commands":[["SET","mine","1"]]}"#)).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&answer));
    let (status, _, answer) = app.respond(request("POST", "/api/v1/sessions", &same, "")).await;
    assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&answer));
    let id = serde_json::from_slice::<Json>(&answer).unwrap()["id"].as_str().unwrap().to_string();
    let (status, _, _) = app.respond(request("DELETE", &format!("/api/v1/sessions/{id}"), &same, "")).await;
    assert!(status.is_success(), "{status}");
    let res = app.respond_raw(request("GET", "/subscribe/news", &[("sec-fetch-site", "same-origin")], "")).await;
    assert_eq!(res.status(), StatusCode::OK);
}

// Read-only tokens.

fn bulk(v: &resp::Value) -> Option<String> {
    match v {
        resp::Value::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// POST `body` to `path` with the read-only token `ro-token`.
fn readonly_request(path: &str, body: String) -> Request<Body> {
    Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/json")
        .header("authorization", "Bearer ro-token")
        .body(Body::from(body))
        .unwrap()
}

fn tokens() -> Auth {
    Auth::new(&["full-token"], &["ro-token"]).unwrap()
}

/// A Redis that renamed its writes (`rename-command`): the command table
/// it reports knows SET, CONFIG and FLUSHALL by their own names, not by
/// the new ones, so nothing says `xset` only reads. Refused to a read-only
/// token, saying why, on `/api/v1/batch` and the Upstash routes; nothing runs.
#[tokio::test]
async fn a_command_the_table_does_not_know_is_refused_to_a_readonly_token() {
    let redis = RedisServer::start_with(&["--rename-command", "SET", "xset", "--rename-command", "CONFIG", "xconfig", "--rename-command", "FLUSHALL", "xflushall"]);
    redis.cmd_str(&["xset", "kept", "1"]);
    let app = app(&redis, &[], tokens());
    for (i, cmd) in [json!(["xset", "k", "v"]), json!(["xconfig", "SET", "maxmemory", "1"]), json!(["xflushall"])].into_iter().enumerate() {
        let body = json!({"commands": [["GET", "kept"], cmd]}).to_string();
        let (status, _, answer) = app.respond(readonly_request("/api/v1/batch", body)).await;
        let answer: Json = serde_json::from_slice(&answer).unwrap();
        assert_eq!(status, StatusCode::FORBIDDEN, "{i}: {answer}");
        assert_eq!(answer["error"]["code"], "readonly_token", "{answer}");
        assert_eq!(answer["error"]["field"], "commands[1]", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("command table does not know it") && message.contains("rename-command"), "{message}");
        let upstash = Request::builder().method("POST").uri("/").header("authorization", "Bearer ro-token").body(Body::from(cmd.to_string())).unwrap();
        let (status, _, answer) = app.respond(upstash).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{}", String::from_utf8_lossy(&answer));
        assert!(String::from_utf8_lossy(&answer).contains("NOPERM"), "{}", String::from_utf8_lossy(&answer));
    }
    assert_eq!(redis.cmd_str(&["EXISTS", "k"]), resp::Value::Integer(0));
    assert_eq!(redis.cmd_str(&["GET", "kept"]), resp::Value::Bulk(b"1".to_vec()));
    let maxmemory = redis.cmd_str(&["xconfig", "GET", "maxmemory"]);
    assert_eq!(maxmemory, resp::Value::Array(vec![resp::Value::Bulk(b"maxmemory".to_vec()), resp::Value::Bulk(b"0".to_vec())]));
    // A full token runs the renamed command as sent.
    let full = Request::builder().method("POST").uri("/api/v1/batch").header("content-type", "application/json").header("authorization", "Bearer full-token");
    let (status, _, _) = app.respond(full.body(Body::from(json!({"commands": [["xset", "k", "v"]]}).to_string())).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(redis.cmd_str(&["GET", "k"]), resp::Value::Bulk(b"v".to_vec()));
}

/// A redis-server with the shared service's ACL users (as the embedded one
/// has them), and the app with a full and a read-only token on it.
fn readonly_app() -> (RedisServer, App) {
    let users = pipelab_engine::acl::Users::generate(pipelab_engine::commands::Allow::default());
    let args = users.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let redis = RedisServer::start_with(&args);
    // What the embedded Redis does once started: readonly commands outside `@read` by name.
    let table = pipelab_engine::commands::Table::from_reply(&redis.cmd_str(&["COMMAND"]), None).unwrap();
    for grant in pipelab_engine::acl::grants(&table) {
        let grant: Vec<&str> = grant.iter().map(String::as_str).collect();
        assert_eq!(redis.cmd_str(&grant), resp::Value::Simple(b"OK".to_vec()));
    }
    let base = pipelab_engine::conn::RedisTarget::parse(&redis.url).unwrap();
    let app = App::configured(&redis.url, &[], "/nonexistent".into(), move |s| s.configure(tokens(), Default::default()).with_users(&users, base));
    (redis, app)
}

/// A transaction of reads works for a read-only token: transaction mode,
/// MULTI/EXEC written by hand, Upstash's `/multi-exec`; as its Redis user.
#[tokio::test]
async fn a_readonly_token_runs_a_transaction_of_reads() {
    let (redis, app) = readonly_app();
    redis.cmd_str(&["SET", "k", "v"]);
    let body = json!({"commands": [["GET", "k"], ["EXISTS", "k"]], "mode": "transaction", "watch": ["k"]}).to_string();
    let (status, _, answer) = app.respond(readonly_request("/api/v1/batch", body)).await;
    let answer: Json = serde_json::from_slice(&answer).unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["transaction"]["status"], "committed", "{answer}");
    assert_eq!(answer["results"][0]["reply"]["value"], "v", "{answer}");
    let body = json!({"commands": [["MULTI"], ["GET", "k"], ["EXEC"]], "mode": "pipeline"}).to_string();
    let (status, _, answer) = app.respond(readonly_request("/api/v1/batch", body)).await;
    let answer: Json = serde_json::from_slice(&answer).unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["results"][2]["reply"]["value"][0]["value"], "v", "{answer}");
    let upstash = Request::builder().method("POST").uri("/multi-exec").header("authorization", "Bearer ro-token").body(Body::from(r#"[["GET","k"]]"#)).unwrap();
    let (status, _, answer) = app.respond(upstash).await;
    assert_eq!((status, String::from_utf8_lossy(&answer).into_owned()), (StatusCode::OK, r#"[{"result":"v"}]"#.to_string()));
    // Still no write, in a transaction or out.
    let body = json!({"commands": [["SET", "k", "w"]], "mode": "transaction"}).to_string();
    let (status, _, _) = app.respond(readonly_request("/api/v1/batch", body)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(redis.cmd_str(&["GET", "k"]), resp::Value::Bulk(b"v".to_vec()));
}

/// The server's `readonly` flag decides what a read-only token runs, not
/// the key specs: Redis 8 flags its vector-set reads (VCARD, VSIM)
/// `readonly` but gives their key spec `RW update`. They run; VADD does not.
#[tokio::test]
async fn a_readonly_token_runs_what_the_server_flags_readonly_whatever_its_key_specs() {
    let (redis, app) = readonly_app();
    if !common::has_command(&redis, "VADD") {
        common::lacks("a_readonly_token_runs_what_the_server_flags_readonly_whatever_its_key_specs", "vector sets (VADD, VCARD, VSIM)");
        return;
    }
    for (x, y, name) in [("1", "0", "a"), ("0", "1", "b")] {
        assert_eq!(redis.cmd_str(&["VADD", "v", "VALUES", "2", x, y, name]), resp::Value::Integer(1));
    }
    let body = json!({"commands": [["VCARD", "v"], ["VSIM", "v", "ELE", "a"], ["VDIM", "v"]]}).to_string();
    let (status, _, answer) = app.respond(readonly_request("/api/v1/batch", body)).await;
    let answer: Json = serde_json::from_slice(&answer).unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["results"][0]["reply"]["value"], 2, "{answer}");
    assert_eq!(answer["results"][1]["reply"]["value"][0]["value"], "a", "{answer}");
    assert_eq!(answer["results"][2]["reply"]["value"], 2, "{answer}");
    let body = json!({"commands": [["VCARD", "v"], ["VADD", "v", "VALUES", "2", "1", "1", "c"]]}).to_string();
    let (status, _, answer) = app.respond(readonly_request("/api/v1/batch", body)).await;
    let answer: Json = serde_json::from_slice(&answer).unwrap();
    let refusal = (status, answer["error"]["code"].as_str(), answer["error"]["field"].as_str());
    assert_eq!(refusal, (StatusCode::FORBIDDEN, Some("readonly_token"), Some("commands[1]")), "{answer}");
    assert_eq!(redis.cmd_str(&["VCARD", "v"]), resp::Value::Integer(2), "nothing sent");
}

/// A read-only token's batch runs on the read-only user's pool (seen in
/// Redis's CLIENT LIST: the pooled connection's user), with the server's
/// counts (`summary.server`: the read-only user may not run `INFO`).
#[tokio::test]
async fn readonly_tokens_run_as_the_readonly_user() {
    let (redis, app) = readonly_app();
    redis.cmd_str(&["SET", "k", "v"]);
    let body = json!({"text": "GET k\nGET k", "server_stats": true}).to_string();
    let (status, _, body) = app.respond(readonly_request("/api/v1/batch", body)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let body: Json = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["results"][0]["reply"]["value"], "v");
    assert!(body["summary"]["server"]["calls"].as_u64().is_some_and(|n| n >= 2), "{}", body["summary"]);
    let clients = bulk(&redis.cmd_str(&["CLIENT", "LIST"])).unwrap();
    assert!(clients.lines().any(|l| l.contains("user=pipelab-readonly")), "{clients}");
}

/// A read-only token's session runs as the read-only user too (seen in
/// Redis's CLIENT LIST: the session's connection is the only one), so a
/// write that slipped past pipelab would get NOPERM there as well.
#[tokio::test]
async fn readonly_sessions_run_as_the_readonly_user() {
    let (redis, app) = readonly_app();
    let (status, _, body) = app.respond(readonly_request("/api/v1/sessions", "{}".into())).await;
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let id = serde_json::from_slice::<Json>(&body).unwrap()["id"].as_str().unwrap().to_string();
    let before = bulk(&redis.cmd_str(&["CLIENT", "LIST"])).unwrap();
    let session: Vec<&str> = before.lines().filter(|l| !l.contains("cmd=client|list")).collect();
    assert!(session.len() == 1 && session[0].contains("user=pipelab-readonly"), "{before}");
    let (status, _, body) = app.respond(readonly_request("/api/v1/batch", json!({"session": id, "commands": [["GET", "k"]]}).to_string())).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
}

/// The second wall: the executor called directly as the read-only user
/// (as if a write had slipped past pipelab's own checks) is refused by
/// Redis itself; a transaction of reads is not.
#[tokio::test]
async fn redis_refuses_the_readonly_user_what_slips_past_pipelab() {
    let users = pipelab_engine::acl::Users::generate(pipelab_engine::commands::Allow::default());
    let args = users.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let redis = RedisServer::start_with(&args);
    redis.cmd_str(&["SET", "k", "v"]);
    let ro = users.readonly.target(&pipelab_engine::conn::RedisTarget::parse(&redis.url).unwrap());
    let batch = common::batch(pipelab_model::Mode::Pipeline, &["GET k", "SET k w", "DEL k", "FLUSHALL", "EVAL \"return 1\" 0", "EVAL_RO \"return redis.call('GET', KEYS[1])\" 1 k", "MULTI", "GET k", "EXEC"]);
    let opts = pipelab_engine::exec::ExecOptions { connect_timeout: std::time::Duration::from_secs(5), ..Default::default() };
    let report = common::execute(&ro, &batch, &opts).await.unwrap();
    let r: Vec<&resp::Value> = report.results.iter().map(|r| r.reply.as_ref().unwrap()).collect();
    assert_eq!(r[0], &resp::Value::Bulk(b"v".to_vec()));
    for (i, reply) in r.iter().enumerate().skip(1).take(4) {
        let msg = String::from_utf8_lossy(reply.error_message().unwrap_or_else(|| panic!("{i}: {reply:?}"))).into_owned();
        assert!(msg.starts_with("NOPERM"), "{i}: {msg}");
    }
    assert_eq!(r[5], &resp::Value::Bulk(b"v".to_vec()));
    assert_eq!(r[8], &resp::Value::Array(vec![resp::Value::Bulk(b"v".to_vec())]), "{r:?}");
}

// Fair shares.

fn with_token(method: &str, path: &str, token: &str, body: String) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(Body::from(body))
        .unwrap()
}

/// One client (a token) cannot open every session: past its share it gets
/// 503 `too_many_sessions` naming the flag, and another client still opens one.
#[tokio::test]
async fn one_client_cannot_take_every_session() {
    let redis = RedisServer::start();
    let auth = Auth::new(&["a", "b"], &[]).unwrap();
    let app = App::configured(&redis.url, &["--max-sessions", "100", "--max-sessions-per-client", "3"], "/nonexistent".into(), move |s| s.configure(auth, Default::default()));
    for _ in 0..3 {
        let (status, _, body) = app.respond(with_token("POST", "/api/v1/sessions", "a", "{}".into())).await;
        assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
    }
    for _ in 0..20 {
        let (status, _, body) = app.respond(with_token("POST", "/api/v1/sessions", "a", "{}".into())).await;
        let body: Json = serde_json::from_slice(&body).unwrap();
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::SERVICE_UNAVAILABLE, Some("too_many_sessions")), "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("--max-sessions-per-client"), "{body}");
    }
    assert_eq!(app.state.http.engine.sessions.len(), 3);
    let (status, _, body) = app.respond(with_token("POST", "/api/v1/sessions", "b", "{}".into())).await;
    assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&body));
}

/// One client's blocking commands (`BLPOP k 3`, many at once) hold no
/// more than its share of the batch slots: another client's batch runs
/// at once meanwhile. Before, they held every slot and it waited them out.
#[tokio::test]
async fn one_clients_blocking_commands_leave_slots_for_others() {
    let redis = RedisServer::start();
    let auth = Auth::new(&["a", "b"], &[]).unwrap();
    let flags = ["--max-concurrent-batches", "8", "--max-batches-per-client", "6", "--max-blocking-per-client", "4"];
    let app = std::sync::Arc::new(App::configured(&redis.url, &flags, "/nonexistent".into(), move |s| s.configure(auth, Default::default())));
    let mut blocked = Vec::new();
    for _ in 0..12 {
        let app = app.clone();
        blocked.push(tokio::spawn(async move {
            let body = json!({"commands": [["BLPOP", "nothing", "3"]]}).to_string();
            app.respond(with_token("POST", "/api/v1/batch", "a", body)).await.0
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let t0 = std::time::Instant::now();
    let (status, _, body) = app.respond(with_token("POST", "/api/v1/batch", "b", json!({"commands": [["SET", "b", "1"]]}).to_string())).await;
    assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    assert!(t0.elapsed() < std::time::Duration::from_secs(2), "another client waited {:?}", t0.elapsed());
    // The blocked client's own batches wait for its share, in turn, within the batch timeout.
    let statuses: Vec<StatusCode> = futures_join(blocked).await;
    assert!(statuses.iter().all(|s| *s == StatusCode::OK || *s == StatusCode::SERVICE_UNAVAILABLE), "{statuses:?}");
    assert!(statuses.contains(&StatusCode::OK), "{statuses:?}");
}

async fn futures_join(handles: Vec<tokio::task::JoinHandle<StatusCode>>) -> Vec<StatusCode> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

/// A read-only token's batch gets `summary.server` (its INFO readings on the batch user's connection).
#[tokio::test]
async fn readonly_batches_get_the_servers_counts() {
    let (_redis, app) = readonly_app();
    let body = json!({"text": "GET k\nGET k", "server_stats": true}).to_string();
    let (status, _, body) = app.respond(readonly_request("/api/v1/batch", body)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let body: Json = serde_json::from_slice(&body).unwrap();
    assert!(body["summary"]["server"]["calls"].as_u64().is_some_and(|n| n >= 2), "{}", body["summary"]);
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
