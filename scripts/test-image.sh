#!/usr/bin/env bash
# The Docker image, built from the Dockerfile and run in containers, as a
# self-hoster runs it (podman; Docker Hub's base images replaced by local
# stand-ins, scripts/lib/containers.sh):
# - the build, with the base images as build arguments, in the docker format
#   (the OCI format drops HEALTHCHECK);
# - the default container: the sandbox, a visitor's page and wasm, a batch in
#   each mode on the visitor's own redis-server inside the container, the
#   refusals in force, the jail in force, the image's HEALTHCHECK passing,
#   uid 10001, JSON logs only, `stop` exiting 0 within the grace period with
#   no redis-server left;
# - read-only, with a tmpfs on /tmp and a volume on /var/lib/pipelab only;
# - a memory limit: the sandbox budgets from the container's, not the host's;
# - the team API against a Redis in another container: 401 without the
#   token, served with it;
# - docker-compose.yml with podman-compose: each profile starts only its
#   services, on its own host port, and answers a batch (the cluster's keys
#   spread over its three masters, the Valkey profile on Valkey).
# Everything it starts is removed at the end; the stand-ins and the build's
# layers stay cached (a second run: about a minute).
#
#   PIPELAB_IMAGE_KEEP=1   leave the containers running after a failure
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/containers.sh
source scripts/lib/containers.sh

log() { printf '[test-image] %s\n' "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
started=$SECONDS
containers_setup
stand_in_images

run=pt$$
image=localhost/pipelab:latest
cleanup() {
  local rc=$?
  if [ $rc -ne 0 ] && [ "${PIPELAB_IMAGE_KEEP:-0}" = 1 ]; then
    log "kept: podman ps -a --filter name=$run"
    return
  fi
  for p in default public team valkey cluster; do
    podman-compose -p "$run-$p" --profile "$p" down -v -t 2 >/dev/null 2>&1 || true
  done
  podman ps -aq --filter "name=^$run" | xargs -r podman rm -f -t 2 >/dev/null 2>&1 || true
  podman network ls -q --filter "name=^$run" | xargs -r podman network rm -f >/dev/null 2>&1 || true
  podman volume ls -q --filter "name=^$run" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
  podman rmi -f "$image" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# --- the build --------------------------------------------------------------
t0=$SECONDS
log "podman build (the image's Rust stage compiles the workspace: minutes the first time)"
podman build --format docker --pull=never \
  --build-arg RUST_IMAGE=docker.io/library/rust:1.95-bookworm \
  --build-arg NODE_IMAGE=docker.io/library/node:20-bookworm-slim \
  --build-arg DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim \
  -t "$image" . > "${TMPDIR:-/tmp}/$run-build.log" 2>&1 \
  || { tail -40 "${TMPDIR:-/tmp}/$run-build.log" >&2; fail "podman build"; }
build_s=$((SECONDS - t0))
size=$(podman image inspect --format '{{.Size}}' "$image")
log "built in $build_s s; $((size / 1000000)) MB"
[ "$size" -le 120000000 ] || fail "the image is $((size / 1000000)) MB, over 120 MB"
[ -n "$(podman image inspect --format '{{.Config.Healthcheck}}' "$image" | tr -d '<>nil{}[] ')" ] || fail "the image has no HEALTHCHECK"

# --- helpers ----------------------------------------------------------------
# port: a free port on the loopback.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_ready URL [SECONDS]: until URL/readyz answers 200.
wait_ready() {
  local i
  for ((i = 0; i < ${2:-60} * 5; i++)); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1/readyz")" = 200 ] && return 0
    sleep 0.2
  done
  return 1
}
# batch URL MODE [curl args...]: a batch of SET/GET/INCR in MODE; prints the JSON answer.
batch() {
  local url=$1 mode=$2
  shift 2
  curl -sS "$@" -H 'content-type: application/json' \
    -d "{\"mode\":\"$mode\",\"commands\":[[\"SET\",\"image:$mode\",\"v\"],[\"GET\",\"image:$mode\"],[\"INCR\",\"image:n\"]]}" \
    "$url/api/v1/batch"
}
# expect_ok JSON N: the answer's summary says N commands ok.
expect_ok() { [ "$(jq -r '.summary.ok' <<<"$1")" = "$2" ] || fail "expected $2 ok: $1"; }
# healthy NAME: the image's own HEALTHCHECK passes in the container.
healthy() {
  local i
  for ((i = 0; i < 50; i++)); do
    podman healthcheck run "$1" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}
# servers NAME: the host pids of the redis-servers running in the container.
servers() { podman top "$1" hpid comm 2>/dev/null | awk '$2 == "redis-server" {print $1}'; }

# --- the default container: the sandbox ------------------------------------
p=$(port)
url=http://127.0.0.1:$p
c=$run-default
podman run -d --name "$c" -p "127.0.0.1:$p:8080" "$image" >/dev/null
wait_ready "$url" || { podman logs "$c" >&2; fail "the default container is not ready"; }
healthy "$c" || fail "the image's HEALTHCHECK does not pass in the default container"
page=$(curl -sS "$url/")
grep -q '<div id="app"\|<html' <<<"$page" || fail "no page at /"
wasm=$(podman exec "$c" sh -c 'cd /app/web/dist && ls assets/*.wasm' | head -n1)
[ -n "$wasm" ] || fail "no wasm module in the image"
[ "$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$url/$wasm")" = "200 application/wasm" ] || fail "$wasm is not served as application/wasm"
jar=$(mktemp)
for mode in sequential pipeline transaction auto; do
  out=$(batch "$url" "$mode" -b "$jar" -c "$jar")
  expect_ok "$out" 3
done
[ "$(batch "$url" pipeline -b "$jar" -c "$jar" | jq -r '.results[2].reply.value')" = 5 ] || fail "a visitor's keys do not persist between batches"
# Another visitor (no cookie) has a Redis of their own.
[ "$(batch "$url" pipeline | jq -r '.results[2].reply.value')" = 1 ] || fail "a new visitor sees another visitor's keys"
refused=$(curl -sS -b "$jar" -H 'content-type: application/json' -d '{"commands":[["CONFIG","SET","maxmemory","0"]]}' "$url/api/v1/batch")
jq -e '.error.code // .results[0].status' <<<"$refused" | grep -q 'refused\|forbidden\|error' || fail "CONFIG SET is not refused: $refused"
n=$(servers "$c" | wc -l)
[ "$n" -ge 2 ] || fail "expected redis-servers of the visitors inside the container, found $n"
uid=$(podman exec "$c" awk '/^Uid:/ {print $2}' /proc/1/status)
[ "$uid" = 10001 ] || fail "pipelab runs as uid $uid, not 10001"
jail=$(curl -sS -b "$jar" "$url/api/v1/info" | jq -r '.sandbox.jail // empty')
[ -n "$jail" ] || fail "/api/v1/info names no jail in the container"
log "default: sandbox, $n redis-servers, uid $uid, jail: $jail"
podman logs "$c" 2>&1 | python3 -c '
import json, sys
for n, line in enumerate(sys.stdin, 1):
    try:
        json.loads(line)
    except ValueError:
        sys.exit(f"log line {n} is not JSON: {line!r}")
' || fail "JSON logs asked for, and a line is not JSON"
pids=$(servers "$c")
t0=$EPOCHREALTIME
podman stop -t 10 "$c" >/dev/null
stop_ms=$(python3 -c "print(int(($EPOCHREALTIME - $t0) * 1000))")
code=$(podman inspect --format '{{.State.ExitCode}}' "$c")
[ "$code" = 0 ] || { podman logs "$c" 2>&1 | tail -5 >&2; fail "stop: exit code $code"; }
[ "$stop_ms" -lt 10000 ] || fail "stop took $stop_ms ms: killed at the end of the grace period"
for pid in $pids; do [ ! -e "/proc/$pid" ] || fail "redis-server $pid is left after stop"; done
log "default: stop exits 0 in $stop_ms ms, no redis-server left"
podman rm "$c" >/dev/null

# --- no jail to be had: the sandbox refuses to start, unless told ----------
# A seccomp profile of the engine's that denies Landlock and seccomp itself.
nojail=$(mktemp)
cat > "$nojail" <<'EOF'
{"defaultAction": "SCMP_ACT_ALLOW",
 "syscalls": [{"names": ["landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "seccomp"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38}]}
EOF
c=$run-nojail
if timeout 60 podman run --name "$c" --security-opt "seccomp=$nojail" "$image" >/dev/null 2>&1; then
  fail "with neither Landlock nor seccomp the sandbox started unjailed"
fi
podman logs "$c" 2>&1 | grep -q PIPELAB_SANDBOX_UNJAILED || { podman logs "$c" 2>&1 | tail -3 >&2; fail "without a jail: the refusal does not name PIPELAB_SANDBOX_UNJAILED"; }
podman rm -f "$c" >/dev/null
p=$(port)
podman run -d --name "$c" --security-opt "seccomp=$nojail" -e PIPELAB_SANDBOX_UNJAILED=1 -p "127.0.0.1:$p:8080" "$image" >/dev/null
wait_ready "http://127.0.0.1:$p" || { podman logs "$c" >&2; fail "unjailed: not ready"; }
jail=$(curl -sS "http://127.0.0.1:$p/api/v1/info" | jq -r '.sandbox.jail')
[[ $jail == none* ]] || fail "unjailed: /api/v1/info says the jail is $jail"
podman rm -f -t 5 "$c" >/dev/null
rm -f "$nojail"
log "no jail to be had: refuses to start; with PIPELAB_SANDBOX_UNJAILED it serves and says so"

# --- read-only, with a memory limit -----------------------------------------
p=$(port)
url=http://127.0.0.1:$p
c=$run-readonly
podman volume create "$run-state" >/dev/null
podman run -d --name "$c" --read-only --tmpfs /tmp -v "$run-state:/var/lib/pipelab" --memory 512m -p "127.0.0.1:$p:8080" "$image" >/dev/null
wait_ready "$url" || { podman logs "$c" >&2; fail "read-only: not ready"; }
jar=$(mktemp)
expect_ok "$(batch "$url" pipeline -b "$jar" -c "$jar")" 3
# The visitor's keys outlive the container's restart: SIGTERM saves them in
# the volume, and the same node (the container's host name) serves them again.
podman restart -t 10 "$c" >/dev/null
wait_ready "$url" || { podman logs "$c" >&2; fail "read-only: not ready after a restart"; }
out=$(curl -sS -b "$jar" -c "$jar" -H 'content-type: application/json' -d '{"commands":[["GET","image:pipeline"],["GET","image:n"]]}' "$url/api/v1/batch")
[ "$(jq -r '[.results[].reply.value] | join(" ")' <<<"$out")" = "v 1" ] || fail "read-only: the visitor's keys did not outlive a restart: $out"
# The sandbox's memory budget, from its start-up line: half the container's limit.
budget=$(podman logs "$c" 2>&1 | jq -r 'select(.message == "sandbox on: a redis-server of their own for each visitor") | .memory' | head -n1)
{ [ -n "$budget" ] && [ "$budget" -le $((512 << 20)) ]; } || fail "with --memory 512m the sandbox's memory budget is ${budget:-not logged} bytes: it does not read the container's limit"
log "read-only, --memory 512m: serves, a visitor's keys outlive a restart; the sandbox's memory budget is $((budget >> 20)) MB"
podman rm -f -t 5 "$c" >/dev/null

# --- the team API, against a Redis in another container --------------------
p=$(port)
url=http://127.0.0.1:$p
podman network create "$run-net" >/dev/null
podman run -d --name "$run-redis" --network "$run-net" docker.io/library/redis:7.0 redis-server --save '' >/dev/null
podman run -d --name "$run-team" --network "$run-net" -e PIPELAB_TOKENS=team-secret -e "REDIS_URL=redis://$run-redis:6379" -p "127.0.0.1:$p:8080" "$image" >/dev/null
wait_ready "$url" || { podman logs "$run-team" >&2; fail "team API: not ready"; }
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -d '{"commands":[["PING"]]}' "$url/api/v1/batch")" = 401 ] || fail "team API: a batch without the token is not 401"
expect_ok "$(batch "$url" transaction -H 'authorization: Bearer team-secret')" 3
[ "$(podman exec "$run-redis" redis-cli get image:transaction)" = v ] || fail "team API: the key is not in the Redis container"
healthy "$run-team" || fail "team API: HEALTHCHECK does not pass"
log "team API: 401 without the token, served with it, on the Redis container"
podman rm -f -t 5 "$run-team" "$run-redis" >/dev/null

# --- docker-compose.yml -----------------------------------------------------
# compose_up PROJECT HOST_PORT [compose args...]: up -d, then the service on HOST_PORT ready.
compose_up() {
  local project=$1 hp=$2
  shift 2
  ! (exec 3<>"/dev/tcp/127.0.0.1/$hp") 2>/dev/null || fail "compose $project: host port $hp is taken"
  podman-compose -p "$project" "$@" >"${TMPDIR:-/tmp}/$project.log" 2>&1 || { tail -20 "${TMPDIR:-/tmp}/$project.log" >&2; fail "compose $project: up failed"; }
  wait_ready "http://127.0.0.1:$hp" 90 || { podman-compose -p "$project" logs 2>&1 | tail -30 >&2; fail "compose $project: not ready on port $hp"; }
}
# compose_down PROFILE: its project's containers, network and volumes removed.
compose_down() { podman-compose -p "$run-$1" --profile "$1" down -v -t 2 >/dev/null 2>&1; }
# running PROJECT: the services running, sorted, one line.
running() { podman ps --filter "label=io.podman.compose.project=$1" --format '{{ index .Labels "com.docker.compose.service" }}' | sort | xargs; }

# No variable set: the default profile.
unset PIPELAB_TOKENS PIPELAB_READONLY_TOKENS PIPELAB_ALLOWED_HOSTS
compose_up "$run-default" 8080 up -d
[ "$(running "$run-default")" = "pipelab redis" ] || fail "compose default: runs $(running "$run-default")"
expect_ok "$(batch http://127.0.0.1:8080 pipeline)" 3
compose_down default
log "compose default: pipelab + redis on 8080, no variable set"

compose_up "$run-public" 8081 --profile public up -d playground
[ "$(running "$run-public")" = "playground" ] || fail "compose public: runs $(running "$run-public")"
expect_ok "$(batch http://127.0.0.1:8081 pipeline)" 3
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'host: play.example.com' http://127.0.0.1:8081/api/v1/info)" = 421 ] || fail "compose public: a foreign Host is not 421"
curl -s -H 'host: play.example.com' http://127.0.0.1:8081/api/v1/info | grep -q PIPELAB_ALLOWED_HOSTS || fail "compose public: the 421 does not name PIPELAB_ALLOWED_HOSTS"
compose_down public
log "compose public: the playground alone on 8081"

# The team profile without a token: the service refuses to start, and says why.
podman-compose -p "$run-team" --profile team up -d team-api >/dev/null 2>&1 || true
sleep 2
refusal=$(podman logs "$run-team_team-api_1" 2>&1 | grep PIPELAB_TOKENS) || fail "compose team without PIPELAB_TOKENS: the log does not name it"
jq -e '.level == "ERROR"' <<<"$refusal" >/dev/null || fail "compose team without PIPELAB_TOKENS: the refusal is not a JSON log line: $refusal"
compose_down team
PIPELAB_TOKENS=compose-secret compose_up "$run-team" 8082 --profile team up -d team-api
[ "$(running "$run-team")" = "redis team-api" ] || fail "compose team: runs $(running "$run-team")"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H 'content-type: application/json' -d '{"commands":[["PING"]]}' http://127.0.0.1:8082/api/v1/batch)" = 401 ] || fail "compose team: no token, not 401"
expect_ok "$(batch http://127.0.0.1:8082 pipeline -H 'authorization: Bearer compose-secret')" 3
compose_down team
log "compose team: redis + team-api on 8082, 401 without the token"

compose_up "$run-valkey" 8083 --profile valkey up -d pipelab-valkey
[ "$(running "$run-valkey")" = "pipelab-valkey valkey" ] || fail "compose valkey: runs $(running "$run-valkey")"
[ "$(curl -sS http://127.0.0.1:8083/api/v1/info | jq -r .redis.server)" = valkey ] || fail "compose valkey: not on Valkey"
expect_ok "$(batch http://127.0.0.1:8083 pipeline)" 3
compose_down valkey
log "compose valkey: on Valkey, 8083"

compose_up "$run-cluster" 8084 --profile cluster up -d pipelab-cluster
[ "$(curl -sS http://127.0.0.1:8084/api/v1/info | jq -r .redis.mode)" = cluster ] || fail "compose cluster: not a cluster"
cmds=$(python3 -c 'import json; print(json.dumps([["SET", f"spread:{i}", "x"] for i in range(30)]))')
out=$(curl -sS -H 'content-type: application/json' -d "{\"mode\":\"pipeline\",\"commands\":$cmds}" http://127.0.0.1:8084/api/v1/batch)
expect_ok "$out" 30
counts=$(for i in 1 2 3; do podman exec "$run-cluster_redis-node-${i}_1" redis-cli -p 7000 dbsize; done | xargs)
# shellcheck disable=SC2086
[ "$(printf '%s\n' $counts | awk '$1 > 0' | wc -l)" = 3 ] || fail "compose cluster: keys per master $counts, not spread over three"
compose_down cluster
log "compose cluster: 30 keys spread over three masters ($counts), 8084"

log "passed in $((SECONDS - started)) s (build $build_s s, image $((size / 1000000)) MB)"
