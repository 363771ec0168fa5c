//! `pipelab compare FILE|- [--modes …] [--batch-size N] [--rtt MS] [--redis URL] [--json]`:
//! the file's commands once per mode, sequential first as the baseline,
//! as `POST /api/v1/compare` runs them (`pipelab_engine::lab::compare`): a table
//! of each mode's summary and speedup, or with `--json` the API's document.
//! The batch really runs once per mode, so its side effects repeat.
//!
//! Exit status: 0 every reply ok; 1 error replies, commands not sent or
//! `unknown`, or Redis unreachable; 2 bad usage or input (`line L, column C`).

use std::io::Read;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pipelab_engine::commands::Table;
use pipelab_engine::exec::{self, Batch, BatchSource, CommandResult, Commands, ExecError, Plan, Report, ResultSink};
use pipelab_model::Mode;
use pipelab_engine::lab::compare::{self, CompareReport};
use pipelab_engine::lab::{Direct, Runner};

use super::input::{open_input, Exit};
use super::lab::{exec_error, fail, input_error, LabArgs};
use super::options::PlanArgs;
use super::progress::Runs;

const NAME: &str = "compare";

#[derive(clap::Args)]
pub struct Args {
    /// Command file: inline commands one per line, RESP multibulks, or both; `-` for stdin.
    #[arg(default_value = "-")]
    file: String,
    /// Modes to run, comma-separated; sequential always runs, first, as the
    /// baseline (API: `modes`). Default: all four.
    #[arg(long, value_enum, value_delimiter = ',')]
    modes: Option<Vec<Mode>>,
    #[command(flatten)]
    plan: PlanArgs,
    /// With --json: each run's per-command results too (API: `include_results`).
    #[arg(long)]
    include_results: bool,
    /// No progress bar on stderr (there is none anyway when stderr is not a terminal, or with --json).
    #[arg(long, short)]
    quiet: bool,
    #[command(flatten)]
    lab: LabArgs,
}

/// Exit status: see the module's documentation.
pub async fn main(args: Args) -> Result<ExitCode, ExitCode> {
    let runner = args.lab.runner(NAME).await?;
    let (commands, lines) = read_commands(&args.file).map_err(|m| fail(NAME, Exit::BadInput, m))?;
    let modes = compare::run_order(args.modes.as_deref()).map_err(|e| input_error(NAME, &e, &lines))?;
    // The settings every run shares; each run has its own mode.
    // Each run's summary says what the server did too, as the API's.
    let plan = Plan { server_stats: true, ..args.plan.plan(Mode::Pipeline) };
    let table = runner.commands().await;
    let batches = compare::batches(&modes, &plan.watch, |mode| {
        let batch = Batch::new(commands.clone(), Plan { mode, watch: Vec::new(), ..plan.clone() });
        exec::validate(&batch, &table).map(|()| batch)
    })
    .map_err(|e| exec_error(NAME, &ExecError::Invalid(e), &lines))?;
    let shown = Shown { direct: runner.clone(), runs: Runs::new(args.quiet || args.lab.json), of: batches.len(), started: Arc::default() };
    let report = compare::compare(&shown, &batches, args.include_results).await;
    shown.runs.finish();
    let report = report.map_err(|e| exec_error(NAME, &e, &lines))?;
    let clean = report.runs.iter().all(|r| r.summary.errors + r.summary.not_sent + r.summary.unknown == 0);
    Ok(args.lab.finish(&report, |r| print_table(r, &runner.target), clean))
}

/// The executor as [`Direct`] runs it, with each run's progress shown
/// ([`Runs`]): a run of 100,000 commands sequentially takes a while.
#[derive(Clone)]
struct Shown {
    direct: Direct,
    runs: Runs,
    /// How many runs in all, and how many started.
    of: usize,
    started: Arc<AtomicUsize>,
}

/// Results collected as [`Direct`] collects them, each counted on the bar.
struct Counted<'a> {
    results: Vec<CommandResult>,
    runs: &'a Runs,
}

impl ResultSink for Counted<'_> {
    fn push(&mut self, result: CommandResult) {
        self.results.push(result);
        self.runs.answered(self.results.len() as u64);
    }
}

impl Runner for Shown {
    type Error = ExecError;

    async fn run(&self, batch: &Batch) -> Result<Report, ExecError> {
        let n = self.started.fetch_add(1, Ordering::Relaxed) + 1;
        let mode = batch.plan.mode.name();
        self.runs.start(format!("{mode}, run {n} of {}", self.of), batch.commands.len() as u64);
        let mut sink = Counted { results: Vec::with_capacity(batch.commands.len()), runs: &self.runs };
        let out = pipelab_engine::run::execute_stream(&self.direct.target, &batch.plan, &mut BatchSource::new(&batch.commands), &mut sink, &self.direct.opts).await?;
        let report = out.with_results(sink.results);
        self.runs.done(format!("{mode}: {} commands in {:.3} ms", report.summary.commands, report.summary.total_us as f64 / 1000.0));
        Ok(report)
    }

    fn batch_timeout(&self) -> Duration {
        self.direct.batch_timeout()
    }

    async fn commands(&self) -> Arc<Table> {
        self.direct.commands().await
    }
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
        return Err(format!("{} holds no command (only blank lines)", super::input::input_name(file)));
    }
    Ok((commands, lines))
}

/// One row per run: round trips, time, commands/s, speedup, outcomes.
fn print_table(report: &CompareReport, target: &pipelab_engine::conn::RedisTarget) {
    let first = &report.runs[0].summary;
    let network = super::options::network_text(first.simulated_rtt_ms, None, first.simulated_bandwidth_mbps);
    println!("commands: {}, {network}, redis: {target}", first.commands);
    println!(
        "{:<12} {:>11} {:>10} {:>12} {:>8} {:>8} {:>7} {:>9} {:>8} {:>7} {:>7} {:>9} {:>9} {:>9}",
        "mode", "round trips", "time ms", "commands/s", "speedup", "ok", "errors", "not sent", "unknown",
        "reads", "writes", "srv reads", "srv writes", "srv µs"
    );

    for run in &report.runs {
        let s = &run.summary;
        let speedup = run.speedup_vs_sequential.map_or("-".to_string(), |x| format!("{x:.2}x"));
        let name = run.mode.name();
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
        // The executor's system calls, then the server's (`-`: not measured).
        print!(" {:>7} {:>7}", s.read_syscalls, s.write_syscalls);
        match s.server {
            Some(Some(w)) => print!(" {:>9} {:>9} {:>9}{}", w.reads, w.writes, w.usec, if w.approximate { " ~" } else { "" }),
            _ => print!(" {:>9} {:>9} {:>9}", "-", "-", "-"),
        }
        match run.transaction.as_ref().and_then(|t| serde_json::to_value(t.status).ok()) {
            Some(serde_json::Value::String(status)) => println!("  transaction {status}"),
            _ => println!(),
        }
        if let Some(a) = s.achieved_rtt_ms {
            println!("{:<12} achieved RTT {a:.3} ms (asked {} ms)", "", s.simulated_rtt_ms);
        }
    }
    println!("{}", report.note);
    println!("reads/writes: the executor's read and write system calls; srv: the server's (INFO deltas; ~: other clients were connected).");
}
