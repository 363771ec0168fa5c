//! The missed-pipeline detector: on one connection, a run of consecutive
//! single-command flights none of which carries bytes of an earlier reply of
//! the run ([`super::depends`]: the evidence that it was computed from that
//! reply) is a run whose commands did not wait for each other's replies in
//! any way a pipeline could not. A command that does carry such bytes ends
//! the run and starts the next. Think time is a secondary signal: a command
//! written more than `--think-time-us` (default 1 s) after the previous
//! reply ends a run too (the client was idle, not waiting on Redis); a
//! busy machine's stalls, tens of ms, stay under it. Commands of a WATCH/MULTI block
//! (from WATCH or MULTI to EXEC/DISCARD, UNWATCH and RESET included) break a
//! run and never join one: a read-then-write under WATCH must wait for its
//! reads. Commands that change the connection's state (HELLO, AUTH, SELECT,
//! CLIENT SETNAME: a client's set-up) break runs too. A run of at least `--min-run` commands (default 3) is reported,
//! with the saving a pipeline would bring: `(n − 1) × RTT` at `--rtt`.

use super::report::PatternCount;

/// Distinct patterns kept per run; more are counted under `…`.
const MAX_PATTERNS: usize = 8;

/// A think time up to this many times the threshold is "just over" it ([`Detector::near_miss`]).
pub const NEAR_FACTOR: u64 = 100;

/// `--think-time-us`'s default: far above a busy machine's stalls.
pub const THINK_TIME_US: u64 = 1_000_000;
/// `--min-run`'s default.
pub const MIN_RUN: u64 = 3;

/// The detector's rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// Longest think time that continues a run, µs (an idle client's pause ends it).
    pub think_time_us: u64,
    /// Fewest commands of a reported run.
    pub min_run: u64,
    /// RTT the saving is computed at, ms.
    pub rtt_ms: f64,
}

/// What the detector needs of a finished flight.
#[derive(Debug, Clone, PartialEq)]
pub struct FlightFacts<'a> {
    pub commands: u32,
    /// Some command of it belongs to a WATCH/MULTI block or changes the
    /// connection's state (HELLO, AUTH, SELECT, CLIENT SETNAME, …: set-up,
    /// not the application's loop).
    pub breaks_runs: bool,
    pub think_us: Option<u64>,
    /// Its command carries bytes of an earlier reply of the current run.
    pub carried: bool,
    /// Replies of the run its command was compared with.
    pub compared: u64,
    pub start_us: u64,
    pub end_us: u64,
    pub pattern: &'a str,
}

/// A finished run, before it gets its connection's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub commands: u64,
    pub start_us: u64,
    pub end_us: u64,
    pub think_us_max: u64,
    /// Comparisons of a command with an earlier reply of the run, in all
    /// (the evidence of independence: each found nothing carried).
    pub compared: u64,
    /// Most frequent first.
    pub patterns: Vec<PatternCount>,
    pub saving_ms: f64,
}

/// One connection's detector.
#[derive(Debug, Clone)]
pub struct Detector {
    rule: Rule,
    run: Option<Run>,
}

impl Detector {
    pub fn new(rule: Rule) -> Detector {
        Detector { rule, run: None }
    }

    /// Whether `f` (the next flight, not yet taken) would have continued the
    /// run but for a think time just over the threshold (at most
    /// [`NEAR_FACTOR`] times it): on a busy machine a loop's own think times
    /// grow past `--think-time-us` and its missed pipeline breaks into pieces.
    pub fn near_miss(&self, f: &FlightFacts) -> bool {
        let limit = self.rule.think_time_us;
        f.commands == 1
            && !f.breaks_runs
            && self.run.is_some()
            && f.think_us.is_some_and(|t| t > limit && t <= limit.saturating_mul(NEAR_FACTOR))
    }

    /// Takes the next finished flight (in order); returns a run it ended, if
    /// that run is long enough to report.
    pub fn on_flight(&mut self, f: &FlightFacts) -> Option<Run> {
        let single = f.commands == 1 && !f.breaks_runs;
        let continues = single && !f.carried && self.run.is_some() && f.think_us.is_some_and(|t| t <= self.rule.think_time_us);
        if continues {
            let run = self.run.as_mut().expect("checked");
            run.commands += 1;
            run.end_us = f.end_us;
            run.think_us_max = run.think_us_max.max(f.think_us.unwrap_or(0));
            run.compared += f.compared;
            add_pattern(&mut run.patterns, f.pattern);
            return None;
        }
        let ended = self.finish();
        if single {
            let mut patterns = Vec::new();
            add_pattern(&mut patterns, f.pattern);
            self.run = Some(Run { commands: 1, start_us: f.start_us, end_us: f.end_us, think_us_max: 0, compared: 0, patterns, saving_ms: 0.0 });
        }
        ended
    }

    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// Commands in the current run (0: none): the replies a next command is compared with.
    pub fn run_len(&self) -> u64 {
        self.run.as_ref().map_or(0, |r| r.commands)
    }

    /// Ends the current run (the connection closed, or the doctor stops).
    pub fn finish(&mut self) -> Option<Run> {
        let run = self.run.take()?;
        self.reported(run)
    }

    /// The current run as [`Detector::finish`] would report it, without
    /// ending it (`--ui` shows runs still going on).
    pub fn current(&self) -> Option<Run> {
        self.reported(self.run.clone()?)
    }

    fn reported(&self, mut run: Run) -> Option<Run> {
        if run.commands < self.rule.min_run.max(2) {
            return None;
        }
        run.patterns.sort_by_key(|p| std::cmp::Reverse(p.commands));
        run.saving_ms = (run.commands - 1) as f64 * self.rule.rtt_ms;
        Some(run)
    }
}

fn add_pattern(patterns: &mut Vec<PatternCount>, pattern: &str) {
    if let Some(p) = patterns.iter_mut().find(|p| p.pattern == pattern) {
        p.commands += 1;
        return;
    }
    if patterns.len() < MAX_PATTERNS {
        patterns.push(PatternCount { pattern: pattern.to_string(), commands: 1 });
        return;
    }
    match patterns.iter_mut().find(|p| p.pattern == "…") {
        Some(p) => p.commands += 1,
        None => patterns.push(PatternCount { pattern: "…".to_string(), commands: 1 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Rule = Rule { think_time_us: 50, min_run: 3, rtt_ms: 0.5 };

    fn flight(commands: u32, think: Option<u64>, tx: bool, pattern: &str) -> FlightFacts<'_> {
        FlightFacts { commands, breaks_runs: tx, think_us: think, carried: false, compared: 1, start_us: 0, end_us: 10, pattern }
    }

    #[test]
    fn a_quick_sequence_of_single_commands_is_one_run_with_its_saving() {
        let mut d = Detector::new(RULE);
        assert!(d.on_flight(&flight(1, None, false, "SET a:*")).is_none());
        for _ in 0..999 {
            assert!(d.on_flight(&flight(1, Some(20), false, "SET a:*")).is_none());
        }
        assert_eq!(d.current().map(|r| r.commands), Some(1000), "seen while it goes on");
        let run = d.finish().expect("a run of 1000");
        assert_eq!(run.commands, 1000);
        assert_eq!(run.patterns, vec![PatternCount { pattern: "SET a:*".into(), commands: 1000 }]);
        assert!((run.saving_ms - 999.0 * 0.5).abs() < 1e-9);
        assert!(d.finish().is_none());
    }

    #[test]
    fn think_time_pipelines_and_transactions_break_runs() {
        let mut d = Detector::new(RULE);
        for _ in 0..3 {
            d.on_flight(&flight(1, Some(10), false, "GET a"));
        }
        // A slow client: the run of 3 ends, a new one starts.
        let run = d.on_flight(&flight(1, Some(5000), false, "GET a")).expect("run of 3 ended");
        assert_eq!(run.commands, 3);
        d.on_flight(&flight(1, Some(10), false, "GET a"));
        // A pipelined flight ends a run of 2, too short to report.
        assert!(d.on_flight(&flight(10, Some(10), false, "GET a")).is_none());
        // WATCH/MULTI blocks never form runs.
        for _ in 0..10 {
            assert!(d.on_flight(&flight(1, Some(1), true, "WATCH a")).is_none());
        }
        assert!(d.finish().is_none());
    }

    #[test]
    fn a_command_carrying_an_earlier_reply_starts_the_next_run() {
        let mut d = Detector::new(RULE);
        for _ in 0..4 {
            d.on_flight(&flight(1, Some(10), false, "GET id:*"));
        }
        assert_eq!(d.run_len(), 4);
        let carried = FlightFacts { carried: true, ..flight(1, Some(10), false, "SET user:*") };
        let run = d.on_flight(&carried).expect("the run of 4 ended");
        assert_eq!((run.commands, run.compared), (4, 3));
        assert_eq!(d.run_len(), 1, "the carrying command starts the next run");
    }

    #[test]
    fn patterns_are_bounded() {
        let mut d = Detector::new(RULE);
        d.on_flight(&flight(1, None, false, "P0"));
        let names: Vec<String> = (1..20).map(|i| format!("P{i}")).collect();
        for n in &names {
            d.on_flight(&flight(1, Some(1), false, n));
        }
        let run = d.finish().unwrap();
        assert_eq!(run.patterns.len(), MAX_PATTERNS + 1);
        assert_eq!(run.patterns.iter().map(|p| p.commands).sum::<u64>(), 20);
    }

    #[test]
    fn think_times_just_over_the_threshold_are_near_misses() {
        let mut d = Detector::new(RULE);
        d.on_flight(&flight(1, None, false, "SET a:*"));
        assert!(!d.near_miss(&flight(1, Some(50), false, "SET a:*")), "within the threshold: a hit");
        assert!(d.near_miss(&flight(1, Some(51), false, "SET a:*")));
        assert!(d.near_miss(&flight(1, Some(5000), false, "SET a:*")), "100x the threshold");
        assert!(!d.near_miss(&flight(1, Some(5001), false, "SET a:*")), "the application's own work");
        assert!(!d.near_miss(&flight(2, Some(60), false, "SET a:*")), "a pipeline");
        assert!(!d.near_miss(&flight(1, Some(60), true, "MULTI")), "a transaction's step");
    }
}
