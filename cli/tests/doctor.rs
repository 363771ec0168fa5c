//! `pipelab doctor` with real clients (redis-py, ioredis, raw sockets)
//! against a real redis-server: the binary runs with `--json`, the tests
//! read its JSON lines after SIGTERM, with its default rule: whether a
//! command could have been pipelined is decided on evidence (it carries no
//! bytes of an earlier reply), and the think-time bound (1 s) only ends a
//! run when the client went idle, far above a loaded machine's stalls (the
//! rule itself is unit-tested with exact times in `doctor::missed`,
//! `doctor::depends` and `doctor::tracker`).

#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{read_one, RedisServer};
use serde_json::Value as Json;

/// The doctor binary, running.
struct Doctor {
    child: Child,
    /// `127.0.0.1:PORT` it listens on.
    addr: String,
    stdout: Option<JoinHandle<Vec<Json>>>,
}

impl Doctor {
    /// With the generous threshold of these tests (1 s).
    fn start(upstream: &str, extra: &[&str]) -> Doctor {
        let args: Vec<&str> = ["--think-time-us", "1000000"].iter().chain(extra).copied().collect();
        Doctor::start_with(upstream, &args)
    }

    fn start_with(upstream: &str, args: &[&str]) -> Doctor {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pipelab"))
            .args(["doctor", "--listen", "127.0.0.1:0", "--upstream", upstream, "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start pipelab doctor");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let addr = loop {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "pipelab doctor ended before listening");
            if let Some(rest) = line.strip_prefix("pipelab doctor: listening on ") {
                break rest.split(',').next().unwrap().to_string();
            }
            eprintln!("doctor: {line}");
        };
        // Keep draining stderr so that the doctor never blocks on it.
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("doctor: {line}");
            }
        });
        let out = BufReader::new(child.stdout.take().unwrap());
        let stdout = std::thread::spawn(move || {
            out.lines().map_while(Result::ok).map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
        });
        Doctor { child, addr, stdout: Some(stdout) }
    }

    fn port(&self) -> u16 {
        self.addr.rsplit(':').next().unwrap().parse().unwrap()
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(&self.addr).expect("connect to the doctor");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s
    }

    /// SIGTERM, then every JSON line it printed (the last is the summary).
    fn stop(mut self) -> Vec<Json> {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let status = self.child.wait().unwrap();
        assert!(status.success(), "doctor exit status {status}");
        let lines = self.stdout.take().unwrap().join().unwrap();
        assert_eq!(lines.last().map(|l| l["type"].clone()), Some(Json::from("summary")), "{lines:?}");
        lines
    }
}

impl Drop for Doctor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn missed(lines: &[Json]) -> Vec<&Json> {
    lines.iter().filter(|l| l["type"] == "missed_pipeline").collect()
}

fn python(script: &str, port: u16) {
    let out = Command::new("python3").arg("-c").arg(script).arg(port.to_string()).output().expect("python3");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// Flights with at least `depth` commands, from the summary's buckets.
fn commands_in_deep_flights(summary: &Json, depth: u64) -> (u64, u64) {
    summary["depth"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["min"].as_u64().unwrap() >= depth)
        .fold((0, 0), |(f, c), b| (f + b["flights"].as_u64().unwrap(), c + b["commands"].as_u64().unwrap()))
}

#[test]
fn redis_py_loop_is_a_missed_pipeline_and_its_pipeline_is_not() {
    let redis = RedisServer::start();
    let doctor = Doctor::start(&redis.url, &["--rtt", "0.5"]);
    python(
        "import sys, redis\nr = redis.Redis(port=int(sys.argv[1]))\nfor i in range(1000): r.set(f'loop:{i}', 'x')\nr.close()",
        doctor.port(),
    );
    python(
        "import sys, redis\nr = redis.Redis(port=int(sys.argv[1]))\np = r.pipeline(transaction=False)\nfor i in range(1000): p.set(f'pipe:{i}', 'x')\nassert p.execute() == [True] * 1000\nr.close()",
        doctor.port(),
    );
    let lines = doctor.stop();
    assert_eq!(redis.cmd_str(&["DBSIZE"]), resp::Value::Integer(2000));
    let m = missed(&lines);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0]["commands"], 1000);
    assert_eq!(m[0]["pattern"], "SET loop:*");
    assert_eq!(m[0]["description"], "SET loop:* ×1000 sequential");
    assert!((m[0]["saving_ms"].as_f64().unwrap() - 999.0 * 0.5).abs() < 1e-6, "{}", m[0]);
    let summary = lines.last().unwrap();
    assert_eq!(summary["connections"], 2);
    // The loop: 1000 flights of one command (plus the client's set-up).
    let single = &summary["depth"][0];
    assert!(single["flights"].as_u64().unwrap() >= 1000, "{summary}");
    // The pipeline: its 1000 commands in a few flights, as redis-py writes them.
    let (flights, commands) = commands_in_deep_flights(summary, 10);
    assert!(commands >= 990 && flights <= 10, "{flights} flights of depth 10+ with {commands} commands: {summary}");
    assert_eq!(summary["missed_commands"], 1000);
}

/// A thread that keeps a core busy until dropped (a busy machine beside the client).
struct Spin(Arc<std::sync::atomic::AtomicBool>, Option<JoinHandle<()>>);

impl Spin {
    fn start() -> Spin {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut x = 0u64;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        });
        Spin(stop, Some(handle))
    }
}

impl Drop for Spin {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

#[test]
fn the_loop_is_one_run_with_a_busy_core_beside_it_and_says_why() {
    let redis = RedisServer::start();
    let doctor = Doctor::start(&redis.url, &[]);
    let spin = Spin::start();
    python(
        "import sys, redis\nr = redis.Redis(port=int(sys.argv[1]))\nfor i in range(1000): r.set(f'busy:{i}', 'x')\nr.close()",
        doctor.port(),
    );
    drop(spin);
    let lines = doctor.stop();
    let m = missed(&lines);
    assert_eq!(m.iter().map(|m| m["commands"].as_u64().unwrap()).collect::<Vec<_>>(), [1000], "{m:?}");
    assert_eq!(m[0]["pattern"], "SET busy:*");
    assert!(m[0]["replies_compared"].as_u64().unwrap() >= 999, "{}", m[0]);
    assert!(m[0]["why"].as_str().unwrap().starts_with("no command carried bytes of an earlier reply"), "{}", m[0]);
}

#[test]
fn a_loop_that_reads_an_id_then_writes_its_key_is_not_reported() {
    let redis = RedisServer::start();
    let doctor = Doctor::start(&redis.url, &[]);
    python(
        "import sys, redis\nr = redis.Redis(port=int(sys.argv[1]))\n\
r.mset({f'id:{i}': str(5000 + i) for i in range(300)})\n\
for i in range(300):\n    uid = r.get(f'id:{i}').decode()\n    r.set(f'user:{uid}', 'x')\nr.close()",
        doctor.port(),
    );
    let lines = doctor.stop();
    assert_eq!(redis.cmd_str(&["EXISTS", "user:5299"]), resp::Value::Integer(1));
    assert!(missed(&lines).is_empty(), "{:?}", missed(&lines));
    let summary = lines.last().unwrap();
    assert!(summary["depth"][0]["flights"].as_u64().unwrap() >= 600, "{summary}");
}

#[test]
fn ioredis_auto_pipelining_sends_deep_flights() {
    let web = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/node_modules");
    assert!(web.join("ioredis").exists(), "ioredis is missing from web/node_modules: run scripts/setup.sh (npm ci in web/)");
    let redis = RedisServer::start();
    let doctor = Doctor::start(&redis.url, &[]);
    let script = "const Redis = require('ioredis');
        (async () => {
          const r = new Redis({ port: Number(process.argv[1]), enableAutoPipelining: true });
          for (let round = 0; round < 5; round++) {
            await Promise.all(Array.from({ length: 200 }, (_, i) => r.set(`auto:${round}:${i}`, 'x')));
          }
          await r.quit();
        })().catch((e) => { console.error(e); process.exit(1); });";
    let out = Command::new("node").arg("-e").arg(script).arg(doctor.port().to_string()).env("NODE_PATH", &web).output().expect("node");
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let lines = doctor.stop();
    assert_eq!(redis.cmd_str(&["DBSIZE"]), resp::Value::Integer(1000));
    let summary = lines.last().unwrap();
    let (flights, commands) = commands_in_deep_flights(summary, 2);
    assert!(flights >= 1 && commands >= 900, "{summary}");
    assert!(missed(&lines).iter().all(|m| !m["pattern"].as_str().unwrap().starts_with("SET auto:")), "{lines:?}");
}

/// ioredis's own ready check (INFO as it connects) and its QUIT are not the
/// application's loop: an awaited loop of 50 GETs is one missed pipeline of
/// exactly those 50 commands.
#[test]
fn ioredis_ready_check_and_quit_are_not_in_its_missed_pipeline() {
    let web = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web/node_modules");
    assert!(web.join("ioredis").exists(), "ioredis is missing from web/node_modules: run scripts/setup.sh (npm ci in web/)");
    let redis = RedisServer::start();
    let doctor = Doctor::start(&redis.url, &[]);
    let script = "const Redis = require('ioredis');
        (async () => {
          const r = new Redis({ port: Number(process.argv[1]) });
          for (let i = 0; i < 50; i++) await r.get(`seq:${i}`);
          await r.quit();
        })().catch((e) => { console.error(e); process.exit(1); });";
    let out = Command::new("node").arg("-e").arg(script).arg(doctor.port().to_string()).env("NODE_PATH", &web).output().expect("node");
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let lines = doctor.stop();
    let m = missed(&lines);
    assert_eq!(m.len(), 1, "{lines:?}");
    assert_eq!(m[0]["commands"], 50, "{}", m[0]);
    let patterns: Vec<&str> = m[0]["patterns"].as_array().unwrap().iter().map(|p| p["pattern"].as_str().unwrap()).collect();
    assert_eq!(patterns, ["GET seq:*"], "{}", m[0]);
}

/// Sends one command and reads its reply (a client that waits each time).
fn call(s: &mut TcpStream, argv: &[&str]) -> resp::Value {
    let mut out = Vec::new();
    resp::encode_command(argv.iter().map(|a| a.as_bytes()), &mut out);
    s.write_all(&out).unwrap();
    read_one(s)
}

#[test]
fn multi_exec_and_watch_loops_are_not_missed_pipelines() {
    let redis = RedisServer::start();
    let doctor = Doctor::start(&redis.url, &[]);
    // MULTI/EXEC, each command waiting for its QUEUED.
    let mut s = doctor.connect();
    for i in 0..100 {
        assert_eq!(call(&mut s, &["MULTI"]), resp::Value::Simple(b"OK".to_vec()));
        assert_eq!(call(&mut s, &["SET", &format!("tx:{i}"), "x"]), resp::Value::Simple(b"QUEUED".to_vec()));
        assert_eq!(call(&mut s, &["INCR", "tx:count"]), resp::Value::Simple(b"QUEUED".to_vec()));
        assert!(matches!(call(&mut s, &["EXEC"]), resp::Value::Array(a) if a.len() == 2));
    }
    drop(s);
    // redis-py's WATCH loop: WATCH, GET, then MULTI/INCRBY/EXEC.
    python(
        "import sys, redis\nr = redis.Redis(port=int(sys.argv[1]))\n\
def bump(p):\n    v = int(p.get('w:count') or 0)\n    p.multi()\n    p.set('w:count', v + 1)\n\
for _ in range(100): r.transaction(bump, 'w:count')\nassert int(r.get('w:count')) == 100",
        doctor.port(),
    );
    let lines = doctor.stop();
    assert_eq!(redis.cmd_str(&["GET", "tx:count"]), resp::Value::Bulk(b"100".to_vec()));
    assert!(missed(&lines).is_empty(), "{lines:?}");
    let summary = lines.last().unwrap();
    assert_eq!(summary["transactions"], 200);
}

/// A loop whose think times sit just over the default 50 µs (a 2 ms pause
/// between a reply and the next command, as a busy machine makes of a
/// redis-py loop): no missed pipeline at that threshold, but the summary
/// counts the near misses and names a `--think-time-us` that takes them in.
#[test]
fn think_times_just_over_the_threshold_are_named_with_the_flag_to_use() {
    let redis = RedisServer::start();
    let doctor = Doctor::start_with(&redis.url, &["--think-time-us", "50"]);
    let mut s = doctor.connect();
    for i in 0..40 {
        assert_eq!(call(&mut s, &["SET", &format!("slow:{i}"), "x"]), resp::Value::Simple(b"OK".to_vec()));
        std::thread::sleep(Duration::from_millis(2));
    }
    drop(s);
    let lines = doctor.stop();
    assert!(missed(&lines).is_empty(), "2 ms is over 50 µs: {lines:?}");
    let near = &lines.last().unwrap()["near_misses"];
    // Most of the 39 gaps; a stall past 5 ms on a loaded machine is not "just over".
    assert!(near["flights"].as_u64().unwrap() >= 10, "{near}");
    let max = near["think_us_max"].as_u64().unwrap();
    assert!((2000..=5000).contains(&max), "{near}");
    let suggested = near["suggested_think_time_us"].as_u64().expect("a threshold suggested");
    assert!(suggested >= max && [2000, 5000].contains(&suggested), "{near}");
}

/// SET then GET of a value with CR, LF and NUL inside, through `s`.
fn check_forwarding(s: &mut TcpStream, tag: &str) {
    let value = format!("v\r\n\0{tag}");
    assert_eq!(call(s, &["SET", &format!("good:{tag}"), &value]), resp::Value::Simple(b"OK".to_vec()));
    assert_eq!(call(s, &["GET", &format!("good:{tag}")]), resp::Value::Bulk(value.into_bytes()));
}

#[test]
fn bad_traffic_does_not_disturb_the_other_connections() {
    let redis = RedisServer::start();
    let doctor = Doctor::start(&redis.url, &["--max-connections", "200"]);
    let mut good = doctor.connect();
    check_forwarding(&mut good, "start");

    // Garbage: forwarded as is, so Redis answers with its protocol error and closes.
    let mut bad = doctor.connect();
    bad.write_all(b"*zz\r\n\x00\xff garbage\r\n").unwrap();
    let mut got = Vec::new();
    let _ = bad.read_to_end(&mut got);
    assert!(got.starts_with(b"-ERR Protocol error"), "{:?}", String::from_utf8_lossy(&got));
    check_forwarding(&mut good, "garbage");

    // A client that closes in the middle of a command.
    let mut cut = doctor.connect();
    cut.write_all(b"*3\r\n$3\r\nSET\r\n$3\r\ncut\r\n$10\r\nhal").unwrap();
    drop(cut);
    check_forwarding(&mut good, "cut");

    // Redis closes a connection (CLIENT KILL): the client sees the end.
    let mut victim = doctor.connect();
    let resp::Value::Integer(id) = call(&mut victim, &["CLIENT", "ID"]) else { panic!("CLIENT ID") };
    assert_eq!(redis.cmd_str(&["CLIENT", "KILL", "ID", &id.to_string()]), resp::Value::Integer(1));
    let mut rest = Vec::new();
    let _ = victim.read_to_end(&mut rest);
    assert!(rest.is_empty(), "{rest:?}");
    check_forwarding(&mut good, "kill");

    // 1000 connections at once: at most 200 open (the good one among them),
    // the others closed at once; those admitted are answered.
    // All are kept open until the end: a closed one would free its place.
    let mut many: Vec<TcpStream> = (0..1000).map(|_| doctor.connect()).collect();
    let mut pongs = 0;
    for s in &mut many {
        if s.write_all(b"PING\r\n").is_err() {
            continue;
        }
        let mut buf = [0u8; 7];
        // An error: refused, closed by the doctor.
        if s.read_exact(&mut buf).is_ok() {
            assert_eq!(&buf, b"+PONG\r\n");
            pongs += 1;
        }
    }
    check_forwarding(&mut good, "many");
    drop(many);
    drop(good);

    let lines = doctor.stop();
    let summary = lines.last().unwrap();
    assert!((1..200).contains(&pongs), "{pongs} answered: {summary}");
    assert!(summary["connections_refused"].as_u64().unwrap() >= 800, "{summary}");
    let undecoded: Vec<&Json> = lines.iter().filter(|l| l["type"] == "undecoded").collect();
    assert!(undecoded.iter().any(|u| u["reason"].as_str().unwrap().starts_with("requests: ")), "{undecoded:?}");
}

/// A recorder in front of `upstream` (or, with `None`, an upstream of its
/// own that records until EOF and then answers `answer`): what each
/// connection received from the doctor and what it sent back.
type Recorded = Arc<Mutex<Vec<(Vec<u8>, Vec<u8>)>>>;

fn recorder(upstream: Option<u16>, answer: &'static [u8]) -> (u16, Recorded) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let recorded: Recorded = Arc::default();
    let rec = recorded.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let mut from_doctor = conn.unwrap();
            let rec = rec.clone();
            std::thread::spawn(move || {
                let mut up_bytes = Vec::new();
                let down_bytes = match upstream {
                    None => {
                        from_doctor.read_to_end(&mut up_bytes).unwrap();
                        from_doctor.write_all(answer).unwrap();
                        answer.to_vec()
                    }
                    Some(port) => {
                        let mut redis = TcpStream::connect(("127.0.0.1", port)).unwrap();
                        let mut redis_r = redis.try_clone().unwrap();
                        let mut to_doctor = from_doctor.try_clone().unwrap();
                        let down = std::thread::spawn(move || {
                            let mut got = Vec::new();
                            let mut buf = [0u8; 4096];
                            while let Ok(n) = redis_r.read(&mut buf) {
                                if n == 0 || to_doctor.write_all(&buf[..n]).is_err() {
                                    break;
                                }
                                got.extend_from_slice(&buf[..n]);
                            }
                            let _ = to_doctor.shutdown(Shutdown::Write);
                            got
                        });
                        let mut buf = [0u8; 4096];
                        while let Ok(n) = from_doctor.read(&mut buf) {
                            if n == 0 {
                                break;
                            }
                            up_bytes.extend_from_slice(&buf[..n]);
                            redis.write_all(&buf[..n]).unwrap();
                        }
                        let _ = redis.shutdown(Shutdown::Write);
                        down.join().unwrap()
                    }
                };
                rec.lock().unwrap().push((up_bytes, down_bytes));
            });
        }
    });
    (port, recorded)
}

/// Writes `bytes` in uneven small pieces, half-closes, reads to the end.
fn send_in_pieces(doctor: &Doctor, bytes: &[u8]) -> Vec<u8> {
    let mut s = doctor.connect();
    let mut r = s.try_clone().unwrap();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        r.read_to_end(&mut got).unwrap();
        got
    });
    let mut at = 0;
    for size in [1, 2, 3, 5, 8, 13, 21, 34, 55].iter().cycle() {
        if at >= bytes.len() {
            break;
        }
        let end = (at + size).min(bytes.len());
        s.write_all(&bytes[at..end]).unwrap();
        at = end;
    }
    s.shutdown(Shutdown::Write).unwrap();
    reader.join().unwrap()
}

/// Waits for the recorder to hold a connection whose received bytes are `sent`.
fn recorded_with(recorded: &Recorded, sent: &[u8]) -> Vec<u8> {
    for _ in 0..1000 {
        if let Some((_, down)) = recorded.lock().unwrap().iter().find(|(up, _)| up == sent) {
            return down.clone();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let got: Vec<usize> = recorded.lock().unwrap().iter().map(|(u, _)| u.len()).collect();
    panic!("no upstream connection received exactly the {} bytes sent (got lengths {got:?})", sent.len());
}

#[test]
fn forwarding_never_changes_a_byte() {
    // Valid traffic of every shape, to a real Redis, plain and behind the delay line.
    let redis = RedisServer::start();
    let (port, recorded) = recorder(Some(redis.port), b"");
    let mut stream = Vec::new();
    for i in 0..200 {
        let value = format!("v{i}\r\n\0\u{e9}");
        resp::encode_command([&b"SET"[..], format!("k:{i}").as_bytes(), value.as_bytes()], &mut stream);
        stream.extend_from_slice(format!("GET k:{i}\r\n  \r\nINCRBY  \"n\"   {i}\n").as_bytes());
    }
    stream.extend_from_slice(b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\nHGETALL nosuch\r\nPING\r\n");
    for extra in [&[][..], &["--add-rtt", "1"][..]] {
        redis.cmd_str(&["FLUSHALL"]);
        let doctor = Doctor::start(&format!("redis://127.0.0.1:{port}"), extra);
        let received = send_in_pieces(&doctor, &stream);
        let upstream_answered = recorded_with(&recorded, &stream);
        assert_eq!(received, upstream_answered, "the client got other bytes than Redis sent");
        assert!(received.ends_with(b"+PONG\r\n"), "{:?}", String::from_utf8_lossy(&received));
        let lines = doctor.stop();
        assert_eq!(lines.last().unwrap()["commands"], 603, "{:?}", lines.last());
        recorded.lock().unwrap().clear();
    }

    // Garbage both ways, to an upstream that records and then answers garbage.
    let answer: &[u8] = b"+OK\r\n\x00\xffnot RESP\r\n$3\r\nabc";
    let (port, recorded) = recorder(None, answer);
    let doctor = Doctor::start(&format!("redis://127.0.0.1:{port}"), &[]);
    let garbage: Vec<u8> = b"PING\r\n*1\r\n$4\r\nPING\r\n*zz\r\n\x00\xff\xfe junk $-5\r\n".iter().copied().chain((0..=255u8).cycle().take(3000)).collect();
    let received = send_in_pieces(&doctor, &garbage);
    assert_eq!(recorded_with(&recorded, &garbage), answer);
    assert_eq!(received, answer);
    let lines = doctor.stop();
    assert!(lines.iter().any(|l| l["type"] == "undecoded"), "{lines:?}");
}
