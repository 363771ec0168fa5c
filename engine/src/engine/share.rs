//! Fair shares: what one client may hold of what everyone shares, so that
//! one cannot take it all (every batch slot with `BLPOP k 25`). A client
//! is whoever the caller says ([`ClientKey`]: the server uses the token
//! presented, else the address).
//!
//! - Running batches: at most `batches` at once; more wait for one of the
//!   client's own to end (up to the batch's deadline), before they wait for
//!   a server slot, so a client's queue never holds a slot another could use.
//! - Batches with a command that may block (BLPOP, XREAD BLOCK, WAIT…):
//!   at most `blocking` at once, the same way.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio::time::Instant;

use super::error::{EngineError, ShareFull};

/// Who a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKey {
    /// The SHA-256 of the token presented (a wrong one is refused before
    /// anything runs).
    Token([u8; 32]),
    Address(IpAddr),
}

/// One client's running batches, and how many of them may block.
#[derive(Default)]
struct Running {
    batches: usize,
    blocking: usize,
}

/// Every client's share (`Engine::shares`). Counts under one lock, not a
/// semaphore per client: every batch takes and gives back its place, and
/// only a client at its cap waits (for `freed`).
pub struct Shares {
    batches: usize,
    blocking: usize,
    clients: Mutex<Clients>,
    freed: Notify,
}

#[derive(Default)]
struct Clients {
    /// Clients with a batch running, and some that had one: an idle one is
    /// kept until the map has grown to `sweep_at`, so that a client's every
    /// batch does not insert and remove it again.
    running: HashMap<ClientKey, Running, foldhash::fast::RandomState>,
    /// Past this many entries the idle ones are dropped: memory follows the
    /// clients running now.
    sweep_at: usize,
    /// Batches waiting for a place: only then is a place given back announced.
    waiting: usize,
}

/// The fewest entries `Clients::running` sweeps at.
const SWEEP_AT: usize = 1024;

/// A batch's place in its client's share, given back when dropped.
pub struct Held<'a> {
    shares: &'a Shares,
    client: ClientKey,
    blocking: bool,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let mut clients = self.shares.clients.lock().expect("shares lock");
        if let Some(running) = clients.running.get_mut(&self.client) {
            running.batches -= 1;
            running.blocking -= usize::from(self.blocking);
        }
        let waiting = clients.waiting > 0;
        drop(clients);
        if waiting {
            self.shares.freed.notify_waiters();
        }
    }
}

impl Shares {
    /// At most `batches` running batches per client, `blocking` of them
    /// with a command that may block (each at least 1).
    pub fn new(batches: usize, blocking: usize) -> Arc<Shares> {
        Arc::new(Shares { batches: batches.max(1), blocking: blocking.max(1), clients: Mutex::default(), freed: Notify::new() })
    }

    /// Clients with a batch running now.
    pub fn clients(&self) -> usize {
        self.clients.lock().expect("shares lock").running.values().filter(|r| r.batches > 0).count()
    }

    /// A place for a batch of `client` (one that may block if `blocking`),
    /// waiting for one until `deadline`. Errors: [`EngineError::ShareFull`].
    pub async fn take(&self, client: ClientKey, blocking: bool, deadline: Instant) -> Result<Held<'_>, EngineError> {
        // Nothing but the lock when the client is under its cap (the usual
        // case): the waiting loop, and its timer, are boxed away from it.
        if let Ok(held) = self.try_take(client, blocking, false) {
            return Ok(held);
        }
        Box::pin(self.wait_for(client, blocking, deadline)).await
    }

    async fn wait_for(&self, client: ClientKey, blocking: bool, deadline: Instant) -> Result<Held<'_>, EngineError> {
        let started = Instant::now();
        loop {
            // Registered before the try: a place given back in between wakes it.
            let freed = self.freed.notified();
            let full = match self.try_take(client, blocking, true) {
                Ok(held) => return Ok(held),
                Err(full) => full,
            };
            // Counted by `try_take` under its lock, uncounted however the wait ends.
            let _waiting = Waiting(self);
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                let cap = match full {
                    ShareFull::Batches => self.batches,
                    ShareFull::Blocking => self.blocking,
                };
                return Err(EngineError::ShareFull { what: full, cap, waited: deadline.saturating_duration_since(started) });
            }
        }
    }

    /// A place now if the client is under its caps; else why not, counted
    /// among the waiting (under the same lock, so no place given back is
    /// missed) if `queue`.
    fn try_take(&self, client: ClientKey, blocking: bool, queue: bool) -> Result<Held<'_>, ShareFull> {
        let mut clients = self.clients.lock().expect("shares lock");
        if clients.running.len() >= clients.sweep_at {
            clients.running.retain(|_, r| r.batches > 0);
            clients.sweep_at = (2 * clients.running.len()).max(SWEEP_AT);
        }
        let running = clients.running.entry(client).or_default();
        let full = if running.batches >= self.batches {
            ShareFull::Batches
        } else if blocking && running.blocking >= self.blocking {
            ShareFull::Blocking
        } else {
            running.batches += 1;
            running.blocking += usize::from(blocking);
            return Ok(Held { shares: self, client, blocking });
        };
        clients.waiting += usize::from(queue);
        Err(full)
    }
}

/// A batch waiting for a place of its client's share.
struct Waiting<'a>(&'a Shares);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.clients.lock().expect("shares lock").waiting -= 1;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const A: ClientKey = ClientKey::Token([1; 32]);
    const B: ClientKey = ClientKey::Token([2; 32]);

    #[tokio::test]
    async fn a_client_at_its_cap_waits_for_its_own_batch_and_no_other() {
        let shares = Shares::new(1, 1);
        let soon = Instant::now() + Duration::from_secs(10);
        let first = shares.take(A, false, soon).await.unwrap();
        // Another client is not held up.
        let other = shares.take(B, true, Instant::now()).await.unwrap();
        assert_eq!(shares.clients(), 2);
        // A's second batch waits, and gets in as soon as the first ends.
        let waiter = {
            let shares = shares.clone();
            tokio::spawn(async move { shares.take(A, false, soon).await.map(drop).map_err(|e| e.to_string()) })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        let t0 = std::time::Instant::now();
        drop(first);
        waiter.await.unwrap().unwrap();
        assert!(t0.elapsed() < Duration::from_secs(5), "woken after {:?}", t0.elapsed());
        drop(other);
        assert_eq!(shares.clients(), 0, "no client runs a batch");
        assert_eq!(shares.clients.lock().unwrap().waiting, 0);
    }

    #[tokio::test]
    async fn idle_clients_are_forgotten_as_the_map_grows() {
        let shares = Shares::new(1, 1);
        let busy = shares.take(A, false, Instant::now()).await.unwrap();
        for i in 0..4 * SWEEP_AT as u32 {
            let client = ClientKey::Address(IpAddr::from(i.to_be_bytes()));
            drop(shares.take(client, false, Instant::now()).await.unwrap());
        }
        let entries = shares.clients.lock().unwrap().running.len();
        assert!(entries <= SWEEP_AT, "{entries} entries kept for one running client");
        assert_eq!(shares.clients(), 1);
        drop(busy);
    }

    #[tokio::test]
    async fn past_the_deadline_a_full_share_says_which_cap_was_full() {
        let shares = Shares::new(2, 1);
        let _blocking = shares.take(A, true, Instant::now()).await.unwrap();
        let err = shares.take(A, true, Instant::now() + Duration::from_millis(20)).await.err().unwrap();
        assert!(matches!(err, EngineError::ShareFull { what: ShareFull::Blocking, cap: 1, .. }), "{err}");
        let _plain = shares.take(A, false, Instant::now()).await.unwrap();
        let err = shares.take(A, false, Instant::now() + Duration::from_millis(20)).await.err().unwrap();
        assert!(matches!(err, EngineError::ShareFull { what: ShareFull::Batches, cap: 2, .. }), "{err}");
        assert_eq!(shares.clients.lock().unwrap().waiting, 0);
    }
}
