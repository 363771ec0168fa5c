//! A visitor's script cache inside their quota. Redis keeps every script
//! of `SCRIPT LOAD`, `EVAL` and `FUNCTION LOAD` outside `maxmemory`, so
//! without a check a visitor could hold far more than their quota in
//! scripts (24 × 1 MB `SCRIPT LOAD` held 55 MB on a libc-malloc build).
//! Before a batch that caches scripts, the child's own figure (`INFO
//! memory`: `used_memory_scripts`, the cached sources) and the new
//! scripts' size, each times what a cached script holds per byte of
//! source, say whether they fit; a batch whose scripts do not is refused
//! whole, nothing sent. The Lua heap's own figure (`used_memory_vm_*`) is
//! not used: it counts garbage a finished script left until Lua collects
//! it, and `RLIMIT_AS` bounds that.

use crate::argv::ArgvRef;
use crate::commands::server::info_field;
use crate::commands::Table;
use crate::exec::Batch;

/// Bytes a cached script holds per byte of its source: the source kept in
/// the script dictionary plus its compiled constants in the Lua heap
/// (measured: 2.3 on Redis 8.0 with libc malloc, lower elsewhere).
pub const HELD_PER_SOURCE_BYTE: u64 = 3;

/// A batch's scripts would pass the visitor's quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCacheFull {
    /// The first command whose script does not fit.
    pub index: usize,
    /// What the visitor's scripts hold now (bytes).
    pub held: u64,
    /// The quota (bytes).
    pub quota: u64,
}

/// The source a command caches as a script, if it does: the body of
/// `EVAL`/`EVAL_RO`, `SCRIPT LOAD`, `FUNCTION LOAD [REPLACE]`.
fn cached_source<'a>(table: &Table, argv: ArgvRef<'a>) -> Option<&'a [u8]> {
    match table.command(argv)?.name.as_str() {
        "eval" | "eval_ro" => argv.get(1),
        "script|load" => argv.get(2),
        "function|load" => argv.get(argv.len() - 1),
        _ => None,
    }
}

/// What the scripts of a child hold now, from its `INFO memory` text.
pub fn held(info: &str) -> u64 {
    let sources = info_field(info, "used_memory_scripts").and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    sources.saturating_mul(HELD_PER_SOURCE_BYTE)
}

/// The scripts `batch` would cache: each command's index and its
/// source's length. Empty for most batches, which then ask the child nothing.
pub fn cached(table: &Table, batch: &Batch) -> Vec<(usize, u64)> {
    batch.commands.iter().enumerate().filter_map(|(i, argv)| cached_source(table, argv).map(|s| (i, s.len() as u64))).collect()
}

/// Whether the `cached` scripts fit in `quota` beside what the child holds
/// already, by its `INFO memory` text.
pub fn fit(info: &str, cached: Vec<(usize, u64)>, quota: u64) -> Result<(), ScriptCacheFull> {
    let now = held(info);
    let mut total = now;
    for (index, bytes) in cached {
        total = total.saturating_add(bytes.saturating_mul(HELD_PER_SOURCE_BYTE));
        if total > quota {
            return Err(ScriptCacheFull { index, held: now, quota });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn held_counts_the_cached_sources_not_the_lua_heap() {
        let info = "used_memory:100\r\nused_memory_vm_total:65536\r\nused_memory_scripts:2048\r\n";
        assert_eq!(super::held(info), 2048 * super::HELD_PER_SOURCE_BYTE);
        assert_eq!(super::held("used_memory:1\r\n"), 0);
    }
}
