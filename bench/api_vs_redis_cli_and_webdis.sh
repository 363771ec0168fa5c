#!/usr/bin/env bash
# Benchmark (not a test) of the REST API. Two comparisons on the
# same machine, against the same redis-server (its own, on a free port):
#
#  1. A 100k-SET batch: POST /api/v1/batch in pipeline mode with
#     batch_size 100000 (one round trip: everything is written before
#     waiting, as `redis-cli --pipe` writes) vs `redis-cli --pipe` on the
#     same commands (RESP made by `pipelab resp encode`). Goal: API
#     throughput >= 0.95x redis-cli's. For reference, the same batch with
#     batch_size 1000 (100 round trips, each waiting for its replies)
#     is timed too. Each side is timed
#     without its client's own start-up: the API by curl's `time_total`
#     (connect to the last byte of the report; curl starts in ~8 ms and reads
#     the 3.8 MiB file before that), redis-cli by its wall time minus the
#     median wall time of `redis-cli --pipe` on empty input (start, connect,
#     its end-marker round trip, exit: ~5 ms). Whole-process wall times are
#     printed too.
#  2. One SET per request with wrk at 1 and 64 connections: a single-command
#     POST /api/v1/batch and the Upstash-compatible single command
#     (POST / ["SET","bench","v"], as @upstash/redis sends it) vs Webdis
#     (Debian package `webdis`) doing the same SET (GET /SET/key/value), in
#     rounds (Webdis, batch, POST / … repeated). Goals: /api/v1/batch
#     requests/s >= Webdis's; POST / >= 1.2x Webdis's; p50 <= Webdis's.
#
# Usage: bench/api_vs_redis_cli_and_webdis.sh [SECONDS_PER_WRK_RUN (default 10)]
#   WRK_ROUNDS=n  rounds of the single-SET comparison (default 5)
# Installs wrk and webdis with apt-get if missing. Prints a Markdown table;
# the figures and the machine they came from go in bench/README-api.md.
# Environment (both optional, for before/after comparisons):
#   PIPELAB_BIN=path   run this pipelab binary instead of building target/release/pipelab
#                      (one without POST /, such as 976cb3f, runs without that contender)
#   SKIP_100K=1        skip the 100k-SET comparison (part 1)
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-10}
N=100000
RUNS=7

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v webdis >/dev/null || missing+=(webdis)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-cli >/dev/null || missing+=(redis-tools)
command -v curl >/dev/null || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[bench] apt-get install ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ -n "${PIPELAB_BIN:-}" ]; then
  PIPELAB=$PIPELAB_BIN
else
  cargo build -q --release -p pipelab
  PIPELAB=target/release/pipelab
fi
SKIP_100K=${SKIP_100K:-}

source bench/lib.sh
now_ns() { date +%s%N; }

RPORT=$(free_port)
start_redis "$RPORT"

APORT=$(free_port)
PIPELAB_LOG=warn "$PIPELAB" serve --listen "127.0.0.1:$APORT" --redis "redis://127.0.0.1:$RPORT" \
  --web-dir "$work/none" >/dev/null 2>"$work/pipelab.log" &
pids+=($!)
wait_port "$APORT"

# --- 1. 100k SETs ----------------------------------------------------------
if [ -z "$SKIP_100K" ]; then
python3 - "$work" "$N" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
cmds = [["SET", f"key:{i:06d}", f"value:{i:06d}"] for i in range(n)]
with open(f"{work}/cmds.txt", "w") as f:
    f.write("".join(f"{c[0]} {c[1]} {c[2]}\n" for c in cmds))
with open(f"{work}/batch.json", "w") as f:
    json.dump({"commands": cmds, "mode": "pipeline", "batch_size": n}, f)
with open(f"{work}/batch_errors.json", "w") as f:
    json.dump({"commands": cmds, "mode": "pipeline", "batch_size": n, "results": "errors"}, f)
with open(f"{work}/batch_1000.json", "w") as f:
    json.dump({"commands": cmds, "mode": "pipeline", "batch_size": 1000, "results": "errors"}, f)
PY
"$PIPELAB" resp encode "$work/cmds.txt" >"$work/cmds.resp"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# One round = each contender once, back to back, so that the machine's
# drift (a VM's speed moves by 10-20% from minute to minute) hits all of
# them alike; medians over the rounds.
cli_run() { # → "wall_us empty_us"
  local t0 t1 t2 out
  t0=$(now_ns)
  out=$(redis-cli -p "$RPORT" --pipe <"$work/cmds.resp")
  t1=$(now_ns)
  grep -q "errors: 0, replies: $N" <<<"$out" || { echo "redis-cli --pipe: $out" >&2; exit 1; }
  redis-cli -p "$RPORT" --pipe </dev/null >/dev/null
  t2=$(now_ns)
  echo "$(( (t1 - t0) / 1000 )) $(( (t2 - t1) / 1000 ))"
}
api_run() { # body-file tag → appends "transfer_us exec_us wall_us" to $work/tag
  local t0 t1 total exec
  t0=$(now_ns)
  total=$(curl -sf -w '%{time_total}' -H 'content-type: application/json' --data-binary "@$1" \
    "http://127.0.0.1:$APORT/api/v1/batch" -o "$work/report_$2.json")
  t1=$(now_ns)
  exec=$(python3 -c "import json,sys; s=json.load(open('$work/report_$2.json'))['summary']; assert s['ok']==$N, s; print(s['total_us'])")
  echo "$(python3 -c "print(round($total * 1e6))") $exec $(( (t1 - t0) / 1000 ))" >>"$work/$2"
}
cli_times=() cli_empty=()
for _ in $(seq $RUNS); do
  read -r wall empty < <(cli_run)
  cli_times+=("$wall") cli_empty+=("$empty")
  api_run "$work/batch.json" all
  api_run "$work/batch_errors.json" errors
  api_run "$work/batch_1000.json" b1000
done
cli_wall_us=$(printf '%s\n' "${cli_times[@]}" | median)
cli_fixed_us=$(printf '%s\n' "${cli_empty[@]}" | median)
cli_us=$(( cli_wall_us - cli_fixed_us ))
medians() { # tag → "transfer_us exec_us report_bytes wall_us"
  echo "$(cut -d' ' -f1 "$work/$1" | median) $(cut -d' ' -f2 "$work/$1" | median) $(stat -c %s "$work/report_$1.json") $(cut -d' ' -f3 "$work/$1" | median)"
}
read -r api_us exec_us report_bytes api_wall_us < <(medians all)
read -r apie_us exece_us reporte_bytes apie_wall_us < <(medians errors)
read -r api1k_us exec1k_us report1k_bytes api1k_wall_us < <(medians b1000)
request_bytes=$(stat -c %s "$work/batch.json")
fi

# --- 2. one SET per request: wrk vs Webdis ---------------------------------
WPORT=$(free_port)
start_webdis "$RPORT" "$WPORT"
curl -sf "http://127.0.0.1:$WPORT/SET/bench/v" | grep -q OK || { echo "webdis does not answer SET" >&2; exit 1; }
write_set_scripts
curl -sf -H 'content-type: application/json' -d '{"commands": [["SET", "bench", "v"]]}' \
  "http://127.0.0.1:$APORT/api/v1/batch" | grep -q '"ok":1' || { echo "pipelab does not answer SET" >&2; exit 1; }
# A binary from before the Upstash surface (for a before/after
# comparison through PIPELAB_BIN) runs without the POST / contender.
UPSTASH=1
if ! curl -sf -H 'content-type: application/json' -d '["SET", "bench", "v"]' \
  "http://127.0.0.1:$APORT/" | grep -q '"result":"OK"'; then
  [ -n "${PIPELAB_BIN:-}" ] || { echo "pipelab's POST / does not answer SET" >&2; exit 1; }
  echo "[bench] $PIPELAB_BIN does not serve POST / (Upstash): its column reads 0" >&2
  UPSTASH=0
fi

# wrk output → "requests/s p50" (p50 in ms)
wrk_run() { # connections url [script]
  local c=$1 url=$2 script=${3:-} threads=2
  [ "$c" = 1 ] && threads=1
  local out
  out=$(wrk -t"$threads" -c"$c" -d"${DURATION}s" --latency ${script:+-s "$script"} "$url")
  local errors
  errors=$(grep -E "Non-2xx|Socket errors" <<<"$out" || true)
  [ -z "$errors" ] || echo "[bench] $url c=$c: $errors" >&2
  local rps p50
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; print v}' <<<"$out")
  echo "$rps $p50"
}

# Rounds A B C A B C …: Webdis, /api/v1/batch and POST / one run each per
# round and per connection count, so that the VM's drift from minute to
# minute falls on all three alike; the figures are medians over rounds of
# each round's own ratio (until 2026-12-01 each contender ran once, one
# after the other, and three runs gave 0.54x to 1.14x).
WRK_ROUNDS=${WRK_ROUNDS:-5}
for c in 1 64; do
  : >"$work/wrk_$c"
  for _ in $(seq "$WRK_ROUNDS"); do
    read -r w_rps w_p50 < <(wrk_run "$c" "http://127.0.0.1:$WPORT/SET/bench/v")
    read -r b_rps b_p50 < <(wrk_run "$c" "http://127.0.0.1:$APORT/api/v1/batch" "$work/post.lua")
    u_rps=0 u_p50=0
    [ "$UPSTASH" = 0 ] || read -r u_rps u_p50 < <(wrk_run "$c" "http://127.0.0.1:$APORT/" "$work/upstash.lua")
    echo "$w_rps $w_p50 $b_rps $b_p50 $u_rps $u_p50" >>"$work/wrk_$c"
  done
done
# → "webdis_rps webdis_p50 batch_rps batch_p50 upstash_rps upstash_p50 batch_ratio upstash_ratio rounds"
wrk_summary() { # connections
  python3 - "$work/wrk_$1" <<'PY2'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
med = lambda i: statistics.median(r[i] for r in rows)
br = [r[2] / r[0] for r in rows]
ur = [r[4] / r[0] for r in rows]
print(f"{med(0):.0f} {med(1):.3f} {med(2):.0f} {med(3):.3f} {med(4):.0f} {med(5):.3f} "
      f"{statistics.median(br):.2f} {statistics.median(ur):.2f} "
      + "/".join(f"{b:.2f},{u:.2f}" for b, u in zip(br, ur)))
PY2
}
read -r w1_rps w1_p50 p1_rps p1_p50 u1_rps u1_p50 p1_ratio u1_ratio r1 < <(wrk_summary 1)
read -r w64_rps w64_p50 p64_rps p64_p50 u64_rps u64_p50 p64_ratio u64_ratio r64 < <(wrk_summary 64)

ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
cat <<MD
## Results ($(date -u +%Y-%m-%d), $(nproc) cores, $(redis-server --version | awk '{print $3}'), wrk ${DURATION}s per run)
MD
if [ -z "$SKIP_100K" ]; then
cli_rate=$(python3 -c "print(round($N / ($cli_us / 1e6)))")
api_rate=$(python3 -c "print(round($N / ($api_us / 1e6)))")
apie_rate=$(python3 -c "print(round($N / ($apie_us / 1e6)))")
api1k_rate=$(python3 -c "print(round($N / ($api1k_us / 1e6)))")
cat <<MD

### 100k SETs in one batch (median of $RUNS rounds, each contender once per round)

| client | time | SET/s | vs redis-cli | process wall time (ratio) |
|---|---|---|---|---|
| redis-cli --pipe | $(( cli_us / 1000 )) ms | $cli_rate | 1.00x | $(( cli_wall_us / 1000 )) ms, of which $(( cli_fixed_us / 1000 )) ms with no input |
| POST /api/v1/batch (pipeline, batch_size $N: one round trip), every result | $(( api_us / 1000 )) ms | $api_rate | $(ratio "$cli_us" "$api_us")x | $(( api_wall_us / 1000 )) ms ($(ratio "$cli_wall_us" "$api_wall_us")x) |
| same, \`"results": "errors"\` (summary only when all succeed) | $(( apie_us / 1000 )) ms | $apie_rate | $(ratio "$cli_us" "$apie_us")x | $(( apie_wall_us / 1000 )) ms ($(ratio "$cli_wall_us" "$apie_wall_us")x) |
| reference: batch_size 1000 (100 round trips), errors only | $(( api1k_us / 1000 )) ms | $api1k_rate | $(ratio "$cli_us" "$api1k_us")x | $(( api1k_wall_us / 1000 )) ms ($(ratio "$cli_wall_us" "$api1k_wall_us")x) |

API detail: executor time (summary.total_us) $(( exec_us / 1000 )) ms, $(( exece_us / 1000 )) ms and $(( exec1k_us / 1000 )) ms; request $(( request_bytes / 1024 )) KiB of JSON; report $(( report_bytes / 1024 )) KiB and $(( reporte_bytes / 1024 )) KiB of JSON.
MD
fi
cat <<MD

### One SET per request (wrk, $WRK_ROUNDS rounds of ${DURATION}s per contender, medians; ratios are medians of per-round ratios to Webdis)

| connections | Webdis req/s | /api/v1/batch req/s | ratio | POST / (Upstash) req/s | ratio | Webdis p50 | /api/v1/batch p50 | POST / p50 |
|---|---|---|---|---|---|---|---|---|
| 1 | $w1_rps | $p1_rps | ${p1_ratio}x | $u1_rps | ${u1_ratio}x | ${w1_p50} ms | ${p1_p50} ms | ${u1_p50} ms |
| 64 | $w64_rps | $p64_rps | ${p64_ratio}x | $u64_rps | ${u64_ratio}x | ${w64_p50} ms | ${p64_p50} ms | ${u64_p50} ms |

Per-round ratios (batch,upstash): 1 connection $r1; 64 connections $r64.
MD
