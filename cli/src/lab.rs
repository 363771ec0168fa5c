//! What `pipelab compare` and `pipelab sweep` share: the API's field names
//! as the CLI's options, the JSON output, and exit statuses as `pipelab
//! run`'s: 0 ok, 1 error replies or Redis unreachable, 2 bad usage or input.

use std::fmt::Display;
use std::io::Write;
use std::process::ExitCode;
use pipelab_engine::exec::ExecError;
use pipelab_engine::lab::{Direct, InputError, LabError};

use super::input::Exit;
use super::options::RedisArgs;

/// Where the experiment runs, and how its report is shown.
#[derive(clap::Args)]
pub struct LabArgs {
    #[command(flatten)]
    pub redis: RedisArgs,
    /// Print the API's JSON document instead of a table.
    #[arg(long)]
    pub json: bool,
}

impl LabArgs {
    /// The runner on `--redis`, with the server's command table; bad options exit 2.
    pub async fn runner(&self, name: &str) -> Result<Direct, ExitCode> {
        Ok(self.redis.runner().map_err(|m| fail(name, Exit::BadInput, m))?.with_commands().await)
    }

    /// With `--json` the report as the API writes it, on one line; else
    /// `table`. Then exit 0 if `clean`, else 1 (error replies, commands cut).
    pub fn finish<T: serde::Serialize>(&self, report: &T, table: impl FnOnce(&T), clean: bool) -> ExitCode {
        if self.json {
            let mut out = std::io::stdout().lock();
            let written = serde_json::to_writer(&mut out, report).map_err(std::io::Error::from);
            if let Err(e) = written.and_then(|()| writeln!(out)) {
                return Exit::from_io(e).into();
            }
        } else {
            table(report);
        }
        if clean { Exit::Ok } else { Exit::ErrorReplies }.into()
    }
}

/// An experiment's outcome as the exit status (a failure carries its own).
pub async fn exit(outcome: impl std::future::Future<Output = Result<ExitCode, ExitCode>>) -> ExitCode {
    outcome.await.unwrap_or_else(|failed| failed)
}

/// `pipelab NAME: message` on stderr; the exit status.
pub fn fail(name: &str, exit: Exit, message: impl Display) -> ExitCode {
    eprintln!("pipelab {name}: {message}");
    exit.into()
}

/// The CLI's name for a field of the API's request: `total` is `--count`,
/// `simulated_rtt_ms` `--rtt`, `batch_sizes[1]` `--batch-sizes (entry 2)`,
/// `commands[i]` the line command `i` starts on (`lines`), and any other
/// `name` `--name` with dashes.
pub fn option_name(field: &str, lines: &[usize]) -> String {
    let (name, index) = match field.split_once('[') {
        Some((name, rest)) => (name, rest.trim_end_matches(']').parse::<usize>().ok()),
        None => (field, None),
    };
    let option = match name {
        "commands" => return index.and_then(|i| lines.get(i)).map_or(field.to_string(), |l| format!("line {l}")),
        "total" => "--count".to_string(),
        "simulated_rtt_ms" => "--rtt".to_string(),
        other => format!("--{}", other.replace('_', "-")),
    };
    match index {
        Some(i) => format!("{option} (entry {})", i + 1),
        None => option,
    }
}

/// An input error with the field named as the CLI's option: exit 2.
pub fn input_error(name: &str, e: &InputError, lines: &[usize]) -> ExitCode {
    fail(name, Exit::BadInput, format_args!("{}: {}", option_name(&e.field, lines), e.message))
}

/// The executor's refusal (exit 2, the field as an option) or Redis out of
/// reach (exit 1).
pub fn exec_error(name: &str, e: &ExecError, lines: &[usize]) -> ExitCode {
    match e {
        ExecError::Invalid(b) | ExecError::CrossSlot(b) => fail(name, Exit::BadInput, format_args!("{}: {}", option_name(&b.field, lines), b.message)),
        ExecError::Connect(m) => fail(name, Exit::ErrorReplies, format_args!("{m}\n{WHERE_REDIS}")),
    }
}

/// Said under a failed connect: which Redis the CLI talks to is the user's
/// choice, and the one `pipelab serve` starts is not at the default address.
pub const WHERE_REDIS: &str = "  (the Redis is --redis URL or REDIS_URL, by default redis://127.0.0.1:6379; \
                               `pipelab serve` prints its own Redis's unix:// address on its start-up line)";

/// Why an experiment stopped, as an exit status.
pub fn lab_error(name: &str, e: &LabError<ExecError>) -> ExitCode {
    match e {
        LabError::Input(e) => input_error(name, e, &[]),
        LabError::Unavailable(_) => fail(name, Exit::ErrorReplies, format_args!("{e}\n{WHERE_REDIS}")),
        LabError::Interrupted(_) => fail(name, Exit::ErrorReplies, e),
        LabError::Run(e) => exec_error(name, e, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::option_name;

    #[test]
    fn api_fields_become_options() {
        assert_eq!(option_name("total", &[]), "--count");
        assert_eq!(option_name("simulated_rtt_ms", &[]), "--rtt");
        assert_eq!(option_name("batch_sizes[1]", &[]), "--batch-sizes (entry 2)");
        assert_eq!(option_name("batch_size", &[]), "--batch-size");
        assert_eq!(option_name("commands[1]", &[1, 4]), "line 4");
        assert_eq!(option_name("commands[9]", &[1]), "commands[9]");
    }
}
