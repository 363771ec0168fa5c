//! Redirections and failures on a real 3-master cluster, with INCR ledger
//! keys (each command its own key, so a key's value is how many times its
//! command ran): MOVED after a slot changed owner, ASK for a slot in
//! migration, a reshard while a batch runs, and a master killed mid-batch.

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::cluster::TestCluster;
use common::batch;
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{BatchSource, CommandResult, Commands, ExecOptions, Plan, Pool, PoolConfig, ResultSink, Status};
use pipelab_model::Mode;
use common::execute_pooled;
use pipelab_engine::run::{execute_stream, Target};
use pipelab_engine::lab::Direct;
use resp::Value;

fn s(c: &TestCluster, i: usize, argv: &[&str]) -> Value {
    c.nodes[i].cmd_str(argv)
}

/// Moves `slot` (with `keys`, all in it) from node `a` to node `b` as
/// `redis-cli --cluster reshard` does, step by step; `finish: false` stops
/// with the slot still MIGRATING/IMPORTING.
fn move_slot(c: &TestCluster, slot: u16, a: usize, b: usize, keys: &[&str], finish: bool) {
    let (ida, idb, slot) = (c.id(a), c.id(b), slot.to_string());
    assert_eq!(s(c, b, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &ida]), Value::Simple(b"OK".to_vec()));
    assert_eq!(s(c, a, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &idb]), Value::Simple(b"OK".to_vec()));
    if !keys.is_empty() {
        let port = c.nodes[b].port.to_string();
        let mut argv = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        argv.extend_from_slice(keys);
        assert_eq!(s(c, a, &argv), Value::Simple(b"OK".to_vec()));
    }
    if finish {
        for n in [b, a, 3 - a - b] {
            assert_eq!(s(c, n, &["CLUSTER", "SETSLOT", &slot, "NODE", &idb]), Value::Simple(b"OK".to_vec()));
        }
    }
}

fn int(v: &Option<Value>) -> i64 {
    match v {
        Some(Value::Integer(n)) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_then_ask_followed_without_double_execution() {
    let c = TestCluster::start();
    let pool = Target::new(Pool::new(RedisTarget::parse(&c.url).unwrap(), PoolConfig::default()));
    let opts = ExecOptions::default();

    // The pool learns the slot map with its first batch.
    let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["INCR {m}k", "INCR {m}j"]), &opts).await.unwrap();
    assert_eq!((int(&r.results[0].reply), int(&r.results[1].reply)), (1, 1));
    let a = c.owner("{m}k");
    let b = (a + 1) % 3;
    let slot = c.slot("{m}k");
    move_slot(&c, slot, a, b, &["{m}k", "{m}j"], true);

    // The stale map sends to the old master: MOVED, map read again, resent there, once.
    let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["INCR {m}k", "PING", "INCR {m}j"]), &opts).await.unwrap();
    assert_eq!(r.results.iter().map(|x| x.status).collect::<Vec<_>>(), vec![Status::Ok; 3], "{:?}", r.results);
    assert_eq!((int(&r.results[0].reply), int(&r.results[2].reply)), (2, 2), "each INCR ran exactly once more");
    assert_eq!(r.results[0].node.as_deref(), Some(format!("127.0.0.1:{}", c.nodes[b].port).as_str()));
    assert_eq!(r.summary.redirections, 2);
    assert_eq!(r.summary.nodes.iter().find(|n| n.address.ends_with(&c.nodes[a].port.to_string())).unwrap().redirections, 2);
    assert_eq!(c.nodes[b].cmd_str(&["GET", "{m}k"]), Value::Bulk(b"2".to_vec()));
    // Now the map is current: no redirection.
    let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["INCR {m}k"]), &opts).await.unwrap();
    assert_eq!((int(&r.results[0].reply), r.summary.redirections), (3, 0));
    // A transaction follows MOVED too (nothing ran: EXECABORT), on the new master.
    move_slot(&c, slot, b, a, &["{m}k", "{m}j"], true);
    let r = execute_pooled(&pool, &batch(Mode::Transaction, &["INCR {m}k", "INCR {m}j"]), &opts).await.unwrap();
    assert_eq!(r.transaction.as_ref().unwrap().status, pipelab_engine::exec::TransactionStatus::Committed, "{:?}", r.transaction);
    assert_eq!((int(&r.results[0].reply), int(&r.results[1].reply)), (4, 3));
    assert_eq!(r.summary.redirections, 1);

    // ASK: the slot of {s} migrating from a to b, {s}moved already on b, {s}stay still on a.
    let a = c.owner("{s}x");
    let b = (a + 1) % 3;
    let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["SET {s}moved 10", "SET {s}stay 20"]), &opts).await.unwrap();
    assert_eq!(r.summary.ok, 2);
    move_slot(&c, c.slot("{s}x"), a, b, &["{s}moved"], false);
    let b1 = batch(Mode::Pipeline, &["INCR {s}moved", "INCR {s}stay", "INCR {s}new", "MGET {s}moved {s}stay"]);
    let r = execute_pooled(&pool, &b1, &opts).await.unwrap();
    assert_eq!(int(&r.results[0].reply), 11, "ASK → ASKING + INCR on the importing master");
    assert_eq!(int(&r.results[1].reply), 21, "a key still on the migrating master runs there");
    assert_eq!(int(&r.results[2].reply), 1, "a new key in a migrating slot goes to the importing master");
    assert_eq!(r.summary.redirections, 2);
    // A multi-key command over a half-migrated slot: TRYAGAIN, retried a bounded number of times, then in place.
    assert_eq!(r.results[3].status, Status::Error);
    assert!(r.results[3].reply.as_ref().unwrap().display().contains("TRYAGAIN"), "{:?}", r.results[3].reply);
    // Finish the migration: every value is where and what it should be.
    let slot = c.slot("{s}x").to_string();
    let port = c.nodes[b].port.to_string();
    assert_eq!(s(&c, a, &["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS", "{s}stay"]), Value::Simple(b"OK".to_vec()));
    for n in [b, a, 3 - a - b] {
        s(&c, n, &["CLUSTER", "SETSLOT", &slot, "NODE", &c.id(b)]);
    }
    assert_eq!(c.nodes[b].cmd_str(&["GET", "{s}moved"]), Value::Bulk(b"11".to_vec()));
    assert_eq!(c.nodes[b].cmd_str(&["GET", "{s}new"]), Value::Bulk(b"1".to_vec()));
    assert_eq!(c.nodes[b].cmd_str(&["GET", "{s}stay"]), Value::Bulk(b"21".to_vec()));
}

/// Counts results as they come (the reshard starts once the batch is under way).
struct Counting {
    results: Vec<CommandResult>,
    seen: Arc<AtomicUsize>,
}

impl ResultSink for Counting {
    fn push(&mut self, r: CommandResult) {
        self.results.push(r);
        self.seen.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reshard_during_a_run_follows_moved_and_runs_each_command_once() {
    let c = TestCluster::start();
    let d = Direct { target: RedisTarget::parse(&c.url).unwrap(), opts: ExecOptions::default() }.with_commands().await;
    // Keys in the first 200 slots of node 0, which the reshard moves to node 1 first.
    let first = (0..16384u16).find(|&sl| c.owner_of_slot(sl) == 0).unwrap();
    let keys: Vec<String> = (0..).map(|i| format!("led:{i}")).filter(|k| (first..first + 200).contains(&pipelab_engine::cluster::slot::slot(k.as_bytes()))).take(1500).collect();
    let commands = Commands::from_iter(keys.iter().map(|k| vec!["INCR".to_string(), k.clone()]));
    let plan = Plan { simulated_rtt_ms: 1.0, ..Plan::new(Mode::Sequential) };

    let seen = Arc::new(AtomicUsize::new(0));
    let (from, to, url) = (c.id(0), c.id(1), format!("127.0.0.1:{}", c.nodes[0].port));
    let watch = seen.clone();
    let reshard = std::thread::spawn(move || {
        while watch.load(Ordering::Relaxed) < 50 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        Command::new("redis-cli")
            .args(["--cluster", "reshard", &url, "--cluster-from", &from, "--cluster-to", &to, "--cluster-slots", "200", "--cluster-yes"])
            .output()
            .expect("redis-cli")
    });
    let mut sink = Counting { results: Vec::new(), seen };
    let mut source = BatchSource::new(&commands);
    let report = execute_stream(&d.target, &plan, &mut source, &mut sink, &d.opts).await.expect("runs");
    let out = reshard.join().unwrap();
    assert!(out.status.success(), "reshard: {}", String::from_utf8_lossy(&out.stdout));
    c.wait_ok();

    for (k, r) in keys.iter().zip(&sink.results) {
        assert_eq!(r.status, Status::Ok, "{k}: {r:?}");
        assert_eq!(int(&r.reply), 1, "{k}: every reply right");
        assert_eq!(c.get(k), Value::Bulk(b"1".to_vec()), "{k} ran exactly once");
    }
    assert!(report.summary.redirections > 0, "the reshard overlapped the run: {:?}", report.summary.nodes);
    eprintln!("redirections followed during the reshard: {}", report.summary.redirections);
}

/// Kills master `victim` once `at` results have come.
struct KillAt<'a> {
    results: Vec<CommandResult>,
    cluster: &'a mut TestCluster,
    victim: usize,
    at: usize,
}

impl ResultSink for KillAt<'_> {
    fn push(&mut self, r: CommandResult) {
        self.results.push(r);
        if self.results.len() == self.at {
            self.cluster.nodes[self.victim].kill();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_mid_batch_leaves_true_statuses() {
    let mut c = TestCluster::start_with_timeout(15000);
    let d = Direct { target: RedisTarget::parse(&c.url).unwrap(), opts: ExecOptions::default() }.with_commands().await;
    let keys: Vec<String> = (0..300).map(|i| format!("kill:{i}")).collect();
    let owners: Vec<usize> = keys.iter().map(|k| c.owner(k)).collect();
    let victim = 2;
    let commands = Commands::from_iter(keys.iter().map(|k| vec!["INCR".to_string(), k.clone()]));
    // Sequential: the master dies after 60 results; pipeline: it is dead from the start.
    for plan in [Plan::new(Mode::Sequential), Plan { batch_size: 20, ..Plan::new(Mode::Pipeline) }] {
        {
            let at = if c.nodes[victim].pid().is_some() { 60 } else { usize::MAX };
            let mut sink = KillAt { results: Vec::new(), cluster: &mut c, victim, at };
            let mut source = BatchSource::new(&commands);
            let report = execute_stream(&d.target, &plan, &mut source, &mut sink, &d.opts).await.expect("runs");
            let results = sink.results;
            let victim_addr = format!("127.0.0.1:{}", c.nodes[victim].port);
            assert!(report.connection_error.as_deref().is_some_and(|e| e.contains(&victim_addr)), "{:?}", report.connection_error);
            let mut lost = 0;
            for ((k, r), &owner) in keys.iter().zip(&results).zip(&owners) {
                match r.status {
                    Status::Ok => {
                        assert_eq!(int(&r.reply), 1, "{k}");
                        if owner != victim {
                            assert_eq!(c.get(k), Value::Bulk(b"1".to_vec()), "{k}");
                        }
                    }
                    Status::NotSent | Status::Unknown => {
                        assert_eq!(owner, victim, "{k}: only the killed master's commands are lost: {r:?}");
                        lost += 1;
                    }
                    Status::Error => panic!("{k}: {r:?}"),
                }
            }
            assert!(lost > 0, "the killed master's later commands are not ok");
            assert!(results.iter().filter(|r| r.status == Status::Unknown).count() <= 20, "unknown only for what was awaiting replies");
            // Clear the survivors' ledger for the next mode.
            for (k, &owner) in keys.iter().zip(&owners) {
                if owner != victim {
                    c.nodes[owner].cmd_str(&["DEL", k]);
                }
            }
        }
    }
}

/// Pipeline mode writes the next windows before reading the current one's
/// replies: a master killed while several are in flight leaves the commands
/// written to it `unknown` (`in_flight_windows` windows at most), never
/// `not_sent` or retried, its later commands `not_sent`, and every other
/// master's commands run exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_killed_with_windows_in_flight_leaves_true_statuses() {
    let mut c = TestCluster::start_with_timeout(15000);
    let d = Direct { target: RedisTarget::parse(&c.url).unwrap(), opts: ExecOptions::default() }.with_commands().await;
    // 20 per master per window: 16 windows in flight, about 960 commands; 2400 outlast them.
    let depth = pipelab_engine::cluster::in_flight_windows(20);
    let keys: Vec<String> = (0..2400).map(|i| format!("kill2:{i}")).collect();
    let owners: Vec<usize> = keys.iter().map(|k| c.owner(k)).collect();
    let victim = 1;
    let commands = Commands::from_iter(keys.iter().map(|k| vec!["INCR".to_string(), k.clone()]));
    let plan = Plan { batch_size: 20, ..Plan::new(Mode::Pipeline) };
    let mut sink = KillAt { results: Vec::new(), cluster: &mut c, victim, at: 100 };
    let mut source = BatchSource::new(&commands);
    let report = execute_stream(&d.target, &plan, &mut source, &mut sink, &d.opts).await.expect("runs");
    let results = sink.results;
    assert_eq!(results.len(), keys.len());
    let victim_addr = format!("127.0.0.1:{}", c.nodes[victim].port);
    assert!(report.connection_error.as_deref().is_some_and(|e| e.contains(&victim_addr)), "{:?}", report.connection_error);
    let (mut unknown, mut not_sent, mut lost_seen) = (0, 0, false);
    for ((k, r), &owner) in keys.iter().zip(&results).zip(&owners) {
        if owner != victim {
            assert_eq!(r.status, Status::Ok, "{k}: {r:?}");
            assert_eq!(int(&r.reply), 1, "{k}");
            assert_eq!(c.get(k), Value::Bulk(b"1".to_vec()), "{k} ran exactly once");
            continue;
        }
        match r.status {
            Status::Ok => {
                assert!(!lost_seen, "{k}: ok after the victim's first lost command: {r:?}");
                assert_eq!(int(&r.reply), 1, "{k}");
            }
            Status::Unknown => {
                assert!(r.sent_us.is_some(), "{k}: unknown means written: {r:?}");
                assert_eq!(not_sent, 0, "{k}: unknown after a not_sent: {r:?}");
                lost_seen = true;
                unknown += 1;
            }
            Status::NotSent => {
                assert!(r.sent_us.is_none(), "{k}: {r:?}");
                lost_seen = true;
                not_sent += 1;
            }
            Status::Error => panic!("{k}: {r:?}"),
        }
    }
    assert!(not_sent > 0, "the victim's later commands are not sent");
    assert!(unknown <= depth * 20, "unknown only for the windows in flight on the victim (≤ {depth} × 20): {unknown}");
    assert!(report.summary.nodes.iter().all(|n| n.redirections == 0), "nothing redirected or re-sent");
}

/// A stale map under many windows in flight: every window written ahead
/// sends its commands of the moved slot to the old master, all get MOVED,
/// and each is re-sent once (after the windows in flight are read), in
/// its place; every INCR runs exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_under_windows_in_flight_runs_each_command_once() {
    let c = TestCluster::start();
    let pool = Target::new(Pool::new(RedisTarget::parse(&c.url).unwrap(), PoolConfig::default()));
    let opts = ExecOptions::default();
    let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["INCR {w}k0"]), &opts).await.unwrap();
    assert_eq!(int(&r.results[0].reply), 1, "the pool learns the slot map");
    let a = c.owner("{w}k0");
    let b = (a + 1) % 3;
    move_slot(&c, c.slot("{w}k0"), a, b, &["{w}k0"], true);

    // 120 moved-slot INCRs interleaved with 120 elsewhere, 5 per master per window: many windows in flight.
    let mut lines = Vec::new();
    for i in 0..120 {
        lines.push(format!("INCR {{w}}k{i}"));
        lines.push(format!("INCR other:{i}"));
    }
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let mut b1 = batch(Mode::Pipeline, &refs);
    b1.plan.batch_size = 5;
    let r = execute_pooled(&pool, &b1, &opts).await.unwrap();
    assert!(pipelab_engine::cluster::in_flight_windows(5) > 2, "test premise: windows written ahead");
    assert_eq!(r.summary.ok, 240, "{:?}", r.connection_error);
    for i in 0..120 {
        let want = if i == 0 { 2 } else { 1 };
        assert_eq!(int(&r.results[2 * i].reply), want, "{{w}}k{i} ran exactly once (in its place)");
        assert_eq!(r.results[2 * i].node.as_deref(), Some(format!("127.0.0.1:{}", c.nodes[b].port).as_str()));
        assert_eq!(int(&r.results[2 * i + 1].reply), 1, "other:{i}");
        assert_eq!(c.nodes[b].cmd_str(&["GET", &format!("{{w}}k{i}")]), Value::Bulk(want.to_string().into_bytes()));
    }
    // 24 windows (5 moved-slot commands each): those written before the first MOVED was read all got MOVED.
    let ahead = pipelab_engine::cluster::in_flight_windows(5).min(24) as u64;
    assert!((5 * ahead..=120).contains(&r.summary.redirections), "MOVED only for moved-slot commands, each once: {}", r.summary.redirections);
}
