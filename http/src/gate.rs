//! Every per-request rule, as one tower service around the whole router, in
//! this order: the request guards ([`super::guard`]: a cross-site or
//! foreign-Host request is refused before its token is looked at), rate
//! limits ([`super::rate`]: guessing tokens is limited too), tokens
//! ([`super::auth`]), the sandbox visitor's cookie
//! ([`super::visitor`]); then the security headers
//! ([`super::headers`]) on whatever the answer is; each request in a
//! `request` span (method and path) with its status logged, a 5xx as an
//! error (what tower-http's `TraceLayer` logged, without its own layer).
//!
//! A service of its own around the router rather than `Router::layer` with
//! `axum::middleware::from_fn`: `Router::layer` wraps every route, and each
//! wrapped route is cloned (a boxed service) on every request, and `from_fn`
//! boxes the inner service once more; those layers were a measurable share
//! of a one-command request's instructions (callgrind over 2000 one-SET
//! requests, `bench/api_instructions.sh`).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::surface::{ApiSurface, Surface};
use super::{auth, budget, headers, rate, HttpState};

/// The rules in front of `inner` (the router).
#[derive(Clone)]
pub struct Gate<S> {
    state: HttpState,
    inner: S,
    surfaces: Arc<[Box<dyn Surface>]>,
}

impl<S> Gate<S> {
    /// `inner` (the router, its state given) behind the rules of `state`
    /// (its guard policy, rate limits, tokens and sandbox); a refusal is
    /// worded by the first of `surfaces` that serves its path, else by the
    /// last.
    pub fn new(state: HttpState, inner: S, surfaces: Vec<Box<dyn Surface>>) -> Gate<S> {
        assert!(!surfaces.is_empty(), "a gate in front of no surface");
        Gate { state, inner, surfaces: surfaces.into() }
    }
}

/// The index of the surface that words `path`'s refusals.
fn serving(surfaces: &[Box<dyn Surface>], path: &str) -> usize {
    surfaces.iter().position(|s| s.serves(path)).unwrap_or(surfaces.len() - 1)
}

/// The surface [`serving`] found, the API's when rate limits are off
/// (nothing but a rate limit asks then).
fn surface(found: &Option<(Arc<[Box<dyn Surface>]>, usize)>) -> &dyn Surface {
    found.as_ref().map_or(&ApiSurface, |(surfaces, i)| surfaces[*i].as_ref())
}

impl<S, B> tower::Service<axum::http::Request<B>> for Gate<S>
where
    S: tower::Service<Request, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
    B: HttpBody<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    /// A refused request is answered here; an admitted one runs, and what
    /// the rules add to its response (a rate-limit refusal found while it
    /// ran, the sandbox's cookie) is settled after; either way with the
    /// security headers.
    #[allow(clippy::result_large_err)]
    fn call(&mut self, req: axum::http::Request<B>) -> Self::Future {
        // The request's span names the path only: a query may hold a token (`?_token=`).
        let span = tracing::debug_span!("request", method = %req.method(), path = %req.uri().path());
        // Only rate limits' refusals need the surface (found now: the path goes with the request).
        let surfaces = (!self.state.rate.is_off()).then(|| (self.surfaces.clone(), serving(&self.surfaces, req.uri().path())));
        let mut req = req.map(Body::new);
        let running = span.in_scope(|| admit(&self.state, &mut req).map(|(admitted, cookie)| (self.inner.call(req), admitted, cookie)));
        let budget = self.state.budget.clone();
        // Only a sandbox visitor's response may carry a notice.
        let state = matches!(&running, Ok((_, _, Some(_)))).then(|| self.state.clone());
        let answered = async move {
            let mut res = match running {
                Err(Refused::Guard(res)) => res,
                Err(Refused::Rate(l)) => l.response(surface(&surfaces)),
                Ok((running, admitted, cookie)) => {
                    let Ok(mut res) = running.await;
                    if let Some((cookie, visitor)) = cookie {
                        res.headers_mut().append(header::SET_COOKIE, cookie);
                        if let Some(notice) = state.as_ref().and_then(|state| super::visitor::notice(state, &visitor)) {
                            res.headers_mut().insert(super::visitor::NOTICE, notice);
                        }
                    }
                    rate::settle(admitted, res, surface(&surfaces))
                }
            };
            headers::set(&mut res);
            let res = budget::charged(&budget, res);
            let status = res.status().as_u16();
            // 503 is a state the caller is told to wait out (draining, busy,
            // Redis away), not a fault of pipelab's.
            if res.status() == axum::http::StatusCode::SERVICE_UNAVAILABLE {
                tracing::warn!(status, "unavailable");
            } else if res.status().is_server_error() {
                tracing::error!(status, "request failed");
            } else {
                tracing::debug!(status, "answered");
            }
            Ok(res)
        };
        Box::pin(tracing::Instrument::instrument(answered, span))
    }
}

/// Why the gate answers a request itself.
enum Refused {
    /// The guards' or the token check's answer.
    Guard(Response),
    /// A rate limit, worded by the request's surface.
    Rate(rate::Limited),
}

/// Lets `req` in, as the router should see it (who sent it, in its
/// extensions), with its place under the rate limits and the sandbox's
/// cookie to set; or the refusal. The request is borrowed: moving it
/// through each rule copied it each time.
fn admit(state: &HttpState, req: &mut Request) -> Result<(rate::Admitted, Option<(axum::http::HeaderValue, pipelab_engine::sandbox::VisitorId)>), Refused> {
    if let Err(refused) = state.guard.check(req.method(), req.uri(), req.headers()) {
        return Err(Refused::Guard(refused.into_response()));
    }
    let admitted = rate::admit(state, req).map_err(Refused::Rate)?;
    if let Err(refused) = auth::admit(state, req) {
        return Err(Refused::Guard(rate::settle(admitted, refused, &ApiSurface)));
    }
    if let Err(refused) = super::drain::admit(state, req) {
        return Err(Refused::Guard(rate::settle(admitted, refused.into_response(), &ApiSurface)));
    }
    let cookie = super::visitor::admit(state, req);
    Ok((admitted, cookie))
}
