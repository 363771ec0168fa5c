//! Redis in a state that refuses commands, met through the HTTP API
//! in-process (`api_inproc`): `maxmemory` reached (OOM), `LOADING` its
//! dataset, a script past `busy-reply-threshold` (BUSY). Each gives a 200
//! with per-command errors in place, never a 5xx, and the ledger
//! (tests/common/ledger.rs) confirms that no refused command ran.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::time::Duration;

use api_inproc::{App, RedisServer};
use common::ledger::{Ledger, Tally};
use pipelab_engine::exec::Status;
use serde_json::{json, Value as Json};

const MODES: [&str; 3] = ["sequential", "pipeline", "transaction"];

/// POSTs the ledger batch in `mode`; checks the 200 and that every error
/// reply starts with `prefix` (or is EXECABORT, the transaction's answer
/// to a command refused at queue time). Returns the body and how many
/// commands got an error.
async fn post_ledger(app: &App, ledger: &Ledger, mode: &str, prefix: &str) -> (Json, usize) {
    let commands: Vec<Json> = ledger
        .commands()
        .iter()
        .map(|argv| argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect())
        .collect();
    let (status, body) = app.post("/api/v1/batch", &json!({"commands": commands, "mode": mode})).await;
    assert_eq!(status, 200, "{mode}: {body}");
    let results = body["results"].as_array().unwrap_or_else(|| panic!("{mode}: no results: {body}"));
    let mut errors = 0;
    for r in results.iter().filter(|r| r["status"] == "error") {
        errors += 1;
        let message = r["reply"]["value"].as_str().unwrap_or_default();
        assert!(message.starts_with(prefix) || message.starts_with("EXECABORT"), "{mode}: {message}");
    }
    (body, errors)
}

/// The ledger check of [`Tally::check`] on a `/batch` response body.
fn check_ledger(redis: &RedisServer, ledger: &Ledger, mode: &str, body: &Json) {
    let statuses: Vec<(Status, bool)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (serde_json::from_value(r["status"].clone()).unwrap(), r["reply"] == json!({"type": "integer", "value": 1})))
        .collect();
    let cut = body.get("connection_error").is_some();
    Tally::default().check_results(ledger, statuses.into_iter(), cut, mode == "transaction", &ledger.counts(redis));
}

/// [`post_ledger`] then [`check_ledger`]: the number of errors.
async fn refused_batch(app: &App, redis: &RedisServer, ledger: &Ledger, mode: &str, prefix: &str) -> usize {
    let (body, errors) = post_ledger(app, ledger, mode, prefix).await;
    check_ledger(redis, ledger, mode, &body);
    errors
}

/// Over `maxmemory` (noeviction): writes get OOM in place, reads still
/// answer, in every mode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maxmemory_reached_gives_oom_in_place() {
    let redis = RedisServer::start_with(&["--maxmemory-policy", "noeviction"]);
    let app = App::start(&redis.url, &[]);
    assert_eq!(redis.cmd_str(&["CONFIG", "SET", "maxmemory", "1"]), resp::Value::Simple(b"OK".to_vec()));
    for mode in MODES {
        let ledger = Ledger::new(format!("oom:{mode}"), 20);
        assert_eq!(refused_batch(&app, &redis, &ledger, mode, "OOM").await, 20, "{mode}");
    }
    let (status, body) = app.post("/api/v1/batch", &json!({"text": "PING\nINCR a\nGET a", "mode": "pipeline"})).await;
    assert_eq!(status, 200, "{body}");
    let st: Vec<&str> = body["results"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(st, ["ok", "error", "ok"], "{body}");
}

/// While Redis loads its RDB (slowed with `key-load-delay`, answering
/// between keys), commands get LOADING errors, not a 5xx.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loading_gives_per_command_errors() {
    let mut redis =
        RedisServer::start_with(&[
        "--key-load-delay", "200", "--loading-process-events-interval-bytes", "1024", "--enable-debug-command", "local",
    ]);
    redis.cmd_str(&["DEBUG", "POPULATE", "10000"]);
    assert_eq!(redis.cmd_str(&["SAVE"]), resp::Value::Simple(b"OK".to_vec()));
    // 10000 keys × at least 200 µs: 2 s of loading or more.
    redis.restart();
    let app = App::start(&redis.url, &[]);
    let mut refused = 0;
    for mode in MODES {
        let ledger = Ledger::new(format!("loading:{mode}"), 20);
        refused += refused_batch(&app, &redis, &ledger, mode, "LOADING").await;
    }
    assert!(refused > 0, "the load ended before any batch");
}

/// A script running past `busy-reply-threshold`: BUSY errors per command,
/// then SCRIPT KILL and the next batch runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_script_gives_per_command_errors() {
    let redis = RedisServer::start_with(&["--busy-reply-threshold", "50"]);
    let app = App::start(&redis.url, &[]);
    let mut script = std::net::TcpStream::connect(("127.0.0.1", redis.port)).unwrap();
    let mut out = Vec::new();
    resp::encode_command(&[b"EVAL".as_slice(), b"while true do end", b"0"], &mut out);
    script.write_all(&out).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut ran = Vec::new();
    for mode in MODES {
        let ledger = Ledger::new(format!("busy:{mode}"), 20);
        let (body, errors) = post_ledger(&app, &ledger, mode, "BUSY").await;
        assert_eq!(errors, 20, "{mode}: {body}");
        ran.push((mode, ledger, body));
    }
    assert_eq!(redis.cmd_str(&["SCRIPT", "KILL"]), resp::Value::Simple(b"OK".to_vec()));
    // The script stops at its next hook call: until then, still BUSY.
    while redis.cmd_str(&["PING"]) != resp::Value::Simple(b"PONG".to_vec()) {
        std::thread::sleep(Duration::from_millis(10));
    }
    for (mode, ledger, body) in &ran {
        check_ledger(&redis, ledger, mode, body);
    }
    let ledger = Ledger::new("busy:after", 20);
    assert_eq!(refused_batch(&app, &redis, &ledger, "pipeline", "BUSY").await, 0);
}
