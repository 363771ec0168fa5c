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
//!   not GET/HEAD, and a GET that runs a command: Upstash's path style and
//!   subscriptions, [`Policy::check_cross_site`]) must be the page's own
//!   origin (its host and port equal to the `Host` header's, or `http://` +
//!   the listen address) or one of `--allowed-origins` (on the Upstash
//!   routes, also one of `--upstash-cors-origin`; never on `/api/*` and
//!   `/metrics`); `Sec-Fetch-Site: cross-site` is refused there unless
//!   `Origin` is one of those → else 403 `forbidden_origin`. Clients that
//!   send neither (curl, scripts) pass.
//! - Every request that changes something (any method but GET, HEAD and
//!   OPTIONS, and the GETs that run a command), one rule for all
//!   (`Policy::check_state_change`): from another origin (an `Origin`
//!   that is not the page's own, or `Sec-Fetch-Site: cross-site` /
//!   `same-site`) it must be a request a page can send only after a CORS
//!   preflight: `Content-Type: application/json` or an `Authorization`
//!   header → else 403 `forbidden_origin`. (A form or a `text/plain`
//!   `fetch` needs no preflight: CORS only hides the answer, the request
//!   runs.) POST /api/v1/batch, /batches, /compare, /sweep and /sessions
//!   need `Content-Type: application/json` from anyone (parameters such as
//!   `; charset=utf-8` allowed) → else 415 `unsupported_media_type`.
//! - A URI longer than [`MAX_URI_BYTES`] → 414 `uri_too_long`; headers of
//!   more than [`MAX_HEADER_BYTES`] in all → 431 `headers_too_large`.
//!   (hyper's own limits behind these, 100 headers or a head past its
//!   ~400 KiB buffer, and a request it cannot parse, get hyper's bodiless
//!   431/400: hyper writes those itself, before any service runs.)

use std::net::{IpAddr, SocketAddr};

use axum::http::{header, HeaderMap, HeaderValue, Method};

use super::error::{ApiCode, ApiError};

/// Longest request target accepted (bytes), as nginx's default
/// `large_client_header_buffers` (8 KiB).
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// Most bytes of header names and values in one request.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// The routes whose body is JSON (POST).
const JSON_ROUTES: [&str; 5] = ["/api/v1/batch", "/api/v1/batches", "/api/v1/compare", "/api/v1/sweep", "/api/v1/sessions"];

pub use crate::config::GuardConfig;

/// The guards' settings, resolved once at start-up.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// The page's own origins: the listen address's (normalized: lowercase,
    /// no trailing `/`).
    own: Vec<String>,
    /// `--allowed-origins`, normalized; `*`: any.
    allowed: Origins,
    /// `--upstash-cors-origin`: allowed on the Upstash routes only.
    upstash: Origins,
    hosts: Vec<String>,
    any_host: bool,
}

/// A list of allowed origins, normalized.
#[derive(Debug, Clone, Default)]
struct Origins {
    list: Vec<String>,
    any: bool,
}

impl Origins {
    fn extend<'a>(&mut self, origins: impl IntoIterator<Item = &'a str>) {
        for o in origins.into_iter().map(normalize).filter(|o| !o.is_empty()) {
            self.any |= o == "*";
            self.list.push(o);
        }
    }

    fn contains(&self, origin: &str) -> bool {
        self.any || self.list.iter().any(|o| o == origin)
    }
}

fn normalize(s: &str) -> String {
    s.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// `/api/*` and `/metrics`: the Upstash routes' CORS origins do not reach them.
fn api_path(path: &str) -> bool {
    path.starts_with("/api/") || path == "/api" || path == "/metrics"
}

impl Policy {
    /// The policy for a server listening on `listen`.
    pub fn new(cfg: &GuardConfig, listen: Option<SocketAddr>) -> Policy {
        let mut own = Vec::new();
        if let Some(addr) = listen {
            own.push(format!("http://{addr}"));
            if addr.ip().is_loopback() || addr.ip().is_unspecified() {
                let port = addr.port();
                own.extend([format!("http://localhost:{port}"), format!("http://127.0.0.1:{port}"), format!("http://[::1]:{port}")]);
            }
        }
        let mut allowed = Origins::default();
        allowed.extend(cfg.allowed_origins.iter().map(String::as_str));
        let hosts: Vec<String> = cfg.allowed_hosts.iter().map(|h| normalize(h)).filter(|s| !s.is_empty()).collect();
        Policy { own, allowed, upstash: Origins::default(), any_host: hosts.iter().any(|h| h == "*"), hosts }
    }

    /// This policy, also letting the pages of `origins` call the Upstash
    /// routes (`--upstash-cors-origin`, normalized as `--allowed-origins`;
    /// `*` any), whose browsers the guards must not refuse before CORS
    /// answers them. Not `/api/*` nor `/metrics`.
    pub fn with_upstash_origins<'a>(mut self, origins: impl IntoIterator<Item = &'a str>) -> Policy {
        self.upstash.extend(origins);
        self
    }

    /// Every guard, in order: head size, `Host`, `Origin` / `Sec-Fetch-Site`,
    /// the rule of requests that change something.
    pub fn check(&self, method: &Method, uri: &axum::http::Uri, headers: &HeaderMap) -> Result<(), ApiError> {
        let heads = Heads::of(headers);
        at_most(uri.path_and_query().map_or(0, |p| p.as_str().len()), MAX_URI_BYTES, ApiCode::UriTooLong, "request URI")?;
        at_most(heads.bytes, MAX_HEADER_BYTES, ApiCode::HeadersTooLarge, "request headers")?;
        let host = heads.host.and_then(|h| h.to_str().ok());
        if let Some(h) = heads.host {
            if !host.is_some_and(|h| self.host_allowed(h)) {
                return Err(ApiError::new(
                    ApiCode::ForbiddenHost,
                    format!(
                        "Host {:?} is not a name of this server; start it with --allowed-hosts {name} (or PIPELAB_ALLOWED_HOSTS={name}, as docker-compose.yml reads it) to accept it",
                        String::from_utf8_lossy(h.as_bytes()),
                        name = host_name(host.unwrap_or("NAME")).0
                    ),
                )
                .at("header Host"));
            }
        }
        let path = uri.path();
        let reading = matches!(*method, Method::GET | Method::HEAD);
        let origin = heads.origin();
        if api_path(path) || !reading {
            self.check_origin(path, &heads, origin.as_deref(), host)?;
        }
        if !reading && method != Method::OPTIONS {
            self.check_state_change(method, path, &heads, origin.as_deref(), host)?;
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

    /// The guards of a request that changes something, for a GET the guards
    /// let through but whose handler finds it runs a command (Upstash's
    /// path style, `GET /flushall`, and its subscriptions: an `<img src>` or
    /// an `EventSource` of another site must not run them).
    pub fn check_cross_site(&self, path: &str, headers: &HeaderMap) -> Result<(), ApiError> {
        let heads = Heads::of(headers);
        let host = heads.host.and_then(|h| h.to_str().ok());
        let origin = heads.origin();
        self.check_origin(path, &heads, origin.as_deref(), host)?;
        self.check_state_change(&Method::GET, path, &heads, origin.as_deref(), host)
    }

    /// `Origin` is one this server takes requests from on `path`, and a
    /// `Sec-Fetch-Site: cross-site` request comes from a configured one.
    fn check_origin(&self, path: &str, heads: &Heads, origin: Option<&str>, host: Option<&str>) -> Result<(), ApiError> {
        let configured = |o: &str| self.allowed.contains(o) || (!api_path(path) && self.upstash.contains(o));
        if let Some(origin) = origin {
            if !(self.is_own(origin, host) || configured(origin)) {
                return Err(forbidden_origin(format!(
                    "Origin {origin:?} may not call this API (a page of another site); start the server with \
                     --allowed-origins {origin} to allow it"
                )));
            }
        }
        if heads.sec_fetch_site.is_some_and(|s| s.eq_ignore_ascii_case(b"cross-site")) && !origin.is_some_and(configured) {
            return Err(forbidden_origin(
                "Sec-Fetch-Site: cross-site: a page of another site may not call this API (allow its origin with --allowed-origins)".to_string(),
            ));
        }
        Ok(())
    }

    /// The one rule of every request that changes something (see the
    /// module's doc): JSON on the API's body routes; from another origin,
    /// only what a page sends after a preflight.
    fn check_state_change(&self, method: &Method, path: &str, heads: &Heads, origin: Option<&str>, host: Option<&str>) -> Result<(), ApiError> {
        if method == Method::POST && JSON_ROUTES.contains(&path) {
            check_json(heads.content_type)?;
        }
        let other_origin = origin.is_some_and(|o| !self.is_own(o, host))
            || heads.sec_fetch_site.is_some_and(|s| s.eq_ignore_ascii_case(b"cross-site") || s.eq_ignore_ascii_case(b"same-site"));
        if other_origin && !is_json(heads.content_type) && !heads.authorization {
            return Err(forbidden_origin(
                "a page of another origin may send this only after a CORS preflight: send it with Content-Type: \
                 application/json or an Authorization header (a form or a text/plain request is refused)"
                    .to_string(),
            ));
        }
        Ok(())
    }

    /// `origin` (normalized) is the page's own: its authority is the `Host`
    /// header's, or it is the listen address's.
    fn is_own(&self, origin: &str, host: Option<&str>) -> bool {
        host.is_some_and(|h| origin.split_once("://").is_some_and(|(_, authority)| authority.eq_ignore_ascii_case(h))) || self.own.iter().any(|o| o == origin)
    }
}

/// The headers the guards read, found in one pass over a request's headers
/// (each lookup by name would hash the name again), and their size.
#[derive(Default)]
struct Heads<'a> {
    /// Bytes of every header name and value.
    bytes: usize,
    host: Option<&'a HeaderValue>,
    origin: Option<&'a HeaderValue>,
    sec_fetch_site: Option<&'a [u8]>,
    content_type: Option<&'a HeaderValue>,
    authorization: bool,
}

impl<'a> Heads<'a> {
    fn of(headers: &'a HeaderMap) -> Heads<'a> {
        let mut heads = Heads::default();
        // The first value of a repeated header, as `HeaderMap::get` gives it.
        for (name, value) in headers {
            heads.bytes += name.as_str().len() + value.len();
            if *name == header::HOST {
                heads.host.get_or_insert(value);
            } else if *name == header::ORIGIN {
                heads.origin.get_or_insert(value);
            } else if *name == header::CONTENT_TYPE {
                heads.content_type.get_or_insert(value);
            } else if *name == header::AUTHORIZATION {
                heads.authorization = true;
            } else if name.as_str() == "sec-fetch-site" {
                heads.sec_fetch_site.get_or_insert(value.as_bytes());
            }
        }
        heads
    }

    /// `Origin`, normalized.
    fn origin(&self) -> Option<String> {
        self.origin.map(|o| normalize(&String::from_utf8_lossy(o.as_bytes())))
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

/// `Err` with `code` if `what` has more than `max` bytes.
fn at_most(bytes: usize, max: usize, code: ApiCode, what: &str) -> Result<(), ApiError> {
    if bytes <= max {
        return Ok(());
    }
    Err(ApiError::new(code, format!("{what}: {bytes} bytes; at most {max}")).at(what))
}

/// `Content-Type` is `application/json`, with or without parameters: the
/// media type before any parameter (`; charset=utf-8`), on the bytes
/// (asked on every batch).
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type.is_some_and(|v| v.as_bytes().split(|&b| b == b';').next().unwrap_or_default().trim_ascii().eq_ignore_ascii_case(b"application/json"))
}

/// `Content-Type` is `application/json`, with or without parameters.
fn check_json(content_type: Option<&HeaderValue>) -> Result<(), ApiError> {
    if is_json(content_type) {
        return Ok(());
    }
    let value = content_type.map(|v| String::from_utf8_lossy(v.as_bytes()));
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
        assert!(check_json(h.get(header::CONTENT_TYPE)).is_err());
        for (v, ok) in [("application/json", true), ("Application/JSON; charset=utf-8", true), ("text/plain", false), ("application/x-www-form-urlencoded", false), ("application/jsonx", false)] {
            h.insert(header::CONTENT_TYPE, v.parse().unwrap());
            assert_eq!(check_json(h.get(header::CONTENT_TYPE)).is_ok(), ok, "{v}");
        }
    }
}
