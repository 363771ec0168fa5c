//! Tokens on every route: none, wrong, read-only, full-access and
//! operator, as `Authorization: Bearer` and `?_token=`; `/healthz` and `/readyz` open,
//! `/metrics` closed unless `--metrics-public`; read-only tokens refused
//! every command the server flags as writing.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod upstash_inproc;

use axum::http::Method;
use pipelab_http::auth::{AuthConfig, Auth};
use serde_json::json;
use upstash_inproc::*;

/// (method, path, body) of every route that needs a token.
const ROUTES: &[(&str, &str, &str)] = &[
    ("POST", "/", r#"["GET","k"]"#),
    ("GET", "/get/k", ""),
    ("POST", "/set/k/v", ""),
    ("POST", "/pipeline", r#"[["GET","k"]]"#),
    ("POST", "/multi-exec", r#"[["GET","k"]]"#),
    ("POST", "/subscribe/ch", "[]"),
    ("POST", "/api/v1/batch", r#"{"commands": [["GET","k"]]}"#),
    ("POST", "/api/v1/compare", r#"{"commands": [["GET","k"]]}"#),
    ("POST", "/api/v1/sweep", r#"{"command": ["GET","k"], "total": 4, "batch_sizes": [2]}"#),
    ("GET", "/api/v1/info", ""),
    ("GET", "/api/v1/openapi.json", ""),
    ("GET", "/metrics", ""),
];

fn method(m: &str) -> Method {
    Method::from_bytes(m.as_bytes()).unwrap()
}

#[tokio::test]
async fn every_route_needs_a_token_but_the_probes() {
    let redis = RedisServer::start();
    let app = token_app(&redis);
    for &(m, path, body) in ROUTES {
        for auth in [None, Some("Bearer wrong"), Some("Bearer full-token-but-longer"), Some("Basic full-token")] {
            let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", *a)).collect();
            let a = call(&app, method(m), path, &headers, body.to_string()).await;
            assert_eq!(a.status, 401, "{m} {path} with {auth:?}");
            assert_eq!(a.header("www-authenticate"), Some("Bearer"), "{m} {path}");
            let e = a.json();
            if path.starts_with("/api/v1") || path == "/metrics" {
                assert_eq!(e["error"]["code"], "unauthorized", "{m} {path}: {e}");
            } else {
                assert_eq!(e, json!({"error": "Unauthorized"}), "{m} {path}");
            }
        }
        let a = call(&app, method(m), &format!("{path}?_token=wrong"), &[], body.to_string()).await;
        assert_eq!(a.status, 401, "{m} {path}?_token=wrong");
    }
    for probe in ["/healthz", "/readyz"] {
        assert_eq!(call(&app, Method::GET, probe, &[], "").await.status, 200, "{probe}");
    }
}

#[tokio::test]
async fn a_full_or_operator_token_opens_every_route() {
    let redis = RedisServer::start();
    let app = token_app(&redis);
    for token in [FULL, OPERATOR] {
        for &(m, path, body) in ROUTES {
            let auth = format!("Bearer {token}");
            let bearer = call(&app, method(m), path, &[("authorization", &auth)], body.to_string()).await;
            assert_eq!(bearer.status, 200, "{token}: {m} {path}: {}", String::from_utf8_lossy(&bearer.body));
            let sep = if path.contains('?') { '&' } else { '?' };
            let query = call(&app, method(m), &format!("{path}{sep}_token={token}"), &[], body.to_string()).await;
            assert_eq!(query.status, 200, "{token}: {m} {path}?_token");
        }
    }
    // `_token` is not an argument of a path-style command.
    let a = call(&app, Method::GET, "/echo/hi?_token=full-token", &[], "").await;
    assert_eq!(a.json(), json!({"result": "hi"}));
}

#[tokio::test]
async fn a_read_only_token_reads_and_is_refused_every_write() {
    let redis = RedisServer::start();
    redis.cmd_str(&["SET", "k", "v"]);
    let app = token_app(&redis);
    let ro = [("authorization", "Bearer readonly-token")];
    for body in [
        r#"["GET","k"]"#,
        r#"["EVAL_RO","return redis.call('GET', KEYS[1])",1,"k"]"#,
        r#"["OBJECT","ENCODING","k"]"#,
        r#"["SCAN",0]"#,
    ] {
        let a = call(&app, Method::POST, "/", &ro, body.to_string()).await;
        assert_eq!(a.status, 200, "{body}: {}", String::from_utf8_lossy(&a.body));
    }
    for body in [
        r#"["SET","k","w"]"#,
        r#"["del","k"]"#,
        r#"["EVAL","return 1",0]"#,
        r#"["FLUSHALL"]"#,
        // Not flagged `readonly` (only `fast`, `sentinel`): the table's rule.
        r#"["PING"]"#,
        // Flagged `admin`, although it only reads.
        r#"["CONFIG","GET","maxmemory"]"#,
        r#"["INCR","n"]"#,
    ] {
        let a = call(&app, Method::POST, "/", &ro, body.to_string()).await;
        assert_eq!(a.status, 403, "{body}");
        assert!(a.json()["error"].as_str().unwrap().starts_with("NOPERM"), "{body}: {}", a.json());
    }
    // A pipeline or transaction with one write runs nothing.
    let a = call(&app, Method::POST, "/pipeline", &ro, r#"[["GET","k"],["SET","k","x"]]"#).await;
    assert_eq!(a.status, 403);
    let a = call(&app, Method::POST, "/multi-exec", &ro, r#"[["SET","k","x"]]"#).await;
    assert_eq!(a.status, 403);
    assert_eq!(call(&app, Method::POST, "/set/k/x?_token=readonly-token", &[], "").await.status, 403);
    assert_eq!(redis.cmd_str(&["GET", "k"]), resp::Value::Bulk(b"v".to_vec()));
    // On /api/v1: GET endpoints, not the batch endpoints.
    assert_eq!(call(&app, Method::GET, "/api/v1/info", &ro, "").await.status, 200);
    // /api/v1/batch: per command, by the command table.
    let a = call(&app, Method::POST, "/api/v1/batch", &ro, r#"{"commands": [["GET","k"]]}"#).await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    for (cmds, index, name) in [(r#"[["GET","k"],["SET","k","x"]]"#, 1, "SET"), (r#"[["EVAL","return 1","0"]]"#, 0, "EVAL")] {
        let a = call(&app, Method::POST, "/api/v1/batch", &ro, format!(r#"{{"commands": {cmds}}}"#)).await;
        assert_eq!((a.status, a.json()["error"]["code"].clone()), (403, json!("readonly_token")), "{cmds}");
        let message = a.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains(&format!("commands[{index}]")) && message.contains(name), "{message}");
    }
    // A refusal names where the command is, as the request gave it.
    let a = call(&app, Method::POST, "/api/v1/batch", &ro, r#"{"text": "GET k\n\nSET k x"}"#).await;
    assert_eq!(a.status, 403);
    assert!(a.json()["error"]["message"].as_str().unwrap().starts_with("text, line 3: SET is refused"), "{}", a.json());
    // The page's Run: a live batch, checked the same way, and its cancel.
    let a = call(&app, Method::POST, "/api/v1/batches", &ro, r#"{"text": "GET k"}"#.to_string()).await;
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let end = String::from_utf8_lossy(&a.body).lines().last().map(str::to_string).unwrap_or_default();
    assert!(end.contains(r#""type":"end""#) && end.contains(r#""ok":1"#), "{end}");
    let a = call(&app, Method::POST, "/api/v1/batches", &ro, r#"{"text": "SET k x"}"#.to_string()).await;
    assert_eq!((a.status, a.json()["error"]["code"].clone()), (403, json!("readonly_token")));
    assert_ne!(call(&app, Method::POST, "/api/v1/batches/nosuchbatch/cancel", &ro, "").await.status, 403, "a read-only token may cancel");
    for path in ["/api/v1/compare", "/api/v1/sweep"] {
        let &(_, _, body) = ROUTES.iter().find(|r| r.1 == path).unwrap();
        let a = call(&app, Method::POST, path, &ro, body.to_string()).await;
        assert_eq!((a.status, a.json()["error"]["code"].clone()), (403, json!("forbidden")), "{path}");
    }
    for path in ["/api/v1/openapi.json", "/metrics"] {
        assert_eq!(call(&app, Method::GET, path, &ro, "").await.status, 200, "{path}");
    }
    assert_eq!(call(&app, Method::POST, "/subscribe/ch", &ro, "[]").await.status, 200, "subscribing reads");
}

/// The commands that reveal secrets run for an
/// operator token only, on /api/v1/batch and the Upstash routes alike.
#[tokio::test]
async fn only_an_operator_token_reads_secrets() {
    let redis = RedisServer::start();
    let app = token_app(&redis);
    let secrets = [
        r#"["CONFIG","GET","requirepass"]"#,
        r#"["ACL","LIST"]"#,
        r#"["ACL","GETUSER","default"]"#,
        r#"["ACL","DRYRUN","default","GET","k"]"#,
    ];
    for cmd in secrets {
        let batch = format!(r#"{{"commands": [{cmd}]}}"#);
        for token in [FULL, READONLY] {
            let auth = format!("Bearer {token}");
            let a = call(&app, Method::POST, "/api/v1/batch", &[("authorization", &auth)], batch.clone()).await;
            let code = a.json()["error"]["code"].clone();
            let expected = if token == FULL { (400, json!("refused_command")) } else { (403, json!("readonly_token")) };
            assert_eq!((a.status, code), expected, "{token}: {cmd}: {}", a.json());
            let a = call(&app, Method::POST, "/", &[("authorization", &auth)], cmd.to_string()).await;
            assert!(a.status == 400 || a.status == 403, "{token}: {cmd} on /: {}", a.status);
            assert!(a.json()["error"].is_string(), "{token}: {cmd}: {}", a.json());
        }
        let op = [("authorization", "Bearer operator-token")];
        let a = call(&app, Method::POST, "/api/v1/batch", &op, batch.clone()).await;
        assert_eq!(a.status, 200, "{cmd}: {}", a.json());
        assert_eq!(a.json()["results"][0]["status"], "ok", "{cmd}: {}", a.json());
        let a = call(&app, Method::POST, "/", &op, cmd.to_string()).await;
        assert_eq!(a.status, 200, "{cmd} on /: {}", a.json());
        assert!(a.json().get("result").is_some(), "{cmd}: {}", a.json());
    }
    // The reply is Redis's own: CONFIG GET names the parameter.
    let a = call(&app, Method::POST, "/", &[("authorization", "Bearer operator-token")], r#"["CONFIG","GET","maxmemory"]"#).await;
    assert_eq!(a.json()["result"][0], "maxmemory");
}

#[tokio::test]
async fn metrics_public_opens_metrics_only() {
    let redis = RedisServer::start();
    let mut auth = Auth::new(&[FULL], &[]).unwrap();
    auth.metrics_public = true;
    let app = app_with(&redis, &[], auth, UpstashConfig::default(), None);
    assert_eq!(call(&app, Method::GET, "/metrics", &[], "").await.status, 200);
    assert_eq!(call(&app, Method::GET, "/api/v1/info", &[], "").await.status, 401);
    assert_eq!(post(&app, "/", r#"["GET","k"]"#).await.status, 401);
}

#[test]
fn tokens_from_flags_file_and_environment_lists() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, "# comment\nfile-a\n\n  file-b  \n").unwrap();
    let cfg = AuthConfig {
        tokens: vec!["flag-a".into()],
        tokens_file: Some(file),
        readonly_tokens: vec!["ro-a".into()],
        operator_tokens: vec!["op-a".into()],
        metrics_public: false,
    };
    let auth = Auth::from_config(&cfg).unwrap();
    for t in ["flag-a", "file-a", "file-b"] {
        assert_eq!(auth.check(Some(t.as_bytes())), Ok(pipelab_http::auth::Access::Full), "{t}");
    }
    assert_eq!(auth.check(Some(b"ro-a")), Ok(pipelab_http::auth::Access::ReadOnly));
    assert_eq!(auth.check(Some(b"op-a")), Ok(pipelab_http::auth::Access::Operator));
    let twice = AuthConfig { tokens: vec!["same".into()], operator_tokens: vec!["same".into()], ..Default::default() };
    assert!(Auth::from_config(&twice).unwrap_err().to_string().contains("--operator-token"));
    let missing = AuthConfig { tokens_file: Some(dir.path().join("nope")), ..Default::default() };
    assert!(Auth::from_config(&missing).unwrap_err().to_string().contains("--tokens-file"));
    // PIPELAB_TOKENS is comma-separated, as clap splits it.
    use clap::{Args, FromArgMatches};
    let cmd = AuthConfig::augment_args(clap::Command::new("x"));
    let m = cmd.try_get_matches_from(["x", "--token", "a,b", "--readonly-token", "c", "--operator-token", "d,e"]).unwrap();
    let parsed = AuthConfig::from_arg_matches(&m).unwrap();
    assert_eq!(parsed.tokens, ["a", "b"]);
    assert_eq!(parsed.readonly_tokens, ["c"]);
    assert_eq!(parsed.operator_tokens, ["d", "e"]);
}

/// `GET /api/v1/info`'s `refused` is the caller's: a read-only token sees
/// every write refused, a full-access token the secrets, an operator neither.
#[tokio::test]
async fn the_refused_list_of_info_follows_the_token() {
    let redis = RedisServer::start();
    let app = token_app(&redis);
    let refused = |token: &'static str| {
        let app = &app;
        async move {
            let auth = format!("Bearer {token}");
            let a = call(app, Method::GET, "/api/v1/info", &[("authorization", &auth)], "").await;
            assert_eq!(a.status, 200);
            let list = a.json()["refused"].as_array().unwrap().clone();
            list.into_iter().map(|r| (r["command"].as_str().unwrap().to_string(), r["reason"].as_str().unwrap().to_string())).collect::<std::collections::HashMap<_, _>>()
        }
    };
    let ro = refused(READONLY).await;
    assert_eq!(ro.get("SET").map(String::as_str), Some("not_read_only"));
    assert_eq!(ro.get("SELECT").map(String::as_str), Some("connection"));
    assert!(!ro.contains_key("GET"), "GET is readonly");
    let full = refused(FULL).await;
    assert!(!full.contains_key("SET"));
    assert_eq!(full.get("CONFIG GET").map(String::as_str), Some("secret"));
    let op = refused(OPERATOR).await;
    assert!(!op.contains_key("CONFIG GET") && op.get("CONFIG SET").map(String::as_str) == Some("admin"));
}
