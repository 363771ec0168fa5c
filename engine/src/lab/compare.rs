//! A comparison: the same batch once per mode, sequential first as the
//! baseline, summaries side by side with the speedup of each run over the
//! sequential one.
//!
//! The batch really runs once per mode, one mode after the other, so its
//! side effects happen once per mode (three INCRs of the same key end at 3).

use serde::Serialize;

use super::error::{InputError, Problem};
use super::runner::Runner;
use crate::exec::{Batch, CommandResult, Mode, Summary, TransactionOutcome};

/// What a comparison says about side effects (also in the OpenAPI document).
pub const NOTE: &str = "The batch ran once per mode, in this order, each on its own connection: \
    its side effects happened once per mode.";

/// The runs, in the order they ran.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// The API's name for it in the OpenAPI document.
#[cfg_attr(feature = "openapi", schema(as = CompareResponse))]
#[cfg_attr(feature = "openapi", schema(example = json!({
    "note": "The batch ran once per mode, in this order, each on its own connection: its side effects happened once per mode.",
    "runs": [
        {"mode": "sequential", "speedup_vs_sequential": 1.0, "summary": {"mode": "sequential", "commands": 2, "ok": 2, "errors": 0, "not_sent": 0, "unknown": 0,
            "round_trips": 2, "write_calls": 2, "write_syscalls": 2, "read_syscalls": 2, "bytes_sent": 58, "bytes_received": 9,
            "total_us": 2210, "commands_per_sec": 905.0, "simulated_rtt_ms": 1.0, "batch_size": 1, "resp3": false}},
        {"mode": "pipeline", "speedup_vs_sequential": 2.0, "summary": {"mode": "pipeline", "commands": 2, "ok": 2, "errors": 0, "not_sent": 0, "unknown": 0,
            "round_trips": 1, "write_calls": 1, "write_syscalls": 1, "read_syscalls": 1, "bytes_sent": 58, "bytes_received": 9,
            "total_us": 1105, "commands_per_sec": 1810.0, "simulated_rtt_ms": 1.0, "batch_size": 1000, "resp3": false}}
    ]
})))]
pub struct CompareReport {
    /// The batch ran once per mode: side effects repeat.
    #[cfg_attr(feature = "openapi", schema(
        example = "The batch ran once per mode, in this order, each on its own connection: its side effects happened once per mode."
    ))]
    pub note: &'static str,
    pub runs: Vec<CompareRun>,
}

/// One mode's run.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CompareRun {
    pub mode: Mode,
    /// Sequential total time / this run's total time (1.0 for sequential).
    #[cfg_attr(feature = "openapi", schema(example = 12.5))]
    pub speedup_vs_sequential: Option<f64>,
    pub summary: Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction: Option<TransactionOutcome>,
    /// With include_results only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<CommandResult>>,
}

/// The modes a comparison runs, in order: sequential always (first, the
/// baseline), then pipeline, transaction and auto if `requested` names
/// them; `None` is all four. Errors: an empty list (field `modes`).
pub fn run_order(requested: Option<&[Mode]>) -> Result<Vec<Mode>, InputError> {
    let requested = match requested {
        Some([]) => {
            return Err(InputError::new(
                Problem::InvalidField,
                "modes",
                "empty; leave it out to run all four modes",
            ))
        }
        Some(list) => list,
        None => &[Mode::Pipeline, Mode::Transaction, Mode::Auto],
    };
    let mut modes = vec![Mode::Sequential];
    modes.extend([Mode::Pipeline, Mode::Transaction, Mode::Auto].into_iter().filter(|m| requested.contains(m)));
    Ok(modes)
}

/// The batch of each mode in `modes`, made by `batch_for` (which checks
/// it), all before any runs so that a refusal leaves no side effects. The
/// keys in `watch` go to the transaction run only.
pub fn batches<E>(
    modes: &[Mode],
    watch: &[Vec<u8>],
    mut batch_for: impl FnMut(Mode) -> Result<Batch, E>,
) -> Result<Vec<Batch>, E> {
    modes
        .iter()
        .map(|&mode| {
            let mut batch = batch_for(mode)?;
            if mode == Mode::Transaction {
                batch.plan.watch = watch.to_vec();
            }
            Ok(batch)
        })
        .collect()
}

/// Run `batches` one after the other (the first, sequential, is the
/// baseline of the speedups); with `include_results`, each run keeps its
/// per-command results. Errors: the first run's error stops the rest.
pub async fn compare<R: Runner>(runner: &R, batches: &[Batch], include_results: bool) -> Result<CompareReport, R::Error> {
    let mut runs: Vec<CompareRun> = Vec::with_capacity(batches.len());
    for batch in batches {
        let report = runner.run(batch).await?;
        let baseline = runs
            .first()
            .map_or(report.summary.total_us, |r| r.summary.total_us);
        runs.push(CompareRun {
            mode: batch.plan.mode,
            speedup_vs_sequential: (report.summary.total_us > 0)
                .then(|| baseline as f64 / report.summary.total_us as f64),
            summary: report.summary,
            transaction: report.transaction,
            results: include_results.then_some(report.results),
        });
    }
    Ok(CompareReport { note: NOTE, runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_runs_first_then_the_requested_modes_in_order() {
        use Mode::*;
        assert_eq!(run_order(None).unwrap(), [Sequential, Pipeline, Transaction, Auto]);
        assert_eq!(run_order(Some(&[Auto, Pipeline])).unwrap(), [Sequential, Pipeline, Auto]);
        assert_eq!(run_order(Some(&[Transaction, Pipeline])).unwrap(), [Sequential, Pipeline, Transaction]);
        assert_eq!(run_order(Some(&[Pipeline])).unwrap(), [Sequential, Pipeline]);
        assert_eq!(run_order(Some(&[Sequential])).unwrap(), [Sequential]);
        assert_eq!(run_order(Some(&[])).unwrap_err().field, "modes");
    }
}
