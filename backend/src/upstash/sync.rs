//! The read-your-writes token (`upstash-sync-token`).
//!
//! Every Upstash response carries the token of the last write this server
//! ran; it changes after every request that ran a command that may write
//! (by the server's command table, [`pipelab_engine::commands::Table::allows_readonly`]).
//! Upstash uses it where reads may be served by a replica that lags: a
//! request that brings a token is answered only once that write is
//! visible. pipelab runs every command on one Redis, where a write is
//! visible to every later command as soon as it was answered, so a
//! request with a token never waits; the token is still kept and sent, so
//! that the SDKs' `readYourWrites` sees the protocol it expects.
//!
//! A token is `<epoch>-<n>`: `epoch` is the server's start time (ms),
//! `n` counts the requests that wrote; in the sandbox, the visitor's own
//! (a shared count would tell each visitor how much the others write).

use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::HeaderValue;

/// The header's name, as the SDKs send and read it.
pub const HEADER: &str = "upstash-sync-token";

/// [`HEADER`] as a header name.
pub const HEADER_NAME: axum::http::HeaderName = axum::http::HeaderName::from_static(HEADER);

/// The server's write counter.
#[derive(Debug)]
pub struct SyncToken {
    epoch: u64,
    writes: AtomicU64,
}

impl Default for SyncToken {
    fn default() -> Self {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        SyncToken { epoch, writes: AtomicU64::new(0) }
    }
}

impl SyncToken {
    /// A request wrote: the token moves on (`own`: a sandbox visitor's count).
    pub fn wrote(&self, own: Option<&AtomicU64>) {
        own.unwrap_or(&self.writes).fetch_add(1, Ordering::Relaxed);
    }

    /// The current token, as a header value (`own`: a sandbox visitor's count).
    pub fn header(&self, own: Option<&AtomicU64>) -> HeaderValue {
        let mut num = itoa::Buffer::new();
        let mut text = Vec::with_capacity(41);
        text.extend_from_slice(num.format(self.epoch).as_bytes());
        text.push(b'-');
        text.extend_from_slice(num.format(own.unwrap_or(&self.writes).load(Ordering::Relaxed)).as_bytes());
        HeaderValue::from_maybe_shared(axum::body::Bytes::from(text)).expect("digits and a dash")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_after_a_write_only() {
        let t = SyncToken::default();
        let a = t.header(None);
        assert_eq!(a.to_str().unwrap(), format!("{}-0", t.epoch));
        assert_eq!(t.header(None), a);
        t.wrote(None);
        assert_ne!(t.header(None), a);
        // A visitor's own count moves with their writes only.
        let own = AtomicU64::new(0);
        let mine = t.header(Some(&own));
        t.wrote(None);
        assert_eq!(t.header(Some(&own)), mine);
        t.wrote(Some(&own));
        assert_ne!(t.header(Some(&own)), mine);
    }
}
