//! A real Redis Cluster for tests: `redis-server --cluster-enabled yes` on
//! free ports (each with its cluster bus port, port + 10000, free too),
//! joined with `redis-cli --cluster create … --cluster-yes`, ready once
//! every node says `cluster_state:ok` and knows all the others. Three
//! masters ([`TestCluster::start`]), or three masters and a replica each
//! ([`TestCluster::start_with_replicas`], for failovers). Killed when
//! dropped (each node is a [`RedisServer`], with its own temporary
//! directory, where its `nodes.conf` survives a restart).
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
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
    super::free_port_where(|port| port < 55000 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok())
}

impl TestCluster {
    /// Starts and joins a 3-master cluster (node timeout 5 s).
    pub fn start() -> TestCluster {
        Self::start_with_timeout(5000)
    }

    /// A 3-master cluster, node timeout `node_timeout_ms`.
    pub fn start_with_timeout(node_timeout_ms: u64) -> TestCluster {
        Self::start_nodes(3, 0, node_timeout_ms, &[])
    }

    /// Three masters and one replica each, node timeout `node_timeout_ms`,
    /// ready once every replica has synced with its master. The surviving
    /// masters keep serving their slots while one is lost
    /// (`cluster-require-full-coverage no`, as for a cluster that must stay
    /// available), so a lost master's slots are the only ones down until
    /// its replica takes over.
    pub fn start_with_replicas(node_timeout_ms: u64) -> TestCluster {
        let c = Self::start_nodes(3, 1, node_timeout_ms, &["--cluster-require-full-coverage", "no"]);
        c.wait_synced();
        c
    }

    fn start_nodes(masters: usize, replicas: usize, node_timeout_ms: u64, extra: &[&str]) -> TestCluster {
        let timeout = node_timeout_ms.to_string();
        let mut args = vec!["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", &timeout];
        args.extend_from_slice(extra);
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas)).map(|_| RedisServer::start_on(cluster_port(), &args)).collect();
        let addrs: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli on PATH");
        assert!(out.status.success(), "redis-cli --cluster create: {}", String::from_utf8_lossy(&out.stdout));
        let c = TestCluster { url: format!("redis://{}", addrs[0]), nodes };
        c.wait_ok();
        c
    }

    /// Waits (up to 60 s) until every running node says `cluster_state:ok`
    /// with every node known and every slot assigned.
    pub fn wait_ok(&self) {
        let known = format!("cluster_known_nodes:{}", self.nodes.len());
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = self.nodes.iter().filter(|n| n.pid().is_some()).all(|n| {
                let info = text(&n.cmd_str(&["CLUSTER", "INFO"]));
                info.contains("cluster_state:ok") && info.contains(&known) && info.contains("cluster_slots_assigned:16384")
            });
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not become ok within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits (up to 60 s) until every running replica's link to its master is up.
    pub fn wait_synced(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(0..self.nodes.len()).filter(|&i| self.nodes[i].pid().is_some() && !self.is_master(i)).all(|i| {
            text(&self.nodes[i].cmd_str(&["INFO", "replication"])).contains("master_link_status:up")
        }) {
            assert!(Instant::now() < deadline, "the replicas did not sync within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `127.0.0.1:PORT` of node `i`.
    pub fn address(&self, i: usize) -> String {
        format!("127.0.0.1:{}", self.nodes[i].port)
    }

    /// Node `i` is running and says it is a master (`ROLE`).
    pub fn is_master(&self, i: usize) -> bool {
        self.nodes[i].pid().is_some()
            && matches!(self.nodes[i].cmd_str(&["ROLE"]), resp::Value::Array(a) if a.first().map(text).as_deref() == Some("master"))
    }

    /// The running masters that serve slots.
    pub fn masters(&self) -> Vec<usize> {
        (0..self.nodes.len()).filter(|&i| self.is_master(i) && self.serves_slots(i)).collect()
    }

    fn serves_slots(&self, i: usize) -> bool {
        let nodes = text(&self.nodes[i].cmd_str(&["CLUSTER", "NODES"]));
        nodes.lines().find(|l| l.contains("myself")).is_some_and(|l| l.split_whitespace().count() > 8)
    }

    /// The running replica of master `m`, if any.
    pub fn replica_of(&self, m: usize) -> Option<usize> {
        let id = self.id(m);
        (0..self.nodes.len()).find(|&i| {
            i != m && self.nodes[i].pid().is_some() && {
                let nodes = text(&self.nodes[i].cmd_str(&["CLUSTER", "NODES"]));
                nodes.lines().find(|l| l.contains("myself")).is_some_and(|l| l.split_whitespace().nth(3) == Some(id.as_str()))
            }
        })
    }

    /// The node serving each hash slot now (`usize::MAX`: none), as each
    /// running master's own `CLUSTER NODES` line says.
    pub fn slot_owners(&self) -> Vec<usize> {
        let mut owner = vec![usize::MAX; 16384];
        for m in self.masters() {
            let nodes = text(&self.nodes[m].cmd_str(&["CLUSTER", "NODES"]));
            let mine = nodes.lines().find(|l| l.contains("myself")).expect("myself line");
            for range in mine.split_whitespace().skip(8).filter(|r| !r.starts_with('[')) {
                let (a, b) = range.split_once('-').unwrap_or((range, range));
                owner[a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap()].fill(m);
            }
        }
        owner
    }

    /// Each key's value as an integer (0 when absent), read on the master
    /// serving it now: one pipelined connection per master (a fresh
    /// connection per key would run out of ports on big ledgers).
    pub fn counts(&self, keys: &[String]) -> Vec<i64> {
        let owner = self.slot_owners();
        let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            let m = owner[pipelab_engine::cluster::slot::slot(k.as_bytes()) as usize];
            assert_ne!(m, usize::MAX, "no master serves {k}");
            groups.entry(m).or_default().push(i);
        }
        let mut out = vec![0; keys.len()];
        for (m, idx) in groups {
            let mut s = TcpStream::connect(("127.0.0.1", self.nodes[m].port)).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut buf = Vec::new();
            for &i in &idx {
                resp::encode_command([b"GET".as_slice(), keys[i].as_bytes()], &mut buf);
            }
            s.write_all(&buf).unwrap();
            for (&i, reply) in idx.iter().zip(read_n(&mut s, idx.len())) {
                out[i] = match reply {
                    resp::Value::NullBulk => 0,
                    resp::Value::Bulk(b) => String::from_utf8_lossy(&b).parse().expect("an integer"),
                    other => panic!("GET {}: {other:?}", keys[i]),
                };
            }
        }
        out
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

/// Reads `n` pipelined replies from a blocking socket.
fn read_n(s: &mut impl std::io::Read, n: usize) -> Vec<resp::Value> {
    let (mut buf, mut at, mut out) = (Vec::new(), 0, Vec::with_capacity(n));
    let mut chunk = [0u8; 65536];
    while out.len() < n {
        match resp::Decoder::new().decode(&buf[at..]).expect("valid RESP from redis") {
            resp::Decoded::Complete { value, consumed } => {
                at += consumed;
                out.push(value);
            }
            resp::Decoded::Incomplete { .. } => {
                let got = s.read(&mut chunk).expect("read from test redis");
                assert!(got > 0, "test redis closed the connection");
                buf.extend_from_slice(&chunk[..got]);
            }
        }
    }
    out
}

/// One key per hash slot: `keys[s]` hashes to slot `s` (made from `prefix`).
pub fn slot_keys(prefix: &str) -> Vec<String> {
    let mut keys = vec![String::new(); 16384];
    let mut left = keys.len();
    for n in 0.. {
        let k = format!("{prefix}{n}");
        let s = pipelab_engine::cluster::slot::slot(k.as_bytes()) as usize;
        if keys[s].is_empty() {
            keys[s] = k;
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    keys
}

/// Watches, on a thread of its own, the node on `port` until its `ROLE`
/// says master (within `within`): when it did, seen every 20 ms.
pub fn watch_promotion(port: u16, within: Duration) -> std::thread::JoinHandle<Option<Instant>> {
    std::thread::spawn(move || {
        let until = Instant::now() + within;
        while Instant::now() < until {
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = Vec::new();
                resp::encode_command([b"ROLE".as_slice()], &mut buf);
                if s.write_all(&buf).is_ok() {
                    if let Some(resp::Value::Array(a)) = read_n(&mut s, 1).pop() {
                        if a.first().map(text).as_deref() == Some("master") {
                            return Some(Instant::now());
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    })
}

impl TestCluster {
    /// Waits (up to 60 s) until every node runs, `masters` of them serve
    /// slots, and every other one is a replica whose link to its master is up.
    pub fn wait_healed(&self, masters: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let replicas_up = (0..self.nodes.len())
                .filter(|&i| !self.is_master(i) && text(&self.nodes[i].cmd_str(&["INFO", "replication"])).contains("master_link_status:up"))
                .count();
            if self.nodes.iter().all(|n| n.pid().is_some()) && self.masters().len() == masters && replicas_up == self.nodes.len() - masters {
                return self.wait_ok();
            }
            assert!(Instant::now() < deadline, "the cluster did not heal within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
