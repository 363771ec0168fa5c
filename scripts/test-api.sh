#!/usr/bin/env bash
# Smoke run of `pipelab serve` as a user starts it: no --redis (its own
# redis-server), probes answered, clean exit on SIGTERM with the child
# redis-server gone. The API's unit and integration tests (each endpoint and
# mode, bad input, Redis restarts, disconnects, concurrency, limits) run in
# `cargo test --workspace` (scripts/test.sh); run them alone with
#   cargo test -p pipelab --test api_endpoints --test api_bad_input --test api_resilience
set -euo pipefail
cd "$(dirname "$0")/.."

command -v redis-server >/dev/null || { echo "redis-server missing: run scripts/setup.sh" >&2; exit 1; }
cargo build -q --locked -p pipelab

bin=target/debug/pipelab
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$bin" serve --listen "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
  "$bin" healthcheck --url "http://127.0.0.1:$port/readyz" --timeout-ms 200 2>/dev/null && break
  sleep 0.1
done
"$bin" healthcheck --url "http://127.0.0.1:$port/readyz"
"$bin" healthcheck --url "http://127.0.0.1:$port/healthz"
socket=$(sed -n 's/.*(Redis: unix:\/\/\(.*\))$/\1/p' "$log" | head -1)
[ -S "$socket" ] || { echo "smoke: no embedded redis socket in: $(cat "$log")" >&2; exit 1; }
kill -TERM "$pid"
wait "$pid" || { echo "smoke: pipelab serve exited with $? on SIGTERM" >&2; exit 1; }
[ ! -e "$socket" ] || { echo "smoke: $socket still there after exit" >&2; exit 1; }
echo "api tests passed"
