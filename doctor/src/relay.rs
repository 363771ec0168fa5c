//! Forwarding for the doctor: the bytes go through untouched, each chunk
//! shown to the connection's tracker (by reference, before it is written on)
//! so that a reply is counted before the client can react to it. Both
//! directions run at once (a client that writes a long pipeline before
//! reading cannot deadlock the proxy). A client that half-closes still gets
//! its remaining replies; when Redis closes, the client is closed.

use std::io;
use std::sync::Mutex;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::stats::Doctor;
use super::tracker::Tracker;

/// Bytes read per read call, each way.
const CHUNK: usize = 64 * 1024;

/// Copies `from` to `to`, showing each chunk to `observe` first. Returns at
/// the end of `from` (after shutting down `to`'s write side) or an error.
async fn pump<R, W>(mut from: R, mut to: W, mut observe: impl FnMut(&[u8], Instant)) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            let _ = to.shutdown().await;
            return Ok(());
        }
        observe(&buf[..n], Instant::now());
        to.write_all(&buf[..n]).await?;
        to.flush().await?;
    }
}

/// Relays between `client` and `upstream` until Redis closes, the client
/// resets, or the client half-closes and Redis then closes. Every chunk is
/// shown to `tracker`, whose outcomes go to `doctor`.
pub async fn relay<C, U>(client: C, upstream: U, tracker: &Mutex<Tracker>, doctor: &Doctor) -> io::Result<()>
where
    C: AsyncRead + AsyncWrite,
    U: AsyncRead + AsyncWrite,
{
    let (client_r, client_w) = tokio::io::split(client);
    let (up_r, up_w) = tokio::io::split(upstream);
    let observe = |replies: bool| {
        // Swapped with the tracker's after each chunk: no allocation per chunk.
        let mut outcomes = Vec::new();
        move |bytes: &[u8], now: Instant| {
            {
                let mut t = tracker.lock().unwrap();
                if replies {
                    t.on_replies(bytes, now);
                } else {
                    t.on_requests(bytes, now);
                }
                std::mem::swap(&mut t.outcomes, &mut outcomes);
            }
            doctor.record(&mut outcomes);
        }
    };
    let up = pump(client_r, up_w, observe(false));
    let down = pump(up_r, client_w, observe(true));
    tokio::pin!(up, down);
    tokio::select! {
        r = &mut down => r,
        r = &mut up => {
            r?;
            // The client is done writing: its remaining replies still come.
            down.await
        }
    }
}
