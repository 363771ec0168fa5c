//! What `pipelab serve` serves, and the in-process tests drive with tower's
//! `oneshot`: the API's routes (`crate::api`), the Upstash surface's
//! (`crate::upstash`) and the page's files at `/`, every request through
//! one gate (`pipelab_http::gate`). The one place that knows every surface:
//! neither surface imports the other's routes.

use axum::Router;

use pipelab_http::gate::Gate;
use pipelab_http::surface::ApiSurface;
use crate::api::AppState;

/// The routes behind the gate. A tower service rather than a `Router`: see
/// `pipelab_http::gate` for why the rules are not `Router::layer`s.
pub type App = Gate<Router>;

/// Every route of `state`'s server, behind the gate; a refusal the gate
/// finds is worded by the surface that serves its path.
pub fn router(state: AppState) -> App {
    let upstash = crate::upstash::Surface::new(&state.http.upstash);
    let routes = crate::api::routes(&state).fallback(crate::api::web::serve).with_state(state.clone()).merge(crate::upstash::router(&state));
    Gate::new(state.http.clone(), routes, vec![Box::new(ApiSurface), Box::new(upstash)])
}
