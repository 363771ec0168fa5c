//! A µs-precise async wait, for the delay line's sub-millisecond holds.
//!
//! tokio's timer has 1 ms granularity, and spinning a whole hold on a core
//! starves other threads on a busy machine (a woken thread can preempt the
//! one that woke it and then spin for the full hold). On Linux this waits on
//! a `timerfd` (an hrtimer, no timer slack) registered with tokio's reactor,
//! then re-polls for the last stretch. Elsewhere tokio's timer is used until
//! 2 ms before, then re-polling.
//!
//! A wake-up comes late by however long the thread waits for a core: a few
//! µs on an idle machine, hundreds when every core is busy. The timer
//! learns that lateness ([`Lead`], shared by every timer of the process, as
//! it is the machine's) and fires earlier by it, so that the re-polled
//! stretch stays short: [`SPIN`] when a core is free, where the learned
//! lead is about zero.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Final stretch always covered by re-polling.
#[cfg(target_os = "linux")]
const SPIN: Duration = Duration::from_micros(10);
#[cfg(not(target_os = "linux"))]
const SPIN: Duration = Duration::from_micros(2000);

/// The most a wake-up is ever moved earlier: a machine that late would make
/// the re-polled stretch a busy loop.
const MAX_LEAD_NS: u64 = 1_000_000;

/// How late the process's timer wake-ups come, in ns: a running estimate of
/// a high quantile (about the 90th percentile), which moves up by a quarter
/// of the gap to a later wake-up and down by a 32nd of the gap to an
/// earlier one (a quantile's stochastic-gradient step).
struct Lead(AtomicU64);

static LEAD: Lead = Lead(AtomicU64::new(0));

impl Lead {
    fn get(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    /// One wake-up came `late` after the instant it was armed for.
    /// Concurrent updates may lose one another's step: an estimate.
    fn learn(&self, late: Duration) {
        let x = (late.as_nanos() as u64).min(MAX_LEAD_NS);
        let l = self.0.load(Ordering::Relaxed);
        let next = if x > l { l + (x - l) / 4 } else { l - (l - x) / 32 };
        self.0.store(next, Ordering::Relaxed);
    }
}

/// One reusable timer; arm it for any deadline by polling [`Timer::poll_until`].
pub struct Timer {
    inner: imp::Inner,
    /// The deadline waited for and the instant the inner timer is armed
    /// for (earlier by the lead), until it is seen to have passed.
    waiting: Option<(Instant, Instant)>,
}

impl Timer {
    /// Must be called within a tokio runtime.
    pub fn new() -> io::Result<Timer> {
        Ok(Timer { inner: imp::Inner::new()?, waiting: None })
    }

    /// Ready once `deadline` has passed.
    pub fn poll_until(&mut self, cx: &mut Context<'_>, deadline: Instant) -> Poll<()> {
        let now = Instant::now();
        if let Some((d, at)) = self.waiting {
            if now >= at {
                // Woken (by the timer or anything else) after the armed instant.
                LEAD.learn(now - at);
                self.waiting = None;
            } else if d != deadline {
                self.waiting = None;
            }
        }
        if now >= deadline {
            self.waiting = None;
            return Poll::Ready(());
        }
        let early = SPIN + LEAD.get();
        let at = match self.waiting {
            Some((_, at)) => Some(at),
            None if deadline - now > early => Some(deadline - early),
            None => None,
        };
        if let Some(at) = at {
            if self.inner.poll_until(cx, at).is_pending() {
                self.waiting = Some((deadline, at));
                return Poll::Pending;
            }
            LEAD.learn(Instant::now().saturating_duration_since(at));
            self.waiting = None;
        }
        // The last µs: ask to be polled again at once.
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Waits until `deadline`.
    pub async fn wait_until(&mut self, deadline: Instant) {
        std::future::poll_fn(|cx| self.poll_until(cx, deadline)).await
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::task::{Context, Poll};
    use std::time::Instant;

    use tokio::io::unix::AsyncFd;

    pub struct Inner {
        fd: AsyncFd<OwnedFd>,
        /// The instant the timerfd is set to fire at, if armed.
        armed: Option<Instant>,
    }

    impl Inner {
        pub fn new() -> io::Result<Inner> {
            // SAFETY: plain syscall; the fd is owned right after.
            let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `raw` is a fresh fd we own.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            // SAFETY: OwnedFd keeps the same open fd for the AsyncFd's whole life.
            let fd = unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.map_err(io::Error::from)?;
            Ok(Inner { fd, armed: None })
        }

        /// Sets the timerfd to fire at `at` (std's `Instant` is CLOCK_MONOTONIC on Linux).
        // `time_t` and `c_long` are not i64 on every Linux target.
        #[allow(clippy::unnecessary_cast)]
        fn arm(&mut self, at: Instant) -> io::Result<()> {
            let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: valid out-pointer.
            unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
            let ahead = at.saturating_duration_since(Instant::now());
            let mut ns = now.tv_nsec as i64 + ahead.subsec_nanos() as i64;
            let mut sec = now.tv_sec as i64 + ahead.as_secs() as i64 + ns / 1_000_000_000;
            ns %= 1_000_000_000;
            if sec == 0 && ns == 0 {
                ns = 1; // all-zero would disarm the timer
            }
            if ns < 0 {
                sec -= 1;
                ns += 1_000_000_000;
            }
            let spec = libc::itimerspec {
                it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
                it_value: libc::timespec { tv_sec: sec as libc::time_t, tv_nsec: ns as _ },
            };
            // SAFETY: valid fd and pointers.
            let rc = unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
            if rc < 0 {
                return Err(io::Error::last_os_error());
            }
            self.armed = Some(at);
            Ok(())
        }

        pub fn poll_until(&mut self, cx: &mut Context<'_>, at: Instant) -> Poll<()> {
            if self.armed != Some(at) && self.arm(at).is_err() {
                // Cannot arm: fall back to re-polling (correct, only busier).
                return Poll::Ready(());
            }
            loop {
                let mut guard = match self.fd.poll_read_ready(cx) {
                    Poll::Ready(Ok(g)) => g,
                    Poll::Ready(Err(_)) => return Poll::Ready(()),
                    Poll::Pending => return Poll::Pending,
                };
                let res = guard.try_io(|fd| {
                    let mut expirations = [0u8; 8];
                    // SAFETY: 8-byte buffer, as timerfd requires.
                    let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
                    if n < 0 {
                        Err(io::Error::last_os_error())
                    } else {
                        Ok(())
                    }
                });
                match res {
                    Ok(_) => {
                        self.armed = None;
                        return Poll::Ready(());
                    }
                    // Not fired yet (readiness was stale): wait again.
                    Err(_would_block) => continue,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::future::Future;
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Instant;

    pub struct Inner {
        sleep: Pin<Box<tokio::time::Sleep>>,
    }

    impl Inner {
        pub fn new() -> io::Result<Inner> {
            Ok(Inner { sleep: Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())) })
        }

        pub fn poll_until(&mut self, cx: &mut Context<'_>, at: Instant) -> Poll<()> {
            let at = at.into();
            if self.sleep.deadline() != at {
                self.sleep.as_mut().reset(at);
            }
            self.sleep.as_mut().poll(cx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waits_are_precise() {
        let mut t = Timer::new().unwrap();
        let mut late = Vec::new();
        for us in [50u64, 100, 250, 900, 3000] {
            for _ in 0..5 {
                let deadline = Instant::now() + Duration::from_micros(us);
                t.wait_until(deadline).await;
                late.push(Instant::now() - deadline);
            }
        }
        late.sort();
        // Never early; the median is late by µs, not by a timer tick.
        assert!(late[late.len() / 2] < Duration::from_micros(200), "{late:?}");
    }

    #[test]
    fn the_lead_climbs_to_late_wake_ups_quickly_and_comes_down_slowly() {
        let lead = Lead(AtomicU64::new(0));
        for _ in 0..20 {
            lead.learn(Duration::from_micros(200));
        }
        let up = lead.get();
        assert!(up > Duration::from_micros(190) && up <= Duration::from_micros(200), "{up:?}");
        // One on-time wake-up moves it down by a 32nd of the gap only.
        lead.learn(Duration::ZERO);
        assert!(lead.get() > up * 9 / 10, "{:?}", lead.get());
        // Never past the cap, whatever a stall.
        lead.learn(Duration::from_secs(1));
        assert!(lead.get() <= Duration::from_nanos(MAX_LEAD_NS));
    }
}
