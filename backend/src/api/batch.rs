//! `POST /api/v1/batch`: run one batch, answer with the executor's report
//! (docs/api.md#batch).

use axum::extract::{FromRequest, Path, Request, State};
use axum::response::Response;
use serde::Deserialize;
use utoipa::ToSchema;

use super::arg::{ArgBytes, JsonCommands};
use pipelab_http::caller::Caller;
use pipelab_http::error::{ApiCode, ApiError, BatchErrors};
use super::extract::CommandsJson;
use super::schema;
use super::kept::Keep;
use super::stream;
use super::validate::{self, batch_request, BatchFields};
use super::AppState;
use pipelab_engine::exec::{Batch, OnError, Report};
use pipelab_model::Mode;

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
    #[schema(value_type = Option<Mode>)]
    pub mode: Option<String>,
    /// Commands per pipeline chunk, at least 1. Default 1000. Pipeline mode
    /// only. Each chunk is written whole before its replies are awaited (one
    /// round trip); at least the number of commands sends the batch as one
    /// pipeline, as `redis-cli --pipe` does.
    #[schema(minimum = 1, example = 1000)]
    pub batch_size: Option<i64>,
    /// Default `continue`.
    #[schema(value_type = Option<OnError>)]
    pub on_error: Option<String>,
    /// Extra delay per round trip in ms, 0 to 1000 (fractions allowed). Default 0.
    #[schema(minimum = 0, maximum = 1000, example = 0.5)]
    pub simulated_rtt_ms: Option<f64>,
    /// Simulated bandwidth of the link in each direction, in Mbit/s, 0.01 to
    /// 100000 (fractions allowed). Default: unlimited. Each direction sends
    /// its bytes one after another at this rate, besides the RTT.
    #[schema(minimum = 0.01, maximum = 100000, example = 100)]
    pub simulated_bandwidth_mbps: Option<f64>,
    /// Speak RESP3 (HELLO 3) on the batch's connection. Default false.
    pub resp3: Option<bool>,
    /// Keys to WATCH before MULTI (transaction mode only).
    #[schema(value_type = Option<Vec<schema::Arg>>)]
    pub watch: Option<Vec<ArgBytes>>,
    /// Which per-command results to return: `all` (default), `errors` (only
    /// those whose status is not `ok`, as `redis-cli --pipe` prints only
    /// errors), or `none`. The summary always counts every command.
    #[schema(value_type = Option<Keep>)]
    pub results: Option<String>,
    /// Run on this session's own connection (`POST /api/v1/sessions`),
    /// which keeps its state (WATCH, MULTI…) between batches: MULTI, EXEC
    /// and WATCH may then be sent one batch each in pipeline or sequential
    /// mode. `resp3`, `simulated_rtt_ms` and `simulated_bandwidth_mbps` are
    /// the session's (leave them out). 404 `session_not_found`, 409 `session_lost` / `session_busy`.
    #[schema(example = "3f2a9c0e5b7d41e8a6c4f0b2d9e7a1c3")]
    pub session: Option<String>,
    /// Auto mode: simulated concurrent callers, 1 to 1000. Default 10.
    #[schema(minimum = 1, maximum = 1000, example = 10)]
    pub clients: Option<i64>,
    /// Auto mode: µs a pending command waits for others to join its write,
    /// 0 to 1000000. Default 0: one event-loop tick, as ioredis.
    #[schema(minimum = 0, maximum = 1000000, example = 0)]
    pub window_us: Option<i64>,
    /// Also measure the server's work (`summary.server`): `INFO` before and
    /// after the batch on a side connection, outside `total_us`. Default false.
    pub server_stats: Option<bool>,
}

batch_request!(BatchRequest);

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
        (status = 200, description = "The batch ran; per-command results", body = Report),
        (status = 404, description = "`session_not_found`: no open session with the given `session` id", body = pipelab_http::error::ErrorBody),
        (status = 409, description = "`session_lost` (its connection is gone) or `session_busy` (another batch runs on it)", body = pipelab_http::error::ErrorBody),
        BatchErrors,
    )
)]
pub async fn batch(State(state): State<AppState>, PreparedBatch { batch, keep, session, backend }: PreparedBatch) -> Result<Response, ApiError> {
    match session {
        Some((id, s)) => super::session::run(state, &backend, &id, s, batch, keep).await,
        None => stream::respond(state, backend, batch, keep).await,
    }
}

/// `POST /api/v1/batch` on session `id`, named in the path rather than in
/// the body: a balancer in front of many nodes routes it by the id's node
/// prefix, as it routes `DELETE /api/v1/sessions/{id}` (docs/deploy.md#many-nodes).
#[utoipa::path(
    post,
    path = "/api/v1/sessions/{id}/batch",
    tag = "sessions",
    params(("id" = String, Path, description = "The session's id (`POST /api/v1/sessions`)")),
    request_body = BatchRequest,
    responses(
        (status = 200, description = "The batch ran on the session; per-command results", body = Report),
        (status = 404, description = "`session_not_found`: no open session with this id", body = pipelab_http::error::ErrorBody),
        (status = 409, description = "`session_lost` (its connection is gone) or `session_busy` (another batch runs on it)", body = pipelab_http::error::ErrorBody),
        (status = 421, description = "`other_node`: another node holds the session (the message names it)", body = pipelab_http::error::ErrorBody),
        BatchErrors,
    )
)]
pub async fn on_session(State(state): State<AppState>, Path(id): Path<String>, req: Request) -> Result<Response, ApiError> {
    let (caller, CommandsJson::<BatchRequest>(mut body)) = Caller::with_body(req, &state).await?;
    if body.session.as_ref().is_some_and(|named| *named != id) {
        return Err(ApiError::field(ApiCode::ConflictingFields, "session", "names another session than the path's; leave it out"));
    }
    body.session = Some(id);
    let prepared = prepare(&state, caller, body, None).await?;
    batch(State(state), prepared).await
}

/// The session a batch names (`"session"`), with its id.
pub(super) type OnSession = Option<(String, std::sync::Arc<pipelab_engine::engine::Session>)>;

/// A [`BatchRequest`] body checked and made a [`Batch`]: the one extractor
/// of `POST /batch` and `POST /batches`, which take the same body from the
/// same caller.
pub struct PreparedBatch {
    pub(super) batch: Batch,
    /// The Redis it runs on (chosen from the caller).
    pub(super) backend: pipelab_engine::engine::Backend,
    /// The results the request asks for (`results`).
    pub(super) keep: Keep,
    /// The session it runs on (`session`), if any.
    pub(super) session: OnSession,
}

/// Rejections: the body's ([`CommandsJson`]), then the 4xx of a bad field,
/// a refused command or a read-only token.
impl FromRequest<AppState> for PreparedBatch {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let Ok(caller) = <Caller as axum::extract::FromRequestParts<AppState>>::from_request_parts(&mut parts, state).await;
        let req = Request::from_parts(parts, body);
        // A big batch's commands are checked and encoded as they arrive.
        let checker = validate::Checker::early(state, &caller, super::extract::declared_length(&req, state)?).await;
        let (req, checked) = super::extract::read_commands::<BatchRequest>(req, state, checker).await?;
        prepare(state, caller, req, checked).await
    }
}

async fn prepare(state: &AppState, caller: Caller, mut req: BatchRequest, checked: Option<validate::Checked>) -> Result<PreparedBatch, ApiError> {
    let mode = match &req.mode {
        Some(m) => validate::mode("mode", m)?,
        None => validate::DEFAULT_MODE,
    };
    let keep = match req.results.as_deref() {
        None => Keep::default(),
        Some(value) => validate::one_of(ApiCode::InvalidField, "results", "value", value)?,
    };
    let backend = state.backend(&caller).await?;
    let Caller { access, visitor, client, .. } = caller;
    let session = match req.session.take() {
        Some(id) => {
            let s = state.http.engine.sessions.get(&id, access.rules(), visitor.as_ref())?;
            super::session::check_settings(&s, req.resp3, req.simulated_rtt_ms, req.simulated_bandwidth_mbps)?;
            (req.resp3, req.simulated_rtt_ms, req.simulated_bandwidth_mbps) =
                (Some(s.settings.resp3), Some(s.settings.simulated_rtt_ms), s.settings.simulated_bandwidth_mbps);
            Some((id, s))
        }
        None => None,
    };
    let (clients, window_us, server_stats) = (req.clients, req.window_us, req.server_stats);
    let rules = super::refuse::Rules::of(state, &backend).await;
    let mut prepared = BatchFields::from(req).prepare_checked(&state.http.limits, checked)?;
    pipelab_http::rate::take_commands(&state.http, client.as_ref(), prepared.commands.len())?;
    validate::auto_fields(&mut prepared.plan, clients, window_us)?;
    prepared.plan.server_stats = server_stats.unwrap_or(false);
    pipelab_http::auth::readonly_check(access, &rules.table, &prepared.commands, |i| prepared.field(i))?;
    let batch = prepared.into_batch(mode, &state.http.limits, &rules)?;
    Ok(PreparedBatch { batch, keep, session, backend })
}
