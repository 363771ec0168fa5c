//! `POST /api/v1/batch`: run one batch, answer with the executor's report
//! (CONTRACT.md section 3).

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;

use super::arg::ArgBytes;
use super::error::{ApiError, ErrorBody};
use super::extract::ApiJson;
use super::run::run_batch;
use super::schema;
use super::validate::{self, BatchFields};
use super::AppState;
use pipelab::exec::{Report, Status};

/// Which results a batch response carries.
enum ResultsFilter {
    All,
    Errors,
    None,
}

/// A batch: `commands` (argv arrays) or `text` (inline lines or RESP), and how to send it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"commands": [["SET", "k", "v"], ["INCR", "k"]], "mode": "pipeline",
    "batch_size": 1000, "on_error": "continue", "simulated_rtt_ms": 0.5}))]
pub struct BatchRequest {
    /// Commands as argv arrays; a binary argument as `{"base64": "..."}`.
    #[schema(value_type = Option<Vec<Vec<schema::Arg>>>, example = json!([["SET", "k", "v"], ["GET", "k"]]))]
    pub commands: Option<Vec<Vec<ArgBytes>>>,
    /// Commands as text: inline lines (split as redis-cli/Redis do, quotes
    /// allowed) or RESP multibulks, one command after the other.
    #[schema(example = "SET k v\nINCR k")]
    pub text: Option<String>,
    /// Default `pipeline`.
    #[schema(value_type = Option<schema::ModeName>)]
    pub mode: Option<String>,
    /// Commands per pipeline chunk, at least 1. Default 1000. Pipeline mode only.
    #[schema(minimum = 1, example = 1000)]
    pub batch_size: Option<i64>,
    /// Default `continue`.
    #[schema(value_type = Option<schema::OnErrorName>)]
    pub on_error: Option<String>,
    /// Extra delay per round trip in ms, 0 to 1000 (fractions allowed). Default 0.
    #[schema(minimum = 0, maximum = 1000, example = 0.5)]
    pub simulated_rtt_ms: Option<f64>,
    /// Speak RESP3 (HELLO 3) on the batch's connection. Default false.
    pub resp3: Option<bool>,
    /// Keys to WATCH before MULTI (transaction mode only).
    #[schema(value_type = Option<Vec<schema::Arg>>)]
    pub watch: Option<Vec<ArgBytes>>,
    /// Which per-command results to return: `all` (default), `errors` (only
    /// those whose status is not `ok`, as `redis-cli --pipe` prints only
    /// errors), or `none`. The summary always counts every command.
    #[schema(value_type = Option<schema::ResultsFilter>)]
    pub results: Option<String>,
}

/// Run a batch of commands.
///
/// 200 whenever the batch was accepted, even if commands failed: see each
/// result's `status`. The batch has its Redis connection to itself while it
/// runs: an idle pooled one or a new one, given back to the pool only if
/// the batch ended cleanly and could not have changed its state.
#[utoipa::path(
    post,
    path = "/api/v1/batch",
    tag = "batches",
    request_body = BatchRequest,
    responses(
        (status = 200, description = "The batch ran; per-command results", body = schema::BatchResponse),
        (status = 400, description = "Bad request (the message names the field)", body = ErrorBody),
        (status = 413, description = "Over a size limit (body, commands, argument)", body = ErrorBody),
        (status = 503, description = "Redis unreachable, or all batch slots busy", body = ErrorBody),
        (status = 504, description = "The batch ran past the batch timeout", body = ErrorBody),
    )
)]
pub async fn batch(
    State(state): State<AppState>,
    ApiJson(req): ApiJson<BatchRequest>,
) -> Result<Response, ApiError> {
    let mode = match &req.mode {
        Some(m) => validate::mode("mode", m)?,
        None => validate::DEFAULT_MODE,
    };
    let keep = match req.results.as_deref() {
        None | Some("all") => ResultsFilter::All,
        Some("errors") => ResultsFilter::Errors,
        Some("none") => ResultsFilter::None,
        Some(other) => {
            return Err(ApiError::field(
                "invalid_field",
                "results",
                format!("unknown value {other:?}; expected \"all\", \"errors\" or \"none\""),
            ))
        }
    };
    let fields = BatchFields {
        commands: req.commands,
        text: req.text,
        batch_size: req.batch_size,
        on_error: req.on_error,
        simulated_rtt_ms: req.simulated_rtt_ms,
        resp3: req.resp3,
        watch: req.watch,
    };
    let batch = fields
        .prepare(&state.limits)?
        .into_batch(mode, &state.limits)?;
    let mut report = run_batch(&state, &batch).await?;
    match keep {
        ResultsFilter::All => {}
        ResultsFilter::Errors => report.results.retain(|r| r.status != Status::Ok),
        ResultsFilter::None => report.results.clear(),
    }
    Ok(json_response(&report))
}

/// Bytes of JSON per command result, about: `{"index":12345,"status":"ok",
/// "reply":{"type":"simple","value":"OK"},"sent_us":1234,"reply_us":5678}`.
const RESULT_JSON_GUESS: usize = 96;

/// The report as a JSON response, serialized into one buffer sized for it
/// up front. (axum's `Json` starts from 128 bytes and doubles its way to
/// the ~10 MiB of a 100k-command report, copying it all each time.)
fn json_response(report: &Report) -> Response {
    let mut body = Vec::with_capacity(512 + report.results.len() * RESULT_JSON_GUESS);
    match serde_json::to_writer(&mut body, report) {
        Ok(()) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        // Serializing a report cannot fail (string keys, finite numbers
        // written as strings); if it ever does, say so in the API's shape.
        Err(e) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("could not serialize the report: {e}"),
        )
        .into_response(),
    }
}
