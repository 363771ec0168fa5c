//! The budget for answers (`--max-response-memory`) against clients that
//! ask for large answers and never read them, on the real `pipelab serve`
//! and redis-server: what pipelab holds stays within the budget, an answer
//! past it is refused rather than held (503 `busy` with `Retry-After`; 413
//! `answer_too_large` for one larger than the whole budget), and another
//! client's PINGs stay fast meanwhile.

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use api_harness::Pipelab;
use common::RedisServer;
use serde_json::{json, Value as Json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BUDGET_MIB: u64 = 32;
/// A value of NUL bytes: its JSON (`\u0000` each) is six times as large,
/// 18 MiB: one such answer fits in the budget, a second does not.
const BIG_MIB: u64 = 3;
/// 36 MiB of JSON: larger than the whole budget.
const HUGE_MIB: u64 = 6;
/// Client addresses (127.0.0.2 …) and the sockets each opens.
const ADDRESSES: u8 = 8;
const SOCKETS: usize = 2;
/// How long the clients keep asking.
const ATTACK: Duration = Duration::from_secs(8);

/// The server's resident memory (KiB), from /proc.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches(" kB").trim().parse().unwrap()
}

fn batch_request(commands: &Json) -> Vec<u8> {
    let body = json!({"commands": commands}).to_string();
    format!("POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// A connection from `ip` whose receive buffer is small, so that the
/// kernel takes little of an answer off pipelab's hands.
async fn connect_from(ip: std::net::Ipv4Addr, port: u16) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.bind((ip, 0).into()).unwrap();
    socket.connect(([127, 0, 0, 1], port).into()).await.unwrap()
}

/// An answer's head as read so far: its status, its `Retry-After`, and
/// (for a refusal, whose body is small) its error code and message.
struct Answer {
    status: u16,
    retry_after: Option<String>,
    error: Json,
}

/// Reads the head of the answer on `s` (and at most 1 KiB of a 200's
/// body, the rest left unread), and the whole body of a refusal.
async fn read_answer(s: &mut TcpStream) -> Option<Answer> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    let end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match tokio::time::timeout(Duration::from_secs(30), s.read(&mut chunk)).await {
            Ok(Ok(n @ 1..)) => buf.extend_from_slice(&chunk[..n]),
            _ => return None,
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let header = |name: &str| head.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string());
    let mut error = Json::Null;
    if status != 200 {
        let len: usize = header("content-length:")?.parse().ok()?;
        let mut body = buf[end..].to_vec();
        let mut rest = vec![0u8; len.checked_sub(body.len())?];
        s.read_exact(&mut rest).await.ok()?;
        body.extend_from_slice(&rest);
        error = serde_json::from_slice::<Json>(&body).ok()?["error"].clone();
    }
    Some(Answer { status, retry_after: header("retry-after:"), error })
}

/// 8 addresses × 2 sockets ask for an 18 MiB answer each, again whenever
/// refused, and never read one: pipelab's RSS stays within 1.25× the
/// budget above what it was before; the answer the budget has room for
/// is held, every other is refused 503 `busy` with `Retry-After`;
/// an answer larger than the whole budget is 413 `answer_too_large`
/// once the budget is free of others' answers; a
/// PING of another client meanwhile answers within 250 ms (p99).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_nobody_reads_are_refused_past_the_budget_not_held() {
    let redis = RedisServer::start();
    redis.cmd_str(&["SETRANGE", "big", &((BIG_MIB << 20) - 1).to_string(), "x"]);
    redis.cmd_str(&["SETRANGE", "huge", &((HUGE_MIB << 20) - 1).to_string(), "x"]);
    let budget = format!("{BUDGET_MIB}mb");
    let api = Pipelab::start(&redis.url, &["--max-response-memory", &budget, "--write-timeout-ms", "120000"]);
    let pid = api.pid();

    // Warm up (the command table, the pool, a large answer read), then the baseline.
    for _ in 0..20 {
        let (status, body) = api.post("/api/v1/batch", &json!({"commands": [["PING"]]})).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = api.post("/api/v1/batch", &json!({"commands": [["GET", "big"]]})).await;
    assert_eq!((status, &body["summary"]["ok"]), (200, &json!(1)), "{body}");

    // One answer larger than the whole budget: 413. The answer just read
    // leaves the budget when hyper drops its last frame, a moment after the
    // client has it all: until then its reply may be refused 503 `busy`.
    let (mut status, mut body) = api.post("/api/v1/batch", &json!({"commands": [["GET", "huge"]]})).await;
    for _ in 0..50 {
        if (status, body["error"]["code"].as_str()) != (503, Some("busy")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        (status, body) = api.post("/api/v1/batch", &json!({"commands": [["GET", "huge"]]})).await;
    }
    assert_eq!((status, body["error"]["code"].as_str()), (413, Some("answer_too_large")), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("--max-response-memory"), "{body}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base = rss_kib(pid);

    let peak = Arc::new(AtomicU64::new(rss_kib(pid)));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, stop) = (peak.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    // Another client's PINGs, one after the other, for as long as the attack.
    let pinger = {
        let (base, stop) = (api.base.clone(), stop.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
            let mut took = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let res = client.post(format!("{base}/api/v1/batch")).header("content-type", "application/json").body(json!({"commands": [["PING"]]}).to_string()).send().await.unwrap();
                assert_eq!(res.status().as_u16(), 200);
                res.bytes().await.unwrap();
                took.push(started.elapsed());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            took
        })
    };

    let request = batch_request(&json!([["GET", "big"]]));
    let mut clients = Vec::new();
    for a in 0..ADDRESSES {
        for _ in 0..SOCKETS {
            let (port, request) = (api.port, request.clone());
            let ip = std::net::Ipv4Addr::new(127, 0, 0, 2 + a);
            clients.push(tokio::spawn(async move {
                // Asks again on the same connection whenever refused; an
                // answer given is left unread (the socket is kept open).
                let mut s = connect_from(ip, port).await;
                let mut answers = Vec::new();
                let until = Instant::now() + ATTACK;
                while Instant::now() < until {
                    s.write_all(&request).await.unwrap();
                    let Some(answer) = read_answer(&mut s).await else { break };
                    let held = answer.status == 200;
                    answers.push(answer);
                    if held {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                (s, answers)
            }));
        }
    }
    let mut sockets = Vec::new();
    let mut answers = Vec::new();
    for c in clients {
        let (s, a) = c.await.unwrap();
        sockets.push(s);
        answers.extend(a);
    }
    stop.store(true, Ordering::Relaxed);
    sampler.await.unwrap();
    let mut pings = pinger.await.unwrap();
    let peak = peak.load(Ordering::Relaxed);

    let held = answers.iter().filter(|a| a.status == 200).count();
    let busy: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    for a in &answers {
        assert!(matches!(a.status, 200 | 503), "{} {}", a.status, a.error);
    }
    assert!(held as u64 * BIG_MIB * 6 <= BUDGET_MIB, "{held} answers of {} MiB held in a budget of {BUDGET_MIB} MiB", BIG_MIB * 6);
    assert!(busy.len() >= 16, "{} refusals of {} answers", busy.len(), answers.len());
    for a in &busy {
        assert_eq!(a.error["code"], "busy", "{}", a.error);
        assert!(a.error["message"].as_str().unwrap().contains("--max-response-memory"), "{}", a.error);
        assert!(a.retry_after.is_some(), "503 without Retry-After: {}", a.error);
    }

    let grew_mib = peak.saturating_sub(base) as f64 / 1024.0;
    eprintln!("RSS: base {} MiB, peak +{grew_mib:.1} MiB; {held} held, {} refused", base >> 10, busy.len());
    assert!(grew_mib <= 1.25 * BUDGET_MIB as f64, "RSS grew by {grew_mib:.1} MiB with a budget of {BUDGET_MIB} MiB");

    pings.sort();
    assert!(pings.len() >= 20, "{} PINGs answered", pings.len());
    let p99 = pings[(pings.len() * 99 / 100).min(pings.len() - 1)];
    eprintln!("PING: {} answered, p50 {:?}, p99 {p99:?}, max {:?}", pings.len(), pings[pings.len() / 2], pings[pings.len() - 1]);
    assert!(p99 < Duration::from_millis(250), "PING p99 {p99:?} during the attack");

    // The clients gone, the budget is free again: the answer is given.
    drop(sockets);
    let mut last = (0, Json::Null);
    for _ in 0..100 {
        last = api.post("/api/v1/batch", &json!({"commands": [["GET", "big"]]})).await;
        if last.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last.0, 200, "{}", last.1);
    assert_eq!(last.1["summary"]["ok"], 1, "{}", last.1);
}
