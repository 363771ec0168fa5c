//! Shared connections (`pipelab_engine::exec::shared`), against a real
//! redis-server: concurrent small batches go out in one write on one
//! connection and each gets exactly its own replies; what could tell it
//! shared a connection gets one of its own; a lost connection makes
//! written commands `unknown` and never re-sends them; a batch timeout or
//! reply limit cuts only the batch it belongs to.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{batch, pipelab_connections, RedisServer};
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::shared::shareable;
use pipelab_engine::exec::{Batch, ExecOptions, Plan, Pool, PoolConfig, Report, SharedWrite, Status};
use pipelab_model::Mode;
use common::execute_pooled;
use pipelab_engine::run::Target;
use resp::Value;

fn pool_for(server: &RedisServer) -> Arc<Target> {
    // Every shareable batch on the lane, alone or not.
    Target::new(Pool::new(RedisTarget::parse(&server.url).unwrap(), PoolConfig { share_alone: true, ..PoolConfig::default() }))
}

async fn run(pool: &Arc<Target>, lines: &[&str], opts: &ExecOptions) -> Report {
    execute_pooled(pool, &batch(Mode::Pipeline, lines), opts).await.expect("batch runs")
}

/// `lines` straight on `pool`'s shared connection, with a deadline shorter
/// than the read timeout: `Engine::run` gives a batch one timeout for both,
/// and its lane then drops the connection when the batch's reply is late.
async fn run_on_lane(pool: &Target, lines: &[&str], opts: &ExecOptions) -> Report {
    let mut results = Vec::new();
    let out = pipelab_engine::exec::shared::run(pool, &batch(Mode::Pipeline, lines), opts, &mut results).await;
    out.into_report(results).expect("batch runs")
}

fn settings() -> pipelab_engine::conn::ConnSettings {
    pipelab_engine::conn::ConnSettings {
        connect_timeout: Duration::from_secs(5),
        read_timeout: Duration::from_secs(5),
        resp3: false,
        simulated_rtt_ms: 0.0,
        simulated_bandwidth_mbps: None,
        max_reply_bytes: None,
        deadline: None,
        cancel: None,
    }
}

fn statuses(r: &Report) -> Vec<Status> {
    r.results.iter().map(|x| x.status).collect()
}

/// 50 requests' batches at once (one task, as 50 requests of one event-loop
/// tick): fewer writes than batches, one connection, each batch its own
/// replies and byte counts, every INCR exactly once.
#[tokio::test]
async fn concurrent_batches_share_one_connection_and_get_their_own_replies() {
    let server = RedisServer::start();
    let pool = pool_for(&server);
    // The command table is read once, on a connection of its own.
    run(&pool, &["PING"], &ExecOptions::default()).await;
    let opts = ExecOptions::default();
    let lines: Vec<[String; 3]> = (0..50).map(|i| [format!("SET k{i} v{i}"), format!("GET k{i}"), "INCR n".to_string()]).collect();
    let runs = lines.iter().map(|l| {
        let l: Vec<&str> = l.iter().map(String::as_str).collect();
        let pool = &pool;
        let opts = &opts;
        async move { run(pool, &l, opts).await }
    });
    let reports = futures_util::future::join_all(runs).await;

    let mut incrs = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        assert_eq!(statuses(r), [Status::Ok; 3], "{:?}", r.connection_error);
        assert_eq!(r.results[1].reply, Some(Value::Bulk(format!("v{i}").into_bytes())), "batch {i} got another's reply");
        let Some(Value::Integer(n)) = r.results[2].reply else { panic!("INCR") };
        incrs.push(n);
        let s = &r.summary;
        assert_eq!((s.commands, s.ok, s.round_trips, s.write_calls), (3, 3, 1, 1));
        let mut mine = Vec::new();
        for l in &lines[i] {
            resp::encode_command(resp::split_args(l.as_bytes()).unwrap(), &mut mine);
        }
        assert_eq!(s.bytes_sent, mine.len() as u64, "its own commands' bytes");
        let replies: u64 = r.results.iter().map(|x| x.reply.as_ref().unwrap().to_resp().len() as u64).sum();
        assert_eq!(s.bytes_received, replies, "its own replies' bytes");
        let shared = s.shared.expect("went on the shared connection");
        assert!(shared.batches >= 1 && shared.commands == 3 * shared.batches, "{shared:?}");
        let t = &r.results[2];
        assert!(t.sent_us.unwrap() <= t.reply_us.unwrap() && t.reply_us.unwrap() <= s.total_us);
    }
    incrs.sort();
    assert_eq!(incrs, (1..=50).collect::<Vec<_>>(), "every INCR ran exactly once");
    let most = reports.iter().map(|r| r.summary.shared.unwrap().batches).max().unwrap();
    assert!(most > 1, "no write carried two batches: {most}");
    assert_eq!(pipelab_connections(&server), 1, "one shared connection (the table's was closed)");
    assert_eq!(pool.shared_connections(), 1);
    assert_eq!(pool.idle_count(), 0);
}

/// With the pool's default settings, a batch with no other running beside
/// it takes a pooled connection of its own (no lane is started); batches
/// that run together share.
#[tokio::test]
async fn a_lone_batch_takes_a_connection_of_its_own() {
    let server = RedisServer::start();
    let pool = Target::new(Pool::new(RedisTarget::parse(&server.url).unwrap(), PoolConfig::default()));
    let opts = ExecOptions::default();
    for _ in 0..3 {
        let r = run(&pool, &["INCR n"], &opts).await;
        assert_eq!(statuses(&r), [Status::Ok]);
        assert_eq!(r.summary.shared, None, "a lone batch went on the shared connection");
    }
    assert_eq!(pool.shared_connections(), 0, "no lane for lone batches");
    assert_eq!(pool.idle_count(), 1, "the one pooled connection, reused");
    let reports = futures_util::future::join_all((0..20).map(|_| run(&pool, &["INCR n"], &opts))).await;
    assert!(reports.iter().all(|r| statuses(r) == [Status::Ok]));
    let shared = reports.iter().filter(|r| r.summary.shared.is_some()).count();
    assert!(shared >= 19, "only the first of 20 batches at once may go alone: {shared} shared");
    assert_eq!(server.cmd_str(&["GET", "n"]), Value::Bulk(b"23".to_vec()));
}

/// What could tell it shared a connection is not shareable; a batch that
/// is not goes on a connection of its own (no `summary.shared`).
#[tokio::test]
async fn what_could_tell_gets_a_connection_of_its_own() {
    let server = RedisServer::start();
    let pool = pool_for(&server);
    run(&pool, &["PING"], &ExecOptions::default()).await;
    let table = pool.commands();
    let opts = ExecOptions::default();
    let yes = |b: &Batch| shareable(b, &opts, &table);
    assert!(yes(&batch(Mode::Pipeline, &["SET a 1", "GET a", "HSET h f v"])));
    assert!(yes(&batch(Mode::Sequential, &["GET a"])));
    for lines in [
        &["MULTI", "SET a 1", "EXEC"][..],
        &["WATCH a"],
        &["BLPOP l 1"],
        &["XREAD BLOCK 0 STREAMS s $"],
        &["CLIENT SETNAME x"],
        &["SELECT 1"],
        &["EVAL \"return 1\" 0"],
        &["FCALL f 0"],
        &["SUBSCRIBE c"],
        &["WAIT 0 0"],
        &["DEBUG SLEEP 0"],
        &["NOSUCHCOMMAND"],
    ] {
        assert!(!yes(&batch(Mode::Pipeline, lines)), "{lines:?}");
    }
    assert!(!yes(&batch(Mode::Sequential, &["GET a", "GET b"])), "two round trips");
    assert!(!yes(&batch(Mode::Transaction, &["SET a 1"])));
    assert!(!yes(&batch(Mode::Auto, &["SET a 1"])));
    let many: Vec<String> = (0..65).map(|i| format!("SET k{i} v")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    assert!(!yes(&batch(Mode::Pipeline, &many)), "more than MAX_COMMANDS");
    let big = format!("SET k {}", "x".repeat(20_000));
    assert!(!yes(&batch(Mode::Pipeline, &[&big])), "more than MAX_BYTES");
    let two_chunks = Batch::new(batch(Mode::Pipeline, &["SET a 1", "SET b 2"]).commands, Plan { batch_size: 1, ..Plan::new(Mode::Pipeline) });
    assert!(!yes(&two_chunks), "two round trips");
    let rtt = Batch::new(batch(Mode::Pipeline, &["GET a"]).commands, Plan { simulated_rtt_ms: 1.0, ..Plan::new(Mode::Pipeline) });
    let resp3 = Batch::new(batch(Mode::Pipeline, &["GET a"]).commands, Plan { resp3: true, ..Plan::new(Mode::Pipeline) });
    let stats = Batch::new(batch(Mode::Pipeline, &["GET a"]).commands, Plan { server_stats: true, ..Plan::new(Mode::Pipeline) });
    for b in [rtt, resp3, stats] {
        assert!(!yes(&b), "{:?}", b.plan);
    }
    let cancellable = ExecOptions { cancel: Some(pipelab_engine::conn::Cancel::new()), ..ExecOptions::default() };
    assert!(!shareable(&batch(Mode::Pipeline, &["GET a"]), &cancellable, &table));

    let own = run(&pool, &["MULTI", "SET a 1", "EXEC"], &opts).await;
    assert_eq!(statuses(&own), [Status::Ok; 3]);
    assert!(own.summary.shared.is_none());
    let shared = run(&pool, &["GET a"], &opts).await;
    assert_eq!(shared.summary.shared, Some(SharedWrite { batches: 1, commands: 1 }));
    assert_eq!(shared.results[0].reply, Some(Value::Bulk(b"1".to_vec())));
}

/// Redis restarted, or the shared connection killed, between writes: the
/// next batch runs on a fresh connection, once. Redis down: nothing sent.
#[tokio::test]
async fn a_redis_restart_between_writes_costs_no_batch() {
    let mut server = RedisServer::start();
    let pool = pool_for(&server);
    let opts = ExecOptions::default();
    assert_eq!(statuses(&run(&pool, &["INCR n"], &opts).await), [Status::Ok]);
    server.restart();
    let r = run(&pool, &["INCR n"], &opts).await;
    assert_eq!(statuses(&r), [Status::Ok], "{:?}", r.connection_error);
    server.cmd_str(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = run(&pool, &["INCR n"], &opts).await;
    assert_eq!(statuses(&r), [Status::Ok], "{:?}", r.connection_error);
    assert_eq!(server.cmd_str(&["GET", "n"]), Value::Bulk(b"2".to_vec()), "each INCR ran exactly once");

    server.kill();
    let err = execute_pooled(&pool, &batch(Mode::Pipeline, &["PING"]), &opts).await;
    assert!(err.is_err(), "a batch ran against a dead server");
}

/// The shared connection lost while its write awaits replies: each
/// batch's commands are `unknown` (written, outcome not known), never
/// re-sent; the next batch gets a fresh connection.
#[tokio::test]
async fn a_lost_connection_makes_the_written_unknown() {
    let server = RedisServer::start();
    let pool = pool_for(&server);
    let opts = ExecOptions::default();
    run(&pool, &["PING"], &opts).await;
    // Write commands wait while clients are paused: the shared write is
    // in Redis, unanswered, when its connection is killed.
    server.cmd_str(&["CLIENT", "PAUSE", "3000", "WRITE"]);
    let killer = {
        let url = server.url.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let mut c = pipelab_engine::conn::Conn::connect(&RedisTarget::parse(&url).unwrap(), &settings()).await.unwrap();
            c.ask(&[b"CLIENT", b"KILL", b"TYPE", b"normal", b"SKIPME", b"yes"]).await.unwrap();
            c.ask(&[b"CLIENT", b"UNPAUSE"]).await.unwrap();
        })
    };
    let (a, b) = tokio::join!(run(&pool, &["SET a 1", "INCR n"], &opts), run(&pool, &["SET b 1"], &opts));
    killer.await.unwrap();
    for r in [&a, &b] {
        assert!(r.results.iter().all(|x| x.status == Status::Unknown), "{:?}", statuses(r));
        assert!(r.connection_error.is_some());
        assert_eq!(r.summary.unknown, r.summary.commands);
    }
    let r = run(&pool, &["GET n"], &opts).await;
    assert_eq!(statuses(&r), [Status::Ok], "{:?}", r.connection_error);
    assert_eq!(r.results[0].reply, Some(Value::NullBulk), "the killed INCR was never re-sent");
}

/// A batch's deadline passes while its shared write waits: that batch is
/// `unknown` and answered at its deadline; the connection and the batches
/// after it are not cut.
#[tokio::test]
async fn a_batch_timeout_cuts_only_its_batch() {
    let server = RedisServer::start();
    let pool = pool_for(&server);
    run(&pool, &["PING"], &ExecOptions::default()).await;
    server.cmd_str(&["CLIENT", "PAUSE", "700", "WRITE"]);
    let start = Instant::now();
    let short = ExecOptions { deadline: Some(Instant::now() + Duration::from_millis(200)), ..ExecOptions::default() };
    let r = run_on_lane(&pool, &["INCR n"], &short).await;
    assert!(start.elapsed() < Duration::from_millis(650), "answered at its deadline: {:?}", start.elapsed());
    assert_eq!(statuses(&r), [Status::Unknown]);
    assert!(r.connection_error.as_deref().unwrap().contains("batch timeout"), "{:?}", r.connection_error);
    assert_eq!(r.summary.shared, None, "no write answered it");
    // The INCR was written and runs after the pause; the next batch's reply is its own.
    let r = run(&pool, &["INCR n"], &ExecOptions::default()).await;
    assert_eq!(statuses(&r), [Status::Ok]);
    assert_eq!(r.results[0].reply, Some(Value::Integer(2)));

    // A batch queued behind a write whose replies are slow is not held
    // back by them: the lane hands that connection off and writes it on
    // another (a read, which the pause lets through), within its own deadline.
    server.cmd_str(&["CLIENT", "PAUSE", "700", "WRITE"]);
    let defaults = ExecOptions::default();
    let first = run(&pool, &["INCR n"], &defaults);
    let queued = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let short = ExecOptions { deadline: Some(Instant::now() + Duration::from_millis(300)), ..ExecOptions::default() };
        run(&pool, &["GET n"], &short).await
    };
    let (first, queued) = tokio::join!(first, queued);
    assert_eq!(statuses(&first), [Status::Ok]);
    assert_eq!(first.results[0].reply, Some(Value::Integer(3)));
    assert_eq!(statuses(&queued), [Status::Ok], "{:?}", queued.connection_error);
    assert_eq!(queued.results[0].reply, Some(Value::Bulk(b"2".to_vec())), "read while the INCR waited for the pause");
}

/// The reply limit applies to each batch's own replies: a small batch
/// next to a big one is answered; the big one is cut (`unknown`).
#[tokio::test]
async fn the_reply_limit_is_each_batchs_own() {
    let server = RedisServer::start();
    let pool = pool_for(&server);
    // Far past the limit: the limit is checked between reads, and one
    // read can take what the socket holds.
    let value = "x".repeat(32 << 20);
    server.cmd_str(&["SET", "big", &value]);
    let opts = ExecOptions { max_reply_bytes: Some(100_000), ..ExecOptions::default() };
    // The lane is started by a batch without a limit: the limit is each batch's own.
    run(&pool, &["PING"], &ExecOptions::default()).await;
    let smalls = (0..5).map(|_| run(&pool, &["SET s 1", "GET s"], &opts));
    let (small, big) = tokio::join!(futures_util::future::join_all(smalls), run(&pool, &["GET big"], &opts));
    for r in &small {
        assert_eq!(statuses(r), [Status::Ok; 2]);
    }
    assert_eq!(statuses(&big), [Status::Unknown]);
    assert!(big.connection_error.as_deref().unwrap().contains("reply limit"), "{:?}", big.connection_error);
    let r = run(&pool, &["GET s"], &opts).await;
    assert_eq!(r.results[0].reply, Some(Value::Bulk(b"1".to_vec())));
}

/// A large reply, past its batch's reply limit or within it, turns none of
/// the batches written with it or after it `unknown` (they all ran), and
/// the lane hands its connection off rather than hold the next writes back.
#[tokio::test]
async fn a_large_reply_spills_on_no_other_batch() {
    let server = RedisServer::start();
    let pool = pool_for(&server);
    server.cmd_str(&["SET", "big", &"\0".repeat(24 << 20)]);
    run(&pool, &["PING"], &ExecOptions::default()).await;
    for limit in [Some(100_000), None] {
        let big_opts = ExecOptions { max_reply_bytes: limit, ..ExecOptions::default() };
        let defaults = ExecOptions::default();
        let big = run(&pool, &["GET big"], &big_opts);
        // Queued in the same tick: written in the same write, after it.
        let with_it = futures_util::future::join_all((0..16).map(|_| run(&pool, &["INCR n"], &defaults)));
        let after = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            futures_util::future::join_all((0..16).map(|_| run(&pool, &["INCR m"], &defaults))).await
        };
        let (big, with_it, after) = tokio::join!(big, with_it, after);
        for r in with_it.iter().chain(&after) {
            assert_eq!(statuses(r), [Status::Ok], "{:?}", r.connection_error);
        }
        match limit {
            Some(_) => {
                assert_eq!(statuses(&big), [Status::Unknown]);
                assert!(big.connection_error.as_deref().unwrap().contains("reply limit"), "{:?}", big.connection_error);
            }
            None => assert_eq!(statuses(&big), [Status::Ok]),
        }
    }
    assert_eq!(server.cmd_str(&["GET", "n"]), Value::Bulk(b"32".to_vec()));
    assert_eq!(server.cmd_str(&["GET", "m"]), Value::Bulk(b"32".to_vec()));
}
