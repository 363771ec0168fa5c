//! The executor: runs one [`Batch`] against Redis in one of three modes and
//! reports, per command, what happened and when ([`Report`]).
//!
//! It knows nothing of HTTP or terminals: the API and the CLI are thin
//! adapters over it, and both serialize the same [`Report`] so that
//! `pipelab run --json` and `POST /api/v1/batch` cannot drift apart
//! (CONTRACT.md section 3).

use serde::{Deserialize, Serialize};

/// One command: its argv, as bytes (binary-safe).
pub type Argv = Vec<Vec<u8>>;

/// How the batch is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Write one command, read its reply, then the next: N round trips.
    Sequential,
    /// Chunks of `batch_size` commands, each written at once, then its
    /// replies read: ⌈N / batch_size⌉ round trips.
    Pipeline,
    /// `MULTI`, the commands, `EXEC` in one write.
    Transaction,
}

/// What to do after an error reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Send everything regardless (Redis's own behaviour in a pipeline).
    #[default]
    Continue,
    /// Send no further chunk after one that had an error reply; the rest is `not_sent`.
    Stop,
}

/// A validated batch, ready to run.
#[derive(Debug, Clone)]
pub struct Batch {
    pub commands: Vec<Argv>,
    pub mode: Mode,
    /// Commands per pipeline chunk (≥ 1; default 1000). Ignored by the other modes.
    pub batch_size: usize,
    pub on_error: OnError,
    /// Simulated round-trip time in ms (0 to 1000, fractional), added by the delay line.
    pub simulated_rtt_ms: f64,
    /// Switch the connection to RESP3 with `HELLO 3` before the batch.
    pub resp3: bool,
    /// Keys to `WATCH` before a transaction.
    pub watch: Vec<Vec<u8>>,
}

/// Outcome of one command (CONTRACT.md section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Redis answered with a non-error reply.
    Ok,
    /// Redis answered with an error reply.
    Error,
    /// Never written to the socket.
    NotSent,
    /// Written, but the connection failed before its reply: it may or may not
    /// have run. Never retried.
    Unknown,
}

/// One command's result. Times are µs from the batch start.
#[derive(Debug, Clone, Serialize)]
pub struct CommandResult {
    pub index: usize,
    pub status: Status,
    /// The reply as reply JSON (CONTRACT.md section 1); absent for `not_sent` / `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply: Option<resp::Value>,
    /// When the write that carried this command completed (µs from batch start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_us: Option<u64>,
    /// When this command's reply was fully read (µs from batch start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_us: Option<u64>,
}

/// Totals for a batch.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    pub mode: Option<Mode>,
    pub commands: usize,
    pub ok: usize,
    pub errors: usize,
    pub not_sent: usize,
    pub unknown: usize,
    /// Times the executor waited for replies before writing more.
    pub round_trips: u64,
    /// `write` calls on the socket.
    pub write_calls: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Wall time of the whole batch in µs (connection handshake excluded).
    pub total_us: u64,
    /// `commands / total_us`, in commands per second.
    pub commands_per_sec: f64,
    pub simulated_rtt_ms: f64,
}

/// Outcome of a transaction as a whole.
#[derive(Debug, Clone, Serialize)]
pub struct TransactionOutcome {
    /// `committed`, `aborted` (EXECABORT: nothing ran) or `watch_conflict` (EXEC returned null).
    pub status: TransactionStatus,
    /// For `aborted`: the index of the command rejected at queue time and Redis's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected_index: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransactionStatus {
    Committed,
    Aborted,
    WatchConflict,
}

/// The executor's answer for a batch.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub summary: Summary,
    pub results: Vec<CommandResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction: Option<TransactionOutcome>,
}
