//! What a sweep's cleanup removed: reported with the sweep, and with the
//! error of a sweep cut short.

use serde::{Deserialize, Serialize};

/// Keys removed after the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cleanup {
    /// Distinct keys the commands name (per the key specs or COMMAND GETKEYSANDFLAGS).
    pub keys: u64,
    /// Keys that existed before the sweep: written to, but not deleted.
    pub preexisting: u64,
    /// Keys deleted (DEL's count).
    pub deleted: u64,
}
