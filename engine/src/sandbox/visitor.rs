//! A sandbox visitor: an unguessable id, the Redis they have now, and how
//! much of the server they may hold at once.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Semaphore;

use super::child::Child;

/// Hex digits of an id (16 random bytes).
const ID_LEN: usize = 32;

/// A visitor's id: the node's id, a dot, and 128 random bits from the
/// system's CSPRNG as 32 lowercase hex digits (`crate::node`). Only the
/// server makes them (an id it does not know is replaced by a new one), so
/// guessing one reaches nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VisitorId(String);

impl VisitorId {
    /// A new random id.
    pub fn random() -> VisitorId {
        VisitorId(crate::node::new_id().expect("the system's random generator"))
    }

    /// `id` if it has an id's shape (a node id, a dot, 32 lowercase hex
    /// digits), this node's or another's.
    pub fn parse(id: &str) -> Option<VisitorId> {
        let (_, random) = id.split_once('.')?;
        let hex = random.len() == ID_LEN && random.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        (hex && crate::node::of(id).is_some()).then(|| VisitorId(id.to_string()))
    }

    /// The node it was made on, if not this one (the balancer moved the visitor).
    pub fn elsewhere(&self) -> Option<&str> {
        crate::node::elsewhere(&self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One visitor as the supervisor keeps them.
pub struct Visitor {
    pub id: VisitorId,
    /// Where they came from (an IPv6 address's /64), for the rate of new
    /// visitors per address; `None` when the caller has no address.
    pub(super) from: Option<std::net::IpAddr>,
    /// Their redis-server, once they ran something and while they are
    /// not hibernated; replaced if it died.
    pub(super) child: Mutex<Option<Arc<Child>>>,
    /// They have had a Redis (a returning visitor is not a new one).
    pub(super) started: std::sync::atomic::AtomicBool,
    /// Hibernated: the size of their keys' file in the state directory.
    pub(super) saved: Mutex<Option<u64>>,
    /// What they must be told on their next requests (their saved keys
    /// were removed), until they run something on their new Redis.
    pub(super) notice: Mutex<Option<String>>,
    /// Their last request, for the idle reaper.
    pub(super) last_seen: Mutex<Instant>,
    /// Batches running now (`--sandbox-visitor-batches` permits).
    pub batches: Arc<Semaphore>,
    /// Sessions open now (`--sandbox-visitor-sessions` permits).
    pub sessions: Arc<Semaphore>,
    /// Held while a cut script is being stopped on their Redis: the next
    /// batch waits for it, so it never meets a BUSY Redis.
    pub(super) settling: Arc<tokio::sync::Mutex<()>>,
    /// Their requests that wrote, for a surface that shows a count of
    /// writes (Upstash's sync token): their own, so that it tells nothing
    /// of another visitor's.
    pub writes: std::sync::atomic::AtomicU64,
}

impl Visitor {
    pub(super) fn new(id: VisitorId, from: Option<std::net::IpAddr>, batches: usize, sessions: usize) -> Visitor {
        Visitor {
            id,
            from: from.map(network),
            child: Mutex::new(None),
            started: Default::default(),
            saved: Mutex::new(None),
            notice: Mutex::new(None),
            last_seen: Mutex::new(Instant::now()),
            batches: Arc::new(Semaphore::new(batches.max(1))),
            sessions: Arc::new(Semaphore::new(sessions.max(1))),
            settling: Arc::default(),
            writes: Default::default(),
        }
    }

    /// What they must be told now, if anything (their saved keys are gone).
    pub fn notice(&self) -> Option<String> {
        self.notice.lock().expect("visitor lock").clone()
    }

    /// When they were last seen.
    pub(super) fn last_seen(&self) -> Instant {
        *self.last_seen.lock().expect("visitor lock")
    }

    pub(super) fn touch(&self) {
        *self.last_seen.lock().expect("visitor lock") = Instant::now();
    }

    /// Nothing of theirs runs: no batch, no session.
    pub(super) fn is_quiet(&self, batches: usize, sessions: usize) -> bool {
        self.batches.available_permits() == batches.max(1) && self.sessions.available_permits() == sessions.max(1)
    }
}

/// The address as one client: an IPv4 address, or an IPv6 address's /64
/// (one host is given a whole /64).
pub fn network(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            std::net::IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        std::net::IpAddr::V6(v6) => std::net::IpAddr::V4(v6.to_ipv4_mapped().expect("mapped")),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_hex_and_checked() {
        let (a, b) = (VisitorId::random(), VisitorId::random());
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), crate::node::id().len() + 1 + 32);
        assert_eq!(VisitorId::parse(a.as_str()), Some(a.clone()));
        assert_eq!(a.elsewhere(), None);
        let moved = VisitorId::parse("web-2.abcdef0123456789abcdef0123456789").expect("another node's id");
        assert_eq!(moved.elsewhere(), Some("web-2"));
        assert!(VisitorId::parse("abcdef0123456789abcdef0123456789").is_none());
        assert!(VisitorId::parse("local.ABCDEF0123456789abcdef0123456789").is_none());
        assert!(VisitorId::parse("../x.abcdef0123456789abcdef0123456789").is_none());
        assert!(VisitorId::parse("abc").is_none());
        assert!(VisitorId::parse("../../../../etc/passwd0123456789a").is_none());
    }
}
