#!/usr/bin/env bash
# The server matrix: pipelab's tests again against the servers people run,
# each first on PATH as `redis-server` (scripts/lib/servers.sh fetches and
# caches them). `cargo test` in scripts/test.sh already ran everything on
# Debian 12's Redis 7.0; this adds
# - the whole Rust suite on the newest of each: Valkey 9.1 and Redis 8.0;
# - the cluster, failover and sandbox suites on Valkey 8.0 and 8.1 and
#   Redict 7.3;
# - the official Upstash SDKs (scripts/test-upstash.sh) on Redis 8.0 and
#   Valkey 9.1, their newer commands (hash field expiry, HGETDEL…) included.
# A check that needs what a server truly lacks (TLS in a build without it,
# a command it does not have) says so and is noted (PIPELAB_MATRIX_NOTES);
# artifacts/servers.md gets the table: each server, its version, what ran,
# what passed and what the server lacks. Every row runs even after a
# failure; the script fails if any did.
#
#   scripts/test-servers.sh [NAME...]   only these rows (scripts/lib/servers.sh list)
set -euo pipefail
cd "$(dirname "$0")/.."

FULL=(valkey-9.1 redis-8.0)
PARTS=(valkey-8.0 valkey-8.1 redict-7.3)
UPSTASH=(redis-8.0 valkey-9.1)
PART_TESTS=(cluster_api cluster_exec cluster_failover cluster_failover_api cluster_redirect sandbox sandbox_hostile sandbox_jail)

only=("$@")
wanted() { [ ${#only[@]} -eq 0 ] || [[ " ${only[*]} " == *" $1 "* ]]; }

scripts/lib/servers.sh fetch
mkdir -p artifacts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# cargo_counts LOG: "P passed, F failed" summed over cargo test's result lines.
cargo_counts() {
  awk '/^test result:/ { p += $4; f += $6 } END { printf "%d passed, %d failed", p, f }' "$1"
}

rows=()
failed=()
# run NAME WHAT CMD...: one cell of the matrix, CMD run with NAME first on PATH.
run() {
  local name=$1 what=$2 log="$work/$1.$2.log" t0=$SECONDS rc=0 dir
  shift 2
  dir=$(scripts/lib/servers.sh path "$name")
  # The tests start whatever `redis-server` is first on PATH: make sure it is this one.
  [ "$(PATH="$dir:$PATH" redis-server --version)" = "$(head -1 "$dir/../version")" ] ||
    { echo "server matrix: redis-server on PATH is not $name" >&2; exit 1; }
  echo "=== $name: $what ($(head -1 "$dir/../version" | cut -d' ' -f1-3))"
  PATH="$dir:$PATH" PIPELAB_MATRIX_NOTES="$work/$name.$what.notes" "$@" >"$log" 2>&1 || rc=$?
  local counts
  if [ "$what" = upstash ]; then
    counts="$(grep -Eo '^# (pass|fail) [0-9]+' "$log" | awk '{ n[$2] += $3 } END { printf "%d passed, %d failed", n["pass"], n["fail"] }') (node)"
  else
    counts=$(cargo_counts "$log")
  fi
  echo "    $counts, exit $rc, $((SECONDS - t0)) s"
  if [ "$rc" != 0 ]; then
    failed+=("$name $what")
    grep -E 'panicked|FAILED|^not ok|Error' "$log" | head -40 || true
    cp "$log" "artifacts/servers-$name-$what.log"
  fi
  rows+=("$name|$what|$counts|$([ "$rc" = 0 ] && echo pass || echo "**FAIL**")")
}

for name in "${FULL[@]}"; do
  wanted "$name" && run "$name" rust cargo test --workspace --locked --no-fail-fast
done
for name in "${PARTS[@]}"; do
  args=()
  for t in "${PART_TESTS[@]}"; do args+=(--test "$t"); done
  wanted "$name" && run "$name" cluster+sandbox cargo test -p pipelab -p pipelab-server -p pipelab-engine --locked --no-fail-fast "${args[@]}"
done
for name in "${UPSTASH[@]}"; do
  wanted "$name" && run "$name" upstash bash scripts/test-upstash.sh
done

{
  echo "| server | version | suite | result | | the server lacks |"
  echo "|---|---|---|---|---|---|"
  for row in "${rows[@]}"; do
    IFS='|' read -r name what counts verdict <<<"$row"
    version=$(head -1 "$(scripts/lib/servers.sh path "$name")/../version" | awk '{ sub("v=", "", $3); print $1, $3 }')
    lacks=""
    [ ! -f "$work/$name.$what.notes" ] || lacks=$(sed 's/.*: the server lacks //' "$work/$name.$what.notes" | sort -u | paste -sd ';' | sed 's/;/; /g')
    echo "| $name | $version | $what | $counts | $verdict | ${lacks:-—} |"
  done
} >artifacts/servers.md
echo "=== the server matrix (artifacts/servers.md)"
cat artifacts/servers.md
if [ ${#failed[@]} -gt 0 ]; then
  echo "server matrix: failed: ${failed[*]}" >&2
  exit 1
fi
