#!/usr/bin/env bash
# Builds what `pipelab serve` needs: the release binary, the wasm module and
# the web playground (web/dist), which the binary carries (http/build.rs).
# The page's API types come from the binary (`pipelab openapi`), so the
# binary is built first, then the page, then the binary again with the page
# in it (only the server crate and the binary are compiled again, and only when web/dist
# changed). The Dockerfile runs the same two scripts in its Rust and Node
# stages, so what CI tests here is what the image builds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-rust.sh
PIPELAB_SKIP_WASM=1 scripts/build-web.sh
cargo build --release --locked -p pipelab
echo "built target/release/pipelab with web/dist in it" >&2
