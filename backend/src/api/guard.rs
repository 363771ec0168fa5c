//! Request guards checked before any handler runs: who may send a request
//! (`Host`, `Origin`, `Sec-Fetch-Site`), in which form (`Content-Type` on
//! the JSON routes) and how large its head may be (URI, header bytes).
//!
//! Why: pipelab runs whatever batch it is sent on a Redis that usually has
//! no password, and it listens on localhost. Without these checks any web
//! page a developer visits could `FLUSHALL` that Redis: a form posted with
//! `enctype=text/plain` needs no CORS preflight (hence `Content-Type:
//! application/json` is required: a cross-origin page can only send it
//! after a preflight, which pipelab never answers), and a hostname rebound
//! to 127.0.0.1 makes the page same-origin with pipelab in the browser's
//! eyes (DNS rebinding; hence the `Host` check: the rebound name is in it).
//!
//! The rules, each refusal in the API's JSON error shape:
//! - `Host` (when sent) must be an IP literal, `localhost` or a
//!   `*.localhost` name (RFC 6761: these never leave the machine), or a
//!   name of `--allowed-hosts` → else 421 `forbidden_host`. The port is not
//!   compared: a port mapping (Docker's `-p 9000:8080`) changes it, and a
//!   rebinding attack cannot forge the name.
//! - `Origin` (when sent, on `/api/*`, `/metrics`, any request that is
//!   not GET/HEAD, and a GET of an Upstash path-style command:
//!   [`Policy::check_cross_site`]) must be the page's own origin (its host and port equal
//!   to the `Host` header's, or `http://` + the listen address) or one of
//!   `--allowed-origins`; `Sec-Fetch-Site: cross-site` is refused there
//!   unless `Origin` is one of `--allowed-origins` → else 403
//!   `forbidden_origin`. Clients that send neither (curl, scripts) pass.
//! - POST /api/v1/batch, /compare and /sweep need `Content-Type:
//!   application/json` (parameters such as `; charset=utf-8` allowed) →
//!   else 415 `unsupported_media_type`.
//! - A URI longer than [`MAX_URI_BYTES`] → 414 `uri_too_long`; headers of
//!   more than [`MAX_HEADER_BYTES`] in all → 431 `headers_too_large`.
//!   (hyper's own limits behind these, 100 headers or a head past its
//!   ~400 KiB buffer, and a request it cannot parse, get hyper's bodiless
//!   431/400: hyper writes those itself, before any service runs.)

use std::net::{IpAddr, SocketAddr};

use axum::http::{header, HeaderMap, HeaderName, Method};

use super::error::{ApiCode, ApiError};

/// Longest request target accepted (bytes), as nginx's default
/// `large_client_header_buffers` (8 KiB).
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Most bytes of header names and values in one request.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The routes whose body is JSON.
const JSON_ROUTES: [&str; 3] = ["/api/v1/batch", "/api/v1/compare", "/api/v1/sweep"];

/// `pipelab serve` flags of the guards.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GuardConfig {
    /// Origins (scheme://host[:port], comma-separated) whose pages may call
    /// the API besides the page's own; `*` allows any (not for a Redis you care about).
    #[arg(long, env = "PIPELAB_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Host names (comma-separated, `name` or `name:port`; `.example.com`
    /// for its subdomains too; `*` for any) accepted in the `Host` header
    /// besides IP addresses, `localhost` and `*.localhost`.
    #[arg(long, env = "PIPELAB_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,
}

/// The guards' settings, resolved once at start-up.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Normalized (lowercase, no trailing `/`): the allowed origins, the
    /// listen address's own among them.
    origins: Vec<String>,
    /// `--allowed-origins` only (they may pass a cross-site request).
    configured_origins: Vec<String>,
    any_origin: bool,
    hosts: Vec<String>,
    any_host: bool,
}

impl Policy {
    /// The policy for a server listening on `listen`.
    pub fn new(cfg: &GuardConfig, listen: Option<SocketAddr>) -> Policy {
        let norm = |s: &String| s.trim().trim_end_matches('/').to_ascii_lowercase();
        let configured: Vec<String> = cfg.allowed_origins.iter().map(norm).filter(|s| !s.is_empty()).collect();
        let mut origins = configured.clone();
        if let Some(addr) = listen {
            origins.push(format!("http://{addr}"));
            if addr.ip().is_loopback() || addr.ip().is_unspecified() {
                let port = addr.port();
                origins.extend([format!("http://localhost:{port}"), format!("http://127.0.0.1:{port}"), format!("http://[::1]:{port}")]);
            }
        }
        let hosts: Vec<String> = cfg.allowed_hosts.iter().map(norm).filter(|s| !s.is_empty()).collect();
        Policy {
            any_origin: configured.iter().any(|o| o == "*"),
            configured_origins: configured,
            origins,
            any_host: hosts.iter().any(|h| h == "*"),
            hosts,
        }
    }

    /// This policy, also letting the pages of `origins` call (normalized as
    /// `--allowed-origins`; `*` any): the Upstash routes' `--upstash-cors-origin`,
    /// whose browsers the guards must not refuse before CORS answers them.
    pub fn with_origins<'a>(mut self, origins: impl IntoIterator<Item = &'a str>) -> Policy {
        for o in origins {
            let o = o.trim().trim_end_matches('/').to_ascii_lowercase();
            self.any_origin |= o == "*";
            self.configured_origins.push(o.clone());
            self.origins.push(o);
        }
        self
    }

    /// Every guard, in order: head size, `Host`, `Origin` / `Sec-Fetch-Site`, `Content-Type`.
    pub fn check(&self, method: &Method, uri: &axum::http::Uri, headers: &HeaderMap) -> Result<(), ApiError> {
        check_head_size(uri, headers)?;
        let host_header = headers.get(header::HOST);
        let host = host_header.and_then(|h| h.to_str().ok());
        if let Some(h) = host_header {
            if !host.is_some_and(|h| self.host_allowed(h)) {
                return Err(ApiError::new(
                    ApiCode::ForbiddenHost,
                    format!(
                        "Host {:?} is not a name of this server; start it with --allowed-hosts {} to accept it",
                        String::from_utf8_lossy(h.as_bytes()),
                        host_name(host.unwrap_or("NAME")).0
                    ),
                )
                .at("header Host"));
            }
        }
        let path = uri.path();
        let guarded = path.starts_with("/api/") || path == "/metrics" || !matches!(*method, Method::GET | Method::HEAD);
        if guarded {
            self.check_origin(headers, host)?;
        }
        if method == Method::POST && JSON_ROUTES.contains(&path) {
            check_json(headers)?;
        }
        Ok(())
    }

    fn host_allowed(&self, value: &str) -> bool {
        if self.any_host {
            return true;
        }
        let (name, _) = host_name(value);
        // The usual cases first, without copying the name: an address or
        // localhost (asked on every request).
        let localhost = |n: &str| n.len() >= 9 && n[n.len() - 9..].eq_ignore_ascii_case("localhost") && (n.len() == 9 || n.as_bytes()[n.len() - 10] == b'.');
        if name.parse::<IpAddr>().is_ok() || (name.is_ascii() && localhost(name)) {
            return true;
        }
        let name = name.to_ascii_lowercase();
        let value = value.to_ascii_lowercase();
        self.hosts.iter().any(|h| *h == name || *h == value || (h.starts_with('.') && (name.ends_with(h.as_str()) || name == h[1..])))
    }

    /// The `Origin` / `Sec-Fetch-Site` guard alone, for a GET the layer lets
    /// through but whose handler finds it runs a command (Upstash's path
    /// style, `GET /flushall`: an `<img src>` of another site must not run it).
    pub fn check_cross_site(&self, headers: &HeaderMap) -> Result<(), ApiError> {
        self.check_origin(headers, headers.get(header::HOST).and_then(|h| h.to_str().ok()))
    }

    fn check_origin(&self, headers: &HeaderMap, host: Option<&str>) -> Result<(), ApiError> {
        let origin = headers.get(header::ORIGIN).map(|o| String::from_utf8_lossy(o.as_bytes()).trim_end_matches('/').to_ascii_lowercase());
        if let Some(origin) = &origin {
            let same_origin = host.is_some_and(|h| origin.split_once("://").is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(h)));
            if !(self.any_origin || same_origin || self.origins.contains(origin)) {
                return Err(forbidden_origin(format!(
                    "Origin {origin:?} may not call this API (a page of another site); start the server with \
                     --allowed-origins {origin} to allow it"
                )));
            }
        }
        const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");
        let cross_site = headers.get(SEC_FETCH_SITE).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"));
        let configured = origin.as_ref().is_some_and(|o| self.any_origin || self.configured_origins.contains(o));
        if cross_site && !configured {
            return Err(forbidden_origin(
                "Sec-Fetch-Site: cross-site: a page of another site may not call this API (allow its origin with --allowed-origins)".to_string(),
            ));
        }
        Ok(())
    }
}

fn forbidden_origin(message: String) -> ApiError {
    ApiError::new(ApiCode::ForbiddenOrigin, message).at("header Origin")
}

/// `Host`'s name (brackets of an IPv6 literal removed) and port.
fn host_name(value: &str) -> (&str, Option<&str>) {
    if let Some(rest) = value.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((ip, port)) => (ip, port.strip_prefix(':')),
            None => (value, None),
        };
    }
    match value.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, Some(port)),
        _ => (value, None),
    }
}

fn check_head_size(uri: &axum::http::Uri, headers: &HeaderMap) -> Result<(), ApiError> {
    let uri_len = uri.path_and_query().map_or(0, |p| p.as_str().len());
    at_most(uri_len, MAX_URI_BYTES, ApiCode::UriTooLong, "request URI")?;
    let header_bytes: usize = headers.iter().map(|(k, v)| k.as_str().len() + v.len()).sum();
    at_most(header_bytes, MAX_HEADER_BYTES, ApiCode::HeadersTooLarge, "request headers")
}

/// `Err` with `code` if `what` has more than `max` bytes.
fn at_most(bytes: usize, max: usize, code: ApiCode, what: &str) -> Result<(), ApiError> {
    if bytes <= max {
        return Ok(());
    }
    Err(ApiError::new(code, format!("{what}: {bytes} bytes; at most {max}")).at(what))
}

/// `Content-Type` is `application/json`, with or without parameters.
fn check_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let raw = headers.get(header::CONTENT_TYPE);
    // The media type before any parameter (`; charset=utf-8`), on the bytes:
    // asked on every batch.
    let is_json = raw.is_some_and(|v| v.as_bytes().split(|&b| b == b';').next().unwrap_or_default().trim_ascii().eq_ignore_ascii_case(b"application/json"));
    if is_json {
        return Ok(());
    }
    let value = raw.map(|v| String::from_utf8_lossy(v.as_bytes()));
    Err(ApiError::new(
        ApiCode::UnsupportedMediaType,
        match value {
            Some(v) => format!("Content-Type {v:?}: the body must be sent as application/json"),
            None => "Content-Type missing: the body must be sent as application/json".to_string(),
        },
    )
    .at("header Content-Type"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(origins: &[&str], hosts: &[&str]) -> Policy {
        let cfg = GuardConfig {
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
        };
        Policy::new(&cfg, Some("127.0.0.1:8080".parse().unwrap()))
    }

    #[test]
    fn host_names() {
        let p = policy(&[], &["pipelab.example", ".team.example"]);
        for ok in ["127.0.0.1:8080", "localhost:9000", "[::1]:8080", "10.1.2.3", "app.localhost:8080", "LocalHost", "a.LOCALHOST:1", "PIPELAB.example", "a.team.example:1", "team.example"] {
            assert!(p.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.example", "evil.example:8080", "xlocalhost", "localhost.evil.example", "xteam.example", "pipelab.example.evil"] {
            assert!(!p.host_allowed(bad), "{bad}");
        }
        assert!(policy(&[], &["*"]).host_allowed("anything.example"));
    }

    #[test]
    fn content_types() {
        let mut h = HeaderMap::new();
        assert!(check_json(&h).is_err());
        for (v, ok) in [("application/json", true), ("Application/JSON; charset=utf-8", true), ("text/plain", false), ("application/x-www-form-urlencoded", false), ("application/jsonx", false)] {
            h.insert(header::CONTENT_TYPE, v.parse().unwrap());
            assert_eq!(check_json(&h).is_ok(), ok, "{v}");
        }
    }
}
