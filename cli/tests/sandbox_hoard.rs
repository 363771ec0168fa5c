//! Hoarding the sandbox from many addresses, against a real `pipelab serve
//! --sandbox` over TCP: 1,000 IPv4 loopback addresses (127.x.y.z, all local
//! on Linux) and 64 IPv6 /64s (addresses added to `lo` for the test, where
//! the machine lets root do so; where not, it says so loudly and runs the
//! IPv4 part), each sending cookie-less new visitors as fast as its rate
//! allows (`--sandbox-new-visitors-per-minute 1` here: at the default 30 the
//! opening burst alone would be 32,000 redis-server starts; on a 429 it waits
//! its `Retry-After`). Beside them a newcomer from an address of its own
//! arrives every 250 ms. Held: an IPv6 /64 counts as one address for the
//! rate; every address is served, refused only by its rate; no newcomer is
//! refused; a newcomer's first answer stays under 1 s at p99 from the
//! opening burst's second on, while that burst (every address at once, a
//! child start each) is served too, and a hoarder's once it has been;
//! afterwards every visitor served still holds their key. The opening
//! burst's own figures are printed, not held to the second: a 2-core node
//! starts about 120 children a second (docs/sandbox.md).
//!
//! CI runs it for 30 s (`PIPELAB_HOARD_SECONDS`), newcomers going on 10 s past the opening burst; `bench/sandbox.sh hoard`
//! runs it for a minute on a release build.

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api_harness::Pipelab;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// IPv6 addresses added to `lo` for the test, removed when dropped.
struct LoopbackV6 {
    added: Vec<Ipv6Addr>,
}

impl LoopbackV6 {
    /// Adds `addrs` to `lo` (`ip -6 addr add … nodad`, one `ip -batch`).
    /// Errors: why the machine does not allow it (no `ip`, not root, IPv6 off).
    fn add(addrs: &[Ipv6Addr]) -> Result<LoopbackV6, String> {
        if std::fs::read_to_string("/proc/sys/net/ipv6/conf/lo/disable_ipv6").map(|v| v.trim() == "1").unwrap_or(true) {
            return Err("IPv6 is off on lo (or /proc/sys/net/ipv6 is missing)".into());
        }
        let batch: String = addrs.iter().map(|a| format!("addr add {a}/128 dev lo nodad\n")).collect();
        let out = run_ip_batch(&batch)?;
        let me = LoopbackV6 { added: addrs.to_vec() };
        if !out.is_empty() {
            return Err(format!("ip -6 addr add: {out}"));
        }
        Ok(me)
    }
}

fn run_ip_batch(batch: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new("ip")
        .args(["-6", "-force", "-batch", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("ip: {e}"))?;
    child.stdin.take().unwrap().write_all(batch.as_bytes()).map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stderr).trim().to_string())
}

impl Drop for LoopbackV6 {
    fn drop(&mut self) {
        let batch: String = self.added.iter().map(|a| format!("addr del {a}/128 dev lo\n")).collect();
        let _ = run_ip_batch(&batch);
    }
}

/// One HTTP answer: status, `Set-Cookie`'s `name=value`, `Retry-After`, body.
struct Answer {
    status: u16,
    cookie: Option<String>,
    retry_after: Option<u64>,
    body: String,
}

/// `POST /api/v1/batch` with `text` from `from` (a connection of its own,
/// closed after), with `cookie` if given.
async fn post(from: IpAddr, to: SocketAddr, cookie: Option<&str>, text: &str) -> std::io::Result<Answer> {
    // Generous: a loaded machine answers late, but an answer that never comes is a fault.
    match tokio::time::timeout(Duration::from_secs(30), post_once(from, to, cookie, text)).await {
        Ok(answer) => answer,
        Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer within 30 s")),
    }
}

async fn post_once(from: IpAddr, to: SocketAddr, cookie: Option<&str>, text: &str) -> std::io::Result<Answer> {
    let socket = match from {
        IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.bind(SocketAddr::new(from, 0))?;
    let mut s = socket.connect(to).await?;
    let body = serde_json::json!({ "text": text }).to_string();
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    let head = format!("POST /api/v1/batch HTTP/1.1\r\nHost: localhost:{}\r\nContent-Type: application/json\r\nConnection: close\r\n{cookie}Content-Length: {}\r\n\r\n", to.port(), body.len());
    s.write_all(head.as_bytes()).await?;
    s.write_all(body.as_bytes()).await?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let header = |name: &str| head.lines().find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.trim().to_string()));
    let cookie = header("set-cookie").map(|c| c.split(';').next().unwrap().to_string());
    let retry_after = header("retry-after").and_then(|v| v.parse().ok());
    Ok(Answer { status, cookie, retry_after, body: body.to_string() })
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

/// What the run saw.
#[derive(Default)]
struct Seen {
    /// Served first answers: when sent (s since the start), how long (ms): the hoarders' new visitors.
    hoarders: Vec<(f64, f64)>,
    /// Newcomers' first answers, the same.
    newcomers: Vec<(f64, f64)>,
    /// Refusals by status (429 past an address's rate; anything else is a fault).
    refused: std::collections::BTreeMap<u16, usize>,
    /// Newcomers refused for good (anything but 503 `busy`, then served), with why.
    newcomers_refused: Vec<String>,
    /// Every fresh visitor's first answer, served or told to come back (ms).
    first_answers: Vec<f64>,
    /// Newcomers: how long from their first try until they were served (ms), and their tries.
    newcomers_served_after: Vec<(f64, usize)>,
    /// Socket errors.
    errors: Vec<String>,
    /// Every served visitor: cookie, the value of its key.
    kept: Vec<(String, String, IpAddr)>,
}

/// A new visitor from `from`: their first batch sets a key of their own.
/// Returns the answer and its time.
async fn new_visitor(from: IpAddr, to: SocketAddr, n: usize) -> (std::io::Result<Answer>, f64, String) {
    let value = format!("{from}#{n}");
    let t = Instant::now();
    let a = post(from, to, None, &format!("SET hoard \"{value}\"")).await;
    (a, t.elapsed().as_secs_f64() * 1000.0, value)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_addresses_cannot_hoard_the_sandbox() {
    let seconds: u64 = env_or("PIPELAB_HOARD_SECONDS", 30);
    let v4_count: usize = env_or("PIPELAB_HOARD_ADDRESSES", 1000);
    let v6_count: usize = env_or("PIPELAB_HOARD_V6_NETWORKS", 64);
    let per_minute: u32 = env_or("PIPELAB_HOARD_RATE", 1);
    let state = tempfile::tempdir().unwrap();
    // Free on both families (the server listens on [::], which takes IPv4 too).
    let port = std::net::TcpListener::bind((Ipv6Addr::UNSPECIFIED, 0)).unwrap().local_addr().unwrap().port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pipelab"));
    cmd.args(["serve", "--listen", &format!("[::]:{port}"), "--sandbox", "--max-connections", "4096"])
        .args(["--sandbox-new-visitors-per-minute", &per_minute.to_string(), "--sandbox-hibernate-after", "10s"])
        .arg("--sandbox-state-dir")
        .arg(state.path());
    for var in ["REDIS_URL", "PIPELAB_LISTEN", "PIPELAB_WEB_DIR"] {
        cmd.env_remove(var);
    }
    let server = Pipelab::spawn(cmd, port);
    let to4 = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let to6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port);

    // IPv6: /64s of a private prefix of this run's own, plus several addresses of one /64.
    let prefix = (std::process::id() & 0xffff) as u16;
    let networks: Vec<Ipv6Addr> = (0..v6_count).map(|i| Ipv6Addr::new(0xfd42, 0x7a11, prefix, i as u16, 0, 0, 0, 1)).collect();
    let one_net: Vec<Ipv6Addr> = (1..=(per_minute as u16 + 3)).map(|h| Ipv6Addr::new(0xfd42, 0x7a11, prefix, 0xffff, 0x1234, 0, 0, h)).collect();
    let all_v6: Vec<Ipv6Addr> = networks.iter().chain(&one_net).copied().collect();
    let v6 = match LoopbackV6::add(&all_v6) {
        Ok(v6) => Some(v6),
        Err(why) => {
            eprintln!("\n*** IPv6 IS NOT TESTED HERE: {why}. Only the IPv4 part runs. ***\n");
            None
        }
    };

    // An IPv6 /64 is one address for the rate: its hosts together get `per_minute` new visitors.
    if v6.is_some() {
        let mut served = 0;
        let mut statuses = Vec::new();
        for (i, h) in one_net.iter().enumerate() {
            let (a, _, _) = new_visitor(IpAddr::V6(*h), to6, i).await;
            let a = a.expect("an answer over IPv6");
            statuses.push(a.status);
            served += usize::from(a.status == 200);
        }
        assert_eq!(served, per_minute as usize, "{} hosts of one /64 got {served} new visitors at a rate of {per_minute} a minute: {statuses:?}", one_net.len());
        assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    }

    let hoarders: Vec<(IpAddr, SocketAddr)> = (0..v4_count)
        .map(|i| (IpAddr::V4(Ipv4Addr::new(127, 10 + (i / 250) as u8, (i % 250) as u8 + 1, 7)), to4))
        .chain(networks.iter().filter(|_| v6.is_some()).map(|a| (IpAddr::V6(*a), to6)))
        .collect();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    // Hoarders whose first visitor has not been answered yet: the opening burst.
    let first_pending = Arc::new(std::sync::atomic::AtomicUsize::new(hoarders.len()));
    let mut tasks = Vec::new();
    for (from, to) in hoarders.clone() {
        let seen = seen.clone();
        let first_pending = first_pending.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0;
            while Instant::now() < until {
                let sent = started.elapsed().as_secs_f64();
                let (a, ms, value) = new_visitor(from, to, n).await;
                if n == 0 {
                    first_pending.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
                }
                n += 1;
                if a.is_ok() {
                    seen.lock().unwrap().first_answers.push(ms);
                }
                match a {
                    Ok(a) if a.status == 200 && a.body.contains("\"OK\"") => {
                        let mut seen = seen.lock().unwrap();
                        seen.hoarders.push((sent, ms));
                        seen.kept.push((a.cookie.expect("a cookie"), value, from));
                    }
                    Ok(a) => {
                        *seen.lock().unwrap().refused.entry(a.status).or_default() += 1;
                        let wait = if matches!(a.status, 429 | 503) { a.retry_after.unwrap_or(1).max(1) } else { 1 };
                        let left = until.saturating_duration_since(Instant::now());
                        tokio::time::sleep(Duration::from_secs(wait).min(left)).await;
                    }
                    Err(e) => {
                        seen.lock().unwrap().errors.push(format!("{from}: {e}"));
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        }));
    }
    // Newcomers: one every 250 ms, each from an address nobody else uses,
    // for the run and at least 10 s past the opening burst (however long a
    // loaded machine takes to serve it; 3 minutes at most).
    let newcomers = {
        let seen = seen.clone();
        let first_pending = first_pending.clone();
        tokio::spawn(async move {
            let mut i = 0usize;
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            let mut running = Vec::new();
            let mut after_burst = 0;
            while (Instant::now() < until || after_burst < 40) && started.elapsed() < Duration::from_secs(180) {
                if first_pending.load(std::sync::atomic::Ordering::Acquire) == 0 {
                    after_burst += 1;
                }
                tick.tick().await;
                let from = IpAddr::V4(Ipv4Addr::new(127, 200 + (i / 250) as u8, (i % 250) as u8 + 1, 9));
                i += 1;
                let seen = seen.clone();
                running.push(tokio::spawn(async move {
                    let sent = started.elapsed().as_secs_f64();
                    let first_try = Instant::now();
                    // Told to come back (503 `busy`: a loaded node's batch slots), they do, as the page would.
                    for tries in 1..=60 {
                        let (a, ms, value) = new_visitor(from, to4, 0).await;
                        let wait = {
                            let mut seen = seen.lock().unwrap();
                            if tries == 1 && a.is_ok() {
                                seen.first_answers.push(ms);
                            }
                            match a {
                                Ok(a) if a.status == 200 => {
                                    if tries == 1 {
                                        seen.newcomers.push((sent, ms));
                                    }
                                    seen.newcomers_served_after.push((first_try.elapsed().as_secs_f64() * 1000.0, tries));
                                    seen.kept.push((a.cookie.expect("a cookie"), value, from));
                                    return;
                                }
                                Ok(a) if a.status == 503 && a.body.contains("\"busy\"") => a.retry_after.unwrap_or(1).max(1),
                                Ok(a) => return seen.newcomers_refused.push(format!("{from}: {} {}", a.status, a.body)),
                                Err(e) => return seen.newcomers_refused.push(format!("{from}: {e}")),
                            }
                        };
                        tokio::time::sleep(Duration::from_secs(wait)).await;
                    }
                    seen.lock().unwrap().newcomers_refused.push(format!("{from}: still told to come back after 60 tries"));
                }));
            }
            for r in running {
                r.await.unwrap();
            }
        })
    };
    for t in tasks {
        t.await.unwrap();
    }
    newcomers.await.unwrap();
    let attack = started.elapsed();

    // Every served visitor still holds their key (most hibernated by now: each comes back on their file).
    let kept = std::mem::take(&mut seen.lock().unwrap().kept);
    let checked = Instant::now();
    let gate = Arc::new(tokio::sync::Semaphore::new(8));
    let lost: Vec<String> = futures_util::future::join_all(kept.iter().map(|(cookie, value, from)| {
        let gate = gate.clone();
        async move {
            let _p = gate.acquire().await.unwrap();
            let to = if from.is_ipv4() { to4 } else { to6 };
            let want = format!("\"value\":\"{value}\"");
            for _ in 0..3 {
                match post(*from, to, Some(cookie), "GET hoard").await {
                    Ok(a) if a.status == 200 && a.body.contains(&want) => return None,
                    Ok(a) if a.status == 200 => return Some(format!("{from} {value}: {}", a.body)),
                    _ => tokio::time::sleep(Duration::from_secs(1)).await,
                }
            }
            Some(format!("{from} {value}: no answer"))
        }
    }))
    .await
    .into_iter()
    .flatten()
    .collect();
    let check_time = checked.elapsed();

    let mut seen = seen.lock().unwrap();
    let served = seen.hoarders.len();
    // The opening burst: every address fires at once at the start, and each
    // of those new visitors needs a redis-server started (docs/sandbox.md).
    // Its figures are printed; for hoarders the second is held once it has
    // been served, for newcomers from its second on.
    let burst_end = seen.hoarders.iter().filter(|(sent, _)| *sent < 1.0).map(|(sent, ms)| sent + ms / 1000.0).fold(0.0, f64::max);
    let summary = |v: &[(f64, f64)], steady: bool| {
        let mut ms: Vec<f64> = v.iter().filter(|(sent, _)| !steady || *sent > burst_end).map(|x| x.1).collect();
        (ms.len(), pct(&mut ms, 0.5), pct(&mut ms, 0.99), pct(&mut ms, 1.0))
    };
    let burst = summary(&seen.hoarders.iter().filter(|(sent, _)| *sent < 1.0).copied().collect::<Vec<_>>(), false);
    let steady_h = summary(&seen.hoarders, true);
    let all_n = summary(&seen.newcomers, false);
    let burst_n = summary(&seen.newcomers.iter().filter(|(sent, _)| *sent <= burst_end).copied().collect::<Vec<_>>(), false);
    // Newcomers who came after the burst's own second: while it is served, and after.
    let late_n = summary(&seen.newcomers.iter().filter(|(sent, _)| *sent >= 1.0).copied().collect::<Vec<_>>(), false);
    let mut slowest = seen.newcomers.clone();
    slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
    slowest.truncate(3);
    let mut waited: Vec<f64> = seen.newcomers_served_after.iter().map(|(ms, _)| *ms).collect();
    let waited = (waited.len(), pct(&mut waited, 0.5), pct(&mut waited, 0.99), pct(&mut waited, 1.0));
    let steady_n = summary(&seen.newcomers, true);
    let mut first = std::mem::take(&mut seen.first_answers);
    let first = (first.len(), pct(&mut first, 0.5), pct(&mut first, 0.99), pct(&mut first, 1.0));
    let metrics = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(to4).unwrap();
        s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text
    };
    let gauge = |name: &str| metrics.lines().find(|l| l.starts_with(name)).unwrap_or("").to_string();
    let f = |(n, p50, p99, max): (usize, f64, f64, f64)| format!("{n}: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms");
    eprintln!(
        "hoard: {} addresses ({v4_count} IPv4, {} IPv6 /64s) at {per_minute} new visitors a minute for {:.1} s: {served} served; refused {:?}; socket errors {}\n\
         every fresh visitor's first answer {}\n\
         the opening burst (sent in the first second; the last served at {burst_end:.1} s): {}; newcomers meanwhile {}\n\
         after it: hoarders' new visitors {}; newcomers' (one every 250 ms) {}\n\
         newcomers in all {}; the slowest (sent at s, ms) {slowest:.1?}; from their first try to served {}; {} refused\n\
         keys: {} visitors checked in {:.1} s, {} lost\n{}\n{}\n{}",
        hoarders.len(),
        hoarders.len() - v4_count,
        attack.as_secs_f64(),
        seen.refused,
        seen.errors.len(),
        f(first),
        f(burst),
        f(burst_n),
        f(steady_h),
        f(steady_n),
        f(all_n),
        f(waited),
        seen.newcomers_refused.len(),
        kept.len(),
        check_time.as_secs_f64(),
        lost.len(),
        gauge("pipelab_sandbox_children "),
        gauge("pipelab_sandbox_hibernated "),
        gauge("pipelab_sandbox_memory_bytes "),
    );
    // A thousand connections at once pass the listening socket's backlog:
    // the kernel resets a few (each such address tries again, and every one
    // must be served, below).
    assert!(seen.errors.len() <= hoarders.len() / 20, "socket errors: {} ({:?})", seen.errors.len(), &seen.errors[..seen.errors.len().min(10)]);
    assert!(served >= hoarders.len(), "every address got at least one visitor: {served} for {}", hoarders.len());
    assert!(seen.refused.keys().all(|s| *s == 429), "refusals other than the rate's: {:?}", seen.refused);
    assert!(seen.newcomers_refused.is_empty(), "newcomers refused: {:?}", seen.newcomers_refused);
    assert!(steady_n.0 >= 10, "newcomers served after the burst: {}", steady_n.0);
    assert!(steady_n.2 < 1000.0 && (steady_h.0 == 0 || steady_h.2 < 1000.0), "a fresh visitor's first answer after the opening burst: p99 newcomers {:.1} ms, hoarders {:.1} ms", steady_n.2, steady_h.2);
    assert!(late_n.2 < 1000.0, "a newcomer's first answer while the opening burst is served and after: p99 {:.1} ms", late_n.2);
    assert!(lost.is_empty(), "{} of {} visitors lost their key: {:?}", lost.len(), kept.len(), &lost[..lost.len().min(10)]);
    drop(server);
}
