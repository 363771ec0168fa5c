//! The sandbox visitor's cookie: their id (`pipelab_engine::sandbox::VisitorId`) in
//! an HttpOnly, SameSite=Strict cookie, set on the first request and sent
//! again with every response (its `Max-Age` is `--sandbox-idle`, so it
//! lapses with the visitor's Redis). API clients keep it like any cookie
//! (`curl -c jar -b jar`), or send the id as their token where they keep
//! no cookie (the Upstash SDKs). The id is never logged.

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue};

use super::HttpState;
use pipelab_engine::sandbox::VisitorId;

/// The cookie's name.
pub const COOKIE: &str = "pipelab_sandbox";
/// The header that tells a returning visitor what became of their keys
/// while they were away (removed to keep the node's disk budget), on
/// every response until their new Redis has served them.
pub const NOTICE: &str = "pipelab-sandbox-notice";

/// The visitor id a request's `Cookie` headers name, if any (a malformed
/// one is ignored: the visitor gets a new one).
pub fn from_headers(headers: &HeaderMap) -> Option<VisitorId> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(name, value)| (name == COOKIE).then(|| VisitorId::parse(value.trim())).flatten())
}

/// The visitor id a request presents as its token (`Authorization: Bearer`
/// or `?_token=`), for clients that keep no cookie: the Upstash SDKs are
/// given it as their token (`/api/v1/info` tells a visitor theirs).
fn from_token(req: &Request) -> Option<VisitorId> {
    let token = super::auth::presented(req.headers(), req.uri())?;
    VisitorId::parse(std::str::from_utf8(&token).ok()?)
}

/// The `Set-Cookie` value that keeps `id` for `max_age`.
pub fn set_cookie(id: &VisitorId, max_age: std::time::Duration) -> HeaderValue {
    HeaderValue::from_str(&format!("{COOKIE}={}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict", id.as_str(), max_age.as_secs()))
        .expect("an id of hex digits")
}

/// In the sandbox (in `http::gate`): the request gets its visitor's id in
/// its extensions (the cookie's if the supervisor knows it, else a new
/// one), and the returned `Set-Cookie` value goes on its response, with
/// [`notice`] for the visitor returned.
pub fn admit(state: &HttpState, req: &mut Request) -> Option<(HeaderValue, VisitorId)> {
    let sandbox = state.engine.sandbox()?;
    // Probes serve no visitor: none is remembered for them (they are never rate limited).
    if matches!(req.uri().path(), "/healthz" | "/readyz" | "/metrics") {
        return None;
    }
    // Behind a balancer every peer is the balancer: the address it forwards is the visitor's.
    let peer = req.extensions().get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|c| c.0.ip());
    let from = super::rate::forwarded_for(req.headers(), state.rate.limits().trust_forwarded_for).or(peer);
    let named = from_headers(req.headers()).or_else(|| from_token(req));
    let id = sandbox.admit(named, from);
    let cookie = set_cookie(&id, sandbox.settings().idle);
    req.extensions_mut().insert(id.clone());
    Some((cookie, id))
}

/// The [`NOTICE`] header's value for visitor `id` after their request, if
/// they must be told something.
pub fn notice(state: &HttpState, id: &VisitorId) -> Option<HeaderValue> {
    HeaderValue::from_str(&state.engine.sandbox()?.notice(id)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_names_the_visitor() {
        let id = VisitorId::random();
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(&format!("x=1; {COOKIE}={}", id.as_str())).unwrap());
        assert_eq!(from_headers(&headers), Some(id.clone()));
        let cookie = set_cookie(&id, std::time::Duration::from_secs(3600));
        let cookie = cookie.to_str().unwrap();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Max-Age=3600"), "{cookie}");
    }
}
