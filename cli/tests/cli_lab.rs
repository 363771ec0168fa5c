//! `pipelab compare` and `pipelab sweep` end to end: the built binary
//! against a real redis-server, its JSON set side by side with the API's
//! (the router driven in-process, `api_inproc`), the sweep's clean-up, and
//! bad options exiting 2 with the option named. Also the lab's sweep with a run that
//! fails, on a runner that fails it.

#[path = "../../backend/tests/api_inproc/mod.rs"]
mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use api_inproc::App;
use common::RedisServer;
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{Batch, ExecError, ExecOptions, Report};
use pipelab_engine::lab::sweep::{sweep, SweepSpec};
use pipelab_engine::lab::{Direct, LabError, Runner};
use resp::Value;
use serde_json::{json, Value as Json};

fn pipelab(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(args)
        .env_remove("REDIS_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The child may exit before reading (usage errors): a broken pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every path of object keys in `doc` (`runs[].summary.round_trips`): the
/// document's shape without its values.
fn shape(doc: &Json) -> BTreeSet<String> {
    fn walk(v: &Json, at: String, out: &mut BTreeSet<String>) {
        match v {
            Json::Object(m) => {
                for (k, v) in m {
                    let p = format!("{at}.{k}");
                    out.insert(p.clone());
                    walk(v, p, out);
                }
            }
            Json::Array(items) => items.iter().for_each(|i| walk(i, format!("{at}[]"), out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(doc, String::new(), &mut out);
    out
}

/// The rows of a table whose first column is one of `names`: name → columns.
fn rows<'a>(table: &'a str, names: &[&str]) -> Vec<Vec<&'a str>> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|cols| cols.first().is_some_and(|c| names.contains(c)))
        .collect()
}

const BATCH: &str = "SET k v\nINCR n\nGET k\n";

#[tokio::test]
async fn compare_shows_each_mode_and_writes_the_apis_json() {
    let redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("batch.txt");
    std::fs::write(&file, BATCH).unwrap();
    let file = file.to_str().unwrap();

    let out = pipelab(&["compare", file, "--rtt", "1", "--redis", &redis.url], b"");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let table = rows(&stdout, &["sequential", "pipeline", "transaction"]);
    let modes: Vec<&str> = table.iter().map(|r| r[0]).collect();
    assert_eq!(modes, ["sequential", "pipeline", "transaction"], "{stdout}");
    // Round trips: one per command sequentially, one for the pipeline and the transaction.
    let trips: Vec<&str> = table.iter().map(|r| r[1]).collect();
    assert_eq!(trips, ["3", "1", "1"], "{stdout}");
    assert_eq!(table[0][4], "1.00x", "{stdout}");
    assert!(stdout.contains("once per mode"), "{stdout}");
    // The batch ran once per mode: four INCRs (auto too).
    assert!(stdout.lines().any(|l| l.starts_with("auto ")), "{stdout}");
    assert_eq!(redis.cmd_str(&["GET", "n"]), Value::Bulk(b"4".to_vec()));

    // --json is the API's document: the same keys everywhere, with and without results.
    for (flags, include) in [(&[][..], false), (&["--include-results"][..], true)] {
        let mut args = vec!["compare", file, "--modes", "pipeline,transaction", "--redis", &redis.url, "--json"];
        args.extend(flags);
        let out = pipelab(&args, b"");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let cli: Json = serde_json::from_slice(&out.stdout).expect("one JSON document");
        let (status, api) = App::start(&redis.url, &[]).post("/api/v1/compare", &json!({"text": BATCH, "include_results": include, "modes": ["pipeline", "transaction"]})).await;
        assert_eq!(status, 200, "{api}");
        assert_eq!(shape(&cli), shape(&api), "CLI {cli}\nAPI {api}");
        assert!(shape(&cli).contains(".runs[].summary.round_trips"), "{cli}");
        assert_eq!(cli["runs"].as_array().unwrap().len(), 3);
        assert_eq!(cli["runs"][2]["transaction"]["status"], "committed");
        assert_eq!(cli["runs"][1]["results"].is_array(), include, "{cli}");
    }

    // Error replies: the table all the same, exit 1.
    let out = pipelab(&["compare", "-", "--modes", "pipeline", "--redis", &redis.url], b"HSET k f v\nPING\n");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let table = rows(&stdout, &["sequential", "pipeline"]);
    assert_eq!(table.len(), 2, "{stdout}");
    assert!(table.iter().all(|r| r[5] == "1" && r[6] == "1"), "ok 1, errors 1 in each run: {stdout}");
}

#[tokio::test]
async fn sweep_deletes_the_keys_it_created_and_keeps_the_others() {
    let redis = RedisServer::start();
    redis.cmd_str(&["SET", "sweep:3", "mine"]);
    redis.cmd_str(&["SET", "other", "x"]);
    let args = ["sweep", "--command", "SET sweep:{i} v{i}", "--count", "50", "--batch-sizes", "1,10,50", "--redis", &redis.url];

    let out = pipelab(&[&args[..], &["--json"]].concat(), b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let cli: Json = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let trips: Vec<u64> = cli["points"].as_array().unwrap().iter().map(|p| p["round_trips"].as_u64().unwrap()).collect();
    assert_eq!(trips, [50, 5, 1], "{cli}");
    assert!(cli["points"].as_array().unwrap().iter().all(|p| p["ok"] == 50), "{cli}");
    assert_eq!(cli["cleanup"], json!({"keys": 50, "preexisting": 1, "deleted": 49}));
    // Only the keys the sweep created are gone; the one that existed stays (overwritten).
    assert_eq!(redis.cmd_str(&["DBSIZE"]), Value::Integer(2));
    assert_eq!(redis.cmd_str(&["GET", "sweep:3"]), Value::Bulk(b"v3".to_vec()));
    assert_eq!(redis.cmd_str(&["GET", "other"]), Value::Bulk(b"x".to_vec()));

    let body = json!({"command": ["SET", "sweep:{i}", "v{i}"], "total": 50, "batch_sizes": [1, 10, 50]});
    let (status, api) = App::start(&redis.url, &[]).post("/api/v1/sweep", &body).await;
    assert_eq!(status, 200, "{api}");
    // The model's note is there only when the timings leave nothing to fit.
    let measured = |doc: &Json| shape(doc).into_iter().filter(|p| p != ".model.note").collect::<BTreeSet<_>>();
    assert_eq!(measured(&cli), measured(&api), "CLI {cli}\nAPI {api}");
    assert_eq!(redis.cmd_str(&["DBSIZE"]), Value::Integer(2));

    let out = pipelab(&args, b"");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let table = rows(&stdout, &["1", "10", "50"]);
    let trips: Vec<&str> = table.iter().map(|r| r[1]).collect();
    assert_eq!(trips, ["50", "5", "1"], "{stdout}");
    assert!(stdout.contains("cleanup: 50 keys named, 1 existed before (kept), 49 deleted"), "{stdout}");
    assert_eq!(redis.cmd_str(&["DBSIZE"]), Value::Integer(2));
}

#[test]
fn bad_options_exit_2_naming_the_option() {
    let redis = RedisServer::start();
    let url = redis.url.as_str();
    let cases: &[(&[&str], &[u8], &[&str])] = &[
        (&["sweep", "--command", "", "--redis", url], b"", &["--command", "at least one argument"]),
        (&["sweep", "--command", "SET \"k{i} x", "--redis", url], b"", &["--command", "column 5"]),
        (&["sweep", "--command", "SET k{i} x", "--count", "0", "--redis", url], b"", &["--count"]),
        (&["sweep", "--command", "SET k{i} x", "--batch-sizes", "10,0", "--redis", url], b"", &["--batch-sizes"]),
        (&["sweep", "--command", "SET k{i} x", "--rtt", "5000", "--redis", url], b"", &["--rtt"]),
        (&["sweep", "--command", "NOSUCH k{i}", "--count", "5", "--redis", url], b"", &["--command", "Redis rejects it"]),
        (&["sweep", "--command", "SUBSCRIBE c{i}", "--count", "5", "--redis", url], b"", &["--command", "SUBSCRIBE"]),
        (&["sweep", "--count", "5", "--redis", url], b"", &["--command"]),
        (&["compare", "-", "--modes", "fast", "--redis", url], b"PING\n", &["--modes"]),
        (&["compare", "-", "--batch-size", "0", "--redis", url], b"PING\n", &["--batch-size"]),
        (&["compare", "-", "--redis", "nope://x"], b"PING\n", &["--redis"]),
        (&["compare", "-", "--redis", url], b"SET a 1\nSET \"b 2\n", &["line 2, column 5"]),
        (&["compare", "-", "--redis", url], b"SET a 1\n\nSUBSCRIBE c\n", &["line 3", "SUBSCRIBE"]),
        (&["compare", "-", "--redis", url], b"\n\n", &["holds no command"]),
        (&["compare", "/nonexistent/batch.txt", "--redis", url], b"", &["/nonexistent/batch.txt"]),
    ];
    let mut failures = Vec::new();
    for (args, stdin, says) in cases {
        let out = pipelab(args, stdin);
        let stderr = text(&out.stderr);
        if out.status.code() != Some(2) || !says.iter().all(|s| stderr.contains(s)) {
            failures.push(format!("{args:?}: exit {:?}, stderr {stderr}", out.status.code()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Nothing was written (the sweeps refused before their first run).
    assert_eq!(redis.cmd_str(&["DBSIZE"]), Value::Integer(0));

    // Redis out of reach is not bad usage: exit 1.
    let gone = format!("redis://127.0.0.1:{}", common::free_port());
    for args in [&["compare", "-", "--redis", &gone][..], &["sweep", "--command", "SET k{i} x", "--redis", &gone]] {
        let out = pipelab(args, b"PING\n");
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out.stderr));
    }
}

/// [`Direct`], failing every run of batch size 7 as if Redis had gone away.
#[derive(Clone)]
struct FailSeven(Arc<Direct>);

impl Runner for FailSeven {
    type Error = ExecError;

    async fn run(&self, batch: &Batch) -> Result<Report, ExecError> {
        if batch.plan.batch_size == 7 {
            return Err(ExecError::Connect(pipelab_engine::conn::ConnectError::Lost("injected failure".into())));
        }
        self.0.run(batch).await
    }

    fn batch_timeout(&self) -> std::time::Duration {
        self.0.batch_timeout()
    }

    async fn commands(&self) -> Arc<pipelab_engine::commands::Table> {
        self.0.commands().await
    }
}

/// A run that fails stops the sweep, and its keys are deleted all the same.
#[tokio::test]
async fn sweep_cleans_up_after_a_failed_run() {
    let redis = RedisServer::start();
    redis.cmd_str(&["SET", "f:2", "mine"]);
    let direct = Direct { target: RedisTarget::parse(&redis.url).unwrap(), opts: ExecOptions::default() };
    let runner = FailSeven(Arc::new(direct));
    let template = vec![b"SET".to_vec(), b"f:{i}".to_vec(), b"x".to_vec()];
    let spec = SweepSpec::new(template, 20, &[10, 7, 5], 0.0).unwrap();
    match sweep(&runner, &spec).await {
        Err(LabError::Run(ExecError::Connect(m))) => assert_eq!(m.to_string(), "injected failure"),
        other => panic!("expected the injected failure, got {other:?}"),
    }
    // The first run wrote f:0..f:19; only f:2, there before, is left.
    assert_eq!(redis.cmd_str(&["DBSIZE"]), Value::Integer(1));
    assert_eq!(redis.cmd_str(&["GET", "f:2"]), Value::Bulk(b"x".to_vec()));
}

/// Ctrl-C mid-sweep: the sweep stops, deletes the keys it created so far
/// (keeping the one that was there), says so and exits 1.
#[test]
fn ctrl_c_stops_the_sweep_and_cleans_up() {
    let redis = RedisServer::start();
    redis.cmd_str(&["SET", "int:1", "mine"]);
    // 2000 round trips of 5 ms: about 10 s, far longer than the test waits.
    let child = Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(["sweep", "--command", "SET int:{i} x", "--count", "2000", "--batch-sizes", "1", "--rtt", "5"])
        .args(["--redis", &redis.url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while redis.cmd_str(&["DBSIZE"]) == Value::Integer(1) {
        assert!(started.elapsed().as_secs() < 10, "the sweep wrote nothing in 10 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid, with a valid signal number.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted; cleanup: 2000 keys named, 1 existed before (kept)"), "{stderr}");
    // Only the key that was there is left (whether the sweep overwrote it yet or not).
    assert_eq!(redis.cmd_str(&["DBSIZE"]), Value::Integer(1), "{stderr}");
    assert_eq!(redis.cmd_str(&["EXISTS", "int:1"]), Value::Integer(1));
}
