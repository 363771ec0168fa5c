//! Shared connections: small batches of concurrent requests written
//! together, in one write, on one Redis connection per pool and runtime.
//!
//! Why: a request of one SET is mostly fixed costs, and at 64 concurrent
//! requests a third of them are Redis's side of the round trip (its
//! `read`, `write` and wake-up per request) and pipelab's system calls on
//! the Redis socket. Coalescing what the requests of one event-loop tick
//! want to send into one write, as ioredis's and redis-rs's multiplexed
//! connections do for one process's callers, pays those once per tick.
//!
//! Only a batch that cannot tell it shared the connection is eligible
//! ([`shareable`]): one pipeline chunk (or one command) of at most
//! [`MAX_COMMANDS`] data commands, no simulated RTT, RESP2, no WATCH, no
//! server stats, no cancel handle, a single Redis (not a cluster, by the
//! server's own table), and no command that blocks (flag or `@blocking`),
//! changes the connection's state (MULTI, SELECT, CLIENT …), runs a
//! script, is `admin`, `pubsub` or `noscript` (those could hold the
//! connection or leave something on it for the next).
//! Replies come back in the order the commands were written, so each
//! batch's replies are the next ones after the batch before it.
//!
//! A shareable batch with no other running beside it on the pool
//! ([`Lanes::enter`]) takes a pooled connection of its own instead: it
//! has no one to share a write with, and the lane's task would be one more
//! hop on its way (one client sending one request at a time: 1.3k more
//! instructions per one-SET request, `bench/api_instructions.sh`).
//!
//! Outcomes stay honest. A batch whose write failed with not one byte
//! accepted is `not_sent` (after one try on another connection); once
//! written, commands without a reply are `unknown` when the connection
//! fails, and never re-sent. A batch whose request gave up (the batch
//! timeout) before the lane took it for a write is never written and is
//! `not_sent` ([`ABANDONED`]); one that gives up after reports `unknown`.
//! A request that is gone with its client is not written either.
//!
//! Timings: `total_us`, `sent_us` and `reply_us` start when the batch was
//! queued, so they include the wait for the previous shared write's
//! replies; `summary.shared` says how many batches and commands the write
//! carried. The reply limit (`max_reply_bytes`) and the read timeout are
//! each batch's own, applied to its replies; the lane's connection is
//! opened with the settings of the batch that started the lane.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::source::{ResultSink, StreamReport};
use super::{CommandResult, Mode, Pool, Status, Summary};
use super::{Batch, ExecOptions};
use crate::commands::Table;
use crate::conn::{Conn, ConnSettings, ReadError};

/// Most commands in a batch that may share a connection: a larger one
/// would hold the other requests' replies back behind its own.
pub const MAX_COMMANDS: usize = 64;

/// Most encoded bytes in a batch that may share a connection (16 KiB, what
/// Redis reads per call: `PROTO_IOBUF_LEN` in `src/server.h`).
pub const MAX_BYTES: usize = 16 * 1024;

/// Most commands, and bytes, in one shared write; the rest go in the next.
const WRITE_COMMANDS: usize = 1024;
const WRITE_BYTES: usize = 256 * 1024;

/// Command flags that bar a command from a shared connection (the server's
/// `COMMAND INFO` flags): it may block the connection (`blocking`), act on
/// the server or the connection (`admin`: DEBUG SLEEP, CLIENT PAUSE,
/// MONITOR), turn it into a subscriber (`pubsub`), or is one that scripts
/// may not run either, as it needs a connection of its own (`noscript`:
/// WAIT, MULTI, WATCH).
const BARRED_FLAGS: [&str; 4] = ["blocking", "admin", "pubsub", "noscript"];

/// The batch may go on a shared connection: see the module's rules.
/// `table` is the server's command table (the pool's).
pub fn shareable(batch: &Batch, opts: &ExecOptions, table: &Table) -> bool {
    let plan = &batch.plan;
    let n = batch.commands.len();
    let one_chunk = match plan.mode {
        Mode::Pipeline => n <= plan.batch_size,
        Mode::Sequential => n == 1,
        Mode::Transaction | Mode::Auto => false,
    };
    one_chunk
        && (1..=MAX_COMMANDS).contains(&n)
        && plan.simulated_rtt_ms == 0.0
        && plan.simulated_bandwidth_mbps.is_none()
        && !plan.resp3
        && plan.watch.is_empty()
        && !plan.server_stats
        && opts.cancel.is_none()
        && !crate::cluster::is_cluster(table)
        && batch.commands.arg_bytes() <= MAX_BYTES
        && batch.commands.iter().map(resp::encoded_command_len).sum::<usize>() <= MAX_BYTES
        // Decided on the server's table: before Redis first answered, the
        // built-in one cannot tell a cluster.
        && table.identity().is_some()
        && batch.commands.iter().all(|argv| {
            // Redis 6 flags XREAD BLOCK only by its ACL category.
            table.command(argv).is_some_and(|c| !BARRED_FLAGS.iter().any(|f| c.has_flag(f)) && !c.in_category("blocking"))
                && !table.changes_connection_state(argv)
                && !table.runs_script(argv)
        })
}

/// A pool's shared connections: one lane (a task and its connection) per
/// tokio runtime, so that each connection's replies wake the thread whose
/// requests wait for them (as the pool's own rule, `pool::Pool::take_idle`).
pub struct Lanes {
    lanes: Mutex<Vec<Lane>>,
    /// Shareable batches running on the pool now, shared or not.
    running: AtomicUsize,
    /// Connections the lanes hold now, and their gauge on `/metrics`
    /// ([`SHARED_GAUGE`]).
    held: AtomicUsize,
    gauge: metrics::Gauge,
}

/// Name of the gauge of shared connections open on `/metrics`.
pub const SHARED_GAUGE: &str = "pipelab_redis_shared_connections";

struct Lane {
    runtime: Option<tokio::runtime::Id>,
    jobs: mpsc::UnboundedSender<Job>,
}

/// One batch's commands, encoded, waiting for a shared write, with its
/// caller's limits on reading their replies (`ExecOptions`).
struct Job {
    bytes: Vec<u8>,
    commands: usize,
    read_timeout: Duration,
    max_reply_bytes: Option<u64>,
    answer: oneshot::Sender<Answer>,
    /// [`QUEUED`] until the lane takes it for a write ([`CLAIMED`]) or its
    /// request gives up on it first ([`ABANDONED`]: it is never written).
    state: Arc<AtomicU8>,
}

const QUEUED: u8 = 0;
const CLAIMED: u8 = 1;
const ABANDONED: u8 = 2;

/// What happened to a [`Job`].
#[derive(Default)]
struct Answer {
    /// When the write that carried it was issued (`None`: not written).
    sent: Option<Instant>,
    /// Its replies in order, each with the instant the read that completed
    /// it returned and its size in bytes.
    replies: Vec<(resp::Value, Instant, u64)>,
    /// Why the connection failed (or could not be opened) before every reply.
    failure: Option<String>,
    /// The shared write's system calls, and the reads its replies took.
    write_syscalls: u64,
    read_syscalls: u64,
    /// Batches and commands in the write.
    shared: super::SharedWrite,
}

impl Lanes {
    /// No lanes yet; `gauge` counts their connections.
    pub fn new(gauge: metrics::Gauge) -> Lanes {
        Lanes { lanes: Mutex::new(Vec::new()), running: AtomicUsize::new(0), held: AtomicUsize::new(0), gauge }
    }

    /// Connections the lanes hold now (open, between or during writes).
    pub fn connections(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// A shareable batch starts running; whether another was running
    /// already (then it shares). It counts until the guard is dropped.
    pub fn enter(&self) -> (Running<'_>, bool) {
        let before = self.running.fetch_add(1, Ordering::AcqRel);
        (Running(&self.running), before > 0)
    }

    /// A lane took (`true`) or let go of (`false`) its connection.
    fn hold(&self, taken: bool) {
        if taken {
            self.held.fetch_add(1, Ordering::Relaxed);
            self.gauge.increment(1.0);
        } else {
            self.held.fetch_sub(1, Ordering::Relaxed);
            self.gauge.decrement(1.0);
        }
    }

    /// The lane of the caller's runtime, started on it the first time.
    /// A new lane connects with `batch`'s and `opts`' settings.
    fn sender(&self, pool: &Pool, batch: &Batch, opts: &ExecOptions) -> mpsc::UnboundedSender<Job> {
        let here = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
        let mut lanes = self.lanes.lock().expect("lanes lock");
        if let Some(lane) = lanes.iter().find(|l| l.runtime == here && !l.jobs.is_closed()) {
            return lane.jobs.clone();
        }
        lanes.retain(|l| !l.jobs.is_closed());
        let (tx, rx) = mpsc::unbounded_channel();
        let settings = ConnSettings { deadline: None, cancel: None, ..super::runner::settings(&batch.plan, opts) };
        tokio::spawn(drive(pool.weak(), rx, settings, pool.idle_timeout()));
        lanes.push(Lane { runtime: here, jobs: tx.clone() });
        tx
    }
}

/// A shareable batch counted as running ([`Lanes::enter`]) until dropped.
pub struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A pool dropped with lanes holding connections: they close with it.
impl Drop for Lanes {
    fn drop(&mut self) {
        self.gauge.decrement(self.held.load(Ordering::Relaxed) as f64);
    }
}

/// Runs `batch` (which must be [`shareable`]) on `pool`'s shared
/// connection of this runtime, handing each result to `sink`. Errors as
/// `execute_pooled_into`: the connection could not be opened (nothing sent)
/// is [`StreamReport::reconnect_failed`].
pub async fn run<K: ResultSink>(pool: &Pool, batch: &Batch, opts: &ExecOptions, sink: &mut K) -> StreamReport<std::convert::Infallible> {
    let t0 = Instant::now();
    let mut bytes = Vec::with_capacity(64);
    for argv in batch.commands.iter() {
        resp::encode_command(argv, &mut bytes);
    }
    let n = batch.commands.len();
    let bytes_sent = bytes.len() as u64;
    let (tx, rx) = oneshot::channel();
    let state = Arc::new(AtomicU8::new(QUEUED));
    let job = Job { bytes, commands: n, read_timeout: opts.read_timeout, max_reply_bytes: opts.max_reply_bytes, answer: tx, state: state.clone() };
    // Given up on (the deadline passed): never written if the lane had not
    // taken it yet, else its outcome is unknown. Not a connection failure.
    let mut gave_up = false;
    let answer = match pool.lanes().sender(pool, batch, opts).send(job) {
        Ok(()) => match wait(rx, opts.deadline).await {
            Ok(answer) => answer,
            Err(why) => {
                gave_up = true;
                let taken = state.compare_exchange(QUEUED, ABANDONED, Ordering::AcqRel, Ordering::Acquire).is_err();
                Answer { sent: taken.then_some(t0), failure: Some(why), ..Answer::default() }
            }
        },
        Err(_) => Answer { failure: Some("the shared connection's task has ended".into()), ..Answer::default() },
    };
    let us = |t: Instant| t.saturating_duration_since(t0).as_micros() as u64;
    let plan = &batch.plan;
    let mut summary = Summary {
        mode: Some(plan.mode),
        batch_size: if plan.mode == Mode::Sequential { 1 } else { plan.batch_size },
        ..Summary::default()
    };
    let mut connection_error = answer.failure.clone();
    let mut last = answer.sent.unwrap_or(t0);
    let sent_us = answer.sent.map(us);
    let mut replies = answer.replies.into_iter();
    // Set once the sink refused a reply: the rest are `unknown`, as the
    // runner has them after a cut.
    let mut cut = false;
    for index in 0..n {
        let (status, reply, reply_us) = match replies.next() {
            Some((reply, at, size)) => {
                summary.bytes_received += size;
                last = last.max(at);
                if cut {
                    (Status::Unknown, None, None)
                } else if let Err(limit) = sink.admit(&reply) {
                    cut = true;
                    connection_error.get_or_insert(format!("reply limit reached: the report would pass {limit} bytes of JSON"));
                    (Status::Unknown, None, None)
                } else {
                    let status = if reply.is_error() { Status::Error } else { Status::Ok };
                    (status, Some(reply), Some(us(at)))
                }
            }
            None if answer.sent.is_some() => (Status::Unknown, None, None),
            None => (Status::NotSent, None, None),
        };
        summary.count(status);
        let sent_us = if status == Status::NotSent { None } else { sent_us };
        sink.push(CommandResult { index, status, reply, sent_us, reply_us, latency_us: None, node: None });
    }
    summary.commands = n;
    if answer.sent.is_some() {
        summary.round_trips = 1;
        summary.write_calls = 1;
        summary.write_syscalls = answer.write_syscalls;
        summary.read_syscalls = answer.read_syscalls;
        summary.bytes_sent = bytes_sent;
        // None for a batch given up on mid-write: no write answered it.
        summary.shared = (answer.shared.batches > 0).then_some(answer.shared);
    }
    if connection_error.is_some() {
        last = last.max(Instant::now());
    }
    summary.set_total_us(us(last));
    let reconnect_failed = match (answer.sent, &connection_error) {
        (None, Some(why)) if !gave_up => Some(why.clone()),
        _ => None,
    };
    StreamReport { summary, transaction: None, connection_error, input_error: None, reconnect_failed }
}

/// The job's answer, or why there is none: the batch's deadline passed
/// first (whatever was written may have run), or the lane's task ended.
async fn wait(rx: oneshot::Receiver<Answer>, deadline: Option<Instant>) -> Result<Answer, String> {
    let answer = match deadline {
        Some(d) => match tokio::time::timeout_at(d.into(), rx).await {
            Ok(a) => a,
            Err(_) => return Err(ReadError::Deadline.to_string()),
        },
        None => rx.await,
    };
    answer.map_err(|_| "the shared connection's task ended before the reply".to_string())
}

/// A lane's task: takes the jobs queued since its last write, writes them
/// in one write, reads their replies in order and answers each job; then
/// the next. Ends when the pool is dropped. A connection unused for
/// `idle` goes back to the pool.
async fn drive(pool: Weak<Pool>, mut rx: mpsc::UnboundedReceiver<Job>, settings: ConnSettings, idle: Duration) {
    let mut conn: Option<Conn> = None;
    let mut jobs: Vec<Job> = Vec::new();
    let mut out = Vec::new();
    loop {
        let first = match conn.take() {
            Some(c) => match tokio::time::timeout(idle, rx.recv()).await {
                Ok(job) => {
                    conn = Some(c);
                    job
                }
                Err(_) => {
                    if let Some(pool) = pool.upgrade() {
                        pool.lanes().hold(false);
                        pool.checkin(c);
                    }
                    continue;
                }
            },
            None => rx.recv().await,
        };
        let Some(first) = first else { return };
        // Everything queued by now: the requests of this event-loop tick.
        let (mut commands, mut bytes) = (first.commands, first.bytes.len());
        jobs.push(first);
        while commands < WRITE_COMMANDS && bytes < WRITE_BYTES {
            let Ok(job) = rx.try_recv() else { break };
            commands += job.commands;
            bytes += job.bytes.len();
            jobs.push(job);
        }
        // A request that gave up before its write is not written.
        // (A request that is gone, its client with it, is not written either.)
        jobs.retain(|j| !j.answer.is_closed() && j.state.compare_exchange(QUEUED, CLAIMED, Ordering::AcqRel, Ordering::Acquire).is_ok());
        if jobs.is_empty() {
            continue;
        }
        let Some(pool) = pool.upgrade() else { return };
        out.clear();
        for j in &jobs {
            out.extend_from_slice(&j.bytes);
        }
        let had = conn.is_some();
        conn = write_and_read(&pool, conn.take().filter(Conn::probe_idle), &settings, &out, &mut jobs).await;
        if had != conn.is_some() {
            pool.lanes().hold(conn.is_some());
        }
    }
}

/// One shared write of `out` (the `jobs`' commands) and the jobs' answers;
/// the connection back if it is fit for the next write.
async fn write_and_read(pool: &Pool, conn: Option<Conn>, settings: &ConnSettings, out: &[u8], jobs: &mut Vec<Job>) -> Option<Conn> {
    let shared = super::SharedWrite { batches: jobs.len(), commands: jobs.iter().map(|j| j.commands).sum() };
    let mut tried_fresh = false;
    let mut conn = conn;
    let (mut c, sent) = loop {
        let mut c = match conn.take() {
            Some(c) => c,
            None => match pool.checkout(settings).await {
                Ok(lease) => lease.conn,
                Err(why) => {
                    answer_all(jobs, None, &why);
                    return None;
                }
            },
        };
        c.prepare_reuse(settings);
        match c.write(out).await {
            Ok(at) => break (c, at),
            // A connection that died idle: once more on another (probed or new).
            Err(_) if c.nothing_sent() && !tried_fresh => tried_fresh = true,
            Err(e) => {
                let sent = if c.nothing_sent() { None } else { Some(Instant::now()) };
                answer_all(jobs, sent, &e.to_string());
                return None;
            }
        }
    };
    let write_syscalls = c.stats().write_syscalls;
    let mut failure: Option<String> = None;
    for job in jobs.drain(..) {
        let mut answer = Answer { sent: Some(sent), write_syscalls, shared, ..Answer::default() };
        if let Some(why) = &failure {
            answer.failure = Some(why.clone());
        } else {
            let reads = c.stats().read_syscalls;
            c.limit_replies(job.read_timeout, job.max_reply_bytes);
            answer.replies.reserve(job.commands);
            while answer.replies.len() < job.commands {
                let before = c.bytes_decoded();
                match c.read_reply().await {
                    Ok((reply, at)) => answer.replies.push((reply, at, c.bytes_decoded() - before)),
                    Err(e) => {
                        failure = Some(e.to_string());
                        answer.failure = failure.clone();
                        break;
                    }
                }
            }
            answer.read_syscalls = c.stats().read_syscalls - reads;
        }
        // The request may have gone: its replies were read all the same.
        let _ = job.answer.send(answer);
    }
    failure.is_none().then_some(c).filter(Conn::buffer_empty)
}

/// Answers every job without replies: written at `sent` (their commands
/// are `unknown`) or never (`not_sent`), for `why`.
fn answer_all(jobs: &mut Vec<Job>, sent: Option<Instant>, why: &str) {
    for job in jobs.drain(..) {
        let _ = job.answer.send(Answer { sent, failure: Some(why.to_string()), ..Answer::default() });
    }
}
