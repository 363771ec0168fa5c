//! `POST /api/v1/batches`: a batch whose progress the client sees while it
//! runs, and `POST /api/v1/batches/{id}/cancel`, which ends it early
//! (docs/api.md#live-batches).
//!
//! Why: `POST /batch` answers when the batch ends (or streams a big report
//! in 256 KiB chunks), so a page running 1,000 sequential commands at 10
//! ms showed nothing for 10 s and could not stop them. Here the answer is
//! NDJSON (`application/x-ndjson`), one JSON object a line:
//!
//! - `{"type":"start","batch_id":…,"commands":N,"cancel":"/api/v1/batches/…/cancel"}` first;
//! - `{"type":"results","results":[…]}` as results come (each result as in
//!   `POST /batch`, `index` 0-based), each at most [`FLUSH`] after it came;
//! - `{"type":"end","summary":…,"transaction":…,"connection_error":…}` last,
//!   or `{"type":"error","error":{"code","message"}}` if the batch could not
//!   run after all (no free slot, Redis unreachable).
//!
//! A request the API refuses gets its usual 4xx before any line. A cancel
//! cuts the batch as the batch timeout does ([`pipelab_engine::conn::Cancel`]): the
//! commands written but not answered are `unknown`, the rest `not_sent`,
//! `connection_error` says it was cancelled, and the `end` line still
//! comes. A client that closes the stream cancels its batch too (nobody is
//! left to read the statuses, but the connection is closed at once).
//!
//! The id is 128 random bits: knowing it is the right to cancel.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use http_body::Frame;
use serde::Serialize;
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::batch::{BatchRequest, PreparedBatch};
use pipelab_http::caller::Caller;
use pipelab_http::budget::{self, Charge};
use pipelab_http::error::{ApiCode, ApiError, BatchErrors, ErrorBody, ErrorDetail};
use super::run::run_logged;
use pipelab_engine::engine::RunOptions;
use super::kept::KeptResults;
use super::stream::GROUP;
use super::AppState;
use pipelab_engine::conn::Cancel;
use pipelab_engine::exec::{CommandResult, ResultSink, StreamReport, Summary, TransactionOutcome};
use pipelab_engine::report_json::write_result;

/// Longest a result waits in the batch's task before it is handed to the
/// response (one arriving after a longer pause goes at once).
pub const FLUSH: Duration = Duration::from_millis(25);

/// Who started a live batch: only the same caller may cancel it (as with
/// sessions: the same access, the same sandbox visitor).
type Owner = (pipelab_engine::commands::Access, Option<pipelab_engine::sandbox::VisitorId>);

/// The batches running under `POST /batches`, by id.
#[derive(Default)]
pub struct Registry(Mutex<HashMap<String, (Cancel, Owner)>>);

impl Registry {
    fn insert(&self, cancel: Cancel, owner: Owner) -> String {
        let id = new_id();
        self.0.lock().expect("registry lock").insert(id.clone(), (cancel, owner));
        id
    }

    fn remove(&self, id: &str) {
        self.0.lock().expect("registry lock").remove(id);
    }

    /// Cancels batch `id` of `owner`: `None` if no batch of that id is
    /// running, or it is another caller's (who cannot tell the two apart).
    fn cancel(&self, id: &str, owner: &Owner) -> Option<bool> {
        self.0.lock().expect("registry lock").get(id).filter(|(_, o)| o == owner).map(|(c, _)| c.cancel())
    }
}

/// The node's id and 128 random bits, as 32 hex digits (`pipelab_engine::node`).
fn new_id() -> String {
    pipelab_engine::node::new_id().expect("the system's random source")
}

/// The first line of a `POST /batches` answer.
#[derive(Serialize, ToSchema)]
#[schema(example = json!({"type": "start", "batch_id": "web-1.9f0c2b7e4d1a6c3b8e5f0a7d2c9b4e61",
    "commands": 1000, "cancel": "/api/v1/batches/web-1.9f0c2b7e4d1a6c3b8e5f0a7d2c9b4e61/cancel"}))]
pub struct StartLine {
    /// Always `start`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The batch's id, for `POST /api/v1/batches/{id}/cancel`.
    pub batch_id: String,
    /// Commands in the batch (the results to expect, with `results: all`).
    pub commands: usize,
    /// The path that cancels the batch.
    pub cancel: String,
}

/// The answer of `POST /batches/{id}/cancel`.
#[derive(Serialize, ToSchema)]
pub struct CancelResponse {
    pub batch_id: String,
    /// True if this request cancelled it, false if it was cancelled already
    /// (it is winding up: its `end` line is on its way).
    pub cancelled: bool,
}

/// Run a batch, its results streamed as they come (NDJSON).
///
/// The body is `POST /api/v1/batch`'s. The answer: a `start` line (the
/// batch id), `results` lines, and an `end` line with the summary (or an
/// `error` line); see docs/api.md#live-batches. Cancel with `POST
/// /api/v1/batches/{id}/cancel`.
#[utoipa::path(
    post,
    path = "/api/v1/batches",
    tag = "batches",
    request_body = BatchRequest,
    responses(
        (status = 200, description = "NDJSON: a start line, results lines, an end line (or an error line)",
         content_type = "application/x-ndjson", body = StartLine),
        BatchErrors,
    )
)]
pub async fn start(State(state): State<AppState>, caller: Caller, PreparedBatch { batch, keep, session, backend }: PreparedBatch) -> Result<Response, ApiError> {
    if session.is_some() {
        return Err(ApiError::field(ApiCode::InvalidField, "session", "a session's batches run through POST /api/v1/batch"));
    }
    let cancel = Cancel::new();
    let id = state.live.insert(cancel.clone(), (caller.access.rules(), caller.visitor));
    let start = StartLine {
        kind: "start",
        cancel: format!("/api/v1/batches/{id}/cancel"),
        batch_id: id.clone(),
        commands: batch.commands.len(),
    };
    let mut buf = serde_json::to_vec(&start).expect("serializable");
    buf.push(b'\n');
    let (tx, rx) = mpsc::unbounded_channel();
    let task_state = state.clone();
    let task_cancel = cancel.clone();
    state.http.engine.other_runtime().spawn(async move {
        let waiting = Mutex::new(Waiting { kept: KeptResults::new(&task_state, keep, 64), last: Instant::now() });
        let mut sink = FlushSink { waiting: &waiting, tx: &tx };
        let run = run_logged(&task_state, &backend, &batch, &mut sink, RunOptions { cancel: Some(task_cancel), ..RunOptions::default() });
        // Results that came less than FLUSH after the last group go with the
        // next one, or at this tick if none comes (a BLPOP after them).
        let tick = async {
            let mut tick = tokio::time::interval(FLUSH);
            loop {
                tick.tick().await;
                let mut waiting = waiting.lock().expect("live results lock");
                if waiting.last.elapsed() >= FLUSH {
                    waiting.send(&tx);
                }
            }
        };
        let out = tokio::select! {
            out = run => out,
            never = tick => never,
        };
        waiting.lock().expect("live results lock").send(&tx);
        task_state.live.remove(&id);
        let _ = tx.send(Msg::End(Box::new(out)));
    });
    let body = Lines { buf, rx, held: Charge::new(&state.http.budget), done: false, cancel_on_drop: cancel };
    let mut res = Body::new(body).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/x-ndjson"));
    // Proxies must pass each line on as it comes.
    res.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(res)
}

/// Cancel a running batch of `POST /batches`.
///
/// The batch ends as at the batch timeout: commands awaiting replies are
/// `unknown`, the rest `not_sent`; its stream then sends its `end` line.
/// 404 `not_found` if no batch of that id is running (it ended, or never was);
/// 421 `other_node` if another node made the id.
#[utoipa::path(
    post,
    path = "/api/v1/batches/{id}/cancel",
    tag = "batches",
    params(("id" = String, Path, description = "The `batch_id` of the stream's start line")),
    responses(
        (status = 200, description = "Cancelled", body = CancelResponse),
        (status = 404, description = "No running batch of that id", body = ErrorBody),
        (status = 421, description = "`other_node`: another node runs the batch (the message names it)", body = ErrorBody),
    )
)]
pub async fn cancel(State(state): State<AppState>, caller: Caller, Path(id): Path<String>) -> Result<Json<CancelResponse>, ApiError> {
    if let Some(node) = pipelab_engine::node::elsewhere(&id) {
        return Err(ApiError::new(ApiCode::OtherNode, format!("batch {id} runs on node {node:?}, not this one ({})", pipelab_engine::node::id())));
    }
    match state.live.cancel(&id, &(caller.access.rules(), caller.visitor)) {
        Some(cancelled) => Ok(Json(CancelResponse { batch_id: id, cancelled })),
        None => Err(ApiError::new(
            ApiCode::NotFound,
            format!("no running batch {id} of yours: it ended, or the id is not one of your POST /api/v1/batches"),
        )),
    }
}

enum Msg {
    /// Results with their charge (`pipelab_http::budget`), held by the body until hyper has their lines.
    Results(Vec<CommandResult>, Charge),
    End(Box<Result<StreamReport<Infallible>, ApiError>>),
}

/// The kept results not yet handed to the response, and when the last
/// group was.
struct Waiting {
    kept: KeptResults,
    last: Instant,
}

impl Waiting {
    fn send(&mut self, tx: &mpsc::UnboundedSender<Msg>) {
        self.last = Instant::now();
        if !self.kept.results.is_empty() {
            let group = std::mem::take(&mut self.kept.results);
            let _ = tx.send(Msg::Results(group, self.kept.charge_mut().take()));
        }
    }
}

/// Hands the kept results to the response in groups of up to [`GROUP`],
/// none held longer than [`FLUSH`] (the batch's task ticks for those that
/// no later result sends).
struct FlushSink<'a> {
    waiting: &'a Mutex<Waiting>,
    tx: &'a mpsc::UnboundedSender<Msg>,
}

impl ResultSink for FlushSink<'_> {
    fn push(&mut self, result: CommandResult) {
        let mut waiting = self.waiting.lock().expect("live results lock");
        waiting.kept.push(result);
        if waiting.kept.results.len() >= GROUP || waiting.last.elapsed() >= FLUSH {
            waiting.send(self.tx);
        }
    }

    fn admit(&mut self, reply: &resp::Value) -> Result<(), u64> {
        self.waiting.lock().expect("live results lock").kept.admit(reply)
    }
}

/// The NDJSON body: the start line, then a line per group of results
/// (those waiting when it is polled), then the end or error line.
struct Lines {
    buf: Vec<u8>,
    rx: mpsc::UnboundedReceiver<Msg>,
    /// The charge of the results received, handed to hyper with their lines.
    held: Charge,
    done: bool,
    cancel_on_drop: Cancel,
}

impl Drop for Lines {
    fn drop(&mut self) {
        // The client left before the end: nobody will read the statuses;
        // end the batch rather than run it for no one.
        if !self.done {
            self.cancel_on_drop.cancel();
        }
    }
}

impl Lines {
    fn results(&mut self, results: &[CommandResult]) {
        if results.is_empty() {
            return;
        }
        self.buf.extend_from_slice(br#"{"type":"results","results":["#);
        for (i, r) in results.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            write_result(&mut self.buf, r);
        }
        self.buf.extend_from_slice(b"]}\n");
    }

    fn end(&mut self, end: Result<StreamReport<Infallible>, ApiError>) {
        let written = match end {
            Ok(out) => match out.reconnect_failed {
                Some(e) => error_line(&mut self.buf, e.into()),
                None => serde_json::to_writer(
                    &mut self.buf,
                    &EndLine { kind: "end", summary: &out.summary, transaction: &out.transaction, connection_error: &out.connection_error },
                ),
            },
            Err(e) => error_line(&mut self.buf, e),
        };
        written.expect("serializable");
        self.buf.push(b'\n');
        self.done = true;
    }

    fn take(&mut self) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let share = self.held.split(u64::MAX);
        Poll::Ready(Some(Ok(Frame::data(budget::chunk(std::mem::take(&mut self.buf).into(), share)))))
    }
}

/// The last line of a batch that ran: its fields in the order
/// docs/api.md shows them, `type` first.
#[derive(Serialize)]
struct EndLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    summary: &'a Summary,
    transaction: &'a Option<TransactionOutcome>,
    connection_error: &'a Option<String>,
}

/// The last line of a batch that could not run: `{"type":"error","error":{…}}`.
fn error_line(buf: &mut Vec<u8>, e: ApiError) -> serde_json::Result<()> {
    #[derive(Serialize)]
    struct ErrorLine {
        #[serde(rename = "type")]
        kind: &'static str,
        error: ErrorDetail,
    }
    serde_json::to_writer(buf, &ErrorLine { kind: "error", error: e.body })
}

impl http_body::Body for Lines {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        while !this.done {
            match this.rx.poll_recv(cx) {
                Poll::Ready(Some(Msg::Results(results, charge))) => {
                    this.results(&results);
                    this.held.absorb(charge);
                }
                Poll::Ready(Some(Msg::End(end))) => this.end(*end),
                Poll::Ready(None) => this.end(Err(ApiError::new(
                    ApiCode::ShuttingDown,
                    "the server shut down while the batch ran; commands already written may have run \
                     (their outcome is unknown)",
                ))),
                Poll::Pending if !this.buf.is_empty() => return this.take(),
                Poll::Pending => return Poll::Pending,
            }
        }
        if this.buf.is_empty() {
            Poll::Ready(None)
        } else {
            this.take()
        }
    }
}
