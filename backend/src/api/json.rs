//! A request body's JSON: [`parse_json`], whose errors name the field and
//! the line and column; what the fast path that reads `commands` as the
//! body arrives needs of a request type ([`HasCommands`]); and how much of a
//! declared length is reserved up front ([`RESERVE_MAX`]). Below the
//! readers of a body (`extract`, `incremental`) and the checks (`validate`).

use serde::de::DeserializeOwned;

use super::arg::JsonCommands;
use pipelab_http::error::{ApiCode, ApiError};

/// A request type with a `commands` member (`Option<JsonCommands>`).
pub trait HasCommands: DeserializeOwned {
    /// Puts the commands read by the fast path in place of the `null` the
    /// rest of the body was parsed with.
    fn set_commands(&mut self, commands: JsonCommands);
}

/// Most bytes reserved up front from a declared length: a client may
/// declare a large body and send it slowly, or never.
pub const RESERVE_MAX: usize = 8 * 1024 * 1024;

/// Deserialize `bytes` as `T`. Syntax errors → `invalid_json` with line and
/// column; type errors, unknown and missing fields → `invalid_field` naming
/// the JSON path.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::field(
            ApiCode::InvalidJson,
            "request body",
            "empty; expected a JSON object",
        ));
    }
    // serde would read a JSON array as a struct's fields in order, giving
    // baffling paths like `[0][0]`; the API only takes objects.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if let Some(b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n') = first {
        return Err(ApiError::field(
            ApiCode::InvalidField,
            "request body",
            "must be a JSON object ({...})",
        ));
    }
    // Fast path: plain serde_json (tracking the path costs a third more on a
    // 100k-command batch). Only a failed parse is redone with the path.
    if let Ok(value) = serde_json::from_slice::<T>(bytes) {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => value,
        Err(err) => {
            let path = err.path().to_string();
            let inner = err.into_inner();
            return Err(match inner.classify() {
                serde_json::error::Category::Data => {
                    let message = strip_position(&inner);
                    // serde names a duplicated member in its message only,
                    // at the path of the object holding it.
                    let member = message.strip_prefix("duplicate field `").and_then(|rest| rest.split('`').next());
                    let field = match (path.as_str(), member) {
                        (".", Some(name)) => name.to_string(),
                        (".", None) => "request body".to_string(),
                        (_, Some(name)) => format!("{path}.{name}"),
                        (_, None) => path,
                    };
                    match super::arg::untag(&message) {
                        Some((code, suffix, msg)) => {
                            ApiError::field(code, format!("{field}{suffix}"), msg)
                        }
                        None => ApiError::field(ApiCode::InvalidField, field, message),
                    }
                }
                _ => ApiError::field(
                    ApiCode::InvalidJson,
                    "request body",
                    format!("malformed JSON: {inner}"),
                ),
            });
        }
    };
    de.end().map_err(|e| {
        ApiError::field(
            ApiCode::InvalidJson,
            "request body",
            format!("malformed JSON: {e}"),
        )
    })?;
    Ok(value)
}

/// serde_json appends " at line L column C" to data errors; the field path
/// says more than the position there, so drop it.
fn strip_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    // serde names Rust types; the API speaks JSON.
    text.replace("expected f64", "expected a number")
        .replace("floating point `", "number `")
        .replace("expected i64", "expected an integer")
        .replace("expected a boolean", "expected true or false")
}
