#!/usr/bin/env bash
# The Docker image's start-up logic (scripts/docker-entrypoint.sh) with a
# real pipelab binary, as the image runs it: PIPELAB_LISTEN on 0.0.0.0.
# - no token: the sandbox is on (GET /api/v1/info has `sandbox`, a cookie is set);
# - PIPELAB_TOKENS: no sandbox, requests need the token (401 without);
# - PIPELAB_SANDBOX=false and no token: protected mode refuses to start (exit 2, one line);
# - PIPELAB_SANDBOX=false PIPELAB_ALLOW_UNAUTHENTICATED=true: open;
# - REDIS_URL and no token: never the sandbox (it runs on pipelab's own
#   redis-server), so protected mode refuses to start;
# - every pipelab service of docker-compose.yml with its own environment
#   (scripts/lib/compose_env.py: real redis-servers and a real cluster in
#   place of the compose hosts).
# Only 127.0.0.1 is ever sent to.
#   PIPELAB_BIN=path   the binary (default: target/debug/pipelab, built if missing)
set -euo pipefail
# shellcheck source=scripts/lib/wait-ready.sh
source "$(dirname "$0")/lib/wait-ready.sh"
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target
if [ -z "${PIPELAB_BIN:-}" ]; then
  [ -x "$target/debug/pipelab" ] || cargo build -q -p pipelab
  PIPELAB_BIN="$target/debug/pipelab"
fi
export PIPELAB_BIN
unset PIPELAB_TOKENS PIPELAB_TOKENS_FILE PIPELAB_READONLY_TOKENS PIPELAB_SANDBOX PIPELAB_ALLOW_UNAUTHENTICATED REDIS_URL
log=$(mktemp)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -f "$log"; }
trap cleanup EXIT

# Starts the entrypoint with the environment given as arguments; sets $pid and $port.
start() {
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env "$@" PIPELAB_LISTEN="0.0.0.0:$port" PIPELAB_WEB_DIR=/nonexistent scripts/docker-entrypoint.sh serve >"$log" 2>&1 &
  pid=$!
  wait_ready "$PIPELAB_BIN" "$port"
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=; }

start
python3 - "$port" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
res = urllib.request.urlopen(base + "/api/v1/info")
info = json.load(res)
assert info.get("sandbox", {}).get("idle_s") == 86400, info  # --sandbox-idle's default, 24 h
assert info["redis"]["source"] == "sandbox", info
assert "pipelab_sandbox=" in (res.headers.get("set-cookie") or ""), res.headers
print("entrypoint: no token -> sandbox on")
PY
stop

start PIPELAB_TOKENS=team-secret
python3 - "$port" <<'PY'
import json, sys, urllib.error, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
try:
    urllib.request.urlopen(base + "/api/v1/info")
    raise SystemExit("no 401 without the token")
except urllib.error.HTTPError as e:
    assert e.code == 401, e.code
req = urllib.request.Request(base + "/api/v1/info", headers={"authorization": "Bearer team-secret"})
info = json.load(urllib.request.urlopen(req))
assert "sandbox" not in info, info
print("entrypoint: PIPELAB_TOKENS -> token required, no sandbox")
PY
stop

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
set +e
PIPELAB_SANDBOX=false PIPELAB_LISTEN="0.0.0.0:$port" scripts/docker-entrypoint.sh serve >"$log" 2>&1
code=$?
set -e
[ "$code" = 2 ] || { echo "entrypoint: protected mode exited $code: $(cat "$log")" >&2; exit 1; }
[ "$(grep -c . "$log")" = 1 ] && grep -q -- '--allow-unauthenticated' "$log" || { echo "entrypoint: protected mode said: $(cat "$log")" >&2; exit 1; }
echo "entrypoint: PIPELAB_SANDBOX=false, no token -> refused: $(cat "$log")"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
set +e
REDIS_URL=redis://127.0.0.1:1 PIPELAB_LISTEN="0.0.0.0:$port" scripts/docker-entrypoint.sh serve >"$log" 2>&1
code=$?
set -e
[ "$code" = 2 ] && grep -q -- '--allow-unauthenticated' "$log" || { echo "entrypoint: REDIS_URL without a token exited $code: $(cat "$log")" >&2; exit 1; }
echo "entrypoint: REDIS_URL, no token -> no sandbox, refused: $(cat "$log")"

start PIPELAB_SANDBOX=false PIPELAB_ALLOW_UNAUTHENTICATED=true
python3 - "$port" <<'PY'
import json, sys, urllib.request
info = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v1/info"))
assert "sandbox" not in info, info
print("entrypoint: --allow-unauthenticated -> open")
PY
stop
python3 scripts/lib/compose_env.py "$PIPELAB_BIN"
echo "entrypoint tests passed"
