//! What an operator relies on: metrics that move with batches, a
//! log line per batch that never shows values, SIGTERM that lets a running
//! batch finish, bad settings refused at start-up by name, and the page
//! served from the binary wherever it is started. Readiness flipping with
//! Redis is in api_resilience.rs.

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use api_harness::{serve_command, Pipelab, RedisServer};
use serde_json::json;

/// The value of one sample line (`name{labels} value`) in a Prometheus text page.
fn sample(page: &str, series: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.trim().parse().ok()))
        .unwrap_or(0.0)
}

#[tokio::test]
async fn metrics_move_after_a_batch() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    let (status, ctype, before) = api.get_text("/metrics").await;
    assert_eq!(status, 200);
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    let batches = r#"pipelab_batches_total{mode="pipeline",outcome="error_replies"}"#;
    let ok = r#"pipelab_commands_total{mode="pipeline",status="ok"}"#;
    let err = r#"pipelab_commands_total{mode="pipeline",status="error"}"#;

    let body = json!({"commands": [["SET", "m", "x"], ["INCR", "m"], ["GET", "m"]], "mode": "pipeline"});
    assert_eq!(api.post("/api/v1/batch", &body).await.0, 200);
    let (_, _, after) = api.get_text("/metrics").await;
    assert_eq!(sample(&after, batches) - sample(&before, batches), 1.0, "{after}");
    assert_eq!(sample(&after, ok) - sample(&before, ok), 2.0);
    assert_eq!(sample(&after, err) - sample(&before, err), 1.0);
    assert!(after.contains(r#"pipelab_batch_duration_seconds_count{mode="pipeline"}"#), "{after}");
    assert_eq!(sample(&after, "pipelab_batches_in_flight"), 0.0);
}

#[tokio::test]
async fn connection_failures_are_counted() {
    let mut redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    redis.kill();
    let (status, _) = api.post("/api/v1/batch", &json!({"commands": [["PING"]]})).await;
    assert_eq!(status, 503);
    let (_, _, page) = api.get_text("/metrics").await;
    assert!(sample(&page, "pipelab_redis_connection_failures_total") >= 1.0, "{page}");
    assert!(sample(&page, r#"pipelab_batches_total{mode="pipeline",outcome="redis_unavailable"}"#) >= 1.0, "{page}");
}

#[tokio::test]
async fn one_json_log_line_per_batch_without_values() {
    let redis = RedisServer::start();
    let mut api = Pipelab::start(&redis.url, &["--log-format", "json"]);
    // The start-up line on stdout is JSON too.
    let banner: serde_json::Value = serde_json::from_str(&api.banner).unwrap_or_else(|e| panic!("not JSON ({e}): {}", api.banner));
    assert!(banner["message"].as_str().is_some_and(|m| m.contains("listening on http://")), "{banner}");
    let secret = "s3cr3t-value-never-logged";
    let body = json!({"commands": [["SET", "k", secret], ["GET", "k"]], "mode": "sequential"});
    assert_eq!(api.post("/api/v1/batch", &body).await.0, 200);
    assert_eq!(api.stop(), Some(0));
    let log = api.stderr();
    assert!(!log.contains(secret), "a value reached the log:\n{log}");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON log line ({e}): {l}")))
        .filter(|v: &serde_json::Value| v["message"] == "batch")
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    let line = &lines[0];
    assert_eq!(line["mode"], "sequential");
    assert_eq!(line["commands"], 2);
    assert_eq!(line["outcome"], "ok");
    assert!(line["batch_id"].as_u64().is_some() && line["duration_ms"].as_f64().is_some(), "{line}");
}

#[tokio::test]
async fn sigterm_lets_a_running_batch_finish() {
    let redis = RedisServer::start();
    let mut api = Pipelab::start(&redis.url, &["--shutdown-grace-ms", "20000"]);
    // 30 sequential commands at 50 ms simulated RTT: about 1.5 s.
    let commands: Vec<_> = (0..30).map(|i| json!(["SET", format!("term:{i}"), "v"])).collect();
    let body = json!({"commands": commands, "mode": "sequential", "simulated_rtt_ms": 50});
    let base = api.base.clone();
    let request = tokio::spawn(async move {
        reqwest::Client::new().post(format!("{base}/api/v1/batch")).json(&body).send().await.map(|r| r.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let started = Instant::now();
    let code = tokio::task::spawn_blocking(move || api.stop()).await.unwrap();
    assert_eq!(code, Some(0));
    assert!(started.elapsed() >= Duration::from_millis(500), "exited before the batch could finish");
    assert_eq!(request.await.unwrap().expect("the running batch got its response"), 200);
    assert_eq!(redis.cmd_str(&["EXISTS", "term:29"]), resp::Value::Integer(1), "the last command ran");
}

#[test]
fn bad_settings_fail_at_start_up_by_name() {
    for (var, value, name) in [
        ("PIPELAB_LISTEN", "not-an-address", "--listen"),
        ("PIPELAB_MAX_COMMANDS", "many", "--max-commands"),
        ("PIPELAB_LOG_FORMAT", "xml", "--log-format"),
        ("PIPELAB_SHUTDOWN_GRACE_MS", "-5", "--shutdown-grace-ms"),
    ] {
        let (mut cmd, _) = serve_command(&[]);
        // serve_command sets --listen itself: drop it for the PIPELAB_LISTEN case.
        if var == "PIPELAB_LISTEN" {
            cmd = Command::new(env!("CARGO_BIN_EXE_pipelab"));
            cmd.arg("serve");
        }
        let out = cmd.env(var, value).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var}={value}: {stderr}");
        assert!(stderr.contains(name) && stderr.contains(value), "{var}={value}: {stderr}");
    }
}

/// `process_id` from `INFO server` over a Unix socket.
fn redis_pid(socket: &str) -> u32 {
    try_redis_pid(socket).expect("INFO server over the socket")
}

/// `redis_pid`, or `None` while the socket belongs to a server that is
/// going away (connect refused, reset, closed) or not answering yet.
fn try_redis_pid(socket: &str) -> Option<u32> {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").ok()?;
    let mut buf = Vec::new();
    let mut decoder = resp::Decoder::new();
    loop {
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let resp::Decoded::Complete { value: resp::Value::Bulk(text), .. } = decoder.decode(&buf).ok()? {
            let text = String::from_utf8(text).ok()?;
            let line = text.lines().find(|l| l.starts_with("process_id:"))?;
            return line["process_id:".len()..].trim().parse().ok();
        }
    }
}

#[tokio::test]
async fn shutdown_is_refused_and_a_dead_embedded_redis_comes_back() {
    let (cmd, port) = serve_command(&[]);
    let api = Pipelab::spawn(cmd, port);
    let socket = api.banner.split("unix://").nth(1).unwrap().trim_end_matches(')').to_string();

    // Nobody can stop the shared server through the API.
    let (status, body) = api.post("/api/v1/batch", &json!({"text": "SHUTDOWN NOSAVE"})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("SHUTDOWN is refused"), "{body}");

    // Killed anyway (from outside): the supervisor starts a new one on the same socket.
    let first = redis_pid(&socket);
    api_harness::unsafe_kill(first, 9);
    api_harness::wait_for(15, "a new redis-server", || try_redis_pid(&socket).is_some_and(|pid| pid != first));
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.get("/readyz").await.0 != 200 {
        assert!(Instant::now() < deadline, "/readyz did not come back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = api.post("/api/v1/batch", &json!({"text": "SET back 1\nGET back"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["summary"]["ok"], 2);
    // The supervisor logs once the new server answers PING, which may be
    // after this batch ran on it: wait for the line rather than race it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !api.stderr().contains("redis-server exited; started a new one") {
        assert!(Instant::now() < deadline, "{}", api.stderr());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The page as `pipelab serve` answers it when started outside the
/// repository with no `--web-dir`: the files built into the binary (the
/// web/dist this test binary was compiled with), or, for a binary compiled
/// before the page was built (cargo test before scripts/build-web.sh), a
/// page that says how to build it. scripts/test-deploy.sh runs a copy of the
/// release binary elsewhere too.
#[tokio::test]
async fn the_page_comes_from_the_binary_wherever_it_starts() {
    let redis = RedisServer::start();
    let away = tempfile::tempdir().unwrap();
    let (mut cmd, port) = serve_command(&["--redis", &redis.url]);
    cmd.current_dir(away.path());
    let api = Pipelab::spawn(cmd, port);
    let client = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let get = |path: &str, etag: Option<&str>| {
        let mut req = client.get(format!("{}{path}", api.base));
        if let Some(e) = etag {
            req = req.header("if-none-match", e);
        }
        async move {
            let res = req.send().await.unwrap();
            let h = |name: &str| res.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
            let (status, ctype, cache, etag) = (res.status().as_u16(), h("content-type"), h("cache-control"), h("etag"));
            (status, ctype, cache, etag, res.bytes().await.unwrap().to_vec())
        }
    };
    // An API-ish path with no file is a JSON 404 either way, never the page.
    for path in ["/api/openapi.json", "/swagger.json", "/api/v2/batch"] {
        let (status, ctype, _, _, body) = get(path, None).await;
        assert_eq!((status, ctype.as_str()), (404, "application/json"), "{path}: {}", String::from_utf8_lossy(&body));
        let err: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(err["error"]["message"].as_str().unwrap().contains("/api/v1/openapi.json"), "{err}");
    }
    let (status, ctype, cache, etag, page) = get("/", None).await;
    let page = String::from_utf8(page).unwrap();
    if status == 404 {
        assert!(ctype.starts_with("text/html") && page.contains("Page not built: run scripts/build-web.sh") && page.contains("--web-dir"), "{page}");
        return;
    }
    assert_eq!(status, 200, "{page}");
    assert!(ctype.starts_with("text/html") && page.contains("<html"), "{ctype}: {page}");
    assert_eq!(cache, "no-cache");
    assert_eq!(get("/", Some(&etag)).await.0, 304, "If-None-Match {etag}");
    let script = page.split("src=\"./").nth(1).and_then(|s| s.split('"').next()).expect("a script in index.html");
    let (status, ctype, cache, _, body) = get(&format!("/{script}"), None).await;
    assert_eq!((status, ctype.as_str()), (200, "text/javascript; charset=utf-8"), "{script}");
    assert!(cache.contains("immutable") && cache.contains("max-age=31536000"), "{script}: {cache}");
    let body = String::from_utf8_lossy(&body);
    let at = body.find("pipelab_wasm_bg-").expect("the script names its wasm module");
    let name: String = body[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || "_-.".contains(*c)).collect();
    let (status, ctype, cache, _, module) = get(&format!("/assets/{name}"), None).await;
    assert_eq!((status, ctype.as_str(), &module[..4]), (200, "application/wasm", &b"\0asm"[..]), "{name}");
    assert!(cache.contains("immutable"), "{cache}");
    // A client-side route is the page; a missing file is not.
    assert_eq!(get("/lessons/3", None).await.4, page.as_bytes());
    assert_eq!(get("/assets/main-00000000.js", None).await.0, 404);
}
