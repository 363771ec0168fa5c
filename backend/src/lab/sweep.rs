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
use crate::exec::{Argv, Commands};

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
        {"batch_size": 1, "total_us": 2412000, "commands_per_sec": 4146.0, "round_trips": 10000, "ok": 10000, "errors": 0, "incomplete": 0},
        {"batch_size": 100, "total_us": 61000, "commands_per_sec": 163934.0, "round_trips": 100, "ok": 10000, "errors": 0, "incomplete": 0}
    ],
    "cleanup": {"keys": 10000, "preexisting": 0, "deleted": 10000}
}))]
pub struct SweepReport {
    pub total: u64,
    pub simulated_rtt_ms: f64,
    pub points: Vec<SweepPoint>,
    pub cleanup: Cleanup,
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
    let stopped = tokio::select! {
        failure = run_points(runner, spec, &commands, &mut points) => failure.map(Stopped::Failed),
        () = stop => Some(Stopped::Interrupted),
    };
    // Clean up even after a failed run: its keys are there all the same.
    let cleanup = pending.finish().await;
    match stopped {
        Some(Stopped::Failed(e)) => Err(LabError::Run(e)),
        Some(Stopped::Interrupted) => Err(LabError::Interrupted(cleanup?)),
        None => Ok(SweepReport { total: spec.total, simulated_rtt_ms: spec.simulated_rtt_ms, points, cleanup: cleanup? }),
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
