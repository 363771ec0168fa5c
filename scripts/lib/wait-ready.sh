# Sourced by the scripts that start `pipelab serve` themselves
# (test-deploy.sh, test-upstash.sh, bench/upstash.sh).
#
# wait_ready BIN PORT: waits up to 10 s (100 tries, 0.1 s apart) until
# http://127.0.0.1:PORT/readyz answers 2xx, then checks it once more with
# `pipelab healthcheck`'s own message, so that a server that never became
# ready fails the calling script (set -e) with the reason.
wait_ready() {
  local bin=$1 port=$2
  for _ in $(seq 100); do
    "$bin" healthcheck --url "http://127.0.0.1:$port/readyz" --timeout-ms 200 2>/dev/null && break
    sleep 0.1
  done
  "$bin" healthcheck --url "http://127.0.0.1:$port/readyz"
}
