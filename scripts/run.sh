#!/usr/bin/env bash
# The main job: build (installing what is missing), then start
# `pipelab serve` with its own redis-server and the playground at
# http://127.0.0.1:8080 (extra arguments go to `pipelab serve`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec target/release/pipelab serve "$@"
