//! Which Redis serves a caller: chosen once, before its commands are
//! checked (the table is that Redis's) and run. Everything a caller does on
//! Redis then goes to this [`Backend`] and nowhere else.
//!
//! - The shared Redis (or cluster); where pipelab manages it
//!   ([`crate::acl`]), a full-access batch on the batch user's pool, a
//!   read-only one on the read-only user's and an operator's on the
//!   default user's.
//! - In the sandbox: the visitor's own redis-server ([`crate::sandbox`]),
//!   started for them, or replaced (and the visitor told why) if it died.

use std::sync::Arc;
use std::time::Duration;

use super::error::EngineError;
use super::share::ClientKey;
use super::{Engine, Redis};
use crate::commands::{Access, Table};
use crate::run::Target;
use crate::sandbox::{Lease, VisitorId};

/// Who a Redis is chosen for.
#[derive(Debug, Clone, Copy)]
pub struct Who<'a> {
    /// What its commands are checked as.
    pub access: Access,
    /// In the sandbox, the visitor (every caller there has one).
    pub visitor: Option<&'a VisitorId>,
    /// Whose fair share its batches count against.
    pub client: Option<ClientKey>,
}

/// The Redis one caller runs on.
#[derive(Clone)]
pub struct Backend {
    /// Where its batches run.
    pub pool: Arc<Target>,
    /// Where `summary.server`'s `INFO` readings are taken when not on
    /// `pool` ([`Backend::probe`]): the server's own pool when the batch's
    /// user may not run INFO (a read-only caller's).
    probe: Option<Arc<Target>>,
    /// What its commands are checked as.
    pub access: Access,
    /// In the sandbox: the visitor and their redis-server.
    pub visitor: Option<Lease>,
    /// Whose fair share its batches count against ([`super::share`]).
    pub client: Option<ClientKey>,
}

impl Backend {
    /// Where `summary.server`'s `INFO` readings, `/info`'s and the command
    /// table are taken: the server's own pool, which may run INFO.
    pub fn probe(&self) -> &Target {
        self.probe.as_deref().unwrap_or(&self.pool)
    }
}

impl Engine {
    /// The Redis that serves `who`.
    ///
    /// Errors: in the sandbox, [`EngineError::Sandbox`] when every visitor
    /// slot is taken or no redis-server could be started for the visitor,
    /// [`EngineError::NoVisitor`] for a caller without one.
    pub async fn backend(&self, who: Who<'_>) -> Result<Backend, EngineError> {
        match (&self.redis, who.visitor) {
            (Redis::Sandbox(sup), Some(id)) => {
                let lease = sup.checkout(id).await?;
                // A visitor's redis-server is never a cluster: nothing to keep between batches.
                let pool = Target::new(lease.child.pool.clone());
                Ok(Backend { pool, probe: None, access: Access::Visitor, visitor: Some(lease), client: who.client })
            }
            (Redis::Sandbox(_), None) => Err(EngineError::NoVisitor),
            (Redis::Shared(shared), _) => {
                // One `Arc` cloned per request where the batch user's pool
                // serves: every serving thread counts on the same one.
                let (pool, probe) = match (who.access, &shared.readonly, &shared.admin) {
                    (Access::ReadOnly, Some(readonly), _) => (readonly.clone(), Some(shared.pool.clone())),
                    (Access::Operator, _, Some(admin)) => (admin.clone(), Some(shared.pool.clone())),
                    _ => (shared.pool.clone(), None),
                };
                Ok(Backend { pool, probe, access: who.access, visitor: None, client: who.client })
            }
        }
    }

    /// [`Engine::backend`] for a look that writes nothing: in the sandbox,
    /// a visitor who has no Redis yet is shown a spare's rather than given
    /// one (a page view takes no visitor's place).
    pub async fn backend_to_look(&self, who: Who<'_>) -> Result<Backend, EngineError> {
        let (Redis::Sandbox(sup), Some(id)) = (&self.redis, who.visitor) else { return self.backend(who).await };
        if sup.child_of(id).is_some_and(|c| c.is_alive()) {
            return self.backend(who).await;
        }
        let spare = sup.spare().await.map_err(|e| EngineError::Sandbox(e.into()))?;
        let pool = Target::new(spare.pool.clone());
        Ok(Backend { pool, probe: None, access: Access::Visitor, visitor: None, client: who.client })
    }

    /// The command table before a caller is known: the shared Redis's, or
    /// the sandbox children's (one binary, one table).
    pub async fn commands(&self) -> Arc<Table> {
        match &self.redis {
            Redis::Shared(shared) => shared.pool.commands_loaded(self.limits.connect_timeout).await,
            Redis::Sandbox(sup) => sup.commands(),
        }
    }
}

/// A sandbox batch's `connection_error`, with why if the visitor's Redis
/// itself ended (out of memory, a crash): their next batch gets a new one.
pub async fn explain_lost(lease: &Lease, error: String) -> String {
    // The connection breaks a moment before the child's end is seen.
    match tokio::time::timeout(Duration::from_millis(500), lease.child.process.ended()).await {
        Ok(exit) => format!("{error}; your Redis ended: {}; your next batch gets a new one, empty (your keys are gone)", exit.describe()),
        Err(_) => error,
    }
}
