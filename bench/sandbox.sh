#!/usr/bin/env bash
# The sandbox at scale, not a test and not in CI: `pipelab serve --sandbox`
# (release build), VISITORS visitors each with a redis-server of their own
# (bench/sandbox_load.py drives them):
#
#   - the first answer of a new visitor (they arrive one every 50 ms; warm
#     spares take the process start off their path), p50/p99;
#   - a lesson-sized batch (100 SETs, pipelined) p99 with ACTIVE visitors
#     each running one a second, quiet, and while one more visitor runs
#     each stall again and again (a script that never ends, a Lua heap
#     bomb, a 100 MB SETRANGE, WATCH of 100,000 keys, the script cache
#     filled), each stall's p99 over the quiet one;
#   - memory: pipelab's RSS and the children's summed RSS and private
#     memory (/proc/PID/smaps_rollup) with every visitor holding a Redis.
#
# Each visitor comes from an address of its own on the loopback, so the
# sandbox's limits per client address (rate limits, visitors, batches) stay
# as a public deployment has them; only the caps on visitors and on HTTP
# connections in all are raised to VISITORS.
#
# `bench/sandbox.sh crowd` instead: visitors who hold keys and come back
# (bench/sandbox_crowd.py drives them; --sandbox-hibernate-after 20s):
#
#   - SAVE and a start to PONG on the saved file, for 100, 20,000 and
#     100,000 keys (a child's own redis-server arguments, outside pipelab);
#   - VISITORS new visitors arrive (one every EVERY_MS, default 20), each
#     running a lesson (100 SETs): the new visitor's first answer p99;
#   - RETURNING of the first ones, hibernated by then, come back within the
#     same minute: the returning visitor's first answer p99 (their Redis
#     started on their saved keys; each checked to hold its 100 keys);
#   - pipelab's RSS, the running children's count and summed private
#     memory, the visitors hibernated, the state directory's size.
#
# `bench/sandbox.sh hoard [SECONDS (default 60)]`: the hoarding test
# (cli/tests/sandbox_hoard.rs) for a minute on a release build; RATE=N
# new visitors a minute per address (default 1).
#
# Usage: bench/sandbox.sh crowd [VISITORS (default 10000)] [RETURNING (default 1000)]
#   EVERY_MS=N         a new visitor every N ms (default 20)
#   HIBERNATE_AFTER=S  --sandbox-hibernate-after in seconds (default 20)
#   WITHIN=S           the returning visitors come back within S seconds (default 60)
#   HOARD=1            hoarders beside the crowd, as in the hoarding test:
#                      --sandbox-new-visitors-per-minute 1, 1,000 IPv4
#                      addresses and 64 IPv6 /64s (root) sending cookie-less
#                      new visitors as fast as that allows, from 2 s before
#                      the crowd until it is done (bench/sandbox_hoarders.py;
#                      their figures under "hoarders")
#
# Usage: bench/sandbox.sh [VISITORS (default 1000)] [ACTIVE (default 200)]
#   PIPELAB_BIN=path     use this binary instead of building target/release/pipelab
#   SECONDS_PER_PHASE=N  each lesson phase's length (default 20)
#   THINK_MS=N           each active visitor's pause between lessons (default
#                        1000; 0: back to back, the server's capacity)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/wait-ready.sh
source bench/lib.sh

# rdb_timings: SAVE and start-to-PONG times (ms) for 100, 20k and 100k keys,
# timed on sockets of one process (no redis-cli start in the figures).
rdb_timings() {
  python3 - "${REDIS_SERVER:-redis-server}" "$work" <<'PY'
import json, os, socket, subprocess, sys, tempfile, time
server, work = sys.argv[1], sys.argv[2]

def start(d, sock):
    return subprocess.Popen([server, "--port", "0", "--unixsocket", sock, "--dir", d, "--save", "", "--dbfilename", "dump.rdb",
                             "--appendonly", "no", "--maxmemory", "16mb", "--hz", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def pong(sock):
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(sock); s.sendall(b"PING\r\n")
        ok = s.recv(64).startswith(b"+PONG"); s.close(); return ok
    except OSError:
        return False

def call(s, payload, replies):
    s.sendall(payload)
    got = b""
    while got.count(b"\r\n") < replies:
        got += s.recv(1 << 20)
    return got

out = []
for keys in (100, 20000, 100000):
    d = tempfile.mkdtemp(dir=work)
    sock = os.path.join(d, "s")
    p = start(d, sock)
    while not pong(sock):
        time.sleep(0.005)
    s = socket.socket(socket.AF_UNIX); s.connect(sock)
    cmds = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v)
                    for k, v in ((b"lesson:%d" % i, b"value %d" % i) for i in range(keys)))
    call(s, cmds, keys)
    t = time.perf_counter(); call(s, b"SAVE\r\n", 1); save = time.perf_counter() - t
    s.close(); p.kill(); p.wait()
    t = time.perf_counter(); p = start(d, sock + "2")
    while not pong(sock + "2"):
        time.sleep(0.0005)
    restore = time.perf_counter() - t
    p.kill(); p.wait()
    out.append({"keys": keys, "rdb_bytes": os.path.getsize(os.path.join(d, "dump.rdb")), "save_ms": round(save * 1000, 1), "restore_to_pong_ms": round(restore * 1000, 1)})
print(json.dumps(out))
PY
}

if [ "${1:-}" = hoard ]; then
  # cli/tests/sandbox_hoard.rs at full length on a release build: 1,000
  # IPv4 loopback addresses and 64 IPv6 /64s (added to lo: root) sending
  # cookie-less new visitors as fast as their rate allows, a newcomer every
  # 250 ms, then every served visitor's key checked. CI runs it for 30 s (newcomers
  # going on 10 s past the opening burst).
  PIPELAB_HOARD_SECONDS=${2:-60} PIPELAB_HOARD_RATE=${RATE:-1} \
    cargo test --release -p pipelab --test sandbox_hoard -- --nocapture
  exit
fi

if [ "${1:-}" = crowd ]; then
  VISITORS=${2:-10000}
  RETURNING=${3:-1000}
  bin=${PIPELAB_BIN:-}
  if [ -z "$bin" ]; then
    cargo build --release -q -p pipelab
    bin=target/release/pipelab
  fi
  rdb_timings >"$work/rdb.json"
  port=$(free_port)
  listen=127.0.0.1 hoard=()
  if [ "${HOARD:-}" = 1 ]; then
    # Each crowd visitor is one new visitor from an address of its own: the test's rate refuses none of them.
    hoard=(--sandbox-new-visitors-per-minute 1)
    # The IPv6 hoarders need [::] (which takes IPv4 too); without IPv6 they say so and stay out.
    if [ "$(cat /proc/sys/net/ipv6/conf/lo/disable_ipv6 2>/dev/null)" = 0 ]; then listen='[::]'; fi
  fi
  "$bin" serve --listen "$listen:$port" --sandbox --sandbox-hibernate-after "${HIBERNATE_AFTER:-20}s" --sandbox-spares 8 \
    --sandbox-state-dir "$work/state" --max-connections 4096 "${hoard[@]}" >"$work/serve.log" 2>&1 &
  pids+=($!)
  serve_pid=$!
  wait_ready "$bin" "$port" >/dev/null
  : >"$work/hoarders.json"
  if [ "${HOARD:-}" = 1 ]; then
    python3 bench/sandbox_hoarders.py --port "$port" >"$work/hoarders.json" &
    hoard_pid=$!
    pids+=("$hoard_pid")
    # The crowd's first visitors meet the hoarders' opening burst.
    sleep 2
  fi
  python3 bench/sandbox_crowd.py --port "$port" --visitors "$VISITORS" --returning "$RETURNING" --every-ms "${EVERY_MS:-20}" \
    --within "${WITHIN:-60}" --hibernate-after "${HIBERNATE_AFTER:-20}" >"$work/crowd.json"
  if [ "${HOARD:-}" = 1 ]; then
    kill -TERM "$hoard_pid"
    wait "$hoard_pid" || echo "[bench] the hoarders exited with $?" >&2
  fi
  children=$(pgrep -P "$serve_pid" redis-server || true)
  private=0 n=0
  for c in $children; do
    v=$(awk '/^Private_(Clean|Dirty):/{v+=$2} END{print v+0}' "/proc/$c/smaps_rollup" 2>/dev/null || echo 0)
    private=$((private + v)); n=$((n + 1))
  done
  self=$(awk '/^VmRSS:/{print $2}' "/proc/$serve_pid/status")
  hibernated=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^pipelab_sandbox_hibernated /{print $2}')
  # Children still hibernating rename files under du: it says so, and its total stands.
  state_kb=$( (du -sk "$work/state" 2>/dev/null || true) | cut -f1)
  python3 - "$work/crowd.json" "$work/rdb.json" "$work/hoarders.json" "${HOARD:-0}" "$n" "$private" "$self" "${hibernated:-0}" "$state_kb" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
out["rdb"] = json.load(open(sys.argv[2]))
out["hoard"] = sys.argv[4] == "1"
if out["hoard"]:
    text = open(sys.argv[3]).read()
    out["hoarders"] = json.loads(text) if text.strip() else None
n, private, me, hibernated, state = (int(float(x)) for x in sys.argv[5:])
out["memory"] = {"children_running": n, "children_private_mb": round(private / 1024, 1), "pipelab_rss_mb": round(me / 1024, 1),
                 "hibernated": hibernated, "state_dir_mb": round(state / 1024, 1)}
print(json.dumps(out, indent=2))
PY
  exit 0
fi

VISITORS=${1:-1000}
ACTIVE=${2:-200}
PHASE=${SECONDS_PER_PHASE:-20}

bin=${PIPELAB_BIN:-}
if [ -z "$bin" ]; then
  cargo build --release -q -p pipelab
  bin=target/release/pipelab
fi
port=$(free_port)
# Nobody hibernates here: the memory read at the end is every visitor's Redis awake.
"$bin" serve --listen "127.0.0.1:$port" --sandbox --sandbox-max-visitors "$VISITORS" --sandbox-spares 8 --sandbox-hibernate-after 1h \
  --batch-timeout-ms 3000 --max-connections 4096 >"$work/serve.log" 2>&1 &
pids+=($!)
serve_pid=$!
wait_ready "$bin" "$port" >/dev/null

python3 bench/sandbox_load.py --port "$port" --visitors "$VISITORS" --active "$ACTIVE" --seconds "$PHASE" --think-ms "${THINK_MS:-1000}" >"$work/load.json"

# Memory with every visitor holding a Redis (children of pipelab's sandbox thread).
children=$(pgrep -P "$serve_pid" redis-server || true)
rss=0 pss=0 private=0 n=0
for c in $children; do
  read -r r p v < <(awk '/^Rss:/{r=$2} /^Pss:/{p=$2} /^Private_(Clean|Dirty):/{v+=$2} END{print r, p, v}' "/proc/$c/smaps_rollup" 2>/dev/null || echo "0 0 0")
  rss=$((rss + r)); pss=$((pss + p)); private=$((private + v)); n=$((n + 1))
done
self=$(awk '/^VmRSS:/{print $2}' "/proc/$serve_pid/status")
python3 - "$work/load.json" "$n" "$rss" "$pss" "$private" "$self" <<'PY'
import json, sys
load = json.load(open(sys.argv[1]))
n, rss, pss, private, me = (int(x) for x in sys.argv[2:])
mb = lambda kb: round(kb / 1024, 1)
load["memory"] = {"children": n, "children_rss_mb": mb(rss), "children_pss_mb": mb(pss), "children_private_mb": mb(private),
                  "per_child_private_mb": round(private / 1024 / max(n, 1), 2), "pipelab_rss_mb": mb(me)}
print(json.dumps(load, indent=2))
PY
