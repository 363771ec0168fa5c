#!/usr/bin/env python3
"""Hibernated visitors who come back all at once, against `--sandbox-max-visitors`:
how far past the cap the node runs while it hibernates others to make room.

  bench/sandbox_cap.py target/release/pipelab [--visitors 600] [--max 200]
      [--at-once 16]

Starts `pipelab serve --sandbox --sandbox-max-visitors MAX` (a temporary
state directory, no idle hibernation), makes VISITORS visitors, each from
an address of its own with a key of their own (the cap hibernates the
least recently active as they arrive), waits until no more than MAX run,
then every visitor reads their key back, AT-ONCE at a time, most of them
started again on their saved keys. Printed as JSON: the running visitors
(`pipelab_sandbox_children` of `/metrics`, sampled every 20 ms) at their
peak and 2 s after the last came back, the returning visitors' answers
p50/p99, keys lost. Standard library only.
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def address(n):
    return f"127.3.{n // 250}.{1 + n % 250}"


def post(port, source, body, cookie=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    headers = {"Content-Type": "application/json", "Connection": "close"}
    if cookie:
        headers["Cookie"] = cookie
    try:
        conn.request("POST", "/api/v1/batch", body=json.dumps({"commands": body}), headers=headers)
        res = conn.getresponse()
        data = res.read()
        set_cookie = res.getheader("Set-Cookie")
        return res.status, data, set_cookie.split(";")[0] if set_cookie else cookie
    finally:
        conn.close()


def running(port, source="127.0.0.1"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    for line in text.splitlines():
        if line.startswith("pipelab_sandbox_children "):
            return int(float(line.split()[1]))
    return None


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))], 1) if xs else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("--visitors", type=int, default=600)
    ap.add_argument("--max", type=int, default=200)
    ap.add_argument("--at-once", type=int, default=16)
    a = ap.parse_args()

    state = tempfile.mkdtemp(prefix="pipelab-cap-")
    port = free_port()
    server = subprocess.Popen([a.bin, "serve", "--listen", f"127.0.0.1:{port}", "--sandbox", "--sandbox-max-visitors", str(a.max),
                               "--sandbox-hibernate-after", "1h", "--sandbox-state-dir", state, "--max-connections", "4096"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                running(port)
                break
            except OSError:
                time.sleep(0.05)
        cookies = []
        for n in range(a.visitors):
            status, data, cookie = post(port, address(n), [["SET", "mine", str(n)]])
            assert status == 200, (status, data)
            cookies.append(cookie)
        end = time.monotonic() + 60
        while (running(port) or 0) > a.max and time.monotonic() < end:
            time.sleep(0.1)
        before = running(port)

        samples, stop = [], threading.Event()

        def sample():
            k = 0
            while not stop.is_set():
                # From a few addresses: the sandbox's rate limit is per address.
                k += 1
                n = running(port, f"127.4.0.{1 + k % 100}")
                if n is not None:
                    samples.append(n)
                time.sleep(0.02)

        sampler = threading.Thread(target=sample)
        sampler.start()
        times, lost, lock = [], [], threading.Lock()
        queue = list(enumerate(cookies))

        def comer():
            while True:
                with lock:
                    if not queue:
                        return
                    n, cookie = queue.pop(0)
                t = time.perf_counter()
                status, data, _ = post(port, address(n), [["GET", "mine"]], cookie)
                ms = (time.perf_counter() - t) * 1000
                with lock:
                    times.append(ms)
                    if status != 200 or json.loads(data)["results"][0]["reply"]["value"] != str(n):
                        lost.append(n)

        t0 = time.monotonic()
        comers = [threading.Thread(target=comer) for _ in range(a.at_once)]
        for t in comers:
            t.start()
        for t in comers:
            t.join()
        back_s = time.monotonic() - t0
        time.sleep(2)
        stop.set()
        sampler.join()
        print(json.dumps({
            "visitors": a.visitors, "max_visitors": a.max, "at_once": a.at_once, "running_before": before,
            "running_peak": max(samples), "running_after_2s": samples[-1], "back_s": round(back_s, 1),
            "returning_p50_ms": pct(times, 0.5), "returning_p99_ms": pct(times, 0.99), "keys_lost": len(lost),
        }))
    finally:
        server.terminate()
        server.wait()
        subprocess.run(["rm", "-rf", state])


if __name__ == "__main__":
    sys.exit(main())
