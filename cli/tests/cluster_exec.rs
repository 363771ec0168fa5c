//! Every mode against a real 3-master Redis Cluster (`common::cluster`):
//! replies in request order from the master of each key's slot, hash tags,
//! CROSSSLOT answered in place, fanned-out keyless commands merged, one-slot
//! transactions on their master and cross-slot ones refused with nothing
//! written (checked in Redis directly).

#[path = "../../engine/tests/common/mod.rs"]
mod common;

use common::batch;
use common::cluster::TestCluster;
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{Batch, ExecError, ExecOptions, Plan, Report, Status, TransactionStatus};
use pipelab_model::Mode;
use common::execute;
use pipelab_engine::lab::Direct;
use resp::Value;

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

async fn direct(c: &TestCluster) -> Direct {
    let d = Direct { target: RedisTarget::parse(&c.url).unwrap(), opts: ExecOptions::default() }.with_commands().await;
    assert!(d.opts.table(None).is_cluster(), "INFO server says redis_mode:cluster");
    d
}

async fn run(d: &Direct, b: &Batch) -> Report {
    execute(&d.target, b, &d.opts).await.expect("batch runs")
}

fn address(c: &TestCluster, i: usize) -> String {
    format!("127.0.0.1:{}", c.nodes[i].port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_hash_tags_crossslot_and_fan_out() {
    let c = TestCluster::start();
    let d = direct(&c).await;

    // Pipeline and sequential: 120 SET/GET pairs over many slots, replies in order.
    for (mode, size) in [(Mode::Pipeline, 10), (Mode::Sequential, 1)] {
        let mut lines = Vec::new();
        for i in 0..60 {
            lines.push(format!("SET {}:k{i} v{i}", mode.name()));
            lines.push(format!("GET {}:k{i}", mode.name()));
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut b = batch(mode, &refs);
        b.plan.batch_size = size;
        let r = run(&d, &b).await;
        assert_eq!(r.summary.ok, 120, "{:?}", r.connection_error);
        for i in 0..60 {
            let key = format!("{}:k{i}", mode.name());
            assert_eq!(r.results[2 * i].reply, Some(Value::Simple(b"OK".to_vec())));
            assert_eq!(r.results[2 * i + 1].reply, Some(bulk(&format!("v{i}"))), "{key}");
            let owner = address(&c, c.owner(&key));
            assert_eq!(r.results[2 * i + 1].node.as_deref(), Some(owner.as_str()), "{key} answered by its slot's master");
            assert_eq!(c.get(&key), bulk(&format!("v{i}")), "written on the master that serves it");
        }
        assert_eq!(r.summary.nodes.len(), 3, "60 keys reach all three masters");
        assert_eq!(r.summary.nodes.iter().map(|n| n.commands).sum::<usize>(), 120);
        assert_eq!(r.summary.nodes.iter().map(|n| n.bytes_sent).sum::<u64>(), r.summary.bytes_sent);
        assert_eq!(r.summary.redirections, 0);
        if mode == Mode::Sequential {
            assert_eq!(r.summary.round_trips, 120, "one round trip per command");
        } else {
            // Windows end when one master's share reaches 10: fewer round trips than 120 / 10 × 3.
            assert!(r.summary.round_trips < 36 && r.summary.round_trips >= 4, "{}", r.summary.round_trips);
            assert!(r.summary.nodes.iter().all(|n| n.round_trips <= r.summary.round_trips));
        }
    }

    // Hash tags share a slot; a multi-key command across slots gets CROSSSLOT in place.
    assert_ne!(c.slot("a"), c.slot("b"), "test premise");
    let b = batch(
        Mode::Pipeline,
        &["SET {user1000}.following x", "SET {user1000}.followers y", "MGET {user1000}.following {user1000}.followers", "MGET a b", "PING"],
    );
    let r = run(&d, &b).await;
    assert_eq!(r.results[2].reply, Some(Value::Array(vec![bulk("x"), bulk("y")])));
    assert_eq!(r.results[3].status, Status::Error);
    assert!(r.results[3].reply.as_ref().unwrap().display().contains("CROSSSLOT"), "{:?}", r.results[3].reply);
    assert_eq!(r.results[4].reply, Some(Value::Simple(b"PONG".to_vec())), "the rest unaffected");

    // Keyless all_shards commands go to every master, merged by the response policy.
    let expected: i64 = c.nodes.iter().map(|n| match n.cmd_str(&["DBSIZE"]) { Value::Integer(k) => k, o => panic!("{o:?}") }).sum();
    let r = run(&d, &batch(Mode::Pipeline, &["DBSIZE", "KEYS pipeline:k*"])).await;
    assert_eq!(r.results[0].reply, Some(Value::Integer(expected)), "agg_sum over the masters");
    let Some(Value::Array(keys)) = &r.results[1].reply else { panic!("{:?}", r.results[1].reply) };
    assert_eq!(keys.len(), 60, "KEYS concatenated over the masters");
    assert!(r.results[0].node.is_none());

    // One-slot transaction: on that slot's master, committed.
    let r = run(&d, &batch(Mode::Transaction, &["SET {t}a 5", "INCR {t}a", "GET {t}b"])).await;
    assert_eq!(r.transaction.as_ref().unwrap().status, TransactionStatus::Committed);
    assert_eq!(r.results[1].reply, Some(Value::Integer(6)));
    let owner = address(&c, c.owner("{t}a"));
    assert_eq!(r.results[0].node.as_deref(), Some(owner.as_str()));
    assert_eq!(r.summary.nodes.len(), 1);

    // Cross-slot transaction: refused, nothing written.
    let b = batch(Mode::Transaction, &["SET tx:a 1", "SET {t}z 1", "SET tx:b 1"]);
    assert_ne!(c.slot("tx:a"), c.slot("{t}z"), "test premise");
    match execute(&d.target, &b, &d.opts).await {
        Err(ExecError::CrossSlot(e)) => {
            assert_eq!(e.field, "commands[1]");
            assert!(e.message.contains("commands[0]") && e.message.contains(&c.slot("tx:a").to_string()), "{}", e.message);
            assert!(e.message.contains(&c.slot("{t}z").to_string()), "{}", e.message);
        }
        other => panic!("expected cross_slot, got {other:?}"),
    }
    assert_eq!(c.get("tx:a"), Value::NullBulk, "nothing was sent");
    assert_eq!(c.get("{t}z"), Value::NullBulk);
    // WATCH keys count too.
    let mut b = batch(Mode::Transaction, &["SET {t}w 1"]);
    b.plan.watch = vec![b"other".to_vec()];
    assert!(matches!(execute(&d.target, &b, &d.opts).await, Err(ExecError::CrossSlot(e)) if e.field == "commands[0]"));
    let mut b = Batch::new(b.commands.clone(), Plan { watch: vec![b"{t}w".to_vec()], ..Plan::new(Mode::Transaction) });
    b.plan.watch.push(b"{t}v".to_vec());
    assert_eq!(run(&d, &b).await.transaction.unwrap().status, TransactionStatus::Committed);
    assert_eq!(c.get("{t}w"), bulk("1"));
}

/// `pipelab run` against a cluster named by two of its nodes: every key on
/// its master, each node's share printed; a cross-slot transaction is bad
/// input (exit 2), nothing sent.
#[test]
fn pipelab_run_on_a_cluster() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let c = TestCluster::start();
    let url = format!("{},127.0.0.1:{}", c.url, c.nodes[1].port);
    let run = |args: &[&str], stdin: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pipelab"))
            .args(["run", "-", "--redis", &url])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let input: String = (0..200).map(|i| format!("SET cli:{i} {i}\n")).collect();
    let out = run(&["--mode", "pipeline", "--batch-size", "50"], &input);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout.matches("node 127.0.0.1:").count(), 3, "{stdout}");
    assert!(stdout.contains("errors: 0, replies: 200"), "{stdout}");
    assert!((0..200).all(|i| c.get(&format!("cli:{i}")) == bulk(&i.to_string())));

    let out = run(&["--mode", "sequential", "--json"], "INCR cli:n\nGET cli:n\n");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["results"][1]["reply"]["value"], "1");
    assert_eq!(json["summary"]["nodes"].as_array().unwrap().len(), 1, "{json}");
    assert!(json["results"][0]["node"].is_string(), "{json}");

    let out = run(&["--mode", "transaction"], "SET cli:x 1\nSET cli:y 1\n");
    assert_ne!(c.slot("cli:x"), c.slot("cli:y"), "test premise");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hash slot"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(c.get("cli:x"), Value::NullBulk);
}

/// A simulated RTT is paid on every master's link, once per round trip:
/// no window is written ahead of the previous one's replies, and every
/// reply comes at least one RTT after its command was written, whichever
/// master answered it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulated_rtt_is_paid_on_every_masters_link() {
    let c = TestCluster::start();
    let d = direct(&c).await;
    let rtt_us = 5_000;
    let lines: Vec<String> = (0..4000).map(|i| format!("INCR rtt:{i}")).collect();
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    for (mode, size) in [(Mode::Pipeline, 100), (Mode::Sequential, 1)] {
        let take = if mode == Mode::Sequential { 100 } else { refs.len() };
        let mut b = batch(mode, &refs[..take]);
        b.plan.batch_size = size;
        b.plan.simulated_rtt_ms = rtt_us as f64 / 1000.0;
        let r = run(&d, &b).await;
        assert_eq!(r.summary.ok, take, "{:?}", r.connection_error);
        let trips = r.summary.round_trips;
        assert!(trips >= (take / (3 * size)) as u64, "{mode:?}: {trips} round trips");
        assert!(r.summary.total_us >= trips * rtt_us, "{mode:?}: {trips} round trips at {rtt_us} µs in {} µs", r.summary.total_us);
        assert_eq!(r.summary.nodes.len(), 3);
        for res in &r.results {
            let waited = res.reply_us.unwrap() - res.sent_us.unwrap();
            assert!(waited * 100 >= rtt_us * 99, "{mode:?}: a reply from {:?} {waited} µs after its write", res.node);
        }
    }
}
