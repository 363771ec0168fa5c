#!/usr/bin/env bash
# Tests of the `resp` crate (the codec), from the repo root:
#   - (in `cargo test --workspace`, run by scripts/test.sh) unit tests of every type, error and
#     limit; property tests; differential tests against hiredis (python3 +
#     PyPI hiredis), redis-server (inline splitting, request streams) and
#     redis-cli (display) — each starts its own redis-server on a free port;
#   - the wasm32 build (no std, with and without reply JSON), and a few
#     checks run as wasm32 under node (resp/wasm32-check: 32-bit lengths);
#   - the codec's cargo-fuzz targets (decode, inline) built and run for
#     RESP_FUZZ_SECONDS (default 20) each (body_json, the API's incremental
#     body parser, needs all of pipelab under ASan: scripts/fuzz-long.sh), from the committed corpus (fuzz/corpus, grown by
#     scripts/fuzz-long.sh) and seeds; what they find goes to a temporary
#     directory (skip with PIPELAB_SKIP_FUZZ=1; cargo-fuzz comes from setup.sh).
# Benchmarks are not tests: `cargo bench -p resp --bench decode` (resp/BENCH.md).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${RESP_FUZZ_SECONDS:-20}"
log() { printf '[test-resp] %s\n' "$*" >&2; }

# The crate's own tests run in `cargo test --workspace` (scripts/test.sh);
# alone: cargo test -p resp --all-features

log "wasm32 build"
cargo build -p resp --target wasm32-unknown-unknown --no-default-features --features json
cargo build -p resp --target wasm32-unknown-unknown --no-default-features

# 32-bit usize: lengths beyond the address space are errors (run under node
# by wasm-bindgen-test-runner, which setup.sh installs with wasm-bindgen-cli).
log "wasm32 checks under node"
for tool in node wasm-bindgen-test-runner; do
  command -v "$tool" >/dev/null || { log "$tool not found: run scripts/setup.sh"; exit 1; }
done
(cd resp/wasm32-check && CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --release --target wasm32-unknown-unknown)

if [ "${PIPELAB_SKIP_FUZZ:-0}" != 1 ]; then
  # The machine has a stable toolchain only: RUSTC_BOOTSTRAP lets cargo-fuzz
  # pass its nightly flags (-Zsanitizer=address).
  export RUSTC_BOOTSTRAP=1
  log "cargo fuzz build"
  (cd fuzz && cargo fuzz build -O)
  found="$(mktemp -d)"
  trap 'rm -rf "$found"' EXIT
  for target in decode inline; do
    log "cargo fuzz run $target for ${FUZZ_SECONDS}s"
    mkdir -p "fuzz/corpus/$target" "$found/$target"
    (cd fuzz && cargo fuzz run -O "$target" "$found/$target" "corpus/$target" "seeds/$target" -- \
      -max_total_time="$FUZZ_SECONDS" -dict=resp.dict -max_len=4096 -print_final_stats=1 2>&1 | tail -n 12)
  done
fi
log "ok"
