#!/usr/bin/env python3
"""Clients that ask for large answers and read none of them, against a
`pipelab serve` (docs/api.md#memory-of-answers): pipelab's RSS before and
at its peak, how the answers were answered, and another client's PINGs.

  bench/response_budget.py target/release/pipelab [--budget 512mb]
      [--value-mb 10] [--addresses 8] [--sockets 28] [--seconds 20]
      [--sandbox [--visitors 7]]

Starts its own redis-server and `pipelab serve --redis`; stores a value of
NUL bytes (its JSON six times as large); `--addresses` × `--sockets`
sockets (from 127.0.0.2, …, each with a 4 KiB receive buffer) send
`POST /api/v1/batch` `GET big`, read the head of the answer, leave a 200's
body unread and ask again 50 ms after a refusal; one more client sends
PINGs one after the other (`--ping-process`: timed in a process of their
own, away from the other clients' threads). Standard library only.

`--sandbox` starts `pipelab serve --sandbox` instead (docs/sandbox.md):
each address makes `--visitors` visitors (a cookie-less first request,
its `pipelab_sandbox` cookie kept), each stores the value in their own
redis-server and their `--sockets` are shared among them; the PINGs are a
visitor of their own from 127.0.0.1, one every 60 ms (the sandbox's rate
limit is 20 requests a second per address). The state directory is a
temporary one.
"""

import argparse
import http.client
import json
import multiprocessing
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


def children_rss_kib(pid):
    """The RSS of `pid`'s child processes together, and how many: the
    sandbox's redis-servers."""
    total = n = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == pid:
                total += rss_kib(int(entry))
                n += 1
        except (OSError, ValueError, IndexError):
            pass
    return total, n


def new_visitor(ip, port, value_bytes):
    """A sandbox visitor from `ip`: its first request has no cookie, stores
    the value in its own Redis and keeps the `pipelab_sandbox` cookie."""
    conn = http.client.HTTPConnection("127.0.0.1", port, source_address=(ip, 0))
    for _ in range(100):
        body = json.dumps({"commands": [["SETRANGE", "big", str(value_bytes - 1), "x"]]})
        conn.request("POST", "/api/v1/batch", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        text = r.read()
        if r.status == 429:
            time.sleep(float(r.getheader("Retry-After", "1")))
            continue
        cookie = next((v.split(";", 1)[0] for k, v in r.getheaders()
                       if k.lower() == "set-cookie" and v.startswith("pipelab_sandbox=")), None)
        if r.status != 200 or cookie is None or json.loads(text)["results"][0]["reply"]["value"] != value_bytes:
            raise SystemExit(f"new visitor from {ip}: {r.status} {text[:300]!r}")
        conn.close()
        return cookie
    raise SystemExit(f"new visitor from {ip}: refused throughout")


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
    ap.add_argument("--sandbox", action="store_true", help="pipelab serve --sandbox: a Redis of their own for each visitor")
    ap.add_argument("--visitors", type=int, default=7, help="--sandbox: visitors per address, sharing its sockets")
    ap.add_argument("--ping-process", action="store_true", help="time the PINGs in a process of their own")
    args = ap.parse_args()
    if args.sandbox:
        return sandbox_main(args)

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


def sandbox_main(args):
    tmp = tempfile.mkdtemp()
    pport = free_port()
    value = args.value_mb * 2**20
    serve = subprocess.Popen([args.pipelab, "serve", "--sandbox", "--listen", f"127.0.0.1:{pport}",
                              "--sandbox-state-dir", os.path.join(tmp, "state"),
                              "--max-response-memory", args.budget, "--write-timeout-ms", "600000", *args.serve_arg],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    print(serve.stdout.readline().decode().strip())
    try:
        ping_cookie = new_visitor("127.0.0.1", pport, value)
        cookies = {}
        for a in range(args.addresses):
            ip = f"127.0.0.{2 + a}"
            cookies[ip] = [new_visitor(ip, pport, value) for _ in range(args.visitors)]
        run(args, pport, serve.pid, None, cookies, ping_cookie)
    finally:
        serve.terminate()
        serve.wait()


def run(args, port, pid, rport, cookies=None, ping_cookie=None):
    body = json.dumps({"commands": [["PING"]]})
    ping_headers = {"Content-Type": "application/json"}
    if ping_cookie:
        ping_headers["Cookie"] = ping_cookie
    # Under the sandbox's rate limit of 20 requests a second per address.
    ping_pause = 0.06 if ping_cookie else 0.01
    ping = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(50 if rport else 5):
        ping.request("POST", "/api/v1/batch", body, ping_headers)
        ping.getresponse().read()
    time.sleep(1)
    base = rss_kib(pid)
    children_base = children_rss_kib(pid) if cookies else None
    stop = threading.Event()
    peak = [base]

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_kib(pid))
            time.sleep(0.01)

    pings = []

    def pinger(stop=stop, pings=pings):
        while not stop.is_set():
            t = time.perf_counter()
            ping.request("POST", "/api/v1/batch", body, ping_headers)
            r = ping.getresponse()
            text = r.read()
            pings.append((time.perf_counter() - t, r.status))
            if r.status != 200:
                print(f"PING answered {r.status}: {text[:300]!r}", file=sys.stderr)
            time.sleep(ping_pause)

    ping_process = None
    if args.ping_process:
        # The PINGs timed in a process of their own, so that waiting for the
        # interpreter's lock behind the other clients' threads is not counted.
        ctx = multiprocessing.get_context("fork")
        ping_stop = ctx.Event()
        ping_out, ping_in = ctx.Pipe(duplex=False)

        def ping_child():
            own = []
            pinger(ping_stop, own)
            ping_in.send(own)

        ping_process = ctx.Process(target=ping_child)
        ping_process.start()

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

    def big_request(cookie):
        return (f"POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + (f"Cookie: {cookie}\r\n" if cookie else "")
                + f"Content-Length: {len(big)}\r\n\r\n{big}").encode()

    statuses = {}
    messages = {}
    held = []
    lock = threading.Lock()

    def attacker(ip, cookie=None):
        request = big_request(cookie)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((ip, 0))
        s.connect(("127.0.0.1", port))
        until = time.monotonic() + args.seconds
        while time.monotonic() < until:
            s.sendall(request)
            status, rest = read_head(s)
            key = status
            if status not in (200, None):
                try:
                    error = json.loads(rest)["error"]
                    key = f"{status} {error['code']}"
                    if "nothing was run" in error.get("message", ""):
                        key += " (up front)"
                    messages.setdefault(key, error.get("message", ""))
                except (ValueError, KeyError, TypeError):
                    pass
            with lock:
                statuses[key] = statuses.get(key, 0) + 1
            if status == 200 or status is None:
                break
            time.sleep(0.05)
        with lock:
            held.append(s)

    threads = [threading.Thread(target=sample)]
    if not ping_process:
        threads.append(threading.Thread(target=pinger))
    if rport:
        threads.append(threading.Thread(target=redis_pinger))
    watchers = len(threads)
    if cookies:
        # Each address's sockets shared among its visitors, one after the other.
        threads += [threading.Thread(target=attacker, args=(ip, cs[i % len(cs)]))
                    for ip, cs in cookies.items() for i in range(args.sockets)]
    else:
        threads += [threading.Thread(target=attacker, args=(f"127.0.0.{2 + a}",))
                    for a in range(args.addresses) for _ in range(args.sockets)]
    for t in threads:
        t.start()
    for t in threads[watchers:]:
        t.join()
    time.sleep(1)
    stop.set()
    for t in threads[:watchers]:
        t.join()
    if ping_process:
        ping_stop.set()
        pings += ping_out.recv()
        ping_process.join()
    children_end = children_rss_kib(pid) if cookies else None
    lat = sorted(p[0] * 1000 for p in pings)
    p99 = lat[min(len(lat) - 1, len(lat) * 99 // 100)]
    visitors = f" ({args.visitors} visitors an address, each with a Redis of their own)" if cookies else ""
    print(f"budget {args.budget}, {args.addresses}x{args.sockets} sockets{visitors}, {args.value_mb} MiB of NUL bytes ({6 * args.value_mb} MiB of JSON) each")
    print(f"RSS: base {base // 1024} MiB, peak {peak[0] // 1024} MiB (+{(peak[0] - base) // 1024} MiB)")
    print(f"answers: {dict(sorted((str(k), v) for k, v in statuses.items()))}")
    for key, message in sorted(messages.items()):
        print(f"  {key}: {message[:300]}")
    print(f"PING: {len(lat)} answered ({sum(1 for p in pings if p[1] != 200)} not 200), p50 {statistics.median(lat):.1f} ms, "
          f"p99 {p99:.1f} ms, max {lat[-1]:.1f} ms")
    if cookies:
        print(f"the visitors' redis-servers: {children_base[1]} with {children_base[0] // 1024} MiB RSS before, "
              f"{children_end[1]} with {children_end[0] // 1024} MiB at the end")
        for s in held:
            s.close()
        return
    d = sorted(x * 1000 for x in direct)
    print(f"PING to Redis itself: p50 {statistics.median(d):.1f} ms, p99 {d[min(len(d) - 1, len(d) * 99 // 100)]:.1f} ms, max {d[-1]:.1f} ms")
    for s in held:
        s.close()


if __name__ == "__main__":
    sys.exit(main())
