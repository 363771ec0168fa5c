//! `POST /api/v1/batches` (results streamed as NDJSON lines while the
//! batch runs) and `POST /api/v1/batches/{id}/cancel`: a long batch shows
//! results long before it ends, and a cancel ends it at once with true
//! statuses — what Redis answered `ok`, the command in flight `unknown`,
//! the rest `not_sent` — checked against Redis's own counter.

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use api_harness::{Pipelab, RedisServer};
use serde_json::{json, Value as Json};

/// Reads NDJSON lines off a streamed response.
struct Lines {
    res: reqwest::Response,
    buf: Vec<u8>,
    /// The last line read, as sent.
    last: String,
}

impl Lines {
    async fn next(&mut self) -> Option<Json> {
        loop {
            if let Some(eol) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=eol).collect();
                self.last = String::from_utf8_lossy(&line).into_owned();
                return Some(serde_json::from_slice(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}")));
            }
            match self.res.chunk().await.expect("the stream goes on") {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None => return None,
            }
        }
    }

    /// Reads up to the end line, each result into `results`: the end line.
    async fn rest(&mut self, results: &mut Vec<Json>) -> Json {
        loop {
            let line = self.next().await.expect("an end line");
            match line["type"].as_str().unwrap() {
                "results" => results.extend(line["results"].as_array().unwrap().iter().cloned()),
                "end" => return line,
                other => panic!("unexpected line {other}: {line}"),
            }
        }
    }
}

async fn start(api: &Pipelab, body: &Json) -> Lines {
    let res = reqwest::Client::new().post(format!("{}/api/v1/batches", api.base)).json(body).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/x-ndjson");
    Lines { res, buf: Vec::new(), last: String::new() }
}

/// The integer in `key` (0 if it does not exist).
fn counted(redis: &RedisServer, key: &str) -> usize {
    match redis.cmd_str(&["GET", key]) {
        resp::Value::Bulk(b) => String::from_utf8(b).unwrap().parse().unwrap(),
        resp::Value::Null => 0,
        other => panic!("GET {key}: {other:?}"),
    }
}

fn statuses(results: &[Json]) -> Vec<&str> {
    results.iter().map(|r| r["status"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_long_batch_streams_its_results_and_a_cancel_ends_it_with_true_statuses() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    let n = 1000;
    // 1,000 sequential INCRs at 10 ms: at least 10 s.
    let cmds: Vec<Json> = (0..n).map(|_| json!(["INCR", "live:c"])).collect();
    let t0 = Instant::now();
    let mut lines = start(&api, &json!({"commands": cmds, "mode": "sequential", "simulated_rtt_ms": 10})).await;
    let first = lines.next().await.unwrap();
    assert_eq!(first["type"], "start");
    assert_eq!(first["commands"], n);
    let id = first["batch_id"].as_str().unwrap().to_string();
    // `<node>.<32 hex digits>` (the server under test is a process of its own, its node id the host name's).
    assert!(pipelab_engine::node::of(&id).is_some() && id.split_once('.').is_some_and(|(_, random)| random.len() == 32), "{id}");
    assert_eq!(first["cancel"], format!("/api/v1/batches/{id}/cancel"));

    let mut results: Vec<Json> = Vec::new();
    while results.len() < 20 {
        let line = lines.next().await.unwrap();
        assert_eq!(line["type"], "results", "{line}");
        results.extend(line["results"].as_array().unwrap().iter().cloned());
    }
    let seen_at = t0.elapsed();
    assert!(seen_at < Duration::from_secs(8), "20 results took {seen_at:?} of a batch of at least 10 s");
    assert!(statuses(&results).iter().all(|s| *s == "ok"));
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["index"], i, "results come in index order, 0-based");
    }

    let cancelled_at = Instant::now();
    let (status, body) = api.post(&format!("/api/v1/batches/{id}/cancel"), &json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"batch_id": id, "cancelled": true}));
    let end = lines.rest(&mut results).await;
    let took = cancelled_at.elapsed();
    assert!(lines.next().await.is_none(), "nothing after the end line");
    // Within 100 ms on an idle machine; generous here (loaded CI), yet far
    // less than the ~9 s the batch had left.
    assert!(took < Duration::from_secs(3), "the cancel took {took:?}");
    eprintln!("cancel to end line: {took:?} (batch started {:?} before)", cancelled_at - t0);

    assert_eq!(results.len(), n, "every command has a result");
    let st = statuses(&results);
    let ok = st.iter().take_while(|s| **s == "ok").count();
    let unknown = st[ok..].iter().take_while(|s| **s == "unknown").count();
    assert!(unknown <= 1, "sequential: at most the one command in flight is unknown: {:?}", &st[ok..ok + 3]);
    assert!(st[ok + unknown..].iter().all(|s| *s == "not_sent"), "the rest was not sent");
    assert!(ok < n - 100, "cut early: {ok} ok");
    let summary = &end["summary"];
    assert_eq!(summary["ok"], ok);
    assert_eq!(summary["unknown"], unknown);
    assert_eq!(summary["not_sent"], n - ok - unknown);
    assert!(end["connection_error"].as_str().unwrap().contains("cancelled"), "{end}");
    // True statuses: Redis counted every `ok` INCR, and the unknown one at most once more.
    let counter = counted(&redis, "live:c");
    assert!(counter == ok || counter == ok + unknown, "Redis counted {counter}, the report says {ok} ok + {unknown} unknown");

    // The batch is over: its id no longer cancels anything.
    let (status, body) = api.post(&format!("/api/v1/batches/{id}/cancel"), &json!({})).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "not_found");
}

#[tokio::test]
async fn a_result_that_no_other_follows_soon_is_not_held_back() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    let body = json!({"commands": [["INCR", "live:n"], ["BLPOP", "live:list", "60"], ["INCR", "live:n"]], "mode": "sequential"});
    let mut lines = start(&api, &body).await;
    assert_eq!(lines.next().await.unwrap()["type"], "start");
    // The first INCR's result comes while BLPOP waits: nothing but the push
    // below ends that wait before a minute.
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next())
        .await
        .expect("the INCR's result while BLPOP still waits")
        .unwrap();
    assert_eq!(line["type"], "results", "{line}");
    assert_eq!(line["results"].as_array().unwrap().len(), 1, "{line}");
    assert_eq!(line["results"][0]["index"], 0);
    assert_eq!(line["results"][0]["status"], "ok");
    redis.cmd_str(&["RPUSH", "live:list", "x"]);
    let mut results = Vec::new();
    let end = lines.rest(&mut results).await;
    assert_eq!(statuses(&results), ["ok", "ok"]);
    assert_eq!(end["summary"]["ok"], 3, "{end}");
    // Its members in the documented order, the summary's as in `POST /batch`.
    assert!(lines.last.starts_with(r#"{"type":"end","summary":{"mode":"sequential","#), "{}", lines.last);
    assert!(lines.last.trim_end().ends_with(r#","transaction":null,"connection_error":null}"#), "{}", lines.last);
    assert_eq!(counted(&redis, "live:n"), 2);
}

#[tokio::test]
async fn a_pipeline_cancelled_in_flight_reports_its_chunk_unknown_and_a_bad_batch_is_refused_before_any_line() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    // Chunks of 50 at 300 ms: the cancel lands while a chunk awaits its replies.
    let cmds: Vec<Json> = (0..500).map(|_| json!(["INCR", "live:p"])).collect();
    let mut lines =
        start(&api, &json!({"commands": cmds, "mode": "pipeline", "batch_size": 50, "simulated_rtt_ms": 300})).await;
    let id = lines.next().await.unwrap()["batch_id"].as_str().unwrap().to_string();
    let mut results: Vec<Json> = Vec::new();
    while results.is_empty() {
        results.extend(lines.next().await.unwrap()["results"].as_array().unwrap().iter().cloned());
    }
    let (status, _) = api.post(&format!("/api/v1/batches/{id}/cancel"), &json!({})).await;
    assert_eq!(status, 200);
    let end = loop {
        let line = lines.next().await.unwrap();
        if line["type"] == "end" {
            break line;
        }
        results.extend(line["results"].as_array().unwrap().iter().cloned());
    };
    let st = statuses(&results);
    assert_eq!(st.len(), 500);
    let ok = st.iter().filter(|s| **s == "ok").count();
    let unknown = st.iter().filter(|s| **s == "unknown").count();
    assert_eq!(ok % 50, 0, "whole chunks answered: {ok}");
    assert!(unknown == 50 || unknown == 0, "the chunk in flight is unknown: {unknown}");
    assert_eq!(end["summary"]["not_sent"], 500 - ok - unknown);
    let counter = counted(&redis, "live:p");
    assert!((ok..=ok + unknown).contains(&counter), "Redis counted {counter}");

    // Refused before anything runs: the usual 4xx JSON error, no stream.
    let (status, body) = api.post("/api/v1/batches", &json!({"commands": [["SELECT", "1"]]})).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("SELECT"), "{body}");
}

#[tokio::test]
async fn the_openapi_document_describes_live_batches_and_their_cancel() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    let (status, doc) = api.get("/api/v1/openapi.json").await;
    assert_eq!(status, 200);
    let post = &doc["paths"]["/api/v1/batches"]["post"];
    assert!(post["responses"]["200"]["content"]["application/x-ndjson"].is_object(), "{post}");
    assert_eq!(post["requestBody"]["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/BatchRequest");
    let cancel = &doc["paths"]["/api/v1/batches/{id}/cancel"]["post"];
    assert!(cancel["responses"]["200"].is_object() && cancel["responses"]["404"].is_object(), "{cancel}");
    let start_line = &doc["components"]["schemas"]["StartLine"];
    let mut names: Vec<&str> = start_line["properties"].as_object().unwrap().keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["batch_id", "cancel", "commands", "type"]);

    // The start line a batch really sends has exactly those members.
    let mut lines = start(&api, &json!({"text": "PING\nPING"})).await;
    let line = lines.next().await.unwrap();
    let mut got: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    got.sort();
    assert_eq!(got, names);
    while lines.next().await.is_some() {}
}
