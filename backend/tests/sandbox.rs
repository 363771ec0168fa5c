//! The sandbox (`--sandbox`): every visitor on a redis-server of their own.
//! Two visitors, A (the attacker) and B (whose `secret` must stay theirs),
//! through the in-process router; each attack that got through the old
//! key-rewriting sandbox is tried again as A, and afterwards B's key is read
//! on B's own Redis directly, and B's answers must have stayed quick.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod sandbox_client;

use std::sync::Arc;
use std::time::{Duration, Instant};

use api_inproc::App;
use sandbox_client::{direct, replies};
use axum::body::Body;
use axum::http::{header, Method, Request};
use pipelab_engine::sandbox::{Child, Settings, VisitorId};
use resp::Value;
use serde_json::{json, Value as Json};

/// The app in the sandbox with `settings` (the rest the defaults: 16 MiB a
/// visitor) and a batch timeout of 3 s.
fn start(settings: Settings) -> App {
    App::sandboxed(Settings { spares: 2, ..settings }, &["--batch-timeout-ms", "3000"])
}

fn default_app() -> App {
    start(Settings::default())
}

/// One visitor: the cookie the server gave it.
#[derive(Clone)]
struct Visitor {
    cookie: Option<String>,
}

impl Visitor {
    fn new() -> Visitor {
        Visitor { cookie: None }
    }

    /// A visitor whose cookie names `id` (made up, or another's).
    fn claiming(id: &str) -> Visitor {
        Visitor { cookie: Some(format!("pipelab_sandbox={id}")) }
    }

    async fn post(&mut self, app: &App, path: &str, body: &Json) -> (u16, Json) {
        self.send(app, Method::POST, path, Body::from(serde_json::to_vec(body).unwrap())).await.0
    }

    async fn get(&mut self, app: &App, path: &str) -> (u16, Json) {
        self.send(app, Method::GET, path, Body::empty()).await.0
    }

    /// Status, JSON body and the `Retry-After` header; keeps the cookie the server sets.
    async fn send(&mut self, app: &App, method: Method, path: &str, body: Body) -> ((u16, Json), Option<String>) {
        let mut req = Request::builder().method(method).uri(path).header(header::CONTENT_TYPE, "application/json");
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c.as_str());
        }
        let (status, headers, body) = app.respond(req.body(body).unwrap()).await;
        let set = headers.get(header::SET_COOKIE).expect("every sandbox response sets the cookie").to_str().unwrap();
        assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
        self.cookie = Some(set.split(';').next().unwrap().to_string());
        let retry = headers.get(header::RETRY_AFTER).map(|v| v.to_str().unwrap().to_string());
        ((status.as_u16(), serde_json::from_slice(&body).unwrap_or(Json::Null)), retry)
    }

    async fn batch(&mut self, app: &App, text: &str) -> (u16, Json) {
        self.post(app, "/api/v1/batch", &json!({"text": text})).await
    }

    async fn commands(&mut self, app: &App, commands: Json) -> (u16, Json) {
        self.post(app, "/api/v1/batch", &json!({"commands": commands})).await
    }

    fn id(&self) -> VisitorId {
        VisitorId::parse(self.cookie.as_ref().expect("a cookie").split_once('=').unwrap().1).expect("an id")
    }

    /// This visitor's redis-server (after a request that needed it).
    fn child(&self, app: &App) -> Arc<Child> {
        app.state.http.engine.sandbox().unwrap().child_of(&self.id()).expect("a redis-server of their own")
    }
}

/// Two visitors with their own Redis; B holds `secret` = `B-private`.
async fn two_visitors(app: &App) -> (Visitor, Visitor) {
    let (mut a, mut b) = (Visitor::new(), Visitor::new());
    let (s, r) = b.batch(app, "SET secret B-private").await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = a.batch(app, "SET mine A").await;
    assert_eq!(s, 200, "{r}");
    assert_ne!(a.id(), b.id());
    assert_ne!(a.child(app).process.pid, b.child(app).process.pid, "a redis-server each");
    (a, b)
}

/// B's key is still there, read on B's own Redis directly.
fn assert_b_intact(app: &App, b: &Visitor, after: &str) {
    assert_eq!(direct(&b.child(app), &["GET", "secret"]), Value::Bulk(b"B-private".to_vec()), "after {after}");
}

#[tokio::test]
async fn each_visitor_sees_only_their_own_keyspace() {
    let app = default_app();
    let (mut a, mut b) = two_visitors(&app).await;
    let (s, r) = a.batch(&app, "GET secret\nKEYS *\nSCAN 0\nDBSIZE\nEVAL \"return redis.call('KEYS','*')\" 0").await;
    assert_eq!(s, 200, "{r}");
    let r = replies(&r);
    assert_eq!(r[0]["type"], "null", "A cannot read B's key");
    assert_eq!(r[1], json!({"type": "array", "value": [{"type": "bulk", "value": "mine"}]}), "no prefix, no other keys");
    assert_eq!(r[3]["value"], 1);
    assert_eq!(r[4], r[1], "Lua sees the same keyspace");
    // Keys are not rewritten: B's own name comes back as B wrote it.
    let (_, r) = b.batch(&app, "KEYS *").await;
    assert_eq!(replies(&r)[0]["value"][0]["value"], "secret");
    assert_b_intact(&app, &b, "reads");
}

/// The writes that reached another visitor's key through the old sandbox
/// (a script's FLUSHALL in a sweep, GEORADIUS's second STORE, SORT … STORE)
/// now reach only A's own Redis.
#[tokio::test]
async fn every_store_form_and_flush_stays_in_the_visitors_redis() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    let (s, r) = a.post(&app, "/api/v1/sweep", &json!({"command": ["EVAL", "redis.call('FLUSHALL') return 1", "0"], "total": 1, "batch_sizes": [1]})).await;
    assert_eq!(s, 200, "{r}");
    assert_b_intact(&app, &b, "a sweep running FLUSHALL in Lua");
    let (s, r) = a
        .commands(
            &app,
            json!([
                ["GEOADD", "g", "15", "37", "p"],
                ["GEORADIUS", "g", "15", "37", "200", "km", "STORE", "x", "STORE", "secret"],
                ["RPUSH", "l", "3", "1", "2"],
                ["SORT", "l", "STORE", "secret"],
                ["FLUSHALL"],
                ["FLUSHDB"],
                ["SET", "secret", "A-was-here"]
            ]),
        )
        .await;
    assert_eq!(s, 200, "{r}");
    assert!(replies(&r).iter().all(|v| v["type"] != "error"), "all run, on A's own Redis: {r}");
    assert_b_intact(&app, &b, "GEORADIUS/SORT STORE, FLUSHALL, SET");
    assert_eq!(direct(&a.child(&app), &["GET", "secret"]), Value::Bulk(b"A-was-here".to_vec()));
}

/// What administers a server is refused before anything is sent, with the
/// reason; the same from Lua is refused by the child's own ACL (NOPERM), so
/// MIGRATE cannot reach another Redis and SLOWLOG shows nothing.
#[tokio::test]
async fn server_commands_are_refused_in_batches_and_in_lua() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    for cmd in ["CONFIG SET dir /tmp", "CONFIG GET *", "DEBUG SLEEP 0", "SHUTDOWN NOSAVE", "MODULE LOAD /x.so", "REPLICAOF 127.0.0.1 6379", "ACL SETUSER x on", "MONITOR", "CLIENT KILL ID 1", "BGSAVE", "SAVE", "MIGRATE 127.0.0.1 6379 secret 0 1000", "SLOWLOG GET", "FAILOVER", "SWAPDB 0 1", "RESTORE k 0 x", "SCRIPT KILL"] {
        let (s, r) = a.batch(&app, cmd).await;
        assert_eq!(s, 400, "{cmd}: {r}");
        assert_eq!(r["error"]["code"], "refused_command", "{cmd}: {r}");
    }
    let (s, r) = a.batch(&app, "CONFIG SET dir /tmp").await;
    assert!(r["error"]["message"].as_str().unwrap().contains("not available in the sandbox"), "{s} {r}");
    let lua = [
        "redis.call('MIGRATE','127.0.0.1','6379','mine','0','1000','COPY')",
        "redis.call('SLOWLOG','GET','5')",
        "redis.call('CONFIG','SET','dir','/tmp')",
        "redis.call('SHUTDOWN','NOSAVE')",
        "redis.call('ACL','SETUSER','x','on')",
        "redis.call('BGSAVE')",
        "redis.call('REPLICAOF','127.0.0.1','6379')",
        "redis.call('CLIENT','KILL','ID','1')",
    ];
    for script in lua {
        let (s, r) = a.commands(&app, json!([["EVAL", script, "0"]])).await;
        assert_eq!(s, 200, "{script}: {r}");
        let reply = &replies(&r)[0];
        assert_eq!(reply["type"], "error", "{script}: {reply}");
        let why = reply["value"].as_str().unwrap();
        assert!(common::is_script_acl_refusal(why) || why.contains("not allowed from script"), "{script}: {reply}");
    }
    // What only touches A's own data runs: INFO, KEYS, SORT, FLUSHALL, scripts, functions, PUBLISH.
    let (s, r) = a.batch(&app, "INFO server\nPUBLISH ch m\nFUNCTION LIST\nEVAL \"return 1\" 0").await;
    assert_eq!(s, 200, "{r}");
    assert!(replies(&r).iter().all(|v| v["type"] != "error"), "{r}");
    assert_b_intact(&app, &b, "server commands");
}

/// Memory: a Lua heap bomb, a 100 MB SETRANGE, SETBIT far out, 150,000 keys
/// from Lua and a script cache filled with 1 MB scripts each stay within
/// A's own Redis (refused by Redis, OOM, or A's Redis replaced), and B's
/// PING answers within a second all the while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bombs_hurt_only_the_visitors_own_redis() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    let big_script = format!("return '{}'", "x".repeat(1 << 20));
    let bombs: Vec<(&str, Json)> = vec![
        ("a Lua heap bomb", json!([["EVAL", "return #string.rep('x', 1073741824)", "0"]])),
        ("SETRANGE at 100 MB", json!([["SETRANGE", "big", "100000000", "x"]])),
        ("SETBIT far out", json!([["SETBIT", "bits", "2147483647", "1"]])),
        ("150,000 keys from Lua", json!([["EVAL", "for i=1,150000 do redis.call('SET','k'..i,string.rep('v',100)) end return 1", "0"]])),
        ("the script cache", Json::Array((0..24).map(|i| json!(["SCRIPT", "LOAD", format!("{big_script} -- {i}")])).collect())),
    ];
    for (what, commands) in bombs {
        let mut b2 = b.clone();
        let app_ref = &app;
        let quiet = async move {
            let mut slowest = Duration::ZERO;
            for _ in 0..10 {
                let t = Instant::now();
                let (s, r) = b2.batch(app_ref, "PING").await;
                assert_eq!(s, 200, "{r}");
                slowest = slowest.max(t.elapsed());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            slowest
        };
        let (attack, slowest) = tokio::join!(a.commands(&app, commands), quiet);
        if what == "the script cache" {
            // Redis keeps scripts outside maxmemory: pipelab refuses those past the quota, nothing sent.
            assert_eq!((attack.0, attack.1["error"]["code"].as_str()), (413, Some("script_cache_full")), "{what}: {}", attack.1);
            assert!(attack.1["error"]["field"].as_str().is_some_and(|f| f.starts_with("commands[")), "{}", attack.1);
        } else {
            assert_eq!(attack.0, 200, "{what}: {}", attack.1);
        }
        assert!(slowest < Duration::from_secs(1), "{what}: B's slowest PING took {slowest:?}");
        let a_child = a.child(&app);
        if a_child.is_alive() {
            let Value::Bulk(info) = direct(&a_child, &["INFO", "memory"]) else { panic!("INFO") };
            let info = String::from_utf8_lossy(&info);
            let used: u64 = info.lines().find_map(|l| l.strip_prefix("used_memory:")).unwrap().trim().parse().unwrap();
            assert!(used < 3 * (16 << 20), "{what}: A's Redis holds {used} bytes");
        }
        assert_b_intact(&app, &b, what);
    }
    // A's next batch runs, on a new Redis if theirs went.
    let (s, r) = a.batch(&app, "PING").await;
    assert_eq!((s, replies(&r)[0]["value"].as_str()), (200, Some("PONG")), "{r}");
}

/// The script cache stays inside the quota across batches too: 1 MB
/// scripts one batch at a time run until the next would pass the quota,
/// which is refused (413, nothing sent) while SCRIPT FLUSH frees them all;
/// A's keys stay, and A's Redis never holds past its quota in scripts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visitors_scripts_stay_inside_their_quota() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    let (s, r) = a.batch(&app, "SET mine 1").await;
    assert_eq!(s, 200, "{r}");
    let script = |i: usize| format!("return '{}' -- {i}", "x".repeat(1 << 20));
    let mut loaded = 0;
    let refused = loop {
        let (s, r) = a.commands(&app, json!([["SCRIPT", "LOAD", script(loaded)]])).await;
        if s != 200 {
            break r;
        }
        assert_eq!(replies(&r)[0]["type"], "bulk", "{r}");
        loaded += 1;
        assert!(loaded < 16, "16 MB of scripts on a 16 MB quota were all loaded");
    };
    assert!(loaded >= 1, "a first 1 MB script fits a 16 MB quota");
    assert_eq!((refused["error"]["code"].as_str(), refused["error"]["field"].as_str()), (Some("script_cache_full"), Some("commands[0]")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("SCRIPT FLUSH"), "{refused}");
    let Value::Bulk(info) = direct(&a.child(&app), &["INFO", "memory"]) else { panic!("INFO") };
    let info = String::from_utf8_lossy(&info);
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<u64>().ok()).unwrap();
    assert!(field("used_memory_vm_total") + field("used_memory_scripts") <= 16 << 20, "{info}");
    // EVAL caches its script as SCRIPT LOAD does: refused as well.
    let (s, r) = a.commands(&app, json!([["EVAL", script(99), "0"]])).await;
    assert_eq!((s, r["error"]["code"].as_str()), (413, Some("script_cache_full")), "{r}");
    let (s, r) = a.batch(&app, "SCRIPT FLUSH\nGET mine").await;
    assert_eq!((s, replies(&r)[1]["value"].as_str()), (200, Some("1")), "{r}");
    let (s, r) = a.commands(&app, json!([["SCRIPT", "LOAD", script(0)]])).await;
    assert_eq!(s, 200, "after SCRIPT FLUSH: {r}");
    assert_b_intact(&app, &b, "scripts");
}

/// Time: a script that never ends stalls only A. B answers within a
/// second while it runs; after A's batch is cut at its timeout, A's next
/// batch answers at once, never BUSY. WATCH of 100,000 keys (minutes of
/// Redis 7.0's time) is refused, as the `watch` field's keys are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalls_stall_only_the_visitor() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    let watch: Vec<String> = std::iter::once("WATCH".to_string()).chain((0..100_000).map(|i| format!("w{i}"))).collect();
    let (s, r) = a.commands(&app, json!([watch])).await;
    assert_eq!((s, r["error"]["code"].as_str()), (400, Some("too_many_watch_keys")), "{r}");
    let mut b2 = b.clone();
    let app_ref = &app;
    let quiet = async move {
        let mut slowest = Duration::ZERO;
        for _ in 0..20 {
            let t = Instant::now();
            let (s, r) = b2.batch(app_ref, "GET secret").await;
            assert_eq!(s, 200, "{r}");
            assert_eq!(replies(&r)[0]["value"], "B-private");
            slowest = slowest.max(t.elapsed());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        slowest
    };
    let (attack, slowest) = tokio::join!(a.commands(&app, json!([["EVAL", "while true do end", "0"]])), quiet);
    assert_eq!(attack.0, 200, "{}", attack.1);
    assert!(slowest < Duration::from_secs(1), "B's slowest answer took {slowest:?}");
    let t = Instant::now();
    let (s, r) = a.batch(&app, "SET after 1\nGET after\nGET mine").await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(replies(&r)[1]["value"], "1", "A's next batch is not BUSY: {r}");
    assert_eq!(replies(&r)[2]["value"], "A", "a script that wrote nothing is killed; A keeps their Redis: {r}");
    assert!(t.elapsed() < Duration::from_secs(3), "A waited {:?}", t.elapsed());
    assert_b_intact(&app, &b, "stalls");
}

/// A script that wrote before looping cannot be killed (UNKILLABLE): A's
/// Redis is replaced, and A's next batch runs on a new, empty one.
#[tokio::test]
async fn an_unkillable_script_costs_the_visitor_their_redis_only() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    let pid = a.child(&app).process.pid;
    let (s, r) = a.commands(&app, json!([["EVAL", "redis.call('SET','w','1') while true do end", "0"]])).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["results"][0]["status"], "unknown", "cut at the batch timeout: {r}");
    let (s, r) = a.batch(&app, "GET mine").await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(replies(&r)[0]["type"], "null", "a new, empty Redis: {r}");
    assert_ne!(a.child(&app).process.pid, pid);
    assert_b_intact(&app, &b, "an unkillable script");
}

/// A Redis that dies under a batch: that batch says so plainly, and the
/// visitor's next one runs on a new Redis.
#[tokio::test]
async fn a_dead_redis_is_replaced_and_the_visitor_told() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    let child = a.child(&app);
    let pid = child.process.pid;
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        // SAFETY: kill(2) on the test's own child process.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let (s, r) = a.batch(&app, "BLPOP nothing 2").await;
    killer.await.unwrap();
    assert_eq!(s, 200, "{r}");
    let why = r["connection_error"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(why.contains("your Redis ended") && why.contains("your keys are gone"), "{why}");
    let (s, r) = a.batch(&app, "SET k 1").await;
    assert_eq!((s, r["summary"]["ok"].as_u64()), (200, Some(1)), "{r}");
    assert_ne!(a.child(&app).process.pid, pid);
    assert_b_intact(&app, &b, "A's Redis died");
}

/// Ids are the server's: a made-up id, or none, gets a new visitor with an
/// empty Redis; the child's socket sits in a directory only pipelab's user
/// can enter, and it has no TCP port.
#[tokio::test]
async fn ids_are_unguessable_and_children_unreachable() {
    let app = default_app();
    let (_, b) = two_visitors(&app).await;
    let mut guess = Visitor::claiming("0123456789abcdef0123456789abcdef");
    let (s, r) = guess.batch(&app, "GET secret\nKEYS *").await;
    assert_eq!(s, 200, "{r}");
    assert_ne!(guess.id().as_str(), "0123456789abcdef0123456789abcdef", "a new id, not the claimed one");
    assert_eq!(replies(&r)[0]["type"], "null");
    let child = b.child(&app);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(child.process.dir()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the child's directory");
    let Value::Bulk(info) = direct(&child, &["INFO", "server"]) else { panic!("INFO") };
    assert!(String::from_utf8_lossy(&info).contains("tcp_port:0"), "no TCP port");
    assert_b_intact(&app, &b, "guessing");
}

/// Sessions, streamed batches and the Upstash routes run on the visitor's
/// own Redis; another visitor's session id finds nothing.
#[tokio::test]
async fn sessions_streams_and_upstash_are_the_visitors_own() {
    let app = default_app();
    let (mut a, mut b) = two_visitors(&app).await;
    let (s, r) = a.post(&app, "/api/v1/sessions", &json!({})).await;
    assert_eq!(s, 201, "{r}");
    let sid = r["id"].as_str().unwrap().to_string();
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": sid, "text": "WATCH mine\nMULTI"})).await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": sid, "text": "SET mine A2\nEXEC"})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(direct(&a.child(&app), &["GET", "mine"]), Value::Bulk(b"A2".to_vec()));
    let (s, r) = b.post(&app, "/api/v1/batch", &json!({"session": sid, "text": "GET mine"})).await;
    assert_eq!(s, 404, "B cannot use A's session: {r}");
    let (s, r) = a.post(&app, "/", &json!(["SET", "via", "upstash"])).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(direct(&a.child(&app), &["GET", "via"]), Value::Bulk(b"upstash".to_vec()));
    let (s, r) = a.post(&app, "/pipeline", &json!([["GET", "secret"]])).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r[0]["result"], Json::Null, "Upstash on A's Redis: {r}");
    let ((s, _), _) = a.send(&app, Method::POST, "/api/v1/batches", Body::from(json!({"text": "SET streamed 1"}).to_string())).await;
    assert_eq!(s, 200);
    assert_eq!(direct(&a.child(&app), &["GET", "streamed"]), Value::Bulk(b"1".to_vec()));
    assert_b_intact(&app, &b, "sessions, streams, Upstash");
}

/// A live batch is cancelled only by the visitor who started it: another
/// visitor's cancel, or one without a cookie, is 404 as for a batch that
/// does not exist, and the batch runs on; its own visitor's ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_its_visitor_cancels_a_live_batch() {
    use http_body_util::BodyExt;
    let app = default_app();
    let (mut a, mut b) = two_visitors(&app).await;
    // 25 round trips of 100 ms: 2.5 s (within the 3 s batch timeout) unless cancelled.
    let body = json!({"text": "PING\n".repeat(25), "mode": "sequential", "simulated_rtt_ms": 100}).to_string();
    let req = Request::builder().method(Method::POST).uri("/api/v1/batches").header(header::CONTENT_TYPE, "application/json");
    let res = app.respond_raw(req.header(header::COOKIE, a.cookie.clone().unwrap()).body(Body::from(body)).unwrap()).await;
    let status = res.status();
    let mut stream = res.into_body();
    assert_eq!(status, 200, "{:?}", if status == 200 { Default::default() } else { stream.collect().await.unwrap().to_bytes() });
    let first = stream.frame().await.unwrap().unwrap().into_data().unwrap();
    let start: Json = serde_json::from_slice(first.split(|&c| c == b'\n').next().unwrap()).unwrap();
    let cancel = start["cancel"].as_str().unwrap().to_string();
    let (s, r) = b.post(&app, &cancel, &json!({})).await;
    assert_eq!((s, r["error"]["code"].as_str()), (404, Some("not_found")), "B cancels A's batch: {r}");
    let (s, r) = Visitor::new().post(&app, &cancel, &json!({})).await;
    assert_eq!(s, 404, "no cookie: {r}");
    let (s, r) = a.post(&app, &cancel, &json!({})).await;
    assert_eq!((s, r["cancelled"].as_bool()), (200, Some(true)), "{r}");
    let rest = stream.collect().await.unwrap().to_bytes();
    let end: Json = serde_json::from_slice(rest.split(|&c| c == b'\n').filter(|l| !l.is_empty()).last().unwrap()).unwrap();
    assert!(end["summary"]["not_sent"].as_u64().unwrap() > 0, "cut by A's cancel only: {end}");
}

/// The Upstash read-your-writes token counts the visitor's own writes:
/// another visitor's writes do not move it (no side channel of their
/// activity), the visitor's own do.
#[tokio::test]
async fn the_upstash_sync_token_is_the_visitors_own() {
    let app = default_app();
    let (a, b) = two_visitors(&app).await;
    let token = |v: &Visitor, body: Json| {
        let req = Request::builder().method(Method::POST).uri("/").header(header::COOKIE, v.cookie.clone().unwrap());
        let app = &app;
        async move {
            let (status, headers, _) = app.respond(req.body(Body::from(body.to_string())).unwrap()).await;
            assert_eq!(status, 200);
            headers.get("upstash-sync-token").expect("the sync token").to_str().unwrap().to_string()
        }
    };
    let a_before = token(&a, json!(["GET", "mine"])).await;
    for i in 0..3 {
        token(&b, json!(["SET", format!("b{i}"), "x"])).await;
    }
    assert_eq!(token(&a, json!(["GET", "mine"])).await, a_before, "B's writes moved A's token");
    assert_ne!(token(&a, json!(["SET", "mine", "A3"])).await, a_before, "A's own write moves it");
}

/// A client that keeps no cookie (an Upstash SDK) sends the id `/info`
/// gave its visitor as its token and lands on that visitor's Redis; a
/// token naming no visitor gets a Redis of its own, never another's.
#[tokio::test]
async fn the_visitors_token_serves_clients_without_cookies() {
    let app = default_app();
    let (mut a, b) = two_visitors(&app).await;
    let (s, info) = a.get(&app, "/api/v1/info").await;
    assert_eq!(s, 200, "{info}");
    let token = info["sandbox"]["token"].as_str().unwrap().to_string();
    assert_eq!(token, a.id().as_str());
    let upstash = |path: &str, token: &str, body: Json| {
        Request::builder()
            .method(Method::POST)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    let (status, _, body) = app.respond(upstash("/", &token, json!(["SET", "sdk", "on A"]))).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(direct(&a.child(&app), &["GET", "sdk"]), Value::Bulk(b"on A".to_vec()));
    let (status, _, body) = app.respond(upstash("/pipeline", &token, json!([["GET", "mine"], ["GET", "secret"]]))).await;
    assert_eq!(status, 200);
    let r: Json = serde_json::from_slice(&body).unwrap();
    assert_eq!(r, json!([{"result": "A"}, {"result": null}]), "A's keys, not B's");
    // A made-up token, and one that is almost A's: a new visitor each, empty.
    let mut near = token.clone().into_bytes();
    near[0] = if near[0] == b'0' { b'1' } else { b'0' };
    for other in ["not-a-visitor".to_string(), String::from_utf8(near).unwrap()] {
        let get = Request::builder().uri("/get/mine").header(header::AUTHORIZATION, format!("Bearer {other}")).body(Body::empty()).unwrap();
        let (status, _, body) = app.respond(get).await;
        assert_eq!(status, 200);
        assert_eq!(serde_json::from_slice::<Json>(&body).unwrap(), json!({"result": null}), "token {other}");
    }
    assert_b_intact(&app, &b, "tokens");
}

/// Fair shares: a visitor's batches and sessions are capped, so one cannot
/// hold everyone's; others go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visitor_cannot_take_everyones_share() {
    let app = start(Settings { visitor_batches: 2, visitor_sessions: 1, ..Settings::default() });
    let (a, mut b) = two_visitors(&app).await;
    let blocked: Vec<_> = (0..2)
        .map(|_| {
            let (mut a, app) = (a.clone(), &app);
            async move { a.batch(app, "BLPOP nothing 2").await }
        })
        .collect();
    let third = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut a = a.clone();
        let out = a.send(&app, Method::POST, "/api/v1/batch", Body::from(json!({"text": "PING"}).to_string())).await;
        let (s, r) = b.batch(&app, "PING").await;
        (out, (s, r))
    };
    let (done, (((s, r), retry), (bs, br))) = tokio::join!(futures_util::future::join_all(blocked), third);
    assert!(done.iter().all(|(s, _)| *s == 200), "{done:?}");
    assert_eq!(s, 429, "A's third batch at once: {r}");
    assert_eq!(r["error"]["code"], "too_many_batches");
    assert!(retry.is_some(), "Retry-After");
    assert_eq!(bs, 200, "B goes on: {br}");
    let mut a = a.clone();
    let (s, r) = a.post(&app, "/api/v1/sessions", &json!({})).await;
    assert_eq!(s, 201, "{r}");
    let (s, r) = a.post(&app, "/api/v1/sessions", &json!({})).await;
    assert_eq!((s, r["error"]["code"].as_str()), (503, Some("too_many_sessions")), "{r}");
    let (s, r) = b.post(&app, "/api/v1/sessions", &json!({})).await;
    assert_eq!(s, 201, "B's own share: {r}");
}

/// Capacity and lifetime: past `max_visitors` running a new visitor is
/// still served (the least recently active hibernates); a visitor idle for
/// `--sandbox-idle` loses their keys, saved or not.
#[tokio::test]
async fn nobody_is_refused_and_idle_visitors_lose_their_keys() {
    let app = start(Settings { max_visitors: 2, idle: Duration::from_secs(2), ..Settings::default() });
    let (mut a, _b) = two_visitors(&app).await;
    let mut c = Visitor::new();
    let ((s, r), _) = c.send(&app, Method::POST, "/api/v1/batch", Body::from(json!({"text": "PING"}).to_string())).await;
    assert_eq!(s, 200, "a third visitor past max_visitors running: {r}");
    let pid = a.child(&app).process.pid;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (s, r) = a.batch(&app, "GET mine").await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(replies(&r)[0]["type"], "null", "A's keys went with A's idle Redis");
    assert!(app.state.http.engine.sandbox().unwrap().child_of(&a.id()).is_none_or(|c| c.process.pid != pid));
}

/// `/info` in the sandbox: the visitor's Redis, the sandbox's limits, and
/// the commands refused to a visitor (the page marks them before Run).
#[tokio::test]
async fn info_describes_the_visitors_redis() {
    let app = default_app();
    let mut a = Visitor::new();
    let (s, info) = a.get(&app, "/api/v1/info").await;
    assert_eq!(s, 200, "{info}");
    assert_eq!(info["redis"]["source"], "sandbox");
    assert_eq!(info["redis"]["maxmemory"], 16 << 20);
    assert_eq!(info["sandbox"], json!({"idle_s": 86400, "hibernate_after_s": 120, "max_bytes": 16 << 20, "visitor_batches": 4, "visitor_sessions": 2, "token": a.id().as_str(), "jail": app.state.http.engine.sandbox().unwrap().jail().describe()}));
    let refused: Vec<&str> = info["refused"].as_array().unwrap().iter().map(|r| r["command"].as_str().unwrap()).collect();
    for name in ["CONFIG SET", "DEBUG", "MIGRATE", "SHUTDOWN", "BGSAVE", "CLIENT KILL", "SLOWLOG GET"] {
        assert!(refused.contains(&name), "{name} in {refused:?}");
    }
    for allowed in ["INFO", "KEYS", "FLUSHALL", "SORT", "EVAL", "CLIENT SETNAME"] {
        assert!(!refused.contains(&allowed), "{allowed} is the visitor's to run");
    }
    let (_, _, metrics) = app.get_text("/metrics").await;
    assert!(metrics.contains("pipelab_sandbox_children"), "{metrics}");
}
