//! `POST /api/v1/compare`: the same batch once per mode, summaries side by
//! side, speedups relative to sequential. The request is checked here; the
//! runs and the report are [`pipelab_engine::lab::compare`]'s (`pipelab compare`
//! runs the same).

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa::ToSchema;

use super::arg::{ArgBytes, JsonCommands};
use pipelab_http::budget::{Charge, Held};
use pipelab_http::error::{ApiError, BatchErrors};
use super::extract::CommandsJson;
use super::run::{OnBackend, WithResults};
use super::schema;
use super::validate::{self, batch_request, BatchFields};
use super::AppState;
use pipelab_engine::exec::OnError;
use pipelab_model::Mode;
use pipelab_engine::lab;
use pipelab_engine::lab::compare::CompareReport;

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
    /// Default: all four.
    #[schema(value_type = Option<Vec<Mode>>)]
    pub modes: Option<Vec<String>>,
    /// Pipeline chunk size, at least 1. Default 1000.
    #[schema(minimum = 1)]
    pub batch_size: Option<i64>,
    #[schema(value_type = Option<OnError>)]
    pub on_error: Option<String>,
    /// Extra delay per round trip in ms, 0 to 1000.
    #[schema(minimum = 0, maximum = 1000)]
    pub simulated_rtt_ms: Option<f64>,
    /// Simulated bandwidth in Mbit/s, 0.01 to 100000, as for `POST /api/v1/batch`. Default: unlimited.
    #[schema(minimum = 0.01, maximum = 100000, example = 100)]
    pub simulated_bandwidth_mbps: Option<f64>,
    /// Speak RESP3 (HELLO 3) in every run. Default false.
    pub resp3: Option<bool>,
    /// Keys to WATCH before the transaction run.
    #[schema(value_type = Option<Vec<schema::Arg>>)]
    pub watch: Option<Vec<ArgBytes>>,
    /// Also return each run's per-command results. Default false.
    pub include_results: Option<bool>,
    /// The auto run's simulated callers, 1 to 1000. Default 10.
    #[schema(minimum = 1, maximum = 1000)]
    pub clients: Option<i64>,
    /// The auto run's write window in µs (0: one event-loop tick). Default 0.
    #[schema(minimum = 0, maximum = 1000000)]
    pub window_us: Option<i64>,
}

batch_request!(CompareRequest);

/// Run the same batch in each mode and compare.
///
/// The batch runs once per mode (sequential first), so side effects repeat.
#[utoipa::path(post, path = "/api/v1/compare", tag = "batches", request_body = CompareRequest, responses(
    (status = 200, description = "One run per mode, in the order they ran", body = CompareReport),
    BatchErrors,
))]
pub async fn compare(
    State(state): State<AppState>,
    caller: pipelab_http::caller::Caller,
    CommandsJson(mut req): CommandsJson<CompareRequest>,
) -> Result<Response, ApiError> {
    let requested = req
        .modes
        .as_ref()
        .map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, m)| validate::mode(&format!("modes[{i}]"), m))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    let modes = lab::compare::run_order(requested.as_deref())?;
    let include_results = req.include_results.unwrap_or(false);
    // `watch` belongs to the transaction run only; validate it as a transaction field.
    let watch = req.watch.take();
    let (clients, window_us) = (req.clients, req.window_us);
    let mut prepared = BatchFields::from(req).prepare(&state.http.limits)?;
    validate::auto_fields(&mut prepared.plan, clients, window_us)?;
    // Each run's summary says what the server did too.
    prepared.plan.server_stats = true;
    let watch = BatchFields {
        watch,
        commands: Some(JsonCommands(pipelab_engine::exec::Commands::from_iter([vec!["PING"]]))),
        ..Default::default()
    }
    .prepare(&state.http.limits)?
    .plan
    .watch;
    // Every mode's batch is checked before any runs, so a refusal leaves no side effects.
    let on = state.backend(&caller).await?;
    let rules = super::refuse::Rules::of(&state, &on).await;
    // Each mode runs the batch once.
    pipelab_http::rate::take_commands(&state.http, caller.client.as_ref(), prepared.commands.len() * modes.len())?;
    let batches = lab::compare::batches(&modes, &watch, |mode| prepared.batch(mode, &state.http.limits, &rules))?;
    // Results in the response: each run's reply JSON counts against the reply limit.
    let runner = OnBackend { state, on };
    if !include_results {
        return Ok(Json(lab::compare::compare(&runner, &batches, false).await?).into_response());
    }
    let with = WithResults::new(runner);
    let report = lab::compare::compare(&with, &batches, true).await?;
    // The replies' JSON is charged already: the answer is written in a
    // buffer of about that size (not grown by doubling, twice as large),
    // and stays charged until its client has it (`pipelab_http::budget`).
    let charge = with.charge.lock().map(|mut c| c.take()).ok();
    let mut body = Vec::with_capacity(charge.as_ref().map_or(0, Charge::bytes) as usize + 64 * 1024);
    if serde_json::to_writer(&mut body, &report).is_err() {
        // Not for a report of strings and numbers; axum's answer if it were.
        return Ok(Json(report).into_response());
    }
    let mut res = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(charge) = charge {
        res.extensions_mut().insert(Held::new(charge));
    }
    Ok(res)
}
