//! Builds pipelab again when the page changes: `api::web` embeds web/dist
//! (rust-embed), whose generated code names only the files there at
//! compile time, so cargo would miss a page built later (scripts/build.sh
//! builds the binary first, whose `pipelab openapi` the page's types come
//! from, then the page, then the binary again).

use std::path::Path;

fn main() {
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/dist");
    // A path cargo watches must exist, or cargo builds again on every run:
    // an empty folder stands for "no page yet" until build-web.sh fills it.
    if !dist.exists() {
        if let Err(e) = std::fs::create_dir_all(&dist) {
            println!("cargo:warning=cannot create {} ({e}): a page built later needs `touch http/build.rs` to be embedded", dist.display());
        }
    }
    if dist.exists() {
        println!("cargo:rerun-if-changed={}", dist.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}
