//! `pipelab compare FILE|- [--modes …] [--batch-size N] [--rtt MS] [--redis URL] [--json]`:
//! the file's commands once per mode, sequential first as the baseline,
//! as `POST /api/v1/compare` runs them (`pipelab::lab::compare`): a table
//! of each mode's summary and speedup, or with `--json` the API's document.
//! The batch really runs once per mode, so its side effects repeat.
//!
//! Exit status: 0 every reply ok; 1 error replies, commands not sent or
//! `unknown`, or Redis unreachable; 2 bad usage or input (`line L, column C`).

use std::io::Read;
use std::process::ExitCode;

use pipelab::exec::{self, Batch, Commands, ExecError, Mode};
use pipelab::lab::compare::{self, CompareReport};
use pipelab::lab::runner::pipeline;

use super::input::{open_input, Exit};
use super::lab::{exec_error, fail, input_error, print_json, RedisArgs};
use super::run::{ModeArg, OnErrorArg};

const NAME: &str = "compare";

#[derive(clap::Args)]
pub struct Args {
    /// Command file: inline commands one per line, RESP multibulks, or both; `-` for stdin.
    #[arg(default_value = "-")]
    file: String,
    /// Modes to run, comma-separated; sequential always runs, first, as the
    /// baseline (API: `modes`). Default: all three.
    #[arg(long, value_enum, value_delimiter = ',')]
    modes: Option<Vec<ModeArg>>,
    /// Commands per pipeline chunk in the pipeline run (API: `batch_size`).
    #[arg(long, default_value_t = exec::DEFAULT_BATCH_SIZE as u64, value_parser = super::input::at_least_one)]
    batch_size: u64,
    /// Simulated round-trip time to add, in ms (0 to 1000, fractional; API: `simulated_rtt_ms`).
    #[arg(long, default_value_t = 0.0, value_parser = super::input::rtt_ms, allow_negative_numbers = true)]
    rtt: f64,
    /// After a chunk with an error reply: keep going, or send nothing more (API: `on_error`).
    #[arg(long, value_enum, default_value = "continue")]
    on_error: OnErrorArg,
    /// Switch each run's connection to RESP3 (HELLO 3).
    #[arg(long)]
    resp3: bool,
    /// Key to WATCH before the transaction run (repeatable).
    #[arg(long)]
    watch: Vec<String>,
    /// With --json: each run's per-command results too (API: `include_results`).
    #[arg(long)]
    include_results: bool,
    #[command(flatten)]
    redis: RedisArgs,
    /// Print the API's document (`note`, `runs`) as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub async fn main(args: Args) -> ExitCode {
    let runner = match args.redis.runner() {
        Ok(r) => r,
        Err(m) => return fail(NAME, Exit::BadInput, m),
    };
    let (commands, lines) = match read_commands(&args.file) {
        Ok(c) => c,
        Err(m) => return fail(NAME, Exit::BadInput, m),
    };
    let requested: Option<Vec<Mode>> = args.modes.map(|list| list.into_iter().map(Mode::from).collect());
    let modes = match compare::run_order(requested.as_deref()) {
        Ok(m) => m,
        Err(e) => return input_error(NAME, &e, &lines),
    };
    let watch: Vec<Vec<u8>> = args.watch.iter().map(|k| k.as_bytes().to_vec()).collect();
    let batches = compare::batches(&modes, &watch, |mode| {
        let batch = Batch {
            mode,
            on_error: args.on_error.into(),
            resp3: args.resp3,
            ..pipeline(commands.clone(), args.batch_size as usize, args.rtt)
        };
        exec::validate(&batch).map(|()| batch)
    });
    let batches = match batches {
        Ok(b) => b,
        Err(e) => return exec_error(NAME, &ExecError::Invalid(e), &lines),
    };
    let report = match compare::compare(&runner, &batches, args.include_results).await {
        Ok(r) => r,
        Err(e) => return exec_error(NAME, &e, &lines),
    };
    if args.json {
        if let Err(exit) = print_json(&report) {
            return exit.into();
        }
    } else {
        print_table(&report, &runner.target);
    }
    let clean = report.runs.iter().all(|r| r.summary.errors + r.summary.not_sent + r.summary.unknown == 0);
    if clean { Exit::Ok } else { Exit::ErrorReplies }.into()
}

/// Every command of `file`, split as the server splits its input, and the
/// line each starts on. Errors: the file, or `line L, column C: …` /
/// `byte N: …`, or no command at all.
fn read_commands(file: &str) -> Result<(Commands, Vec<usize>), String> {
    let mut buf = Vec::new();
    open_input(file).and_then(|mut r| r.read_to_end(&mut buf)).map_err(|e| e.to_string())?;
    let mut reader = resp::RequestReader::new();
    let (mut commands, mut lines) = (Commands::new(), Vec::new());
    let mut pos = 0;
    while let Some(req) = reader.next(&buf[pos..], true).map_err(|e| e.to_string())? {
        pos += req.consumed;
        lines.push(req.line);
        commands.push(&req.argv);
    }
    if commands.is_empty() {
        return Err(format!("{file} holds no command (only blank lines)"));
    }
    Ok((commands, lines))
}

/// One row per run: round trips, time, commands/s, speedup, outcomes.
fn print_table(report: &CompareReport, target: &pipelab::conn::RedisTarget) {
    let first = &report.runs[0].summary;
    println!("commands: {}, simulated RTT: {} ms, redis: {target}", first.commands, first.simulated_rtt_ms);
    println!(
        "{:<12} {:>11} {:>10} {:>12} {:>8} {:>8} {:>7} {:>9} {:>8}",
        "mode", "round trips", "time ms", "commands/s", "speedup", "ok", "errors", "not sent", "unknown"
    );
    for run in &report.runs {
        let s = &run.summary;
        let speedup = run.speedup_vs_sequential.map_or("-".to_string(), |x| format!("{x:.2}x"));
        let name = serde_json::to_value(run.mode).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
        print!(
            "{name:<12} {:>11} {:>10.3} {:>12.0} {speedup:>8} {:>8} {:>7} {:>9} {:>8}",
            s.round_trips,
            s.total_us as f64 / 1000.0,
            s.commands_per_sec,
            s.ok,
            s.errors,
            s.not_sent,
            s.unknown
        );
        match run.transaction.as_ref().and_then(|t| serde_json::to_value(t.status).ok()) {
            Some(serde_json::Value::String(status)) => println!("  transaction {status}"),
            _ => println!(),
        }
    }
    println!("{}", report.note);
}
