//! Where a command goes in a cluster, asked of the command table (never a
//! list of names): the slot of its first key (key specs, `Table::keys`);
//! a keyless command by its `request_policy` tip: `all_shards` and
//! `all_nodes` to every master (replies merged by [`super::combine`]),
//! anything else to one node. A multi-key command whose keys are in
//! different slots goes by its first key and Redis answers `CROSSSLOT` in
//! place: pipelab never splits a command.

use crate::commands::Table;
use crate::exec::ArgvRef;

use super::combine::Combine;
use super::slot::slot;

/// A command's destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// The master of this hash slot.
    Slot(u16),
    /// Any one master (no keys, no fan-out tip).
    Any,
    /// Every master, replies merged as the response-policy tip says.
    All(Combine),
}

/// The route of `argv` by `table`'s entry for it. A command the table does
/// not know goes to any node (Redis answers `unknown command` there).
pub fn route(table: &Table, argv: ArgvRef<'_>) -> Route {
    let Some(cmd) = table.command(argv) else { return Route::Any };
    if let Some(first) = crate::commands::first_key(cmd, argv).and_then(|p| argv.get(p.index)) {
        return Route::Slot(slot(first));
    }
    match cmd.request_policy() {
        Some("all_shards" | "all_nodes") => Route::All(Combine::of(cmd.response_policy())),
        _ => Route::Any,
    }
}

/// Every hash slot the keys of `argv` map to, in argument order (empty
/// for a keyless command).
pub fn slots(table: &Table, argv: ArgvRef<'_>) -> Vec<u16> {
    let Some(keys) = table.keys(argv) else { return Vec::new() };
    keys.positions.iter().filter_map(|p| argv.get(p.index)).map(slot).collect()
}
