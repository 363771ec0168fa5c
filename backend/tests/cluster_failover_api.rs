//! The HTTP API in-process (`api_inproc`) on a real 3-master + 3-replica
//! cluster losing a master (`kill -9`): a session on it answers its batch
//! with true statuses and is lost after, `/batch` names the failed master
//! in `summary.nodes`, the Upstash pipeline says which commands did not
//! run, `/readyz` is 503 until the replica took over and 200 after,
//! `/metrics` counts the slot-map reloads by cause, and every surface
//! serves every slot again after the failover.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use api_inproc::App;
use common::cluster::TestCluster;
use serde_json::{json, Value as Json};

/// `n` keys served by `node` in `owners` (`TestCluster::slot_owners`).
fn keys_on(owners: &[usize], node: usize, prefix: &str, n: usize) -> Vec<String> {
    (0..).map(|i| format!("{prefix}{i}")).filter(|k| owners[pipelab_engine::cluster::slot::slot(k.as_bytes()) as usize] == node).take(n).collect()
}

fn text(keys: &[String]) -> String {
    keys.iter().map(|k| format!("INCR {k}\n")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_through_a_failover() {
    // As `pipelab serve` does first: the slot map's counters are listed from its first reading.
    pipelab_http::telemetry::install_metrics();
    let mut c = TestCluster::start_with_replicas(1000);
    let api = App::start(&c.url, &[]);
    let (status, body) = api.get("/readyz").await;
    assert_eq!(status, 200, "{body}");
    // The seed: sessions connect to it.
    let victim = 0;
    assert!(c.is_master(victim), "test premise: the first node is a master");
    let victim_addr = c.address(victim);
    let survivor = c.masters().into_iter().find(|&m| m != victim).unwrap();
    let owners = c.slot_owners();

    // A session's batch with the master killed under it: one round trip per command, 10 ms each.
    let (status, s) = api.post("/api/v1/sessions", &json!({"simulated_rtt_ms": 10})).await;
    assert_eq!(status, 201, "{s}");
    let id = s["id"].as_str().unwrap().to_string();
    let session_keys = keys_on(&owners, victim, "sess:", 200);
    let pid = c.nodes[victim].pid().unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
        Instant::now()
    });
    let (status, res) = api.post("/api/v1/batch", &json!({"session": id, "text": text(&session_keys), "mode": "sequential"})).await;
    let killed = killer.join().unwrap();
    c.nodes[victim].kill(); // reaped
    assert_eq!(status, 200, "{res}");
    let statuses: Vec<&str> = res["results"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    let ok = statuses.iter().take_while(|s| **s == "ok").count();
    assert!(ok > 0 && ok < statuses.len(), "killed mid-batch: {statuses:?}");
    assert!(statuses[ok..].iter().all(|s| *s == "unknown" || *s == "not_sent"), "{statuses:?}");
    assert!(statuses[ok..].iter().filter(|s| **s == "unknown").count() <= 1, "one command in flight at a time");
    assert!(statuses.iter().any(|s| *s == "not_sent"), "{statuses:?}");
    let nodes = res["summary"]["nodes"].as_array().expect("summary.nodes on a cluster");
    assert_eq!((nodes.len(), nodes[0]["address"].as_str()), (1, Some(victim_addr.as_str())), "{nodes:?}");
    assert!(nodes[0]["failed"].is_string(), "{nodes:?}");
    let (status, lost) = api.post("/api/v1/batch", &json!({"session": id, "text": "PING"})).await;
    assert_eq!((status, lost["error"]["code"].as_str()), (409, Some("session_lost")), "{lost}");

    // /batch and the Upstash pipeline over two masters while the victim is down (or just replaced).
    let batch_keys: Vec<String> = keys_on(&owners, victim, "b:", 20).into_iter().chain(keys_on(&owners, survivor, "b:", 20)).collect();
    let (status, res) = api.post("/api/v1/batch", &json!({"text": text(&batch_keys), "mode": "pipeline"})).await;
    assert_eq!(status, 200, "{res}");
    let results = res["results"].as_array().unwrap();
    assert!(results[20..].iter().all(|r| r["status"] == "ok"), "the surviving master's commands: {res}");
    let up_keys: Vec<String> = keys_on(&owners, victim, "u:", 10).into_iter().chain(keys_on(&owners, survivor, "u:", 10)).collect();
    let cmds: Vec<Json> = up_keys.iter().map(|k| json!(["INCR", k])).collect();
    let (status, entries) = api.post("/pipeline", &json!(cmds)).await;
    assert_eq!(status, 200, "{entries}");
    let entries = entries.as_array().unwrap().clone();
    assert!(entries[10..].iter().all(|e| e["result"] == 1), "{entries:?}");

    // /readyz: 503 naming the slots until the replica is promoted, then 200.
    let mut saw_unready = None;
    let ready_at = loop {
        let (status, body) = api.get("/readyz").await;
        if status == 200 {
            break Instant::now();
        }
        assert_eq!((status, body["error"]["code"].as_str()), (503, Some("redis_unavailable")), "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("hash slots"), "{body}");
        saw_unready.get_or_insert(body.clone());
        assert!(killed.elapsed() < Duration::from_secs(30), "not ready 30 s after the kill: {}", body["error"]["message"]);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("ready {:?} after the kill; unready said {}", ready_at - killed, saw_unready.as_ref().map_or(Json::Null, |b| b["error"]["message"].clone()));
    assert!(saw_unready.is_some(), "/readyz was 503 while the master's slots had no master");
    c.wait_ok();

    // Every surface serves every slot again.
    let owners = c.slot_owners();
    let after: Vec<String> = c.masters().into_iter().flat_map(|m| keys_on(&owners, m, "a:", 5)).collect();
    let (status, res) = api.post("/api/v1/batch", &json!({"text": text(&after), "mode": "pipeline"})).await;
    assert_eq!((status, res["summary"]["ok"].as_u64()), (200, Some(15)), "{res}");
    let cmds: Vec<Json> = after.iter().map(|k| json!(["INCR", k])).collect();
    let (status, entries2) = api.post("/pipeline", &json!(cmds)).await;
    assert_eq!(status, 200);
    assert!(entries2.as_array().unwrap().iter().all(|e| e["result"] == 2), "{entries2}");
    let (status, s) = api.post("/api/v1/sessions", &json!({})).await;
    // The seed is dead: a new session cannot connect to it (sessions are opened on the first host).
    assert_eq!(status, 503, "{s}");

    // What was reported not run did not run; what was reported run, ran once (or was lost with the master).
    let counts = c.counts(&session_keys);
    for (i, (k, n)) in session_keys.iter().zip(&counts).enumerate() {
        match statuses[i] {
            "ok" => assert!(*n <= 1, "{k}"),
            "unknown" => assert!(*n <= 1, "{k}"),
            _ => assert_eq!(*n, 0, "{k}: not_sent, but it ran"),
        }
    }
    let counts = c.counts(&batch_keys);
    for ((k, r), n) in batch_keys.iter().zip(results).zip(&counts) {
        match r["status"].as_str().unwrap() {
            "ok" => assert_eq!((r["reply"]["value"].as_i64(), *n), (Some(1), 1), "{k}: {r}"),
            "not_sent" => assert_eq!(*n, 0, "{k}"),
            "unknown" => assert!(*n <= 1, "{k}"),
            _ => panic!("{k}: {r}"),
        }
    }
    let counts = c.counts(&up_keys);
    for ((k, e), n) in up_keys.iter().zip(&entries).zip(&counts) {
        match (&e["result"], e["error"].as_str()) {
            (Json::Number(v), _) => assert_eq!((v.as_i64(), *n), (Some(1), 1), "{k}"),
            (_, Some(err)) if err.contains("not sent") => assert_eq!(*n, 0, "{k}: {err}"),
            (_, Some(err)) if err.contains("outcome unknown") => assert!(*n <= 1, "{k}"),
            other => panic!("{k}: {other:?}"),
        }
    }

    let (_, _, metrics) = api.get_text("/metrics").await;
    let reloads: f64 = metrics
        .lines()
        .find(|l| l.starts_with("pipelab_cluster_slot_map_reloads_total{cause=\"connection\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("the reload counter: {metrics}"));
    assert!(reloads >= 1.0, "{reloads}");
    assert!(metrics.contains("pipelab_cluster_slot_map_reloads_total{cause=\"moved\"} 0"), "every cause listed: {metrics}");
}
