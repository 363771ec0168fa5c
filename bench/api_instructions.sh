#!/usr/bin/env bash
# Benchmark (not a test): user-space instructions per one-SET request of
# `pipelab serve`, counted by valgrind's callgrind. An instruction count
# moves far less with the machine's load than requests/s or CPU time do
# (some: timer polls and wake-ups depend on timing; the same binary gave
# 56.7k quiet and 61.4k with a CI run beside it), so two builds run side by
# side compare well on a busy machine, and callgrind_annotate on the kept
# files says where a regression on the request path went.
#
# Each binary serves on one thread (`--threads 1`) against its own
# redis-server; one kept-alive client sends SMALL then LARGE requests
# (after 20 to warm up; 1 with SHAPE=big), and the figure is
# (instructions after LARGE - after SMALL) / (LARGE - SMALL), so start-up
# and shutdown cancel out.
#
#   bench/api_instructions.sh [BINARY ...]          # default target/release/pipelab (built)
#   PATH_=/ bench/api_instructions.sh BIN           # Upstash `POST /` with ["SET","bench","v"]
#   KEEP=dir bench/api_instructions.sh BIN          # keep the callgrind files in dir
#   SHAPE=small bench/api_instructions.sh BIN       # per 10-command batch (bench/load.sh's small one)
#   SHAPE=big SMALL=1 LARGE=3 bench/api_instructions.sh BIN   # per 100k-SET batch (bench/load.sh's)
#   bench/api_instructions.sh target/bare_relay/release/bare_relay BIN   # the floor (bench/bare_relay.sh builds it)
#
# Needs valgrind (installed with apt-get when missing), redis-server, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
SMALL=${SMALL:-1000}
LARGE=${LARGE:-3000}
ROUTE=${PATH_:-/api/v1/batch}
SHAPE=${SHAPE:-one}
WARM=20
[ "$SHAPE" = big ] && WARM=1
ensure_pkg valgrind
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  cargo build -q --release -p pipelab
  bins=(target/release/pipelab)
fi
out=${KEEP:-$work}
mkdir -p "$out"

cat >"$work/client.py" <<'PY'
import http.client, json, sys
port, n, route, shape = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
body = b'{"commands": [["SET", "bench", "v"]]}' if route != "/" else b'["SET", "bench", "v"]'
if shape == "small":
    body = json.dumps({"commands": [["SET", "load:k", "v"], ["INCR", "load:n"], ["GET", "load:k"], ["HSET", "load:h", "f", "1"],
                                    ["HGET", "load:h", "f"], ["LPUSH", "load:l", "x"], ["LTRIM", "load:l", "0", "99"],
                                    ["EXPIRE", "load:k", "600"], ["EXISTS", "load:k"], ["DEL", "load:gone"]], "mode": "pipeline"}).encode()
elif shape == "big":
    body = json.dumps({"commands": [["SET", f"load:{i:06d}", f"value:{i:06d}"] for i in range(100000)],
                       "mode": "pipeline", "batch_size": 100000, "results": "errors"}).encode()
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.request("POST", route, body, {"Content-Type": "application/json"})
    r = c.getresponse()
    d = r.read()
    assert r.status == 200, d
PY

# instructions BIN N FILE: total instructions of a serve that answered 20 + N requests.
instructions() {
  local rport aport vpid
  rport=$(free_port); aport=$(free_port)
  redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" &
  pids+=($!)
  local rpid=$!
  for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local cmd=("$1" serve --threads 1 --listen "127.0.0.1:$aport" --redis "redis://127.0.0.1:$rport" --web-dir "$work/none")
  # The bare relay answers any POST after one SET; it takes two addresses.
  [ "$(basename "$1")" != bare_relay ] || cmd=("$1" "127.0.0.1:$aport" "127.0.0.1:$rport")
  PIPELAB_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$3" "${cmd[@]}" >/dev/null 2>"$work/valgrind.log" &
  vpid=$!
  for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$aport") 2>/dev/null && break; sleep 0.1; done
  python3 "$work/client.py" "$aport" "$WARM" "$ROUTE" "$SHAPE"
  python3 "$work/client.py" "$aport" "$2" "$ROUTE" "$SHAPE"
  kill -TERM "$vpid"; wait "$vpid" || true
  kill "$rpid"; wait "$rpid" 2>/dev/null || true
  # Less quanta's clock calibration (metrics' clock, once per process): it
  # spins for a fixed time, not a fixed count, so under valgrind it gave
  # -2k to +4k instructions per request between two runs of one binary.
  callgrind_annotate --inclusive=yes --threshold=100 "$3" 2>/dev/null | awk '
    /PROGRAM TOTALS/ {gsub(",", "", $1); total = $1}
    /quanta::Calibration::calibrate/ {gsub(",", "", $1); if ($1 > cal) cal = $1}
    END {print total - cal}'
}

printf '%-40s %14s\n' "binary ($ROUTE)" "instr/request"
for bin in "${bins[@]}"; do
  name=$(basename "$bin")
  a=$(instructions "$bin" "$SMALL" "$out/$name.$SMALL.callgrind")
  b=$(instructions "$bin" "$LARGE" "$out/$name.$LARGE.callgrind")
  printf '%-40s %14d\n' "$bin" $(( (b - a) / (LARGE - SMALL) ))
done
