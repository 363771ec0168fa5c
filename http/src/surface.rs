//! The HTTP surfaces behind the gate and how each words a refusal: below
//! the gate and the rules it applies, which answer in a surface's shape.

use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// One HTTP surface behind the gate (the API, Upstash's): the paths it
/// serves, and how it words a refusal the gate finds before its handler
/// runs (a rate limit), so that a client gets the error shape it parses.
pub trait Surface: Send + Sync {
    /// True if `path` (the request's, without its query) is one of this surface's.
    fn serves(&self, path: &str) -> bool;
    /// `e` (its status and message kept) in this surface's error body.
    fn refusal(&self, e: ApiError) -> Response;
}

/// The API's surface: `/api/v1/*` and `/metrics`, refused in [`ApiError`]'s shape.
pub struct ApiSurface;

impl Surface for ApiSurface {
    fn serves(&self, path: &str) -> bool {
        path == "/metrics" || path == "/api/v1" || path.starts_with("/api/v1/")
    }

    fn refusal(&self, e: ApiError) -> Response {
        e.into_response()
    }
}
