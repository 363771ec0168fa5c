//! Commands the API refuses to run.
//!
//! Each batch has its own Redis connection, only for the duration of the
//! batch, and the executor counts one reply per command. Commands that change
//! the connection itself (its database, protocol, user, reply mode), turn it
//! into a stream of pushes, or block it forever would either be lost with the
//! connection or break that count, so they are refused up front with the
//! reason.
//!
//! Commands that administer the server itself (SHUTDOWN, DEBUG, REPLICAOF,
//! CONFIG SET, ACL SETUSER, CLIENT KILL, persistence: SAVE, BGSAVE,
//! BGREWRITEAOF; SCRIPT KILL, FUNCTION KILL, ...) are refused too: the Redis
//! behind pipelab is shared by everyone who can reach the API, and one of
//! them must not be able to stop it, detach it, block it (SAVE), interrupt
//! another's work or lock the others out. Data commands (FLUSHALL, SCRIPT
//! FLUSH, SWAPDB, ...) run as sent.

use crate::exec::{ArgvRef, Mode};

/// Why `argv` may not run in `mode`, or `None` if it may.
pub fn refusal(argv: ArgvRef<'_>, mode: Mode) -> Option<String> {
    let raw = argv.name()?;
    // Fast path for the common case (this runs once per command of a
    // batch): most names are not refused at all.
    if !could_be_refused(raw) {
        return None;
    }
    let name = String::from_utf8_lossy(raw).to_ascii_uppercase();
    let arg = |i: usize| {
        argv.get(i)
            .map(|a| String::from_utf8_lossy(a).to_ascii_uppercase())
    };
    let connection = |hint: &str| {
        Some(format!(
            "{name} is refused: it changes the connection itself, and a batch has its connection \
             only while it runs{hint}"
        ))
    };
    match name.as_str() {
        "SELECT" => {
            connection(" (choose the database in the server's Redis URL, redis://host:port/DB)")
        }
        "HELLO" => connection(" (set \"resp3\": true to speak RESP3)"),
        "AUTH" => connection(" (credentials belong in the server's Redis URL)"),
        "QUIT" | "RESET" => connection(""),
        "MONITOR" | "SUBSCRIBE" | "PSUBSCRIBE" | "SSUBSCRIBE" | "UNSUBSCRIBE" | "PUNSUBSCRIBE"
        | "SUNSUBSCRIBE" | "SYNC" | "PSYNC" | "REPLCONF" => Some(format!(
            "{name} is refused: it turns the connection into a stream of messages that outlives \
             the batch"
        )),
        "CLIENT" => match arg(1).as_deref() {
            Some(sub @ ("REPLY" | "TRACKING")) => Some(format!(
                "CLIENT {sub} is refused: it changes which replies the connection gets, and the \
                 batch expects exactly one reply per command"
            )),
            Some(sub @ ("KILL" | "PAUSE" | "UNPAUSE" | "NO-EVICT")) => admin(&format!("CLIENT {sub}")),
            _ => None,
        },
        "SHUTDOWN" | "DEBUG" | "REPLICAOF" | "SLAVEOF" | "FAILOVER" | "MODULE" | "SAVE" | "BGSAVE"
        | "BGREWRITEAOF" => admin(&name),
        "SCRIPT" | "FUNCTION" => match arg(1).as_deref() {
            Some("KILL") => admin(&format!("{name} KILL")),
            _ => None,
        },
        "CONFIG" => match arg(1).as_deref() {
            Some(sub @ ("SET" | "REWRITE" | "RESETSTAT")) => admin(&format!("CONFIG {sub}")),
            _ => None,
        },
        "ACL" => match arg(1).as_deref() {
            Some(sub @ ("SETUSER" | "DELUSER" | "LOAD" | "SAVE")) => admin(&format!("ACL {sub}")),
            _ => None,
        },
        "MULTI" | "EXEC" | "DISCARD" if mode == Mode::Transaction => Some(format!(
            "{name} is refused in transaction mode: the executor sends MULTI and EXEC itself \
             (use pipeline mode to write them by hand)"
        )),
        "WATCH" | "UNWATCH" if mode == Mode::Transaction => Some(format!(
            "{name} is refused in transaction mode: list the keys in the request's \"watch\" field"
        )),
        // Inside MULTI a blocking command does not block, so only the other
        // modes need a finite timeout.
        _ if mode != Mode::Transaction => blocking_forever(&name, argv).then(|| {
            format!(
                "{name} with timeout 0 is refused: it could block the batch's connection forever \
                 (give it a timeout)"
            )
        }),
        _ => None,
    }
}

/// The refusal of a server-administration command.
fn admin(what: &str) -> Option<String> {
    Some(format!(
        "{what} is refused: it administers the Redis server that everyone using this pipelab \
         shares (run it with redis-cli against a Redis of your own)"
    ))
}

/// Every name [`refusal`] looks at further.
const CANDIDATES: &[&[u8]] = &[
    b"SELECT",
    b"HELLO",
    b"AUTH",
    b"QUIT",
    b"RESET",
    b"MONITOR",
    b"SUBSCRIBE",
    b"PSUBSCRIBE",
    b"SSUBSCRIBE",
    b"UNSUBSCRIBE",
    b"PUNSUBSCRIBE",
    b"SUNSUBSCRIBE",
    b"SYNC",
    b"PSYNC",
    b"REPLCONF",
    b"CLIENT",
    b"MULTI",
    b"EXEC",
    b"DISCARD",
    b"WATCH",
    b"UNWATCH",
    b"BLPOP",
    b"BRPOP",
    b"BZPOPMIN",
    b"BZPOPMAX",
    b"BLMOVE",
    b"BRPOPLPUSH",
    b"BLMPOP",
    b"BZMPOP",
    b"WAIT",
    b"WAITAOF",
    b"XREAD",
    b"XREADGROUP",
    b"SHUTDOWN",
    b"DEBUG",
    b"REPLICAOF",
    b"SLAVEOF",
    b"FAILOVER",
    b"MODULE",
    b"CONFIG",
    b"ACL",
    b"SAVE",
    b"BGSAVE",
    b"BGREWRITEAOF",
    b"SCRIPT",
    b"FUNCTION",
];

/// [`CANDIDATES`] by length: most names are ruled out by their length and
/// first letter, without a scan of the whole list.
static BY_LENGTH: std::sync::LazyLock<[Vec<&'static [u8]>; 13]> = std::sync::LazyLock::new(|| {
    let mut by_length: [Vec<&'static [u8]>; 13] = Default::default();
    for name in CANDIDATES {
        by_length[name.len()].push(name);
    }
    by_length
});

/// Cheap pre-filter, without allocating: is `name` one of [`CANDIDATES`]?
fn could_be_refused(name: &[u8]) -> bool {
    BY_LENGTH.get(name.len()).is_some_and(|names| names.iter().any(|c| c.eq_ignore_ascii_case(name)))
}

/// True if `argv` is a blocking command whose timeout is 0 (wait forever).
/// Argument positions follow the Redis command reference.
fn blocking_forever(name: &str, argv: ArgvRef<'_>) -> bool {
    let zero = |a: Option<&[u8]>| a.and_then(|a| std::str::from_utf8(a).ok()).is_some_and(is_zero_timeout);
    match name {
        // BLPOP key [key ...] timeout, and friends: the timeout is last.
        "BLPOP" | "BRPOP" | "BZPOPMIN" | "BZPOPMAX" | "BLMOVE" | "BRPOPLPUSH" => {
            argv.len() >= 3 && zero(argv.get(argv.len() - 1))
        }
        // BLMPOP timeout numkeys key ..., BZMPOP timeout numkeys key ...
        "BLMPOP" | "BZMPOP" => zero(argv.get(1)),
        // WAIT numreplicas timeout; WAITAOF numlocal numreplicas timeout
        "WAIT" => zero(argv.get(2)),
        "WAITAOF" => zero(argv.get(3)),
        // XREAD [COUNT n] [BLOCK ms] STREAMS ...; XREADGROUP GROUP g c [COUNT n] [BLOCK ms] ...
        "XREAD" | "XREADGROUP" => argv
            .iter()
            .position(|a| a.eq_ignore_ascii_case(b"BLOCK"))
            .is_some_and(|i| zero(argv.get(i + 1))),
        _ => false,
    }
}

/// True if Redis reads `text` as a timeout of 0. Redis parses timeouts
/// with `strtold` (`string2ld` in `src/util.c`), which also takes
/// hexadecimal (`0x0`, `0x0p3`); Rust's `f64` parser does not.
fn is_zero_timeout(text: &str) -> bool {
    let t = text.trim();
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    match unsigned.strip_prefix("0x").or_else(|| unsigned.strip_prefix("0X")) {
        Some(hex) => {
            let mantissa = hex.split(['p', 'P']).next().unwrap_or("");
            !mantissa.is_empty()
                && mantissa.chars().all(|c| c == '0' || c == '.')
                && mantissa.chars().any(|c| c == '0')
        }
        None => t.parse::<f64>().is_ok_and(|v| v == 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(s: &str, mode: Mode) -> Option<String> {
        let argv: Vec<&str> = s.split(' ').collect();
        super::refusal(crate::exec::Commands::from_iter([argv]).get(0), mode)
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
                let commands = crate::exec::Commands::from_iter([argv]);
                if crate::exec::check_command(commands.get(0), mode).is_err() {
                    assert!(super::refusal(commands.get(0), mode).is_some(), "{cmd} in {mode:?}");
                }
            }
        }
    }

    #[test]
    fn refuses_connection_commands_and_endless_blocking() {
        for cmd in [
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
            "WAITAOF 1 0 0",
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
        ] {
            assert!(
                refusal(cmd, Mode::Pipeline).is_some(),
                "{cmd} should be refused"
            );
        }
    }

    #[test]
    fn allows_ordinary_and_bounded_commands() {
        for cmd in [
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
            "CONFIG GET maxmemory",
            "SCRIPT FLUSH",
            "FUNCTION LIST",
            "ACL WHOAMI",
            "CLIENT LIST",
            "FLUSHALL",
        ] {
            assert!(
                refusal(cmd, Mode::Pipeline).is_none(),
                "{cmd} should be allowed"
            );
        }
    }

    #[test]
    fn transaction_mode_rules() {
        assert!(refusal("MULTI", Mode::Transaction).is_some());
        assert!(refusal("exec", Mode::Transaction).is_some());
        assert!(refusal("WATCH k", Mode::Transaction).is_some());
        assert!(refusal("DISCARD", Mode::Transaction).is_some());
        assert!(refusal("unwatch", Mode::Transaction).is_some());
        // BLPOP inside MULTI does not block.
        assert!(refusal("BLPOP k 0", Mode::Transaction).is_none());
        assert!(refusal("SELECT 1", Mode::Transaction).is_some());
    }
}
