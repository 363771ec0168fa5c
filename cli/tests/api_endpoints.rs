//! Every endpoint of the HTTP app against a real redis-server, in-process
//! (`api_inproc`): each mode, text input (inline and RESP), binary values,
//! compare, sweep, info, the OpenAPI document (checked against real
//! responses), probes, web files.

#[path = "../../backend/tests/api_inproc/mod.rs"]
mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use api_inproc::{reply_value, App, RedisServer};
use serde_json::{json, Value as Json};

fn statuses(res: &Json) -> Vec<&str> {
    res["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn batch_runs_in_each_mode_with_per_command_results() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let cmds = json!([
        ["SET", "k", "v"],
        ["INCR", "k"],
        ["APPEND", "k", "w"],
        ["GET", "k"]
    ]);
    for (mode, trips) in [("sequential", 4), ("pipeline", 1), ("transaction", 1)] {
        redis.cmd_str(&["DEL", "k"]);
        let (status, res) = api
            .post("/api/v1/batch", &json!({"commands": cmds, "mode": mode}))
            .await;
        assert_eq!(status, 200, "{mode}: {res}");
        let s = &res["summary"];
        assert_eq!(s["mode"], mode);
        assert_eq!(s["commands"], 4);
        assert_eq!(s["ok"], 3, "{mode}: {res}");
        assert_eq!(s["errors"], 1);
        assert_eq!(s["round_trips"], trips, "{mode}: {s}");
        assert!(s["bytes_sent"].as_u64().unwrap() > 0 && s["bytes_received"].as_u64().unwrap() > 0);
        assert_eq!(statuses(&res), ["ok", "error", "ok", "ok"], "{mode}");
        let r = &res["results"];
        assert_eq!(r[0]["reply"], json!({"type": "simple", "value": "OK"}));
        assert_eq!(
            r[1]["reply"],
            json!({"type": "error", "value": "ERR value is not an integer or out of range"})
        );
        assert_eq!(r[2]["reply"], json!({"type": "integer", "value": 2}));
        assert_eq!(r[3]["reply"], json!({"type": "bulk", "value": "vw"}));
        for (i, result) in r.as_array().unwrap().iter().enumerate() {
            assert_eq!(result["index"], i);
            assert!(result["reply_us"].as_u64().unwrap() >= result["sent_us"].as_u64().unwrap());
        }
        if mode == "transaction" {
            assert_eq!(res["transaction"]["status"], "committed");
        } else {
            assert!(res.get("transaction").is_none());
        }
        // The side effect is in Redis, not only in the report.
        assert_eq!(
            redis.cmd_str(&["GET", "k"]),
            resp::Value::Bulk(b"vw".to_vec()),
            "{mode}"
        );
    }
}

#[tokio::test]
async fn batch_options_batch_size_on_error_rtt_resp3_watch() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);

    // batch_size: 5 commands in chunks of 2 → 3 round trips.
    let five = json!([["PING"], ["PING"], ["PING"], ["PING"], ["PING"]]);
    let (status, res) = api
        .post("/api/v1/batch", &json!({"commands": five, "batch_size": 2}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(res["summary"]["round_trips"], 3);

    // on_error stop: the chunk after the error is not sent.
    redis.cmd_str(&["SET", "s", "text"]);
    let body = json!({"commands": [["INCR", "s"], ["SET", "after", "1"]], "batch_size": 1, "on_error": "stop"});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200);
    assert_eq!(statuses(&res), ["error", "not_sent"]);
    assert_eq!(redis.cmd_str(&["EXISTS", "after"]), resp::Value::Integer(0));

    // results: "errors" keeps only the non-ok results (with their index), "none" none.
    let body = json!({"commands": [["SET", "s2", "x"], ["INCR", "s2"], ["GET", "s2"]], "results": "errors"});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200);
    assert_eq!(res["results"].as_array().unwrap().len(), 1);
    assert_eq!(res["results"][0]["index"], 1);
    assert_eq!(res["results"][0]["status"], "error");
    assert_eq!(
        (
            res["summary"]["ok"].as_u64(),
            res["summary"]["errors"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let body = json!({"commands": [["SET", "s3", "x"], ["GET", "s3"]], "results": "none"});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200);
    assert_eq!(res["results"], json!([]));
    assert_eq!(res["summary"]["ok"], 2);

    // simulated RTT: 4 sequential round trips of 20 ms take at least 80 ms.
    let body = json!({"commands": [["PING"], ["PING"], ["PING"], ["PING"]], "mode": "sequential", "simulated_rtt_ms": 20});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200);
    assert!(
        res["summary"]["total_us"].as_u64().unwrap() >= 80_000,
        "{}",
        res["summary"]
    );
    assert_eq!(res["summary"]["simulated_rtt_ms"], 20.0);

    // resp3: HGETALL answers with a map.
    redis.cmd_str(&["HSET", "h", "f", "1"]);
    let (status, res) = api
        .post(
            "/api/v1/batch",
            &json!({"commands": [["HGETALL", "h"]], "resp3": true}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(res["results"][0]["reply"]["type"], "map", "{res}");
    let (_, res) = api
        .post("/api/v1/batch", &json!({"commands": [["HGETALL", "h"]]}))
        .await;
    assert_eq!(res["results"][0]["reply"]["type"], "array");

    // watch: an untouched watched key lets the transaction commit.
    let body = json!({"commands": [["SET", "w", "1"]], "mode": "transaction", "watch": ["w"]});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200);
    assert_eq!(res["transaction"]["status"], "committed");

    // A transaction with a command rejected at queue time aborts: nothing runs.
    let body = json!({"commands": [["SET", "tx", "1"], ["NOSUCHCOMMAND"]], "mode": "transaction"});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200);
    assert_eq!(res["transaction"]["status"], "aborted", "{res}");
    assert_eq!(redis.cmd_str(&["EXISTS", "tx"]), resp::Value::Integer(0));
}

/// A simulated bandwidth holds the bytes back in each direction: 200 KB
/// each way at 8 Mbit/s cannot take less than 400 ms (a floor the line
/// never beats, whatever the machine's load); the summary says what was
/// asked and what the line achieved; a bandwidth out of range is named.
#[tokio::test]
async fn bandwidth_and_the_achieved_rtt_are_in_the_summary() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let value = "v".repeat(200_000);
    let body = json!({"commands": [["SET", "big", value], ["GET", "big"]], "simulated_rtt_ms": 2, "simulated_bandwidth_mbps": 8});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200, "{res}");
    let s = &res["summary"];
    assert_eq!(statuses(&res), ["ok", "ok"]);
    assert!(s["total_us"].as_u64().unwrap() >= 400_000, "{s}");
    assert_eq!(s["simulated_bandwidth_mbps"], 8.0);
    assert_eq!(s["simulated_rtt_ms"], 2.0);
    assert!(s["achieved_rtt_ms"].as_f64().unwrap() >= 2.0, "{s}");
    // Without a simulated network neither figure is there.
    let (_, res) = api.post("/api/v1/batch", &json!({"commands": [["PING"]]})).await;
    assert!(res["summary"].get("achieved_rtt_ms").is_none() && res["summary"].get("simulated_bandwidth_mbps").is_none(), "{res}");
    // A bandwidth alone (no RTT) is simulated too.
    let (_, res) = api.post("/api/v1/batch", &json!({"commands": [["PING"]], "simulated_bandwidth_mbps": 1000})).await;
    assert_eq!(res["summary"]["achieved_rtt_ms"].as_f64().map(|a| a >= 0.0), Some(true), "{res}");
    for bad in [json!(0), json!(-1), json!(1e9), json!("fast")] {
        let (status, err) = api.post("/api/v1/batch", &json!({"commands": [["PING"]], "simulated_bandwidth_mbps": bad})).await;
        assert_eq!(status, 400, "{bad}: {err}");
        assert_eq!(err["error"]["field"], "simulated_bandwidth_mbps", "{err}");
    }
    // Commands whose bytes alone outlast the batch timeout are refused up front.
    let (status, err) = api
        .post("/api/v1/batch", &json!({"commands": [["SET", "big", "v".repeat(100_000)]], "simulated_bandwidth_mbps": 0.01}))
        .await;
    assert_eq!((status, err["error"]["field"].as_str()), (400, Some("simulated_bandwidth_mbps")), "{err}");
    // compare and sweep carry it to every run.
    let (status, res) = api
        .post("/api/v1/compare", &json!({"commands": [["PING"], ["PING"]], "modes": ["pipeline"], "simulated_bandwidth_mbps": 100}))
        .await;
    assert_eq!(status, 200, "{res}");
    assert!(res["runs"].as_array().unwrap().iter().all(|r| r["summary"]["simulated_bandwidth_mbps"] == 100.0), "{res}");
    let sweep = json!({"command": ["SET", "bw:{i}", "x"], "total": 200, "batch_sizes": [10, 200], "simulated_rtt_ms": 1, "simulated_bandwidth_mbps": 1, "repeats": 1});
    let (status, res) = api.post("/api/v1/sweep", &sweep).await;
    assert_eq!(status, 200, "{res}");
    let m = &res["model"];
    assert_eq!(m["bandwidth_mbps"], 1.0);
    assert!(m["bytes_per_cmd"].as_f64().unwrap() > 20.0 && m["wire_us_per_cmd"].as_f64().unwrap() > 160.0, "{m}");
    assert!(m["bdp_batch_size"].as_u64().is_some(), "{m}");
    assert!(res["points"].as_array().unwrap().iter().all(|p| p["achieved_rtt_ms"].as_f64().is_some()), "{res}");
}

/// `GET /api/v1/commands`: the server's own docs, with the table's arity.
#[tokio::test]
async fn commands_come_from_the_servers_docs() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let (status, res) = api.get("/api/v1/commands").await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["documented"], true);
    let commands = res["commands"].as_array().unwrap();
    let entry = |name: &str| commands.iter().find(|c| c["name"] == name).cloned().unwrap_or_else(|| panic!("{name} missing"));
    // What the server itself says.
    let resp::Value::Array(docs) = redis.cmd_str(&["COMMAND", "DOCS", "INCR"]) else { panic!() };
    let resp::Value::Array(fields) = &docs[1] else { panic!() };
    let summary = fields.chunks(2).find(|kv| kv[0] == resp::Value::Bulk(b"summary".to_vec())).map(|kv| kv[1].clone());
    let incr = entry("INCR");
    assert_eq!(summary, Some(resp::Value::Bulk(incr["summary"].as_str().unwrap().as_bytes().to_vec())));
    assert_eq!((incr["arity"].as_i64(), incr["syntax"].as_str()), (Some(2), Some("INCR key")));
    let set = entry("SET");
    assert_eq!(set["arity"], -3);
    // Valkey 8.1 adds `| IFEQ comparison-value` to the condition.
    assert!(set["syntax"].as_str().unwrap().starts_with("SET key value [NX | XX"), "{set}");
    assert_eq!(set["group"], "string");
    let kill = entry("CLIENT KILL");
    // A subcommand's own entry, in the server's words (Redis "Terminates open connections", …).
    assert!(!kill["summary"].as_str().unwrap().is_empty() && kill["syntax"].as_str().unwrap().starts_with("CLIENT KILL"), "{kill}");
    assert_eq!(entry("CLIENT")["container"], true);
    assert!(commands.len() > 200, "{}", commands.len());
    // Served again from memory, the same.
    let (_, again) = api.get("/api/v1/commands").await;
    assert_eq!(again, res);
}

#[tokio::test]
async fn text_input_inline_and_resp() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    // Inline lines with quotes, a blank line, CRLF, then a RESP multibulk.
    let text = "SET t \"a b\"\r\n\nAPPEND t '!'\n*2\r\n$3\r\nGET\r\n$1\r\nt\r\n";
    let (status, res) = api
        .post(
            "/api/v1/batch",
            &json!({"text": text, "mode": "sequential"}),
        )
        .await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(res["summary"]["commands"], 3);
    assert_eq!(reply_value(&res["results"][2]), "a b!");
    assert_eq!(
        redis.cmd_str(&["GET", "t"]),
        resp::Value::Bulk(b"a b!".to_vec())
    );
    // Escapes as sdssplitargs reads them: "\x00\xff" is two bytes.
    let (status, res) = api
        .post(
            "/api/v1/batch",
            &json!({"text": "SET bin \"\\x00\\xff\"\nSTRLEN bin"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        res["results"][1]["reply"],
        json!({"type": "integer", "value": 2})
    );
}

#[tokio::test]
async fn binary_values_round_trip_as_base64() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let body = json!({"commands": [
        ["SET", {"base64": "a2V5"}, {"base64": "/wAB"}],   // key "key", value ff 00 01
        ["GET", "key"],
        ["SET", "nopad", {"base64": "/wA"}],               // padding optional
        ["STRLEN", "nopad"],
    ]});
    let (status, res) = api.post("/api/v1/batch", &body).await;
    assert_eq!(status, 200, "{res}");
    assert_eq!(
        res["results"][1]["reply"],
        json!({"type": "bulk", "base64": "/wAB"})
    );
    assert_eq!(
        res["results"][3]["reply"],
        json!({"type": "integer", "value": 2})
    );
    assert_eq!(
        redis.cmd_str(&["GET", "key"]),
        resp::Value::Bulk(vec![0xff, 0x00, 0x01])
    );
}

#[tokio::test]
async fn compare_runs_once_per_mode_with_speedups() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let cmds: Vec<Json> = (0..20).map(|_| json!(["INCR", "counter"])).collect();
    let (status, res) = api
        .post(
            "/api/v1/compare",
            &json!({"commands": cmds, "simulated_rtt_ms": 2}),
        )
        .await;
    assert_eq!(status, 200, "{res}");
    assert!(res["note"].as_str().unwrap().contains("once per mode"));
    let runs = res["runs"].as_array().unwrap();
    let modes: Vec<&str> = runs.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["sequential", "pipeline", "transaction", "auto"]);
    assert_eq!(runs[0]["speedup_vs_sequential"], 1.0);
    assert_eq!(runs[0]["summary"]["round_trips"], 20);
    assert_eq!(runs[1]["summary"]["round_trips"], 1);
    // 20 round trips of 2 ms against 1: pipelining must win clearly.
    assert!(
        runs[1]["speedup_vs_sequential"].as_f64().unwrap() > 3.0,
        "{res}"
    );
    assert!(runs[0].get("results").is_none());
    // Side effects repeat: 4 runs × 20 INCR.
    assert_eq!(
        redis.cmd_str(&["GET", "counter"]),
        resp::Value::Bulk(b"80".to_vec())
    );

    // modes and include_results: sequential still runs first as the baseline.
    let body =
        json!({"commands": [["INCR", "c2"]], "modes": ["pipeline"], "include_results": true});
    let (status, res) = api.post("/api/v1/compare", &body).await;
    assert_eq!(status, 200);
    let runs = res["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["mode"], "pipeline");
    assert_eq!(
        runs[1]["results"][0]["reply"],
        json!({"type": "integer", "value": 2})
    );
}

#[tokio::test]
async fn sweep_measures_each_batch_size_and_deletes_its_keys() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    redis.cmd_str(&["SET", "sweep:5", "mine"]);
    redis.cmd_str(&["SET", "other", "x"]);
    let body =
        json!({"command": ["SET", "sweep:{i}", "v{i}"], "total": 200, "batch_sizes": [1, 10, 100]});
    let (status, res) = api.post("/api/v1/sweep", &body).await;
    assert_eq!(status, 200, "{res}");
    let points = res["points"].as_array().unwrap();
    let trips: Vec<u64> = points
        .iter()
        .map(|p| p["round_trips"].as_u64().unwrap())
        .collect();
    assert_eq!(trips, [200, 20, 2]);
    for p in points {
        assert_eq!(p["ok"], 200);
        assert!(p["commands_per_sec"].as_f64().unwrap() > 0.0);
        assert!(p["total_us"].as_u64().unwrap() > 0);
    }
    assert_eq!(
        res["cleanup"],
        json!({"keys": 200, "preexisting": 1, "deleted": 199})
    );
    // Only the keys the sweep created are gone; the one that existed stays (overwritten).
    assert_eq!(redis.cmd_str(&["DBSIZE"]), resp::Value::Integer(2));
    assert_eq!(
        redis.cmd_str(&["GET", "sweep:5"]),
        resp::Value::Bulk(b"v5".to_vec())
    );

    // A command without keys: nothing to clean.
    let (status, res) = api
        .post(
            "/api/v1/sweep",
            &json!({"command": ["PING"], "total": 10, "batch_sizes": [5]}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(res["cleanup"]["keys"], 0);
    assert_eq!(res["points"][0]["round_trips"], 2);
}

#[tokio::test]
async fn info_probes_and_not_found() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &["--max-commands", "1234"]);
    let (status, info) = api.get("/api/v1/info").await;
    assert_eq!(status, 200);
    let resp::Value::Bulk(server_info) = redis.cmd_str(&["INFO", "server"]) else {
        panic!()
    };
    let server_info = String::from_utf8(server_info).unwrap();
    let version = info["redis"]["version"].as_str().unwrap();
    // The server's own version, under its own name: `valkey_version:9.1.2`, not `redis_version:7.2.4`.
    let server = info["redis"]["server"].as_str().unwrap();
    assert!(["redis", "valkey", "redict"].contains(&server), "{info}");
    assert!(server_info.contains(&format!("{server}_version:{version}\r\n")), "{info} {server_info}");
    assert_eq!(info["redis"]["mode"], "standalone");
    assert_eq!(info["redis"]["source"], "configured");
    assert_eq!(info["redis"]["reachable"], true);
    assert_eq!(info["limits"]["max_commands"], 1234);
    assert_eq!(info["defaults"]["mode"], "pipeline");
    assert_eq!(info["defaults"]["batch_size"], 1000);
    // The refused commands, from the server's own table (Table::refused_commands).
    let refused = info["refused"].as_array().expect("refused");
    let entry = |name: &str| refused.iter().find(|r| r["command"] == name).cloned();
    let select = entry("SELECT").expect("SELECT refused");
    assert_eq!(select["reason"], "connection");
    assert_eq!(select["modes"], json!(["sequential", "pipeline", "transaction", "auto"]));
    assert_eq!(entry("MULTI").expect("MULTI refused")["modes"], json!(["transaction"]));
    assert_eq!(entry("CONFIG SET").expect("CONFIG SET refused")["reason"], "admin");
    assert!(entry("SET").is_none() && entry("CLIENT LIST").is_none() && entry("BLPOP").is_none());
    // What the list says is what a batch gets.
    let (status, err) = api.post("/api/v1/batch", &json!({"text": "SELECT 1"})).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["code"], "refused_command");
    assert_eq!(err["error"]["message"], format!("text, line 1: {}", select["message"].as_str().unwrap()));

    assert_eq!(api.get("/healthz").await.0, 200);
    // The root's /openapi.json leads to the API's document, not the page.
    let req = axum::http::Request::get("/openapi.json").body(axum::body::Body::empty()).unwrap();
    let (status, headers, _) = api.respond(req).await;
    assert_eq!((status.as_u16(), headers.get("location").and_then(|l| l.to_str().ok())), (308, Some("/api/v1/openapi.json")));
    let (status, ready) = api.get("/readyz").await;
    assert_eq!((status, ready["status"].as_str()), (200, Some("ready")));

    let (status, err) = api.get("/api/v1/nope").await;
    assert_eq!(status, 404);
    assert_eq!(err["error"]["code"], "not_found");
}

#[tokio::test]
async fn web_files_are_served_or_explained() {
    let redis = RedisServer::start();
    let missing = tempfile::tempdir().unwrap();
    let dir = missing.path().join("dist");
    let api = App::with_web_dir(&redis.url, &[], dir.clone());
    let (status, ctype, body) = api.get_text("/").await;
    assert_eq!(status, 404);
    assert!(ctype.starts_with("text/html"));
    assert!(
        body.contains("npm run build") && body.contains("--web-dir"),
        "{body}"
    );

    // Built while the server runs: served at once, client routes get index.html.
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::write(
        dir.join("index.html"),
        "<!doctype html><title>playground</title>",
    )
    .unwrap();
    std::fs::write(dir.join("assets/app.js"), "console.log(1)").unwrap();
    let (status, _, body) = api.get_text("/").await;
    assert_eq!(
        (status, body.as_str()),
        (200, "<!doctype html><title>playground</title>")
    );
    let (status, ctype, body) = api.get_text("/assets/app.js").await;
    assert_eq!((status, body.as_str()), (200, "console.log(1)"));
    assert!(ctype.contains("javascript"), "{ctype}");
    let (status, _, body) = api.get_text("/lessons/3").await;
    assert_eq!(status, 200);
    assert!(body.contains("playground"));
    // The API is not shadowed by the files.
    assert_eq!(api.get("/api/v1/info").await.0, 200);
}

/// The OpenAPI document describes the endpoints with examples, real
/// responses carry exactly the properties their schemas list, and
/// `pipelab openapi` prints the same document.
#[tokio::test]
async fn openapi_document_matches_real_responses() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let (status, doc) = api.get("/api/v1/openapi.json").await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    // `pipelab openapi` prints the same document (the page's TypeScript
    // types are generated from it at build time).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .arg("openapi")
        .output()
        .unwrap();
    assert!(out.status.success(), "pipelab openapi: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(serde_json::from_slice::<Json>(&out.stdout).unwrap(), doc, "pipelab openapi");
    for (path, method) in [
        ("/api/v1/batch", "post"),
        ("/api/v1/compare", "post"),
        ("/api/v1/sweep", "post"),
        ("/api/v1/info", "get"),
        ("/api/v1/commands", "get"),
        ("/api/v1/openapi.json", "get"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} missing"
        );
    }
    let schemas = &doc["components"]["schemas"];
    for name in [
        "BatchRequest",
        "CompareRequest",
        "SweepRequest",
        "BatchResponse",
        "ErrorBody",
        "CompareResponse",
        "SweepResponse",
        "InfoResponse",
    ] {
        assert!(
            schemas[name]["example"].is_object(),
            "{name} has no example"
        );
    }
    // Enums list every value the executor writes (a transaction whose
    // EXEC reply was lost is `unknown`).
    assert_eq!(
        schemas["TransactionStatus"]["enum"],
        json!(["committed", "aborted", "watch_conflict", "unknown"])
    );
    assert_eq!(schemas["Status"]["enum"], json!(["ok", "error", "not_sent", "unknown"]));
    assert_eq!(schemas["Mode"]["enum"], json!(["sequential", "pipeline", "transaction", "auto"]));
    assert_eq!(schemas["OnError"]["enum"], json!(["continue", "stop"]));
    assert_eq!(schemas["ResultsFilter"]["enum"], json!(["all", "errors", "none"]));
    // Response examples follow their own schemas.
    for name in [
        "BatchResponse",
        "CompareResponse",
        "SweepResponse",
        "InfoResponse",
        "ErrorBody",
    ] {
        let schema_ref = json!({"$ref": format!("#/components/schemas/{name}")});
        check_against_schema(
            &doc,
            &schema_ref,
            &schemas[name]["example"],
            &format!("{name} example"),
        );
    }
    assert!(doc["paths"]["/api/v1/compare"]["post"]["description"]
        .as_str()
        .unwrap()
        .contains("once per mode"));

    // The request examples are valid requests.
    for (path, name) in [
        ("/api/v1/batch", "BatchRequest"),
        ("/api/v1/compare", "CompareRequest"),
        ("/api/v1/sweep", "SweepRequest"),
    ] {
        let mut example = schemas[name]["example"].clone();
        if name == "SweepRequest" {
            example["total"] = json!(100);
        }
        let (status, res) = api.post(path, &example).await;
        assert_eq!(status, 200, "{name} example: {res}");
        let schema_name = match name {
            "BatchRequest" => "BatchResponse",
            "CompareRequest" => "CompareResponse",
            _ => "SweepResponse",
        };
        check_against_schema(
            &doc,
            &json!({"$ref": format!("#/components/schemas/{schema_name}")}),
            &res,
            schema_name,
        );
    }
    let (_, res) = api
        .post(
            "/api/v1/batch",
            &json!({"commands": [["SET", "t", "1"], ["GET", "t"]], "mode": "transaction"}),
        )
        .await;
    check_against_schema(
        &doc,
        &json!({"$ref": "#/components/schemas/BatchResponse"}),
        &res,
        "transaction",
    );
    let (_, info) = api.get("/api/v1/info").await;
    check_against_schema(
        &doc,
        &json!({"$ref": "#/components/schemas/InfoResponse"}),
        &info,
        "info",
    );
    let (_, commands) = api.get("/api/v1/commands").await;
    check_against_schema(&doc, &json!({"$ref": "#/components/schemas/CommandsResponse"}), &commands, "commands");
    let (_, delayed) = api.post("/api/v1/batch", &json!({"commands": [["PING"]], "simulated_rtt_ms": 0.2, "simulated_bandwidth_mbps": 100})).await;
    check_against_schema(&doc, &json!({"$ref": "#/components/schemas/BatchResponse"}), &delayed, "delayed");
    let (_, err) = api.post("/api/v1/batch", &json!({"commands": []})).await;
    check_against_schema(
        &doc,
        &json!({"$ref": "#/components/schemas/ErrorBody"}),
        &err,
        "error",
    );

    // The check has teeth: an undocumented property, or a missing required one, fails it.
    let batch_ref = json!({"$ref": "#/components/schemas/BatchResponse"});
    let mut extra = res.clone();
    extra["summary"]["undocumented"] = json!(1);
    let caught =
        std::panic::catch_unwind(|| check_against_schema(&doc, &batch_ref, &extra, "extra"));
    assert!(
        caught.is_err(),
        "an undocumented property passed the schema check"
    );
    let mut unlisted = res.clone();
    unlisted["results"][0]["status"] = json!("maybe");
    let caught =
        std::panic::catch_unwind(|| check_against_schema(&doc, &batch_ref, &unlisted, "unlisted"));
    assert!(caught.is_err(), "a status the schema does not list passed the schema check");
    let mut missing = res.clone();
    missing["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("index");
    let caught =
        std::panic::catch_unwind(|| check_against_schema(&doc, &batch_ref, &missing, "missing"));
    assert!(
        caught.is_err(),
        "a missing required property passed the schema check"
    );
}

/// Every object property in `value` is declared by `schema`, every
/// required property is present and every enum value is listed (following
/// $ref, oneOf/anyOf, arrays).
/// Reply JSON values (schema `Reply`) are checked only for their `type`.
fn check_against_schema(doc: &Json, schema: &Json, value: &Json, at: &str) {
    let schema = resolve(doc, schema);
    if let Some(alts) = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Json::as_array)
    {
        let non_null: Vec<&Json> = alts.iter().filter(|a| a["type"] != "null").collect();
        if value.is_null() {
            return;
        }
        if non_null.len() == 1 {
            return check_against_schema(doc, non_null[0], value, at);
        }
        return; // untagged unions (arguments): shape checked elsewhere
    }
    if let Some(r) = schema.get("$ref").and_then(Json::as_str) {
        if r.ends_with("/Reply") {
            assert!(
                value["type"].is_string(),
                "{at}: reply without type: {value}"
            );
            return;
        }
    }
    match value {
        Json::Object(map) => {
            let props = schema["properties"]
                .as_object()
                .unwrap_or_else(|| panic!("{at}: schema has no properties: {schema}"));
            for (k, v) in map {
                let prop = props
                    .get(k)
                    .unwrap_or_else(|| panic!("{at}: property {k} is not in the schema"));
                check_against_schema(doc, prop, v, &format!("{at}.{k}"));
            }
            for req in schema["required"].as_array().into_iter().flatten() {
                assert!(
                    map.contains_key(req.as_str().unwrap()),
                    "{at}: required {req} missing in {value}"
                );
            }
        }
        Json::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check_against_schema(doc, item_schema, v, &format!("{at}[{i}]"));
                }
            }
        }
        _ => {
            if let Some(names) = schema.get("enum").and_then(Json::as_array) {
                assert!(names.contains(value), "{at}: {value} is not one of {names:?}");
            }
        }
    }
}

fn resolve<'a>(doc: &'a Json, schema: &'a Json) -> &'a Json {
    match schema.get("$ref").and_then(Json::as_str) {
        Some(r) if !r.ends_with("/Reply") => {
            let name = r.rsplit('/').next().unwrap();
            resolve(doc, &doc["components"]["schemas"][name])
        }
        _ => schema,
    }
}

#[tokio::test]
async fn wrong_method_and_unknown_path_get_the_error_shape() {
    let redis = RedisServer::start();
    let api = App::start(&redis.url, &[]);
    let (status, body) = api.get("/api/v1/batch").await;
    assert_eq!(status, 405);
    assert_eq!(body["error"]["code"], "method_not_allowed");
    assert!(body["error"]["message"].as_str().unwrap().contains("GET is not allowed on /api/v1/batch"), "{body}");
    let (status, body) = api.get("/api/v1/nope").await;
    assert_eq!(status, 404);
    assert!(body["error"]["message"].as_str().unwrap().contains("/api/v1/nope"), "{body}");
}
