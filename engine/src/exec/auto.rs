//! Auto mode: auto-pipelining as ioredis's `enableAutoPipelining` (and
//! @upstash/redis's) does it. `clients` simulated concurrent callers each
//! send their share of the batch (command `i` belongs to caller
//! `i % clients`) one command at a time, awaiting each reply before the
//! next, as plain client code does; the client library coalesces the
//! commands pending at each event-loop tick into one write.
//!
//! Here one "tick" is: the replies that arrived together (one waiting read,
//! then every reply already received), each handing its caller the reply,
//! whose next call becomes pending; then one write of all pending commands.
//! With `window_us` > 0 a write waits that long after its first pending
//! command for more to join it (replies still being read meanwhile).
//!
//! As every caller's next command (`i + clients`) becomes pending when
//! command `i`'s reply arrives, and replies arrive in write order, commands
//! are written (and answered) in index order: at most `clients` are in
//! flight, each caller's own commands in its order, and a file source
//! can be pulled from in order.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::execution::Execution;
use super::source::{CommandSource, ResultSink};
use super::{OnError, Status};
use crate::conn::ReadError;

/// Default simulated callers (`clients`).
pub const DEFAULT_CLIENTS: usize = 10;
/// Most simulated callers (`clients`).
pub const MAX_CLIENTS: usize = 1000;
/// Longest `window_us` (1 s).
pub const MAX_WINDOW_US: u64 = 1_000_000;

/// How auto mode coalesced the callers' commands (`summary.auto`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"clients": 10, "window_us": 0, "writes": 101, "max_commands_per_write": 10,
    "mean_commands_per_write": 9.9})))]
pub struct AutoSummary {
    /// Simulated concurrent callers.
    pub clients: usize,
    /// µs a pending command waited for others to join its write (0: one tick).
    pub window_us: u64,
    /// Coalesced writes (one per tick with pending commands).
    pub writes: u64,
    /// Most commands one write carried.
    pub max_commands_per_write: usize,
    /// Commands written / `writes` (0 without writes).
    pub mean_commands_per_write: f64,
}

/// Commands called but not yet written: encoded back to back, and when each
/// one's caller called it.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    calls: VecDeque<Instant>,
}

/// Written commands awaiting replies, oldest first: when each was called,
/// and the µs its write was issued (its `sent_us`).
type InFlight = VecDeque<(Instant, u64)>;

pub(super) async fn run<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, clients: usize, window_us: u64, on_error: OnError) {
    let clients = clients.max(1);
    let mut stats = AutoSummary { clients, window_us, ..AutoSummary::default() };
    let (mut pending, mut in_flight) = (Pending::default(), InFlight::new());
    let mut calling = true;
    let mut written = 0usize;
    // Every caller makes its first call at once.
    let start = Instant::now();
    for _ in 0..clients {
        if !call(r, &mut pending, start) {
            break;
        }
    }
    'ticks: loop {
        if !pending.calls.is_empty() {
            if window_us > 0 {
                let until = pending.calls[0] + Duration::from_micros(window_us);
                if let Err(e) = read_until(r, &mut pending, &mut in_flight, until, on_error, &mut calling).await {
                    lost(r, &mut in_flight, e);
                    break 'ticks;
                }
                if pending.calls.is_empty() {
                    continue; // an error reply with on_error: stop dropped them
                }
            }
            let n = pending.calls.len();
            let issued = Instant::now();
            match r.write(&pending.bytes, false).await {
                Ok(sent_at) => {
                    r.note_io(Instant::now());
                    written += n;
                    r.mark_sent(written);
                    let sent_us = r.us(sent_at);
                    in_flight.extend(pending.calls.drain(..).map(|c| (c, sent_us)));
                    pending.bytes.clear();
                    stats.writes += 1;
                    stats.max_commands_per_write = stats.max_commands_per_write.max(n);
                }
                Err((e, nothing_sent)) => {
                    lost(r, &mut in_flight, e);
                    let (status, sent_us) =
                        if nothing_sent { (Status::NotSent, None) } else { (Status::Unknown, Some(r.us(issued))) };
                    for _ in 0..n {
                        r.emit(status, None, sent_us, None);
                    }
                    break 'ticks;
                }
            }
        }
        if in_flight.is_empty() {
            break;
        }
        // One tick: wait for a reply, then take every reply already here.
        r.summary.round_trips += 1;
        let conn = r.conn.as_mut().expect("connection present until fail()");
        let mut next = conn.read_reply().await.map(Some);
        loop {
            match next {
                Ok(Some((reply, at))) => {
                    if let Err(e) = answer(r, &mut pending, &mut in_flight, reply, at, on_error, &mut calling) {
                        lost(r, &mut in_flight, e);
                        break 'ticks;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    lost(r, &mut in_flight, e);
                    break 'ticks;
                }
            }
            if in_flight.is_empty() {
                break;
            }
            next = r.conn.as_mut().expect("connection present until fail()").try_read_reply().await;
        }
    }
    if stats.writes > 0 {
        stats.mean_commands_per_write = written as f64 / stats.writes as f64;
    }
    r.summary.auto = Some(stats);
    r.rest_not_sent();
}

/// The next command becomes pending, called at `at`; false at the end of input.
fn call<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, pending: &mut Pending, at: Instant) -> bool {
    let Some(argv) = r.pull() else { return false };
    resp::encode_command(argv, &mut pending.bytes);
    pending.calls.push_back(at);
    true
}

/// The oldest command in flight gets `reply`; its caller calls its next
/// command (unless an error reply with `on_error: stop` ended the calls,
/// which also drops the pending ones: they end `not_sent`).
fn answer<S: CommandSource, K: ResultSink>(
    r: &mut Execution<'_, S, K>,
    pending: &mut Pending,
    in_flight: &mut InFlight,
    reply: resp::Value,
    at: Instant,
    on_error: OnError,
    calling: &mut bool,
) -> Result<(), ReadError> {
    let (called, sent_us) = in_flight.pop_front().expect("a reply answers a command in flight");
    let error = reply.is_error();
    let latency = at.saturating_duration_since(called).as_micros() as u64;
    r.emit_reply_timed(reply, sent_us, at, Some(latency))?;
    if error && on_error == OnError::Stop {
        *calling = false;
        pending.bytes.clear();
        pending.calls.clear();
    }
    if *calling && !call(r, pending, Instant::now()) {
        *calling = false;
    }
    Ok(())
}

/// Reads replies until `until` (the write window closes) or nothing is in flight.
async fn read_until<S: CommandSource, K: ResultSink>(
    r: &mut Execution<'_, S, K>,
    pending: &mut Pending,
    in_flight: &mut InFlight,
    until: Instant,
    on_error: OnError,
    calling: &mut bool,
) -> Result<(), ReadError> {
    while !in_flight.is_empty() && !pending.calls.is_empty() {
        let conn = r.conn.as_mut().expect("connection present until fail()");
        // A read is cancel-safe: bytes are only taken once they arrived.
        match tokio::time::timeout_at(until.into(), conn.read_reply()).await {
            Ok(read) => {
                let (reply, at) = read?;
                answer(r, pending, in_flight, reply, at, on_error, calling)?;
            }
            Err(_) => return Ok(()),
        }
    }
    if !pending.calls.is_empty() {
        tokio::time::sleep_until(until.into()).await;
    }
    Ok(())
}

/// The connection failed: every command written and not yet answered is
/// `unknown` (it may or may not have run); the pending ones end `not_sent`.
fn lost<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, in_flight: &mut InFlight, why: impl std::fmt::Display) {
    r.fail(why);
    for (_, sent_us) in in_flight.drain(..) {
        r.emit(Status::Unknown, None, Some(sent_us), None);
    }
}
