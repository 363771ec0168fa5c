//! `POST /api/v1/batch`: run one batch, answer with the executor's report
//! (CONTRACT.md section 3).

use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use utoipa::ToSchema;

use super::arg::{ArgBytes, JsonCommands};
use super::error::{ApiError, ErrorBody};
use super::extract::CommandsJson;
use super::incremental::HasCommands;
use super::schema;
use super::stream::{self, Keep};
use super::validate::{self, BatchFields};
use super::AppState;

/// A batch: `commands` (argv arrays) or `text` (inline lines or RESP), and how to send it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"commands": [["SET", "k", "v"], ["INCR", "k"]], "mode": "pipeline",
    "batch_size": 1000, "on_error": "continue", "simulated_rtt_ms": 0.5}))]
pub struct BatchRequest {
    /// Commands as argv arrays; a binary argument as `{"base64": "..."}`.
    #[schema(value_type = Option<Vec<Vec<schema::Arg>>>, example = json!([["SET", "k", "v"], ["GET", "k"]]))]
    pub commands: Option<JsonCommands>,
    /// Commands as text: inline lines (split as redis-cli/Redis do, quotes
    /// allowed) or RESP multibulks, one command after the other.
    #[schema(example = "SET k v\nINCR k")]
    pub text: Option<String>,
    /// Default `pipeline`.
    #[schema(value_type = Option<schema::ModeName>)]
    pub mode: Option<String>,
    /// Commands per pipeline chunk, at least 1. Default 1000. Pipeline mode
    /// only. Each chunk is written whole before its replies are awaited (one
    /// round trip); at least the number of commands sends the batch as one
    /// pipeline, as `redis-cli --pipe` does.
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

impl HasCommands for BatchRequest {
    fn set_commands(&mut self, commands: JsonCommands) {
        self.commands = Some(commands);
    }
}

/// Run a batch of commands.
///
/// 200 whenever the batch was accepted, even if commands failed: see each
/// result's `status`. A batch cut by the batch timeout or the reply-size
/// limit is a 200 too: commands awaiting replies are `unknown`, the rest
/// `not_sent`, and `connection_error` says why. A big report is streamed
/// (chunked) while the batch runs, `results` first. The batch has its Redis connection to itself while it
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
        (status = 408, description = "The body stopped arriving for the batch timeout", body = ErrorBody),
        (status = 413, description = "Over a size limit (body, commands, argument)", body = ErrorBody),
        (status = 503, description = "Redis unreachable, or all batch slots busy", body = ErrorBody),
        (status = 504, description = "A run could not be cut at the batch timeout (a batch reaching it is normally cut and reported: `unknown` / `not_sent` results and `connection_error`)", body = ErrorBody),
    )
)]
pub async fn batch(
    State(state): State<AppState>,
    CommandsJson(req): CommandsJson<BatchRequest>,
) -> Result<Response, ApiError> {
    let mode = match &req.mode {
        Some(m) => validate::mode("mode", m)?,
        None => validate::DEFAULT_MODE,
    };
    let keep = match req.results.as_deref() {
        None | Some("all") => Keep::All,
        Some("errors") => Keep::Errors,
        Some("none") => Keep::None,
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
    let rules = super::refuse::Rules::of(&state).await;
    let batch = fields
        .prepare(&state.limits)?
        .into_batch(mode, &state.limits, &rules)?;
    stream::respond(state, batch, keep).await
}
