#!/usr/bin/env bash
# Builds the playground: the wasm module (wasm/), the API's OpenAPI document
# (`pipelab openapi` -> web/src/api/openapi.json, from which the page's API
# types web/src/api/schema.d.ts are generated) and the page (web/ -> web/dist).
# Idempotent; run from anywhere. Needs the wasm32 target and wasm-bindgen-cli
# (scripts/setup.sh installs both); wasm-opt (Debian's binaryen) is optional.
#
#   PIPELAB_SKIP_PAGE=1   the Rust half only: web/src/wasm-pkg and web/src/api/openapi.json
#   PIPELAB_SKIP_WASM=1   build only the page, from an existing web/src/wasm-pkg and
#                         web/src/api/openapi.json (the Dockerfile's Node stage, which has no Rust)
#   PIPELAB_BIN=path      the pipelab binary that prints the OpenAPI document
#                         (default: build target/debug/pipelab)
#   PIPELAB_NO_WASM_OPT=1 skip wasm-opt
#   PIPELAB_REBUILD=1     build everything again, even what is up to date
#
# Each step runs only when its inputs changed since it last ran here (a
# stamp of their contents, not file times): wasm-opt and wasm-bindgen when
# cargo's module changed, the page (tsc, vite) when web/'s sources, the
# wasm package, the OpenAPI document or the lock file did. The test suites
# call this script each; after the first, it costs the cargo checks.
set -euo pipefail
cd "$(dirname "$0")/.."
# Cargo's output directory, as cargo sees it (CARGO_TARGET_DIR or ./target), absolute.
target=${CARGO_TARGET_DIR:-target}; [[ $target = /* ]] || target=$PWD/$target
log() { printf '[build-web] %s\n' "$*" >&2; }
# up_to_date STAMP HASH: whether STAMP holds HASH (never with PIPELAB_REBUILD=1).
up_to_date() { [ "${PIPELAB_REBUILD:-0}" != 1 ] && [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

if [ "${PIPELAB_SKIP_WASM:-0}" != 1 ]; then
# The generated JS glue must come from the same wasm-bindgen as the crate.
want=$(awk '/^name = "wasm-bindgen"$/{getline; split($0, a, "\""); print a[2]; exit}' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')
if [ "$want" != "$have" ]; then
  log "wasm-bindgen-cli $have does not match the wasm-bindgen crate $want in Cargo.lock (run scripts/setup.sh)"
  exit 1
fi

# Size over speed for the module only: opt-level "s", whole-program LTO, one
# codegen unit. Set through the environment so the workspace's release
# profile (used by the native binary) stays as it is.
log "cargo build pipelab-wasm (wasm32, release, opt-level s, LTO)"
CARGO_PROFILE_RELEASE_OPT_LEVEL=${PIPELAB_WASM_OPT_LEVEL:-s} CARGO_PROFILE_RELEASE_LTO=true CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
  cargo build -q --target wasm32-unknown-unknown --release -p pipelab-wasm
wasm="$target/wasm32-unknown-unknown/release/pipelab_wasm.wasm"
pkg=web/src/wasm-pkg
mkdir -p "$pkg" "$target/wasm-opt"
input=$wasm
# wasm-opt and wasm-bindgen again only for a module cargo changed.
module_hash="$(sha256sum "$wasm" | cut -d' ' -f1) $(wasm-bindgen --version) opt ${PIPELAB_NO_WASM_OPT:-0} ${PIPELAB_WASM_OPT_LEVEL:-s}"
if up_to_date "$pkg/.pipelab-built" "$module_hash" && [ -f "$pkg/pipelab_wasm.js" ]; then
  log "wasm: unchanged since the last build, $(stat -c %s "$pkg/pipelab_wasm_bg.wasm") bytes"
else
if [ "${PIPELAB_NO_WASM_OPT:-0}" != 1 ] && ! command -v wasm-opt >/dev/null && command -v apt-get >/dev/null; then
  # Optional: Debian's binaryen for wasm-opt (about 25% smaller module). A
  # failed install only means an unoptimised module.
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  log "apt-get install binaryen (wasm-opt)"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends binaryen >/dev/null 2>&1 \
    || log "binaryen not installed; continuing without wasm-opt"
fi
if [ "${PIPELAB_NO_WASM_OPT:-0}" != 1 ] && command -v wasm-opt >/dev/null; then
  # wasm-opt runs BEFORE wasm-bindgen: Debian's binaryen 108 run on
  # wasm-bindgen's output breaks its externref table ("WebAssembly.Table.set():
  # Argument 1 is invalid for table" at init). The feature flags are those
  # rustc enables by default for wasm32-unknown-unknown; without them
  # wasm-opt rejects the module.
  opt="$target/wasm-opt/pipelab_wasm.wasm"
  if wasm-opt -O${PIPELAB_WASM_OPT_LEVEL:-s} --enable-bulk-memory --enable-sign-ext --enable-mutable-globals \
      --enable-nontrapping-float-to-int --enable-reference-types --enable-multivalue \
      "$wasm" -o "$opt" 2>"$target/wasm-opt/log"; then
    log "wasm-opt -Os: $(stat -c %s "$wasm") -> $(stat -c %s "$opt") bytes (before wasm-bindgen)"
    input=$opt
  else
    log "wasm-opt failed, using the module as rustc built it: $(head -c 300 "$target/wasm-opt/log")"
  fi
fi
wasm-bindgen --target web --out-dir "$pkg" "$input"
bg="$pkg/pipelab_wasm_bg.wasm"
log "wasm: $(stat -c %s "$bg") bytes, $(gzip -9 -c "$bg" | wc -c) gzipped"
printf '%s\n' "$module_hash" > "$pkg/.pipelab-built"
fi

# The API's OpenAPI document, as the server answers it at /api/v1/openapi.json.
bin=${PIPELAB_BIN:-}
if [ -z "$bin" ]; then
  log "cargo build pipelab (for pipelab openapi)"
  cargo build -q -p pipelab
  bin=$target/debug/pipelab
fi
"$bin" openapi > web/src/api/openapi.json.tmp
if cmp -s web/src/api/openapi.json.tmp web/src/api/openapi.json; then
  rm web/src/api/openapi.json.tmp
else
  mv web/src/api/openapi.json.tmp web/src/api/openapi.json
fi
fi
[ -f web/src/wasm-pkg/pipelab_wasm.js ] || { log "web/src/wasm-pkg is missing: build it first (without PIPELAB_SKIP_WASM)"; exit 1; }
[ -f web/src/api/openapi.json ] || { log "web/src/api/openapi.json is missing: build it first (without PIPELAB_SKIP_WASM)"; exit 1; }

[ "${PIPELAB_SKIP_PAGE:-0}" = 1 ] && exit 0
# shellcheck source=scripts/lib/npm-deps.sh
source scripts/lib/npm-deps.sh
npm_ci_if_stale web
# The page's inputs: web/'s own files (not the tests, the installed
# packages or the outputs), with the wasm package and the OpenAPI document.
page_hash=$(find web -path web/node_modules -prune -o -path web/dist -prune -o -path web/test -prune -o -path web/bench -prune \
    -o -path web/src/api/schema.d.ts -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
if up_to_date web/dist/.pipelab-built "$page_hash" && [ -f web/dist/index.html ]; then
  log "page: web/dist is up to date"
  exit 0
fi
cd web
log "openapi-typescript -> web/src/api/schema.d.ts; vite build -> web/dist"
npm run -s build
printf '%s\n' "$page_hash" > dist/.pipelab-built
