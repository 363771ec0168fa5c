//! Side connections: a few commands on a fresh connection of their own,
//! outside any pool and with no handshake but AUTH, for what must work even
//! while Redis runs a script: the only commands a BUSY Redis answers are
//! flagged `allow-busy` (AUTH, HELLO, SCRIPT KILL, FUNCTION KILL, …), and
//! anything else waits or answers `-BUSY`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{connect_stream, ConnectError, RedisTarget};

/// Why a side connection got no answers.
#[derive(Debug)]
pub enum SideError {
    /// Could not connect.
    Connect(ConnectError),
    /// The connection failed before every reply came.
    Lost(String),
    /// Not every reply came within the wait.
    NoAnswer,
}

impl std::fmt::Display for SideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SideError::Connect(e) => write!(f, "{e}"),
            SideError::Lost(m) => f.write_str(m),
            SideError::NoAnswer => f.write_str("no answer in time"),
        }
    }
}

/// Sends `commands` (after AUTH, if the target has a password) on a fresh
/// connection (connecting within `connect_timeout`) and reads their
/// replies (AUTH's left out) within `wait`.
pub async fn commands(target: &RedisTarget, connect_timeout: Duration, wait: Duration, commands: &[&[&[u8]]]) -> Result<Vec<resp::Value>, SideError> {
    let mut stream = connect_stream(target, connect_timeout).await.map_err(SideError::Connect)?;
    let mut out = Vec::new();
    let auth = target.password.as_ref().map(|pass| match &target.username {
        Some(user) => vec![b"AUTH".to_vec(), user.clone().into_bytes(), pass.clone().into_bytes()],
        None => vec![b"AUTH".to_vec(), pass.clone().into_bytes()],
    });
    if let Some(argv) = &auth {
        resp::encode_command(argv, &mut out);
    }
    for argv in commands {
        resp::encode_command(argv.iter(), &mut out);
    }
    let expected = commands.len() + usize::from(auth.is_some());
    let io = async {
        stream.write_all(&out).await?;
        let (mut buf, mut start, mut replies) = (Vec::new(), 0, Vec::new());
        let mut decoder = resp::Decoder::new();
        while replies.len() < expected {
            match decoder.decode(&buf[start..]) {
                Ok(resp::Decoded::Complete { value, consumed }) => {
                    start += consumed;
                    replies.push(value);
                    continue;
                }
                Ok(resp::Decoded::Incomplete { .. }) => {}
                Err(e) => return Err(std::io::Error::other(e.to_string())),
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok(replies)
    };
    match tokio::time::timeout(wait, io).await {
        Ok(Ok(mut replies)) => {
            if auth.is_some() {
                replies.remove(0);
            }
            Ok(replies)
        }
        Ok(Err(e)) => Err(SideError::Lost(e.to_string())),
        Err(_) => Err(SideError::NoAnswer),
    }
}

/// `SCRIPT KILL` and `FUNCTION KILL`: their answers as text (`OK`,
/// `NOTBUSY …`, `UNKILLABLE …`: the script wrote, and only a restart ends it).
pub async fn kill_scripts(target: &RedisTarget, connect_timeout: Duration, wait: Duration) -> Result<Vec<String>, SideError> {
    let replies = commands(target, connect_timeout, wait, &[&[b"SCRIPT", b"KILL"], &[b"FUNCTION", b"KILL"]]).await?;
    Ok(replies.iter().map(|r| r.display().trim_end().to_string()).collect())
}

/// Whether Redis is stuck: PING answered `-BUSY`, or not within `wait` (a
/// script under its busy threshold answers nothing). `false` when Redis
/// cannot be reached at all, or answers.
pub async fn is_busy(target: &RedisTarget, connect_timeout: Duration, wait: Duration) -> bool {
    match commands(target, connect_timeout, wait, &[&[b"PING"]]).await {
        Ok(replies) => replies.first().is_some_and(|r| r.is_error() && r.display().contains("BUSY")),
        Err(SideError::NoAnswer) => true,
        Err(SideError::Connect(_) | SideError::Lost(_)) => false,
    }
}

/// PING answered with anything but an error within `wait`.
pub async fn answers_ping(target: &RedisTarget, connect_timeout: Duration, wait: Duration) -> bool {
    matches!(commands(target, connect_timeout, wait, &[&[b"PING"]]).await, Ok(r) if r.first().is_some_and(|v| !v.is_error()))
}
