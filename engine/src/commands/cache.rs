//! The table of one Redis target, read once and read again when the
//! server changes: [`Cache::refresh`] runs on each connection a pool opens
//! (`INFO server`: one round trip, before the batch's clock starts) and
//! reads `COMMAND` again only if `run_id` or the version differ from
//! the table's (a restart, an upgrade). Until a server's table is read,
//! the built-in fallback answers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use super::fallback;
use super::table::{ServerIdentity, Table};
use crate::conn::{AskError, Conn};

/// The current table of one target; cheap to read from any thread.
pub struct Cache {
    table: RwLock<Arc<Table>>,
    /// A server answered [`Cache::refresh`] at least once (even if it
    /// refused INFO or COMMAND): asking again before a new connection is
    /// pointless.
    checked: AtomicBool,
}

impl Default for Cache {
    fn default() -> Self {
        Cache { table: RwLock::new(fallback::table()), checked: AtomicBool::new(false) }
    }
}

impl Cache {
    /// A cache holding the built-in fallback.
    pub fn new() -> Cache {
        Cache::default()
    }

    /// The current table (the fallback until a server's was read).
    pub fn table(&self) -> Arc<Table> {
        self.table.read().expect("command table lock").clone()
    }

    /// True once a server's table was read.
    pub fn is_loaded(&self) -> bool {
        self.table.read().expect("command table lock").identity().is_some()
    }

    /// True once a server answered a [`Cache::refresh`], whether or not it
    /// gave its table.
    pub fn was_checked(&self) -> bool {
        self.checked.load(Ordering::Relaxed)
    }

    /// Checks the server behind `conn` (`INFO server`) and, if it is not the
    /// one the table came from, reads its table (`COMMAND`). `Ok(true)` if
    /// the table was replaced. The connection's stats include the bytes:
    /// reset them before a batch (`Conn::prepare_reuse`).
    ///
    /// Errors: the connection failed (drop it). A server that refuses INFO
    /// or COMMAND (renamed, denied by ACL) is not an error: the table
    /// stays as it was, and a warning is logged.
    pub async fn refresh(&self, conn: &mut Conn) -> Result<bool, AskError> {
        let info = conn.ask(&[b"INFO", b"server"]).await?;
        self.checked.store(true, Ordering::Relaxed);
        let Some(identity) = super::reply::text(&info).as_deref().and_then(ServerIdentity::from_info) else {
            tracing::warn!("INFO server gave no run_id or version: keeping the current command table");
            return Ok(false);
        };
        if self.table().identity() == Some(&identity) {
            return Ok(false);
        }
        let reply = conn.ask(&[b"COMMAND"]).await?;
        match Table::from_reply(&reply, Some(identity.clone())) {
            Ok(table) => {
                tracing::info!(run_id = %identity.run_id, server = %identity.server, version = %identity.version, commands = table.len(), "command table read from the server");
                *self.table.write().expect("command table lock") = Arc::new(table);
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(error = %e, "COMMAND could not be read: keeping the current command table");
                Ok(false)
            }
        }
    }
}
