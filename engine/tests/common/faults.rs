//! A fault-injecting TCP proxy between the executor and a real
//! redis-server, for the network fault tests (tests/fault_net.rs). Each
//! accepted connection gets its own upstream connection and the [`Fault`]
//! set when it was accepted; bytes are counted per direction (request:
//! client to Redis, reply: Redis to client), and the fault strikes when its
//! direction has forwarded `n` bytes. Everything else is forwarded as is,
//! and an end of stream is passed on (a FIN for a FIN), so that Redis
//! closes its side once the client closed.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What happens to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything.
    None,
    /// After `n` request bytes: reset both sockets (RST, SO_LINGER 0).
    ResetAfterRequest(usize),
    /// After `n` reply bytes: reset both sockets.
    ResetAfterReply(usize),
    /// After `n` reply bytes: forward no more reply bytes, ever (requests
    /// still reach Redis). Only a timeout ends it.
    StallReply(usize),
    /// After `n` reply bytes: close the reply direction (FIN to the
    /// client), keep forwarding requests to Redis.
    HalfCloseReply(usize),
    /// After `n` request bytes: close the request direction (FIN to
    /// Redis), keep forwarding replies.
    HalfCloseRequest(usize),
    /// After `n` request bytes: forward nothing either way (a partition;
    /// the sockets stay open). New connections follow [`FaultProxy::set`].
    PartitionAfterRequest(usize),
}

/// The proxy: listens on `127.0.0.1:port`, forwards to `upstream_port`.
pub struct FaultProxy {
    pub port: u16,
    /// `redis://127.0.0.1:PORT`.
    pub url: String,
    fault: Arc<Mutex<Fault>>,
    task: JoinHandle<()>,
}

impl FaultProxy {
    pub async fn start(upstream_port: u16, fault: Fault) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the fault proxy");
        let port = listener.local_addr().unwrap().port();
        let fault = Arc::new(Mutex::new(fault));
        let shared = fault.clone();
        let task = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let f = *shared.lock().unwrap();
                conns.spawn(async move {
                    if let Ok(upstream) = TcpStream::connect(("127.0.0.1", upstream_port)).await {
                        let _ = relay(client, upstream, f).await;
                    }
                });
            }
        });
        FaultProxy { port, url: format!("redis://127.0.0.1:{port}"), fault, task }
    }

    /// The fault for connections accepted from now on (e.g. `Fault::None`
    /// heals a partition for the next batch).
    pub fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }
}

impl Drop for FaultProxy {
    /// Stops accepting and drops every relayed connection.
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One direction of a connection: bytes forwarded, where its fault
/// strikes, and what it does now.
struct Direction {
    bytes: usize,
    limit: Option<usize>,
    /// Bytes read are dropped (after a stall, a half-close, a partition).
    dropping: bool,
    eof: bool,
}

impl Direction {
    fn new(limit: Option<usize>) -> Direction {
        Direction { bytes: 0, limit, dropping: false, eof: false }
    }

    /// Forwards `data` to `to` up to the limit; true when the fault strikes
    /// now (the limit reached).
    async fn pass(&mut self, data: &[u8], to: &mut OwnedWriteHalf) -> std::io::Result<bool> {
        if self.dropping {
            return Ok(false);
        }
        let take = self.limit.map_or(data.len(), |k| data.len().min(k.saturating_sub(self.bytes)));
        to.write_all(&data[..take]).await?;
        self.bytes += take;
        Ok(self.limit.is_some_and(|k| self.bytes >= k))
    }
}

/// One connection: both directions in one loop, so that a fault on one
/// can act on the other.
async fn relay(client: TcpStream, upstream: TcpStream, fault: Fault) -> std::io::Result<()> {
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let (mut up, mut down) = match fault {
        Fault::ResetAfterRequest(k) | Fault::HalfCloseRequest(k) | Fault::PartitionAfterRequest(k) => (Direction::new(Some(k)), Direction::new(None)),
        Fault::ResetAfterReply(k) | Fault::StallReply(k) | Fault::HalfCloseReply(k) => (Direction::new(None), Direction::new(Some(k))),
        Fault::None => (Direction::new(None), Direction::new(None)),
    };
    let mut req = vec![0u8; 16 * 1024];
    let mut rep = vec![0u8; 16 * 1024];
    while !(up.eof && down.eof) {
        tokio::select! {
            n = cr.read(&mut req), if !up.eof => match n? {
                0 => {
                    up.eof = true;
                    let _ = uw.shutdown().await;
                }
                n => if up.pass(&req[..n], &mut uw).await? {
                    match fault {
                        Fault::ResetAfterRequest(_) => return reset(cr, cw, ur, uw),
                        Fault::HalfCloseRequest(_) => {
                            let _ = uw.shutdown().await;
                            up.dropping = true;
                        }
                        _ => (up.dropping, down.dropping) = (true, true),
                    }
                },
            },
            n = ur.read(&mut rep), if !down.eof => match n? {
                0 => {
                    down.eof = true;
                    let _ = cw.shutdown().await;
                }
                n => if down.pass(&rep[..n], &mut cw).await? {
                    match fault {
                        Fault::ResetAfterReply(_) => return reset(cr, cw, ur, uw),
                        Fault::HalfCloseReply(_) => {
                            let _ = cw.shutdown().await;
                            down.dropping = true;
                        }
                        _ => down.dropping = true,
                    }
                },
            },
        }
    }
    Ok(())
}

/// Resets both connections: SO_LINGER 0, then close, which sends an RST
/// (no FIN first, as dropping a write half alone would).
fn reset(cr: OwnedReadHalf, cw: OwnedWriteHalf, ur: OwnedReadHalf, uw: OwnedWriteHalf) -> std::io::Result<()> {
    for stream in [cr.reunite(cw), ur.reunite(uw)] {
        stream.expect("halves of one stream").set_zero_linger()?;
    }
    Ok(())
}
