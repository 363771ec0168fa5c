//! How a batch is sent: below the command table (whose rules depend on it)
//! and the executor (which runs it).

use serde::{Deserialize, Serialize};

/// How the batch is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "cli", value(rename_all = "snake_case"))]
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
    /// the commands pending at each event-loop tick go out in one write
    /// (`exec::auto`).
    Auto,
}

impl Mode {
    /// Every mode, each at its [`Mode::index`].
    pub const ALL: [Mode; 4] = [Mode::Sequential, Mode::Pipeline, Mode::Transaction, Mode::Auto];

    /// The mode's place in [`Mode::ALL`]: an index for tables kept per mode.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The mode's name (`sequential`, `pipeline`, `transaction`), the same
    /// in JSON, on the command line and in metric labels: serde and clap
    /// derive theirs from the variants (`snake_case`), and a test checks
    /// that all three agree. The same holds for `exec::OnError`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sequential => "sequential",
            Mode::Pipeline => "pipeline",
            Mode::Transaction => "transaction",
            Mode::Auto => "auto",
        }
    }
}

/// The mode as the rules the page shares with the server know it
/// (`pipelab_model`: a batch's least round trips).
impl From<Mode> for pipelab_model::Mode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::Sequential => pipelab_model::Mode::Sequential,
            Mode::Pipeline => pipelab_model::Mode::Pipeline,
            Mode::Transaction => pipelab_model::Mode::Transaction,
            Mode::Auto => pipelab_model::Mode::Auto,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Mode;

    /// The page names the mode to the wasm module as the API does.
    #[test]
    fn model_knows_each_mode_by_its_name() {
        for mode in Mode::ALL {
            assert_eq!(pipelab_model::Mode::from_name(mode.name()), Some(mode.into()), "{mode:?}");
        }
    }
}
