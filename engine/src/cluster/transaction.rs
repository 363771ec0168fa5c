//! Transaction mode on a cluster: MULTI/EXEC runs on one master, so every
//! key of the batch, and of `watch`, must hash to one slot; otherwise the
//! batch is refused before anything is sent ([`check_one_slot`]), rather
//! than split into several transactions that would not be atomic together
//! (the go-redis#3019 bug). A one-slot transaction runs on that slot's
//! master through the executor's own transaction mode.
//!
//! Redirections: if the slot moved, Redis answers every queued command
//! with MOVED and EXEC with EXECABORT: nothing ran, so the slot map is read
//! again and the whole transaction is sent to the new master (at most
//! `redirect::MAX_REDIRECTIONS` times). An ASK (a key in migration) is not
//! followed: the aborted transaction is the result.

use std::sync::Arc;

use crate::conn::ConnectError;
use crate::commands::Table;
use crate::exec::drive::run_mode;
use crate::exec::{check_command, BatchError, BatchSource, CommandResult, CommandSource, Commands, ExecError, InputError, InputErrorKind, NodeSummary, ResultSink, Status, StreamReport, TransactionStatus};

use super::redirect::{self, Redirect};
use super::route::slots;
use super::{Cause, Io, Run};

/// The one hash slot of every key of `commands` and `watch` (`None`: no
/// keys). Errors (`cross_slot`): two keys in different slots, naming the
/// two commands (or `watch` entries) and their slots.
pub(crate) fn check_one_slot(table: &Table, commands: &Commands, watch: &[Vec<u8>]) -> Result<Option<u16>, BatchError> {
    let mut first: Option<(String, u16)> = None;
    let watched = watch.iter().enumerate().map(|(i, k)| (format!("watch[{i}]"), vec![super::slot::slot(k)]));
    let commanded = commands.iter().enumerate().map(|(i, argv)| (format!("commands[{i}]"), slots(table, argv)));
    for (name, slots) in watched.chain(commanded) {
        for s in slots {
            match &first {
                None => first = Some((name.clone(), s)),
                Some((other, t)) if *t != s => {
                    return Err(BatchError {
                        field: name.clone(),
                        message: format!(
                            "{other} has a key in hash slot {t}, {name} one in hash slot {s}; a transaction \
                             runs on one master, so all its keys must be in one slot (give them a common {{hash tag}})"
                        ),
                    });
                }
                Some(_) => {}
            }
        }
    }
    Ok(first.map(|(_, s)| s))
}

/// Runs a transaction-mode `plan` on the master of its slot. Errors:
/// [`ExecError::CrossSlot`] (nothing sent), or [`ExecError::Connect`] if
/// that master cannot be reached.
pub(crate) async fn run<S: CommandSource, K: ResultSink>(run: Run<'_>, io: Io<'_, S, K>) -> Result<StreamReport<S::Error>, ExecError> {
    let Run { cluster, settings, plan } = run;
    let Io { source, sink, check, table } = io;
    // MULTI…EXEC is one write: the whole batch is held, as in `exec::transaction`.
    let mut commands = Commands::new();
    let mut input_error = None;
    loop {
        match source.next_command() {
            Ok(Some(argv)) => {
                if check {
                    if let Err(m) = check_command(&table, argv, plan.mode) {
                        input_error = Some(InputError { index: commands.len(), sent: 0, kind: InputErrorKind::Invalid(m) });
                        break;
                    }
                }
                for arg in argv.iter() {
                    commands.push_arg(arg);
                }
                commands.end_command();
            }
            Ok(None) => break,
            Err(e) => {
                input_error = Some(InputError { index: commands.len(), sent: 0, kind: InputErrorKind::Source(e) });
                break;
            }
        }
    }
    let slot = check_one_slot(&table, &commands, &plan.watch).map_err(ExecError::CrossSlot)?;
    if input_error.is_some() {
        // Never run part of a transaction: a bad command anywhere sends nothing.
        for index in 0..commands.len() {
            sink.push(CommandResult::not_sent(index));
        }
        let summary = crate::exec::Summary { mode: Some(plan.mode), commands: commands.len(), not_sent: commands.len(), ..Default::default() };
        return Ok(StreamReport { summary, transaction: None, connection_error: None, input_error, reconnect_failed: None });
    }

    let mut moved_to: Option<String> = None;
    let mut redirections = 0u64;
    loop {
        let topology = cluster.topology();
        let address = moved_to.take().unwrap_or_else(|| topology.nodes[slot.and_then(|s| topology.owner(s)).unwrap_or(0)].address.clone());
        let target = match topology.nodes.iter().find(|n| n.address == address) {
            Some(n) => n.target.clone(),
            None => match super::topology::endpoint_of(&address) {
                Some(ep) => topology.nodes[0].target.at(ep),
                None => return Err(ConnectError::Cluster(format!("cannot connect to `{address}`")).into()),
            },
        };
        let lease = match cluster.checkout(&address, &target, settings).await {
            Ok(lease) => lease,
            Err(e) => {
                // Nothing sent: the map is read again for the next batch (a failover may be under way).
                cluster.mark_down(&address, &e.to_string());
                cluster.reload(&topology, Cause::Connection, settings).await;
                return Err(ConnectError::Cluster(format!("{address}: {e}")).into());
            }
        };
        let fallback = lease.reused.then_some((&target, settings));
        let mut results: Vec<CommandResult> = Vec::with_capacity(commands.len());
        let mut batch_source = BatchSource::new(&commands);
        let mut r = crate::exec::execution::Execution::new(lease.conn, fallback, plan, &mut batch_source, &mut results, false, table.clone(), None);
        run_mode(&mut r, plan).await;
        let ran = r.finish();
        if let Some(conn) = ran.reusable {
            cluster.checkin(&address, &target, conn);
        }
        let mut report = ran.report;
        if let Some(e) = report.connection_error.as_deref().filter(|e| !crate::conn::batch_cut(e)) {
            cluster.mark_down(&address, e);
            cluster.reload(&topology, Cause::Connection, settings).await;
        }
        let moved = report.transaction.as_ref().filter(|t| t.status == TransactionStatus::Aborted && !t.rejected.is_empty()).and_then(|t| {
            let all: Option<Vec<String>> = t
                .rejected
                .iter()
                .map(|r| match redirect::of(&resp::Value::Error(r.message.clone().into_bytes())) {
                    Some(Redirect::Moved(a)) => Some(a),
                    _ => None,
                })
                .collect();
            all.and_then(|a| a.into_iter().next())
        });
        if let Some(addr) = moved {
            redirections += 1;
            if redirections <= redirect::MAX_REDIRECTIONS as u64 {
                cluster.reload(&topology, Cause::Moved, settings).await;
                moved_to = Some(addr);
                continue;
            }
        }
        let node: Arc<str> = address.as_str().into();
        let mut cut = None;
        for mut r in results {
            if let Some(reply) = &r.reply {
                if let Err(limit) = sink.admit(reply) {
                    cut = Some(limit);
                }
            }
            if cut.is_some() && r.reply.is_some() {
                // Counted against the reply limit: cut as the executor cuts.
                r.reply = None;
                r.reply_us = None;
                match r.status {
                    Status::Ok => report.summary.ok -= 1,
                    _ => report.summary.errors -= 1,
                }
                r.status = Status::Unknown;
                report.summary.unknown += 1;
            }
            r.node = Some(node.clone());
            sink.push(r);
        }
        if let Some(limit) = cut {
            report.connection_error.get_or_insert(format!("reply limit reached: the report would pass {limit} bytes of JSON"));
        }
        let s = &mut report.summary;
        s.redirections = redirections;
        s.nodes = vec![NodeSummary {
            address,
            commands: s.commands,
            round_trips: s.round_trips,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            redirections,
            failed: report.connection_error.clone().filter(|e| !crate::conn::batch_cut(e)),
        }];
        let StreamReport { summary, transaction, connection_error, .. } = report;
        return Ok(StreamReport { summary, transaction, connection_error, input_error: None, reconnect_failed: None });
    }
}
