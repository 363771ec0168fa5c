#!/usr/bin/env bash
# Builds what `pipelab serve` needs: the release binary, the wasm module and
# the web playground (web/dist). The Dockerfile runs the same two scripts in
# its Rust and Node stages, so what CI tests here is what the image builds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-rust.sh
PIPELAB_SKIP_WASM=1 scripts/build-web.sh
echo "built target/release/pipelab and web/dist" >&2
