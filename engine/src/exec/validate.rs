//! Rules a batch must follow so that every reply can be matched to its
//! command: the executor reads exactly one reply per command written, so a
//! command that answers zero or several times would shift every later reply
//! onto the wrong command (the class of bug of redis-py#2624, ioredis#800,
//! redis-rs#698).

use super::{ArgvRef, Batch, Mode, Plan};
use crate::commands::{ReplyRuleError, Table};
use crate::delay;

/// A batch that cannot be run; `field` names the request field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BatchError {
    /// `commands[3]`, `batch_size`, `simulated_rtt_ms`, `watch`.
    pub field: String,
    pub message: String,
}

/// Checks one command for `mode` by the table's reply rule
/// ([`Table::reply_rule`]): not empty, exactly one reply, and in
/// transaction mode not one of the commands pipelab sends itself
/// (MULTI/EXEC/DISCARD/WATCH/UNWATCH; WATCH goes in the batch's `watch`).
/// Errors: why, for a person.
pub fn check_command(table: &Table, argv: ArgvRef<'_>, mode: Mode) -> Result<(), ReplyRuleError> {
    table.reply_rule(argv, mode)
}

/// Checks the settings of a stream of commands.
pub(crate) fn check_plan(plan: &Plan) -> Result<(), BatchError> {
    let err = |field: &str, message: String| BatchError { field: field.into(), message };
    if plan.batch_size == 0 {
        return Err(err("batch_size", "must be at least 1".into()));
    }
    delay::one_way(plan.simulated_rtt_ms).map_err(|e| err("simulated_rtt_ms", e.to_string()))?;
    delay::check_bandwidth(plan.simulated_bandwidth_mbps).map_err(|e| err("simulated_bandwidth_mbps", e.to_string()))?;
    if !plan.watch.is_empty() && plan.mode != Mode::Transaction {
        return Err(err("watch", "WATCH is only meaningful in transaction mode".into()));
    }
    if !(1..=super::auto::MAX_CLIENTS).contains(&plan.clients) {
        return Err(err("clients", format!("must be 1 to {} (simulated callers)", super::auto::MAX_CLIENTS)));
    }
    if plan.window_us > super::auto::MAX_WINDOW_US {
        return Err(err("window_us", format!("must be 0 to {} µs", super::auto::MAX_WINDOW_US)));
    }
    Ok(())
}

/// Checks a whole batch before anything is sent: settings and every
/// command, by `table`'s rules.
pub fn validate(batch: &Batch, table: &Table) -> Result<(), BatchError> {
    check_plan(&batch.plan)?;
    let mode = batch.plan.mode;
    // Checked as the commands were parsed: only the first refused, if any, is looked at again.
    if let Some(pre) = batch.checked_for(table) {
        match pre.reply_refused(mode) {
            None => return Ok(()),
            Some(i) => {
                if let Err(e) = check_command(table, batch.commands.get(i), mode) {
                    return Err(BatchError { field: format!("commands[{i}]"), message: e.to_string() });
                }
            }
        }
    }
    for (i, argv) in batch.commands.iter().enumerate() {
        check_command(table, argv, batch.plan.mode).map_err(|e| BatchError { field: format!("commands[{i}]"), message: e.to_string() })?;
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

    fn check(s: &str, mode: Mode) -> Result<(), ReplyRuleError> {
        check_command(&crate::commands::fallback::table(), Commands::from(vec![argv(s)]).get(0), mode)
    }

    #[test]
    fn one_reply_rule() {
        assert!(check("SET k v", Mode::Pipeline).is_ok());
        assert!(check("subscribe ch", Mode::Pipeline).unwrap_err().to_string().contains("SUBSCRIBE"));
        assert!(check("MONITOR", Mode::Sequential).is_err());
        assert!(check("client reply off", Mode::Pipeline).is_err());
        assert!(check("client reply on", Mode::Pipeline).is_ok());
        assert!(check("", Mode::Pipeline).is_err());
        assert!(check("EXEC", Mode::Pipeline).is_ok());
        assert!(check("exec", Mode::Transaction).unwrap_err().to_string().contains("EXEC"));
    }

    #[test]
    fn batch_fields() {
        let table = crate::commands::fallback::table();
        let mut b = Batch::new(vec![argv("PING"), argv("SUBSCRIBE x")], Plan { batch_size: 10, ..Plan::new(Mode::Pipeline) });
        assert_eq!(validate(&b, &table).unwrap_err().field, "commands[1]");
        b.commands = vec![argv("PING")].into();
        b.plan.batch_size = 0;
        assert_eq!(validate(&b, &table).unwrap_err().field, "batch_size");
        b.plan.batch_size = 1;
        b.plan.simulated_rtt_ms = 2000.0;
        assert_eq!(validate(&b, &table).unwrap_err().field, "simulated_rtt_ms");
        b.plan.simulated_rtt_ms = 0.5;
        b.plan.watch = vec![b"k".to_vec()];
        assert_eq!(validate(&b, &table).unwrap_err().field, "watch");
        b.plan.mode = Mode::Transaction;
        assert!(validate(&b, &table).is_ok());
        b.plan.clients = 0;
        assert_eq!(validate(&b, &table).unwrap_err().field, "clients");
        b.plan.clients = 10;
        b.plan.window_us = 2_000_000;
        assert_eq!(validate(&b, &table).unwrap_err().field, "window_us");
    }
}
