//! A ledger batch for the fault tests: command `i` of run `r` is
//! `INCR ledger:{r}:{i}`, each on its own key, so that Redis's data after
//! the fault says how many times each command ran (0, 1, or more: a retry).
//! [`Tally::check`] compares that with what the executor reported:
//! - `ok`: ran exactly once, and its reply was `:1`;
//! - `error`: an error reply means Redis did not run it (OOM, LOADING,
//!   BUSY…), so 0;
//! - `not_sent`: never written, so 0;
//! - `unknown`: 0 or 1, either is true;
//! - nothing ever 2 or more (no retry), and a batch that never started
//!   (`ExecError::Connect`) left every key at 0.
//!
//! For kill tests the counts must survive the kill: the server runs with
//! `appendonly yes` + `appendfsync always` ([`DURABLE`]), so every write
//! Redis acknowledged is in the AOF before its reply left (Redis writes and
//! fsyncs the AOF in `beforeSleep`, before it writes replies to clients,
//! `src/server.c`), and the restarted server reloads it.
#![allow(dead_code)]

use std::time::{Duration, Instant, SystemTime};

use pipelab_engine::exec::{Argv, ExecError, Report, Status};
use pipelab_model::Mode;
use resp::Value;

use super::RedisServer;

/// redis-server flags under which an acknowledged write survives SIGKILL.
pub const DURABLE: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

/// The `n` commands of one run and the keys they touch.
pub struct Ledger {
    pub run: String,
    pub n: usize,
}

impl Ledger {
    pub fn new(run: impl std::fmt::Display, n: usize) -> Ledger {
        Ledger { run: run.to_string(), n }
    }

    fn key(&self, i: usize) -> String {
        format!("ledger:{}:{i}", self.run)
    }

    /// `INCR ledger:{run}:{i}` for i in 0..n.
    pub fn commands(&self) -> Vec<Argv> {
        (0..self.n).map(|i| vec![b"INCR".to_vec(), self.key(i).into_bytes()]).collect()
    }

    /// How many times each command ran, read back with MGET (waits while
    /// a restarted server is still `LOADING` its AOF).
    pub fn counts(&self, redis: &RedisServer) -> Vec<i64> {
        let mut counts = Vec::with_capacity(self.n);
        for start in (0..self.n).step_by(1000) {
            let keys: Vec<String> = (start..self.n.min(start + 1000)).map(|i| self.key(i)).collect();
            let mut argv: Vec<&[u8]> = vec![b"MGET"];
            argv.extend(keys.iter().map(|k| k.as_bytes()));
            let deadline = Instant::now() + Duration::from_secs(30);
            let values = loop {
                match redis.cmd(&argv) {
                    Value::Array(values) => break values,
                    Value::Error(e) if e.starts_with(b"LOADING") && Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    other => panic!("MGET: {other:?}"),
                }
            };
            for v in values {
                counts.push(match v {
                    Value::NullBulk | Value::Null => 0,
                    Value::Bulk(b) => std::str::from_utf8(&b).unwrap().parse().unwrap(),
                    other => panic!("ledger value {other:?}"),
                });
            }
        }
        counts
    }
}

/// What a campaign saw, summed over its runs (printed as its figures).
#[derive(Debug, Default)]
pub struct Tally {
    pub runs: usize,
    /// Runs whose batch was cut mid-way (`connection_error` set).
    pub cut: usize,
    /// Runs where the fault came before the first command was written.
    pub connect_failed: usize,
    pub ok: usize,
    pub errors: usize,
    pub not_sent: usize,
    /// `unknown` commands that turned out to have run / not to have run.
    pub unknown_ran: usize,
    pub unknown_not_run: usize,
}

impl Tally {
    /// Checks one run's outcome against the ledger's `counts`; panics
    /// naming the first misreported command.
    pub fn check(&mut self, ledger: &Ledger, outcome: &Result<Report, ExecError>, counts: &[i64]) {
        assert_eq!(counts.len(), ledger.n);
        let report = match outcome {
            Err(ExecError::Connect(e)) => {
                let ran = counts.iter().filter(|c| **c != 0).count();
                assert_eq!(ran, 0, "run {}: connect failed ({e}) but {ran} commands ran", ledger.run);
                self.runs += 1;
                self.connect_failed += 1;
                return;
            }
            Err(e) => panic!("run {}: {e}", ledger.run),
            Ok(r) => r,
        };
        let results = report.results.iter().map(|r| (r.status, r.reply == Some(Value::Integer(1))));
        let transaction = report.summary.mode == Some(Mode::Transaction);
        self.check_results(ledger, results, report.connection_error.is_some(), transaction, counts);
    }

    /// [`Tally::check`] on a batch that ran: each command's status and
    /// whether its reply was `:1`, in order; `cut` if the batch was cut.
    pub fn check_results(
        &mut self,
        ledger: &Ledger,
        results: impl ExactSizeIterator<Item = (Status, bool)>,
        cut: bool,
        transaction: bool,
        counts: &[i64],
    ) {
        assert_eq!(results.len(), ledger.n);
        if let Some((i, c)) = counts.iter().enumerate().find(|(_, c)| **c > 1) {
            panic!("run {}: command {i} ran {c} times (a retry)", ledger.run);
        }
        self.runs += 1;
        self.cut += cut as usize;
        for (i, ((status, replied_one), &count)) in results.zip(counts).enumerate() {
            let why = || format!("run {}: command {i} reported {status:?} (reply :1: {replied_one}) but ran {count} times", ledger.run);
            match status {
                Status::Ok => {
                    assert!(count == 1 && replied_one, "{}", why());
                    self.ok += 1;
                }
                Status::Error => {
                    assert_eq!(count, 0, "{}", why());
                    self.errors += 1;
                }
                Status::NotSent => {
                    assert_eq!(count, 0, "{}", why());
                    self.not_sent += 1;
                }
                Status::Unknown if count == 1 => self.unknown_ran += 1,
                Status::Unknown => self.unknown_not_run += 1,
            }
        }
        if transaction {
            assert!(counts.iter().all(|c| *c == counts[0]), "run {}: a transaction ran in part", ledger.run);
        }
    }
}

/// A small deterministic random source for fault points (xorshift64*),
/// seeded from `PIPELAB_FAULT_SEED` or the clock; the seed is printed so a
/// failing run can be replayed.
pub struct Rng(u64);

impl Rng {
    pub fn from_env(test: &str) -> Rng {
        let seed = std::env::var("PIPELAB_FAULT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        eprintln!("{test}: PIPELAB_FAULT_SEED={seed}");
        Rng(seed | 1)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        lo + self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % (hi - lo + 1)
    }
}

/// Runs per fault kind: `PIPELAB_FAULT_KILLS`, default `default`.
pub fn runs(default: usize) -> usize {
    std::env::var("PIPELAB_FAULT_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}
