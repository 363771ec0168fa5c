#!/usr/bin/env bash
# Benchmark (not a test) of the Upstash-compatible surface: a
# 10,000-SET pipeline as @upstash/redis sends it (POST /pipeline, a JSON
# array of argv arrays, `Upstash-Encoding: base64`, an `upstash-sync-token`)
# vs the same commands as POST /api/v1/batch (pipeline mode, one round
# trip), against one `pipelab serve` with its own redis-server.
#
# The two contenders run alternately in rounds (A B A B …) on one kept-alive
# connection each, so that a machine whose speed drifts slows both alike;
# each round times WARM requests of each, and the figure is the median over
# rounds of the per-round ratio of medians (goal: /pipeline within 10% of
# /api/v1/batch). Not done here: the single `POST /` vs Webdis comparison
# (needs wrk and webdis; see bench/api_vs_redis_cli_and_webdis.sh).
#
# Usage: bench/upstash.sh [ROUNDS (default 7)]
#   PIPELAB_BIN=path   run this binary instead of target/release/pipelab (built if missing)
set -euo pipefail
# shellcheck source=scripts/lib/wait-ready.sh
source "$(dirname "$0")/../scripts/lib/wait-ready.sh"
cd "$(dirname "$0")/.."
ROUNDS=${1:-7}
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target
bin=${PIPELAB_BIN:-$target/release/pipelab}
[ -n "${PIPELAB_BIN:-}" ] || cargo build --release -p pipelab --locked
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$bin" serve --listen "127.0.0.1:$port" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
wait_ready "$bin" "$port"
PORT=$port ROUNDS=$ROUNDS python3 - <<'PY'
import http.client, json, os, statistics, time
port, rounds, n, per_round = int(os.environ["PORT"]), int(os.environ["ROUNDS"]), 10_000, 5
cmds = [["set", f"bench:{i:05}", f"value:{i:05}"] for i in range(n)]
contenders = {
    "upstash /pipeline": ("/pipeline", json.dumps(cmds).encode(),
                          {"content-type": "application/json", "upstash-encoding": "base64", "upstash-sync-token": ""}),
    "api /api/v1/batch": ("/api/v1/batch", json.dumps({"commands": cmds, "mode": "pipeline", "batch_size": n}).encode(),
                          {"content-type": "application/json"}),
}
conns = {name: http.client.HTTPConnection("127.0.0.1", port) for name in contenders}
def once(name):
    path, body, headers = contenders[name]
    c = conns[name]
    t = time.perf_counter()
    c.request("POST", path, body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    dt = time.perf_counter() - t
    assert r.status == 200, (name, r.status, data[:200])
    return dt
for name in contenders:  # warm-up: pool, caches, the command flags
    once(name)
ratios, times = [], {name: [] for name in contenders}
for _ in range(rounds):
    med = {}
    for name in contenders:
        samples = [once(name) for _ in range(per_round)]
        med[name] = statistics.median(samples)
        times[name].append(med[name])
    ratios.append(med["upstash /pipeline"] / med["api /api/v1/batch"])
print(f"| contender | median ms per 10k-SET request | commands/s |")
print(f"|---|---|---|")
for name, ts in times.items():
    m = statistics.median(ts)
    print(f"| {name} | {m * 1e3:.2f} | {n / m:,.0f} |")
print(f"\n/pipeline time / batch time, median of {rounds} per-round ratios: {statistics.median(ratios):.3f} "
      f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)})")
PY
