#!/usr/bin/env bash
# Runs every pipelab test: installs what is missing (scripts/setup.sh), then
# the Rust workspace tests (against real redis-servers the tests start on
# free ports), the wasm32 build of `resp`, and each part's own suite
# (scripts/test-*.sh: hiredis differential and fuzzing, the web page in
# headless Chromium). This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
export CARGO_TERM_COLOR=never
cargo build --workspace --all-targets --locked
cargo test --workspace --locked
for part in scripts/test-*.sh; do
  [ -e "$part" ] || continue
  echo "=== $part"
  bash "$part"
done
echo "all pipelab tests passed"
