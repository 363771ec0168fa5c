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
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::{auth, budget, headers, rate, AppState};

/// The rules in front of `inner` (the router).
#[derive(Clone)]
pub struct Gate<S> {
    state: AppState,
    inner: S,
}

impl<S> Gate<S> {
    /// `inner` (the router, its state given) behind the rules of `state`
    /// (its guard policy, rate limits, tokens and sandbox).
    pub fn new(state: AppState, inner: S) -> Gate<S> {
        Gate { state, inner }
    }
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
        let running = span.in_scope(|| admit(&self.state, req.map(Body::new)).map(|(req, admitted, cookie)| (self.inner.call(req), admitted, cookie)));
        let budget = self.state.budget.clone();
        let answered = async move {
            let mut res = match running {
                Err(refused) => refused,
                Ok((running, admitted, cookie)) => {
                    let Ok(mut res) = running.await;
                    if let Some(cookie) = cookie {
                        res.headers_mut().append(header::SET_COOKIE, cookie);
                    }
                    rate::settle(admitted, res)
                }
            };
            headers::set(&mut res);
            let res = budget::charged(&budget, res);
            let status = res.status().as_u16();
            if res.status().is_server_error() {
                tracing::error!(status, "request failed");
            } else {
                tracing::debug!(status, "answered");
            }
            Ok(res)
        };
        Box::pin(tracing::Instrument::instrument(answered, span))
    }
}

/// The request as the router should see it, its place under the rate
/// limits and the sandbox's cookie to set; or the refusal.
// The refusal is the answer, sent as it is: boxing it would only move it.
#[allow(clippy::result_large_err)]
fn admit(state: &AppState, req: Request) -> Result<(Request, rate::Admitted, Option<axum::http::HeaderValue>), Response> {
    if let Err(refused) = state.guard.check(req.method(), req.uri(), req.headers()) {
        return Err(refused.into_response());
    }
    let (req, admitted) = rate::admit(state, req)?;
    let req = match auth::admit(state, req) {
        Ok(req) => req,
        Err(refused) => return Err(rate::settle(admitted, refused)),
    };
    let (req, cookie) = super::visitor::admit(state, req);
    Ok((req, admitted, cookie))
}
