//! `pipelab doctor`: a proxy between an application and Redis that decodes
//! both streams with the `resp` codec and reports the application's round
//! trips ("flights"), its pipeline depth, and the pipelines it missed.
//!
//! - [`tracker`]: one connection's requests and replies → flights;
//! - [`pattern`] and [`keys`]: commands grouped as `SET user:*` (key
//!   positions from the server's `COMMAND`; values are never kept);
//! - [`missed`]: runs of single-command flights a pipeline would have sent
//!   at once, and the saving `(n − 1) × RTT`; [`depends`]: the evidence
//!   that a command was computed from an earlier reply (it carries its bytes);
//! - [`stats`]: totals across connections (bounded), [`report`]: the JSON
//!   shapes, [`live`]: the terminal view;
//! - [`relay`]: forwarding, byte for byte, with the tracker looking on.
//!
//! With the `page` feature, [`page`]: its page and JSON API (`--ui`, and
//! under `/api/v1/doctor` of `pipelab serve --doctor-listen`), over the
//! HTTP layer the server's surfaces use (`pipelab_http`).
//!
//! Forwarding never depends on decoding: traffic the tracker cannot follow
//! is forwarded as is and the connection is reported `undecoded`.

pub mod depends;
pub mod keys;
pub mod live;
pub mod missed;
#[cfg(feature = "page")]
pub mod page;
pub mod pattern;
pub mod relay;
pub mod report;
pub mod stats;
pub mod tracker;

use std::sync::Arc;
use std::time::Duration;

use pipelab_engine::conn::{connect_stream, AskError, Conn, ConnSettings, ConnectError, RedisTarget};
use pipelab_engine::delay;

pub use keys::KeyTable;
pub use missed::Rule;
pub use stats::Doctor;

/// Why no key table could be had from the server.
#[derive(Debug, thiserror::Error)]
pub enum KeyTableError {
    #[error("{0}")]
    Connect(#[from] ConnectError),
    #[error("{0}")]
    Conn(#[from] AskError),
    /// `COMMAND`'s error reply, as Redis wrote it.
    #[error("{0}")]
    Refused(String),
}

/// The key table of `target`, from its `COMMAND` reply; an empty table (and
/// the reason) if it cannot be had.
pub async fn key_table(target: &RedisTarget, connect_timeout: Duration) -> Result<KeyTable, KeyTableError> {
    let settings = ConnSettings { read_timeout: Duration::from_secs(10), ..ConnSettings::plain(connect_timeout) };
    let mut conn = Conn::connect(target, &settings).await?;
    let mut out = Vec::new();
    resp::encode_command([&b"COMMAND"[..]], &mut out);
    conn.write(&out).await.map_err(AskError::from)?;
    let (reply, _) = conn.read_reply().await.map_err(AskError::from)?;
    if let Some(m) = reply.error_message() {
        return Err(KeyTableError::Refused(String::from_utf8_lossy(m).into_owned()));
    }
    Ok(KeyTable::from_command_reply(&reply))
}

/// Accepts clients on `listener` forever, each relayed to `upstream` (behind
/// the delay line when `link` simulates anything) and tracked by `doctor`.
/// Clients over `--max-connections` are closed at once (counted as refused).
/// The client does its own AUTH and SELECT.
pub async fn serve(listener: tokio::net::TcpListener, upstream: RedisTarget, connect_timeout: Duration, link: delay::Link, doctor: Arc<Doctor>) {
    accept(listener, upstream, connect_timeout, link, doctor, false).await
}

/// As [`serve`], each connection to `upstream` first logged in as the
/// target's user and database (AUTH, SELECT; their replies kept from the
/// client, their commands from the tracker): `pipelab serve --doctor-listen`,
/// whose clients get the rights of its batches, not of the Redis's default user.
pub async fn serve_logged_in(listener: tokio::net::TcpListener, upstream: RedisTarget, connect_timeout: Duration, link: delay::Link, doctor: Arc<Doctor>) {
    accept(listener, upstream, connect_timeout, link, doctor, true).await
}

/// Why [`log_in`] failed.
#[derive(Debug, thiserror::Error)]
enum LoginError {
    /// Writing AUTH/SELECT failed.
    #[error("{0}")]
    Write(std::io::Error),
    #[error("logging in: {0}")]
    Read(std::io::Error),
    /// The reply line that was not `+…`, trimmed.
    #[error("logging in: {0}")]
    Refused(String),
    #[error("logging in: a reply line of over 4 KiB")]
    LongLine,
}

/// AUTH (when `target` has a password) and SELECT (a database other than 0)
/// on a fresh `server`, before anything of the client's: each reply is one line.
async fn log_in(server: &mut Box<dyn pipelab_engine::conn::Stream>, target: &RedisTarget) -> Result<(), LoginError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut out = Vec::new();
    let mut steps = 0;
    if let Some(pass) = &target.password {
        let mut argv = vec![&b"AUTH"[..]];
        argv.extend(target.username.as_ref().map(|u| u.as_bytes()));
        argv.push(pass.as_bytes());
        resp::encode_command(argv, &mut out);
        steps += 1;
    }
    let db = target.db.to_string();
    if target.db != 0 {
        resp::encode_command([&b"SELECT"[..], db.as_bytes()], &mut out);
        steps += 1;
    }
    if steps == 0 {
        return Ok(());
    }
    server.write_all(&out).await.map_err(LoginError::Write)?;
    server.flush().await.map_err(LoginError::Write)?;
    let mut line = Vec::new();
    while steps > 0 {
        line.push(server.read_u8().await.map_err(LoginError::Read)?);
        if line.ends_with(b"\r\n") {
            if line.first() != Some(&b'+') {
                return Err(LoginError::Refused(String::from_utf8_lossy(&line).trim_end().to_string()));
            }
            line.clear();
            steps -= 1;
        } else if line.len() > 4096 {
            return Err(LoginError::LongLine);
        }
    }
    Ok(())
}

async fn accept(listener: tokio::net::TcpListener, upstream: RedisTarget, connect_timeout: Duration, link: delay::Link, doctor: Arc<Doctor>, login: bool) {
    loop {
        let (client, peer) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                eprintln!("pipelab doctor: accept: {e}");
                // Out of file descriptors: let some close before trying again.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Some(tracker) = doctor.admit(peer.to_string()) else {
            drop(client);
            continue;
        };
        let _ = client.set_nodelay(true);
        let upstream = upstream.clone();
        let doctor = doctor.clone();
        tokio::spawn(async move {
            let connected = match connect_stream(&upstream, connect_timeout).await {
                Ok(mut server) if login => log_in(&mut server, &upstream).await.map(|()| server).map_err(|e| e.to_string()),
                other => other.map_err(|e| e.to_string()),
            };
            let result = match connected {
                Ok(server) if link.is_none() => relay::relay(client, server, &tracker, &doctor).await.map_err(|e| e.to_string()),
                Ok(server) => match delay::wrap(server, link) {
                    Ok(line) => relay::relay(client, line, &tracker, &doctor).await.map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                },
                Err(e) => Err(e),
            };
            if let Err(e) = result {
                // A reset by either side is how connections often end: not worth a line each.
                if !e.contains("reset") && !e.contains("Broken pipe") {
                    eprintln!("pipelab doctor: {peer}: {e}");
                }
            }
            doctor.close(&tracker);
        });
    }
}
