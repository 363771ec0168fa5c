//! The rules the server applies and the page shows in advance, defined once:
//! the server and the engine call them natively, the page through the wasm
//! module (`pipelab-wasm`). No dependencies by default, so that it builds
//! for wasm32; the engine turns on the derives its callers need on [`Mode`]
//! (`serde`, `openapi`, `cli`).
#![cfg_attr(not(any(feature = "openapi", feature = "cli")), no_std)]

// The engine runs a batch in it, the page counts its round trips by it.
// Its name is the same in JSON, on the command line and in metric labels
// (`Mode::name`; serde and clap derive theirs from the variants, behind the
// `serde` and `cli` features, and an engine test checks that they agree).
// The doc line below is the API document's description of it.
/// How the batch is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize), serde(rename_all = "snake_case"))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum), value(rename_all = "snake_case"))]
pub enum Mode {
    /// Write one command, read its reply, then the next: N round trips.
    Sequential,
    /// Chunks of `batch_size` commands, each written at once, then its
    /// replies read: ⌈N / batch_size⌉ round trips.
    Pipeline,
    /// `MULTI`, the commands, `EXEC` in one write.
    Transaction,
    /// Auto-pipelining, as ioredis's `enableAutoPipelining`: `clients`
    /// simulated concurrent callers each send their share of the batch
    /// (round-robin by index) one command at a time, awaiting each reply;
    /// the commands pending at each event-loop tick go out in one write.
    Auto,
}

impl Mode {
    /// Every mode, each at its [`Mode::index`].
    pub const ALL: [Mode; 4] = [Mode::Sequential, Mode::Pipeline, Mode::Transaction, Mode::Auto];

    /// The mode's place in [`Mode::ALL`]: an index for tables kept per mode.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `sequential`, `pipeline`, `transaction` or `auto`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Pipeline => "pipeline",
            Mode::Transaction => "transaction",
            Mode::Auto => "auto",
        }
    }

    /// The mode named `name` (as [`Mode::name`] gives it).
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// Least number of round trips a batch of `commands` needs in `mode`: each
/// costs at least the simulated RTT, so the server refuses a batch whose
/// round trips alone would pass its batch timeout.
pub fn min_round_trips(mode: Mode, commands: u64, batch_size: u64, clients: u64) -> u64 {
    match mode {
        Mode::Sequential => commands,
        Mode::Pipeline => commands.div_ceil(batch_size.max(1)),
        Mode::Transaction => 1,
        // Each caller waits for every one of its commands.
        Mode::Auto => commands.div_ceil(clients.max(1)),
    }
}

/// The sweep's cost model: the time of `total` commands in chunks of
/// `batch_size`, in µs, `T(b) = ⌈N/b⌉·RTT + N·(wire + t_cmd)` (RTT in ms,
/// `wire` and `t_cmd` in µs per command).
pub fn model_us(rtt_ms: f64, wire_us_per_cmd: f64, t_cmd_us: f64, total: u64, batch_size: u64) -> f64 {
    total.div_ceil(batch_size.max(1)) as f64 * rtt_ms * 1000.0 + total as f64 * (wire_us_per_cmd + t_cmd_us)
}

/// Commands/s the model predicts at `batch_size`; NaN where its time is not
/// positive (a fit below zero).
pub fn model_rate(rtt_ms: f64, wire_us_per_cmd: f64, t_cmd_us: f64, total: u64, batch_size: u64) -> f64 {
    let us = model_us(rtt_ms, wire_us_per_cmd, t_cmd_us, total, batch_size);
    if us > 0.0 {
        total as f64 * 1e6 / us
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_mode_is_found_by_its_name() {
        for mode in super::Mode::ALL {
            assert_eq!(super::Mode::from_name(mode.name()), Some(mode), "{mode:?}");
        }
        assert_eq!(super::Mode::from_name("pipelined"), None);
    }

    use super::*;

    #[test]
    fn round_trips_per_mode() {
        assert_eq!(min_round_trips(Mode::Sequential, 1000, 100, 10), 1000);
        assert_eq!(min_round_trips(Mode::Pipeline, 1000, 100, 10), 10);
        assert_eq!(min_round_trips(Mode::Pipeline, 1001, 100, 10), 11, "a partial last chunk is one more");
        assert_eq!(min_round_trips(Mode::Pipeline, 1000, 0, 10), 1000, "batch size 0 counts as 1");
        assert_eq!(min_round_trips(Mode::Transaction, 1000, 1, 1), 1);
        assert_eq!(min_round_trips(Mode::Auto, 1000, 1, 3), 334, "each caller waits for its own commands");
        assert_eq!(min_round_trips(Mode::Auto, 1000, 1, 0), 1000, "no clients counts as one");
        assert_eq!(min_round_trips(Mode::Pipeline, 0, 100, 10), 0);
    }

    #[test]
    fn names() {
        for (name, mode) in [("sequential", Mode::Sequential), ("pipeline", Mode::Pipeline), ("transaction", Mode::Transaction), ("auto", Mode::Auto)] {
            assert_eq!(Mode::from_name(name), Some(mode));
        }
        assert_eq!(Mode::from_name("Pipeline"), None);
    }

    #[test]
    fn model_time_and_rate() {
        assert_eq!(model_us(0.5, 0.0, 2.0, 10_000, 1), 10_000.0 * 500.0 + 10_000.0 * 2.0);
        assert_eq!(model_us(0.5, 0.0, 2.0, 10_000, 3), 3334.0 * 500.0 + 20_000.0, "a partial last batch is one more round trip");
        assert_eq!(model_us(0.5, 1.0, 2.0, 10_000, 10_000), 500.0 + 30_000.0, "the wire per command");
        assert_eq!(model_rate(0.5, 0.0, 2.0, 10_000, 10_000), 10_000.0 * 1e6 / 20_500.0);
        assert!(model_rate(0.0, 0.0, -1.0, 100, 100).is_nan(), "a fit below zero predicts no rate");
    }
}
