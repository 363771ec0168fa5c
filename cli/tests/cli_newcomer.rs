//! The CLI as a newcomer meets it: a progress bar on a terminal's stderr
//! for `pipelab run` and `pipelab compare` (none with `--quiet` or when
//! stderr is not a terminal), `--replies` printing each reply redis-cli
//! style, commands counted from 1 in messages, a summary that reads right,
//! errors that name the subcommand and the CLI's own options, input with no
//! command refused as the API refuses it, and `pipelab serve`'s log level
//! from `RUST_LOG` as the ecosystem sets it.

#[path = "../../engine/tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use common::RedisServer;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pipelab")
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("REDIS_URL")
        .spawn()
        .unwrap();
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

/// Runs `pipelab ARGS` under a pseudo-terminal (util-linux `script`), as
/// from an interactive shell: what the terminal showed, stdout and stderr together.
fn on_terminal(args: &[&str]) -> String {
    let cmd = std::iter::once(bin()).chain(args.iter().copied()).map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ");
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).stdin(Stdio::null()).output().expect("script (util-linux)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pings(n: usize) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    for _ in 0..n {
        writeln!(f, "PING").unwrap();
    }
    f
}

#[test]
fn a_progress_bar_on_a_terminal_only_and_not_with_quiet() {
    let s = RedisServer::start();
    // 80 PINGs at 20 ms: at least 1.6 s, many redraws of a 10 Hz bar.
    let file = pings(80);
    let path = file.path().to_str().unwrap();
    let args = ["run", path, "--mode", "sequential", "--rtt", "20", "--redis", &s.url];
    let shown = on_terminal(&args);
    assert!(shown.contains(" commands, ") && shown.contains("ETA") && shown.contains('%'), "{shown}");
    assert!(shown.contains("errors: 0, replies: 80"), "the summary follows: {shown}");

    let quiet: Vec<&str> = args.iter().copied().chain(["--quiet"]).collect();
    let shown = on_terminal(&quiet);
    assert!(!shown.contains("ETA") && !shown.contains("elapsed") && shown.contains("errors: 0, replies: 80"), "{shown}");

    // Not a terminal (a pipe): the summary alone.
    let out = run(&args, b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr.is_empty(), "nothing on a piped stderr: {stderr:?}");
}

#[test]
fn replies_redis_cli_style_one_numbering_and_a_summary_that_reads_right() {
    let s = RedisServer::start();
    let out = run(
        &["run", "-", "--mode", "sequential", "--replies", "--redis", &s.url],
        b"SET k v\nINCR n\nRPUSH l a b\nLRANGE l 0 -1\nINCR k\n",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "an error reply: exit 1");
    let replies: Vec<&str> = stdout.lines().take(6).collect();
    assert_eq!(
        replies,
        ["OK", "(integer) 1", "(integer) 2", "1) \"a\"", "2) \"b\"", "(error) ERR value is not an integer or out of range"],
        "{stdout}"
    );
    // The summary after the replies; one write system call is singular.
    assert!(stdout.contains("writes: 5 (5 write system calls)"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("command 5 (line 5): ERR value is not an integer"), "counted from 1: {stderr}");

    let out = run(&["run", "-", "--redis", &s.url], b"PING\nPING\n");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("(1 write system call)"), "{stdout}");
    assert!(stdout.contains("time: ") && stdout.contains(" ms, "), "{stdout}");
}

#[test]
fn compare_shows_each_runs_progress_on_a_terminal_only() {
    let s = RedisServer::start();
    // 80 PINGs at 20 ms sequentially: at least 1.6 s of the first run.
    let file = pings(80);
    let path = file.path().to_str().unwrap();
    let args = ["compare", path, "--rtt", "20", "--redis", &s.url];
    let shown = on_terminal(&args);
    assert!(shown.contains("sequential, run 1 of 4") && shown.contains("/80 commands") && shown.contains("ETA"), "{shown}");
    assert!(shown.contains("sequential: 80 commands in ") && shown.contains("auto, run 4 of 4"), "each run done is listed: {shown}");
    assert!(shown.contains("speedup"), "the table follows: {shown}");

    let quiet: Vec<&str> = args.iter().copied().chain(["--quiet"]).collect();
    assert!(!on_terminal(&quiet).contains("run 1 of 4"));
    let json: Vec<&str> = args.iter().copied().chain(["--json"]).collect();
    assert!(!on_terminal(&json).contains("run 1 of 4"), "JSON alone");
    let out = run(&args, b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "nothing on a piped stderr: {:?}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn no_command_at_all_is_bad_input_as_for_the_api() {
    let s = RedisServer::start();
    for input in [&b""[..], b"\n\n  \n"] {
        for json in [false, true] {
            let mut args = vec!["run", "-", "--redis", &s.url];
            if json {
                args.push("--json");
            }
            let out = run(&args, input);
            assert_eq!(out.status.code(), Some(2), "{input:?} json {json}");
            assert_eq!(String::from_utf8_lossy(&out.stderr), "pipelab run: stdin holds no command (only blank lines)\n");
            assert!(out.stdout.is_empty(), "no summary, no JSON: {:?}", String::from_utf8_lossy(&out.stdout));
        }
    }
}

/// Input that does not parse before its first command ran nothing: the
/// error on stderr alone, no summary (or JSON) of zeros on stdout that reads as a run.
#[test]
fn input_bad_from_its_first_command_prints_no_summary() {
    let s = RedisServer::start();
    let cases: [(&[u8], &str); 2] = [
        (b"SET k \"a b\n", "pipelab run: line 1, column 7: unbalanced double quote"),
        (b"*2\r\n$3\r\nGET\r\n$x\r\n", "pipelab run: byte 13"),
    ];
    for (input, error) in cases {
        for mode in ["pipeline", "sequential", "transaction", "auto"] {
            for json in [false, true] {
                let mut args = vec!["run", "-", "--mode", mode, "--redis", &s.url];
                if json {
                    args.push("--json");
                }
                let out = run(&args, input);
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert_eq!(out.status.code(), Some(2), "{mode} json {json}: {stderr}");
                assert!(stderr.starts_with(error), "{mode} json {json}: {stderr}");
                assert!(stderr.contains("no command before it was sent"), "{stderr}");
                assert!(out.stdout.is_empty(), "{mode} json {json}: no summary: {:?}", String::from_utf8_lossy(&out.stdout));
            }
        }
    }
    assert_eq!(s.cmd_str(&["DBSIZE"]), resp::Value::Integer(0), "nothing was sent");
    // A bad line after a good one: what ran is summed up as before.
    let out = run(&["run", "-", "--redis", &s.url], b"SET a 1\nSET k \"a b\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).trim_end().ends_with("errors: 0, replies: 1"), "{:?}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn messages_name_the_subcommand_and_the_clis_options() {
    let s = RedisServer::start();
    let out = run(&["resp", "decode", "-"], b"*2\r\n$3\r\nGE");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "pipelab resp decode: byte 0: incomplete value: the input ends inside it (10 bytes left over)\n");
    let out = run(&["resp", "inline", "-"], b"*1\r\n$x\r\n");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("pipelab resp inline: "), "{:?}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["resp", "format", "/nonexistent/file"], b"");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("pipelab resp format: cannot open /nonexistent/file"));

    let out = run(&["run", "-", "--mode", "pipeline", "--watch", "k", "--redis", &s.url], b"GET k\n");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "pipelab run: --watch: WATCH is only meaningful in transaction mode\n");
    let out = run(&["run", "-", "--mode", "transaction", "--redis", &s.url], b"MULTI\nGET k\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MULTI cannot be part of a transaction batch") && stderr.contains("--watch in the CLI"), "{stderr}");
}

#[test]
fn serve_takes_its_log_level_from_rust_log_after_pipelab_log() {
    let s = RedisServer::start();
    let serve = |env: &[(&str, &str)]| {
        let port = common::free_port();
        let mut cmd = Command::new(bin());
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--redis", &s.url])
            .env_remove("PIPELAB_LOG")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        // Ready: then stop it and read all it logged.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "pipelab serve did not listen");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let _ = child.wait();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        err
    };
    assert!(serve(&[]).contains("pipelab serve listening"), "info by default");
    assert!(!serve(&[("RUST_LOG", "warn")]).contains("pipelab serve listening"), "RUST_LOG=warn: no info lines");
    assert!(serve(&[("RUST_LOG", "warn"), ("PIPELAB_LOG", "info")]).contains("pipelab serve listening"), "PIPELAB_LOG first");
}

/// What a read-only token may do is written once, in the code
/// (`READONLY_RULE`, next to the check that applies it): the OpenAPI
/// document `pipelab openapi` prints and docs/api.md both say it in those
/// words (line breaks aside), so neither can tell a reader less or more.
#[test]
fn the_openapi_document_and_the_docs_say_what_a_read_only_token_may_do_as_the_code_does() {
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let rule = words(pipelab_http::auth::READONLY_RULE);
    assert!(rule.contains("POST `/api/v1/batch`") && rule.contains("403 `forbidden`"), "{rule}");
    let out = run(&["openapi"], b"");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let description = words(doc["info"]["description"].as_str().unwrap());
    assert!(description.contains(&rule) && !description.contains("{READONLY_RULE}"), "the OpenAPI description: {description}");
    let md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/api.md")).unwrap();
    assert!(words(&md).contains(&rule), "docs/api.md does not say, in these words: {rule}");
}
