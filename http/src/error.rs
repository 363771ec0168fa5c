//! The one error shape of the API (docs/api.md#errors):
//! `{"error": {"code": "...", "message": "...", "field": "..."}}` with a 4xx
//! status for bad requests and 503 when Redis cannot be reached.
//!
//! `code` is an [`ApiCode`]: stable, meant for programs, and it decides the
//! HTTP status; `message` is for people and always names the offending
//! field (and line/column for `text`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Why a request failed: the `code` of an error body. A code always comes
/// with the same HTTP status, and the names (`invalid_json`,
/// `body_timeout`, …) never change: clients match them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApiCode {
    /// 400: the body is not JSON (a syntax error, with line and column), or empty.
    InvalidJson,
    /// 400: the body could not be read.
    InvalidBody,
    /// 400: a field has the wrong type or value, is unknown, missing or given twice.
    InvalidField,
    /// 400: neither `commands` nor `text`.
    MissingCommands,
    /// 400: both `commands` and `text`.
    ConflictingFields,
    /// 400: no command at all.
    EmptyBatch,
    /// 400: a command without even a name.
    EmptyArgv,
    /// 400: `mode` (or an entry of `modes`) is not a mode.
    UnknownMode,
    /// 400: `{"base64": ...}` that is not base64.
    InvalidBase64,
    /// 400: an argument that is neither a string nor `{"base64": ...}`.
    InvalidArgument,
    /// 400: `text` that cannot be split into commands (line, column).
    ParseError,
    /// 400: a batch size below 1.
    InvalidBatchSize,
    /// 400: a simulated RTT out of range, or more than the batch timeout in all.
    InvalidRtt,
    /// 400: a command the API does not run (it changes the connection, blocks forever, …).
    RefusedCommand,
    /// 400: a batch the executor refuses (its own rules, checked again).
    InvalidBatch,
    /// 400: sweep: Redis rejects the command.
    InvalidCommand,
    /// 400: `watch` with more keys than `limits.max_watch_keys`, or more
    /// bytes of keys in all than `limits.max_arg_bytes` (WATCH is one command).
    TooManyWatchKeys,
    /// 400: Redis Cluster, transaction mode: keys (of the commands or of
    /// `watch`) in different hash slots; the message names two and their slots.
    CrossSlot,
    /// 403: an `Origin` (or `Sec-Fetch-Site`) of another site: see `http::guard`.
    ForbiddenOrigin,
    /// 401: tokens are configured and the request has none, or a wrong one.
    Unauthorized,
    /// 403: a read-only token on an endpoint that may write.
    Forbidden,
    /// 403: `/api/v1/batch` with a read-only token and a command that may
    /// write (the message names its index and name; nothing was sent).
    ReadonlyToken,
    /// 404: no such endpoint.
    NotFound,
    /// 405: the endpoint does not take this method.
    MethodNotAllowed,
    /// 408: the body stopped arriving for the batch timeout.
    BodyTimeout,
    /// 413: the body is over `limits.max_body_bytes`.
    BodyTooLarge,
    /// 413: more commands than `limits.max_commands`.
    TooManyCommands,
    /// 413: an argument over `limits.max_arg_bytes`.
    ArgumentTooLarge,
    /// 414: a request URI over 8 KiB (`http::guard::MAX_URI_BYTES`).
    UriTooLong,
    /// 415: a body that is not declared `application/json`.
    UnsupportedMediaType,
    /// 421: a `Host` that is not this server's (DNS rebinding): see `http::guard`.
    ForbiddenHost,
    /// 431: request headers over 32 KiB in all (`http::guard::MAX_HEADER_BYTES`).
    HeadersTooLarge,
    /// 429: over a rate limit (`--rate-requests`, `--rate-commands`,
    /// `--rate-bytes`; see `http::rate`); `Retry-After` says when to retry.
    /// Nothing was sent.
    RateLimited,
    /// 503: Redis cannot be reached (nothing was written).
    RedisUnavailable,
    /// 503: every batch slot stayed busy for the batch timeout, or the
    /// server's memory for answers is spent (`http::budget`; `Retry-After`).
    Busy,
    /// 503 (`/healthz`): Redis has answered BUSY (a script or function that
    /// could not be killed) for longer than the batch timeout.
    RedisBusy,
    /// 503: the server stopped past its grace period while the request was
    /// still being read or run; or it drains (after SIGTERM, `http::drain`):
    /// `/readyz`, and a request that would start something new on it, with
    /// `Retry-After`.
    ShuttingDown,
    /// 504: a batch that could not be cut at its deadline (a batch reaching
    /// the timeout is normally cut and reported).
    BatchTimeout,
    /// 421: the session or live batch's id was made by another node (its
    /// `<node>.` prefix, named in the message): the balancer in front of
    /// the nodes sent the request to the wrong one (docs/deploy.md#many-nodes).
    OtherNode,
    /// 404: no open session with this id (never opened, closed, expired
    /// after `--session-idle-ms`, or another token's).
    SessionNotFound,
    /// 409: the session's Redis connection was lost (closed by the server,
    /// or a batch on it was cut); the session is closed, never reopened.
    SessionLost,
    /// 409: another batch is running on the session.
    SessionBusy,
    /// 503: `--max-sessions` sessions are open (in the sandbox: the
    /// visitor's own `--sandbox-visitor-sessions`).
    TooManySessions,
    /// 429: in the sandbox, the visitor already runs
    /// `--sandbox-visitor-batches` batches; `Retry-After` says when to retry.
    TooManyBatches,
    /// 429: in the sandbox, `--sandbox-new-visitors-per-minute` new
    /// visitors came from the caller's address in the last minute;
    /// `Retry-After` says when the next may start.
    TooManyVisitors,
    /// 503: reserved; the sandbox hibernates its least recently active
    /// visitors rather than refuse one.
    SandboxFull,
    /// 413: in the sandbox, the batch's scripts (EVAL, SCRIPT LOAD,
    /// FUNCTION LOAD) would hold more than the visitor's quota.
    ScriptCacheFull,
    /// 413: the batch's answer alone would hold more than
    /// `--max-response-memory` (`http::budget`); the batch ran until then.
    AnswerTooLarge,
}

impl ApiCode {
    /// Every code, in the order of the OpenAPI document's listing. Wire names
    /// are the variants in `snake_case` (serde); the status is [`ApiCode::status`].
    pub const ALL: [ApiCode; 48] = {
        use ApiCode::*;
        [
            InvalidJson, InvalidBody, InvalidField, MissingCommands, ConflictingFields, EmptyBatch,
            EmptyArgv, UnknownMode, InvalidBase64, InvalidArgument, ParseError, InvalidBatchSize,
            InvalidRtt, RefusedCommand, InvalidBatch, InvalidCommand, TooManyWatchKeys, CrossSlot,
            ForbiddenOrigin, Unauthorized, Forbidden, ReadonlyToken, NotFound, MethodNotAllowed, BodyTimeout,
            BodyTooLarge, TooManyCommands, ArgumentTooLarge, UriTooLong, UnsupportedMediaType, ForbiddenHost,
            HeadersTooLarge, RateLimited, RedisUnavailable, Busy, RedisBusy, ShuttingDown, BatchTimeout,
            OtherNode, SessionNotFound, SessionLost, SessionBusy, TooManySessions, TooManyBatches, TooManyVisitors, SandboxFull,
            ScriptCacheFull, AnswerTooLarge,
        ]
    };

    /// The HTTP status every error with this code is answered with.
    pub fn status(self) -> StatusCode {
        use ApiCode::*;
        match self {
            InvalidJson | InvalidBody | InvalidField | MissingCommands | ConflictingFields | EmptyBatch
            | EmptyArgv | UnknownMode | InvalidBase64 | InvalidArgument | ParseError | InvalidBatchSize
            | InvalidRtt | RefusedCommand | InvalidBatch | InvalidCommand | TooManyWatchKeys | CrossSlot => {
                StatusCode::BAD_REQUEST
            }
            Unauthorized => StatusCode::UNAUTHORIZED,
            Forbidden | ReadonlyToken | ForbiddenOrigin => StatusCode::FORBIDDEN,
            NotFound | SessionNotFound => StatusCode::NOT_FOUND,
            SessionLost | SessionBusy => StatusCode::CONFLICT,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            BodyTooLarge | TooManyCommands | ArgumentTooLarge | ScriptCacheFull | AnswerTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            UriTooLong => StatusCode::URI_TOO_LONG,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ForbiddenHost | OtherNode => StatusCode::MISDIRECTED_REQUEST,
            HeadersTooLarge => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            RateLimited | TooManyBatches | TooManyVisitors => StatusCode::TOO_MANY_REQUESTS,
            RedisUnavailable | Busy | RedisBusy | ShuttingDown | TooManySessions | SandboxFull => StatusCode::SERVICE_UNAVAILABLE,
            BatchTimeout => StatusCode::GATEWAY_TIMEOUT,
        }
    }

    /// The wire name (`invalid_json`, …), as serde writes it.
    pub fn name(self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(name)) => name,
            other => unreachable!("a unit variant serializes to a string, not {other:?}"),
        }
    }

    /// The code whose wire name is `name`.
    pub fn from_name(name: &str) -> Option<ApiCode> {
        use serde::de::IntoDeserializer;
        let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> = name.into_deserializer();
        ApiCode::deserialize(de).ok()
    }
}

/// An API error: its code (which decides the HTTP status) and the JSON body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub body: ErrorDetail,
    /// Seconds for the `Retry-After` header, when waiting helps.
    pub retry_after: Option<u64>,
}

/// `{"error": ...}`: the body of every non-2xx response of /api/v1.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"error": {"code": "empty_argv", "field": "commands[1]",
    "message": "commands[1]: a command needs at least one argument (its name)"}}))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code; the `ApiCode` schema lists each with its HTTP status.
    pub code: ApiCode,
    /// Human-readable explanation, starting with the field it concerns.
    pub message: String,
    /// Where in the request the fault is, when there is one place: a JSON
    /// path (`commands[0][2]`, `batch_size`), `text, line N` for a command
    /// given as text, or `request body` for the body as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(code: ApiCode, message: impl Into<String>) -> Self {
        ApiError { body: ErrorDetail { code, message: message.into(), field: None }, retry_after: None }
    }

    /// An error about one field; the message is prefixed with the field's name.
    pub fn field(code: ApiCode, field: impl Into<String>, message: impl AsRef<str>) -> Self {
        let field = field.into();
        let message = format!("{field}: {}", message.as_ref());
        ApiError { body: ErrorDetail { code, message, field: Some(field) }, retry_after: None }
    }

    /// The stable machine-readable code (`busy`, `redis_unavailable`, ...).
    pub fn code(&self) -> ApiCode {
        self.body.code
    }

    /// The same error, about `field` (a header, `request URI`, ...); the
    /// message is left as it is.
    pub fn at(mut self, field: &str) -> Self {
        self.body.field = Some(field.to_string());
        self
    }

    /// The same error, telling the client to retry after `wait` (at least 1 s).
    pub fn retry_after(mut self, wait: std::time::Duration) -> Self {
        self.retry_after = Some(wait.as_secs_f64().ceil().max(1.0) as u64);
        self
    }

    /// The HTTP status, from the code.
    pub fn status(&self) -> StatusCode {
        self.body.code.status()
    }

    pub fn unavailable(message: impl AsRef<str>) -> Self {
        ApiError::new(ApiCode::RedisUnavailable, format!("Redis is unreachable: {}", message.as_ref()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = (self.status(), Json(ErrorBody { error: self.body })).into_response();
        if let Some(secs) = self.retry_after {
            res.headers_mut().insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        res
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.body.message)
    }
}

/// 503 `redis_unavailable`: nothing was written.
impl From<pipelab_engine::conn::ConnectError> for ApiError {
    fn from(e: pipelab_engine::conn::ConnectError) -> Self {
        ApiError::unavailable(e.to_string())
    }
}

/// Why the executor ran nothing: 503 if it could not connect, else 400
/// naming the field.
impl From<pipelab_engine::exec::ExecError> for ApiError {
    fn from(e: pipelab_engine::exec::ExecError) -> Self {
        use pipelab_engine::exec::ExecError;
        match e {
            ExecError::Connect(e) => e.into(),
            ExecError::Invalid(e) => ApiError::field(ApiCode::InvalidBatch, e.field, e.message),
            ExecError::CrossSlot(e) => ApiError::field(ApiCode::CrossSlot, e.field, e.message),
        }
    }
}

/// Why the engine ran nothing (or could not cut a batch in time), in the
/// API's words: each cap named by its flag.
impl From<pipelab_engine::engine::EngineError> for ApiError {
    fn from(e: pipelab_engine::engine::EngineError) -> Self {
        use pipelab_engine::engine::{EngineError, SessionsFull, ShareFull};
        use pipelab_engine::sandbox::SandboxError;
        let ms = |d: std::time::Duration| d.as_millis();
        match e {
            EngineError::Exec(e) => e.into(),
            EngineError::Sandbox(e @ SandboxError::AddressFull { retry_after, .. }) => ApiError::new(ApiCode::TooManyVisitors, e.to_string()).retry_after(retry_after),
            EngineError::Sandbox(SandboxError::Start(e)) => {
                tracing::error!(error = %e, "could not start a visitor's redis-server");
                ApiError::unavailable(format!("no Redis could be started for you: {e}"))
            }
            EngineError::NoVisitor => ApiError::unavailable("a sandbox request without a visitor"),
            EngineError::ShareFull { what, cap, .. } => {
                let (held, flag) = match what {
                    ShareFull::Batches => (format!("{cap} batches"), "--max-batches-per-client"),
                    ShareFull::Blocking => (format!("{cap} batches with a command that may block (BLPOP, XREAD BLOCK, WAIT…)"), "--max-blocking-per-client"),
                };
                ApiError::new(
                    ApiCode::Busy,
                    format!("this client (its token, else its address) already runs {held}, its share ({flag}), for the whole batch timeout; nothing was sent; try again when one has ended"),
                )
            }
            EngineError::ScriptCacheFull(full) => {
                let mb = |b: u64| b as f64 / (1 << 20) as f64;
                ApiError::field(
                    ApiCode::ScriptCacheFull,
                    format!("commands[{}]", full.index),
                    format!(
                        "your scripts would hold more than your Redis's {:.0} MB (they hold {:.1} MB now, a script about {} times its source); nothing was sent: SCRIPT FLUSH or FUNCTION FLUSH frees them",
                        mb(full.quota),
                        mb(full.held),
                        pipelab_engine::sandbox::scripts::HELD_PER_SOURCE_BYTE
                    ),
                )
            }
            EngineError::VisitorBatches { cap } => {
                ApiError::new(ApiCode::TooManyBatches, format!("you already run {cap} batches at once, the most one visitor may; retry when one ends"))
                    .retry_after(std::time::Duration::from_secs(1))
            }
            EngineError::SlotsBusy { slots, waited } => {
                ApiError::new(ApiCode::Busy, format!("all {slots} batch slots stayed busy for {} ms; try again later", ms(waited)))
            }
            EngineError::KillPending { waited } => ApiError::new(
                ApiCode::Busy,
                format!("Redis stayed busy running a script of a cut batch, which pipelab is killing, for {} ms; nothing was sent; try again", ms(waited)),
            ),
            EngineError::Overran { limit } => ApiError::new(
                ApiCode::BatchTimeout,
                format!(
                    "the batch ran longer than the server's limit of {} ms and could not be cut in time; commands already written may have run (their outcome is unknown)",
                    ms(limit)
                ),
            ),
            EngineError::SessionsFull(full) => {
                let why = match full {
                    SessionsFull::Server { max } => format!("{max} sessions are open, the server's limit (--max-sessions)"),
                    SessionsFull::Client { open } => format!("this client (its token, else its address) has {open} sessions open, its share (--max-sessions-per-client)"),
                    SessionsFull::Visitor { cap } => format!("you have {cap} sessions open, the most one visitor may"),
                };
                ApiError::new(ApiCode::TooManySessions, format!("{why}; close one (DELETE /api/v1/sessions/ID) or wait for one to expire"))
            }
            EngineError::SessionNotFound { id } => ApiError::new(
                ApiCode::SessionNotFound,
                format!("session: no open session {id:?} (never opened, closed, or idle past --session-idle-ms)"),
            )
            .at("session"),
            e @ EngineError::OtherNode { .. } => ApiError::new(ApiCode::OtherNode, e.to_string()).at("session"),
            EngineError::SessionBusy => {
                ApiError::new(ApiCode::SessionBusy, "session: another batch is running on this session; send the next one after its answer").at("session")
            }
            EngineError::SessionLost { why } => ApiError::new(
                ApiCode::SessionLost,
                format!("session: its Redis connection is gone ({why}); its WATCH and MULTI state went with it, so it is closed and not reopened: open a new session"),
            )
            .at("session"),
            EngineError::Unanswered { why } => ApiError::unavailable(why),
        }
    }
}

/// The code of an experiment's input problem (the same word).
impl From<pipelab_engine::lab::Problem> for ApiCode {
    fn from(p: pipelab_engine::lab::Problem) -> Self {
        use pipelab_engine::lab::Problem;
        match p {
            Problem::EmptyArgv => ApiCode::EmptyArgv,
            Problem::InvalidField => ApiCode::InvalidField,
            Problem::InvalidBatchSize => ApiCode::InvalidBatchSize,
            Problem::InvalidCommand => ApiCode::InvalidCommand,
        }
    }
}

/// 400 naming the field, with the experiment's problem as the code.
impl From<pipelab_engine::lab::InputError> for ApiError {
    fn from(e: pipelab_engine::lab::InputError) -> Self {
        ApiError::field(e.problem.into(), e.field, e.message)
    }
}

impl From<pipelab_engine::lab::LabError<ApiError>> for ApiError {
    fn from(e: pipelab_engine::lab::LabError<ApiError>) -> Self {
        match e {
            pipelab_engine::lab::LabError::Input(e) => e.into(),
            pipelab_engine::lab::LabError::Unavailable(m) => ApiError::unavailable(m),
            pipelab_engine::lab::LabError::Run(e) => e,
            // The API never stops an experiment but by dropping it.
            pipelab_engine::lab::LabError::Interrupted(_) => {
                ApiError::new(ApiCode::ShuttingDown, "the experiment was stopped")
            }
        }
    }
}

/// The error responses of the endpoints that run batches, for the OpenAPI
/// document (`responses(..., BatchErrors)`).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // describes responses, never built
pub enum BatchErrors {
    /// Bad request (the message names the field)
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// A page of another site (`Origin`, `Sec-Fetch-Site`): see `http::guard`
    #[response(status = 403)]
    ForbiddenOrigin(ErrorBody),
    /// The body stopped arriving for the batch timeout
    #[response(status = 408)]
    BodyTimeout(ErrorBody),
    /// Over a size limit (body, commands, argument), or an answer larger than `--max-response-memory` (`answer_too_large`)
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// The request URI is over 8 KiB
    #[response(status = 414)]
    UriTooLong(ErrorBody),
    /// The body is not sent as `application/json`
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// A `Host` that is not a name of this server (DNS rebinding): see `http::guard`; or a session's id another node made (`other_node`, naming the node)
    #[response(status = 421)]
    ForbiddenHost(ErrorBody),
    /// The request headers are over 32 KiB
    #[response(status = 431)]
    HeadersTooLarge(ErrorBody),
    /// Redis unreachable, all batch slots busy, or the server's memory for answers spent (`busy`, with `Retry-After`)
    #[response(status = 503)]
    Unavailable(ErrorBody),
    /// A run could not be cut at the batch timeout (a batch reaching it is normally cut and reported: `unknown` / `not_sent` results and `connection_error`)
    #[response(status = 504)]
    Timeout(ErrorBody),
}

/// Adds each code's HTTP status to the `ApiCode` schema's description in
/// the OpenAPI document, from [`ApiCode::status`], so the listing cannot
/// drift from what the server answers.
pub struct CodeStatuses;

impl utoipa::Modify for CodeStatuses {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{schema::Schema, RefOr};
        let Some(RefOr::T(Schema::Object(schema))) =
            doc.components.as_mut().and_then(|c| c.schemas.get_mut("ApiCode"))
        else {
            return;
        };
        let mut by_status: Vec<(StatusCode, Vec<String>)> = Vec::new();
        for code in ApiCode::ALL {
            let name = format!("`{}`", code.name());
            match by_status.iter_mut().find(|(s, _)| *s == code.status()) {
                Some((_, names)) => names.push(name),
                None => by_status.push((code.status(), vec![name])),
            }
        }
        let listing: Vec<String> =
            by_status.into_iter().map(|(status, names)| format!("{}: {}", status.as_u16(), names.join(", "))).collect();
        let intro = schema.description.take().unwrap_or_default();
        schema.description = Some(format!("{intro}\n\nBy HTTP status: {}.", listing.join("; ")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use utoipa::PartialSchema;

    /// `ALL` holds every variant once: the same names as the derived schema's enum.
    #[test]
    fn all_lists_every_code_once() {
        let schema = serde_json::to_value(ApiCode::schema()).unwrap();
        let listed: Vec<String> = ApiCode::ALL.iter().map(|c| c.name()).collect();
        let derived: Vec<String> =
            schema["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        assert_eq!(listed, derived);
        for code in ApiCode::ALL {
            assert_eq!(ApiCode::from_name(&code.name()), Some(code));
        }
        assert_eq!(ApiCode::from_name("no_such_code"), None);
    }

    /// The wire names of today's clients.
    #[test]
    fn wire_names_and_statuses() {
        for (code, name, status) in [
            (ApiCode::InvalidJson, "invalid_json", 400),
            (ApiCode::InvalidRtt, "invalid_rtt", 400),
            (ApiCode::InvalidBase64, "invalid_base64", 400),
            (ApiCode::BodyTimeout, "body_timeout", 408),
            (ApiCode::TooManyCommands, "too_many_commands", 413),
            (ApiCode::ShuttingDown, "shutting_down", 503),
            (ApiCode::RedisUnavailable, "redis_unavailable", 503),
            (ApiCode::BatchTimeout, "batch_timeout", 504),
            (ApiCode::TooManyWatchKeys, "too_many_watch_keys", 400),
            (ApiCode::ForbiddenOrigin, "forbidden_origin", 403),
            (ApiCode::UriTooLong, "uri_too_long", 414),
            (ApiCode::UnsupportedMediaType, "unsupported_media_type", 415),
            (ApiCode::ForbiddenHost, "forbidden_host", 421),
            (ApiCode::OtherNode, "other_node", 421),
            (ApiCode::HeadersTooLarge, "headers_too_large", 431),
            (ApiCode::RedisBusy, "redis_busy", 503),
            (ApiCode::SessionNotFound, "session_not_found", 404),
            (ApiCode::SessionLost, "session_lost", 409),
            (ApiCode::SessionBusy, "session_busy", 409),
            (ApiCode::TooManySessions, "too_many_sessions", 503),
        ] {
            assert_eq!((code.name().as_str(), code.status().as_u16()), (name, status));
        }
    }
}
