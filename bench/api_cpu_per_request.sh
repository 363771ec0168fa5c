#!/usr/bin/env bash
# Benchmark (not a test): CPU time per request of `pipelab serve` and of
# Webdis for one SET per request, measured from /proc/PID/stat (user +
# system) around a wrk run at 1 and at 64 connections, with the
# redis-server's CPU per request beside it. On a machine shared with other
# work, requests/s and p50 move by tens of percent from run to run; CPU per
# request moves much less, so it says whether pipelab does more work per
# request than Webdis. Webdis and pipelab alternate against one redis-server.
#
# Usage: bench/api_cpu_per_request.sh [SECONDS_PER_WRK_RUN (default 5)] [ROUNDS (default 3)]
# Needs wrk, webdis, redis-server (bench/api_vs_redis_cli_and_webdis.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5}
ROUNDS=${2:-3}
# PIPELAB_BIN=path runs that binary instead of building target/release/pipelab.
if [ -n "${PIPELAB_BIN:-}" ]; then
  PIPELAB=$PIPELAB_BIN
else
  cargo build -q --release -p pipelab
  PIPELAB=target/release/pipelab
fi
TICK=$(getconf CLK_TCK)

source bench/lib.sh
ensure_wrk

RPORT=$(free_port)
start_redis "$RPORT"
RPID=$redis_pid
APORT=$(free_port)
PIPELAB_LOG=warn "$PIPELAB" serve --listen "127.0.0.1:$APORT" --redis "redis://127.0.0.1:$RPORT" --web-dir "$work/none" >/dev/null 2>&1 &
APID=$!; pids+=($APID)
wait_port "$APORT"
WPORT=$(free_port)
start_webdis "$RPORT" "$WPORT"
WPID=$webdis_pid
write_set_scripts

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "| round | connections | server | req/s | p50 | server CPU µs/request | redis CPU µs/request |"
echo "|---|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
  for c in 1 64; do
    threads=2; [ "$c" = 1 ] && threads=1
    for who in webdis pipelab; do
      if [ "$who" = webdis ]; then pid=$WPID; url="http://127.0.0.1:$WPORT/SET/bench/v"; script=()
      else pid=$APID; url="http://127.0.0.1:$APORT/api/v1/batch"; script=(-s "$work/post.lua"); fi
      s0=$(cpu_ticks "$pid"); r0=$(cpu_ticks "$RPID")
      out=$(wrk -t"$threads" -c"$c" -d"${DURATION}s" --latency "${script[@]}" "$url")
      s1=$(cpu_ticks "$pid"); r1=$(cpu_ticks "$RPID")
      n=$(awk '/requests in/ {print $1}' <<<"$out")
      rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
      p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
      per() { python3 -c "print(f'{($2 - $1) * 1e6 / $TICK / $n:.1f}')"; }
      echo "| $round | $c | $who | $rps | $p50 | $(per "$s0" "$s1") | $(per "$r0" "$r1") |"
    done
  done
done
