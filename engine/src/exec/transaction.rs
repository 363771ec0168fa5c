//! Transaction mode: `MULTI`, the commands and `EXEC` in one write (one
//! round trip; a second one first for `WATCH` if keys are watched).
//!
//! Redis answers every command inside MULTI with `+QUEUED` or, when it
//! rejects the command at queue time (wrong arity, unknown command), with an
//! error; EXEC then fails with EXECABORT and nothing runs. Otherwise EXEC's
//! array holds each queued command's reply: run-time errors (WRONGTYPE) sit
//! at their index while the others ran, as Redis has no rollback. A null
//! EXEC means a WATCHed key changed. (redis.io/docs/latest/develop/interactions/transactions)
//!
//! When nothing ran (aborted, watch conflict), each command's status is
//! `error` and its reply is what Redis said for it: its own queue-time error,
//! or EXEC's reply (the EXECABORT error, or null).

use std::time::Instant;

use super::execution::Execution;
use super::source::{CommandSource, ResultSink};
use super::{Rejected, Status, TransactionOutcome, TransactionStatus};
use crate::conn::reply_text;

/// What Redis said for one command inside MULTI.
enum QueueReply {
    /// `+QUEUED`: its result comes from EXEC.
    Queued,
    /// An error at queue time (the command was not queued), read at this instant.
    Rejected(resp::Value, Instant),
    /// Any other reply: the command ran outside a transaction (only if MULTI
    /// failed); the reply is its result.
    Executed(resp::Value, Instant),
}

pub(super) async fn run<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, watch: &[Vec<u8>]) {
    // MULTI…EXEC is one write: the whole batch is held.
    let mut body = Vec::new();
    resp::encode_command(&[b"MULTI"], &mut body);
    let mut n = 0;
    while let Some(argv) = r.pull() {
        resp::encode_command(argv, &mut body);
        n += 1;
    }
    if r.input_error.is_some() || n == 0 {
        // Never run part of a transaction: a bad command anywhere sends nothing.
        r.rest_not_sent();
        return;
    }
    resp::encode_command(&[b"EXEC"], &mut body);
    r.summary.batch_size = n;

    if !watch.is_empty() {
        let mut cmd = Vec::new();
        let mut argv: Vec<&[u8]> = vec![b"WATCH"];
        argv.extend(watch.iter().map(|k| k.as_slice()));
        resp::encode_command(argv, &mut cmd);
        let outcome = match r.write(&cmd, false).await.map_err(|(e, _)| e) {
            Ok(t) => {
                r.note_io(t);
                r.summary.round_trips += 1;
                let conn = r.conn.as_mut().expect("connected");
                conn.read_reply().await.map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        match outcome {
            Ok((reply, at)) if !reply.is_error() => r.note_io(at),
            Ok((reply, _)) => {
                r.transaction = Some(outcome_of(TransactionStatus::Aborted, None, Some(format!("WATCH failed: {}", reply_text(&reply))), vec![]));
                r.rest_not_sent();
                return;
            }
            Err(e) => {
                r.fail(&e);
                r.transaction = Some(outcome_of(TransactionStatus::Aborted, None, Some(format!("WATCH failed: {e}")), vec![]));
                r.rest_not_sent();
                return;
            }
        }
    }

    let first = r.next_index();
    let sent_at = match r.write(&body, false).await {
        Ok(t) => t,
        Err((e, nothing_sent)) => {
            let msg = e.to_string();
            r.fail(&msg);
            if nothing_sent {
                // Not one byte reached the socket: nothing ran.
                for _ in 0..n {
                    r.emit(Status::NotSent, None, None, None);
                }
                r.transaction = Some(outcome_of(TransactionStatus::Aborted, None, Some(format!("nothing was sent: {msg}")), vec![]));
                return;
            }
            for _ in 0..n {
                r.emit(Status::Unknown, None, None, None);
            }
            r.transaction = Some(outcome_of(TransactionStatus::Unknown, None, Some(msg), vec![]));
            return;
        }
    };
    r.note_io(Instant::now());
    r.mark_sent(first + n);
    let sent_us = r.us(sent_at);
    r.summary.round_trips += 1;

    // 1 reply for MULTI, n for the commands, 1 for EXEC: exactly one per command written.
    let mut multi_error = None;
    let mut queued: Vec<QueueReply> = Vec::with_capacity(n);
    let mut exec: Option<(resp::Value, Instant)> = None;
    let mut lost: Option<String> = None;
    for k in 0..n + 2 {
        let conn = r.conn.as_mut().expect("connected until fail()");
        let (reply, at) = match conn.read_reply().await {
            Ok(x) => x,
            Err(e) => {
                lost = Some(e.to_string());
                break;
            }
        };
        r.note_io(at);
        if k == 0 {
            if reply.is_error() {
                multi_error = Some(reply_text(&reply));
            }
        } else if k <= n {
            let is_queued = matches!(reply.unattributed(), resp::Value::Simple(s) if s == b"QUEUED");
            queued.push(if is_queued {
                QueueReply::Queued
            } else if reply.is_error() {
                QueueReply::Rejected(reply, at)
            } else {
                QueueReply::Executed(reply, at)
            });
        } else {
            exec = Some((reply, at));
        }
    }
    if let Some(e) = &lost {
        r.fail(e);
    }

    let rejected: Vec<Rejected> = queued
        .iter()
        .enumerate()
        .filter_map(|(i, q)| match q {
            QueueReply::Rejected(v, _) => Some(Rejected { index: first + i, message: reply_text(v) }),
            _ => None,
        })
        .collect();
    let first_rejected = rejected.first().map(|x| (x.index, x.message.clone()));

    let queued_count = queued.iter().filter(|q| matches!(q, QueueReply::Queued)).count();
    // EXEC's verdict: the results of queued commands, or why none ran.
    let (status, mut results, nothing_ran_reply, message) = match &exec {
        None => (TransactionStatus::Unknown, None, None, lost.clone()),
        Some((v, _)) => match v.unattributed() {
            resp::Value::Array(items) if items.len() == queued_count && multi_error.is_none() => {
                (TransactionStatus::Committed, Some(items.clone().into_iter()), None, None)
            }
            resp::Value::Null | resp::Value::NullArray | resp::Value::NullBulk => {
                (TransactionStatus::WatchConflict, None, Some(v.clone()), Some("a WATCHed key changed before EXEC: nothing ran".to_string()))
            }
            other if other.is_error() => {
                let msg = match (&first_rejected, &multi_error) {
                    // Counted from 1, as the page's table and the CLI count (`index` stays 0-based).
                    (Some((i, m)), _) => format!("command {} was rejected at queue time ({m}); EXEC: {}", i + 1, reply_text(v)),
                    (None, Some(m)) => format!("MULTI failed ({m}); EXEC: {}", reply_text(v)),
                    (None, None) => reply_text(v),
                };
                (TransactionStatus::Aborted, None, Some(v.clone()), Some(msg))
            }
            _ => (
                TransactionStatus::Unknown,
                None,
                None,
                Some(format!("EXEC answered {} for {} queued commands", v.display(), queued_count)),
            ),
        },
    };
    let exec_at = exec.as_ref().map(|(_, at)| *at);
    for i in 0..n {
        match queued.get(i) {
            Some(QueueReply::Rejected(v, at)) | Some(QueueReply::Executed(v, at)) => {
                let at = *at;
                // Refused by the sink (its size): `unknown`, the batch cut.
                let _ = r.emit_reply(v.clone(), sent_us, at);
            }
            Some(QueueReply::Queued) => match (&mut results, &nothing_ran_reply, exec_at) {
                (Some(items), _, Some(at)) => {
                    let item = items.next().expect("length checked");
                    let _ = r.emit_reply(item, sent_us, at);
                }
                (None, Some(reply), Some(at)) => {
                    let reply_us = r.us(at);
                    r.emit(Status::Error, Some(reply.clone()), Some(sent_us), Some(reply_us));
                }
                _ => r.emit(Status::Unknown, None, Some(sent_us), None),
            },
            // No answer read for it: the connection was lost.
            None => r.emit(Status::Unknown, None, Some(sent_us), None),
        }
    }
    let rejected_index = first_rejected.map(|(i, _)| i);
    r.transaction = Some(outcome_of(status, rejected_index, message, rejected));
}

fn outcome_of(status: TransactionStatus, rejected_index: Option<usize>, message: Option<String>, rejected: Vec<Rejected>) -> TransactionOutcome {
    TransactionOutcome { status, rejected_index, message, rejected }
}
