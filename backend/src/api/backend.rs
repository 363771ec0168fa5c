//! Which Redis serves a request: chosen once, from its caller, before its
//! commands are checked (the table is that Redis's) and run. Everything a
//! request does on Redis then goes to this [`Backend`] and nowhere else.
//!
//! - The shared Redis (or cluster) of `--redis` or the embedded one; where
//!   pipelab manages the Redis (`crate::acl`), a full-access batch on the
//!   batch user's pool, a read-only token's on the read-only user's and an
//!   operator's on the default user's.
//! - In the sandbox: the visitor's own redis-server (`crate::sandbox`),
//!   started for them, or replaced (and the visitor told why) if it died.

use std::sync::Arc;

use super::caller::Caller;
use super::error::{ApiCode, ApiError};
use super::share::ClientKey;
use super::AppState;
use crate::commands::Access;
use crate::exec::Pool;
use crate::sandbox::{Lease, SandboxError};

/// The Redis one request runs on.
#[derive(Clone)]
pub struct Backend {
    /// Where its batches run.
    pub pool: Arc<Pool>,
    /// Where `summary.server`'s `INFO` readings are taken: the server's own
    /// pool when the batch's user may not run INFO (a read-only token's).
    pub probe: Arc<Pool>,
    /// What its commands are checked as.
    pub access: Access,
    /// In the sandbox: the visitor and their redis-server.
    pub visitor: Option<Lease>,
    /// Whose fair share its batches count against (`super::share`).
    pub client: Option<ClientKey>,
}

impl AppState {
    /// The Redis that serves `caller`.
    ///
    /// Errors: in the sandbox, 503 `sandbox_full` (with `Retry-After`) when
    /// every visitor slot is taken, 503 `redis_unavailable` when no
    /// redis-server could be started for the visitor.
    pub async fn backend(&self, caller: &Caller) -> Result<Backend, ApiError> {
        match (&self.redis, &caller.visitor) {
            (super::Redis::Sandbox(sup), Some(id)) => {
                let lease = sup.checkout(id).await.map_err(sandbox_error)?;
                let pool = lease.child.pool.clone();
                Ok(Backend { probe: pool.clone(), pool, access: Access::Visitor, visitor: Some(lease), client: caller.share })
            }
            // The gate gives every request in the sandbox a visitor.
            (super::Redis::Sandbox(_), None) => Err(ApiError::unavailable("a sandbox request without a visitor")),
            (super::Redis::Shared(shared), _) => {
                let access = caller.access.rules();
                let pool = match (access, &shared.readonly, &shared.admin) {
                    (Access::ReadOnly, Some(readonly), _) => readonly.clone(),
                    (Access::Operator, _, Some(admin)) => admin.clone(),
                    _ => shared.pool.clone(),
                };
                Ok(Backend { pool, probe: shared.pool.clone(), access, visitor: None, client: caller.share })
            }
        }
    }
}

impl AppState {
    /// [`AppState::backend`] for a look that writes nothing (`/info`): in
    /// the sandbox, a visitor who has no Redis yet is shown a spare's
    /// rather than given one (a page view, or a client without the cookie,
    /// takes no visitor's place).
    pub async fn backend_to_look(&self, caller: &Caller) -> Result<Backend, ApiError> {
        let (super::Redis::Sandbox(sup), Some(id)) = (&self.redis, &caller.visitor) else { return self.backend(caller).await };
        if sup.child_of(id).is_some_and(|c| c.is_alive()) {
            return self.backend(caller).await;
        }
        let spare = sup.spare().await.map_err(|e| sandbox_error(e.into()))?;
        let pool = spare.pool.clone();
        Ok(Backend { probe: pool.clone(), pool, access: Access::Visitor, visitor: None, client: caller.share })
    }

    /// The command table before a caller is known (the Upstash routes'
    /// page-or-command question): the shared Redis's, or the sandbox
    /// children's (one binary, one table).
    pub async fn commands(&self) -> Arc<crate::commands::Table> {
        match &self.redis {
            super::Redis::Shared(shared) => shared.pool.commands_loaded(self.limits.connect_timeout()).await,
            super::Redis::Sandbox(sup) => sup.commands(),
        }
    }
}

fn sandbox_error(e: SandboxError) -> ApiError {
    match e {
        SandboxError::Full { retry_after, .. } => ApiError::new(ApiCode::SandboxFull, e.to_string()).retry_after(retry_after),
        SandboxError::AddressFull { retry_after, .. } => ApiError::new(ApiCode::TooManyVisitors, e.to_string()).retry_after(retry_after),
        SandboxError::Start(e) => {
            tracing::error!(error = %e, "could not start a visitor's redis-server");
            ApiError::unavailable(format!("no Redis could be started for you: {e}"))
        }
    }
}

/// A sandbox batch's `connection_error`, with why if the visitor's Redis
/// itself ended (out of memory, a crash): their next batch gets a new one.
pub async fn explain_lost(lease: &Lease, error: String) -> String {
    // The connection breaks a moment before the child's end is seen.
    match tokio::time::timeout(std::time::Duration::from_millis(500), lease.child.process.ended()).await {
        Ok(exit) => format!("{error}; your Redis ended: {}; your next batch gets a new one, empty (your keys are gone)", exit.describe()),
        Err(_) => error,
    }
}
