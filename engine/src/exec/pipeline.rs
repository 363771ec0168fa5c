//! Pipeline mode: chunks of `batch_size` commands, each written whole
//! before waiting for its replies: ⌈N / batch_size⌉ round trips.
//!
//! A chunk goes out in segments of at most [`SEGMENT`] bytes, each encoded
//! just before it is written, and the replies that have already arrived are
//! read between segments without waiting, as `redis-cli --pipe` does. A
//! large chunk (a bulk load with `batch_size` ≥ N) thus keeps Redis busy
//! from its first segment instead of after the whole chunk is encoded, its
//! encoded form is never in memory whole, and its replies do not pile up in
//! Redis's output buffer. It is still one round trip: nothing waits for a
//! reply before the chunk is written.
//!
//! With `prefetch`, the next chunk's first segment is pulled from the source
//! and encoded while Redis works on the current chunk, so parsing input
//! overlaps the round trip instead of adding to it. (A source that blocks
//! then delays the reading of replies, so sequential mode, where each reply
//! time matters, does not prefetch.) Sequential mode is this loop with
//! chunks of one command.

use std::collections::VecDeque;
use std::time::Instant;

use super::execution::Execution;
use super::source::{CommandSource, ResultSink};
use super::{OnError, Status};
use crate::conn::ReadError;

/// Most bytes of encoded commands per write: 64 KiB, four times the 16 KiB
/// Redis reads per call (`PROTO_IOBUF_LEN` in `src/server.h`).
const SEGMENT: usize = 64 * 1024;

/// Commands of one segment, encoded back to back.
#[derive(Default)]
struct Segment<'s> {
    bytes: Vec<u8>,
    /// Their RESP as it was encoded while the batch was parsed, instead of `bytes`.
    encoded: Option<&'s [u8]>,
    count: usize,
}

impl<'s> Segment<'s> {
    /// Pulls and encodes up to `max` commands, stopping once [`SEGMENT`]
    /// bytes are reached (a single command may exceed it).
    fn fill<S: CommandSource, K: ResultSink>(&mut self, r: &mut Execution<'s, S, K>, max: usize) {
        self.bytes.clear();
        self.count = 0;
        self.encoded = None;
        if let Some((encoded, count)) = r.pull_encoded(max, SEGMENT) {
            (self.encoded, self.count) = (Some(encoded), count);
            return;
        }
        while self.count < max && self.bytes.len() < SEGMENT {
            let Some(argv) = r.pull() else { break };
            resp::encode_command(argv, &mut self.bytes);
            self.count += 1;
        }
    }

    /// The segment's RESP.
    fn resp(&self) -> &[u8] {
        self.encoded.unwrap_or(&self.bytes)
    }
}

/// Written segments still awaiting replies, oldest first: the index after
/// each one's last command and the µs its write was issued (each command's
/// `sent_us`).
type InFlight = VecDeque<(usize, u64)>;

pub(super) async fn run<'s, S: CommandSource, K: ResultSink>(
    r: &mut Execution<'s, S, K>,
    size: usize,
    on_error: OnError,
    prefetch: bool,
) {
    let mut seg = Segment::default();
    let mut next = Segment::default();
    let mut in_flight = InFlight::new();
    seg.fill(r, size);
    'chunks: while seg.count > 0 {
        if r.conn.is_none() {
            break;
        }
        let mut written = r.next_index();
        let mut in_chunk = 0;
        let mut had_error = false;
        // Write the chunk, reading between segments what has already arrived.
        loop {
            let issued = Instant::now();
            match r.write(seg.resp(), in_chunk > 0).await {
                Ok(sent_at) => {
                    r.note_io(Instant::now());
                    written += seg.count;
                    in_chunk += seg.count;
                    r.mark_sent(written);
                    in_flight.push_back((written, r.us(sent_at)));
                }
                Err((e, nothing_sent)) => {
                    // Replies that arrived before the failure still count.
                    let _ = read_replies(r, &mut in_flight, false, &mut had_error).await;
                    // Part of the segment may have reached Redis: all of it is
                    // unknown, unless the socket took not one byte of the batch.
                    lost(r, &mut in_flight, e);
                    let (status, sent_us) =
                        if nothing_sent { (Status::NotSent, None) } else { (Status::Unknown, Some(r.us(issued))) };
                    for _ in 0..seg.count {
                        r.emit(status, None, sent_us, None);
                    }
                    break 'chunks;
                }
            }
            if in_chunk == size {
                break;
            }
            seg.fill(r, size - in_chunk);
            if seg.count == 0 {
                break;
            }
            if let Err(e) = read_replies(r, &mut in_flight, false, &mut had_error).await {
                // The segment pulled but never written ends `not_sent`, below.
                lost(r, &mut in_flight, e);
                break 'chunks;
            }
        }
        // A round trip: from here we wait for replies before writing more.
        r.summary.round_trips += 1;
        if prefetch {
            next.fill(r, size);
        }
        if let Err(e) = read_replies(r, &mut in_flight, true, &mut had_error).await {
            lost(r, &mut in_flight, e);
            break;
        }
        if had_error && on_error == OnError::Stop {
            break;
        }
        if prefetch {
            std::mem::swap(&mut seg, &mut next);
        } else {
            seg.fill(r, size);
        }
    }
    r.rest_not_sent();
}

/// Reads and emits replies to the segments in flight: with `wait`, until
/// every one is answered; without, only those already received. Notes any
/// error reply in `had_error`. Errors: the connection failed (see [`lost`]).
async fn read_replies<S: CommandSource, K: ResultSink>(
    r: &mut Execution<'_, S, K>,
    in_flight: &mut InFlight,
    wait: bool,
    had_error: &mut bool,
) -> Result<(), ReadError> {
    while let Some(&(end, sent_us)) = in_flight.front() {
        if r.next_index() == end {
            in_flight.pop_front();
            continue;
        }
        let conn = r.conn.as_mut().expect("connection present until fail()");
        // Most replies are in the buffer already: taken without a future.
        let read = match conn.buffered_reply()? {
            Some(reply) => Some(reply),
            None if wait => Some(conn.read_reply().await?),
            None => conn.try_read_reply().await?,
        };
        match read {
            Some((reply, at)) => {
                *had_error |= reply.is_error();
                r.emit_reply(reply, sent_us, at)?;
            }
            None => return Ok(()),
        }
    }
    Ok(())
}

/// The connection failed: it is dropped, and every command written and not
/// yet answered is `unknown` (it may or may not have run).
fn lost<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, in_flight: &mut InFlight, why: impl std::fmt::Display) {
    r.fail(why);
    for (end, sent_us) in in_flight.drain(..) {
        while r.next_index() < end {
            r.emit(Status::Unknown, None, Some(sent_us), None);
        }
    }
}
