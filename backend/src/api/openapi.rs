//! `GET /api/v1/openapi.json`: the OpenAPI 3.1 document, generated from the
//! handlers' and types' annotations (utoipa), with examples.

use axum::Json;
use utoipa::OpenApi;

use super::{batch, commands, compare, info, kept, live, schema, session, sweep};
use pipelab_http::error;
use pipelab_engine::exec;
use error::CodeStatuses;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "pipelab API",
        description = "Run Redis command batches sequentially, pipelined or as MULTI/EXEC, \
            measured per command, or auto-pipelined by simulated concurrent callers (`mode: auto`). Every error is `{\"error\": {\"code\", \"message\", \"field\"}}`. \
            Each batch has its own Redis connection, only while it runs (unless it names a \
            session, `POST /api/v1/sessions`, whose connection keeps its state between batches); commands that change \
            the connection itself (SELECT, HELLO, AUTH, QUIT, RESET, MONITOR, SUBSCRIBE and \
            friends, blocking commands with timeout 0) are refused. /compare runs the batch \
            once per mode, so its side effects repeat. With tokens configured (`--token`, \
            `--readonly-token`) every /api/v1 endpoint needs `Authorization: Bearer TOKEN` or \
            `?_token=TOKEN` (else 401 `unauthorized`). {READONLY_RULE} With `--sandbox` each visitor (the `pipelab_sandbox` cookie) \
            has a redis-server of their own: every request of theirs runs there, and \
            commands that administer a server answer 400 `refused_command`. The same server also speaks Upstash's REST protocol (`POST /`, \
            path-style `/cmd/arg`, `/pipeline`, `/multi-exec`, `/subscribe/<channel>`, or under \
            `--upstash-prefix`), in Upstash's own shapes, outside this document: see the \
            repository's docs/upstash.md.",
    ),
    paths(batch::batch, live::start, live::cancel, compare::compare, sweep::sweep, session::create, batch::on_session, session::delete, info::info, commands::commands, openapi_json),
    components(schemas(
        error::ErrorBody, error::ErrorDetail, error::ApiCode,
        schema::Arg, pipelab_model::Mode, kept::Keep, exec::OnError, exec::reply_schema::Reply, exec::Status,
        exec::CommandResult, exec::Summary, exec::TransactionOutcome, exec::TransactionStatus, exec::Rejected,
        exec::Report, exec::auto::AutoSummary, exec::server::ServerWork,
        session::SessionRequest, session::SessionResponse,
        live::StartLine, live::CancelResponse,
    )),
    modifiers(&CodeStatuses, &ReadonlyRule),
    tags(
        (name = "batches", description = "Run commands against Redis"),
        (name = "sessions", description = "A Redis connection kept between batches (WATCH, MULTI state)"),
        (name = "server", description = "About this server"),
    )
)]
pub struct ApiDoc;

/// Puts [`pipelab_http::auth::READONLY_RULE`] in the description, so that
/// the document says what the code does in the words docs/api.md uses.
struct ReadonlyRule;

impl utoipa::Modify for ReadonlyRule {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        if let Some(d) = doc.info.description.as_mut() {
            *d = d.replace("{READONLY_RULE}", pipelab_http::auth::READONLY_RULE);
        }
    }
}

/// This document.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    tag = "server",
    responses((status = 200, description = "OpenAPI 3.1 document", content_type = "application/json"))
)]
pub async fn openapi_json() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
