//! A bare relay: the floor under `pipelab serve` for one SET per request.
//! hyper 1 HTTP/1 on a current-thread tokio runtime (as each of `pipelab
//! serve`'s serving threads); each POST's body is read whole, then one
//! `SET bench v` goes over the single Redis connection and its reply is read
//! (one round trip), and a fixed JSON answer goes back. Nothing is parsed.
//!
//! Usage: bare_relay LISTEN_ADDR REDIS_ADDR   (e.g. 127.0.0.1:7000 127.0.0.1:6379)

use std::{convert::Infallible, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, Request, Response};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::Mutex,
};

const SET: &[u8] = b"*3\r\n$3\r\nSET\r\n$5\r\nbench\r\n$1\r\nv\r\n";
const OK: &[u8] = b"+OK\r\n";

/// The Redis connection, the reply bytes owed on it and how many it gave
/// so far. A request dropped mid round trip (its client gone) leaves bytes
/// unread, which the next request reads before its own: counted in bytes,
/// read as they come, so that no drop point loses count.
struct Redis {
    conn: TcpStream,
    owed: usize,
    read: usize,
}

async fn relay(redis: Arc<Mutex<Redis>>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let _ = req.into_body().collect().await;
    let mut redis = redis.lock().await;
    redis.owed += OK.len();
    let mut ok = redis.conn.write_all(SET).await.is_ok();
    let mut buf = [0u8; 64];
    while ok && redis.owed > 0 {
        let want = redis.owed.min(buf.len());
        let n = match redis.conn.read(&mut buf[..want]).await {
            Ok(n) if n > 0 => n,
            _ => break,
        };
        // Every reply is +OK\r\n: each byte is the one at its place in that stream.
        ok = buf[..n].iter().enumerate().all(|(i, b)| *b == OK[(redis.read + i) % OK.len()]);
        redis.read += n;
        redis.owed -= n;
    }
    ok = ok && redis.owed == 0;
    let (status, body) = if ok { (200, &br#"{"result":"OK"}"#[..]) } else { (502, &br#"{"error":"redis"}"#[..]) };
    Ok(Response::builder().status(status).header("content-type", "application/json").body(Full::new(Bytes::from_static(body))).unwrap())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (listen, redis) = match &args[..] {
        [_, listen, redis] => (listen.clone(), redis.clone()),
        _ => panic!("usage: bare_relay LISTEN_ADDR REDIS_ADDR"),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let conn = TcpStream::connect(&redis).await.expect("connect to Redis");
        conn.set_nodelay(true).unwrap();
        let redis = Arc::new(Mutex::new(Redis { conn, owed: 0, read: 0 }));
        let listener = TcpListener::bind(&listen).await.expect("listen");
        println!("bare_relay: listening on http://{listen}");
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            // As pipelab's acceptor: each response is one complete write.
            let _ = tcp.set_nodelay(true);
            let redis = redis.clone();
            let service = hyper::service::service_fn(move |req| relay(redis.clone(), req));
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(tcp), service).await;
            });
        }
    });
}
