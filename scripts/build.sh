#!/usr/bin/env bash
# Builds what `pipelab serve` needs: the release binary and the web
# playground (wasm module + Vite bundle in web/dist). The Dockerfile runs
# this same script, so what CI tests here is what the image builds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --run
if [ -x scripts/build-web.sh ]; then scripts/build-web.sh; fi
cargo build --release --locked -p pipelab
echo "built target/release/pipelab and web/dist" >&2
