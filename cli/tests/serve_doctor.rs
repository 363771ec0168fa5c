//! `pipelab serve --doctor-listen`: the real binary with its own
//! redis-server, a plain RESP client writing a loop of SETs through the
//! doctor's port (one reply awaited per command), and the doctor's summary
//! read through the API, behind its tokens; the sandbox refuses the flag.

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use api_harness::{serve_command, Pipelab, RedisServer};
use serde_json::{json, Value as Json};

const TOKEN: &str = "doctor-test-token";

/// GET `path` with the token (or without): status and JSON body.
async fn get(api: &Pipelab, path: &str, token: bool) -> (u16, Json) {
    let mut req = reqwest::Client::new().get(format!("{}{path}", api.base));
    if token {
        req = req.bearer_auth(TOKEN);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {text}")))
}

/// Writes `argv` as a RESP command and reads its one-line reply.
fn command(conn: &mut BufReader<TcpStream>, argv: &[&str]) -> String {
    let mut out = format!("*{}\r\n", argv.len());
    for a in argv {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    conn.get_mut().write_all(out.as_bytes()).unwrap();
    let mut line = String::new();
    conn.read_line(&mut line).unwrap();
    line.trim_end().to_string()
}

fn connect(addr: &str) -> BufReader<TcpStream> {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    BufReader::new(s)
}

/// The `SET user:*` entries of a summary's `missed`.
fn user_sets(s: &Json) -> Vec<Json> {
    s["missed"].as_array().unwrap().iter().filter(|m| m["pattern"] == "SET user:*").cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sequential_loop_through_the_doctor_port_is_a_missed_pipeline_in_the_api() {
    let (cmd, port) = serve_command(&["--doctor-listen", "127.0.0.1:0", "--doctor-rtt", "1", "--token", TOKEN]);
    let api = Pipelab::spawn(cmd, port);
    let (status, info) = get(&api, "/api/v1/info", true).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["doctor"]["rtt_ms"], 1.0, "{info}");
    let addr = info["doctor"]["listen"].as_str().unwrap().to_string();
    assert!(addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"), "the port bound, not the one asked: {addr}");

    // The loop: 200 SETs, each written once the previous reply came back.
    let mut app = connect(&addr);
    for i in 0..200 {
        assert_eq!(command(&mut app, &["SET", &format!("user:{i}"), "x"]), "+OK", "SET user:{i}");
    }
    // As the batches' user (the embedded Redis's ACL), not its default one.
    let mut other = connect(&addr);
    assert!(command(&mut other, &["CONFIG", "GET", "maxmemory"]).starts_with("-NOPERM"), "CONFIG is not the batches' to run");
    drop(other);

    // While the connection is open the run is going on, at the RTT asked for.
    let (status, s) = get(&api, "/api/v1/doctor/summary?rtt_ms=2", true).await;
    assert_eq!(status, 200, "{s}");
    let going = user_sets(&s);
    assert_eq!(going.len(), 1, "{s}");
    assert_eq!(going[0]["going_on"], true, "{s}");
    assert_eq!(going[0]["commands"], 200, "{s}");
    assert_eq!(going[0]["description"], "SET user:* ×200 sequential", "{s}");
    assert_eq!((going[0]["rtt_ms"].as_f64(), going[0]["saving_ms"].as_f64()), (Some(2.0), Some(199.0 * 2.0)), "{s}");
    assert!(!going[0]["why"].as_str().unwrap().is_empty(), "why it was judged independent: {s}");
    assert_eq!(s["summary"]["rtt_ms"], 2.0);
    assert!(s["summary"]["commands"].as_u64().unwrap() >= 200, "{s}");
    let id = s["summary"]["recent_connections"].as_array().unwrap().iter().find(|c| c["commands"] == 200).expect("the loop's connection")["connection"].as_u64().unwrap();
    let (status, f) = get(&api, &format!("/api/v1/doctor/flights?connection={id}"), true).await;
    assert_eq!(status, 200, "{f}");
    assert!(f["recent_flights"].as_array().unwrap().iter().all(|f| f["commands"] == 1 && f["pattern"] == "SET user:*"), "{f}");

    // Closed, the run ends: one missed pipeline, its saving at --doctor-rtt.
    drop(app);
    let deadline = Instant::now() + Duration::from_secs(20);
    let ended = loop {
        let (_, s) = get(&api, "/api/v1/doctor/summary", true).await;
        if s["summary"]["missed_pipelines"] == 1 {
            break s;
        }
        assert!(Instant::now() < deadline, "the run did not end: {s}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let m = user_sets(&ended);
    assert_eq!((m.len(), &m[0]["going_on"], &m[0]["commands"]), (1, &json!(false), &json!(200)), "{ended}");
    assert_eq!((ended["summary"]["saving_ms"].as_f64(), m[0]["saving_ms"].as_f64()), (Some(199.0), Some(199.0)), "{ended}");

    // The SETs reached the Redis the API runs batches on.
    let res = reqwest::Client::new()
        .post(format!("{}/api/v1/batch", api.base))
        .bearer_auth(TOKEN)
        .json(&json!({"commands": [["GET", "user:199"]]}))
        .send()
        .await
        .unwrap();
    let body: Json = res.json().await.unwrap();
    assert_eq!(body["results"][0]["reply"]["value"], "x", "{body}");

    // Behind the same rules as every route: the token, fields named, JSON 404/405.
    assert_eq!(get(&api, "/api/v1/doctor/summary", false).await.0, 401);
    let (status, e) = get(&api, "/api/v1/doctor/summary?rtt_ms=2000", true).await;
    assert_eq!((status, &e["error"]["field"]), (400, &json!("rtt_ms")), "{e}");
    let (status, e) = get(&api, "/api/v1/doctor/flights?connection=x", true).await;
    assert_eq!((status, &e["error"]["field"]), (400, &json!("connection")), "{e}");
    let (status, e) = get(&api, "/api/v1/doctor/nothing", true).await;
    assert_eq!(status, 404, "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("/api/v1/doctor/summary"), "{e}");
    let res = reqwest::Client::new().post(format!("{}/api/v1/doctor/summary", api.base)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 405);
    let e: Json = res.json().await.unwrap();
    assert_eq!(e["error"]["code"], "method_not_allowed", "{e}");
}

/// Without the flag: no `doctor` in /info, and the routes say how to get one.
#[tokio::test]
async fn without_the_flag_no_doctor_is_listed_or_served() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    let (status, info) = api.get("/api/v1/info").await;
    assert_eq!(status, 200);
    assert!(info.get("doctor").is_none(), "{info}");
    let (status, e) = api.get("/api/v1/doctor/summary").await;
    assert_eq!(status, 404, "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("--doctor-listen"), "{e}");
}

/// `pipelab serve ARGS` must exit at once: its status and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let (mut cmd, _) = serve_command(args);
    let mut child = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).stdin(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pipelab serve {args:?} started instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The public sandbox never opens a raw Redis port; nor does a public address without consent.
#[test]
fn the_sandbox_and_an_open_address_refuse_the_doctor_at_start() {
    let (code, err) = refused(&["--sandbox", "--doctor-listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--doctor-listen") && err.contains("--sandbox"), "{err}");
    let (code, err) = refused(&["--doctor-listen", "0.0.0.0:0", "--redis", "redis://127.0.0.1:1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--doctor-listen") && err.contains("--allow-unauthenticated"), "{err}");
    // And --help says so.
    let help = Command::new(env!("CARGO_BIN_EXE_pipelab")).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--doctor-listen <ADDR>") && help.contains("refused with --sandbox"), "{help}");
}
