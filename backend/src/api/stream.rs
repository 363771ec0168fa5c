//! A batch's report sent while the batch runs.
//!
//! A 100k-command report is about 10 MiB of JSON. Serialized after the
//! batch, it added its serialization and transfer time to the batch's; here
//! each result is serialized as the executor hands it over, and sent in
//! chunks of [`CHUNK`] bytes, so that the client reads the report while Redis
//! still works on the batch (`bench/README-api.md`).
//!
//! The status code cannot change once the body has started, so nothing is
//! sent until either the batch ended (a small batch gets one ordinary
//! response, and its errors their 4xx/503 answer) or a first chunk is full:
//! by then the batch was accepted and Redis answered, so the answer is 200
//! whatever follows. A batch cut later (batch timeout, reply limit, lost
//! connection) reports `unknown` and `not_sent` results, as it does unstreamed.
//!
//! The body is the report's usual JSON with `results` first, then
//! `summary`, `transaction` and `connection_error`, as `pipelab run --json`
//! writes it.
//!
//! The batch runs in a task of its own, aborted if the client goes away
//! (the body or the request is dropped): its connection is then closed,
//! never returned to the pool, as when a request's future is dropped.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::error::ApiError;
use super::run::run_batch_into;
use super::AppState;
use pipelab::exec::{Batch, CommandResult, ResultSink, Status, StreamReport, Summary, TransactionOutcome};

/// Bytes of JSON gathered before they are sent: small batches fit in one
/// chunk and get an ordinary response.
pub const CHUNK: usize = 256 * 1024;

/// Which results a batch response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Every result.
    All,
    /// Those whose status is not `ok`.
    Errors,
    /// None (the summary still counts every command).
    None,
}

impl Keep {
    fn keeps(self, status: Status) -> bool {
        match self {
            Keep::All => true,
            Keep::Errors => status != Status::Ok,
            Keep::None => false,
        }
    }
}

/// What the batch's task tells the response.
enum Msg {
    /// More of the body; more follows.
    Chunk(Bytes),
    /// The end of the body.
    Last(Bytes),
    /// The batch did not run (nothing was sent yet): answer with this error.
    Failed(ApiError),
}

/// Runs `batch` and answers with its report, streamed if it is large.
///
/// Errors (before anything was sent): as [`super::run::run_batch`].
pub async fn respond(state: AppState, batch: Batch, keep: Keep) -> Result<Response, ApiError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(run(state, batch, keep, tx));
    let guard = AbortOnDrop(task.abort_handle());
    match rx.recv().await {
        Some(Msg::Failed(e)) => Err(e),
        Some(Msg::Last(body)) => Ok(json(Body::from(body))),
        Some(Msg::Chunk(first)) => Ok(json(Body::new(Streamed { first: Some(first), rx, done: false, _guard: guard }))),
        None => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the batch's task ended without a report",
        )),
    }
}

fn json(body: Body) -> Response {
    let mut res = body.into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

async fn run(state: AppState, batch: Batch, keep: Keep, tx: mpsc::UnboundedSender<Msg>) {
    let mut sink = JsonSink { buf: Vec::with_capacity(CHUNK + 4096), keep, any: false, sent: false, tx: tx.clone() };
    let msg = match run_batch_into(&state, &batch, &mut sink).await {
        Ok(out) if out.reconnect_failed.is_some() && !sink.sent => {
            Msg::Failed(ApiError::unavailable(out.reconnect_failed.unwrap_or_default()))
        }
        Ok(out) => Msg::Last(sink.finish(&out)),
        // Errors come before the first result: nothing was sent.
        Err(e) if !sink.sent => Msg::Failed(e),
        // Unreachable by the executor's contract; end the body as malformed
        // JSON rather than pretend the report is complete.
        Err(_) => return,
    };
    let _ = tx.send(msg);
}

/// Serializes each result into the body as it arrives.
struct JsonSink {
    buf: Vec<u8>,
    keep: Keep,
    /// A result was written (a comma goes before the next).
    any: bool,
    /// A chunk has been sent: the response is committed to 200.
    sent: bool,
    tx: mpsc::UnboundedSender<Msg>,
}

impl ResultSink for JsonSink {
    fn push(&mut self, result: CommandResult) {
        if !self.keep.keeps(result.status) {
            return;
        }
        self.buf.extend_from_slice(if self.any { b"," } else { b"{\"results\":[" });
        self.any = true;
        serde_json::to_writer(&mut self.buf, &result).expect("a result serializes to JSON");
        if self.buf.len() >= CHUNK {
            let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK + 4096));
            // A closed channel means the client left: the task is being aborted.
            let _ = self.tx.send(Msg::Chunk(chunk.into()));
            self.sent = true;
        }
    }
}

/// The report's members after `results`.
#[derive(Serialize)]
struct Tail<'a> {
    summary: &'a Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    transaction: Option<&'a TransactionOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    connection_error: Option<&'a str>,
}

impl JsonSink {
    /// The rest of the body: the end of `results`, then the tail's members.
    fn finish(mut self, out: &StreamReport<Infallible>) -> Bytes {
        self.buf.extend_from_slice(if self.any { b"]," } else { b"{\"results\":[]," });
        let tail = Tail {
            summary: &out.summary,
            transaction: out.transaction.as_ref(),
            connection_error: out.connection_error.as_deref(),
        };
        // `{"summary":...}` without its opening brace continues the object.
        let start = self.buf.len();
        serde_json::to_writer(&mut self.buf, &tail).expect("a summary serializes to JSON");
        self.buf.remove(start);
        self.buf.into()
    }
}

/// The body of a streamed report: the first chunk, then what the task sends.
struct Streamed {
    first: Option<Bytes>,
    rx: mpsc::UnboundedReceiver<Msg>,
    /// The last chunk was passed on (or the body failed).
    done: bool,
    _guard: AbortOnDrop,
}

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        if self.done {
            return Poll::Ready(None);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(Msg::Chunk(b))) => Poll::Ready(Some(Ok(Frame::data(b)))),
            Poll::Ready(Some(Msg::Last(b))) => {
                self.done = true;
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Poll::Ready(Some(Msg::Failed(_)) | None) => {
                // The task ended without the end of the report: fail the
                // body, so that the client sees an incomplete response
                // rather than a truncated report passed off as whole.
                self.done = true;
                Poll::Ready(Some(Err(std::io::Error::other("the batch's report could not be completed"))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Aborts the batch's task when the response (or the request) is dropped.
struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
