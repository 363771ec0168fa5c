//! `GET /api/v1/commands`: every command of the server with its summary,
//! arguments, syntax line and arity (`pipelab_engine::commands::docs`), for the
//! page's autocompletion, hover and arity check. Read from the server
//! (`COMMAND DOCS`) once per server run (`run_id`), then served from memory.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use super::run::command;
use super::AppState;
use pipelab_engine::commands::docs::{docs, CommandDoc};

/// The server's commands, for people.
#[derive(Debug, Serialize, ToSchema)]
pub struct CommandsResponse {
    /// The server they were read from (`redis`, `valkey`, `redict`); absent if unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Its own version (`valkey_version` for Valkey, not the
    /// `redis_version` it keeps for compatibility); absent if unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// False when the server gave no `COMMAND DOCS` (Redis 6, or it did not
    /// answer): names and arities only, from the command table.
    pub documented: bool,
    /// Sorted by name; a container's subcommands are entries of their own (`CLIENT KILL`).
    pub commands: Vec<CommandDoc>,
}

/// The answer last built, and the server run it was built for.
#[derive(Default)]
pub struct DocsCache(Mutex<Option<(String, Arc<[u8]>)>>);

/// Commands with summaries, arguments and arity.
#[utoipa::path(
    get,
    path = "/api/v1/commands",
    tag = "server",
    responses((status = 200, description = "The server's commands", body = CommandsResponse))
)]
pub async fn commands(State(state): State<AppState>, caller: pipelab_http::caller::Caller) -> Response {
    let wait = state.http.limits.connect_timeout().min(Duration::from_secs(2));
    // The caller's Redis (in the sandbox, a spare's if they have none yet: one binary, one table).
    let on = match state.backend_to_look(&caller).await {
        Ok(on) => on,
        Err(e) => return e.into_response(),
    };
    let table = on.probe().commands_loaded(wait).await;
    let run = table.identity().map(|i| i.run_id.clone());
    if let (Some(run), Some((cached_run, body))) = (&run, state.docs.0.lock().expect("docs lock").as_ref()) {
        if run == cached_run {
            return json(body.clone());
        }
    }
    let reply = command(on.probe(), &[b"COMMAND", b"DOCS"], wait).await.ok().filter(|v| !v.is_error());
    let answer = CommandsResponse {
        server: table.identity().map(|i| i.server.clone()),
        version: table.identity().map(|i| i.version.clone()),
        documented: reply.is_some(),
        commands: docs(&table, reply.as_ref()),
    };
    let body: Arc<[u8]> = serde_json::to_vec(&answer).expect("serializable").into();
    // Kept only when read from a known server run with its docs: a table
    // still built in (Redis unreachable) or a failed COMMAND DOCS is asked again.
    if let (Some(run), true) = (run, answer.documented) {
        *state.docs.0.lock().expect("docs lock") = Some((run, body.clone()));
    }
    json(body)
}

fn json(body: Arc<[u8]>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], axum::body::Bytes::from_owner(body)).into_response()
}
