//! Schemas for the OpenAPI document of types the API does not own: the
//! executor's `Report` (docs/api.md#response), reply JSON (docs/reply-json.md) and
//! argv arguments. They describe, never carry, data: responses are
//! serialized from the executor's own types, and the tests check real
//! responses against these schemas so the two cannot drift apart.
#![allow(dead_code)]

use serde::Serialize;
use utoipa::ToSchema;

/// A command argument: a string, or `{"base64": "..."}` for bytes that are
/// not valid UTF-8.
#[derive(ToSchema)]
#[serde(untagged)]
#[schema(example = json!("SET"))]
pub enum Arg {
    Text(String),
    Binary {
        /// Standard base64 (padding optional).
        base64: String,
    },
}

/// How the batch is sent.
#[derive(Debug, ToSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeName {
    /// One command, then its reply, then the next: one round trip per command.
    Sequential,
    /// Chunks of `batch_size` commands written at once, then their replies read.
    Pipeline,
    /// MULTI, the commands, EXEC in one write.
    Transaction,
}

/// What to do after an error reply.
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnErrorName {
    /// Send everything regardless (Redis's own behaviour in a pipeline).
    Continue,
    /// Send no further chunk after one with an error reply; the rest is `not_sent`.
    Stop,
}

/// Which per-command results a batch response carries.
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultsFilter {
    /// Every command's result (the default).
    All,
    /// Only results whose status is not ok (error, not_sent, unknown); each keeps its index.
    Errors,
    /// No per-command results; the summary still counts every command.
    None,
}

/// One RESP2/RESP3 value as reply JSON (docs/reply-json.md#types).
///
/// `type` is one of simple, error, integer, bulk, null, array, double,
/// boolean, blob_error, verbatim, big_number, map, set, push. Strings carry
/// `value`, or `base64` when not valid UTF-8; arrays, sets and pushes carry
/// a list of values; maps and attributes a list of `[key, value]` pairs;
/// doubles a number or "inf", "-inf", "nan".
#[derive(ToSchema)]
#[schema(example = json!({"type": "bulk", "value": "hello"}))]
pub struct Reply {
    #[schema(example = "bulk")]
    pub r#type: String,
    /// The payload; its JSON type depends on `type`.
    #[schema(value_type = Option<Object>)]
    pub value: Option<serde_json::Value>,
    /// Bytes that are not valid UTF-8, standard base64.
    pub base64: Option<String>,
    /// Verbatim strings: the 3-character format, e.g. `txt`.
    pub format: Option<String>,
    /// RESP3 attributes attached to this value: `[key, value]` pairs.
    #[schema(value_type = Option<Vec<Object>>)]
    pub attributes: Option<Vec<serde_json::Value>>,
}

/// Outcome of one command.
#[derive(ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusName {
    /// Redis answered with a non-error reply.
    Ok,
    /// Redis answered with an error reply.
    Error,
    /// Never written: an earlier error with on_error stop, or the batch was cut.
    NotSent,
    /// Written, but the connection failed before its reply: it may or may
    /// not have run. Never retried.
    Unknown,
}

/// One command's result. Times in µs from the batch start.
#[derive(ToSchema)]
pub struct CommandResult {
    pub index: u64,
    pub status: StatusName,
    /// Absent for not_sent and unknown.
    pub reply: Option<Reply>,
    /// When the write carrying this command completed (µs).
    pub sent_us: Option<u64>,
    /// When its reply was fully read (µs).
    pub reply_us: Option<u64>,
}

/// Totals for a batch.
#[derive(ToSchema)]
#[schema(example = json!({"mode": "pipeline", "commands": 2, "ok": 1, "errors": 1, "not_sent": 0,
    "unknown": 0, "round_trips": 1, "write_calls": 1, "bytes_sent": 54, "bytes_received": 40,
    "total_us": 812, "commands_per_sec": 2463.0, "simulated_rtt_ms": 0.0, "write_syscalls": 1,
    "batch_size": 1000, "resp3": false}))]
pub struct Summary {
    pub mode: Option<ModeName>,
    pub commands: u64,
    pub ok: u64,
    pub errors: u64,
    pub not_sent: u64,
    pub unknown: u64,
    /// Times the executor waited for replies before writing more.
    pub round_trips: u64,
    /// Writes by the executor: one per command (sequential), per chunk
    /// (pipeline), per MULTI…EXEC (transaction), plus one for WATCH.
    pub write_calls: u64,
    /// write system calls those took (a large chunk may need several).
    pub write_syscalls: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// RESP3 push messages read between replies (not assigned to any
    /// command); absent when 0.
    pub pushes: Option<u64>,
    /// Wall time of the batch in µs (connection handshake excluded).
    pub total_us: u64,
    pub commands_per_sec: f64,
    pub simulated_rtt_ms: f64,
    /// Commands per chunk (1 in sequential mode, all in transaction mode).
    pub batch_size: u64,
    /// Replies were read as RESP3 (HELLO 3).
    pub resp3: bool,
}

/// Transaction outcome (transaction mode only).
#[derive(ToSchema)]
pub struct Transaction {
    /// committed (EXEC ran the commands; some may still have failed at run
    /// time: no rollback), aborted (EXECABORT or EXEC failed: nothing ran),
    /// watch_conflict (a WATCHed key changed: nothing ran), or unknown (the
    /// connection failed before EXEC's reply).
    #[schema(example = "committed")]
    pub status: String,
    /// For aborted: the first command rejected at queue time.
    pub rejected_index: Option<u64>,
    /// Redis's error, or what happened to the connection.
    pub message: Option<String>,
    /// Every command rejected at queue time, in order.
    pub rejected: Option<Vec<Rejected>>,
}

/// A command Redis refused to queue inside MULTI.
#[derive(ToSchema)]
pub struct Rejected {
    pub index: u64,
    pub message: String,
}

/// The executor's report for a batch.
#[derive(ToSchema)]
#[schema(example = json!({
    "summary": {"mode": "pipeline", "commands": 2, "ok": 1, "errors": 1, "not_sent": 0,
        "unknown": 0, "round_trips": 1, "write_calls": 1, "bytes_sent": 54, "bytes_received": 40,
        "total_us": 812, "commands_per_sec": 2463.0, "simulated_rtt_ms": 0.0, "write_syscalls": 1,
        "batch_size": 1000, "resp3": false},
    "results": [
        {"index": 0, "status": "ok", "reply": {"type": "simple", "value": "OK"}, "sent_us": 3, "reply_us": 790},
        {"index": 1, "status": "error", "reply": {"type": "error",
            "value": "ERR value is not an integer or out of range"}, "sent_us": 3, "reply_us": 801}
    ]
}))]
pub struct BatchResponse {
    pub summary: Summary,
    pub results: Vec<CommandResult>,
    pub transaction: Option<Transaction>,
    /// Why the connection was dropped mid-batch (results then hold unknown / not_sent).
    pub connection_error: Option<String>,
}
