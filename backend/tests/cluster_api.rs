//! The HTTP API in-process (`api_inproc`) against a real 3-master cluster:
//! `/info` says `mode: cluster` with the masters' slot ranges, `/batch`
//! reports each result's node and each node's share, a cross-slot
//! transaction is a 400 `cross_slot` with nothing written, and `/compare`
//! and `/sweep` (through `lab::Runner`) work, the sweep's clean-up included.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use api_inproc::App;
use common::cluster::TestCluster;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_on_a_cluster() {
    let c = TestCluster::start();
    let api = App::start(&c.url, &[]);

    let (status, info) = api.get("/api/v1/info").await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["redis"]["mode"], "cluster", "{info}");
    let nodes = info["redis"]["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3);
    let served: u64 = nodes
        .iter()
        .flat_map(|n| n["slots"].as_array().unwrap().iter().map(|r| r[1].as_u64().unwrap() - r[0].as_u64().unwrap() + 1))
        .sum();
    assert_eq!(served, 16384, "{info}");

    let text: String = (0..30).map(|i| format!("SET api:{i} {i}\nGET api:{i}\n")).collect();
    let (status, res) = api.post("/api/v1/batch", &json!({"text": text, "mode": "pipeline", "batch_size": 5})).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["summary"]["ok"], 60);
    for i in 0..30 {
        let r = &res["results"][2 * i + 1];
        assert_eq!(r["reply"], json!({"type": "bulk", "value": i.to_string()}));
        let owner = format!("127.0.0.1:{}", c.nodes[c.owner(&format!("api:{i}"))].port);
        assert_eq!(r["node"], owner.as_str());
    }
    let shares = res["summary"]["nodes"].as_array().unwrap();
    assert_eq!(shares.len(), 3);
    assert_eq!(shares.iter().map(|n| n["commands"].as_u64().unwrap()).sum::<u64>(), 60);
    for n in shares {
        for field in ["address", "round_trips", "bytes_sent", "bytes_received", "redirections"] {
            assert!(n.get(field).is_some(), "{field} in {n}");
        }
    }

    let (status, res) = api.post("/api/v1/batch", &json!({"commands": [["SET", "x:a", "1"], ["SET", "x:b", "1"]], "mode": "transaction"})).await;
    assert_ne!(c.slot("x:a"), c.slot("x:b"), "test premise");
    assert_eq!(status, 400, "{res}");
    assert_eq!(res["error"]["code"], "cross_slot", "{res}");
    assert_eq!(res["error"]["field"], "commands[1]", "{res}");
    assert_eq!(c.get("x:a"), resp::Value::NullBulk, "nothing written");

    // compare: every mode on a one-slot batch.
    let cmds = json!([["INCR", "{cmp}n"], ["INCR", "{cmp}n"], ["GET", "{cmp}n"]]);
    // Auto mode is not supported on a cluster: the default's fourth mode is left out.
    let (status, res) = api.post("/api/v1/compare", &json!({"commands": cmds, "modes": ["pipeline", "transaction"]})).await;
    assert_eq!(status, 200, "{res}");
    let runs = res["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    assert!(runs.iter().all(|r| r["summary"]["ok"] == 3), "{res}");
    assert_eq!(c.get("{cmp}n"), resp::Value::Bulk(b"6".to_vec()), "three modes, two INCRs each");

    // sweep: keys over every master, deleted after (one DEL per slot).
    let (status, res) = api.post("/api/v1/sweep", &json!({"command": ["SET", "sw:{i}", "v"], "total": 100, "batch_sizes": [1, 50]})).await;
    assert_eq!(status, 200, "{res}");
    assert!(res["points"].as_array().unwrap().iter().all(|p| p["ok"] == 100), "{res}");
    assert_eq!(res["cleanup"]["deleted"], 100, "{res}");
    assert!((0..100).all(|i| c.get(&format!("sw:{i}")) == resp::Value::NullBulk));

    // The lessons' figures with a simulated RTT: each round trip pays it on every master's link.
    let rtt_us = 5_000;
    let (status, res) = api.post("/api/v1/sweep", &json!({"command": ["SET", "rtt:{i}", "v"], "total": 600, "batch_sizes": [10, 100], "simulated_rtt_ms": 5})).await;
    assert_eq!(status, 200, "{res}");
    let points = res["points"].as_array().unwrap();
    for p in points {
        let (trips, total) = (p["round_trips"].as_u64().unwrap(), p["total_us"].as_u64().unwrap());
        assert!(trips >= 600 / (3 * p["batch_size"].as_u64().unwrap()) && total >= trips * rtt_us, "{p}");
    }
    assert!(points[1]["commands_per_sec"].as_f64() > points[0]["commands_per_sec"].as_f64(), "bigger batches amortise the RTT: {res}");
    let (status, res) = api.post("/api/v1/compare", &json!({"commands": (0..60).map(|i| json!(["INCR", format!("cmp:{i}")])).collect::<Vec<_>>(), "modes": ["pipeline"], "simulated_rtt_ms": 5})).await;
    assert_eq!(status, 200, "{res}");
    for run in res["runs"].as_array().unwrap() {
        let s = &run["summary"];
        assert!(s["total_us"].as_u64().unwrap() >= s["round_trips"].as_u64().unwrap() * rtt_us, "{s}");
        if s["mode"] == "sequential" {
            assert_eq!(s["round_trips"], 60, "{s}");
        }
    }
}
