#!/usr/bin/env bash
# Benchmark (not a test): what checking a token costs (the single-command
# and 100k-batch figures with a token configured should stay within 5% of
# those without).
#
# Two `pipelab serve` (release build) against one redis-server of their
# own, started together: A without tokens, B with `--token` (and a
# read-only and an operator token, so that a check compares three digests).
# Rounds A B A B …, each round running both back to back so the machine's
# drift hits both alike:
#   - single-command requests: wrk, POST /api/v1/batch `SET bench v`, 16
#     connections, SECONDS per run (B's requests carry
#     `Authorization: Bearer …`);
#   - one 100k-SET batch (pipeline, one round trip, `results: errors`)
#     timed by curl's time_total.
# Prints each figure's median over the rounds and the ratio B / A
# (requests/s: above 0.95 is within 5%; batch time: below 1.05).
#
# Usage: bench/token_overhead.sh [ROUNDS (default 5)] [SECONDS per wrk run (default 5)]
#   PIPELAB_BIN=path   use this binary instead of building target/release/pipelab
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/wait-ready.sh
source bench/lib.sh

ROUNDS=${1:-5}
SECS=${2:-5}
N=100000
TOKEN=bench-token-0123456789abcdef

ensure_wrk
if [ -n "${PIPELAB_BIN:-}" ]; then
  PIPELAB=$PIPELAB_BIN
else
  cargo build -q --release -p pipelab --bin pipelab
  PIPELAB=target/release/pipelab
fi


RPORT=$(free_port)
start_redis "$RPORT"
PORT_A=$(free_port)
PORT_B=$(free_port)
PIPELAB_LOG=warn "$PIPELAB" serve --listen "127.0.0.1:$PORT_A" --redis "redis://127.0.0.1:$RPORT" \
  --web-dir "$work/none" >/dev/null 2>"$work/a.log" &
pids+=($!)
# An operator token too where the binary has them (older builds do not).
operator=()
"$PIPELAB" serve --help | grep -q -- --operator-token && operator=(--operator-token bench-operator)
PIPELAB_LOG=warn "$PIPELAB" serve --listen "127.0.0.1:$PORT_B" --redis "redis://127.0.0.1:$RPORT" \
  --web-dir "$work/none" --token "$TOKEN" --readonly-token bench-readonly "${operator[@]}" \
  >/dev/null 2>"$work/b.log" &
pids+=($!)
wait_ready "$PIPELAB" "$PORT_A" >/dev/null
wait_ready "$PIPELAB" "$PORT_B" >/dev/null

python3 - "$work" "$N" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
cmds = [["SET", f"key:{i:06d}", f"value:{i:06d}"] for i in range(n)]
json.dump({"commands": cmds, "mode": "pipeline", "batch_size": n, "results": "errors"}, open(f"{work}/batch.json", "w"))
PY
for side in a b; do
  auth=""
  [ "$side" = b ] && auth="wrk.headers[\"Authorization\"] = \"Bearer $TOKEN\""
  cat >"$work/post_$side.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"commands": [["SET", "bench", "v"]]}'
wrk.headers["Content-Type"] = "application/json"
$auth
LUA
done
# Without the token B refuses: the token is really checked.
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -d '{"commands":[["PING"]]}' "http://127.0.0.1:$PORT_B/api/v1/batch")
[ "$code" = 401 ] || { echo "B without a token answered $code, not 401" >&2; exit 1; }

single() { # side port → requests/s
  local out
  out=$(wrk -t2 -c16 -d"${SECS}s" -s "$work/post_$1.lua" "http://127.0.0.1:$2/api/v1/batch")
  if grep -qE "Non-2xx|Socket errors" <<<"$out"; then echo "[bench] $1: $(grep -E 'Non-2xx|Socket errors' <<<"$out")" >&2; fi
  awk '/^Requests\/sec:/ {print $2}' <<<"$out"
}
batch() { # side port → seconds
  local auth=()
  [ "$1" = b ] && auth=(-H "authorization: Bearer $TOKEN")
  local t
  t=$(curl -sf "${auth[@]}" -w '%{time_total}' -H 'content-type: application/json' --data-binary "@$work/batch.json" \
    "http://127.0.0.1:$2/api/v1/batch" -o "$work/report_$1.json")
  python3 -c "import json; s=json.load(open('$work/report_$1.json'))['summary']; assert s['ok']==$N, s"
  echo "$t"
}

for r in $(seq "$ROUNDS"); do
  single a "$PORT_A" >>"$work/single_a"
  single b "$PORT_B" >>"$work/single_b"
  batch a "$PORT_A" >>"$work/batch_a"
  batch b "$PORT_B" >>"$work/batch_b"
  echo "[bench] round $r/$ROUNDS: single A $(tail -1 "$work/single_a") B $(tail -1 "$work/single_b") req/s; 100k A $(tail -1 "$work/batch_a") B $(tail -1 "$work/batch_b") s" >&2
done

sa=$(median <"$work/single_a"); sb=$(median <"$work/single_b")
ba=$(median <"$work/batch_a"); bb=$(median <"$work/batch_b")
ratio() { python3 -c "print(f'{$1/$2:.3f}')"; }
cat <<MD
### Token overhead ($(date -u +%Y-%m-%d), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds A B A B, wrk ${SECS}s × 16 connections)

| figure | A: no token (median) | B: token configured and sent (median) | B / A |
|---|---|---|---|
| single-command requests/s | $sa | $sb | $(ratio "$sb" "$sa") |
| 100k-SET batch, s (curl time_total) | $ba | $bb | $(ratio "$bb" "$ba") |

All rounds: single A $(paste -sd' ' "$work/single_a"); B $(paste -sd' ' "$work/single_b"); 100k A $(paste -sd' ' "$work/batch_a"); B $(paste -sd' ' "$work/batch_b").
MD
