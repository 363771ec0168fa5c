//! A sandbox visitor: an unguessable id, the Redis they have now, and how
//! much of the server they may hold at once.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Semaphore;

use super::supervisor::Child;

/// Hex digits of an id (16 random bytes).
const ID_LEN: usize = 32;

/// A visitor's id: 128 random bits from the system's CSPRNG, as 32
/// lowercase hex digits. Only the server makes them (an id it does not
/// know is replaced by a new one), so guessing one reaches nothing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VisitorId(String);

impl VisitorId {
    /// A new random id.
    pub fn random() -> VisitorId {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; ID_LEN / 2];
        ring::rand::SystemRandom::new().fill(&mut bytes).expect("the system's random generator");
        VisitorId(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// `id` if it has an id's shape (32 lowercase hex digits).
    pub fn parse(id: &str) -> Option<VisitorId> {
        (id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then(|| VisitorId(id.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One visitor as the supervisor keeps them.
pub struct Visitor {
    pub id: VisitorId,
    /// Their redis-server, once they ran something; replaced if it died.
    pub(super) child: Mutex<Option<Arc<Child>>>,
    /// Their last request, for the idle reaper.
    pub(super) last_seen: Mutex<Instant>,
    /// Batches running now (`--sandbox-visitor-batches` permits).
    pub batches: Arc<Semaphore>,
    /// Sessions open now (`--sandbox-visitor-sessions` permits).
    pub sessions: Arc<Semaphore>,
    /// Held while a cut script is being stopped on their Redis: the next
    /// batch waits for it, so it never meets a BUSY Redis.
    pub(super) settling: Arc<tokio::sync::Mutex<()>>,
}

impl Visitor {
    pub(super) fn new(id: VisitorId, batches: usize, sessions: usize) -> Visitor {
        Visitor {
            id,
            child: Mutex::new(None),
            last_seen: Mutex::new(Instant::now()),
            batches: Arc::new(Semaphore::new(batches.max(1))),
            sessions: Arc::new(Semaphore::new(sessions.max(1))),
            settling: Arc::default(),
        }
    }

    pub(super) fn touch(&self) {
        *self.last_seen.lock().expect("visitor lock") = Instant::now();
    }

    /// Nothing of theirs runs: no batch, no session.
    pub(super) fn is_quiet(&self, batches: usize, sessions: usize) -> bool {
        self.batches.available_permits() == batches.max(1) && self.sessions.available_permits() == sessions.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_hex_and_checked() {
        let (a, b) = (VisitorId::random(), VisitorId::random());
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 32);
        assert_eq!(VisitorId::parse(a.as_str()), Some(a));
        assert!(VisitorId::parse("ABCDEF0123456789abcdef0123456789").is_none());
        assert!(VisitorId::parse("abc").is_none());
        assert!(VisitorId::parse("../../../../etc/passwd0123456789a").is_none());
    }
}
