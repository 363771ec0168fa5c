#!/usr/bin/env bash
# Runs every pipelab test: installs what is missing (scripts/setup.sh), then
# - `cargo test --workspace`: the resp codec (unit, property, vectors,
#   differential against hiredis / redis-server / redis-cli), the executor,
#   the REST API, operations and the CLI, against real redis-servers the
#   tests start on free ports (Debian 12's Redis 7.0);
# - the server matrix (test-servers.sh): those tests again on Valkey 9.1 and
#   Redis 8.0, the cluster and sandbox suites on Valkey 8.0/8.1 and Redict
#   7.3, the Upstash SDKs on Redis 8.0 and Valkey 9.1;
# - `cargo check -p pipelab-engine -p pipelab-doctor`: the engine and the
#   doctor build alone, with no HTTP, CLI or OpenAPI crate;
# - `cargo doc` with warnings as errors: every doc link resolves, in the
#   public docs and in the private ones a contributor reads;
# - each part's own suite: resp on wasm32 and fuzzing (test-resp.sh),
#   the wasm module in Node and the
#   playground and tutorial in headless Chromium (test-web.sh,
#   test-tutorial.sh, the lessons once more in a sandbox), the build scripts the Dockerfile calls and the built
#   binary started as a user starts it (test-deploy.sh), the Docker image
#   built and run in containers with podman, compose's every profile
#   included (test-image.sh), the official
#   Upstash SDKs (npm, PyPI) against `pipelab serve` (test-upstash.sh), the
#   README's API examples run as shown (test-readme.sh), three nodes behind
#   HAProxy and nginx (test-nodes.sh).
# This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each part says how long it took, and the end lists them all: on a fresh
# machine the installs dominate; on a warm one the browser suites do.
started=$SECONDS
timings=()
part() {
  local name=$1 t0=$SECONDS
  shift
  echo "=== $name"
  "$@"
  timings+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$name")")
  echo "=== $name: $((SECONDS - t0)) s"
}

part "scripts/setup.sh (installs)" scripts/setup.sh
export CARGO_TERM_COLOR=never
# One build per run: incremental caches would only take disk.
export CARGO_INCREMENTAL=0
part "cargo build" cargo build --workspace --all-targets --locked
part "cargo test" cargo test --workspace --locked
# The same tests on the other servers people run (docs/servers.md).
part "scripts/test-servers.sh (the server matrix)" bash scripts/test-servers.sh
# The engine and the doctor alone, without the features the server turns
# on: they must build, and depend on no HTTP, CLI or OpenAPI crate.
below_http() {
  # Each crate alone: its own features, nothing a crate above it turns on.
  local crate
  for crate in pipelab-engine pipelab-doctor pipelab-http pipelab-server; do cargo check -p "$crate" --locked; done
  cargo check -p pipelab-doctor --features page --locked
  local found
  found=$(cargo tree -e normal -p pipelab-engine -p pipelab-doctor --prefix none --locked | grep -E '^(axum|hyper|tower|clap|utoipa) ' | sort -u || true)
  if [ -n "$found" ]; then echo "the engine or the doctor depends on: $found"; return 1; fi
  # The server's surfaces and the doctor's page share the HTTP layer, not each other.
  if cargo tree -e normal -p pipelab-server --prefix none --locked | grep -q '^pipelab-doctor '; then echo "the server depends on the doctor"; return 1; fi
  if cargo tree -e normal -p pipelab-doctor --features page --prefix none --locked | grep -q '^pipelab-server '; then echo "the doctor depends on the server"; return 1; fi
}
part "each crate alone: the engine and the doctor without HTTP, the server without the doctor" below_http
doc_links() {
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
  RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --document-private-items
}
part "cargo doc (links)" doc_links
for name in resp web tutorial deploy image upstash readme nodes; do
  part "scripts/test-$name.sh" bash "scripts/test-$name.sh"
done
# Every lesson again, in the sandbox of a public deployment, on
# the page scripts/test-tutorial.sh built.
part "scripts/test-tutorial.sh in the sandbox" env PIPELAB_SANDBOX=1 PIPELAB_E2E_EMBEDDED=1 PIPELAB_WEB_BUILT=1 bash scripts/test-tutorial.sh
echo "=== time per part"
printf '%s\n' "${timings[@]}"
echo "all pipelab tests passed in $((SECONDS - started)) s"
