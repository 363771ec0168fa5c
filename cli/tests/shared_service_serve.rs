//! The shared service as an attacker tries it, on the real `pipelab serve`
//! (its embedded Redis, its start-up checks, its accept loop): what a
//! script can reach, a script that never ends, fair shares per client,
//! the memory of responses, and the start-up warnings.

mod api_harness;
#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use api_harness::{serve_command, wait_for, Pipelab};
use common::RedisServer;
use serde_json::{json, Value as Json};

/// `pipelab serve` with its own redis-server and `args`.
fn embedded(args: &[&str]) -> Pipelab {
    let (cmd, port) = serve_command(args);
    Pipelab::spawn(cmd, port)
}

/// POST `commands` to /api/v1/batch with `token` (none: no header); status and body.
async fn batch(api: &Pipelab, token: Option<&str>, commands: Json) -> (u16, Json) {
    let client = reqwest::Client::new();
    let mut req = client.post(format!("{}/api/v1/batch", api.base)).header("content-type", "application/json");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let res = req.body(json!({"commands": commands}).to_string()).send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap())
}

fn error_of(result: &Json) -> String {
    result["reply"]["value"].as_str().unwrap_or_default().to_string()
}

/// On the Redis pipelab manages, a script runs as the batch user, which
/// lacks what the API refuses: MIGRATE (a copy to another server, a port
/// scanner) and SLOWLOG GET (other clients' arguments) from Lua are
/// refused by Redis; ordinary commands from Lua run; an operator token still reads
/// CONFIG (its batches run as the default user).
#[tokio::test]
async fn scripts_cannot_reach_what_the_api_refuses_on_the_embedded_redis() {
    let other = RedisServer::start();
    let api = embedded(&["--token", "full", "--operator-token", "op"]);
    let closed = common::free_port().to_string();
    let migrate = "return redis.call('MIGRATE','127.0.0.1',ARGV[1],KEYS[1],'0','1000','COPY')";
    let (status, body) = batch(
        &api,
        Some("full"),
        json!([
            ["SET", "k", "v"],
            ["EVAL", migrate, "1", "k", other.port.to_string()],
            ["EVAL", migrate, "1", "k", closed],
            ["EVAL", "return redis.call('SLOWLOG','GET','5')", "0"],
            ["EVAL", "return redis.call('SET','from-lua','1')", "0"],
            ["GET", "from-lua"]
        ]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let results = &body["results"];
    for i in 1..=3 {
        assert_eq!(results[i]["status"], "error", "{i}: {body}");
        assert!(common::is_script_acl_refusal(&error_of(&results[i])), "{i}: {body}");
    }
    assert_eq!(results[4]["status"], "ok", "{body}");
    assert_eq!(results[5]["reply"]["value"], "1", "{body}");
    assert_eq!(other.cmd_str(&["EXISTS", "k"]), resp::Value::Integer(0), "MIGRATE copied the key");
    let (status, body) = batch(&api, Some("op"), json!([["CONFIG", "GET", "maxmemory"]])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["status"], "ok", "{body}");
}

/// With `--allow-migrate` the batch user may MIGRATE, from Lua too.
#[tokio::test]
async fn allow_migrate_reaches_scripts_too() {
    let other = RedisServer::start();
    let api = embedded(&["--allow-migrate"]);
    let migrate = "return redis.call('MIGRATE','127.0.0.1',ARGV[1],KEYS[1],'0','1000','COPY')";
    let (status, body) = batch(&api, None, json!([["SET", "k", "v"], ["EVAL", migrate, "1", "k", other.port.to_string()]])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][1]["status"], "ok", "{body}");
    assert_eq!(other.cmd_str(&["GET", "k"]), resp::Value::Bulk(b"v".to_vec()));
}

/// With `--redis`, pipelab cannot make its user: it checks at start what
/// scripts could reach as it and warns with the ACL rule to apply; a user
/// restricted by that rule gets no warning.
#[tokio::test]
async fn serve_with_redis_warns_what_scripts_could_reach() {
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &[]);
    wait_for(10, "the start-up check's warning", || api.stderr().contains("ACL SETUSER default -@admin -migrate"));
    let stderr = api.stderr();
    for name in ["MIGRATE", "SLOWLOG GET", "docs/security.md"] {
        assert!(stderr.contains(name), "{name}: {stderr}");
    }
    let restricted = RedisServer::start_with(&["--user", "pl", "on", ">pw", "~*", "&*", "+@all", "-@admin", "-migrate"]);
    let url = format!("redis://pl:pw@127.0.0.1:{}", restricted.port);
    let api = Pipelab::start(&url, &[]);
    wait_for(10, "the start-up check", || api.stderr().contains("may run none of the commands pipelab refuses"));
    assert!(!api.stderr().contains("ACL SETUSER"), "{}", api.stderr());
    assert_eq!(batch(&api, None, json!([["SET", "k", "v"]])).await.0, 200);
}

/// A cut batch's endless script is killed at once on the Redis pipelab
/// manages (its busy threshold is low), and the next batch, of another
/// client, waits for the kill instead of getting BUSY.
#[tokio::test]
async fn the_next_batch_after_a_cut_script_runs() {
    let api = embedded(&["--batch-timeout-ms", "3000"]);
    let (status, body) = batch(&api, None, json!([["EVAL", "while true do end", "0"]])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["status"], "unknown", "{body}");
    let t0 = Instant::now();
    let (status, body) = batch(&api, None, json!([["SET", "after", "1"], ["GET", "after"]])).await;
    assert_eq!(status, 200, "{body}");
    for r in body["results"].as_array().unwrap() {
        assert_eq!(r["status"], "ok", "{body}");
    }
    // Before, it waited for Redis's default threshold (5 s, 2 s past the cut) and got BUSY.
    assert!(t0.elapsed() < Duration::from_millis(1500), "the next batch waited {:?}", t0.elapsed());
}

/// With `--redis` (its busy threshold is the operator's), the next batch
/// waits for the kill to land rather than get BUSY.
#[tokio::test]
async fn the_next_batch_waits_for_the_kill_with_redis() {
    // The kill lands a second after the cut: the next batch, sent at the cut, waits that long.
    let redis = RedisServer::start_with(&["--busy-reply-threshold", "3000"]);
    let api = Pipelab::start(&redis.url, &["--batch-timeout-ms", "2000"]);
    let (status, body) = batch(&api, None, json!([["EVAL", "while true do end", "0"]])).await;
    assert_eq!((status, body["results"][0]["status"].as_str()), (200, Some("unknown")), "{body}");
    let (status, body) = batch(&api, None, json!([["SET", "after", "1"]])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["status"], "ok", "{body}");
}

/// Clients that hold many connections (four addresses, each opening all
/// it may) leave room for others and for health checks: the last eighth
/// of the cap takes only addresses with few connections.
#[tokio::test]
async fn many_idle_sockets_leave_room_for_a_health_check() {
    let redis = RedisServer::start();
    // As found: a cap of 1024, 256 per address (the defaults where the
    // open-file limit allows), four addresses of 256 idle sockets.
    let api = Pipelab::start(&redis.url, &["--max-connections", "1024", "--max-connections-per-ip", "256"]);
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", api.port).parse().unwrap();
    let mut held = Vec::new();
    for host in 2..=5u8 {
        for _ in 0..256 {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(std::net::SocketAddr::from(([127, 0, 0, host], 0))).unwrap();
            if let Ok(s) = socket.connect(addr).await {
                held.push(s);
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, _, _) = api.get_text("/healthz").await;
    assert_eq!(status, 200);
    let (status, _) = batch(&api, None, json!([["PING"]])).await;
    assert_eq!(status, 200);
    drop(held);
}

/// One address's blocking commands do not hold the slots of another.
#[tokio::test]
async fn one_addresss_blocking_commands_leave_slots_for_another() {
    let redis = RedisServer::start();
    let api = std::sync::Arc::new(Pipelab::start(&redis.url, &["--max-concurrent-batches", "16"]));
    let mut blocked = Vec::new();
    for _ in 0..32 {
        let base = api.base.clone();
        blocked.push(tokio::spawn(async move {
            let body = json!({"commands": [["BLPOP", "nothing", "4"]]}).to_string();
            reqwest::Client::new().post(format!("{base}/api/v1/batch")).header("content-type", "application/json").body(body).send().await.map(|r| r.status().as_u16()).unwrap_or(0)
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let other = reqwest::Client::builder().local_address(std::net::IpAddr::from([127, 0, 0, 2])).build().unwrap();
    let t0 = Instant::now();
    let res = other.post(format!("{}/api/v1/batch", api.base)).header("content-type", "application/json").body(json!({"commands": [["SET", "x", "1"]]}).to_string()).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert!(t0.elapsed() < Duration::from_secs(3), "another address waited {:?}", t0.elapsed());
    for b in blocked {
        b.await.unwrap();
    }
}

/// A token on the command line shows in `ps`: `--help` says to prefer the
/// environment or `--tokens-file`, and `pipelab serve` warns when one is
/// given as a flag (not when it comes from the environment).
#[tokio::test]
async fn tokens_on_the_command_line_are_warned_about() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_pipelab")).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("prefer PIPELAB_TOKENS or --tokens-file"), "{help}");
    let redis = RedisServer::start();
    let api = Pipelab::start(&redis.url, &["--token", "secret-in-ps"]);
    wait_for(10, "the warning", || api.stderr().contains("sees the token in `ps`"));
    assert!(!api.stderr().contains("secret-in-ps"), "the token itself is never logged");
    let (mut cmd, port) = serve_command(&["--redis", &redis.url]);
    cmd.env("PIPELAB_TOKENS", "secret-in-env");
    let api = Pipelab::spawn(cmd, port);
    assert_eq!(batch(&api, Some("secret-in-env"), json!([["PING"]])).await.0, 200);
    assert!(!api.stderr().contains("`ps`"), "{}", api.stderr());
}

/// `pipelab doctor --ui`: on an address other machines reach it warns; it
/// answers only its own names (a rebound `Host` is 421) and every answer
/// has the security headers.
#[test]
fn the_doctor_ui_checks_the_host_and_sends_the_security_headers() {
    use std::io::{BufRead, BufReader, Read, Write};
    let redis = RedisServer::start();
    // Port 0: the port it took is read from its start-up line (a port
    // picked free beforehand may be taken by another test meanwhile).
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(["doctor", "--listen", "127.0.0.1:0", "--upstream", &redis.url, "--ui", "0.0.0.0:0", "--web-dir", "/nonexistent"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|l| drop(tx.send(l))));
    let mut seen = String::new();
    let mut ui_port = 0u16;
    while !seen.contains("reachable from other machines") {
        match lines.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => {
                if let Some(addr) = line.strip_prefix("pipelab doctor: page on http://") {
                    ui_port = addr.split('/').next().unwrap().rsplit(':').next().unwrap().parse().unwrap();
                }
                seen.push_str(&line);
            }
            Err(_) => {
                let _ = child.kill();
                panic!("no warning: {seen}");
            }
        }
    }
    assert_ne!(ui_port, 0, "the page's address: {seen}");
    let get = |host: &str| {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", ui_port)).unwrap();
        write!(s, "GET /api/doctor/summary HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out.to_ascii_lowercase()
    };
    let rebound = get("evil.example");
    assert!(rebound.starts_with("http/1.1 421"), "{rebound}");
    let own = get(&format!("127.0.0.1:{ui_port}"));
    assert!(own.starts_with("http/1.1 200"), "{own}");
    for h in ["content-security-policy:", "x-content-type-options: nosniff", "x-frame-options: deny"] {
        assert!(own.contains(h) && rebound.contains(h), "{h}: {own}");
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The server's resident memory (KiB), from /proc.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).unwrap().trim().trim_end_matches(" kB").trim().parse().unwrap()
}

/// Clients that send a `/compare` with `include_results` on a value of NUL
/// bytes (each answer ~100 MB of JSON) and read nothing: the answers held
/// all together stay within `--max-response-memory` (a later batch's
/// large replies are cut, or the batch refused, naming it), and the memory
/// goes back once the clients are gone.
#[tokio::test]
async fn answers_nobody_reads_are_bounded_all_together_and_freed() {
    use std::io::Write;
    let redis = RedisServer::start();
    redis.cmd_str(&["SET", "nul", &"\0".repeat(4 << 20)]);
    let api = Pipelab::start(&redis.url, &["--max-response-memory", "128mb", "--write-timeout-ms", "60000"]);
    let pid = api.pid();
    let body = json!({"commands": [["GET", "nul"]], "include_results": true}).to_string();
    let request = format!("POST /api/v1/compare HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len());
    // Warm up (the first request reads the command table), then the baseline.
    assert_eq!(batch(&api, None, json!([["PING"]])).await.0, 200);
    let base = rss_kib(pid);
    let mut idle = Vec::new();
    for _ in 0..6 {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", api.port)).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        idle.push(s);
    }
    // Once the unread answers hold the budget, a batch of large replies is
    // told why: cut (its replies past the budget not kept) or refused.
    let names_budget = |v: &Json| v.to_string().contains("--max-response-memory");
    let mut peak = base;
    let mut told = None;
    for _ in 0..120 {
        peak = peak.max(rss_kib(pid));
        // Answers refused while others were being made leave the budget
        // free again: one more unread answer each round, until one holds it.
        let mut s = std::net::TcpStream::connect(("127.0.0.1", api.port)).unwrap();
        s.write_all(request.as_bytes()).unwrap();
        idle.push(s);
        let (status, body) = batch(&api, None, json!([["GET", "nul"], ["GET", "nul"]])).await;
        if names_budget(&body) {
            told = Some((status, body));
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (status, told) = told.expect("the budget was never spent: no batch was told of it");
    assert!(status == 200 || status == 503, "{status} {told}");
    if status == 200 {
        assert_ne!(told["summary"]["ok"], 2, "{told}");
    }
    drop(idle);
    // The answers still being made when the clients left are made, then
    // dropped; the memory goes back to the system.
    let mut after = rss_kib(pid);
    for _ in 0..240 {
        peak = peak.max(after);
        if after < base + (64 << 10) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = rss_kib(pid);
    }
    assert!(after < base + (64 << 10), "RSS {} MiB above the baseline after the clients left (peak +{} MiB)", (after - base) >> 10, (peak - base) >> 10);
    // Six answers of ~100 MB each, and the reports they were made from,
    // were over 600 MB held; now the unread ones stay near the budget.
    assert!(peak - base < 450 << 10, "RSS grew by {} MiB", (peak - base) >> 10);
    // The budget is free again: both large replies are kept.
    let (status, out) = batch(&api, None, json!([["GET", "nul"], ["GET", "nul"]])).await;
    assert_eq!((status, &out["summary"]["ok"]), (200, &json!(2)), "{out}");
}

/// On the embedded Redis, the read-only user runs what the server flags
/// `readonly` even outside `@read` (Redis 8's vector-set reads are in no
/// ACL category): a read-only token's VCARD and VSIM answer; VADD does not.
#[tokio::test]
async fn a_readonly_token_reads_vector_sets_on_the_embedded_redis() {
    let probe = RedisServer::start();
    if !common::has_command(&probe, "VADD") {
        return common::lacks("a_readonly_token_reads_vector_sets_on_the_embedded_redis", "vector sets (VADD, VCARD, VSIM)");
    }
    let api = embedded(&["--token", "full", "--readonly-token", "ro"]);
    let (status, body) = batch(&api, Some("full"), json!([["VADD", "v", "VALUES", "2", "1", "0", "a"], ["VADD", "v", "VALUES", "2", "0", "1", "b"]])).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = batch(&api, Some("ro"), json!([["VCARD", "v"], ["VSIM", "v", "ELE", "a"]])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["reply"]["value"], 2, "Redis's own ACL let the read-only user read: {body}");
    assert_eq!(body["results"][1]["reply"]["value"][0]["value"], "a", "{body}");
    let (status, body) = batch(&api, Some("ro"), json!([["VADD", "v", "VALUES", "2", "1", "1", "c"]])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (403, Some("readonly_token")), "{body}");
}

/// On the embedded Redis, COMMANDLOG (Valkey 8.1+) as SLOWLOG: a full
/// token's LEN answers (its Redis user is given it once the server's table
/// shows it), GET is an operator token's.
#[tokio::test]
async fn commandlog_on_the_embedded_redis_as_slowlog() {
    let probe = RedisServer::start();
    if !common::has_command(&probe, "COMMANDLOG") {
        return common::lacks("commandlog_on_the_embedded_redis_as_slowlog", "COMMANDLOG");
    }
    let api = embedded(&["--token", "full", "--operator-token", "op"]);
    let (status, body) = batch(&api, Some("full"), json!([["COMMANDLOG", "LEN", "slow"], ["SLOWLOG", "LEN"]])).await;
    assert_eq!(status, 200, "{body}");
    for i in 0..2 {
        assert_eq!(body["results"][i]["reply"]["type"], "integer", "{i}: {body}");
    }
    let (status, body) = batch(&api, Some("full"), json!([["COMMANDLOG", "GET", "1", "slow"]])).await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("refused_command")), "{body}");
    let (status, body) = batch(&api, Some("op"), json!([["COMMANDLOG", "GET", "1", "slow"]])).await;
    assert_eq!((status, body["results"][0]["status"].as_str()), (200, Some("ok")), "{body}");
}
