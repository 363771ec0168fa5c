//! Why the engine ran nothing of a batch, or could not finish it: each
//! case with the figures a caller needs to word it (the server names its
//! flags; the engine knows none).

use std::time::Duration;

use crate::exec::ExecError;
use crate::sandbox::SandboxError;

/// What a client's share was full of ([`super::share`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareFull {
    /// Its running batches.
    Batches,
    /// Its batches with a command that may block.
    Blocking,
}

/// Whose cap on open sessions was reached ([`super::session`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionsFull {
    /// The server's: `max` are open.
    Server { max: usize },
    /// The client's share: it has `open` open.
    Client { open: usize },
    /// The sandbox visitor's own: `cap`.
    Visitor { cap: usize },
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Refused or could not connect before anything was written.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// In the sandbox: no Redis could be had for the visitor.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A sandbox request came without a visitor.
    #[error("a sandbox request without a visitor")]
    NoVisitor,
    /// The client's share stayed full for `waited` (its cap: `cap`).
    #[error("the client's share of {what:?} ({cap}) stayed full for {waited:?}")]
    ShareFull { what: ShareFull, cap: usize, waited: Duration },
    /// In the sandbox: the batch's scripts would pass the visitor's quota.
    #[error("the batch's scripts would hold more than the visitor's quota")]
    ScriptCacheFull(crate::sandbox::scripts::ScriptCacheFull),
    /// The sandbox visitor runs `cap` batches already.
    #[error("the visitor runs {cap} batches already")]
    VisitorBatches { cap: usize },
    /// Every batch slot (`slots`) stayed taken for `waited`.
    #[error("all {slots} batch slots stayed busy for {waited:?}")]
    SlotsBusy { slots: usize, waited: Duration },
    /// Redis stayed BUSY with a script a cut batch left, which is being killed.
    #[error("Redis stayed busy running a script of a cut batch for {waited:?}")]
    KillPending { waited: Duration },
    /// The batch ran past its timeout and could not be cut in time:
    /// commands already written may have run.
    #[error("the batch ran past {limit:?} and could not be cut in time")]
    Overran { limit: Duration },
    /// No session may be opened now.
    #[error("no session may be opened now: {0:?}")]
    SessionsFull(SessionsFull),
    /// No open session of this caller has the id (never opened, closed, expired).
    #[error("no open session {id:?}")]
    SessionNotFound { id: String },
    /// The id (of a `what`: a session) was made by node `node`, not this
    /// one: the balancer sent the request to the wrong node.
    #[error("the {what} is on node {node:?}, not this one ({})", crate::node::id())]
    OtherNode { what: &'static str, node: String },
    /// A batch runs on the session already.
    #[error("a batch runs on the session")]
    SessionBusy,
    /// The session's connection failed (`why`): it is closed.
    #[error("the session's connection is gone: {why}")]
    SessionLost { why: String },
    /// A single command ([`super::command`]) got no reply: `why`.
    #[error("{why}")]
    Unanswered { why: &'static str },
}
