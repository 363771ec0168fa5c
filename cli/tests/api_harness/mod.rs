//! `pipelab serve` as a child process for the API tests: the real binary on
//! a free port, talking to a real redis-server (tests/common), stopped with
//! SIGTERM when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;

#[allow(unused_imports)]
pub use crate::common::{free_port, pipelab_client_lines, pipelab_connections, RedisServer};

/// A running `pipelab serve`.
pub struct Pipelab {
    pub port: u16,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The line it printed on stdout when it started listening.
    pub banner: String,
    child: Option<Child>,
    stderr_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
    client: reqwest::Client,
}

/// The `pipelab serve` command on a free port; add arguments, then [`Pipelab::spawn`].
pub fn serve_command(args: &[&str]) -> (Command, u16) {
    let port = free_port();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pipelab"));
    cmd.arg("serve")
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .args(args);
    // Flags only: nothing from the environment of whoever runs the tests.
    for var in [
        "REDIS_URL",
        "PIPELAB_LISTEN",
        "PIPELAB_WEB_DIR",
        "PIPELAB_MAX_BODY_BYTES",
    ] {
        cmd.env_remove(var);
    }
    (cmd, port)
}

impl Pipelab {
    /// `pipelab serve --redis URL` plus `args`.
    pub fn start(redis_url: &str, args: &[&str]) -> Pipelab {
        let mut all = vec!["--redis", redis_url];
        all.extend_from_slice(args);
        let (cmd, port) = serve_command(&all);
        Pipelab::spawn(cmd, port)
    }

    /// Start `cmd` and wait for its "listening on" line (10 s at most).
    pub fn spawn(mut cmd: Command, port: u16) -> Pipelab {
        let dir = tempfile::tempdir().unwrap();
        let stderr_path = dir.path().join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        cmd.stdout(Stdio::piped())
            .stderr(stderr)
            .stdin(Stdio::null());
        let mut child = cmd.spawn().expect("spawn pipelab");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(line)) = lines.next() {
                let _ = tx.send(line);
            }
            for _ in lines {} // keep draining
        });
        let banner = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "pipelab serve did not start; stderr:\n{}",
                    std::fs::read_to_string(&stderr_path).unwrap_or_default()
                );
            }
        };
        assert!(
            banner.contains("listening on"),
            "unexpected first line: {banner}"
        );
        Pipelab {
            port,
            base: format!("http://127.0.0.1:{port}"),
            banner,
            child: Some(child),
            stderr_path,
            _dir: dir,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// POST `body` (raw bytes) to `path`; status and parsed JSON body.
    pub async fn post_raw(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Json) {
        let res = self
            .client
            .post(format!("{}{}", self.base, path))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("HTTP request");
        let status = res.status().as_u16();
        let text = res.text().await.expect("body");
        let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        (status, json)
    }

    pub async fn post(&self, path: &str, body: &Json) -> (u16, Json) {
        self.post_raw(path, serde_json::to_vec(body).unwrap()).await
    }

    /// GET `path`: status, content type and body text.
    pub async fn get_text(&self, path: &str) -> (u16, String, String) {
        let res = self
            .client
            .get(format!("{}{}", self.base, path))
            .send()
            .await
            .expect("HTTP request");
        let status = res.status().as_u16();
        let ctype = res
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status, ctype, res.text().await.unwrap())
    }

    pub async fn get(&self, path: &str) -> (u16, Json) {
        let (status, _, text) = self.get_text(path).await;
        (
            status,
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")),
        )
    }

    /// SIGTERM and wait (10 s at most); the exit status code.
    pub fn stop(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        unsafe_kill(child.id(), 15);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return status.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("pipelab serve did not exit within 10 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pipelab {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// kill(2) through the `kill` utility (tests keep to std).
pub fn unsafe_kill(pid: u32, signal: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status();
}

/// The `pipelab_redis_pool_idle` gauge of `/metrics` (idle pooled
/// connections) plus `pipelab_redis_shared_connections` (those the shared
/// lanes hold between writes, as idle in Redis as the pooled ones).
pub async fn pool_idle(api: &Pipelab) -> usize {
    let (_, _, text) = api.get_text("/metrics").await;
    let gauge = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or(0, |v| v.trim().parse::<f64>().expect("gauge value") as usize)
    };
    gauge("pipelab_redis_pool_idle ") + gauge("pipelab_redis_shared_connections ")
}

/// [`crate::common::assert_only_idle_pooled`] with the idle count of `/metrics`.
pub async fn assert_only_idle_pooled(api: &Pipelab, redis: &RedisServer, max_idle: usize, secs: u64) {
    crate::common::assert_only_idle_pooled(async || pool_idle(api).await, redis, max_idle, secs).await;
}

/// Wait until `f` holds (polling every 20 ms), or panic after `secs`.
pub fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(
            Instant::now() < deadline,
            "timed out after {secs} s waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A raw HTTP/1.1 request (for what reqwest will not send: chunked bodies,
/// early disconnects). Returns the open socket after writing `head` and `body`.
pub fn raw_request(port: u16, head: &str, body: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    s
}

/// Read a whole HTTP/1.1 response (the request must have said
/// `Connection: close`): status and body.
pub fn read_response(mut s: TcpStream) -> (u16, String) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}
