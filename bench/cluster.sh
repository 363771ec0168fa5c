#!/usr/bin/env bash
# Benchmark (not a test): pipelab on a 3-master Redis Cluster against
# redis-benchmark --cluster, and pipelab's cluster throughput against a
# single redis-server on the same machine. Starts its own cluster (three
# `redis-server --cluster-enabled yes` on free ports, joined by
# `redis-cli --cluster create`: scripts/lib/cluster.sh) and its own single node, alternates the
# contenders run by run, and prints a markdown table (bench/README.md holds
# a copy of the figures).
#
#   bench/cluster.sh [RUNS]      # RUNS alternations, default 3
#   PIPELAB_BIN=path bench/cluster.sh   # that binary instead of building target/release/pipelab
#
# The batch: 1M SETs over random keys (key:0..999999), as RESP.
# redis-benchmark: -t set -P 100 -n 1000000 -r 1000000 (50 clients, its
# default), its own requests/s. pipelab: its summary's commands/s (the
# batch clock: connecting and reading the slot map are outside it) and the
# process's wall time. Needs: redis-server, redis-cli, redis-benchmark, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
N=1000000

if [ -n "${PIPELAB_BIN:-}" ]; then
  BIN=$PIPELAB_BIN
else
  cargo build --release -q -p pipelab --bin pipelab
  BIN=target/release/pipelab
fi
WORK=$(mktemp -d)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"' EXIT

source scripts/lib/cluster.sh
cluster_start "$WORK/cluster"
PORTS=("${CLUSTER_PORTS[@]}")
SINGLE=$(cluster_free_port)
cluster_node "$WORK/single" "$SINGLE"
CLUSTER_URL="redis://127.0.0.1:${PORTS[0]},127.0.0.1:${PORTS[1]}"

python3 - "$WORK/sets.resp" "$N" <<'PY'
import random, sys
path, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
with open(path, "wb") as f:
    out = []
    for i in range(n):
        k, v = b"key:%d" % rnd.randrange(1000000), b"xxx"
        out.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
        if len(out) == 10000:
            f.write(b"".join(out)); out = []
    f.write(b"".join(out))
PY
echo "# pipelab on a 3-master cluster vs redis-benchmark --cluster: $N SETs over random keys, $RUNS alternating runs"
echo "# $(redis-server --version | cut -d' ' -f1-3), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

flush() { for p in "${PORTS[@]}" "$SINGLE"; do redis-cli -p "$p" flushall >/dev/null; done; }
pipelab() { # name url args...
  local name=$1 url=$2; shift 2
  flush
  local t0 t1
  t0=$(date +%s.%N)
  "$BIN" run "$WORK/sets.resp" --mode pipeline --redis "$url" "$@" >"$WORK/out" 2>"$WORK/err" || true
  t1=$(date +%s.%N)
  grep -q "errors: 0, replies: $N" "$WORK/out" || { echo "$name failed:"; cat "$WORK/out" "$WORK/err"; exit 1; }
  local cps; cps=$(sed -n 's/^time: .* ms, \([0-9]*\) commands\/s$/\1/p' "$WORK/out")
  echo "$name $cps $(python3 -c "print($N / ($t1 - $t0))")" >>"$WORK/runs"
}
for r in $(seq "$RUNS"); do
  pipelab pipelab-cluster-1000 "$CLUSTER_URL"
  flush
  rps=$(redis-benchmark --cluster -h 127.0.0.1 -p "${PORTS[0]}" -t set -P 100 -n "$N" -r 1000000 -q 2>/dev/null \
        | tr '\r' '\n' | sed -n 's/^SET: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
  [ -n "$rps" ] || { echo "redis-benchmark --cluster gave no figure"; exit 1; }
  echo "redis-benchmark $rps $rps" >>"$WORK/runs"
  pipelab pipelab-cluster-10000 "$CLUSTER_URL" --batch-size 10000
  pipelab pipelab-single-1000 "redis://127.0.0.1:$SINGLE"
  pipelab pipelab-single-10000 "redis://127.0.0.1:$SINGLE" --batch-size 10000
done
python3 - "$WORK/runs" <<'PY'
import sys, statistics
runs = {}
for line in open(sys.argv[1]):
    name, cps, wall = line.split()
    runs.setdefault(name, []).append((float(cps), float(wall)))
med = {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in runs.items()}
ref = med["redis-benchmark"][0]
print("| contender | median commands/s (batch clock) | median commands/s (wall, whole process) | vs redis-benchmark --cluster | vs single node, same batch size |")
print("|---|---|---|---|---|")
for name in ["pipelab-cluster-1000", "pipelab-cluster-10000", "redis-benchmark", "pipelab-single-1000", "pipelab-single-10000"]:
    c, w = med[name]
    single = ""
    if name.startswith("pipelab-cluster"):
        single = "%.2fx" % (c / med[name.replace("cluster", "single")][0])
    wall = "" if name == "redis-benchmark" else "{:,.0f}".format(w)
    print("| %s | %s | %s | %.2fx | %s |" % (name, "{:,.0f}".format(c), wall, c / ref, single))
print()
for name, v in runs.items():
    print("%s: %s" % (name, " ".join("%.0f" % c for c, _ in v)))
PY
