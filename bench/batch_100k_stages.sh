#!/usr/bin/env bash
# Benchmark (not a test): where a 100k-SET `POST /api/v1/batch` (pipeline,
# one round trip, `"results": "errors"`) spends its time, beside `redis-cli
# --pipe` on the same commands, alternated round by round against one
# redis-server (FLUSHALL before each run).
#
# The API request is sent by a Python client on a raw socket, which stamps
# when it starts sending, when the kernel took the body's last byte, the
# answer's first byte and its last; the report gives the executor's time
# (`summary.total_us`) and its write and read calls. redis-cli is timed by
# its wall time less that of `redis-cli --pipe` on empty input (start,
# connect, exit). Redis's own time and system calls under each come from
# `INFO` before and after (less that of the `INFO` itself).
#
# Usage: bench/batch_100k_stages.sh [ROUNDS (default 7)]
#   PIPELAB_BIN=path   this binary instead of building target/release/pipelab
#   PROFILE=1          then `perf record` of pipelab over PROFILE_BATCHES (default 20)
#                      batches back to back, its symbols summed by stage, and
#                      `strace -c -f` of pipelab and of `redis-cli --pipe` over one each
# Needs redis-server, redis-cli, python3; perf and strace with PROFILE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
ROUNDS=${1:-7}
N=100000
if [ -n "${PIPELAB_BIN:-}" ]; then
  PIPELAB=$PIPELAB_BIN
else
  cargo build -q --release -p pipelab
  PIPELAB=target/release/pipelab
fi

RPORT=$(free_port)
start_redis "$RPORT"
APORT=$(free_port)
PIPELAB_LOG=warn "$PIPELAB" serve --listen "127.0.0.1:$APORT" --redis "redis://127.0.0.1:$RPORT" --web-dir "$work/none" >/dev/null 2>"$work/pipelab.log" &
APID=$!; pids+=($APID)
wait_port "$APORT"

python3 - "$work" "$N" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
cmds = [["SET", f"key:{i:06d}", f"value:{i:06d}"] for i in range(n)]
open(f"{work}/cmds.txt", "w").write("".join(f"{c[0]} {c[1]} {c[2]}\n" for c in cmds))
json.dump({"commands": cmds, "mode": "pipeline", "batch_size": n, "results": "errors"}, open(f"{work}/batch.json", "w"))
PY
"$PIPELAB" resp encode "$work/cmds.txt" >"$work/cmds.resp"

# The API client: one request per call on a fresh connection (as curl's).
cat >"$work/client.py" <<'PY'
import json, socket, sys, time
port, path, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
body = open(path, "rb").read()
head = (f"POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
t0 = time.perf_counter_ns()
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.sendall(head + body)
t_sent = time.perf_counter_ns()
first = None
chunks = []
while True:
    d = s.recv(1 << 20)
    if not d:
        break
    if first is None:
        first = time.perf_counter_ns()
    chunks.append(d)
t_end = time.perf_counter_ns()
raw = b"".join(chunks)
status = raw.split(b" ", 2)[1]
payload = raw.split(b"\r\n\r\n", 1)[1]
if b"chunked" in raw.split(b"\r\n\r\n", 1)[0].lower():
    data, rest = b"", payload
    while True:
        size, rest = rest.split(b"\r\n", 1)
        size = int(size, 16)
        if size == 0:
            break
        data, rest = data + rest[:size], rest[size + 2:]
    payload = data
assert status == b"200", raw[:300]
s_ = json.loads(payload)["summary"]
assert s_["ok"] == 100000, s_
us = lambda t: (t - t0) / 1000
# upload_us answer_first_us answer_last_us total_us write_syscalls read_syscalls bytes_sent report_bytes
print(f"{us(t_sent):.0f} {us(first):.0f} {us(t_end):.0f} {s_['total_us']} {s_['write_syscalls']} {s_['read_syscalls']} "
      f"{s_['bytes_sent']} {len(payload)}", end=" ", file=open(out, "a"))
PY

# INFO readings around redis-cli: "usec reads writes" of the server.
info() { redis-cli -p "$RPORT" INFO all | tr -d '\r' | awk -F'[:=,]' '
  /^cmdstat_/ {for (i = 2; i < NF; i++) if ($i == "usec") u += $(i + 1)}
  /^total_reads_processed/ {r = $2} /^total_writes_processed/ {w = $2}
  END {print u, r, w}'; }
cli_run() { # → appends "wall_us empty_us redis_usec redis_reads redis_writes"
  local a b t0 t1 t2 out
  read -r -a a < <(info)
  t0=$(date +%s%N)
  out=$(redis-cli -p "$RPORT" --pipe <"$work/cmds.resp")
  t1=$(date +%s%N)
  read -r -a b < <(info)
  grep -q "errors: 0, replies: $N" <<<"$out" || { echo "redis-cli --pipe: $out" >&2; exit 1; }
  redis-cli -p "$RPORT" --pipe </dev/null >/dev/null
  t2=$(date +%s%N)
  # Less the INFO call's own entry.
  echo "$(( (t1 - t0) / 1000 )) $(( (t2 - t1) / 1000 )) $(( b[0] - a[0] )) $(( b[1] - a[1] - 1 )) $(( b[2] - a[2] - 1 ))" >>"$work/cli"
}
api_run() { # → appends the client's figures, then "redis_usec redis_reads redis_writes"
  local a b
  read -r -a a < <(info)
  python3 "$work/client.py" "$APORT" "$work/batch.json" "$work/api"
  read -r -a b < <(info)
  echo "$(( b[0] - a[0] )) $(( b[1] - a[1] - 1 )) $(( b[2] - a[2] - 1 ))" >>"$work/api"
}

echo "[bench] $(date -u '+%Y-%m-%d %H:%M UTC'), load average $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS rounds, $PIPELAB" >&2
: >"$work/cli"; : >"$work/api"
for r in $(seq "$ROUNDS"); do
  redis-cli -p "$RPORT" FLUSHALL >/dev/null
  if (( r % 2 )); then cli_run; fi
  redis-cli -p "$RPORT" FLUSHALL >/dev/null
  api_run
  if (( r % 2 == 0 )); then redis-cli -p "$RPORT" FLUSHALL >/dev/null; cli_run; fi
done

python3 - "$work/cli" "$work/api" "$(stat -c %s "$work/batch.json")" "$(stat -c %s "$work/cmds.resp")" "$ROUNDS" <<'PY'
import statistics as st, sys
cli = [list(map(float, l.split())) for l in open(sys.argv[1])]
api = [list(map(float, l.split())) for l in open(sys.argv[2])]
body, resp_bytes, rounds = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
m = lambda rows, i: st.median(r[i] for r in rows)
cli_us = st.median(r[0] - r[1] for r in cli)
ratios = [(c[0] - c[1]) / a[2] for c, a in zip(cli, api)]
print(f"### 100k SETs, one pipeline: `POST /api/v1/batch` (`results: errors`) against `redis-cli --pipe` ({rounds} rounds, medians)\n")
print("| | redis-cli --pipe | POST /api/v1/batch |")
print("|---|---|---|")
print(f"| whole (redis-cli: wall less its empty run; API: connect to the answer's last byte) | {cli_us / 1000:.1f} ms | {m(api, 2) / 1000:.1f} ms |")
print(f"| ratio (redis-cli's time ÷ the API's), median of the rounds' (range) | | {st.median(ratios):.2f}x ({min(ratios):.2f}–{max(ratios):.2f}) |")
print(f"| sending the request: connect to the body's last byte taken by the kernel ({body / 2**20:.1f} MiB) | | {m(api, 0) / 1000:.1f} ms |")
print(f"| the body's last byte to the answer's first | | {st.median(a[1] - a[0] for a in api) / 1000:.1f} ms |")
print(f"| of which before the first write to Redis (the last byte → answer less `summary.total_us`: the rest of the body parsed and checked, the batch made and handed over, a pooled connection) | | {st.median(a[1] - a[0] - a[3] for a in api) / 1000:.2f} ms |")
print(f"| of which the executor (`summary.total_us`: first write to last reply) | | {m(api, 3) / 1000:.1f} ms |")
print(f"| the answer's first byte to its last ({m(api, 7):.0f} bytes) | | {st.median(a[2] - a[1] for a in api) / 1000:.2f} ms |")
print(f"| Redis running the commands (`INFO commandstats` usec) | {m(cli, 2) / 1000:.1f} ms | {m(api, 8) / 1000:.1f} ms |")
print(f"| Redis's reads / writes on client sockets | {m(cli, 3):.0f} / {m(cli, 4):.0f} | {m(api, 9):.0f} / {m(api, 10):.0f} |")
print(f"| client's writes of RESP ({resp_bytes / 2**20:.1f} MiB) / reads of replies | | {m(api, 4):.0f} / {m(api, 5):.0f} |")
PY
echo "[bench] load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2

[ "${PROFILE:-}" = 1 ] || exit 0
ensure_pkg perf linux-perf
ensure_pkg strace
B=${PROFILE_BATCHES:-20}
echo
echo "### Where pipelab's CPU goes, $B batches back to back (\`perf record\`, symbols summed by stage)"
echo
perf record -q -F 2000 -p "$APID" -o "$work/perf.data" 2>/dev/null &
ppid=$!
sleep 0.5
t0=$(awk '{print $14 + $15}' "/proc/$APID/stat")
for _ in $(seq "$B"); do python3 "$work/client.py" "$APORT" "$work/batch.json" "$work/api_prof"; done
t1=$(awk '{print $14 + $15}' "/proc/$APID/stat")
kill -INT "$ppid"; wait "$ppid" 2>/dev/null || true
perf report -i "$work/perf.data" --no-children --sort sym --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' >"$work/perf.txt" || true
python3 - "$work/perf.txt" "$(( (t1 - t0) * 1000000 / $(getconf CLK_TCK) / B ))" <<'PY'
import re, sys
cpu_us = int(sys.argv[2])
stages = [
    ("receiving the body (kernel recv, copy)", r"copy_user|tcp_recvmsg|skb_copy|recvfrom|__skb_datagram|tcp_rcv|_copy_to_iter"),
    ("parsing the JSON commands (incremental fast path; serde_json for the rest)", r"incremental|serde_json|IncrementalBody|parse_json|find_commands|argv_of|unescape"),
    ("checking commands: before the first write (prepare, into_batch, validate, Traits::of), and each one pulled", r"validate|check_command|commands::Table|commands::rules|Rules|refuse|readonly|BatchFields|Prepared|lookup|changes_connection_state|Traits::of|Runner<S,K>::pull"),
    ("encoding RESP", r"encode_command|resp::encode|write_i64|Segment::fill|itoa"),
    ("sending to Redis (kernel write, TCP)", r"tcp_sendmsg|tcp_write_xmit|__tcp_transmit|ip_|__dev_queue|loopback|net_rx|__netif|sendto|skb_|tcp_v4|__tcp_|tcp_ack|tcp_clean|tcp_rcv_established|copy_from_iter|__sys_sendto|sock_"),
    ("reading and decoding replies", r"Decoder|decode|ReadBuffer|next_reply|read_reply|buffered_reply|read_replies"),
    ("results, summary, report JSON", r"emit|ResultSink|KeptResults|report_json|write_summary|Summary|ReportWriter|Timespec|drop_in_place<resp::value"),
    ("memory (malloc, free, memcpy, page faults)", r"mi_|malloc|free|memcpy|memmove|memset|page_fault|clear_page|do_anonymous|handle_mm|_raw_spin|alloc_pages|__rmqueue|get_page|zap_|unmap|mmap|madvise"),
    ("scheduling, epoll, timers, syscall entry", r"epoll|schedule|futex|entry_SYSCALL|syscall|tokio|switch|hrtimer|ktime|clock|update_|enqueue|dequeue|pick_next|try_to_wake|do_idle|timer"),
]
tot = {}
other = []
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)%\s+\[(.)\]\s+(.*)$", line)
    if not m:
        continue
    pct, sym = float(m.group(1)), m.group(3).strip()
    for name, pat in stages:
        if re.search(pat, sym):
            tot[name] = tot.get(name, 0) + pct
            break
    else:
        tot["other"] = tot.get("other", 0) + pct
        other.append((pct, sym))
print(f"pipelab's CPU per batch (user + system, /proc/PID/stat): {cpu_us / 1000:.1f} ms\n")
print("| stage | share of pipelab's samples | ms per batch |")
print("|---|---|---|")
for name, _ in stages + [("other", "")]:
    if name in tot:
        print(f"| {name} | {tot[name]:.1f}% | {tot[name] / 100 * cpu_us / 1000:.1f} |")
print("\nTop of the rest: " + "; ".join(f"{s[:60]} {p:.1f}%" for p, s in sorted(other, reverse=True)[:8]))
print("\nTop symbols: " + "; ".join(f"{l.split(None, 2)[2].strip()[:70]} {l.split()[0]}" for l in open(sys.argv[1]).readlines()[:25]))
PY

echo
echo "### System calls (\`strace -c -f\`), one batch each"
echo
strace_top() { python3 -c '
import sys
rows = []
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        rows.append((int(f[3]), f[-1]))
rows.sort(reverse=True)
print(", ".join(f"{n} {c}" for n, c in rows[:8]) + f" (all: {sum(n for n, _ in rows)})")' "$1"; }
strace -c -f -p "$APID" -o "$work/strace_api.txt" 2>/dev/null &
spid=$!
sleep 0.5
python3 "$work/client.py" "$APORT" "$work/batch.json" "$work/api_strace"
kill -INT "$spid"; wait "$spid" 2>/dev/null || true
echo "- pipelab serve: $(strace_top "$work/strace_api.txt")"
redis-cli -p "$RPORT" FLUSHALL >/dev/null
strace -c -f -o "$work/strace_cli.txt" redis-cli -p "$RPORT" --pipe <"$work/cmds.resp" >/dev/null
echo "- redis-cli --pipe: $(strace_top "$work/strace_cli.txt")"
strace -f -e trace=write,sendto,writev -o "$work/strace_cli_w.txt" redis-cli -p "$RPORT" --pipe <"$work/cmds.resp" >/dev/null
echo "- redis-cli --pipe's writes to the socket: $(grep -cE '^[0-9]+ +(write|sendto)\(3,' "$work/strace_cli_w.txt" || true), of $(grep -oE '= [0-9]+$' "$work/strace_cli_w.txt" | awk '{s += $2; n++} END {printf "%.0f bytes on average", s / n}')"
