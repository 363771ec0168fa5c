"""Visitors of a `pipelab serve --sandbox`, for bench/sandbox.sh.

Each visitor is a cookie jar on its own keep-alive connection. Phases:

  arrive   N visitors arrive one every --every-ms; each one's first batch
           (a SET: it gets a Redis of its own) is timed: the new
           visitor's first answer.
  lesson   A visitors (of those N) each run a lesson-sized batch (100
           SETs, pipelined) in a loop for --seconds, timed.
  stall    as `lesson`, while one more visitor runs one stall after the
           other (a script that never ends, a Lua heap bomb, a 100 MB
           SETRANGE, 1 MB scripts into the script cache).

Prints one JSON object: latencies in ms (p50, p99, max) per phase.
"""
import argparse
import http.client
import json
import threading
import time


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))], 2) if xs else None


def summary(xs):
    return {"n": len(xs), "p50_ms": pct(xs, 0.50), "p99_ms": pct(xs, 0.99), "max_ms": round(max(xs), 2) if xs else None}


class Visitor:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookie = None

    def post(self, path, body):
        headers = {"Content-Type": "application/json"}
        if self.cookie:
            headers["Cookie"] = self.cookie
        t = time.perf_counter()
        self.conn.request("POST", path, body=json.dumps(body), headers=headers)
        res = self.conn.getresponse()
        data = res.read()
        ms = (time.perf_counter() - t) * 1000
        set_cookie = res.getheader("Set-Cookie")
        if set_cookie:
            self.cookie = set_cookie.split(";")[0]
        return res.status, data, ms


LESSON = {"commands": [["SET", f"k{i}", "v"] for i in range(100)], "mode": "pipeline"}


def run_lessons(visitors, seconds, out, errors):
    stop = time.monotonic() + seconds
    def loop(v):
        while time.monotonic() < stop:
            status, data, ms = v.post("/api/v1/batch", LESSON)
            if status == 200:
                out.append(ms)
            else:
                errors.append(status)
    threads = [threading.Thread(target=loop, args=(v,)) for v in visitors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def stalls(port, until):
    v = Visitor(port)
    bombs = [
        {"commands": [["EVAL", "while true do end", "0"]]},
        {"commands": [["EVAL", "return #string.rep('x', 1073741824)", "0"]]},
        {"commands": [["SETRANGE", "big", "100000000", "x"]]},
        {"commands": [["SCRIPT", "LOAD", "return '" + "x" * (1 << 20) + f"' -- {i}"] for i in range(24)]},
    ]
    i = 0
    while time.monotonic() < until:
        v.post("/api/v1/batch", bombs[i % len(bombs)])
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--visitors", type=int, default=1000)
    ap.add_argument("--active", type=int, default=200)
    ap.add_argument("--every-ms", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    a = ap.parse_args()

    visitors, first, failed = [], [], []
    for _ in range(a.visitors):
        v = Visitor(a.port)
        status, data, ms = v.post("/api/v1/batch", {"commands": [["SET", "hello", "world"]]})
        (first if status == 200 else failed).append(ms if status == 200 else status)
        visitors.append(v)
        time.sleep(a.every_ms / 1000)

    active = visitors[: a.active]
    quiet, quiet_errors = [], []
    run_lessons(active, a.seconds, quiet, quiet_errors)

    stalled, stalled_errors = [], []
    until = time.monotonic() + a.seconds
    s = threading.Thread(target=stalls, args=(a.port, until))
    s.start()
    run_lessons(active, a.seconds, stalled, stalled_errors)
    s.join()

    print(json.dumps({
        "first_answer": summary(first), "first_failed": failed,
        "lesson_quiet": summary(quiet), "lesson_quiet_errors": len(quiet_errors),
        "lesson_with_stalls": summary(stalled), "lesson_with_stalls_errors": len(stalled_errors),
    }))


if __name__ == "__main__":
    main()
