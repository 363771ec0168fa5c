#!/usr/bin/env bash
# Benchmark (not a test): pipelab against redis-cli --pipe and the cost of
# round trips under a simulated RTT. Starts its own redis-server on a free
# port, alternates the contenders run by run against that same server, and
# prints markdown tables (bench/README.md holds a copy of the figures).
#
#   bench/run_vs_redis_cli.sh [RUNS]      # RUNS alternations, default 5
#   PIPELAB_BIN=path bench/run_vs_redis_cli.sh   # that binary (another build, e.g. an
#                                             # older commit's) instead of building target/release/pipelab
#   ONLY=ping bench/run_vs_redis_cli.sh [RUNS]   # the last table alone (RUNS alternated pairs)
#
# Needs: redis-server, redis-cli, python3, /usr/bin/time (GNU time).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
N=1000000

command -v /usr/bin/time >/dev/null || { echo "needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 2; }
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
trap 'kill $REDIS_PID 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
URL="redis://127.0.0.1:$PORT"

if [ "${ONLY:-}" != ping ]; then
# --- 1M SETs as RESP ---------------------------------------------------------
python3 - "$WORK/sets.resp" "$N" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    out = []
    for i in range(n):
        k, v = b"key:%d" % i, b"value:%d" % i
        out.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
        if len(out) == 10000:
            f.write(b"".join(out)); out = []
    f.write(b"".join(out))
PY
echo "# pipelab vs redis-cli --pipe: $N SETs ($(du -h "$WORK/sets.resp" | cut -f1) of RESP), $RUNS alternating runs"
echo "# $(redis-server --version | cut -d' ' -f1-3), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# pipelab: $BIN ($("$BIN" --version))"
measure() { # name cmd... ; appends "name seconds maxrss_kb" to $WORK/runs
  local name=$1; shift
  redis-cli -p "$PORT" flushall >/dev/null
  /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" >"$WORK/out" 2>"$WORK/err" || true
  grep -q "errors: 0, replies: $N" "$WORK/out" || { echo "$name failed:"; cat "$WORK/out" "$WORK/err"; exit 1; }
  echo "$name $(cat "$WORK/t")" >>"$WORK/runs"
}
for r in $(seq "$RUNS"); do
  measure pipelab-1000 "$BIN" run "$WORK/sets.resp" --mode pipeline --redis "$URL"
  measure redis-cli sh -c "redis-cli -p $PORT --pipe < $WORK/sets.resp"
  measure pipelab-10000 "$BIN" run "$WORK/sets.resp" --mode pipeline --batch-size 10000 --redis "$URL"
  measure pipelab-all "$BIN" run "$WORK/sets.resp" --mode pipeline --batch-size "$N" --redis "$URL"
done
python3 - "$WORK/runs" "$N" <<'PY'
import sys, statistics
runs, n = {}, int(sys.argv[2])
for line in open(sys.argv[1]):
    name, secs, rss = line.split()
    runs.setdefault(name, []).append((float(secs), int(rss)))
ref = statistics.median(s for s, _ in runs["redis-cli"])
print("| contender | median time (s) | commands/s | vs redis-cli --pipe | peak RSS (MB) |")
print("|---|---|---|---|---|")
for name in ["pipelab-1000", "pipelab-10000", "pipelab-all", "redis-cli"]:
    t = statistics.median(s for s, _ in runs[name])
    rss = max(r for _, r in runs[name]) / 1024
    label = {"pipelab-1000": "`pipelab run --mode pipeline` (batch 1000)",
             "pipelab-10000": "`pipelab run --mode pipeline --batch-size 10000`",
             "pipelab-all": f"`pipelab run --mode pipeline --batch-size {n}` (one round trip)",
             "redis-cli": "`redis-cli --pipe`"}[name]
    print(f"| {label} | {t:.2f} | {n/t:,.0f} | {ref/t:.2f}x | {rss:.1f} |")
print()
print("all runs (s): " + "; ".join(f"{k}: " + " ".join(f"{s:.2f}" for s, _ in v) for k, v in runs.items()))
PY

# --- simulated RTT: sequential vs pipeline, 1000 SETs ------------------------
python3 - "$WORK/s1000.txt" <<'PY'
import sys
open(sys.argv[1], "w").write("".join(f"SET k:{i} {i}\n" for i in range(1000)))
PY
REPS=3 # the tables below show the median of REPS runs
median() { python3 -c 'import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
total_ms() { # median total time (ms) of REPS runs of a command
  local xs=()
  for _ in $(seq $REPS); do xs+=("$("$@" | sed -n 's/^time: \([0-9.]*\) ms.*/\1/p')"); done
  median "${xs[@]}"
}
echo
echo "# load after the runs above: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# 1000 SETs, sequential vs pipeline (batch 1000), simulated RTT (median of $REPS runs)"
echo "| added RTT (ms) | sequential (ms) | pipeline (ms) | speedup |"
echo "|---|---|---|---|"
for rtt in 0 0.2 0.5 1.2; do
  seq=$(total_ms "$BIN" run "$WORK/s1000.txt" --mode sequential --rtt "$rtt" --redis "$URL")
  pipe=$(total_ms "$BIN" run "$WORK/s1000.txt" --mode pipeline --rtt "$rtt" --redis "$URL")
  python3 -c "print(f'| $rtt | {float($seq):.1f} | {float($pipe):.2f} | {float($seq)/float($pipe):.0f}x |')"
done

# --- commands/s by batch size -----------------------------------------------
python3 - "$WORK/s10k.txt" <<'PY'
import sys
open(sys.argv[1], "w").write("".join(f"SET k:{i} {i}\n" for i in range(10000)))
PY
cps() { # median commands/s of REPS runs
  local xs=()
  for _ in $(seq $REPS); do xs+=("$("$@" | sed -n 's/^time: .* ms, \([0-9]*\) commands\/s/\1/p')"); done
  median "${xs[@]}" | cut -d. -f1
}
echo
echo "# 10000 SETs in pipeline mode: commands/s by batch size (median of $REPS runs)"
echo "| batch size | RTT 0 (loopback) | RTT 0.5 ms | round trips |"
echo "|---|---|---|---|"
for bs in 1 10 100 1000 10000; do
  a=$(cps "$BIN" run "$WORK/s10k.txt" --mode pipeline --batch-size "$bs" --redis "$URL")
  b=$(cps "$BIN" run "$WORK/s10k.txt" --mode pipeline --batch-size "$bs" --rtt 0.5 --redis "$URL")
  echo "| $bs | $a | $b | $(( (10000 + bs - 1) / bs )) |"
done

fi

# --- accuracy of the added RTT (sequential PING latency) ---------------------
# Medians of per-command latency, so a stall of the (shared) machine does not
# swamp the figure; the totals above include such stalls. Each run at an RTT
# has its own loopback reference, taken just before it: on this kind of
# machine the loopback latency alone moves between runs by more than 5% of
# 0.2 ms, so one reference for all would decide the error.
echo
echo "# Sequential PING latency (median of 500 reply_us - sent_us), added RTT; $RUNS alternated pairs (loopback, RTT), the median pair; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| added RTT (ms) | measured (µs) | loopback + RTT (µs) | error | pairs' errors |"
echo "|---|---|---|---|---|"
python3 -c "print('PING\n' * 500, end='')" >"$WORK/ping.txt"
median_lat() {
  "$BIN" run "$WORK/ping.txt" --mode sequential --rtt "$1" --redis "$URL" --json |
    python3 -c 'import json,sys,statistics; r=json.load(sys.stdin)["results"]; print(statistics.median(x["reply_us"]-x["sent_us"] for x in r))'
}
for rtt in 0.2 0.5 5; do
  for _ in $(seq "$RUNS"); do
    echo "$(median_lat 0) $(median_lat "$rtt")"
  done | python3 -c "
import sys
rtt = $rtt * 1000
pairs = sorted((tuple(map(float, l.split())) for l in sys.stdin if l.strip()), key=lambda p: (p[1] - p[0] - rtt) / (p[0] + rtt))
err = lambda p: 100 * (p[1] - p[0] - rtt) / (p[0] + rtt)
b, m = pairs[len(pairs) // 2]
print(f'| $rtt | {m:.0f} | {b + rtt:.0f} (loopback {b:.0f}) | {err((b, m)):+.1f}% | {err(pairs[0]):+.1f}% to {err(pairs[-1]):+.1f}% |')"
done
