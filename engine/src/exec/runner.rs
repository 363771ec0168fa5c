//! What the modes share: the connection, the batch clock, the counts,
//! pulling (and checking) commands, and emitting each result exactly once,
//! in index order.

use std::time::Instant;

use super::source::{CommandSource, InputError, InputErrorKind, ResultSink, StreamReport};
use super::{auto, check_command, pipeline, ArgvRef, Prechecked, sequential, transaction, CommandResult, ExecError, ExecOptions, Mode, Plan, Status, Summary, TransactionOutcome, TransactionStatus};
use crate::commands::Table;
use crate::conn::{Conn, ConnectError, ConnSettings, IoStats, ReadError, RedisTarget, WriteError};

/// One execution under way.
pub(super) struct Runner<'s, S: CommandSource, K: ResultSink> {
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
    /// for them: pipeline mode writes their RESP as it is ([`Runner::pull_encoded`]).
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

/// The connection settings a plan needs.
pub(crate) fn settings(plan: &Plan, opts: &ExecOptions) -> ConnSettings {
    ConnSettings {
        connect_timeout: opts.connect_timeout,
        read_timeout: opts.read_timeout,
        resp3: plan.resp3,
        simulated_rtt_ms: plan.simulated_rtt_ms,
        simulated_bandwidth_mbps: plan.simulated_bandwidth_mbps,
        max_reply_bytes: opts.max_reply_bytes,
        deadline: opts.deadline,
        cancel: opts.cancel.clone(),
    }
}

/// Connects, runs the plan's mode, and closes the books.
pub(crate) async fn run<S: CommandSource, K: ResultSink>(
    target: &RedisTarget,
    plan: &Plan,
    source: &mut S,
    sink: &mut K,
    opts: &ExecOptions,
    check: bool,
    table: std::sync::Arc<Table>,
) -> Result<StreamReport<S::Error>, ExecError> {
    let settings = settings(plan, opts);
    let conn = Conn::connect(target, &settings).await?;
    if !plan.server_stats {
        return Ok(run_on(conn, None, plan, source, sink, check, table).await.report);
    }
    let probe = super::server::Probe::start(Conn::connect(target, &super::server::side_settings(&settings)).await).await;
    let mut report = run_on(conn, None, plan, source, sink, check, table).await.report;
    // pipelab's own: the side connection and the batch's.
    report.summary.server = Some(probe.finish(2).await.0);
    Ok(report)
}

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

/// Runs the plan's mode on `conn` and closes the books. `fallback`: see
/// [`Runner::write`].
pub(crate) async fn run_on<'s, S: CommandSource, K: ResultSink>(
    conn: Conn,
    fallback: Option<(&'s RedisTarget, &'s ConnSettings)>,
    plan: &Plan,
    source: &'s mut S,
    sink: &'s mut K,
    check: bool,
    table: std::sync::Arc<Table>,
) -> RunOutcome<S::Error> {
    run_on_checked(conn, fallback, plan, source, sink, check, table, None).await
}

/// [`run_on`] for a source whose commands `pre` is the record of
/// ([`crate::exec::Batch::checked_for`]), checked as a whole already
/// (`check` false): their RESP is written as it was encoded.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_on_checked<'s, S: CommandSource, K: ResultSink>(
    conn: Conn,
    fallback: Option<(&'s RedisTarget, &'s ConnSettings)>,
    plan: &Plan,
    source: &'s mut S,
    sink: &'s mut K,
    check: bool,
    table: std::sync::Arc<Table>,
    pre: Option<&'s Prechecked>,
) -> RunOutcome<S::Error> {
    let t0 = Instant::now();
    let mut r = Runner {
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
    };
    match plan.mode {
        Mode::Sequential => sequential::run(&mut r, plan.on_error).await,
        Mode::Pipeline => pipeline::run(&mut r, plan.batch_size, plan.on_error, true).await,
        Mode::Transaction => transaction::run(&mut r, &plan.watch).await,
        Mode::Auto => auto::run(&mut r, plan.clients, plan.window_us, plan.on_error).await,
    }
    r.finish()
}

impl<'s, S: CommandSource, K: ResultSink> Runner<'s, S, K> {
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

    /// [`Runner::pull`] of up to `max` commands at once from their record
    /// ([`Prechecked::span`]: while fewer than `limit` bytes are taken):
    /// their RESP and count. `None` without a record, or past the commands
    /// it encoded (then [`Runner::pull`] the rest).
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

    /// [`Runner::emit`] with the command's `latency_us` (auto mode).
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

    /// [`Runner::emit_reply`] with the command's `latency_us` (auto mode).
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

    fn finish(mut self) -> RunOutcome<S::Error> {
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

#[cfg(test)]
mod tests {
    //! The first-write fallback of [`Runner::write`], which the pool's probe
    //! hides in integration tests: here a dead connection is handed to the
    //! runner directly. A real redis-server on a Unix socket (free TCP port
    //! too, as every test server), where a write to a closed peer fails at
    //! once with nothing accepted.
    use super::*;
    use crate::exec::source::BatchSource;
    use crate::exec::Commands;
    use crate::exec::{OnError, Plan};
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    struct Server {
        child: Child,
        _dir: tempfile::TempDir,
    }
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn start() -> (Server, RedisTarget) {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("r.sock");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&sock)
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        for _ in 0..500 {
            if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let target = RedisTarget::parse(sock.to_str().unwrap()).unwrap();
        (Server { child, _dir: dir }, target)
    }

    async fn one(conn: &mut Conn, argv: &[&str]) -> resp::Value {
        let mut out = Vec::new();
        resp::encode_command(argv, &mut out);
        conn.write(&out).await.unwrap();
        conn.read_reply().await.unwrap().0
    }

    /// A connection killed by Redis (CLIENT KILL), its close already seen.
    async fn dead_conn(target: &RedisTarget, settings: &ConnSettings) -> Conn {
        let mut victim = Conn::connect(target, settings).await.unwrap();
        let resp::Value::Integer(id) = one(&mut victim, &["CLIENT", "ID"]).await else { panic!("CLIENT ID") };
        let mut admin = Conn::connect(target, settings).await.unwrap();
        one(&mut admin, &["CLIENT", "KILL", "ID", &id.to_string()]).await;
        for _ in 0..100 {
            if !victim.probe_idle() {
                // As the pool hands it out: counts zeroed for the new batch.
                victim.prepare_reuse(settings);
                return victim;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the killed connection still looks alive");
    }

    fn plan() -> Plan {
        Plan { on_error: OnError::Continue, ..Plan::default() }
    }

    #[tokio::test]
    async fn the_probe_passes_a_live_connection_and_fails_one_with_bytes_nobody_asked_for() {
        let (_server, target) = start();
        let settings = settings(&plan(), &ExecOptions::default());
        let mut conn = Conn::connect(&target, &settings).await.unwrap();
        assert_eq!(one(&mut conn, &["PING"]).await, resp::Value::Simple(b"PONG".to_vec()));
        // However often it is probed, a live connection stays whole.
        for _ in 0..3 {
            assert!(conn.probe_idle());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(one(&mut conn, &["ECHO", "whole"]).await, resp::Value::Bulk(b"whole".to_vec()));
        assert!(conn.probe_idle());

        // A message published to a channel it subscribed to arrives unasked.
        one(&mut conn, &["SUBSCRIBE", "news"]).await;
        assert!(conn.probe_idle(), "nothing arrived yet");
        let mut publisher = Conn::connect(&target, &settings).await.unwrap();
        assert_eq!(one(&mut publisher, &["PUBLISH", "news", "hi"]).await, resp::Value::Integer(1));
        for _ in 0..100 {
            if !conn.probe_idle() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("a connection with a message waiting still looks idle");
    }

    /// Commands encoded ahead only in part (the parser fell behind): the
    /// executor writes the encoded ones as they are and encodes the rest,
    /// in every mode, each command once and in order.
    #[tokio::test]
    async fn a_record_encoded_in_part_sends_every_command_once() {
        let (_server, target) = start();
        let commands = Commands::from_iter((0..10).map(|i| vec!["RPUSH".to_string(), "list".into(), i.to_string()]));
        let mut encoded = Vec::new();
        for argv in commands.iter() {
            resp::encode_command(argv, &mut encoded);
        }
        let table = crate::commands::fallback::table();
        for (mode, batch_size) in [(Mode::Pipeline, 3), (Mode::Pipeline, 100), (Mode::Sequential, 1), (Mode::Transaction, 1), (Mode::Auto, 1)] {
            let mut pre = Prechecked::new(table.clone(), 0, usize::MAX);
            for (i, argv) in commands.iter().enumerate() {
                if i == 4 {
                    pre.stop_encoding();
                }
                pre.command(argv);
            }
            let plan = Plan { mode, batch_size, ..plan() };
            let settings = settings(&plan, &ExecOptions::default());
            let mut conn = Conn::connect(&target, &settings).await.unwrap();
            one(&mut conn, &["DEL", "list"]).await;
            conn.prepare_reuse(&settings);
            let (mut source, mut results) = (BatchSource::new(&commands), Vec::new());
            let ran = run_on_checked(conn, None, &plan, &mut source, &mut results, false, table.clone(), Some(&pre)).await;
            assert!(ran.report.connection_error.is_none(), "{mode:?}: {:?}", ran.report.connection_error);
            assert_eq!(results.iter().filter(|r| r.status == Status::Ok).count(), 10, "{mode:?}");
            if mode != Mode::Transaction {
                assert_eq!(ran.report.summary.bytes_sent, encoded.len() as u64, "{mode:?}");
            }
            let mut check = Conn::connect(&target, &settings).await.unwrap();
            let want: Vec<resp::Value> = (0..10).map(|i| resp::Value::Bulk(i.to_string().into_bytes())).collect();
            assert_eq!(one(&mut check, &["LRANGE", "list", "0", "-1"]).await, resp::Value::Array(want), "{mode:?}");
        }
    }

    #[tokio::test]
    async fn dead_reused_connection_falls_back_before_anything_is_sent() {
        let (_server, target) = start();
        let settings = settings(&plan(), &ExecOptions::default());
        let commands = Commands::from_iter([vec!["INCR", "n"]]);

        // With the fallback (a pooled connection): the batch runs once, on a fresh connection.
        let dead = dead_conn(&target, &settings).await;
        let (mut source, mut results) = (BatchSource::new(&commands), Vec::new());
        let ran = run_on(dead, Some((&target, &settings)), &plan(), &mut source, &mut results, true, crate::commands::fallback::table()).await;
        assert!(ran.report.connection_error.is_none(), "{:?}", ran.report.connection_error);
        assert_eq!(results[0].status, Status::Ok);
        assert_eq!(results[0].reply, Some(resp::Value::Integer(1)));
        assert!(ran.reusable.is_some(), "the fresh connection ended cleanly");

        // Without it (a connection of the batch's own): not sent, not unknown, never retried.
        let dead = dead_conn(&target, &settings).await;
        let (mut source, mut results) = (BatchSource::new(&commands), Vec::new());
        let ran = run_on(dead, None, &plan(), &mut source, &mut results, true, crate::commands::fallback::table()).await;
        assert_eq!(results[0].status, Status::NotSent);
        assert!(ran.report.connection_error.is_some());
        assert!(ran.reusable.is_none());

        let mut check = Conn::connect(&target, &settings).await.unwrap();
        assert_eq!(one(&mut check, &["GET", "n"]).await, resp::Value::Bulk(b"1".to_vec()), "INCR ran exactly once");
    }
}
