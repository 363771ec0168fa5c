//! A write timeout on an HTTP connection: a client that stops reading its
//! response for the timeout is disconnected.
//!
//! Why: hyper writes a response as fast as the client reads it and waits,
//! without limit, when the client does not; each waiting response keeps
//! its report (up to the reply limit) in memory. Two clients that asked for
//! a 60 MB value and never read it pinned 1.68 GB for over a minute. Here a
//! write that makes no progress for the timeout fails with `TimedOut`,
//! which ends the connection (and drops the response with its batch).
//! Reads are not timed (hyper's header timeout covers idle connections,
//! the batch timeout a body).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `io` with a write timeout.
pub struct WriteTimeout<T> {
    io: T,
    timeout: Duration,
    /// Armed while a write waits (allocated on the first wait only).
    sleep: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl<T> WriteTimeout<T> {
    pub fn new(io: T, timeout: Duration) -> Self {
        WriteTimeout { io, timeout, sleep: None, armed: false }
    }

    /// A write (or flush) is pending: fails once it has been for the timeout.
    fn pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if !self.armed {
            let deadline = Instant::now() + self.timeout;
            match &mut self.sleep {
                Some(s) => s.as_mut().reset(deadline),
                None => self.sleep = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
            self.armed = true;
        }
        let sleep = self.sleep.as_mut().expect("armed");
        ready!(sleep.as_mut().poll(cx));
        Poll::Ready(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the client read nothing of the response for {} ms", self.timeout.as_millis()),
        ))
    }
}

impl<T: AsyncWrite + Unpin> WriteTimeout<T> {
    /// Runs a write-side `op`; the clock restarts only when bytes went out
    /// (`progress`): a flush that returns at once (a TCP socket's always
    /// does) between two stuck writes must not reset it.
    fn timed<R>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnOnce(Pin<&mut T>, &mut Context<'_>) -> Poll<io::Result<R>>,
        progress: impl FnOnce(&R) -> bool,
    ) -> Poll<io::Result<R>> {
        match op(Pin::new(&mut self.io), cx) {
            Poll::Ready(r) => {
                if r.as_ref().map_or(true, progress) {
                    self.armed = false;
                }
                Poll::Ready(r)
            }
            Poll::Pending => self.pending(cx).map(Err),
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.timed(cx, |io, cx| io.poll_write(cx, buf), |n| *n > 0)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[io::IoSlice<'_>]) -> Poll<io::Result<usize>> {
        self.timed(cx, |io, cx| io.poll_write_vectored(cx, bufs), |n| *n > 0)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.timed(cx, |io, cx| io.poll_flush(cx), |()| false)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.timed(cx, |io, cx| io.poll_shutdown(cx), |()| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_reader_that_stops_fails_the_write() {
        // A pipe of 64 bytes that nobody reads.
        let (a, _b) = tokio::io::duplex(64);
        let mut w = WriteTimeout::new(a, Duration::from_millis(100));
        let err = w.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn a_flush_between_stuck_writes_does_not_restart_the_clock() {
        // As hyper does: a write that waits, then a flush (at once Ready).
        let (a, _b) = tokio::io::duplex(64);
        let mut w = WriteTimeout::new(a, Duration::from_millis(100));
        let err = std::future::poll_fn(|cx| loop {
            match Pin::new(&mut w).poll_write(cx, &[0u8; 1024]) {
                Poll::Ready(Ok(_)) => continue,
                Poll::Ready(Err(e)) => return Poll::Ready(e),
                Poll::Pending => {
                    let _ = Pin::new(&mut w).poll_flush(cx);
                    return Poll::Pending;
                }
            }
        });
        let err = tokio::time::timeout(Duration::from_secs(5), err).await.expect("cut within the timeout");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn a_reader_that_reads_is_never_cut() {
        let (a, mut b) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut b, &mut sink).await.unwrap();
            sink.len()
        });
        let mut w = WriteTimeout::new(a, Duration::from_millis(200));
        w.write_all(&[1u8; 64 * 1024]).await.unwrap();
        w.shutdown().await.unwrap();
        drop(w);
        assert_eq!(reader.await.unwrap(), 64 * 1024);
    }
}
