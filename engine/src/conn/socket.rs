//! The byte stream under a connection: TCP (`TCP_NODELAY`), a Unix socket,
//! or TLS over TCP with rustls (`tokio-rustls`, the `ring` provider), opened
//! under the connect timeout; and [`Counted`], which counts the `write`
//! system calls and bytes the socket accepted, and the reads.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::target::{Endpoint, RedisTarget, TlsSettings};
use super::ConnectError;


/// Why the socket or its TLS session could not be opened: the `reason` of
/// [`ConnectError::Unreachable`].
#[derive(Debug, thiserror::Error)]
enum SocketError {
    #[error("{0}")]
    Io(#[from] io::Error),
    #[cfg(not(unix))]
    #[error("Unix sockets are not supported on this platform")]
    NoUnixSockets,
    #[error("TLS: {0}")]
    Tls(rustls::Error),
    #[error("TLS CA file {}: {error}", path.display())]
    CaFile { path: std::path::PathBuf, error: Box<dyn std::error::Error + Send + Sync> },
    #[error("TLS server name `{host}`: {error}")]
    ServerName { host: String, error: rustls::pki_types::InvalidDnsNameError },
    #[error("TLS handshake: {0}")]
    Handshake(io::Error),
}

/// Any byte stream a connection can run over (TCP, Unix, TLS, delay line).
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// Opens the socket (and TLS session) to `target`, without any Redis
/// handshake; `pipelab proxy` relays raw bytes over it.
///
/// Errors: timeout after `connect_timeout`, refused, TLS failure; the message
/// names the target (without password).
pub async fn connect_stream(target: &RedisTarget, connect_timeout: Duration) -> Result<Box<dyn Stream>, ConnectError> {
    connect_stream_fd(target, connect_timeout).await.map(|(s, _)| s)
}

/// The socket's file descriptor (Unix only), kept to probe an idle pooled
/// connection without reading from it ([`super::Conn::probe_idle`]).
#[cfg(unix)]
pub(super) type RawSock = Option<std::os::fd::RawFd>;
#[cfg(not(unix))]
pub(super) type RawSock = Option<()>;

pub(super) async fn connect_stream_fd(target: &RedisTarget, connect_timeout: Duration) -> Result<(Box<dyn Stream>, RawSock), ConnectError> {
    #[cfg(unix)]
    use std::os::fd::AsRawFd;
    let fut = async {
        let r: Result<(Box<dyn Stream>, RawSock), SocketError> = match &target.endpoint {
            Endpoint::Tcp { host, port } => {
                let tcp = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                // Each write is a whole command or chunk: send it now.
                tcp.set_nodelay(true)?;
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
                let s = tokio::net::UnixStream::connect(path).await?;
                let fd = Some(s.as_raw_fd());
                Ok((Box::new(s) as Box<dyn Stream>, fd))
            }
            #[cfg(not(unix))]
            Endpoint::Unix { .. } => Err(SocketError::NoUnixSockets),
        };
        r
    };
    match tokio::time::timeout(connect_timeout, fut).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(reason)) => Err(ConnectError::Unreachable { target: target.to_string(), reason: reason.to_string() }),
        Err(_) => Err(ConnectError::SocketTimeout { target: target.to_string(), ms: connect_timeout.as_millis() }),
    }
}

async fn tls_connect(
    tcp: tokio::net::TcpStream,
    host: &str,
    tls: &TlsSettings,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, SocketError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(SocketError::Tls)?;
    let config = if tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(insecure::AcceptAny(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &tls.ca_file {
            let ca_file = |error: Box<dyn std::error::Error + Send + Sync>| SocketError::CaFile { path: path.clone(), error };
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| ca_file(e.into()))? {
                let cert = cert.map_err(|e| ca_file(e.into()))?;
                roots.add(cert).map_err(|e| ca_file(e.into()))?;
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    let name = ServerName::try_from(host.to_string()).map_err(|error| SocketError::ServerName { host: host.to_string(), error })?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(SocketError::Handshake)
}

mod insecure {
    //! `rediss://…#insecure`: accept any certificate (still checks the
    //! handshake signatures, so the session itself is sound).
    use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    use rustls::{DigitallySignedStruct, SignatureScheme};
    use std::sync::Arc;

    type Signature = Result<HandshakeSignatureValid, rustls::Error>;

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
        // The handshake signatures are checked as rustls's own verifier does.
        fn verify_tls12_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Signature {
            rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
        }
        fn verify_tls13_signature(&self, m: &[u8], c: &CertificateDer<'_>, d: &DigitallySignedStruct) -> Signature {
            rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
        }
        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.0.signature_verification_algorithms.supported_schemes()
        }
    }
}


/// Counts `write` system calls under `write_all`.
pub(super) struct Counted {
    pub(super) inner: Box<dyn Stream>,
    pub(super) syscalls: u64,
    /// Reads that returned (bytes, end of stream or an error): one `read`
    /// system call each on a plain socket.
    pub(super) reads: u64,
    /// Bytes the socket accepted (some may be in flight even if a later
    /// write of the same call failed).
    pub(super) accepted: u64,
}

impl AsyncRead for Counted {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if r.is_ready() {
            self.reads += 1;
        }
        r
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
