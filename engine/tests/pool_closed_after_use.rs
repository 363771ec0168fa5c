//! A pooled connection that Redis closed moments after its last use (CLIENT
//! KILL right after a batch, before the next one) costs the next batch
//! nothing: it runs once, on a fresh connection, over TCP and over a Unix
//! socket, never `unknown` or `not_sent`. The pool's probe is what sees it
//! over TCP, however recently the connection was used: a TCP socket whose
//! FIN has arrived still accepts the batch's write, and its end of stream
//! then leaves the batch `unknown`.

mod common;

use std::io::Write;
use std::time::Instant;

use common::{batch, execute_pooled, read_one, RedisServer};
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{ExecOptions, Pool, PoolConfig, Status};
use pipelab_engine::run::Target;
use pipelab_model::Mode;
use resp::Value;

/// Each round: a batch, its connection killed at once by an admin
/// connection opened beforehand, then the next batch.
const ROUNDS: usize = 20;

fn ask(admin: &mut std::net::TcpStream, argv: &[&str]) -> Value {
    let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    let mut out = Vec::new();
    resp::encode_command(&argv, &mut out);
    admin.write_all(&out).unwrap();
    read_one(admin)
}

/// The id of the one connection named `pipelab` (the pool's).
fn pooled_id(admin: &mut std::net::TcpStream) -> String {
    let Value::Bulk(text) = ask(admin, &["CLIENT", "LIST"]) else { panic!("CLIENT LIST") };
    let text = String::from_utf8(text).unwrap();
    let ids: Vec<&str> = text.lines().filter(|l| l.split(' ').any(|f| f == "name=pipelab")).filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id="))).collect();
    assert_eq!(ids.len(), 1, "one pooled connection: {text}");
    ids[0].to_string()
}

async fn killed_right_after_use(server: &RedisServer, url: &str) {
    let pool = Target::new(Pool::new(RedisTarget::parse(url).unwrap(), PoolConfig { share: false, ..PoolConfig::default() }));
    let mut admin = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    ask(&mut admin, &["DEL", "n"]);
    let opts = ExecOptions::default();
    execute_pooled(&pool, &batch(Mode::Pipeline, &["SET k 0"]), &opts).await.unwrap();
    let mut gaps = Vec::new();
    for round in 0..ROUNDS {
        let id = pooled_id(&mut admin);
        let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["SET k 1"]), &opts).await.unwrap();
        assert_eq!(r.results[0].status, Status::Ok);
        let used = Instant::now();
        assert_eq!(ask(&mut admin, &["CLIENT", "KILL", "ID", &id]), Value::Integer(1));
        gaps.push(used.elapsed());
        let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["INCR n"]), &opts).await.unwrap();
        assert_eq!(r.results[0].status, Status::Ok, "{url}, round {round}: {:?}", r.connection_error);
        assert!(r.connection_error.is_none(), "{url}, round {round}: {:?}", r.connection_error);
        assert_eq!(pool.idle_count(), 1);
    }
    assert_eq!(ask(&mut admin, &["GET", "n"]), Value::Bulk(ROUNDS.to_string().into_bytes()), "{url}: each INCR ran exactly once");
    gaps.sort();
    eprintln!("{url}: CLIENT KILL {:?} after the batch (median of {ROUNDS})", gaps[ROUNDS / 2]);
}

#[tokio::test]
async fn a_connection_killed_right_after_a_batch_costs_the_next_batch_nothing() {
    let server = RedisServer::start();
    killed_right_after_use(&server, &server.url).await;
    killed_right_after_use(&server, &format!("unix://{}", server.socket.display())).await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_same_on_a_current_thread_runtime() {
    // As `pipelab serve` runs each thread's batches.
    let server = RedisServer::start();
    killed_right_after_use(&server, &server.url).await;
    killed_right_after_use(&server, &format!("unix://{}", server.socket.display())).await;
}
