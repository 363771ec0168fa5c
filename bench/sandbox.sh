#!/usr/bin/env bash
# The sandbox at scale, not a test and not in CI: `pipelab serve --sandbox`
# (release build), VISITORS visitors each with a redis-server of their own
# (bench/sandbox_load.py drives them):
#
#   - the first answer of a new visitor (they arrive one every 50 ms; warm
#     spares take the process start off their path), p50/p99;
#   - a lesson-sized batch (100 SETs, pipelined) p99 with ACTIVE visitors
#     each running one a second, quiet, and while one more visitor runs
#     each stall again and again (a script that never ends, a Lua heap
#     bomb, a 100 MB SETRANGE, WATCH of 100,000 keys, the script cache
#     filled), each stall's p99 over the quiet one;
#   - memory: pipelab's RSS and the children's summed RSS and private
#     memory (/proc/PID/smaps_rollup) with every visitor holding a Redis.
#
# Each visitor comes from an address of its own on the loopback, so the
# sandbox's limits per client address (rate limits, visitors, batches) stay
# as a public deployment has them; only the caps on visitors and on HTTP
# connections in all are raised to VISITORS.
#
# Usage: bench/sandbox.sh [VISITORS (default 1000)] [ACTIVE (default 200)]
#   PIPELAB_BIN=path     use this binary instead of building target/release/pipelab
#   SECONDS_PER_PHASE=N  each lesson phase's length (default 20)
#   THINK_MS=N           each active visitor's pause between lessons (default
#                        1000; 0: back to back, the server's capacity)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/wait-ready.sh
source bench/lib.sh

VISITORS=${1:-1000}
ACTIVE=${2:-200}
PHASE=${SECONDS_PER_PHASE:-20}

bin=${PIPELAB_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release -q -p pipelab
  bin=target/release/pipelab
fi
port=$(free_port)
"$bin" serve --listen "127.0.0.1:$port" --sandbox --sandbox-max-visitors "$VISITORS" --sandbox-spares 8 \
  --batch-timeout-ms 3000 --max-connections 4096 >"$work/serve.log" 2>&1 &
pids+=($!)
serve_pid=$!
wait_ready "$bin" "$port" >/dev/null

python3 bench/sandbox_load.py --port "$port" --visitors "$VISITORS" --active "$ACTIVE" --seconds "$PHASE" --think-ms "${THINK_MS:-1000}" >"$work/load.json"

# Memory with every visitor holding a Redis (children of pipelab's sandbox thread).
children=$(pgrep -P "$serve_pid" redis-server || true)
rss=0 pss=0 private=0 n=0
for c in $children; do
  read -r r p v < <(awk '/^Rss:/{r=$2} /^Pss:/{p=$2} /^Private_(Clean|Dirty):/{v+=$2} END{print r, p, v}' "/proc/$c/smaps_rollup" 2>/dev/null || echo "0 0 0")
  rss=$((rss + r)); pss=$((pss + p)); private=$((private + v)); n=$((n + 1))
done
self=$(awk '/^VmRSS:/{print $2}' "/proc/$serve_pid/status")
python3 - "$work/load.json" "$n" "$rss" "$pss" "$private" "$self" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))
n, rss, pss, private, me = (int(x) for x in sys.argv[2:])
mb = lambda kb: round(kb / 1024, 1)
load["memory"] = {"children": n, "children_rss_mb": mb(rss), "children_pss_mb": mb(pss), "children_private_mb": mb(private),
                  "per_child_private_mb": round(private / 1024 / max(n, 1), 2), "pipelab_rss_mb": mb(me)}
print(json.dumps(load, indent=2))
PY
