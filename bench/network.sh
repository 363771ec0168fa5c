#!/usr/bin/env bash
# Benchmark (not a test): how faithful the simulated network is.
#
# 1. Accuracy of the added RTT: sequential PINGs at 0.2, 0.5 and 5 ms, on a
#    quiet machine and with one core kept busy by a spin loop beside them
#    (the "loaded 2-core machine"), through the CLI (`pipelab run`) and the
#    API (`POST /api/v1/batch` to a `pipelab serve` of the same binary);
#    the median reply latency against the loopback latency (measured in
#    turn with it, the same way) plus the asked RTT, and the summary's
#    achieved RTT (the asked one plus each direction's median lateness,
#    hand-offs included).
# 2. Bandwidth: one ~20 MB pipeline of SETs at 80 ms RTT, unlimited and at
#    100 and 10 Mbit/s (each direction), against what the wire alone must take.
#
#   bench/network.sh [REPS]              # REPS alternated pairs per cell (median), default 3
#   PIPELAB_BIN=path bench/network.sh    # that binary instead of building target/release/pipelab
#   BANDWIDTH=0 bench/network.sh         # the accuracy tables alone
#
# Needs: redis-server, redis-cli, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3}
if [ -n "${PIPELAB_BIN:-}" ]; then
  BIN=$PIPELAB_BIN
else
  cargo build --release -q -p pipelab
  BIN=target/release/pipelab
fi
WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" --daemonize no >/dev/null &
REDIS_PID=$!
SPIN_PID=""
SERVE_PID=""
stop_spin() { [ -n "$SPIN_PID" ] && kill "$SPIN_PID" 2>/dev/null; SPIN_PID=""; }
trap 'stop_spin; [ -n "$SERVE_PID" ] && kill $SERVE_PID 2>/dev/null; kill $REDIS_PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
URL="redis://127.0.0.1:$PORT"
APORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --listen "127.0.0.1:$APORT" --redis "$URL" >"$WORK/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$APORT/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
python3 -c "print('PING\n' * 500, end='')" >"$WORK/ping.txt"

echo "# $(redis-server --version | cut -d' ' -f1-3), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# pipelab: $BIN ($("$BIN" --version))"

# One run of 500 sequential PINGs at RTT $2 through $1 (cli: `pipelab run`;
# api: the same batch posted to `pipelab serve`): the median reply latency
# (µs) and the summary's achieved_rtt_ms.
latency() {
  if [ "$1" = cli ]; then
    "$BIN" run "$WORK/ping.txt" --mode sequential --rtt "$2" --redis "$URL" --json
  else
    python3 -c 'import json, sys; print(json.dumps({"text": open(sys.argv[1]).read(), "mode": "sequential", "simulated_rtt_ms": float(sys.argv[2])}))' "$WORK/ping.txt" "$2" |
      curl -sf -H 'Content-Type: application/json' --data-binary @- "http://127.0.0.1:$APORT/api/v1/batch"
  fi | python3 -c '
import json, sys, statistics
run = json.load(sys.stdin)
print(statistics.median(r["reply_us"] - r["sent_us"] for r in run["results"]), run["summary"].get("achieved_rtt_ms") or 0)'
}

# Each cell: REPS pairs of a loopback run (no RTT) and a run at the RTT,
# alternated, so that the machine's drift falls on both alike; the error is
# each pair's (measured - (loopback + RTT)) / (loopback + RTT), and the
# table gives the median pair.
accuracy() { # title
  echo
  echo "## Sequential PING latency, $1 (median of $REPS alternated pairs of runs of 500; load $(cut -d' ' -f1 /proc/loadavg))"
  echo "| via | asked RTT (ms) | measured (µs) | loopback + RTT (µs) | error | pairs' errors | summary's achieved_rtt_ms |"
  echo "|---|---|---|---|---|---|---|"
  for via in cli api; do
    for rtt in 0.2 0.5 5; do
      for _ in $(seq "$REPS"); do
        read -r base _ < <(latency "$via" 0)
        read -r m ach < <(latency "$via" "$rtt")
        echo "$base $m $ach"
      done | python3 -c "
import sys, statistics
rtt = $rtt * 1000
pairs = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
errors = sorted((m - (b + rtt)) / (b + rtt) for b, m, _ in pairs)
b, m, a = sorted(pairs, key=lambda p: (p[1] - (p[0] + rtt)) / (p[0] + rtt))[len(pairs) // 2]
print(f'| $via | $rtt | {m:.0f} | {b + rtt:.0f} (loopback {b:.0f}) | {100 * statistics.median(errors):+.1f}% | {min(errors) * 100:+.1f}% to {max(errors) * 100:+.1f}% | {statistics.median(p[2] for p in pairs):.3f} |')"
    done
  done
}

accuracy "quiet"
python3 -c 'while True: pass' &
SPIN_PID=$!
accuracy "one core kept busy by a spin loop"
stop_spin

[ "${BANDWIDTH:-1}" = 0 ] && exit 0

# --- bandwidth -----------------------------------------------------------------
N=100000
python3 - "$WORK/big.txt" "$N" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
v = "x" * 180
with open(path, "w") as f:
    f.write("".join(f"SET big:{i} {v}\n" for i in range(n)))
PY
echo
echo "## $N SETs of 180-byte values in one pipeline at 80 ms RTT (median of $REPS runs)"
echo "| bandwidth | bytes sent | total (ms) | the wire alone (ms) | RTT + wire (ms) |"
echo "|---|---|---|---|---|"
for bw in "" 100 10; do
  flag=(); [ -n "$bw" ] && flag=(--bandwidth "$bw")
  for _ in $(seq "$REPS"); do
    redis-cli -p "$PORT" flushall >/dev/null
    "$BIN" run "$WORK/big.txt" --mode pipeline --batch-size "$N" --rtt 80 "${flag[@]}" --redis "$URL" --json
  done | python3 -c '
import json, sys, statistics
bw = sys.argv[1]
runs = [json.loads(l)["summary"] for l in sys.stdin if l.strip()]
t = statistics.median(r["total_us"] for r in runs) / 1000
sent = runs[0]["bytes_sent"]
wire = sent * 8 / (float(bw) * 1000) if bw else 0
label = bw + " Mbit/s" if bw else "unlimited"
print(f"| {label} | {sent:,} | {t:.0f} | {wire:.0f} | {80 + wire:.0f} |")' "$bw"
done
