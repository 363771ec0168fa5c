//! One connection to Redis: where to connect ([`RedisTarget`], from a URL),
//! the socket (TCP, Unix, TLS with rustls), the handshake (AUTH, SELECT,
//! `HELLO 3`, `CLIENT SETNAME pipelab`) and the read buffer that turns
//! bytes into replies, timestamped when the read that completed them returned.
//!
//! A [`Conn`] that failed (timeout, error, reply-size cut, cancelled batch)
//! is dropped: it may hold unread replies, and reusing it would hand those
//! replies to the wrong commands (redis-py#2624, ioredis#800, redis-rs#698).
//! Only a connection whose batch ended cleanly may be reused, through
//! [`crate::exec::Pool`], which enforces the rest of the rules.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::delay;

/// Default Redis port.
pub const DEFAULT_PORT: u16 = 6379;
/// Name given to every connection with `CLIENT SETNAME` (shows in `CLIENT LIST`).
pub const CLIENT_NAME: &str = "pipelab";

/// Where a Redis server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Tcp { host: String, port: u16 },
    Unix { path: PathBuf },
}

/// TLS settings for `rediss://` URLs.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TlsSettings {
    /// Skip certificate verification (URL fragment `#insecure`, as redis-rs).
    pub insecure: bool,
    /// PEM file of extra trusted CA certificates (URL query `?tls_ca=PATH`);
    /// without it the Mozilla roots of `webpki-roots` are trusted.
    pub ca_file: Option<PathBuf>,
}

/// A Redis server and the credentials to use, parsed from a URL.
///
/// `Debug` and `Display` never show the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisTarget {
    pub endpoint: Endpoint,
    /// `Some` for `rediss://`.
    pub tls: Option<TlsSettings>,
    /// ACL user (Redis 6+); `None` authenticates as `default`.
    pub username: Option<String>,
    pub password: Option<String>,
    /// Database number sent with `SELECT` (0 is not sent).
    pub db: u32,
}

/// Why a URL is not a Redis target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid Redis URL: {0}")]
pub struct TargetError(pub String);

fn bad(msg: impl Into<String>) -> TargetError {
    TargetError(msg.into())
}

impl RedisTarget {
    /// Parses `redis://[user:pass@]host[:port][/db]`, `rediss://…` (TLS;
    /// `#insecure` skips verification, `?tls_ca=PATH` adds a CA file),
    /// `unix:///path.sock[?db=N&user=U&password=P]` or a bare `/path.sock`.
    ///
    /// User and password are percent-decoded. The host may be `[ipv6]`.
    /// Errors name the part that is wrong.
    pub fn parse(url: &str) -> Result<RedisTarget, TargetError> {
        let url = url.trim();
        if url.starts_with('/') {
            return Ok(RedisTarget::unix(PathBuf::from(url)));
        }
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad(format!("`{url}` has no scheme (expected redis://, rediss:// or unix://)")))?;
        let (rest, fragment) = match rest.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (rest, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let params = parse_query(query.unwrap_or(""))?;
        let mut target = match scheme.to_ascii_lowercase().as_str() {
            "redis" | "rediss" => {
                let mut t = parse_tcp(rest)?;
                if scheme.eq_ignore_ascii_case("rediss") {
                    t.tls = Some(TlsSettings { insecure: fragment == Some("insecure"), ca_file: None });
                } else if fragment.is_some_and(|f| !f.is_empty()) {
                    return Err(bad("a #fragment is only meaningful for rediss:// (#insecure)"));
                }
                t
            }
            "unix" | "redis+unix" => {
                if rest.is_empty() {
                    return Err(bad("unix:// needs a socket path, e.g. unix:///tmp/redis.sock"));
                }
                RedisTarget::unix(PathBuf::from(percent_decode(rest, "socket path")?))
            }
            other => return Err(bad(format!("unsupported scheme `{other}` (expected redis, rediss or unix)"))),
        };
        for (key, value) in params {
            match key.as_str() {
                "db" => target.db = parse_db(&value)?,
                "user" | "username" => target.username = Some(value).filter(|v| !v.is_empty()),
                "pass" | "password" => target.password = Some(value),
                "tls_ca" => match &mut target.tls {
                    Some(tls) => tls.ca_file = Some(PathBuf::from(value)),
                    None => return Err(bad("tls_ca is only meaningful for rediss://")),
                },
                other => return Err(bad(format!("unknown query parameter `{other}` (known: db, user, password, tls_ca)"))),
            }
        }
        Ok(target)
    }

    fn unix(path: PathBuf) -> RedisTarget {
        RedisTarget { endpoint: Endpoint::Unix { path }, tls: None, username: None, password: None, db: 0 }
    }
}

fn parse_tcp(rest: &str) -> Result<RedisTarget, TargetError> {
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let (mut username, mut password) = (None, None);
    if let Some(info) = userinfo {
        match info.split_once(':') {
            Some((u, p)) => {
                username = Some(percent_decode(u, "user")?).filter(|u| !u.is_empty());
                password = Some(percent_decode(p, "password")?);
            }
            // `redis://secret@host` is read as a password, as redis-cli -u does.
            None => password = Some(percent_decode(info, "password")?),
        }
    }
    let (host, port) = if let Some(after) = hostport.strip_prefix('[') {
        let end = after.find(']').ok_or_else(|| bad("IPv6 host is missing `]`"))?;
        let host = &after[..end];
        let port = match &after[end + 1..] {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(|| bad("expected `:port` after `]`"))?),
        };
        (host.to_string(), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad("host is empty"));
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| bad(format!("port `{p}` is not a number in 1..65535")))?,
    };
    let db = match path.trim_end_matches('/') {
        "" => 0,
        d => parse_db(d)?,
    };
    Ok(RedisTarget { endpoint: Endpoint::Tcp { host, port }, tls: None, username, password, db })
}

fn parse_db(s: &str) -> Result<u32, TargetError> {
    s.parse::<u32>().map_err(|_| bad(format!("database `{s}` is not a non-negative integer")))
}

fn parse_query(q: &str) -> Result<Vec<(String, String)>, TargetError> {
    let mut out = Vec::new();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.push((percent_decode(k, "query")?, percent_decode(v, "query")?));
    }
    Ok(out)
}

fn percent_decode(s: &str, what: &str) -> Result<String, TargetError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad(format!("bad percent-escape in {what} at byte {i}")))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad(format!("{what} is not UTF-8 after percent-decoding")))
}

impl fmt::Display for RedisTarget {
    /// The URL with the password replaced by `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let user = self.username.as_deref().unwrap_or("");
        let cred = match (&self.username, &self.password) {
            (_, Some(_)) => format!("{user}:***@"),
            (Some(u), None) => format!("{u}@"),
            (None, None) => String::new(),
        };
        match &self.endpoint {
            Endpoint::Tcp { host, port } => {
                let scheme = if self.tls.is_some() { "rediss" } else { "redis" };
                let host = if host.contains(':') { format!("[{host}]") } else { host.clone() };
                write!(f, "{scheme}://{cred}{host}:{port}")?;
                if self.db != 0 {
                    write!(f, "/{}", self.db)?;
                }
                Ok(())
            }
            Endpoint::Unix { path } => {
                write!(f, "unix://{}", path.display())?;
                if self.db != 0 {
                    write!(f, "?db={}", self.db)?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for RedisTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisTarget")
            .field("endpoint", &self.endpoint)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("db", &self.db)
            .finish()
    }
}

// ---------------------------------------------------------------------------
// Sockets

/// Any byte stream a connection can run over (TCP, Unix, TLS, delay line).
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// Opens the socket (and TLS session) to `target`, without any Redis
/// handshake; `pipelab proxy` relays raw bytes over it.
///
/// Errors: timeout after `connect_timeout`, refused, TLS failure; the message
/// names the target (without password).
pub async fn connect_stream(target: &RedisTarget, connect_timeout: Duration) -> Result<Box<dyn Stream>, String> {
    connect_stream_fd(target, connect_timeout).await.map(|(s, _)| s)
}

/// The socket's file descriptor (Unix only), kept to probe an idle pooled
/// connection without reading from it ([`Conn::probe_idle`]).
#[cfg(unix)]
type RawSock = Option<std::os::fd::RawFd>;
#[cfg(not(unix))]
type RawSock = Option<()>;

async fn connect_stream_fd(target: &RedisTarget, connect_timeout: Duration) -> Result<(Box<dyn Stream>, RawSock), String> {
    #[cfg(unix)]
    use std::os::fd::AsRawFd;
    let fut = async {
        let r: Result<(Box<dyn Stream>, RawSock), String> = match &target.endpoint {
            Endpoint::Tcp { host, port } => {
                let tcp = tokio::net::TcpStream::connect((host.as_str(), *port)).await.map_err(|e| e.to_string())?;
                // Each write is a whole command or chunk: send it now.
                tcp.set_nodelay(true).map_err(|e| e.to_string())?;
                #[cfg(unix)]
                let fd = Some(tcp.as_raw_fd());
                #[cfg(not(unix))]
                let fd = None;
                match &target.tls {
                    None => Ok((Box::new(tcp) as Box<dyn Stream>, fd)),
                    Some(tls) => Ok((Box::new(tls_connect(tcp, host, tls).await?) as Box<dyn Stream>, fd)),
                }
            }
            #[cfg(unix)]
            Endpoint::Unix { path } => {
                let s = tokio::net::UnixStream::connect(path).await.map_err(|e| e.to_string())?;
                let fd = Some(s.as_raw_fd());
                Ok((Box::new(s) as Box<dyn Stream>, fd))
            }
            #[cfg(not(unix))]
            Endpoint::Unix { .. } => Err("Unix sockets are not supported on this platform".to_string()),
        };
        r
    };
    match tokio::time::timeout(connect_timeout, fut).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(format!("cannot connect to {target}: {e}")),
        Err(_) => Err(format!("cannot connect to {target}: timed out after {} ms", connect_timeout.as_millis())),
    }
}

async fn tls_connect(
    tcp: tokio::net::TcpStream,
    host: &str,
    tls: &TlsSettings,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let config = if tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(insecure::AcceptAny(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &tls.ca_file {
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| format!("TLS CA file {}: {e}", path.display()))? {
                let cert = cert.map_err(|e| format!("TLS CA file {}: {e}", path.display()))?;
                roots.add(cert).map_err(|e| format!("TLS CA file {}: {e}", path.display()))?;
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    let name = ServerName::try_from(host.to_string()).map_err(|e| format!("TLS server name `{host}`: {e}"))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))
}

mod insecure {
    //! `rediss://…#insecure`: accept any certificate (still checks the
    //! handshake signatures, so the session itself is sound).
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, SignatureScheme};
    use std::sync::Arc;

    #[derive(Debug)]
    pub struct AcceptAny(pub Arc<rustls::crypto::CryptoProvider>);

    impl ServerCertVerifier for AcceptAny {
        fn verify_server_cert(
            &self,
            _: &CertificateDer<'_>,
            _: &[CertificateDer<'_>],
            _: &ServerName<'_>,
            _: &[u8],
            _: UnixTime,
        ) -> Result<ServerCertVerified, rustls::Error> {
            Ok(ServerCertVerified::assertion())
        }
        fn verify_tls12_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
        }
        fn verify_tls13_signature(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}

// ---------------------------------------------------------------------------
// The connection

/// How to open a [`Conn`].
#[derive(Clone, Debug)]
pub struct ConnSettings {
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes of a reply (also bounds each write).
    pub read_timeout: Duration,
    /// Switch to RESP3 with `HELLO 3`.
    pub resp3: bool,
    /// Put the socket behind the delay line: this round-trip time in ms is added.
    pub simulated_rtt_ms: f64,
    /// Stop reading once this many reply bytes were received (`None`: no limit).
    pub max_reply_bytes: Option<u64>,
    /// No read or write waits past this instant (the batch's time limit):
    /// then [`ReadError::Deadline`] / [`WriteError::Deadline`].
    pub deadline: Option<Instant>,
}

/// Byte and call counts on one connection, since [`Conn::reset_stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Calls of [`Conn::write`]: one per command (sequential) or chunk (pipeline).
    pub write_calls: u64,
    /// `write` system calls on the socket those took (a large chunk may need
    /// several). Behind the delay line: writes into the line, which takes
    /// each write whole.
    pub write_syscalls: u64,
    /// Bytes the socket accepted, including those of a write that then failed.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// RESP3 push messages received and set aside: out-of-band data (e.g.
    /// client-side caching invalidations) that answers no command.
    pub pushes: u64,
}

/// Why a reply could not be read. The connection must be dropped after any of these.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("connection closed by the server")]
    Closed,
    #[error("no reply within {0} ms (read timeout)")]
    Timeout(u128),
    #[error("read failed: {0}")]
    Io(#[from] io::Error),
    #[error("the server sent malformed RESP: {0}")]
    Protocol(String),
    #[error("reply limit reached: more than {0} bytes received")]
    Limit(u64),
    #[error("{DEADLINE}")]
    Deadline,
}

/// Why a batch stopped at its deadline.
const DEADLINE: &str = "batch timeout: the batch ran past its time limit and was cut";

/// Why a write failed. What it carried may or may not have reached Redis.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("no progress writing within {0} ms (timeout)")]
    Timeout(u128),
    #[error("write failed: {0}")]
    Io(#[from] io::Error),
    #[error("{DEADLINE}")]
    Deadline,
}

/// Counts `write` system calls under `write_all`.
struct Counted {
    inner: Box<dyn Stream>,
    syscalls: u64,
    /// Bytes the socket accepted (some may be in flight even if a later
    /// write of the same call failed).
    accepted: u64,
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.syscalls += 1;
            self.accepted += n as u64;
        }
        r
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Read buffer growth step, in bytes.
const READ_CHUNK: usize = 64 * 1024;

/// An open, handshaken connection to Redis. Used for one batch, then
/// dropped, or, if the batch ended cleanly, kept idle in a
/// [`crate::exec::Pool`] for the next one.
pub struct Conn {
    stream: Counted,
    /// The socket under `stream`, to probe it while idle.
    raw: RawSock,
    /// Behind the delay line (`simulated_rtt_ms > 0`): never pooled.
    delayed: bool,
    /// Spoke `HELLO 3` in the handshake.
    resp3: bool,
    /// The tokio runtime whose I/O driver the socket is registered with
    /// (the one it was opened on): see [`Conn::runtime`].
    runtime: Option<tokio::runtime::Id>,
    /// Received bytes; `buf[pos..filled]` not yet decoded.
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    decoder: resp::Decoder,
    stats: IoStats,
    read_timeout: Duration,
    max_reply_bytes: Option<u64>,
    deadline: Option<Instant>,
    /// When the last read returned: a reply completed by bytes already
    /// buffered arrived then, not when it is decoded.
    last_read_at: Instant,
}

impl Conn {
    /// Connects, runs the handshake in one write: `HELLO 3 [AUTH user pass]
    /// SETNAME pipelab` (RESP3) or `[AUTH [user] pass]` + `CLIENT SETNAME
    /// pipelab` (RESP2), then `SELECT db`; then puts the socket behind the
    /// delay line if `settings.simulated_rtt_ms > 0`. The simulated RTT is
    /// the batch's: connecting and the handshake do not pay it (they are
    /// outside `total_us` too, and a user waiting one RTT more than the
    /// summary shows would be misled).
    ///
    /// Errors (a message naming the step and Redis's error) if the socket,
    /// TLS, AUTH, HELLO or SELECT fails. Stats start at zero after the handshake.
    pub async fn connect(target: &RedisTarget, settings: &ConnSettings) -> Result<Conn, String> {
        let one_way = delay::one_way(settings.simulated_rtt_ms)?;
        let (raw, fd) = connect_stream_fd(target, settings.connect_timeout).await?;
        let mut conn = Conn {
            stream: Counted { inner: raw, syscalls: 0, accepted: 0 },
            raw: fd,
            delayed: !one_way.is_zero(),
            resp3: settings.resp3,
            runtime: tokio::runtime::Handle::try_current().ok().map(|h| h.id()),
            buf: vec![0; READ_CHUNK],
            pos: 0,
            filled: 0,
            decoder: resp::Decoder::new(),
            stats: IoStats::default(),
            read_timeout: settings.read_timeout,
            max_reply_bytes: None,
            deadline: None,
            last_read_at: Instant::now(),
        };
        conn.handshake(target, settings).await?;
        if !one_way.is_zero() {
            let raw = std::mem::replace(&mut conn.stream.inner, Box::new(tokio::io::duplex(1).0));
            conn.stream.inner = Box::new(delay::wrap(raw, one_way).map_err(|e| format!("delay line: {e}"))?);
        }
        conn.reset_stats();
        conn.max_reply_bytes = settings.max_reply_bytes;
        conn.deadline = settings.deadline;
        Ok(conn)
    }

    async fn handshake(&mut self, target: &RedisTarget, settings: &ConnSettings) -> Result<(), String> {
        let mut steps: Vec<(&str, Vec<Vec<u8>>, bool)> = Vec::new(); // (name, argv, fatal)
        let user = target.username.clone().unwrap_or_else(|| "default".into());
        if settings.resp3 {
            let mut argv: Vec<Vec<u8>> = vec!["HELLO".into(), "3".into()];
            if let Some(pass) = &target.password {
                argv.extend([b"AUTH".to_vec(), user.clone().into_bytes(), pass.clone().into_bytes()]);
            }
            argv.extend([b"SETNAME".to_vec(), CLIENT_NAME.into()]);
            steps.push(("HELLO 3", argv, true));
        } else {
            if let Some(pass) = &target.password {
                let mut argv: Vec<Vec<u8>> = vec!["AUTH".into()];
                if target.username.is_some() {
                    argv.push(user.clone().into_bytes());
                }
                argv.push(pass.clone().into_bytes());
                steps.push(("AUTH", argv, true));
            }
            // Not fatal: some proxies do not implement CLIENT SETNAME.
            steps.push(("CLIENT SETNAME", vec!["CLIENT".into(), "SETNAME".into(), CLIENT_NAME.into()], false));
        }
        if target.db != 0 {
            steps.push(("SELECT", vec!["SELECT".into(), target.db.to_string().into_bytes()], true));
        }
        let mut out = Vec::new();
        for (_, argv, _) in &steps {
            resp::encode_command(argv, &mut out);
        }
        let fail = |step: &str, e: &dyn fmt::Display| format!("handshake with {target} failed at {step}: {e}");
        self.write(&out).await.map_err(|e| fail(steps[0].0, &e))?;
        let mut first_error = None;
        for (name, _, fatal) in &steps {
            let (reply, _) = self.read_reply().await.map_err(|e| fail(name, &e))?;
            if reply.is_error() && *fatal && first_error.is_none() {
                first_error = Some(fail(name, &reply_text(&reply)));
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Byte and call counts since the handshake.
    pub fn stats(&self) -> IoStats {
        IoStats { write_syscalls: self.stream.syscalls, bytes_sent: self.stream.accepted, ..self.stats }
    }

    fn reset_stats(&mut self) {
        self.stats = IoStats::default();
        self.stream.syscalls = 0;
        self.stream.accepted = 0;
    }

    /// True if the socket has accepted no byte since the handshake or the
    /// last [`Conn::prepare_reuse`]: nothing of the batch can have reached Redis.
    pub fn nothing_sent(&self) -> bool {
        self.stream.accepted == 0
    }

    /// Behind the delay line (simulated RTT).
    pub fn is_delayed(&self) -> bool {
        self.delayed
    }

    /// Speaks RESP3 (`HELLO 3` in the handshake).
    pub fn is_resp3(&self) -> bool {
        self.resp3
    }

    /// The runtime the socket was opened on, whose I/O driver tells when it
    /// is readable. Any runtime can use the connection, but on another one
    /// each readiness event crosses threads (a wake-up of the runtime that
    /// polls the task), so a pool hands it preferably to the same runtime.
    pub fn runtime(&self) -> Option<tokio::runtime::Id> {
        self.runtime
    }

    /// True if no received byte waits undecoded in the read buffer: every
    /// reply that arrived was read.
    pub fn buffer_empty(&self) -> bool {
        self.pos == self.filled
    }

    /// Whether an idle connection is still fit for a new batch: the read
    /// buffer is empty and the socket has nothing to read (no EOF from a
    /// server that went away or killed the client, no error, no stray
    /// bytes). A non-blocking `recv(MSG_PEEK)`: reads nothing, one system call.
    ///
    /// Without a socket to probe (non-Unix), only the buffer is checked.
    pub fn probe_idle(&self) -> bool {
        if !self.buffer_empty() {
            return false;
        }
        #[cfg(unix)]
        if let Some(fd) = self.raw {
            let mut byte = 0u8;
            // SAFETY: `fd` is the open socket owned by `self.stream` (alive as
            // long as `self`); MSG_PEEK leaves its data in place.
            let n = unsafe {
                libc::recv(fd, (&mut byte as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
            };
            if n >= 0 {
                return false; // 0: EOF; >0: bytes nobody asked for
            }
            let err = io::Error::last_os_error();
            return err.kind() == io::ErrorKind::WouldBlock;
        }
        true
    }

    /// Gives back read-buffer memory a large reply made it grow (up to the
    /// reply-size limit): an idle connection keeps only the usual 64 KiB.
    /// Does nothing unless the buffer is empty.
    pub fn shrink_buffer(&mut self) {
        if self.buffer_empty() && self.buf.len() > READ_CHUNK {
            self.buf = vec![0; READ_CHUNK];
            self.pos = 0;
            self.filled = 0;
        }
    }

    /// Readies an idle connection for the next batch: zero stats, a fresh
    /// decoder, that batch's read timeout, reply-size limit and deadline.
    pub fn prepare_reuse(&mut self, settings: &ConnSettings) {
        self.reset_stats();
        self.decoder = resp::Decoder::new();
        self.pos = 0;
        self.filled = 0;
        self.read_timeout = settings.read_timeout;
        self.max_reply_bytes = settings.max_reply_bytes;
        self.deadline = settings.deadline;
    }

    /// Until when the next read or write may wait: the read timeout from
    /// now, or the batch's deadline if that comes first (`true`).
    fn wait_until(&self) -> (tokio::time::Instant, bool) {
        let timeout = Instant::now() + self.read_timeout;
        match self.deadline {
            Some(d) if d <= timeout => (d.into(), true),
            _ => (timeout.into(), false),
        }
    }

    /// Writes `bytes` as one write call (the kernel may split it, see
    /// [`IoStats::write_syscalls`]).
    ///
    /// Returns the instant the write was issued: a command counts as sent
    /// from there. (Its completion is a poor clock: on a busy machine the
    /// thread can be preempted by the very server it just woke, and then
    /// "completed" comes after the reply.)
    pub async fn write(&mut self, bytes: &[u8]) -> Result<Instant, WriteError> {
        self.stats.write_calls += 1;
        self.write_continued(bytes).await
    }

    /// Writes more bytes of the current write call, as a pipeline chunk
    /// sent in segments does: counted in bytes and system calls, not as
    /// another [`IoStats::write_calls`]. Returns and fails as [`Conn::write`].
    pub async fn write_continued(&mut self, bytes: &[u8]) -> Result<Instant, WriteError> {
        let issued = Instant::now();
        let (until, is_deadline) = self.wait_until();
        let fut = async {
            self.stream.write_all(bytes).await?;
            self.stream.flush().await
        };
        let read_timeout = self.read_timeout;
        match tokio::time::timeout_at(until, fut).await {
            Ok(Ok(())) => Ok(issued),
            Ok(Err(e)) => Err(WriteError::Io(e)),
            Err(_) if is_deadline => Err(WriteError::Deadline),
            Err(_) => Err(WriteError::Timeout(read_timeout.as_millis())),
        }
    }

    /// Reads the next reply and the instant the read that completed it returned.
    /// Replies are read in order, one per call: never skipped, never reordered.
    ///
    /// Out-of-band RESP3 push messages are skipped: they answer no command.
    pub async fn read_reply(&mut self) -> Result<(resp::Value, Instant), ReadError> {
        match self.next_reply(true).await? {
            Some(reply) => Ok(reply),
            None => unreachable!("a waiting read returns a reply or an error"),
        }
    }

    /// The next reply if it has already arrived (in the buffer or the
    /// socket), without waiting: `Ok(None)` if it has not. Lets a writer
    /// read replies between writes, as `redis-cli --pipe` does, instead of
    /// leaving them to pile up in Redis's output buffer.
    pub async fn try_read_reply(&mut self) -> Result<Option<(resp::Value, Instant)>, ReadError> {
        self.next_reply(false).await
    }

    /// [`Conn::read_reply`]; without `wait`, `None` instead of waiting for the socket.
    async fn next_reply(&mut self, wait: bool) -> Result<Option<(resp::Value, Instant)>, ReadError> {
        loop {
            if self.pos < self.filled {
                match self.decoder.decode(&self.buf[self.pos..self.filled]) {
                    Ok(resp::Decoded::Complete { value, consumed }) => {
                        self.pos += consumed;
                        if self.pos == self.filled {
                            self.pos = 0;
                            self.filled = 0;
                        }
                        if matches!(value, resp::Value::Push(_)) {
                            self.stats.pushes += 1;
                            continue;
                        }
                        return Ok(Some((value, self.last_read_at)));
                    }
                    Ok(resp::Decoded::Incomplete { needed }) => self.make_room(needed),
                    Err(e) => return Err(ReadError::Protocol(e.to_string())),
                }
            } else {
                self.make_room(None);
            }
            if let Some(limit) = self.max_reply_bytes {
                if self.stats.bytes_received > limit {
                    return Err(ReadError::Limit(limit));
                }
            }
            let read = if wait {
                let (until, is_deadline) = self.wait_until();
                match tokio::time::timeout_at(until, self.stream.read(&mut self.buf[self.filled..])).await {
                    Ok(r) => r,
                    Err(_) if is_deadline => return Err(ReadError::Deadline),
                    Err(_) => return Err(ReadError::Timeout(self.read_timeout.as_millis())),
                }
            } else {
                let (stream, buf) = (&mut self.stream, &mut self.buf[self.filled..]);
                let ready = std::future::poll_fn(|cx| {
                    let mut rb = ReadBuf::new(buf);
                    Poll::Ready(match Pin::new(&mut *stream).poll_read(cx, &mut rb) {
                        Poll::Ready(r) => Some(r.map(|()| rb.filled().len())),
                        Poll::Pending => None,
                    })
                })
                .await;
                match ready {
                    Some(r) => r,
                    None => return Ok(None),
                }
            };
            let n = match read {
                Ok(0) => return Err(ReadError::Closed),
                Ok(n) => n,
                Err(e) => return Err(ReadError::Io(e)),
            };
            self.last_read_at = Instant::now();
            self.filled += n;
            self.stats.bytes_received += n as u64;
        }
    }

    /// Ensures free space after `filled`: moves undecoded bytes to the front
    /// and grows the buffer when a reply needs more than is free.
    fn make_room(&mut self, needed: Option<usize>) {
        let pending = self.filled - self.pos;
        let want = pending + needed.unwrap_or(0).max(READ_CHUNK / 4);
        if self.pos > 0 && (self.buf.len() - self.filled < READ_CHUNK / 4 || self.pos > self.buf.len() / 2) {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.pos = 0;
            self.filled = pending;
        }
        if self.buf.len() - self.filled < READ_CHUNK / 4 || self.buf.len() < want {
            let new_len = (self.buf.len() * 2).max(want + READ_CHUNK);
            self.buf.resize(new_len, 0);
        }
    }
}

/// The text of an error or status reply, lossily decoded.
pub fn reply_text(v: &resp::Value) -> String {
    match v {
        resp::Value::Error(b) | resp::Value::BlobError(b) | resp::Value::Simple(b) | resp::Value::Bulk(b) => {
            String::from_utf8_lossy(b).into_owned()
        }
        other => other.display(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Endpoint {
        Endpoint::Tcp { host: host.into(), port }
    }

    #[test]
    fn parses_redis_urls() {
        let t = RedisTarget::parse("redis://127.0.0.1:6390").unwrap();
        assert_eq!(t.endpoint, tcp("127.0.0.1", 6390));
        assert_eq!((t.username, t.password, t.db, t.tls), (None, None, 0, None));

        let t = RedisTarget::parse("redis://alice:p%40ss%3Aw@redis.example:7000/3").unwrap();
        assert_eq!(t.endpoint, tcp("redis.example", 7000));
        assert_eq!(t.username.as_deref(), Some("alice"));
        assert_eq!(t.password.as_deref(), Some("p@ss:w"));
        assert_eq!(t.db, 3);

        let t = RedisTarget::parse("redis://:secret@localhost").unwrap();
        assert_eq!(t.endpoint, tcp("localhost", 6379));
        assert_eq!((t.username.as_deref(), t.password.as_deref()), (None, Some("secret")));

        let t = RedisTarget::parse("rediss://[::1]:6380/1#insecure").unwrap();
        assert_eq!(t.endpoint, tcp("::1", 6380));
        assert_eq!(t.tls, Some(TlsSettings { insecure: true, ca_file: None }));
        assert_eq!(t.db, 1);

        let t = RedisTarget::parse("rediss://h?tls_ca=/etc/ca.pem").unwrap();
        assert_eq!(t.tls.unwrap().ca_file, Some(PathBuf::from("/etc/ca.pem")));
    }

    #[test]
    fn parses_unix_sockets() {
        let t = RedisTarget::parse("/tmp/redis.sock").unwrap();
        assert_eq!(t.endpoint, Endpoint::Unix { path: "/tmp/redis.sock".into() });
        let t = RedisTarget::parse("unix:///tmp/r.sock?db=2&password=x").unwrap();
        assert_eq!(t.endpoint, Endpoint::Unix { path: "/tmp/r.sock".into() });
        assert_eq!((t.db, t.password.as_deref()), (2, Some("x")));
    }

    #[test]
    fn rejects_bad_urls_naming_the_part() {
        for (url, part) in [
            ("localhost:6379", "scheme"),
            ("http://x", "scheme"),
            ("redis://h:99999", "port"),
            ("redis://h:0", "port"),
            ("redis://h/abc", "database"),
            ("redis://:6379", "host"),
            ("redis://h?foo=1", "foo"),
            ("redis://a:%zz@h", "percent"),
            ("redis://[::1", "]"),
            ("redis://h?tls_ca=x", "tls_ca"),
        ] {
            let e = RedisTarget::parse(url).unwrap_err().to_string();
            assert!(e.contains(part), "{url}: {e}");
        }
    }

    #[test]
    fn debug_and_display_hide_the_password() {
        let t = RedisTarget::parse("redis://bob:hunter2@h:1/2").unwrap();
        let d = format!("{t:?} {t}");
        assert!(!d.contains("hunter2"), "{d}");
        assert_eq!(t.to_string(), "redis://bob:***@h:1/2");
    }
}
