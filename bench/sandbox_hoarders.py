"""Hoarders beside the crowd, for `HOARD=1 bench/sandbox.sh crowd`.

As in cli/tests/sandbox_hoard.rs: --addresses IPv4 loopback addresses
(127.250.x.y on, which the crowd never uses) and, run as root with IPv6 on
`lo`, --v6-networks IPv6 /64s (one address of each added to `lo` for the
run, removed at exit, SIGTERM and SIGINT included) each send cookie-less new
visitors (`POST /api/v1/batch` with a PING, one request per connection) as
fast as the server's --sandbox-new-visitors-per-minute allows: on a 429 the
address waits its `Retry-After`, on any other refusal or a socket error 1 s.

Runs until SIGTERM or SIGINT (or --seconds), then prints one JSON object:
served, 429s, other statuses and socket errors with counts, the served
first answers (p50/p99/max ms; those sent in the opening second, every
address at once, apart too), and the addresses served at least once.
"""
import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from sandbox_crowd import summary  # beside this file: the crowd's figures are summed up the same way

BODY = json.dumps({"commands": [["PING"]]}).encode()


def ip_batch(lines):
    """`ip -6 -force -batch -` on `lines`; its complaints, empty if none."""
    out = subprocess.run(["ip", "-6", "-force", "-batch", "-"], input="".join(lines), capture_output=True, text=True)
    return out.stderr.strip()


def add_v6(addrs, port):
    """Adds `addrs` to lo. Returns why not (None: added)."""
    if os.geteuid() != 0:
        return "not root (adding addresses to lo needs it)"
    try:
        with open("/proc/sys/net/ipv6/conf/lo/disable_ipv6") as f:
            if f.read().strip() == "1":
                return "IPv6 is off on lo"
    except OSError:
        return "/proc/sys/net/ipv6 is missing (no IPv6)"
    if not shutil.which("ip"):
        return "no `ip` command (iproute2)"
    import socket
    try:
        socket.create_connection(("::1", port), timeout=2).close()
    except OSError as e:
        return f"the server does not answer on [::1]:{port} ({e}); it must listen on [::]"
    err = ip_batch(f"addr add {a}/128 dev lo nodad\n" for a in addrs)
    if err:
        ip_batch(f"addr del {a}/128 dev lo\n" for a in addrs)
        return f"ip -6 addr add: {err}"
    return None


class Seen:
    def __init__(self):
        self.served_ms, self.burst_ms, self.after_ms = [], [], []
        self.refused_429 = 0
        self.other = {}
        self.errors = {}
        self.served_from = set()


async def post(src, host, port, timeout):
    """One cookie-less new visitor from `src`: (status, Retry-After or None)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, local_addr=(src, 0)), timeout)
    try:
        writer.write(b"POST /api/v1/batch HTTP/1.1\r\nHost: localhost:%d\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (port, len(BODY), BODY))
        raw = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    parts = head[0].split()
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    retry_after = None
    for line in head[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "retry-after" and value.strip().isdigit():
            retry_after = int(value.strip())
    return status, retry_after


async def hoarder(src, host, port, seen, started, stop):
    while not stop.is_set():
        sent = time.monotonic()
        try:
            status, retry_after = await post(src, host, port, 30)
        except (OSError, asyncio.TimeoutError) as e:
            name = type(e).__name__
            seen.errors[name] = seen.errors.get(name, 0) + 1
            status, wait = None, 1
        else:
            ms = (time.monotonic() - sent) * 1000
            if status == 200:
                seen.served_ms.append(ms)
                (seen.burst_ms if sent - started < 1 else seen.after_ms).append(ms)
                seen.served_from.add(src)
                continue
            if status == 429:
                seen.refused_429 += 1
                wait = max(1, retry_after or 1)
            else:
                seen.other[str(status)] = seen.other.get(str(status), 0) + 1
                wait = 1
        try:
            await asyncio.wait_for(stop.wait(), wait)
        except asyncio.TimeoutError:
            pass


async def run(a, v6_addrs, v6_skipped, stopping):
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if stopping:
        stop.set()
    if a.seconds:
        loop.call_later(a.seconds, stop.set)
    sources = [(f"127.{250 + i // 62500}.{1 + i // 250 % 250}.{1 + i % 250}", "127.0.0.1") for i in range(a.addresses)]
    sources += [(addr, "::1") for addr in v6_addrs]
    seen = Seen()
    started = time.monotonic()
    tasks = [asyncio.create_task(hoarder(src, host, a.port, seen, started, stop)) for src, host in sources]
    await stop.wait()
    # Answers still on their way are left uncounted.
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "seconds": round(time.monotonic() - started, 1),
        "addresses": {"ipv4": a.addresses, "ipv6_networks": len(v6_addrs), "used": len(sources), "served": len(seen.served_from)},
        "ipv6_skipped": v6_skipped,
        "served": len(seen.served_ms), "refused_429": seen.refused_429, "other_statuses": seen.other, "socket_errors": seen.errors,
        "first_answer": summary(seen.served_ms),
        "first_answer_opening_second": summary(seen.burst_ms), "first_answer_after": summary(seen.after_ms),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--addresses", type=int, default=1000, help="IPv4 loopback addresses (127.250.x.y on)")
    ap.add_argument("--v6-networks", type=int, default=64, help="IPv6 /64s (root, IPv6 on lo; 0: none)")
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: at SIGTERM or SIGINT)")
    a = ap.parse_args()

    # Until the event loop takes them over, a signal still ends the run with the addresses removed.
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(1))
    prefix = os.getpid() & 0xFFFF
    wanted = [f"fd42:7a12:{prefix:x}:{i:x}::1" for i in range(a.v6_networks)]
    v6_skipped = add_v6(wanted, a.port) if wanted else "--v6-networks 0"
    v6_addrs = [] if v6_skipped else wanted
    if v6_skipped and wanted:
        print(f"\n*** HOARDERS: THE IPv6 PART IS SKIPPED: {v6_skipped}. Only the IPv4 hoarders run. ***\n", file=sys.stderr, flush=True)
    try:
        out = asyncio.run(run(a, v6_addrs, v6_skipped, stopping))
    finally:
        # asyncio puts the default handlers back: a second signal must not cut the removal short.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        if v6_addrs:
            err = ip_batch(f"addr del {x}/128 dev lo\n" for x in v6_addrs)
            if err:
                print(f"hoarders: removing the IPv6 addresses from lo: {err}", file=sys.stderr)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
