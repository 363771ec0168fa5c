#!/usr/bin/env bash
# Benchmark (not a test): the floor of pipelab's HTTP stack for one SET per
# request. The bare relay (bench/bare_relay: hyper 1 on a current-thread
# tokio runtime, each POST answered after one `SET bench v` round trip on
# its one Redis connection, nothing parsed) against Webdis (GET
# /SET/bench/v), `POST /api/v1/batch {"commands": [["SET","bench","v"]]}`
# and Upstash's `POST /` `["SET","bench","v"]`, all on one redis-server.
# wrk at 1 connection (1 thread) and at 64 (2 threads); in each round every
# contender runs once, the order rotating from round to round, so that the
# machine's drift falls on all alike. Figures: medians over the rounds;
# ratios are medians of each round's own ratio to the relay; beside them
# each server's CPU time per request (/proc/PID/stat). Goal:
# `/api/v1/batch` and `POST /` at 1 connection ≥ 0.95x the relay.
#
# At 64 connections the relay is no floor: its requests take turns on one
# Redis connection, one round trip each, where pipelab writes concurrent
# requests' commands together.
#
# Usage: bench/bare_relay.sh [SECONDS_PER_WRK_RUN (default 5)] [ROUNDS (default 5)]
#   PIPELAB_BIN=path   this pipelab binary instead of building target/release/pipelab
#   CONNS="1 64"       the connection counts
#   SYSCALLS=1         then, at 1 connection, system calls per request of the
#                      relay and of pipelab's two routes (`strace -c -f` attached
#                      during a wrk run of SYSCALL_SECONDS, default 3)
# Needs wrk, webdis, redis-server, cargo (the relay builds offline from
# ~/.cargo's registry); wrk and webdis are installed with apt-get if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
DURATION=${1:-5}
ROUNDS=${2:-5}
CONNS=${CONNS:-1 64}
ensure_wrk
ensure_pkg webdis
ensure_pkg redis-server
[ "${SYSCALLS:-}" != 1 ] || ensure_pkg strace

if [ -n "${PIPELAB_BIN:-}" ]; then
  PIPELAB=$PIPELAB_BIN
else
  cargo build -q --release -p pipelab
  PIPELAB=target/release/pipelab
fi
cargo build -q --release --offline --locked --manifest-path bench/bare_relay/Cargo.toml --target-dir target/bare_relay
RELAY=target/bare_relay/release/bare_relay

RPORT=$(free_port)
start_redis "$RPORT"

LPORT=$(free_port)
"$RELAY" "127.0.0.1:$LPORT" "127.0.0.1:$RPORT" >/dev/null &
LPID=$!; pids+=($LPID)
APORT=$(free_port)
PIPELAB_LOG=warn "$PIPELAB" serve --listen "127.0.0.1:$APORT" --redis "redis://127.0.0.1:$RPORT" --web-dir "$work/none" >/dev/null 2>"$work/pipelab.log" &
APID=$!; pids+=($APID)
wait_port "$LPORT"; wait_port "$APORT"
WPORT=$(free_port)
start_webdis "$RPORT" "$WPORT"
WDPID=$webdis_pid
write_set_scripts

# Each contender answers a SET before it is timed.
curl -sf -X POST -d '{"commands": [["SET", "bench", "v"]]}' "http://127.0.0.1:$LPORT/" | grep -q '"result":"OK"' || { echo "the relay does not answer SET" >&2; exit 1; }
curl -sf "http://127.0.0.1:$WPORT/SET/bench/v" | grep -q OK || { echo "webdis does not answer SET" >&2; exit 1; }
curl -sf -H 'content-type: application/json' -d '{"commands": [["SET", "bench", "v"]]}' "http://127.0.0.1:$APORT/api/v1/batch" | grep -q '"ok":1' || { echo "pipelab does not answer SET" >&2; exit 1; }
curl -sf -H 'content-type: application/json' -d '["SET", "bench", "v"]' "http://127.0.0.1:$APORT/" | grep -q '"result":"OK"' || { echo "pipelab's POST / does not answer SET" >&2; exit 1; }

NAMES=("bare relay" "Webdis" "POST /api/v1/batch" "POST / (Upstash)")
URLS=("http://127.0.0.1:$LPORT/" "http://127.0.0.1:$WPORT/SET/bench/v" "http://127.0.0.1:$APORT/api/v1/batch" "http://127.0.0.1:$APORT/")
SCRIPTS=("$work/upstash.lua" "" "$work/post.lua" "$work/upstash.lua")

PIDS=("$LPID" "$WDPID" "$APID" "$APID")
TICK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system

# wrk → "requests/s p50_ms requests cpu_us_per_request" (the server's CPU,
# user + system, over the run: it moves far less with the machine's load
# than requests/s); non-2xx answers and socket errors are noted (printed
# under the tables).
wrk_run() { # connections seconds url [script] [server_pid]
  local c=$1 secs=$2 url=$3 script=${4:-} pid=${5:-} threads=2 out t0=0 t1=0
  [ "$c" = 1 ] && threads=1
  [ -z "$pid" ] || t0=$(cpu_ticks "$pid")
  out=$(wrk -t"$threads" -c"$c" -d"${secs}s" --latency ${script:+-s "$script"} "$url")
  [ -z "$pid" ] || t1=$(cpu_ticks "$pid")
  if grep -qE "Non-2xx|Socket errors" <<<"$out"; then
    echo "$url c=$c: $(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ')" | tee -a "$work/errors" >&2
  fi
  awk -v t0="$t0" -v t1="$t1" -v tick="$TICK" '/^Requests\/sec:/ {rps=$2}
       $1 == "50%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; p50=v}
       / requests in / {n=$1}
       END {print rps, p50, n, (n > 0 ? (t1 - t0) * 1e6 / tick / n : 0)}' <<<"$out"
}

echo "[bench] $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds of ${DURATION}s per contender" >&2
for c in $CONNS; do
  : >"$work/rounds_$c"
  for r in $(seq 0 $((ROUNDS - 1))); do
    row=()
    for i in 0 1 2 3; do row+=("" "" ""); done
    # The order rotates: round r starts with contender r mod 4.
    for k in 0 1 2 3; do
      i=$(( (r + k) % 4 ))
      read -r rps p50 _ cpu < <(wrk_run "$c" "$DURATION" "${URLS[$i]}" "${SCRIPTS[$i]}" "${PIDS[$i]}")
      row[$((3 * i))]=$rps row[$((3 * i + 1))]=$p50 row[$((3 * i + 2))]=$cpu
    done
    echo "${row[*]}" >>"$work/rounds_$c"
    echo "[bench] c=$c round $((r + 1)): ${row[*]}" >&2
  done
done
echo "[bench] done $(date -u '+%H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

echo "## One SET per request against the bare relay ($(date -u +%Y-%m-%d), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds of ${DURATION}s per contender)"
for c in $CONNS; do
  python3 - "$work/rounds_$c" "$c" "${NAMES[@]}" <<'PY'
import statistics, sys
path, c, names = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [list(map(float, l.split())) for l in open(path) if l.strip()]
print(f"\n### {c} connection{'s' if c != '1' else ''}\n")
print("| contender | req/s (median) | p50 ms (median) | ratio to the relay: median (range) | per round | server CPU µs/request (median) | relay's CPU ÷ this one's |")
print("|---|---|---|---|---|---|---|")
for i, name in enumerate(names):
    rps = [r[3 * i] for r in rows]
    # A run that answered nothing has no ratio (its errors are listed below).
    ratios = [r[3 * i] / r[0] for r in rows if r[0] > 0] or [0]
    cpu = statistics.median(r[3 * i + 2] for r in rows)
    cpu_ratio = statistics.median([r[2] / r[3 * i + 2] for r in rows if r[3 * i + 2] > 0] or [0])
    print(f"| {name} | {statistics.median(rps):.0f} | {statistics.median(r[3 * i + 1] for r in rows):.3f} | "
          f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}–{max(ratios):.2f}) | {' '.join(f'{x:.2f}' for x in ratios)} | "
          f"{cpu:.1f} | {cpu_ratio:.2f}x |")
PY
done

[ ! -s "$work/errors" ] || { echo; echo "Errors:"; sed 's/^/- /' "$work/errors"; }

[ "${SYSCALLS:-}" = 1 ] || exit 0
# System calls per request at 1 connection: strace attached to every thread
# of the server (-f) for one wrk run; it slows the server, not what it calls.
SECS=${SYSCALL_SECONDS:-3}
echo
echo "### System calls per request at 1 connection (\`strace -c -f\`, wrk ${SECS}s each)"
echo
syscalls() { # pid url script label
  strace -c -f -p "$1" -o "$work/strace.txt" 2>/dev/null &
  local spid=$!
  sleep 0.5
  local n
  read -r _ _ n _ < <(wrk_run 1 "$SECS" "$2" "$3")
  kill -INT "$spid"; wait "$spid" 2>/dev/null || true
  python3 - "$work/strace.txt" "$n" "$4" <<'PY'
import sys
path, n, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
calls = {}
for line in open(path):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        calls[f[-1]] = int(f[3])
total = sum(calls.values())
top = sorted(calls.items(), key=lambda kv: -kv[1])
print(f"| {label} | {n} | {total / n:.2f} | " + ", ".join(f"{k} {v / n:.2f}" for k, v in top if v / n >= 0.01) + " |")
PY
}
echo "| server | requests | calls per request | by call, per request |"
echo "|---|---|---|---|"
syscalls "$LPID" "${URLS[0]}" "${SCRIPTS[0]}" "bare relay"
syscalls "$APID" "${URLS[2]}" "${SCRIPTS[2]}" "pipelab, POST /api/v1/batch"
syscalls "$APID" "${URLS[3]}" "${SCRIPTS[3]}" "pipelab, POST /"
