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
//! `not_sent` (`ABANDONED`); one that gives up after reports `unknown`.
//! A request that is gone with its client is not written either.
//!
//! One batch's reply never spills on another's: a batch cut by its own
//! reply limit or read timeout is answered at once, and the rest of its
//! replies are read past so that the batches written after it get theirs
//! (only a failed connection makes them `unknown`). A reply that is large
//! (more than `HANDOFF_BYTES` still arriving) or slow (the write's
//! replies not all in after `HANDOFF_AFTER`) makes the lane hand its
//! connection, with the batches still to answer, to a task of its own:
//! the next writes go on another connection instead of waiting behind it.
//!
//! Timings: `total_us`, `sent_us` and `reply_us` start when the batch was
//! queued, so they include the wait for the previous shared write's
//! replies; `summary.shared` says how many batches and commands the write
//! carried. The reply limit (`max_reply_bytes`) and the read timeout are
//! each batch's own, applied to its replies (the time spent reading
//! another batch's replies counts against neither); the lane's connection is
//! opened with the settings of the batch that started the lane.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};

use super::source::{ResultSink, StreamReport};
use super::{CommandResult, Mode, Pool, Status, Summary};
use super::{Batch, ExecOptions};
use crate::commands::Table;
use crate::conn::{Conn, ConnSettings, ConnectError, ReadError};

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
        && !table.is_cluster()
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
    /// The large ones, charged until the batch has counted them.
    held: crate::conn::HeldReplies,
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
        let settings = ConnSettings { deadline: None, cancel: None, ..batch.plan.conn_settings(opts) };
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
/// `run::run_pooled`: the connection could not be opened (nothing sent)
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
                Answer { sent: taken.then_some(t0), failure: Some(why.to_string()), ..Answer::default() }
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
    // execution has them after a cut.
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
                    let why = sink.refusal().unwrap_or_else(|| format!("reply limit reached: the report would pass {limit} bytes of JSON"));
                    connection_error.get_or_insert(why);
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
        (None, Some(why)) if !gave_up => Some(ConnectError::Lost(why.clone())),
        _ => None,
    };
    StreamReport { summary, transaction: None, connection_error, input_error: None, reconnect_failed }
}

/// The job's answer, or why there is none: the batch's deadline passed
/// first (whatever was written may have run), or the lane's task ended.
async fn wait(rx: oneshot::Receiver<Answer>, deadline: Option<Instant>) -> Result<Answer, Unanswered> {
    let answer = match deadline {
        Some(d) => match tokio::time::timeout_at(d.into(), rx).await {
            Ok(a) => a,
            Err(_) => return Err(Unanswered::Deadline),
        },
        None => rx.await,
    };
    answer.map_err(|_| Unanswered::Ended)
}

/// Why [`wait`] got no answer.
#[derive(Debug, thiserror::Error)]
enum Unanswered {
    #[error("{}", ReadError::Deadline)]
    Deadline,
    #[error("the shared connection's task ended before the reply")]
    Ended,
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
/// the connection back if it is fit for the next write. A large or slow
/// reply hands the connection, with the jobs still to answer, to a task of
/// its own ([`drain`]): the next write goes on another connection.
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
                    answer_all(jobs, None, &why.to_string());
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
    let mut pending: VecDeque<Reading> = jobs.drain(..).map(|job| Reading::new(job, Answer { sent: Some(sent), write_syscalls, shared, ..Answer::default() })).collect();
    match read_answers(&mut c, &mut pending, true).await {
        Read::Done(fit) => fit.then_some(c).filter(Conn::buffer_empty),
        Read::HandOff => {
            tokio::spawn(drain(pool.weak(), c, pending));
            None
        }
    }
}

/// A job whose replies are being read, and its answer so far.
struct Reading {
    job: Job,
    answer: Answer,
    /// Its replies are read only to reach the next job's: it was answered
    /// already (its reply limit or read timeout cut it).
    skipping: bool,
    /// Replies of it read (kept or skipped).
    read: usize,
    reads_before: Option<u64>,
}

impl Reading {
    fn new(job: Job, answer: Answer) -> Reading {
        Reading { job, answer, skipping: false, read: 0, reads_before: None }
    }
}

/// How [`read_answers`] ended.
enum Read {
    /// Every job answered; whether the connection is fit for another write.
    Done(bool),
    /// A reply is large or slow: the lane lets the connection go (the
    /// jobs left are still in `pending`, the current one first).
    HandOff,
}

/// A reply this large still arriving, or a write's replies this slow,
/// make the lane hand its connection off ([`Read::HandOff`]).
const HANDOFF_BYTES: u64 = 256 * 1024;
const HANDOFF_AFTER: Duration = Duration::from_millis(50);
/// How often the lane looks at a reply that has not arrived.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// Reads the `pending` jobs' replies in order, each job with its own read
/// timeout and reply limit, answering each when done. A job cut by its own
/// limit or timeout is answered at once, and its remaining replies are
/// read past (with the next job's limits) so that the jobs written after
/// it get theirs; only a failed connection fails them all. `lane`: hand
/// off on a large or slow reply.
async fn read_answers(c: &mut Conn, pending: &mut VecDeque<Reading>, lane: bool) -> Read {
    let started = Instant::now();
    let mut look = lane.then(|| Box::pin(tokio::time::sleep(LOOK_EVERY)));
    loop {
        let Some(front) = pending.front() else { return Read::Done(true) };
        if front.read == front.job.commands {
            let r = pending.pop_front().expect("front");
            if !r.skipping {
                let mut answer = r.answer;
                answer.read_syscalls = c.stats().read_syscalls - r.reads_before.unwrap_or(0);
                let _ = r.job.answer.send(answer);
            }
            continue;
        }
        if front.reads_before.is_none() {
            // A skipped job's replies are read, whatever their size, within
            // the read timeout of the next job that waits for its own.
            let (timeout, limit) = match front.skipping {
                false => (front.job.read_timeout, front.job.max_reply_bytes),
                true => (pending.iter().find(|p| !p.skipping).map_or(front.job.read_timeout, |p| p.job.read_timeout), None),
            };
            c.limit_replies(timeout, limit);
            c.bound_memory(!front.skipping);
            pending.front_mut().expect("front").reads_before = Some(c.stats().read_syscalls);
        }
        let before = c.bytes_decoded();
        let read = match look.as_mut() {
            None => c.read_reply().await,
            Some(look) => tokio::select! {
                biased;
                read = c.read_reply() => read,
                () = look.as_mut() => {
                    let arriving = c.stats().bytes_received.saturating_sub(c.bytes_decoded());
                    if arriving > HANDOFF_BYTES || started.elapsed() > HANDOFF_AFTER {
                        return Read::HandOff;
                    }
                    look.as_mut().reset((Instant::now() + LOOK_EVERY).into());
                    continue;
                }
            },
        };
        let others_wait = pending.iter().skip(1).any(|p| !p.skipping);
        let r = pending.front_mut().expect("front");
        match read {
            Ok((reply, at)) => {
                r.read += 1;
                if !r.skipping {
                    let size = c.bytes_decoded() - before;
                    r.answer.held.add(size);
                    r.answer.replies.push((reply, at, size));
                }
            }
            // This job's own limit or timeout: it is cut, not the jobs after it.
            Err(e @ (ReadError::Limit(_) | ReadError::Memory(_) | ReadError::Timeout(_))) if !r.skipping && others_wait => {
                let mut answer = std::mem::take(&mut r.answer);
                answer.failure = Some(e.to_string());
                answer.read_syscalls = c.stats().read_syscalls - r.reads_before.unwrap_or(0);
                let (tx, _) = oneshot::channel();
                let _ = std::mem::replace(&mut r.job.answer, tx).send(answer);
                r.skipping = true;
                r.reads_before = None;
            }
            Err(e) => {
                let why = e.to_string();
                for r in pending.drain(..).filter(|r| !r.skipping) {
                    let mut answer = r.answer;
                    answer.failure = Some(why.clone());
                    let _ = r.job.answer.send(answer);
                }
                return Read::Done(false);
            }
        }
    }
}

/// The rest of a handed-off write: every job's replies read and answered,
/// then the connection back to the pool if it is fit.
async fn drain(pool: Weak<Pool>, mut c: Conn, mut pending: VecDeque<Reading>) {
    if let Read::Done(true) = read_answers(&mut c, &mut pending, false).await {
        if let Some(pool) = pool.upgrade() {
            pool.checkin(c);
        }
    }
}

/// Answers every job without replies: written at `sent` (their commands
/// are `unknown`) or never (`not_sent`), for `why`.
fn answer_all(jobs: &mut Vec<Job>, sent: Option<Instant>, why: &str) {
    for job in jobs.drain(..) {
        let _ = job.answer.send(Answer { sent, failure: Some(why.to_string()), ..Answer::default() });
    }
}
