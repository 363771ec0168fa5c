//! Every kind of bad request gets a 4xx with `{"error": {"code", "message"}}`
//! naming the field, and nothing reaches Redis. Table-driven: one row per
//! case, in-process (`api_inproc`); bodies that need a real socket (chunked,
//! stalled) go to the `pipelab serve` binary (`api_harness`).

mod api_harness;
#[path = "../../backend/tests/api_inproc/mod.rs"]
mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use api_harness::{raw_request, read_response, Pipelab};
use api_inproc::App;
use common::RedisServer;
use serde_json::{json, Value as Json};

struct Case {
    name: &'static str,
    path: &'static str,
    /// Raw request body (most are JSON; some deliberately are not).
    body: String,
    status: u16,
    code: &'static str,
    /// Must appear in the message (the field, a line/column, ...).
    says: &'static [&'static str],
}

fn case(
    name: &'static str,
    path: &'static str,
    body: Json,
    status: u16,
    code: &'static str,
    says: &'static [&'static str],
) -> Case {
    Case {
        name,
        path,
        body: body.to_string(),
        status,
        code,
        says,
    }
}

fn raw(
    name: &'static str,
    path: &'static str,
    body: &str,
    status: u16,
    code: &'static str,
    says: &'static [&'static str],
) -> Case {
    Case {
        name,
        path,
        body: body.to_string(),
        status,
        code,
        says,
    }
}

const B: &str = "/api/v1/batch";
const C: &str = "/api/v1/compare";
const S: &str = "/api/v1/sweep";

fn cases() -> Vec<Case> {
    let long_arg = "x".repeat(101);
    let many: Vec<Json> = (0..11).map(|_| json!(["PING"])).collect();
    vec![
        // --- malformed JSON and wrong types
        raw(
            "truncated JSON",
            B,
            "{\"commands\": [[\"PING\"]",
            400,
            "invalid_json",
            &["request body", "line 1 column"],
        ),
        raw(
            "not JSON",
            B,
            "SET k v",
            400,
            "invalid_json",
            &["request body", "malformed JSON"],
        ),
        raw(
            "empty body",
            B,
            "",
            400,
            "invalid_json",
            &["request body", "empty"],
        ),
        raw(
            "trailing garbage",
            B,
            "{\"commands\": [[\"PING\"]]} x",
            400,
            "invalid_json",
            &["trailing"],
        ),
        raw(
            "member given twice",
            B,
            "{\"commands\": [[\"PING\"]], \"mode\": \"pipeline\", \"mode\": \"sequential\"}",
            400,
            "invalid_field",
            &["mode: duplicate field"],
        ),
        raw(
            "commands given twice",
            B,
            "{\"commands\": [[\"PING\"]], \"commands\": [[\"GET\", \"k\"]]}",
            400,
            "invalid_field",
            &["commands: duplicate field"],
        ),
        case(
            "body is an array",
            B,
            json!([["PING"]]),
            400,
            "invalid_field",
            &["request body"],
        ),
        case(
            "commands is a string",
            B,
            json!({"commands": "SET k v"}),
            400,
            "invalid_field",
            &["commands", "an array of commands"],
        ),
        case(
            "command is a string",
            B,
            json!({"commands": ["PING"]}),
            400,
            "invalid_field",
            &["commands[0]"],
        ),
        case(
            "unknown field",
            B,
            json!({"commands": [["PING"]], "batchsize": 3}),
            400,
            "invalid_field",
            &["batchsize"],
        ),
        case(
            "mode not a string",
            B,
            json!({"commands": [["PING"]], "mode": 5}),
            400,
            "invalid_field",
            &["mode"],
        ),
        case(
            "resp3 not a bool",
            B,
            json!({"commands": [["PING"]], "resp3": "yes"}),
            400,
            "invalid_field",
            &["resp3"],
        ),
        // --- commands
        case(
            "empty batch",
            B,
            json!({"commands": []}),
            400,
            "empty_batch",
            &["commands"],
        ),
        case(
            "empty argv",
            B,
            json!({"commands": [["PING"], []]}),
            400,
            "empty_argv",
            &["commands[1]"],
        ),
        case(
            "number argument",
            B,
            json!({"commands": [["SET", "k", 1]]}),
            400,
            "invalid_argument",
            &["commands[0][2]", "number"],
        ),
        case(
            "null argument",
            B,
            json!({"commands": [["GET", null]]}),
            400,
            "invalid_argument",
            &["commands[0][1]", "null"],
        ),
        case(
            "array argument",
            B,
            json!({"commands": [["GET", ["k"]]]}),
            400,
            "invalid_argument",
            &["commands[0][1]", "array"],
        ),
        case(
            "bool argument",
            B,
            json!({"commands": [[true]]}),
            400,
            "invalid_argument",
            &["commands[0][0]", "boolean"],
        ),
        case(
            "object argument",
            B,
            json!({"commands": [["GET", {"hex": "ff"}]]}),
            400,
            "invalid_argument",
            &["commands[0][1]", "object"],
        ),
        case(
            "invalid base64",
            B,
            json!({"commands": [["GET", {"base64": "!!not"}]]}),
            400,
            "invalid_base64",
            &["commands[0][1].base64", "invalid base64"],
        ),
        case(
            "base64 not a string",
            B,
            json!({"commands": [["GET", {"base64": 5}]]}),
            400,
            "invalid_argument",
            &["commands[0][1].base64"],
        ),
        case(
            "no commands nor text",
            B,
            json!({"mode": "pipeline"}),
            400,
            "missing_commands",
            &["commands", "text"],
        ),
        case(
            "commands and text",
            B,
            json!({"commands": [["PING"]], "text": "PING"}),
            400,
            "conflicting_fields",
            &["not both"],
        ),
        // --- text
        case(
            "unbalanced double quote",
            B,
            json!({"text": "SET a \"b"}),
            400,
            "parse_error",
            &["text", "line 1, column 7", "unbalanced"],
        ),
        case(
            "unbalanced quote on line 3",
            B,
            json!({"text": "PING\nPING\nSET a 'b"}),
            400,
            "parse_error",
            &["text", "line 3, column 7"],
        ),
        case(
            "closing quote not followed by space",
            B,
            json!({"text": "SET \"a\"b c"}),
            400,
            "parse_error",
            &["line 1, column"],
        ),
        case(
            "RESP cut short",
            B,
            json!({"text": "*2\r\n$3\r\nGET\r\n"}),
            400,
            "parse_error",
            &["text", "line 1", "incomplete"],
        ),
        case(
            "RESP bad length",
            B,
            json!({"text": "*1\r\n$x\r\nPING\r\n"}),
            400,
            "parse_error",
            &["text", "line 2"],
        ),
        case(
            "only blank lines",
            B,
            json!({"text": "\n\r\n\n"}),
            400,
            "empty_batch",
            &["text"],
        ),
        // --- options
        case(
            "unknown mode",
            B,
            json!({"commands": [["PING"]], "mode": "turbo"}),
            400,
            "unknown_mode",
            &["mode", "turbo", "pipeline"],
        ),
        case(
            "batch_size 0",
            B,
            json!({"commands": [["PING"]], "batch_size": 0}),
            400,
            "invalid_batch_size",
            &["batch_size", "at least 1"],
        ),
        case(
            "batch_size negative",
            B,
            json!({"commands": [["PING"]], "batch_size": -5}),
            400,
            "invalid_batch_size",
            &["batch_size", "-5"],
        ),
        case(
            "batch_size fractional",
            B,
            json!({"commands": [["PING"]], "batch_size": 1.5}),
            400,
            "invalid_field",
            &["batch_size"],
        ),
        case(
            "batch_size string",
            B,
            json!({"commands": [["PING"]], "batch_size": "ten"}),
            400,
            "invalid_field",
            &["batch_size"],
        ),
        case(
            "rtt negative",
            B,
            json!({"commands": [["PING"]], "simulated_rtt_ms": -1}),
            400,
            "invalid_rtt",
            &["simulated_rtt_ms", "between 0 and 1000"],
        ),
        case(
            "rtt too large",
            B,
            json!({"commands": [["PING"]], "simulated_rtt_ms": 1000.5}),
            400,
            "invalid_rtt",
            &["simulated_rtt_ms"],
        ),
        case(
            "rtt string",
            B,
            json!({"commands": [["PING"]], "simulated_rtt_ms": "fast"}),
            400,
            "invalid_field",
            &["simulated_rtt_ms"],
        ),
        case(
            "rtt beyond the batch timeout",
            B,
            json!({"commands": (0..5).map(|_| json!(["PING"])).collect::<Vec<_>>(), "mode": "sequential", "simulated_rtt_ms": 1000}),
            400,
            "invalid_rtt",
            &[
                "simulated_rtt_ms",
                "5 round trips",
                "batch timeout of 3000 ms",
            ],
        ),
        case(
            "unknown on_error",
            B,
            json!({"commands": [["PING"]], "on_error": "explode"}),
            400,
            "invalid_field",
            &["on_error", "stop"],
        ),
        case(
            "unknown results filter",
            B,
            json!({"commands": [["PING"]], "results": "some"}),
            400,
            "invalid_field",
            &["results", "errors"],
        ),
        case(
            "watch outside transaction",
            B,
            json!({"commands": [["PING"]], "watch": ["k"]}),
            400,
            "invalid_field",
            &["watch", "transaction"],
        ),
        case(
            "watch number",
            B,
            json!({"commands": [["PING"]], "mode": "transaction", "watch": [1]}),
            400,
            "invalid_argument",
            &["watch[0]"],
        ),
        // --- refused commands
        case(
            "SELECT",
            B,
            json!({"commands": [["PING"], ["SELECT", "1"]]}),
            400,
            "refused_command",
            &["commands[1]", "SELECT", "connection"],
        ),
        case(
            "HELLO",
            B,
            json!({"commands": [["hello", "3"]]}),
            400,
            "refused_command",
            &["commands[0]", "HELLO", "resp3"],
        ),
        case(
            "AUTH",
            B,
            json!({"commands": [["AUTH", "pw"]]}),
            400,
            "refused_command",
            &["AUTH"],
        ),
        case(
            "QUIT",
            B,
            json!({"commands": [["QUIT"]]}),
            400,
            "refused_command",
            &["QUIT"],
        ),
        case(
            "RESET",
            B,
            json!({"commands": [["RESET"]]}),
            400,
            "refused_command",
            &["RESET"],
        ),
        case(
            "MONITOR",
            B,
            json!({"commands": [["MONITOR"]]}),
            400,
            "refused_command",
            &["MONITOR"],
        ),
        case(
            "SUBSCRIBE",
            B,
            json!({"commands": [["SUBSCRIBE", "ch"]]}),
            400,
            "refused_command",
            &["SUBSCRIBE"],
        ),
        case(
            "PSUBSCRIBE",
            B,
            json!({"commands": [["PSUBSCRIBE", "c*"]]}),
            400,
            "refused_command",
            &["PSUBSCRIBE"],
        ),
        case(
            "CLIENT REPLY OFF",
            B,
            json!({"commands": [["CLIENT", "REPLY", "OFF"]]}),
            400,
            "refused_command",
            &["CLIENT REPLY"],
        ),
        case(
            "BLPOP forever",
            B,
            json!({"commands": [["BLPOP", "q", "0"]]}),
            400,
            "refused_command",
            &["BLPOP", "timeout 0"],
        ),
        case(
            "XREAD BLOCK 0",
            B,
            json!({"commands": [["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]]}),
            400,
            "refused_command",
            &["XREAD"],
        ),
        // The last BLOCK wins (xreadCommand's loop).
        case(
            "XREAD BLOCK 5 BLOCK 0",
            B,
            json!({"commands": [["XREAD", "BLOCK", "5", "BLOCK", "0", "STREAMS", "s", "$"]]}),
            400,
            "refused_command",
            &["XREAD", "timeout 0"],
        ),
        // MIGRATE makes Redis connect where the request says.
        case(
            "MIGRATE",
            B,
            json!({"commands": [["MIGRATE", "127.0.0.1", "1", "k", "0", "100"]]}),
            400,
            "refused_command",
            &["commands[0]", "MIGRATE", "another server", "--allow-migrate"],
        ),
        // Secrets need an operator token.
        case(
            "CONFIG GET",
            B,
            json!({"commands": [["CONFIG", "GET", "requirepass"]]}),
            400,
            "refused_command",
            &["CONFIG GET", "operator token"],
        ),
        case(
            "ACL LIST",
            B,
            json!({"commands": [["acl", "list"]]}),
            400,
            "refused_command",
            &["ACL LIST", "operator token"],
        ),
        case(
            "ACL GETUSER",
            B,
            json!({"commands": [["ACL", "GETUSER", "default"]]}),
            400,
            "refused_command",
            &["ACL GETUSER", "operator token"],
        ),
        case(
            "ACL DRYRUN",
            B,
            json!({"commands": [["ACL", "DRYRUN", "default", "GET", "k"]]}),
            400,
            "refused_command",
            &["ACL DRYRUN", "operator token"],
        ),
        case(
            "EXEC in transaction mode",
            B,
            json!({"commands": [["EXEC"]], "mode": "transaction"}),
            400,
            "refused_command",
            &["EXEC", "transaction"],
        ),
        case(
            "SELECT in text",
            B,
            json!({"text": "PING\nSELECT 2"}),
            400,
            "refused_command",
            &["text, line 2", "SELECT"],
        ),
        // --- limits (the server runs with --max-commands 10 --max-arg-bytes 100 --max-body-bytes 4000
        // --batch-timeout-ms 3000)
        case(
            "too many commands",
            B,
            json!({"commands": many}),
            413,
            "too_many_commands",
            &["commands", "10"],
        ),
        case(
            "too many commands in text",
            B,
            json!({"text": "PING\n".repeat(11)}),
            413,
            "too_many_commands",
            &["text"],
        ),
        case(
            "argument too large",
            B,
            json!({"commands": [["SET", "k", long_arg]]}),
            413,
            "argument_too_large",
            &["commands[0][2]", "100"],
        ),
        case(
            "base64 argument too large",
            B,
            json!({"commands": [["SET", "k", {"base64": "A".repeat(200)}]]}),
            413,
            "argument_too_large",
            &["commands[0][2]"],
        ),
        case(
            "body too large",
            B,
            json!({"commands": [["SET", "k", "x".repeat(5000)]]}),
            413,
            "body_too_large",
            &["request body", "max_body_bytes"],
        ),
        // --- compare
        case(
            "compare unknown mode",
            C,
            json!({"commands": [["PING"]], "modes": ["fast"]}),
            400,
            "unknown_mode",
            &["modes[0]"],
        ),
        case(
            "compare empty modes",
            C,
            json!({"commands": [["PING"]], "modes": []}),
            400,
            "invalid_field",
            &["modes"],
        ),
        case(
            "compare takes modes, not mode",
            C,
            json!({"commands": [["PING"]], "mode": "pipeline"}),
            400,
            "invalid_field",
            &["mode"],
        ),
        case(
            "compare refuses before running",
            C,
            json!({"commands": [["INCR", "never"], ["MULTI"]]}),
            400,
            "refused_command",
            &["commands[1]", "MULTI"],
        ),
        case(
            "compare empty batch",
            C,
            json!({"text": ""}),
            400,
            "empty_batch",
            &["text"],
        ),
        // --- sweep
        case(
            "sweep empty command",
            S,
            json!({"command": [], "total": 10, "batch_sizes": [1]}),
            400,
            "empty_argv",
            &["command"],
        ),
        case(
            "sweep number argument",
            S,
            json!({"command": ["SET", "k", 5], "total": 10, "batch_sizes": [1]}),
            400,
            "invalid_argument",
            &["command[2]"],
        ),
        case(
            "sweep total 0",
            S,
            json!({"command": ["PING"], "total": 0, "batch_sizes": [1]}),
            400,
            "invalid_field",
            &["total"],
        ),
        case(
            "sweep total over limit",
            S,
            json!({"command": ["PING"], "total": 11, "batch_sizes": [1]}),
            413,
            "too_many_commands",
            &["total"],
        ),
        case(
            "sweep no batch sizes",
            S,
            json!({"command": ["PING"], "total": 5, "batch_sizes": []}),
            400,
            "invalid_field",
            &["batch_sizes"],
        ),
        case(
            "sweep batch size 0",
            S,
            json!({"command": ["PING"], "total": 5, "batch_sizes": [2, 0]}),
            400,
            "invalid_batch_size",
            &["batch_sizes[1]"],
        ),
        case(
            "sweep missing total",
            S,
            json!({"command": ["PING"], "batch_sizes": [1]}),
            400,
            "invalid_field",
            &["total"],
        ),
        case(
            "sweep rtt",
            S,
            json!({"command": ["PING"], "total": 5, "batch_sizes": [1], "simulated_rtt_ms": 5000}),
            400,
            "invalid_rtt",
            &["simulated_rtt_ms"],
        ),
        case(
            "sweep refused",
            S,
            json!({"command": ["SUBSCRIBE", "c{i}"], "total": 5, "batch_sizes": [1]}),
            400,
            "refused_command",
            &["command", "SUBSCRIBE"],
        ),
        case(
            "sweep unknown command",
            S,
            json!({"command": ["NOSUCH", "k{i}"], "total": 5, "batch_sizes": [1]}),
            400,
            "invalid_command",
            &["command", "Redis"],
        ),
    ]
}

#[tokio::test]
async fn every_bad_request_gets_a_4xx_naming_the_field() {
    let redis = RedisServer::start();
    let api = App::start(
        &redis.url,
        &[
            "--max-commands",
            "10",
            "--max-arg-bytes",
            "100",
            "--max-body-bytes",
            "4000",
            "--batch-timeout-ms",
            "3000",
        ],
    );
    let (_, doc) = api.get("/api/v1/openapi.json").await;
    let listed = doc["components"]["schemas"]["ApiCode"]["enum"].as_array().expect("ApiCode listed").clone();
    let mut failures = Vec::new();
    for c in cases() {
        if !listed.contains(&json!(c.code)) {
            failures.push(format!("{}: code {} is not listed in the OpenAPI document", c.name, c.code));
        }
        let (status, body) = api.post_raw(c.path, c.body.clone()).await;
        let err = &body["error"];
        let message = err["message"].as_str().unwrap_or("");
        let mut problems = Vec::new();
        if status != c.status {
            problems.push(format!("status {status}, expected {}", c.status));
        }
        if err["code"] != c.code {
            problems.push(format!("code {}, expected {}", err["code"], c.code));
        }
        for s in c.says {
            if !message.contains(s) {
                problems.push(format!("message lacks {s:?}"));
            }
        }
        if body.as_object().map(|o| o.len()) != Some(1) {
            problems.push("body has more than {\"error\"}".into());
        }
        if !problems.is_empty() {
            failures.push(format!("{}: {} — got {body}", c.name, problems.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Nothing reached Redis: no key was written by any of those requests.
    assert_eq!(redis.cmd_str(&["DBSIZE"]), resp::Value::Integer(0));
    // The sweep case asks Redis (COMMAND GETKEYS) before refusing: its
    // connection may stay idle in the pool, one at most, and nothing else.
    api.assert_only_idle_pooled(&redis, 1, 3).await;
}

/// The other side: what Redis does not block on
/// runs (`BLPOP k 1e-400` waits 1 ms: Redis rounds the timeout up), and an
/// operator's `--allow-migrate` lets MIGRATE through to Redis.
#[tokio::test]
async fn positive_timeouts_and_allowed_migrate_run() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &["--allow-migrate"]);
    let (status, body) = api
        .post("/api/v1/batch", &json!({"commands": [["BLPOP", "q", "1e-400"], ["SET", "k", "v"], ["MIGRATE", "127.0.0.1", "1", "k", "0", "100"]]}))
        .await;
    assert_eq!(status, 200, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results[0]["status"], "ok", "{body}");
    assert_eq!(results[0]["reply"]["type"], "null", "{body}");
    // Redis tried port 1 and says so: the command reached it.
    assert_eq!(results[2]["status"], "error", "{body}");
    assert!(results[2]["reply"].to_string().contains("IOERR"), "{body}");
}

/// A chunked body (no Content-Length) past the limit is cut while reading,
/// with the same JSON error.
#[tokio::test]
async fn chunked_body_over_the_limit() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &["--max-body-bytes", "4000"]);
    let chunk = format!("{{\"text\": \"{}\"}}", "PING\\n".repeat(1500));
    let body = format!("{:x}\r\n{chunk}\r\n0\r\n\r\n", chunk.len());
    let head = "POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let (status, text) = read_response(raw_request(api.port, head, body.as_bytes()));
    assert_eq!(status, 413, "{text}");
    let json: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(json["error"]["code"], "body_too_large");
}

/// A body that stops arriving gets a 408 after the batch timeout instead of
/// holding its connection (and what was reserved for it) forever.
#[tokio::test]
async fn a_body_that_stops_arriving_times_out() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &["--batch-timeout-ms", "300"]);
    let head = "POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Content-Length: 1000\r\nConnection: close\r\n\r\n";
    let started = std::time::Instant::now();
    let (status, text) = read_response(raw_request(api.port, head, b"{\"commands\": [[\"PI"));
    assert_eq!(status, 408, "{text}");
    let json: Json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(json["error"]["code"], "body_timeout");
    assert_eq!(json["error"]["field"], "request body");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
}

/// POST `body` to `/api/v1/batch`, its length declared (`Content-Length`)
/// or not: a big body with a declared length has its commands checked and
/// encoded as they arrive (`api::validate::Checker`), one without is read
/// whole first.
async fn post_batch(api: &App, body: &[u8], declared: bool) -> (u16, Json) {
    use axum::body::Body;
    use axum::http::{header, Method, Request};
    let mut req = Request::builder().method(Method::POST).uri(B).header(header::CONTENT_TYPE, "application/json");
    if declared {
        req = req.header(header::CONTENT_LENGTH, body.len());
    }
    let (status, _, out) = api.send(req.body(Body::from(body.to_vec())).unwrap()).await;
    (status, serde_json::from_slice(&out).unwrap_or(Json::Null))
}

/// A big batch whose commands are checked as they arrive answers a bad
/// command at its last index as the batch read whole does, naming it, and
/// sends nothing; `mode` after `commands` is checked against what was
/// recorded (a command refused in one mode only). Good big batches run
/// alike both ways, in every mode, the same bytes written.
#[tokio::test]
async fn big_batches_checked_as_they_arrive_answer_as_when_read_whole() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &["--max-arg-bytes", "100", "--max-watch-keys", "3"]);
    // Commands are checked as they arrive once the command table is known:
    // the first batch reads it.
    assert_eq!(api.post(B, &json!({"commands": [["PING"]]})).await.0, 200);
    let n = 3000;
    let sets = |last: Json| {
        let mut c: Vec<Json> = (0..n - 1).map(|i| json!(["SET", format!("key:{i:06}"), format!("value:{i:06}")])).collect();
        c.push(last);
        c
    };
    let bad: Vec<(Json, &str, &str)> = vec![
        (json!([]), "pipeline", "empty_argv"),
        (json!(["SET", "k", "x".repeat(101)]), "pipeline", "argument_too_large"),
        (json!(["SUBSCRIBE", "c"]), "pipeline", "refused_command"),
        (json!(["MULTI"]), "transaction", "refused_command"),
        (json!(["WATCH", "a", "b", "c", "d"]), "pipeline", "too_many_watch_keys"),
        (json!(["BLPOP", "k", "0"]), "sequential", "refused_command"),
        (json!(["CONFIG", "SET", "maxmemory", "1"]), "auto", "refused_command"),
    ];
    let field = format!("commands[{}]", n - 1);
    for (last, mode, code) in bad {
        // `mode` after `commands`, and before.
        for body in [json!({"commands": sets(last.clone()), "mode": mode}), json!({"mode": mode, "commands": sets(last.clone())})] {
            let body = serde_json::to_vec(&body).unwrap();
            assert!(body.len() >= 64 * 1024, "big enough to be checked as it arrives");
            let (whole_status, whole) = post_batch(&api, &body, false).await;
            let (status, arriving) = post_batch(&api, &body, true).await;
            assert!((400..500).contains(&status) && status == whole_status, "{last} in {mode}: {status} {arriving} / {whole_status} {whole}");
            assert_eq!(arriving["error"]["code"], code, "{last} in {mode}: {arriving}");
            assert!(arriving["error"]["message"].as_str().unwrap().contains(&field), "{arriving}");
            assert_eq!(arriving, whole, "{last} in {mode}");
        }
    }
    assert_eq!(redis.cmd_str(&["DBSIZE"]), resp::Value::Integer(0), "a refused batch sends nothing");

    // MULTI is refused in transaction mode only: with `"mode": "pipeline"`
    // after the commands, the same record lets it run.
    let body = serde_json::to_vec(&json!({"commands": sets(json!(["MULTI"])), "mode": "pipeline", "results": "errors"})).unwrap();
    let (status, report) = post_batch(&api, &body, true).await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["summary"]["ok"], n);
    assert_eq!(redis.cmd_str(&["DBSIZE"]), resp::Value::Integer(n as i64 - 1));

    for extra in [json!({"mode": "pipeline"}), json!({"mode": "pipeline", "batch_size": 7}), json!({"mode": "sequential"}), json!({"mode": "transaction"}), json!({"mode": "auto", "clients": 4})] {
        let mut sent = Vec::new();
        for declared in [false, true] {
            redis.cmd_str(&["FLUSHALL"]);
            let mut body = extra.clone();
            body["commands"] = json!(sets(json!(["GET", "key:000007"])));
            body["results"] = json!("errors");
            let (status, report) = post_batch(&api, &serde_json::to_vec(&body).unwrap(), declared).await;
            assert_eq!(status, 200, "{extra}: {report}");
            assert_eq!(report["summary"]["ok"], n, "{extra}: {report}");
            assert_eq!(redis.cmd_str(&["GET", &format!("key:{:06}", n - 2)]), resp::Value::Bulk(format!("value:{:06}", n - 2).into_bytes()));
            sent.push(report["summary"]["bytes_sent"].clone());
        }
        assert_eq!(sent[0], sent[1], "{extra}: the same bytes written");
    }
}
