//! `pipelab run` as a newcomer meets it (issue 21): a progress bar on a
//! terminal's stderr (none with `--quiet` or when stderr is not a
//! terminal), `--replies` printing each reply redis-cli style, commands
//! counted from 1 in messages, and a summary that reads right.

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
