//! `/subscribe/<channel>…` and `/psubscribe/<pattern>…` as Server-Sent
//! Events, as `@upstash/redis`'s `subscribe()` and `psubscribe()` use them.
//!
//! Each subscription has a Redis connection of its own (never pooled: a
//! subscribed connection takes no other commands), opened for the request
//! and closed when the client goes away. Every message Redis pushes becomes
//! one event, its fields joined by commas as Upstash writes them:
//! `data: subscribe,<channel>,<count>`, `data: message,<channel>,<payload>`,
//! `data: pmessage,<pattern>,<channel>,<payload>`. A payload with line
//! breaks continues on further `data:` lines (the SSE rule), which the SDK
//! reads as separate messages.
//!
//! It takes no batch slot (it would hold one for hours); the number of
//! subscriptions is bounded by the connections Redis accepts.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use http_body::Frame;
use tokio::sync::mpsc;

use super::response::UpstashError;
use super::routes::{admit, answer, guard_command_get};
use super::Family;
use crate::api::stream::AbortOnDrop;
use pipelab_engine::conn::{Conn, ConnSettings};

/// How long a subscription may wait for its next message before pipelab
/// closes it (the client then subscribes again).
const IDLE_LIMIT: Duration = Duration::from_secs(24 * 3600);

/// `SUBSCRIBE` (`pattern: false`) or `PSUBSCRIBE` the path's names.
pub async fn subscribe(state: State<super::Upstash>, req: Request) -> Response {
    match guard_command_get(&state, req, false).await {
        Ok(req) => answer(Family::Subscribe, open(state, req, b"SUBSCRIBE").await),
        Err(refused) => refused,
    }
}

pub async fn psubscribe(state: State<super::Upstash>, req: Request) -> Response {
    match guard_command_get(&state, req, false).await {
        Ok(req) => answer(Family::Subscribe, open(state, req, b"PSUBSCRIBE").await),
        Err(refused) => refused,
    }
}

async fn open(State(state): State<super::Upstash>, req: Request, verb: &'static [u8]) -> Result<Response, UpstashError> {
    let (access, _) = admit(&state, &req)?;
    let on = super::routes::backend(&state, super::routes::caller(&state, &req, access)).await?;
    let path = state.http.upstash.strip_prefix(req.uri().path());
    let names: Vec<Vec<u8>> = path
        .trim_matches('/')
        .split('/')
        .skip(1)
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).collect())
        .collect();
    if names.is_empty() {
        return Err(UpstashError::bad_request("ERR give at least one channel: /subscribe/<channel>"));
    }
    let settings = ConnSettings { read_timeout: IDLE_LIMIT, ..ConnSettings::plain(state.http.limits.connect_timeout()) };
    let mut conn = Conn::connect(on.pool.target(), &settings).await.map_err(|e| {
        UpstashError::new(axum::http::StatusCode::SERVICE_UNAVAILABLE, format!("ERR Redis is unreachable: {e}"))
    })?;
    let mut cmd = Vec::new();
    let mut argv: Vec<&[u8]> = vec![verb];
    argv.extend(names.iter().map(|n| n.as_slice()));
    resp::encode_command(argv, &mut cmd);
    conn.write(&cmd).await.map_err(|e| {
        UpstashError::new(axum::http::StatusCode::SERVICE_UNAVAILABLE, format!("ERR Redis is unreachable: {e}"))
    })?;
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let task = tokio::spawn(async move {
        while let Ok((reply, _)) = conn.read_reply().await {
            if tx.send(event(&reply)).await.is_err() {
                break;
            }
        }
    });
    let body = Events { rx, _guard: AbortOnDrop(task.abort_handle()) };
    let mut res = Body::new(body).into_response();
    let headers = res.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(res)
}

/// One pushed message as an SSE event: its fields joined by commas.
fn event(reply: &resp::Value) -> Bytes {
    let fields: Vec<String> = match reply.unattributed() {
        resp::Value::Array(items) | resp::Value::Push(items) => items.iter().map(field).collect(),
        other => vec![field(other)],
    };
    let text = fields.join(",");
    let mut out = String::with_capacity(text.len() + 8);
    for line in text.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

fn field(v: &resp::Value) -> String {
    match v {
        resp::Value::Integer(n) => n.to_string(),
        resp::Value::Simple(s) | resp::Value::Bulk(s) | resp::Value::Error(s) => String::from_utf8_lossy(s).into_owned(),
        other => other.display(),
    }
}

/// The event stream's body; dropping it (the client left) ends the
/// subscription's task, which closes its connection.
struct Events {
    rx: mpsc::Receiver<Bytes>,
    _guard: AbortOnDrop,
}

impl http_body::Body for Events {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        self.rx.poll_recv(cx).map(|m| m.map(|b| Ok(Frame::data(b))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_as_upstash_writes_them() {
        let msg = resp::Value::Array(vec![
            resp::Value::Bulk(b"message".to_vec()),
            resp::Value::Bulk(b"ch".to_vec()),
            resp::Value::Bulk(b"{\"a\":1}".to_vec()),
        ]);
        assert_eq!(event(&msg), Bytes::from("data: message,ch,{\"a\":1}\n\n"));
        let sub = resp::Value::Array(vec![
            resp::Value::Bulk(b"subscribe".to_vec()),
            resp::Value::Bulk(b"ch".to_vec()),
            resp::Value::Integer(1),
        ]);
        assert_eq!(event(&sub), Bytes::from("data: subscribe,ch,1\n\n"));
    }
}
