//! The node's memory budget (`--sandbox-memory`) when every active visitor
//! at once fills all that their Redis may hold: their quota (`maxmemory`),
//! their Lua heap (a script's garbage, outside `maxmemory`) and their script
//! cache. Real redis-server children, through the in-process router: the
//! children's resident memory summed from `/proc` the whole time must come
//! back inside the budget and never pass it by more than the offenders'
//! growth between two looks of the supervisor; pipelab (this process) is
//! never killed; only the offenders are hibernated or restarted, and a quiet
//! visitor keeps their Redis and their keys.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod sandbox_client;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use api_inproc::App;
use sandbox_client::{replies, sandbox, until, Visitor};
use pipelab_engine::sandbox::Settings;
use serde_json::json;

/// This process's redis-server children: their summed resident memory
/// (RSS, each counting the code they share), their summed proportional
/// memory (PSS: shared pages split among those that map them, so what the
/// node holds for them), both in bytes, and their count.
fn children_memory() -> (u64, u64, usize) {
    let me = std::process::id().to_string();
    let (mut rss, mut pss, mut n) = (0, 0, 0);
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else { continue };
        let field = |text: &str, name: &str| text.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().trim_end_matches("kB").trim().to_string()).unwrap_or_default();
        if field(&status, "PPid:") != me || field(&status, "Name:") != "redis-server" {
            continue;
        }
        let rollup = std::fs::read_to_string(entry.path().join("smaps_rollup")).unwrap_or_default();
        n += 1;
        rss += field(&status, "VmRSS:").parse::<u64>().unwrap_or(0) * 1024;
        pss += field(&rollup, "Pss:").parse::<u64>().unwrap_or(0) * 1024;
    }
    (rss, pss, n)
}

/// The memory the budget holds the children to: their PSS (the budget
/// counts each child's private pages; the code they share is the node's
/// once, which this leaves room for).
fn held() -> u64 {
    children_memory().1
}

/// Room for the redis-server code the children share, counted once in PSS.
const SHARED_CODE: u64 = 16 << 20;

const MB: u64 = 1 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_visitor_filling_all_they_may_hold_keeps_the_node_inside_its_budget() {
    let budget = 160 * MB;
    let offenders = 8;
    let app = App::sandboxed(Settings { spares: 1, memory: budget, hibernate_after: Duration::from_secs(3600), ..Settings::default() }, &["--batch-timeout-ms", "20000"]);
    let sup = sandbox(&app).clone();

    // The quiet visitor: a few keys, then nothing.
    let mut quiet = Visitor::at("10.5.0.1");
    let (s, r) = quiet.commands(&app, json!([["SET", "mine", "kept"], ["SET", "blob", "q".repeat(512 * 1024)]])).await;
    assert_eq!(s, 200, "{r}");
    let quiet_pid = quiet.child(&app).process.pid;

    // Sampled every 100 ms from the start of the attack until the end.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let mut samples = Vec::new();
            while sampling.load(Ordering::Relaxed) {
                let (rss, pss, n) = children_memory();
                samples.push((started.elapsed().as_secs_f64(), rss, pss, n));
                std::thread::sleep(Duration::from_millis(100));
            }
            samples
        })
    };

    // Every offender at once: their quota in 1 MB strings, 48 MB of Lua heap
    // left as garbage, and the script cache up to its quota.
    let fill_quota = "for i = 1, 40 do if redis.pcall('SET', 'fill' .. i, string.rep('x', 1048576 - 64) .. i).err then return i - 1 end end return 40";
    let lua_heap = "local t = {} for i = 1, 48 do t[i] = string.rep('y', 1048576 - 64) .. i end return #t";
    let script = |v: usize, i: usize| format!("return '{}' -- {v} {i}", "z".repeat(1 << 20));
    let runs = (0..offenders).map(|v| {
        let app = &app;
        async move {
            let mut o = Visitor::at(&format!("10.5.1.{}", v + 1));
            let mut log = Vec::new();
            let (s, r) = o.commands(app, json!([["SET", "who", format!("offender {v}")], ["EVAL", fill_quota, "0"]])).await;
            log.push(format!("quota: {s} {}", r["results"][1]["reply"]));
            let (s, r) = o.commands(app, json!([["EVAL", lua_heap, "0"]])).await;
            log.push(format!("lua heap: {s} {}", r["results"][0]["reply"]));
            for i in 0..8 {
                let (s, r) = o.commands(app, json!([["SCRIPT", "LOAD", script(v, i)]])).await;
                log.push(format!("script {i}: {s} {}", r["error"]["code"]));
                if s != 200 {
                    break;
                }
            }
            (o, log)
        }
    });
    let attacked = Instant::now();
    let done = futures_util::future::join_all(runs).await;
    let attack = attacked.elapsed();
    // The supervisor looks each second: the budget holds again soon after.
    let settled = until(Duration::from_secs(30), || held() <= budget + SHARED_CODE).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    sampling.store(false, Ordering::Relaxed);
    let samples = sampler.await.unwrap();
    let peak = samples.iter().map(|s| s.2).max().unwrap_or(0);
    let peak_rss = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let over: f64 = samples.windows(2).filter(|w| w[0].2 > budget + SHARED_CODE).map(|w| w[1].0 - w[0].0).sum();
    let (end_rss, end_pss, end_n) = children_memory();
    eprintln!(
        "memory: budget {} MB; {offenders} offenders filled quota, Lua heap and script cache in {:.1} s; children's PSS peak {} MB (RSS {} MB), above the budget for {over:.1} s; at the end PSS {} MB, RSS {} MB in {end_n} children; {} hibernated",
        budget / MB,
        attack.as_secs_f64(),
        peak / MB,
        peak_rss / MB,
        end_pss / MB,
        end_rss / MB,
        sup.hibernated(),
    );
    for (i, (_, log)) in done.iter().enumerate() {
        eprintln!("offender {i}: {}", log.join("; "));
    }
    assert!(settled, "the children hold {} MB (PSS) 30 s after the attack, past the budget of {} MB", held() / MB, budget / MB);
    // Each offender can grow by at most its own wall (RLIMIT_AS) between two looks; what the budget must hold is the rest.
    assert!(peak <= budget + offenders as u64 * pipelab_engine::sandbox::child::address_space(16 * MB), "peak {} MB", peak / MB);

    // The quiet visitor kept their Redis (neither hibernated nor restarted) and their keys.
    let qid = quiet.id();
    assert!(!sup.is_hibernated(&qid), "the quiet visitor was hibernated to make room for the offenders");
    assert_eq!(sup.child_of(&qid).map(|c| c.process.pid), Some(quiet_pid), "the quiet visitor's Redis was replaced");
    let (s, r) = quiet.batch(&app, "GET mine\nSTRLEN blob").await;
    assert_eq!((s, replies(&r)[0]["value"].as_str(), replies(&r)[1]["value"].as_i64()), (200, Some("kept"), Some(512 * 1024)), "{r}");
    // Every offender is still served, their Redis hibernated (their keys back) or restarted (their own doing).
    for (i, (mut o, _)) in done.into_iter().enumerate() {
        let (s, r) = o.batch(&app, "GET who").await;
        assert_eq!(s, 200, "offender {i}: {r}");
        let who = replies(&r)[0]["value"].clone();
        assert!(who == json!(format!("offender {i}")) || who.is_null(), "offender {i} sees another's keys: {r}");
    }
    assert!(until(Duration::from_secs(30), || held() <= budget + SHARED_CODE).await, "after the offenders came back: {} MB", held() / MB);
}
