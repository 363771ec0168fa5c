//! The memory of responses being made and written, all together: one budget
//! (`--max-response-memory`) for every byte a slow or absent reader makes
//! pipelab hold.
//!
//! A 57-byte `/compare` with `include_results` on a 10 MB value of NUL
//! bytes is a 252 MB answer; six clients that read nothing held 2.1 GB.
//! What is charged, each before it is made:
//! - a large reply being read from Redis: its read buffer's growth, and
//!   while it arrives the most its copy and JSON can cost
//!   (`pipelab_engine::conn::ReplyMemory`, taken before the bytes arrive; a reply
//!   whose answer has no room is refused before it is read);
//! - each kept reply, by its JSON as it will be written plus the decoded
//!   reply held until then (`api::kept::KeptResults`);
//! - the answer made of them, for as long as any of its bytes are
//!   pipelab's: handed to hyper in frames of 64 KiB, released when hyper
//!   has dropped them ([`charged`]; a streamed answer's chunks each carry
//!   their share, [`chunk`]).
//!
//! Any other answer of 64 KiB or more is charged too. Past the budget a
//! batch's answer is refused, never held: 413 `answer_too_large` if it
//! alone is larger than the budget, else 503 `busy` with `Retry-After`
//! ([`refused`]). A batch is not refused up front, as a small answer takes
//! none of the budget, but for one of an asker whose answer was just
//! refused while the budget is still held ([`Budget::refuse_again`]). When a large answer is released, the allocator is asked
//! to give the memory back to the system ([`set_release_hook`]), at once and
//! by each runtime thread as it goes idle in the next seconds
//! ([`collect_if_due`]).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::response::Response;
use http_body::Frame;

use super::error::{ApiCode, ApiError};
use pipelab_engine::engine::ClientKey;
use pipelab_engine::sandbox::VisitorId;

/// Answers smaller than this are not charged (nor reframed).
pub const CHARGED_FROM: u64 = 64 * 1024;
/// Frames of a charged answer.
const FRAME: usize = 64 * 1024;
/// Each release of this much calls the release hook.
const COLLECT_FROM: u64 = 8 << 20;
/// What a refused client is told to wait: answers are read, or their
/// clients cut by `--write-timeout-ms`, in about this long.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// In the refusal of an answer larger than the whole budget ([`refused`]).
const TOO_LARGE: &str = "larger than the server's memory for answers";

/// Why the budget refused bytes (worded for [`refused`]: each contains
/// [`pipelab_engine::conn::MEMORY_REFUSED`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The holder alone would pass the budget: it would hold `mib`.
    #[error("the answer would hold {mib} MiB, {TOO_LARGE} (--max-response-memory {max_mib} MiB); nothing of it is kept")]
    TooLarge { mib: u64, max_mib: u64 },
    /// Others hold the budget (`used_mib` of it).
    #[error("the server's memory for answers is spent (answers being made or not yet read hold {used_mib} MiB, --max-response-memory {max_mib} MiB); nothing of this answer is kept; try again when they are read")]
    Spent { used_mib: u64, max_mib: u64 },
}

/// The budget (`HttpState::budget`).
pub struct Budget {
    max: u64,
    used: AtomicU64,
    /// Bytes released so far: each [`COLLECT_FROM`] more calls the release
    /// hook (an answer is released a frame at a time).
    freed: AtomicU64,
    /// Askers whose answer was refused for want of room lately.
    refused: Mutex<HashMap<Asker, Strikes>>,
}

/// Who asked for an answer, for [`Budget::refuse_again`]: a sandbox
/// visitor, else the client their fair share counts (a token or an address).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Asker {
    Visitor(VisitorId),
    Client(ClientKey),
}

impl Asker {
    /// The visitor if the request has one (the sandbox), else the client
    /// its fair share counts; `None` for neither (a request not through a
    /// socket), which is never refused up front.
    pub fn of(visitor: Option<&VisitorId>, client: Option<ClientKey>) -> Option<Asker> {
        visitor.cloned().map(Asker::Visitor).or(client.map(Asker::Client))
    }
}

/// An asker's answers refused in a row, and until when the next are
/// refused before they run.
#[derive(Debug, Clone, Copy)]
struct Strikes {
    count: u32,
    until: Instant,
}

/// The longest an asker refused again and again waits.
const MOST_WAIT: Duration = Duration::from_secs(8);
/// A refusal this long after the last wait ended starts the count anew.
const STRIKES_FORGOTTEN: Duration = Duration::from_secs(30);

static RELEASE_HOOK: OnceLock<fn()> = OnceLock::new();
/// Until when (ms on [`clock_ms`]) idle runtime threads give memory back:
/// the last pieces of a large answer are often freed after its charge, on
/// another thread, and a thread's freed pages go back only when that same
/// thread asks (or allocates again, which an idle one does not).
static COLLECT_UNTIL_MS: AtomicU64 = AtomicU64::new(0);
/// How long after a large release idle threads keep collecting.
const COLLECT_WINDOW_MS: u64 = 30_000;

fn clock_ms() -> u64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64
}

/// For a runtime's `on_thread_park`: a thread going idle shortly after a
/// large answer was released gives its freed memory back to the system
/// (at most every 250 ms per thread).
pub fn collect_if_due() {
    thread_local!(static LAST_MS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) });
    let until = COLLECT_UNTIL_MS.load(Ordering::Relaxed);
    if until == 0 {
        return;
    }
    let now = clock_ms();
    if now > until || LAST_MS.get().saturating_add(250) > now {
        return;
    }
    LAST_MS.set(now);
    if let Some(hook) = RELEASE_HOOK.get() {
        hook();
    }
}

/// What to call after a large answer's memory is freed: the binary gives
/// its allocator's "return freed memory to the system" (mimalloc keeps
/// freed pages of a thread until that thread allocates again).
pub fn set_release_hook(hook: fn()) {
    let _ = RELEASE_HOOK.set(hook);
}

impl Budget {
    pub fn new(max: u64) -> Arc<Budget> {
        Arc::new(Budget { max: max.max(1), used: AtomicU64::new(0), freed: AtomicU64::new(0), refused: Mutex::default() })
    }

    /// 503 `busy` before a batch of `asker`'s runs, while their last answer
    /// refused for want of room is recent (the wait doubles with each
    /// refusal in a row, up to 8 s) and more than half the budget
    /// is still held. Why: a refused answer still cost its Redis the whole
    /// reply, and a client that asks again at once, never reading, would
    /// keep Redis making replies for nobody and every other caller waiting.
    pub fn refuse_again(&self, asker: impl FnOnce() -> Option<Asker>) -> Option<ApiError> {
        if self.used() <= self.max / 2 {
            return None;
        }
        let asker = asker()?;
        let until = self.refused.lock().expect("refused lock").get(&asker)?.until;
        let wait = until.checked_duration_since(Instant::now())?;
        let message = format!(
            "the server's memory for answers is spent (answers being made or not yet read hold {} MiB, --max-response-memory {} MiB) and your last answer was refused for it: nothing was run; try again in {} s",
            self.used() >> 20,
            self.max >> 20,
            wait.as_secs_f64().ceil().max(1.0)
        );
        Some(ApiError::new(ApiCode::Busy, message).retry_after(wait))
    }

    /// After a batch of `asker`'s ran: if its answer was refused for want
    /// of room (its `connection_error` says so), their next batches wait.
    pub fn note_refusal(&self, asker: impl FnOnce() -> Option<Asker>, connection_error: Option<&str>) {
        let Some(why) = connection_error.filter(|e| e.contains(pipelab_engine::conn::MEMORY_REFUSED)) else { return };
        // An answer larger than the whole budget is refused whatever the others hold.
        if why.contains(TOO_LARGE) {
            return;
        }
        let Some(asker) = asker() else { return };
        let now = Instant::now();
        let mut refused = self.refused.lock().expect("refused lock");
        refused.retain(|_, s| now < s.until + STRIKES_FORGOTTEN);
        let count = refused.get(&asker).map_or(0, |s| s.count) + 1;
        let wait = (RETRY_AFTER * 2u32.saturating_pow(count - 1)).min(MOST_WAIT);
        refused.insert(asker, Strikes { count, until: now + wait });
    }

    /// After `n` bytes were released: past each [`COLLECT_FROM`] the
    /// allocator is asked to give memory back, now and by idle threads.
    fn released(&self, n: u64) {
        if n == 0 {
            return;
        }
        let before = self.freed.fetch_add(n, Ordering::Relaxed);
        if (before + n) / COLLECT_FROM == before / COLLECT_FROM {
            return;
        }
        COLLECT_UNTIL_MS.store(clock_ms() + COLLECT_WINDOW_MS, Ordering::Relaxed);
        if let Some(hook) = RELEASE_HOOK.get() {
            hook();
        }
    }

    /// Bytes of answers held now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `n` bytes more for a holder that has `had` already; else why
    /// not (worded for [`refused`]). `force`: taken even past the budget.
    fn take(&self, had: u64, n: u64, force: bool) -> Result<(), Refusal> {
        if force {
            self.used.fetch_add(n, Ordering::Relaxed);
            return Ok(());
        }
        if had + n > self.max {
            return Err(Refusal::TooLarge { mib: (had + n).div_ceil(1 << 20), max_mib: self.max >> 20 });
        }
        match self.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| (used + n <= self.max).then_some(used + n)) {
            Ok(_) => Ok(()),
            Err(used) => Err(Refusal::Spent { used_mib: used >> 20, max_mib: self.max >> 20 }),
        }
    }
}

/// Reads of large replies take their room from the same budget.
impl pipelab_engine::conn::ReplyMemory for Budget {
    fn limit(&self) -> u64 {
        self.max
    }

    fn take(&self, had: u64, n: u64, force: bool) -> Result<(), pipelab_engine::conn::MemoryRefusal> {
        Ok(Budget::take(self, had, n, force)?)
    }

    fn give(&self, n: u64) {
        self.used.fetch_sub(n, Ordering::Relaxed);
        self.released(n);
    }
}

/// The error for a batch whose answer the budget refused (its report's
/// `connection_error` names the budget): 413 `answer_too_large` if it
/// alone is larger than the budget, else 503 `busy` with `Retry-After`.
/// The batch ran until then: its commands may have changed data.
pub fn refused(connection_error: Option<&str>) -> Option<ApiError> {
    let why = connection_error.filter(|e| e.contains(pipelab_engine::conn::MEMORY_REFUSED))?;
    let message = format!("{why} (the batch ran until its answer was refused: its commands may have changed data)");
    Some(match why.contains(TOO_LARGE) {
        true => ApiError::new(ApiCode::AnswerTooLarge, message),
        false => ApiError::new(ApiCode::Busy, message).retry_after(RETRY_AFTER),
    })
}

/// Bytes charged to a budget until dropped.
pub struct Charge {
    budget: Arc<Budget>,
    bytes: u64,
}

impl Charge {
    /// Nothing charged yet.
    pub fn new(budget: &Arc<Budget>) -> Charge {
        Charge { budget: budget.clone(), bytes: 0 }
    }

    /// `n` bytes more, if the budget has room for them; else why not
    /// (this charge alone past the budget, or the budget spent: [`refused`]).
    pub fn grow(&mut self, n: u64) -> Result<(), Refusal> {
        self.budget.take(self.bytes, n, false)?;
        self.bytes += n;
        Ok(())
    }

    /// Up to `n` of this charge's bytes, moved to the charge returned.
    pub fn split(&mut self, n: u64) -> Charge {
        let n = n.min(self.bytes);
        self.bytes -= n;
        Charge { budget: self.budget.clone(), bytes: n }
    }

    /// This charge's bytes, moved to the charge returned; this one is
    /// left empty (on the same budget).
    pub fn take(&mut self) -> Charge {
        Charge { budget: self.budget.clone(), bytes: std::mem::take(&mut self.bytes) }
    }

    /// `other`'s bytes, held from now on by this charge.
    pub fn absorb(&mut self, mut other: Charge) {
        self.bytes += std::mem::take(&mut other.bytes);
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Exactly `n` bytes, room or not (an answer already made).
    fn set(&mut self, n: u64) {
        if n >= self.bytes {
            self.budget.used.fetch_add(n - self.bytes, Ordering::Relaxed);
        } else {
            self.release(self.bytes - n);
        }
        self.bytes = n;
    }

    fn release(&mut self, n: u64) {
        let n = n.min(self.bytes);
        self.bytes -= n;
        self.budget.used.fetch_sub(n, Ordering::Relaxed);
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        let n = self.bytes;
        self.release(n);
        self.budget.released(n);
    }
}

/// A response's charge so far (the replies counted while its batch ran),
/// left in its extensions for [`charged`] to settle.
#[derive(Clone)]
pub struct Held(pub Arc<std::sync::Mutex<Option<Charge>>>);

impl Held {
    pub fn new(charge: Charge) -> Held {
        Held(Arc::new(std::sync::Mutex::new(Some(charge))))
    }
}

/// `res` with its body charged to `budget` for as long as it lives: the
/// charge its batch made (a [`Held`] extension) set to the body's size, or
/// a new one for a large body (an exact size of [`CHARGED_FROM`] or more).
pub fn charged(budget: &Arc<Budget>, mut res: Response) -> Response {
    let held = res.extensions_mut().remove::<Held>().and_then(|h| h.0.lock().ok()?.take());
    let size = res.body().size_hint().exact().unwrap_or(0);
    if size < CHARGED_FROM {
        return res;
    }
    let mut charge = held.unwrap_or_else(|| Charge::new(budget));
    charge.set(size);
    res.map(|body| Body::new(Charged { inner: body, pending: Bytes::new(), charge: Arc::new(charge) }))
}

/// Bytes handed to hyper with their share of a charge, released when
/// hyper drops them (written, or the connection gone): hyper queues
/// several frames per connection before it writes them.
pub fn chunk(data: Bytes, charge: Charge) -> Bytes {
    if charge.bytes == 0 {
        return data;
    }
    Bytes::from_owner(ChargedChunk { data, _charge: charge })
}

/// The owner of a [`chunk`]'s bytes.
struct ChargedChunk {
    data: Bytes,
    _charge: Charge,
}

impl AsRef<[u8]> for ChargedChunk {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

/// A charged body: its frames cut to [`FRAME`] bytes. They are slices of
/// one buffer, freed when the last of them is: each holds the whole
/// charge, released when hyper has dropped them all and the body too.
struct Charged {
    inner: Body,
    pending: Bytes,
    charge: Arc<Charge>,
}

/// The owner of a [`Charged`] body's frame.
struct SharedChunk {
    data: Bytes,
    _charge: Arc<Charge>,
}

impl AsRef<[u8]> for SharedChunk {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl HttpBody for Charged {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        if this.pending.is_empty() {
            match std::task::ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => this.pending = data,
                    Err(other) => return Poll::Ready(Some(Ok(other))),
                },
                other => return Poll::Ready(other),
            }
        }
        let n = this.pending.len().min(FRAME);
        let data = this.pending.split_to(n);
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_owner(SharedChunk { data, _charge: this.charge.clone() })))))
    }

    fn is_end_stream(&self) -> bool {
        self.pending.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let mut hint = self.inner.size_hint();
        let pending = self.pending.len() as u64;
        hint.set_lower(hint.lower() + pending);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + pending);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;

    #[tokio::test]
    async fn a_large_answer_is_charged_until_it_is_read_or_dropped() {
        let budget = Budget::new(200 * 1024);
        let mut c = Charge::new(&budget);
        assert!(c.grow(150 * 1024).is_ok());
        assert!(c.grow(100 * 1024).unwrap_err().to_string().contains("--max-response-memory"));
        drop(c);
        assert_eq!(budget.used(), 0);
        let small = charged(&budget, vec![0u8; 1000].into_response());
        assert_eq!(budget.used(), 0);
        drop(small);
        let big = charged(&budget, vec![7u8; 300 * 1024].into_response());
        assert_eq!(budget.used(), 300 * 1024);
        assert!(Charge::new(&budget).grow(1).is_err(), "spent");
        let body = axum::body::to_bytes(big.into_body(), usize::MAX).await.unwrap();
        assert_eq!(body.len(), 300 * 1024);
        assert_eq!(budget.used(), 0);
        let dropped = charged(&budget, vec![7u8; 100 * 1024].into_response());
        assert_eq!(budget.used(), 100 * 1024);
        drop(dropped);
        assert_eq!(budget.used(), 0);
        assert!(Charge::new(&budget).grow(1).is_ok());
    }

    #[test]
    fn an_asker_refused_for_room_waits_longer_each_time_while_the_budget_is_held() {
        let budget = Budget::new(100 << 20);
        let a = || Some(Asker::Client(ClientKey::Address([10, 0, 0, 1].into())));
        let b = || Some(Asker::Client(ClientKey::Address([10, 0, 0, 2].into())));
        let spent = Refusal::Spent { used_mib: 90, max_mib: 100 }.to_string();
        let mut held = Charge::new(&budget);
        held.grow(90 << 20).unwrap();
        budget.note_refusal(a, Some(&spent));
        let e = budget.refuse_again(a).expect("a is refused before their batch runs");
        assert_eq!((e.retry_after, e.body.message.contains("nothing was run")), (Some(1), true), "{e:?}");
        assert!(budget.refuse_again(b).is_none(), "b's answer was not refused");
        budget.note_refusal(a, Some(&spent));
        budget.note_refusal(a, Some(&spent));
        assert_eq!(budget.refuse_again(a).and_then(|e| e.retry_after), Some(4), "the third refusal in a row: 4 s");
        // Larger than the whole budget: refused whatever others hold, no wait.
        budget.note_refusal(b, Some(&Refusal::TooLarge { mib: 200, max_mib: 100 }.to_string()));
        assert!(budget.refuse_again(b).is_none());
        drop(held);
        assert!(budget.refuse_again(a).is_none(), "room again: a's batches run");
    }
}
