//! Network faults between the executor and a real redis-server, through
//! the fault-injecting proxy (tests/common/faults.rs), against the ledger
//! (tests/common/ledger.rs): a connection reset after N bytes of the
//! request or of the reply, a half-closed socket either way, a reply
//! stalled forever (cut by the batch timeout), a partition that heals.
//! Every `ok` ran exactly once, every `not_sent` did not run, `unknown` is
//! either, nothing was retried, no batch outlived its batch timeout.
//!
//! N is random (the seed is printed; `PIPELAB_FAULT_SEED` replays it);
//! `PIPELAB_FAULT_KILLS` sets the runs per fault and mode (default 5).

mod common;

use std::time::{Duration, Instant};

use common::faults::{Fault, FaultProxy};
use common::ledger::{runs, Ledger, Rng, Tally};
use common::RedisServer;
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{Batch, ExecError, ExecOptions, Plan, Report};
use pipelab_model::Mode;
use common::execute;
use resp::Value;

const MODES: [Mode; 3] = [Mode::Sequential, Mode::Pipeline, Mode::Transaction];

/// Commands per batch: small enough that a run takes milliseconds.
fn commands(mode: Mode) -> usize {
    match mode {
        Mode::Sequential => 200,
        _ => 2000,
    }
}

/// Pipeline chunks of 100, so that a fault can fall between round trips.
fn plan(mode: Mode) -> Plan {
    Plan { batch_size: 100, ..Plan::new(mode) }
}

/// Runs `ledger` in `mode` through `proxy` with a batch timeout of
/// `timeout`; fails if the batch outlives it by more than 10 s.
async fn run(proxy: &FaultProxy, mode: Mode, ledger: &Ledger, timeout: Duration) -> Result<Report, ExecError> {
    let target = RedisTarget::parse(&proxy.url).unwrap();
    let batch = Batch::new(ledger.commands(), plan(mode));
    let opts = ExecOptions { deadline: Some(Instant::now() + timeout), ..ExecOptions::default() };
    tokio::time::timeout(timeout + Duration::from_secs(10), execute(&target, &batch, &opts))
        .await
        .unwrap_or_else(|_| panic!("{} {}: the batch outlived its {timeout:?} timeout", mode.name(), ledger.run))
}

/// [`run`], then, once Redis has closed the connection ([`settled`]), the
/// ledger check into `tally`.
async fn run_checked(redis: &RedisServer, proxy: &FaultProxy, mode: Mode, ledger: &Ledger, timeout: Duration, tally: &mut Tally) -> Result<Report, ExecError> {
    let outcome = run(proxy, mode, ledger, timeout).await;
    settled(redis).await;
    tally.check(ledger, &outcome, &ledger.counts(redis));
    outcome
}

/// Waits until Redis has closed every connection but the one asking, so
/// that what a dropped connection had buffered has run before the ledger
/// is read.
async fn settled(redis: &RedisServer) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let clients = match redis.cmd_str(&["CLIENT", "LIST"]) {
            Value::Bulk(text) => String::from_utf8_lossy(&text).lines().count(),
            other => panic!("CLIENT LIST: {other:?}"),
        };
        if clients == 1 {
            return;
        }
        assert!(Instant::now() < deadline, "{clients} connections still open in Redis after 10 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Request and reply bytes of a ledger batch, roughly (the handshake
/// included), plus a quarter: the range the fault point is drawn from, so
/// that some batches end before their fault.
fn wire_bytes(mode: Mode, n: usize) -> (u64, u64) {
    let reply_per_command = if mode == Mode::Transaction { 13 } else { 4 };
    ((n as u64 * 48 + 200) * 5 / 4, (n as u64 * reply_per_command + 100) * 5 / 4)
}

/// Resets and half-closes at random byte counts, `runs(5)` of each.
async fn cut_connections(mode: Mode) {
    let redis = RedisServer::start();
    let mut rng = Rng::from_env(mode.name());
    let mut tally = Tally::default();
    let n = commands(mode);
    let (request, reply) = wire_bytes(mode, n);
    let proxy = FaultProxy::start(redis.port, Fault::None).await;
    for round in 0..runs(5) {
        let faults = [
            Fault::ResetAfterRequest(rng.range(0, request) as usize),
            Fault::ResetAfterReply(rng.range(0, reply) as usize),
            Fault::HalfCloseReply(rng.range(0, reply) as usize),
            Fault::HalfCloseRequest(rng.range(0, request) as usize),
        ];
        for (f, fault) in faults.into_iter().enumerate() {
            proxy.set(fault);
            let ledger = Ledger::new(format!("{}:{round}:{f}", mode.name()), n);
            let _ = run_checked(&redis, &proxy, mode, &ledger, Duration::from_secs(10), &mut tally).await;
        }
    }
    eprintln!("{}: {tally:?}", mode.name());
    assert!(tally.cut > 0 && tally.ok + tally.unknown_ran > 0, "no fault landed mid-batch: {tally:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_and_half_close_sequential() {
    cut_connections(Mode::Sequential).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_and_half_close_pipeline() {
    cut_connections(Mode::Pipeline).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_and_half_close_transaction() {
    cut_connections(Mode::Transaction).await;
}

/// Replies stop after N bytes and never come: the batch timeout (1 s) cuts
/// the batch, with statuses as true as for a lost connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_reply_is_cut_by_the_batch_timeout() {
    let redis = RedisServer::start();
    let mut rng = Rng::from_env("stall");
    let mut tally = Tally::default();
    for mode in MODES {
        let n = commands(mode);
        // Past the handshake, so that the batch starts and is cut mid-way.
        let at = rng.range(100, wire_bytes(mode, n).1 / 2) as usize;
        let proxy = FaultProxy::start(redis.port, Fault::StallReply(at)).await;
        let ledger = Ledger::new(format!("stall:{}", mode.name()), n);
        let outcome = run_checked(&redis, &proxy, mode, &ledger, Duration::from_secs(1), &mut tally).await;
        if let Ok(r) = &outcome {
            assert!(r.connection_error.is_some(), "{} stalled at {at} bytes but not cut", mode.name());
        }
    }
    eprintln!("stall: {tally:?}");
}

/// A partition after N request bytes: the batch is cut at its timeout;
/// once healed, the next batch through the same proxy runs whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_heals() {
    let redis = RedisServer::start();
    let mut rng = Rng::from_env("partition");
    let mut tally = Tally::default();
    for mode in MODES {
        let n = commands(mode);
        let proxy = FaultProxy::start(redis.port, Fault::PartitionAfterRequest(rng.range(0, wire_bytes(mode, n).0) as usize)).await;
        let ledger = Ledger::new(format!("partition:{}", mode.name()), n);
        let _ = run_checked(&redis, &proxy, mode, &ledger, Duration::from_secs(1), &mut tally).await;

        proxy.set(Fault::None);
        let healed = Ledger::new(format!("healed:{}", mode.name()), n);
        let outcome = run_checked(&redis, &proxy, mode, &healed, Duration::from_secs(10), &mut tally).await;
        let report = outcome.as_ref().expect("the healed batch connects");
        assert_eq!(report.summary.ok, n, "{} after the partition healed: {:?}", mode.name(), report.connection_error);
    }
    eprintln!("partition: {tally:?}");
}
