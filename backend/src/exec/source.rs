//! What the executor pulls commands from and pushes results to, so that a
//! `Vec` batch (the API) and a streamed file (`pipelab run`) share one
//! executor (DESIGN.md).

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt;

use super::{Argv, CommandResult, Summary, TransactionOutcome};

/// Commands, one at a time, in order.
pub trait CommandSource {
    /// Why the input cannot go on (e.g. a parse error with its line and column).
    type Error: fmt::Display;
    /// The next command; `Ok(None)` at the end of input.
    fn next_command(&mut self) -> Result<Option<Argv>, Self::Error>;

    /// [`CommandSource::next_command`], borrowed if the source holds its
    /// commands: the executor only encodes each one, so a batch in memory
    /// need not be copied command by command.
    fn next_ref(&mut self) -> Result<Option<Cow<'_, [Vec<u8>]>>, Self::Error> {
        Ok(self.next_command()?.map(Cow::Owned))
    }
}

/// Receives each command's result, in index order, exactly once.
pub trait ResultSink {
    fn push(&mut self, result: CommandResult);
}

impl ResultSink for Vec<CommandResult> {
    fn push(&mut self, result: CommandResult) {
        Vec::push(self, result);
    }
}

/// A batch already in memory.
pub struct VecSource<'a> {
    iter: std::slice::Iter<'a, Argv>,
}

impl<'a> VecSource<'a> {
    pub fn new(commands: &'a [Argv]) -> Self {
        VecSource { iter: commands.iter() }
    }
}

impl CommandSource for VecSource<'_> {
    type Error = Infallible;
    fn next_command(&mut self) -> Result<Option<Argv>, Infallible> {
        Ok(self.iter.next().cloned())
    }

    fn next_ref(&mut self) -> Result<Option<Cow<'_, [Vec<u8>]>>, Infallible> {
        Ok(self.iter.next().map(|argv| Cow::Borrowed(argv.as_slice())))
    }
}

/// Why the stream of commands stopped before its end.
#[derive(Debug)]
pub enum InputErrorKind<E> {
    /// The source could not produce the next command.
    Source(E),
    /// The command was read but breaks a rule of [`super::check_command`].
    Invalid(String),
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
            InputErrorKind::Invalid(m) => write!(f, "command {}: {m}", self.index),
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
}
