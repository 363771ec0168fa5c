#!/usr/bin/env bash
# The Upstash-compatible surface against the official SDKs, unmodified, from
# their registries: builds pipelab, starts `pipelab serve` with its own
# redis-server, a full-access and a read-only token, then runs
# - the curl examples of docs/upstash.md, checking each answer;
# - web/test/upstash/ with @upstash/redis (npm, web/'s lockfile), `node --test`;
# - web/test/upstash/py/ with upstash-redis (PyPI, pinned), sync and async;
# - both suites again against `pipelab serve --sandbox`, as a visitor.
# Installs what it needs when missing (idempotent).
set -euo pipefail
# shellcheck source=scripts/lib/wait-ready.sh
source "$(dirname "$0")/lib/wait-ready.sh"
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target

UPSTASH_PY_VERSION=1.8.0
if ! python3 -c "import upstash_redis, sys; sys.exit(upstash_redis.__version__ != '$UPSTASH_PY_VERSION')" 2>/dev/null; then
  echo "pip install upstash-redis==$UPSTASH_PY_VERSION"
  python3 -m pip install -q --disable-pip-version-check "upstash-redis==$UPSTASH_PY_VERSION"
fi
if [ ! -f web/node_modules/@upstash/redis/package.json ]; then
  (cd web && npm ci --no-audit --no-fund)
fi

cargo build -p pipelab --locked
bin="$target/debug/pipelab"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="test-full-$RANDOM$RANDOM"
readonly_token="test-ro-$RANDOM$RANDOM"
log=$(mktemp)
# Debug logs, request spans included: the check below finds no token in them.
PIPELAB_LOG=pipelab=debug,tower_http=debug "$bin" serve --listen "127.0.0.1:$port" --token "$token" --readonly-token "$readonly_token" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
wait_ready "$bin" "$port"
if grep -q -- "$token" "$log"; then echo "upstash: a token was logged" >&2; exit 1; fi

echo "=== docs/upstash.md curl examples"
URL="http://127.0.0.1:$port" TOKEN="$token" python3 - <<'PY'
import os, subprocess
url, token = os.environ["URL"], os.environ["TOKEN"]
def curl(*args):
    out = subprocess.run(["curl", "-s", *args], capture_output=True, text=True, check=True).stdout
    return out
checks = [
    (["-H", f"Authorization: Bearer {token}", f"{url}/set/foo/bar"], '{"result":"OK"}'),
    ([f"{url}/get/foo?_token={token}"], '{"result":"bar"}'),
    (["-H", f"Authorization: Bearer {token}", "-d", '["SET", "k", "v", "EX", 100]', f"{url}/"], '{"result":"OK"}'),
    (["-H", f"Authorization: Bearer {token}", "-d", '{"a": 1}', f"{url}/set/json?EX=100"], '{"result":"OK"}'),
    (["-H", f"Authorization: Bearer {token}", "-d", '[["INCR", "n"], ["HSET", "k", "f", "v"], ["GET", "k"]]', f"{url}/pipeline"],
     '[{"result":1},{"error":"WRONGTYPE Operation against a key holding the wrong kind of value"},{"result":"v"}]'),
    (["-H", f"Authorization: Bearer {token}", "-d", '[["INCR", "n"], ["INCR", "n"]]', f"{url}/multi-exec"], '[{"result":2},{"result":3}]'),
    (["-H", f"Authorization: Bearer {token}", "-H", "Upstash-Encoding: base64", f"{url}/get/foo"], '{"result":"YmFy"}'),
    ([f"{url}/get/foo"], '{"error":"Unauthorized"}'),
]
for args, want in checks:
    got = curl(*args)
    assert got == want, f"curl {' '.join(args)}: {got!r}, expected {want!r}"
print(f"docs/upstash.md curl: {len(checks)} passed, 0 failed")
PY

export UPSTASH_REDIS_REST_URL="http://127.0.0.1:$port" UPSTASH_REDIS_REST_TOKEN="$token" PIPELAB_READONLY_TOKEN="$readonly_token"
echo "=== @upstash/redis (node --test web/test/upstash/)"
(cd web && node --test test/upstash/)
echo "=== upstash-redis (python3 web/test/upstash/py/test_sdk.py)"
python3 web/test/upstash/py/test_sdk.py
if grep -q -- "$token" "$log"; then echo "upstash: a token was logged" >&2; exit 1; fi
kill "$pid"; wait "$pid" 2>/dev/null || true

# Both suites again in the sandbox: the token is the visitor's id, which
# /api/v1/info gives; each SDK lands on that visitor's own redis-server.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The suites send more, and more at once (20 transactions), than a
# visitor's rate limits and batch cap allow a browser.
"$bin" serve --listen "127.0.0.1:$port" --sandbox --sandbox-spares 2 --sandbox-visitor-batches 32 --rate-requests 0 --rate-commands 0 --rate-bytes 0 >"$log" 2>&1 &
pid=$!
wait_ready "$bin" "$port"
visitor=$(curl -s "http://127.0.0.1:$port/api/v1/info" | python3 -c 'import json, sys; print(json.load(sys.stdin)["sandbox"]["token"])')
export UPSTASH_REDIS_REST_URL="http://127.0.0.1:$port" UPSTASH_REDIS_REST_TOKEN="$visitor" PIPELAB_UPSTASH_SANDBOX=1
unset PIPELAB_READONLY_TOKEN
echo "=== @upstash/redis in the sandbox"
(cd web && node --test test/upstash/)
echo "=== upstash-redis in the sandbox"
python3 web/test/upstash/py/test_sdk.py
if grep -q -- "$visitor" "$log"; then echo "upstash: a visitor's id was logged" >&2; exit 1; fi
