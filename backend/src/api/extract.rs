//! JSON request bodies with errors that name the field, within the
//! server's body-size limit.
//!
//! axum's own `Json` extractor answers bad input with plain text and no
//! field path; this one answers with the API's error shape, naming the JSON
//! path (`commands[0][2]`, `batch_size`) through `serde_path_to_error`.
//!
//! The limit is enforced here, where the body is read, rather than by
//! tower-http's `RequestBodyLimitLayer` plus a middleware rewriting its
//! plain-text 413: those two layers wrapped every request, and the router's
//! layers were about 6% of the server's CPU on one-command requests
//! (`bench/README-api.md`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;

use pipelab_http::error::{ApiCode, ApiError};
use super::incremental::IncrementalBody;
use super::json::{parse_json, HasCommands, RESERVE_MAX};
use super::validate::{Checked, Checker};
use super::AppState;

/// A JSON body of type `T`; rejections are [`ApiError`]s (400 or 413).
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        parse_json(&read_all(req, state).await?).map(ApiJson)
    }
}

/// The whole body, within the server's limit and the batch timeout
/// (413 / 408 as for every body).
pub async fn read_all(req: Request, state: &AppState) -> Result<Vec<u8>, ApiError> {
    let mut bytes = Vec::with_capacity(declared_length(&req, state)?.min(RESERVE_MAX));
    read_body(req, state, |data| bytes.extend_from_slice(&data)).await?;
    Ok(bytes)
}

/// [`ApiJson`] for a request with `commands`, parsed while the body
/// arrives ([`super::incremental`]); the same answers to bad input.
pub struct CommandsJson<T>(pub T);

/// Bodies of at least this many bytes are parsed on another serving thread
/// (another core) while this one receives them, so that receiving does not
/// wait for parsing; smaller ones here (a task and a channel would cost
/// more than they save).
const PARSE_ELSEWHERE: usize = 256 * 1024;

impl<T: HasCommands> FromRequest<AppState> for CommandsJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        read_commands(req, state, None).await.map(|(value, _)| CommandsJson(value))
    }
}

/// [`CommandsJson`]'s body, each command parsed handed to `checker` (if
/// any), with what it recorded (if the fast path took the body).
pub async fn read_commands<T: HasCommands>(req: Request, state: &AppState, checker: Option<Checker>) -> Result<(T, Option<Checked>), ApiError> {
    let expected = declared_length(&req, state)?;
    let body = if expected >= PARSE_ELSEWHERE {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        // Ends when `tx` is dropped: after the body, or with this request.
        let parser = state.http.engine.other_runtime().spawn(async move {
            let mut body = IncrementalBody::new(expected).with_checker(checker);
            while let Some(data) = rx.recv().await {
                body.feed(&data);
                // Encoding ahead is worth it only while the parse keeps up
                // with the body: behind, it would delay the first write.
                if !rx.is_empty() {
                    body.behind();
                }
            }
            body
        });
        read_body(req, state, |data| {
            let _ = tx.send(data);
        })
        .await?;
        drop(tx);
        // Only a shutdown past its grace period cancels the parse.
        parser.await.map_err(|_| {
            ApiError::new(ApiCode::ShuttingDown, "the server is shutting down; nothing was run")
        })?
    } else {
        let mut body = IncrementalBody::new(expected).with_checker(checker);
        read_body(req, state, |data| body.feed(&data)).await?;
        body
    };
    match body.finish_checked::<T>() {
        Ok(done) => Ok(done),
        Err(bytes) => parse_json(&bytes).map(|value| (value, None)),
    }
}

/// The body's declared length (0 if not declared). One over the limit is
/// refused before reading.
pub(super) fn declared_length(req: &Request, state: &AppState) -> Result<usize, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    if declared > state.http.limits.max_body_bytes as u64 {
        return Err(body_too_large());
    }
    Ok(declared as usize)
}

/// Hands each piece of the body to `on_data` as it arrives; a body (e.g.
/// chunked) that passes the limit is cut there with a 413, and a client
/// that sends nothing for the batch timeout gets a 408.
async fn read_body(req: Request, state: &AppState, mut on_data: impl FnMut(Bytes)) -> Result<(), ApiError> {
    let limit = state.http.limits.max_body_bytes;
    let wait = state.http.limits.batch_timeout();
    let mut body = req.into_body();
    let mut total = 0usize;
    loop {
        let Ok(frame) = tokio::time::timeout(wait, body.frame()).await else {
            return Err(ApiError::field(
                ApiCode::BodyTimeout,
                "request body",
                format!("no data for {} ms (the batch timeout); send the body without pauses", wait.as_millis()),
            ));
        };
        let Some(frame) = frame else { break };
        let frame =
            frame.map_err(|err| ApiError::field(ApiCode::InvalidBody, "request body", format!("could not be read: {err}")))?;
        if let Ok(data) = frame.into_data() {
            total += data.len();
            if total > limit {
                return Err(body_too_large());
            }
            on_data(data);
        }
    }
    Ok(())
}

/// The 413 answer.
pub fn body_too_large() -> ApiError {
    ApiError::field(
        ApiCode::BodyTooLarge,
        "request body",
        "larger than the server's limit (see GET /api/v1/info, limits.max_body_bytes)",
    )
}

#[cfg(test)]
mod timing {
    /// Not a check: how long reading and validating a 100k-command batch
    /// takes, by step (`cargo test --release -p pipelab --bin pipelab
    /// parse_timing -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn parse_timing() {
        use super::super::batch::BatchRequest;
        use super::super::incremental::IncrementalBody;
        let cmds: Vec<Vec<String>> = (0..100_000)
            .map(|i| vec!["SET".into(), format!("key:{i:06}"), format!("value:{i:06}")])
            .collect();
        let body =
            serde_json::to_vec(&serde_json::json!({"commands": cmds, "mode": "pipeline"})).unwrap();
        let limits = <pipelab_http::config::Limits as clap::FromArgMatches>::from_arg_matches(
            &<pipelab_http::config::Limits as clap::Args>::augment_args(clap::Command::new("x"))
                .get_matches_from(["x"]),
        )
        .unwrap();
        let rounds = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
        for _ in 0..rounds {
            let t = std::time::Instant::now();
            let _: BatchRequest = super::super::json::parse_json(&body).unwrap();
            let serde = t.elapsed();
            let t = std::time::Instant::now();
            let mut inc = IncrementalBody::new(body.len());
            for piece in body.chunks(64 * 1024) {
                inc.feed(piece);
            }
            let req: BatchRequest = inc.finish().unwrap_or_else(|_| panic!("declined"));
            let fast = t.elapsed();
            let t = std::time::Instant::now();
            let fields = super::super::validate::BatchFields {
                commands: req.commands,
                ..Default::default()
            };
            let prepared = fields.prepare(&limits).unwrap();
            let prepare = t.elapsed();
            let t = std::time::Instant::now();
            let rules = super::super::refuse::Rules {
                table: pipelab_engine::commands::fallback::table(),
                access: Default::default(),
                allow: Default::default(),
            };
            let batch = prepared.into_batch(pipelab_model::Mode::Pipeline, &limits, &rules).unwrap();
            let into_batch = t.elapsed();
            let t = std::time::Instant::now();
            pipelab_engine::exec::validate(&batch, &rules.table).unwrap();
            eprintln!(
                "serde_json {serde:?}, incremental {fast:?}; prepare {prepare:?}, into_batch {into_batch:?}, \
                 executor's validate {:?} ({} commands)",
                t.elapsed(),
                batch.commands.len()
            );
        }
    }
}
