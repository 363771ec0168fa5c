//! Tokens: who may use the API and the Upstash-compatible surface.
//!
//! Without tokens configured everything is open, as before. With one or
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
//! A read-only token may run only commands that cannot change data or the
//! server: [`allows_readonly`] asks the server's own `COMMAND INFO` flags,
//! learned once per command name ([`FlagCache`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::RwLock;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::error::{ApiCode, ApiError};
use super::AppState;
use crate::exec::{ArgvRef, Commands};

/// Token flags of `pipelab serve`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AuthConfig {
    /// Full-access token (repeatable; the environment variable takes a
    /// comma-separated list). With any token set, /api/v1/* and the Upstash
    /// routes need one.
    #[arg(long = "token", env = "PIPELAB_TOKENS", value_delimiter = ',')]
    pub tokens: Vec<String>,

    /// File of full-access tokens, one a line (blank lines and lines
    /// starting with `#` are skipped).
    #[arg(long, env = "PIPELAB_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,

    /// Read-only token (repeatable; comma-separated in the environment):
    /// accepted, but every command that writes is refused (NOPERM).
    #[arg(long = "readonly-token", env = "PIPELAB_READONLY_TOKENS", value_delimiter = ',')]
    pub readonly_tokens: Vec<String>,

    /// Serve /metrics without a token even when tokens are configured.
    #[arg(long, env = "PIPELAB_METRICS_PUBLIC")]
    pub metrics_public: bool,
}

/// A token's SHA-256 digest.
type Digest = [u8; 32];

fn digest(token: &[u8]) -> Digest {
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
}

impl Access {
    pub fn read_only(self) -> bool {
        self == Access::ReadOnly
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

impl Auth {
    /// No tokens: everything open.
    pub fn none() -> Auth {
        Auth::default()
    }

    /// Full-access and read-only tokens given directly (tests, embedding).
    pub fn new<S: AsRef<str>>(full: &[S], readonly: &[S]) -> Result<Auth, String> {
        let mut auth = Auth::default();
        for (list, tokens, what) in [(&mut auth.full, full, "token"), (&mut auth.readonly, readonly, "read-only token")] {
            for t in tokens {
                let t = t.as_ref();
                if t.trim().is_empty() {
                    return Err(format!("an empty {what} (each token needs at least one character)"));
                }
                if t.trim() != t {
                    return Err(format!("a {what} with leading or trailing white space (fingerprint {})", fingerprint(t)));
                }
                list.push(digest(t.as_bytes()));
            }
        }
        if let Some(both) = auth.full.iter().find(|d| auth.readonly.contains(d)) {
            let hex: String = both[..4].iter().map(|b| format!("{b:02x}")).collect();
            return Err(format!("the same token is given as full-access and as read-only (fingerprint {hex})"));
        }
        Ok(auth)
    }

    /// The tokens of `cfg`, the file's included. Errors name the flag and
    /// the line, never a token.
    pub fn from_config(cfg: &AuthConfig) -> Result<Auth, String> {
        let mut full = cfg.tokens.clone();
        if let Some(path) = &cfg.tokens_file {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--tokens-file {}: {e}", path.display()))?;
            full.extend(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_string),
            );
        }
        let mut auth = Auth::new(&full, &cfg.readonly_tokens).map_err(|e| format!("--token / --readonly-token: {e}"))?;
        auth.metrics_public = cfg.metrics_public;
        if auth.enabled() {
            let prints: Vec<String> = full.iter().chain(&cfg.readonly_tokens).map(|t| fingerprint(t)).collect();
            tracing::info!(full = auth.full.len(), readonly = auth.readonly.len(), fingerprints = %prints.join(","), "tokens required");
        }
        Ok(auth)
    }

    /// Tokens are configured: requests need one.
    pub fn enabled(&self) -> bool {
        !self.full.is_empty() || !self.readonly.is_empty()
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
        let (full, readonly) = (matches(&self.full), matches(&self.readonly));
        if bool::from(full) {
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

/// The tower middleware (mounted on the whole router): `/api/v1/*` and
/// `/metrics` (unless `--metrics-public`) need a token when tokens are
/// configured; a read-only token may only GET on `/api/v1` (its batch
/// endpoints run commands that may write). The Upstash routes check their
/// tokens themselves, in Upstash's error shape ([`crate::upstash`]), and
/// every other path is open.
pub async fn require(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !state.auth.enabled() {
        return next.run(req).await;
    }
    let path = req.uri().path();
    let api = path == "/api/v1" || path.starts_with("/api/v1/");
    let metrics = path == "/metrics" && !state.auth.metrics_public;
    if !api && !metrics {
        return next.run(req).await;
    }
    match state.auth.check_request(req.headers(), req.uri()) {
        Ok(Access::ReadOnly) if api && req.method() != Method::GET && req.method() != Method::HEAD => ApiError::new(
            ApiCode::Forbidden,
            "a read-only token may not run batches here (they may write); use a full-access token, \
             or the Upstash routes, which refuse only the commands that write",
        )
        .into_response(),
        Ok(_) => next.run(req).await,
        Err(denied) => {
            let mut res = ApiError::new(ApiCode::Unauthorized, denied.message()).into_response();
            challenge(&mut res);
            res
        }
    }
}

/// What the server's `COMMAND INFO` says of each command name seen so far:
/// whether it may write (flags `write`, `may_replicate` or `admin`), per
/// lowercase name and per `container|subcommand`.
#[derive(Debug, Default)]
pub struct FlagCache {
    names: RwLock<HashMap<Vec<u8>, Flags>>,
}

#[derive(Debug, Clone, Copy)]
struct Flags {
    /// `write`, `may_replicate` or `admin` among its flags.
    writes: bool,
    /// A container (CONFIG, SCRIPT, …): its subcommands have flags of their own.
    container: bool,
    /// The server knows the command.
    exists: bool,
}

/// Names cached at most before names the server does not know stop being
/// remembered (Redis 7 has about 240 commands and 200 subcommands).
const MAX_UNKNOWN_CACHED: usize = 4096;

/// How long the one `COMMAND INFO` round trip may take.
const INFO_WAIT: Duration = Duration::from_secs(2);

impl FlagCache {
    /// Asks the server, in one `COMMAND INFO`, for the flags of every
    /// command name in `commands` not seen before. Errors (503) if Redis
    /// cannot be reached; names the server does not know are remembered as
    /// not writing (Redis refuses them anyway).
    pub async fn learn(&self, state: &AppState, commands: &Commands) -> Result<(), ApiError> {
        let mut unknown: Vec<Vec<u8>> = Vec::new();
        {
            let names = self.names.read().expect("not poisoned");
            for argv in commands.iter() {
                let Some(name) = argv.name() else { continue };
                let lower = name.to_ascii_lowercase();
                if !names.contains_key(&lower) && !unknown.contains(&lower) {
                    unknown.push(lower);
                }
            }
        }
        if unknown.is_empty() {
            return Ok(());
        }
        let mut argv: Vec<&[u8]> = vec![b"COMMAND", b"INFO"];
        argv.extend(unknown.iter().map(|n| n.as_slice()));
        let reply = super::run::command(state, &argv, INFO_WAIT).await?;
        let resp::Value::Array(entries) = reply.unattributed() else {
            return Err(ApiError::unavailable(format!("COMMAND INFO answered {}", reply.display())));
        };
        let mut names = self.names.write().expect("not poisoned");
        for (name, entry) in unknown.iter().zip(entries) {
            match entry {
                resp::Value::Array(_) => remember(&mut names, entry),
                // Not a command of this server: remembered while the cache
                // is small, so that made-up names cannot grow it forever
                // (past that they are asked again each time).
                _ if names.len() < MAX_UNKNOWN_CACHED => {
                    names.insert(name.clone(), Flags { writes: false, container: false, exists: false });
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Is `name` a command of the server (as far as [`FlagCache::learn`] found)?
    pub fn is_command(&self, name: &[u8]) -> bool {
        self.get(&name.to_ascii_lowercase()).is_some_and(|f| f.exists)
    }

    fn get(&self, name: &[u8]) -> Option<Flags> {
        self.names.read().expect("not poisoned").get(name).copied()
    }
}

/// Stores one `COMMAND INFO` entry (`[name, arity, flags, first, last,
/// step, acl categories, tips, key specs, subcommands]`, Redis 7) and its
/// subcommands'.
fn remember(names: &mut HashMap<Vec<u8>, Flags>, entry: &resp::Value) {
    let resp::Value::Array(items) = entry else { return };
    let text = |v: &resp::Value| match v {
        resp::Value::Simple(s) | resp::Value::Bulk(s) => Some(s.to_ascii_lowercase()),
        _ => None,
    };
    let Some(name) = items.first().and_then(text) else { return };
    let writes = match items.get(2) {
        Some(resp::Value::Array(flags)) => flags
            .iter()
            .filter_map(text)
            .any(|f| matches!(f.as_slice(), b"write" | b"may_replicate" | b"admin")),
        _ => true,
    } || key_specs_write(items.get(8));
    let subcommands = match items.get(9) {
        Some(resp::Value::Array(subs)) if !subs.is_empty() => subs.as_slice(),
        _ => &[],
    };
    for sub in subcommands {
        remember(names, sub);
    }
    names.insert(name, Flags { writes, container: !subcommands.is_empty(), exists: true });
}

/// Does a key spec of the entry (`[…, "flags", ["RW", "access", "update"], …]`)
/// write its key? Redis 7.0 flags EVAL and FCALL only there (`RW`, "we
/// cannot tell how the keys will be used so we assume the worst").
fn key_specs_write(specs: Option<&resp::Value>) -> bool {
    let Some(resp::Value::Array(specs)) = specs else { return false };
    specs.iter().any(|spec| {
        let resp::Value::Array(fields) = spec else { return false };
        fields.windows(2).any(|pair| match pair {
            [resp::Value::Simple(k) | resp::Value::Bulk(k), resp::Value::Array(flags)] if k.eq_ignore_ascii_case(b"flags") => {
                flags.iter().any(|f| match f {
                    resp::Value::Simple(f) | resp::Value::Bulk(f) => {
                        [&b"RW"[..], b"OW", b"RM", b"insert", b"update", b"delete"].iter().any(|w| f.eq_ignore_ascii_case(w))
                    }
                    _ => false,
                })
            }
            _ => false,
        })
    })
}

/// May a read-only token run `argv`? True unless the server flags the
/// command (or its subcommand, for containers such as `CONFIG SET`) as
/// `write`, `may_replicate` or `admin`, or a key spec of it as writing
/// (`RW`, `OW`, `RM`, `insert`, `update`, `delete`); false for a name whose flags are
/// not known yet ([`FlagCache::learn`] first). The one place the read-only
/// rule lives: it will ask the command table (`backend/src/commands/`)
/// instead once that exists.
pub fn allows_readonly(flags: &FlagCache, argv: ArgvRef<'_>) -> bool {
    let Some(name) = argv.name() else { return true };
    let lower = name.to_ascii_lowercase();
    let Some(f) = flags.get(&lower) else { return false };
    if f.container {
        if let Some(sub) = argv.get(1) {
            let mut full = lower.clone();
            full.push(b'|');
            full.extend(sub.to_ascii_lowercase());
            if let Some(s) = flags.get(&full) {
                return !s.writes;
            }
        }
    }
    !f.writes
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
        assert!(Auth::new(&["a"], &["a"]).unwrap_err().contains("fingerprint"));
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
