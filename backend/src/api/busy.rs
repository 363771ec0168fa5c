//! A script that never ends: killing it when its batch is cut, and telling
//! the health check when Redis stays BUSY anyway.
//!
//! `EVAL "while true do end" 0` blocks Redis for everyone: after
//! `busy-reply-threshold` (5 s by default, `lua-time-limit` before Redis
//! 7.0) Redis answers every other command with `-BUSY` until the script is
//! killed, and pipelab refuses `SCRIPT KILL` in batches (it administers
//! the server everyone shares). So when a batch that contains a script or
//! function call is cut (batch timeout, lost connection, client gone),
//! pipelab sends `SCRIPT KILL` and `FUNCTION KILL` itself, on a side
//! connection: a fresh one, outside the pool, with no handshake but AUTH
//! (the only commands a BUSY Redis runs are flagged `allow-busy`: AUTH,
//! HELLO, SCRIPT KILL, FUNCTION KILL, ...). Redis accepts the kill once
//! the script has run for its busy threshold (low on the Redis pipelab
//! manages, `crate::embedded`); until the kill has answered, batches wait
//! for it ([`Kills`]) rather than run into `-BUSY`. `-NOTBUSY` (nothing runs) is a
//! fine answer; `-UNKILLABLE` (the script wrote) leaves Redis BUSY, and
//! `/healthz` then fails once that has lasted longer than the batch timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use super::AppState;
use crate::commands::Table;
use crate::conn::{connect_stream, RedisTarget};
use crate::exec::Batch;

/// How long the side connection waits for the kills' answers: Redis reads
/// nothing before the script has run for `busy-reply-threshold`.
const KILL_WAIT: Duration = Duration::from_secs(15);

/// The batch calls a script or a function, by `table` ([`Table::runs_script`]).
pub fn runs_scripts(batch: &Batch, table: &Table) -> bool {
    batch.commands.iter().any(|argv| table.runs_script(argv))
}

/// The script kills in flight: while one is, Redis may answer BUSY, so a
/// batch waits for it to land ([`Kills::wait`]) rather than be handed a
/// connection whose every command would get `-BUSY`.
#[derive(Default)]
pub struct Kills {
    in_flight: AtomicUsize,
    landed: Notify,
}

/// One kill in flight, until dropped.
struct InFlight(AppState);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.kills.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.kills.landed.notify_waiters();
    }
}

impl Kills {
    /// Until no kill is in flight, or `deadline`: `Err` at the deadline.
    /// One atomic load when none is (every batch asks).
    pub async fn wait(&self, deadline: tokio::time::Instant) -> Result<(), ()> {
        loop {
            let landed = self.landed.notified();
            if self.in_flight.load(Ordering::Acquire) == 0 {
                return Ok(());
            }
            tokio::time::timeout_at(deadline, landed).await.map_err(|_| ())?;
        }
    }
}

/// Sends the script kills while it is alive and armed: dropped before
/// [`KillOnCut::disarm`] (the batch was cut, or its request's future
/// dropped with the client), it spawns the kills on the current runtime.
pub struct KillOnCut {
    state: Option<AppState>,
}

impl KillOnCut {
    /// Armed if `batch` runs scripts, by the pool's command table (the
    /// server's: the handlers read it before checking the request).
    pub fn new(state: &AppState, batch: &Batch) -> KillOnCut {
        KillOnCut { state: runs_scripts(batch, &state.pool.commands()).then(|| state.clone()) }
    }

    /// The batch ended on its own: nothing to kill.
    pub fn disarm(mut self) {
        self.state = None;
    }
}

impl Drop for KillOnCut {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                state.kills.in_flight.fetch_add(1, Ordering::AcqRel);
                let in_flight = InFlight(state.clone());
                rt.spawn(async move {
                    let answers = kill_scripts(&state.target, state.limits.connect_timeout()).await;
                    drop(in_flight);
                    tracing::warn!(?answers, "a batch running a script was cut: sent SCRIPT KILL and FUNCTION KILL");
                });
            }
        }
    }
}

/// `SCRIPT KILL` and `FUNCTION KILL` on a side connection (connecting
/// bounded by `connect_timeout`, answers by [`KILL_WAIT`]); their answers
/// as text (`OK`, `NOTBUSY …`, `UNKILLABLE …`), or why there are none.
pub async fn kill_scripts(target: &RedisTarget, connect_timeout: Duration) -> Result<Vec<String>, String> {
    let replies = side_commands(target, connect_timeout, KILL_WAIT, &[&[b"SCRIPT", b"KILL"], &[b"FUNCTION", b"KILL"]]).await?;
    Ok(replies.iter().map(|r| r.display().trim_end().to_string()).collect())
}

/// Whether Redis is stuck: PING on a side connection answered `-BUSY`, or
/// not answered within `wait` (a script under its busy threshold answers
/// nothing). `false` when Redis cannot be reached at all (that is
/// `/readyz`'s to report) or answers.
pub async fn redis_busy(target: &RedisTarget, connect_timeout: Duration, wait: Duration) -> bool {
    match side_commands(target, connect_timeout, wait, &[&[b"PING"]]).await {
        Ok(replies) => replies.first().is_some_and(|r| r.is_error() && r.display().contains("BUSY")),
        Err(SideError::NoAnswer) => true,
        Err(SideError::Connect(_)) => false,
    }
}

/// For `/healthz`: how long Redis has stayed stuck (`None`: it is not),
/// as seen by this probe and the previous ones.
pub async fn busy_for(state: &AppState) -> Option<Duration> {
    // At most 2 s in all, within the Docker health check's 3 s.
    let wait = Duration::from_secs(1);
    let busy = redis_busy(&state.target, state.limits.connect_timeout().min(wait), wait).await;
    let mut since = state.busy_since.lock().expect("busy_since lock");
    if !busy {
        *since = None;
        return None;
    }
    Some(since.get_or_insert_with(Instant::now).elapsed())
}

/// Why a side connection got no answers.
#[derive(Debug)]
enum SideError {
    Connect(String),
    NoAnswer,
}

impl From<SideError> for String {
    fn from(e: SideError) -> String {
        match e {
            SideError::Connect(m) => m,
            SideError::NoAnswer => "no answer in time".into(),
        }
    }
}

/// Sends `commands` (after AUTH, if the target has a password) on a fresh
/// connection and reads their replies (AUTH's left out).
async fn side_commands(
    target: &RedisTarget,
    connect_timeout: Duration,
    wait: Duration,
    commands: &[&[&[u8]]],
) -> Result<Vec<resp::Value>, SideError> {
    let mut stream = connect_stream(target, connect_timeout).await.map_err(SideError::Connect)?;
    let mut out = Vec::new();
    let auth = target.password.as_ref().map(|pass| match &target.username {
        Some(user) => vec![b"AUTH".to_vec(), user.clone().into_bytes(), pass.clone().into_bytes()],
        None => vec![b"AUTH".to_vec(), pass.clone().into_bytes()],
    });
    if let Some(argv) = &auth {
        resp::encode_command(argv, &mut out);
    }
    for argv in commands {
        resp::encode_command(argv.iter(), &mut out);
    }
    let expected = commands.len() + usize::from(auth.is_some());
    let io = async {
        stream.write_all(&out).await?;
        let (mut buf, mut start, mut replies) = (Vec::new(), 0, Vec::new());
        let mut decoder = resp::Decoder::new();
        while replies.len() < expected {
            match decoder.decode(&buf[start..]) {
                Ok(resp::Decoded::Complete { value, consumed }) => {
                    start += consumed;
                    replies.push(value);
                    continue;
                }
                Ok(resp::Decoded::Incomplete { .. }) => {}
                Err(e) => return Err(std::io::Error::other(e.to_string())),
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok(replies)
    };
    match tokio::time::timeout(wait, io).await {
        Ok(Ok(mut replies)) => {
            if auth.is_some() {
                replies.remove(0);
            }
            Ok(replies)
        }
        Ok(Err(e)) => Err(SideError::Connect(e.to_string())),
        Err(_) => Err(SideError::NoAnswer),
    }
}
