#!/usr/bin/env bash
# Benchmark (not a test): two or more builds of `pipelab serve` under
# bench/load.sh's loads, side by side. Each binary serves at once on a
# redis-server of its own (the idle ones cost nothing); wrk drives them in
# turn, ROUNDS times, every other round in reverse order, so that the
# machine's drift falls on all alike.
# Per binary: the median requests/s, p99 and CPU time per request
# (/proc/PID/stat, user + system), and the median of the per-round ratios
# to the first binary. On a shared machine requests/s move by tens of
# percent from round to round; CPU per request moves less.
#
#   bench/load_ab.sh OLD_BIN NEW_BIN [...]                 # 1000 connections, 10-command batches
#   SHAPE=big bench/load_ab.sh OLD_BIN NEW_BIN             # 10 connections, 100k-SET batches
#   ROUNDS=10 SECONDS_=8 bench/load_ab.sh …                # the defaults
#
# Needs wrk (installed with apt-get when missing), redis-server, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
[ $# -ge 2 ] || { echo "usage: bench/load_ab.sh OLD_BIN NEW_BIN [...]" >&2; exit 2; }
ROUNDS=${ROUNDS:-10}
SECONDS_=${SECONDS_:-8}
SHAPE=${SHAPE:-small}
ensure_wrk
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

python3 - "$work" "$SHAPE" <<'PY'
import json, sys
work, shape = sys.argv[1], sys.argv[2]
if shape == "small":
    body = {"commands": [["SET", "load:k", "v"], ["INCR", "load:n"], ["GET", "load:k"], ["HSET", "load:h", "f", "1"],
                         ["HGET", "load:h", "f"], ["LPUSH", "load:l", "x"], ["LTRIM", "load:l", "0", "99"],
                         ["EXPIRE", "load:k", "600"], ["EXISTS", "load:k"], ["DEL", "load:gone"]], "mode": "pipeline"}
else:
    n = 100000
    body = {"commands": [["SET", f"load:{i:06d}", f"value:{i:06d}"] for i in range(n)],
            "mode": "pipeline", "batch_size": n, "results": "errors"}
json.dump(body, open(f"{work}/body.json", "w"))
PY
connections=1000
[ "$SHAPE" = small ] || connections=10
cat >"$work/post.lua" <<LUA
local f = assert(io.open("$work/body.json", "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
LUA
drive() { wrk -t2 -c"$connections" -d"$2" --timeout 30s --latency -s "$work/post.lua" "http://127.0.0.1:$1/api/v1/batch"; }

bins=("$@")
ports=() servers=()
for bin in "$@"; do
  rport=$(free_port); port=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" \
    --logfile "$work/redis-$rport.log" --maxclients 10000 &
  pids+=($!)
  # As bench/load.sh: the connections all come from 127.0.0.1 but stand for many clients.
  PIPELAB_MAX_BATCHES_PER_CLIENT=4096 PIPELAB_MAX_BLOCKING_PER_CLIENT=4096 PIPELAB_LOG=warn "$bin" serve \
    --listen "127.0.0.1:$port" --redis "redis://127.0.0.1:$rport" --web-dir "$work/none" \
    --max-connections 4096 --max-connections-per-ip 4096 >/dev/null 2>"$work/pipelab-$port.log" &
  pids+=($!)
  servers+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  drive "$port" 2s >/dev/null
  ports+=("$port")
done

tick=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for round in $(seq "$ROUNDS"); do
  # Every other round in reverse order: neither binary always runs right
  # after the other's 1000 connections close.
  order=("${!ports[@]}")
  [ $((round % 2)) -eq 1 ] || order=($(printf '%s\n' "${order[@]}" | tac))
  for i in "${order[@]}"; do
    before=$(cpu "${servers[$i]}")
    out=$(drive "${ports[$i]}" "${SECONDS_}s")
    after=$(cpu "${servers[$i]}")
    echo "$out" | grep -q "Non-2xx\|Socket errors" && echo "[load_ab] $(basename "${bins[$i]}"): errors in round $round" >&2
    echo "$round $i $(echo "$out" | awk -v before="$before" -v after="$after" -v tick="$tick" '
      /requests in/ {requests = $1}
      /Requests\/sec/ {rps = $2}
      $1 == "99%" {p99 = $2; if (p99 ~ /ms$/) p99 += 0; else if (p99 ~ /us$/) p99 /= 1000; else p99 *= 1000}
      END {printf "%s %s %.1f", rps, p99, (after - before) * 1e6 / tick / requests}')"
  done
done >"$work/rounds"

python3 - "$work/rounds" "$@" <<'PY'
import statistics as st, sys
rounds, bins = sys.argv[1], sys.argv[2:]
rows = [l.split() for l in open(rounds)]
by = {i: [(float(r[2]), float(r[3]), float(r[4])) for r in rows if int(r[1]) == i] for i in range(len(bins))}
print(f"{'binary':40s} {'req/s':>9s} {'p99 ms':>7s} {'CPU us/req':>10s} {'req/s vs first':>15s} {'CPU vs first':>13s}")
for i, b in enumerate(bins):
    rps = [x[0] for x in by[i]]; p99 = [x[1] for x in by[i]]; cpu = [x[2] for x in by[i]]
    rr = st.median(a[0] / f[0] for a, f in zip(by[i], by[0]))
    cr = st.median(a[2] / f[2] for a, f in zip(by[i], by[0]))
    print(f"{b:40s} {st.median(rps):9.1f} {st.median(p99):7.1f} {st.median(cpu):10.1f} {rr:15.3f} {cr:13.3f}")
PY
