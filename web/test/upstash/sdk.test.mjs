// The official @upstash/redis SDK (from npm, unmodified) against a real
// `pipelab serve` with its embedded Redis: scripts/test-upstash.sh starts the
// server and sets UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN and
// PIPELAB_READONLY_TOKEN. Run: node --test web/test/upstash/
// With PIPELAB_UPSTASH_SANDBOX=1 the server is a sandbox and the token a
// visitor's id: no read-only token, any token is a visitor, and another
// visitor's token must not see this one's keys.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Redis } from "@upstash/redis";

const url = process.env.UPSTASH_REDIS_REST_URL;
const token = process.env.UPSTASH_REDIS_REST_TOKEN;
const readonlyToken = process.env.PIPELAB_READONLY_TOKEN;
const sandbox = process.env.PIPELAB_UPSTASH_SANDBOX === "1";
const tokensOnly = sandbox && "in the sandbox any token names a visitor";
if (!url || !token || !(readonlyToken || sandbox)) {
  throw new Error("set UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN and PIPELAB_READONLY_TOKEN (scripts/test-upstash.sh does)");
}

const client = (opts = {}) => new Redis({ url, token, retry: false, enableTelemetry: true, ...opts });
let n = 0;
const key = (name) => `js:${process.pid}:${n++}:${name}`;

/** The server's count of Upstash requests per endpoint family (2xx). */
async function counts() {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  const out = {};
  for (const m of text.matchAll(/^pipelab_upstash_requests_total\{endpoint="(\w+)",class="2xx"\} (\d+)/gm)) {
    out[m[1]] = Number(m[2]);
  }
  return out;
}
const delta = (a, b, family) => (b[family] ?? 0) - (a[family] ?? 0);

test("auto-pipelining on: concurrent commands share one /pipeline request", async () => {
  const redis = client();
  const k = key("auto");
  const before = await counts();
  const replies = await Promise.all([1, 2, 3, 4, 5].map(() => redis.incr(k)));
  const after = await counts();
  assert.deepEqual(replies.sort(), [1, 2, 3, 4, 5]);
  assert.equal(delta(before, after, "pipeline"), 1);
  assert.equal(await redis.get(k), 5);
});

test("auto-pipelining off: one POST / per command", async () => {
  const redis = client({ enableAutoPipelining: false });
  const k = key("noauto");
  const before = await counts();
  await Promise.all([1, 2, 3].map(() => redis.incr(k)));
  const after = await counts();
  assert.equal(delta(before, after, "command"), 3);
  assert.equal(delta(before, after, "pipeline"), 0);
  assert.equal(await redis.get(k), 3);
});

for (const responseEncoding of ["base64", false]) {
  test(`values round-trip with responseEncoding ${responseEncoding}`, async () => {
    const redis = client({ responseEncoding });
    const k = key("enc");
    const values = ["plain", "héllo wörld 世界 🎉", "OK", "", "line\nbreak\ttab", "\u0000\u0001\u007f", "AAECAw==", "0x1F", "null-ish"];
    for (const v of values) {
      assert.equal(await redis.set(k, v), "OK");
      assert.equal(await redis.get(k), v, JSON.stringify(v));
    }
    await redis.hset(k + "h", { a: "1 2", b: "ü" });
    assert.deepEqual(await redis.hgetall(k + "h"), { a: "1 2", b: "ü" });
    assert.deepEqual(await redis.mget(k, k + "missing"), ["null-ish", null]);
  });
}

test("JSON values are deserialized automatically, or not when asked", async () => {
  const redis = client();
  const k = key("json");
  const obj = { a: 1, nested: { list: [1, "two", null], ok: true } };
  await redis.set(k, obj);
  assert.deepEqual(await redis.get(k), obj);
  await redis.set(k + "n", 42);
  assert.equal(await redis.get(k + "n"), 42);
  const raw = client({ automaticDeserialization: false });
  assert.equal(await raw.get(k), JSON.stringify(obj));
  assert.equal(await raw.get(k + "n"), "42");
});

test("readYourWrites: the sync token is sent and changes after a write", async () => {
  const redis = client({ enableAutoPipelining: false });
  const k = key("ryw");
  await redis.get(k);
  const t0 = redis.readYourWritesSyncToken;
  assert.ok(t0, "a token after the first request");
  await redis.set(k, "v");
  const t1 = redis.readYourWritesSyncToken;
  assert.notEqual(t1, t0);
  assert.equal(await redis.get(k), "v");
  assert.equal(redis.readYourWritesSyncToken, t1, "a read does not move it");
  const off = client({ readYourWrites: false });
  assert.equal(await off.get(k), "v");
});

test("pipeline(): results in order; errors throw, or stay in place with keepErrors", async () => {
  const redis = client();
  const k = key("pipe");
  const p = redis.pipeline();
  p.set(k, 1).incr(k).hset(k + "h", { f: "v" }).incr(k + "h").get(k);
  await assert.rejects(p.exec(), /Command 4 \[ incr \] failed: WRONGTYPE/);
  const q = redis.pipeline();
  q.set(k, 1).incr(k).incr(k + "h").get(k);
  const res = await q.exec({ keepErrors: true });
  assert.equal(res.length, 4);
  assert.deepEqual([res[0].result, res[1].result, res[3].result], ["OK", 2, 2]);
  assert.equal(res[0].error, undefined);
  assert.match(res[2].error, /^WRONGTYPE/);
  assert.equal(res[2].result, undefined);
});

test("several concurrent multi() each get their own transaction", async () => {
  const redis = client();
  const k = key("multi");
  const runs = await Promise.all(
    Array.from({ length: 20 }, (_, i) => redis.multi().incr(k).set(`${k}:${i}`, i).get(`${k}:${i}`).exec()),
  );
  for (const [i, [count, ok, got]] of runs.entries()) {
    assert.equal(typeof count, "number");
    assert.equal(ok, "OK");
    assert.equal(got, i);
  }
  assert.deepEqual(runs.map((r) => r[0]).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1));
  // A run-time error stays in place (no rollback).
  await redis.hset(k + "h", { f: "v" });
  const res = await redis.multi().incr(k + "h").incr(k).exec({ keepErrors: true });
  assert.match(res[0].error, /^WRONGTYPE/);
  assert.equal(res[1].result, 21);
});

test("eval, evalsha, scriptLoad and createScript", async () => {
  const redis = client();
  const k = key("lua");
  const script = "redis.call('SET', KEYS[1], ARGV[1]); return {redis.call('GET', KEYS[1]), 7}";
  assert.deepEqual(await redis.eval(script, [k], ["v1"]), ["v1", 7]);
  const sha = await redis.scriptLoad(script);
  assert.match(sha, /^[0-9a-f]{40}$/);
  assert.deepEqual(await redis.evalsha(sha, [k], ["v2"]), ["v2", 7]);
  await assert.rejects(redis.evalsha("0".repeat(40), [], []), /NOSCRIPT/);
  const s = redis.createScript("return ARGV[1]");
  assert.equal(await s.exec([], ["hello"]), "hello");
  assert.equal(await s.evalsha([], ["again"]), "again");
});

test("scan, hscan, sscan and zscan", async () => {
  const redis = client();
  const prefix = key("scan");
  await Promise.all(Array.from({ length: 30 }, (_, i) => redis.set(`${prefix}:${i}`, i)));
  const seen = new Set();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, { match: `${prefix}:*`, count: 10 });
    keys.forEach((x) => seen.add(x));
    cursor = next;
  } while (String(cursor) !== "0");
  assert.equal(seen.size, 30);
  await redis.hset(prefix + "h", { a: 1, b: 2 });
  const [, h] = await redis.hscan(prefix + "h", 0);
  assert.deepEqual(h.sort(), [1, 2, "a", "b"].sort());
  await redis.sadd(prefix + "s", "x", "y");
  const [, s] = await redis.sscan(prefix + "s", 0);
  assert.deepEqual(s.sort(), ["x", "y"]);
  await redis.zadd(prefix + "z", { score: 1.5, member: "m" });
  const [, z] = await redis.zscan(prefix + "z", 0);
  assert.deepEqual(z, ["m", 1.5]);
});

test("sorted sets with scores", async () => {
  const redis = client();
  const k = key("zset");
  assert.equal(await redis.zadd(k, { score: 1, member: "one" }, { score: 2.5, member: "two" }, { score: -3, member: "neg" }), 3);
  assert.deepEqual(await redis.zrange(k, 0, -1), ["neg", "one", "two"]);
  assert.deepEqual(await redis.zrange(k, 0, -1, { withScores: true }), ["neg", -3, "one", 1, "two", 2.5]);
  assert.equal(await redis.zscore(k, "two"), 2.5);
  assert.equal(await redis.zincrby(k, 0.25, "two"), 2.75);
  assert.equal(await redis.zrank(k, "two"), 2);
  assert.deepEqual(await redis.zrange(k, "(1", "+inf", { byScore: true }), ["two"]);
});

test("a 10,000-command pipeline", async () => {
  const redis = client();
  const k = key("big");
  const p = redis.pipeline();
  for (let i = 0; i < 10_000; i++) p.set(`${k}:${i}`, `v${i}`);
  const res = await p.exec();
  assert.equal(res.length, 10_000);
  assert.ok(res.every((r) => r === "OK"));
  const q = redis.pipeline();
  for (let i = 0; i < 10_000; i++) q.get(`${k}:${i}`);
  const got = await q.exec();
  assert.equal(got[9_999], "v9999");
  assert.equal(got.filter((v, i) => v === `v${i}`).length, 10_000);
});

test("subscribe() and psubscribe() receive what publish() sends", async () => {
  const redis = client();
  const channel = key("chan");
  const sub = redis.subscribe([channel]);
  const psub = redis.psubscribe([`${channel}*`]);
  const got = new Promise((resolve) => sub.on("message", resolve));
  const pgot = new Promise((resolve) => psub.on("pmessage", resolve));
  const subscribed = Promise.all([
    new Promise((resolve) => sub.on("subscribe", resolve)),
    new Promise((resolve) => psub.on("psubscribe", resolve)),
  ]);
  assert.deepEqual(await subscribed, [1, 1]);
  assert.equal(await redis.publish(channel, { hello: "world" }), 2);
  assert.deepEqual(await got, { channel, message: { hello: "world" } });
  assert.deepEqual(await pgot, { pattern: `${channel}*`, channel, message: { hello: "world" } });
  await sub.unsubscribe();
  await psub.unsubscribe();
});

test("a wrong token is refused with Unauthorized", { skip: tokensOnly }, async () => {
  const redis = new Redis({ url, token: "not-the-token", retry: false });
  await assert.rejects(redis.get("k"), /Unauthorized/);
  const none = new Redis({ url, token: "", retry: false });
  await assert.rejects(none.get("k"), /Unauthorized/);
});

test("a read-only token reads and is refused every write (NOPERM)", { skip: tokensOnly }, async () => {
  const redis = client();
  const k = key("ro");
  await redis.set(k, "v");
  const ro = new Redis({ url, token: readonlyToken, retry: false });
  assert.equal(await ro.get(k), "v");
  assert.equal(await ro.exists(k), 1);
  await assert.rejects(ro.set(k, "w"), /NOPERM/);
  await assert.rejects(ro.del(k), /NOPERM/);
  await assert.rejects(ro.eval("return 1", [], []), /NOPERM/);
  await assert.rejects(ro.multi().get(k).set(k, "x").exec(), /NOPERM/);
  assert.equal(await redis.get(k), "v");
});

test("in the sandbox, another visitor's token sees none of this visitor's keys", { skip: !sandbox && "not a sandbox" }, async () => {
  const redis = client();
  const k = key("mine");
  await redis.set(k, "v");
  const info = await (await fetch(`${url}/api/v1/info`)).json();
  assert.notEqual(info.sandbox.token, token);
  const other = new Redis({ url, token: info.sandbox.token, retry: false });
  assert.equal(await other.get(k), null);
  assert.deepEqual(await other.keys("*"), []);
  await other.flushall();
  assert.equal(await redis.get(k), "v");
});

/** Does the server know `name`? (`COMMAND INFO` answers nil for a command it lacks.) */
async function serverHas(redis, name) {
  const [entry] = await redis.exec(["COMMAND", "INFO", name]);
  return Array.isArray(entry);
}

/** The server lacks what a check needs: said, and noted for the server matrix (scripts/test-servers.sh). */
async function lacks(check, feature) {
  const line = `${check}: the server lacks ${feature}`;
  console.log(line);
  if (process.env.PIPELAB_MATRIX_NOTES) {
    const { appendFileSync } = await import("node:fs");
    appendFileSync(process.env.PIPELAB_MATRIX_NOTES, `${line}\n`);
  }
}

// Redis 7.4+ and Valkey 9: fields of a hash that expire on their own.
test("hash field expiry: hexpire, httl, hpexpire, hpersist", async (t) => {
  const redis = client();
  if (!(await serverHas(redis, "HEXPIRE"))) return lacks(t.name, "hash field expiry (HEXPIRE)");
  const k = key("hfe");
  await redis.hset(k, { a: 1, b: 2 });
  assert.deepEqual(await redis.hexpire(k, ["a", "nosuch"], 100), [1, -2]);
  const [ttl] = await redis.httl(k, "a");
  assert.ok(ttl > 90 && ttl <= 100, String(ttl));
  assert.deepEqual(await redis.httl(k, "b"), [-1]);
  assert.deepEqual(await redis.hpexpire(k, "b", 60_000), [1]);
  assert.deepEqual(await redis.hpersist(k, "a"), [1]);
  assert.deepEqual(await redis.httl(k, "a"), [-1]);
  assert.deepEqual(await redis.hexpire(k, "a", 0), [2], "0 s: deleted at once");
  assert.equal(await redis.hexists(k, "a"), 0);
});

// Redis 8.0 (and Valkey 9 for HGETEX/HSETEX): get-and-delete, get-and-expire, set-with-expiry.
test("hgetdel, hgetex and hsetex", async (t) => {
  const redis = client();
  const k = key("hx");
  for (const name of ["HSETEX", "HGETEX", "HGETDEL"]) {
    if (!(await serverHas(redis, name))) {
      await lacks(`${t.name} (${name})`, name);
      continue;
    }
    await redis.del(k);
    if (name === "HSETEX") {
      assert.equal(await redis.exec(["HSETEX", k, "EX", "100", "FIELDS", "1", "f", "v"]), 1);
      const [ttl] = await redis.httl(k, "f");
      assert.ok(ttl > 90 && ttl <= 100, String(ttl));
    } else if (name === "HGETEX") {
      await redis.hset(k, { f: "v" });
      assert.deepEqual(await redis.exec(["HGETEX", k, "EX", "100", "FIELDS", "1", "f"]), ["v"]);
      const [ttl] = await redis.httl(k, "f");
      assert.ok(ttl > 90 && ttl <= 100, String(ttl));
    } else {
      await redis.hset(k, { f: "v", g: "w" });
      assert.deepEqual(await redis.exec(["HGETDEL", k, "FIELDS", "1", "f"]), ["v"]);
      assert.deepEqual(await redis.hkeys(k), ["g"]);
    }
  }
});
