//! Commands the API refuses to run, asked of the target's command table
//! (`pipelab_engine::commands::rules` holds every rule and its source).
//!
//! Each batch has its own Redis connection, only for the duration of the
//! batch, and the executor counts one reply per command. Commands that change
//! the connection itself (its database, protocol, user, reply mode), turn it
//! into a stream of pushes, or block it forever would either be lost with the
//! connection or break that count, so they are refused up front with the
//! reason.
//!
//! Commands that administer the server itself (flagged `admin` by Redis:
//! SHUTDOWN, DEBUG, REPLICAOF, CONFIG SET, ACL SETUSER, CLIENT KILL, SAVE,
//! BGSAVE, …; and SCRIPT KILL, FUNCTION KILL) are refused too: the Redis
//! behind pipelab is shared by everyone who can reach the API, and one of
//! them must not be able to stop it, detach it, block it (SAVE), interrupt
//! another's work or lock the others out. Commands that reveal secrets
//! (CONFIG GET, ACL LIST/GETUSER/DRYRUN/USERS/LOG, SLOWLOG GET) need an
//! operator token; MIGRATE, which makes Redis connect to another server,
//! needs `--allow-migrate`. Data commands (FLUSHALL, SCRIPT FLUSH, SWAPDB,
//! ...) run as sent.

use std::sync::Arc;

use pipelab_engine::engine::Backend;
use super::AppState;
use pipelab_engine::commands::{Access, Allow, Table};
use pipelab_engine::exec::ArgvRef;
use pipelab_model::Mode;

/// The rules one request is checked with: the table of the Redis it runs
/// on, the caller's access and what the operator allows.
#[derive(Clone)]
pub struct Rules {
    pub table: Arc<Table>,
    pub access: Access,
    pub allow: Allow,
}

impl Rules {
    /// The rules for a request on `backend`: its Redis's table (read first
    /// if it was not yet; the fallback if Redis is unreachable) and access.
    pub async fn of(state: &AppState, backend: &Backend) -> Rules {
        // Read on the probe pool (a user that may run INFO and COMMAND; the
        // pools of one Redis share the table).
        let table = backend.probe().commands_loaded(state.http.limits.connect_timeout()).await;
        Rules { table, access: backend.access, allow: state.allow }
    }

    /// Why `argv` may not run in `mode`, or `None` if it may.
    pub fn refusal(&self, argv: ArgvRef<'_>, mode: Mode) -> Option<String> {
        self.table.refusal(argv, mode, self.access, self.allow).map(|r| r.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in table's rules: no server needed.
    fn rules() -> Rules {
        Rules { table: pipelab_engine::commands::fallback::table(), access: Access::Full, allow: Allow::default() }
    }

    fn refusal(s: &str, mode: Mode) -> Option<String> {
        let argv: Vec<&str> = s.split(' ').collect();
        rules().refusal(pipelab_engine::exec::Commands::from_iter([argv]).get(0), mode)
    }

    /// The API refuses, with its own reason, every command the executor
    /// would reject: its validation does not run the executor's again.
    #[test]
    fn refuses_all_the_executor_rejects() {
        let cases = [
            "SUBSCRIBE a", "PSUBSCRIBE a*", "SSUBSCRIBE a", "UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE",
            "MONITOR", "SYNC", "PSYNC ? -1", "CLIENT REPLY OFF", "client reply skip", "MULTI", "EXEC", "DISCARD", "WATCH k",
        ];
        for mode in [Mode::Sequential, Mode::Pipeline, Mode::Transaction] {
            for cmd in cases {
                let argv: Vec<&str> = cmd.split(' ').collect();
                let commands = pipelab_engine::exec::Commands::from_iter([argv]);
                if pipelab_engine::exec::check_command(&rules().table, commands.get(0), mode).is_err() {
                    assert!(rules().refusal(commands.get(0), mode).is_some(), "{cmd} in {mode:?}");
                }
            }
        }
    }

    /// Each of `cmds` in `mode` is refused (`refused`) or allowed.
    fn check(mode: Mode, refused: bool, cmds: &[&str]) {
        for cmd in cmds {
            assert_eq!(refusal(cmd, mode).is_some(), refused, "{cmd} in {mode:?}: refused should be {refused}");
        }
    }

    #[test]
    fn refuses_connection_commands_and_endless_blocking() {
        check(Mode::Pipeline, true, &[
            "select 1",
            "HELLO 3",
            "AUTH pw",
            "QUIT",
            "RESET",
            "MONITOR",
            "SUBSCRIBE ch",
            "psubscribe c*",
            "CLIENT REPLY OFF",
            "client tracking on",
            "BLPOP k 0",
            "BLPOP k 0x0",
            "BRPOP a b -0X0.0p4",
            "BLPOP k +0",
            "BRPOP a b 0.0",
            "BLMOVE a b LEFT RIGHT 0",
            "BLMPOP 0 1 k LEFT",
            "BZMPOP 0 1 z MIN",
            "WAIT 1 0",
            "XREAD COUNT 1 BLOCK 0 STREAMS s $",
            "XREADGROUP GROUP g c block 0 STREAMS s >",
            "SSUBSCRIBE c",
            "UNSUBSCRIBE",
            "PUNSUBSCRIBE",
            "SUNSUBSCRIBE",
            "SYNC",
            "PSYNC ? -1",
            "REPLCONF listening-port 1",
            "BZPOPMIN z 0",
            "BZPOPMAX z 0",
            "BRPOPLPUSH a b 0",
            // WAITAOF (Redis 7.2) is refused with timeout 0 by a table that has it;
            // the built-in table is 7.0's, where it is an unknown command.
            "SHUTDOWN NOSAVE",
            "save",
            "BGSAVE SCHEDULE",
            "bgrewriteaof",
            "SCRIPT KILL",
            "function kill",
            "shutdown",
            "DEBUG SLEEP 10",
            "REPLICAOF host 6379",
            "SLAVEOF host 6379",
            "FAILOVER",
            "MODULE LOAD /x.so",
            "CONFIG SET requirepass x",
            "config rewrite",
            "ACL SETUSER default off",
            "CLIENT KILL ID 3",
            "CLIENT PAUSE 10000",
        ]);
    }

    #[test]
    fn allows_ordinary_and_bounded_commands() {
        check(Mode::Pipeline, false, &[
            "SET k v",
            "GET k",
            "BLPOP k 1",
            "BLPOP k 0x1",
            "BRPOP k 0.5",
            "XREAD BLOCK 10 STREAMS s $",
            "XREAD STREAMS s 0",
            "WAIT 0 100",
            "CLIENT SETNAME x",
            "MULTI",
            "EXEC",
            "WATCH k",
            "SCRIPT FLUSH",
            "FUNCTION LIST",
            "ACL WHOAMI",
            "CLIENT LIST",
            "FLUSHALL",
        ]);
    }

    #[test]
    fn transaction_mode_rules() {
        check(Mode::Transaction, true, &["MULTI", "exec", "WATCH k", "DISCARD", "unwatch", "SELECT 1"]);
        // BLPOP inside MULTI does not block.
        check(Mode::Transaction, false, &["BLPOP k 0"]);
    }

    /// The last BLOCK wins, as in `xreadCommand`; a
    /// tiny positive timeout is rounded up to 1 ms by Redis, not 0.
    #[test]
    fn blocking_timeouts_parsed_as_redis_does() {
        check(Mode::Pipeline, true, &["XREAD BLOCK 5 BLOCK 0 STREAMS s $", "XREADGROUP GROUP BLOCK c BLOCK 0 STREAMS s >", "BLPOP k 0e-400"]);
        check(Mode::Pipeline, false, &[
            "XREAD BLOCK 0 BLOCK 5 STREAMS s $",
            "XREADGROUP GROUP g BLOCK COUNT 1 STREAMS s >",
            "BLPOP k 1e-400",
            "BLPOP k 0.0001",
            // Errors in Redis, not waits.
            "WAIT 1 00",
        ]);
        let spaced = pipelab_engine::exec::Commands::from_iter([vec!["BLPOP", "k", " 0"]]);
        assert!(rules().refusal(spaced.get(0), Mode::Pipeline).is_none());
    }

    /// MIGRATE makes Redis connect where the request says.
    #[test]
    fn migrate_needs_the_operator() {
        let argv = pipelab_engine::exec::Commands::from_iter([vec!["MIGRATE", "10.0.0.1", "6379", "k", "0", "1000"]]);
        let refused = rules().refusal(argv.get(0), Mode::Pipeline).expect("MIGRATE refused");
        assert!(refused.contains("another server") && refused.contains("--allow-migrate"), "{refused}");
        let allowed = Rules { allow: Allow { migrate: true }, ..rules() };
        assert!(allowed.refusal(argv.get(0), Mode::Pipeline).is_none());
    }

    /// Secrets need an operator token.
    #[test]
    fn secrets_need_an_operator_token() {
        for cmd in ["CONFIG GET requirepass", "config get *", "ACL LIST", "ACL GETUSER default", "ACL DRYRUN default GET k", "ACL USERS", "ACL LOG"] {
            let argv: Vec<&str> = cmd.split(' ').collect();
            let argv = pipelab_engine::exec::Commands::from_iter([argv]);
            let refused = rules().refusal(argv.get(0), Mode::Pipeline).unwrap_or_else(|| panic!("{cmd} allowed"));
            assert!(refused.contains("operator token"), "{cmd}: {refused}");
            let operator = Rules { access: Access::Operator, ..rules() };
            assert!(operator.refusal(argv.get(0), Mode::Pipeline).is_none(), "{cmd} for an operator");
        }
        assert!(refusal("ACL WHOAMI", Mode::Pipeline).is_none());
    }
}
