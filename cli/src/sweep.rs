//! `pipelab sweep --command 'SET k:{i} x' [--count N] [--batch-sizes 1,10,100,…] [--rtt MS] [--redis URL] [--json]`:
//! one command template, `--count` copies with `{i}` replaced by the
//! index, pipelined at each batch size, as `POST /api/v1/sweep` runs it
//! (`pipelab_engine::lab::sweep`): a table of commands/s per batch size, or with
//! `--json` the API's document. Afterwards it deletes the keys it created
//! (keys that existed before are kept, though the command ran on them),
//! after a failed run too, and on Ctrl-C.
//!
//! Exit status: 0 every reply ok; 1 error replies, cut runs, Redis
//! unreachable, or interrupted (Ctrl-C); 2 bad usage or input.

use std::process::ExitCode;

use tokio::signal::unix::{signal, SignalKind};

use pipelab_engine::exec::{self, Commands};
use pipelab_model::Mode;
use pipelab_engine::lab::sweep::{self, SweepReport, SweepSpec};
use pipelab_engine::lab::Runner;

use super::input::{at_least_one, Exit};
use pipelab_http::config::rtt_ms;
use super::lab::{fail, input_error, lab_error, LabArgs};

const NAME: &str = "sweep";

#[derive(clap::Args)]
pub struct Args {
    /// The command template, an inline command split as Redis `sdssplitargs`;
    /// `{i}` in any argument becomes the command's index, from 0 (API: `command`).
    #[arg(long)]
    command: String,
    /// Commands per run (API: `total`).
    #[arg(long, visible_alias = "total", default_value_t = 10_000, value_parser = at_least_one)]
    count: u64,
    /// Pipeline batch sizes, comma-separated: one run per entry, in this
    /// order (API: `batch_sizes`).
    #[arg(long, value_delimiter = ',', default_value = "1,10,100,1000,10000", value_parser = at_least_one)]
    batch_sizes: Vec<u64>,
    /// Simulated round-trip time to add, in ms (0 to 1000, fractional; API: `simulated_rtt_ms`).
    #[arg(long, default_value_t = 0.0, value_parser = rtt_ms, allow_negative_numbers = true)]
    rtt: f64,
    /// Simulated bandwidth in each direction, in Mbit/s (0.01 to 100000;
    /// default unlimited; API: `simulated_bandwidth_mbps`).
    #[arg(long, value_parser = super::input::bandwidth_mbps)]
    bandwidth: Option<f64>,
    /// Runs per batch size, 1 to 10; each row is its size's median run, and
    /// a size stops repeating once its runs took 1 s together (API: `repeats`).
    #[arg(long, default_value_t = pipelab_engine::lab::sweep::DEFAULT_REPEATS as u64, value_parser = at_least_one)]
    repeats: u64,
    #[command(flatten)]
    lab: LabArgs,
}

/// Exit status: see the module's documentation.
pub async fn main(args: Args) -> Result<ExitCode, ExitCode> {
    let runner = args.lab.runner(NAME).await?;
    let template = resp::inline::split_args(args.command.as_bytes()).map_err(|e| {
        let column = resp::inline::column_of(args.command.as_bytes(), e.offset);
        fail(NAME, Exit::BadInput, format_args!("--command: column {column}: {}", e.message))
    })?;
    let sizes: Vec<i64> = args.batch_sizes.iter().map(|&b| i64::try_from(b).unwrap_or(i64::MAX)).collect();
    let total = i64::try_from(args.count).unwrap_or(i64::MAX);
    let mut spec = SweepSpec::new(template, total, &sizes, args.rtt)
        .and_then(|s| s.with_repeats(i64::try_from(args.repeats).unwrap_or(i64::MAX)))
        .map_err(|e| input_error(NAME, &e, &[]))?;
    spec.simulated_bandwidth_mbps = args.bandwidth;
    // Refused before anything runs, as the API refuses it.
    exec::check_command(&*runner.commands().await, Commands::from(vec![spec.template.clone()]).get(0), Mode::Pipeline)
        .map_err(|m| fail(NAME, Exit::BadInput, format_args!("--command: {m}")))?;
    // Ctrl-C stops the sweep and cleans up; listened to from here on.
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|e| fail(NAME, Exit::BadInput, format_args!("cannot listen for Ctrl-C: {e}")))?;
    let stop = async move {
        interrupt.recv().await;
    };
    let report = sweep::sweep_until(&runner, &spec, stop).await.map_err(|e| lab_error(NAME, &e))?;
    let clean = report.points.iter().all(|p| p.errors + p.incomplete == 0);
    Ok(args.lab.finish(&report, |r| print_table(r, &args.command, &runner.target), clean))
}

/// One row per batch size, then what the clean-up did.
fn print_table(report: &SweepReport, command: &str, target: &pipelab_engine::conn::RedisTarget) {
    let network = super::options::network_text(report.simulated_rtt_ms, None, report.simulated_bandwidth_mbps);
    println!("command: {command}, count: {}, {network}, redis: {target}", report.total);
    println!(
        "{:>10} {:>11} {:>10} {:>12} {:>8} {:>7} {:>10} {:>8} {:>8} {:>8} {:>10} {:>12}",
        "batch size", "round trips", "time ms", "commands/s", "ok", "errors", "incomplete", "p50 µs", "p99 µs", "max µs",
        "model ms", "achieved RTT"
    );
    let m = &report.model;
    for p in &report.points {
        println!(
            "{:>10} {:>11} {:>10.3} {:>12.0} {:>8} {:>7} {:>10} {:>8} {:>8} {:>8} {:>10.3} {:>12}",
            p.batch_size,
            p.round_trips,
            p.total_us as f64 / 1000.0,
            p.commands_per_sec,
            p.ok,
            p.errors,
            p.incomplete,
            p.latency_us.p50,
            p.latency_us.p99,
            p.latency_us.max,
            m.total_us(report.total, p.batch_size) / 1000.0,
            p.achieved_rtt_ms.map_or("-".to_string(), |a| format!("{a:.3} ms"))
        );
    }
    println!(
        "model: T(b) = ceil(N/b) × RTT + N × (wire + t_cmd), RTT {:.3} ms (simulated + loopback {:.3}), t_cmd {:.2} µs (least squares on batch sizes {:?}); knee at batch size {}",
        m.rtt_ms, m.loopback_rtt_ms, m.t_cmd_us, m.fitted_on, m.knee_batch_size
    );
    if let (Some(mbps), Some(bdp)) = (m.bandwidth_mbps, m.bdp_batch_size) {
        println!(
            "model: wire {:.2} µs per command ({:.0} bytes at {mbps} Mbit/s); bandwidth-delay product {bdp} commands: beyond it a bigger batch saves little",
            m.wire_us_per_cmd, m.bytes_per_cmd
        );
    }
    if let Some(note) = &m.note {
        println!("model: {note}");
    }
    let per = |v: Option<f64>| v.map_or("unknown".to_string(), |us| format!("{us:.2} µs"));
    println!(
        "per command: t_cmd {:.2} µs (wall time: client, kernel and Redis, overlapping in a pipeline); Redis {} (INFO commandstats: the command's execution only); pipelab {} (its CPU: encoding, system calls, parsing replies)",
        m.t_cmd_us, per(m.server_us_per_cmd), per(m.client_cpu_us_per_cmd)
    );
    let c = &report.cleanup;
    println!(
        "cleanup: {} keys named, {} existed before (kept), {} deleted",
        c.keys, c.preexisting, c.deleted
    );
}
