//! `pipelab run [FILE|-] --mode … [--batch-size N] [--rtt MS] [--redis URL] [--json]`:
//! streams a command file (inline lines or RESP, told apart per command as
//! the Redis server does) through the executor, in constant memory like
//! `redis-cli --pipe`, and prints a summary ending with `errors: N, replies: M`.
//!
//! Exit status: 0 all replies ok; 1 error replies, `unknown` commands or a
//! lost/refused connection; 2 bad usage or input (with line/column or byte
//! offset, and which commands had been sent before it).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;
use std::rc::Rc;

use pipelab_engine::report_json::ReportJson;
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{CommandResult, ExecError, InputErrorKind, ResultSink, Status, StreamReport};
use pipelab_model::Mode;
use pipelab_engine::lab::Direct;

use super::options::{PlanArgs, RedisArgs};
use super::progress::Progress;
use super::run_source::{FileSource, SourceError};

#[derive(clap::Args)]
pub struct Args {
    /// Command file: inline commands one per line, RESP multibulks, or both; `-` for stdin.
    #[arg(default_value = "-")]
    file: String,
    /// How the commands are sent.
    #[arg(long, value_enum, default_value_t = Mode::Pipeline)]
    mode: Mode,
    #[command(flatten)]
    plan: PlanArgs,
    #[command(flatten)]
    redis: RedisArgs,
    /// Print the full result document (summary and one result per command) as JSON.
    #[arg(long)]
    json: bool,
    /// Print each reply on stdout as it comes, as redis-cli does (`(integer) 1`,
    /// `1) "a"`), before the summary: for small files.
    #[arg(long, conflicts_with = "json")]
    replies: bool,
    /// No progress bar on stderr (there is none anyway when stderr is not a terminal).
    #[arg(long, short)]
    quiet: bool,
}

/// Error replies shown on stderr before the rest are only counted.
const SHOWN_ERRORS: usize = 20;

pub async fn main(args: Args) -> ExitCode {
    let usage = |m: String| {
        eprintln!("pipelab run: {m}");
        ExitCode::from(2)
    };
    let runner = match args.redis.runner() {
        Ok(r) => r,
        Err(m) => return usage(m),
    };
    let mut size = None;
    let input: Box<dyn Read + Send> = if args.file == "-" {
        Box::new(io::stdin())
    } else {
        match File::open(&args.file) {
            Ok(f) => {
                size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
                Box::new(f)
            }
            Err(e) => return usage(format!("{}: {e}", args.file)),
        }
    };
    let plan = args.plan.plan(args.mode);
    // The executor checks each command with the server's command table.
    let Direct { target, opts } = runner.with_commands().await;

    let lines = Rc::new(RefCell::new(VecDeque::new()));
    let mut source = FileSource::new(input, lines.clone());
    let mut sink = CliSink::new(lines, args.json);
    sink.replies = args.replies;
    sink.progress = Progress::new(size, args.quiet || args.json);
    let report = pipelab_engine::run::execute_stream(&target, &plan, &mut source, &mut sink, &opts).await;
    sink.progress.finish();
    let report = match report {
        Ok(r) => r,
        Err(ExecError::Invalid(e) | ExecError::CrossSlot(e)) => return usage(format!("{}: {}", super::lab::option_name(&e.field, &[]), e.message)),
        Err(ExecError::Connect(e)) => {
            eprintln!("pipelab run: {e}\n{}", super::lab::WHERE_REDIS);
            return ExitCode::from(1);
        }
    };
    // As the API answers 400 for a batch without commands: nothing to report.
    if report.summary.commands == 0 && report.input_error.is_none() {
        return usage(format!("{} holds no command (only blank lines)", super::input::input_name(&args.file)));
    }
    sink.finish(&report, &target);
    let s = &report.summary;
    if report.input_error.is_some() {
        ExitCode::from(2)
    } else if s.errors > 0 || s.unknown > 0 || report.connection_error.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Counts results (constant memory), shows the first error replies, and
/// with `--json` streams each result as it comes.
struct CliSink {
    lines: Rc<RefCell<VecDeque<(usize, usize)>>>,
    /// `--replies`: each reply printed as it comes.
    replies: bool,
    progress: Progress,
    json: Option<BufWriter<io::Stdout>>,
    /// The `--json` report (shared with the API) and its bytes not yet written.
    report: ReportJson,
    scratch: Vec<u8>,
    results: usize,
    shown_errors: usize,
    /// Index and line of the last command that was written to Redis.
    last_sent: Option<(usize, usize)>,
}

impl CliSink {
    fn new(lines: Rc<RefCell<VecDeque<(usize, usize)>>>, json: bool) -> Self {
        CliSink {
            lines,
            replies: false,
            progress: Progress::new(None, true),
            json: json.then(|| BufWriter::with_capacity(1 << 16, io::stdout())),
            report: ReportJson::default(),
            scratch: Vec::new(),
            results: 0,
            shown_errors: 0,
            last_sent: None,
        }
    }

    fn finish(&mut self, report: &StreamReport<SourceError>, target: &RedisTarget) {
        let s = &report.summary;
        let input = report.input_error.as_ref().map(|e| {
            let (line, column, offset) = match &e.kind {
                InputErrorKind::Source(SourceError::Parse(p)) => (Some(p.line), p.column, Some(p.offset)),
                _ => (None, None, None),
            };
            (e, line, column, offset)
        });
        if s.commands == 0 {
            // Input that failed before its first command ran nothing: a summary
            // (or JSON document) of zeros would read as a run; the error alone says it.
        } else if let Some(out) = &mut self.json {
            self.report.tail(&mut self.scratch, s, report.transaction.as_ref(), report.connection_error.as_deref());
            let _ = out.write_all(&self.scratch);
            self.scratch.clear();
            if let Some((e, line, column, offset)) = &input {
                let v = serde_json::json!({
                    "message": e.to_string(), "index": e.index, "sent": e.sent,
                    "line": line, "column": column, "offset": offset,
                });
                let _ = write!(out, ",\"input_error\":{v}");
            }
            let _ = out.write_all(b"}\n");
            let _ = out.flush();
        } else {
            let mode = match s.mode {
                Some(Mode::Pipeline) => format!("{} (batch size {})", Mode::Pipeline.name(), s.batch_size),
                Some(Mode::Auto) => format!("{} ({} clients)", Mode::Auto.name(), s.batch_size),
                Some(mode) => mode.name().to_string(),
                None => "-".to_string(),
            };
            let network = super::options::network_text(s.simulated_rtt_ms, s.achieved_rtt_ms, s.simulated_bandwidth_mbps);
            println!("mode: {mode}, {network}, redis: {target}");
            println!(
                "commands: {} (ok {}, errors {}, not sent {}, unknown {})",
                s.commands, s.ok, s.errors, s.not_sent, s.unknown
            );
            println!(
                "round trips: {}, writes: {} ({}), bytes sent: {}, bytes received: {}",
                s.round_trips,
                s.write_calls,
                plural(s.write_syscalls, "write system call"),
                s.bytes_sent,
                s.bytes_received
            );
            println!("time: {}, {:.0} commands/s", duration_text(s.total_us), s.commands_per_sec);
            println!("read system calls: {}", s.read_syscalls);
            if let Some(a) = &s.auto {
                println!(
                    "auto: {} clients, window {} µs: {} writes, at most {} and on average {:.1} commands per write",
                    a.clients, a.window_us, a.writes, a.max_commands_per_write, a.mean_commands_per_write
                );
            }
            match &s.server {
                Some(Some(w)) => println!(
                    "server: {} reads, {} writes, {} bytes in, {} bytes out, {} calls in {} µs{}",
                    w.reads,
                    w.writes,
                    w.net_input_bytes,
                    w.net_output_bytes,
                    w.calls,
                    w.usec,
                    if w.approximate { " (approximate: other clients were connected)" } else { "" }
                ),
                Some(None) => println!("server: could not be asked (INFO failed)"),
                None => {}
            }
            for n in &s.nodes {
                println!(
                    "node {}: commands {}, round trips {}, bytes sent {}, bytes received {}, redirections {}",
                    n.address, n.commands, n.round_trips, n.bytes_sent, n.bytes_received, n.redirections
                );
            }
            if let Some(t) = &report.transaction {
                let status = serde_json::to_value(t.status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
                match &t.message {
                    Some(m) => println!("transaction: {status}: {m}"),
                    None => println!("transaction: {status}"),
                }
            }
            if let Some(c) = &report.connection_error {
                println!("connection lost: {c}");
            }
            println!("errors: {}, replies: {}", s.errors, s.ok + s.errors);
        }
        if let Some((e, _, _, _)) = &input {
            eprintln!("pipelab run: {e}");
            let read_before = e.index;
            let sent = match (e.sent, self.last_sent) {
                (0, _) | (_, None) => "no command before it was sent".to_string(),
                (1, Some((_, line))) if read_before == 1 => format!("the command before it (line {line}) was sent"),
                (n, Some((_, line))) if n == read_before => format!("the {n} commands before it (through line {line}) were sent"),
                (n, Some((_, line))) => format!("{n} of the {read_before} commands before it (through line {line}) were sent"),
            };
            eprintln!("pipelab run: input stopped there: {sent}; nothing after it was read or sent");
        }
        if let Some(c) = &report.connection_error {
            eprintln!("pipelab run: connection lost: {c}");
        }
    }
}

impl ResultSink for CliSink {
    fn push(&mut self, r: CommandResult) {
        let (line, offset) = self.lines.borrow_mut().pop_front().unwrap_or((0, 0));
        if matches!(r.status, Status::Ok | Status::Error | Status::Unknown) {
            self.last_sent = Some((r.index, line));
        }
        if r.status == Status::Error && self.json.is_none() {
            if self.shown_errors < SHOWN_ERRORS {
                let text = r.reply.as_ref().map(pipelab_engine::conn::reply_text).unwrap_or_default();
                eprintln!("command {} (line {line}): {text}", r.index + 1);
            } else if self.shown_errors == SHOWN_ERRORS {
                eprintln!("(further error replies are only counted)");
            }
            self.shown_errors += 1;
        }
        if let Some(out) = &mut self.json {
            self.report.result(&mut self.scratch, &r);
            let _ = out.write_all(&self.scratch);
            self.scratch.clear();
        }
        if self.replies {
            print_reply(&r);
        }
        self.results += 1;
        self.progress.set(self.results, offset);
    }
}

/// `--replies`: the reply as redis-cli prints it, or the status of a command without one.
fn print_reply(r: &CommandResult) {
    match (&r.reply, r.status) {
        (Some(reply), _) => println!("{}", reply.display().trim_end()),
        (None, Status::NotSent) => println!("(not sent)"),
        (None, _) => println!("(unknown: no reply)"),
    }
}

/// `n thing` or `n things`.
fn plural(n: u64, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

/// A batch's time: ms with µs precision up to 10 s, then seconds (`40.538 s`).
fn duration_text(us: u64) -> String {
    if us < 10_000_000 { format!("{:.3} ms", us as f64 / 1000.0) } else { format!("{:.3} s", us as f64 / 1e6) }
}

#[cfg(test)]
mod tests {
    /// "time: 40537.586 ms" did not read; seconds past 10 s.
    #[test]
    fn durations_past_10_s_read_in_seconds() {
        assert_eq!(super::duration_text(812_345), "812.345 ms");
        assert_eq!(super::duration_text(9_999_999), "9999.999 ms");
        assert_eq!(super::duration_text(10_000_000), "10.000 s");
        assert_eq!(super::duration_text(40_537_586), "40.538 s");
    }
}
