//! Defects that need the real `pipelab serve` (its accept
//! loop, its connections, its embedded Redis): a script that would freeze
//! Redis (2), a client that stops reading (4), the embedded Redis's memory
//! cap (7), the connection caps (8), and hyper's own errors (11).

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use api_harness::{raw_request, serve_command, wait_for, Pipelab};
use common::RedisServer;
use serde_json::{json, Value as Json};

fn pong(redis: &RedisServer) -> bool {
    redis.cmd_str(&["PING"]) == resp::Value::Simple(b"PONG".to_vec())
}

#[tokio::test]
async fn a_script_of_a_cut_batch_is_killed() {
    let redis = RedisServer::start_with(&["--busy-reply-threshold", "500"]);
    let api = Pipelab::start(&redis.url, &["--batch-timeout-ms", "300"]);
    let (status, res) = api.post("/api/v1/batch", &json!({"commands": [["EVAL", "while true do end", "0"]]})).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["results"][0]["status"], "unknown");
    // Redis answers again once the kill got through (after its busy threshold).
    wait_for(10, "Redis to answer PING after the script was killed", || pong(&redis));
    assert_eq!(api.get("/healthz").await.0, 200);
}

#[tokio::test]
async fn healthz_fails_while_redis_stays_busy() {
    let redis = RedisServer::start_with(&["--busy-reply-threshold", "200"]);
    let api = Pipelab::start(&redis.url, &["--batch-timeout-ms", "300"]);
    assert_eq!(api.get("/healthz").await.0, 200);
    // A script that wrote cannot be killed (UNKILLABLE): Redis stays BUSY.
    let script = "redis.call('SET', KEYS[1], '1') while true do end";
    let (status, _) = api.post("/api/v1/batch", &json!({"commands": [["EVAL", script, "1", "k"]]})).await;
    assert_eq!(status, 200);
    let mut last = Json::Null;
    for _ in 0..40 {
        let (status, body) = api.get("/healthz").await;
        if status == 503 {
            assert_eq!(body["error"]["code"], "redis_busy", "{body}");
            return;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("/healthz never failed while Redis stayed BUSY: {last}");
}

#[tokio::test]
async fn the_embedded_redis_has_a_memory_cap() {
    let (mut cmd, port) = serve_command(&["--embedded-maxmemory", "8mb"]);
    cmd.env_remove("PIPELAB_EMBEDDED_MAXMEMORY");
    let api = Pipelab::spawn(cmd, port);
    let (_, info) = api.get("/api/v1/info").await;
    assert_eq!(info["redis"]["maxmemory"], 8 << 20, "{info}");
    assert_eq!(info["redis"]["maxmemory_policy"], "noeviction");
    // 5 MB strings: the first two fit under 8 MB of used memory (checked
    // before each write), the third does not.
    let commands = json!([
        ["SETRANGE", "k", "536870911", "x"],
        ["SETRANGE", "a", "5000000", "x"],
        ["SETRANGE", "b", "5000000", "x"],
        ["SETRANGE", "c", "5000000", "x"],
        ["PING"]
    ]);
    let (status, res) = api.post("/api/v1/batch", &json!({"commands": commands})).await;
    assert_eq!(status, 200, "{res}");
    let results = res["results"].as_array().unwrap();
    assert_eq!(results[0]["status"], "error", "a 512 MB string is refused: {}", results[0]);
    assert_eq!(results[1]["status"], "ok", "{}", results[1]);
    assert_eq!(results[3]["status"], "error", "{}", results[3]);
    assert!(results[3]["reply"]["value"].as_str().unwrap().starts_with("OOM"), "{}", results[3]);
    assert_eq!(results[4]["reply"]["value"], "PONG", "Redis keeps serving");
    let (status, _) = api.post("/api/v1/batch", &json!({"commands": [["GET", "nothing"]]})).await;
    assert_eq!(status, 200, "and so does pipelab");

    // The default cap: 256 MiB.
    let (cmd, port) = serve_command(&[]);
    let api = Pipelab::spawn(cmd, port);
    let (_, info) = api.get("/api/v1/info").await;
    assert_eq!(info["redis"]["maxmemory"], 256 << 20, "{info}");
}

/// The peer closed `s` (EOF or reset) within a few seconds, rather than keeping it open.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

/// `pipelab_http_connections_refused_total{reason}`, or `None` while /metrics cannot be had.
async fn refused(api: &Pipelab, reason: &str) -> Option<f64> {
    let Ok((200, _, text)) = tokio::time::timeout(Duration::from_secs(2), api.get_text("/metrics")).await else {
        return None;
    };
    let line = format!("pipelab_http_connections_refused_total{{reason=\"{reason}\"}} ");
    text.lines().find_map(|l| l.strip_prefix(&line)).and_then(|v| v.trim().parse().ok())
}

#[tokio::test]
async fn connections_past_the_caps_are_closed_at_once() {
    let redis = RedisServer::start();
    for (flags, reason, cap) in [
        (["--max-connections", "3", "--max-connections-per-ip", "100"], "max_connections", 3),
        (["--max-connections", "100", "--max-connections-per-ip", "2"], "max_connections_per_ip", 2),
    ] {
        let api = Pipelab::start(&redis.url, &flags);
        assert_eq!(refused(&api, reason).await, Some(0.0), "listed from the start");
        let idle: Vec<TcpStream> = (0..cap).map(|_| TcpStream::connect(("127.0.0.1", api.port)).unwrap()).collect();
        let mut extra = TcpStream::connect(("127.0.0.1", api.port)).unwrap();
        let _ = extra.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        assert!(closed_by_server(&mut extra), "{reason}: connection {} was kept open", cap + 1);
        // Their places are freed when they close.
        drop(idle);
        let mut count = None;
        for _ in 0..50 {
            count = refused(&api, reason).await;
            if count.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(count.unwrap_or(0.0) >= 1.0, "{reason}: {count:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut() {
    let redis = RedisServer::start();
    // 32 MiB of ASCII: more than the socket buffers of both ends hold.
    redis.cmd_str(&["EVAL", "redis.call('SET', KEYS[1], string.rep('a', 33554432))", "1", "big"]);
    let api = Pipelab::start(&redis.url, &["--write-timeout-ms", "500"]);
    let body = serde_json::to_vec(&json!({"commands": [["GET", "big"]]})).unwrap();
    let head = format!(
        "POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut s = TcpStream::connect(("127.0.0.1", api.port)).unwrap();
    // A small receive buffer (loopback's grows to 32 MiB on its own here).
    {
        use std::os::fd::AsRawFd;
        let size: libc::c_int = 64 * 1024;
        // SAFETY: setsockopt on an open socket with a c_int option value.
        let rc = unsafe {
            libc::setsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, (&size as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t)
        };
        assert_eq!(rc, 0);
    }
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    // The response has started (the batch ran): then no reading for well
    // past the write timeout.
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut got = vec![0u8; 4096];
    let n = s.read(&mut got).unwrap();
    got.truncate(n);
    std::thread::sleep(Duration::from_secs(3));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got[..got.len().min(400)]).to_string();
    let declared: usize = text
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("no content-length in {text}"));
    let head_len = got.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(got.len() - head_len < declared, "the whole {declared} byte body arrived: the client was not cut");
    // The server goes on serving.
    let (status, _) = api.post("/api/v1/batch", &json!({"commands": [["PING"]]})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn what_hyper_answers_itself() {
    // A request hyper cannot parse, or with a head past hyper's buffer, gets
    // hyper's own bodiless answer: there is no hook for its body. A URI or
    // headers past the API's own limits (below hyper's) get the JSON shape.
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    let s = raw_request(api.port, "GARBAGE\r\n\r\n", b"");
    let (status, body) = api_harness::read_response(s);
    assert_eq!((status, body.as_str()), (400, ""));
    let head = format!("GET /api/v1/info?{} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", "q".repeat(10_000));
    let (status, body) = api_harness::read_response(raw_request(api.port, &head, b""));
    assert_eq!(status, 414);
    assert_eq!(serde_json::from_str::<Json>(&body).unwrap()["error"]["code"], "uri_too_long");
    let head = format!("GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\nConnection: close\r\n\r\n", "h".repeat(40_000));
    let (status, body) = api_harness::read_response(raw_request(api.port, &head, b""));
    assert_eq!(status, 431);
    assert_eq!(serde_json::from_str::<Json>(&body).unwrap()["error"]["code"], "headers_too_large");
}
