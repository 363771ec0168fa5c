#!/usr/bin/env bash
# The README's REST API examples, run as a reader would: every
# `curl … localhost:8080/api/v1/…` line of its ```sh blocks (backslash
# continuations joined), against `pipelab serve` with its own redis-server
# on a free port, and the outputs the README states checked (the WRONGTYPE
# of the first example, the committed WATCH transaction, the live batch's
# start/results/end lines). Run from anywhere.
#   PIPELAB_BIN=path   use this pipelab binary instead of building target/debug/pipelab
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/wait-ready.sh
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target
if [ -z "${PIPELAB_BIN:-}" ]; then
  cargo build -q -p pipelab
  PIPELAB_BIN="$target/debug/pipelab"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PIPELAB_BIN" serve --listen "127.0.0.1:$port" >/dev/null 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null; wait $serve 2>/dev/null || true' EXIT
wait_ready "$PIPELAB_BIN" "$port" >/dev/null

python3 - "$port" <<'PY'
import json, re, subprocess, sys
port = sys.argv[1]
readme = open("README.md").read()
commands = []
for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
    for cmd in re.sub(r"\\\n\s*", "", block).splitlines():
        if re.match(r"curl -sN? localhost:8080/api/v1/", cmd):
            commands.append(cmd)
assert len(commands) >= 5, f"README curl examples found: {commands}"

def run(cmd):
    out = subprocess.run(["bash", "-c", cmd.replace("localhost:8080", f"127.0.0.1:{port}") + " -w '\\n%{http_code}'"],
                         capture_output=True, text=True, timeout=120)
    body, _, status = out.stdout.rpartition("\n")
    assert status == "200", f"{cmd}\n -> HTTP {status}: {body[:300]}"
    return body

checked = 0
for cmd in commands:
    body = run(cmd)
    if "/api/v1/batches" in cmd:
        lines = [json.loads(l) for l in body.splitlines() if l]
        assert lines[0]["type"] == "start" and lines[-1]["type"] == "end", lines
        results = [r for l in lines if l["type"] == "results" for r in l["results"]]
        assert [r["status"] for r in results] == ["ok", "ok"], results
        checked += 1
        continue
    doc = json.loads(body)
    if "HSET k f v" in cmd:
        st = [r["status"] for r in doc["results"]]
        assert st == ["ok", "ok", "error"], st
        assert doc["results"][2]["reply"]["value"].startswith("WRONGTYPE"), doc["results"][2]
        assert doc["results"][1]["reply"] == {"type": "integer", "value": 2}
        checked += 1
    elif '"watch"' in cmd:
        assert doc["transaction"]["status"] == "committed", doc["transaction"]
        assert doc["results"][1]["reply"] == {"type": "integer", "value": 7}, doc["results"]
        checked += 1
    elif "/compare" in cmd:
        assert [r["mode"] for r in doc["runs"]] == ["sequential", "pipeline", "transaction", "auto"], doc["runs"]
        checked += 1
    elif "/sweep" in cmd:
        assert [p["batch_size"] for p in doc["points"]] == [1, 10, 100, 1000, 10000], doc.keys()
        checked += 1
    print("ok:", cmd[:90])
print(f"test-readme: {len(commands)} README examples ran, {checked} with their stated output checked")
assert checked == len(commands), "an example without a check"
PY
