//! What an experiment runs its batches on. The API runs them within its
//! limits (a concurrency slot, the batch timeout, the pooled connections:
//! `api::run`); the CLI straight on the executor ([`Direct`]). The
//! experiments are written once against [`Runner`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::commands::Table;
use crate::conn::RedisTarget;
use crate::exec::{Batch, Commands, ExecError, ExecOptions, Mode, Plan, Pool, PoolConfig, Report, Status};

/// Runs batches for an experiment. Cheap to clone: the sweep's clean-up
/// keeps a clone to delete its keys in a task of its own when the
/// experiment is dropped (a client that went away).
pub trait Runner: Clone + Send + Sync + 'static {
    /// Why a batch did not run (the API's error type; [`ExecError`] for [`Direct`]).
    type Error: std::fmt::Display + Send + 'static;

    /// Run `batch` and report every command; an error only if nothing was sent.
    fn run(&self, batch: &Batch) -> impl Future<Output = Result<Report, Self::Error>> + Send;

    /// One command on its own (`COMMAND GETKEYS`, bookkeeping): its reply,
    /// error replies included; `None` if the connection failed before it.
    fn command(&self, argv: &[&[u8]]) -> impl Future<Output = Result<Option<resp::Value>, Self::Error>> + Send {
        let batch = pipeline(Commands::from_iter([argv.to_vec()]), 1, 0.0);
        async move {
            let report = self.run(&batch).await?;
            Ok(report
                .results
                .into_iter()
                .next()
                .filter(|r| matches!(r.status, Status::Ok | Status::Error))
                .and_then(|r| r.reply))
        }
    }

    /// Longest a batch may run: the sweep's clean-up waits this plus 1 s.
    fn batch_timeout(&self) -> Duration;

    /// Whether an optional run of `commands` more may go ahead (a sweep's
    /// repeats of a batch size): the API asks the client's rate limit,
    /// taking them if there is room (a repeat is skipped, never refused).
    fn may_repeat(&self, commands: u64) -> bool {
        let _ = commands;
        true
    }

    /// The target's command table (`crate::commands`): where the sweep's
    /// clean-up finds the keys its commands write.
    fn commands(&self) -> impl Future<Output = Arc<Table>> + Send;
}

/// A pipeline-mode batch of `commands` in chunks of `batch_size`, with
/// `simulated_rtt_ms` of delay per round trip; no WATCH, RESP2, errors do
/// not stop it. The batches experiments make themselves are all of this kind.
pub fn pipeline(commands: Commands, batch_size: usize, simulated_rtt_ms: f64) -> Batch {
    Batch::new(commands, Plan { batch_size, simulated_rtt_ms, ..Plan::new(Mode::Pipeline) })
}

/// The executor itself: each batch on a new connection to `target`, with
/// `opts`' timeouts and command table and nothing else (`pipelab run`,
/// `pipelab compare`, `pipelab sweep`).
#[derive(Debug, Clone)]
pub struct Direct {
    pub target: RedisTarget,
    pub opts: ExecOptions,
}

impl Direct {
    /// `self` with the server's command table in `opts.commands` (unless it
    /// has one), read with `COMMAND` on a connection of its own within
    /// `opts.connect_timeout`, closed after. Redis unreachable: the
    /// built-in fallback (the batches then fail to connect too).
    pub async fn with_commands(mut self) -> Direct {
        if self.opts.commands.is_none() {
            let pool = Pool::new(self.target.clone(), PoolConfig { max_idle: 0, ..PoolConfig::default() });
            self.opts.commands = Some(pool.commands_loaded(self.opts.connect_timeout).await);
        }
        self
    }
}

impl Runner for Direct {
    type Error = ExecError;

    /// A connection of the batch's own, closed after.
    async fn run(&self, batch: &Batch) -> Result<Report, ExecError> {
        crate::run::run_fresh(&self.target, batch, &self.opts).await
    }

    /// `opts.read_timeout`: the longest wait for a reply.
    fn batch_timeout(&self) -> Duration {
        self.opts.read_timeout
    }

    /// The table the executor checks with: `opts.commands` (see
    /// [`Direct::with_commands`]), else the built-in fallback.
    async fn commands(&self) -> Arc<Table> {
        self.opts.table(None)
    }
}
