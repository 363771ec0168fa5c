//! What the three modes share: the connection, the batch clock, the counts,
//! pulling (and checking) commands, and emitting each result exactly once,
//! in index order.

use std::time::Instant;

use super::source::{CommandSource, InputError, InputErrorKind, ResultSink, StreamReport};
use super::{check_command, pipeline, sequential, transaction, Argv, CommandResult, ExecError, ExecOptions, Mode, Plan, Status, Summary, TransactionOutcome};
use crate::conn::{Conn, ConnSettings, IoStats, RedisTarget};

/// One execution under way.
pub(super) struct Runner<'s, S: CommandSource, K: ResultSink> {
    /// `None` once dropped after a failure: never reused (it may hold unread replies).
    pub conn: Option<Conn>,
    pub mode: Mode,
    source: &'s mut S,
    sink: &'s mut K,
    /// Batch start: every `*_us` is measured from here (after the handshake).
    t0: Instant,
    pub summary: Summary,
    /// Commands pulled from the source so far (= next index).
    pulled: usize,
    /// Results emitted so far (= next index to emit).
    emitted: usize,
    /// Highest count of commands written.
    sent: usize,
    source_done: bool,
    pub input_error: Option<InputError<S::Error>>,
    pub connection_error: Option<String>,
    pub transaction: Option<TransactionOutcome>,
    /// I/O counts of the connection when it was dropped.
    last_stats: Option<IoStats>,
    /// Last write completion, reply or failure: the end of the batch's wall time.
    last_io: Instant,
}

/// Connects, runs the plan's mode, and closes the books.
pub(super) async fn run<S: CommandSource, K: ResultSink>(
    target: &RedisTarget,
    plan: &Plan,
    source: &mut S,
    sink: &mut K,
    opts: &ExecOptions,
) -> Result<StreamReport<S::Error>, ExecError> {
    let settings = ConnSettings {
        connect_timeout: opts.connect_timeout,
        read_timeout: opts.read_timeout,
        resp3: plan.resp3,
        simulated_rtt_ms: plan.simulated_rtt_ms,
        max_reply_bytes: opts.max_reply_bytes,
    };
    let conn = Conn::connect(target, &settings).await.map_err(ExecError::Connect)?;
    let t0 = Instant::now();
    let mut r = Runner {
        conn: Some(conn),
        mode: plan.mode,
        source,
        sink,
        t0,
        last_io: t0,
        last_stats: None,
        summary: Summary {
            mode: Some(plan.mode),
            simulated_rtt_ms: plan.simulated_rtt_ms,
            resp3: plan.resp3,
            batch_size: match plan.mode {
                Mode::Sequential => 1,
                Mode::Pipeline => plan.batch_size,
                Mode::Transaction => 0,
            },
            ..Summary::default()
        },
        pulled: 0,
        emitted: 0,
        sent: 0,
        source_done: false,
        input_error: None,
        connection_error: None,
        transaction: None,
    };
    match plan.mode {
        Mode::Sequential => sequential::run(&mut r, plan.on_error).await,
        Mode::Pipeline => pipeline::run(&mut r, plan.batch_size, plan.on_error, true).await,
        Mode::Transaction => transaction::run(&mut r, &plan.watch).await,
    }
    Ok(r.finish())
}

impl<S: CommandSource, K: ResultSink> Runner<'_, S, K> {
    /// Notes an I/O event at `t` (a write completed, a reply arrived).
    pub fn note_io(&mut self, t: Instant) {
        self.last_io = self.last_io.max(t);
    }

    /// µs from the batch start.
    pub fn us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.t0).as_micros() as u64
    }

    /// The next command, checked; `None` at the end of input or at the first
    /// bad command (then recorded in `input_error`; nothing is pulled after it).
    pub fn pull(&mut self) -> Option<Argv> {
        if self.source_done {
            return None;
        }
        let kind = match self.source.next_command() {
            Ok(None) => {
                self.source_done = true;
                return None;
            }
            Ok(Some(argv)) => match check_command(&argv, self.mode) {
                Ok(()) => {
                    self.pulled += 1;
                    return Some(argv);
                }
                Err(m) => InputErrorKind::Invalid(m),
            },
            Err(e) => InputErrorKind::Source(e),
        };
        self.source_done = true;
        self.input_error = Some(InputError { index: self.pulled, sent: 0, kind });
        None
    }

    /// Records that commands up to index `upto` (exclusive) have been written.
    pub fn mark_sent(&mut self, upto: usize) {
        self.sent = self.sent.max(upto);
    }

    /// Index of the next result to emit.
    pub fn next_index(&self) -> usize {
        self.emitted
    }

    /// Emits the next command's result.
    pub fn emit(&mut self, status: Status, reply: Option<resp::Value>, sent_us: Option<u64>, reply_us: Option<u64>) {
        match status {
            Status::Ok => self.summary.ok += 1,
            Status::Error => self.summary.errors += 1,
            Status::NotSent => self.summary.not_sent += 1,
            Status::Unknown => self.summary.unknown += 1,
        }
        let index = self.emitted;
        self.emitted += 1;
        self.sink.push(CommandResult { index, status, reply, sent_us, reply_us });
    }

    /// Emits a reply read from Redis: `ok`, or `error` for an error reply.
    pub fn emit_reply(&mut self, reply: resp::Value, sent_us: u64, at: Instant) {
        let status = if reply.is_error() { Status::Error } else { Status::Ok };
        let reply_us = self.us(at);
        self.note_io(at);
        self.emit(status, Some(reply), Some(sent_us), Some(reply_us));
    }

    /// The connection is gone: remember why and drop it (closing the socket).
    pub fn fail(&mut self, why: impl std::fmt::Display) {
        if self.connection_error.is_none() {
            self.connection_error = Some(why.to_string());
        }
        if let Some(conn) = self.conn.take() {
            self.last_stats = Some(conn.stats());
        }
        self.note_io(Instant::now());
    }

    /// Every command read from the source but not yet emitted, and every
    /// command still in the source, becomes `not_sent`. The source is read to
    /// its end (or first bad command) so that the counts cover the whole input.
    pub fn rest_not_sent(&mut self) {
        while self.emitted < self.pulled {
            self.emit(Status::NotSent, None, None, None);
        }
        while self.pull().is_some() {
            self.emit(Status::NotSent, None, None, None);
        }
    }

    fn finish(mut self) -> StreamReport<S::Error> {
        debug_assert_eq!(self.emitted, self.pulled, "every command pulled gets exactly one result");
        if let Some(conn) = &self.conn {
            let io = conn.stats();
            self.summary.write_calls = io.write_calls;
            self.summary.write_syscalls = io.write_syscalls;
            self.summary.bytes_sent = io.bytes_sent;
            self.summary.bytes_received = io.bytes_received;
            self.summary.pushes = io.pushes;
        } else if let Some(io) = self.last_stats {
            self.summary.write_calls = io.write_calls;
            self.summary.write_syscalls = io.write_syscalls;
            self.summary.bytes_sent = io.bytes_sent;
            self.summary.bytes_received = io.bytes_received;
            self.summary.pushes = io.pushes;
        }
        self.summary.commands = self.emitted;
        self.summary.total_us = self.us(self.last_io);
        let answered = (self.summary.ok + self.summary.errors) as f64;
        self.summary.commands_per_sec =
            if self.summary.total_us == 0 { 0.0 } else { answered * 1e6 / self.summary.total_us as f64 };
        if let Some(e) = &mut self.input_error {
            e.sent = self.sent;
        }
        StreamReport {
            summary: self.summary,
            transaction: self.transaction,
            connection_error: self.connection_error,
            input_error: self.input_error,
        }
    }
}
