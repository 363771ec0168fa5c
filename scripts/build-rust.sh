#!/usr/bin/env bash
# The Rust half of the build: the release `pipelab` binary, the wasm
# module (web/src/wasm-pkg) and the API's OpenAPI document for the page's
# types (web/src/api/openapi.json, printed by that binary), installing the
# wasm32 target and the pinned wasm-bindgen-cli when missing. The
# Dockerfile's Rust stage runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo's output directory, as cargo sees it (CARGO_TARGET_DIR or ./target), absolute.
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target
scripts/setup.sh --run
cargo build --release --locked -p pipelab
PIPELAB_BIN="$target/release/pipelab" PIPELAB_SKIP_PAGE=1 scripts/build-web.sh
