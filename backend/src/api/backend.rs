//! Which Redis serves a request: the engine's choice
//! ([`pipelab_engine::engine::backend`]) for the request's caller, made once,
//! before its commands are checked (the table is that Redis's) and run.

use pipelab_http::caller::Caller;
use pipelab_http::error::ApiError;
use super::AppState;

use pipelab_engine::engine::Backend;

impl AppState {
    /// The Redis that serves `caller`.
    ///
    /// Errors: in the sandbox, 429 `too_many_visitors` (with `Retry-After`)
    /// for a new visitor past their address's rate, 503 `redis_unavailable`
    /// when no redis-server could be started for the visitor.
    pub async fn backend(&self, caller: &Caller) -> Result<Backend, ApiError> {
        Ok(self.http.engine.backend(caller.who()).await?)
    }

    /// [`AppState::backend`] for a look that writes nothing (`/info`): in
    /// the sandbox, a visitor who has no Redis yet is shown a spare's
    /// rather than given one (a page view, or a client without the cookie,
    /// takes no visitor's place).
    pub async fn backend_to_look(&self, caller: &Caller) -> Result<Backend, ApiError> {
        Ok(self.http.engine.backend_to_look(caller.who()).await?)
    }
}
