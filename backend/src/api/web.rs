//! The page at `/` and on every path no route takes (`crate::server`'s
//! fallback): the playground's files ([`pipelab_http::page`]).

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use pipelab_http::page::{missing_page, NotBuilt};

use super::AppState;

pub async fn serve(State(state): State<AppState>, req: Request) -> Response {
    match state.page.respond(req, "index.html").await {
        Ok(res) => res,
        Err(NotBuilt) => (StatusCode::NOT_FOUND, Html(missing_page(&state.page))).into_response(),
    }
}
