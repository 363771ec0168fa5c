//! Compare's Redis command time (`summary.server.usec`) against a real
//! redis-server: `cmdstat_exec`'s time already holds the commands run inside
//! EXEC, each counted under its own name too, so a transaction's time must
//! not be that sum, and comes out near a pipeline's for the same commands.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{batch, RedisServer};
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::ExecOptions;
use pipelab_model::Mode;
use pipelab_engine::lab::compare::{batches, compare};
use pipelab_engine::lab::Direct;
use resp::Value;

/// `INFO commandstats` as name → usec, read outside the code under test.
fn usec_by_command(redis: &RedisServer) -> HashMap<String, u64> {
    let Value::Bulk(text) = redis.cmd_str(&["INFO", "commandstats"]) else { panic!("INFO answered no bulk string") };
    String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let usec = rest.split(',').find_map(|kv| kv.strip_prefix("usec="))?.parse().ok()?;
            Some((name.to_string(), usec))
        })
        .collect()
}

/// 5,000 INCRs (enough that their time dwarfs the INFO readings'), five
/// comparisons of pipeline and transaction: each transaction's time is at most
/// what every command but EXEC took, and the fastest of each mode are within a
/// small factor (the fastest: a run the loaded machine did not preempt).
#[tokio::test]
async fn a_transactions_redis_time_counts_its_commands_once() {
    let redis = RedisServer::start();
    let runner = Direct {
        target: RedisTarget::parse(&redis.url).unwrap(),
        opts: ExecOptions { read_timeout: Duration::from_secs(60), ..ExecOptions::default() },
    }
    .with_commands()
    .await;
    let lines = vec!["INCR n"; 5000];
    let (mut pipeline, mut transaction) = (Vec::new(), Vec::new());
    for round in 0..5 {
        let modes = [Mode::Pipeline, Mode::Transaction];
        let runs = batches(&modes, &[], |mode| -> Result<_, ()> {
            let mut b = batch(mode, &lines);
            b.plan.batch_size = lines.len();
            b.plan.server_stats = true;
            Ok(b)
        })
        .unwrap();
        let before = usec_by_command(&redis);
        let report = compare(&runner, &runs, false).await.expect("comparison runs");
        let after = usec_by_command(&redis);
        let delta = |name: &str| after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0);
        let all_but_exec: u64 = after.keys().filter(|n| *n != "exec").map(|n| delta(n)).sum();
        let server = |mode: Mode| {
            let run = report.runs.iter().find(|r| r.mode == mode).expect("mode ran");
            assert_eq!(run.summary.ok, lines.len(), "{mode:?}: every INCR answered");
            run.summary.server.flatten().expect("summary.server").usec
        };
        let (p, t) = (server(Mode::Pipeline), server(Mode::Transaction));
        // EXEC's own count holds the time of the INCRs it ran: counted again, the check below would fail.
        assert!(2 * delta("exec") >= t, "round {round}: EXEC's time ({} µs) holds the transaction's INCRs' ({t} µs)", delta("exec"));
        assert!(
            p + t <= all_but_exec,
            "round {round}: pipeline {p} µs + transaction {t} µs exceed every command but EXEC ({all_but_exec} µs; EXEC {} µs): EXEC's time was counted",
            delta("exec")
        );
        eprintln!("round {round}: pipeline {p} µs + transaction {t} µs ≤ {all_but_exec} µs (every command but EXEC); EXEC {} µs", delta("exec"));
        pipeline.push(p);
        transaction.push(t);
    }
    let (p, t) = (pipeline.iter().min().copied().unwrap(), transaction.iter().min().copied().unwrap());
    eprintln!("Redis command time, 5,000 INCRs: pipeline {pipeline:?} (fastest {p} µs), transaction {transaction:?} (fastest {t} µs)");
    assert!(t <= 3 * p + 200, "transaction's fastest {t} µs against the pipeline's {p} µs: {transaction:?} vs {pipeline:?}");
}
