//! `pipelab openapi`: prints the OpenAPI 3.1 document that `pipelab serve`
//! answers at `GET /api/v1/openapi.json` (`pipelab_server::api::openapi::ApiDoc`),
//! without starting a server. `scripts/build-web.sh` generates the page's
//! TypeScript types of the API from it (`web/src/api/schema.d.ts`).

use super::input::Exit;
use pipelab_server::api::openapi::ApiDoc;
use std::io::Write;
use utoipa::OpenApi;

pub fn run() -> Exit {
    let doc = match ApiDoc::openapi().to_pretty_json() {
        Ok(doc) => doc,
        Err(e) => {
            // A document that does not serialise is a bug in its annotations.
            eprintln!("pipelab openapi: cannot serialise the document: {e}");
            return Exit::ErrorReplies;
        }
    };
    writeln!(std::io::stdout().lock(), "{doc}").map_or_else(Exit::from_io, |()| Exit::Ok)
}
