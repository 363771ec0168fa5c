#!/usr/bin/env bash
# Deployment checks outside containers (scripts/test-image.sh builds the
# image and runs it):
# - hadolint on the Dockerfile; the compose file's profiles;
# - the build context .dockerignore leaves (scripts/lib/docker_context.py):
#   under 50 MB, with every file the stages need, after a build has filled
#   target/ and web/node_modules;
# - the image's entrypoint logic (scripts/test-entrypoint.sh);
# - scripts/build.sh (what the Dockerfile's stages run) produces the release
#   binary and the web bundle;
# - that binary, started as a user starts it (no --redis: its own
#   redis-server), serves the bundle, a batch, /healthz, /readyz and /metrics,
#   its sweep's cost model within 3x of Redis's usec_per_call, and on SIGTERM
#   exits 0 with its redis-server and socket gone;
# - a copy of that binary in another directory, started from there with no
#   --web-dir (as after `cargo install --path cli`), serves its page
#   built in: /, a hashed script and the wasm module with their media types
#   and caching, and `pipelab doctor --ui` its doctor.html.
set -euo pipefail
# shellcheck source=scripts/lib/wait-ready.sh
source "$(dirname "$0")/lib/wait-ready.sh"
cd "$(dirname "$0")/.."
# Cargo's output directory, as cargo sees it (CARGO_TARGET_DIR or ./target), absolute.
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target

hadolint Dockerfile
python3 - <<'PY'
import yaml
y = yaml.safe_load(open("docker-compose.yml"))
assert y["services"]["pipelab"]["depends_on"]["redis"]["condition"] == "service_healthy"
s = y["services"]
assert s["playground"]["profiles"] == ["public"] and s["playground"]["environment"]["PIPELAB_SANDBOX"] == "true"
assert "REDIS_URL" not in s["playground"]["environment"], "the sandbox starts a redis-server per visitor itself"
assert s["team-api"]["profiles"] == ["team"] and "PIPELAB_TOKENS" in s["team-api"]["environment"]
# The cluster profile: three nodes (the first joins them), pipelab given all three as seeds.
cluster = [n for n, s in y["services"].items() if "cluster" in s.get("profiles", [])]
assert sorted(cluster) == ["pipelab-cluster", "redis-node-1", "redis-node-2", "redis-node-3"], cluster
assert y["services"]["pipelab-cluster"]["environment"]["REDIS_URL"].count(",") == 2
assert all("--cluster-enabled" in " ".join(y["services"][f"redis-node-{i}"]["command"]) for i in (1, 2, 3))
assert "--cluster create" in y["services"]["redis-node-1"]["command"][-1]
# The valkey profile: the playground on a Valkey of its own, on a host port no other profile takes.
valkey = sorted(n for n, s in y["services"].items() if "valkey" in s.get("profiles", []))
assert valkey == ["pipelab-valkey", "valkey"], valkey
assert s["pipelab-valkey"]["environment"]["REDIS_URL"] == "redis://valkey:6379"
assert s["pipelab-valkey"]["depends_on"]["valkey"]["condition"] == "service_healthy"
assert s["valkey"]["image"].startswith("valkey/valkey:") and s["valkey"]["command"][0] == "valkey-server"
ports = [p.rsplit(":", 2)[-2] for n in valkey for p in s[n].get("ports", [])]
others = [p.rsplit(":", 2)[-2] for n, v in s.items() if n not in valkey for p in v.get("ports", [])]
assert ports == ["8083"] and "8083" not in others, (ports, others)
# Each profile on a host port of its own, every pipelab service with a health check.
published = [p.rsplit(":", 2)[-2] for v in s.values() for p in v.get("ports", [])]
assert len(published) == len(set(published)), published
assert all("healthcheck" in v for v in s.values() if v.get("image") == "pipelab:latest"), [n for n, v in s.items() if "healthcheck" not in v]
PY
grep -q 'condition: service_healthy' docker-compose.yml

scripts/build.sh
bin="$target/release/pipelab"
[ -x "$bin" ] || { echo "deploy: $bin missing after scripts/build.sh" >&2; exit 1; }
[ -f web/dist/index.html ] || { echo "deploy: web/dist/index.html missing after scripts/build.sh" >&2; exit 1; }

# A node_modules from elsewhere (a host's, newer than the lock file, no
# stamp) is installed again by the build; an installed one is left alone.
tmp=$(mktemp -d)
cp web/package.json web/package-lock.json "$tmp/"
mkdir "$tmp/node_modules"
echo '{"copied": "from another machine"}' > "$tmp/node_modules/.package-lock.json"
touch -d '+1 hour' "$tmp/node_modules/.package-lock.json"
( source scripts/lib/npm-deps.sh && npm_ci_if_stale "$tmp" )
[ -f "$tmp/node_modules/vite/package.json" ] || { echo "deploy: npm ci did not run over a copied node_modules" >&2; exit 1; }
stamp=$(stat -c %Y.%N "$tmp/node_modules/.pipelab-installed")
( source scripts/lib/npm-deps.sh && npm_ci_if_stale "$tmp" )
[ "$(stat -c %Y.%N "$tmp/node_modules/.pipelab-installed")" = "$stamp" ] || { echo "deploy: npm ci ran again over its own install" >&2; exit 1; }
rm -rf "$tmp"
echo "deploy: npm ci over a node_modules copied from elsewhere, not over its own"

# What `docker build .` would send, now that target/ and web/node_modules are full.
python3 scripts/lib/docker_context.py --self-test
python3 scripts/lib/docker_context.py --max-mb 50

# The image's entrypoint (sandbox unless a token or a Redis is given, protected mode) with this binary.
PIPELAB_BIN="$bin" scripts/test-entrypoint.sh

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
PIPELAB_LISTEN="127.0.0.1:$port" PIPELAB_WEB_DIR=web/dist PIPELAB_LOG_FORMAT=json "$bin" serve >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
wait_ready "$bin" "$port"
"$bin" healthcheck --url "http://127.0.0.1:$port/healthz"
"$bin" healthcheck --url "http://127.0.0.1:$port/readyz"
# Without --url: where PIPELAB_LISTEN says the server listens (the image's HEALTHCHECK).
PIPELAB_LISTEN="127.0.0.1:$port" "$bin" healthcheck --path /readyz
if PIPELAB_LISTEN="127.0.0.1:$port" "$bin" healthcheck --path /api/v1/no-such-endpoint 2>/dev/null; then
  echo "deploy: healthcheck passed on a path that answers 404" >&2; exit 1
fi
python3 - "$port" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
page = urllib.request.urlopen(base + "/").read().decode()
assert "<html" in page.lower() and "pipelab" in page.lower(), page[:200]
req = urllib.request.Request(base + "/api/v1/batch", method="POST",
    data=json.dumps({"text": "SET deploy 1\nINCR deploy", "mode": "pipeline"}).encode(),
    headers={"content-type": "application/json"})
out = json.load(urllib.request.urlopen(req))
assert out["summary"]["ok"] == 2, out["summary"]
metrics = urllib.request.urlopen(base + "/metrics").read().decode()
assert 'pipelab_batches_total{mode="pipeline",outcome="ok"} 1' in metrics, metrics
print("deploy smoke: page, batch and metrics ok")
PY
# The bound, which only the release build meets: the sweep's fitted
# t_cmd within 3x of INFO commandstats usec_per_call.
python3 scripts/lib/cost_model_check.py "$port"
socket=$(sed -n 's/.*(Redis: unix:\/\/\([^)]*\)).*/\1/p' "$log" | head -1)
[ -S "$socket" ] || { echo "deploy: no embedded redis socket in: $(cat "$log")" >&2; exit 1; }
kill -TERM "$pid"
wait "$pid" || { echo "deploy: pipelab serve exited with $? on SIGTERM" >&2; exit 1; }
[ ! -e "$socket" ] || { echo "deploy: $socket still there after exit" >&2; exit 1; }

# The binary carries its page: a copy elsewhere, run from there, no --web-dir.
away=$(mktemp -d)
cp "$bin" "$away/pipelab"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ui=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
( cd "$away" && exec env -u PIPELAB_WEB_DIR ./pipelab serve --listen "127.0.0.1:$port" >"$log" 2>&1 ) &
pid=$!
( cd "$away" && exec env -u PIPELAB_WEB_DIR PIPELAB_LISTEN="127.0.0.1:$port" ./pipelab doctor --listen 127.0.0.1:0 --upstream redis://127.0.0.1:1 \
    --connect-timeout-ms 200 --ui "127.0.0.1:$ui" --json >/dev/null 2>"$away/doctor.log" ) &
doctor=$!
trap 'kill "$pid" "$doctor" 2>/dev/null || true; rm -rf "$log" "$away"' EXIT
wait_ready "$away/pipelab" "$port"
python3 - "$port" "$ui" <<'PY'
import re, sys, time, urllib.error, urllib.request
base, ui = f"http://127.0.0.1:{sys.argv[1]}", f"http://127.0.0.1:{sys.argv[2]}"
def get(url, **headers):
    try:
        r = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30)
        return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()
status, h, page = get(base + "/")
assert status == 200 and b"<html" in page.lower(), (status, page[:300])
assert h["content-type"].startswith("text/html") and h["cache-control"] == "no-cache" and h["etag"], dict(h)
assert get(base + "/", **{"If-None-Match": h["etag"]})[0] == 304
script = re.search(rb'src="\./(assets/[^"]+\.js)"', page).group(1).decode()
status, h, body = get(f"{base}/{script}")
assert status == 200 and len(body) > 1000, (script, status)
assert h["content-type"].startswith("text/javascript"), dict(h)
assert "immutable" in h["cache-control"] and "max-age=31536000" in h["cache-control"], dict(h)
wasm = re.search(rb'assets/pipelab_wasm_bg-[A-Za-z0-9_-]+\.wasm', body) or re.search(rb'pipelab_wasm_bg-[A-Za-z0-9_-]+\.wasm', body)
assert wasm, "the script names no wasm module"
name = wasm.group(0).decode()
name = name if name.startswith("assets/") else "assets/" + name
status, h, module = get(f"{base}/{name}")
assert status == 200 and module[:4] == b"\0asm" and h["content-type"] == "application/wasm", (name, status, dict(h))
assert "immutable" in h["cache-control"], dict(h)
# No file and API-ish: a 404 in JSON, not the page.
status, h, body = get(base + "/api/openapi.json")
assert status == 404 and h["content-type"].startswith("application/json"), (status, body[:200])
for _ in range(300):
    try:
        status, h, doc = get(ui + "/")
        break
    except OSError:
        time.sleep(0.1)
assert status == 200 and b"<html" in doc.lower() and doc != page, (status, doc[:200])
print(f"deploy: a copy of the binary elsewhere serves its page: /, {script}, {name} ({len(module)} bytes, application/wasm); doctor --ui its doctor.html")
PY
kill -TERM "$pid" "$doctor"
wait "$pid" || { echo "deploy: the copied pipelab serve exited with $? on SIGTERM" >&2; exit 1; }
wait "$doctor" || true
echo "deploy tests passed"
