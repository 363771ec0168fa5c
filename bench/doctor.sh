#!/usr/bin/env bash
# Benchmark (not a test): what `pipelab doctor` costs a client. Runs
# redis-benchmark SET/GET with 50 clients at -P 1 (one round trip per
# command) and -P 16, and with one client at -P 1 (its round trip),
# directly against a redis-server and through the doctor (and, for
# reference, through `pipelab proxy`, which forwards without decoding),
# alternating the paths run by run, and prints requests/s and the ratio
# doctor/direct (the issue's goal: the doctor adds at most 10% to a
# round trip on loopback).
#
#   bench/doctor.sh [RUNS] [REQUESTS]     # default 3 runs of 100000 requests
#   PIPELAB=target/debug/pipelab bench/doctor.sh 1 20000   # skip the release build
#   PIPELAB_DOCTOR_ARGS="--threads 1" bench/doctor.sh       # extra flags for the doctor under test
#   PIPELAB_BASELINE=/tmp/pipelab-old bench/doctor.sh       # also an older doctor, same runs
#                                                            # (before/after a change, side by side)
#
# Needs: redis-server, redis-benchmark, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
N=${2:-100000}
if [ -z "${PIPELAB:-}" ]; then
  cargo build --release -q -p pipelab
  PIPELAB=target/release/pipelab
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
WORK=$(mktemp -d)
PORT=$(free_port)
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK" --daemonize no >/dev/null &
PIDS=($!)
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
DOCTOR=$(free_port)
# shellcheck disable=SC2086 # PIPELAB_DOCTOR_ARGS: words
"$PIPELAB" doctor --listen "127.0.0.1:$DOCTOR" --upstream "redis://127.0.0.1:$PORT" --json ${PIPELAB_DOCTOR_ARGS:-} >"$WORK/doctor.jsonl" 2>/dev/null &
PIDS+=($!)
if [ -n "${PIPELAB_BASELINE:-}" ]; then
  BASE=$(free_port)
  "$PIPELAB_BASELINE" doctor --listen "127.0.0.1:$BASE" --upstream "redis://127.0.0.1:$PORT" --json >"$WORK/baseline.jsonl" 2>/dev/null &
  PIDS+=($!)
  for _ in $(seq 100); do redis-cli -p "$BASE" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
PROXY=$(free_port)
"$PIPELAB" proxy --listen "127.0.0.1:$PROXY" --upstream "redis://127.0.0.1:$PORT" 2>/dev/null &
PIDS+=($!)
for p in "$DOCTOR" "$PROXY"; do
  for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
done

# requests/s of one redis-benchmark run: port, pipeline depth, clients.
rps() { redis-benchmark -p "$1" -P "$2" -n "$N" -c "$3" -t set,get -q 2>/dev/null | tr '\r' '\n' | awk '/requests per second/ {s += $2; n++} END {printf "%.0f", s / n}'; }

echo "# pipelab doctor vs direct: redis-benchmark -t set,get -n $N, mean of SET and GET req/s, median of $RUNS alternating runs"
echo "# -c 50: throughput of 50 clients (CPU-bound on a small machine); -c 1 -P 1: one client, so 1/req/s is its round trip"
[ -z "${PIPELAB_DOCTOR_ARGS:-}" ] || echo "# doctor flags: $PIPELAB_DOCTOR_ARGS"
echo "# $(redis-server --version | cut -d' ' -f1-3), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), binary $PIPELAB"
if [ -n "${PIPELAB_BASELINE:-}" ]; then
  echo "# baseline doctor: $PIPELAB_BASELINE"
  echo "| -c | -P | direct req/s | doctor req/s | baseline doctor req/s | proxy req/s | doctor/direct | baseline/direct | doctor/proxy |"
  echo "|---|---|---|---|---|---|---|---|---|"
else
  echo "| -c | -P | direct req/s | doctor req/s | proxy req/s | doctor/direct | doctor/proxy |"
  echo "|---|---|---|---|---|---|---|"
fi
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { python3 -c "print(f'{$1/$2:.2f}x')"; }
for CP in "50 1" "50 16" "1 1"; do
  read -r C P <<<"$CP"
  d=(); t=(); b=(); x=()
  for _ in $(seq "$RUNS"); do
    d+=("$(rps "$PORT" "$P" "$C")"); t+=("$(rps "$DOCTOR" "$P" "$C")"); x+=("$(rps "$PROXY" "$P" "$C")")
    [ -z "${PIPELAB_BASELINE:-}" ] || b+=("$(rps "$BASE" "$P" "$C")")
  done
  md=$(median "${d[@]}"); mt=$(median "${t[@]}"); mx=$(median "${x[@]}")
  if [ -n "${PIPELAB_BASELINE:-}" ]; then
    mb=$(median "${b[@]}")
    echo "| $C | $P | $md | $mt | $mb | $mx | $(ratio "$mt" "$md") | $(ratio "$mb" "$md") | $(ratio "$mt" "$mx") |"
  else
    echo "| $C | $P | $md | $mt | $mx | $(ratio "$mt" "$md") | $(ratio "$mt" "$mx") |"
  fi
done
