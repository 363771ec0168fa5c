//! Where the keys are in a command's argv, as the server says: the command
//! table of [`crate::commands`] (key specs from the server's `COMMAND`
//! reply, subcommands such as `OBJECT ENCODING` included). The doctor
//! reduces only the argument at the first key position to a pattern
//! ([`super::pattern`]); no other argument (values, AUTH passwords) is ever
//! looked at.
//!
//! Without the table (the upstream refused `COMMAND`, e.g. an ACL user
//! without it), commands are grouped by name only.

use resp::Value;

use crate::commands::Table;
use crate::exec::Commands;

/// The server's command table, or none.
#[derive(Debug, Clone, Default)]
pub struct KeyTable {
    table: Option<Table>,
}

impl KeyTable {
    /// The table from a `COMMAND` reply; none if the reply cannot be read.
    pub fn from_command_reply(reply: &Value) -> KeyTable {
        KeyTable { table: Table::from_reply(reply, None).ok() }
    }

    /// True when the table holds no command (no `COMMAND` reply).
    pub fn is_empty(&self) -> bool {
        self.table.as_ref().is_none_or(Table::is_empty)
    }

    /// The command's name as shown (`CLIENT KILL` for a subcommand the table
    /// knows) and the argv index of its first key, if it has one.
    pub fn name_and_key(&self, argv: &[Vec<u8>]) -> (String, Option<usize>) {
        let by_name = || super::pattern::command_name(argv.first().map_or(&[][..], |a| a.as_slice()));
        let Some(table) = &self.table else { return (by_name(), None) };
        // Once per flight (its first command): one small copy of the argv.
        let one = Commands::from_iter([argv.to_vec()]);
        let Some(command) = table.command(one.get(0)) else { return (by_name(), None) };
        let first = table.keys(one.get(0)).and_then(|k| k.positions.first().map(|p| p.index));
        (command.display_name(), first.filter(|&i| i > 0 && i < argv.len()))
    }
}
