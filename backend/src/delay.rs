//! The simulated-RTT delay line, shared by batches (`simulated_rtt_ms`) and
//! `pipelab proxy`.
//!
//! It sits between two byte streams and holds every chunk it reads for
//! RTT/2 before writing it on, in each direction. Chunks are stamped when
//! they are read and released in order at their own deadline, so pipelined
//! bytes are delayed, never throttled: a 1000-command chunk costs one RTT,
//! not 1000 (a sleep per read would cost one per read call).
//!
//! Why a precise wait: tokio's timer has 1 ms granularity (and rounds up), so
//! a 0.1 ms one-way delay cannot be a `sleep`. [`wait_until`] sleeps until
//! ~2 ms before the deadline, then yields in a loop until it is reached.

use std::io;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

/// Bytes read per chunk (one read call on the source side).
const CHUNK_BYTES: usize = 64 * 1024;
/// Chunks in flight per direction; bounds memory at 64 MiB per direction.
/// Only reached when more than that is in flight within one RTT/2.
const QUEUE_CHUNKS: usize = 1024;
/// Below this remaining time the wait spins instead of using tokio's timer.
const SPIN_BELOW: Duration = Duration::from_micros(2000);
/// Buffer of the in-process pipe between the executor and the line.
const DUPLEX_BYTES: usize = 256 * 1024;

/// Largest simulated RTT accepted, in ms (CONTRACT: 0 to 1000).
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

/// Waits until `deadline` with µs precision: tokio's timer for all but the
/// last [`SPIN_BELOW`], then a yield loop (other tasks keep running).
pub async fn wait_until(deadline: Instant) {
    let now = Instant::now();
    if deadline <= now {
        return;
    }
    if deadline - now > SPIN_BELOW {
        tokio::time::sleep_until((deadline - SPIN_BELOW).into()).await;
    }
    while Instant::now() < deadline {
        tokio::task::yield_now().await;
    }
}

/// Puts `upstream` behind a delay line of `one_way` in each direction and
/// returns the near end: what is written to it reaches `upstream` `one_way`
/// later, and what `upstream` sends arrives `one_way` later.
///
/// The line runs in a spawned task; dropping the returned stream ends it and
/// closes `upstream` (no leak when a batch is cancelled). Must be called
/// within a tokio runtime.
pub fn wrap<S>(upstream: S, one_way: Duration) -> DuplexStream
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (near, line_end) = tokio::io::duplex(DUPLEX_BYTES);
    tokio::spawn(async move {
        let _ = run(line_end, upstream, one_way).await;
    });
    near
}

/// Relays bytes both ways between `a` and `b`, each chunk held `one_way`.
///
/// An end-of-stream is delayed like data, then forwarded as a write shutdown.
/// Returns when both directions have ended, or at the first I/O error (then
/// both streams are dropped, which closes them).
pub async fn run<A, B>(a: A, b: B, one_way: Duration) -> io::Result<()>
where
    A: AsyncRead + AsyncWrite + Send + Unpin,
    B: AsyncRead + AsyncWrite + Send + Unpin,
{
    let (a_read, a_write) = tokio::io::split(a);
    let (b_read, b_write) = tokio::io::split(b);
    let (up_tx, up_rx) = mpsc::channel(QUEUE_CHUNKS);
    let (down_tx, down_rx) = mpsc::channel(QUEUE_CHUNKS);
    tokio::try_join!(
        ingress(a_read, up_tx, one_way),
        egress(up_rx, b_write),
        ingress(b_read, down_tx, one_way),
        egress(down_rx, a_write),
    )?;
    Ok(())
}

/// A chunk read at `deadline - one_way`; `None` is end-of-stream.
struct Chunk {
    deadline: Instant,
    data: Option<Vec<u8>>,
}

/// Reads as fast as bytes come and stamps each chunk with its release time.
async fn ingress<R: AsyncRead + Unpin>(
    mut r: R,
    tx: mpsc::Sender<Chunk>,
    one_way: Duration,
) -> io::Result<()> {
    loop {
        let mut buf = vec![0u8; CHUNK_BYTES];
        let n = r.read(&mut buf).await?;
        let deadline = Instant::now() + one_way;
        let data = if n == 0 {
            None
        } else {
            buf.truncate(n);
            Some(buf)
        };
        let eof = data.is_none();
        if tx.send(Chunk { deadline, data }).await.is_err() {
            // The egress side failed; its error ends the line.
            return Ok(());
        }
        if eof {
            return Ok(());
        }
    }
}

/// Writes each chunk at its deadline, in order.
async fn egress<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Chunk>, mut w: W) -> io::Result<()> {
    while let Some(chunk) = rx.recv().await {
        wait_until(chunk.deadline).await;
        match chunk.data {
            Some(data) => {
                w.write_all(&data).await?;
                w.flush().await?;
            }
            None => {
                // The peer may already be gone; that is not an error here.
                let _ = w.shutdown().await;
                return Ok(());
            }
        }
    }
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
        let mut near = wrap(far, one_way(2.0).unwrap());
        let t = Instant::now();
        near.write_all(b"ping").await.unwrap();
        let mut got = [0u8; 4];
        near.read_exact(&mut got).await.unwrap();
        let rtt = t.elapsed();
        assert_eq!(&got, b"ping");
        assert!(rtt >= Duration::from_millis(2), "{rtt:?}");
        assert!(rtt < Duration::from_millis(2) + Duration::from_micros(1500), "{rtt:?}");

        // 100 writes back to back: about one RTT in total, not 100.
        let t = Instant::now();
        for i in 0..100u8 {
            near.write_all(&[i]).await.unwrap();
        }
        let mut got = [0u8; 100];
        near.read_exact(&mut got).await.unwrap();
        assert_eq!(got.to_vec(), (0..100u8).collect::<Vec<_>>());
        assert!(t.elapsed() < Duration::from_millis(10), "{:?}", t.elapsed());
    }
}
