//! One connection to Redis, in four parts, one job each:
//!
//! - `target`: where to connect ([`RedisTarget`], from a URL);
//! - `socket`: the byte stream (TCP, Unix, TLS with rustls);
//! - `handshake`: AUTH, `HELLO 3`, `CLIENT SETNAME pipelab`, SELECT;
//! - `buffer`: the read buffer that turns bytes into replies,
//!   timestamped when the read that completed them returned.
//!
//! This module holds [`Conn`], which puts them together. A [`Conn`] that
//! failed (timeout, error, reply-size cut, cancelled batch) is dropped: it
//! may hold unread replies, and reusing it would hand those replies to the
//! wrong commands (redis-py#2624, ioredis#800, redis-rs#698). Only a
//! connection whose batch ended cleanly may be reused, through
//! [`crate::exec::Pool`], which enforces the rest of the rules.

mod buffer;
mod cancel;
mod error;
mod handshake;
pub mod side;
mod socket;
mod target;

use std::io;
use std::future::Future;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;

pub use cancel::Cancel;
pub use error::ConnectError;
pub use socket::{connect_stream, Stream};
pub use target::{Endpoint, RedisTarget, TargetError, TlsSettings, DEFAULT_PORT};

pub use buffer::{set_reply_memory, HeldReplies, MemoryRefusal, ReplyMemory, MEMORY_REFUSED};
use buffer::ReadBuffer;
use socket::{connect_stream_fd, Counted, RawSock};

use crate::delay;

/// Name given to every connection with `CLIENT SETNAME` (shows in `CLIENT LIST`).
pub const CLIENT_NAME: &str = "pipelab";

// ---------------------------------------------------------------------------
// The connection

/// How to open a [`Conn`].
#[derive(Clone, Debug)]
pub struct ConnSettings {
    /// Bounds socket, TLS and handshake together.
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a reply (also bounds each write).
    pub read_timeout: Duration,
    /// Switch to RESP3 with `HELLO 3`.
    pub resp3: bool,
    /// Put the socket behind the delay line: this round-trip time in ms is added.
    pub simulated_rtt_ms: f64,
    /// Behind the delay line, each direction carries this many Mbit/s
    /// (`None`: unlimited).
    pub simulated_bandwidth_mbps: Option<f64>,
    /// Stop reading once this many reply bytes were received (`None`: no limit).
    pub max_reply_bytes: Option<u64>,
    /// No read or write waits past this instant (the batch's time limit):
    /// then [`ReadError::Deadline`] / [`WriteError::Deadline`].
    pub deadline: Option<Instant>,
    /// Ends the batch early when flipped: then [`ReadError::Cancelled`] /
    /// [`WriteError::Cancelled`] (see [`Cancel`]).
    pub cancel: Option<Cancel>,
}

impl ConnSettings {
    /// A plain connection for pipelab's own few commands: `wait` to connect
    /// and for each reply, RESP2, no simulated network, no limits.
    pub fn plain(wait: std::time::Duration) -> ConnSettings {
        ConnSettings { connect_timeout: wait, read_timeout: wait, resp3: false, simulated_rtt_ms: 0.0, simulated_bandwidth_mbps: None, max_reply_bytes: None, deadline: None, cancel: None }
    }

    /// The connection goes behind the delay line (a simulated RTT or bandwidth).
    pub fn simulates_network(&self) -> bool {
        self.simulated_rtt_ms > 0.0 || self.simulated_bandwidth_mbps.is_some()
    }
}

/// Byte and call counts on one connection, since its handshake or its
/// last [`Conn::prepare_reuse`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Calls of [`Conn::write`]: one per command (sequential) or chunk (pipeline).
    pub write_calls: u64,
    /// `write` system calls on the socket those took (a large chunk may need
    /// several). Behind the delay line: writes into the line, which takes
    /// each write whole.
    pub write_syscalls: u64,
    /// Reads on the socket that returned (bytes, end of stream or an
    /// error); a read that would block is not counted. Behind the delay
    /// line: reads from the line.
    pub read_syscalls: u64,
    /// Bytes the socket accepted, including those of a write that then failed.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// RESP3 push messages received and set aside: out-of-band data (e.g.
    /// client-side caching invalidations) that answers no command.
    pub pushes: u64,
    /// Behind the delay line: how late it released chunks (`None` without).
    pub line: Option<delay::LineTiming>,
}

/// The counts of two connections (or of one, before and after a reconnect) together.
impl std::ops::Add for IoStats {
    type Output = IoStats;
    fn add(self, o: IoStats) -> IoStats {
        IoStats {
            write_calls: self.write_calls + o.write_calls,
            write_syscalls: self.write_syscalls + o.write_syscalls,
            read_syscalls: self.read_syscalls + o.read_syscalls,
            bytes_sent: self.bytes_sent + o.bytes_sent,
            bytes_received: self.bytes_received + o.bytes_received,
            pushes: self.pushes + o.pushes,
            line: match (self.line, o.line) {
                (Some(a), Some(b)) => Some(a + b),
                (a, b) => a.or(b),
            },
        }
    }
}

/// Why a reply could not be read. The connection must be dropped after any of these.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("connection closed by the server")]
    Closed,
    #[error("no reply within {0} ms (read timeout)")]
    Timeout(u128),
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    #[error("the server sent malformed RESP: {0}")]
    Protocol(String),
    #[error("reply limit reached: more than {0} bytes received")]
    Limit(u64),
    /// The process's [`ReplyMemory`] had no room for the reply arriving.
    #[error("{0}")]
    Memory(MemoryRefusal),
    #[error("{DEADLINE}")]
    Deadline,
    #[error("{CANCELLED}")]
    Cancelled,
}

/// Why a batch stopped at its deadline.
const DEADLINE: &str = "batch timeout: the batch ran past its time limit and was cut";

/// Why a batch stopped when its client cancelled it.
const CANCELLED: &str = "cancelled: the batch was cut at its client's request";

/// Whether a connection error, as a report gives it, says the batch itself
/// was cut (its deadline, a cancel, the reply limit) rather than the link
/// to the server failing.
pub fn batch_cut(message: &str) -> bool {
    message.contains(DEADLINE) || message.contains(CANCELLED) || message.starts_with("reply limit reached") || message.contains(MEMORY_REFUSED)
}

/// Why a write failed. What it carried may or may not have reached Redis.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("no progress writing within {0} ms (timeout)")]
    Timeout(u128),
    #[error("write failed: {0}")]
    Io(#[from] io::Error),
    #[error("{DEADLINE}")]
    Deadline,
    #[error("{CANCELLED}")]
    Cancelled,
}

/// An open, handshaken connection to Redis. Used for one batch, then
/// dropped, or, if the batch ended cleanly, kept idle in a
/// [`crate::exec::Pool`] for the next one.
///
/// Boxed: a connection moves on every batch, into and out of the pool, its
/// lease and the runner's futures; its 300 bytes were copied by `memcpy`
/// at each move (a dozen per one-command request, callgrind), a pointer is not.
pub struct Conn {
    s: Box<State>,
}

/// An open connection's socket, buffers and limits.
struct State {
    stream: Counted,
    /// The socket under `stream`, to probe it while idle.
    raw: RawSock,
    /// Behind the delay line (a simulated RTT or bandwidth): its timing, and
    /// the timing when the stats were last reset. Such a connection is never pooled.
    line: Option<(delay::TimingHandle, delay::LineTiming)>,
    /// Spoke `HELLO 3` in the handshake.
    resp3: bool,
    /// The tokio runtime whose I/O driver the socket is registered with
    /// (the one it was opened on): see [`Conn::runtime`].
    runtime: Option<tokio::runtime::Id>,
    /// Received bytes not yet decoded.
    buffer: ReadBuffer,
    decoder: resp::Decoder,
    stats: IoStats,
    read_timeout: Duration,
    max_reply_bytes: Option<u64>,
    deadline: Option<Instant>,
    cancel: Option<Cancel>,
    /// When the last read returned: a reply completed by bytes already
    /// buffered arrived then, not when it is decoded.
    last_read_at: Instant,
}

impl Conn {
    /// Connects, runs the handshake in one write: `HELLO 3 [AUTH user pass]
    /// SETNAME pipelab` (RESP3) or `[AUTH [user] pass]` + `CLIENT SETNAME
    /// pipelab` (RESP2), then `SELECT db`; then puts the socket behind the
    /// delay line if `settings` simulate an RTT or a bandwidth. The simulated RTT is
    /// the batch's: connecting and the handshake do not pay it (they are
    /// outside `total_us` too, and a user waiting one RTT more than the
    /// summary shows would be misled).
    ///
    /// `settings.connect_timeout` bounds all of it, socket, TLS and
    /// handshake: a server that accepts the connection but never answers
    /// fails the connect after it, not after the read timeout.
    ///
    /// Errors (a message naming the step and Redis's error) if the socket,
    /// TLS, AUTH, HELLO or SELECT fails. Stats start at zero after the handshake.
    pub async fn connect(target: &RedisTarget, settings: &ConnSettings) -> Result<Conn, ConnectError> {
        let link = delay::Link::new(settings.simulated_rtt_ms, settings.simulated_bandwidth_mbps).map_err(|e| ConnectError::Link(e.to_string()))?;
        let connect_until = tokio::time::Instant::now() + settings.connect_timeout;
        let (raw, fd) = connect_stream_fd(target, settings.connect_timeout).await?;
        let mut conn = Conn { s: Box::new(State {
            stream: Counted { inner: raw, syscalls: 0, reads: 0, accepted: 0 },
            raw: fd,
            line: None,
            resp3: settings.resp3,
            runtime: tokio::runtime::Handle::try_current().ok().map(|h| h.id()),
            buffer: ReadBuffer::new(),
            decoder: resp::Decoder::new(),
            stats: IoStats::default(),
            read_timeout: settings.read_timeout,
            max_reply_bytes: None,
            deadline: None,
            cancel: None,
            last_read_at: Instant::now(),
        }) };
        match tokio::time::timeout_at(connect_until, conn.handshake(target, settings)).await {
            Ok(r) => r?,
            Err(_) => return Err(ConnectError::HandshakeTimeout { target: target.to_string(), ms: settings.connect_timeout.as_millis() }),
        }
        if !link.is_none() {
            let raw = std::mem::replace(&mut conn.s.stream.inner, Box::new(tokio::io::duplex(1).0));
            let line = delay::wrap(raw, link).map_err(|e| ConnectError::Link(e.to_string()))?;
            conn.s.line = Some((line.timing(), delay::LineTiming::default()));
            conn.s.stream.inner = Box::new(line);
        }
        conn.reset_stats();
        conn.s.max_reply_bytes = settings.max_reply_bytes;
        conn.s.deadline = settings.deadline;
        conn.s.cancel = settings.cancel.clone();
        Ok(conn)
    }

    /// Byte and call counts since the handshake.
    pub fn stats(&self) -> IoStats {
        IoStats {
            write_syscalls: self.s.stream.syscalls,
            read_syscalls: self.s.stream.reads,
            bytes_sent: self.s.stream.accepted,
            line: self.s.line.as_ref().map(|(h, base)| h.get().since(base)),
            ..self.s.stats
        }
    }

    fn reset_stats(&mut self) {
        self.s.stats = IoStats::default();
        self.s.stream.syscalls = 0;
        self.s.stream.reads = 0;
        self.s.stream.accepted = 0;
        if let Some((h, base)) = &mut self.s.line {
            *base = h.get();
        }
    }

    /// True if the socket has accepted no byte since the handshake or the
    /// last [`Conn::prepare_reuse`]: nothing of the batch can have reached Redis.
    pub fn nothing_sent(&self) -> bool {
        self.s.stream.accepted == 0
    }

    /// Behind the delay line (simulated RTT).
    pub fn is_delayed(&self) -> bool {
        self.s.line.is_some()
    }

    /// Speaks RESP3 (`HELLO 3` in the handshake).
    pub fn is_resp3(&self) -> bool {
        self.s.resp3
    }

    /// The runtime the socket was opened on, whose I/O driver tells when it
    /// is readable. Any runtime can use the connection, but on another one
    /// each readiness event crosses threads (a wake-up of the runtime that
    /// polls the task), so a pool hands it preferably to the same runtime.
    pub fn runtime(&self) -> Option<tokio::runtime::Id> {
        self.s.runtime
    }

    /// True if no received byte waits undecoded in the read buffer: every
    /// reply that arrived was read.
    pub fn buffer_empty(&self) -> bool {
        self.s.buffer.is_empty()
    }

    /// Whether an idle connection is still fit for a new batch: the read
    /// buffer is empty and the socket has nothing to read (no EOF from a
    /// server that went away or killed the client, no error, no stray
    /// bytes). A non-blocking `recv(MSG_PEEK)`: reads nothing, one system call.
    ///
    /// Without a socket to probe (non-Unix), only the buffer is checked.
    pub fn probe_idle(&self) -> bool {
        if !self.buffer_empty() {
            return false;
        }
        #[cfg(unix)]
        if let Some(fd) = self.s.raw {
            let mut byte = 0u8;
            // SAFETY: `fd` is the open socket owned by `self.s.stream` (alive as
            // long as `self`); MSG_PEEK leaves its data in place.
            let n = unsafe {
                libc::recv(fd, (&mut byte as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
            };
            if n >= 0 {
                return false; // 0: EOF; >0: bytes nobody asked for
            }
            let err = io::Error::last_os_error();
            return err.kind() == io::ErrorKind::WouldBlock;
        }
        true
    }

    /// Bytes of the replies decoded so far on this connection (each
    /// reply's size on the wire is the difference across its read).
    pub fn bytes_decoded(&self) -> u64 {
        self.s.buffer.decoded()
    }

    /// The next replies' limits: each read waits at most `read_timeout`,
    /// and they may take up to `max_reply_bytes` more bytes from now on
    /// (`None`: no limit), whatever the earlier ones took. A shared
    /// connection applies each batch's own limits to its replies
    /// (`crate::exec::shared`).
    pub fn limit_replies(&mut self, read_timeout: Duration, max_reply_bytes: Option<u64>) {
        self.s.read_timeout = read_timeout;
        self.s.max_reply_bytes = max_reply_bytes.map(|l| self.s.stats.bytes_received.saturating_add(l));
    }

    /// Gives back read-buffer memory a large reply made it grow (up to the
    /// reply-size limit): an idle connection keeps only the usual 64 KiB.
    /// Does nothing unless the buffer is empty.
    pub fn shrink_buffer(&mut self) {
        self.s.buffer.shrink();
    }

    /// Whether the process's [`ReplyMemory`] may refuse the next replies'
    /// room (`false`: taken past it, for replies that must be read past).
    pub fn bound_memory(&mut self, strict: bool) {
        self.s.buffer.set_strict(strict);
    }

    /// Readies an idle connection for the next batch: zero stats, a fresh
    /// decoder, that batch's read timeout, reply-size limit and deadline.
    pub fn prepare_reuse(&mut self, settings: &ConnSettings) {
        self.reset_stats();
        self.s.decoder = resp::Decoder::new();
        self.s.buffer.clear();
        self.s.buffer.set_strict(true);
        self.s.read_timeout = settings.read_timeout;
        self.s.max_reply_bytes = settings.max_reply_bytes;
        self.s.deadline = settings.deadline;
        self.s.cancel = settings.cancel.clone();
    }

    /// Until when the next read or write may wait: the read timeout from
    /// now, or the batch's deadline if that comes first (`true`).
    fn wait_until(&self) -> (tokio::time::Instant, bool) {
        let timeout = Instant::now() + self.s.read_timeout;
        match self.s.deadline {
            Some(d) if d <= timeout => (d.into(), true),
            _ => (timeout.into(), false),
        }
    }

    /// Writes `bytes` as one write call (the kernel may split it, see
    /// [`IoStats::write_syscalls`]).
    ///
    /// Returns the instant the write was issued: a command counts as sent
    /// from there. (Its completion is a poor clock: on a busy machine the
    /// thread can be preempted by the very server it just woke, and then
    /// "completed" comes after the reply.)
    pub async fn write(&mut self, bytes: &[u8]) -> Result<Instant, WriteError> {
        self.s.stats.write_calls += 1;
        self.write_continued(bytes).await
    }

    /// Writes more bytes of the current write call, as a pipeline chunk
    /// sent in segments does: counted in bytes and system calls, not as
    /// another [`IoStats::write_calls`]. Returns and fails as [`Conn::write`].
    pub async fn write_continued(&mut self, bytes: &[u8]) -> Result<Instant, WriteError> {
        let issued = Instant::now();
        let (until, is_deadline) = self.wait_until();
        let fut = async {
            self.s.stream.write_all(bytes).await?;
            self.s.stream.flush().await
        };
        let read_timeout = self.s.read_timeout;
        let cancel = self.s.cancel.clone();
        let Some(out) = Cancel::or_cancel(cancel.as_ref(), tokio::time::timeout_at(until, fut)).await else {
            return Err(WriteError::Cancelled);
        };
        match out {
            Ok(Ok(())) => Ok(issued),
            Ok(Err(e)) => Err(WriteError::Io(e)),
            Err(_) if is_deadline => Err(WriteError::Deadline),
            Err(_) => Err(WriteError::Timeout(read_timeout.as_millis())),
        }
    }

    /// Reads the next reply and the instant the read that completed it returned.
    /// Replies are read in order, one per call: never skipped, never reordered.
    ///
    /// Out-of-band RESP3 push messages are skipped: they answer no command.
    pub async fn read_reply(&mut self) -> Result<(resp::Value, Instant), ReadError> {
        match self.next_reply(true).await? {
            Some(reply) => Ok(reply),
            None => unreachable!("a waiting read returns a reply or an error"),
        }
    }

    /// The next reply if it has already arrived (in the buffer or the
    /// socket), without waiting: `Ok(None)` if it has not. Lets a writer
    /// read replies between writes, as `redis-cli --pipe` does, instead of
    /// leaving them to pile up in Redis's output buffer.
    pub async fn try_read_reply(&mut self) -> Result<Option<(resp::Value, Instant)>, ReadError> {
        self.next_reply(false).await
    }

    /// The next reply if its bytes are already in the read buffer, without
    /// touching the socket (pushes skipped, as [`Conn::read_reply`] does);
    /// `Ok(None)` if they are not all there. Not async: a pipeline reads
    /// most of its replies from bytes one read brought, and a call of
    /// [`Conn::read_reply`] for each built and polled its whole future
    /// (timeouts, cancel) for nothing.
    pub fn buffered_reply(&mut self) -> Result<Option<(resp::Value, Instant)>, ReadError> {
        loop {
            match self.s.buffer.decode(&mut self.s.decoder) {
                Ok(Some(resp::Value::Push(_))) => self.s.stats.pushes += 1,
                Ok(Some(value)) => return Ok(Some((value, self.s.last_read_at))),
                Ok(None) => return Ok(None),
                Err(e) => return Err(ReadError::Protocol(e.to_string())),
            }
        }
    }

    /// [`Conn::read_reply`]; without `wait`, `None` instead of waiting for the socket.
    async fn next_reply(&mut self, wait: bool) -> Result<Option<(resp::Value, Instant)>, ReadError> {
        loop {
            if let Some(reply) = self.buffered_reply()? {
                return Ok(Some(reply));
            }
            if let Some(limit) = self.s.max_reply_bytes {
                if self.s.stats.bytes_received > limit {
                    return Err(ReadError::Limit(limit));
                }
            }
            let read = if wait {
                let (until, is_deadline) = self.wait_until();
                let read = tokio::time::timeout_at(until, self.s.buffer.read_from(&mut self.s.stream));
                let Some(read) = Cancel::or_cancel(self.s.cancel.as_ref(), read).await else {
                    return Err(ReadError::Cancelled);
                };
                match read {
                    Ok(r) => r,
                    Err(_) if is_deadline => return Err(ReadError::Deadline),
                    Err(_) => return Err(ReadError::Timeout(self.s.read_timeout.as_millis())),
                }
            } else {
                // One poll of the read: its result if the socket had bytes
                // (or EOF, or an error), else `None` (a read is cancel-safe).
                let mut read = std::pin::pin!(self.s.buffer.read_from(&mut self.s.stream));
                let ready = std::future::poll_fn(|cx| Poll::Ready(match read.as_mut().poll(cx) {
                    Poll::Ready(r) => Some(r),
                    Poll::Pending => None,
                }))
                .await;
                match ready {
                    Some(r) => r,
                    None => return Ok(None),
                }
            };
            let n = match read {
                Ok(0) => return Err(ReadError::Closed),
                Ok(n) => n,
                Err(e) => return Err(e),
            };
            self.s.last_read_at = Instant::now();
            self.s.stats.bytes_received += n as u64;
        }
    }
}

impl Conn {
    /// Runs one command outside any batch (the command table, the slot
    /// map): its reply, maybe an error reply. Errors: the connection failed
    /// (drop it). The bytes count in [`Conn::stats`] until the next reset.
    pub async fn ask(&mut self, argv: &[&[u8]]) -> Result<resp::Value, AskError> {
        let mut out = Vec::new();
        resp::encode_command(argv, &mut out);
        self.write(&out).await?;
        Ok(self.read_reply().await.map(|(v, _)| v)?)
    }
}

/// Why [`Conn::ask`] got no reply: the write or the read failed.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("{0}")]
    Write(#[from] WriteError),
    #[error("{0}")]
    Read(#[from] ReadError),
}

/// The text of an error or status reply, lossily decoded.
pub fn reply_text(v: &resp::Value) -> String {
    match v {
        resp::Value::Error(b) | resp::Value::BlobError(b) | resp::Value::Simple(b) | resp::Value::Bulk(b) => {
            String::from_utf8_lossy(b).into_owned()
        }
        other => other.display(),
    }
}

