//! A real 3-master Redis Cluster for tests: three `redis-server
//! --cluster-enabled yes` on free ports (each with its cluster bus port,
//! port + 10000, free too), joined with `redis-cli --cluster create …
//! --cluster-replicas 0 --cluster-yes`, ready once every node says
//! `cluster_state:ok` and knows all three. Killed when dropped (each
//! node is a [`RedisServer`], with its own temporary directory).
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use super::RedisServer;

pub struct TestCluster {
    pub nodes: Vec<RedisServer>,
    /// `redis://127.0.0.1:PORT` of the first node.
    pub url: String,
}

/// A port below 55535 whose bus port (+10000) is free too.
fn cluster_port() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().unwrap().port();
        if port < 55000 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

impl TestCluster {
    /// Starts and joins a 3-master cluster (node timeout `node_timeout_ms`).
    pub fn start() -> TestCluster {
        Self::start_with_timeout(5000)
    }

    pub fn start_with_timeout(node_timeout_ms: u64) -> TestCluster {
        let timeout = node_timeout_ms.to_string();
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start_on(
                    cluster_port(),
                    &["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", &timeout],
                )
            })
            .collect();
        let addrs: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli on PATH");
        assert!(out.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&out.stdout));
        let c = TestCluster { url: format!("redis://{}", addrs[0]), nodes };
        c.wait_ok();
        c
    }

    /// Waits (up to 60 s) until every running node says `cluster_state:ok`
    /// with three masters known and no slot left open.
    pub fn wait_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = self.nodes.iter().filter(|n| n.pid().is_some()).all(|n| {
                let info = text(&n.cmd_str(&["CLUSTER", "INFO"]));
                info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3") && info.contains("cluster_slots_assigned:16384")
            });
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not become ok within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The index of the node that serves `key` now (the one that does not
    /// answer MOVED to `CLUSTER COUNTKEYSINSLOT`… the slot owner per CLUSTER SHARDS).
    pub fn owner(&self, key: &str) -> usize {
        let slot = self.slot(key);
        self.owner_of_slot(slot)
    }

    /// `CLUSTER KEYSLOT key`, asked of Redis.
    pub fn slot(&self, key: &str) -> u16 {
        match self.nodes[0].cmd_str(&["CLUSTER", "KEYSLOT", key]) {
            resp::Value::Integer(n) => n as u16,
            other => panic!("CLUSTER KEYSLOT: {other:?}"),
        }
    }

    /// The node whose own `CLUSTER NODES` line says `myself` serves `slot`.
    pub fn owner_of_slot(&self, slot: u16) -> usize {
        for (i, n) in self.nodes.iter().enumerate() {
            if n.pid().is_none() {
                continue;
            }
            let nodes = text(&n.cmd_str(&["CLUSTER", "NODES"]));
            let mine = nodes.lines().find(|l| l.contains("myself")).expect("myself line");
            for range in mine.split_whitespace().skip(8) {
                if range.starts_with('[') {
                    continue;
                }
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                if (a.parse::<u16>().unwrap()..=b.parse::<u16>().unwrap()).contains(&slot) {
                    return i;
                }
            }
        }
        panic!("no node serves slot {slot}")
    }

    /// `GET key` on the node serving it (around the code under test).
    pub fn get(&self, key: &str) -> resp::Value {
        self.nodes[self.owner(key)].cmd_str(&["GET", key])
    }

    /// The node id (`CLUSTER MYID`) of node `i`.
    pub fn id(&self, i: usize) -> String {
        text(&self.nodes[i].cmd_str(&["CLUSTER", "MYID"]))
    }

    /// A key whose slot node `i` serves, made from `prefix`.
    pub fn key_on(&self, i: usize, prefix: &str) -> String {
        (0..).map(|n| format!("{prefix}{n}")).find(|k| self.owner(k) == i).unwrap()
    }
}

/// The text of a bulk/simple/verbatim reply.
pub fn text(v: &resp::Value) -> String {
    match v {
        resp::Value::Bulk(b) | resp::Value::Simple(b) | resp::Value::Verbatim { text: b, .. } => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not text: {other:?}"),
    }
}
