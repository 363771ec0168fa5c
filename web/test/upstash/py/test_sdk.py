"""The official upstash-redis SDK (PyPI, unmodified), sync and async clients,
against a real `pipelab serve` with its embedded Redis.

scripts/test-upstash.sh starts the server and sets UPSTASH_REDIS_REST_URL,
UPSTASH_REDIS_REST_TOKEN and PIPELAB_READONLY_TOKEN; run with
`python3 web/test/upstash/py/test_sdk.py`. Plain asserts, no test framework:
it prints one line per test and `upstash-py: N passed, N failed`.
"""

import asyncio
import os
import sys
import traceback

from upstash_redis import Redis
from upstash_redis.asyncio import Redis as AsyncRedis
from upstash_redis.errors import UpstashError

URL = os.environ["UPSTASH_REDIS_REST_URL"]
TOKEN = os.environ["UPSTASH_REDIS_REST_TOKEN"]
# In the sandbox (PIPELAB_UPSTASH_SANDBOX=1) the token is a visitor's id:
# there is no read-only token, and any token names a visitor.
SANDBOX = os.environ.get("PIPELAB_UPSTASH_SANDBOX") == "1"
READONLY = os.environ.get("PIPELAB_READONLY_TOKEN") if SANDBOX else os.environ["PIPELAB_READONLY_TOKEN"]
_n = [0]


def key(name):
    _n[0] += 1
    return f"py:{os.getpid()}:{_n[0]}:{name}"


def client(**kw):
    return Redis(url=URL, token=TOKEN, rest_retries=0, **kw)


def raises(fn, pattern):
    try:
        fn()
    except UpstashError as e:
        assert pattern in str(e), f"{pattern!r} not in {e}"
        return
    raise AssertionError(f"expected an error with {pattern!r}")


TESTS = []


class Skip(Exception):
    """A test that does not apply to this server (its reason)."""


def test(fn):
    TESTS.append(fn)
    return fn


@test
def values_round_trip_with_and_without_base64():
    for encoding in ("base64", None):
        r = client(rest_encoding=encoding)
        k = key("enc")
        for v in ["plain", "héllo wörld 世界 🎉", "OK", "", "line\nbreak", "\x00\x01\x7f", "AAECAw==", "0x1F"]:
            assert r.set(k, v) is True
            assert r.get(k) == v, (encoding, v)
        r.hset(k + "h", values={"a": "1 2", "b": "ü"})
        assert r.hgetall(k + "h") == {"a": "1 2", "b": "ü"}
        assert r.mget(k, k + "missing") == ["0x1F", None]
        assert r.incr(k + "n") == 1


@test
def json_values_are_strings_the_caller_parses():
    r = client()
    k = key("json")
    r.set(k, '{"a": [1, "two", null]}')
    assert r.get(k) == '{"a": [1, "two", null]}'


@test
def read_your_writes_token_moves_after_a_write():
    r = client()
    k = key("ryw")
    r.get(k)
    t0 = r._sync_token
    assert t0
    r.set(k, "v")
    assert r._sync_token != t0
    assert client(read_your_writes=False).get(k) == "v"


@test
def pipeline_in_order_errors_raise():
    r = client()
    k = key("pipe")
    p = r.pipeline()
    p.set(k, 1)
    p.incr(k)
    p.get(k)
    assert p.exec() == [True, 2, "2"]
    r.hset(k + "h", "f", "v")
    p = r.pipeline()
    p.incr(k)
    p.incr(k + "h")
    try:
        p.exec()
        raise AssertionError("the WRONGTYPE entry should raise")
    except UpstashError as e:
        assert "WRONGTYPE" in str(e)
    assert r.get(k) == "3", "the command before the error ran"


@test
def multi_runs_as_a_transaction():
    r = client()
    k = key("multi")
    t = r.multi()
    t.incr(k)
    t.set(k + "s", "x")
    t.get(k + "s")
    assert t.exec() == [1, True, "x"]


@test
def eval_and_evalsha():
    r = client()
    k = key("lua")
    script = "redis.call('SET', KEYS[1], ARGV[1]); return {redis.call('GET', KEYS[1]), 7}"
    assert r.eval(script, keys=[k], args=["v1"]) == ["v1", 7]
    sha = r.script_load(script)
    assert len(sha) == 40
    assert r.evalsha(sha, keys=[k], args=["v2"]) == ["v2", 7]
    raises(lambda: r.evalsha("0" * 40), "NOSCRIPT")


@test
def scans():
    r = client()
    prefix = key("scan")
    p = r.pipeline()
    for i in range(30):
        p.set(f"{prefix}:{i}", i)
    p.exec()
    seen, cursor = set(), 0
    while True:
        cursor, keys = r.scan(cursor, match=f"{prefix}:*", count=10)
        seen.update(keys)
        if cursor == 0:
            break
    assert len(seen) == 30
    r.hset(prefix + "h", values={"a": "1"})
    assert r.hscan(prefix + "h", 0) == (0, {"a": "1"})
    r.zadd(prefix + "z", {"m": 1.5})
    assert r.zscan(prefix + "z", 0) == (0, [("m", 1.5)])


@test
def sorted_sets_with_scores():
    r = client()
    k = key("zset")
    assert r.zadd(k, {"one": 1, "two": 2.5, "neg": -3}) == 3
    assert r.zrange(k, 0, -1) == ["neg", "one", "two"]
    assert r.zrange(k, 0, -1, withscores=True) == [("neg", -3.0), ("one", 1.0), ("two", 2.5)]
    assert r.zscore(k, "two") == 2.5
    assert r.zincrby(k, 0.25, "two") == 2.75


@test
def ten_thousand_command_pipeline():
    r = client()
    k = key("big")
    p = r.pipeline()
    for i in range(10_000):
        p.set(f"{k}:{i}", f"v{i}")
    assert p.exec() == [True] * 10_000
    p = r.pipeline()
    for i in range(10_000):
        p.get(f"{k}:{i}")
    assert p.exec() == [f"v{i}" for i in range(10_000)]


@test
def wrong_token_is_unauthorized():
    if SANDBOX:
        raise Skip("in the sandbox any token names a visitor")
    raises(lambda: Redis(url=URL, token="not-the-token", rest_retries=0).get("k"), "Unauthorized")


@test
def read_only_token_reads_and_cannot_write():
    if SANDBOX:
        raise Skip("the sandbox has no read-only tokens")
    r = client()
    k = key("ro")
    r.set(k, "v")
    ro = Redis(url=URL, token=READONLY, rest_retries=0)
    assert ro.get(k) == "v"
    raises(lambda: ro.set(k, "w"), "NOPERM")
    raises(lambda: ro.delete(k), "NOPERM")
    assert r.get(k) == "v"


@test
def async_client_same_list():
    async def main():
        r = AsyncRedis(url=URL, token=TOKEN, rest_retries=0)
        k = key("async")
        assert await r.set(k, "héllo 🎉") is True
        assert await r.get(k) == "héllo 🎉"
        results = await asyncio.gather(*[r.incr(k + "n") for _ in range(20)])
        assert sorted(results) == list(range(1, 21))
        p = r.pipeline()
        for i in range(1000):
            p.set(f"{k}:{i}", i)
        assert await p.exec() == [True] * 1000
        t = r.multi()
        t.incr(k + "n")
        t.get(k + "n")
        assert await t.exec() == [21, "21"]
        assert await r.zadd(k + "z", {"a": 0.5}) == 1
        assert await r.zscore(k + "z", "a") == 0.5
        assert await r.eval("return ARGV[1]", args=["x"]) == "x"
        if SANDBOX:
            return
        ro = AsyncRedis(url=URL, token=READONLY, rest_retries=0)
        assert await ro.get(k) == "héllo 🎉"
        try:
            await ro.set(k, "w")
            raise AssertionError("read-only write should fail")
        except UpstashError as e:
            assert "NOPERM" in str(e)
        try:
            await AsyncRedis(url=URL, token="wrong", rest_retries=0).get(k)
            raise AssertionError("wrong token should fail")
        except UpstashError as e:
            assert "Unauthorized" in str(e)

    asyncio.run(main())


def run():
    passed = failed = skipped = 0
    for fn in TESTS:
        try:
            fn()
            passed += 1
            print(f"ok - {fn.__name__}")
        except Skip as why:
            skipped += 1
            print(f"ok - {fn.__name__} # SKIP {why}")
        except Exception:
            failed += 1
            print(f"not ok - {fn.__name__}")
            traceback.print_exc()
    print(f"upstash-py: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run())
