//! What the modes share: the connection, the batch clock, the counts,
//! pulling (and checking) commands, and emitting each result exactly once,
//! in index order.

use std::time::Instant;

use super::source::{CommandSource, InputError, InputErrorKind, ResultSink, StreamReport};
use super::{check_command, ArgvRef, Prechecked, CommandResult, Mode, Plan, Status, Summary, TransactionOutcome, TransactionStatus};
use crate::commands::Table;
use crate::conn::{Conn, ConnectError, ConnSettings, IoStats, ReadError, RedisTarget, WriteError};

/// How a run on a given connection ended.
pub(crate) struct RunOutcome<E> {
    pub report: StreamReport<E>,
    /// The connection, if the batch ended cleanly and it may serve another
    /// (every reply read, nothing buffered, no connection state changed).
    pub reusable: Option<Conn>,
    /// The connection, if the batch ended with every reply read and nothing
    /// buffered, whatever state its commands left it in (a session keeps
    /// it); `None` when it is in `reusable`.
    pub kept: Option<Conn>,
    /// The pooled connection was dead and a fresh one could not be opened:
    /// nothing was sent.
    pub reconnect_failed: Option<ConnectError>,
}

/// One execution under way.
pub(crate) struct Execution<'s, S: CommandSource, K: ResultSink> {
    /// `None` once dropped after a failure: never reused (it may hold unread replies).
    pub conn: Option<Conn>,
    pub mode: Mode,
    source: &'s mut S,
    sink: &'s mut K,
    /// Check each command pulled with [`check_command`] (off when the whole
    /// batch was validated before connecting).
    check: bool,
    /// A command pulled may have changed the connection's state: it must
    /// not serve another batch (see [`Table::changes_connection_state`]).
    state_changed: bool,
    /// The rules each pulled command is checked with.
    table: std::sync::Arc<Table>,
    /// The source's commands checked and encoded already, when it holds
    /// for them: pipeline mode writes their RESP as it is ([`Execution::pull_encoded`]).
    pre: Option<&'s Prechecked>,
    /// For a connection reused from a pool, until the first write went
    /// through: where to open a fresh one if that write fails with nothing sent.
    fallback: Option<(&'s RedisTarget, &'s ConnSettings)>,
    /// The fresh connection of the fallback could not be opened.
    reconnect_failed: Option<ConnectError>,
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

impl<'s, S: CommandSource, K: ResultSink> Execution<'s, S, K> {
    /// An execution of `plan` on `conn`, its clock started. `check`: each
    /// command pulled is checked (off when the whole batch was, before);
    /// `pre`: the source's commands checked and encoded already
    /// ([`crate::exec::Batch::checked_for`]), whose RESP is then written as
    /// it was encoded; `fallback`: see [`Execution::write`].
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        conn: Conn,
        fallback: Option<(&'s RedisTarget, &'s ConnSettings)>,
        plan: &Plan,
        source: &'s mut S,
        sink: &'s mut K,
        check: bool,
        table: std::sync::Arc<Table>,
        pre: Option<&'s Prechecked>,
    ) -> Self {
        let t0 = Instant::now();
        Execution {
            conn: Some(conn),
            mode: plan.mode,
            source,
            sink,
            check,
            state_changed: false,
            table,
            pre: pre.filter(|_| !check),
            fallback,
            reconnect_failed: None,
            t0,
            last_io: t0,
            last_stats: None,
            summary: Summary {
                mode: Some(plan.mode),
                simulated_rtt_ms: plan.simulated_rtt_ms,
                simulated_bandwidth_mbps: plan.simulated_bandwidth_mbps,
                resp3: plan.resp3,
                batch_size: match plan.mode {
                    Mode::Sequential => 1,
                    Mode::Pipeline => plan.batch_size,
                    Mode::Transaction => 0,
                    Mode::Auto => plan.clients,
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
        }
    }
}

impl<'s, S: CommandSource, K: ResultSink> Execution<'s, S, K> {
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
    /// Borrowed from the source: no copy.
    pub fn pull(&mut self) -> Option<ArgvRef<'_>> {
        if self.source_done {
            return None;
        }
        let kind = match self.source.next_command() {
            Ok(None) => {
                self.source_done = true;
                return None;
            }
            Ok(Some(argv)) => match if self.check { check_command(&self.table, argv, self.mode) } else { Ok(()) } {
                Ok(()) => {
                    self.pulled += 1;
                    if !self.state_changed && self.table.changes_connection_state(argv) {
                        self.state_changed = true;
                    }
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

    /// [`Execution::pull`] of up to `max` commands at once from their record
    /// ([`Prechecked::span`]: while fewer than `limit` bytes are taken):
    /// their RESP and count. `None` without a record, or past the commands
    /// it encoded (then [`Execution::pull`] the rest).
    pub fn pull_encoded(&mut self, max: usize, limit: usize) -> Option<(&'s [u8], usize)> {
        let pre = self.pre?;
        let from = self.pulled;
        let (range, n) = pre.span(from, max, limit);
        if n == 0 {
            return None;
        }
        self.source.skip(n);
        self.pulled += n;
        if pre.first_state_change().is_some_and(|i| i < from + n) {
            self.state_changed = true;
        }
        Some((pre.resp(range), n))
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
        self.emit_timed(status, reply, sent_us, reply_us, None)
    }

    /// [`Execution::emit`] with the command's `latency_us` (auto mode).
    fn emit_timed(&mut self, status: Status, reply: Option<resp::Value>, sent_us: Option<u64>, reply_us: Option<u64>, latency_us: Option<u64>) {
        self.summary.count(status);
        let index = self.emitted;
        self.emitted += 1;
        self.sink.push(CommandResult { index, status, reply, sent_us, reply_us, latency_us, node: None });
    }

    /// Emits a reply read from Redis: `ok`, or `error` for an error reply.
    ///
    /// Errors: the sink refused it ([`ResultSink::admit`]): the connection
    /// is dropped and the command is `unknown`, as at the reply limit.
    pub fn emit_reply(&mut self, reply: resp::Value, sent_us: u64, at: Instant) -> Result<(), ReadError> {
        self.emit_reply_timed(reply, sent_us, at, None)
    }

    /// [`Execution::emit_reply`] with the command's `latency_us` (auto mode).
    pub fn emit_reply_timed(&mut self, reply: resp::Value, sent_us: u64, at: Instant, latency_us: Option<u64>) -> Result<(), ReadError> {
        self.note_io(at);
        if let Err(limit) = self.sink.admit(&reply) {
            let why = self.sink.refusal().unwrap_or_else(|| format!("reply limit reached: the report would pass {limit} bytes of JSON"));
            self.fail(why);
            self.emit(Status::Unknown, None, Some(sent_us), None);
            return Err(ReadError::Limit(limit));
        }
        let status = if reply.is_error() { Status::Error } else { Status::Ok };
        let reply_us = self.us(at);
        self.emit_timed(status, Some(reply), Some(sent_us), Some(reply_us), latency_us);
        Ok(())
    }

    /// Writes `bytes` on the batch's connection; the instant the write was issued.
    ///
    /// On a connection reused from a pool, if the batch's first write fails
    /// and the socket accepted not one byte (a pooled connection that died
    /// idle), the batch moves to a fresh connection and the write is made
    /// there; the batch clock restarts, as nothing had happened yet. Once
    /// anything may have been written, nothing is ever re-sent.
    ///
    /// `continued`: these bytes go on the previous write call (a chunk sent
    /// in segments, [`Conn::write_continued`]); it never falls back, as the
    /// first part went through.
    ///
    /// Errors: the write error and whether nothing at all of the batch was
    /// sent (then its commands are `not_sent`, not `unknown`).
    pub async fn write(&mut self, bytes: &[u8], continued: bool) -> Result<Instant, (WriteError, bool)> {
        let conn = self.conn.as_mut().expect("connection present until fail()");
        let written = if continued { conn.write_continued(bytes).await } else { conn.write(bytes).await };
        let err = match written {
            Ok(t) => {
                self.fallback = None;
                return Ok(t);
            }
            Err(e) => e,
        };
        let nothing_sent = conn.nothing_sent();
        match self.fallback.take() {
            // Boxed: the rare path, kept out of every write's future.
            Some((target, settings)) if nothing_sent => match Box::pin(Conn::connect(target, settings)).await {
                Ok(fresh) => {
                    let conn = self.conn.insert(fresh);
                    self.t0 = Instant::now();
                    self.last_io = self.t0;
                    match conn.write(bytes).await {
                        Ok(t) => Ok(t),
                        Err(e) => {
                            let nothing_sent = conn.nothing_sent();
                            Err((e, nothing_sent))
                        }
                    }
                }
                Err(e) => {
                    self.reconnect_failed = Some(e);
                    Err((err, true))
                }
            },
            _ => Err((err, nothing_sent)),
        }
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

    /// Closes the books: the summary's counts and times, the connection's fate.
    pub(crate) fn finish(mut self) -> RunOutcome<S::Error> {
        debug_assert_eq!(self.emitted, self.pulled, "every command pulled gets exactly one result");
        if let Some(io) = self.conn.as_ref().map(Conn::stats).or(self.last_stats) {
            self.summary.set_io(io);
        }
        self.summary.commands = self.emitted;
        self.summary.set_total_us(self.us(self.last_io));
        if let Some(e) = &mut self.input_error {
            e.sent = self.sent;
        }
        // Reusable only if every reply written was read (the connection was
        // never failed), nothing is left in its buffer, and no command could
        // have changed its state. A transaction whose EXEC answer did not
        // match what was queued is not trusted either.
        let odd_exec = matches!(&self.transaction, Some(t) if t.status == TransactionStatus::Unknown);
        let alive = self.conn.take().filter(|c| !odd_exec && c.buffer_empty());
        let (reusable, kept) = match alive {
            Some(c) if !self.state_changed && !c.is_delayed() => (Some(c), None),
            other => (None, other),
        };
        RunOutcome {
            report: StreamReport {
                summary: self.summary,
                transaction: self.transaction,
                connection_error: self.connection_error,
                input_error: self.input_error,
                reconnect_failed: None,
            },
            reusable,
            kept,
            reconnect_failed: self.reconnect_failed,
        }
    }
}
