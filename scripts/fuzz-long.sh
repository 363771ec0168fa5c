#!/usr/bin/env bash
# Long fuzzing, not in CI: each cargo-fuzz target for
# PIPELAB_FUZZ_MINUTES CPU-minutes (default 15; one libFuzzer process per
# target, so CPU time = wall time), from the corpus kept in the repo
# (fuzz/corpus/TARGET) and the hand-written seeds (fuzz/seeds/TARGET).
# Afterwards the corpus is minimized (`cargo fuzz cmin`) so that what is
# committed stays small, and each target's line coverage over its corpus is
# reported (`cargo fuzz coverage` + `llvm-cov report`; the script installs
# rustup's llvm-tools-preview component when it is missing, unless
# PIPELAB_FUZZ_COVERAGE=0). A crash stops the script: libFuzzer leaves the input
# in fuzz/artifacts/TARGET/ — fix it and add a regression test.
#
#   scripts/fuzz-long.sh                       # decode, inline, body_json, 15 min each
#   PIPELAB_FUZZ_MINUTES=1 scripts/fuzz-long.sh body_json
#   PIPELAB_FUZZ_SECONDS=10 scripts/fuzz-long.sh         # a check that it all works
#   nice -n 19 env PIPELAB_FUZZ_SECONDS=240 scripts/fuzz-long.sh decode inline   # on a shared machine
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
# body_json needs the `api` feature (all of pipelab under ASan: about 16
# minutes to build on 2 cores); the codec targets alone do not.
FEATURES=()
for t in "${TARGETS[@]}"; do [ "$t" = body_json ] && FEATURES=(--features api); done
log "cargo fuzz build ${FEATURES[*]}"
cargo fuzz build -O "${FEATURES[@]}"

# Coverage needs llvm-profdata / llvm-cov of the toolchain's LLVM.
sysroot="$(rustc --print sysroot)"
find_profdata() { for p in "$sysroot"/lib/rustlib/*/bin/llvm-profdata; do [ -x "$p" ] && echo "$p"; done; }
if [ "${PIPELAB_FUZZ_COVERAGE:-1}" != 0 ] && [ -z "$(find_profdata)" ]; then
  log "rustup component add llvm-tools-preview (for coverage)"
  rustup component add llvm-tools-preview >&2 || log "could not install llvm-tools-preview: no coverage"
fi

for target in "${TARGETS[@]}"; do
  mkdir -p "corpus/$target"
  dirs=("corpus/$target")
  [ -d "seeds/$target" ] && dirs+=("seeds/$target")
  flags=(-max_total_time="$SECONDS_EACH" -print_final_stats=1)
  # The RESP dictionary helps the two RESP targets; body_json gets JSON from its seeds.
  [ "$target" = body_json ] || flags+=(-dict=resp.dict -max_len=4096)
  log "$target: ${SECONDS_EACH} s from ${dirs[*]}"
  cargo fuzz run -O "${FEATURES[@]}" "$target" "${dirs[@]}" -- "${flags[@]}" 2>&1 | tail -n 14
  log "$target: minimizing corpus/$target"
  cargo fuzz cmin -O "${FEATURES[@]}" "$target" "corpus/$target" 2>&1 | tail -n 2
  log "$target: $(find "corpus/$target" -type f | wc -l) inputs kept in fuzz/corpus/$target"
  # `cargo fuzz coverage` rebuilds everything instrumented, then needs the
  # toolchain's llvm-profdata/llvm-cov (rustup component llvm-tools).
  profdata="$(find_profdata | tail -n 1)"
  if [ "${PIPELAB_FUZZ_COVERAGE:-1}" = 0 ]; then
    log "$target: coverage skipped (PIPELAB_FUZZ_COVERAGE=0)"
  elif [ -z "$profdata" ]; then
    log "$target: no coverage report: rustup component llvm-tools-preview is not installed"
  elif cargo fuzz coverage -O "${FEATURES[@]}" "$target" "corpus/$target" >"target/coverage-$target.log" 2>&1; then
    bin="target/x86_64-unknown-linux-gnu/coverage/x86_64-unknown-linux-gnu/release/$target"
    # Line coverage of the code under test (the resp crate, and pipelab's
    # body parser for body_json), not of the standard library or the deps.
    report=$("$(dirname "$profdata")/llvm-cov" report "$bin" -instr-profile="coverage/$target/coverage.profdata" \
      -ignore-filename-regex='/.cargo/|/rustc/|fuzz_targets/')
    log "$target: coverage (regions, functions, lines) of the files it reaches:"
    grep -vE '^-+$' <<<"$report" | awk '{print "  " $0}' >&2
  else
    log "$target: cargo fuzz coverage failed, see fuzz/target/coverage-$target.log"
  fi
done
log "done"
