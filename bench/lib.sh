# Sourced by bench/token_overhead.sh and bench/load.sh: a work directory
# and the processes started, both cleaned up on exit; free ports; medians;
# and oha (crates.io, `cargo install --locked`), installed into a cache
# directory once. Not used by CI (scripts/test.sh).
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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# $work: a temporary directory; $pids: processes to stop on exit.
work=$(mktemp -d)
pids=()
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap bench_cleanup EXIT
