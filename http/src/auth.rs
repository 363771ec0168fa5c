//! Tokens: who may use the API and the Upstash-compatible surface.
//!
//! Without tokens configured everything is open. With one or
//! more (`--token` / `PIPELAB_TOKENS`, `--tokens-file`, `--readonly-token`
//! / `PIPELAB_READONLY_TOKENS`) every `/api/v1/*` route and every Upstash
//! route needs one, as `Authorization: Bearer TOKEN` or `?_token=TOKEN`
//! (Upstash's two forms); `/metrics` needs one too unless
//! `--metrics-public`; `/healthz`, `/readyz` and the playground's files stay
//! open. A missing or wrong token is a 401 with `WWW-Authenticate: Bearer`.
//!
//! Tokens are kept only as SHA-256 digests and a presented token is
//! compared with every one of them in constant time (`subtle`), so neither
//! the comparison's time nor its length tells how much of a token was
//! right. A token is never logged: at most its fingerprint, the first 8
//! hex digits of its digest.
//!
//! An operator token (`--operator-token` / `PIPELAB_OPERATOR_TOKENS`) has
//! full access and may also run the commands refused to everyone else
//! because they reveal secrets (CONFIG GET, ACL LIST/GETUSER/DRYRUN/USERS/
//! LOG, SLOWLOG GET: [`pipelab_engine::commands::Access::Operator`]).
//!
//! A read-only token may run only commands that cannot change data or the
//! server: the command table read from the server decides
//! ([`pipelab_engine::commands::Table::allows_readonly`]: flagged `readonly`, no key
//! spec that writes), on `/api/v1/batch` per command (403 `readonly_token`
//! naming the first other command, nothing sent) and on the Upstash routes
//! (403 `NOPERM`).

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, Method, Uri};
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::error::{ApiCode, ApiError};
use super::HttpState;

pub use crate::config::AuthConfig;

/// The token flags among `args` (a process's arguments): their values show
/// in `ps` to every user of the machine, where the environment and
/// `--tokens-file` do not.
pub fn token_flags_in<I: IntoIterator<Item = String>>(args: I) -> Vec<&'static str> {
    const FLAGS: [&str; 3] = ["--token", "--readonly-token", "--operator-token"];
    let mut found: Vec<&'static str> = Vec::new();
    for a in args {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        if let Some(f) = FLAGS.iter().find(|f| **f == name) {
            if !found.contains(f) {
                found.push(f);
            }
        }
    }
    found
}

/// A token's SHA-256 digest.
pub type Digest = [u8; 32];

pub fn digest(token: &[u8]) -> Digest {
    let d = ring::digest::digest(&ring::digest::SHA256, token);
    d.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

/// The first 8 hex digits of a token's digest: enough to tell tokens apart
/// in a log, useless to guess one.
pub fn fingerprint(token: &str) -> String {
    digest(token.as_bytes())[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// The configured tokens, as digests.
#[derive(Debug, Clone, Default)]
pub struct Auth {
    full: Vec<Digest>,
    readonly: Vec<Digest>,
    operator: Vec<Digest>,
    /// `--metrics-public`.
    pub metrics_public: bool,
}

/// What a request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No tokens are configured: everything is open.
    Open,
    /// A full-access token.
    Full,
    /// A read-only token: commands that write are refused.
    ReadOnly,
    /// An operator token: full access and the commands that reveal secrets.
    Operator,
}

impl Access {
    pub fn read_only(self) -> bool {
        self == Access::ReadOnly
    }

    /// The command table's access for these rights ([`pipelab_engine::commands::Access`]).
    pub fn rules(self) -> pipelab_engine::commands::Access {
        match self {
            Access::ReadOnly => pipelab_engine::commands::Access::ReadOnly,
            Access::Open | Access::Full => pipelab_engine::commands::Access::Full,
            Access::Operator => pipelab_engine::commands::Access::Operator,
        }
    }
}

/// Why a request was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// No `Authorization: Bearer` header and no `_token` parameter.
    Missing,
    /// A token that is not one of the configured ones.
    Wrong,
}

impl Denied {
    /// For people: what was wrong, never the token.
    pub fn message(self) -> &'static str {
        match self {
            Denied::Missing => "a token is required: send \"Authorization: Bearer TOKEN\" or ?_token=TOKEN",
            Denied::Wrong => "the token is not valid",
        }
    }
}

/// A token refused; each names its kind (`full-access token`, …) and
/// gives a fingerprint, never the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("an empty {what} (each token needs at least one character)")]
    Empty { what: &'static str },
    #[error("a {what} with leading or trailing white space (fingerprint {fingerprint})")]
    WhiteSpace { what: &'static str, fingerprint: String },
    /// Given as a `first` already.
    #[error("the same token is given as {first} and as {what} (fingerprint {fingerprint})")]
    Twice { first: &'static str, what: &'static str, fingerprint: String },
}

/// Why the configured tokens cannot be used; each names the flag.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    #[error("--tokens-file {}: {error}", path.display())]
    TokensFile { path: std::path::PathBuf, error: std::io::Error },
    #[error("--token / --readonly-token / --operator-token: {0}")]
    Tokens(TokenError),
}

impl Auth {
    /// No tokens: everything open.
    pub fn none() -> Auth {
        Auth::default()
    }

    /// Full-access and read-only tokens given directly (tests, embedding).
    pub fn new<S: AsRef<str>>(full: &[S], readonly: &[S]) -> Result<Auth, TokenError> {
        Auth::default().with_tokens(Kind::Full, full)?.with_tokens(Kind::ReadOnly, readonly)
    }

    /// These tokens and operator tokens `operator` (`--operator-token`).
    pub fn with_operators<S: AsRef<str>>(self, operator: &[S]) -> Result<Auth, TokenError> {
        self.with_tokens(Kind::Operator, operator)
    }

    /// `tokens` added to the list of `kind`; a token already in another
    /// list is refused (by fingerprint).
    fn with_tokens<S: AsRef<str>>(mut self, kind: Kind, tokens: &[S]) -> Result<Auth, TokenError> {
        let what = kind.what();
        for t in tokens {
            let t = t.as_ref();
            if t.trim().is_empty() {
                return Err(TokenError::Empty { what });
            }
            if t.trim() != t {
                return Err(TokenError::WhiteSpace { what, fingerprint: fingerprint(t) });
            }
            let d = digest(t.as_bytes());
            for other in [Kind::Full, Kind::ReadOnly, Kind::Operator] {
                if other != kind && self.list(other).contains(&d) {
                    return Err(TokenError::Twice { first: other.what(), what, fingerprint: fingerprint(t) });
                }
            }
            self.list(kind).push(d);
        }
        Ok(self)
    }

    fn list(&mut self, kind: Kind) -> &mut Vec<Digest> {
        match kind {
            Kind::Full => &mut self.full,
            Kind::ReadOnly => &mut self.readonly,
            Kind::Operator => &mut self.operator,
        }
    }

    /// The tokens of `cfg`, the file's included. Errors name the flag and
    /// the line, never a token.
    pub fn from_config(cfg: &AuthConfig) -> Result<Auth, AuthConfigError> {
        let mut full = cfg.tokens.clone();
        if let Some(path) = &cfg.tokens_file {
            let text = std::fs::read_to_string(path)
                .map_err(|error| AuthConfigError::TokensFile { path: path.clone(), error })?;
            full.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_string),
            );
        }
        let mut auth = Auth::new(&full, &cfg.readonly_tokens)
            .and_then(|auth| auth.with_operators(&cfg.operator_tokens))
            .map_err(AuthConfigError::Tokens)?;
        auth.metrics_public = cfg.metrics_public;
        if auth.enabled() {
            let prints: Vec<String> =
                full.iter().chain(&cfg.readonly_tokens).chain(&cfg.operator_tokens).map(|t| fingerprint(t)).collect();
            tracing::info!(full = auth.full.len(), readonly = auth.readonly.len(), operator = auth.operator.len(), fingerprints = %prints.join(","), "tokens required");
        }
        Ok(auth)
    }

    /// Tokens are configured: requests need one.
    pub fn enabled(&self) -> bool {
        !self.full.is_empty() || !self.readonly.is_empty() || !self.operator.is_empty()
    }

    /// The access `presented` gives. Every configured digest is compared,
    /// each in constant time, whatever matched before.
    pub fn check(&self, presented: Option<&[u8]>) -> Result<Access, Denied> {
        if !self.enabled() {
            return Ok(Access::Open);
        }
        let Some(token) = presented else { return Err(Denied::Missing) };
        let d = digest(token);
        let matches = |list: &[Digest]| list.iter().fold(subtle::Choice::from(0), |acc, t| acc | t.ct_eq(&d));
        let (full, readonly, operator) = (matches(&self.full), matches(&self.readonly), matches(&self.operator));
        if bool::from(operator) {
            Ok(Access::Operator)
        } else if bool::from(full) {
            Ok(Access::Full)
        } else if bool::from(readonly) {
            Ok(Access::ReadOnly)
        } else {
            Err(Denied::Wrong)
        }
    }

    /// [`Auth::check`] of the token a request carries ([`presented`]).
    pub fn check_request(&self, headers: &HeaderMap, uri: &Uri) -> Result<Access, Denied> {
        if !self.enabled() {
            return Ok(Access::Open);
        }
        self.check(presented(headers, uri).as_deref())
    }
}

/// The digest of the valid token a request carries (none without tokens
/// configured, or with a missing or wrong one): what per-token rate limits
/// key on ([`super::rate`]), never the token itself.
pub fn token_key(auth: &Auth, headers: &HeaderMap, uri: &Uri) -> Option<[u8; 32]> {
    let token = presented(headers, uri)?;
    auth.check(Some(&token)).ok()?;
    Some(digest(&token))
}

/// The kinds of token, for [`Auth::with_tokens`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Full,
    ReadOnly,
    Operator,
}

impl Kind {
    fn what(self) -> &'static str {
        match self {
            Kind::Full => "full-access token",
            Kind::ReadOnly => "read-only token",
            Kind::Operator => "operator token",
        }
    }
}

/// The token of a request: `Authorization: Bearer TOKEN` (the scheme's case
/// ignored), else the `_token` query parameter (percent-decoded).
pub fn presented(headers: &HeaderMap, uri: &Uri) -> Option<Vec<u8>> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let value = value.as_bytes();
        if value.len() > 7 && value[..7].eq_ignore_ascii_case(b"bearer ") {
            return Some(value[7..].trim_ascii().to_vec());
        }
    }
    query_param(uri, "_token")
}

/// The first `name=value` of `uri`'s query, percent-decoded (`+` is a space).
pub fn query_param(uri: &Uri, name: &str) -> Option<Vec<u8>> {
    let query = uri.query()?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| form_decode(v))
    })
}

/// `application/x-www-form-urlencoded` decoding of one query component.
pub fn form_decode(s: &str) -> Vec<u8> {
    let plus = s.replace('+', " ");
    percent_encoding::percent_decode_str(&plus).collect()
}

/// The 401 headers: `WWW-Authenticate: Bearer`.
pub fn challenge(res: &mut Response) {
    res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
}

/// The token check (in [`super::gate`], after the request guards of
/// [`super::guard`] and the rate limits): `/api/v1/*` and `/metrics`
/// (unless `--metrics-public`) need a token when tokens are configured;
/// `Err` is the 401 or 403 to answer. A read-only token may GET on
/// `/api/v1`, open and close sessions (`/api/v1/sessions`, bound to its
/// access), POST `/api/v1/batch` and `/api/v1/batches` (the page's Run),
/// whose commands [`readonly_check`] then checks one by one, and cancel a
/// live batch; the other batch endpoints (`/compare`, `/sweep`: they write
/// keys of their own) answer 403 `forbidden`. The
/// request's [`Access`] is left in its extensions. The Upstash routes
/// check their tokens themselves, in Upstash's error shape
/// (the Upstash-compatible surface's), and every other path is open.
// The refusal is the answer, sent as it is: boxing it would only move it.
#[allow(clippy::result_large_err)]
pub fn admit(state: &HttpState, req: &mut Request) -> Result<(), Response> {
    if !state.auth.enabled() {
        return Ok(());
    }
    let path = req.uri().path();
    let api = path == "/api/v1" || path.starts_with("/api/v1/");
    let metrics = path == "/metrics" && !state.auth.metrics_public;
    if !api && !metrics {
        return Ok(());
    }
    let reading = req.method() == Method::GET || req.method() == Method::HEAD;
    match state.auth.check_request(req.headers(), req.uri()) {
        Ok(Access::ReadOnly) if api && !reading && !readonly_may_post(path) => Err(ApiError::new(
            ApiCode::Forbidden,
            "a read-only token may not run /compare or /sweep (they write keys of their own); use a full-access \
             token, or /api/v1/batch and the Upstash routes, which refuse only the commands that write",
        )
        .into_response()),
        Ok(access) => {
            req.extensions_mut().insert(access);
            Ok(())
        }
        Err(denied) => {
            let mut res = ApiError::new(ApiCode::Unauthorized, denied.message()).into_response();
            challenge(&mut res);
            Err(res)
        }
    }
}

/// What a read-only token may do, as [`admit`] and [`readonly_check`]
/// decide it, in the words the OpenAPI document's description and
/// docs/api.md both use (cli/tests/cli_newcomer.rs holds them to it).
pub const READONLY_RULE: &str = "A read-only token may GET on `/api/v1`, open and close sessions, and POST \
`/api/v1/batch`, `/api/v1/batches` and a session's `/batch` whose every command is one the server's command \
table flags `readonly` (else 403 `readonly_token`, naming the first other command; nothing is sent), and \
cancel its live batches; `/compare` and `/sweep` (they write keys of their own) answer it 403 `forbidden`.";

/// The `/api/v1` paths a read-only token may POST (or DELETE) to: the
/// batch endpoints that check each command ([`readonly_check`]), a live
/// batch's cancel, and sessions.
fn readonly_may_post(path: &str) -> bool {
    let cancel = path.strip_prefix("/api/v1/batches/").is_some_and(|rest| rest.ends_with("/cancel"));
    path == "/api/v1/batch" || path == "/api/v1/batches" || cancel || path.starts_with("/api/v1/sessions")
}

/// The read-only rule on a batch: with [`Access::ReadOnly`], the first
/// command `table` does not allow a read-only token
/// ([`pipelab_engine::commands::Table::allows_readonly`]) is a 403 `readonly_token`
/// naming where it is (`field(i)`: `commands[i]`, or `text, line L`) and
/// its name; nothing is sent.
pub fn readonly_check(
    access: Access,
    table: &pipelab_engine::commands::Table,
    commands: &pipelab_engine::exec::Commands,
    field: impl Fn(usize) -> String,
) -> Result<(), ApiError> {
    if !access.read_only() {
        return Ok(());
    }
    match commands.iter().enumerate().find_map(|(i, argv)| Some((i, table.readonly_refusal(argv)?))) {
        None => Ok(()),
        Some((i, why)) => Err(ApiError::field(ApiCode::ReadonlyToken, field(i), format!("{why}; nothing was sent"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_by_digest() {
        let auth = Auth::new(&["full-1", "full-2"], &["ro"]).unwrap();
        assert_eq!(auth.check(Some(b"full-2")), Ok(Access::Full));
        assert_eq!(auth.check(Some(b"ro")), Ok(Access::ReadOnly));
        assert_eq!(auth.check(Some(b"full-")), Err(Denied::Wrong));
        assert_eq!(auth.check(Some(b"full-1x")), Err(Denied::Wrong));
        assert_eq!(auth.check(None), Err(Denied::Missing));
        assert_eq!(Auth::none().check(None), Ok(Access::Open));
        assert!(Auth::new(&[""], &[]).is_err());
        assert!(Auth::new(&["a"], &["a"]).unwrap_err().to_string().contains("fingerprint"));
        let ops = Auth::new(&["full-1"], &["ro"]).unwrap().with_operators(&["op"]).unwrap();
        assert_eq!(ops.check(Some(b"op")), Ok(Access::Operator));
        assert_eq!(ops.check(Some(b"full-1")), Ok(Access::Full));
        assert!(Auth::none().with_operators(&["op"]).unwrap().enabled());
        let twice = Auth::new(&["a"], &[]).unwrap().with_operators(&["a"]).unwrap_err().to_string();
        assert!(twice.contains("full-access token and as operator token"), "{twice}");
    }

    #[test]
    fn bearer_or_query_token() {
        let mut headers = HeaderMap::new();
        let uri: Uri = "/get/k?x=1&_token=a%20b+c".parse().unwrap();
        assert_eq!(presented(&headers, &uri), Some(b"a b c".to_vec()));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer  tok "));
        assert_eq!(presented(&headers, &uri), Some(b"tok".to_vec()));
        assert_eq!(presented(&HeaderMap::new(), &"/x".parse().unwrap()), None);
    }

    #[test]
    fn fingerprints_hide_the_token() {
        let f = fingerprint("secret-token");
        assert_eq!(f.len(), 8);
        assert!(!f.contains("secret"));
        assert_ne!(f, fingerprint("secret-token2"));
    }
}
