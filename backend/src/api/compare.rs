//! `POST /api/v1/compare`: the same batch once per mode, summaries side by
//! side, speedups relative to sequential.
//!
//! The batch really runs once per mode, one mode after the other, so its
//! side effects happen once per mode (three INCRs of the same key end at 3).

use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::arg::{ArgBytes, JsonCommands};
use super::error::{ApiError, ErrorBody};
use super::extract::CommandsJson;
use super::incremental::HasCommands;
use super::run::run_batch;
use super::schema;
use super::validate::{self, BatchFields};
use super::AppState;
use crate::exec::{CommandResult, Mode, Summary, TransactionOutcome};

/// What the response says about side effects (also in the OpenAPI document).
pub const NOTE: &str = "The batch ran once per mode, in this order, each on its own connection: \
    its side effects happened once per mode.";

/// A batch to run in several modes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"commands": [["SET", "k", "v"], ["GET", "k"]], "simulated_rtt_ms": 1}))]
pub struct CompareRequest {
    /// Commands as argv arrays; a binary argument as `{"base64": "..."}`.
    #[schema(value_type = Option<Vec<Vec<schema::Arg>>>)]
    pub commands: Option<JsonCommands>,
    /// Commands as inline lines or RESP.
    pub text: Option<String>,
    /// Modes to run; sequential always runs (first), as the baseline.
    /// Default: all three.
    #[schema(value_type = Option<Vec<schema::ModeName>>)]
    pub modes: Option<Vec<String>>,
    /// Pipeline chunk size, at least 1. Default 1000.
    #[schema(minimum = 1)]
    pub batch_size: Option<i64>,
    #[schema(value_type = Option<schema::OnErrorName>)]
    pub on_error: Option<String>,
    /// Extra delay per round trip in ms, 0 to 1000.
    #[schema(minimum = 0, maximum = 1000)]
    pub simulated_rtt_ms: Option<f64>,
    pub resp3: Option<bool>,
    /// Keys to WATCH before the transaction run.
    #[schema(value_type = Option<Vec<schema::Arg>>)]
    pub watch: Option<Vec<ArgBytes>>,
    /// Also return each run's per-command results. Default false.
    pub include_results: Option<bool>,
}

impl HasCommands for CompareRequest {
    fn set_commands(&mut self, commands: JsonCommands) {
        self.commands = Some(commands);
    }
}

/// The runs, in the order they ran.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "note": "The batch ran once per mode, in this order, each on its own connection: its side effects happened once per mode.",
    "runs": [
        {"mode": "sequential", "speedup_vs_sequential": 1.0, "summary": {"mode": "sequential", "commands": 2, "ok": 2, "errors": 0, "not_sent": 0, "unknown": 0,
            "round_trips": 2, "write_calls": 2, "write_syscalls": 2, "bytes_sent": 58, "bytes_received": 9,
            "total_us": 2210, "commands_per_sec": 905.0, "simulated_rtt_ms": 1.0, "batch_size": 1, "resp3": false}},
        {"mode": "pipeline", "speedup_vs_sequential": 2.0, "summary": {"mode": "pipeline", "commands": 2, "ok": 2, "errors": 0, "not_sent": 0, "unknown": 0,
            "round_trips": 1, "write_calls": 1, "write_syscalls": 1, "bytes_sent": 58, "bytes_received": 9,
            "total_us": 1105, "commands_per_sec": 1810.0, "simulated_rtt_ms": 1.0, "batch_size": 1000, "resp3": false}}
    ]
}))]
pub struct CompareResponse {
    /// The batch ran once per mode: side effects repeat.
    #[schema(
        example = "The batch ran once per mode, in this order, each on its own connection: its side effects happened once per mode."
    )]
    pub note: &'static str,
    pub runs: Vec<CompareRun>,
}

/// One mode's run.
#[derive(Debug, Serialize, ToSchema)]
pub struct CompareRun {
    #[schema(value_type = schema::ModeName)]
    pub mode: Mode,
    /// Sequential total time / this run's total time (1.0 for sequential).
    #[schema(example = 12.5)]
    pub speedup_vs_sequential: Option<f64>,
    #[schema(value_type = schema::Summary)]
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<schema::Transaction>)]
    pub transaction: Option<TransactionOutcome>,
    /// With include_results only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<schema::CommandResult>>)]
    pub results: Option<Vec<CommandResult>>,
}

/// Run the same batch in each mode and compare.
///
/// The batch runs once per mode (sequential first), so side effects repeat.
#[utoipa::path(
    post,
    path = "/api/v1/compare",
    tag = "batches",
    request_body = CompareRequest,
    responses(
        (status = 200, description = "One run per mode, in the order they ran", body = CompareResponse),
        (status = 400, description = "Bad request (the message names the field)", body = ErrorBody),
        (status = 408, description = "The body stopped arriving for the batch timeout", body = ErrorBody),
        (status = 413, description = "Over a size limit", body = ErrorBody),
        (status = 503, description = "Redis unreachable", body = ErrorBody),
        (status = 504, description = "A run could not be cut at the batch timeout (a batch reaching it is normally cut and reported: `unknown` / `not_sent` results and `connection_error`)", body = ErrorBody),
    )
)]
pub async fn compare(
    State(state): State<AppState>,
    CommandsJson(req): CommandsJson<CompareRequest>,
) -> Result<Json<CompareResponse>, ApiError> {
    let mut modes = vec![Mode::Sequential];
    let requested = match &req.modes {
        Some(list) if list.is_empty() => {
            return Err(ApiError::field(
                "invalid_field",
                "modes",
                "empty; leave it out to run all three modes",
            ))
        }
        Some(list) => list
            .iter()
            .enumerate()
            .map(|(i, m)| validate::mode(&format!("modes[{i}]"), m))
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![Mode::Pipeline, Mode::Transaction],
    };
    for m in [Mode::Pipeline, Mode::Transaction] {
        if requested.contains(&m) {
            modes.push(m);
        }
    }
    let include_results = req.include_results.unwrap_or(false);
    let prepared = BatchFields {
        commands: req.commands,
        text: req.text,
        batch_size: req.batch_size,
        on_error: req.on_error,
        simulated_rtt_ms: req.simulated_rtt_ms,
        resp3: req.resp3,
        watch: None,
    }
    .prepare(&state.limits)?;
    // `watch` belongs to the transaction run only; validate it as a transaction field.
    let watch = BatchFields {
        watch: req.watch,
        commands: Some(JsonCommands(crate::exec::Commands::from_iter([vec!["PING"]]))),
        ..Default::default()
    }
    .prepare(&state.limits)?
    .watch;
    // Validate every mode's batch before running any, so a refusal leaves no side effects.
    let rules = super::refuse::Rules::of(&state).await;
    let batches = modes
        .iter()
        .map(|&mode| {
            let mut batch = prepared.batch(mode, &state.limits, &rules)?;
            if mode == Mode::Transaction {
                batch.watch = watch.clone();
            }
            Ok(batch)
        })
        .collect::<Result<Vec<_>, ApiError>>()?;

    let mut runs: Vec<CompareRun> = Vec::with_capacity(batches.len());
    for batch in &batches {
        let report = run_batch(&state, batch).await?;
        let baseline = runs
            .first()
            .map_or(report.summary.total_us, |r| r.summary.total_us);
        runs.push(CompareRun {
            mode: batch.mode,
            speedup_vs_sequential: (report.summary.total_us > 0)
                .then(|| baseline as f64 / report.summary.total_us as f64),
            summary: report.summary,
            transaction: report.transaction,
            results: include_results.then_some(report.results),
        });
    }
    Ok(Json(CompareResponse { note: NOTE, runs }))
}
