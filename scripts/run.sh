#!/usr/bin/env bash
# The main job: build (installing what is missing), then start
# `pipelab serve` with its own redis-server and the playground at
# http://127.0.0.1:8080 (extra arguments go to `pipelab serve`).
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo's output directory, as cargo sees it (CARGO_TARGET_DIR or ./target), absolute.
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target
scripts/build.sh
exec "$target/release/pipelab" serve "$@"
