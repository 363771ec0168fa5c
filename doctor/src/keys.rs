//! Where the keys are in a command's argv, as the server says: the command
//! table of [`pipelab_engine::commands`] (key specs from the server's `COMMAND`
//! reply, subcommands such as `OBJECT ENCODING` included). The doctor
//! reduces only the argument at the first key position to a pattern
//! ([`super::pattern`]); no other argument (values, AUTH passwords) is ever
//! looked at.
//!
//! Without the table (the upstream refused `COMMAND`, e.g. an ACL user
//! without it), commands are grouped by name only, and the tracker's rules
//! ask the built-in fallback table ([`KeyTable::rules`]).

use resp::Value;

use pipelab_engine::commands::Table;
use pipelab_engine::exec::Commands;

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

    /// The table the tracker's rules ask (which commands end per-command
    /// replies, start a transaction, run a script, set up the connection):
    /// the server's, else the built-in fallback of `pipelab_engine::commands::fallback`.
    pub fn rules(&self) -> &Table {
        self.table.as_ref().unwrap_or_else(|| pipelab_engine::commands::fallback::table_ref())
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

    /// One command of `pattern`'s shape (`SET user:*`, as [`Self::name_and_key`]
    /// and [`super::pattern::key_pattern`] make them) as an inline line for
    /// the playground: the name, the key pattern with each `*` replaced by
    /// `i`, and `1` for every further argument the command's arity (from the
    /// server's `COMMAND`) requires: the doctor never kept the values, so the
    /// command's shape is all it can give back. Without a table: the name
    /// and the key as they are.
    pub fn example_command(&self, pattern: &str, i: u64) -> String {
        let words: Vec<&str> = pattern.split(' ').collect();
        let command = self.table.as_ref().and_then(|t| {
            let one = Commands::from_iter([words.iter().take(2).map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>()]);
            t.command(one.get(0)).cloned()
        });
        let name_words = match &command {
            Some(c) if c.display_name().contains(' ') => 2.min(words.len()),
            _ => 1,
        };
        let mut argv: Vec<String> = words[..name_words].iter().map(|w| w.to_string()).collect();
        argv.extend(words[name_words..].iter().map(|k| k.replace('*', &i.to_string())));
        if let Some(c) = command {
            let need = c.arity.unsigned_abs() as usize;
            while argv.len() < need {
                argv.push("1".into());
            }
        }
        resp::inline::to_inline(&argv)
    }
}
