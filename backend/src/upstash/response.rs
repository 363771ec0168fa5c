//! Upstash's response shapes and encodings.
//!
//! - An entry is `{"result": …}` or `{"error": "…"}`, never both (the JS
//!   SDK's tests check that the other member is absent).
//! - A result is reply JSON in RESP2 shapes: bulk and simple strings as JSON
//!   strings (invalid UTF-8 becomes U+FFFD), integers as numbers, nulls as
//!   `null`, arrays as arrays (HGETALL flat, doubles as the strings Redis
//!   sends); RESP3-only types, should one appear, as their RESP2 forms.
//!   The Python SDK accepts only strings, integers, null and lists.
//! - `Upstash-Encoding: base64`: every string of a result base64-encoded,
//!   recursively in arrays, except a top-level simple string `OK`;
//!   integers, nulls and errors as they are (Upstash's REST API docs,
//!   "base64"; the SDKs' `decode`).
//! - `Upstash-Response-Format: resp2`: the replies' RESP2 bytes, one after
//!   the other, as `application/octet-stream`.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use pipelab_engine::exec::{CommandResult, Status};

/// How results are written, from the request's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Format {
    /// `Upstash-Encoding: base64`.
    pub base64: bool,
    /// `Upstash-Response-Format: resp2`.
    pub resp2: bool,
}

impl Format {
    /// The request's format; `resp2` with base64 is refused (400).
    pub fn of(headers: &HeaderMap) -> Result<Format, UpstashError> {
        // Names made once: looked up by `&str`, each was parsed and hashed per request.
        const ENCODING: HeaderName = HeaderName::from_static("upstash-encoding");
        const RESPONSE_FORMAT: HeaderName = HeaderName::from_static("upstash-response-format");
        let is = |name: &HeaderName, value: &str| {
            headers.get(name).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim().eq_ignore_ascii_case(value))
        };
        let format = Format { base64: is(&ENCODING, "base64"), resp2: is(&RESPONSE_FORMAT, "resp2") };
        if format.base64 && format.resp2 {
            return Err(UpstashError::bad_request(
                "ERR Upstash-Response-Format: resp2 cannot be combined with Upstash-Encoding: base64 (RESP2 bytes need no encoding)",
            ));
        }
        Ok(format)
    }
}

/// An answer that is one `{"error": "…"}` with its HTTP status.
#[derive(Debug, Clone)]
pub struct UpstashError {
    pub status: StatusCode,
    pub message: String,
}

impl UpstashError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        UpstashError { status, message: message.into() }
    }

    /// 400: the command failed, cannot be parsed or is not allowed.
    pub fn bad_request(message: impl Into<String>) -> Self {
        UpstashError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 405: Upstash allows HEAD, GET, POST and PUT only.
    pub fn method_not_allowed(method: &axum::http::Method) -> Self {
        UpstashError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("ERR method {method} is not allowed (use HEAD, GET, POST or PUT)"),
        )
    }

    /// 401 `{"error": "Unauthorized"}`, as Upstash answers.
    pub fn unauthorized() -> Self {
        UpstashError::new(StatusCode::UNAUTHORIZED, "Unauthorized")
    }
}

impl From<pipelab_http::error::ApiError> for UpstashError {
    /// The API's checks (limits, refusals, Redis unreachable) in Upstash's
    /// wording: `ERR` and the API's message, with the API's status.
    fn from(e: pipelab_http::error::ApiError) -> Self {
        use pipelab_http::error::ApiCode;
        let message = match e.code() {
            ApiCode::BodyTooLarge => "ERR max request size exceeded".to_string(),
            _ => format!("ERR {}", e.body.message),
        };
        UpstashError::new(e.status(), message)
    }
}

impl IntoResponse for UpstashError {
    fn into_response(self) -> Response {
        let mut body = Vec::with_capacity(self.message.len() + 16);
        body.extend_from_slice(b"{\"error\":");
        write_str(&mut body, self.message.as_bytes());
        body.push(b'}');
        let mut res = (self.status, json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            pipelab_http::auth::challenge(&mut res);
        }
        res
    }
}

/// A JSON body with its content type.
pub fn json(body: Vec<u8>) -> Response {
    let mut res = Body::from(body).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

/// RESP2 bytes with their content type.
pub fn octets(body: Vec<u8>) -> Response {
    let mut res = Body::from(body).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    res
}

/// Why a command has no reply, in the words of its entry's `error`.
/// `connection_error` is the report's reason, when it has one.
pub fn no_reply(status: Status, connection_error: Option<&str>) -> String {
    let why = connection_error.map(|e| format!(" ({e})")).unwrap_or_default();
    match status {
        Status::Unknown => format!(
            "ERR outcome unknown: the command was sent but the connection failed before its reply{why}; \
             it may or may not have run"
        ),
        _ => format!("ERR not sent: the batch stopped before this command{why}; it did not run"),
    }
}

/// One command's outcome: its reply, or the error text of its entry.
pub enum Outcome<'a> {
    Reply(&'a resp::Value),
    Error(String),
}

impl<'a> Outcome<'a> {
    pub fn of(result: &'a CommandResult, connection_error: Option<&str>) -> Outcome<'a> {
        match (&result.reply, result.status) {
            (Some(v), Status::Error) => Outcome::Error(error_text(v)),
            (Some(v), Status::Ok) => Outcome::Reply(v),
            _ => Outcome::Error(no_reply(result.status, connection_error)),
        }
    }
}

/// The text of an error reply (`WRONGTYPE Operation …`), or of any reply
/// standing for an error (EXEC's null after a conflict).
pub fn error_text(v: &resp::Value) -> String {
    match v.error_message() {
        Some(m) => String::from_utf8_lossy(m).into_owned(),
        None => pipelab_engine::conn::reply_text(v),
    }
}

/// Appends `{"result": …}` or `{"error": "…"}`.
pub fn write_entry(out: &mut Vec<u8>, outcome: &Outcome<'_>, format: Format) {
    match outcome {
        Outcome::Reply(v) => {
            out.extend_from_slice(b"{\"result\":");
            write_value(out, v, format.base64, true);
        }
        Outcome::Error(e) => {
            out.extend_from_slice(b"{\"error\":");
            write_str(out, e.as_bytes());
        }
    }
    out.push(b'}');
}

/// Appends the outcome's RESP2 bytes (an error as `-ERR …`).
pub fn write_resp2(out: &mut Vec<u8>, outcome: &Outcome<'_>) {
    match outcome {
        Outcome::Reply(v) => as_resp2(v).encode(out),
        Outcome::Error(e) => {
            let line: Vec<u8> = e.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect();
            resp::Value::Error(line).encode(out)
        }
    }
}

/// `v` in RESP2 types (the executor speaks RESP2 here, so this is `v`
/// itself unless a RESP3 type slipped in).
fn as_resp2(v: &resp::Value) -> resp::Value {
    use resp::Value::*;
    match v {
        Null => NullBulk,
        Double(d) => Bulk(format_double(*d).into_bytes()),
        Boolean(b) => Integer(*b as i64),
        BlobError(e) => Error(e.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }).collect()),
        Verbatim { text, .. } => Bulk(text.clone()),
        BigNumber(n) => Bulk(n.clone()),
        Map(pairs) => Array(pairs.iter().flat_map(|(k, v)| [as_resp2(k), as_resp2(v)]).collect()),
        Set(items) | Push(items) | Array(items) => Array(items.iter().map(as_resp2).collect()),
        Attributed { value, .. } => as_resp2(value),
        other => other.clone(),
    }
}

/// A double as Redis writes it in RESP2 (`inf`, `-inf`, `nan`, else the
/// shortest form that reads back the same).
fn format_double(d: f64) -> String {
    if d.is_nan() {
        "nan".into()
    } else if d.is_infinite() {
        if d > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{d}")
    }
}

/// Appends `v` as a result: RESP2 shapes, strings base64-encoded if asked
/// (all but a top-level simple `OK`).
pub fn write_value(out: &mut Vec<u8>, v: &resp::Value, base64: bool, top: bool) {
    use resp::Value::*;
    let string = |out: &mut Vec<u8>, bytes: &[u8]| {
        if base64 {
            out.push(b'"');
            let start = out.len();
            out.resize(start + base64::encoded_len(bytes.len(), true).expect("fits in memory"), 0);
            let n = BASE64.encode_slice(bytes, &mut out[start..]).expect("sized above");
            out.truncate(start + n);
            out.push(b'"');
        } else {
            write_str(out, bytes);
        }
    };
    match v {
        Simple(s) if top && s == b"OK" => out.extend_from_slice(b"\"OK\""),
        Simple(s) | Bulk(s) | BigNumber(s) | Verbatim { text: s, .. } => string(out, s),
        // An error inside an array (EXEC's, a script's table): its text.
        Error(e) | BlobError(e) => string(out, e),
        Integer(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        Boolean(b) => out.push(if *b { b'1' } else { b'0' }),
        Double(d) => string(out, format_double(*d).as_bytes()),
        Null | NullBulk | NullArray => out.extend_from_slice(b"null"),
        Array(items) | Set(items) | Push(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item, base64, false);
            }
            out.push(b']');
        }
        Map(pairs) => {
            out.push(b'[');
            for (i, (k, val)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, k, base64, false);
                out.push(b',');
                write_value(out, val, base64, false);
            }
            out.push(b']');
        }
        Attributed { value, .. } => write_value(out, value, base64, top),
    }
}

/// Appends `bytes` as a JSON string (invalid UTF-8 as U+FFFD).
pub fn write_str(out: &mut Vec<u8>, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    serde_json::to_writer(&mut *out, text.as_ref()).expect("writing to a Vec cannot fail");
}
