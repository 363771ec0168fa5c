//! Rate limits per client address and per token: requests, commands and
//! request bytes per second, each with a burst.
//!
//! Each limit is a GCRA bucket of `governor` (a keyed limiter): `burst`
//! cells, refilled at `per_second`. A request takes one cell of the request
//! limit when it arrives, its body's bytes from the byte limit (its
//! `Content-Length` before anything is read; a chunked body's frames as they
//! arrive), and a batch its commands from the command limit once they are
//! parsed, before anything is sent. Each is taken from the client
//! address's bucket and, when the request carries a valid token, from the
//! token's too: a token shared by many machines is limited as one client.
//!
//! Past a limit the answer is 429 with `Retry-After` (whole seconds, at
//! least 1), in the error shape of the surface that serves the path
//! ([`Surface`]: the API's `{"error": {"code": "rate_limited", …}}`,
//! Upstash's `{"error": "ERR …"}`); nothing is sent to Redis. A request that could never fit (more commands or bytes than the
//! burst) is a 413 instead: waiting would not help. `/healthz` and `/readyz`
//! are never limited. Each refusal is counted in `/metrics` as
//! `pipelab_rate_limited_total{limit, by}`.
//!
//! The client address is the socket's peer (`ConnectInfo`, set per
//! connection by `pipelab serve`), an IPv6 address by its /64 (one host
//! usually has the whole prefix); the last `X-Forwarded-For` entry only with
//! `--trust-forwarded-for` (behind a proxy that appends it). The keyed
//! buckets are pruned every [`PRUNE_EVERY`] checks of those whose state is
//! that of a full bucket, so memory follows the clients of the last
//! `burst / per_second` seconds.
//!
//! Off by default (each limit 0); [`RateLimits::sandbox`] is the preset of
//! a public deployment.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::{ApiCode, ApiError};
use super::surface::Surface;
use super::HttpState;

pub use crate::config::RateConfig;

/// One limit: `burst` cells, refilled at `per_second` a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub per_second: NonZeroU32,
    pub burst: NonZeroU32,
}

impl Rate {
    /// `per_second` with a burst of `burst` (both at least 1).
    pub const fn new(per_second: u32, burst: u32) -> Rate {
        match (NonZeroU32::new(per_second), NonZeroU32::new(burst)) {
            (Some(per_second), Some(burst)) => Rate { per_second, burst },
            _ => panic!("a rate and its burst are at least 1"),
        }
    }
}

/// The three limits (`None`: off) and where the client address comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateLimits {
    pub requests: Option<Rate>,
    pub commands: Option<Rate>,
    pub bytes: Option<Rate>,
    pub trust_forwarded_for: bool,
}

impl RateLimits {
    /// No limit: the default of `pipelab serve` (on localhost, one user).
    pub const fn off() -> RateLimits {
        RateLimits { requests: None, commands: None, bytes: None, trust_forwarded_for: false }
    }

    /// The preset of a public sandbox: 20 requests/s (burst 60: the page and
    /// its lessons load at once), 20,000 commands/s (burst 100,000: a
    /// lesson's biggest batch), 1 MiB/s of request bodies (burst 10 MiB).
    pub const fn sandbox() -> RateLimits {
        RateLimits {
            requests: Some(Rate::new(20, 60)),
            commands: Some(Rate::new(20_000, 100_000)),
            bytes: Some(Rate::new(1 << 20, 10 << 20)),
            trust_forwarded_for: false,
        }
    }

    /// The limits of `cfg` over `preset` ([`RateLimits::off`] or
    /// [`RateLimits::sandbox`]): a rate given replaces the preset's (0: off),
    /// a burst given alone changes the preset's burst. Errors name the flag.
    pub fn from_config(cfg: &RateConfig, preset: RateLimits) -> Result<RateLimits, RateFlagError> {
        let one = |name: &'static str, rate: Option<u32>, burst: Option<u32>, preset: Option<Rate>| -> Result<Option<Rate>, RateFlagError> {
            let per_second = match rate {
                Some(0) if burst.is_some() => return Err(RateFlagError::BurstOfZero { name }),
                Some(0) => return Ok(None),
                Some(r) => r,
                None => match preset {
                    Some(p) => p.per_second.get(),
                    None if burst.is_some() => return Err(RateFlagError::BurstAlone { name }),
                    None => return Ok(None),
                },
            };
            let burst = burst.or(rate.is_none().then(|| preset.map(|p| p.burst.get())).flatten()).unwrap_or(per_second);
            Ok(Some(Rate::new(per_second, burst)))
        };
        Ok(RateLimits {
            requests: one("requests", cfg.rate_requests, cfg.rate_requests_burst, preset.requests)?,
            commands: one("commands", cfg.rate_commands, cfg.rate_commands_burst, preset.commands)?,
            bytes: one("bytes", cfg.rate_bytes, cfg.rate_bytes_burst, preset.bytes)?,
            trust_forwarded_for: cfg.trust_forwarded_for || preset.trust_forwarded_for,
        })
    }
}

/// A `--rate-*` flag given without the one it needs; `name`: what the rate
/// counts (`requests`, `commands`, `bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RateFlagError {
    #[error("--rate-{name}-burst needs --rate-{name} above 0")]
    BurstOfZero { name: &'static str },
    #[error("--rate-{name}-burst needs --rate-{name}")]
    BurstAlone { name: &'static str },
}

/// What a limit counts: the `limit` label of `pipelab_rate_limited_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Requests,
    Commands,
    Bytes,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Requests => "requests",
            Kind::Commands => "commands",
            Kind::Bytes => "bytes",
        }
    }
}

/// Whose bucket was empty: the `by` label of `pipelab_rate_limited_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Address,
    Token,
}

/// Why a request is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    /// Over the limit now: 429, retry after `retry_after`.
    Wait { kind: Kind, by: By, rate: Rate, retry_after: Duration },
    /// `n` is more than the burst: no wait would let it through (413).
    TooBig { kind: Kind, n: u64, rate: Rate },
}

impl Limited {
    /// `Retry-After` in whole seconds, at least 1 (429 only).
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Limited::Wait { retry_after, .. } => Some(retry_after.as_secs_f64().ceil().max(1.0) as u64),
            Limited::TooBig { .. } => None,
        }
    }

    /// The API's error: 429 `rate_limited`, or 413 `too_many_commands` /
    /// `body_too_large` for a request over the burst.
    pub fn api_error(&self) -> ApiError {
        match *self {
            Limited::Wait { kind, by, rate, .. } => {
                let whose = match by {
                    By::Address => "this client address",
                    By::Token => "this token",
                };
                ApiError::new(
                    ApiCode::RateLimited,
                    format!(
                        "rate limited: {whose} is over {} {} per second (burst {}); retry after {} s (Retry-After)",
                        rate.per_second,
                        kind.name(),
                        rate.burst,
                        self.retry_after_secs().unwrap_or(1)
                    ),
                )
            }
            Limited::TooBig { kind, n, rate } => {
                let (code, field) = match kind {
                    Kind::Commands => (ApiCode::TooManyCommands, "commands"),
                    _ => (ApiCode::BodyTooLarge, "request body"),
                };
                ApiError::field(
                    code,
                    field,
                    format!(
                        "{n} {} in one request, over the rate limit's burst of {} (--rate-{}-burst); nothing was sent",
                        kind.name(),
                        rate.burst,
                        kind.name()
                    ),
                )
            }
        }
    }

    /// The refusal in `surface`'s error shape, with `Retry-After`.
    pub fn response(&self, surface: &dyn Surface) -> Response {
        let mut res = surface.refusal(self.api_error());
        if let Some(secs) = self.retry_after_secs() {
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

/// Every this many checks, the buckets of clients back to a full bucket are dropped.
pub const PRUNE_EVERY: u64 = 4096;

/// One limit's buckets, per client address and per token digest.
struct Buckets {
    rate: Rate,
    by_address: DefaultKeyedRateLimiter<IpAddr>,
    by_token: DefaultKeyedRateLimiter<[u8; 32]>,
}

impl Buckets {
    fn new(rate: Rate) -> Buckets {
        let quota = Quota::per_second(rate.per_second).allow_burst(rate.burst);
        Buckets { rate, by_address: RateLimiter::dashmap(quota), by_token: RateLimiter::dashmap(quota) }
    }

    fn take(&self, kind: Kind, client: &Client, n: u64) -> Result<(), Limited> {
        let Some(cells) = NonZeroU32::new(n.min(u64::from(u32::MAX)) as u32) else { return Ok(()) };
        if n > u64::from(self.rate.burst.get()) {
            return Err(Limited::TooBig { kind, n, rate: self.rate });
        }
        let wait = |not_until: governor::NotUntil<<governor::clock::DefaultClock as Clock>::Instant>, by| Limited::Wait {
            kind,
            by,
            rate: self.rate,
            retry_after: not_until.wait_time_from(self.by_address.clock().now()),
        };
        // n <= burst: `InsufficientCapacity` cannot happen.
        if let Ok(Err(not_until)) = self.by_address.check_key_n(&client.address, cells) {
            return Err(wait(not_until, By::Address));
        }
        if let Some(token) = &client.token {
            if let Ok(Err(not_until)) = self.by_token.check_key_n(token, cells) {
                return Err(wait(not_until, By::Token));
            }
        }
        Ok(())
    }

    fn prune(&self) {
        self.by_address.retain_recent();
        self.by_address.shrink_to_fit();
        self.by_token.retain_recent();
        self.by_token.shrink_to_fit();
    }

    fn len(&self) -> usize {
        self.by_address.len() + self.by_token.len()
    }
}

/// The server's buckets ([`HttpState`]'s `rate`).
pub struct Limiter {
    limits: RateLimits,
    requests: Option<Buckets>,
    commands: Option<Buckets>,
    bytes: Option<Buckets>,
    checks: AtomicU64,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter::new(RateLimits::off())
    }
}

impl Limiter {
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter {
            limits,
            requests: limits.requests.map(Buckets::new),
            commands: limits.commands.map(Buckets::new),
            bytes: limits.bytes.map(Buckets::new),
            checks: AtomicU64::new(0),
        }
    }

    pub fn limits(&self) -> RateLimits {
        self.limits
    }

    /// No limit is on: the middleware passes requests straight through.
    pub fn is_off(&self) -> bool {
        self.requests.is_none() && self.commands.is_none() && self.bytes.is_none()
    }

    fn buckets(&self, kind: Kind) -> Option<&Buckets> {
        match kind {
            Kind::Requests => self.requests.as_ref(),
            Kind::Commands => self.commands.as_ref(),
            Kind::Bytes => self.bytes.as_ref(),
        }
    }

    /// Takes `n` cells of `kind` from `client`'s buckets (its address's,
    /// and its token's if it has one), or says why not; a refusal is
    /// counted in `/metrics`.
    pub fn take(&self, kind: Kind, client: &Client, n: u64) -> Result<(), Limited> {
        let Some(buckets) = self.buckets(kind) else { return Ok(()) };
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            self.prune();
        }
        buckets.take(kind, client, n).inspect_err(|l| {
            let by = match l {
                Limited::Wait { by: By::Address, .. } | Limited::TooBig { .. } => "address",
                Limited::Wait { by: By::Token, .. } => "token",
            };
            crate::telemetry::install_metrics();
            metrics::counter!("pipelab_rate_limited_total", "limit" => kind.name(), "by" => by).increment(1);
        })
    }

    /// Drops the buckets that are full again (clients idle for at least
    /// `burst / per_second`).
    pub fn prune(&self) {
        for b in [&self.requests, &self.commands, &self.bytes].into_iter().flatten() {
            b.prune();
        }
    }

    /// Buckets held, over every limit (for tests and `/metrics`).
    pub fn len(&self) -> usize {
        [&self.requests, &self.commands, &self.bytes].into_iter().flatten().map(Buckets::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Who a request counts against, left in its extensions by [`admit`] for
/// the handlers that count commands ([`take_commands`]).
#[derive(Debug, Clone)]
pub struct Client {
    /// The client address, an IPv6 one cut to its /64.
    pub address: IpAddr,
    /// The digest of the request's valid token, if any.
    pub token: Option<[u8; 32]>,
    /// A refusal found after the middleware let the request in (its
    /// commands, a chunked body's bytes): the middleware answers it.
    refused: Arc<Mutex<Option<Limited>>>,
}

impl Client {
    /// A client at `address` with `token` (digest).
    pub fn new(address: IpAddr, token: Option<[u8; 32]>) -> Client {
        Client { address: bucket_address(address), token, refused: Default::default() }
    }

    /// The client of a request [`admit`] let in (none when limits are off).
    pub fn of(req: &Request) -> Option<Client> {
        req.extensions().get::<Client>().cloned()
    }

    fn refuse(&self, limited: Limited) {
        *self.refused.lock().unwrap_or_else(|e| e.into_inner()) = Some(limited);
    }
}

/// An address's bucket key: an IPv4-mapped IPv6 address as IPv4, another
/// IPv6 address by its /64.
pub fn bucket_address(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
        v4 => v4,
    }
}

/// The client address of `req`: the socket's peer, or with
/// `trust_forwarded_for` the last `X-Forwarded-For` entry that is an IP
/// address (what the nearest proxy saw). Unknown (in-process, no
/// `ConnectInfo`): the unspecified address, one bucket for all.
pub fn client_address(req: &Request, trust_forwarded_for: bool) -> IpAddr {
    if let Some(ip) = forwarded_for(req.headers(), trust_forwarded_for) {
        return ip;
    }
    match req.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(peer)) => peer.ip(),
        None => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

/// With `trust_forwarded_for`, the last `X-Forwarded-For` entry that is an
/// IP address (what the nearest proxy saw).
pub fn forwarded_for(headers: &axum::http::HeaderMap, trust_forwarded_for: bool) -> Option<IpAddr> {
    if !trust_forwarded_for {
        return None;
    }
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|s| s.trim().parse::<IpAddr>().ok())
        .next_back()
}

/// Takes `n` commands from the request's client (`client`, from its
/// extensions: `None` when limits are off). Called by each handler once
/// its commands are parsed, before anything is sent; a refusal is answered
/// by [`settle`] (429 with `Retry-After`, or 413), the error returned here
/// only stops the handler.
pub fn take_commands(state: &HttpState, client: Option<&Client>, n: usize) -> Result<(), ApiError> {
    let Some(client) = client else { return Ok(()) };
    state.rate.take(Kind::Commands, client, n as u64).map_err(|l| {
        client.refuse(l);
        l.api_error()
    })
}

/// Takes `n` commands from `client` if its buckets have room now, without
/// refusing the request: for work a handler may leave out (a sweep's
/// repeats). `true` when limits are off.
pub fn take_commands_if_room(state: &HttpState, client: Option<&Client>, n: usize) -> bool {
    let (Some(client), Some(buckets)) = (client, state.rate.buckets(Kind::Commands)) else { return true };
    buckets.take(Kind::Commands, client, n as u64).is_ok()
}

/// A request admitted under the limits, to settle once answered: its
/// [`Client`], `None` when limits are off or the path is exempt.
pub struct Admitted(Option<Client>);

/// The request side (in [`super::gate`], before the token check so that
/// guessing tokens is limited too): a request past the request limit, or
/// whose `Content-Length` is past the byte limit, is refused (`Err`, the
/// 429 or 413) before its body is read; the request's [`Client`] is left
/// in its extensions.
pub fn admit(state: &HttpState, req: &mut Request) -> Result<Admitted, Limited> {
    if state.rate.is_off() {
        return Ok(Admitted(None));
    }
    let path = req.uri().path();
    if path == "/healthz" || path == "/readyz" {
        return Ok(Admitted(None));
    }
    let address = client_address(req, state.rate.limits.trust_forwarded_for);
    let token = if state.auth.enabled() { super::auth::token_key(&state.auth, req.headers(), req.uri()) } else { None };
    let client = Client::new(address, token);
    if let Err(l) = state.rate.take(Kind::Requests, &client, 1) {
        return Err(l);
    }
    if state.rate.bytes.is_some() {
        let length = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        match length {
            Some(n) => {
                state.rate.take(Kind::Bytes, &client, n)?;
            }
            None => {
                let body = std::mem::take(req.body_mut());
                *req.body_mut() = Body::new(Metered { inner: body, state: state.clone(), client: client.clone() });
            }
        }
    }
    req.extensions_mut().insert(client.clone());
    Ok(Admitted(Some(client)))
}

/// The response side: a refusal found while the request ran (its
/// commands, chunked body bytes) replaces the handler's answer, in
/// `surface`'s shape.
pub fn settle(admitted: Admitted, mut res: Response, surface: &dyn Surface) -> Response {
    let Admitted(Some(client)) = admitted else { return res };
    let refused = client.refused.lock().unwrap_or_else(|e| e.into_inner()).take();
    match refused {
        Some(l) => {
            let mut limited = l.response(surface);
            // Keep what the handler marked its answer with (the Upstash endpoint family).
            *limited.extensions_mut() = std::mem::take(res.extensions_mut());
            limited
        }
        None => res,
    }
}

/// A body without `Content-Length`: each frame's bytes are taken from the
/// byte limit as it arrives; past it the body ends in an error (the
/// handler stops) and the client's refusal is answered by [`settle`].
struct Metered {
    inner: Body,
    state: HttpState,
    client: Client,
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        let frame = std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx));
        if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(|f| f.data_ref())) {
            let n = data.map_or(0, |d| d.len() as u64);
            if let Err(l) = this.state.rate.take(Kind::Bytes, &this.client, n) {
                this.client.refuse(l);
                return Poll::Ready(Some(Err(axum::Error::new(l.api_error().body.message))));
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl IntoResponse for Limited {
    fn into_response(self) -> Response {
        self.response(&super::surface::ApiSurface)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn client(ip: &str, token: Option<u8>) -> Client {
        Client::new(ip.parse().unwrap(), token.map(|t| [t; 32]))
    }

    #[test]
    fn a_burst_then_429_per_address_and_per_token() {
        let limiter = Limiter::new(RateLimits { requests: Some(Rate::new(1, 3)), ..RateLimits::off() });
        let a = client("10.0.0.1", None);
        for _ in 0..3 {
            assert_eq!(limiter.take(Kind::Requests, &a, 1), Ok(()));
        }
        let l = limiter.take(Kind::Requests, &a, 1).unwrap_err();
        assert!(matches!(l, Limited::Wait { by: By::Address, .. }), "{l:?}");
        assert_eq!(l.retry_after_secs(), Some(1));
        assert_eq!(l.api_error().status(), StatusCode::TOO_MANY_REQUESTS);
        // Another address has its own bucket; one token on two addresses shares one.
        let (b, c) = (client("10.0.0.2", Some(7)), client("10.0.0.3", Some(7)));
        for _ in 0..3 {
            assert_eq!(limiter.take(Kind::Requests, &b, 1), Ok(()));
        }
        assert!(matches!(limiter.take(Kind::Requests, &c, 1), Err(Limited::Wait { by: By::Token, .. })));
    }

    #[test]
    fn more_than_the_burst_is_413() {
        let limiter = Limiter::new(RateLimits { commands: Some(Rate::new(10, 100)), ..RateLimits::off() });
        let l = limiter.take(Kind::Commands, &client("::1", None), 101).unwrap_err();
        assert_eq!(l.api_error().code(), ApiCode::TooManyCommands);
        assert_eq!(l.retry_after_secs(), None);
        assert_eq!(limiter.take(Kind::Commands, &client("::1", None), 100), Ok(()));
        assert_eq!(limiter.take(Kind::Requests, &client("::1", None), 1), Ok(()), "requests are not limited");
    }

    #[test]
    fn full_buckets_are_pruned() {
        let limiter = Limiter::new(RateLimits { requests: Some(Rate::new(1000, 1)), ..RateLimits::off() });
        for i in 0..100u8 {
            limiter.take(Kind::Requests, &client(&format!("10.0.1.{i}"), None), 1).unwrap();
        }
        assert_eq!(limiter.len(), 100);
        // One cell at 1000/s: every bucket is full again after 1 ms.
        std::thread::sleep(Duration::from_millis(50));
        limiter.prune();
        assert_eq!(limiter.len(), 0);
    }

    #[test]
    fn forwarded_for_only_when_trusted() {
        let mut req = Request::new(Body::empty());
        req.headers_mut().insert("x-forwarded-for", HeaderValue::from_static("1.1.1.1, bogus, 2.2.2.2"));
        req.extensions_mut().insert(ConnectInfo("9.9.9.9:1".parse::<SocketAddr>().unwrap()));
        assert_eq!(client_address(&req, false), "9.9.9.9".parse::<IpAddr>().unwrap());
        assert_eq!(client_address(&req, true), "2.2.2.2".parse::<IpAddr>().unwrap(), "the last entry: the nearest proxy's");
        let bare = Request::new(Body::empty());
        assert_eq!(client_address(&bare, true), IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    }

    #[test]
    fn ipv6_by_its_64() {
        assert_eq!(bucket_address("2001:db8:1:2:3:4:5:6".parse().unwrap()), "2001:db8:1:2::".parse::<IpAddr>().unwrap());
        assert_eq!(bucket_address("::ffff:10.1.2.3".parse().unwrap()), "10.1.2.3".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn flags_over_a_preset() {
        let parse = |cfg: RateConfig, preset| RateLimits::from_config(&cfg, preset);
        assert_eq!(parse(RateConfig::default(), RateLimits::off()), Ok(RateLimits::off()));
        assert_eq!(parse(RateConfig::default(), RateLimits::sandbox()), Ok(RateLimits::sandbox()));
        let cfg = RateConfig { rate_requests: Some(5), rate_commands: Some(0), rate_bytes_burst: Some(99), ..Default::default() };
        let l = parse(cfg, RateLimits::sandbox()).unwrap();
        assert_eq!(l.requests, Some(Rate::new(5, 5)));
        assert_eq!(l.commands, None);
        assert_eq!(l.bytes, Some(Rate::new(1 << 20, 99)));
        let err = parse(RateConfig { rate_bytes_burst: Some(9), ..Default::default() }, RateLimits::off()).unwrap_err().to_string();
        assert!(err.contains("--rate-bytes-burst needs --rate-bytes"), "{err}");
    }
}
