//! Fair shares: what one client may hold of what everyone shares, so that
//! one cannot take it all (every batch slot with `BLPOP k 25`, every
//! session). A client is its token (the digest of the token it presents),
//! else its address (as the rate limits see it: an IPv6 one by its /64).
//!
//! - Running batches: at most `--max-batches-per-client` at once; more wait
//!   for one of the client's own to end (up to the batch timeout, then 503
//!   `busy` naming the flag), before they wait for a server slot, so a
//!   client's queue never holds a slot another could use.
//! - Batches with a command that may block (BLPOP, XREAD BLOCK, WAIT…):
//!   at most `--max-blocking-per-client` at once, the same way.
//! - Sessions: at most `--max-sessions-per-client` open (503
//!   `too_many_sessions`, [`super::session`]).
//!
//! The caps on HTTP connections are per address only (nothing else is
//! known when one is accepted): `crate::net::cap`.
//!
//! The client of a request is set by the gate for the request's future
//! ([`scope`]), and read where a batch takes its slot ([`current`]), so
//! that no handler has to pass it along; a task a request spawns to run
//! its batch carries it on ([`scope`] again).

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::error::{ApiCode, ApiError};

/// Who a request counts against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKey {
    /// The SHA-256 of the token presented (a wrong one is refused before
    /// anything runs).
    Token([u8; 32]),
    Address(IpAddr),
}

tokio::task_local! {
    static CLIENT: Option<ClientKey>;
}

/// `fut` run as `client`'s.
pub fn scope<F: Future>(client: Option<ClientKey>, fut: F) -> impl Future<Output = F::Output> {
    CLIENT.scope(client, fut)
}

/// The client whose request runs now, if any.
pub fn current() -> Option<ClientKey> {
    CLIENT.try_with(|c| *c).ok().flatten()
}

/// One client's running batches and blocking batches.
struct Share {
    batches: Arc<Semaphore>,
    blocking: Arc<Semaphore>,
}

/// Every client's share (`AppState::shares`).
pub struct Shares {
    batches: usize,
    blocking: usize,
    clients: Mutex<HashMap<ClientKey, Share>>,
}

/// A batch's place in its client's share, given back when dropped.
pub struct Held {
    shares: Arc<Shares>,
    client: ClientKey,
    batch: Option<OwnedSemaphorePermit>,
    blocking: Option<OwnedSemaphorePermit>,
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.blocking.take());
        drop(self.batch.take());
        // A client with nothing running is forgotten: memory follows the
        // clients running now.
        let mut clients = self.shares.clients.lock().expect("shares lock");
        if let Some(share) = clients.get(&self.client) {
            let idle = share.batches.available_permits() == self.shares.batches && share.blocking.available_permits() == self.shares.blocking;
            if idle && Arc::strong_count(&share.batches) == 1 && Arc::strong_count(&share.blocking) == 1 {
                clients.remove(&self.client);
            }
        }
    }
}

impl Shares {
    /// At most `batches` running batches per client, `blocking` of them
    /// with a command that may block (each at least 1).
    pub fn new(batches: usize, blocking: usize) -> Arc<Shares> {
        Arc::new(Shares { batches: batches.max(1), blocking: blocking.max(1), clients: Mutex::default() })
    }

    /// Clients with a batch running now.
    pub fn clients(&self) -> usize {
        self.clients.lock().expect("shares lock").len()
    }

    /// A place for a batch of `client` (one that may block if `blocking`),
    /// waiting for one until `deadline`. Errors: 503 `busy` naming the cap.
    pub async fn take(self: &Arc<Self>, client: ClientKey, blocking: bool, deadline: Instant) -> Result<Held, ApiError> {
        let (batches, blocks) = {
            let mut clients = self.clients.lock().expect("shares lock");
            let share = clients.entry(client).or_insert_with(|| Share { batches: Arc::new(Semaphore::new(self.batches)), blocking: Arc::new(Semaphore::new(self.blocking)) });
            (share.batches.clone(), blocking.then(|| share.blocking.clone()))
        };
        let mut held = Held { shares: self.clone(), client, batch: None, blocking: None };
        held.batch = Some(acquire(batches, deadline).await.map_err(|()| {
            full(format!("this client (its token, else its address) already runs {} batches, its share (--max-batches-per-client)", self.batches))
        })?);
        if let Some(blocks) = blocks {
            held.blocking = Some(acquire(blocks, deadline).await.map_err(|()| {
                full(format!(
                    "this client (its token, else its address) already runs {} batches with a command that may block (BLPOP, XREAD BLOCK, WAIT…), its share (--max-blocking-per-client)",
                    self.blocking
                ))
            })?);
        }
        Ok(held)
    }
}

/// A permit of `sem` now if one is free (no timer armed), else by `deadline`.
async fn acquire(sem: Arc<Semaphore>, deadline: Instant) -> Result<OwnedSemaphorePermit, ()> {
    match sem.clone().try_acquire_owned() {
        Ok(p) => Ok(p),
        Err(_) => match tokio::time::timeout_at(deadline, sem.acquire_owned()).await {
            Ok(Ok(p)) => Ok(p),
            _ => Err(()),
        },
    }
}

fn full(why: String) -> ApiError {
    ApiError::new(ApiCode::Busy, format!("{why}, for the whole batch timeout; nothing was sent; try again when one has ended"))
}
