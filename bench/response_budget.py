#!/usr/bin/env python3
"""Clients that ask for large answers and read none of them, against a
`pipelab serve` (docs/api.md#memory-of-answers): pipelab's RSS before and
at its peak, how the answers were answered, and another client's PINGs.

  bench/response_budget.py target/release/pipelab [--budget 512mb]
      [--value-mb 10] [--addresses 8] [--sockets 28] [--seconds 20]

Starts its own redis-server and `pipelab serve --redis`; stores a value of
NUL bytes (its JSON six times as large); `--addresses` × `--sockets`
sockets (from 127.0.0.2, …, each with a 4 KiB receive buffer) send
`POST /api/v1/batch` `GET big`, read the head of the answer, leave a 200's
body unread and ask again 50 ms after a refusal; one more client sends
PINGs one after the other. Standard library only.
"""

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def redis_cmd(port, *argv):
    with socket.create_connection(("127.0.0.1", port)) as s:
        out = f"*{len(argv)}\r\n".encode()
        for a in argv:
            a = a.encode() if isinstance(a, str) else a
            out += f"${len(a)}\r\n".encode() + a + b"\r\n"
        s.sendall(out)
        return s.recv(1024)


def read_head(s):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(1024)
        if not chunk:
            return None, b""
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").lower().split("\r\n")
    status = int(lines[0].split()[1])
    headers = dict(l.split(": ", 1) for l in lines[1:] if ": " in l)
    if status != 200:
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = s.recv(length - len(rest))
            if not chunk:
                break
            rest += chunk
    return status, rest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pipelab")
    ap.add_argument("--budget", default="512mb")
    ap.add_argument("--value-mb", type=int, default=10)
    ap.add_argument("--addresses", type=int, default=8)
    ap.add_argument("--sockets", type=int, default=28)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--serve-arg", action="append", default=[], help="one more argument of pipelab serve")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp()
    rport, pport = free_port(), free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--save", "", "--appendonly", "no", "--dir", tmp],
                             stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    redis_cmd(rport, "SETRANGE", "big", str(args.value_mb * 2**20 - 1), "x")
    serve = subprocess.Popen([args.pipelab, "serve", "--listen", f"127.0.0.1:{pport}", "--redis", f"redis://127.0.0.1:{rport}",
                              "--max-response-memory", args.budget, "--write-timeout-ms", "600000", *args.serve_arg],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    serve.stdout.readline()
    try:
        run(args, pport, serve.pid, rport)
    finally:
        serve.terminate()
        redis.terminate()
        serve.wait()
        redis.wait()


def run(args, port, pid, rport):
    body = json.dumps({"commands": [["PING"]]})
    ping = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(50):
        ping.request("POST", "/api/v1/batch", body, {"Content-Type": "application/json"})
        ping.getresponse().read()
    time.sleep(1)
    base = rss_kib(pid)
    stop = threading.Event()
    peak = [base]

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_kib(pid))
            time.sleep(0.01)

    pings = []

    def pinger():
        while not stop.is_set():
            t = time.perf_counter()
            ping.request("POST", "/api/v1/batch", body, {"Content-Type": "application/json"})
            r = ping.getresponse()
            text = r.read()
            pings.append((time.perf_counter() - t, r.status))
            if r.status != 200:
                print(f"PING answered {r.status}: {text[:300]!r}", file=sys.stderr)
            time.sleep(0.01)

    direct = []

    def redis_pinger():
        # Redis's own latency meanwhile: what a PING through pipelab cannot beat.
        with socket.create_connection(("127.0.0.1", rport)) as r:
            while not stop.is_set():
                t = time.perf_counter()
                r.sendall(b"*1\r\n$4\r\nPING\r\n")
                r.recv(64)
                direct.append(time.perf_counter() - t)
                time.sleep(0.01)

    big = json.dumps({"commands": [["GET", "big"]]})
    request = (f"POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(big)}\r\n\r\n{big}").encode()
    statuses = {}
    held = []
    lock = threading.Lock()

    def attacker(ip):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((ip, 0))
        s.connect(("127.0.0.1", port))
        until = time.monotonic() + args.seconds
        while time.monotonic() < until:
            s.sendall(request)
            status, _ = read_head(s)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
            if status == 200 or status is None:
                break
            time.sleep(0.05)
        with lock:
            held.append(s)

    threads = [threading.Thread(target=sample), threading.Thread(target=pinger), threading.Thread(target=redis_pinger)]
    threads += [threading.Thread(target=attacker, args=(f"127.0.0.{2 + a}",))
                for a in range(args.addresses) for _ in range(args.sockets)]
    for t in threads:
        t.start()
    for t in threads[3:]:
        t.join()
    time.sleep(1)
    stop.set()
    for t in threads[:3]:
        t.join()
    lat = sorted(p[0] * 1000 for p in pings)
    p99 = lat[min(len(lat) - 1, len(lat) * 99 // 100)]
    print(f"budget {args.budget}, {args.addresses}x{args.sockets} sockets, {args.value_mb} MiB of NUL bytes ({6 * args.value_mb} MiB of JSON) each")
    print(f"RSS: base {base // 1024} MiB, peak {peak[0] // 1024} MiB (+{(peak[0] - base) // 1024} MiB)")
    print(f"answers: {dict(sorted((str(k), v) for k, v in statuses.items()))}")
    print(f"PING: {len(lat)} answered ({sum(1 for p in pings if p[1] != 200)} not 200), p50 {statistics.median(lat):.1f} ms, "
          f"p99 {p99:.1f} ms, max {lat[-1]:.1f} ms")
    d = sorted(x * 1000 for x in direct)
    print(f"PING to Redis itself: p50 {statistics.median(d):.1f} ms, p99 {d[min(len(d) - 1, len(d) * 99 // 100)]:.1f} ms, max {d[-1]:.1f} ms")
    for s in held:
        s.close()


if __name__ == "__main__":
    sys.exit(main())
