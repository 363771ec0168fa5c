//! Big batches: their report is streamed while the batch runs (chunked
//! transfer encoding). The streamed JSON must be the same report an
//! unstreamed batch gets, a client leaving mid-stream must stop the batch
//! and close its connection, and a batch cut by the batch timeout keeps the
//! results it had.

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::Read;
use std::time::{Duration, Instant};

use api_harness::{pipelab_connections, raw_request, wait_for, Pipelab, RedisServer};
use serde_json::{json, Value as Json};

/// POST `body` on a raw socket with `Connection: close`: the response head
/// (lowercase) and the parsed JSON body, de-chunked.
fn post_raw_http(port: u16, body: &Json) -> (String, Json) {
    let body = body.to_string();
    let head = format!(
        "POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let socket = raw_request(port, &head, body.as_bytes());
    let mut raw = Vec::new();
    let mut s = socket;
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head") + 4;
    let head = String::from_utf8_lossy(&raw[..split]).to_lowercase();
    let body = if head.contains("transfer-encoding: chunked") { dechunk(&raw[split..]) } else { raw[split..].to_vec() };
    let json = serde_json::from_slice(&body).unwrap_or_else(|e| panic!("not JSON ({e})"));
    (head, json)
}

/// The payload of an HTTP/1.1 chunked body; panics unless it ends with the last chunk.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let eol = raw.windows(2).position(|w| w == b"\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(std::str::from_utf8(&raw[..eol]).unwrap().trim(), 16).unwrap();
        raw = &raw[eol + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

#[tokio::test]
async fn a_big_report_is_streamed_and_whole() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    let n = 20_000;
    let cmds: Vec<Json> = (0..n)
        .map(|i| if i % 1000 == 7 { json!(["INCR", "text"]) } else { json!(["SET", format!("k:{i}"), format!("v{i}")]) })
        .collect();
    redis.cmd_str(&["SET", "text", "abc"]);

    let (head, res) = post_raw_http(api.port, &json!({"commands": cmds, "batch_size": 700}));
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("transfer-encoding: chunked"), "not streamed: {head}");
    let results = res["results"].as_array().unwrap();
    assert_eq!(results.len(), n);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["index"], i, "results out of order at {i}");
        let want = if i % 1000 == 7 { "error" } else { "ok" };
        assert_eq!(r["status"], want, "{r}");
    }
    let s = &res["summary"];
    assert_eq!((s["commands"].as_u64(), s["ok"].as_u64(), s["errors"].as_u64()), (Some(n as u64), Some(n as u64 - 20), Some(20)));
    assert_eq!(s["round_trips"], (n as u64).div_ceil(700));
    assert!(res.get("connection_error").is_none(), "{}", res["connection_error"]);
    assert_eq!(redis.cmd_str(&["GET", "k:19999"]), resp::Value::Bulk(b"v19999".to_vec()));

    // Only the errors: the same counts, 20 results, still valid JSON.
    let (_, res) = post_raw_http(api.port, &json!({"commands": cmds, "results": "errors"}));
    let results = res["results"].as_array().unwrap();
    assert_eq!(results.len(), 20);
    assert_eq!(results[0]["index"], 7);
    assert_eq!(res["summary"]["ok"], n as u64 - 20);

    // A small batch is not streamed, and its JSON has the same members.
    let (head, small) = post_raw_http(api.port, &json!({"commands": [["PING"]]}));
    assert!(head.contains("content-length:"), "{head}");
    assert_eq!(small["results"][0]["reply"]["value"], "PONG");
    assert_eq!(small["summary"]["ok"], 1);
}

/// The client leaves after the report started: the batch stops and its
/// Redis connection closes at once, as when it leaves before.
#[tokio::test]
async fn a_client_leaving_mid_stream_stops_the_batch() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    // 100 round trips of 30 ms: 3 s if left to run; the first chunk of the
    // report (256 KiB, ~2,700 results) is full after ~30 of them.
    let cmds: Vec<Json> = (0..10_000).map(|_| json!(["INCR", "n"])).collect();
    let body = json!({"commands": cmds, "batch_size": 100, "simulated_rtt_ms": 30}).to_string();
    let head = format!(
        "POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut socket = raw_request(api.port, &head, body.as_bytes());
    socket.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut first = [0u8; 4096];
    let got = socket.read(&mut first).unwrap();
    let text = String::from_utf8_lossy(&first[..got]).to_lowercase();
    assert!(text.starts_with("http/1.1 200") && text.contains("transfer-encoding: chunked"), "{text}");

    let left_at = Instant::now();
    drop(socket);
    wait_for(3, "the batch's connection to close", || pipelab_connections(&redis) == 0);
    assert!(left_at.elapsed() < Duration::from_secs(2), "closed only after {:?}", left_at.elapsed());
    let count = |r: resp::Value| match r {
        resp::Value::Bulk(n) => String::from_utf8(n).unwrap().parse::<u32>().unwrap(),
        other => panic!("{other:?}"),
    };
    let n = count(redis.cmd_str(&["GET", "n"]));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(count(redis.cmd_str(&["GET", "n"])), n, "the batch went on after the client left");
    assert!(n < 9_000, "{n} commands ran");
    // The server still serves.
    let (head, res) = post_raw_http(api.port, &json!({"commands": [["PING"]]}));
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(res["summary"]["ok"], 1);
}

/// A streamed batch reaching the batch timeout is cut: the results it had
/// stay, the commands in flight are `unknown`, and the JSON is whole.
#[tokio::test]
async fn the_batch_timeout_cuts_a_streamed_batch() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &["--batch-timeout-ms", "1500"]);
    // 5,000 quick SETs (the report starts streaming), then 200 BLPOPs that
    // wait 50 ms each on an empty list: 10 s, over the 1.5 s limit.
    let mut cmds: Vec<Json> = (0..5_000).map(|i| json!(["SET", format!("k{i}"), "v"])).collect();
    cmds.extend((0..200).map(|_| json!(["BLPOP", "empty", "0.05"])));
    let started = Instant::now();
    let (head, res) = post_raw_http(api.port, &json!({"commands": cmds, "batch_size": 1000}));
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(head.starts_with("http/1.1 200") && head.contains("transfer-encoding: chunked"), "{head}");
    let s = &res["summary"];
    let (ok, unknown) = (s["ok"].as_u64().unwrap(), s["unknown"].as_u64().unwrap());
    assert!((5_000..5_100).contains(&ok), "{s}");
    assert_eq!(ok + unknown, 5_200, "the BLPOP chunk was written whole: {s}");
    let results = res["results"].as_array().unwrap();
    assert_eq!(results.len(), 5_200);
    assert_eq!(results[4_999]["status"], "ok");
    assert_eq!(results[5_199]["status"], "unknown");
    assert!(res["connection_error"].as_str().unwrap().contains("batch timeout"), "{}", res["connection_error"]);
    wait_for(3, "the cut batch's connection to close", || pipelab_connections(&redis) == 0);
}
