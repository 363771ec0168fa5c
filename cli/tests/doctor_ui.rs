//! `pipelab doctor --ui`'s JSON API (`pipelab_doctor::page::router`) through
//! tower's `oneshot`, over a doctor relaying a real redis-py client to a
//! real redis-server in the same process. The think time is a generous 1 s,
//! as in `tests/doctor.rs`, so that a loaded machine does not break runs.

#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::RedisServer;
use pipelab_engine::conn::RedisTarget;
use pipelab_doctor::{self as doctor, Doctor, Rule};
use pipelab_doctor::page as ui;
use serde_json::Value as Json;
use tower::ServiceExt;

async fn get(router: &axum::Router, uri: &str) -> (StatusCode, Json) {
    let res = router.clone().oneshot(Request::get(uri).body(Body::empty()).unwrap()).await.unwrap();
    let status = res.status();
    let body = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{uri}: not JSON ({e}): {}", String::from_utf8_lossy(&body))))
}

/// `missed` entries of `SET loop:*` alone.
fn loops(summary: &Json) -> Vec<&Json> {
    summary["missed"].as_array().unwrap().iter().filter(|m| m["description"].as_str().unwrap().starts_with("SET loop:* ×")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ui_api_shows_a_redis_py_loop_while_it_runs_and_after() {
    let redis = RedisServer::start();
    let target = RedisTarget::parse(&redis.url).unwrap();
    let keys = doctor::key_table(&target, Duration::from_secs(5)).await.expect("COMMAND");
    let doc = Arc::new(Doctor::new(Rule { think_time_us: 1_000_000, min_run: 3, rtt_ms: 2.0 }, Arc::new(keys), 16, Box::new(|_| {})));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(doctor::serve(listener, target, Duration::from_secs(5), pipelab_engine::delay::Link::default(), doc.clone()));
    let router = ui::router(ui::UiState { doctor: doc.clone(), playground_url: "http://127.0.0.1:8080/".into(), page: std::path::PathBuf::from("/nonexistent").into() });

    // 200 sets, then the connection stays open until stdin closes.
    let script = "import sys, redis\nr = redis.Redis(port=int(sys.argv[1]))\nfor i in range(200): r.set(f'loop:{i}', 'x')\nprint('done', flush=True)\nsys.stdin.read()\nr.close()";
    let mut py = Command::new("python3").args(["-c", script, &port.to_string()]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("python3");
    let mut line = String::new();
    let mut out = BufReader::new(py.stdout.take().unwrap());
    tokio::task::block_in_place(|| out.read_line(&mut line)).unwrap();
    assert_eq!(line.trim(), "done", "redis-py did not finish its loop");

    // While the connection is open: the run is going on (not ended).
    let (status, s) = get(&router, "/api/doctor/summary").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(s["playground_url"], "http://127.0.0.1:8080/");
    assert_eq!(s["summary"]["missed_pipelines"], 0, "nothing ended yet: {s}");
    let going = loops(&s);
    assert_eq!(going.len(), 1, "{s}");
    assert_eq!(going[0]["going_on"], true);
    assert_eq!(going[0]["commands"], 200);
    assert_eq!(going[0]["saving_ms"], 199.0 * 2.0);
    // The playground batch: the pattern with numbered keys; SET's arity (-3) asks for a value.
    let example: Vec<&str> = going[0]["example"].as_str().unwrap().lines().collect();
    assert_eq!(example.len(), 200);
    assert_eq!((example[0], example[199]), ("SET loop:0 1", "SET loop:199 1"));
    let conn = &s["summary"]["recent_connections"][0];
    assert_eq!(conn["recent_flights"], Json::Array(vec![]), "flights come from /api/doctor/flights");
    let id = conn["connection"].as_u64().unwrap();

    // Flights: the ring keeps the last 64, oldest first; `since` gives the later ones only.
    let (status, f) = get(&router, &format!("/api/doctor/flights?connection={id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(f["open"], true);
    let flights = f["recent_flights"].as_array().unwrap();
    assert_eq!(flights.len(), 64);
    assert!(flights.iter().all(|f| f["commands"] == 1 && f["pattern"] == "SET loop:*"), "{f}");
    let starts: Vec<u64> = flights.iter().map(|f| f["start_us"].as_u64().unwrap()).collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]));
    let (_, later) = get(&router, &format!("/api/doctor/flights?connection={id}&since={}", starts[59])).await;
    assert_eq!(later["recent_flights"].as_array().unwrap().len(), 4);
    // No value is kept: the bytes `x` of the SETs appear nowhere.
    assert!(!f.to_string().contains("\"x\"") && !s.to_string().contains("\"x\""));

    // Bad queries name the field; unknown connections and endpoints are 404.
    for (uri, status, field) in [
        ("/api/doctor/flights", StatusCode::BAD_REQUEST, Some("connection")),
        ("/api/doctor/flights?connection=abc", StatusCode::BAD_REQUEST, Some("connection")),
        ("/api/doctor/flights?connection=1&since=-5", StatusCode::BAD_REQUEST, Some("since")),
        ("/api/doctor/flights?connection=1&limit=5", StatusCode::BAD_REQUEST, Some("limit")),
        ("/api/doctor/flights?connection=999", StatusCode::NOT_FOUND, Some("connection")),
        ("/api/doctor/nope", StatusCode::NOT_FOUND, None),
    ] {
        let (got, body) = get(&router, uri).await;
        assert_eq!(got, status, "{uri}: {body}");
        assert_eq!(body["error"]["field"].as_str(), field, "{uri}: {body}");
    }
    // No page built in --web-dir: a 404 that says how to build it.
    let res = router.clone().oneshot(Request::get("/").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let body = axum::body::to_bytes(res.into_body(), usize::MAX).await.unwrap();
    assert!(String::from_utf8_lossy(&body).contains("scripts/build-web.sh"));

    // The client leaves: the run ends, and the closed connection stays listed.
    drop(py.stdin.take());
    tokio::task::block_in_place(|| py.wait()).unwrap();
    let mut ended = Json::Null;
    for _ in 0..100 {
        ended = get(&router, "/api/doctor/summary").await.1;
        if ended["summary"]["missed_pipelines"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let done = loops(&ended);
    assert_eq!((done.len(), &done[0]["going_on"], &done[0]["commands"]), (1, &Json::Bool(false), &Json::from(200)), "{ended}");
    let (status, f) = get(&router, &format!("/api/doctor/flights?connection={id}")).await;
    assert_eq!((status, &f["open"]), (StatusCode::OK, &Json::Bool(false)));
    assert_eq!(f["recent_flights"].as_array().unwrap().len(), 64);
}

/// `pipelab doctor --ui`'s "open in playground" goes where `pipelab serve`
/// listens in the same environment (`PIPELAB_LISTEN`), `--playground-url`
/// overrides it, and a value that is no URL is refused by name (exit 2).
#[test]
fn the_playground_link_follows_where_serve_listens() {
    let redis = common::RedisServer::start();
    let summary = |env_listen: Option<&str>, flag: Option<&str>| -> Json {
        let ui = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pipelab"));
        cmd.args(["doctor", "--listen", "127.0.0.1:0", "--upstream", &redis.url, "--json", "--ui", &ui.to_string()]);
        cmd.env_remove("PIPELAB_LISTEN").env_remove("PIPELAB_PLAYGROUND_URL").stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
        if let Some(l) = env_listen {
            cmd.env("PIPELAB_LISTEN", l);
        }
        if let Some(f) = flag {
            cmd.args(["--playground-url", f]);
        }
        let mut child = cmd.spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let body = loop {
            let got = std::net::TcpStream::connect(ui).ok().and_then(|mut s| {
                use std::io::{Read, Write};
                s.write_all(b"GET /api/doctor/summary HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
                let mut out = String::new();
                s.read_to_string(&mut out).ok()?;
                Some(out.split_once("\r\n\r\n")?.1.to_string())
            });
            match got {
                Some(b) => break b,
                None if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
                None => panic!("the doctor's page did not answer within 30 s"),
            }
        };
        let _ = child.kill();
        let _ = child.wait();
        serde_json::from_str(&body).unwrap()
    };
    assert_eq!(summary(None, None)["playground_url"], "http://127.0.0.1:8080/");
    assert_eq!(summary(Some("0.0.0.0:9123"), None)["playground_url"], "http://127.0.0.1:9123/");
    assert_eq!(summary(Some("0.0.0.0:9123"), Some("http://10.0.0.5:7000/"))["playground_url"], "http://10.0.0.5:7000/");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(["doctor", "--listen", "127.0.0.1:0", "--upstream", &redis.url, "--playground-url", "localhost:8080"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--playground-url") && err.contains("http://127.0.0.1:8080/"), "{err}");
}
