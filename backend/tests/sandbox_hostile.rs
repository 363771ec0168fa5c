//! The sandbox against a hostile visitor who goes past the keyspace: the
//! host's disk, the sandbox's shared capacity (visitor places, batch slots,
//! sessions, spares) and pipelab's own memory. Each attack runs through the
//! in-process router as it would over HTTP; the attacker (A) and a real
//! visitor (B) come from different client addresses, and what B must still
//! get is asserted after A's attack.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod sandbox_client;

use std::time::{Duration, Instant};

use api_inproc::App;
use sandbox_client::{replies, sandbox, Visitor};
use axum::body::Body;
use axum::http::{header, Method, Request};
use pipelab_engine::sandbox::Settings;
use serde_json::json;

/// The app in the sandbox with `settings` (2 spares unless given) and a
/// batch timeout of 3 s, plus `flags`.
fn start(settings: Settings, flags: &[&str]) -> App {
    let mut all = vec!["--batch-timeout-ms", "3000"];
    all.extend_from_slice(flags);
    App::sandboxed(settings, &all)
}

/// `n` new visitors at `ip`, each with a cookie (a look at `/info`, which
/// gives them no Redis yet).
async fn cookies(app: &App, ip: &str, n: usize) -> Vec<Visitor> {
    let mut out = Vec::new();
    for _ in 0..n {
        let mut v = Visitor::at(ip);
        let (s, r, _) = v.send(app, Method::GET, "/api/v1/info", None).await;
        assert_eq!(s, 200, "{r}");
        out.push(v);
    }
    out
}

/// Lua's `redis.log` writes to the child's log file whatever the log
/// level: 40 MB of it from one script must not reach the disk (a loop of
/// these for the batch's whole time would fill it).
#[tokio::test]
async fn a_script_cannot_fill_the_disk_through_the_redis_log() {
    let app = start(Settings { spares: 1, ..Settings::default() }, &[]);
    let mut a = Visitor::at("10.0.0.1");
    let (s, r) = a.batch(&app, "SET mine A").await;
    assert_eq!(s, 200, "{r}");
    let dir = a.child(&app).process.dir().to_path_buf();
    let spam = "local s = string.rep('x', 1000000) for i = 1, 40 do redis.log(redis.LOG_WARNING, s) end return 1";
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"commands": [["EVAL", spam, "0"]]})).await;
    assert_eq!(s, 200, "{r}");
    let written: u64 = std::fs::read_dir(&dir).map_or(0, |d| d.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum());
    assert!(written < 2 << 20, "the visitor's Redis wrote {written} bytes to {}", dir.display());
    // The visitor goes on (on a new Redis if theirs had to go).
    let (s, r) = a.batch(&app, "PING").await;
    assert_eq!((s, replies(&r)[0]["value"].as_str()), (200, Some("PONG")), "{r}");
}

/// `--sandbox-max-visitors` running holds when new visitors arrive at once
/// and no spare is left: every one is served, and the least recently
/// active hibernate until no more than the cap run.
#[tokio::test]
async fn the_cap_on_running_visitors_holds_under_a_burst() {
    let app = start(Settings { spares: 1, max_visitors: 3, ..Settings::default() }, &[]);
    let crowd = cookies(&app, "10.0.0.1", 10).await;
    let runs = crowd.into_iter().map(|mut v| {
        let app = &app;
        async move { v.batch(app, "PING").await.0 }
    });
    let statuses = futures_util::future::join_all(runs).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let end = Instant::now() + Duration::from_secs(15);
    // A child is stopped before its visitor counts as hibernated: wait for both.
    while (sandbox(&app).children() > 3 || sandbox(&app).hibernated() < 7) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(sandbox(&app).children() <= 3, "{} children", sandbox(&app).children());
    assert!(sandbox(&app).hibernated() >= 7, "{} hibernated", sandbox(&app).hibernated());
}

/// Hibernated visitors coming back, several at a time, are started again
/// faster than the budget looks each second: room is made as each one
/// starts, so no more run than the cap and those being served at that
/// moment; every one reads their own key back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_holds_while_hibernated_visitors_come_back() {
    const MAX: usize = 4;
    const AT_ONCE: usize = 4;
    let app = start(Settings { spares: 1, max_visitors: MAX, ..Settings::default() }, &[]);
    let sup = sandbox(&app).clone();
    let mut crowd = Vec::new();
    for i in 0..40 {
        let mut v = Visitor::at(&format!("10.0.{i}.1"));
        let (s, r) = v.batch(&app, &format!("SET mine {i}")).await;
        assert_eq!(s, 200, "{r}");
        crowd.push(v);
    }
    settle(&sup, MAX, 40).await;
    assert!(sup.children() <= MAX, "{} running before they come back", sup.children());

    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let peak = tokio::spawn({
        let (sup, done) = (sup.clone(), done.clone());
        async move {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                peak = peak.max(sup.children());
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            peak
        }
    });
    let queue = tokio::sync::Mutex::new(crowd.into_iter().enumerate());
    let comers = (0..AT_ONCE).map(|_| async {
        let mut wrong = Vec::new();
        loop {
            let Some((i, mut v)) = queue.lock().await.next() else { return wrong };
            let (s, r) = v.batch(&app, "GET mine").await;
            if s != 200 || replies(&r)[0]["value"] != json!(i.to_string()) {
                wrong.push(format!("{i}: {s} {r}"));
            }
        }
    });
    let wrong: Vec<String> = futures_util::future::join_all(comers).await.into_iter().flatten().collect();
    done.store(true, std::sync::atomic::Ordering::Release);
    let peak = peak.await.unwrap();
    assert!(wrong.is_empty(), "{wrong:?}");
    assert!(peak <= MAX + 2 * AT_ONCE, "{peak} ran at once, for --sandbox-max-visitors {MAX} and {AT_ONCE} coming back at a time");
    // Once they are all quiet the cap holds again (a save may still be under way at first).
    settle(&sup, MAX, 40).await;
    assert!(sup.children() <= MAX && sup.hibernated() >= 40 - MAX, "{} running, {} hibernated", sup.children(), sup.hibernated());
}

/// Waits (15 s at most) until no more than `max` of `visitors` quiet
/// visitors run and the others are hibernated (their saves done).
async fn settle(sup: &pipelab_engine::sandbox::Supervisor, max: usize, visitors: usize) {
    let end = Instant::now() + Duration::from_secs(15);
    while (sup.children() > max || sup.hibernated() < visitors - max) && Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `/readyz` is never rate limited: a flood of it while no spare is ready
/// must not start a redis-server per request (nor keep them all as spares).
#[tokio::test]
async fn readiness_probes_do_not_start_a_child_each() {
    let app = start(Settings { spares: 1, ..Settings::default() }, &[]);
    let sup = sandbox(&app);
    // A visitor takes the one spare; the probes come before it is replaced.
    let (s, r) = Visitor::at("10.0.0.1").batch(&app, "PING").await;
    assert_eq!(s, 200, "{r}");
    let probes = (0..24).map(|_| app.get("/readyz"));
    let answers = futures_util::future::join_all(probes).await;
    assert!(answers.iter().all(|(s, _)| *s == 200), "{answers:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(sup.spares() <= 2, "{} spares kept, for --sandbox-spares 1", sup.spares());
}

/// Health probes and other requests without a cookie are not visitors to
/// remember: 2,000 of them (a load balancer's, or a flood: `/healthz` and
/// `/readyz` are never rate limited) leave the supervisor's table as it was.
#[tokio::test]
async fn probes_do_not_pile_up_visitors() {
    let app = start(Settings { spares: 1, ..Settings::default() }, &[]);
    let before = sandbox(&app).visitors();
    for path in ["/healthz", "/metrics"] {
        for _ in 0..1000 {
            let (s, _, _) = app.get_text(path).await;
            assert_eq!(s, 200);
        }
    }
    let after = sandbox(&app).visitors();
    assert!(after <= before + 2, "{before} visitors before, {after} after 2,000 probes");
}

/// One client address with many cookies (each a visitor) makes new ones
/// at its rate only (429 past it), so a visitor from another address
/// still gets a Redis.
#[tokio::test]
async fn one_address_cannot_fill_the_sandbox() {
    let app = start(Settings { spares: 2, max_visitors: 4, new_visitors_per_minute: 2, ..Settings::default() }, &[]);
    for (i, mut a) in cookies(&app, "10.0.0.1", 6).await.into_iter().enumerate() {
        let (s, r) = a.batch(&app, "PING").await;
        assert_eq!(s, if i < 2 { 200 } else { 429 }, "{r}");
    }
    let (s, r) = Visitor::at("10.0.0.2").batch(&app, "PING").await;
    assert_eq!(s, 200, "a visitor from another address: {r}");
}

/// Batch slots (`--max-concurrent-batches`) are shared: many cookies from
/// one address, each under its own cap, must not hold them all while a
/// visitor from elsewhere waits (the address's share,
/// `--max-batches-per-client` and `--max-blocking-per-client`, is less).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_batch_slot() {
    let flags = ["--max-concurrent-batches", "4", "--max-batches-per-client", "2", "--max-blocking-per-client", "2"];
    let app = start(Settings { spares: 4, visitor_batches: 2, ..Settings::default() }, &flags);
    let mut b = Visitor::at("10.0.0.2");
    let (s, r) = b.batch(&app, "PING").await;
    assert_eq!(s, 200, "{r}");
    let attackers = cookies(&app, "10.0.0.1", 2).await;
    let blocked: Vec<_> = attackers
        .iter()
        .flat_map(|a| [a.clone(), a.clone()])
        .map(|mut a| {
            let app = &app;
            async move { a.batch(app, "BLPOP nothing 2").await }
        })
        .collect();
    let victim = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t = Instant::now();
        let (s, r) = b.batch(&app, "PING").await;
        (s, r, t.elapsed())
    };
    let (_, (s, r, took)) = tokio::join!(futures_util::future::join_all(blocked), victim);
    assert_eq!(s, 200, "{r}");
    assert!(took < Duration::from_secs(1), "B waited {took:?} for a batch slot");
}

/// Sessions (`--max-sessions`) likewise: one address's cookies cannot open
/// them all (`--max-sessions-per-client`).
#[tokio::test]
async fn one_address_cannot_take_every_session() {
    let flags = ["--max-sessions", "4", "--max-sessions-per-client", "2"];
    let app = start(Settings { spares: 3, visitor_sessions: 2, ..Settings::default() }, &flags);
    for mut a in cookies(&app, "10.0.0.1", 2).await {
        for _ in 0..2 {
            let (s, r) = a.post(&app, "/api/v1/sessions", &json!({})).await;
            assert!([201, 429, 503].contains(&s), "{s} {r}");
        }
    }
    let (s, r) = Visitor::at("10.0.0.2").post(&app, "/api/v1/sessions", &json!({})).await;
    assert_eq!(s, 201, "a visitor from another address opens a session: {r}");
}

/// Pub/sub is the visitor's own too: B's `/subscribe` stream hears B's
/// PUBLISH, never A's on the same channel.
#[tokio::test]
async fn subscriptions_hear_only_the_visitors_own_messages() {
    use http_body_util::BodyExt;
    let app = start(Settings { spares: 2, ..Settings::default() }, &[]);
    let (mut a, mut b) = (Visitor::at("10.0.0.1"), Visitor::at("10.0.0.2"));
    for v in [&mut a, &mut b] {
        let (s, r) = v.batch(&app, "PING").await;
        assert_eq!(s, 200, "{r}");
    }
    let req = Request::builder().uri("/subscribe/news").header(header::COOKIE, b.cookie.clone().unwrap()).body(Body::empty()).unwrap();
    let res = app.respond_raw(req).await;
    assert_eq!(res.status(), 200);
    let mut events = res.into_body();
    let mut heard = String::new();
    let mut next = async || String::from_utf8(tokio::time::timeout(Duration::from_secs(5), events.frame()).await.expect("an event").unwrap().unwrap().into_data().unwrap().to_vec()).unwrap();
    heard.push_str(&next().await);
    assert!(heard.contains("subscribe,news,1"), "{heard}");
    let (s, r) = a.batch(&app, "PUBLISH news from-A").await;
    assert_eq!((s, replies(&r)[0]["value"].as_i64()), (200, Some(0)), "no subscriber on A's Redis: {r}");
    let (s, r) = b.batch(&app, "PUBLISH news from-B").await;
    assert_eq!((s, replies(&r)[0]["value"].as_i64()), (200, Some(1)), "{r}");
    heard.push_str(&next().await);
    assert!(heard.contains("message,news,from-B") && !heard.contains("from-A"), "{heard}");
}

/// The memory a visitor's Redis holds is what `--sandbox-memory` counts:
/// a script's Lua heap stays behind it, outside `maxmemory`, never past
/// the child's address-space limit, and is counted in the child's own
/// memory that the budget adds up.
#[tokio::test]
async fn a_finished_script_leaves_no_heap_beyond_the_budget() {
    let app = start(Settings { spares: 1, ..Settings::default() }, &[]);
    let mut a = Visitor::at("10.0.0.1");
    let (s, r) = a.batch(&app, "PING").await;
    assert_eq!(s, 200, "{r}");
    let heap = "local t = {} for i = 1, 48 do t[i] = string.rep('x', 1000000) .. i end return #t";
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"commands": [["EVAL", heap, "0"]]})).await;
    assert_eq!((s, replies(&r)[0]["value"].as_i64()), (200, Some(48)), "{r}");
    let pid = a.child(&app).process.pid;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss_kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches("kB").trim().parse().unwrap();
    let budget = pipelab_engine::sandbox::child::address_space(Settings::default().max_bytes);
    assert!(rss_kb * 1024 <= budget, "A's Redis holds {} MiB after its script ended; a visitor is budgeted {} MiB", rss_kb >> 10, budget >> 20);
    let counted = a.child(&app).process.private_bytes();
    assert!(counted >= 40 << 20, "the budget counts the heap left behind: {} MiB", counted >> 20);
}

/// A visitor's CPU bomb yields to pipelab: every thread of their Redis
/// (Redis's background threads too, which a lazy free keeps busy) runs
/// five steps of `nice` below pipelab's priority once it is theirs.
#[tokio::test]
async fn a_visitors_redis_runs_below_pipelabs_priority() {
    let app = start(Settings { spares: 1, ..Settings::default() }, &[]);
    let mut a = Visitor::at("10.0.0.1");
    let (s, r) = a.batch(&app, "PING").await;
    assert_eq!(s, 200, "{r}");
    // SAFETY: reads this thread's priority.
    let ours = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let pid = a.child(&app).process.pid;
    let threads: Vec<(String, i32)> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|t| {
            let stat = std::fs::read_to_string(t.unwrap().path().join("stat")).unwrap();
            // The fields after the command's name, which is in parentheses: nice is the 17th.
            let nice = stat.rsplit_once(')').unwrap().1.split_whitespace().nth(16).unwrap().parse().unwrap();
            (stat.split_whitespace().next().unwrap().to_string(), nice)
        })
        .collect();
    assert!(threads.len() >= 2, "redis-server runs background threads: {threads:?}");
    assert!(threads.iter().all(|(_, nice)| *nice == (ours + 5).min(19)), "pipelab at nice {ours}; the visitor's Redis: {threads:?}");
}
