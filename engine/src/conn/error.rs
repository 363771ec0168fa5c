//! Why a connection could not be opened. Nothing of a batch was written
//! when this is the answer, so a caller may say so plainly or try again; a
//! connection that breaks after the first write is a batch's
//! `connection_error` instead, with each command's outcome.

/// Why no connection (or no cluster map) could be had; each message names
/// the target, never its password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The socket or TLS could not be opened: refused, no route, no such
    /// file, a certificate not trusted.
    #[error("cannot connect to {target}: {reason}")]
    Unreachable { target: String, reason: String },
    /// The socket or TLS did not open within the connect timeout.
    #[error("cannot connect to {target}: timed out after {ms} ms")]
    SocketTimeout { target: String, ms: u128 },
    /// The handshake got no reply within the connect timeout: a server
    /// that accepts connections and never answers.
    #[error("handshake with {target} failed: no reply within {ms} ms (connect timeout)")]
    HandshakeTimeout { target: String, ms: u128 },
    /// A handshake step answered with an error: AUTH's `WRONGPASS`, a
    /// `SELECT` out of range, a `HELLO` the server does not know.
    #[error("handshake with {target} failed at {step}: {reply}")]
    Refused { target: String, step: &'static str, reply: String },
    /// The connection broke during the handshake.
    #[error("handshake with {target} failed at {step}: {error}")]
    Broken { target: String, step: &'static str, error: String },
    /// The new connection could not read the server's command table.
    #[error("{target}: {reason}")]
    CommandTable { target: String, reason: String },
    /// Redis Cluster: the slot map could not be read, or a master it names
    /// could not be reached.
    #[error("{0}")]
    Cluster(String),
    /// A connection that failed before a byte of the batch reached it,
    /// and no other could be had.
    #[error("{0}")]
    Lost(String),
    /// The simulated link's settings are out of range.
    #[error("delay line: {0}")]
    Link(String),
    /// A session's connection, lost by an earlier batch: nothing to run on.
    #[error("the connection is gone")]
    Gone,
}

impl ConnectError {
    /// Redis itself said no (a password, a database, a protocol), where
    /// trying again as the same user cannot help.
    pub fn is_refused(&self) -> bool {
        matches!(self, ConnectError::Refused { .. })
    }
}
