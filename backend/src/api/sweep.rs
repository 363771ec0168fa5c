//! `POST /api/v1/sweep`: one command template, `total` copies with `{i}`
//! replaced by the index, pipelined at each of several batch sizes: how
//! commands/s grows with the batch size at a given RTT.
//!
//! Afterwards it deletes the keys it created: the key positions come from
//! Redis itself (`COMMAND GETKEYS` on the first command), the keys that
//! existed before the sweep are left alone (EXISTS before the first run).

use std::collections::HashSet;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::arg::ArgBytes;
use super::error::{ApiError, ErrorBody};
use super::extract::ApiJson;
use super::refuse::Rules;
use super::run::{command, run_batch};
use super::schema;
use super::validate::{self, min_round_trips};
use super::AppState;
use crate::exec::{Argv, Batch, Commands, Mode, OnError, Status};

/// Keys per DEL command during cleanup.
const DEL_CHUNK: usize = 512;

/// A sweep: one command template, how many copies, which batch sizes.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"command": ["SET", "sweep:{i}", "x"], "total": 10000,
    "batch_sizes": [1, 10, 100, 1000], "simulated_rtt_ms": 0.2}))]
pub struct SweepRequest {
    /// argv template; `{i}` in any argument becomes the command's index (0-based).
    #[schema(value_type = Vec<schema::Arg>, example = json!(["SET", "sweep:{i}", "x"]))]
    pub command: Vec<ArgBytes>,
    /// Commands per run, at least 1.
    #[schema(minimum = 1, example = 10000)]
    pub total: i64,
    /// Pipeline chunk sizes to try, each at least 1; one run per entry, in this order.
    #[schema(example = json!([1, 10, 100, 1000]))]
    pub batch_sizes: Vec<i64>,
    /// Extra delay per round trip in ms, 0 to 1000. Default 0.
    #[schema(minimum = 0, maximum = 1000)]
    pub simulated_rtt_ms: Option<f64>,
}

/// Throughput per batch size, and what the cleanup did.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "total": 10000, "simulated_rtt_ms": 0.2,
    "points": [
        {"batch_size": 1, "total_us": 2412000, "commands_per_sec": 4146.0, "round_trips": 10000, "ok": 10000, "errors": 0, "incomplete": 0},
        {"batch_size": 100, "total_us": 61000, "commands_per_sec": 163934.0, "round_trips": 100, "ok": 10000, "errors": 0, "incomplete": 0}
    ],
    "cleanup": {"keys": 10000, "preexisting": 0, "deleted": 10000}
}))]
pub struct SweepResponse {
    pub total: u64,
    pub simulated_rtt_ms: f64,
    pub points: Vec<SweepPoint>,
    pub cleanup: Cleanup,
}

/// One run (pipeline mode, one batch size).
#[derive(Debug, Serialize, ToSchema)]
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

/// Keys removed after the sweep.
#[derive(Debug, Serialize, ToSchema)]
pub struct Cleanup {
    /// Distinct keys the commands name (per COMMAND GETKEYS).
    pub keys: u64,
    /// Keys that existed before the sweep: written to, but not deleted.
    pub preexisting: u64,
    /// Keys deleted (DEL's count).
    pub deleted: u64,
}

/// Run a command template at several pipeline batch sizes.
///
/// Each batch size is one pipeline-mode run of `total` commands on its own
/// connection, in the order given. The keys the sweep created are deleted
/// afterwards, even when a run failed.
#[utoipa::path(
    post,
    path = "/api/v1/sweep",
    tag = "batches",
    request_body = SweepRequest,
    responses(
        (status = 200, description = "Throughput per batch size", body = SweepResponse),
        (status = 400, description = "Bad request (the message names the field)", body = ErrorBody),
        (status = 408, description = "The body stopped arriving for the batch timeout", body = ErrorBody),
        (status = 413, description = "Over a size limit", body = ErrorBody),
        (status = 503, description = "Redis unreachable", body = ErrorBody),
        (status = 504, description = "A run could not be cut at the batch timeout (a batch reaching it is normally cut and reported: `unknown` / `not_sent` results and `connection_error`)", body = ErrorBody),
    )
)]
pub async fn sweep(
    State(state): State<AppState>,
    ApiJson(req): ApiJson<SweepRequest>,
) -> Result<Json<SweepResponse>, ApiError> {
    let limits = &state.limits;
    if req.command.is_empty() {
        return Err(ApiError::field(
            "empty_argv",
            "command",
            "a command needs at least one argument (its name)",
        ));
    }
    let template = req
        .command
        .iter()
        .enumerate()
        .map(|(j, a)| validate::argument(a.clone(), &format!("command[{j}]"), limits))
        .collect::<Result<Argv, _>>()?;
    let rules = Rules::of(&state).await;
    if let Some(reason) = rules.refusal(Commands::from(vec![template.clone()]).get(0), Mode::Pipeline) {
        return Err(ApiError::field("refused_command", "command", reason));
    }
    if req.total < 1 {
        return Err(ApiError::field(
            "invalid_field",
            "total",
            format!("must be at least 1, got {}", req.total),
        ));
    }
    let total = req.total as u64;
    if total > limits.max_commands as u64 {
        return Err(ApiError::field(
            "too_many_commands",
            "total",
            format!(
                "{total} is over the server's limit of {} commands per batch",
                limits.max_commands
            ),
        )
        .with_status(StatusCode::PAYLOAD_TOO_LARGE));
    }
    if req.batch_sizes.is_empty() {
        return Err(ApiError::field(
            "invalid_field",
            "batch_sizes",
            "empty: give at least one batch size",
        ));
    }
    if req.batch_sizes.len() > limits.max_sweep_points {
        return Err(ApiError::field(
            "invalid_field",
            "batch_sizes",
            format!(
                "{} entries, over the server's limit of {}",
                req.batch_sizes.len(),
                limits.max_sweep_points
            ),
        ));
    }
    let mut sizes = Vec::with_capacity(req.batch_sizes.len());
    for (k, &b) in req.batch_sizes.iter().enumerate() {
        if b < 1 {
            return Err(ApiError::field(
                "invalid_batch_size",
                format!("batch_sizes[{k}]"),
                format!("must be at least 1, got {b}"),
            ));
        }
        sizes.push(b as usize);
    }
    let rtt = validate::rtt(req.simulated_rtt_ms)?;
    for (k, &b) in sizes.iter().enumerate() {
        let trips = min_round_trips(Mode::Pipeline, total as usize, b);
        let ms = trips as f64 * rtt;
        if ms > limits.batch_timeout_ms as f64 {
            return Err(ApiError::field(
                "invalid_rtt",
                "simulated_rtt_ms",
                format!(
                    "batch_sizes[{k}] = {b} needs {trips} round trips × {rtt} ms = {ms:.0} ms, over \
                     the batch timeout of {} ms",
                    limits.batch_timeout_ms
                ),
            ));
        }
    }

    let commands: Commands = (0..total).map(|i| instantiate(&template, i)).collect();
    let keys = sweep_keys(&state, &rules.table, &commands).await?;
    let fresh = keys_absent(&state, &keys).await?;
    let fresh_count = fresh.len();
    // If the client leaves mid-sweep, this handler is dropped; the guard
    // then deletes the keys in a task of its own.
    let mut guard = CleanupGuard {
        state: state.clone(),
        keys: Some(fresh),
    };

    let mut points = Vec::with_capacity(sizes.len());
    let mut failure = None;
    for &b in &sizes {
        let batch = Batch {
            commands: commands.clone(),
            mode: Mode::Pipeline,
            batch_size: b,
            on_error: OnError::Continue,
            simulated_rtt_ms: rtt,
            resp3: false,
            watch: Vec::new(),
        };
        match run_batch(&state, &batch).await {
            Ok(report) => {
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
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    // Clean up even after a failed run: its keys are there all the same.
    let fresh = guard.keys.take().unwrap_or_default();
    let deleted = delete_keys(&state, &fresh).await;
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(Json(SweepResponse {
        total,
        simulated_rtt_ms: rtt,
        points,
        cleanup: Cleanup {
            keys: keys.len() as u64,
            preexisting: (keys.len() - fresh_count) as u64,
            deleted: deleted?,
        },
    }))
}

/// Deletes the sweep's keys when dropped before the handler took them
/// back (the client disconnected and axum dropped the handler's future).
struct CleanupGuard {
    state: AppState,
    keys: Option<Vec<Vec<u8>>>,
}

impl Drop for CleanupGuard {
    fn drop(&mut self) {
        if let Some(keys) = self.keys.take().filter(|k| !k.is_empty()) {
            let state = self.state.clone();
            tokio::spawn(async move {
                if let Err(e) = delete_keys(&state, &keys).await {
                    tracing::warn!(keys = keys.len(), error = %e.body.message, "sweep cleanup after disconnect failed");
                }
            });
        }
    }
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

/// The distinct keys `commands` touch, in first-use order. Key positions
/// are those of the first command, from the table's key specs; where the
/// specs cannot find them all (or the table lacks the command), from
/// `COMMAND GETKEYSANDFLAGS`, whose error for a command Redis rejects is
/// the 400.
async fn sweep_keys(state: &AppState, table: &crate::commands::Table, commands: &Commands) -> Result<Vec<Vec<u8>>, ApiError> {
    let first = commands.get(0);
    let positions = match table.keys(first) {
        Some(keys) if keys.complete => keys.indexes(),
        _ if first.len() < 2 => Vec::new(), // only a name: no key arguments (and GETKEYS would reject it)
        _ => {
            let reply = command(state, &crate::commands::getkeys_argv(first), state.limits.connect_timeout()).await?;
            crate::commands::from_getkeys_reply(first, &reply)
                .map_err(|m| ApiError::field("invalid_command", "command", format!("Redis rejects it: {m}")))?
                .iter()
                .map(|p| p.index)
                .collect()
        }
    };
    let mut seen = HashSet::new();
    let mut keys = Vec::new();
    for cmd in commands.iter() {
        for key in positions.iter().filter_map(|&j| cmd.get(j)) {
            if seen.insert(key) {
                keys.push(key.to_vec());
            }
        }
    }
    Ok(keys)
}

fn admin_batch(commands: Commands) -> Batch {
    Batch {
        commands,
        mode: Mode::Pipeline,
        batch_size: 1000,
        on_error: OnError::Continue,
        simulated_rtt_ms: 0.0,
        resp3: false,
        watch: Vec::new(),
    }
}

/// The keys among `keys` that do not exist now.
async fn keys_absent(state: &AppState, keys: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, ApiError> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let commands = keys
        .iter()
        .map(|k| vec![b"EXISTS".to_vec(), k.clone()])
        .collect();
    let report = run_batch(state, &admin_batch(commands)).await?;
    let mut absent = Vec::new();
    for (key, r) in keys.iter().zip(&report.results) {
        match (&r.status, &r.reply) {
            (Status::Ok, Some(resp::Value::Integer(0))) => absent.push(key.clone()),
            (Status::Ok, Some(_)) => {}
            _ => {
                return Err(ApiError::unavailable(
                    "the connection failed while checking which keys exist",
                ))
            }
        }
    }
    Ok(absent)
}

/// DEL `keys` in chunks; the number deleted.
async fn delete_keys(state: &AppState, keys: &[Vec<u8>]) -> Result<u64, ApiError> {
    if keys.is_empty() {
        return Ok(0);
    }
    let commands = keys
        .chunks(DEL_CHUNK)
        .map(|chunk| {
            std::iter::once(b"DEL".to_vec())
                .chain(chunk.iter().cloned())
                .collect()
        })
        .collect();
    // Cleanup must not be cut short by a slow Redis more than the rest is.
    let report = tokio::time::timeout(
        state.limits.batch_timeout() + Duration::from_secs(1),
        run_batch(state, &admin_batch(commands)),
    )
    .await
    .map_err(|_| ApiError::unavailable("cleanup did not finish in time"))??;
    Ok(report
        .results
        .iter()
        .filter_map(|r| match r.reply {
            Some(resp::Value::Integer(n)) => Some(n as u64),
            _ => None,
        })
        .sum())
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
}
