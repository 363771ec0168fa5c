//! The one error shape of the API (docs/api.md#errors):
//! `{"error": {"code": "...", "message": "...", "field": "..."}}` with a 4xx
//! status for bad requests and 503 when Redis cannot be reached.
//!
//! `code` is stable and meant for programs; `message` is for people and
//! always names the offending field (and line/column for `text`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

/// An API error: HTTP status plus the JSON body.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub body: ErrorDetail,
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
    /// Stable machine-readable code. 400: `invalid_json`, `invalid_body`,
    /// `invalid_field`, `missing_commands`, `conflicting_fields`,
    /// `empty_batch`, `empty_argv`, `unknown_mode`, `invalid_base64`,
    /// `invalid_argument`, `parse_error`, `invalid_batch_size`, `invalid_rtt`,
    /// `refused_command`, `invalid_batch`, `invalid_command` (sweep: Redis
    /// rejects the command). 404: `not_found`. 405: `method_not_allowed`.
    /// 408: `body_timeout` (the body stopped arriving for the batch timeout).
    /// 413: `body_too_large`,
    /// `too_many_commands`, `argument_too_large`. 503: `redis_unavailable`,
    /// `busy`, `shutting_down` (the server stopped past its grace period
    /// while the request was still being read or run). 504: `batch_timeout` (a batch that could not be cut at its
    /// deadline; a batch reaching the timeout is normally cut and reported).
    pub code: &'static str,
    /// Human-readable explanation, starting with the field it concerns.
    pub message: String,
    /// Where in the request the fault is, when there is one place: a JSON
    /// path (`commands[0][2]`, `batch_size`), `text, line N` for a command
    /// given as text, or `request body` for the body as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            body: ErrorDetail {
                code,
                message: message.into(),
                field: None,
            },
        }
    }

    /// 400 about one field; the message is prefixed with the field's name.
    pub fn field(code: &'static str, field: impl Into<String>, message: impl AsRef<str>) -> Self {
        let field = field.into();
        let message = format!("{field}: {}", message.as_ref());
        ApiError {
            status: StatusCode::BAD_REQUEST,
            body: ErrorDetail {
                code,
                message,
                field: Some(field),
            },
        }
    }

    /// The stable machine-readable code (`busy`, `redis_unavailable`, ...).
    pub fn code(&self) -> &'static str {
        self.body.code
    }

    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    pub fn unavailable(message: impl AsRef<str>) -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "redis_unavailable",
            format!("Redis is unreachable: {}", message.as_ref()),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(ErrorBody { error: self.body })).into_response()
    }
}
