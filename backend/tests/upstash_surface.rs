//! The Upstash-compatible surface, in-process against a real redis-server:
//! every shape Upstash's clients send (single JSON command, path style with
//! body and query, /pipeline with errors in place, /multi-exec committed and
//! discarded), the encodings (base64, resp2), 405, refusals, limits, the
//! sync token, Server-Timing, metrics, the playground's coexistence with
//! `POST /`, `--upstash-prefix`, and SSE subscribe.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod upstash_inproc;

use axum::http::Method;
use http_body_util::BodyExt;
use pipelab_http::auth::Auth;
use pipelab_http::config::UpstashConfig;
use serde_json::json;
use upstash_inproc::*;

#[tokio::test]
async fn single_json_command_and_path_style() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    let a = post(&app, "/", r#"["SET","k","v","EX",100]"#).await;
    assert_eq!((a.status, a.json()), (200, json!({"result": "OK"})));
    assert!(matches!(redis.cmd_str(&["TTL", "k"]), resp::Value::Integer(t) if t > 0 && t <= 100));
    let a = call(&app, Method::GET, "/get/k", &[], "").await;
    assert_eq!((a.status, a.json()), (200, json!({"result": "v"})));
    // The value as the raw body, further arguments from the query.
    let a = post(&app, "/set/j?EX=50", r#"{"a": [1, "x"]}"#).await;
    assert_eq!(a.json(), json!({"result": "OK"}));
    assert_eq!(post(&app, "/get/j", "").await.json(), json!({"result": "{\"a\": [1, \"x\"]}"}));
    assert!(matches!(redis.cmd_str(&["TTL", "j"]), resp::Value::Integer(t) if t > 0 && t <= 50));
    // Percent-encoded segments, binary-safe; PUT like POST.
    let a = call(&app, Method::PUT, "/set/a%2Fb/x%20y%C3%A9", &[], "").await;
    assert_eq!(a.json(), json!({"result": "OK"}));
    assert_eq!(redis.cmd_str(&["GET", "a/b"]), resp::Value::Bulk("x yé".as_bytes().to_vec()));
    // Numbers and booleans as arguments; integers and null as they are.
    assert_eq!(post(&app, "/", r#"["INCRBY","n",5]"#).await.json(), json!({"result": 5}));
    assert_eq!(post(&app, "/", r#"["GET","missing"]"#).await.json(), json!({"result": null}));
    assert_eq!(post(&app, "/", r#"["ZADD","z",1.5,"m"]"#).await.json(), json!({"result": 1}));
    // RESP2 shapes: doubles as strings, HGETALL flat.
    assert_eq!(post(&app, "/", r#"["ZSCORE","z","m"]"#).await.json(), json!({"result": "1.5"}));
    post(&app, "/", r#"["HSET","h","f","v","g","w"]"#).await;
    assert_eq!(post(&app, "/", r#"["HGETALL","h"]"#).await.json(), json!({"result": ["f", "v", "g", "w"]}));
    // A command that fails: 400 with the error only.
    let a = post(&app, "/", r#"["INCR","h"]"#).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.json(), json!({"error": "WRONGTYPE Operation against a key holding the wrong kind of value"}));
}

#[tokio::test]
async fn bad_commands_are_400_with_a_reason() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    for (body, want) in [
        (r#"["SET","k",null]"#, "argument 2: null"),
        (r#"["SET","k""#, "malformed JSON"),
        ("", "empty request body"),
        ("[]", "a command needs at least one argument"),
        (r#"["SUBSCRIBE","ch"]"#, "SUBSCRIBE is refused"),
        (r#"["BLPOP","l",0]"#, "timeout 0 is refused"),
        (r#"["WATCH","k"]"#, "WATCH is not supported here"),
        (r#"["MULTI"]"#, "MULTI is not supported here"),
    ] {
        let a = post(&app, "/", body).await;
        assert_eq!(a.status, 400, "{body}: {}", String::from_utf8_lossy(&a.body));
        let e = a.json();
        assert!(e["error"].as_str().unwrap().contains(want), "{body}: {e}");
        assert_eq!(e.as_object().unwrap().len(), 1);
    }
    let a = post(&app, "/pipeline", r#"[["SET","k","v"],["GET",{"x":1}]]"#).await;
    assert_eq!(a.status, 400);
    assert!(a.json()["error"].as_str().unwrap().contains("command 1: argument 1: an object"), "{}", a.json());
    assert_eq!(post(&app, "/pipeline", "[]").await.status, 400);
}

#[tokio::test]
async fn pipeline_answers_one_entry_per_command_errors_in_place() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    let a = post(&app, "/pipeline", r#"[["SET","k","1"],["INCR","k"],["HSET","h","f","v"],["INCR","h"],["GET","k"],["NOSUCH"]]"#).await;
    assert_eq!(a.status, 200);
    let entries = a.json();
    assert_entries(&entries);
    assert_eq!(entries[0], json!({"result": "OK"}));
    assert_eq!(entries[1], json!({"result": 2}));
    assert!(entries[3]["error"].as_str().unwrap().starts_with("WRONGTYPE"));
    assert_eq!(entries[4], json!({"result": "2"}));
    assert!(entries[5]["error"].as_str().unwrap().contains("unknown command"));
    // One round trip, in the Server-Timing header.
    assert!(a.header("server-timing").unwrap().contains("1 round trip, 6 commands"), "{:?}", a.header("server-timing"));
}

#[tokio::test]
async fn multi_exec_committed_or_discarded() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    redis.cmd_str(&["HSET", "h", "f", "v"]);
    let a = post(&app, "/multi-exec", r#"[["SET","k","1"],["INCR","h"],["INCR","k"]]"#).await;
    assert_eq!(a.status, 200);
    let entries = a.json();
    assert_entries(&entries);
    assert_eq!(entries[0], json!({"result": "OK"}));
    assert!(entries[1]["error"].as_str().unwrap().starts_with("WRONGTYPE"), "no rollback: {entries}");
    assert_eq!(entries[2], json!({"result": 2}));
    // A command rejected at queue time: EXECABORT, nothing ran, non-2xx with one error.
    let a = post(&app, "/multi-exec", r#"[["SET","k","changed"],["NOSUCH","x"]]"#).await;
    assert_eq!(a.status, 400);
    let e = a.json();
    assert_eq!(e.as_object().unwrap().len(), 1);
    assert!(e["error"].as_str().unwrap().starts_with("EXECABORT"), "{e}");
    assert!(e["error"].as_str().unwrap().contains("command 1"), "{e}");
    assert_eq!(redis.cmd_str(&["GET", "k"]), resp::Value::Bulk(b"2".to_vec()));
    // Refused commands refuse the whole transaction before anything runs.
    assert_eq!(post(&app, "/multi-exec", r#"[["SET","k","3"],["WATCH","k"]]"#).await.status, 400);
    assert_eq!(redis.cmd_str(&["GET", "k"]), resp::Value::Bulk(b"2".to_vec()));
}

#[tokio::test]
async fn concurrent_transactions_each_have_their_own_connection() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    let runs = (0..16).map(|i| {
        let app = &app;
        async move { post(app, "/multi-exec", &format!(r#"[["INCR","c"],["SET","k{i}","{i}"],["GET","k{i}"]]"#)).await }
    });
    let answers = futures_join(runs).await;
    let mut counts = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
        let e = a.json();
        assert_eq!(e[2], json!({"result": i.to_string()}));
        counts.push(e[0]["result"].as_i64().unwrap());
    }
    counts.sort();
    assert_eq!(counts, (1..=16).collect::<Vec<_>>());
}

/// All of `futs` at once, in order.
async fn futures_join<F: std::future::Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let handles: Vec<_> = futs.map(Box::pin).collect();
    let mut out = Vec::new();
    let mut pending: Vec<_> = handles.into_iter().map(Some).collect();
    // Poll them together: a join of all of them.
    let results = std::future::poll_fn(|cx| {
        let mut done = true;
        for (i, slot) in pending.iter_mut().enumerate() {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        out.push((i, v));
                        *slot = None;
                    }
                    std::task::Poll::Pending => done = false,
                }
            }
        }
        if done { std::task::Poll::Ready(std::mem::take(&mut out)) } else { std::task::Poll::Pending }
    })
    .await;
    let mut results = results;
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, v)| v).collect()
}

#[tokio::test]
async fn base64_encoding_and_invalid_utf8() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    redis.cmd(&[b"SET", b"bin", b"\xff\x00ab"]);
    redis.cmd_str(&["RPUSH", "l", "OK", "x"]);
    let b64 = [("upstash-encoding", "base64")];
    let a = call(&app, Method::POST, "/pipeline", &b64, r#"[["SET","k","v"],["GET","bin"],["LRANGE","l",0,-1],["INCR","n"],["GET","none"],["INCR","l"]]"#).await;
    let e = a.json();
    assert_entries(&e);
    assert_eq!(e[0], json!({"result": "OK"}), "a top-level OK stays as it is");
    assert_eq!(e[1], json!({"result": "/wBhYg=="}), "the exact bytes");
    assert_eq!(e[2], json!({"result": ["T0s=", "eA=="]}), "strings in arrays, OK included");
    assert_eq!(e[3], json!({"result": 1}));
    assert_eq!(e[4], json!({"result": null}));
    assert!(e[5]["error"].as_str().unwrap().starts_with("WRONGTYPE"), "errors as they are");
    // Without base64: invalid UTF-8 becomes U+FFFD.
    let a = post(&app, "/", r#"["GET","bin"]"#).await;
    assert_eq!(a.json(), json!({"result": "\u{FFFD}\u{0}ab"}));
    let a = call(&app, Method::POST, "/", &b64, r#"["GET","k"]"#).await;
    assert_eq!(a.json(), json!({"result": "dg=="}));
}

#[tokio::test]
async fn resp2_raw_format() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    redis.cmd(&[b"SET", b"bin", b"\xff\r\n"]);
    let raw = [("upstash-response-format", "resp2")];
    let a = call(&app, Method::POST, "/", &raw, r#"["GET","bin"]"#).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.header("content-type"), Some("application/octet-stream"));
    assert_eq!(a.body, b"$3\r\n\xff\r\n\r\n");
    let a = call(&app, Method::POST, "/pipeline", &raw, r#"[["SET","k","1"],["INCR","k"],["HGETALL","none"],["INCR","bin"]]"#).await;
    assert_eq!(a.status, 200);
    assert_eq!(a.body, b"+OK\r\n:2\r\n*0\r\n-ERR value is not an integer or out of range\r\n".to_vec(), "{}", String::from_utf8_lossy(&a.body));
    assert_eq!(call(&app, Method::POST, "/multi-exec", &raw, r#"[["GET","k"]]"#).await.status, 400);
    let both = [("upstash-response-format", "resp2"), ("upstash-encoding", "base64")];
    assert_eq!(call(&app, Method::POST, "/", &both, r#"["GET","k"]"#).await.status, 400);
}

#[tokio::test]
async fn other_methods_are_405_on_every_route() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    for path in ["/", "/pipeline", "/multi-exec", "/get/k", "/subscribe/ch"] {
        for method in [Method::DELETE, Method::PATCH] {
            let a = call(&app, method.clone(), path, &[], "").await;
            assert_eq!(a.status, 405, "{method} {path}");
            assert!(a.json()["error"].as_str().unwrap().contains("not allowed"));
            assert!(a.header("server-timing").is_some() && a.header("upstash-sync-token").is_some(), "{method} {path}");
        }
    }
}

#[tokio::test]
async fn sync_token_moves_after_writes_only() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    let t0 = post(&app, "/", r#"["GET","k"]"#).await.header("upstash-sync-token").unwrap().to_string();
    let read = call(&app, Method::POST, "/", &[("upstash-sync-token", &t0)], r#"["GET","k"]"#).await;
    assert_eq!(read.header("upstash-sync-token"), Some(t0.as_str()));
    let t1 = post(&app, "/", r#"["SET","k","v"]"#).await.header("upstash-sync-token").unwrap().to_string();
    assert_ne!(t1, t0);
    let t2 = post(&app, "/pipeline", r#"[["GET","k"],["EVAL_RO","return 1",0]]"#).await.header("upstash-sync-token").unwrap().to_string();
    assert_eq!(t2, t1, "reads only");
    let t3 = post(&app, "/multi-exec", r#"[["GET","k"],["EVAL","return 1",0]]"#).await.header("upstash-sync-token").unwrap().to_string();
    assert_ne!(t3, t2, "EVAL may write");
}

#[tokio::test]
async fn limits_in_upstash_wording() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &["--max-body-bytes", "64", "--max-commands", "2"]);
    let a = post(&app, "/", &format!(r#"["SET","k","{}"]"#, "x".repeat(100))).await;
    assert_eq!(a.status, 413);
    assert_eq!(a.json(), json!({"error": "ERR max request size exceeded"}));
    let a = post(&app, "/pipeline", r#"[["GET","a"],["GET","b"],["GET","c"]]"#).await;
    assert_eq!(a.status, 413);
    assert!(a.json()["error"].as_str().unwrap().contains("limit of 2 commands"), "{}", a.json());
}

/// Past the reply limit the executor cuts the batch: the cut commands are
/// `unknown`, answered as an error saying so, never as a result.
#[tokio::test]
async fn unknown_outcomes_are_errors_saying_so() {
    let redis = RedisServer::start();
    redis.cmd_str(&["SET", "big", &"x".repeat(300_000)]);
    let app = open_app(&redis, &["--max-reply-bytes", "1000"]);
    let a = post(&app, "/pipeline", r#"[["GET","big"],["GET","big"],["INCR","n"]]"#).await;
    assert_eq!(a.status, 200);
    let e = a.json();
    assert_entries(&e);
    let last = e[2]["error"].as_str().unwrap_or_else(|| panic!("{}", e[2]));
    assert!(last.contains("outcome unknown") && last.contains("may or may not have run"), "{last}");
    assert!(e.as_array().unwrap().iter().all(|x| x.get("result").is_none_or(|r| r.as_str().is_some_and(|s| s.len() == 300_000))));
    let a = post(&app, "/", r#"["GET","big"]"#).await;
    assert_eq!(a.status, 503, "{}", &String::from_utf8_lossy(&a.body)[..100.min(a.body.len())]);
    assert!(a.json()["error"].as_str().unwrap().contains("outcome unknown"));
}

#[tokio::test]
async fn playground_and_commands_share_the_root() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("assets")).unwrap();
    std::fs::write(dir.path().join("index.html"), "<!doctype html><title>playground</title>").unwrap();
    std::fs::write(dir.path().join("assets/app.js"), "console.log(1)").unwrap();
    let app = app_with(&redis, &[], Auth::none(), UpstashConfig::default(), Some(dir.path().to_path_buf()));
    let page = |a: &Answer| String::from_utf8_lossy(&a.body).contains("playground");
    assert!(page(&call(&app, Method::GET, "/", &[], "").await));
    assert!(page(&call(&app, Method::GET, "/lessons/3", &[], "").await));
    assert_eq!(call(&app, Method::GET, "/assets/app.js", &[], "").await.body, b"console.log(1)");
    assert_eq!(post(&app, "/", r#"["SET","k","v"]"#).await.json(), json!({"result": "OK"}));
    assert_eq!(call(&app, Method::GET, "/get/k", &[], "").await.json(), json!({"result": "v"}));
    assert_eq!(call(&app, Method::GET, "/api/v1/info", &[], "").await.status, 200);

    // Under a prefix: the root is the playground's only.
    let cfg = UpstashConfig { upstash_prefix: Some("/upstash/".into()), ..Default::default() };
    let app = app_with(&redis, &[], Auth::none(), cfg, Some(dir.path().to_path_buf()));
    assert_eq!(post(&app, "/upstash", r#"["GET","k"]"#).await.json(), json!({"result": "v"}));
    assert_eq!(call(&app, Method::GET, "/upstash/get/k", &[], "").await.json(), json!({"result": "v"}));
    assert_eq!(post(&app, "/upstash/pipeline", r#"[["GET","k"]]"#).await.json(), json!([{"result": "v"}]));
    assert!(page(&call(&app, Method::GET, "/get/k", &[], "").await));
    assert!(Settings::from_config(&UpstashConfig { upstash_prefix: Some("nope".into()), ..Default::default() }).is_err());
    assert!(Settings::from_config(&UpstashConfig { upstash_prefix: Some("/api/v1/x".into()), ..Default::default() }).is_err());
}

#[tokio::test]
async fn requests_are_counted_by_endpoint_family() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    let count = |text: &str, family: &str| -> u64 {
        let prefix = format!("pipelab_upstash_requests_total{{endpoint=\"{family}\",class=\"2xx\"}} ");
        text.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0, |n| n.parse().unwrap())
    };
    let before = String::from_utf8(call(&app, Method::GET, "/metrics", &[], "").await.body).unwrap();
    post(&app, "/multi-exec", r#"[["GET","k"]]"#).await;
    post(&app, "/multi-exec", r#"[["GET","k"]]"#).await;
    let after = String::from_utf8(call(&app, Method::GET, "/metrics", &[], "").await.body).unwrap();
    // Other tests of this binary count too: at least ours.
    assert!(count(&after, "multi_exec") >= count(&before, "multi_exec") + 2, "{after}");
}

#[tokio::test]
async fn cors_allows_the_sdk_headers_for_configured_origins() {
    let redis = RedisServer::start();
    let cfg = UpstashConfig { cors_origins: vec!["https://app.example".into()], ..Default::default() };
    let app = app_with(&redis, &[], Auth::none(), cfg, None);
    let pre = call(
        &app,
        Method::OPTIONS,
        "/pipeline",
        &[
            ("origin", "https://app.example"),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "authorization,upstash-encoding,upstash-sync-token,upstash-telemetry-sdk"),
        ],
        "",
    )
    .await;
    assert_eq!(pre.header("access-control-allow-origin"), Some("https://app.example"));
    let allowed = pre.header("access-control-allow-headers").unwrap().to_string();
    for h in ["authorization", "upstash-encoding", "upstash-sync-token", "upstash-telemetry-sdk"] {
        assert!(allowed.contains(h), "{allowed}");
    }
    let a = call(&app, Method::POST, "/", &[("origin", "https://app.example")], r#"["GET","k"]"#).await;
    assert!(a.header("access-control-expose-headers").unwrap().contains("upstash-sync-token"));
    let other = call(&app, Method::POST, "/", &[("origin", "https://evil.example")], r#"["GET","k"]"#).await;
    assert_eq!(other.header("access-control-allow-origin"), None);
}

#[tokio::test]
async fn subscribe_streams_server_sent_events() {
    let redis = RedisServer::start();
    let app = open_app(&redis, &[]);
    let req = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/subscribe/news")
        .header("accept", "text/event-stream")
        .body(axum::body::Body::from("[]"))
        .unwrap();
    let res = app.respond_raw(req).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let mut body = res.into_body();
    let mut next = async || {
        let frame = tokio::time::timeout(std::time::Duration::from_secs(10), body.frame()).await.unwrap().unwrap().unwrap();
        String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
    };
    assert_eq!(next().await, "data: subscribe,news,1\n\n");
    assert_eq!(post(&app, "/publish/news/hello%20there", "").await.json(), json!({"result": 1}));
    assert_eq!(next().await, "data: message,news,hello there\n\n");
}
