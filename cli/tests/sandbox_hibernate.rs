//! The sandbox for a crowd: a quiet visitor hibernates (their keys saved to
//! the state directory, their redis-server stopped) and comes back on a
//! redis-server started on those keys; the memory budget hibernates the
//! least recently active rather than refuse anyone; the disk budget removes
//! the saved keys of those idle longest, and they are told. Every check is
//! made on real redis-server children, through the in-process router.

mod api_harness;
#[path = "../../backend/tests/api_inproc/mod.rs"]
mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
#[path = "../../backend/tests/sandbox_client/mod.rs"]
mod sandbox_client;

use std::time::{Duration, Instant};

use api_inproc::App;
use sandbox_client::{direct, replies, sandbox, until, Visitor};
use axum::http::{header, Method};
use pipelab_engine::sandbox::{Child, Settings};
use resp::Value;
use serde_json::{json, Value as Json};

/// The app in the sandbox with `settings` and a batch timeout of 5 s.
fn start(settings: Settings) -> App {
    App::sandboxed(settings, &["--batch-timeout-ms", "5000"])
}

/// Text that LZF (an RDB's string compression) cannot shrink much.
fn noise(len: usize, seed: u64) -> String {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[(x % 62) as usize])
        })
        .collect()
}

/// Strings, a hash, a stream and a set with an expiry come back byte for
/// byte (DUMP compared on the old and the new redis-server), and the
/// returning visitor's first answer already has them: never an empty Redis.
#[tokio::test]
async fn keys_survive_hibernation_byte_for_byte() {
    let app = start(Settings { spares: 1, ..Settings::default() });
    let sup = sandbox(&app);
    let mut a = Visitor::at("10.1.0.1");
    let (s, r) = a
        .commands(
            &app,
            json!([
                ["SET", "greeting", "hello, world"],
                ["SET", "counter", "41"],
                ["INCR", "counter"],
                ["SET", "big", noise(50_000, 1)],
                ["HSET", "user:1", "name", "Ada", "lang", "en", "visits", "3"],
                ["XADD", "events", "1-1", "kind", "click", "x", "10"],
                ["XADD", "events", "2-1", "kind", "view"],
                ["SADD", "tags", "redis", "pipeline", "rtt"],
                ["EXPIRE", "tags", "3600"],
                ["SET", "soon", "v", "PX", "600000"]
            ]),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    // A set's DUMP follows its hash table, whose seed each process draws: its members are compared instead.
    let keys = ["greeting", "counter", "big", "user:1", "events", "soon"];
    let before: Vec<Value> = keys.iter().map(|k| direct(&a.child(&app), &["DUMP", k])).collect();
    let members = |child: &Child| match direct(child, &["SMEMBERS", "tags"]) {
        Value::Array(m) => {
            let mut m: Vec<Value> = m;
            m.sort_by_key(|v| format!("{v:?}"));
            m
        }
        other => panic!("{other:?}"),
    };
    let tags = members(&a.child(&app));
    assert_eq!(tags.len(), 3);
    let old = a.child(&app).process.pid;
    assert!(sup.hibernate_now(&a.id()).await, "a quiet visitor hibernates");
    assert!(sup.is_hibernated(&a.id()));
    let file = sup.state_dir().join(format!("{}.rdb", a.id().as_str()));
    assert!(file.metadata().is_ok_and(|m| m.len() > 50_000), "{} holds the keys", file.display());
    assert!(sup.child_of(&a.id()).is_none(), "no redis-server while hibernated");
    assert!(!std::path::Path::new(&format!("/proc/{old}")).exists() || std::fs::read_to_string(format!("/proc/{old}/stat")).is_ok_and(|s| s.contains(") Z ")), "the old redis-server is stopped");
    // The first answer after hibernation has every key.
    let (s, r) = a.batch(&app, "DBSIZE\nGET greeting\nGET counter").await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(replies(&r)[0]["value"], 7, "{r}");
    assert_eq!(replies(&r)[1]["value"], "hello, world");
    assert_eq!(replies(&r)[2]["value"], "42");
    let child = a.child(&app);
    assert_ne!(child.process.pid, old, "a new redis-server");
    for (k, dump) in keys.iter().zip(&before) {
        assert_eq!(&direct(&child, &["DUMP", k]), dump, "{k} byte for byte");
    }
    assert_eq!(members(&child), tags, "the set's members");
    let ttl = match direct(&child, &["TTL", "tags"]) {
        Value::Integer(t) => t,
        other => panic!("{other:?}"),
    };
    assert!((3500..=3600).contains(&ttl), "the set keeps its expiry: {ttl}");
    assert!(!file.exists(), "the saved file goes once its keys are loaded");
}

/// A visitor quiet for `--sandbox-hibernate-after` hibernates by
/// themselves, and their keys come back on their next request.
#[tokio::test]
async fn an_idle_visitor_hibernates_and_comes_back() {
    let app = start(Settings { spares: 1, hibernate_after: Duration::from_millis(500), ..Settings::default() });
    let sup = sandbox(&app);
    let mut a = Visitor::at("10.1.0.2");
    let (s, r) = a.batch(&app, "SET mine kept\nRPUSH list a b c").await;
    assert_eq!(s, 200, "{r}");
    assert!(until(Duration::from_secs(10), || sup.is_hibernated(&a.id())).await, "hibernated after 0.5 s idle");
    let (s, r) = a.batch(&app, "GET mine\nLRANGE list 0 -1").await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(replies(&r)[0]["value"], "kept", "{r}");
    let list: Vec<Json> = replies(&r)[1]["value"].as_array().unwrap().iter().map(|e| e["value"].clone()).collect();
    assert_eq!(list, [json!("a"), json!("b"), json!("c")], "{r}");
}

/// A session open when its visitor hibernates is lost, and using it says
/// why (their Redis hibernated; the keys are kept); a batch that runs
/// holds hibernation off.
#[tokio::test]
async fn a_session_cut_by_hibernation_says_so() {
    let app = start(Settings { spares: 1, ..Settings::default() });
    let sup = sandbox(&app);
    let mut a = Visitor::at("10.1.0.3");
    let (s, r) = a.batch(&app, "SET k v1").await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = a.post(&app, "/api/v1/sessions", &json!({})).await;
    assert_eq!(s, 201, "{r}");
    let sid = r["id"].as_str().unwrap().to_string();
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": sid, "text": "WATCH k"})).await;
    assert_eq!(s, 200, "{r}");
    // Never while a batch runs.
    let id = a.id();
    let running = {
        let mut b = Visitor { cookie: a.cookie.clone(), from: a.from };
        let app = &app;
        async move { b.batch(app, "BLPOP nothing 1").await }
    };
    let tried = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        sup.hibernate_now(&id).await
    };
    let ((s, r), hibernated) = tokio::join!(running, tried);
    assert_eq!(s, 200, "{r}");
    assert!(!hibernated, "hibernated while a batch ran");
    assert!(sup.hibernate_now(&id).await, "hibernated once quiet");
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": sid, "text": "MULTI\nSET k v2\nEXEC"})).await;
    assert_eq!((s, r["error"]["code"].as_str()), (409, Some("session_lost")), "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("hibernated") && message.contains("keys were saved"), "{message}");
    let (s, r) = a.batch(&app, "GET k").await;
    assert_eq!((s, replies(&r)[0]["value"].as_str()), (200, Some("v1")), "{r}");
}

/// With a memory budget smaller than the children hold, every new visitor
/// still gets a Redis; the least recently active hibernate, and nobody's
/// keys are lost.
#[tokio::test]
async fn a_small_memory_budget_hibernates_the_least_recently_active() {
    let app = start(Settings { spares: 1, memory: 6 << 20, hibernate_after: Duration::from_secs(3600), ..Settings::default() });
    let sup = sandbox(&app);
    let mut crowd: Vec<Visitor> = (0..8).map(|i| Visitor::at(&format!("10.2.0.{}", i + 1))).collect();
    for (i, v) in crowd.iter_mut().enumerate() {
        let (s, r) = v.commands(&app, json!([["SET", "who", format!("v{i}")], ["SET", "filler", noise(200_000, i as u64)]])).await;
        assert_eq!(s, 200, "visitor {i} is admitted: {r}");
    }
    let first = crowd[0].id();
    assert!(until(Duration::from_secs(15), || sup.is_hibernated(&first) && sup.hibernated() >= 4).await, "{} hibernated", sup.hibernated());
    let last = crowd[7].id();
    assert!(sup.child_of(&last).is_some() || sup.hibernated() == 8, "the most recent visitor hibernates last");
    for (i, v) in crowd.iter_mut().enumerate() {
        let (s, r) = v.batch(&app, "GET who\nSTRLEN filler").await;
        assert_eq!(s, 200, "{r}");
        assert_eq!(replies(&r)[0]["value"], format!("v{i}"), "visitor {i}'s keys: {r}");
        assert_eq!(replies(&r)[1]["value"], 200_000, "visitor {i}'s keys: {r}");
    }
}

/// Many cookie-less visitors from many addresses, past
/// `--sandbox-max-visitors` running at once, cannot lock a newcomer out:
/// each is served, and a fresh visitor's first answer stays quick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_cannot_lock_a_newcomer_out() {
    let app = start(Settings { spares: 2, max_visitors: 6, ..Settings::default() });
    let sup = sandbox(&app);
    for round in 0..3 {
        let crowd = (0..10).map(|i| {
            let app = &app;
            async move { Visitor::at(&format!("127.0.{}.{}", round + 1, i + 1)).batch(app, "SET k v").await }
        });
        for (s, r) in futures_util::future::join_all(crowd).await {
            assert_eq!(s, 200, "every visitor of the crowd is served: {r}");
        }
    }
    assert!(until(Duration::from_secs(15), || sup.children() <= 6).await, "{} running, for --sandbox-max-visitors 6", sup.children());
    let t = Instant::now();
    let (s, r) = Visitor::at("127.0.9.9").batch(&app, "PING").await;
    let took = t.elapsed();
    assert_eq!(s, 200, "the newcomer: {r}");
    assert!(took < Duration::from_secs(2), "the newcomer's first answer took {took:?}");
}

/// One address makes at most `--sandbox-new-visitors-per-minute` new
/// visitors (429 `too_many_visitors` past it, with `Retry-After`); a
/// visitor from elsewhere, or a returning one, is not counted against it.
#[tokio::test]
async fn new_visitors_are_a_rate_per_address() {
    let app = start(Settings { spares: 2, new_visitors_per_minute: 3, ..Settings::default() });
    let mut served = Vec::new();
    for i in 0..5 {
        let mut v = Visitor::at("10.3.0.1");
        let (s, r, headers) = v.send(&app, Method::POST, "/api/v1/batch", Some(&json!({"text": "PING"}))).await;
        if i < 3 {
            assert_eq!(s, 200, "{r}");
            served.push(v);
        } else {
            assert_eq!((s, r["error"]["code"].as_str()), (429, Some("too_many_visitors")), "{r}");
            let secs: u64 = headers.get(header::RETRY_AFTER).expect("Retry-After").to_str().unwrap().parse().unwrap();
            assert!((1..=20).contains(&secs), "{secs}");
        }
    }
    for v in &mut served {
        let (s, r) = v.batch(&app, "PING").await;
        assert_eq!(s, 200, "a returning visitor: {r}");
    }
    let (s, r) = Visitor::at("10.3.0.2").batch(&app, "PING").await;
    assert_eq!(s, 200, "another address: {r}");
}

/// Past `--sandbox-disk` the saved keys of the visitor idle longest go; when
/// they come back, their responses and `/info` say so, and their Redis is
/// empty; the other visitor's keys are kept.
#[tokio::test]
async fn past_the_disk_budget_the_longest_idle_lose_their_keys_and_are_told() {
    let app = start(Settings { spares: 1, disk: 300_000, ..Settings::default() });
    let sup = sandbox(&app);
    let (mut a, mut b) = (Visitor::at("10.4.0.1"), Visitor::at("10.4.0.2"));
    let (s, r) = a.commands(&app, json!([["SET", "mine", noise(200_000, 7)]])).await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = b.commands(&app, json!([["SET", "mine", noise(200_000, 8)]])).await;
    assert_eq!(s, 200, "{r}");
    assert!(sup.hibernate_now(&a.id()).await);
    assert!(sup.hibernate_now(&b.id()).await);
    assert!(!sup.is_hibernated(&a.id()), "A, idle longest, lost their saved keys");
    assert!(sup.is_hibernated(&b.id()), "B's are kept");
    let (s, info, headers) = a.send(&app, Method::GET, "/api/v1/info", None).await;
    assert_eq!(s, 200, "{info}");
    let notice = info["sandbox"]["notice"].as_str().unwrap_or_else(|| panic!("a notice: {info}"));
    assert!(notice.contains("removed"), "{notice}");
    assert!(headers.get("pipelab-sandbox-notice").is_some());
    let (s, r, headers) = a.send(&app, Method::POST, "/api/v1/batch", Some(&json!({"text": "EXISTS mine"}))).await;
    assert_eq!((s, replies(&r)[0]["value"].as_i64()), (200, Some(0)), "{r}");
    assert!(headers.get("pipelab-sandbox-notice").is_some(), "told with the first answer on their new Redis");
    let (_, _, headers) = a.send(&app, Method::POST, "/api/v1/batch", Some(&json!({"text": "PING"}))).await;
    assert!(headers.get("pipelab-sandbox-notice").is_none(), "told once their new Redis served them");
    let (s, r) = b.batch(&app, "STRLEN mine").await;
    assert_eq!((s, replies(&r)[0]["value"].as_i64()), (200, Some(200_000)), "{r}");
}

/// A node stopped (SIGTERM) saves its visitors to the state directory; a
/// node started again on it serves them again: their cookie names the same
/// keys. The real binary, as deployed.
#[tokio::test]
async fn hibernated_visitors_outlive_a_restart() {
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_str().unwrap().to_string();
    let serve = || {
        let (cmd, port) = api_harness::serve_command(&["--sandbox", "--sandbox-spares", "1", "--sandbox-state-dir", &dir]);
        api_harness::Pipelab::spawn(cmd, port)
    };
    let client = reqwest::Client::new();
    let batch = |base: String, cookie: Option<String>, text: &'static str| {
        let client = client.clone();
        async move {
            let mut req = client.post(format!("{base}/api/v1/batch")).header("content-type", "application/json").body(json!({"text": text}).to_string());
            if let Some(c) = cookie {
                req = req.header("cookie", c);
            }
            let res = req.send().await.expect("HTTP request");
            let cookie = res.headers().get("set-cookie").map(|c| c.to_str().unwrap().split(';').next().unwrap().to_string());
            (res.status().as_u16(), cookie, res.json::<Json>().await.unwrap())
        }
    };
    // Several visitors, saved a few at once on SIGTERM: each gets their own keys back.
    const TEXTS: [&str; 6] = ["SET mine v0", "SET mine v1", "SET mine v2", "SET mine v3", "SET mine v4", "SET mine v5"];
    let mut first = serve();
    let mut cookies = Vec::new();
    for text in TEXTS {
        let (s, cookie, r) = batch(first.base.clone(), None, text).await;
        assert_eq!(s, 200, "{r}");
        cookies.push(cookie);
    }
    assert_eq!(first.stop(), Some(0), "{}", first.stderr());
    let saved = std::fs::read_dir(state.path()).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".rdb")).count();
    assert_eq!(saved, TEXTS.len(), "every visitor saved on SIGTERM");
    let second = serve();
    for (i, cookie) in cookies.into_iter().enumerate() {
        let (s, _, r) = batch(second.base.clone(), cookie, "GET mine").await;
        assert_eq!((s, replies(&r)[0]["value"].as_str()), (200, Some(format!("v{i}").as_str())), "{r}");
    }
}
