//! Every per-request rule, as one middleware, in this order: the request
//! guards ([`super::guard`]: a cross-site or foreign-Host request is
//! refused before its token is looked at), rate limits ([`super::rate`]:
//! guessing tokens is limited too), tokens ([`super::auth`]), the
//! sandbox's namespace ([`crate::sandbox::namespace`]); then the security
//! headers ([`super::headers`]) on whatever the answer is.
//!
//! One `from_fn` layer rather than a layer per rule: the router's layers
//! wrap every route, each layer is cloned on every request, and axum's
//! `from_fn` also boxes its future; three `from_fn` layers, the guard's
//! and three header layers were a measurable share of a one-command
//! request's instructions (callgrind over 2000
//! one-SET requests, `bench/README-api.md`).

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{auth, headers, rate, AppState};

/// The middleware: answers a refused request itself, else runs it and
/// settles what the rules add to its response (a rate-limit refusal found
/// while it ran, the sandbox's cookie); either way with the security headers.
pub async fn gate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let mut res = admit_and_run(&state, req, next).await;
    headers::set(&mut res);
    res
}

async fn admit_and_run(state: &AppState, req: Request, next: Next) -> Response {
    if let Err(refused) = state.guard.check(req.method(), req.uri(), req.headers()) {
        return refused.into_response();
    }
    let (req, admitted) = match rate::admit(state, req) {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let req = match auth::admit(state, req) {
        Ok(req) => req,
        Err(refused) => return rate::settle(admitted, refused),
    };
    let (req, cookie) = crate::sandbox::namespace::admit(state, req);
    let mut res = next.run(req).await;
    if let Some(cookie) = cookie {
        res.headers_mut().append(header::SET_COOKIE, cookie);
    }
    rate::settle(admitted, res)
}
