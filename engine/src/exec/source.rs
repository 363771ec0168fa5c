//! What the executor pulls commands from and pushes results to, so that a
//! `Vec` batch (the API) and a streamed file (`pipelab run`) share one
//! executor (DESIGN.md).

use std::convert::Infallible;
use std::fmt;

use super::{ArgvRef, CommandResult, Commands, Report, Summary, TransactionOutcome};
use crate::conn::ConnectError;

/// Commands, one at a time, in order.
pub trait CommandSource {
    /// Why the input cannot go on (e.g. a parse error with its line and column).
    type Error: fmt::Display;
    /// The next command, borrowed from the source until the next call (the
    /// executor only checks and encodes it); `Ok(None)` at the end of input.
    fn next_command(&mut self) -> Result<Option<ArgvRef<'_>>, Self::Error>;

    /// Passes over the next `n` commands, known to be there and checked
    /// (the executor wrote them from their record, [`super::Prechecked`]).
    fn skip(&mut self, n: usize) {
        for _ in 0..n {
            let _ = self.next_command();
        }
    }
}

/// Receives each command's result, in index order, exactly once.
pub trait ResultSink {
    fn push(&mut self, result: CommandResult);

    /// Asked before each reply read from Redis is pushed: `Err(limit)` if
    /// the sink cannot take it (the API counts its report's JSON against
    /// the reply limit of `limit` bytes). The batch is then cut as at the
    /// reply limit: this command and those awaiting replies are `unknown`,
    /// the rest `not_sent`. Default: every reply is taken.
    fn admit(&mut self, _reply: &resp::Value) -> Result<(), u64> {
        Ok(())
    }

    /// Why [`ResultSink::admit`] refused, for a person, when it was not the
    /// reply limit (`None`: it was).
    fn refusal(&self) -> Option<String> {
        None
    }
}

impl ResultSink for Vec<CommandResult> {
    fn push(&mut self, result: CommandResult) {
        Vec::push(self, result);
    }
}

/// A batch already in memory.
pub struct BatchSource<'a> {
    commands: &'a Commands,
    next: usize,
}

impl<'a> BatchSource<'a> {
    pub fn new(commands: &'a Commands) -> Self {
        BatchSource { commands, next: 0 }
    }
}

impl CommandSource for BatchSource<'_> {
    type Error = Infallible;
    fn next_command(&mut self) -> Result<Option<ArgvRef<'_>>, Infallible> {
        if self.next == self.commands.len() {
            return Ok(None);
        }
        self.next += 1;
        Ok(Some(self.commands.get(self.next - 1)))
    }

    fn skip(&mut self, n: usize) {
        self.next = (self.next + n).min(self.commands.len());
    }
}

/// Why the stream of commands stopped before its end.
#[derive(Debug)]
pub enum InputErrorKind<E> {
    /// The source could not produce the next command.
    Source(E),
    /// The command was read but breaks a rule of [`super::check_command`].
    Invalid(crate::commands::ReplyRuleError),
}

/// Where the input went wrong and how much had been sent before.
#[derive(Debug)]
pub struct InputError<E> {
    /// Index the bad command would have had (= commands read before it).
    pub index: usize,
    /// Commands written to Redis before stopping (indices `0..sent`); fewer
    /// than `index` only if the connection failed or `on_error: stop` cut first.
    pub sent: usize,
    pub kind: InputErrorKind<E>,
}

impl<E: fmt::Display> fmt::Display for InputError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            InputErrorKind::Source(e) => write!(f, "{e}"),
            // Counted from 1 (`index` stays 0-based).
            InputErrorKind::Invalid(m) => write!(f, "command {}: {m}", self.index + 1),
        }
    }
}

/// The end of a streamed execution: everything but the per-command results,
/// which went to the sink.
#[derive(Debug)]
pub struct StreamReport<E> {
    pub summary: Summary,
    pub transaction: Option<TransactionOutcome>,
    /// Why the connection was dropped mid-batch.
    pub connection_error: Option<String>,
    /// Set when the input stopped on an error rather than at its end.
    pub input_error: Option<InputError<E>>,
    /// A pooled connection was found dead at the first write and a fresh
    /// one could not be opened: nothing was sent (every command `not_sent`).
    pub reconnect_failed: Option<ConnectError>,
}

impl<E> StreamReport<E> {
    /// The whole report: these totals with the `results` the sink collected.
    pub fn with_results(self, results: Vec<CommandResult>) -> Report {
        Report { summary: self.summary, results, transaction: self.transaction, connection_error: self.connection_error }
    }

    /// [`StreamReport::with_results`] for a batch that ran; `Err` with
    /// [`StreamReport::reconnect_failed`]'s reason if nothing could be sent.
    pub fn into_report(mut self, results: Vec<CommandResult>) -> Result<Report, ConnectError> {
        match self.reconnect_failed.take() {
            Some(reason) => Err(reason),
            None => Ok(self.with_results(results)),
        }
    }
}
