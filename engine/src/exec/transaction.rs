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
    let Some((body, n)) = hold(r) else {
        // Never run part of a transaction: a bad command anywhere sends nothing.
        r.rest_not_sent();
        return;
    };
    r.summary.batch_size = n;
    if !watch.is_empty() && !send_watch(r, watch).await {
        r.rest_not_sent();
        return;
    }
    let first = r.next_index();
    let Some(sent_us) = send(r, &body, first, n).await else { return };
    let replies = read_replies(r, n).await;
    if let Some(e) = &replies.lost {
        r.fail(e);
    }
    let verdict = Verdict::of(&replies, first);
    emit_results(r, n, &replies, verdict.results, verdict.nothing_ran_reply.as_ref(), sent_us);
    r.transaction = Some(outcome_of(verdict.status, verdict.rejected.first().map(|x| x.index), verdict.message, verdict.rejected));
}

/// MULTI, every command pulled and EXEC, encoded as the one write, and the
/// number of commands; `None` if the source failed or held none.
fn hold<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>) -> Option<(Vec<u8>, usize)> {
    // MULTI…EXEC is one write: the whole batch is held.
    let mut body = Vec::new();
    resp::encode_command(&[b"MULTI"], &mut body);
    let mut n = 0;
    while let Some(argv) = r.pull() {
        resp::encode_command(argv, &mut body);
        n += 1;
    }
    if r.input_error.is_some() || n == 0 {
        return None;
    }
    resp::encode_command(&[b"EXEC"], &mut body);
    Some((body, n))
}

/// WATCH of `watch`, its own round trip: false (the transaction aborted
/// and said why) if it failed.
async fn send_watch<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, watch: &[Vec<u8>]) -> bool {
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
    let why = match outcome {
        Ok((reply, at)) if !reply.is_error() => {
            r.note_io(at);
            return true;
        }
        Ok((reply, _)) => reply_text(&reply),
        Err(e) => {
            r.fail(&e);
            e
        }
    };
    r.transaction = Some(outcome_of(TransactionStatus::Aborted, None, Some(format!("WATCH failed: {why}")), vec![]));
    false
}

/// The one write of the transaction of the `n` commands from index
/// `first`: when it was sent (µs into the batch), or `None` with every
/// command and the transaction told what became of them (`not_sent` if not
/// one byte left, else `unknown`).
async fn send<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, body: &[u8], first: usize, n: usize) -> Option<u64> {
    let sent_at = match r.write(body, false).await {
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
                return None;
            }
            for _ in 0..n {
                r.emit(Status::Unknown, None, None, None);
            }
            r.transaction = Some(outcome_of(TransactionStatus::Unknown, None, Some(msg), vec![]));
            return None;
        }
    };
    r.note_io(Instant::now());
    r.mark_sent(first + n);
    r.summary.round_trips += 1;
    Some(r.us(sent_at))
}

/// What Redis answered the transaction's write.
struct Replies {
    /// MULTI's error, if it failed.
    multi_error: Option<String>,
    /// Each command's answer inside MULTI, as far as they were read.
    queued: Vec<QueueReply>,
    /// EXEC's answer, if it was read.
    exec: Option<(resp::Value, Instant)>,
    /// Why the connection was lost before every answer was read.
    lost: Option<String>,
}

/// 1 reply for MULTI, n for the commands, 1 for EXEC: exactly one per command written.
async fn read_replies<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, n: usize) -> Replies {
    let mut out = Replies { multi_error: None, queued: Vec::with_capacity(n), exec: None, lost: None };
    for k in 0..n + 2 {
        let conn = r.conn.as_mut().expect("connected until fail()");
        let (reply, at) = match conn.read_reply().await {
            Ok(x) => x,
            Err(e) => {
                out.lost = Some(e.to_string());
                break;
            }
        };
        r.note_io(at);
        if k == 0 {
            if reply.is_error() {
                out.multi_error = Some(reply_text(&reply));
            }
        } else if k <= n {
            let is_queued = matches!(reply.unattributed(), resp::Value::Simple(s) if s == b"QUEUED");
            out.queued.push(if is_queued {
                QueueReply::Queued
            } else if reply.is_error() {
                QueueReply::Rejected(reply, at)
            } else {
                QueueReply::Executed(reply, at)
            });
        } else {
            out.exec = Some((reply, at));
        }
    }
    out
}

/// EXEC's verdict: the results of queued commands, or why none ran.
struct Verdict {
    status: TransactionStatus,
    results: Option<std::vec::IntoIter<resp::Value>>,
    /// What each queued command gets when none ran (EXECABORT, a null EXEC).
    nothing_ran_reply: Option<resp::Value>,
    message: Option<String>,
    /// The commands Redis rejected at queue time, in order.
    rejected: Vec<Rejected>,
}

impl Verdict {
    /// `replies`' verdict, the batch's commands counted from `first`.
    fn of(replies: &Replies, first: usize) -> Verdict {
        let rejected: Vec<Rejected> = replies
            .queued
            .iter()
            .enumerate()
            .filter_map(|(i, q)| match q {
                QueueReply::Rejected(v, _) => Some(Rejected { index: first + i, message: reply_text(v) }),
                _ => None,
            })
            .collect();
        let queued_count = replies.queued.iter().filter(|q| matches!(q, QueueReply::Queued)).count();
        let (status, results, nothing_ran_reply, message) = match &replies.exec {
            None => (TransactionStatus::Unknown, None, None, replies.lost.clone()),
            Some((v, _)) => match v.unattributed() {
                resp::Value::Array(items) if items.len() == queued_count && replies.multi_error.is_none() => {
                    (TransactionStatus::Committed, Some(items.clone().into_iter()), None, None)
                }
                resp::Value::Null | resp::Value::NullArray | resp::Value::NullBulk => {
                    (TransactionStatus::WatchConflict, None, Some(v.clone()), Some("a WATCHed key changed before EXEC: nothing ran".to_string()))
                }
                other if other.is_error() => {
                    let msg = match (rejected.first(), &replies.multi_error) {
                        // Counted from 1, as the page's table and the CLI count (`index` stays 0-based).
                        (Some(x), _) => format!("command {} was rejected at queue time ({}); EXEC: {}", x.index + 1, x.message, reply_text(v)),
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
        Verdict { status, results, nothing_ran_reply, message, rejected }
    }
}

/// Each of the `n` commands' result, in order: its own answer inside MULTI, else its
/// place in EXEC's array, else what EXEC said for all (nothing ran), else
/// `unknown`.
fn emit_results<S: CommandSource, K: ResultSink>(
    r: &mut Execution<'_, S, K>,
    n: usize,
    replies: &Replies,
    mut results: Option<std::vec::IntoIter<resp::Value>>,
    nothing_ran_reply: Option<&resp::Value>,
    sent_us: u64,
) {
    let exec_at = replies.exec.as_ref().map(|(_, at)| *at);
    for i in 0..n {
        match replies.queued.get(i) {
            Some(QueueReply::Rejected(v, at)) | Some(QueueReply::Executed(v, at)) => {
                // Refused by the sink (its size): `unknown`, the batch cut.
                let _ = r.emit_reply(v.clone(), sent_us, *at);
            }
            Some(QueueReply::Queued) => match (&mut results, nothing_ran_reply, exec_at) {
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
}

fn outcome_of(status: TransactionStatus, rejected_index: Option<usize>, message: Option<String>, rejected: Vec<Rejected>) -> TransactionOutcome {
    TransactionOutcome { status, rejected_index, message, rejected }
}
