#!/usr/bin/env bash
# Tests of the playground: the wasm module in Node (acceptance vectors, round
# trips, errors) and the page end to end in headless Debian Chromium against
# `pipelab serve` with a real redis-server (each started on a free port), at
# a desktop's size and a phone's (1400×1000, 390×844), also behind tokens and
# in the sandbox; the timeline's lanes on a real 3-master Redis Cluster
# (scripts/lib/cluster.sh); an accessibility pass with axe-core over the
# playground, the tutorial and the doctor's page (test/a11y/), which also
# takes the README's tour screenshots (artifacts/tour-*.png).
# Screenshots land in artifacts/ (git-ignored). Run from anywhere.
#
# Needs: what scripts/setup.sh installs (wasm32 target, wasm-bindgen-cli,
# redis-server, chromium); npm packages are installed here (npm ci) when missing.
#   PIPELAB_BIN=path   use this pipelab binary instead of building target/debug/pipelab (under CARGO_TARGET_DIR if set)
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo's output directory, as cargo sees it (CARGO_TARGET_DIR or ./target), absolute.
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target

for tool in node npm redis-server wasm-bindgen; do
  command -v "$tool" >/dev/null || { echo "test-web: $tool not found (run scripts/setup.sh)" >&2; exit 1; }
done
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "test-web: ${CHROMIUM:-/usr/bin/chromium} not found (run scripts/setup.sh)" >&2; exit 1; }

scripts/build-web.sh
if [ -z "${PIPELAB_BIN:-}" ]; then
  cargo build -q -p pipelab
  export PIPELAB_BIN="$target/debug/pipelab"
fi
mkdir -p artifacts
cd web
node --test --test-concurrency=1 test/wasm/ test/e2e/ test/doctor-e2e/ test/cluster-e2e/ test/a11y/
