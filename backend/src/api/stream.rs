//! A batch's report sent while the batch runs.
//!
//! A 100k-command report is about 10 MiB of JSON. Serialized after the
//! batch, it added its serialization and transfer time to the batch's; here
//! the executor hands results over in groups of [`GROUP`] as they come,
//! the response's own task serializes them (on another core than the
//! executor's, which keeps reading replies) and sends chunks of [`CHUNK`]
//! bytes, so that the client reads the report while Redis still works on
//! the batch (`bench/README-api.md`).
//!
//! The status code cannot change once the body has started, so nothing is
//! sent until either the batch ended (a batch of up to [`GROUP`] commands
//! runs in the request's task and gets one ordinary response; errors get
//! their 4xx/503 answer) or a first chunk is full:
//! by then the batch was accepted and Redis answered, so the answer is 200
//! whatever follows. A batch cut later (batch timeout, reply limit, lost
//! connection) reports `unknown` and `not_sent` results, as it does unstreamed.
//!
//! The body is the report's usual JSON with `results` first, then
//! `summary`, `transaction` and `connection_error`, as `pipelab run --json`
//! writes it.
//!
//! The batch runs in a task of its own, on another serving thread than the
//! request's (each has a runtime of its own), aborted if the client goes
//! away (the body or the request is dropped): its connection is then
//! closed, never returned to the pool, as when a request's future is dropped.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use pipelab_http::error::{ApiCode, ApiError};
use pipelab_engine::report_json::ReportJson;
use pipelab_engine::engine::Backend;
use super::kept::{Keep, KeptResults, RESULT_JSON};
use super::run::run_logged;
use pipelab_engine::engine::RunOptions;
use pipelab_http::budget::{self, Charge, Held};
use super::AppState;
use pipelab_engine::exec::{Batch, CommandResult, ResultSink, StreamReport};

/// Bytes of JSON gathered before they are sent: small batches fit in one
/// chunk and get an ordinary response.
pub const CHUNK: usize = 256 * 1024;

/// Results handed from the executor to the response at a time.
pub const GROUP: usize = 512;

/// What the batch's task tells the response.
enum Msg {
    /// The next results, in index order (only those kept), with their
    /// charge: the response holds them, and then their JSON, until hyper has it.
    Results(Vec<CommandResult>, Charge),
    /// The batch is over: its totals, or why it did not run (boxed: sent
    /// once, while `Results` go by the hundred).
    End(Box<Result<StreamReport<Infallible>, ApiError>>),
}

/// Runs `batch` and answers with its report, streamed if it is large.
///
/// Errors (before anything was sent): as [`super::run::run_batch`].
pub async fn respond(state: AppState, on: Backend, batch: Batch, keep: Keep) -> Result<Response, ApiError> {
    if batch.commands.len() <= GROUP {
        return respond_inline(&state, &on, &batch, keep).await;
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = state.http.engine.other_runtime().spawn(run(state.clone(), on, batch, keep, tx));
    let guard = AbortOnDrop(task.abort_handle());
    let mut report = ReportWriter::default();
    let mut held = Charge::new(&state.http.budget);
    loop {
        match rx.recv().await {
            Some(Msg::Results(results, charge)) => {
                report.write(&results);
                held.absorb(charge);
                if report.buf.len() >= CHUNK {
                    let body = Streamed { report, rx, held, done: false, _guard: guard };
                    return Ok(json(Body::new(body)));
                }
            }
            Some(Msg::End(end)) => {
                return match *end {
                    Ok(mut out) => match (out.reconnect_failed.take(), budget::refused(out.connection_error.as_deref())) {
                        (Some(e), _) => Err(e.into()),
                        (None, Some(refused)) => Err(refused),
                        (None, None) => {
                            let mut res = json(Body::from(report.finish(&out)));
                            res.extensions_mut().insert(Held::new(held));
                            Ok(res)
                        }
                    },
                    Err(e) => Err(e),
                }
            }
            // The batch's task was cancelled: only a shutdown past its grace period does that.
            None => {
                return Err(ApiError::new(
                    ApiCode::ShuttingDown,
                    "the server shut down while the batch ran; commands already written may have run \
                     (their outcome is unknown)",
                ))
            }
        }
    }
}

/// A small batch runs in the request's own task: a task of its own and a
/// channel would cost more than its report's serialization saves.
async fn respond_inline(state: &AppState, on: &Backend, batch: &Batch, keep: Keep) -> Result<Response, ApiError> {
    let mut kept = KeptResults::new(state, keep, batch.commands.len());
    let out = run_logged(state, on, batch, &mut kept, RunOptions::default()).await?;
    if let Some(msg) = out.reconnect_failed {
        return Err(msg.into());
    }
    if let Some(refused) = budget::refused(out.connection_error.as_deref()) {
        return Err(refused);
    }
    Ok(report_response(&mut kept, &out))
}

/// The report of a batch that ran, its results all collected in `kept`,
/// as one ordinary response.
pub(super) fn report_response(kept: &mut KeptResults, out: &StreamReport<Infallible>) -> Response {
    // Room for the summary, the results and their replies' JSON (counted as
    // they came), so that a large answer is not grown by doubling: twice its
    // size, and copied, while it is made.
    let room = 640 + RESULT_JSON as usize * kept.results.len() + kept.json_bytes as usize;
    let mut report = ReportWriter { buf: Vec::with_capacity(room), json: ReportJson::default() };
    report.write(&kept.results);
    let mut res = json(Body::from(report.finish(out)));
    if kept.charge.bytes() > 0 {
        res.extensions_mut().insert(kept.take_charge());
    }
    res
}

fn json(body: Body) -> Response {
    let mut res = body.into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

async fn run(state: AppState, on: Backend, batch: Batch, keep: Keep, tx: mpsc::UnboundedSender<Msg>) {
    let mut sink = GroupSink { group: KeptResults::new(&state, keep, GROUP), tx: tx.clone() };
    let out = run_logged(&state, &on, &batch, &mut sink, RunOptions::default()).await;
    sink.send();
    // A closed channel means the client left: this task is being aborted.
    let _ = tx.send(Msg::End(Box::new(out)));
}

/// Hands the kept results to the response in groups.
struct GroupSink {
    group: KeptResults,
    tx: mpsc::UnboundedSender<Msg>,
}

impl GroupSink {
    fn send(&mut self) {
        if !self.group.results.is_empty() {
            let group = std::mem::replace(&mut self.group.results, Vec::with_capacity(GROUP));
            let _ = self.tx.send(Msg::Results(group, self.group.charge.take()));
        }
    }
}

impl ResultSink for GroupSink {
    fn push(&mut self, result: CommandResult) {
        self.group.push(result);
        if self.group.results.len() == GROUP {
            self.send();
        }
    }

    fn admit(&mut self, reply: &resp::Value) -> Result<(), u64> {
        self.group.admit(reply)
    }

    fn refusal(&self) -> Option<String> {
        self.group.refusal()
    }
}

/// The report's JSON, written as results come.
#[derive(Default)]
struct ReportWriter {
    buf: Vec<u8>,
    json: ReportJson,
}

impl ReportWriter {
    fn write(&mut self, results: &[CommandResult]) {
        for result in results {
            self.json.result(&mut self.buf, result);
        }
    }

    /// The JSON written since the last call.
    fn take(&mut self) -> Bytes {
        std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK + 4096)).into()
    }

    /// The rest of the body: the end of `results`, then the members after it.
    fn finish(&mut self, out: &StreamReport<Infallible>) -> Bytes {
        self.json.tail(&mut self.buf, &out.summary, out.transaction.as_ref(), out.connection_error.as_deref());
        self.buf.push(b'}');
        // The last chunk: no fresh CHUNK-sized buffer after it (one per
        // request for a one-command batch, freed unused).
        std::mem::take(&mut self.buf).into()
    }
}

/// The body of a streamed report: what was written so far, then the rest
/// as the batch's task sends it.
struct Streamed {
    report: ReportWriter,
    rx: mpsc::UnboundedReceiver<Msg>,
    /// The charge of the results received and of their JSON not yet passed
    /// on: each chunk takes its share to hyper ([`budget::chunk`]).
    held: Charge,
    /// The end of the report was passed on (or the body failed).
    done: bool,
    _guard: AbortOnDrop,
}

impl http_body::Body for Streamed {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        while !this.done {
            if this.report.buf.len() >= CHUNK {
                return Poll::Ready(Some(Ok(Frame::data(this.chunk()))));
            }
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(Msg::Results(results, charge))) => {
                    this.report.write(&results);
                    this.held.absorb(charge);
                }
                Poll::Ready(Some(Msg::End(end))) if end.is_ok() => {
                    this.done = true;
                    let out = end.expect("checked");
                    let last = this.report.finish(&out);
                    let share = this.held.split(u64::MAX);
                    return Poll::Ready(Some(Ok(Frame::data(budget::chunk(last, share)))));
                }
                Poll::Ready(Some(Msg::End(_)) | None) => {
                    // The batch failed after the body had started (not by
                    // the executor's contract) or its task is gone: fail
                    // the body, so that the client sees an incomplete
                    // response rather than a truncated report passed off
                    // as whole.
                    this.done = true;
                    return Poll::Ready(Some(Err(std::io::Error::other("the batch's report could not be completed"))));
                }
                // Nothing new yet: pass on what is written rather than wait.
                Poll::Pending if !this.report.buf.is_empty() => {
                    return Poll::Ready(Some(Ok(Frame::data(this.chunk()))))
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(None)
    }
}

impl Streamed {
    /// The JSON written so far, with its share of the charge (as much as
    /// its size; the results' own share goes with the last chunk).
    fn chunk(&mut self) -> Bytes {
        let data = self.report.take();
        let share = self.held.split(data.len() as u64);
        budget::chunk(data, share)
    }
}

/// Aborts the batch's task when the response (or the request) is dropped.
pub(crate) struct AbortOnDrop(pub(crate) AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
