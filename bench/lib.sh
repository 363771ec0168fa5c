# Sourced by the bench scripts: a work directory and the processes
# started, both cleaned up on exit; free ports and waiting for one; medians;
# the load generator wrk, Webdis beside pipelab, and wrk's one-SET scripts.
# Not used by CI (scripts/test.sh).

# ensure_pkg COMMAND [PACKAGE]: the Debian package (default: COMMAND's
# name) installed with apt-get when COMMAND is missing.
ensure_pkg() {
  command -v "$1" >/dev/null && return 0
  echo "[bench] apt-get install ${2:-$1}" >&2
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${2:-$1}" >/dev/null
}

# wrk (Debian package `wrk`), installed with apt-get when missing.
ensure_wrk() { ensure_pkg wrk; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# wait_port PORT: until something listens on 127.0.0.1:PORT (10 s at most).
wait_port() {
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  echo "nothing listens on port $1" >&2; exit 1
}

# $work: a temporary directory; $pids: processes to stop on exit.
work=$(mktemp -d)
pids=()
bench_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap bench_cleanup EXIT

# start_redis PORT [ARG...]: a redis-server without persistence on
# 127.0.0.1:PORT (its log in $work/redis.log), its pid in $redis_pid and
# $pids; waits until it listens.
start_redis() {
  local port=$1
  shift
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/redis.log" "$@" &
  redis_pid=$!
  pids+=("$redis_pid")
  wait_port "$port"
}

# start_webdis REDIS_PORT WEBDIS_PORT: Webdis (2 threads, 64 connections to
# the redis-server on REDIS_PORT) on 127.0.0.1:WEBDIS_PORT, its pid in
# $webdis_pid and $pids; waits until it listens.
start_webdis() {
  ensure_pkg webdis
  cat >"$work/webdis.json" <<JSON
{"redis_host": "127.0.0.1", "redis_port": $1, "http_host": "127.0.0.1", "http_port": $2,
 "threads": 2, "pool_size": 64, "daemonize": false, "database": 0, "verbosity": 0, "logfile": "$work/webdis.log"}
JSON
  webdis "$work/webdis.json" &
  webdis_pid=$!
  pids+=("$webdis_pid")
  wait_port "$2"
}

# write_set_scripts: wrk's scripts for one SET per request, $work/post.lua
# (`POST /api/v1/batch`) and $work/upstash.lua (Upstash's `POST /`, as
# @upstash/redis sends a single command).
write_set_scripts() {
  cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"commands": [["SET", "bench", "v"]]}'
wrk.headers["Content-Type"] = "application/json"
LUA
  cat >"$work/upstash.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '["SET", "bench", "v"]'
wrk.headers["Content-Type"] = "application/json"
LUA
}
