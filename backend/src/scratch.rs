//! TEMPORARY stand-in for the executor (branch `exec`), with the same
//! interface, so the API compiles and runs before the merge. Removed then.
#![allow(dead_code)]

use std::fmt;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::exec::*;

#[derive(Clone, Debug)]
pub enum RedisTarget {
    Tcp(String),
    Unix(std::path::PathBuf),
}

#[derive(Debug)]
pub struct TargetError(pub String);
impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid Redis URL: {}", self.0)
    }
}

impl RedisTarget {
    pub fn parse(url: &str) -> Result<RedisTarget, TargetError> {
        if let Some(p) = url.strip_prefix("unix://") {
            return Ok(RedisTarget::Unix(p.into()));
        }
        let rest = url.strip_prefix("redis://").ok_or(TargetError(url.into()))?;
        Ok(RedisTarget::Tcp(rest.trim_end_matches('/').to_string()))
    }
}
impl fmt::Display for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RedisTarget::Tcp(a) => write!(f, "redis://{a}"),
            RedisTarget::Unix(p) => write!(f, "unix://{}", p.display()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ExecOptions {
    pub connect_timeout: Duration,
    pub read_timeout: Duration,
    pub max_reply_bytes: Option<u64>,
}
impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions { connect_timeout: Duration::from_secs(2), read_timeout: Duration::from_secs(30), max_reply_bytes: None }
    }
}

#[derive(Debug)]
pub enum ExecError {
    Connect(String),
}
impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecError::Connect(m) => write!(f, "{m}"),
        }
    }
}

trait S: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> S for T {}

pub async fn execute(target: &RedisTarget, batch: &Batch, opts: &ExecOptions) -> Result<Report, ExecError> {
    let conn = async {
        Ok::<Box<dyn S>, std::io::Error>(match target {
            RedisTarget::Tcp(a) => Box::new(tokio::net::TcpStream::connect(a.as_str()).await?),
            RedisTarget::Unix(p) => Box::new(tokio::net::UnixStream::connect(p).await?),
        })
    };
    let mut s = tokio::time::timeout(opts.connect_timeout, conn)
        .await
        .map_err(|_| ExecError::Connect("connect timeout".into()))?
        .map_err(|e| ExecError::Connect(e.to_string()))?;
    let mut buf = Vec::new();
    let mut dec = resp::Decoder::new();
    let mut sent = 0u64;
    let mut recv = 0u64;
    let mut trips = 0u64;
    let start = Instant::now();
    async fn read_one(s: &mut Box<dyn S>, buf: &mut Vec<u8>, dec: &mut resp::Decoder, recv: &mut u64) -> Option<resp::Value> {
        loop {
            if let Ok(resp::Decoded::Complete { value, consumed }) = dec.decode(buf) {
                buf.drain(..consumed);
                return Some(value);
            }
            let mut tmp = [0u8; 65536];
            let n = s.read(&mut tmp).await.ok()?;
            if n == 0 {
                return None;
            }
            *recv += n as u64;
            buf.extend_from_slice(&tmp[..n]);
        }
    }
    let mut hs = Vec::new();
    resp::encode_command(&["CLIENT", "SETNAME", "pipelab"], &mut hs);
    s.write_all(&hs).await.map_err(|e| ExecError::Connect(e.to_string()))?;
    read_one(&mut s, &mut buf, &mut dec, &mut recv).await.ok_or(ExecError::Connect("closed".into()))?;
    recv = 0;
    let n = batch.commands.len();
    let mut results: Vec<CommandResult> = (0..n)
        .map(|index| CommandResult { index, status: Status::NotSent, reply: None, sent_us: None, reply_us: None })
        .collect();
    let chunk = match batch.mode {
        Mode::Sequential => 1,
        Mode::Pipeline => batch.batch_size.max(1),
        Mode::Transaction => n,
    };
    let us = |t: Instant| t.duration_since(start).as_micros() as u64;
    let mut i = 0;
    'outer: while i < n {
        let end = (i + chunk).min(n);
        let mut out = Vec::new();
        if batch.mode == Mode::Transaction {
            resp::encode_command(&["MULTI"], &mut out);
        }
        for c in &batch.commands[i..end] {
            resp::encode_command(c, &mut out);
        }
        if batch.mode == Mode::Transaction {
            resp::encode_command(&["EXEC"], &mut out);
        }
        if batch.simulated_rtt_ms > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(batch.simulated_rtt_ms / 1000.0)).await;
        }
        if s.write_all(&out).await.is_err() {
            break;
        }
        sent += out.len() as u64;
        trips += 1;
        let t = us(Instant::now());
        for r in &mut results[i..end] {
            r.status = Status::Unknown;
            r.sent_us = Some(t);
        }
        if batch.mode == Mode::Transaction {
            let _ = read_one(&mut s, &mut buf, &mut dec, &mut recv).await;
            for _ in i..end {
                let _ = read_one(&mut s, &mut buf, &mut dec, &mut recv).await;
            }
            let exec = tokio::time::timeout(opts.read_timeout, read_one(&mut s, &mut buf, &mut dec, &mut recv)).await.ok().flatten();
            if let Some(resp::Value::Array(items)) = exec {
                for (r, v) in results[i..end].iter_mut().zip(items) {
                    r.status = if v.is_error() { Status::Error } else { Status::Ok };
                    r.reply = Some(v);
                    r.reply_us = Some(us(Instant::now()));
                }
            }
            break;
        }
        for r in &mut results[i..end] {
            let v = tokio::time::timeout(opts.read_timeout, read_one(&mut s, &mut buf, &mut dec, &mut recv)).await.ok().flatten();
            let Some(v) = v else { break 'outer };
            r.status = if v.is_error() { Status::Error } else { Status::Ok };
            r.reply = Some(v);
            r.reply_us = Some(us(Instant::now()));
            if opts.max_reply_bytes.is_some_and(|m| recv > m) {
                break 'outer;
            }
        }
        i = end;
    }
    let total_us = us(Instant::now());
    let count = |st: Status| results.iter().filter(|r| r.status == st).count();
    let summary = Summary {
        mode: Some(batch.mode),
        commands: n,
        ok: count(Status::Ok),
        errors: count(Status::Error),
        not_sent: count(Status::NotSent),
        unknown: count(Status::Unknown),
        round_trips: trips,
        write_calls: trips,
        bytes_sent: sent,
        bytes_received: recv,
        total_us,
        commands_per_sec: if total_us > 0 { n as f64 * 1e6 / total_us as f64 } else { 0.0 },
        simulated_rtt_ms: batch.simulated_rtt_ms,
    };
    Ok(Report { summary, results, transaction: None })
}
