//! The page's files at `/` (the playground's `index.html`, the doctor's
//! `doctor.html` and their assets): those built into the binary (web/dist
//! as it was when pipelab was compiled, so that an installed `pipelab
//! serve` shows its page from any directory), or those of `--web-dir`,
//! which overrides them and is read per request (building the page while
//! the server runs needs no restart). With neither, a page that says how
//! to build it.
//!
//! Vite's hashed assets (`assets/main-BuCm-6hl.js`) are cached for a year
//! as immutable; everything else is revalidated (`no-cache`) with an
//! `ETag`, so a new build shows at the next load. A path with no file is
//! the page (client-side routes survive a reload), except an API-ish path
//! (`/api/…`, `*.json`, `*.yaml`) or one naming a missing file (`*.js`):
//! a 404, never the page's HTML with a 200.

use std::borrow::Cow;
use std::path::PathBuf;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiCode, ApiError};

/// web/dist when pipelab was compiled (build.rs rebuilds it when that
/// changes); empty when the page had not been built then.
#[derive(rust_embed::Embed)]
#[folder = "../web/dist"]
#[allow_missing = true]
struct Built;

/// Where the page's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    /// Built into the binary.
    Embedded,
    /// A directory (`--web-dir` / `PIPELAB_WEB_DIR`), read per request.
    Dir(PathBuf),
}

impl From<PathBuf> for Page {
    fn from(dir: PathBuf) -> Page {
        Page::Dir(dir)
    }
}

/// One file of the page.
struct File {
    bytes: Cow<'static, [u8]>,
    /// Hex of the start of its SHA-256.
    etag: String,
}

/// Why there is no page to serve: the index file is missing.
#[derive(Debug)]
pub struct NotBuilt;

impl Page {
    /// `--web-dir` if given, else the page built into the binary.
    pub fn from_flag(dir: Option<PathBuf>) -> Page {
        dir.map_or(Page::Embedded, Page::Dir)
    }

    /// For the start-up log: where the page comes from.
    pub fn describe(&self) -> String {
        match self {
            Page::Embedded if Built::get("index.html").is_some() => format!("built in ({} files)", Built::iter().filter(|p| visible(p)).count()),
            Page::Embedded => "not built in: run scripts/build-web.sh, then build pipelab again".into(),
            Page::Dir(dir) => dir.display().to_string(),
        }
    }

    /// Whether `name` (a path's first segment) names a file or folder of
    /// the page (the Upstash surface under the root leaves those to it).
    pub fn has(&self, name: &str) -> bool {
        if !visible(name) || name.contains(['/', '\\']) {
            return false;
        }
        match self {
            Page::Embedded => Built::iter().any(|p| p == name || p.strip_prefix(name).is_some_and(|rest| rest.starts_with('/'))),
            Page::Dir(dir) => dir.join(name).exists(),
        }
    }

    async fn get(&self, rel: &str) -> Option<File> {
        match self {
            Page::Embedded => Built::get(rel).map(|f| File { bytes: f.data, etag: hex(&f.metadata.sha256_hash()[..12]) }),
            Page::Dir(dir) => {
                let path = dir.join(rel);
                // A folder is no file (and read would fail on it anyway).
                if !tokio::fs::metadata(&path).await.ok()?.is_file() {
                    return None;
                }
                let bytes = tokio::fs::read(&path).await.ok()?;
                let etag = hex(&ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref()[..12]);
                Some(File { bytes: Cow::Owned(bytes), etag })
            }
        }
    }

    /// The answer to `req` (a GET or HEAD of the page's files), with
    /// `index` (`index.html`, `doctor.html`) at `/`, at `/index.html` and
    /// for client-side routes; `Err` when `index` is not there.
    pub async fn respond(&self, req: Request, index: &str) -> Result<Response, NotBuilt> {
        if !matches!(*req.method(), Method::GET | Method::HEAD) {
            let mut res = (StatusCode::METHOD_NOT_ALLOWED, "the page's files answer GET and HEAD only\n").into_response();
            res.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Ok(res);
        }
        let path = req.uri().path();
        let Some(rel) = relative(path) else {
            return Ok(not_found(path));
        };
        if !(rel.is_empty() || rel == "index.html" || rel == index) {
            if let Some(f) = self.get(&rel).await {
                return Ok(file(&rel, f, req.headers()));
            }
            if api_ish(&rel) || rel.rsplit('/').next().is_some_and(|last| last.contains('.')) {
                return Ok(not_found(path));
            }
        }
        match self.get(index).await {
            Some(f) => Ok(file(index, f, req.headers())),
            None => Err(NotBuilt),
        }
    }
}

/// A name that is not hidden (build-web.sh's `.pipelab-built` stamp, any
/// dotfile) and not `.`/`..`.
fn visible(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('.') && !name.split('/').any(|s| s.starts_with('.'))
}

/// The file `path` names, relative to the page's folder ("" for `/`), or
/// `None` for a path that cannot name one (`..`, a hidden file, a NUL).
fn relative(path: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8().ok()?;
    let rel = decoded.trim_start_matches('/');
    if rel.is_empty() {
        return Some(String::new());
    }
    let rel = rel.strip_suffix('/').unwrap_or(rel);
    let ok = rel.split('/').all(|s| !s.is_empty() && !s.starts_with('.') && !s.contains(['\\', '\0']));
    ok.then(|| rel.to_string())
}

/// A path a tool or a script asks for, never a page: `/api/…` outside
/// `/api/v1` (whose routes answer for themselves), an OpenAPI or other
/// JSON/YAML document.
fn api_ish(rel: &str) -> bool {
    let first = rel.split('/').next().unwrap_or("");
    first == "api" || [".json", ".yaml", ".yml"].iter().any(|ext| rel.ends_with(ext))
}

/// 404 for a path that is no file of the page: JSON for an API-ish path
/// (pointing at the API's document), text for a missing asset.
fn not_found(path: &str) -> Response {
    let rel = path.trim_start_matches('/');
    if api_ish(rel) {
        return ApiError::new(
            ApiCode::NotFound,
            format!("no endpoint or file {path}: the API is under /api/v1, described by GET /api/v1/openapi.json"),
        )
        .into_response();
    }
    (StatusCode::NOT_FOUND, format!("no file {path} in the page (built by scripts/build-web.sh)\n")).into_response()
}

/// The media type of a file of the page, by its extension.
pub fn content_type(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "webp" => "image/webp",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Whether `rel` is one of Vite's content-hashed assets
/// (`assets/NAME-HASH.EXT`, an 8-character base64url hash): its name
/// changes with its content, so it may be cached for good.
pub fn is_hashed_asset(rel: &str) -> bool {
    let Some(name) = rel.strip_prefix("assets/") else {
        return false;
    };
    let stem = name.split_once('.').map_or(name, |(s, _)| s);
    let b = stem.as_bytes();
    b.len() > 9 && b[b.len() - 9] == b'-' && b[b.len() - 8..].iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
}

fn file(rel: &str, f: File, request: &HeaderMap) -> Response {
    let etag = format!("\"{}\"", f.etag);
    let cache = if is_hashed_asset(rel) { "public, max-age=31536000, immutable" } else { "no-cache" };
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').map(str::trim).any(|t| t == "*" || t == etag || t.strip_prefix("W/") == Some(etag.as_str())));
    let (status, body) = if fresh {
        (StatusCode::NOT_MODIFIED, Body::empty())
    } else {
        let body = match f.bytes {
            Cow::Borrowed(b) => Body::from(b),
            Cow::Owned(v) => Body::from(v),
        };
        (StatusCode::OK, body)
    };
    let mut res = Response::new(body);
    *res.status_mut() = status;
    let h = res.headers_mut();
    if !fresh {
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(rel)));
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    res
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The page saying how to build the page, for a `Page` with no `index.html`.
pub fn missing_page(page: &Page) -> String {
    let (where_, how) = match page {
        Page::Embedded => (
            "This pipelab was compiled before its page was built, so it carries none.".to_string(),
            "<p>Build the page, then pipelab again, from the repository root:</p>\
<pre>scripts/build-web.sh   # the wasm module, then npm ci &amp;&amp; npm run build in web/\n\
scripts/build.sh       # or: cargo build --release -p pipelab, cargo install --path cli</pre>\
<p>or point the server at a built copy with <code>--web-dir DIR</code> (or <code>PIPELAB_WEB_DIR</code>).</p>"
                .to_string(),
        ),
        Page::Dir(dir) => (
            format!(
                "pipelab serves the page's files from <code>{}</code> (<code>--web-dir</code>), and there is no <code>index.html</code> there.",
                html_escape(&dir.display().to_string())
            ),
            "<p>Build it from the repository root with <code>scripts/build-web.sh</code> (the wasm module, then \
<code>npm ci &amp;&amp; npm run build</code> in web/), or point <code>--web-dir</code> at a built copy; \
without <code>--web-dir</code>, pipelab serves the page built into it.</p>"
                .to_string(),
        ),
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>pipelab: page not built</title></head>\
<body style=\"font-family: sans-serif; max-width: 42em; margin: 3em auto\">\
<h1>Page not built: run scripts/build-web.sh</h1><p>{where_}</p>{how}\
<p>The REST API works without it: see <a href=\"/api/v1/openapi.json\">/api/v1/openapi.json</a> \
and <a href=\"/api/v1/info\">/api/v1/info</a>.</p></body></html>"
    )
}

/// The doctor's plain-text 404 when `page` has no `doctor.html`.
pub fn doctor_not_built(page: &Page) -> String {
    match page {
        Page::Embedded => "pipelab doctor: this pipelab was compiled before its page was built (no doctor.html in it): \
run scripts/build-web.sh, then build pipelab again (scripts/build.sh), or point --web-dir at a built web/dist\n"
            .into(),
        Page::Dir(dir) => format!(
            "pipelab doctor: no doctor.html in {} (--web-dir): build the page with scripts/build-web.sh, or point --web-dir at a built web/dist\n",
            dir.display()
        ),
    }
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_assets_are_vites_names_only() {
        for (rel, hashed) in [
            ("assets/main-BuCm-6hl.js", true),
            ("assets/pipelab_wasm_bg-BCsMXjFu.wasm", true),
            ("assets/views-5yrz-hMY.css", true),
            ("assets/app.js", false),
            ("index.html", false),
            ("main-BuCm-6hl.js", false),
        ] {
            assert_eq!(is_hashed_asset(rel), hashed, "{rel}");
        }
    }

    #[test]
    fn paths_that_cannot_name_a_file_are_refused() {
        assert_eq!(relative("/").as_deref(), Some(""));
        assert_eq!(relative("/assets/a.js").as_deref(), Some("assets/a.js"));
        assert_eq!(relative("/lessons/3/").as_deref(), Some("lessons/3"));
        for bad in ["/../etc/passwd", "/assets/%2e%2e/x", "/.pipelab-built", "/a//b", "/a%00b", "/a\\b"] {
            assert_eq!(relative(bad), None, "{bad}");
        }
        assert_eq!(content_type("assets/x.wasm"), "application/wasm");
        assert_eq!(content_type("assets/x.JS"), "text/javascript; charset=utf-8");
    }

    #[test]
    fn a_binary_built_before_its_page_says_how_to_build_it() {
        let page = missing_page(&Page::Embedded);
        assert!(page.contains("Page not built: run scripts/build-web.sh") && page.contains("cargo install --path cli") && page.contains("--web-dir"), "{page}");
        let dir = missing_page(&Page::Dir("/x/<dist>".into()));
        assert!(dir.contains("/x/&lt;dist&gt;") && dir.contains("npm run build"), "{dir}");
    }
}
