//! The slot map of a Redis Cluster: which master serves each of the 16384
//! hash slots, read from `CLUSTER SHARDS` (Redis 7), or `CLUSTER SLOTS` on
//! an older server that does not know it.
//!
//! Only masters are kept: pipelab sends every command to the master of its
//! slot (no `READONLY` replica reads), so a reply is the one a client
//! without replica routing would get.

use crate::conn::{reply_text, AskError, Conn, Endpoint, RedisTarget};

use super::slot::SLOTS;

/// Why no slot map could be read from a node.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// The connection failed.
    #[error("{0}")]
    Ask(#[from] AskError),
    /// `CLUSTER SLOTS` answered with an error (as did `CLUSTER SHARDS`).
    #[error("CLUSTER SLOTS: {0}")]
    SlotsRefused(String),
    #[error("the cluster has no master serving slots")]
    NoMaster,
    /// The reply, shown whole.
    #[error("CLUSTER SHARDS named no master: {0}")]
    ShardsNoMaster(String),
    /// The reply, shown whole.
    #[error("CLUSTER SLOTS named no master: {0}")]
    SlotsNoMaster(String),
}

/// One master and the slot ranges it serves.
#[derive(Debug, Clone)]
pub struct Node {
    /// `host:port` as the cluster announces it (`endpoint`/`ip` and `port`
    /// of `CLUSTER SHARDS`).
    pub address: String,
    /// Where to connect: the seed's TLS, credentials and database at this address.
    pub target: RedisTarget,
    /// Inclusive slot ranges `(first, last)`, ascending.
    pub slots: Vec<(u16, u16)>,
}

/// The masters of a cluster and the owner of every slot.
#[derive(Debug, Clone)]
pub struct Topology {
    pub nodes: Vec<Node>,
    /// The other nodes the map named (replicas, masters serving no slot):
    /// asked for the map again when the masters cannot answer.
    pub others: Vec<Node>,
    /// `owner[slot]`: index into `nodes`, or [`UNOWNED`].
    owner: Vec<u16>,
}

/// A slot no master serves (the cluster is incomplete).
const UNOWNED: u16 = u16::MAX;

impl Topology {
    /// Reads the slot map on `conn` (any node): `CLUSTER SHARDS`, or `CLUSTER
    /// SLOTS` if the server answers that with an error (Redis < 7.0). Node
    /// connections copy `base`'s TLS, credentials and database.
    ///
    /// Errors: the connection failed, both commands were refused, or the
    /// reply names no master.
    ///
    /// A map from `CLUSTER SHARDS` that leaves slots without a master is
    /// checked against `CLUSTER SLOTS`: after a failover Redict 7.3 lists
    /// the promoted replica's shard with no slots, while `CLUSTER SLOTS`
    /// gives them to it (seen in the matrix's `cluster_failover` tests).
    pub async fn load(conn: &mut Conn, base: &RedisTarget) -> Result<Topology, TopologyError> {
        let shards = conn.ask(&[b"CLUSTER", b"SHARDS"]).await?;
        if !shards.is_error() {
            let map = from_shards(&shards, base).and_then(Topology::new);
            if map.as_ref().is_ok_and(|m| m.unowned_slots() == 0) {
                return map;
            }
            return match Self::from_cluster_slots(conn, base).await {
                Ok(slots) if map.as_ref().map_or(true, |m| slots.unowned_slots() < m.unowned_slots()) => Ok(slots),
                _ => map,
            };
        }
        Self::from_cluster_slots(conn, base).await
    }

    async fn from_cluster_slots(conn: &mut Conn, base: &RedisTarget) -> Result<Topology, TopologyError> {
        let slots = conn.ask(&[b"CLUSTER", b"SLOTS"]).await?;
        if slots.is_error() {
            return Err(TopologyError::SlotsRefused(reply_text(&slots)));
        }
        Topology::new(from_slots(&slots, base)?)
    }

    /// A topology of `nodes` (those serving no slot kept as
    /// [`Topology::others`]); errors if none serves a slot.
    pub fn new(nodes: Vec<Node>) -> Result<Topology, TopologyError> {
        let (mut nodes, others): (Vec<Node>, Vec<Node>) = nodes.into_iter().partition(|n| !n.slots.is_empty());
        if nodes.is_empty() {
            return Err(TopologyError::NoMaster);
        }
        nodes.sort_by_key(|n| n.slots[0].0);
        let mut owner = vec![UNOWNED; SLOTS as usize];
        for (i, node) in nodes.iter_mut().enumerate() {
            node.slots.sort_unstable();
            for &(a, b) in &node.slots {
                for s in a..=b.min(SLOTS - 1) {
                    owner[s as usize] = i as u16;
                }
            }
        }
        Ok(Topology { nodes, others, owner })
    }

    /// Hash slots no master serves.
    pub fn unowned_slots(&self) -> usize {
        self.owner.iter().filter(|&&o| o == UNOWNED).count()
    }

    /// The index of the master serving `slot`, if any.
    pub fn owner(&self, slot: u16) -> Option<usize> {
        self.owner.get(slot as usize).copied().filter(|&o| o != UNOWNED).map(usize::from)
    }

    /// The index of the master at `address` (`host:port`), if it is one.
    pub fn index_of(&self, address: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.address == address)
    }
}

/// The `host:port` of an endpoint (IPv6 hosts in brackets).
pub fn address(endpoint: &Endpoint) -> String {
    match endpoint {
        Endpoint::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
        Endpoint::Tcp { host, port } => format!("{host}:{port}"),
        Endpoint::Unix { path } => path.display().to_string(),
    }
}

/// `host:port` (a MOVED/ASK address; `[v6]:port` too) as an endpoint.
pub fn endpoint_of(addr: &str) -> Option<Endpoint> {
    let (host, port) = addr.rsplit_once(':')?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some(Endpoint::Tcp { host: host.to_string(), port: port.parse().ok()? })
}

/// A node's endpoint: its announced host, or the seed's host when it
/// announces none (`?` or empty: `cluster-preferred-endpoint-type unknown-endpoint`).
fn node(base: &RedisTarget, host: &str, port: u16) -> Node {
    let host = match (&base.endpoint, host) {
        (Endpoint::Tcp { host: seed, .. }, "" | "?") => seed.clone(),
        _ => host.to_string(),
    };
    let endpoint = Endpoint::Tcp { host, port };
    Node { address: address(&endpoint), target: base.at(endpoint), slots: Vec::new() }
}

/// The fields of a RESP2 flat key/value array or a RESP3 map.
fn fields(v: &resp::Value) -> Vec<(String, &resp::Value)> {
    match v.unattributed() {
        resp::Value::Map(pairs) => pairs.iter().map(|(k, v)| (reply_text(k), v)).collect(),
        resp::Value::Array(items) => items.chunks(2).filter(|c| c.len() == 2).map(|c| (reply_text(&c[0]), &c[1])).collect(),
        _ => Vec::new(),
    }
}

fn int(v: &resp::Value) -> Option<i64> {
    match v.unattributed() {
        resp::Value::Integer(n) => Some(*n),
        other => reply_text(other).parse().ok(),
    }
}

fn items(v: &resp::Value) -> &[resp::Value] {
    match v.unattributed() {
        resp::Value::Array(items) | resp::Value::Set(items) => items,
        _ => &[],
    }
}

/// `CLUSTER SHARDS`: per shard `slots` (flat start/end pairs) and `nodes`
/// (each with `ip`, `endpoint`, `port`/`tls-port`, `role`, `health`).
fn from_shards(reply: &resp::Value, base: &RedisTarget) -> Result<Vec<Node>, TopologyError> {
    let mut out = Vec::new();
    for shard in items(reply) {
        let f = fields(shard);
        let get = |name: &str| f.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        let ranges: Vec<i64> = get("slots").map(items).unwrap_or(&[]).iter().filter_map(int).collect();
        let slots: Vec<(u16, u16)> = ranges.chunks(2).filter(|c| c.len() == 2).map(|c| (c[0] as u16, c[1] as u16)).collect();
        for n in get("nodes").map(items).unwrap_or(&[]) {
            let nf = fields(n);
            let nget = |name: &str| nf.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
            let host = nget("endpoint").or_else(|| nget("ip")).map(reply_text).unwrap_or_default();
            let port_field = if base.tls.is_some() { "tls-port" } else { "port" };
            let Some(port) = nget(port_field).or_else(|| nget("port")).and_then(int) else { continue };
            let mut m = node(base, &host, port as u16);
            // A replica serves nothing here (no `READONLY` reads): kept only to be asked for the map.
            // Redis 8 keeps a failed ex-master in its shard, still `role master`:
            // only a node whose `health` is `online` (or not given) owns the slots.
            let healthy = nget("health").map(reply_text).is_none_or(|h| h == "online");
            if healthy && nget("role").map(reply_text).as_deref() == Some("master") {
                m.slots = slots.clone();
            }
            out.push(m);
        }
    }
    if out.iter().all(|n| n.slots.is_empty()) {
        return Err(TopologyError::ShardsNoMaster(reply.display()));
    }
    Ok(out)
}

/// `CLUSTER SLOTS`: `[first, last, [host, port, id, …], replicas…]` per range.
fn from_slots(reply: &resp::Value, base: &RedisTarget) -> Result<Vec<Node>, TopologyError> {
    let mut out: Vec<Node> = Vec::new();
    for range in items(reply) {
        let r = items(range);
        let (Some(first), Some(last), Some(master)) = (r.first().and_then(int), r.get(1).and_then(int), r.get(2)) else {
            continue;
        };
        let m = items(master);
        let (Some(host), Some(port)) = (m.first().map(reply_text), m.get(1).and_then(int)) else { continue };
        let n = node(base, &host, port as u16);
        match out.iter_mut().find(|o| o.address == n.address) {
            Some(o) => o.slots.push((first as u16, last as u16)),
            None => out.push(Node { slots: vec![(first as u16, last as u16)], ..n }),
        }
        for replica in r.get(3..).unwrap_or_default() {
            let m = items(replica);
            if let (Some(host), Some(port)) = (m.first().map(reply_text), m.get(1).and_then(int)) {
                let n = node(base, &host, port as u16);
                if !out.iter().any(|o| o.address == n.address) {
                    out.push(n);
                }
            }
        }
    }
    if out.is_empty() {
        return Err(TopologyError::SlotsNoMaster(reply.display()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use resp::Value::{Array, Bulk, Integer};

    fn b(s: &str) -> resp::Value {
        Bulk(s.as_bytes().to_vec())
    }

    #[test]
    fn shards_and_slots_replies() {
        let base = RedisTarget::parse("redis://:pw@10.0.0.1:7000").unwrap();
        let master = |port: i64, role: &str| {
            Array(vec![b("id"), b("x"), b("port"), Integer(port), b("ip"), b("10.0.0.9"), b("endpoint"), b(""), b("role"), b(role)])
        };
        let shards = Array(vec![
            Array(vec![b("slots"), Array(vec![Integer(0), Integer(5460)]), b("nodes"), Array(vec![master(7000, "master"), master(7003, "replica")])]),
            Array(vec![b("slots"), Array(vec![Integer(10923), Integer(16383), Integer(5461), Integer(10922)]), b("nodes"), Array(vec![master(7001, "master")])]),
        ]);
        let t = Topology::new(from_shards(&shards, &base).unwrap()).unwrap();
        assert_eq!(t.nodes.len(), 2, "the replica is not a node");
        assert_eq!(t.others.iter().map(|n| n.address.as_str()).collect::<Vec<_>>(), ["10.0.0.1:7003"], "but is asked for the map");
        assert_eq!(t.unowned_slots(), 0);
        assert_eq!(t.nodes[0].address, "10.0.0.1:7000", "empty endpoint: the seed's host");
        assert_eq!(t.nodes[0].target.password.as_deref(), Some("pw"));
        assert_eq!(t.owner(0), Some(0));
        assert_eq!(t.owner(5461), Some(1));
        assert_eq!(t.owner(16383), Some(1));
        assert_eq!(t.nodes[1].slots, vec![(5461, 10922), (10923, 16383)]);

        // After a failover, Redis 8 lists the dead ex-master beside the promoted one.
        let with_health = |port: i64, role: &str, health: &str| {
            let Array(mut f) = master(port, role) else { unreachable!() };
            f.extend([b("health"), b(health)]);
            Array(f)
        };
        for gone in ["fail", "loading"] {
            let shards = Array(vec![Array(vec![
                b("slots"),
                Array(vec![Integer(0), Integer(16383)]),
                b("nodes"),
                Array(vec![with_health(7000, "master", gone), with_health(7003, "master", "online")]),
            ])]);
            let t = Topology::new(from_shards(&shards, &base).unwrap()).unwrap();
            assert_eq!(t.nodes.iter().map(|n| n.address.as_str()).collect::<Vec<_>>(), ["10.0.0.1:7003"], "a {gone} master owns nothing");
        }

        let slots = Array(vec![
            Array(vec![Integer(0), Integer(99), Array(vec![b("h1"), Integer(1)])]),
            Array(vec![Integer(100), Integer(16383), Array(vec![b("h2"), Integer(2)]), Array(vec![b("h3"), Integer(3)])]),
        ]);
        let t = Topology::new(from_slots(&slots, &base).unwrap()).unwrap();
        assert_eq!(t.nodes.iter().map(|n| n.address.as_str()).collect::<Vec<_>>(), ["h1:1", "h2:2"]);
        assert_eq!(t.others.iter().map(|n| n.address.as_str()).collect::<Vec<_>>(), ["h3:3"]);
        assert_eq!(t.index_of("h2:2"), Some(1));
        assert_eq!(t.owner(100), Some(1));
        assert_eq!(endpoint_of("[::1]:7000"), Some(Endpoint::Tcp { host: "::1".into(), port: 7000 }));
    }
}
