//! Security headers on every response: a `Content-Security-Policy` that
//! lets the page run only its own scripts and its wasm module (so that an
//! injected script cannot call the API with the page's origin),
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

/// Adds the three headers to `res` (in `super::gate`, on every response,
/// refusals included); a header a handler set itself is kept.
pub fn set(res: &mut Response) {
    let headers = res.headers_mut();
    // Values made once: `from_static` outside a const checks every byte
    // (the policy's 250) on each call.
    const ALL: [(HeaderName, HeaderValue); 3] = [
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
    ];
    for (name, value) in ALL {
        headers.entry(name).or_insert(value);
    }
}
