//! `pipelab healthcheck --url http://127.0.0.1:8080/healthz`: one HTTP GET,
//! exit 0 on a 2xx answer, 1 otherwise. The Docker image's HEALTHCHECK uses
//! it so that the runtime image needs no curl or wget.

use super::input::Exit;
use clap::Args;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// `http://HOST:PORT/PATH` to GET (plain HTTP only).
    #[arg(long, default_value = "http://127.0.0.1:8080/healthz")]
    url: String,
    /// Connect and read timeout, in ms.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
}

pub fn run(args: HealthcheckArgs) -> Exit {
    match get_status(&args.url, Duration::from_millis(args.timeout_ms)) {
        Ok(code) if (200..300).contains(&code) => Exit::Ok,
        Ok(code) => {
            eprintln!("{}: HTTP {code}", args.url);
            Exit::ErrorReplies
        }
        Err(e) => {
            eprintln!("{}: {e}", args.url);
            Exit::ErrorReplies
        }
    }
}

/// The status code of `GET url`.
fn get_status(url: &str, timeout: Duration) -> std::io::Result<u16> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
    let rest = url.strip_prefix("http://").ok_or_else(|| bad("the URL must start with http://"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let addr = host.to_socket_addrs()?.next().ok_or_else(|| bad("host does not resolve"))?;
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\nConnection: close\r\n\r\n")?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head)?;
    // "HTTP/1.x NNN ..."
    std::str::from_utf8(&head[..n])
        .ok()
        .and_then(|t| t.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| bad("not an HTTP response"))
}
