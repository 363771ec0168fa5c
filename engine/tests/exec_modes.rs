//! The three modes against a real redis-server: replies land on their own
//! command, round trips are counted, errors stay where they happened.

mod common;

use common::{batch, RedisServer};
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{Argv, Batch, ExecOptions, OnError, Report, Status, TransactionStatus};
use pipelab_model::Mode;
use common::execute;
use resp::Value;

async fn run(server: &RedisServer, b: &Batch) -> Report {
    let target = RedisTarget::parse(&server.url).unwrap();
    execute(&target, b, &ExecOptions::default()).await.expect("batch runs")
}

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

fn statuses(r: &Report) -> Vec<Status> {
    r.results.iter().map(|c| c.status).collect()
}

/// Every mode gives the same replies, in order, for a small batch.
#[tokio::test]
async fn each_mode_runs_a_small_batch() {
    let server = RedisServer::start();
    for (i, mode) in [Mode::Sequential, Mode::Pipeline, Mode::Transaction].into_iter().enumerate() {
        let k = format!("k{i}");
        let lines = [format!("SET {k} 10"), format!("INCR {k}"), format!("GET {k}"), format!("DEL {k}")];
        let lines: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
        let r = run(&server, &batch(mode, &lines)).await;
        let replies: Vec<Value> = r.results.iter().map(|c| c.reply.clone().unwrap()).collect();
        assert_eq!(replies, vec![Value::Simple(b"OK".to_vec()), Value::Integer(11), bulk("11"), Value::Integer(1)], "{mode:?}");
        assert_eq!(statuses(&r), vec![Status::Ok; 4]);
        assert_eq!(r.results.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        let s = &r.summary;
        assert_eq!((s.commands, s.ok, s.errors, s.not_sent, s.unknown), (4, 4, 0, 0, 0));
        let expected_rtts = match mode {
            Mode::Sequential => 4,
            _ => 1,
        };
        assert_eq!(s.round_trips, expected_rtts, "{mode:?}");
        assert_eq!(s.write_calls, expected_rtts, "{mode:?}");
        assert!(s.bytes_sent > 0 && s.bytes_received > 0);
        // Times are from the batch start and ordered: sent before replied.
        for c in &r.results {
            assert!(c.sent_us.unwrap() <= c.reply_us.unwrap());
        }
        assert!(s.total_us >= r.results.last().unwrap().reply_us.unwrap());
        if mode == Mode::Transaction {
            assert_eq!(r.transaction.as_ref().unwrap().status, TransactionStatus::Committed);
        } else {
            assert!(r.transaction.is_none());
        }
    }
}

/// 250 commands in chunks of 100: the executor waits for replies 3 times.
#[tokio::test]
async fn pipeline_round_trips_are_counted() {
    let server = RedisServer::start();
    let lines: Vec<String> = (0..250).map(|i| format!("SET key:{i} {i}")).collect();
    let mut b = batch(Mode::Pipeline, &lines.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    b.plan.batch_size = 100;
    let r = run(&server, &b).await;
    assert_eq!(r.summary.round_trips, 3);
    assert_eq!(r.summary.write_calls, 3);
    assert_eq!(r.summary.ok, 250);
    // Commands of one chunk share their write time; chunks are sent in order.
    assert_eq!(r.results[0].sent_us, r.results[99].sent_us);
    assert!(r.results[99].sent_us < r.results[100].sent_us);
    assert!(r.results[99].reply_us <= r.results[100].sent_us, "chunk 2 is written after chunk 1's replies");
    assert_eq!(server.cmd_str(&["DBSIZE"]), Value::Integer(250));
    assert_eq!(server.cmd_str(&["GET", "key:249"]), bulk("249"));

    let mut b = batch(Mode::Sequential, &["PING", "PING", "PING"]);
    b.plan.batch_size = 100; // ignored by sequential mode
    assert_eq!(run(&server, &b).await.summary.round_trips, 3);
}

/// An error reply in the middle of a pipeline leaves its neighbours ok, and
/// each reply is on its own command.
#[tokio::test]
async fn error_in_the_middle_of_a_pipeline() {
    let server = RedisServer::start();
    let r = run(&server, &batch(Mode::Pipeline, &["SET a 1", "SET s hello", "INCR s", "INCR a", "GET a"])).await;
    assert_eq!(statuses(&r), vec![Status::Ok, Status::Ok, Status::Error, Status::Ok, Status::Ok]);
    let err = r.results[2].reply.as_ref().unwrap();
    assert_eq!(err, &Value::Error(b"ERR value is not an integer or out of range".to_vec()));
    assert_eq!(r.results[3].reply, Some(Value::Integer(2)));
    assert_eq!(r.results[4].reply, Some(bulk("2")));
    assert_eq!((r.summary.ok, r.summary.errors), (4, 1));
}

/// on_error: stop sends no chunk after one with an error; the rest is not_sent.
#[tokio::test]
async fn on_error_stop_leaves_the_rest_not_sent() {
    let server = RedisServer::start();
    server.cmd_str(&["SET", "s", "text"]);
    let lines = ["INCR n", "INCR s", "INCR n", "INCR n", "INCR n", "INCR n"];
    let mut b = batch(Mode::Pipeline, &lines);
    b.plan.batch_size = 2;
    b.plan.on_error = OnError::Stop;
    let r = run(&server, &b).await;
    // The first chunk (with the error) ran in full; the next two were never written.
    assert_eq!(statuses(&r), vec![Status::Ok, Status::Error, Status::NotSent, Status::NotSent, Status::NotSent, Status::NotSent]);
    assert_eq!(r.summary.round_trips, 1);
    assert_eq!(r.summary.not_sent, 4);
    assert!(r.results[2].sent_us.is_none() && r.results[2].reply.is_none());
    assert_eq!(server.cmd_str(&["GET", "n"]), bulk("1"));

    let mut b = batch(Mode::Sequential, &lines);
    b.plan.on_error = OnError::Stop;
    server.cmd_str(&["DEL", "n"]);
    let r = run(&server, &b).await;
    assert_eq!(r.summary.round_trips, 2);
    assert_eq!((r.summary.ok, r.summary.errors, r.summary.not_sent), (1, 1, 4));
}

/// A queue-time error (wrong arity, unknown command) aborts the whole
/// transaction: EXECABORT, and no key is changed.
#[tokio::test]
async fn execabort_leaves_no_key_changed() {
    let server = RedisServer::start();
    server.cmd_str(&["SET", "x", "before"]);
    let r = run(&server, &batch(Mode::Transaction, &["SET x after", "INCR counter", "GET", "NOSUCHCOMMAND a", "SET y 1"])).await;
    let t = r.transaction.as_ref().unwrap();
    assert_eq!(t.status, TransactionStatus::Aborted);
    assert_eq!(t.rejected_index, Some(2));
    assert_eq!(t.rejected.iter().map(|x| x.index).collect::<Vec<_>>(), vec![2, 3]);
    assert!(t.rejected[0].message.contains("wrong number of arguments"), "{:?}", t.rejected);
    assert!(t.rejected[1].message.contains("unknown command"), "{:?}", t.rejected);
    assert!(t.message.as_ref().unwrap().contains("EXECABORT"), "{t:?}");
    // None ran: every command is an error; the others carry EXEC's EXECABORT.
    assert_eq!(statuses(&r), vec![Status::Error; 5]);
    let exec_reply = r.results[0].reply.as_ref().unwrap().error_message().unwrap().to_vec();
    assert!(exec_reply.starts_with(b"EXECABORT"));
    assert!(r.results[2].reply.as_ref().unwrap().error_message().unwrap().starts_with(b"ERR wrong number"));
    assert_eq!(server.cmd_str(&["GET", "x"]), bulk("before"));
    assert_eq!(server.cmd_str(&["EXISTS", "counter", "y"]), Value::Integer(0));
    assert_eq!(r.summary.round_trips, 1);
}

/// A run-time error inside EXEC stays at its index; the others ran (no rollback).
#[tokio::test]
async fn runtime_error_in_a_transaction_does_not_roll_back() {
    let server = RedisServer::start();
    let r = run(&server, &batch(Mode::Transaction, &["SET s text", "LPUSH s x", "SET t 1", "INCR t"])).await;
    assert_eq!(r.transaction.as_ref().unwrap().status, TransactionStatus::Committed);
    assert_eq!(statuses(&r), vec![Status::Ok, Status::Error, Status::Ok, Status::Ok]);
    assert!(r.results[1].reply.as_ref().unwrap().error_message().unwrap().starts_with(b"WRONGTYPE"));
    assert_eq!(r.results[3].reply, Some(Value::Integer(2)));
    assert_eq!(server.cmd_str(&["GET", "t"]), bulk("2"));
    // All results come from EXEC's one reply.
    assert!(r.results.iter().all(|c| c.reply_us == r.results[0].reply_us));
}

/// WATCH: a key changed by another connection between WATCH and EXEC makes
/// EXEC return null: watch_conflict, and nothing ran.
#[tokio::test]
async fn watch_conflict_from_a_second_connection() {
    use std::io::Write;
    let server = RedisServer::start();
    server.cmd_str(&["SET", "w", "0"]);
    // MONITOR on a side connection shows when our WATCH has reached Redis;
    // with 400 ms simulated RTT, MULTI…EXEC arrives ≥ 400 ms later.
    let mut monitor = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    monitor.write_all(b"MONITOR\r\n").unwrap();
    assert_eq!(common::read_one(&mut monitor), Value::Simple(b"OK".to_vec()));
    let port = server.port;
    let meddler = std::thread::spawn(move || loop {
        let line = common::read_one(&mut monitor);
        if let Value::Simple(s) = line {
            if String::from_utf8_lossy(&s).contains("\"WATCH\"") {
                let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.write_all(b"SET w changed-by-someone-else\r\n").unwrap();
                assert_eq!(common::read_one(&mut s), Value::Simple(b"OK".to_vec()));
                return;
            }
        }
    });
    let mut b = batch(Mode::Transaction, &["INCR w", "SET other 1"]);
    b.plan.watch = vec![b"w".to_vec()];
    b.plan.simulated_rtt_ms = 400.0;
    let r = run(&server, &b).await;
    meddler.join().unwrap();
    let t = r.transaction.as_ref().unwrap();
    assert_eq!(t.status, TransactionStatus::WatchConflict, "{t:?}");
    assert_eq!(statuses(&r), vec![Status::Error, Status::Error]);
    assert!(r.results[0].reply.as_ref().unwrap().is_null());
    assert_eq!(r.summary.round_trips, 2, "WATCH, then MULTI…EXEC");
    assert_eq!(server.cmd_str(&["GET", "w"]), bulk("changed-by-someone-else"));
    assert_eq!(server.cmd_str(&["EXISTS", "other"]), Value::Integer(0));

    // Without interference the same watched transaction commits.
    b.plan.simulated_rtt_ms = 0.0;
    server.cmd_str(&["SET", "w", "5"]);
    let r = run(&server, &b).await;
    assert_eq!(r.transaction.unwrap().status, TransactionStatus::Committed);
    assert_eq!(r.results[0].reply, Some(Value::Integer(6)));
}

/// Values with non-UTF-8 bytes, CRLF inside and 1 MB size survive the round trip.
#[tokio::test]
async fn binary_values_round_trip() {
    let server = RedisServer::start();
    let weird: Vec<u8> = vec![0xff, 0x00, b'\r', b'\n', 0xfe, b'$', b'3', b'\r', b'\n', b'*'];
    let big: Vec<u8> = (0..1_048_576u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    for mode in [Mode::Sequential, Mode::Pipeline, Mode::Transaction] {
        let commands: Vec<Argv> = vec![
            vec![b"SET".to_vec(), b"bin\r\nkey\xff".to_vec(), weird.clone()],
            vec![b"SET".to_vec(), b"big".to_vec(), big.clone()],
            vec![b"GET".to_vec(), b"bin\r\nkey\xff".to_vec()],
            vec![b"GET".to_vec(), b"big".to_vec()],
            vec![b"STRLEN".to_vec(), b"big".to_vec()],
        ];
        let b = Batch::with_mode(commands, mode);
        let r = run(&server, &b).await;
        assert_eq!(statuses(&r), vec![Status::Ok; 5], "{mode:?}");
        assert_eq!(r.results[2].reply, Some(Value::Bulk(weird.clone())));
        assert_eq!(r.results[3].reply, Some(Value::Bulk(big.clone())), "{mode:?}");
        assert_eq!(r.results[4].reply, Some(Value::Integer(1_048_576)));
        assert!(r.summary.bytes_received > 1_048_576);
        server.cmd_str(&["FLUSHALL"]);
    }
}

/// Many small replies and a big one in the same chunk: no reply is shifted.
#[tokio::test]
async fn replies_stay_on_their_commands() {
    let server = RedisServer::start();
    let mut commands: Vec<Argv> = Vec::new();
    for i in 0..3000 {
        commands.push(vec![b"ECHO".to_vec(), format!("reply-{i}-{}", "x".repeat(i % 97)).into_bytes()]);
    }
    let mut b = Batch::with_mode(commands.clone(), Mode::Pipeline);
    b.plan.batch_size = 700;
    let r = run(&server, &b).await;
    for (i, c) in r.results.iter().enumerate() {
        assert_eq!(c.index, i);
        assert_eq!(c.reply, Some(Value::Bulk(commands[i][1].clone())));
    }
    assert_eq!(r.summary.round_trips, 5);
}

/// RESP3 (HELLO 3): replies come typed (a map for HGETALL), and the JSON
/// shape is the contract's.
#[tokio::test]
async fn resp3_batch() {
    let server = RedisServer::start();
    let mut b = batch(Mode::Pipeline, &["HSET h f v", "HGETALL h", "SADD s a", "SMEMBERS s"]);
    b.plan.resp3 = true;
    let r = run(&server, &b).await;
    assert_eq!(r.results[1].reply, Some(Value::Map(vec![(bulk("f"), bulk("v"))])));
    assert_eq!(r.results[3].reply, Some(Value::Set(vec![bulk("a")])));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["results"][1]["reply"]["type"], "map");
    assert_eq!(json["results"][0]["status"], "ok");
    assert_eq!(json["summary"]["mode"], "pipeline");
    assert!(json["results"][0]["sent_us"].is_u64());
}

/// Batches that would break the one-reply-per-command rule are refused before connecting.
#[tokio::test]
async fn invalid_batches_are_refused() {
    let server = RedisServer::start();
    let target = RedisTarget::parse(&server.url).unwrap();
    for (mode, line, field) in [
        (Mode::Pipeline, "SUBSCRIBE ch", "commands[1]"),
        (Mode::Transaction, "EXEC", "commands[1]"),
        (Mode::Sequential, "MONITOR", "commands[1]"),
    ] {
        let b = batch(mode, &["PING", line]);
        match execute(&target, &b, &ExecOptions::default()).await {
            Err(pipelab_engine::exec::ExecError::Invalid(e)) => assert_eq!(e.field, field),
            other => panic!("{line}: {other:?}"),
        }
    }
}

/// RESP3 out-of-band pushes (client-side caching invalidations) arrive
/// between replies; they answer no command and must not shift replies.
#[tokio::test]
async fn resp3_pushes_do_not_shift_replies() {
    let server = RedisServer::start();
    let lines = ["CLIENT TRACKING ON", "GET tracked", "SET tracked new", "GET tracked", "SET tracked newer", "PING"];
    for mode in [Mode::Sequential, Mode::Pipeline] {
        server.cmd_str(&["SET", "tracked", "old"]);
        let mut b = batch(mode, &lines);
        b.plan.resp3 = true;
        let r = run(&server, &b).await;
        let replies: Vec<Value> = r.results.iter().map(|c| c.reply.clone().unwrap()).collect();
        assert_eq!(
            replies,
            vec![
                Value::Simple(b"OK".to_vec()),
                bulk("old"),
                Value::Simple(b"OK".to_vec()),
                bulk("new"),
                Value::Simple(b"OK".to_vec()),
                Value::Simple(b"PONG".to_vec()),
            ],
            "{mode:?}"
        );
        assert!(r.summary.pushes >= 2, "invalidation pushes were received: {:?}", r.summary);
    }
}
