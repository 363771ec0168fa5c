//! The commands a table refuses whatever their arguments, listed for
//! clients that check a batch before sending it (`GET /api/v1/info`'s
//! `refused`: the page flags `SELECT 1` in its editor before Run).
//!
//! Why a list asked of [`Table::refusal`] and not written down: the rules
//! live in one place (`rules`), and the list follows the server's own table
//! (a module's admin command, a newer Redis's). Each command and each
//! subcommand is asked as its bare name (`SELECT`, `CONFIG SET`) in every
//! mode: a rule that needs arguments to refuse (a blocking command with
//! timeout 0: `BLPOP k 0`, whose arity the bare name does not meet) is not
//! in the list, and the API still refuses it when the batch arrives.

use serde::Serialize;

use super::rules::{Access, Allow, Reason};
use super::command::Command;
use super::table::Table;
use crate::argv::{ArgvRef, Commands};
use pipelab_model::Mode;

/// One command the API refuses with any arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"command": "SELECT", "reason": "connection",
    "modes": ["sequential", "pipeline", "transaction", "auto"],
    "message": "SELECT is refused: it changes the connection itself, which pipelab sets up for every batch and session (choose the database in the server's Redis URL, redis://host:port/DB)"})))]
pub struct RefusedCommand {
    /// The name as people write it, uppercase: `SELECT`, or a container's
    /// subcommand, `CONFIG SET` (an argv whose first one or two words match,
    /// case-insensitively).
    pub command: String,
    /// The rule it comes from.
    pub reason: Reason,
    /// The modes it is refused in (`MULTI` only in `transaction`).
    pub modes: Vec<Mode>,
    /// Why, for a person: the API's own message (400 `refused_command`, after
    /// where the command is: `text, line 1: …`).
    pub message: String,
}

impl Table {
    /// The commands and subcommands [`Table::refusal`] refuses for a caller
    /// with `access` whatever their arguments, sorted by name. Cost: one
    /// refusal check per command, subcommand and mode (about 2,000 on Redis 7).
    pub fn refused_commands(&self, access: Access, allow: Allow) -> Vec<RefusedCommand> {
        let mut out = Vec::new();
        self.each_bare_name(|argv, cmd| {
            let mut entry: Option<RefusedCommand> = None;
            for mode in Mode::ALL {
                let Some(r) = self.refusal(argv, mode, access, allow) else { continue };
                match &mut entry {
                    Some(e) => e.modes.push(mode),
                    None => entry = Some(RefusedCommand { command: cmd.display_name(), reason: r.reason, modes: vec![mode], message: r.message }),
                }
            }
            out.extend(entry);
        });
        out.sort_by(|a, b| a.command.cmp(&b.command));
        out
    }

    /// Each command and each subcommand as its bare argv (`SELECT`, `CONFIG SET`).
    fn each_bare_name(&self, mut f: impl FnMut(ArgvRef<'_>, &Command)) {
        for top in self.iter() {
            f(Commands::from_iter([vec![top.name.as_str()]]).get(0), top);
            for sub in top.subcommands.values() {
                let word = sub.name.rsplit('|').next().unwrap_or(&sub.name);
                f(Commands::from_iter([vec![top.name.as_str(), word]]).get(0), sub);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(access: Access) -> Vec<RefusedCommand> {
        super::super::fallback::table().refused_commands(access, Allow::default())
    }

    fn find<'a>(list: &'a [RefusedCommand], name: &str) -> Option<&'a RefusedCommand> {
        list.iter().find(|r| r.command == name)
    }

    /// Every listed command is refused by the API's own check, in the modes listed and no other.
    #[test]
    fn the_list_is_what_refusal_says() {
        let table = super::super::fallback::table();
        let list = table.refused_commands(Access::Full, Allow::default());
        assert!(!list.is_empty());
        for r in &list {
            let words: Vec<&str> = r.command.split(' ').collect();
            let argv = Commands::from_iter([words]);
            for mode in Mode::ALL {
                let refusal = table.refusal(argv.get(0), mode, Access::Full, Allow::default());
                assert_eq!(refusal.is_some(), r.modes.contains(&mode), "{} in {mode:?}", r.command);
                if let Some(refusal) = refusal {
                    assert_eq!((refusal.reason, &refusal.message), (r.reason, &r.message));
                }
            }
        }
    }

    #[test]
    fn select_everywhere_multi_in_transactions_blocking_not_listed() {
        let list = refused(Access::Full);
        let select = find(&list, "SELECT").expect("SELECT listed");
        assert_eq!(select.reason, Reason::Connection);
        assert_eq!(select.modes, Mode::ALL.to_vec());
        assert!(select.message.contains("redis://host:port/DB"), "{}", select.message);
        let multi = find(&list, "MULTI").expect("MULTI listed");
        assert_eq!(multi.modes, vec![Mode::Transaction]);
        assert_eq!(find(&list, "CLIENT REPLY").map(|r| r.reason), Some(Reason::ReplyMode));
        // Refused only with timeout 0: the API checks its arguments when the batch comes.
        assert!(find(&list, "BLPOP").is_none());
        assert!(find(&list, "SET").is_none() && find(&list, "CLIENT LIST").is_none());
        assert!(list.windows(2).all(|w| w[0].command < w[1].command), "sorted");
    }

    /// A table of SET, GET and CONFIG GET / CONFIG SET, entries as Redis 7.0.15's `COMMAND INFO`.
    fn small_table() -> Table {
        let entry = super::super::fallback::parse_entry;
        let mut config = entry("config -2 - @slow");
        for sub in ["config|get -3 admin,noscript,loading,stale @admin,@slow,@dangerous", "config|set -4 admin,noscript,loading,stale @admin,@slow,@dangerous"] {
            let c = entry(sub);
            config.subcommands.insert(c.name.rsplit('|').next().unwrap().as_bytes().into(), c);
        }
        config.reclass();
        Table::new([entry("set -3 write,denyoom @write,@string,@slow"), entry("get 2 readonly,fast @read,@string,@fast"), config], None)
    }

    #[test]
    fn the_callers_access_counts() {
        let table = small_table();
        let of = |access| table.refused_commands(access, Allow::default());
        let full = of(Access::Full);
        assert_eq!(find(&full, "CONFIG GET").map(|r| r.reason), Some(Reason::Secret));
        assert_eq!(find(&full, "CONFIG SET").map(|r| r.reason), Some(Reason::Admin));
        assert!(find(&full, "CONFIG").is_none() && find(&full, "SET").is_none());
        assert!(find(&of(Access::Operator), "CONFIG GET").is_none());
        let ro = of(Access::ReadOnly);
        assert!(find(&ro, "SET").is_some_and(|r| r.reason == Reason::NotReadOnly));
        assert!(find(&ro, "GET").is_none());
    }
}
