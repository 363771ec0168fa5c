//! `pipelab run`'s progress bar on stderr: commands answered, commands/s
//! and, for a file (whose size is known), the share read and the time
//! left. Only when stderr is a terminal and `--quiet` is not given: a log
//! or a pipe gets the summary alone.

use std::io::IsTerminal;
use std::cell::Cell;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Redraws at most this often (indicatif's own limit is per draw target).
const TICK: Duration = Duration::from_millis(100);

/// Bar and message updated at most this often (a million results would
/// otherwise format a million messages).
const UPDATE: Duration = Duration::from_millis(50);

pub struct Progress(Option<(ProgressBar, Cell<Instant>)>);

impl Progress {
    /// A bar for an input of `len` bytes (`None`: stdin, size unknown: a
    /// spinner with the count and rate). Hidden unless stderr is a terminal
    /// and `quiet` is false.
    pub fn new(len: Option<u64>, quiet: bool) -> Progress {
        if quiet || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let bar = Self::bar(len, ProgressDrawTarget::stderr_with_hz(10));
        Progress(Some((bar, Cell::new(Instant::now()))))
    }

    fn bar(len: Option<u64>, target: ProgressDrawTarget) -> ProgressBar {
        let (bar, template) = match len {
            Some(len) => (
                ProgressBar::with_draw_target(Some(len), target),
                "{spinner} {msg} [{bar:30}] {percent}% · {elapsed} elapsed · ETA {eta}",
            ),
            None => (ProgressBar::with_draw_target(None, target), "{spinner} {msg} · {elapsed} elapsed"),
        };
        bar.set_style(ProgressStyle::with_template(template).expect("a valid template").progress_chars("=> "));
        bar.enable_steady_tick(TICK);
        bar
    }

    /// `answered` commands have a result; the input is read up to byte `offset`.
    pub fn set(&self, answered: usize, offset: usize) {
        if let Some((bar, last)) = &self.0 {
            if last.get().elapsed() < UPDATE {
                return;
            }
            last.set(Instant::now());
            if bar.length().is_some() {
                bar.set_position(offset as u64);
            }
            let secs = bar.elapsed().as_secs_f64();
            let rate = if secs > 0.0 { answered as f64 / secs } else { 0.0 };
            bar.set_message(format!("{answered} commands, {rate:.0} commands/s"));
        }
    }

    /// Takes the bar off the terminal (before the summary is printed).
    pub fn finish(&self) {
        if let Some((bar, _)) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// `pipelab compare`'s progress on stderr: a bar for the run going on (its
/// commands answered of all, the rate, the time left) and, above it, a line
/// for each run done. Only when stderr is a terminal and `quiet` is false;
/// cheap to clone (the runs share the bar).
#[derive(Clone)]
pub struct Runs(Option<ProgressBar>);

impl Runs {
    pub fn new(quiet: bool) -> Runs {
        if quiet || !std::io::stderr().is_terminal() {
            return Runs(None);
        }
        let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
        let template = "{spinner} {prefix} [{bar:30}] {human_pos}/{human_len} commands · {elapsed} elapsed · ETA {eta}";
        bar.set_style(ProgressStyle::with_template(template).expect("a valid template").progress_chars("=> "));
        bar.enable_steady_tick(TICK);
        Runs(Some(bar))
    }

    /// A run of `commands` begins; `what` names it (`sequential, run 1 of 4`).
    pub fn start(&self, what: String, commands: u64) {
        if let Some(bar) = &self.0 {
            bar.set_prefix(what);
            bar.set_length(commands);
            bar.set_position(0);
            bar.reset_eta();
        }
    }

    /// `answered` commands of the run have a result.
    pub fn answered(&self, answered: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(answered);
        }
    }

    /// A run ended: `line` stays on the terminal above the bar.
    pub fn done(&self, line: String) {
        if let Some(bar) = &self.0 {
            bar.println(line);
        }
    }

    /// Takes the bar off the terminal (before the table is printed).
    pub fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
