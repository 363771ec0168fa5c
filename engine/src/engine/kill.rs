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
//! manages); until the kill has answered, batches wait
//! for it ([`Kills`]) rather than run into `-BUSY`. `-NOTBUSY` (nothing runs) is a
//! fine answer; `-UNKILLABLE` (the script wrote) leaves Redis BUSY, and
//! `/healthz` then fails once that has lasted longer than the batch timeout.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::backend::Backend;
use super::Engine;
use crate::commands::Table;
use crate::conn::{side, RedisTarget};
use crate::exec::Batch;

/// How long the side connection waits for the kills' answers: Redis reads
/// nothing before the script has run for `busy-reply-threshold`.
const KILL_WAIT: Duration = Duration::from_secs(15);

/// What a batch's commands may do that the engine must prepare for, by
/// `table`: block ([`Table::may_block`]; not inside MULTI/EXEC, where
/// Redis does not block), run a script ([`Table::runs_script`]). One pass:
/// a 100k-command batch is read once.
#[derive(Debug, Clone, Copy, Default)]
pub struct Traits {
    pub blocks: bool,
    pub scripts: bool,
}

impl Traits {
    pub fn of(batch: &Batch, table: &Table) -> Traits {
        let may_block = batch.plan.mode != crate::exec::Mode::Transaction;
        if let Some(pre) = batch.checked_for(table) {
            return Traits { blocks: may_block && pre.may_block(), scripts: pre.runs_script() };
        }
        let mut t = Traits::default();
        for argv in batch.commands.iter() {
            t.blocks |= may_block && table.may_block(argv);
            t.scripts |= table.runs_script(argv);
            if t.scripts && (t.blocks || !may_block) {
                break;
            }
        }
        t
    }
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
struct InFlight(Engine);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.kills.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.kills.landed.notify_waiters();
    }
}

impl Kills {
    /// Until no kill is in flight, or `deadline`: `Err` at the deadline.
    /// One atomic load when none is (every batch asks); the waiting loop,
    /// and its timer, boxed away from that.
    pub async fn wait(&self, deadline: tokio::time::Instant) -> Result<(), ()> {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        Box::pin(self.wait_landed(deadline)).await
    }

    async fn wait_landed(&self, deadline: tokio::time::Instant) -> Result<(), ()> {
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
/// dropped with the client), it spawns the kills on the current runtime
/// (in the sandbox, the supervisor stops the visitor's script, or their
/// Redis, before their next batch).
pub struct KillOnCut {
    /// The engine, the Redis and whether the batch runs scripts.
    armed: Option<(Engine, Backend, bool)>,
}

impl KillOnCut {
    /// Armed if the batch runs `scripts`; in the sandbox always (whatever
    /// was cut is settled before the visitor's next batch:
    /// `crate::sandbox::Supervisor::settle`).
    pub fn new(engine: &Engine, on: &Backend, scripts: bool) -> KillOnCut {
        KillOnCut { armed: (scripts || on.visitor.is_some()).then(|| (engine.clone(), on.clone(), scripts)) }
    }

    /// The batch ended on its own: nothing to kill.
    pub fn disarm(mut self) {
        self.armed = None;
    }
}

impl Drop for KillOnCut {
    fn drop(&mut self) {
        let Some((engine, on, scripts)) = self.armed.take() else { return };
        if let (Some(sandbox), Some(lease)) = (engine.sandbox(), on.visitor) {
            sandbox.settle(lease, scripts, engine.limits.connect_timeout);
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            engine.kills.in_flight.fetch_add(1, Ordering::AcqRel);
            let in_flight = InFlight(engine.clone());
            rt.spawn(async move {
                // Logged as text: the reason, not the variant's name.
                let answers = kill_scripts(on.pool.target(), engine.limits.connect_timeout).await.map_err(|e| e.to_string());
                drop(in_flight);
                tracing::warn!(?answers, "a batch running a script was cut: sent SCRIPT KILL and FUNCTION KILL");
            });
        }
    }
}

/// `SCRIPT KILL` and `FUNCTION KILL` on a side connection (connecting
/// bounded by `connect_timeout`, answers by `KILL_WAIT`); their answers
/// as text (`OK`, `NOTBUSY …`, `UNKILLABLE …`), or why there are none.
pub async fn kill_scripts(target: &RedisTarget, connect_timeout: Duration) -> Result<Vec<String>, side::SideError> {
    side::kill_scripts(target, connect_timeout, KILL_WAIT).await
}

/// Whether Redis is stuck: PING on a side connection answered `-BUSY`, or
/// not answered within `wait` (a script under its busy threshold answers
/// nothing). `false` when Redis cannot be reached at all (that is
/// `/readyz`'s to report) or answers.
pub async fn redis_busy(target: &RedisTarget, connect_timeout: Duration, wait: Duration) -> bool {
    side::is_busy(target, connect_timeout, wait).await
}
