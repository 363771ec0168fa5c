//! Pipeline mode: chunks of `batch_size` commands, each written in one
//! write, then its replies read as they arrive: ⌈N / batch_size⌉ round trips.
//!
//! With `prefetch`, the next chunk is pulled from the source and encoded
//! while Redis works on the current one, so parsing input overlaps the
//! round trip instead of adding to it. (A source that blocks then delays the
//! reading of replies, so sequential mode, where each reply time matters,
//! does not prefetch.) Sequential mode is this loop with chunks of one
//! command.

use super::runner::Runner;
use super::source::{CommandSource, ResultSink};
use super::{OnError, Status};

/// Commands of one chunk, encoded back to back.
#[derive(Default)]
struct Chunk {
    bytes: Vec<u8>,
    count: usize,
}

impl Chunk {
    fn fill<S: CommandSource, K: ResultSink>(&mut self, r: &mut Runner<'_, S, K>, size: usize) {
        self.bytes.clear();
        self.count = 0;
        while self.count < size {
            let Some(argv) = r.pull() else { break };
            resp::encode_command(argv, &mut self.bytes);
            self.count += 1;
        }
    }
}

pub(super) async fn run<S: CommandSource, K: ResultSink>(
    r: &mut Runner<'_, S, K>,
    size: usize,
    on_error: OnError,
    prefetch: bool,
) {
    let mut cur = Chunk::default();
    let mut next = Chunk::default();
    cur.fill(r, size);
    while cur.count > 0 {
        let first = r.next_index();
        if r.conn.is_none() {
            break;
        }
        let sent_at = match r.write(&cur.bytes).await {
            Ok(t) => t,
            Err((e, nothing_sent)) => {
                // Part of the chunk may have reached Redis: all of it is
                // unknown, unless the socket took not one byte of the batch.
                r.fail(e);
                let status = if nothing_sent { Status::NotSent } else { Status::Unknown };
                for _ in 0..cur.count {
                    r.emit(status, None, None, None);
                }
                break;
            }
        };
        r.note_io(std::time::Instant::now());
        r.mark_sent(first + cur.count);
        let sent_us = r.us(sent_at);
        // A round trip: from here we wait for replies before writing more.
        r.summary.round_trips += 1;
        if prefetch {
            next.fill(r, size);
        }

        let mut had_error = false;
        let mut lost = false;
        for answered in 0..cur.count {
            let conn = r.conn.as_mut().expect("connection present until fail()");
            match conn.read_reply().await {
                Ok((reply, at)) => {
                    had_error |= reply.is_error();
                    r.emit_reply(reply, sent_us, at);
                }
                Err(e) => {
                    r.fail(e);
                    for _ in answered..cur.count {
                        r.emit(Status::Unknown, None, Some(sent_us), None);
                    }
                    lost = true;
                    break;
                }
            }
        }
        if lost || (had_error && on_error == OnError::Stop) {
            break;
        }
        if prefetch {
            std::mem::swap(&mut cur, &mut next);
        } else {
            cur.fill(r, size);
        }
    }
    r.rest_not_sent();
}
