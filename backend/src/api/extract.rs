//! JSON request bodies with errors that name the field.
//!
//! axum's own `Json` extractor answers bad input with plain text and no
//! field path; this one answers with the API's error shape, naming the JSON
//! path (`commands[0][2]`, `batch_size`) through `serde_path_to_error`.

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body of type `T`; rejections are [`ApiError`]s (400 or 413).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        // The size limit itself is enforced by RequestBodyLimitLayer (see
        // api::router); here it surfaces as a read error.
        let bytes = match axum::body::to_bytes(req.into_body(), usize::MAX).await {
            Ok(bytes) => bytes,
            Err(err) if is_length_limit(&err) => return Err(body_too_large()),
            Err(err) => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_body",
                    format!("request body: could not be read: {err}"),
                ))
            }
        };
        parse_json(&bytes).map(ApiJson)
    }
}

/// The 413 answer, shared with the body-limit layer's rewrite.
pub fn body_too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        "request body: larger than the server's limit (see GET /api/v1/info, limits.max_body_bytes)",
    )
}

fn is_length_limit(err: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// Deserialize `bytes` as `T`. Syntax errors → `invalid_json` with line and
/// column; type errors, unknown and missing fields → `invalid_field` naming
/// the JSON path.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::field("invalid_json", "request body", "empty; expected a JSON object"));
    }
    // serde would read a JSON array as a struct's fields in order, giving
    // baffling paths like `[0][0]`; the API only takes objects.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if let Some(b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n') = first {
        return Err(ApiError::field("invalid_field", "request body", "must be a JSON object ({...})"));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => value,
        Err(err) => {
            let path = err.path().to_string();
            let inner = err.into_inner();
            return Err(match inner.classify() {
                serde_json::error::Category::Data => {
                    let field = if path == "." { "request body".to_string() } else { path };
                    ApiError::field("invalid_field", field, strip_position(&inner))
                }
                _ => ApiError::field("invalid_json", "request body", format!("malformed JSON: {inner}")),
            });
        }
    };
    de.end().map_err(|e| {
        ApiError::field("invalid_json", "request body", format!("malformed JSON: {e}"))
    })?;
    Ok(value)
}

/// serde_json appends " at line L column C" to data errors; the field path
/// says more than the position there, so drop it.
fn strip_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}
