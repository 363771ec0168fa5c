//! `pipelab run`'s progress bar on stderr: commands answered, commands/s
//! and, for a file (whose size is known), the share read and the time
//! left. Only when stderr is a terminal and `--quiet` is not given: a log
//! or a pipe gets the summary alone, as before.

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
