//! Sessions: a Redis connection that outlives a batch (docs/api.md#sessions).
//!
//! A batch normally has its connection only while it runs (an idle pooled
//! one, given back only if no command changed its state), so `WATCH` in
//! one batch and `MULTI`/`EXEC` in the next cannot be shown. A session owns
//! one connection: `POST /api/v1/sessions` opens it, `POST /api/v1/batch`
//! with `"session": id` runs on it, keeping whatever state the commands
//! left (WATCHed keys, an open MULTI whose commands answer `QUEUED`), and
//! `DELETE /api/v1/sessions/{id}` closes it. One batch at a time (409
//! `session_busy`); a session idle for `--session-idle-ms` is closed (404
//! `session_not_found` afterwards), at most `--max-sessions` are open (503
//! `too_many_sessions`). A session whose connection failed (the server
//! closed it, a batch was cut) answers 409 `session_lost` and is never
//! reopened behind the caller's back: its WATCH and MULTI state is gone.
//!
//! A session belongs to the access it was opened with (`api::auth`): a
//! batch with another token's access does not find it (404), and each
//! batch's commands are checked as any batch's; a read-only token's
//! session runs as the read-only Redis user where pipelab has one.
//!
//! In the sandbox (`crate::sandbox`) a session belongs to the visitor too
//! (a batch with another cookie, or none, does not find it), its
//! connection is to the visitor's own Redis, and a visitor keeps at most
//! `--sandbox-visitor-sessions` open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::auth::Access;
use super::error::{ApiCode, ApiError};
use super::stream::{self, Keep, KeptResults};
use super::backend::Backend;
use super::AppState;
use crate::conn::{Conn, ConnSettings};
use crate::sandbox::VisitorId;
use crate::exec::Batch;

/// `POST /api/v1/sessions`'s body (optional: an empty body takes the defaults).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"resp3": false}))]
pub struct SessionRequest {
    /// Speak RESP3 (HELLO 3) on the session's connection. Default false.
    pub resp3: Option<bool>,
    /// Simulated round-trip time of the session's connection, in ms (0 to
    /// 1000). Default 0. Every batch on the session pays it.
    #[schema(minimum = 0, maximum = 1000)]
    pub simulated_rtt_ms: Option<f64>,
    /// Simulated bandwidth in each direction, in Mbit/s (0.01 to 100000).
    /// Default: unlimited. Every batch on the session is carried at it.
    #[schema(minimum = 0.01, maximum = 100000)]
    pub simulated_bandwidth_mbps: Option<f64>,
}

/// An open session (201).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({"id": "3f2a9c0e5b7d41e8a6c4f0b2d9e7a1c3", "idle_ms": 60000, "expires_at_ms": 1764633600000u64}))]
pub struct SessionResponse {
    /// Pass as `"session"` to `POST /api/v1/batch`.
    pub id: String,
    /// The session is closed after this many ms without a batch (`--session-idle-ms`).
    pub idle_ms: u64,
    /// When it expires if no batch runs on it, in ms since the Unix epoch
    /// (each batch's end pushes it back by `idle_ms`).
    pub expires_at_ms: u64,
}

/// One session: its connection and settings.
pub struct Session {
    access: Access,
    /// Who opened it, for its share (`crate::engine::share`).
    client: Option<crate::engine::ClientKey>,
    /// The sandbox visitor it belongs to (`None` outside the sandbox).
    visitor: Option<VisitorId>,
    /// Their share of sessions, given back when it closes.
    _visitor_slot: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The settings its connection was opened with: a batch on it must not ask for others.
    pub resp3: bool,
    pub simulated_rtt_ms: f64,
    pub simulated_bandwidth_mbps: Option<f64>,
    /// The connection; `Err` with why once it is lost. Locked by the batch
    /// running on it (so a second batch finds it busy).
    conn: Arc<tokio::sync::Mutex<Result<Conn, String>>>,
    /// When the last batch ended (or the session was opened).
    last_used: Mutex<Instant>,
}

/// The open sessions (`AppState::sessions`).
pub struct Sessions {
    open: Mutex<HashMap<String, Arc<Session>>>,
    idle: Duration,
    max: usize,
    /// Most open at once per client (`--max-sessions-per-client`).
    per_client: usize,
    /// The expiry task runs (started with the first session).
    reaping: std::sync::atomic::AtomicBool,
}

impl Sessions {
    pub fn new(idle_ms: u64, max: usize, per_client: usize) -> Arc<Sessions> {
        Arc::new(Sessions { open: Mutex::default(), idle: Duration::from_millis(idle_ms), max, per_client, reaping: Default::default() })
    }

    /// Why `client` may not open another session now, if it may not: the
    /// server's cap or the client's share (the open ones counted in `open`).
    fn refusal(&self, open: &HashMap<String, Arc<Session>>, client: Option<crate::engine::ClientKey>) -> Option<ApiError> {
        if open.len() >= self.max {
            return Some(ApiError::new(
                ApiCode::TooManySessions,
                format!("{} sessions are open, the server's limit (--max-sessions); close one (DELETE /api/v1/sessions/ID) or wait for one to expire", self.max),
            ));
        }
        let mine = client.map_or(0, |c| open.values().filter(|s| s.client == Some(c)).count());
        (mine >= self.per_client).then(|| {
            ApiError::new(
                ApiCode::TooManySessions,
                format!(
                    "this client (its token, else its address) has {mine} sessions open, its share (--max-sessions-per-client); close one (DELETE /api/v1/sessions/ID) or wait for one to expire"
                ),
            )
        })
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        self.open.lock().expect("sessions lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The session `id` if it exists, has not expired and belongs to
    /// `access` and to the sandbox visitor `visitor` (the request's cookie;
    /// `None` outside the sandbox). Errors: 404 `session_not_found`, as if
    /// another's session did not exist.
    pub fn get(&self, id: &str, access: Access, visitor: Option<&VisitorId>) -> Result<Arc<Session>, ApiError> {
        self.expire();
        match self.open.lock().expect("sessions lock").get(id) {
            Some(s) if s.access == access && s.visitor.as_ref() == visitor => Ok(s.clone()),
            _ => Err(not_found(id)),
        }
    }

    /// Closes the sessions idle for longer than `--session-idle-ms` (not one
    /// a batch is running on), counting them in `/metrics`.
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
            ids.iter().filter_map(|id| open.remove(id)).collect()
        };
        if !expired.is_empty() {
            crate::telemetry::sessions_expired(expired.len() as u64);
            crate::telemetry::sessions_open(self.len());
        }
        // The connections close as the sessions drop, outside the lock.
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
}

fn not_found(id: &str) -> ApiError {
    ApiError::new(
        ApiCode::SessionNotFound,
        format!("session: no open session {id:?} (never opened, closed, or idle past --session-idle-ms)"),
    )
    .at("session")
}

/// A new random session id: 128 bits from the system's generator, in hex.
fn new_id() -> Result<String, ApiError> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ApiError::new(ApiCode::RedisUnavailable, "no random bytes for a session id"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Open a session: a Redis connection of its own that keeps its state between batches.
///
/// The body is optional (`{}` or none: RESP2, no simulated RTT).
#[utoipa::path(post, path = "/api/v1/sessions", tag = "sessions",
    request_body(content = Option<SessionRequest>, description = "Optional"),
    responses(
        (status = 201, description = "The session is open", body = SessionResponse),
        (status = 400, description = "A bad field", body = super::error::ErrorBody),
        (status = 503, description = "`too_many_sessions` (--max-sessions are open, --max-sessions-per-client of this client's, or in the sandbox the visitor's own cap), `sandbox_full` or `redis_unavailable`", body = super::error::ErrorBody),
    ))]
pub async fn create(
    State(state): State<AppState>,
    caller: super::caller::Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let req: SessionRequest = if body.iter().all(u8::is_ascii_whitespace) {
        SessionRequest::default()
    } else {
        super::extract::parse_json(&body)?
    };
    let backend = state.backend(&caller).await?;
    let super::caller::Caller { access, visitor, share: client, .. } = caller;
    let simulated_rtt_ms = super::validate::rtt(req.simulated_rtt_ms)?;
    let simulated_bandwidth_mbps = super::validate::bandwidth(req.simulated_bandwidth_mbps)?;
    let resp3 = req.resp3.unwrap_or(false);
    let sessions = &state.sessions;
    sessions.expire();
    if let Some(refused) = sessions.refusal(&sessions.open.lock().expect("sessions lock"), client) {
        return Err(refused);
    }
    // A sandbox visitor's own cap, so that one visitor cannot hold them all.
    let visitor_slot = match &backend.visitor {
        Some(lease) => Some(lease.visitor.sessions.clone().try_acquire_owned().map_err(|_| {
            ApiError::new(
                ApiCode::TooManySessions,
                format!("you have {} sessions open, the most one visitor may; close one (DELETE /api/v1/sessions/ID) or wait for one to expire", state.engine.sandbox().map_or(0, |s| s.settings().visitor_sessions)),
            )
        })?),
        None => None,
    };
    let limits = &state.limits;
    let settings = ConnSettings {
        connect_timeout: limits.connect_timeout(),
        read_timeout: limits.batch_timeout(),
        resp3,
        simulated_rtt_ms,
        simulated_bandwidth_mbps,
        max_reply_bytes: Some(limits.max_reply_bytes),
        deadline: None,
        cancel: None,
    };
    let conn = Conn::connect(backend.pool.target(), &settings).await?;
    let id = new_id()?;
    let session = Arc::new(Session {
        access,
        client,
        visitor,
        _visitor_slot: visitor_slot,
        resp3,
        simulated_rtt_ms,
        simulated_bandwidth_mbps,
        conn: Arc::new(tokio::sync::Mutex::new(Ok(conn))),
        last_used: Mutex::new(Instant::now()),
    });
    {
        let mut open = sessions.open.lock().expect("sessions lock");
        // Counted again under the lock: requests may have raced here.
        if let Some(refused) = sessions.refusal(&open, client) {
            return Err(refused);
        }
        open.insert(id.clone(), session);
        crate::telemetry::sessions_open(open.len());
    }
    Sessions::start_reaper(sessions);
    let body = SessionResponse {
        id,
        idle_ms: sessions.idle.as_millis() as u64,
        expires_at_ms: unix_ms(SystemTime::now() + sessions.idle),
    };
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// Close a session and its connection.
///
/// A batch running on it finishes first, its connection then closed.
#[utoipa::path(delete, path = "/api/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 204, description = "Closed"),
        (status = 404, description = "`session_not_found`", body = super::error::ErrorBody),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    caller: super::caller::Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    state.sessions.get(&id, caller.access, caller.visitor.as_ref())?;
    let removed = state.sessions.open.lock().expect("sessions lock").remove(&id);
    crate::telemetry::sessions_open(state.sessions.len());
    drop(removed);
    Ok(StatusCode::NO_CONTENT)
}

impl Session {
    /// A batch's `resp3` / `simulated_rtt_ms` / `simulated_bandwidth_mbps`,
    /// if given, must be the session's: its connection was opened with them.
    /// Errors: 400 `invalid_field`.
    pub fn check_settings(&self, resp3: Option<bool>, simulated_rtt_ms: Option<f64>, mbps: Option<f64>) -> Result<(), ApiError> {
        if resp3.is_some_and(|r| r != self.resp3) {
            return Err(ApiError::field(
                ApiCode::InvalidField,
                "resp3",
                format!("the session's connection speaks {} (set when it was opened); leave resp3 out", if self.resp3 { "RESP3" } else { "RESP2" }),
            ));
        }
        if simulated_rtt_ms.is_some_and(|r| r != self.simulated_rtt_ms) {
            return Err(ApiError::field(
                ApiCode::InvalidField,
                "simulated_rtt_ms",
                format!("the session's connection has {} ms (set when it was opened); leave simulated_rtt_ms out", self.simulated_rtt_ms),
            ));
        }
        if mbps.is_some() && mbps != self.simulated_bandwidth_mbps {
            return Err(ApiError::field(
                ApiCode::InvalidField,
                "simulated_bandwidth_mbps",
                "the session's connection has its own bandwidth (set when it was opened); leave simulated_bandwidth_mbps out",
            ));
        }
        Ok(())
    }
}

/// Runs `batch` on `session`'s connection and answers with its report.
///
/// Errors: 409 `session_busy` (a batch runs on it), 409 `session_lost`
/// (its connection failed: the session is closed), and those of any batch.
pub async fn run(state: AppState, on: &Backend, id: &str, session: Arc<Session>, batch: Batch, keep: Keep) -> Result<Response, ApiError> {
    let Ok(mut slot) = session.conn.clone().try_lock_owned() else {
        return Err(ApiError::new(
            ApiCode::SessionBusy,
            "session: another batch is running on this session; send the next one after its answer",
        )
        .at("session"));
    };
    // Taken out while the batch runs: a batch cut half-way (the client
    // went away) leaves the session lost, never with a connection in an
    // unknown state.
    let mut conn = match std::mem::replace(&mut *slot, Err("a batch on it was cut before it ended".into())) {
        Ok(conn) if conn.probe_idle() => Some(conn),
        Ok(_) => {
            *slot = Err("the Redis server closed its connection".into());
            None
        }
        Err(why) => {
            *slot = Err(why);
            None
        }
    };
    if conn.is_none() {
        let why = slot.as_ref().err().cloned().unwrap_or_default();
        drop(slot);
        state.sessions.open.lock().expect("sessions lock").remove(id);
        crate::telemetry::sessions_open(state.sessions.len());
        return Err(lost(&why));
    }
    let mut kept = KeptResults::new(&state, keep, batch.commands.len());
    let out = super::run::run_session_batch(&state, on, &batch, &mut conn, &mut kept).await;
    *slot = match conn {
        Some(c) => Ok(c),
        None => Err(match &out {
            Ok(o) => o.connection_error.clone().unwrap_or_else(|| "a command left the connection unusable".into()),
            Err(e) => e.body.message.clone(),
        }),
    };
    *session.last_used.lock().expect("session lock") = Instant::now();
    drop(slot);
    Ok(stream::report_response(&mut kept, &out?))
}

fn lost(why: &str) -> ApiError {
    ApiError::new(
        ApiCode::SessionLost,
        format!("session: its Redis connection is gone ({why}); its WATCH and MULTI state went with it, so it is closed and not reopened: open a new session"),
    )
    .at("session")
}
