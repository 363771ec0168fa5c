//! Security headers on every response: a `Content-Security-Policy` that
//! lets the page run only its own scripts and its wasm module (so that an
//! injected script cannot call the API with the page's origin), and on a
//! data answer (JSON, NDJSON, an event stream, Upstash's raw bytes: the
//! API's and Upstash's) one that lets it load nothing at all,
//! `X-Content-Type-Options: nosniff` (a reply served as JSON or text is
//! never run as script or HTML), and no framing by other sites
//! (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for older
//! browsers), against clickjacking of the playground's Run button.

use axum::http::{header, HeaderName, HeaderValue};
use axum::response::Response;

/// The page's policy. `'wasm-unsafe-eval'` lets it compile its wasm module
/// (`WebAssembly.instantiate`) without allowing `eval`; `style-src
/// 'unsafe-inline'`: the editor (CodeMirror) injects its styles at run
/// time; `data:` for the images and fonts Vite inlines.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; \
    connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The policy of a data answer ([`DATA_TYPES`]), never a document: nothing
/// may load from it and nothing may frame it (as OWASP's REST Security
/// Cheat Sheet advises for APIs). Stricter than the page's, and 230 bytes
/// shorter on every API response.
pub const DATA_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; frame-ancestors 'none'";

/// The media types the API and the Upstash surface answer with (a
/// `Content-Type` starting with one of them): the API's JSON and live
/// batches' NDJSON, Upstash's event streams and `application/octet-stream`
/// (its RESP2 format). Anything else (the page's files: HTML, scripts,
/// the wasm module, which a worker would take its policy from) keeps the
/// page's policy.
pub const DATA_TYPES: [&[u8]; 4] = [b"application/json", b"application/x-ndjson", b"text/event-stream", b"application/octet-stream"];

/// Adds the three headers to `res` (in `super::gate`, on every response,
/// refusals included): the data policy on an answer of [`DATA_TYPES`], the
/// page's on any other; a header a handler set itself is kept.
pub fn set(res: &mut Response) {
    let headers = res.headers_mut();
    // Values made once: `from_static` outside a const checks every byte
    // (the policy's 250) on each call.
    const PAGE: HeaderValue = HeaderValue::from_static(CONTENT_SECURITY_POLICY);
    const DATA: HeaderValue = HeaderValue::from_static(DATA_CONTENT_SECURITY_POLICY);
    const OTHERS: [(HeaderName, HeaderValue); 2] = [
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
    ];
    let data = headers.get(header::CONTENT_TYPE).is_some_and(|t| DATA_TYPES.iter().any(|d| t.as_bytes().starts_with(d)));
    headers.entry(header::CONTENT_SECURITY_POLICY).or_insert(if data { DATA } else { PAGE });
    for (name, value) in OTHERS {
        headers.entry(name).or_insert(value);
    }
}
