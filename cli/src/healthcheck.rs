//! `pipelab healthcheck [--path /readyz]`: one HTTP GET of the address
//! `pipelab serve` listens on (`PIPELAB_LISTEN`, as the server reads it), or
//! of `--url`; exit 0 on a 2xx answer, 1 otherwise. The Docker image's
//! HEALTHCHECK uses it so that the runtime image needs no curl or wget,
//! and follows the server wherever `PIPELAB_LISTEN` puts it.

use super::input::Exit;
use clap::Args;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct HealthcheckArgs {
    /// `http://HOST:PORT/PATH` to GET (plain HTTP only). Default: `--path`
    /// on the address `pipelab serve` listens on (`PIPELAB_LISTEN`, default
    /// 127.0.0.1:8080; 0.0.0.0 or [::] asked on the loopback).
    #[arg(long)]
    url: Option<String>,
    /// The path to GET when `--url` is not given.
    #[arg(long, default_value = "/healthz")]
    path: String,
    /// Connect and read timeout, in ms.
    #[arg(long, default_value_t = 3000)]
    timeout_ms: u64,
}

pub fn run(args: HealthcheckArgs) -> Exit {
    let url = match args.url {
        Some(url) => url,
        None => match listen_url(std::env::var("PIPELAB_LISTEN").ok().as_deref(), &args.path) {
            Ok(url) => url,
            Err(e) => {
                eprintln!("pipelab healthcheck: PIPELAB_LISTEN: {e}");
                return Exit::ErrorReplies;
            }
        },
    };
    match get_status(&url, Duration::from_millis(args.timeout_ms)) {
        Ok(code) if (200..300).contains(&code) => Exit::Ok,
        Ok(code) => {
            eprintln!("{url}: HTTP {code}");
            Exit::ErrorReplies
        }
        Err(e) => {
            eprintln!("{url}: {e}");
            Exit::ErrorReplies
        }
    }
}

/// `http://ADDR/PATH` for the server listening on `listen` (`PIPELAB_LISTEN`,
/// default `127.0.0.1:8080`): an unspecified address is reached on the loopback.
pub(super) fn listen_url(listen: Option<&str>, path: &str) -> Result<String, String> {
    let listen = listen.filter(|l| !l.trim().is_empty()).unwrap_or("127.0.0.1:8080");
    let mut addr: std::net::SocketAddr = listen.trim().parse().map_err(|e| format!("{listen:?}: {e}"))?;
    if addr.ip().is_unspecified() {
        addr.set_ip(match addr {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
    Ok(format!("http://{addr}{path}"))
}

#[cfg(test)]
mod tests {
    use super::listen_url;

    #[test]
    fn the_url_follows_where_the_server_listens() {
        assert_eq!(listen_url(None, "/healthz").unwrap(), "http://127.0.0.1:8080/healthz");
        assert_eq!(listen_url(Some("0.0.0.0:9000"), "/readyz").unwrap(), "http://127.0.0.1:9000/readyz");
        assert_eq!(listen_url(Some("[::]:9000"), "readyz").unwrap(), "http://[::1]:9000/readyz");
        assert_eq!(listen_url(Some("10.1.2.3:81"), "/healthz").unwrap(), "http://10.1.2.3:81/healthz");
        assert!(listen_url(Some("nonsense"), "/healthz").unwrap_err().contains("nonsense"));
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
