#!/usr/bin/env bash
# The Rust half of the build: the release `pipelab` binary and the wasm
# module (web/src/wasm-pkg), installing the wasm32 target and the pinned
# wasm-bindgen-cli when missing. The Dockerfile's Rust stage runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --run
PIPELAB_SKIP_PAGE=1 scripts/build-web.sh
cargo build --release --locked -p pipelab
