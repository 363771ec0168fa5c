//! Running an Upstash request's commands: the API's checks and limits
//! (`api::validate`: count, argument size, refused commands), the
//! read-only rule (the server's command table,
//! `commands::Table::allows_readonly`), then the executor through `api::run::run_batch` — the
//! same batch slots, pool, batch timeout and reply limit as
//! `POST /api/v1/batch`.
//!
//! A pipeline (`/pipeline`, `POST /`, path style) runs in the executor's
//! pipeline mode as one round trip; `/multi-exec` in its transaction mode,
//! MULTI…EXEC in one write on a connection the transaction has to itself,
//! so concurrent `multi()` never share one.

use axum::http::{HeaderValue, StatusCode};

use super::response::UpstashError;
use crate::api::arg::JsonCommands;
use pipelab_http::auth::Access;
use crate::api::refuse::Rules;
use crate::api::validate::BatchFields;
use pipelab_engine::engine::Backend;
use pipelab_engine::commands::Table;
use pipelab_engine::exec::{ArgvRef, Commands, Report};
use pipelab_model::Mode;

/// Runs `commands` in `mode` for a request with `access`.
///
/// Errors, nothing run: 400 for what the API refuses (and for MULTI, EXEC,
/// DISCARD, WATCH and UNWATCH outside `/multi-exec`, which a request
/// cannot span), 413 over a limit, 403 `NOPERM` for a write with a
/// read-only token, 503 when Redis cannot be reached or every batch slot
/// stayed busy.
pub async fn run(state: &super::Upstash, on: &Backend, access: Access, commands: Commands, mode: Mode) -> Result<Report, UpstashError> {
    let n = commands.len();
    let fields = BatchFields {
        commands: Some(JsonCommands(commands)),
        batch_size: Some(n.max(1) as i64),
        ..Default::default()
    };
    // An operator token may run the commands that reveal secrets.
    let rules = Rules::of(state, on).await;
    let table = &rules.table;
    let prepared = fields.prepare(&state.http.limits)?;
    if access.read_only() {
        if let Some((argv, why)) = prepared.commands.iter().find_map(|argv| Some((argv, table.readonly_refusal(argv)?))) {
            let name = String::from_utf8_lossy(argv.name().unwrap_or_default()).to_lowercase();
            return Err(UpstashError::new(
                StatusCode::FORBIDDEN,
                format!("NOPERM this user has no permissions to run the '{name}' command (the token is read-only: {why})"),
            ));
        }
    }
    let batch = prepared.into_batch(mode, &state.http.limits, &rules)?;
    if mode != Mode::Transaction {
        for (i, argv) in batch.commands.iter().enumerate() {
            if let Some(name) = spans_requests(table, argv) {
                return Err(UpstashError::bad_request(format!(
                    "ERR {name} is not supported here (command {i}): a transaction cannot span requests; \
                     send its commands to /multi-exec, which runs them in MULTI/EXEC"
                )));
            }
        }
    }
    let writes = batch.commands.iter().any(|argv| !table.allows_readonly(argv));
    let report = crate::api::run::run_batch(state, on, &batch).await?;
    if writes {
        state.sync.wrote(on.visitor.as_ref().map(|lease| &lease.visitor.writes));
    }
    Ok(report)
}

/// The name of `argv` if it is a step of a transaction (MULTI, EXEC,
/// DISCARD, WATCH, UNWATCH: [`Table::transaction_step`]), connection state
/// that would have to outlive the request (as Upstash refuses them over
/// REST). RESET is one too, but refused before, as every request's.
fn spans_requests(table: &Table, argv: ArgvRef<'_>) -> Option<String> {
    table.transaction_step(argv)?;
    Some(String::from_utf8_lossy(argv.name()?).to_uppercase())
}

/// The `Server-Timing` header of a report: the batch's wall time in Redis
/// (ms, connection excluded) and its round trips, so that a browser's
/// devtools show what pipelab measured:
/// `redis;dur=0.123;desc="1 round trip, 1 command"`. Written digit by
/// digit (µs as ms with three decimals, exactly): `format!` with a float
/// was a twentieth of a one-command request's instructions.
pub fn server_timing(report: &Report) -> HeaderValue {
    let s = &report.summary;
    let mut num = itoa::Buffer::new();
    let mut text = Vec::with_capacity(64);
    text.extend_from_slice(b"redis;dur=");
    text.extend_from_slice(num.format(s.total_us / 1000).as_bytes());
    let frac = s.total_us % 1000;
    text.extend_from_slice(&[b'.', b'0' + (frac / 100) as u8, b'0' + (frac / 10 % 10) as u8, b'0' + (frac % 10) as u8]);
    text.extend_from_slice(b";desc=\"");
    text.extend_from_slice(num.format(s.round_trips).as_bytes());
    text.extend_from_slice(if s.round_trips == 1 { b" round trip, " } else { b" round trips, " });
    text.extend_from_slice(num.format(s.commands).as_bytes());
    text.extend_from_slice(if s.commands == 1 { b" command\"" } else { b" commands\"" });
    HeaderValue::from_maybe_shared(axum::body::Bytes::from(text)).expect("ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same text as `format!("{:.3}", total_us as f64 / 1000.0)` would give.
    #[test]
    fn server_timing_in_ms_with_three_decimals() {
        for (us, trips, commands) in [(0, 0, 0), (7, 1, 1), (1000, 2, 10), (123_456_789, 1, 1), (999, 3, 1)] {
            let report = Report {
                summary: pipelab_engine::exec::Summary { total_us: us, round_trips: trips, commands, ..Default::default() },
                results: Vec::new(),
                transaction: None,
                connection_error: None,
            };
            let trips_word = if trips == 1 { "round trip" } else { "round trips" };
            let commands_word = if commands == 1 { "command" } else { "commands" };
            let expected = format!("redis;dur={:.3};desc=\"{trips} {trips_word}, {commands} {commands_word}\"", us as f64 / 1000.0);
            assert_eq!(server_timing(&report).to_str().unwrap(), expected);
        }
    }
}
