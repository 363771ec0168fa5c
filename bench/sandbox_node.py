"""One sandbox node's figures for docs/scale.md: what a visitor costs in
memory and in CPU. Not a test and not in CI.

usage: python3 bench/sandbox_node.py [PIPELAB_BIN] [VISITORS] [SECONDS]
  (default target/release/pipelab, 200 visitors, 20 s)

Starts `pipelab serve --sandbox --threads 1` on the loopback, VISITORS
visitors (each from an address of its own) each run a lesson (100 SETs,
pipelined), then the children's private memory (/proc/PID/smaps_rollup)
per visitor is read. Then every visitor runs small batches (GET, INCR:
what a person pressing Run sends) back to back from 4 client processes
for SECONDS: requests/s, and the CPU the node spent on them (pipelab and
its redis-servers, from /proc/PID/stat): requests per CPU-second. Then a
restart (SIGTERM, which saves every visitor, and a node started again on
the same state directory): how long its port is closed. Prints one JSON
object.
"""

import http.client
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/pipelab"
VISITORS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 20
CLIENTS = 4
TICK = os.sysconf("SC_CLK_TCK")


def address(i):
    return f"127.0.{1 + i // 200}.{2 + i % 200}"


def post(port, body, cookie, src):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(src, 0))
    headers = {"content-type": "application/json"}
    if cookie:
        headers["cookie"] = cookie
    conn.request("POST", "/api/v1/batch", body=json.dumps(body), headers=headers)
    res = conn.getresponse()
    res.read()
    cookie = cookie or res.getheader("set-cookie", "").split(";")[0]
    conn.close()
    return res.status, cookie


def family(pid):
    """pid and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def cpu_seconds(pid):
    total = 0
    for p in family(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        except OSError:
            pass
    return total / TICK


def private_kb(pid):
    kb = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                kb += int(line.split()[1])
    return kb


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def run(args):
    port, mine, until = args
    n = 0
    while time.monotonic() < until:
        for i, cookie in mine:
            status, _ = post(port, {"commands": [["GET", "lesson:1"], ["INCR", "count"]]}, cookie, address(i))
            n += status == 200
            if time.monotonic() >= until:
                break
    return n


def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    state = tempfile.mkdtemp(prefix="pipelab-node-bench-")
    log = open(os.path.join(state, "serve.log"), "w")
    argv = [BIN, "serve", "--sandbox", "--threads", "1", "--listen", f"127.0.0.1:{port}", "--sandbox-state-dir", os.path.join(state, "state")]
    proc = subprocess.Popen(argv, stdout=log, stderr=log)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        lesson = {"commands": [["SET", f"lesson:{k}", f"value {k}"] for k in range(100)]}
        cookies = []
        for i in range(VISITORS):
            status, cookie = post(port, lesson, None, address(i))
            assert status == 200, status
            cookies.append((i, cookie))
        time.sleep(1)
        kids = family(proc.pid)[1:]
        private = sum(private_kb(p) for p in kids)
        out = {
            "visitors": VISITORS,
            "redis_servers": len(kids),
            "children_private_mb": round(private / 1024, 1),
            "private_mb_per_redis_server": round(private / 1024 / len(kids), 2),
            "pipelab_rss_mb": round(rss_kb(proc.pid) / 1024, 1),
        }
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        until = t0 + SECONDS
        parts = [(port, cookies[k::CLIENTS], until) for k in range(CLIENTS)]
        with multiprocessing.Pool(CLIENTS) as pool:
            done = sum(pool.map(run, parts))
        took, cpu = time.monotonic() - t0, cpu_seconds(proc.pid) - cpu0
        out.update({
            "requests": done,
            "requests_per_s": round(done / took),
            "node_cpu_s": round(cpu, 1),
            "requests_per_cpu_s": round(done / cpu) if cpu else None,
        })
        # A restart: SIGTERM (every visitor saved), then a node on the same
        # state directory: how long the port is closed.
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        closed = None
        while proc.poll() is None:
            if closed is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                except OSError:
                    closed = time.monotonic()
            time.sleep(0.002)
        exited = time.monotonic()
        proc = subprocess.Popen(argv, stdout=log, stderr=log)
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.002)
        listening = time.monotonic()
        closed = closed or exited
        out.update({
            "restart_exit_s": round(exited - t0, 2),
            "restart_saving_s": round(exited - closed, 2),
            "restart_port_closed_s": round(listening - closed, 2),
            "restart_start_to_listen_s": round(listening - exited, 2),
            "load_average": os.getloadavg()[0],
        })
        print(json.dumps(out))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)


if __name__ == "__main__":
    main()
