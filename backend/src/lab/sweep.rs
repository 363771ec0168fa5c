//! A sweep: one command template, `total` copies with `{i}` replaced by
//! the index, pipelined at each of several batch sizes: how commands/s
//! grows with the batch size at a given RTT. Each batch size is one
//! pipeline-mode run of every command, in the order given; the keys the
//! sweep created are deleted afterwards ([`super::cleanup`]), even when a
//! run failed.

use std::future::Future;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::cleanup::{self, Cleanup};
use super::error::{InputError, LabError, Problem};
use super::runner::{pipeline, Runner};
use crate::exec::{Argv, Batch, Commands, Mode, Plan, Report};

/// A sweep to run, checked by [`SweepSpec::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec {
    /// argv template; `{i}` in any argument becomes the command's index (0-based).
    pub template: Argv,
    /// Commands per run, at least 1.
    pub total: u64,
    /// Pipeline chunk sizes, each at least 1; one run per entry, in this order.
    pub batch_sizes: Vec<usize>,
    /// Extra delay per round trip in ms (0 to 1000; the executor checks it).
    pub simulated_rtt_ms: f64,
}

impl SweepSpec {
    /// Checks what any sweep needs: a command name, `total` ≥ 1, at least
    /// one batch size, each ≥ 1. Errors name the API's field (`command`,
    /// `total`, `batch_sizes`, `batch_sizes[k]`).
    pub fn new(template: Argv, total: i64, batch_sizes: &[i64], simulated_rtt_ms: f64) -> Result<Self, InputError> {
        if template.is_empty() {
            return Err(InputError::new(
                Problem::EmptyArgv,
                "command",
                "a command needs at least one argument (its name)",
            ));
        }
        if total < 1 {
            return Err(InputError::new(Problem::InvalidField, "total", format!("must be at least 1, got {total}")));
        }
        if batch_sizes.is_empty() {
            return Err(InputError::new(Problem::InvalidField, "batch_sizes", "empty: give at least one batch size"));
        }
        let batch_sizes = batch_sizes
            .iter()
            .enumerate()
            .map(|(k, &b)| match usize::try_from(b) {
                Ok(b) if b >= 1 => Ok(b),
                _ => Err(InputError::new(
                    Problem::InvalidBatchSize,
                    format!("batch_sizes[{k}]"),
                    format!("must be at least 1, got {b}"),
                )),
            })
            .collect::<Result<_, _>>()?;
        Ok(SweepSpec { template, total: total as u64, batch_sizes, simulated_rtt_ms })
    }

    /// The `total` commands: the template with `{i}` = 0, 1, …
    pub fn commands(&self) -> Commands {
        (0..self.total).map(|i| instantiate(&self.template, i)).collect()
    }
}

/// Throughput per batch size, and what the cleanup did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
// The API's name for it in the OpenAPI document.
#[schema(as = SweepResponse)]
#[schema(example = json!({
    "total": 10000, "simulated_rtt_ms": 0.2,
    "points": [
        {"batch_size": 1, "total_us": 2412000, "commands_per_sec": 4146.0, "round_trips": 10000, "ok": 10000, "errors": 0, "incomplete": 0,
            "latency_us": {"p50": 231, "p99": 402, "max": 1210}},
        {"batch_size": 100, "total_us": 61000, "commands_per_sec": 163934.0, "round_trips": 100, "ok": 10000, "errors": 0, "incomplete": 0,
            "latency_us": {"p50": 498, "p99": 700, "max": 905}}
    ],
    "cleanup": {"keys": 10000, "preexisting": 0, "deleted": 10000},
    "model": {"rtt_ms": 0.231, "t_cmd_us": 3.8, "knee_batch_size": 100}
}))]
pub struct SweepReport {
    pub total: u64,
    pub simulated_rtt_ms: f64,
    pub points: Vec<SweepPoint>,
    pub cleanup: Cleanup,
    /// The cost model fitted to `points`.
    pub model: CostModel,
}

/// The cost model `T(b) = ⌈N/b⌉·RTT + N·t_cmd` beside the measurement: a
/// run of N commands in chunks of b pays one RTT per round trip and
/// `t_cmd` per command (client and server work together).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CostModel {
    /// The RTT of the model, in ms: the simulated one plus the loopback one
    /// measured before the runs (the median of 20 sequential PINGs' reply
    /// latency).
    pub rtt_ms: f64,
    /// µs per command, the least-squares fit of the model to the complete
    /// runs, on relative errors so that each run counts alike
    /// (`Σ (T_i − round_trips_i·RTT)/T_i² / (N·Σ 1/T_i²)`); 0 without a complete run.
    pub t_cmd_us: f64,
    /// The smallest batch size whose commands/s is within 10% of the
    /// plateau (the highest commands/s of the runs).
    pub knee_batch_size: u64,
}

/// Reply latency of one run, in µs: each reply's time from its command's
/// write to its reply (`reply_us − sent_us`), nearest-rank percentiles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Latency {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl Latency {
    /// Over every result of `report` that has both times.
    pub fn of(report: &Report) -> Latency {
        let mut us: Vec<u64> =
            report.results.iter().filter_map(|r| Some(r.reply_us?.saturating_sub(r.sent_us?))).collect();
        us.sort_unstable();
        let rank = |p: f64| us.get(((p * us.len() as f64).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0);
        Latency { p50: rank(0.50), p99: rank(0.99), max: us.last().copied().unwrap_or(0) }
    }
}

impl CostModel {
    /// The model for `points` of `total` commands each at `rtt_ms`.
    pub fn fit(points: &[SweepPoint], total: u64, rtt_ms: f64) -> CostModel {
        let rtt_us = rtt_ms * 1000.0;
        let complete: Vec<&SweepPoint> = points.iter().filter(|p| p.incomplete == 0 && p.errors == 0).collect();
        // Least squares of the relative error of T_i ≈ k_i·RTT + N·t over t,
        // so that each run weighs the same however long it took (a plain
        // fit is all the slowest run's: its per-round-trip overhead beyond
        // the RTT, not the per-command cost): minimise Σ ((r_i − N·t)/T_i)²,
        // r_i = T_i − k_i·RTT, hence t = Σ r_i/T_i² / (N · Σ 1/T_i²).
        let weighted = complete.iter().filter(|p| p.total_us > 0).map(|p| {
            let t = p.total_us as f64;
            ((t - p.round_trips as f64 * rtt_us) / (t * t), 1.0 / (t * t))
        });
        let (num, den) = weighted.fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
        let t_cmd_us = if den == 0.0 || total == 0 { 0.0 } else { num / (den * total as f64) };
        let plateau = points.iter().map(|p| p.commands_per_sec).fold(0.0, f64::max);
        let knee_batch_size = points
            .iter()
            .filter(|p| p.commands_per_sec >= 0.9 * plateau)
            .map(|p| p.batch_size)
            .min()
            .unwrap_or(0);
        CostModel { rtt_ms, t_cmd_us, knee_batch_size }
    }

    /// The model's time for `total` commands in chunks of `batch_size`, in µs.
    pub fn total_us(&self, total: u64, batch_size: u64) -> f64 {
        total.div_ceil(batch_size.max(1)) as f64 * self.rtt_ms * 1000.0 + total as f64 * self.t_cmd_us
    }
}

/// PINGs whose median reply latency is the loopback RTT of the model.
const RTT_PINGS: usize = 20;

/// The round trip to Redis without simulated delay, in ms: the median
/// reply latency of [`RTT_PINGS`] sequential PINGs.
async fn loopback_rtt_ms<R: Runner>(runner: &R) -> Result<f64, R::Error> {
    let pings = Commands::from_iter((0..RTT_PINGS).map(|_| vec!["PING"]));
    let report = runner.run(&Batch::new(pings, Plan { batch_size: 1, ..Plan::new(Mode::Sequential) })).await?;
    Ok(Latency::of(&report).p50 as f64 / 1000.0)
}

/// One run (pipeline mode, one batch size).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SweepPoint {
    pub batch_size: u64,
    /// Wall time of the run in µs.
    pub total_us: u64,
    pub commands_per_sec: f64,
    pub round_trips: u64,
    pub ok: u64,
    pub errors: u64,
    /// not_sent + unknown (the run was cut).
    pub incomplete: u64,
    /// Reply latency: each reply's time from its command's write.
    pub latency_us: Latency,
}

/// Run `spec`: one pipeline run per batch size, then the clean-up.
///
/// Errors: those of [`cleanup::prepare`] before any run; a run's error
/// after the clean-up (which happens all the same); the clean-up's own.
/// Dropped half-way, the clean-up runs in a task of its own.
pub async fn sweep<R: Runner>(runner: &R, spec: &SweepSpec) -> Result<SweepReport, LabError<R::Error>> {
    sweep_until(runner, spec, std::future::pending()).await
}

/// [`sweep`], stopped when `stop` resolves (Ctrl-C in `pipelab sweep`):
/// the run under way is dropped with its connection (commands it had
/// written may or may not have run), the keys are cleaned up as after a
/// failed run, and the error is [`LabError::Interrupted`] with what the
/// clean-up did.
pub async fn sweep_until<R: Runner>(
    runner: &R,
    spec: &SweepSpec,
    stop: impl Future<Output = ()>,
) -> Result<SweepReport, LabError<R::Error>> {
    let commands = spec.commands();
    let pending = cleanup::prepare(runner, &commands).await?;
    let mut points = Vec::with_capacity(spec.batch_sizes.len());
    let mut loopback_ms = 0.0;
    let runs = async {
        loopback_ms = match loopback_rtt_ms(runner).await {
            Ok(ms) => ms,
            Err(e) => return Some(e),
        };
        run_points(runner, spec, &commands, &mut points).await
    };
    let stopped = tokio::select! {
        failure = runs => failure.map(Stopped::Failed),
        () = stop => Some(Stopped::Interrupted),
    };
    // Clean up even after a failed run: its keys are there all the same.
    let cleanup = pending.finish().await;
    match stopped {
        Some(Stopped::Failed(e)) => Err(LabError::Run(e)),
        Some(Stopped::Interrupted) => Err(LabError::Interrupted(cleanup?)),
        None => {
            let model = CostModel::fit(&points, spec.total, spec.simulated_rtt_ms + loopback_ms);
            Ok(SweepReport { total: spec.total, simulated_rtt_ms: spec.simulated_rtt_ms, points, cleanup: cleanup?, model })
        }
    }
}

/// Why the runs ended early.
enum Stopped<E> {
    Failed(E),
    Interrupted,
}

/// One pipeline run of `commands` per batch size, each measured into
/// `points`; the error of the run that failed, which ends them.
async fn run_points<R: Runner>(
    runner: &R,
    spec: &SweepSpec,
    commands: &Commands,
    points: &mut Vec<SweepPoint>,
) -> Option<R::Error> {
    for &b in &spec.batch_sizes {
        let report = match runner.run(&pipeline(commands.clone(), b, spec.simulated_rtt_ms)).await {
            Ok(report) => report,
            Err(e) => return Some(e),
        };
        let s = &report.summary;
        points.push(SweepPoint {
            batch_size: b as u64,
            total_us: s.total_us,
            commands_per_sec: s.commands_per_sec,
            round_trips: s.round_trips,
            ok: s.ok as u64,
            errors: s.errors as u64,
            incomplete: (s.not_sent + s.unknown) as u64,
            latency_us: Latency::of(&report),
        });
    }
    None
}

/// `template` with every `{i}` replaced by `i`.
fn instantiate(template: &Argv, i: u64) -> Argv {
    let index = i.to_string();
    template
        .iter()
        .map(|arg| replace(arg, b"{i}", index.as_bytes()))
        .collect()
}

fn replace(hay: &[u8], pat: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(pat) {
            out.extend_from_slice(with);
            i += pat.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(batch_size: u64, total_us: u64, round_trips: u64) -> SweepPoint {
        SweepPoint {
            batch_size,
            total_us,
            commands_per_sec: 1000.0 * 1e6 / total_us as f64,
            round_trips,
            ok: 1000,
            errors: 0,
            incomplete: 0,
            latency_us: Latency::default(),
        }
    }

    /// Points made by the model itself give its parameters back.
    #[test]
    fn model_fits_its_own_curve() {
        let truth = CostModel { rtt_ms: 0.5, t_cmd_us: 4.0, knee_batch_size: 0 };
        let points: Vec<SweepPoint> =
            [1u64, 10, 100, 1000].iter().map(|&b| point(b, truth.total_us(1000, b) as u64, 1000u64.div_ceil(b))).collect();
        let m = CostModel::fit(&points, 1000, 0.5);
        assert!((m.t_cmd_us - 4.0).abs() < 0.01, "{m:?}");
        // 1000: 4.5 ms, 100: 9 ms (50% of the plateau), 10: 54 ms.
        assert_eq!(m.knee_batch_size, 1000);
        let flat = [point(1, 2_000_000, 1000), point(100, 10_000, 10), point(1000, 9_500, 1)];
        assert_eq!(CostModel::fit(&flat, 1000, 0.0).knee_batch_size, 100, "within 10% of the plateau");
    }

    #[test]
    fn latency_percentiles_by_nearest_rank() {
        let results = (1..=100u64)
            .map(|i| crate::exec::CommandResult {
                index: i as usize,
                status: crate::exec::Status::Ok,
                reply: None,
                sent_us: Some(10),
                reply_us: Some(10 + i),
                latency_us: None,
            })
            .collect();
        let report = Report { summary: Default::default(), results, transaction: None, connection_error: None };
        assert_eq!(Latency::of(&report), Latency { p50: 50, p99: 99, max: 100 });
    }

    #[test]
    fn instantiates_every_placeholder() {
        let t: Argv = vec![b"SET".to_vec(), b"k:{i}:{i}".to_vec(), b"{i}x".to_vec()];
        assert_eq!(
            instantiate(&t, 42),
            vec![b"SET".to_vec(), b"k:42:42".to_vec(), b"42x".to_vec()]
        );
        assert_eq!(replace(b"{i", b"{i}", b"1"), b"{i".to_vec());
    }

    #[test]
    fn spec_names_the_field_at_fault() {
        let set: Argv = vec![b"SET".to_vec(), b"k{i}".to_vec(), b"x".to_vec()];
        let field = |r: Result<SweepSpec, InputError>| r.map(|_| ()).unwrap_err().field;
        assert_eq!(field(SweepSpec::new(Vec::new(), 1, &[1], 0.0)), "command");
        assert_eq!(field(SweepSpec::new(set.clone(), 0, &[1], 0.0)), "total");
        assert_eq!(field(SweepSpec::new(set.clone(), 5, &[], 0.0)), "batch_sizes");
        assert_eq!(field(SweepSpec::new(set.clone(), 5, &[3, 0], 0.0)), "batch_sizes[1]");
        let spec = SweepSpec::new(set, 3, &[1, 2], 0.5).unwrap();
        assert_eq!(spec.batch_sizes, [1, 2]);
        assert_eq!(spec.commands().get(2).get(1), Some(&b"k2"[..]));
    }
}
