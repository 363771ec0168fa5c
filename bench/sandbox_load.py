"""Visitors of a `pipelab serve --sandbox`, for bench/sandbox.sh.

Each visitor is a cookie jar on its own keep-alive connection. Phases:

  arrive   N visitors arrive one every --every-ms; each one's first batch
           (a SET: it gets a Redis of its own) is timed: the new
           visitor's first answer.
  lesson   A visitors (of those N) each run a lesson-sized batch (100
           SETs, pipelined) every --think-ms (default 1000: a visitor
           pressing Run every second) for --seconds, timed; --think-ms 0
           runs them back to back, the server's capacity.
  stalls   as `lesson`, once per stall, while one more visitor runs that
           stall again and again: a script that never ends, a Lua heap
           bomb, a 100 MB SETRANGE, WATCH of 100,000 keys, 1 MB scripts
           into the script cache.

Prints one JSON object: latencies in ms (p50, p99, max) per phase, and
each stall's p99 over the quiet one.
"""
import argparse
from collections import Counter
import http.client
import json
import multiprocessing
import random
import threading
import time


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))], 2) if xs else None


def summary(xs):
    return {"n": len(xs), "p50_ms": pct(xs, 0.50), "p99_ms": pct(xs, 0.99), "max_ms": round(max(xs), 2) if xs else None}


class RawJson(str):
    """A body already encoded."""


class Visitor:
    """Visitor `n` comes from an address of its own on the loopback
    (127.0.x.y): the server's limits per client address apply as they
    would to people on the internet."""

    def __init__(self, port, n):
        source = (f"127.{1 + n // 62500}.{1 + n // 250 % 250}.{1 + n % 250}", 0)
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=source)
        self.cookie = None

    def post(self, path, body):
        headers = {"Content-Type": "application/json"}
        if self.cookie:
            headers["Cookie"] = self.cookie
        encoded = body if isinstance(body, RawJson) else json.dumps(body)
        t = time.perf_counter()
        try:
            self.conn.request("POST", path, body=encoded, headers=headers)
        except (BrokenPipeError, ConnectionResetError, http.client.CannotSendRequest):
            # The server closed this idle keep-alive connection: a new one,
            # as a browser opens (its time counted).
            self.conn.close()
            self.conn.request("POST", path, body=encoded, headers=headers)
        try:
            res = self.conn.getresponse()
            data = res.read()
        except (ConnectionResetError, http.client.RemoteDisconnected) as e:
            self.conn.close()
            return type(e).__name__, b"", (time.perf_counter() - t) * 1000
        ms = (time.perf_counter() - t) * 1000
        set_cookie = res.getheader("Set-Cookie")
        if set_cookie:
            self.cookie = set_cookie.split(";")[0]
        return res.status, data, ms


LESSON = {"commands": [["SET", f"k{i}", "v"] for i in range(100)], "mode": "pipeline"}


def run_lessons(visitors, seconds, think_ms, out, errors):
    stop = time.monotonic() + seconds
    def loop(v):
        # Visitors out of step, as people are.
        time.sleep(random.random() * think_ms / 1000)
        while time.monotonic() < stop:
            status, data, ms = v.post("/api/v1/batch", LESSON)
            if status == 200:
                out.append(ms)
            else:
                errors.append(status)
            time.sleep(think_ms / 1000)
    threads = [threading.Thread(target=loop, args=(v,)) for v in visitors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


STALLS = {
    "busy_script": [["EVAL", "while true do end", "0"]],
    "lua_heap_bomb": [["EVAL", "return #string.rep('x', 1073741824)", "0"]],
    "setrange_100mb": [["SETRANGE", "big", "100000000", "x"]],
    "watch_100k": [["WATCH", *[f"w{i}" for i in range(100000)]]],
    "script_cache": [["SCRIPT", "LOAD", "return '" + "x" * (1 << 20) + f"' -- {i}"] for i in range(24)],
}


def stall(port, commands, until):
    """One visitor running `commands` again and again until `until`: in a
    process of its own, so that making its large bodies does not hold the
    timed visitors' interpreter lock."""
    v = Visitor(port, 1 << 20)
    body = RawJson(json.dumps({"commands": commands}))
    while time.monotonic() < until:
        try:
            v.post("/api/v1/batch", body)
        except OSError:
            # A body past the rate limit's burst is refused before it is
            # read, and its connection closed: the staller goes on anew.
            v.conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--visitors", type=int, default=1000)
    ap.add_argument("--active", type=int, default=200)
    ap.add_argument("--every-ms", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--think-ms", type=float, default=1000)
    a = ap.parse_args()

    visitors, first, failed = [], [], []
    for n in range(a.visitors):
        v = Visitor(a.port, n)
        status, data, ms = v.post("/api/v1/batch", {"commands": [["SET", "hello", "world"]]})
        (first if status == 200 else failed).append(ms if status == 200 else status)
        visitors.append(v)
        time.sleep(a.every_ms / 1000)

    active = visitors[: a.active]
    out = {"first_answer": summary(first), "first_failed": failed, "think_ms": a.think_ms, "lesson": {}}
    for name in ["quiet", *STALLS]:
        times, errors = [], []
        until = time.monotonic() + a.seconds
        s = multiprocessing.Process(target=stall, args=(a.port, STALLS[name], until)) if name in STALLS else None
        if s:
            s.start()
        run_lessons(active, a.seconds, a.think_ms, times, errors)
        if s:
            s.join()
        out["lesson"][name] = {**summary(times), "per_s": round(len(times) / a.seconds), "errors": dict(Counter(map(str, errors)))}
    quiet = out["lesson"]["quiet"]["p99_ms"]
    out["p99_vs_quiet"] = {name: round(out["lesson"][name]["p99_ms"] / quiet, 2) for name in STALLS if quiet and out["lesson"][name]["p99_ms"]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
