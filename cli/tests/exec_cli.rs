//! `pipelab run` end to end: the binary, a real redis-server, files and stdin.

#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::RedisServer;
use resp::Value;

fn pipelab(args: &[&str], stdin: &[u8], env_url: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pipelab"));
    cmd.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).env_remove("REDIS_URL");
    if let Some(u) = env_url {
        cmd.env("REDIS_URL", u);
    }
    let mut child = cmd.spawn().unwrap();
    // The child may exit before reading (usage errors): a broken pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Inline lines and RESP mixed (as the server reads them); blank lines skipped.
const MIXED: &[u8] = b"SET a 1\nINCR a\n\n*2\r\n$3\r\nGET\r\n$1\r\na\r\nINCR nokey x\nPING\n";

#[test]
fn summary_and_exit_status() {
    let s = RedisServer::start();
    let out = pipelab(&["run", "-", "--redis", &s.url], MIXED, None);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "an error reply gives exit 1\n{stdout}");
    assert!(stdout.trim_end().ends_with("errors: 1, replies: 5"), "{stdout}");
    assert!(stdout.contains("round trips: 1"), "{stdout}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("command 4 (line 9): ERR wrong number of arguments"), "{stderr}");
    assert_eq!(s.cmd_str(&["GET", "a"]), Value::Bulk(b"2".to_vec()));

    let out = pipelab(&["run", "--mode", "sequential", "--redis", &s.url], b"PING\nPING\nECHO hi\n", None);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("round trips: 3") && stdout.trim_end().ends_with("errors: 0, replies: 3"), "{stdout}");
}

#[test]
fn json_document() {
    let s = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cmds.txt");
    std::fs::write(&file, MIXED).unwrap();
    let out = pipelab(&["run", file.to_str().unwrap(), "--mode", "pipeline", "--batch-size", "2", "--redis", &s.url, "--json"], b"", None);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(results[1]["reply"], serde_json::json!({"type": "integer", "value": 2}));
    assert_eq!(results[3]["status"], "error");
    assert_eq!(results[3]["reply"]["type"], "error");
    assert_eq!(results[4]["reply"], serde_json::json!({"type": "simple", "value": "PONG"}));
    let summary = &doc["summary"];
    assert_eq!(summary["mode"], "pipeline");
    assert_eq!(summary["round_trips"], 3);
    assert_eq!((summary["ok"].as_u64(), summary["errors"].as_u64()), (Some(4), Some(1)));
    assert!(summary["bytes_sent"].as_u64().unwrap() > 0 && summary["total_us"].is_u64());
}

/// A bad line stops the stream: what came before was sent and answered, the
/// message gives line and column and says which commands were sent.
#[test]
fn bad_inline_input_exit_2_says_what_was_sent() {
    let s = RedisServer::start();
    let input = b"SET a 1\nSET b 2\nSET c \"unterminated\nSET d 4\n";
    // Batch size 1 in pipeline mode finds the bad line while prefetching.
    for (mode, batch) in [("sequential", "1000"), ("pipeline", "1000"), ("pipeline", "1")] {
        s.cmd_str(&["FLUSHALL"]);
        let out = pipelab(&["run", "--mode", mode, "--batch-size", batch, "--redis", &s.url], input, None);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("line 3, column 7"), "{stderr}");
        assert!(stderr.contains("the 2 commands before it (through line 2) were sent"), "{stderr}");
        assert!(text(&out.stdout).trim_end().ends_with("errors: 0, replies: 2"));
        assert_eq!(s.cmd_str(&["EXISTS", "a", "b", "c", "d"]), Value::Integer(2), "{mode}");
    }
    // A transaction never runs partly: nothing is sent.
    s.cmd_str(&["FLUSHALL"]);
    let out = pipelab(&["run", "--mode", "transaction", "--redis", &s.url], input, None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no command before it was sent"), "{}", text(&out.stderr));
    assert_eq!(s.cmd_str(&["DBSIZE"]), Value::Integer(0));
}

#[test]
fn bad_resp_input_gives_byte_offset() {
    let s = RedisServer::start();
    let out = pipelab(&["run", "--redis", &s.url, "--json"], b"PING\n*2\r\n$3\r\nGET\r\n$x\r\n", None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("byte 18"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["input_error"]["offset"], 18);
    assert_eq!(doc["input_error"]["sent"], 1);
    assert_eq!(doc["results"].as_array().unwrap().len(), 1);
    // Truncated multibulk at the end of input.
    let out = pipelab(&["run", "--redis", &s.url], b"*2\r\n$3\r\nGET\r\n$1\r\n", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("incomplete"), "{}", text(&out.stderr));
}

#[test]
fn transaction_mode_and_redis_url_env() {
    let s = RedisServer::start();
    let out = pipelab(&["run", "--mode", "transaction"], b"SET x 1\nINCR x\nBADCMD\n", Some(&s.url));
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("transaction: aborted") && stdout.contains("EXECABORT"), "{stdout}");
    assert_eq!(s.cmd_str(&["EXISTS", "x"]), Value::Integer(0));
    let out = pipelab(&["run", "--mode", "transaction"], b"SET x 1\nINCR x\n", Some(&s.url));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(s.cmd_str(&["GET", "x"]), Value::Bulk(b"2".to_vec()));
}

#[test]
fn usage_and_connection_errors() {
    let out = pipelab(&["run", "--rtt", "5000", "--redis", "redis://127.0.0.1:1"], b"PING\n", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--rtt") && text(&out.stderr).contains("0 to 1000"), "{}", text(&out.stderr));
    let out = pipelab(&["run", "--rtt", "-1"], b"PING\n", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--rtt"), "{}", text(&out.stderr));
    let out = pipelab(&["run", "--batch-size", "0"], b"PING\n", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--batch-size") && text(&out.stderr).contains("at least 1"), "{}", text(&out.stderr));
    let out = pipelab(&["run", "--redis", "http://x"], b"PING\n", None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--redis"));
    let out = pipelab(&["run", "/nonexistent/file.txt"], b"", None);
    assert_eq!(out.status.code(), Some(2));
    let port = common::free_port();
    let out = pipelab(&["run", "--redis", &format!("redis://127.0.0.1:{port}")], b"PING\n", None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot connect"), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--redis URL or REDIS_URL"), "says where the address comes from: {}", text(&out.stderr));
}

/// The input is streamed: commands run while stdin is still open.
#[test]
fn stdin_is_streamed() {
    let s = RedisServer::start();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(["run", "-", "--mode", "sequential", "--redis", &s.url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"SET streamed yes\n").unwrap();
    stdin.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.cmd_str(&["EXISTS", "streamed"]) != Value::Integer(1) {
        assert!(Instant::now() < deadline, "the first command did not run before the end of input");
        std::thread::sleep(Duration::from_millis(10));
    }
    stdin.write_all(b"INCR n\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).trim_end().ends_with("errors: 0, replies: 2"));
}

/// Many commands in small chunks: counts add up, replies land in order.
#[test]
fn large_stream_in_chunks() {
    let s = RedisServer::start();
    let mut input = Vec::new();
    for i in 0..50_000 {
        resp::encode_command(&[b"RPUSH".as_slice(), b"list", format!("{i}").as_bytes()], &mut input);
    }
    let out = pipelab(&["run", "--batch-size", "333", "--redis", &s.url], &input, None);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("round trips: 151"), "{stdout}");
    assert!(stdout.trim_end().ends_with("errors: 0, replies: 50000"));
    assert_eq!(s.cmd_str(&["LINDEX", "list", "49999"]), Value::Bulk(b"49999".to_vec()));
    assert_eq!(s.cmd_str(&["LLEN", "list"]), Value::Integer(50_000));
}

/// `--mode auto --clients N --window-us 0`: fewer writes than commands,
/// each caller's commands in its order (streamed from stdin), and the
/// server's work with `--server-stats`.
#[test]
fn auto_mode_from_the_command_line() {
    let s = RedisServer::start();
    let input: String = (0..300).map(|i| format!("RPUSH c:{} {i}\n", i % 10)).collect();
    let args = ["run", "--mode", "auto", "--clients", "10", "--window-us", "0", "--server-stats", "--redis", &s.url];
    let out = pipelab(&[&args[..], &["--json"]].concat(), input.as_bytes(), None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let summary = &doc["summary"];
    assert_eq!((summary["mode"].as_str(), summary["ok"].as_u64()), (Some("auto"), Some(300)), "{summary}");
    let writes = summary["auto"]["writes"].as_u64().unwrap();
    assert!((30..300).contains(&writes), "{summary}");
    assert_eq!(summary["server"]["calls"], 300, "{summary}");
    assert!(doc["results"][299]["latency_us"].is_u64(), "{}", doc["results"][299]);
    let Value::Array(items) = s.cmd_str(&["LRANGE", "c:7", "0", "-1"]) else { panic!() };
    let want: Vec<Value> = (7..300).step_by(10).map(|i| Value::Bulk(i.to_string().into_bytes())).collect();
    assert_eq!(items, want);

    let out = pipelab(&args, input.as_bytes(), None);
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("mode: auto (10 clients)"), "{stdout}");
    assert!(stdout.contains("read system calls: ") && stdout.contains("auto: 10 clients, window 0 µs: "), "{stdout}");
    assert!(stdout.contains("server: ") && stdout.contains(" 300 calls in "), "{stdout}");
    let out = pipelab(&["run", "--mode", "auto", "--clients", "0", "--redis", &s.url], b"PING\n", None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
