//! A visitor's namespace: an unguessable id (128 random bits, hex) in an
//! HttpOnly, SameSite=Strict cookie, set on the first request that has
//! none and sent again with every response (its `Max-Age` is the
//! sandbox TTL, so it lapses after that long without a request). API
//! clients keep it like any cookie (`curl -c jar -b jar`).
//!
//! The id names the keys: `sbx:{id}:name`. It is never logged.

use std::sync::Arc;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue};

use crate::api::AppState;

/// The cookie's name.
pub const COOKIE: &str = "pipelab_sandbox";

/// Hex digits of an id (16 random bytes).
const ID_LEN: usize = 32;

/// One visitor's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    id: String,
    prefix: Arc<str>,
}

impl Namespace {
    /// A new namespace with a random id (the system's CSPRNG, as `ring` reads it).
    pub fn random() -> Namespace {
        use ring::rand::SecureRandom;
        let mut bytes = [0u8; ID_LEN / 2];
        ring::rand::SystemRandom::new().fill(&mut bytes).expect("the system's random generator");
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Namespace::from_id(&id).expect("hex of the right length")
    }

    /// The namespace of a cookie's id: exactly 32 lowercase hex digits.
    pub fn from_id(id: &str) -> Option<Namespace> {
        (id.len() == ID_LEN && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| Namespace { id: id.to_string(), prefix: format!("sbx:{{{id}}}:").into() })
    }

    /// The namespace whose [`Namespace::prefix`] is `prefix`.
    pub fn from_prefix(prefix: &str) -> Option<Namespace> {
        Namespace::from_id(prefix.strip_prefix("sbx:{")?.strip_suffix("}:")?)
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// `sbx:{id}:`, what every key of the namespace starts with.
    pub fn prefix(&self) -> &Arc<str> {
        &self.prefix
    }

    /// The glob pattern of every key of the namespace, `sbx:{id}:*` (the id
    /// is hex: nothing in the prefix is special to Redis's `stringmatchlen`).
    pub fn pattern(&self) -> String {
        format!("{}*", self.prefix)
    }
}

/// The namespace a request's `Cookie` headers name, if any (a malformed id
/// is ignored: the visitor gets a new one).
pub fn from_headers(headers: &HeaderMap) -> Option<Namespace> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find_map(|(name, value)| (name == COOKIE).then(|| Namespace::from_id(value.trim())).flatten())
}

/// The `Set-Cookie` value that keeps `ns` for `ttl`.
pub fn set_cookie(ns: &Namespace, ttl: std::time::Duration) -> HeaderValue {
    HeaderValue::from_str(&format!("{COOKIE}={}; Path=/; Max-Age={}; HttpOnly; SameSite=Strict", ns.id, ttl.as_secs()))
        .expect("an id of hex digits")
}

/// With `--sandbox` (in `api::gate`): the request gets its [`Namespace`]
/// in its extensions (the cookie's, else a new one), and the returned
/// `Set-Cookie` value goes on its response, whatever it is.
pub fn admit(state: &AppState, mut req: Request) -> (Request, Option<HeaderValue>) {
    let Some(sandbox) = state.sandbox.as_ref() else { return (req, None) };
    let ns = from_headers(req.headers()).unwrap_or_else(Namespace::random);
    let cookie = set_cookie(&ns, sandbox.config.sandbox_ttl);
    req.extensions_mut().insert(ns);
    (req, Some(cookie))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_hex_and_checked() {
        let (a, b) = (Namespace::random(), Namespace::random());
        assert_ne!(a, b);
        assert_eq!(a.id().len(), 32);
        assert_eq!(&**a.prefix(), format!("sbx:{{{}}}:", a.id()));
        assert_eq!(Namespace::from_prefix(a.prefix()), Some(a.clone()));
        assert!(Namespace::from_id("ABCDEF0123456789abcdef0123456789").is_none());
        assert!(Namespace::from_id("abc").is_none());
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, HeaderValue::from_str(&format!("x=1; {COOKIE}={}", a.id())).unwrap());
        assert_eq!(from_headers(&headers), Some(a.clone()));
        let cookie = set_cookie(&a, std::time::Duration::from_secs(3600));
        let cookie = cookie.to_str().unwrap();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Max-Age=3600"), "{cookie}");
    }
}
