//! The HTTP layer under both surfaces of `pipelab-server` (the REST API and
//! the Upstash-compatible one) and the doctor's page: the server's
//! configuration ([`config`]), logs and metrics ([`telemetry`]), the
//! listening socket's caps ([`net`]), the page's files ([`page`]), the
//! gate in front of the whole router ([`gate`]: guards, rate limits,
//! tokens, the sandbox visitor's cookie, security headers), who sent a
//! request ([`caller`]), the memory of answers being written
//! ([`budget`]), and the one JSON error shape ([`error`]). Each surface words the gate's refusals its own way through
//! [`surface::Surface`], so nothing here looks at a path to guess whose
//! request it is. [`HttpState`] is what these need: the engine and the
//! HTTP policy, built once at start-up.

pub mod auth;
pub mod budget;
pub mod caller;
pub mod config;
pub mod drain;
pub mod error;
pub mod gate;
pub mod guard;
pub mod headers;
pub mod net;
pub mod page;
pub mod protected;
pub mod rate;
pub mod surface;
pub mod telemetry;
pub mod visitor;

use std::sync::Arc;

use crate::config::{Limits, UpstashSettings};
use pipelab_engine::engine::Engine;

/// The engine and the HTTP policy in front of it; cheap to clone.
#[derive(Clone)]
pub struct HttpState(Arc<HttpInner>);

pub struct HttpInner {
    /// Runs every batch: the Redis behind the server, slots, shares, sessions.
    pub engine: Engine,
    pub limits: Limits,
    /// Who may send requests ([`guard`]).
    pub guard: guard::Policy,
    /// The tokens requests need (none: open); see [`auth`].
    pub auth: auth::Auth,
    /// Rate limits per client address and token ([`rate`]).
    pub rate: rate::Limiter,
    /// The Upstash-compatible surface's settings.
    pub upstash: UpstashSettings,
    /// The memory of answers being written ([`budget`]).
    pub budget: Arc<budget::Budget>,
    /// Set on SIGTERM: the node drains ([`drain`]).
    pub drain: Arc<drain::Drain>,
}

impl HttpState {
    /// Shares `inner`, put together by the server's builder.
    pub fn new(inner: HttpInner) -> HttpState {
        HttpState(Arc::new(inner))
    }
}

impl std::ops::Deref for HttpState {
    type Target = HttpInner;
    fn deref(&self) -> &HttpInner {
        &self.0
    }
}

impl AsRef<HttpState> for HttpState {
    fn as_ref(&self) -> &HttpState {
        self
    }
}
