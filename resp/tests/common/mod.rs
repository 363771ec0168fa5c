//! A real redis-server for tests: started on a free port (bound on
//! 127.0.0.1:0 then released, as the project's rules ask), no persistence,
//! killed when dropped.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub port: u16,
    child: Child,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl RedisServer {
    /// Starts `redis-server` from PATH with `extra` arguments. Panics with a
    /// clear message when it is missing (scripts/setup.sh installs it).
    pub fn start(extra: &[&str]) -> RedisServer {
        for _ in 0..5 {
            let port = free_port();
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]);
            cmd.args(extra).stdout(Stdio::null()).stderr(Stdio::null());
            let child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start redis-server (install it with scripts/setup.sh): {e}"));
            let mut server = RedisServer { port, child };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // the port was taken meanwhile: try another
                }
                if let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) {
                    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    c.write_all(b"PING\r\n").unwrap();
                    let mut buf = [0u8; 7];
                    if c.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n" {
                        return server;
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = server.child.kill();
        }
        panic!("redis-server did not start");
    }

    pub fn connect(&self) -> TcpStream {
        let c = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        c.set_nodelay(true).unwrap();
        c
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads exactly one reply from `c`, with `buf` holding bytes already read.
pub fn read_reply(c: &mut TcpStream, buf: &mut Vec<u8>) -> Option<resp::Value> {
    let mut d = resp::Decoder::new();
    loop {
        match d.decode(buf).expect("server sent malformed RESP") {
            resp::Decoded::Complete { value, consumed } => {
                buf.drain(..consumed);
                return Some(value);
            }
            resp::Decoded::Incomplete { .. } => {
                let mut chunk = [0u8; 65536];
                match c.read(&mut chunk) {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        }
    }
}

/// Sends argv as a multibulk and reads its reply.
pub fn call(c: &mut TcpStream, argv: &[&[u8]]) -> resp::Value {
    let mut out = Vec::new();
    resp::encode_command(argv, &mut out);
    c.write_all(&out).unwrap();
    read_reply(c, &mut Vec::new()).expect("connection closed")
}

/// A small seeded PRNG (splitmix64), so generated cases are reproducible
/// without a dependency.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The seed for generated cases: `PIPELAB_SEED` or a fixed default, printed
/// so that a failure can be replayed.
/// The server's name in `INFO server`: `server_name` (Valkey), `redict`
/// where `redict_version` is given, else `redis`.
pub fn server_name(server: &RedisServer) -> String {
    let mut c = server.connect();
    let resp::Value::Bulk(info) = call(&mut c, &[b"INFO", b"server"]) else { panic!("INFO server") };
    let info = String::from_utf8_lossy(&info).into_owned();
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':').map(|v| v.trim().to_string()));
    field("server_name").unwrap_or_else(|| if field("redict_version").is_some() { "redict".into() } else { "redis".into() })
}

/// A server other than Redis that splits requests unlike Redis: the codec
/// follows Redis, so this is the server's difference, said on stderr and
/// noted for the server matrix (`PIPELAB_MATRIX_NOTES`, scripts/test-servers.sh).
/// On Redis itself a difference is the codec's, and fails the test.
pub fn splits_unlike_redis(server: &RedisServer, test: &str, difference: String) {
    let name = server_name(server);
    assert_ne!(name, "redis", "{test}: {difference}");
    let line = format!("{test}: the server lacks Redis's splitting of malformed inline commands");
    eprintln!("{line} ({name}: {difference})");
    if let Ok(path) = std::env::var("PIPELAB_MATRIX_NOTES") {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("PIPELAB_MATRIX_NOTES is writable");
        std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).expect("write the matrix notes");
    }
}

pub fn seed(default: u64) -> u64 {
    let s = std::env::var("PIPELAB_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default);
    eprintln!("seed {s} (set PIPELAB_SEED to change)");
    s
}
