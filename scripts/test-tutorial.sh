#!/usr/bin/env bash
# Tests of the tutorial: export generators run for real against a
# real redis-server (RESP via redis-cli --pipe, redis-py, ioredis, redis-rb,
# the Rust redis crate in web/test/export-rs; Go and Java parsed by gofmt and
# javac's parser), permalink
# encode/decode, and every lesson (their verdicts recomputed from the figures
# they show), the compare and sweep views, the permalink round trip, each
# export format and the playground's interactive console on a session
# (web/test/tutorial-e2e/interactive.test.mjs: its own `pipelab serve` with a
# short --session-idle-ms) and lesson 10 watching an application live through
# its own `pipelab serve --doctor-listen` (web/test/tutorial-e2e/doctor-live.test.mjs)
# end to end in headless Debian Chromium against `pipelab serve`.
# Screenshots: artifacts/tutorial-*.png, artifacts/interactive-*.png.
#
# Installs what it needs when missing (idempotent): PyPI redis and requests, npm packages of
# web/ (ioredis is a devDependency); scripts/setup.sh installs Debian's
# ruby-redis, golang-go and default-jdk-headless. The Rust redis crate comes
# from crates.io on the first build of web/test/export-rs (not a workspace member).
#   PIPELAB_SANDBOX=1 PIPELAB_E2E_EMBEDDED=1   run the lessons against a sandboxed `pipelab serve`
#                      on its own redis-server (as a public deployment runs): only
#                      web/test/tutorial-e2e/tutorial.test.mjs (every lesson, the compare and
#                      sweep views, the sandbox note, lesson 10's fallback); the other suites
#                      never reach the sandbox (export generators, permalinks), need a second
#                      client on the Redis itself (the interactive console's WATCH and CLIENT
#                      KILL) or a doctor, which the sandbox refuses
#   PIPELAB_WEB_BUILT=1   skip scripts/build-web.sh: web/dist was built by the step before
#   PIPELAB_BIN=path   use this pipelab binary instead of building target/debug/pipelab (under CARGO_TARGET_DIR if set)
#   PIPELAB_JEDIS_CLASSPATH=cp   also compile and run the Jedis snippets (Jedis is not in
#                                Debian; Maven Central is unreachable)
#   PIPELAB_GOREDIS_MODDIR=dir   also build and run the go-redis snippets: dir holds a go.mod
#                                requiring github.com/redis/go-redis/v9 that resolves offline
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo's output directory, as cargo sees it (CARGO_TARGET_DIR or ./target), absolute.
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target
log() { printf '[test-tutorial] %s\n' "$*" >&2; }

for tool in node npm redis-server redis-cli python3 cargo wasm-bindgen; do
  command -v "$tool" >/dev/null || { log "$tool not found (run scripts/setup.sh)"; exit 1; }
done
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { log "${CHROMIUM:-/usr/bin/chromium} not found (run scripts/setup.sh)"; exit 1; }

if ! python3 -c 'import redis' 2>/dev/null; then
  log "pip install redis"
  python3 -m pip install -q --disable-pip-version-check redis==8.1.0
fi
# The HTTP exports' Python program (web/test/tutorial-e2e/export-http.test.mjs).
if ! python3 -c 'import requests' 2>/dev/null; then
  log "pip install requests"
  python3 -m pip install -q --disable-pip-version-check requests==2.32.3
fi

# The wasm module and the page (web/dist); npm ci when web/node_modules is stale.
# PIPELAB_WEB_BUILT=1: web/dist is the one a previous step just built (scripts/test.sh's sandboxed part).
[ "${PIPELAB_WEB_BUILT:-0}" = 1 ] || scripts/build-web.sh
if [ -z "${PIPELAB_BIN:-}" ]; then
  cargo build -q -p pipelab
  export PIPELAB_BIN="$target/debug/pipelab"
fi
mkdir -p artifacts
cd web
case "${PIPELAB_SANDBOX:-}" in
  1|true|yes|on) suites=(test/tutorial-e2e/tutorial.test.mjs) ;;
  *) suites=(test/tutorial/ test/tutorial-e2e/) ;;
esac
node --test --test-concurrency=1 "${suites[@]}"
