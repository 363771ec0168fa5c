//! The read buffer: bytes received from Redis and not yet decoded, on
//! `bytes::BytesMut` as mini-redis's `connection.rs` keeps it. A decoded
//! reply is cut off the front in O(1) (`advance`); reads go into the spare
//! capacity without zeroing it first.
//!
//! Kept over the `Vec<u8>` with two cursors it replaced because it is no
//! slower and simpler: 1M SETs (`bench/run_vs_redis_cli.sh`'s file), `pipelab
//! run --mode pipeline`, both release builds alternated 5 times on one
//! redis-server, median CPU time (user + sys) of pipelab: batch size 1000:
//! 0.43 s both; batch size 1000000: 0.37 s both.

use std::sync::{Arc, OnceLock};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::ReadError;

/// Initial capacity and growth step, in bytes; an idle connection keeps this much.
pub(super) const READ_CHUNK: usize = 64 * 1024;

/// A buffer that took this much is given back at the next read once it is
/// drained (by then the reply decoded out of it is its batch's to charge):
/// a connection kept for the next batch must not hold a large reply's room.
const GIVE_BACK_FROM: u64 = 1 << 20;

/// Every connection's memory for replies being read, shared with the
/// answers made of them (`pipelab serve`'s `--max-response-memory`): a
/// buffer takes its growth past `READ_CHUNK` from it before the bytes
/// arrive, so that many batches each reading a large reply cannot hold
/// more than it between them. While a reply arrives it also takes what
/// the reply will cost once decoded: a copy, and its JSON, at most six
/// times its size (`\u0000` for a NUL byte), so that a reply whose answer
/// has no room is refused before it is read, not after.
pub trait ReplyMemory: Send + Sync {
    /// All of it, in bytes.
    fn limit(&self) -> u64;
    /// Takes `n` bytes more for a holder that has `had` already; else why
    /// not, for a person (its text contains [`MEMORY_REFUSED`]).
    /// `force`: taken even past the limit (the bytes must be read anyway).
    fn take(&self, had: u64, n: u64, force: bool) -> Result<(), MemoryRefusal>;
    /// Gives `n` bytes back.
    fn give(&self, n: u64);
}

/// A [`ReplyMemory`]'s refusal: its own error, worded by it (the engine
/// knows neither its limit's flag nor its wording).
pub type MemoryRefusal = Box<dyn std::error::Error + Send + Sync>;

/// What a reply's arriving byte may cost at most once decoded, besides
/// the buffer's: its copy, and its JSON (`\u0000`: six bytes).
const MOST_PER_BYTE: u64 = 7;
/// The least: its copy, and JSON as large as itself.
const LEAST_PER_BYTE: u64 = 2;

/// In every refusal of a [`ReplyMemory`]: how a report's `connection_error`
/// is known to be one (`super::batch_cut`).
pub const MEMORY_REFUSED: &str = "memory for answers";

static MEMORY: OnceLock<Arc<dyn ReplyMemory>> = OnceLock::new();

/// The process's [`ReplyMemory`] (the first call sets it). Unset (the CLI,
/// servers built in a test's process), reads are bounded by the reply limit alone.
pub fn set_reply_memory(memory: Arc<dyn ReplyMemory>) {
    let _ = MEMORY.set(memory);
}

/// Large replies handed from the task that read them to another (a shared
/// connection's to its batch's), charged to the [`ReplyMemory`] until
/// dropped: else a lane could read reply after reply, each with room, while
/// the copies already read wait uncharged for their batch to count them.
#[derive(Debug, Default)]
pub struct HeldReplies(u64);

impl HeldReplies {
    /// Replies smaller than this are not charged (a small batch's stay off the shared counter).
    const FROM: u64 = 64 * 1024;

    /// A reply of `size` bytes more, charged even past the limit (it was read).
    pub fn add(&mut self, size: u64) {
        if let (Some(memory), true) = (MEMORY.get(), size >= Self::FROM) {
            let _ = memory.take(0, size, true);
            self.0 += size;
        }
    }
}

impl Drop for HeldReplies {
    fn drop(&mut self) {
        if let (Some(memory), n @ 1..) = (MEMORY.get(), self.0) {
            memory.give(n);
        }
    }
}

pub(super) struct ReadBuffer {
    /// Received bytes, all undecoded.
    buf: BytesMut,
    /// Bytes decoded into replies so far: a reply's size on the wire.
    decoded: u64,
    /// Bytes still needed by the value the buffer ends inside, when known.
    wanted: usize,
    /// What the buffer's allocation may be, at most.
    alloc: usize,
    /// Bytes taken from the [`ReplyMemory`]: the buffer's growth past
    /// [`READ_CHUNK`], and `pending`.
    held: u64,
    /// Of those, what the value being read will cost once decoded, given
    /// back when it is (its batch then counts it exactly).
    pending: u64,
    /// Whether the [`ReplyMemory`] may refuse growth (a shared lane reading
    /// past a cut batch's replies may not: the batches after it wait).
    strict: bool,
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        self.give_back();
    }
}

impl ReadBuffer {
    pub fn new() -> ReadBuffer {
        ReadBuffer { buf: BytesMut::with_capacity(READ_CHUNK), decoded: 0, wanted: 0, alloc: READ_CHUNK, held: 0, pending: 0, strict: true }
    }

    /// Whether growth may be refused from now on (see `strict`).
    pub fn set_strict(&mut self, strict: bool) {
        self.strict = strict;
    }

    fn give_back(&mut self) {
        if let (Some(memory), n @ 1..) = (MEMORY.get(), self.held) {
            memory.give(n);
        }
        (self.alloc, self.held, self.pending) = (READ_CHUNK, 0, 0);
    }

    /// The value being read was decoded: what it costs now is its batch's to count.
    fn decoded_pending(&mut self) {
        if let (Some(memory), n @ 1..) = (MEMORY.get(), self.pending) {
            memory.give(n);
            self.held -= n;
            self.pending = 0;
        }
    }

    /// No received byte waits undecoded.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes decoded into replies since the buffer was made.
    pub fn decoded(&self) -> u64 {
        self.decoded
    }

    /// Forgets the undecoded bytes (a connection readied for a new batch).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.wanted = 0;
    }

    /// Gives back the memory a large reply made the buffer grow to: an
    /// empty buffer keeps [`READ_CHUNK`] bytes. Does nothing unless empty.
    pub fn shrink(&mut self) {
        if self.buf.is_empty() && (self.buf.capacity() > READ_CHUNK || self.alloc > READ_CHUNK) {
            self.buf = BytesMut::with_capacity(READ_CHUNK);
            self.give_back();
        }
    }

    /// The next complete value in the buffer, removed from it; `None` if
    /// the bytes for it have not all arrived (then room is made for them).
    pub fn decode(&mut self, decoder: &mut resp::Decoder) -> Result<Option<resp::Value>, resp::DecodeError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        match decoder.decode(&self.buf)? {
            resp::Decoded::Complete { value, consumed } => {
                self.buf.advance(consumed);
                self.decoded += consumed as u64;
                self.wanted = 0;
                self.decoded_pending();
                Ok(Some(value))
            }
            resp::Decoded::Incomplete { needed } => {
                // Room is made by the next read, which may be refused it.
                self.wanted = needed.unwrap_or(0);
                Ok(None)
            }
        }
    }

    /// Ensures at least the bytes still wanted (and a quarter chunk) of
    /// spare capacity, so that each read can take what the socket has;
    /// growth is taken from the [`ReplyMemory`] first.
    /// Errors: [`ReadError::Memory`] if the growth was refused.
    fn make_room(&mut self) -> Result<(), ReadError> {
        if self.held >= GIVE_BACK_FROM {
            self.shrink();
        }
        let want = self.wanted.max(READ_CHUNK / 4);
        if self.buf.capacity() - self.buf.len() >= want {
            return Ok(());
        }
        let grow = want.max(READ_CHUNK);
        if let Some(memory) = MEMORY.get() {
            // A grown `Vec` may double: the most the allocation can become.
            let need = self.buf.len() + grow;
            let bound = if need <= self.alloc { self.alloc } else { need.max(2 * self.alloc) };
            if bound > self.alloc {
                let g = (bound - self.alloc) as u64;
                // The most the growth can cost if that fits in the whole
                // budget: refused at once while others hold too much of it.
                // Else the least, and the batch counts the exact JSON. What
                // the buffer held before is the connection's, not this
                // reply's: only the growth is judged against the whole budget.
                let more = match (self.strict, g * (1 + MOST_PER_BYTE) <= memory.limit()) {
                    (false, _) => 0,
                    (true, true) => g * MOST_PER_BYTE,
                    (true, false) => g * LEAST_PER_BYTE,
                };
                memory.take(0, g + more, !self.strict).map_err(ReadError::Memory)?;
                (self.alloc, self.held, self.pending) = (bound, self.held + g + more, self.pending + more);
            }
        }
        self.buf.reserve(grow);
        if let (Some(memory), true) = (MEMORY.get(), self.buf.capacity() > self.alloc) {
            let g = (self.buf.capacity() - self.alloc) as u64;
            let _ = memory.take(0, g, true);
            (self.alloc, self.held) = (self.buf.capacity(), self.held + g);
        }
        Ok(())
    }

    /// One read from `stream` into the spare capacity: the bytes read (0 at
    /// EOF). Errors: [`ReadError::Memory`] if the room for it was refused,
    /// else [`ReadError::Io`].
    pub async fn read_from<S: AsyncRead + Unpin>(&mut self, stream: &mut S) -> Result<usize, ReadError> {
        self.make_room()?;
        Ok(stream.read_buf(&mut self.buf).await?)
    }
}
