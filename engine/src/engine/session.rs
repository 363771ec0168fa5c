//! Sessions: a Redis connection that outlives a batch, so that `WATCH` in
//! one batch and `MULTI`/`EXEC` in the next can be shown.
//!
//! A session owns one connection, opened with its settings (RESP3, a
//! simulated RTT and bandwidth) on its caller's Redis; batches run on it
//! one at a time ([`Sessions::take`]), keeping whatever state their
//! commands left. One idle for the idle time is closed; a session whose
//! connection failed is lost and never reopened behind its caller's back
//! (its WATCH and MULTI state is gone). It belongs to the access, the
//! sandbox visitor and the client that opened it: another caller does not
//! find it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::OwnedMutexGuard;

use super::error::{EngineError, SessionsFull};
use super::{Backend, ClientKey, Engine, Who};
use crate::commands::Access;
use crate::conn::{Conn, ConnSettings};
use crate::exec::StreamReport;
use crate::sandbox::VisitorId;

/// The settings a session's connection is opened with: every batch on it
/// has them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SessionSettings {
    pub resp3: bool,
    pub simulated_rtt_ms: f64,
    pub simulated_bandwidth_mbps: Option<f64>,
}

/// One session: its connection and settings.
pub struct Session {
    access: Access,
    client: Option<ClientKey>,
    visitor: Option<VisitorId>,
    /// The visitor's share of sessions, given back when it closes.
    _visitor_slot: Option<tokio::sync::OwnedSemaphorePermit>,
    /// In the sandbox, how the visitor's Redis it is on ended, once it has:
    /// a lost session says why (it hibernated, ran out of memory, …).
    ended: Option<tokio::sync::watch::Receiver<Option<crate::sandbox::child::Exit>>>,
    pub settings: SessionSettings,
    /// The connection; `Err` with why once it is lost. Locked by the batch
    /// running on it (so a second batch finds it busy).
    conn: Arc<tokio::sync::Mutex<Result<Conn, Lost>>>,
    /// When the last batch ended (or the session was opened).
    last_used: Mutex<Instant>,
}

/// Why a session's connection is gone (its next batch says so).
#[derive(Debug, thiserror::Error)]
enum Lost {
    #[error("a batch on it was cut before it ended")]
    Cut,
    #[error("the Redis server closed its connection")]
    Closed,
    #[error("a command left the connection unusable")]
    Unusable,
    /// The batch's connection error or its error, as its report gave it.
    #[error("{0}")]
    Failed(String),
}

/// The open sessions (`Engine::sessions`).
pub struct Sessions {
    open: Mutex<HashMap<String, Arc<Session>>>,
    idle: Duration,
    max: usize,
    /// Most open at once per client.
    per_client: usize,
    /// The expiry task runs (started with the first session).
    reaping: std::sync::atomic::AtomicBool,
}

/// A session's connection, held by the batch running on it. The batch
/// leaves `conn` `None` if it left the connection unfit for the next one
/// (the session is then lost); [`Sessions::put_back`] ends the hold.
pub struct Taken {
    id: String,
    session: Arc<Session>,
    slot: OwnedMutexGuard<Result<Conn, Lost>>,
    pub conn: Option<Conn>,
}

impl Sessions {
    pub fn new(idle: Duration, max: usize, per_client: usize) -> Arc<Sessions> {
        Arc::new(Sessions { open: Mutex::default(), idle, max, per_client, reaping: Default::default() })
    }

    /// How long a session may stay idle.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        self.open.lock().expect("sessions lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The sandbox visitors with a session open now.
    pub fn visitors(&self) -> std::collections::HashSet<VisitorId> {
        self.open.lock().expect("sessions lock").values().filter_map(|s| s.visitor.clone()).collect()
    }

    /// Why `client` may not open another session now, if it may not: the
    /// server's cap or the client's share (the open ones counted in `open`).
    fn refusal(&self, open: &HashMap<String, Arc<Session>>, client: Option<ClientKey>) -> Option<EngineError> {
        if open.len() >= self.max {
            return Some(EngineError::SessionsFull(SessionsFull::Server { max: self.max }));
        }
        let mine = client.map_or(0, |c| open.values().filter(|s| s.client == Some(c)).count());
        (mine >= self.per_client).then_some(EngineError::SessionsFull(SessionsFull::Client { open: mine }))
    }

    /// The session `id` if it exists, has not expired and belongs to
    /// `access` and to the sandbox visitor `visitor`. Errors:
    /// [`EngineError::SessionNotFound`], as if another's did not exist;
    /// [`EngineError::OtherNode`] for an id another node made.
    pub fn get(&self, id: &str, access: Access, visitor: Option<&VisitorId>) -> Result<Arc<Session>, EngineError> {
        if let Some(node) = crate::node::elsewhere(id) {
            return Err(EngineError::OtherNode { what: "session", node: node.to_string() });
        }
        self.expire();
        match self.open.lock().expect("sessions lock").get(id) {
            Some(s) if s.access == access && s.visitor.as_ref() == visitor => Ok(s.clone()),
            _ => Err(EngineError::SessionNotFound { id: id.to_string() }),
        }
    }

    /// Closes session `id` of `access` and `visitor` (a batch running on
    /// it finishes first, its connection then closed). Errors as [`Sessions::get`].
    pub fn close(&self, id: &str, access: Access, visitor: Option<&VisitorId>) -> Result<(), EngineError> {
        self.get(id, access, visitor)?;
        let removed = self.remove(id);
        drop(removed);
        Ok(())
    }

    fn remove(&self, id: &str) -> Option<Arc<Session>> {
        let mut open = self.open.lock().expect("sessions lock");
        let removed = open.remove(id);
        gauge(open.len());
        removed
    }

    /// Closes the sessions idle for longer than the idle time (not one a
    /// batch is running on).
    pub fn expire(&self) {
        let now = Instant::now();
        let expired: Vec<Arc<Session>> = {
            let mut open = self.open.lock().expect("sessions lock");
            let ids: Vec<String> = open
                .iter()
                .filter(|(_, s)| {
                    let idle = now.saturating_duration_since(*s.last_used.lock().expect("session lock"));
                    idle >= self.idle && s.conn.try_lock().is_ok()
                })
                .map(|(id, _)| id.clone())
                .collect();
            let expired: Vec<_> = ids.iter().filter_map(|id| open.remove(id)).collect();
            if !expired.is_empty() {
                metrics::counter!("pipelab_session_expiries_total").increment(expired.len() as u64);
                gauge(open.len());
            }
            expired
        };
        // The connections close as the sessions drop, outside the lock.
        drop(expired);
    }

    /// Checks for expired sessions every quarter of the idle time (at least
    /// every 10 ms, at most every second) while `sessions` lives.
    fn start_reaper(sessions: &Arc<Sessions>) {
        if sessions.reaping.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return;
        }
        let weak: Weak<Sessions> = Arc::downgrade(sessions);
        let every = (sessions.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(sessions) = weak.upgrade() else { return };
                sessions.expire();
            }
        });
    }

    /// The connection of session `id` for one batch. Errors:
    /// [`EngineError::SessionBusy`] (a batch runs on it) and
    /// [`EngineError::SessionLost`] (its connection failed: the session is
    /// closed).
    pub fn take(&self, id: &str, session: Arc<Session>) -> Result<Taken, EngineError> {
        let Ok(mut slot) = session.conn.clone().try_lock_owned() else { return Err(EngineError::SessionBusy) };
        // Taken out while the batch runs: a batch cut half-way (its caller
        // went away) leaves the session lost, never with a connection in
        // an unknown state.
        let conn = match std::mem::replace(&mut *slot, Err(Lost::Cut)) {
            Ok(conn) if conn.probe_idle() => conn,
            taken => {
                let why = taken.err().unwrap_or(Lost::Closed).to_string();
                let why = match session.ended.as_ref().and_then(|e| e.borrow().clone()) {
                    Some(exit) => format!("{why}: your Redis ended: {}", exit.describe()),
                    None => why,
                };
                drop(slot);
                self.remove(id);
                return Err(EngineError::SessionLost { why });
            }
        };
        Ok(Taken { id: id.to_string(), session, slot, conn: Some(conn) })
    }

    /// The batch on `taken` ended as `out` says: its connection goes back
    /// if it is still fit, else the session is lost (its next batch says why).
    pub fn put_back<E: std::fmt::Display>(&self, taken: Taken, out: &Result<StreamReport<std::convert::Infallible>, E>) {
        let Taken { id: _, session, mut slot, conn } = taken;
        *slot = match conn {
            Some(c) => Ok(c),
            None => Err(match out {
                Ok(o) => o.connection_error.clone().map_or(Lost::Unusable, Lost::Failed),
                Err(e) => Lost::Failed(e.to_string()),
            }),
        };
        *session.last_used.lock().expect("session lock") = Instant::now();
    }
}

impl Taken {
    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

fn gauge(open: usize) {
    metrics::gauge!("pipelab_sessions_open").set(open as f64);
}

impl Engine {
    /// Opens a session on `on`'s Redis for `who` (only a caller with the
    /// same access and visitor finds it), its connection with `settings`:
    /// its id. Errors:
    /// [`EngineError::SessionsFull`] (the server's cap, the client's
    /// share, in the sandbox the visitor's), [`EngineError::Exec`] (could
    /// not connect).
    pub async fn open_session(&self, on: &Backend, who: Who<'_>, settings: SessionSettings) -> Result<String, EngineError> {
        let sessions = &self.sessions;
        sessions.expire();
        if let Some(refused) = sessions.refusal(&sessions.open.lock().expect("sessions lock"), who.client) {
            return Err(refused);
        }
        // A sandbox visitor's own cap, so that one visitor cannot hold them all.
        let visitor_slot = match &on.visitor {
            Some(lease) => Some(lease.visitor.sessions.clone().try_acquire_owned().map_err(|_| {
                EngineError::SessionsFull(SessionsFull::Visitor { cap: self.sandbox().map_or(0, |s| s.settings().visitor_sessions) })
            })?),
            None => None,
        };
        let conn_settings = ConnSettings {
            connect_timeout: self.limits.connect_timeout,
            read_timeout: self.limits.batch_timeout,
            resp3: settings.resp3,
            simulated_rtt_ms: settings.simulated_rtt_ms,
            simulated_bandwidth_mbps: settings.simulated_bandwidth_mbps,
            max_reply_bytes: Some(self.limits.max_reply_bytes),
            deadline: None,
            cancel: None,
        };
        let conn = Conn::connect(on.pool.target(), &conn_settings).await.map_err(crate::exec::ExecError::from)?;
        let id = new_id()?;
        let session = Arc::new(Session {
            access: who.access,
            client: who.client,
            visitor: who.visitor.cloned(),
            _visitor_slot: visitor_slot,
            ended: on.visitor.as_ref().map(|lease| lease.child.process.exit_watch()),
            settings,
            conn: Arc::new(tokio::sync::Mutex::new(Ok(conn))),
            last_used: Mutex::new(Instant::now()),
        });
        {
            let mut open = sessions.open.lock().expect("sessions lock");
            // Counted again under the lock: callers may have raced here.
            if let Some(refused) = sessions.refusal(&open, who.client) {
                return Err(refused);
            }
            open.insert(id.clone(), session);
            gauge(open.len());
        }
        Sessions::start_reaper(sessions);
        Ok(id)
    }
}

/// A new random session id: the node's id and 128 bits from the system's
/// generator, in hex (`crate::node`).
fn new_id() -> Result<String, EngineError> {
    crate::node::new_id().map_err(|_| EngineError::Unanswered { why: "no random bytes for a session id" })
}
