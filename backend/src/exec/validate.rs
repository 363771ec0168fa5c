//! Rules a batch must follow so that every reply can be matched to its
//! command: the executor reads exactly one reply per command written, so a
//! command that answers zero or several times would shift every later reply
//! onto the wrong command (the class of bug of redis-py#2624, ioredis#800,
//! redis-rs#698).

use super::{ArgvRef, Batch, Mode, Plan};
use crate::delay;

/// A batch that cannot be run; `field` names the request field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BatchError {
    /// `commands[3]`, `batch_size`, `simulated_rtt_ms`, `watch`.
    pub field: String,
    pub message: String,
}

/// Commands whose reply count is not one per call: pub/sub (one reply per
/// channel, then messages), MONITOR (a stream), SYNC/PSYNC (an RDB transfer).
const NOT_ONE_REPLY: &[&str] =
    &["subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor", "sync", "psync"];

/// Commands that pipelab itself sends around a transaction batch.
const TRANSACTION_CONTROL: &[&str] = &["multi", "exec", "discard", "watch"];

/// Checks one command for `mode`: not empty, exactly one reply, and in
/// transaction mode no MULTI/EXEC/DISCARD/WATCH (pipelab sends those; WATCH
/// goes in the batch's `watch`). Errors: a message for a person.
pub fn check_command(argv: ArgvRef<'_>, mode: Mode) -> Result<(), String> {
    let Some(name) = argv.name() else {
        return Err("empty command".into());
    };
    // Every listed name is 4 to 12 bytes long: most commands (SET, GET,
    // HSET...) are decided by their length alone, without allocating.
    if name.len() < 4 || name.len() > 12 {
        return Ok(());
    }
    let is = |list: &[&str]| list.iter().any(|c| c.len() == name.len() && name.eq_ignore_ascii_case(c.as_bytes()));
    let shown = || String::from_utf8_lossy(name).to_uppercase();
    if is(NOT_ONE_REPLY) {
        let shown = shown();
        return Err(format!("{shown} is not supported: it does not answer with exactly one reply, so later replies could not be matched to their commands"));
    }
    if name.eq_ignore_ascii_case(b"client")
        && argv.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"reply"))
        && argv.get(2).is_some_and(|a| a.eq_ignore_ascii_case(b"off") || a.eq_ignore_ascii_case(b"skip"))
    {
        return Err("CLIENT REPLY OFF/SKIP is not supported: commands without a reply could not be matched".into());
    }
    if mode == Mode::Transaction && is(TRANSACTION_CONTROL) {
        let shown = shown();
        return Err(format!("{shown} cannot be part of a transaction batch: pipelab sends MULTI/EXEC itself (put keys to WATCH in `watch`)"));
    }
    Ok(())
}

/// Checks the settings of a stream of commands.
pub(crate) fn check_plan(plan: &Plan) -> Result<(), BatchError> {
    let err = |field: &str, message: String| BatchError { field: field.into(), message };
    if plan.batch_size == 0 {
        return Err(err("batch_size", "must be at least 1".into()));
    }
    delay::one_way(plan.simulated_rtt_ms).map_err(|m| err("simulated_rtt_ms", m))?;
    if !plan.watch.is_empty() && plan.mode != Mode::Transaction {
        return Err(err("watch", "WATCH is only meaningful in transaction mode".into()));
    }
    Ok(())
}

/// Checks a whole batch before anything is sent: settings and every command.
pub fn validate(batch: &Batch) -> Result<(), BatchError> {
    check_plan(&batch.plan)?;
    for (i, argv) in batch.commands.iter().enumerate() {
        check_command(argv, batch.plan.mode).map_err(|message| BatchError { field: format!("commands[{i}]"), message })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Commands;

    fn argv(s: &str) -> Vec<Vec<u8>> {
        s.split(' ').filter(|a| !a.is_empty()).map(|a| a.as_bytes().to_vec()).collect()
    }

    fn check(s: &str, mode: Mode) -> Result<(), String> {
        check_command(Commands::from(vec![argv(s)]).get(0), mode)
    }

    #[test]
    fn one_reply_rule() {
        assert!(check("SET k v", Mode::Pipeline).is_ok());
        assert!(check("subscribe ch", Mode::Pipeline).unwrap_err().contains("SUBSCRIBE"));
        assert!(check("MONITOR", Mode::Sequential).is_err());
        assert!(check("client reply off", Mode::Pipeline).is_err());
        assert!(check("client reply on", Mode::Pipeline).is_ok());
        assert!(check("", Mode::Pipeline).is_err());
        assert!(check("EXEC", Mode::Pipeline).is_ok());
        assert!(check("exec", Mode::Transaction).unwrap_err().contains("EXEC"));
    }

    #[test]
    fn batch_fields() {
        let mut b = Batch::new(vec![argv("PING"), argv("SUBSCRIBE x")], Plan { batch_size: 10, ..Plan::new(Mode::Pipeline) });
        assert_eq!(validate(&b).unwrap_err().field, "commands[1]");
        b.commands = vec![argv("PING")].into();
        b.plan.batch_size = 0;
        assert_eq!(validate(&b).unwrap_err().field, "batch_size");
        b.plan.batch_size = 1;
        b.plan.simulated_rtt_ms = 2000.0;
        assert_eq!(validate(&b).unwrap_err().field, "simulated_rtt_ms");
        b.plan.simulated_rtt_ms = 0.5;
        b.plan.watch = vec![b"k".to_vec()];
        assert_eq!(validate(&b).unwrap_err().field, "watch");
        b.plan.mode = Mode::Transaction;
        assert!(validate(&b).is_ok());
    }
}
