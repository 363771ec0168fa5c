//! Why an experiment did not run or did not finish, without HTTP: the
//! input's fault ([`InputError`], named by the API's JSON field), Redis out
//! of reach, or the runner's own error passed through as it came.

/// What is wrong with an input. The API turns it into the `ApiCode` of
/// the same name (`http::error`); the CLI into exit status 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// A command with no argument, not even its name.
    EmptyArgv,
    /// A value out of its range, or an empty list.
    InvalidField,
    /// A batch size below 1.
    InvalidBatchSize,
    /// Redis rejects the command (sweep: `COMMAND GETKEYS` answered an error).
    InvalidCommand,
}

/// Input an experiment cannot run with. `field` is the API's JSON name
/// (`command`, `total`, `batch_sizes[2]`, `modes`); the CLI maps it to its
/// option.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InputError {
    pub problem: Problem,
    pub field: String,
    /// For a person, without the field's name.
    pub message: String,
}

impl InputError {
    pub fn new(problem: Problem, field: impl Into<String>, message: impl Into<String>) -> Self {
        InputError { problem, field: field.into(), message: message.into() }
    }
}

/// Why an experiment stopped. `E` is the [`super::Runner`]'s error.
#[derive(Debug, thiserror::Error)]
pub enum LabError<E> {
    #[error("{0}")]
    Input(#[from] InputError),
    /// Redis could not be reached, or a connection failed while the
    /// experiment checked or cleaned up keys (the API answers 503).
    #[error("Redis is unreachable: {0}")]
    Unavailable(String),
    /// The runner's own error, unchanged.
    #[error("{0}")]
    Run(E),
    /// Stopped from outside (`sweep_until`); the keys were cleaned up.
    #[error("interrupted; cleanup: {} keys named, {} existed before (kept), {} deleted", .0.keys, .0.preexisting, .0.deleted)]
    Interrupted(super::removed::Cleanup),
}
