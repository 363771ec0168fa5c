//! The simulated-RTT delay line, shared by batches (`simulated_rtt_ms`) and
//! `pipelab proxy`.
//!
//! [`DelayedStream`] stands in front of a real stream and holds every chunk
//! of bytes for RTT/2 in each direction. Chunks are stamped when they are
//! produced (when the client writes them, when the server's bytes are read
//! off the socket) and released in order at their own deadline, so
//! pipelined bytes are delayed, never throttled: a 1000-command chunk costs
//! one RTT, not 1000 (a sleep per read would cost one per read call).
//!
//! Why stamp at the producer and wait at the consumer: every task hand-off
//! costs a thread wake-up (tens of µs on a busy machine). Here the hand-offs
//! happen early, inside the held time, and the final wait is a spin by the
//! party that acts at the deadline (the task writing to the socket; the
//! reader of the stream), so the added latency is RTT/2 each way, not
//! RTT/2 plus scheduling noise.
//!
//! Why not `tokio::time::sleep`: its 1 ms granularity (rounded up) cannot
//! hold 0.1 ms. Waits use [`timer::Timer`]: a timerfd until 60 µs before the
//! deadline, then re-polling.

mod timer;

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::mpsc;

pub use timer::Timer;

/// Bytes read from the socket per read call.
const READ_BYTES: usize = 64 * 1024;
/// Chunks from the server held at once; then reading the socket pauses
/// (TCP backpressure), which only happens if the client stops reading.
const DOWN_CHUNKS: usize = 1024;
/// Bytes from the client held at once; then its writes wait.
const UP_BYTES: usize = 64 * 1024 * 1024;

/// Largest simulated RTT accepted, in ms (docs/api.md#limits: 0 to 1000).
pub const MAX_RTT_MS: f64 = 1000.0;

/// One-way delay for a round-trip time in ms (fractional): RTT/2.
///
/// Errors when `rtt_ms` is not a finite number in 0..=1000.
pub fn one_way(rtt_ms: f64) -> Result<Duration, String> {
    if !rtt_ms.is_finite() || !(0.0..=MAX_RTT_MS).contains(&rtt_ms) {
        return Err(format!("simulated RTT must be between 0 and {MAX_RTT_MS} ms, got {rtt_ms}"));
    }
    Ok(Duration::from_nanos((rtt_ms * 1_000_000.0 / 2.0).round() as u64))
}

/// What travels through the line.
enum Data {
    Bytes(Vec<u8>),
    /// End of stream (shutdown of the sending side).
    Eof,
    /// The socket failed; delivered to the reader in order.
    Error(io::ErrorKind, String),
}

struct Chunk {
    /// When it may leave the line.
    deadline: Instant,
    data: Data,
}

/// Backpressure for the client's writes (bytes queued, and a writer waiting).
#[derive(Default)]
struct UpQueue {
    bytes: AtomicUsize,
    waiting: Mutex<Option<Waker>>,
}

/// A stream in front of `upstream` that adds `one_way` in each direction.
///
/// Writes are accepted at once (as a kernel buffer would) and reach the
/// upstream `one_way` later; what the upstream sends can be read `one_way`
/// after it arrived. Dropping it ends the line and closes the upstream, even
/// while the upstream is silent (a cancelled batch does not leak its socket).
pub struct DelayedStream {
    up: mpsc::UnboundedSender<Chunk>,
    up_queue: Arc<UpQueue>,
    shut: bool,
    down: mpsc::Receiver<Chunk>,
    /// Received but not yet due.
    pending: Option<Chunk>,
    /// Due bytes being handed out, and how many were.
    current: Option<(Vec<u8>, usize)>,
    timer: Timer,
    eof: bool,
    one_way: Duration,
}

/// Puts `upstream` behind the delay line (spawns its two socket tasks).
/// Must be called within a tokio runtime. Errors only if no timer can be
/// created (out of file descriptors).
pub fn wrap<S>(upstream: S, one_way: Duration) -> io::Result<DelayedStream>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let timer = Timer::new()?;
    let up_timer = Timer::new()?;
    let (r, w) = tokio::io::split(upstream);
    let (up_tx, up_rx) = mpsc::unbounded_channel();
    let (down_tx, down_rx) = mpsc::channel(DOWN_CHUNKS);
    let up_queue = Arc::new(UpQueue::default());
    tokio::spawn(uplink(up_rx, w, down_tx.clone(), up_queue.clone(), up_timer));
    tokio::spawn(downlink(r, down_tx, one_way));
    Ok(DelayedStream { up: up_tx, up_queue, shut: false, down: down_rx, pending: None, current: None, timer, eof: false, one_way })
}

/// Writes each client chunk to the socket at its deadline, in order.
/// Once the [`DelayedStream`] is dropped (`errors` closed), nothing more
/// is written: a chunk not yet due is never sent, as for a connection
/// closed with bytes unsent (its commands were not sent, and must not
/// reach Redis after the batch that dropped them was cleaned up after).
async fn uplink<W: AsyncWrite + Unpin>(
    mut rx: mpsc::UnboundedReceiver<Chunk>,
    mut w: W,
    errors: mpsc::Sender<Chunk>,
    queue: Arc<UpQueue>,
    mut timer: Timer,
) {
    loop {
        let chunk = tokio::select! {
            biased;
            _ = errors.closed() => return,
            chunk = rx.recv() => match chunk {
                Some(chunk) => chunk,
                None => return,
            },
        };
        // Biased, and asked again once due: a stream dropped just as its
        // chunk fell due must not have the chunk written after it (a
        // plain select! picks either branch when both are ready).
        tokio::select! {
            biased;
            _ = errors.closed() => return,
            () = timer.wait_until(chunk.deadline) => {}
        }
        if errors.is_closed() {
            return;
        }
        match chunk.data {
            Data::Bytes(bytes) => {
                let res = async {
                    w.write_all(&bytes).await?;
                    w.flush().await
                }
                .await;
                queue.bytes.fetch_sub(bytes.len(), Ordering::AcqRel);
                if let Some(waker) = queue.waiting.lock().unwrap().take() {
                    waker.wake();
                }
                if let Err(e) = res {
                    // The reader learns of it in order, after what was already received.
                    let _ = errors.try_send(Chunk { deadline: Instant::now(), data: Data::Error(e.kind(), e.to_string()) });
                    return;
                }
            }
            Data::Eof => {
                let _ = w.shutdown().await;
                return;
            }
            Data::Error(..) => return,
        }
    }
}

/// Reads the socket as fast as bytes come and stamps each chunk with its release time.
async fn downlink<R: AsyncRead + Unpin>(mut r: R, tx: mpsc::Sender<Chunk>, one_way: Duration) {
    let mut buf = vec![0u8; READ_BYTES];
    loop {
        let res = tokio::select! {
            res = r.read(&mut buf) => res,
            // The DelayedStream was dropped: stop, which closes the socket.
            _ = tx.closed() => return,
        };
        let deadline = Instant::now() + one_way;
        let data = match res {
            Ok(0) => Data::Eof,
            Ok(n) => Data::Bytes(buf[..n].to_vec()),
            Err(e) => Data::Error(e.kind(), e.to_string()),
        };
        let end = !matches!(data, Data::Bytes(_));
        if tx.send(Chunk { deadline, data }).await.is_err() || end {
            return;
        }
    }
}

impl DelayedStream {
    /// The one-way delay this line adds.
    pub fn one_way(&self) -> Duration {
        self.one_way
    }

}

impl AsyncRead for DelayedStream {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if let Some((bytes, done)) = &mut this.current {
                let n = (bytes.len() - *done).min(buf.remaining());
                buf.put_slice(&bytes[*done..*done + n]);
                *done += n;
                if *done == bytes.len() {
                    this.current = None;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let chunk = match this.pending.take() {
                Some(c) => c,
                None => match this.down.poll_recv(cx) {
                    Poll::Ready(Some(c)) => c,
                    Poll::Ready(None) => {
                        this.eof = true;
                        continue;
                    }
                    Poll::Pending => return Poll::Pending,
                },
            };
            let deadline = chunk.deadline;
            this.pending = Some(chunk);
            if this.timer.poll_until(cx, deadline).is_pending() {
                return Poll::Pending;
            }
            match this.pending.take().map(|c| c.data) {
                Some(Data::Bytes(b)) => this.current = Some((b, 0)),
                Some(Data::Eof) | None => this.eof = true,
                Some(Data::Error(kind, msg)) => {
                    this.eof = true;
                    return Poll::Ready(Err(io::Error::new(kind, msg)));
                }
            }
        }
    }
}

impl AsyncWrite for DelayedStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.shut {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "write after shutdown")));
        }
        let queued = self.up_queue.bytes.load(Ordering::Acquire);
        if queued > 0 && queued + buf.len() > UP_BYTES {
            *self.up_queue.waiting.lock().unwrap() = Some(cx.waker().clone());
            // Re-check: the uplink may have drained in between.
            if self.up_queue.bytes.load(Ordering::Acquire) == queued {
                return Poll::Pending;
            }
        }
        let chunk = Chunk { deadline: Instant::now() + self.one_way, data: Data::Bytes(buf.to_vec()) };
        self.up_queue.bytes.fetch_add(buf.len(), Ordering::AcqRel);
        match self.up.send(chunk) {
            Ok(()) => Poll::Ready(Ok(buf.len())),
            Err(_) => Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "the connection behind the delay line failed"))),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Bytes in the line are "on the wire": nothing to flush.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !self.shut {
            self.shut = true;
            let _ = self.up.send(Chunk { deadline: Instant::now() + self.one_way, data: Data::Eof });
        }
        Poll::Ready(Ok(()))
    }
}

/// Relays bytes both ways between a client and an upstream, adding
/// `one_way` in each direction (`pipelab proxy`). Returns when both
/// directions have ended, or at the first I/O error.
pub async fn relay<A, B>(mut client: A, upstream: B, one_way: Duration) -> io::Result<()>
where
    A: AsyncRead + AsyncWrite + Unpin,
    B: AsyncRead + AsyncWrite + Send + 'static,
{
    let mut line = wrap(upstream, one_way)?;
    tokio::io::copy_bidirectional(&mut client, &mut line).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_way_is_half_the_rtt_and_checks_range() {
        assert_eq!(one_way(0.5).unwrap(), Duration::from_micros(250));
        assert_eq!(one_way(0.0).unwrap(), Duration::ZERO);
        assert!(one_way(-1.0).is_err());
        assert!(one_way(1000.5).is_err());
        assert!(one_way(f64::NAN).is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn echo_through_the_line_takes_one_rtt_and_pipelined_bytes_are_not_throttled() {
        // An echo "server" on the far side of a 2 ms RTT line.
        let (far, mut echo) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                let n = echo.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                echo.write_all(&buf[..n]).await.unwrap();
            }
        });
        let mut near = wrap(far, one_way(2.0).unwrap()).unwrap();
        // The fastest of up to 50 echoes (the first under the bound ends
        // the search), so that a busy machine's stalls in some of them do
        // not count as delay-line time: a line that took two RTTs would
        // never get under it.
        let mut fastest = Duration::MAX;
        for _ in 0..50 {
            if fastest < Duration::from_millis(4) {
                break;
            }
            let t = Instant::now();
            near.write_all(b"ping").await.unwrap();
            let mut got = [0u8; 4];
            near.read_exact(&mut got).await.unwrap();
            let rtt = t.elapsed();
            assert_eq!(&got, b"ping");
            assert!(rtt >= Duration::from_millis(2), "{rtt:?}");
            fastest = fastest.min(rtt);
        }
        // One RTT, not two: the bound leaves room for a loaded 2-core
        // machine (the accuracy is a benchmark figure, not a test's).
        assert!(fastest < Duration::from_millis(4), "{fastest:?}");

        // 100 writes back to back: about one RTT in total, not 100.
        let t = Instant::now();
        for i in 0..100u8 {
            near.write_all(&[i]).await.unwrap();
        }
        let mut got = [0u8; 100];
        near.read_exact(&mut got).await.unwrap();
        assert_eq!(got.to_vec(), (0..100u8).collect::<Vec<_>>());
        assert!(t.elapsed() < Duration::from_millis(50), "{:?}", t.elapsed()); // 100 RTTs would be 200 ms
    }
}
