//! A batch's cancel switch, flipped from outside the batch's task (`POST
//! /api/v1/batches/{id}/cancel`, Ctrl-C).
//!
//! Why not drop the batch's future: a dropped executor reports nothing, and
//! the client would not learn which commands ran. A cancelled batch ends as
//! one cut by its deadline does: the waiting read or write of the
//! connection returns [`super::ReadError::Cancelled`] /
//! [`super::WriteError::Cancelled`] at once, the connection is dropped,
//! commands written but not answered are `unknown` and the rest `not_sent`.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Cheap to clone; every clone flips the same switch.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    flag: AtomicBool,
    notify: Notify,
}

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Flips the switch: waiting reads and writes end now, later ones at once.
    /// Returns false if it was already flipped.
    pub fn cancel(&self) -> bool {
        let first = !self.0.flag.swap(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
        first
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.flag.load(Ordering::SeqCst)
    }

    /// Ready once [`Cancel::cancel`] was called (at once if it already was).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the flag is read: a cancel in between still wakes us.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    /// Runs `fut` unless the switch is flipped first (`None`).
    pub async fn or_cancel<F: Future>(cancel: Option<&Cancel>, fut: F) -> Option<F::Output> {
        match cancel {
            None => Some(fut.await),
            Some(c) if c.is_cancelled() => None,
            Some(c) => tokio::select! {
                biased;
                () = c.cancelled() => None,
                out = fut => Some(out),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_cancel_ends_a_wait_in_progress_and_every_later_one() {
        let c = Cancel::new();
        let c2 = c.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(c2.cancel());
        });
        let slept = Cancel::or_cancel(Some(&c), tokio::time::sleep(Duration::from_secs(30))).await;
        assert_eq!(slept, None);
        assert_eq!(Cancel::or_cancel(Some(&c), async { 1 }).await, None);
        assert_eq!(Cancel::or_cancel(None, async { 1 }).await, Some(1));
        assert!(!c.cancel(), "already flipped");
    }
}
