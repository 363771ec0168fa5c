#!/usr/bin/env bash
# Long fuzzing (issue 20), not in CI: each cargo-fuzz target for
# PIPELAB_FUZZ_MINUTES CPU-minutes (default 15; one libFuzzer process per
# target, so CPU time = wall time), from the corpus kept in the repo
# (fuzz/corpus/TARGET) and the hand-written seeds (fuzz/seeds/TARGET).
# Afterwards the corpus is minimized (`cargo fuzz cmin`) so that what is
# committed stays small, and coverage is reported when `cargo fuzz coverage`
# can run (it needs rustup's llvm-tools component; without it the script
# says so and goes on). A crash stops the script: libFuzzer leaves the input
# in fuzz/artifacts/TARGET/ — fix it and add a regression test.
#
#   scripts/fuzz-long.sh                       # decode, inline, body_json, 15 min each
#   PIPELAB_FUZZ_MINUTES=1 scripts/fuzz-long.sh body_json
#   PIPELAB_FUZZ_SECONDS=10 scripts/fuzz-long.sh         # a check that it all works
#
# Targets: decode (the RESP decoder), inline (the inline parser and the
# request splitter `RequestReader`), body_json (the API's incremental JSON
# body parser against serde_json).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

MINUTES="${PIPELAB_FUZZ_MINUTES:-15}"
SECONDS_EACH="${PIPELAB_FUZZ_SECONDS:-$((MINUTES * 60))}"
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(decode inline body_json)
log() { printf '[fuzz-long] %s\n' "$*" >&2; }

# The machine has a stable toolchain only: RUSTC_BOOTSTRAP lets cargo-fuzz
# pass its nightly flags (-Zsanitizer=address), as scripts/test-resp.sh does.
export RUSTC_BOOTSTRAP=1
log "cargo fuzz build"
cargo fuzz build -O --features api   # body_json needs the `api` feature (all of pipelab)

for target in "${TARGETS[@]}"; do
  mkdir -p "corpus/$target"
  dirs=("corpus/$target")
  [ -d "seeds/$target" ] && dirs+=("seeds/$target")
  flags=(-max_total_time="$SECONDS_EACH" -print_final_stats=1)
  # The RESP dictionary helps the two RESP targets; body_json gets JSON from its seeds.
  [ "$target" = body_json ] || flags+=(-dict=resp.dict -max_len=4096)
  log "$target: ${SECONDS_EACH} s from ${dirs[*]}"
  cargo fuzz run -O --features api "$target" "${dirs[@]}" -- "${flags[@]}" 2>&1 | tail -n 14
  log "$target: minimizing corpus/$target"
  cargo fuzz cmin -O --features api "$target" "corpus/$target" 2>&1 | tail -n 2
  log "$target: $(find "corpus/$target" -type f | wc -l) inputs kept in fuzz/corpus/$target"
  # `cargo fuzz coverage` rebuilds everything instrumented, then needs the
  # toolchain's llvm-profdata/llvm-cov (rustup component llvm-tools).
  sysroot="$(rustc --print sysroot)"
  profdata=""
  for p in "$sysroot"/lib/rustlib/*/bin/llvm-profdata; do [ -x "$p" ] && profdata="$p"; done
  if [ -z "$profdata" ]; then
    log "$target: no coverage report: rustup component llvm-tools is not installed (rustup component add llvm-tools)"
  elif cargo fuzz coverage -O --features api "$target" "corpus/$target" >"target/coverage-$target.log" 2>&1; then
    bin="target/x86_64-unknown-linux-gnu/coverage/x86_64-unknown-linux-gnu/release/$target"
    "$(dirname "$profdata")/llvm-cov" report "$bin" -instr-profile="coverage/$target/coverage.profdata" \
      -ignore-filename-regex='/.cargo/|/rustc/' | tail -n 1
  else
    log "$target: cargo fuzz coverage failed, see fuzz/target/coverage-$target.log"
  fi
done
log "done"
