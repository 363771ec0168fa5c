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

/// `POST /api/v1/batch` of `commands`, as the visitor of `cookie` if given.
fn batch_request(commands: &Json, cookie: Option<&str>) -> Vec<u8> {
    let body = json!({"commands": commands}).to_string();
    let cookie = cookie.map_or_else(String::new, |c| format!("Cookie: {c}\r\n"));
    format!("POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{cookie}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
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

/// Each socket from its address asks `request` again whenever refused and
/// never reads an answer given, for [`ATTACK`], while another client (the
/// visitor of `ping_cookie`, if given) sends PINGs: every answer is 200 or
/// 503 `busy` with `Retry-After` naming the budget, at most the budget's
/// worth is held, pipelab's RSS grows by at most 1.25× the budget above
/// `base`, a client asking again at once is mostly refused before its
/// batch runs, and the PINGs answer within 250 ms at p99. The sockets are
/// given back still open, their answers unread.
async fn attack(api: &Pipelab, base: u64, requests: Vec<(std::net::Ipv4Addr, Vec<u8>)>, ping_cookie: Option<&str>) -> Vec<TcpStream> {
    let pid = api.pid();
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
        let cookie = ping_cookie.map(str::to_string);
        tokio::spawn(async move {
            let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
            let mut took = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let mut req = client.post(format!("{base}/api/v1/batch")).header("content-type", "application/json");
                if let Some(cookie) = &cookie {
                    req = req.header("cookie", cookie);
                }
                let res = req.body(json!({"commands": [["PING"]]}).to_string()).send().await.unwrap();
                assert_eq!(res.status().as_u16(), 200);
                res.bytes().await.unwrap();
                took.push(started.elapsed());
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            took
        })
    };

    let mut clients = Vec::new();
    for (ip, request) in requests {
        let port = api.port;
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

    // Asked again at once after a refusal, a batch is refused before it runs (its Redis makes no reply for nobody).
    let up_front = busy.iter().filter(|a| a.error["message"].as_str().unwrap().contains("nothing was run")).count();
    assert!(up_front >= busy.len() - up_front, "{up_front} of {} refusals before the batch ran", busy.len());

    let grew_mib = peak.saturating_sub(base) as f64 / 1024.0;
    eprintln!("RSS: base {} MiB, peak +{grew_mib:.1} MiB; {held} held, {} refused ({up_front} before running)", base >> 10, busy.len());
    assert!(grew_mib <= 1.25 * BUDGET_MIB as f64, "RSS grew by {grew_mib:.1} MiB with a budget of {BUDGET_MIB} MiB");

    pings.sort();
    assert!(pings.len() >= 20, "{} PINGs answered", pings.len());
    let p99 = pings[(pings.len() * 99 / 100).min(pings.len() - 1)];
    eprintln!("PING: {} answered, p50 {:?}, p99 {p99:?}, max {:?}", pings.len(), pings[pings.len() / 2], pings[pings.len() - 1]);
    assert!(p99 < Duration::from_millis(250), "PING p99 {p99:?} during the attack");

    sockets
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

    let requests = (0..ADDRESSES).flat_map(|a| (0..SOCKETS).map(move |_| (std::net::Ipv4Addr::new(127, 0, 0, 2 + a), batch_request(&json!([["GET", "big"]]), None)))).collect();
    let sockets = attack(&api, base, requests, None).await;

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

/// The same in the public sandbox, where each socket is a visitor of its
/// own with the value in their own redis-server: what pipelab holds of
/// the visitors' unread answers stays within the one budget, and another
/// visitor's PINGs stay fast.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visitors_answers_nobody_reads_are_refused_past_the_budget_not_held() {
    let state = tempfile::tempdir().unwrap();
    let budget = format!("{BUDGET_MIB}mb");
    let (cmd, port) = api_harness::serve_command(&[
        "--sandbox",
        "--sandbox-state-dir",
        state.path().to_str().unwrap(),
        "--max-response-memory",
        &budget,
        "--write-timeout-ms",
        "120000",
        // The PINGs come every 10 ms, faster than a visitor's rate limit allows.
        "--rate-requests",
        "500",
    ]);
    let api = Pipelab::spawn(cmd, port);
    let setrange = json!({"commands": [["SETRANGE", "big", ((BIG_MIB << 20) - 1).to_string(), "x"]]});
    // Each socket's visitor: their cookie, their value stored in their own Redis.
    let mut requests = Vec::new();
    for a in 0..ADDRESSES {
        let ip = std::net::Ipv4Addr::new(127, 0, 0, 2 + a);
        let client = reqwest::Client::builder().local_address(std::net::IpAddr::V4(ip)).timeout(Duration::from_secs(30)).build().unwrap();
        for _ in 0..SOCKETS {
            let res = client.post(format!("{}/api/v1/batch", api.base)).header("content-type", "application/json").body(setrange.to_string()).send().await.unwrap();
            let cookie = res.headers().get("set-cookie").expect("a new visitor's cookie").to_str().unwrap().split(';').next().unwrap().to_string();
            let body: Json = res.json().await.unwrap();
            assert_eq!(body["summary"]["ok"], 1, "{body}");
            requests.push((ip, batch_request(&json!([["GET", "big"]]), Some(&cookie))));
        }
    }
    // The visitor who PINGs, on the loopback's first address.
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let res = client.post(format!("{}/api/v1/batch", api.base)).header("content-type", "application/json").body(json!({"commands": [["PING"]]}).to_string()).send().await.unwrap();
    let pinger = res.headers().get("set-cookie").expect("a new visitor's cookie").to_str().unwrap().split(';').next().unwrap().to_string();
    for _ in 0..20 {
        let res = client.post(format!("{}/api/v1/batch", api.base)).header("content-type", "application/json").header("cookie", &pinger).body(json!({"commands": [["PING"]]}).to_string()).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 200);
        res.bytes().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let base = rss_kib(api.pid());

    let sockets = attack(&api, base, requests, Some(&pinger)).await;
    drop(sockets);
}
