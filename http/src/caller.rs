//! Who sent a request, as the layers in front of the handlers found it:
//! the token's [`Access`] (`auth`), the sandbox visitor's [`VisitorId`]
//! (`visitor`) and the rate-limit [`Client`] (`rate`), each left in the
//! request's extensions; and the client whose fair share it counts
//! against ([`ClientKey`]). One extractor, so that a handler takes one
//! argument for them instead of several optional extensions.

use std::convert::Infallible;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{Extensions, HeaderMap, Uri};

use super::auth::Access;
use super::error::ApiError;
use super::rate::Client;
use super::{auth, rate, HttpState};
use pipelab_engine::engine::ClientKey;
use pipelab_engine::sandbox::VisitorId;

/// The caller of a request: `access` is [`Access::Open`] when no token is
/// configured; `visitor` is set only with `--sandbox`; `client` only when rate
/// limits are on; `share` whenever the request came through a socket.
#[derive(Debug, Clone)]
pub struct Caller {
    pub access: Access,
    pub visitor: Option<VisitorId>,
    pub client: Option<Client>,
    pub share: Option<ClientKey>,
}

impl Caller {
    /// Who the engine chooses a Redis for.
    pub fn who(&self) -> pipelab_engine::engine::Who<'_> {
        pipelab_engine::engine::Who { access: self.access.rules(), visitor: self.visitor.as_ref(), client: self.share }
    }
}

/// Any router state that holds the HTTP layer's (borrowed: no clone per request).
impl<S: AsRef<HttpState> + Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Caller, Infallible> {
        let state = state.as_ref();
        let ext = &parts.extensions;
        Ok(Caller {
            access: ext.get::<Access>().copied().unwrap_or(Access::Open),
            visitor: ext.get::<VisitorId>().cloned(),
            client: ext.get::<Client>().cloned(),
            share: client_key(state, &parts.headers, &parts.uri, ext),
        })
    }
}

impl Caller {
    /// The caller of `req` and its body as `B` (`B`'s rejection if it is
    /// not one): for the extractors that check a body against its caller
    /// (the API's `PreparedBatch` and `PreparedSweep`).
    pub async fn with_body<S, B>(req: Request, state: &S) -> Result<(Caller, B), ApiError>
    where
        S: AsRef<HttpState> + Send + Sync,
        B: FromRequest<S, Rejection = ApiError>,
    {
        let (mut parts, body) = req.into_parts();
        let Ok(caller) = Caller::from_request_parts(&mut parts, state).await;
        Ok((caller, B::from_request(Request::from_parts(parts, body), state).await?))
    }
}

/// The client a request counts against (`pipelab_engine::engine::share`): the
/// digest of the token it presents (tokens configured), else its address
/// (as the rate limits see it: an IPv6 one by its /64); `None` for a
/// request that came through no socket (a test's `Router::oneshot`).
pub fn client_key(state: &HttpState, headers: &HeaderMap, uri: &Uri, extensions: &Extensions) -> Option<ClientKey> {
    if state.auth.enabled() {
        if let Some(token) = auth::presented(headers, uri) {
            return Some(ClientKey::Token(auth::digest(&token)));
        }
    }
    let peer = extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|c| c.0.ip());
    let address = rate::forwarded_for(headers, state.rate.limits().trust_forwarded_for).or(peer)?;
    Some(ClientKey::Address(rate::bucket_address(address)))
}
