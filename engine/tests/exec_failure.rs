//! When things go wrong mid-batch: replies already read are reported,
//! written-but-unanswered commands are `unknown` (never retried), the rest
//! `not_sent`, and nothing hangs.

mod common;

use std::time::{Duration, Instant};

use common::RedisServer;
use pipelab_engine::conn::{ConnectError, RedisTarget};
use pipelab_engine::exec::{Argv, Batch, ExecError, ExecOptions, Report, Status};
use pipelab_model::Mode;
use common::execute;
use resp::Value;

fn batch(mode: Mode, commands: Vec<Argv>) -> Batch {
    Batch::with_mode(commands, mode)
}

fn argv(line: &str) -> Argv {
    resp::split_args(line.as_bytes()).unwrap()
}

fn target(s: &RedisServer) -> RedisTarget {
    RedisTarget::parse(&s.url).unwrap()
}

/// Statuses must read ok/error…, then unknown…, then not_sent…: a reply is
/// never reported after a command whose reply was lost.
fn assert_ordered(r: &Report) -> (usize, usize, usize) {
    let rank = |s: Status| match s {
        Status::Ok | Status::Error => 0,
        Status::Unknown => 1,
        Status::NotSent => 2,
    };
    let ranks: Vec<u8> = r.results.iter().map(|c| rank(c.status)).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "statuses out of order: {ranks:?}");
    for (i, c) in r.results.iter().enumerate() {
        assert_eq!(c.index, i);
        match c.status {
            Status::Ok | Status::Error => assert!(c.reply.is_some() && c.reply_us.is_some()),
            Status::Unknown | Status::NotSent => assert!(c.reply.is_none() && c.reply_us.is_none()),
        }
        if c.status == Status::NotSent {
            assert!(c.sent_us.is_none());
        }
    }
    let s = &r.summary;
    assert_eq!(s.ok + s.errors + s.unknown + s.not_sent, r.results.len());
    (s.ok + s.errors, s.unknown, s.not_sent)
}

/// Sequential, behind a 2 ms RTT: Redis killed after 300 ms. Some commands
/// answered, at most the one in flight unknown, the rest not_sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_batch_sequential() {
    let mut server = RedisServer::start();
    let t = target(&server);
    let commands: Vec<Argv> = (0..1000).map(|i| argv(&format!("SET k{i} {i}"))).collect();
    let mut b = batch(Mode::Sequential, commands);
    b.plan.simulated_rtt_ms = 2.0;
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.kill();
        Instant::now()
    });
    let r = execute(&t, &b, &ExecOptions::default()).await.unwrap();
    let done = Instant::now();
    let killed_at = killer.await.unwrap();
    assert!(done.duration_since(killed_at) < Duration::from_secs(2), "no hang after the kill");
    let (answered, unknown, not_sent) = assert_ordered(&r);
    assert!(answered > 20 && answered < 1000, "answered {answered}");
    assert!(unknown <= 1, "only the command in flight can be unknown: {unknown}");
    assert!(not_sent > 500);
    assert!(r.connection_error.is_some());
}

/// Pipeline of 100-command chunks behind 20 ms RTT, killed mid-way: the
/// chunk in flight is unknown (or partly answered), later chunks not_sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_batch_pipeline() {
    let mut server = RedisServer::start();
    let t = target(&server);
    let commands: Vec<Argv> = (0..5000).map(|i| argv(&format!("INCR c{}", i % 7))).collect();
    let mut b = batch(Mode::Pipeline, commands);
    b.plan.batch_size = 100;
    b.plan.simulated_rtt_ms = 20.0;
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(250)).await;
        server.kill();
    });
    let started = Instant::now();
    let r = execute(&t, &b, &ExecOptions::default()).await.unwrap();
    killer.await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    let (answered, unknown, not_sent) = assert_ordered(&r);
    assert!(answered >= 100 && answered % 100 == 0, "whole chunks answered: {answered}");
    assert!(unknown <= 200, "at most the chunks in flight: {unknown}");
    assert!(not_sent >= 2500, "{not_sent}");
    assert_eq!(r.summary.round_trips as usize, (answered + unknown) / 100);
}

/// Without a delay line: a blocked command in flight when Redis dies is
/// unknown, a command written after it too, an unwritten one not_sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_blocked() {
    for mode in [Mode::Pipeline, Mode::Sequential] {
        let mut server = RedisServer::start();
        let t = target(&server);
        let b = batch(mode, vec![argv("SET a 1"), argv("BLPOP nothing 0"), argv("PING")]);
        let pid = server.pid().unwrap();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            server.kill();
            pid
        });
        let r = execute(&t, &b, &ExecOptions::default()).await.unwrap();
        killer.join().unwrap();
        assert_ordered(&r);
        let st: Vec<Status> = r.results.iter().map(|c| c.status).collect();
        match mode {
            Mode::Pipeline => assert_eq!(st, vec![Status::Ok, Status::Unknown, Status::Unknown]),
            _ => assert_eq!(st, vec![Status::Ok, Status::Unknown, Status::NotSent]),
        }
        let e = r.connection_error.unwrap();
        assert!(e.contains("closed") || e.contains("reset"), "{e}");
    }
}

/// A transaction whose EXEC reply never comes is unknown as a whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_lost_is_unknown() {
    let mut server = RedisServer::start();
    let t = target(&server);
    let mut b = batch(Mode::Transaction, vec![argv("SET a 1"), argv("SET b 2")]);
    b.plan.simulated_rtt_ms = 600.0;
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        server.kill();
    });
    let r = execute(&t, &b, &ExecOptions::default()).await;
    killer.await.unwrap();
    // The kill lands during the handshake or the batch, depending on timing.
    match r {
        Err(ExecError::Connect(_)) => {}
        Ok(r) => {
            assert!(r.results.iter().all(|c| c.status == Status::Unknown));
            assert_eq!(r.transaction.unwrap().status, pipelab_engine::exec::TransactionStatus::Unknown);
        }
        Err(e) => panic!("{e}"),
    }
}

/// A reply that does not come within read_timeout: unknown, no hang.
#[tokio::test]
async fn read_timeout_gives_unknown() {
    let server = RedisServer::start();
    let b = batch(Mode::Pipeline, vec![argv("PING"), argv("BLPOP nothing 0"), argv("PING")]);
    let opts = ExecOptions { read_timeout: Duration::from_millis(300), ..ExecOptions::default() };
    let t0 = Instant::now();
    let r = execute(&target(&server), &b, &opts).await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2));
    let st: Vec<Status> = r.results.iter().map(|c| c.status).collect();
    assert_eq!(st, vec![Status::Ok, Status::Unknown, Status::Unknown]);
    assert!(r.connection_error.unwrap().contains("timeout"));
}

/// max_reply_bytes: reading stops, the connection is dropped, the rest is unknown.
#[tokio::test]
async fn reply_limit_stops_reading() {
    let server = RedisServer::start();
    server.cmd(&[b"SET", b"big", &vec![b'x'; 200_000]]);
    let b = batch(Mode::Pipeline, vec![argv("PING"), argv("GET big"), argv("PING")]);
    let opts = ExecOptions { max_reply_bytes: Some(50_000), ..ExecOptions::default() };
    let r = execute(&target(&server), &b, &opts).await.unwrap();
    let st: Vec<Status> = r.results.iter().map(|c| c.status).collect();
    assert_eq!(st, vec![Status::Ok, Status::Unknown, Status::Unknown]);
    assert!(r.connection_error.unwrap().contains("50000"));
    assert!(r.summary.bytes_received < 200_000);
}

/// No server, bad password, bad database: Connect errors, nothing sent.
#[tokio::test]
async fn connect_errors() {
    let port = common::free_port();
    let t = RedisTarget::parse(&format!("redis://127.0.0.1:{port}")).unwrap();
    let b = batch(Mode::Pipeline, vec![argv("PING")]);
    match execute(&t, &b, &ExecOptions::default()).await {
        Err(ExecError::Connect(e @ ConnectError::Unreachable { .. })) => assert!(e.to_string().contains(&port.to_string()), "{e}"),
        other => panic!("{other:?}"),
    }
    let server = RedisServer::start_with(&["--requirepass", "sesame"]);
    let t = RedisTarget::parse(&format!("redis://:wrong@127.0.0.1:{}", server.port)).unwrap();
    match execute(&t, &b, &ExecOptions::default()).await {
        Err(ExecError::Connect(e @ ConnectError::Refused { step: "AUTH", .. })) => {
            let m = e.to_string();
            assert!(m.contains("WRONGPASS"), "{m}");
            assert!(!m.contains("wrong@"), "password shown: {m}");
        }
        other => panic!("{other:?}"),
    }
    let t = RedisTarget::parse(&format!("redis://:sesame@127.0.0.1:{}/99", server.port)).unwrap();
    match execute(&t, &b, &ExecOptions::default()).await {
        Err(ExecError::Connect(ConnectError::Refused { step, .. })) => assert_eq!(step, "SELECT"),
        other => panic!("{other:?}"),
    }
}

/// Dropping the execute future (the HTTP client went away) closes the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_batch_closes_its_connection() {
    let server = RedisServer::start();
    let t = target(&server);
    for rtt in [0.0, 5.0] {
        let mut b = batch(Mode::Sequential, vec![argv("CLIENT GETNAME"), argv("BLPOP nothing 0")]);
        b.plan.simulated_rtt_ms = rtt;
        let r = tokio::time::timeout(Duration::from_millis(300), execute(&t, &b, &ExecOptions::default())).await;
        assert!(r.is_err(), "still blocked when dropped");
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            let Value::Bulk(list) = server.cmd_str(&["CLIENT", "LIST"]) else { panic!() };
            let list = String::from_utf8(list).unwrap();
            if !list.contains("name=pipelab") {
                break;
            }
            assert!(Instant::now() < deadline, "connection still open after cancel (rtt {rtt}):\n{list}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
