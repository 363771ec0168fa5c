#!/usr/bin/env bash
# Tests of the executor part: connection/URL, delay line, the three modes,
# failures mid-batch, simulated RTT accuracy, `pipelab run` and `pipelab proxy`.
# Each test starts its own redis-server on a free port. Runnable from the repo root.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v openssl >/dev/null || missing+=(openssl)   # certificates for the TLS test
if [ ${#missing[@]} -gt 0 ]; then
  echo "[test-exec] apt-get install ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Unit tests of the executor's modules, then its integration tests.
cargo test -p pipelab --lib -- conn:: delay:: exec::
for t in backend/tests/exec_*.rs; do
  cargo test -p pipelab --test "$(basename "$t" .rs)"
done
