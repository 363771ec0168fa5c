//! The web playground's built files at `/` (from `--web-dir`, default
//! `web/dist`), or a page saying how to build them when they are missing.
//!
//! The check is made per request, so building the playground while the
//! server runs needs no restart.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use tower::ServiceExt;
use tower_http::services::{ServeDir, ServeFile};

use super::AppState;

pub async fn serve(State(state): State<AppState>, req: Request) -> Response {
    let index = state.web_dir.join("index.html");
    if !index.is_file() {
        return (StatusCode::NOT_FOUND, Html(missing_page(&state.web_dir.display().to_string())))
            .into_response();
    }
    // Unknown paths get index.html, so client-side routes survive a reload.
    let service = ServeDir::new(&state.web_dir).fallback(ServeFile::new(index));
    match service.oneshot(req).await {
        Ok(res) => res.into_response(),
        Err(never) => match never {},
    }
}

fn missing_page(dir: &str) -> String {
    let dir = html_escape(dir);
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>pipelab: playground not built</title></head>\
<body style=\"font-family: sans-serif; max-width: 42em; margin: 3em auto\">\
<h1>The web playground is not built</h1>\
<p>pipelab serves the playground's files from <code>{dir}</code>, and there is no <code>index.html</code> there.</p>\
<p>Build it from the repository root:</p><pre>cd web &amp;&amp; npm ci &amp;&amp; npm run build</pre>\
<p>or point the server at a built copy with <code>--web-dir DIR</code> (or <code>PIPELAB_WEB_DIR</code>).</p>\
<p>The REST API works without it: see <a href=\"/api/v1/openapi.json\">/api/v1/openapi.json</a> \
and <a href=\"/api/v1/info\">/api/v1/info</a>.</p></body></html>"
    )
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
