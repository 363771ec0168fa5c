# A 3-master Redis Cluster on free ports, for the scripts and browser tests
# that need a real one (bench/cluster.sh, web/test/cluster-e2e/). The same
# recipe as the Rust tests' harness (engine/tests/common/cluster.rs):
# three `redis-server --cluster-enabled yes` (each with its cluster bus
# port, port + 10000, free too), joined by `redis-cli --cluster create …
# --cluster-replicas 0 --cluster-yes`, ready once every node says
# `cluster_state:ok`.
#
# Sourced: `cluster_start DIR` starts it under DIR (one directory per
# node), sets CLUSTER_PORTS (the three ports) and appends the servers'
# pids to PIDS (the caller's trap kills them); `cluster_free_port` prints a
# port whose bus port is free too.
#
# Run: `bash scripts/lib/cluster.sh` starts one in a temporary directory,
# prints `ready 127.0.0.1:P1 127.0.0.1:P2 127.0.0.1:P3` and keeps it up
# until stdin closes or it gets SIGTERM/SIGINT, then stops the nodes and
# removes the directory. Needs: redis-server, redis-cli, python3.

cluster_free_port() { # a port below 55000 whose cluster bus port (+10000) is free too
  python3 -c '
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p < 55000:
        b = socket.socket()
        try:
            b.bind(("127.0.0.1", p + 10000)); print(p); break
        except OSError:
            pass
'
}

# cluster_node DIR PORT ARGS...: a redis-server in DIR on PORT, up once it answers PING.
cluster_node() {
  local dir=$1 port=$2; shift 2
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" "$@" >/dev/null &
  PIDS+=($!)
  for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && return; sleep 0.1; done
  echo "redis-server on $port did not start" >&2
  return 1
}

cluster_start() {
  local dir=$1 i p
  CLUSTER_PORTS=()
  for i in 1 2 3; do
    p=$(cluster_free_port); CLUSTER_PORTS+=("$p")
    cluster_node "$dir/n$i" "$p" --cluster-enabled yes --cluster-config-file nodes.conf || return 1
  done
  redis-cli --cluster create "127.0.0.1:${CLUSTER_PORTS[0]}" "127.0.0.1:${CLUSTER_PORTS[1]}" "127.0.0.1:${CLUSTER_PORTS[2]}" \
    --cluster-replicas 0 --cluster-yes >/dev/null || return 1
  for p in "${CLUSTER_PORTS[@]}"; do
    for _ in $(seq 300); do
      redis-cli -p "$p" cluster info | grep -q cluster_state:ok && continue 2
      sleep 0.2
    done
    echo "the cluster did not become ok within 60 s (node $p)" >&2
    return 1
  done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  PIDS=()
  DIR=$(mktemp -d)
  trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait; rm -rf "$DIR"' EXIT
  trap 'exit 0' TERM INT
  cluster_start "$DIR"
  echo "ready 127.0.0.1:${CLUSTER_PORTS[0]} 127.0.0.1:${CLUSTER_PORTS[1]} 127.0.0.1:${CLUSTER_PORTS[2]}"
  # Until the caller closes stdin (or signals): `read` returns at EOF.
  read -r _ || true
fi
