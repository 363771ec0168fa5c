//! The sandbox (`--sandbox`, issue 15) against a real redis-server with
//! pipelab's ACL users, through the in-process router: two visitors (two
//! cookies) and the hostile suite, each case trying to reach another
//! visitor's key or the server; Redis is checked directly afterwards with
//! a client of its own. Also the sandbox user as a second wall (the executor
//! called directly as it) and protected mode.

mod api_harness;
mod api_inproc;
mod common;

use std::path::PathBuf;
use std::time::Duration;

use api_inproc::{App, RedisServer};
use axum::body::Body;
use axum::http::{header, Method, Request};
use pipelab::conn::RedisTarget;
use pipelab::exec::{execute, ExecOptions, Mode};
use pipelab::sandbox::acl::Users;
use pipelab::sandbox::{Sandbox, SandboxConfig};
use resp::Value;
use serde_json::{json, Value as Json};

/// A redis-server with pipelab's users, and the app in sandbox mode on it.
fn start(max_keys: u64, max_bytes: u64, limit_flags: &[&str]) -> (RedisServer, App, Users) {
    let users = Users::generate();
    let args = users.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let redis = RedisServer::start_with(&args);
    let cfg = SandboxConfig { sandbox: true, sandbox_ttl: Duration::from_secs(3600), sandbox_max_keys: max_keys, sandbox_max_bytes: max_bytes };
    let u = users.clone();
    let app = App::configured(&redis.url, limit_flags, PathBuf::from("/nonexistent"), move |s| s.with_sandbox(Some(Sandbox::new(cfg, Some(u.clone()))), Some(&u)));
    (redis, app, users)
}

/// One visitor: the cookie the server gave it.
struct Visitor {
    cookie: Option<String>,
}

impl Visitor {
    fn new() -> Visitor {
        Visitor { cookie: None }
    }

    /// POST `body` to `path` with this visitor's cookie; keeps the cookie set.
    async fn post(&mut self, app: &App, path: &str, body: &Json) -> (u16, Json) {
        self.send(app, Method::POST, path, Body::from(serde_json::to_vec(body).unwrap())).await
    }

    /// DELETE `path` with this visitor's cookie.
    async fn delete(&mut self, app: &App, path: &str) -> u16 {
        self.send(app, Method::DELETE, path, Body::empty()).await.0
    }

    async fn send(&mut self, app: &App, method: Method, path: &str, body: Body) -> (u16, Json) {
        let mut req = Request::builder().method(method).uri(path).header(header::CONTENT_TYPE, "application/json");
        if let Some(c) = &self.cookie {
            req = req.header(header::COOKIE, c.as_str());
        }
        let (status, headers, body) = app.respond(req.body(body).unwrap()).await;
        let set = headers.get(header::SET_COOKIE).expect("every sandbox response sets the cookie").to_str().unwrap();
        assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"), "{set}");
        let pair = set.split(';').next().unwrap().to_string();
        if let Some(old) = &self.cookie {
            assert_eq!(old, &pair, "the cookie's id stays");
        }
        self.cookie = Some(pair);
        (status.as_u16(), serde_json::from_slice(&body).unwrap_or(Json::Null))
    }

    async fn batch(&mut self, app: &App, text: &str) -> (u16, Json) {
        self.post(app, "/api/v1/batch", &json!({"text": text})).await
    }

    /// `sbx:{id}:`.
    fn prefix(&self) -> String {
        let id = self.cookie.as_ref().expect("a cookie").split_once('=').unwrap().1.to_string();
        format!("sbx:{{{id}}}:")
    }
}

fn replies(report: &Json) -> Vec<Json> {
    report["results"].as_array().expect("results").iter().map(|r| r["reply"].clone()).collect()
}

fn bulk(v: &Value) -> Option<String> {
    match v {
        Value::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

/// `TTL key` in Redis once it is positive (set by a task after the batch:
/// waited for without blocking this runtime), else its last answer.
async fn ttl_eventually(redis: &RedisServer, key: &str) -> Value {
    let mut ttl = Value::Null;
    for _ in 0..500 {
        ttl = redis.cmd_str(&["TTL", key]);
        if matches!(ttl, Value::Integer(t) if t > 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ttl
}

/// Every key in Redis's database 0, as seen directly.
fn all_keys(redis: &RedisServer) -> Vec<String> {
    match redis.cmd_str(&["KEYS", "*"]) {
        Value::Array(keys) => keys.iter().filter_map(bulk).collect(),
        other => panic!("KEYS: {other:?}"),
    }
}

#[tokio::test]
async fn two_visitors_cannot_see_each_others_keys() {
    let (redis, app, _) = start(1000, 1 << 20, &[]);
    let (mut a, mut b) = (Visitor::new(), Visitor::new());
    let (s, ra) = a.batch(&app, "SET k from-a\nSET only:a 1").await;
    assert_eq!(s, 200, "{ra}");
    let (s, _) = b.batch(&app, "SET k from-b").await;
    assert_eq!(s, 200);
    assert_ne!(a.prefix(), b.prefix());
    let (_, ra) = a.batch(&app, "GET k\nKEYS *\nSCAN 0 COUNT 1000\nDBSIZE\nEXISTS only:a").await;
    let (_, rb) = b.batch(&app, "GET k\nKEYS *\nDBSIZE\nEXISTS only:a\nGET only:a").await;
    let (ra, rb) = (replies(&ra), replies(&rb));
    assert_eq!(ra[0]["value"], "from-a");
    let mut keys: Vec<String> = ra[1]["value"].as_array().unwrap().iter().map(|k| k["value"].as_str().unwrap().to_string()).collect();
    keys.sort();
    assert_eq!(keys, ["k", "only:a"], "KEYS shows the visitor's own names");
    assert_eq!(ra[2]["value"][1]["value"].as_array().unwrap().len(), 2, "SCAN: {}", ra[2]);
    assert_eq!(ra[3]["value"], 2, "DBSIZE counts the namespace");
    assert_eq!(ra[4]["value"], 1);
    assert_eq!(rb[0]["value"], "from-b");
    assert_eq!(rb[1]["value"].as_array().unwrap().len(), 1);
    assert_eq!(rb[2]["value"], 1);
    assert_eq!(rb[3]["value"], 0, "B cannot see A's key");
    assert_eq!(rb[4]["type"], "null");
    // RESP3 (HELLO 3 as the sandbox's and the visitor's ACL users).
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"text": "GET k\nEVAL \"return redis.call('GET', KEYS[1])\" 1 k", "resp3": true})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(replies(&r)[0]["value"], "from-a", "{r}");
    assert_eq!(replies(&r)[1]["value"], "from-a", "{r}");
    // In Redis: every key prefixed, every key with a TTL of at most 1 h.
    let keys = all_keys(&redis);
    assert_eq!(keys.len(), 3, "{keys:?}");
    for k in &keys {
        assert!(k.starts_with(&a.prefix()) || k.starts_with(&b.prefix()), "{k}");
        let ttl = redis.cmd_str(&["TTL", k]);
        assert!(matches!(ttl, Value::Integer(t) if t > 3000 && t <= 3600), "{k}: {ttl:?}");
    }
}

/// Each hostile case is refused (4xx, nothing sent) or confined: afterwards
/// the server's key and the other visitor's keys are as they were, no key
/// outside the namespaces exists, and database 1 is empty.
#[tokio::test]
async fn hostile_suite_is_refused_or_confined() {
    let (redis, app, _) = start(100_000, 64 << 20, &[]);
    redis.cmd_str(&["SET", "secret", "server-secret"]);
    let (mut a, mut b) = (Visitor::new(), Visitor::new());
    b.batch(&app, "SET k b-secret\nSET other:1 b-other\nRPUSH l 2 1").await;
    a.batch(&app, "RPUSH l 3 1 2\nSET k a-value").await;
    let (bp, ap) = (b.prefix(), a.prefix());
    let sha = {
        let (_, r) = a.batch(&app, "SCRIPT LOAD \"return 1\"").await;
        replies(&r)[0]["value"].as_str().unwrap().to_string()
    };
    let eval_other = format!("EVAL \"return redis.call('GET', '{bp}k')\" 0");
    let eval_built = format!("EVAL \"return redis.call('GET', string.sub(KEYS[1], 1, {}) .. 'k')\" 1 {}", ap.len(), "x");
    let cases: Vec<(String, Json)> = vec![
        ("KEYS *".into(), json!({"text": "KEYS *"})),
        ("SCAN 0 MATCH *".into(), json!({"text": "SCAN 0 MATCH * COUNT 10000"})),
        ("SCAN with the other's prefix".into(), json!({"commands": [["SCAN", "0", "MATCH", format!("{bp}*"), "COUNT", "10000"]]})),
        ("RENAME to an unprefixed name".into(), json!({"text": "RENAME k unprefixed"})),
        ("RENAME to the other's name".into(), json!({"commands": [["RENAME", "l", format!("{bp}k")]]})),
        ("COPY … DB 1".into(), json!({"text": "COPY k k2 DB 1"})),
        ("MOVE".into(), json!({"text": "MOVE k 1"})),
        ("MIGRATE".into(), json!({"text": format!("MIGRATE 127.0.0.1 {} k 0 1000", redis.port)})),
        ("SORT BY/GET".into(), json!({"text": "SORT l BY other:* GET other:*"})),
        ("SORT GET the server's key".into(), json!({"text": "SORT l GET secret"})),
        ("EVAL with another visitor's key".into(), json!({"text": eval_other})),
        ("EVAL with a key name built in Lua".into(), json!({"text": eval_built})),
        ("EVAL the server's key".into(), json!({"text": "EVAL \"return redis.call('GET', 'secret')\" 0"})),
        ("EVALSHA".into(), json!({"text": format!("EVALSHA {sha} 0")})),
        ("FCALL".into(), json!({"text": "FCALL f 0"})),
        ("FUNCTION LOAD".into(), json!({"text": "FUNCTION LOAD \"#!lua name=x\\nredis.register_function('f', function() return 1 end)\""})),
        ("OBJECT ENCODING on another's key".into(), json!({"text": "OBJECT ENCODING other:1"})),
        ("SUBSCRIBE".into(), json!({"text": "SUBSCRIBE ch"})),
        ("PUBLISH".into(), json!({"text": "PUBLISH ch x"})),
        ("CLIENT LIST".into(), json!({"text": "CLIENT LIST"})),
        ("DEBUG".into(), json!({"text": "DEBUG OBJECT k"})),
        ("CONFIG GET".into(), json!({"text": "CONFIG GET *"})),
        ("INFO".into(), json!({"text": "INFO keyspace"})),
        ("SELECT 1".into(), json!({"text": "SELECT 1"})),
        ("SWAPDB".into(), json!({"text": "SWAPDB 0 1"})),
        ("RANDOMKEY".into(), json!({"text": "RANDOMKEY"})),
        ("MULTI with a refused command inside".into(), json!({"text": "MULTI\nSET x 1\nCONFIG GET *\nEXEC"})),
        ("a prefixed name given by hand".into(), json!({"commands": [["GET", format!("{bp}k")]]})),
        ("FLUSHALL".into(), json!({"text": "FLUSHALL"})),
        ("FLUSHDB".into(), json!({"text": "FLUSHDB ASYNC"})),
        ("an 8 MiB argument".into(), json!({"commands": [["SET", "big", "x".repeat(8 << 20)]]})),
        ("watch".into(), json!({"text": "GET k", "mode": "transaction", "watch": [format!("{bp}k"), "secret"]})),
    ];
    let leaked = ["server-secret", "b-secret", "b-other"];
    for (what, body) in &cases {
        let (status, report) = a.post(&app, "/api/v1/batch", body).await;
        let text = report.to_string();
        for secret in leaked {
            assert!(!text.contains(secret), "{what}: leaked {secret}: {text}");
        }
        assert!(!text.contains(&bp), "{what}: the other's prefix shows: {text}");
        assert!(!text.contains(&ap), "{what}: the visitor's own prefix shows: {text}");
        match status {
            200 => {}
            400 | 403 => assert!(matches!(report["error"]["code"].as_str(), Some("sandbox_refused" | "refused_command")), "{what}: {report}"),
            other => panic!("{what}: {other} {report}"),
        }
        // Checked directly in Redis after each case.
        assert_eq!(bulk(&redis.cmd_str(&["GET", "secret"])).as_deref(), Some("server-secret"), "{what}");
        assert_eq!(bulk(&redis.cmd_str(&["GET", &format!("{bp}k")])).as_deref(), Some("b-secret"), "{what}");
        assert_eq!(bulk(&redis.cmd_str(&["GET", &format!("{bp}other:1")])).as_deref(), Some("b-other"), "{what}");
        for k in all_keys(&redis) {
            assert!(k == "secret" || k.starts_with(&ap) || k.starts_with(&bp), "{what}: key {k} outside the namespaces");
        }
        let keyspace = bulk(&redis.cmd_str(&["INFO", "keyspace"])).unwrap_or_default();
        assert!(!keyspace.contains("db1"), "{what}: {keyspace}");
        assert!(matches!(redis.cmd_str(&["FUNCTION", "LIST"]), Value::Array(ref l) if l.is_empty()), "{what}: a function was loaded");
    }
    // What confinement did: RENAME's target is the visitor's own.
    assert!(matches!(redis.cmd_str(&["EXISTS", &format!("{ap}unprefixed")]), Value::Integer(0 | 1)));
    assert_eq!(bulk(&redis.cmd_str(&["GET", "secret"])).as_deref(), Some("server-secret"));
    // FLUSHALL emptied the visitor's namespace only; the 8 MiB value set
    // after it is the visitor's.
    let (_, r) = a.batch(&app, "DBSIZE\nSTRLEN big").await;
    assert_eq!(replies(&r)[0]["value"], 1);
    assert_eq!(replies(&r)[1]["value"], 8 << 20);
    assert_eq!(redis.cmd_str(&["STRLEN", &format!("{ap}big")]), Value::Integer(8 << 20));
    let (_, r) = b.batch(&app, "DBSIZE\nGET k").await;
    assert_eq!(replies(&r)[0]["value"], 3);
    assert_eq!(replies(&r)[1]["value"], "b-secret");
}

/// A script that builds another visitor's key name in Lua is refused by
/// Redis itself (the visitor's own ACL user), per command; the lesson's
/// script (its key in KEYS) runs.
#[tokio::test]
async fn scripts_reach_only_the_visitors_keys() {
    let (redis, app, _) = start(1000, 1 << 20, &[]);
    let (mut a, mut b) = (Visitor::new(), Visitor::new());
    b.batch(&app, "SET n 5").await;
    let lesson = "EVAL \"local v = tonumber(redis.call('GET', KEYS[1]) or '0') redis.call('SET', KEYS[1], v * 2) return v * 2\" 1 n";
    let (s, r) = a.batch(&app, &format!("SET n 3\n{lesson}\nGET n")).await;
    assert_eq!(s, 200, "{r}");
    let r = replies(&r);
    assert_eq!(r[1]["value"], 6);
    assert_eq!(r[2]["value"], "6");
    let other = format!("EVAL \"return redis.call('SET', '{}n', 'x')\" 0", b.prefix());
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"text": format!("{other}\nGET n")})).await;
    assert_eq!(s, 200);
    assert_eq!(r["results"][0]["status"], "error", "{r}");
    assert!(r["results"][0]["reply"]["value"].as_str().unwrap().contains("can't access"), "{r}");
    assert_eq!(r["results"][1]["value"], Json::Null);
    assert_eq!(bulk(&redis.cmd_str(&["GET", &format!("{}n", b.prefix())])).as_deref(), Some("5"));
    // A key the script writes without naming it in KEYS gets a TTL too.
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"text": format!("EVAL \"return redis.call('SET', string.sub(KEYS[1], 1, {}) .. 'hidden', 'x')\" 1 n", a.prefix().len())})).await;
    assert_eq!(s, 200);
    assert_eq!(r["results"][0]["status"], "ok", "{r}");
    let hidden = format!("{}hidden", a.prefix());
    let ttl = ttl_eventually(&redis, &hidden).await;
    assert!(matches!(ttl, Value::Integer(t) if t > 3000), "{hidden}: {ttl:?}");
}

#[tokio::test]
async fn quotas_leave_commands_not_sent_with_the_reason() {
    let (redis, app, _) = start(3, 1 << 20, &[]);
    let mut a = Visitor::new();
    let (s, r) = a.batch(&app, "SET a 1\nSET b 1\nSET a 2\nSET c 1\nSET d 1\nGET a").await;
    assert_eq!(s, 200, "{r}");
    let statuses: Vec<&str> = r["results"].as_array().unwrap().iter().map(|x| x["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["ok", "ok", "ok", "ok", "not_sent", "not_sent"]);
    assert_eq!(r["summary"]["commands"], 6);
    assert_eq!(r["summary"]["not_sent"], 2);
    assert!(r["connection_error"].as_str().unwrap().contains("--sandbox-max-keys"), "{r}");
    assert_eq!(all_keys(&redis).len(), 3);
    // Deleting makes room again for the next batch (the quota is measured
    // in Redis, before the batch, once the bound is reached).
    let (_, r) = a.batch(&app, "DEL a b").await;
    assert_eq!(r["summary"]["ok"], 1, "{r}");
    let (_, r) = a.batch(&app, "SET e 1").await;
    assert_eq!(r["summary"]["not_sent"], 0, "{r}");
    // Bytes: an 8 MiB argument past a 1 MiB quota is not sent.
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"commands": [["GET", "c"], ["SET", "big", "x".repeat(8 << 20)]]})).await;
    assert_eq!(s, 200);
    assert_eq!(r["results"][1]["status"], "not_sent");
    assert!(r["connection_error"].as_str().unwrap().contains("--sandbox-max-bytes"), "{r}");
    assert_eq!(redis.cmd_str(&["EXISTS", &format!("{}big", a.prefix())]), Value::Integer(0));
    // A transaction past a quota is not sent at all.
    let (_, r) = a.post(&app, "/api/v1/batch", &json!({"text": "SET x 1\nSET y 1", "mode": "transaction"})).await;
    assert_eq!(r["summary"]["not_sent"], 2, "{r}");
    for k in all_keys(&redis) {
        assert!(matches!(redis.cmd_str(&["TTL", &k]), Value::Integer(t) if t > 0), "{k} has no TTL");
    }
}

/// 200k commands: the most a batch takes; past the key quota the rest are
/// not sent, and Redis holds exactly the quota's keys.
#[tokio::test]
async fn two_hundred_thousand_commands_stop_at_the_quota() {
    let (redis, app, _) = start(1000, 64 << 20, &[]);
    let mut a = Visitor::new();
    let text: String = (0..200_000).map(|i| format!("SET k:{i} x\n")).collect();
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"text": text, "results": "none"})).await;
    assert_eq!(s, 200);
    assert_eq!(r["summary"]["ok"], 1000, "{}", r["summary"]);
    assert_eq!(r["summary"]["not_sent"], 199_000);
    assert_eq!(redis.cmd_str(&["DBSIZE"]), Value::Integer(1000));
}

/// The sweep and compare endpoints keep their keys in the namespace too.
#[tokio::test]
async fn sweep_and_compare_stay_in_the_namespace() {
    let (redis, app, _) = start(100_000, 64 << 20, &[]);
    let mut a = Visitor::new();
    let (s, r) = a.post(&app, "/api/v1/compare", &json!({"text": "INCR c\nINCR c"})).await;
    assert_eq!(s, 200, "{r}");
    let (s, r) = a.post(&app, "/api/v1/sweep", &json!({"command": ["SET", "sw:{i}", "x"], "total": 100, "batch_sizes": [1, 10]})).await;
    assert_eq!(s, 200, "{r}");
    let keys = all_keys(&redis);
    assert_eq!(keys, [format!("{}c", a.prefix())], "the sweep's keys are deleted; compare's counter is the visitor's");
    let (s, r) = a.post(&app, "/api/v1/sweep", &json!({"command": ["CLIENT", "LIST"], "total": 1, "batch_sizes": [1]})).await;
    assert!(s == 400 || s == 403, "{r}");
}

/// `summary.server` in the sandbox (lesson 9, the compare view): the
/// sandbox user may not run `INFO`, so the readings are taken on the
/// server's own connection; the counts are there, key names are not.
#[tokio::test]
async fn sandbox_batches_get_the_servers_counts() {
    let (_redis, app, _) = start(100_000, 64 << 20, &[]);
    let mut a = Visitor::new();
    let commands: Vec<Json> = (0..100).map(|i| json!(["SET", format!("k:{i}"), "x"])).collect();
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"commands": commands, "mode": "sequential", "server_stats": true, "results": "none"})).await;
    assert_eq!(s, 200, "{r}");
    let server = &r["summary"]["server"];
    assert!(server["reads"].as_u64().is_some_and(|n| n >= 100), "{server}");
    assert!(server["calls"].as_u64().is_some_and(|n| n >= 100), "{server}");
    let (s, r) = a.post(&app, "/api/v1/compare", &json!({"text": "INCR c\nINCR c"})).await;
    assert_eq!(s, 200, "{r}");
    for run in r["runs"].as_array().unwrap() {
        assert!(run["summary"]["server"]["calls"].as_u64().is_some_and(|n| n >= 2), "{run}");
    }
}

#[tokio::test]
async fn info_says_the_sandbox_is_on() {
    let (_redis, app, _) = start(7, 1 << 20, &[]);
    let (s, info) = app.get("/api/v1/info").await;
    assert_eq!(s, 200);
    assert_eq!(info["sandbox"], json!({"ttl_s": 3600, "max_keys": 7, "max_bytes": 1 << 20, "scripts": true, "acl_users": true}));
}

fn exec_opts() -> ExecOptions {
    ExecOptions { connect_timeout: Duration::from_secs(5), ..ExecOptions::default() }
}

/// The second wall: the executor called directly as pipelab's ACL users
/// (as if a write had slipped past pipelab's own checks) is refused by
/// Redis itself.
#[tokio::test]
async fn redis_refuses_what_slips_past_pipelab() {
    let users = Users::generate();
    let args = users.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let redis = RedisServer::start_with(&args);
    let base = RedisTarget::parse(&redis.url).unwrap();
    redis.cmd_str(&["SET", "k", "v"]);
    let sandbox = users.sandbox.target(&base);
    let report = execute(&sandbox, &common::batch(Mode::Pipeline, &["GET k", "SET sbx:{x}:k 1", "CONFIG GET *", "PUBLISH c m", "SELECT 1", "FLUSHALL"]), &exec_opts()).await.unwrap();
    let r: Vec<&Value> = report.results.iter().map(|r| r.reply.as_ref().unwrap()).collect();
    assert!(r[0].is_error() && !r[1].is_error(), "{r:?}");
    for reply in &r[2..] {
        assert!(String::from_utf8_lossy(reply.error_message().unwrap()).starts_with("NOPERM"), "{reply:?}");
    }
    assert_eq!(bulk(&redis.cmd_str(&["GET", "k"])).as_deref(), Some("v"));
}

/// Protected mode: a public address with no token and no --sandbox is
/// refused at start-up, in one line naming the three ways out.
#[test]
fn protected_mode_refuses_to_start() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(["serve", "--listen", "0.0.0.0:0", "--redis", "redis://127.0.0.1:1"])
        .env_remove("PIPELAB_TOKENS")
        .env_remove("PIPELAB_SANDBOX")
        .env_remove("PIPELAB_ALLOW_UNAUTHENTICATED")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    for flag in ["--token", "--sandbox", "--allow-unauthenticated"] {
        assert!(lines[0].contains(flag), "{stderr}");
    }
}

/// `pipelab serve --sandbox` with its own redis-server: the ACL users exist
/// there, passwords only as hashes, and /info says the sandbox is on.
#[tokio::test]
async fn serve_sandbox_makes_the_acl_users() {
    let (cmd, port) = api_harness::serve_command(&["--sandbox"]);
    let mut api = api_harness::Pipelab::spawn(cmd, port);
    let (s, info) = api.get("/api/v1/info").await;
    assert_eq!(s, 200);
    assert_eq!(info["sandbox"]["acl_users"], true, "{info}");
    assert_eq!(info["sandbox"]["scripts"], true);
    let socket = info["redis"]["target"].as_str().unwrap().strip_prefix("unix://").unwrap().to_string();
    let mut conn = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    use std::io::Write;
    conn.write_all(b"ACL LIST\r\n").unwrap();
    let Value::Array(lines) = common::read_one(&mut conn) else { panic!("ACL LIST") };
    let lines: Vec<String> = lines.iter().filter_map(bulk).collect();
    let sandbox = lines.iter().find(|l| l.starts_with("user pipelab-sandbox ")).expect("the sandbox user");
    assert!(sandbox.contains("~sbx:*") && sandbox.contains(" #"), "{sandbox}");
    for denied in ["+flushall", "+config", "+info", "+debug", "+publish", "+script|flush", "+function", "+migrate", "+@all"] {
        assert!(!sandbox.contains(&format!("{denied} ")) && !sandbox.ends_with(denied), "{denied}: {sandbox}");
    }
    let readonly = lines.iter().find(|l| l.starts_with("user pipelab-readonly ")).expect("the read-only user");
    assert!(readonly.contains("+@read") && !readonly.contains("+@write"), "{readonly}");
    assert!(!api.stderr().contains("pipelab-sandbox on"), "no ACL rule in the logs");
    api.stop();
}

impl Visitor {
    /// Opens a session with this visitor's cookie; its id.
    async fn open_session(&mut self, app: &App) -> String {
        let (s, r) = self.post(app, "/api/v1/sessions", &json!({})).await;
        assert_eq!(s, 201, "{r}");
        r["id"].as_str().unwrap().to_string()
    }

    /// One command on session `id`: status and report.
    async fn on(&mut self, app: &App, id: &str, argv: &[&str]) -> (u16, Json) {
        self.post(app, "/api/v1/batch", &json!({"session": id, "commands": [argv]})).await
    }

    /// The reply of one command on session `id` (which must answer 200).
    async fn reply(&mut self, app: &App, id: &str, argv: &[&str]) -> Json {
        let (s, r) = self.on(app, id, argv).await;
        assert_eq!(s, 200, "{argv:?}: {r}");
        r["results"][0]["reply"].clone()
    }
}

/// Lesson 6 in the sandbox: a session keeps WATCH and MULTI between
/// batches, its keys land under the visitor's prefix (seen in Redis), its
/// replies show the visitor's names, its connection is the visitor's own
/// ACL user, and a key written by a queued command gets its TTL at EXEC.
#[tokio::test]
async fn sandbox_sessions_keep_state_in_the_namespace() {
    let (redis, app, _) = start(1000, 1 << 20, &[]);
    let mut a = Visitor::new();
    let id = a.open_session(&app).await;
    let acct = format!("{}acct", a.prefix());

    assert_eq!(a.reply(&app, &id, &["WATCH", "acct"]).await["value"], "OK");
    assert_eq!(a.reply(&app, &id, &["GET", "acct"]).await["type"], "null");
    assert_eq!(a.reply(&app, &id, &["MULTI"]).await["value"], "OK");
    assert_eq!(a.reply(&app, &id, &["SET", "acct", "10"]).await["value"], "QUEUED");
    let exec = a.reply(&app, &id, &["EXEC"]).await;
    assert_eq!(exec["type"], "array", "{exec}");
    assert_eq!(bulk(&redis.cmd_str(&["GET", &acct])).as_deref(), Some("10"), "under the visitor's prefix");
    assert_eq!(redis.cmd_str(&["EXISTS", "acct"]), Value::Integer(0), "not outside it");
    // Queued before EXEC, written by it: the TTL comes after the EXEC batch.
    let ttl = ttl_eventually(&redis, &acct).await;
    assert!(matches!(ttl, Value::Integer(t) if t > 3000 && t <= 3600), "{acct}: {ttl:?}");

    // Another client writes the watched key between WATCH and EXEC: EXEC is null.
    assert_eq!(a.reply(&app, &id, &["WATCH", "acct"]).await["value"], "OK");
    assert_eq!(a.reply(&app, &id, &["MULTI"]).await["value"], "OK");
    assert_eq!(a.reply(&app, &id, &["INCRBY", "acct", "5"]).await["value"], "QUEUED");
    redis.cmd_str(&["INCR", &acct]);
    assert_eq!(a.reply(&app, &id, &["EXEC"]).await["type"], "null");
    assert_eq!(bulk(&redis.cmd_str(&["GET", &acct])).as_deref(), Some("11"));

    // With no other writer the read-compute-write loop commits every time:
    // the sandbox's own TTLs (EXPIRE touches a key) never break a WATCH.
    for _ in 0..3 {
        assert_eq!(a.reply(&app, &id, &["WATCH", "acct"]).await["value"], "OK");
        let v: i64 = a.reply(&app, &id, &["GET", "acct"]).await["value"].as_str().unwrap().parse().unwrap();
        assert_eq!(a.reply(&app, &id, &["MULTI"]).await["value"], "OK");
        assert_eq!(a.reply(&app, &id, &["SET", "acct", &(v + 1).to_string()]).await["value"], "QUEUED");
        let exec = a.reply(&app, &id, &["EXEC"]).await;
        assert_eq!(exec["type"], "array", "committed: {exec}");
    }
    assert_eq!(bulk(&redis.cmd_str(&["GET", &acct])).as_deref(), Some("14"));

    // Transaction mode: WATCH from an earlier batch holds; the `watch`
    // field is the visitor's key (unprefixed, the visitor's own user would
    // get NOPERM for it).
    assert_eq!(a.reply(&app, &id, &["WATCH", "acct"]).await["value"], "OK");
    redis.cmd_str(&["INCR", &acct]);
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": id, "mode": "transaction", "commands": [["INCR", "acct"]]})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["transaction"]["status"], "watch_conflict", "{r}");
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": id, "mode": "transaction", "watch": ["acct"], "commands": [["INCR", "acct"]]})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["transaction"]["status"], "committed", "{r}");
    assert_eq!(replies(&r)[0]["value"], 16, "{r}");

    // Replies with the visitor's names.
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": id, "text": "SET other 1\nRPUSH l x\nBLPOP l 1\nKEYS *\nSCAN 0 COUNT 1000"})).await;
    assert_eq!(s, 200, "{r}");
    let r = replies(&r);
    assert_eq!(r[2]["value"][0]["value"], "l", "BLPOP names the visitor's key: {}", r[2]);
    let mut keys: Vec<&str> = r[3]["value"].as_array().unwrap().iter().map(|k| k["value"].as_str().unwrap()).collect();
    keys.sort();
    assert_eq!(keys, ["acct", "other"], "{}", r[3]);
    assert_eq!(r[4]["value"][1]["value"].as_array().unwrap().len(), 2, "{}", r[4]);

    // The session's connection is the visitor's own user.
    let user = format!("user=pipelab-sbx-{}", a.prefix().trim_start_matches("sbx:{").trim_end_matches("}:"));
    let clients = bulk(&redis.cmd_str(&["CLIENT", "LIST"])).unwrap();
    assert!(clients.lines().any(|l| l.contains(&user)), "{user}: {clients}");
    for k in all_keys(&redis) {
        assert!(k.starts_with(&a.prefix()), "{k}");
    }
    assert_eq!(a.delete(&app, &format!("/api/v1/sessions/{id}")).await, 204);
}

/// A session is the visitor's: another cookie, or none, does not find it
/// (404, as if it did not exist); a script on it cannot reach another
/// visitor's key (Redis's NOPERM, per command).
#[tokio::test]
async fn sandbox_sessions_are_the_visitors_own() {
    let (redis, app, _) = start(1000, 1 << 20, &[]);
    let (mut a, mut b) = (Visitor::new(), Visitor::new());
    b.batch(&app, "SET n 5").await;
    let id = a.open_session(&app).await;
    assert_eq!(a.reply(&app, &id, &["SET", "n", "1"]).await["value"], "OK");

    let mut nobody = Visitor::new();
    for stranger in [&mut b, &mut nobody] {
        let (s, r) = stranger.on(&app, &id, &["GET", "n"]).await;
        assert_eq!((s, r["error"]["code"].as_str()), (404, Some("session_not_found")), "{r}");
        assert_eq!(stranger.delete(&app, &format!("/api/v1/sessions/{id}")).await, 404);
    }
    assert_eq!(a.reply(&app, &id, &["GET", "n"]).await["value"], "1", "still open for its visitor");

    // A script on the session that builds another visitor's key name in Lua.
    let script = format!("return redis.call('SET', '{}n', 'x')", b.prefix());
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": id, "commands": [["EVAL", script, "0"], ["GET", "n"]]})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["results"][0]["status"], "error", "{r}");
    let msg = r["results"][0]["reply"]["value"].as_str().unwrap();
    assert!(msg.contains("NOPERM") || msg.contains("can't access"), "{msg}");
    assert_eq!(replies(&r)[1]["value"], "1", "the session goes on: {r}");
    assert_eq!(bulk(&redis.cmd_str(&["GET", &format!("{}n", b.prefix())])).as_deref(), Some("5"));
    // Its own key in KEYS is the visitor's.
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": id, "text": "EVAL \"return redis.call('INCR', KEYS[1])\" 1 n"})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(replies(&r)[0]["value"], 2, "{r}");
}

/// Quotas and TTLs apply on a session as on any sandbox batch: commands
/// past the key quota are not sent (the session stays usable), and every
/// key a session batch writes gets the sandbox TTL.
#[tokio::test]
async fn sandbox_sessions_have_quotas_and_ttls() {
    let (redis, app, _) = start(2, 1 << 20, &[]);
    let mut a = Visitor::new();
    let id = a.open_session(&app).await;
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": id, "text": "SET a 1\nSET b 1\nSET c 1\nGET a"})).await;
    assert_eq!(s, 200, "{r}");
    let statuses: Vec<&str> = r["results"].as_array().unwrap().iter().map(|x| x["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["ok", "ok", "not_sent", "not_sent"], "{r}");
    assert!(r["connection_error"].as_str().unwrap().contains("--sandbox-max-keys"), "{r}");
    assert_eq!(all_keys(&redis).len(), 2);
    assert_eq!(a.reply(&app, &id, &["GET", "a"]).await["value"], "1", "the session is not lost");
    for k in ["a", "b"] {
        let key = format!("{}{k}", a.prefix());
        let ttl = ttl_eventually(&redis, &key).await;
        assert!(matches!(ttl, Value::Integer(t) if t > 3000 && t <= 3600), "{key}: {ttl:?}");
    }
    // A transaction past the quota is not sent at all.
    let (s, r) = a.post(&app, "/api/v1/batch", &json!({"session": id, "mode": "transaction", "text": "SET x 1\nSET y 1"})).await;
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["summary"]["not_sent"], 2, "{r}");
    assert_eq!(all_keys(&redis).len(), 2);
}

/// With `--redis` (no ACL users) a session could not run as the visitor's
/// own user: refused, saying why.
#[tokio::test]
async fn sandbox_sessions_need_the_acl_users() {
    let redis = RedisServer::start();
    let cfg = SandboxConfig { sandbox: true, ..SandboxConfig::default() };
    let app = App::configured(&redis.url, &[], PathBuf::from("/nonexistent"), move |s| s.with_sandbox(Some(Sandbox::new(cfg, None)), None));
    let mut a = Visitor::new();
    let (s, r) = a.post(&app, "/api/v1/sessions", &json!({})).await;
    assert_eq!((s, r["error"]["code"].as_str()), (403, Some("sandbox_refused")), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("--redis"), "{r}");
    assert_eq!(app.state.sessions.len(), 0);
}
