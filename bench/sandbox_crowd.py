"""A crowd of sandbox visitors who come back, for `bench/sandbox.sh crowd`.

  arrive   --visitors visitors arrive one every --every-ms, each from an
           address of its own on the loopback; each runs a lesson (100 SETs,
           pipelined): the new visitor's first answer, timed.
  return   --returning of the first visitors (hibernated by then: quiet for
           longer than the server's --sandbox-hibernate-after) come back
           within the same --within seconds, each running `DBSIZE` and a
           `GET`: the returning visitor's first answer (their Redis started
           again on their saved keys), timed, and checked to hold their 100
           keys.

Each request is on a connection of its own (a crowd holds no sockets open).
Prints one JSON object.
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


LESSON = json.dumps({"commands": [["SET", f"k{i}", f"value {i}"] for i in range(100)], "mode": "pipeline"})
BACK = json.dumps({"commands": [["DBSIZE"], ["GET", "k42"]]})


class Visitor:
    def __init__(self, port, n):
        self.port = port
        self.source = (f"127.{1 + n // 62500}.{1 + n // 250 % 250}.{1 + n % 250}", 0)
        self.cookie = None

    def post(self, body):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60, source_address=self.source)
        headers = {"Content-Type": "application/json", "Connection": "close"}
        if self.cookie:
            headers["Cookie"] = self.cookie
        t = time.perf_counter()
        try:
            conn.request("POST", "/api/v1/batch", body=body, headers=headers)
            res = conn.getresponse()
            data = res.read()
        except OSError as e:
            return type(e).__name__, None, (time.perf_counter() - t) * 1000
        finally:
            conn.close()
        ms = (time.perf_counter() - t) * 1000
        set_cookie = res.getheader("Set-Cookie")
        if set_cookie:
            self.cookie = set_cookie.split(";")[0]
        return res.status, data, ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--visitors", type=int, default=10000)
    ap.add_argument("--returning", type=int, default=1000)
    ap.add_argument("--every-ms", type=float, default=20)
    ap.add_argument("--within", type=float, default=60)
    ap.add_argument("--hibernate-after", type=float, default=20)
    a = ap.parse_args()

    visitors, first, failed, first_at = [], [], [], []
    start = time.monotonic()
    for n in range(a.visitors):
        v = Visitor(a.port, n)
        due = start + n * a.every_ms / 1000
        time.sleep(max(0.0, due - time.monotonic()))
        sent = time.monotonic() - start
        status, _, ms = v.post(LESSON)
        (first if status == 200 else failed).append(ms if status == 200 else status)
        if status == 200:
            first_at.append((round(ms, 1), n, round(sent, 2)))
        visitors.append(v)
    arrive_s = time.monotonic() - start
    # The first ones have been quiet past --sandbox-hibernate-after (and its reaper's tick).
    time.sleep(max(0.0, a.hibernate_after + 2 - (time.monotonic() - start - a.returning * a.every_ms / 1000)))

    back, back_failed, lost, back_at = [], [], [], []
    lock = threading.Lock()
    t0 = time.monotonic()

    def come_back(i, v):
        time.sleep(max(0.0, t0 + i * a.within / a.returning - time.monotonic()))
        sent = time.monotonic() - start
        status, data, ms = v.post(BACK)
        with lock:
            if status != 200:
                back_failed.append(status)
                return
            back.append(ms)
            back_at.append((round(ms, 1), i, round(sent, 2)))
            results = json.loads(data)["results"]
            if results[0]["reply"]["value"] != 100 or results[1]["reply"]["value"] != "value 42":
                lost.append(i)

    threads = [threading.Thread(target=come_back, args=(i, v)) for i, v in enumerate(visitors[: a.returning])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({
        "visitors": a.visitors, "arrive_s": round(arrive_s, 1),
        "new_first_answer": summary(first), "new_failed": failed[:20], "new_failed_n": len(failed),
        "new_slowest": [{"ms": ms, "visitor": n, "sent_s": at} for ms, n, at in sorted(first_at, reverse=True)[:5]],
        "returning": a.returning, "within_s": a.within,
        "returning_first_answer": summary(back), "returning_failed": back_failed[:20], "returning_failed_n": len(back_failed),
        "returning_slowest": [{"ms": ms, "visitor": n, "sent_s": at} for ms, n, at in sorted(back_at, reverse=True)[:10]],
        "returning_keys_lost": len(lost),
    }))


if __name__ == "__main__":
    main()
