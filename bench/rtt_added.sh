#!/usr/bin/env bash
# Benchmark (not a test): what a simulated RTT adds to each sequential
# round trip, three ways from the same runs, so that they can be compared:
# by total time (the run's `total_us` per command, less the run at 0 ms),
# by the median command latency (`reply_us − sent_us`, as bench/network.sh
# measures it) and by the median cycle (one command's `sent_us` to the
# next's). Runs at 0 ms and at each RTT alternate, pair by pair, against
# one redis-server: the loopback reference is taken just before each run.
#
# Usage: bench/rtt_added.sh [PAIRS (default 7)] [RTTS (default "0.2 0.5")]
#   PIPELAB_BIN=path   this binary instead of building target/release/pipelab
#   COMMAND=PING       1000 PINGs instead of 1000 SETs
# Needs redis-server, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
PAIRS=${1:-7}
RTTS=${2:-0.2 0.5}
if [ -n "${PIPELAB_BIN:-}" ]; then
  BIN=$PIPELAB_BIN
else
  cargo build -q --release -p pipelab
  BIN=target/release/pipelab
fi
RPORT=$(free_port)
start_redis "$RPORT"
if [ "${COMMAND:-SET}" = PING ]; then
  python3 -c "print('PING\n' * 1000, end='')" >"$work/cmds.txt"
else
  python3 -c "print(''.join(f'SET k:{i} {i}\n' for i in range(1000)), end='')" >"$work/cmds.txt"
fi
echo "[bench] $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $PAIRS pairs, 1000 ${COMMAND:-SET}s, $BIN" >&2
for rtt in $RTTS; do
  for p in $(seq "$PAIRS"); do
    for r in 0 "$rtt"; do
      "$BIN" run "$work/cmds.txt" --mode sequential --rtt "$r" --redis "redis://127.0.0.1:$RPORT" --json >"$work/$rtt-$p-$r.json"
    done
  done
done
echo "[bench] load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$work" "$PAIRS" "$RTTS" <<'PY'
import json, statistics as st, sys
work, pairs, rtts = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def figures(path):
    r = json.load(open(path))
    res, s = r["results"], r["summary"]
    return {
        "total": s["total_us"] / len(res),
        "latency": st.median(x["reply_us"] - x["sent_us"] for x in res),
        "cycle": st.median(b["sent_us"] - a["sent_us"] for a, b in zip(res, res[1:])),
        "achieved": s.get("achieved_rtt_ms"),
    }
print("| asked RTT | loopback: latency / cycle / total per command (µs) | added per round trip by the median latency | by the median cycle | by total time | pairs' range by total time | `achieved_rtt_ms` |")
print("|---|---|---|---|---|---|---|")
for rtt in rtts:
    base, at = [], []
    for p in range(1, pairs + 1):
        base.append(figures(f"{work}/{rtt}-{p}-0.json"))
        at.append(figures(f"{work}/{rtt}-{p}-{rtt}.json"))
    gain = lambda k: [b[k] - a[k] for a, b in zip(base, at)]
    med = lambda k: st.median(gain(k))
    asked = float(rtt) * 1000
    pct = lambda v: f"{v:.0f} µs ({100 * (v - asked) / asked:+.1f}%)"
    tot = gain("total")
    print(f"| {rtt} ms | {st.median(b['latency'] for b in base):.0f} / {st.median(b['cycle'] for b in base):.0f} / {st.median(b['total'] for b in base):.0f} "
          f"| {pct(med('latency'))} | {pct(med('cycle'))} | {pct(med('total'))} | {min(tot):.0f}–{max(tot):.0f} µs "
          f"| {st.median(a['achieved'] for a in at):.3f} |")
PY
