//! `pipelab serve` when things go wrong or get busy: Redis stopped and
//! restarted under it, a client leaving mid-batch, 50 batches at once, the
//! reply-size and time limits, and the embedded redis-server's lifecycle.
//! Redis going away and the limits are checked in-process (`api_inproc`);
//! the rest needs the binary (sockets, serving threads, signals).

mod api_harness;
#[path = "../../backend/tests/api_inproc/mod.rs"]
mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

use api_harness::{
    assert_only_idle_pooled, pipelab_connections, raw_request, serve_command, wait_for, Pipelab,
    RedisServer,
};
use api_inproc::App;

/// The server's pool bound (`max_idle`: max_concurrent_batches up to 64).
const POOL_MAX_IDLE: usize = 64;
use serde_json::{json, Value as Json};

#[tokio::test]
async fn redis_stopped_and_restarted_while_serving() {
    let mut redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let ping = json!({"commands": [["SET", "k", "1"]]});
    assert_eq!(api.post("/api/v1/batch", &ping).await.0, 200);

    redis.kill();
    let (status, body) = api.post("/api/v1/batch", &ping).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "redis_unavailable");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Redis is unreachable"));
    let (status, body) = api.post("/api/v1/compare", &ping).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("redis_unavailable"))
    );
    let (status, body) = api
        .post(
            "/api/v1/sweep",
            &json!({"command": ["SET", "s{i}", "x"], "total": 3, "batch_sizes": [1]}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("redis_unavailable"))
    );
    assert_eq!(api.get("/healthz").await.0, 200, "the process is alive");
    let (status, body) = api.get("/readyz").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("redis_unavailable"))
    );
    let (status, info) = api.get("/api/v1/info").await;
    assert_eq!(status, 200);
    assert_eq!(info["redis"]["reachable"], false);
    assert!(info["redis"]["error"].is_string());

    redis.restart();
    let (status, body) = api.post("/api/v1/batch", &ping).await;
    assert_eq!(status, 200, "recovers without a restart of pipelab: {body}");
    assert_eq!(api.get("/readyz").await.0, 200);
    assert_eq!(
        redis.cmd_str(&["GET", "k"]),
        resp::Value::Bulk(b"1".to_vec())
    );
}

/// The client goes away while its batch runs: the batch's Redis connection
/// is closed at once, not when the batch would have ended.
#[tokio::test]
async fn client_disconnect_mid_batch_leaks_no_connection() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    // 100 sequential round trips of 50 ms: 5 s if left to run.
    let cmds: Vec<Json> = (0..100).map(|_| json!(["INCR", "n"])).collect();
    let body = json!({"commands": cmds, "mode": "sequential", "simulated_rtt_ms": 50}).to_string();
    let head = format!(
        "POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let socket = raw_request(api.port, &head, body.as_bytes());
    wait_for(5, "the batch's connection in CLIENT LIST", || {
        pipelab_connections(&redis) == 1
    });
    std::thread::sleep(Duration::from_millis(300));
    let left_at = Instant::now();
    drop(socket);
    wait_for(3, "the batch's connection to close", || {
        pipelab_connections(&redis) == 0
    });
    let closed_after = left_at.elapsed();
    assert!(
        closed_after < Duration::from_secs(2),
        "closed only after {closed_after:?}"
    );
    // The batch stopped too: INCR count froze well short of 100.
    let resp::Value::Bulk(n) = redis.cmd_str(&["GET", "n"]) else {
        panic!("n missing")
    };
    let n: u32 = String::from_utf8(n).unwrap().parse().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        redis.cmd_str(&["GET", "n"]),
        resp::Value::Bulk(n.to_string().into_bytes())
    );
    assert!(n < 50, "{n} commands ran");
    // And the server still serves.
    assert_eq!(
        api.post("/api/v1/batch", &json!({"commands": [["PING"]]}))
            .await
            .0,
        200
    );
}

/// A client leaving mid-sweep: the sweep stops and its keys are deleted all the same.
#[tokio::test]
async fn client_disconnect_mid_sweep_still_cleans_up() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    redis.cmd_str(&["SET", "keep", "1"]);
    // 300 round trips of 20 ms: 6 s if left to run.
    let body = json!({"command": ["SET", "gone:{i}", "x"], "total": 300, "batch_sizes": [1], "simulated_rtt_ms": 20})
        .to_string();
    let head = format!(
        "POST /api/v1/sweep HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let socket = raw_request(api.port, &head, body.as_bytes());
    wait_for(5, "the sweep to write keys", || match redis.cmd_str(&["DBSIZE"]) {
        resp::Value::Integer(n) => n > 5,
        _ => false,
    });
    drop(socket);
    wait_for(3, "the sweep's keys to be deleted", || redis.cmd_str(&["DBSIZE"]) == resp::Value::Integer(1));
    assert_eq!(redis.cmd_str(&["GET", "keep"]), resp::Value::Bulk(b"1".to_vec()));
    // Only the pool's idle connections remain (the sweep's RTT batches had
    // their own connections, closed with it).
    assert_only_idle_pooled(&api, &redis, POOL_MAX_IDLE, 3).await;
}

#[tokio::test]
async fn fifty_concurrent_batches() {
    let redis = RedisServer::start();
    let api = std::sync::Arc::new(Pipelab::start(&redis.url, &[]));
    let mut tasks = Vec::new();
    for t in 0..50 {
        let api = api.clone();
        tasks.push(tokio::spawn(async move {
            let mut cmds: Vec<Json> = (0..100).map(|_| json!(["INCR", "shared"])).collect();
            cmds.push(json!(["SET", format!("own:{t}"), t.to_string()]));
            cmds.push(json!(["GET", format!("own:{t}")]));
            let mode = ["sequential", "pipeline", "transaction"][t % 3];
            // Half on pooled connections, half behind the delay line (fresh ones).
            let rtt = if t % 2 == 0 { 0 } else { 1 };
            let body =
                json!({"commands": cmds, "mode": mode, "batch_size": 7, "simulated_rtt_ms": rtt});
            let (status, res) = api.post("/api/v1/batch", &body).await;
            assert_eq!(status, 200, "batch {t}: {res}");
            assert_eq!(res["summary"]["ok"], 102, "batch {t}: {}", res["summary"]);
            // Each batch's replies are its own.
            assert_eq!(res["results"][101]["reply"]["value"], t.to_string());
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    assert_eq!(
        redis.cmd_str(&["GET", "shared"]),
        resp::Value::Bulk(b"5000".to_vec())
    );
    assert_only_idle_pooled(&api, &redis, POOL_MAX_IDLE, 3).await;
}

/// Past --max-reply-bytes the executor stops reading and the rest is
/// `unknown`; past --batch-timeout-ms the batch is cut the same way, and
/// the commands that did answer keep their results. Neither leaves a
/// connection behind.
#[tokio::test]
async fn reply_size_and_time_limits() {
    let redis = RedisServer::start();
    let api = App::start(
        &redis.url,
        &["--max-reply-bytes", "10000", "--batch-timeout-ms", "700"],
    );
    let big = "x".repeat(4000);
    assert_eq!(
        api.post("/api/v1/batch", &json!({"commands": [["SET", "big", big]]}))
            .await
            .0,
        200
    );
    let gets: Vec<Json> = (0..6).map(|_| json!(["GET", "big"])).collect();
    let (status, res) = api
        .post(
            "/api/v1/batch",
            &json!({"commands": gets, "mode": "sequential"}),
        )
        .await;
    assert_eq!(status, 200, "{res}");
    let statuses: Vec<&str> = res["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses[..2], ["ok", "ok"], "{statuses:?}");
    assert!(
        statuses.contains(&"unknown") || statuses.contains(&"not_sent"),
        "{statuses:?}"
    );
    assert!(
        !statuses[3..].contains(&"ok"),
        "read on past the limit: {statuses:?}"
    );
    assert!(res["summary"]["bytes_received"].as_u64().unwrap() < 16_000);

    // Two sequential 0.4 s waits (BLPOP on an empty list): each read is
    // under the timeout, the batch is not.
    let body = json!({"commands": [["BLPOP", "empty", "0.4"], ["BLPOP", "empty", "0.4"]], "mode": "sequential"});
    let started = Instant::now();
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["results"][0]["status"], "ok", "{res}");
    assert_eq!(res["results"][1]["status"], "unknown", "{res}");
    assert_eq!(res["summary"]["unknown"], 1, "{res}");
    assert!(
        res["connection_error"].as_str().unwrap().contains("batch timeout"),
        "{res}"
    );
    assert!(started.elapsed() < Duration::from_millis(1500));
    // The cut and the timed-out batches' connections were dropped, not
    // pooled (the cut batch ran on the connection the first batch left
    // idle): nothing may be left but at most one idle connection.
    api.assert_only_idle_pooled(&redis, 1, 3).await;
}

/// Without --redis: a private redis-server on a Unix socket, stopped (and
/// its directory removed) on SIGTERM.
#[tokio::test]
async fn embedded_redis_lifecycle() {
    let (cmd, port) = serve_command(&[]);
    let mut api = Pipelab::spawn(cmd, port);
    let (status, info) = api.get("/api/v1/info").await;
    assert_eq!(status, 200);
    assert_eq!(info["redis"]["source"], "embedded");
    assert_eq!(info["redis"]["reachable"], true);
    let target = info["redis"]["target"].as_str().unwrap().to_string();
    let socket = target
        .strip_prefix("unix://")
        .expect("a Unix socket")
        .to_string();
    assert!(std::path::Path::new(&socket).exists());
    let (status, res) = api
        .post(
            "/api/v1/batch",
            &json!({"commands": [["SET", "a", "1"], ["GET", "a"]]}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(res["results"][1]["reply"]["value"], "1");
    // No persistence: CONFIG GET save is empty, appendonly no (asked
    // directly: the API refuses CONFIG GET, which can reveal secrets).
    let config = |name: &str| {
        let out = std::process::Command::new("redis-cli")
            .args(["-s", &socket, "CONFIG", "GET", name])
            .output()
            .expect("redis-cli");
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(config("save"), "save\n\n");
    assert_eq!(config("appendonly"), "appendonly\nno\n");

    let pids = redis_pids_with(&socket);
    assert_eq!(pids.len(), 1, "one redis-server on {socket}");
    assert_eq!(
        api.stop(),
        Some(0),
        "clean exit on SIGTERM; stderr:\n{}",
        api.stderr()
    );
    wait_for(5, "the embedded redis-server to exit", || {
        !std::path::Path::new(&format!("/proc/{}", pids[0])).exists()
    });
    let dir = std::path::Path::new(&socket).parent().unwrap();
    assert!(!dir.exists(), "temp dir {} left behind", dir.display());
}

/// If pipelab is killed outright (SIGKILL), the kernel still takes its
/// redis-server down (PR_SET_PDEATHSIG).
#[tokio::test]
async fn embedded_redis_dies_with_a_killed_server() {
    let (cmd, port) = serve_command(&[]);
    let api = Pipelab::spawn(cmd, port);
    let (_, info) = api.get("/api/v1/info").await;
    let socket = info["redis"]["target"]
        .as_str()
        .unwrap()
        .strip_prefix("unix://")
        .unwrap()
        .to_string();
    let pids = redis_pids_with(&socket);
    assert_eq!(pids.len(), 1);
    drop(api); // SIGKILL
    wait_for(5, "the orphaned redis-server to exit", || {
        !std::path::Path::new(&format!("/proc/{}", pids[0])).exists()
    });
}

#[test]
fn missing_redis_server_says_how_to_fix_it() {
    let empty = tempfile::tempdir().unwrap();
    let (mut cmd, _) = serve_command(&[]);
    cmd.env("PATH", empty.path());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one clear line: {stderr}");
    for needle in [
        "redis-server not found",
        "apt-get install redis-server",
        "--redis",
        "REDIS_URL",
    ] {
        assert!(lines[0].contains(needle), "{needle:?} missing: {stderr}");
    }
}

#[test]
fn bad_flags_and_taken_port() {
    let (mut cmd, _) = serve_command(&["--redis", "http://nope"]);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("REDIS_URL"));

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let out = Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args([
            "serve",
            "--redis",
            "redis://127.0.0.1:1",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot listen on") && stderr.contains("--listen"),
        "{stderr}"
    );
}

/// Settings come from the environment as well as flags.
#[tokio::test]
async fn environment_variables_configure_the_server() {
    let redis = RedisServer::start();
    let port = api_harness::free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pipelab"));
    cmd.arg("serve")
        .env("PIPELAB_LISTEN", format!("127.0.0.1:{port}"))
        .env("REDIS_URL", &redis.url)
        .env("PIPELAB_MAX_COMMANDS", "77");
    let api = Pipelab::spawn(cmd, port);
    let (_, info) = api.get("/api/v1/info").await;
    assert_eq!(info["redis"]["target"], redis.url);
    assert_eq!(info["limits"]["max_commands"], 77);
    let _ = std::io::stdout().flush();
}

/// Process ids of redis-server processes whose command line names `socket`.
fn redis_pids_with(socket: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.contains("redis-server") && cmdline.contains(socket) {
            pids.push(pid);
        }
    }
    pids
}

/// A big batch whose body is still arriving when SIGTERM comes is read,
/// run and answered within the grace period. Its body is parsed, and the
/// batch run, on another serving thread than the request's: a thread with
/// no connection of its own must not shut its runtime down (and cancel
/// them, answering 500) while another still serves.
#[tokio::test]
async fn a_batch_still_arriving_at_sigterm_is_answered() {
    use std::io::Read;
    let redis = RedisServer::start();
    let mut api = Pipelab::start(&redis.url, &["--threads", "2"]);
    let commands: Vec<Json> = (0..20_000).map(|i| json!(["SET", format!("k{i}"), "v"])).collect();
    let body = serde_json::to_vec(&json!({"commands": commands, "batch_size": 20_000})).unwrap();
    assert!(body.len() >= 256 * 1024, "big enough to be parsed on the other thread");

    let port = api.port;
    let sender = std::thread::spawn(move || {
        let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            tcp,
            "POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .unwrap();
        // The body in 20 pieces over ~1 s; SIGTERM arrives in the middle.
        for piece in body.chunks(body.len().div_ceil(20)) {
            tcp.write_all(piece).unwrap();
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).unwrap();
        answer
    });
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(api.stop(), Some(0), "clean exit; stderr:\n{}", api.stderr());
    let answer = sender.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{}", &answer[..answer.len().min(300)]);
    assert!(answer.contains(r#""ok":20000"#), "every command ran: {}", &answer[answer.len().saturating_sub(400)..]);
}

/// A client that starts a request and stalls in its headers (slowloris)
/// has its connection closed after the header timeout, instead of holding
/// it open for as long as it likes.
#[tokio::test]
async fn stalled_request_headers_are_cut() {
    use std::io::Read;
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &["--header-timeout-ms", "300"]);
    let mut tcp = std::net::TcpStream::connect(("127.0.0.1", api.port)).unwrap();
    tcp.write_all(b"POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\n").unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 256];
    let n = tcp.read(&mut buf).expect("the server closes the connection, not the read timeout");
    assert_eq!(n, 0, "closed without an answer: {}", String::from_utf8_lossy(&buf[..n]));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // The server goes on serving.
    let (status, _) = api.post("/api/v1/batch", &json!({"commands": [["PING"]]})).await;
    assert_eq!(status, 200);
}
