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

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Initial capacity and growth step, in bytes; an idle connection keeps this much.
pub(super) const READ_CHUNK: usize = 64 * 1024;

pub(super) struct ReadBuffer {
    /// Received bytes, all undecoded.
    buf: BytesMut,
    /// Bytes decoded into replies so far: a reply's size on the wire.
    decoded: u64,
}

impl ReadBuffer {
    pub fn new() -> ReadBuffer {
        ReadBuffer { buf: BytesMut::with_capacity(READ_CHUNK), decoded: 0 }
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
    }

    /// Gives back the memory a large reply made the buffer grow to: an
    /// empty buffer keeps [`READ_CHUNK`] bytes. Does nothing unless empty.
    pub fn shrink(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > READ_CHUNK {
            self.buf = BytesMut::with_capacity(READ_CHUNK);
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
                Ok(Some(value))
            }
            resp::Decoded::Incomplete { needed } => {
                self.make_room(needed.unwrap_or(0));
                Ok(None)
            }
        }
    }

    /// Ensures at least `needed` (and a quarter chunk) bytes of spare
    /// capacity, so that each read can take what the socket has.
    fn make_room(&mut self, needed: usize) {
        let want = needed.max(READ_CHUNK / 4);
        if self.buf.capacity() - self.buf.len() < want {
            self.buf.reserve(want.max(READ_CHUNK));
        }
    }

    /// One read from `stream` into the spare capacity: the bytes read (0 at EOF).
    pub async fn read_from<S: AsyncRead + Unpin>(&mut self, stream: &mut S) -> std::io::Result<usize> {
        self.make_room(0);
        stream.read_buf(&mut self.buf).await
    }
}
