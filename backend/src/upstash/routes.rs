//! The Upstash routes' handlers: each checks the method (HEAD, GET, POST
//! and PUT only: 405 otherwise), the token, parses its commands, runs them
//! ([`super::run`]) and writes Upstash's shape ([`super::response`]).
//!
//! Under the root (no `--upstash-prefix`), the playground shares the paths:
//! `GET /` is the page and `POST /` a command; a `GET` whose first path
//! segment names a playground file, or is not a command the server knows
//! (`/lessons/3`), is the playground's too; any other `GET /cmd/…` and
//! every `POST` or `PUT` is a path-style command.

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::response::{self, write_entry, write_resp2, Format, Outcome, UpstashError};
use super::run::{run, server_timing};
use super::Family;
use pipelab_http::auth::Access;
use pipelab_http::rate::{take_commands, Client};
use pipelab_engine::engine::Backend;
use pipelab_http::caller::Caller;
use crate::api::AppState;
use pipelab_engine::sandbox::VisitorId;
use pipelab_engine::exec::{Commands, Report, Status, TransactionStatus};
use pipelab_model::Mode;

/// `/` (or the prefix itself): `GET` the playground (under the root), `POST`
/// or `PUT` one JSON command.
pub async fn root(State(state): State<super::Upstash>, req: Request) -> Response {
    let page = is_reading(&req) && state.http.upstash.prefix.is_none();
    match guard_command_get(&state, req, page).await {
        Ok(req) => answer(Family::Command, command(&state, req).await),
        Err(res) => res,
    }
}

fn is_reading(req: &Request) -> bool {
    matches!(*req.method(), Method::GET | Method::HEAD)
}

/// Under the root, a GET that is a playground `page` is served as a file
/// (`Err` with the file's response). A GET that runs a command is guarded
/// as a POST is (the guard layer lets GETs through for the playground's
/// files): `Err` with the refusal when it comes from another site.
pub(super) async fn guard_command_get(state: &AppState, req: Request, page: bool) -> Result<Request, Response> {
    if page {
        return Err(crate::api::web::serve(State(state.clone()), req).await);
    }
    if is_reading(&req) {
        state.http.guard.check_cross_site(req.uri().path(), req.headers()).map_err(IntoResponse::into_response)?;
    }
    Ok(req)
}

async fn command(state: &super::Upstash, req: Request) -> Result<Response, UpstashError> {
    let (access, format) = admit(state, &req)?;
    let on = backend(state, caller(state, &req, access)).await?;
    let client = Client::of(&req);
    let body = crate::api::extract::read_all(req, state).await?;
    let mut commands = Commands::new();
    super::request::json_command(&body, &mut commands)?;
    take_commands(&state.http, client.as_ref(), commands.len())?;
    let report = run(state, &on, access, commands, Mode::Pipeline).await?;
    Ok(single(&report, format))
}

/// `/pipeline`: a JSON array of commands, one entry per command, errors in place.
pub async fn pipeline(State(state): State<super::Upstash>, req: Request) -> Response {
    answer(Family::Pipeline, batch(&state, req, Mode::Pipeline).await)
}

/// `/multi-exec`: a JSON array of commands run as MULTI/EXEC.
pub async fn multi_exec(State(state): State<super::Upstash>, req: Request) -> Response {
    answer(Family::MultiExec, batch(&state, req, Mode::Transaction).await)
}

async fn batch(state: &super::Upstash, req: Request, mode: Mode) -> Result<Response, UpstashError> {
    let (access, format) = admit(state, &req)?;
    if format.resp2 && mode == Mode::Transaction {
        return Err(UpstashError::bad_request(
            "ERR Upstash-Response-Format: resp2 is not supported with /multi-exec",
        ));
    }
    let on = backend(state, caller(state, &req, access)).await?;
    let client = Client::of(&req);
    let body = crate::api::extract::read_all(req, state).await?;
    let mut commands = Commands::new();
    super::request::json_commands(&body, &mut commands)?;
    if commands.is_empty() {
        return Err(UpstashError::bad_request("ERR empty pipeline: give at least one command"));
    }
    take_commands(&state.http, client.as_ref(), commands.len())?;
    let report = run(state, &on, access, commands, mode).await?;
    if mode == Mode::Transaction {
        transaction(&report, format)
    } else {
        Ok(entries(&report, format))
    }
}

/// `/{command}/{args…}`: a path-style command (or, under the root, a
/// playground file: see the module's docs).
pub async fn path_style(State(state): State<super::Upstash>, req: Request) -> Response {
    let page = state.http.upstash.prefix.is_none()
        && is_reading(&req)
        && !is_command_path(&state, req.uri().path().to_string()).await;
    match guard_command_get(&state, req, page).await {
        Ok(req) => answer(Family::Path, path_command(&state, req).await),
        Err(res) => res,
    }
}

async fn path_command(state: &super::Upstash, req: Request) -> Result<Response, UpstashError> {
    let (access, format) = admit(state, &req)?;
    let on = backend(state, caller(state, &req, access)).await?;
    let path = state.http.upstash.strip_prefix(req.uri().path()).to_string();
    let query = req.uri().query().map(str::to_string);
    let client = Client::of(&req);
    let body = crate::api::extract::read_all(req, state).await?;
    let mut commands = Commands::new();
    super::request::path_command(&path, query.as_deref(), &body, &mut commands)?;
    take_commands(&state.http, client.as_ref(), commands.len())?;
    let report = run(state, &on, access, commands, Mode::Pipeline).await?;
    Ok(single(&report, format))
}

/// Under the root: does this GET name a command rather than a page? Not
/// if its first segment is a playground file, or not a command the server
/// knows (its command table, `api::refuse::Rules::of`; the built-in one
/// while Redis cannot be asked).
async fn is_command_path(state: &AppState, path: String) -> bool {
    let path = path.trim_start_matches('/');
    let first = path.split('/').next().unwrap_or("");
    let name: Vec<u8> = percent_encoding::percent_decode_str(first).collect();
    if name.is_empty() || state.page.has(&String::from_utf8_lossy(&name)) {
        return false;
    }
    state.http.engine.commands().await.get(&name).is_some()
}

/// The Redis that serves `caller` (in the sandbox: its visitor's).
pub async fn backend(state: &AppState, caller: Caller) -> Result<Backend, UpstashError> {
    Ok(state.backend(&caller).await?)
}

/// Who sent `req`, with `access` (the token checked in Upstash's way): the
/// sandbox visitor the gate found, and the client its batches count against.
pub fn caller(state: &AppState, req: &Request, access: Access) -> Caller {
    let visitor = req.extensions().get::<VisitorId>().cloned();
    let share = pipelab_http::caller::client_key(&state.http, req.headers(), req.uri(), req.extensions());
    Caller { access, visitor, client: None, share }
}

/// The method and token checks every Upstash route makes first, and the
/// request's response format.
pub fn admit(state: &AppState, req: &Request) -> Result<(Access, Format), UpstashError> {
    if !matches!(*req.method(), Method::GET | Method::HEAD | Method::POST | Method::PUT) {
        return Err(UpstashError::method_not_allowed(req.method()));
    }
    let access = state.http.auth.check_request(req.headers(), req.uri()).map_err(|_| UpstashError::unauthorized())?;
    Ok((access, Format::of(req.headers())?))
}

/// The response, marked with its endpoint family (for `/metrics`).
pub fn answer(family: Family, result: Result<Response, UpstashError>) -> Response {
    let mut res = result.unwrap_or_else(IntoResponse::into_response);
    res.extensions_mut().insert(family);
    res
}

/// One command's answer: 200 `{"result"}`, 400 `{"error"}` for an error
/// reply, 503 when the command was not sent or its outcome is unknown.
fn single(report: &Report, format: Format) -> Response {
    let result = &report.results[0];
    let outcome = Outcome::of(result, report.connection_error.as_deref());
    let status = match result.status {
        Status::Ok => StatusCode::OK,
        Status::Error => StatusCode::BAD_REQUEST,
        Status::NotSent | Status::Unknown => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut out = Vec::with_capacity(64);
    let mut res = if format.resp2 {
        write_resp2(&mut out, &outcome);
        response::octets(out)
    } else {
        write_entry(&mut out, &outcome, format);
        response::json(out)
    };
    *res.status_mut() = status;
    timed(res, report)
}

/// A pipeline's answer: 200, one entry per command in order (or their
/// RESP2 replies one after the other).
fn entries(report: &Report, format: Format) -> Response {
    let mut out = Vec::with_capacity(report.results.len() * 24);
    if format.resp2 {
        for r in &report.results {
            write_resp2(&mut out, &Outcome::of(r, report.connection_error.as_deref()));
        }
        return timed(response::octets(out), report);
    }
    out.push(b'[');
    for (i, r) in report.results.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_entry(&mut out, &Outcome::of(r, report.connection_error.as_deref()), format);
    }
    out.push(b']');
    timed(response::json(out), report)
}

/// A transaction's answer: EXEC's results as a pipeline's entries (a
/// command that failed at run time, WRONGTYPE, has its error in place:
/// Redis has no rollback); a discarded transaction (EXECABORT, a command
/// rejected at queue time) is 400 with one `{"error"}`; one whose outcome
/// is unknown 503.
fn transaction(report: &Report, format: Format) -> Result<Response, UpstashError> {
    let Some(t) = &report.transaction else { return Ok(entries(report, format)) };
    let message = t.message.clone().unwrap_or_default();
    let err = match t.status {
        TransactionStatus::Committed => return Ok(entries(report, format)),
        TransactionStatus::Aborted => {
            let why = match t.rejected.first() {
                Some(r) => format!("command {} was rejected at queue time: {}", r.index, r.message),
                None => message,
            };
            UpstashError::bad_request(format!("EXECABORT Transaction discarded because of previous errors: {why}"))
        }
        TransactionStatus::WatchConflict => UpstashError::new(StatusCode::CONFLICT, format!("ERR {message}")),
        TransactionStatus::Unknown => UpstashError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("ERR outcome unknown: {message}; the transaction may or may not have run"),
        ),
    };
    Ok(timed(err.into_response(), report))
}

/// Adds the report's `Server-Timing`.
fn timed(mut res: Response, report: &Report) -> Response {
    res.headers_mut().insert(super::SERVER_TIMING, server_timing(report));
    res
}
