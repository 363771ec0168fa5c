//! The executor: runs one [`Batch`] against Redis in one of its modes
//! (sequential, pipeline, transaction, auto) and reports, per command, what
//! happened and when ([`Report`]).
//!
//! It knows nothing of HTTP or terminals: the API and the CLI are thin
//! adapters over it, and both serialize the same [`Report`] so that
//! `pipelab run --json` and `POST /api/v1/batch` cannot drift apart
//! (docs/api.md#response).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::conn::{ConnSettings, ConnectError};


pub mod auto;
pub mod checked;
mod pipeline;
#[cfg(feature = "openapi")]
pub mod reply_schema;
pub mod pool;
pub(crate) mod drive;
pub(crate) mod execution;
mod sequential;
pub mod shared;
pub mod server;
mod source;
mod transaction;
mod validate;

pub use crate::argv::{Args, Argv, ArgvRef, Commands};
pub use checked::Prechecked;
pub(crate) use pipelab_model::Mode;
pub use source::{BatchSource, CommandSource, InputError, InputErrorKind, ResultSink, StreamReport};
pub use pool::{Lease, Pool, PoolConfig};
pub use validate::{check_command, validate, BatchError};
pub(crate) use validate::check_plan;


/// What to do after an error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", value(rename_all = "snake_case"))]
pub enum OnError {
    /// Send everything regardless (Redis's own behaviour in a pipeline).
    #[default]
    Continue,
    /// Send no further chunk after one that had an error reply; the rest is `not_sent`.
    Stop,
}

/// A validated batch, ready to run: its commands and how to send them.
#[derive(Debug, Clone)]
pub struct Batch {
    pub commands: Commands,
    pub plan: Plan,
    /// The commands checked and encoded as they were parsed, if they were
    /// ([`checked`]): used only while it holds for `commands` and the
    /// table the batch is checked with ([`Batch::checked_for`]).
    pub checked: Option<std::sync::Arc<Prechecked>>,
}

/// Outcome of one command (docs/api.md#results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Redis answered with a non-error reply.
    Ok,
    /// Redis answered with an error reply.
    Error,
    /// Never written to the socket: an earlier error with `on_error: stop`,
    /// or the batch was cut.
    NotSent,
    /// Written, but the connection failed before its reply: it may or may not
    /// have run. Never retried.
    Unknown,
}

// A `None` field is left out of the JSON (`skip_serializing_none`), here,
// in `TransactionOutcome` and in `Report`.
/// One command's result. Times are µs from the batch start.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CommandResult {
    pub index: usize,
    pub status: Status,
    /// The reply as reply JSON (docs/reply-json.md); absent for `not_sent` / `unknown`.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<reply_schema::Reply>))]
    pub reply: Option<resp::Value>,
    /// When the write that carried this command was issued (µs from batch start).
    pub sent_us: Option<u64>,
    /// When this command's reply was fully read (µs from batch start).
    pub reply_us: Option<u64>,
    /// Auto mode only: µs from its simulated caller's call (the command
    /// became pending, waiting for the next coalesced write) to its reply,
    /// what the caller's `await` took.
    pub latency_us: Option<u64>,
    /// Redis Cluster only: `host:port` of the master that answered (absent
    /// for a single Redis, and for a command fanned out to every master).
    #[serde(serialize_with = "node_name")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "127.0.0.1:7000"))]
    pub node: Option<std::sync::Arc<str>>,
}

impl CommandResult {
    /// A command that was never written (`not_sent`): no reply, no times.
    pub fn not_sent(index: usize) -> CommandResult {
        CommandResult { index, status: Status::NotSent, reply: None, sent_us: None, reply_us: None, latency_us: None, node: None }
    }
}

fn node_name<S: serde::Serializer>(node: &Option<std::sync::Arc<str>>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_some(node.as_deref().unwrap_or_default())
}

/// Totals for a batch.
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"mode": "pipeline", "commands": 2, "ok": 1, "errors": 1, "not_sent": 0,
    "unknown": 0, "round_trips": 1, "write_calls": 1, "bytes_sent": 54, "bytes_received": 40,
    "total_us": 812, "commands_per_sec": 2463.0, "simulated_rtt_ms": 0.0, "write_syscalls": 1, "read_syscalls": 1,
    "batch_size": 1000, "resp3": false})))]
pub struct Summary {
    pub mode: Option<Mode>,
    pub commands: usize,
    pub ok: usize,
    pub errors: usize,
    pub not_sent: usize,
    pub unknown: usize,
    /// Times the executor waited for replies before writing more.
    pub round_trips: u64,
    /// Write calls by the executor: one per command (sequential), per chunk
    /// (pipeline), per MULTI…EXEC (transaction), plus one for WATCH.
    pub write_calls: u64,
    /// `write` system calls those took (a large chunk may need several).
    pub write_syscalls: u64,
    /// `read` calls the executor made on the connection to get the replies
    /// (each one returned bytes, end of stream or an error), counted where
    /// they are made, as `write_syscalls`. Behind the delay line: reads from the line.
    pub read_syscalls: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// RESP3 push messages received (out-of-band, e.g. invalidations): not
    /// replies, so not assigned to any command. Omitted from JSON when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub pushes: u64,
    /// Wall time of the whole batch in µs (connection handshake excluded).
    pub total_us: u64,
    /// `commands / total_us`, in commands per second.
    pub commands_per_sec: f64,
    pub simulated_rtt_ms: f64,
    /// The simulated round trip the delay line achieved, in ms:
    /// `simulated_rtt_ms` plus each direction's median lateness, the time
    /// past a chunk's deadline (RTT/2 after it was produced) at which the
    /// line released it: the client's bytes, when their write to the
    /// socket was issued; the server's, when they were handed to the
    /// waiting reader. So it includes the line's task hand-offs and a busy
    /// machine's late wake-ups. Not in it: time in Redis and in the kernel
    /// (a loopback round trip, paid without the line too), bytes that waited
    /// for the socket (backpressure) or for a reader busy elsewhere. Beside
    /// the asked one, it says when the machine could not keep the RTT.
    /// Absent without a delay line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub achieved_rtt_ms: Option<f64>,
    /// The simulated bandwidth in each direction, in Mbit/s; absent: unlimited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub simulated_bandwidth_mbps: Option<f64>,
    /// Commands per chunk in pipeline mode (1 in sequential mode, all in transaction mode).
    pub batch_size: usize,
    /// Replies were read as RESP3 (`HELLO 3`).
    pub resp3: bool,
    /// Auto mode only: how the callers' commands were coalesced into writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto: Option<auto::AutoSummary>,
    /// What the Redis server did for the batch, from `INFO` deltas taken on
    /// a side connection around it (outside `total_us`): `null` when the
    /// server could not be asked; absent when not asked (`/batch` asks with
    /// `"server_stats": true`; `/compare` always asks).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<server::ServerWork>, nullable))]
    pub server: Option<Option<server::ServerWork>>,
    /// Redis Cluster only: MOVED and ASK redirections followed (omitted when 0).
    #[serde(skip_serializing_if = "is_zero")]
    pub redirections: u64,
    /// Redis Cluster only: each master's share (omitted for a single Redis).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeSummary>,
    /// The batch went on a shared connection, in one write with other
    /// requests' batches ([`shared`]): what that write carried. Omitted
    /// when the batch had a connection to itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedWrite>,
}

/// One write on a shared connection ([`shared`]): the batches of
/// concurrent requests it carried (this one included) and their commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharedWrite {
    pub batches: usize,
    pub commands: usize,
}

impl Summary {
    /// Takes the connection counts (`write_calls` … `pushes`) from `io`.
    pub fn set_io(&mut self, io: crate::conn::IoStats) {
        self.write_calls = io.write_calls;
        self.write_syscalls = io.write_syscalls;
        self.read_syscalls = io.read_syscalls;
        self.bytes_sent = io.bytes_sent;
        self.bytes_received = io.bytes_received;
        self.pushes = io.pushes;
        self.achieved_rtt_ms = io.line.map(|l| l.achieved_rtt_ms(self.simulated_rtt_ms));
    }

    /// Sets `total_us` (µs) and `commands_per_sec` from it: answered
    /// commands (`ok` + `errors`) per second, 0 when `total_us` is 0.
    pub fn set_total_us(&mut self, total_us: u64) {
        self.total_us = total_us;
        let answered = (self.ok + self.errors) as f64;
        self.commands_per_sec = if total_us == 0 { 0.0 } else { answered * 1e6 / total_us as f64 };
    }

    /// Counts one result by its status.
    pub fn count(&mut self, status: Status) {
        match status {
            Status::Ok => self.ok += 1,
            Status::Error => self.errors += 1,
            Status::NotSent => self.not_sent += 1,
            Status::Unknown => self.unknown += 1,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Outcome of a transaction as a whole (transaction mode only).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionOutcome {
    pub status: TransactionStatus,
    /// For `aborted`: the index of the (first) command rejected at queue time.
    pub rejected_index: Option<usize>,
    /// Why: Redis's queue-time error for `rejected_index`, EXEC's error, or
    /// what happened to the connection (`unknown`).
    pub message: Option<String>,
    /// Every command rejected at queue time (wrong arity, unknown command…), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
}

/// A command Redis refused to queue inside MULTI; EXEC then fails with EXECABORT.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rejected {
    pub index: usize,
    pub message: String,
}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum TransactionStatus {
    /// EXEC ran the queued commands (some may still have failed at run time, e.g. WRONGTYPE: no rollback).
    Committed,
    /// Nothing ran: a command was rejected at queue time (EXECABORT) or EXEC failed.
    Aborted,
    /// Nothing ran: a WATCHed key changed before EXEC, which returned null.
    WatchConflict,
    /// The connection failed before EXEC's reply: the commands may or may not have run.
    Unknown,
}

/// The executor's answer for a batch (`POST /api/v1/batch`'s 200 body).
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = BatchResponse, example = json!({
    "summary": {"mode": "pipeline", "commands": 2, "ok": 1, "errors": 1, "not_sent": 0,
        "unknown": 0, "round_trips": 1, "write_calls": 1, "bytes_sent": 54, "bytes_received": 40,
        "total_us": 812, "commands_per_sec": 2463.0, "simulated_rtt_ms": 0.0, "write_syscalls": 1, "read_syscalls": 1,
        "batch_size": 1000, "resp3": false},
    "results": [
        {"index": 0, "status": "ok", "reply": {"type": "simple", "value": "OK"}, "sent_us": 3, "reply_us": 790},
        {"index": 1, "status": "error", "reply": {"type": "error",
            "value": "ERR value is not an integer or out of range"}, "sent_us": 3, "reply_us": 801}
    ]
})))]
pub struct Report {
    pub summary: Summary,
    pub results: Vec<CommandResult>,
    pub transaction: Option<TransactionOutcome>,
    /// Why the connection was dropped mid-batch (then results hold `unknown` / `not_sent`).
    pub connection_error: Option<String>,
}

/// Limits of one execution that are the caller's, not the batch's.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Socket connect, TLS and the handshake together (default 5 s).
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a reply, and for a write to make
    /// progress (default 30 s). On expiry the connection is dropped and the
    /// commands awaiting replies are `unknown`.
    pub read_timeout: Duration,
    /// Stop reading once more than this many reply bytes arrived, drop the
    /// connection, report the rest `unknown` (`None`: no limit).
    pub max_reply_bytes: Option<u64>,
    /// The batch's time limit: no read or write waits past it. Reached,
    /// the connection is dropped, the commands awaiting replies are
    /// `unknown` and the rest `not_sent`, as for a lost connection.
    pub deadline: Option<std::time::Instant>,
    /// The command table the batch is checked with. `None`: the pool's
    /// (`run::run_pooled`: read from the server, see [`Pool::commands`]),
    /// else the built-in fallback (`crate::commands::fallback`).
    pub commands: Option<std::sync::Arc<crate::commands::Table>>,
    /// Flipped, the batch ends as at its deadline, the reason saying it was
    /// cancelled (`crate::conn::Cancel`). `None`: not cancellable.
    pub cancel: Option<crate::conn::Cancel>,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            connect_timeout: Duration::from_secs(5),
            read_timeout: Duration::from_secs(30),
            max_reply_bytes: None,
            deadline: None,
            commands: None,
            cancel: None,
        }
    }
}

impl ExecOptions {
    /// The table to check with: [`ExecOptions::commands`], else `pool`'s, else the fallback.
    pub fn table(&self, pool: Option<&Pool>) -> std::sync::Arc<crate::commands::Table> {
        match (&self.commands, pool) {
            (Some(t), _) => t.clone(),
            (None, Some(p)) => p.commands(),
            (None, None) => crate::commands::fallback::table(),
        }
    }
}

/// Why a batch did not run at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Could not connect, or the handshake (AUTH, HELLO, SELECT) failed,
    /// before any command was written. The API answers 503.
    #[error("{0}")]
    Connect(#[from] ConnectError),
    /// The batch breaks a rule of [`validate()`]; nothing was sent. The API answers 400.
    #[error("{0}")]
    Invalid(#[from] BatchError),
    /// Redis Cluster, transaction mode: keys of the batch (or of `watch`)
    /// are in different hash slots; the message names two of them and
    /// their slots. Nothing was sent. The API answers 400 `cross_slot`.
    #[error("{0}")]
    CrossSlot(BatchError),
}

/// One node's share of a batch (`summary.nodes`; cluster only).
#[derive(Debug, Clone, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeSummary {
    /// `host:port` of the master.
    pub address: String,
    /// Commands written to it (a redirected command counts on each node it
    /// was written to; `ASKING` is not counted).
    pub commands: usize,
    /// Rounds in which pipelab wrote to it and waited for its replies.
    pub round_trips: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// MOVED and ASK replies it gave (each followed once, never a double execution).
    pub redirections: u64,
    /// Its connection failed or timed out during the batch: why (omitted
    /// when it did not). Its commands awaiting replies are `unknown`; those
    /// never written to it `not_sent`, or run on the slot's new master (see
    /// docs/cluster.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// How a stream of commands is sent: a [`Batch`] without its commands.
#[derive(Debug, Clone)]
pub struct Plan {
    pub mode: Mode,
    /// Commands per pipeline chunk (≥ 1; default [`DEFAULT_BATCH_SIZE`]). Ignored by the other modes.
    pub batch_size: usize,
    pub on_error: OnError,
    /// Simulated round-trip time in ms (0 to 1000, fractional), added by the delay line.
    pub simulated_rtt_ms: f64,
    /// Simulated bandwidth in Mbit/s, each direction (`None`: unlimited;
    /// see [`crate::delay::Link`]).
    pub simulated_bandwidth_mbps: Option<f64>,
    /// Switch the connection to RESP3 with `HELLO 3` before the batch.
    pub resp3: bool,
    /// Keys to `WATCH` before a transaction.
    pub watch: Vec<Vec<u8>>,
    /// Auto mode: simulated concurrent callers (1 to [`auto::MAX_CLIENTS`];
    /// default [`auto::DEFAULT_CLIENTS`]). Ignored by the other modes.
    pub clients: usize,
    /// Auto mode: how long a pending command waits for others to join its
    /// write, in µs (0: one event-loop tick, as ioredis). Ignored by the other modes.
    pub window_us: u64,
    /// Measure the server's work around the batch (`summary.server`, see
    /// [`server`]): two `INFO`s on a side connection, outside `total_us`.
    pub server_stats: bool,
}

/// Default commands per pipeline chunk.
pub const DEFAULT_BATCH_SIZE: usize = 1000;

impl Plan {
    /// The connection settings this plan needs under `opts`.
    pub(crate) fn conn_settings(&self, opts: &ExecOptions) -> ConnSettings {
        ConnSettings {
            connect_timeout: opts.connect_timeout,
            read_timeout: opts.read_timeout,
            resp3: self.resp3,
            simulated_rtt_ms: self.simulated_rtt_ms,
            simulated_bandwidth_mbps: self.simulated_bandwidth_mbps,
            max_reply_bytes: opts.max_reply_bytes,
            deadline: opts.deadline,
            cancel: opts.cancel.clone(),
        }
    }

    /// `mode` with the defaults: batch size [`DEFAULT_BATCH_SIZE`],
    /// `on_error: continue`, no simulated RTT, RESP2, nothing watched.
    pub fn new(mode: Mode) -> Plan {
        Plan {
            mode,
            batch_size: DEFAULT_BATCH_SIZE,
            on_error: OnError::Continue,
            simulated_rtt_ms: 0.0,
            simulated_bandwidth_mbps: None,
            resp3: false,
            watch: Vec::new(),
            clients: auto::DEFAULT_CLIENTS,
            window_us: 0,
            server_stats: false,
        }
    }
}

/// Pipeline mode with the defaults of [`Plan::new`].
impl Default for Plan {
    fn default() -> Self {
        Plan::new(Mode::Pipeline)
    }
}

impl Batch {
    /// `commands`, sent as `plan` says.
    pub fn new(commands: impl Into<Commands>, plan: Plan) -> Batch {
        Batch { commands: commands.into(), plan, checked: None }
    }

    /// This batch with the record of its commands made as they were parsed.
    pub fn with_checked(mut self, checked: Option<std::sync::Arc<Prechecked>>) -> Batch {
        self.checked = checked;
        self
    }

    /// The record of its commands ([`Batch::checked`]) if it holds for
    /// them and `table`.
    pub fn checked_for(&self, table: &crate::commands::Table) -> Option<&Prechecked> {
        self.checked.as_deref().filter(|c| c.holds_for(&self.commands, table))
    }

    /// `commands` in `mode` with the defaults of [`Plan::new`].
    pub fn with_mode(commands: impl Into<Commands>, mode: Mode) -> Batch {
        Batch::new(commands, Plan::new(mode))
    }
}

#[cfg(all(test, feature = "cli"))]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// serde's name (JSON), clap's (the command line) and `name()` agree.
    fn same_names<T: ValueEnum + Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(name: impl Fn(&T) -> Option<&'static str>) {
        for v in T::value_variants() {
            let clap = v.to_possible_value().expect("no variant is skipped").get_name().to_string();
            let json = serde_json::to_value(v).unwrap();
            assert_eq!(json, serde_json::Value::String(clap.clone()), "{v:?}");
            assert_eq!(&serde_json::from_value::<T>(json).unwrap(), v);
            assert_eq!(T::from_str(&clap, false).as_ref(), Ok(v));
            if let Some(name) = name(v) {
                assert_eq!(name, clap, "{v:?}");
            }
        }
    }

    #[test]
    fn mode_and_on_error_are_named_once() {
        same_names::<Mode>(|m| Some(m.name()));
        same_names::<OnError>(|_| None);
        assert_eq!(Mode::value_variants().len(), 4);
    }
}
