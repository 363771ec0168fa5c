//! The connection pool's rules (`pipelab_engine::exec::pool`), against a real
//! redis-server: a connection is reused only after a batch that ended
//! cleanly, never after a reply-size cut, a timeout or a cancelled batch;
//! no state (MULTI, WATCH, client name, RESP3) leaks from one batch into
//! the next; a Redis restart costs no batch; idle connections are bounded
//! and time out.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{batch, RedisServer};
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{ExecOptions, Pool, PoolConfig, Report, Status, TransactionStatus};
use pipelab_model::Mode;
use common::execute_pooled;
use pipelab_engine::run::Target;
use resp::Value;

/// A pool whose every batch has a connection to itself: these are the
/// rules of such connections (shared ones: `shared_conn.rs`).
fn pool_for(server: &RedisServer, config: PoolConfig) -> Arc<Target> {
    Target::new(Pool::new(RedisTarget::parse(&server.url).unwrap(), PoolConfig { share: false, ..config }))
}

async fn run(pool: &Arc<Target>, mode: Mode, lines: &[&str]) -> Report {
    execute_pooled(pool, &batch(mode, lines), &ExecOptions::default()).await.expect("batch runs")
}

/// `(id, fields)` of every connection named `pipelab` in CLIENT LIST.
fn pipelab_clients(server: &RedisServer) -> Vec<(u64, String)> {
    let Value::Bulk(text) = server.cmd_str(&["CLIENT", "LIST"]) else { panic!("CLIENT LIST") };
    String::from_utf8(text)
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').any(|f| f == "name=pipelab"))
        .map(|l| {
            let id = l.split(' ').find_map(|f| f.strip_prefix("id=")).unwrap().parse().unwrap();
            (id, l.to_string())
        })
        .collect()
}

/// Waits (yielding to the runtime: the pool's reaper and the delay line
/// are tasks) until `f` holds, or panics after 5 s.
async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn statuses(r: &Report) -> Vec<Status> {
    r.results.iter().map(|x| x.status).collect()
}

#[tokio::test]
async fn reused_after_a_clean_batch_even_with_error_replies() {
    let server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig::default());
    let r = run(&pool, Mode::Pipeline, &["SET k 1", "INCR k", "HSET k f v"]).await;
    assert_eq!(statuses(&r), [Status::Ok, Status::Ok, Status::Error]);
    assert_eq!(pool.idle_count(), 1);
    let first = pipelab_clients(&server);
    assert_eq!(first.len(), 1, "{first:?}");

    for mode in [Mode::Sequential, Mode::Pipeline, Mode::Transaction] {
        let r = run(&pool, mode, &["INCR k", "GET k"]).await;
        assert_eq!(statuses(&r), [Status::Ok, Status::Ok], "{mode:?}");
        let now = pipelab_clients(&server);
        assert_eq!(now.len(), 1, "{mode:?}: {now:?}");
        assert_eq!(now[0].0, first[0].0, "{mode:?}: the same connection served every batch");
    }
    assert_eq!(pool.idle_count(), 1);
    // The counts are the batch's own, not the connection's lifetime.
    let r = run(&pool, Mode::Pipeline, &["PING"]).await;
    assert_eq!((r.summary.write_calls, r.summary.bytes_sent, r.summary.bytes_received), (1, 14, 7));
}

#[tokio::test]
async fn not_reused_after_a_reply_size_cut_a_timeout_or_a_cancelled_batch() {
    let server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig::default());
    server.cmd_str(&["SET", "big", &"x".repeat(4000)]);

    // Reply-size cut: the rest of the replies are still on the socket.
    let opts = ExecOptions { max_reply_bytes: Some(6000), ..ExecOptions::default() };
    let r = execute_pooled(&pool, &batch(Mode::Sequential, &["GET big", "GET big", "GET big"]), &opts).await.unwrap();
    assert!(statuses(&r).contains(&Status::Unknown), "{:?}", statuses(&r));
    assert_eq!(pool.idle_count(), 0, "cut connection kept");

    // Read timeout: BLPOP's reply would arrive after the batch gave up.
    let opts = ExecOptions { read_timeout: Duration::from_millis(200), ..ExecOptions::default() };
    let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["BLPOP list 1"]), &opts).await.unwrap();
    assert_eq!(statuses(&r), [Status::Unknown]);
    assert_eq!(pool.idle_count(), 0, "timed-out connection kept");

    // Cancelled: the future is dropped while BLPOP blocks.
    let cancelled = tokio::time::timeout(
        Duration::from_millis(200),
        execute_pooled(&pool, &batch(Mode::Pipeline, &["BLPOP list 1"]), &ExecOptions::default()),
    )
    .await;
    assert!(cancelled.is_err());
    assert_eq!(pool.idle_count(), 0, "cancelled connection kept");
    wait_for("the dropped connections to close", || pipelab_clients(&server).is_empty()).await;

    // An element pushed now would have gone to a leaked BLPOP; the next batch
    // must see its own replies only.
    server.cmd_str(&["RPUSH", "list", "a"]);
    let r = run(&pool, Mode::Pipeline, &["LLEN list", "PING"]).await;
    assert_eq!(r.results[0].reply, Some(Value::Integer(1)));
    assert_eq!(r.results[1].reply, Some(Value::Simple(b"PONG".to_vec())));
    assert_eq!(pool.idle_count(), 1);
}

#[tokio::test]
async fn multi_without_exec_does_not_leak_into_the_next_batch() {
    let server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig::default());
    let r = run(&pool, Mode::Pipeline, &["MULTI", "SET a 1"]).await;
    assert_eq!(r.results[1].reply, Some(Value::Simple(b"QUEUED".to_vec())));
    assert_eq!(pool.idle_count(), 0, "a connection inside MULTI was kept");
    let r = run(&pool, Mode::Pipeline, &["SET b 2", "GET a"]).await;
    assert_eq!(r.results[0].reply, Some(Value::Simple(b"OK".to_vec())), "queued instead of run");
    assert_eq!(r.results[1].reply, Some(Value::NullBulk));
}

#[tokio::test]
async fn watch_does_not_leak_into_the_next_batch() {
    let server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig::default());
    // A WATCH by hand, never followed by EXEC.
    run(&pool, Mode::Pipeline, &["WATCH w", "GET w"]).await;
    assert_eq!(pool.idle_count(), 0, "a connection with watched keys was kept");
    server.cmd_str(&["SET", "w", "changed"]);
    let r = run(&pool, Mode::Transaction, &["SET t 1"]).await;
    assert_eq!(r.transaction.as_ref().unwrap().status, TransactionStatus::Committed);

    // The batch's own `watch`: EXEC unwatches, so the connection is clean
    // after it, whatever the outcome, and is reused.
    let mut b = batch(Mode::Transaction, &["SET t 2"]);
    b.plan.watch = vec![b"w".to_vec()];
    let r = execute_pooled(&pool, &b, &ExecOptions::default()).await.unwrap();
    assert_eq!(r.transaction.as_ref().unwrap().status, TransactionStatus::Committed);
    assert_eq!(pool.idle_count(), 1);
    server.cmd_str(&["SET", "w", "changed again"]);
    let r = run(&pool, Mode::Transaction, &["SET t 3"]).await;
    assert_eq!(r.transaction.as_ref().unwrap().status, TransactionStatus::Committed, "WATCH outlived EXEC");
    // An aborted transaction (EXECABORT) discards the queue too.
    let r = run(&pool, Mode::Transaction, &["SET t", "SET t 4"]).await;
    assert_eq!(r.transaction.as_ref().unwrap().status, TransactionStatus::Aborted);
    assert_eq!(pool.idle_count(), 1);
    let r = run(&pool, Mode::Pipeline, &["GET t"]).await;
    assert_eq!(r.results[0].reply, Some(Value::Bulk(b"3".to_vec())));
}

#[tokio::test]
async fn client_name_and_protocol_do_not_leak() {
    let server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig::default());
    run(&pool, Mode::Pipeline, &["CLIENT SETNAME other"]).await;
    assert_eq!(pool.idle_count(), 0, "a renamed connection was kept");
    let r = run(&pool, Mode::Pipeline, &["PING"]).await;
    assert_eq!(r.results[0].status, Status::Ok);
    assert_eq!(pool.idle_count(), 1);
    assert_eq!(pipelab_clients(&server).len(), 1);

    // RESP3 and RESP2 connections are kept apart.
    server.cmd_str(&["HSET", "h", "f", "v"]);
    let mut b3 = batch(Mode::Pipeline, &["HGETALL h"]);
    b3.plan.resp3 = true;
    for _ in 0..2 {
        let r = execute_pooled(&pool, &b3, &ExecOptions::default()).await.unwrap();
        assert!(matches!(r.results[0].reply, Some(Value::Map(_))), "{:?}", r.results[0].reply);
        let r = run(&pool, Mode::Pipeline, &["HGETALL h"]).await;
        assert!(matches!(r.results[0].reply, Some(Value::Array(_))), "{:?}", r.results[0].reply);
    }
    assert_eq!(pool.idle_count(), 2, "one RESP2 and one RESP3 connection");
}

#[tokio::test]
async fn simulated_rtt_batches_use_fresh_connections() {
    let server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig::default());
    run(&pool, Mode::Pipeline, &["PING"]).await;
    let mut b = batch(Mode::Pipeline, &["PING"]);
    b.plan.simulated_rtt_ms = 2.0;
    let r = execute_pooled(&pool, &b, &ExecOptions::default()).await.unwrap();
    assert_eq!(r.results[0].status, Status::Ok);
    assert!(r.summary.total_us >= 2000, "{}", r.summary.total_us);
    assert_eq!(pool.idle_count(), 1, "the RTT connection was pooled, or the idle one used");
    wait_for("the RTT connection to close", || pipelab_clients(&server).len() == 1).await;
}

#[tokio::test]
async fn a_redis_restart_costs_no_batch() {
    let mut server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig::default());
    run(&pool, Mode::Pipeline, &["SET k 1"]).await;
    run(&pool, Mode::Pipeline, &["SET k 2"]).await;
    assert_eq!(pool.idle_count(), 1);
    server.restart();
    for mode in [Mode::Pipeline, Mode::Transaction, Mode::Sequential] {
        let r = run(&pool, mode, &["INCR n"]).await;
        assert_eq!(statuses(&r), [Status::Ok], "{mode:?}: {:?}", r.connection_error);
        assert!(r.connection_error.is_none());
    }
    assert_eq!(server.cmd_str(&["GET", "n"]), Value::Bulk(b"3".to_vec()), "each INCR ran exactly once");

    // A connection killed while idle is found dead too.
    let (id, _) = pipelab_clients(&server)[0].clone();
    server.cmd_str(&["CLIENT", "KILL", "ID", &id.to_string()]);
    let r = run(&pool, Mode::Pipeline, &["INCR n"]).await;
    assert_eq!(statuses(&r), [Status::Ok]);
    assert_ne!(pipelab_clients(&server)[0].0, id);

    // Redis down: 503 material, nothing sent, no stale connection used.
    server.kill();
    let err = execute_pooled(&pool, &batch(Mode::Pipeline, &["PING"]), &ExecOptions::default()).await;
    assert!(err.is_err(), "a batch ran against a dead server");
    assert_eq!(pool.idle_count(), 0);
}

#[tokio::test]
async fn idle_connections_are_bounded_and_time_out() {
    let server = RedisServer::start();
    let pool = pool_for(&server, PoolConfig { max_idle: 3, idle_timeout: Duration::from_millis(1500), ..PoolConfig::default() });
    let mut tasks = Vec::new();
    for t in 0..20 {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            let own = format!("SET own:{t} {t}");
            let get = format!("GET own:{t}");
            let r = run(&pool, [Mode::Sequential, Mode::Pipeline, Mode::Transaction][t % 3], &["INCR shared", &own, &get]).await;
            assert_eq!(r.results[2].reply, Some(Value::Bulk(t.to_string().into_bytes())), "batch {t}");
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(server.cmd_str(&["GET", "shared"]), Value::Bulk(b"20".to_vec()));
    let idle = pool.idle_count();
    assert!((1..=3).contains(&idle), "{idle} idle");
    wait_for("only the idle connections left", || pipelab_clients(&server).len() == idle).await;
    for (_, line) in pipelab_clients(&server) {
        // `flags=N`: not in MULTI, blocked or pub/sub (`multi=` is -1 on Redis, 0 on Valkey 8.1+).
        assert!(line.contains(" flags=N ") && line.contains(" qbuf=0 "), "busy: {line}");
    }
    // The reaper closes them once idle past the timeout.
    wait_for("idle connections to time out", || pool.idle_count() == 0).await;
    wait_for("their sockets to close", || pipelab_clients(&server).is_empty()).await;
}
