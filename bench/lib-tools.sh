# Sourced by the bench scripts that need a load generator: installs oha
# (crates.io, `cargo install --locked`) into a cache directory once, and
# says where it is. Not used by CI (scripts/test.sh).
#
#   PIPELAB_BENCH_TOOLS   the cache directory (default ~/.cache/pipelab-bench)
OHA_VERSION=1.16.0
BENCH_TOOLS="${PIPELAB_BENCH_TOOLS:-$HOME/.cache/pipelab-bench}"
OHA="$BENCH_TOOLS/bin/oha"

ensure_oha() {
  if [ -x "$OHA" ] && "$OHA" --version 2>/dev/null | grep -q "$OHA_VERSION"; then
    return 0
  fi
  echo "[bench] cargo install oha $OHA_VERSION into $BENCH_TOOLS (once)" >&2
  nice -n 10 cargo install -q oha --version "$OHA_VERSION" --locked --root "$BENCH_TOOLS" >&2
}
