#!/usr/bin/env bash
# Runs every pipelab test: installs what is missing (scripts/setup.sh), then
# - `cargo test --workspace`: the resp codec (unit, property, vectors,
#   differential against hiredis / redis-server / redis-cli), the executor,
#   the REST API, operations and the CLI, against real redis-servers the
#   tests start on free ports;
# - each part's own suite: resp on wasm32 and fuzzing (test-resp.sh),
#   the wasm module in Node and the
#   playground and tutorial in headless Chromium (test-web.sh,
#   test-tutorial.sh), the build scripts the Dockerfile calls and the built
#   binary started as a user starts it (test-deploy.sh), the official
#   Upstash SDKs (npm, PyPI) against `pipelab serve` (test-upstash.sh).
# This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
export CARGO_TERM_COLOR=never
cargo build --workspace --all-targets --locked
cargo test --workspace --locked
for part in resp web tutorial deploy upstash; do
  echo "=== scripts/test-$part.sh"
  bash "scripts/test-$part.sh"
done
echo "all pipelab tests passed"
