//! Request validation shared by /batch, /compare and /sweep: turns the JSON
//! fields into argvs and a [`Batch`], or an [`ApiError`] naming the field.
//!
//! Commands come either as JSON argv arrays or as `text` (inline lines or
//! RESP, split by `resp::RequestReader` exactly as the Redis server splits
//! its input: the API never splits arguments itself).

use serde::Serialize;
use utoipa::ToSchema;

use super::arg::{ArgBytes, JsonCommands};
use pipelab_http::error::{ApiCode, ApiError};
use super::refuse::Rules;
use pipelab_http::config::{Limits, MAX_SIMULATED_RTT_MS};
use pipelab_engine::exec::{ArgvRef, Batch, Commands, OnError, Plan, Prechecked};
use pipelab_model::Mode;

/// Default commands per pipeline chunk.
pub const DEFAULT_BATCH_SIZE: usize = pipelab_engine::exec::DEFAULT_BATCH_SIZE;
/// Default mode of /batch.
pub const DEFAULT_MODE: Mode = Mode::Pipeline;

// `GET /api/v1/info`'s `defaults`, stated here where they are applied.
/// What a batch request gets for the fields it leaves out.
#[derive(Debug, Serialize, ToSchema)]
pub struct Defaults {
    pub mode: Mode,
    pub batch_size: u64,
    pub on_error: OnError,
    pub simulated_rtt_ms: f64,
    pub resp3: bool,
    /// The largest simulated_rtt_ms accepted.
    pub max_simulated_rtt_ms: f64,
    /// The range of simulated_bandwidth_mbps accepted (absent: unlimited, the default).
    pub min_simulated_bandwidth_mbps: f64,
    pub max_simulated_bandwidth_mbps: f64,
}

/// The defaults of every batch-running request.
pub const DEFAULTS: Defaults = Defaults {
    mode: DEFAULT_MODE,
    batch_size: DEFAULT_BATCH_SIZE as u64,
    on_error: OnError::Continue,
    simulated_rtt_ms: 0.0,
    resp3: false,
    max_simulated_rtt_ms: MAX_SIMULATED_RTT_MS,
    min_simulated_bandwidth_mbps: pipelab_engine::delay::MIN_BANDWIDTH_MBPS,
    max_simulated_bandwidth_mbps: pipelab_engine::delay::MAX_BANDWIDTH_MBPS,
};

/// The fields every batch-running request shares, as received.
#[derive(Debug, Default)]
pub struct BatchFields {
    pub commands: Option<JsonCommands>,
    pub text: Option<String>,
    pub batch_size: Option<i64>,
    pub on_error: Option<String>,
    pub simulated_rtt_ms: Option<f64>,
    pub simulated_bandwidth_mbps: Option<f64>,
    pub resp3: Option<bool>,
    pub watch: Option<Vec<ArgBytes>>,
}

/// For a request type with the members of [`BatchFields`] (`commands`,
/// `text`, `batch_size`, `on_error`, `simulated_rtt_ms`,
/// `simulated_bandwidth_mbps`, `resp3`, `watch`):
/// `From<request> for BatchFields`, and `HasCommands` for the fast path
/// that reads `commands` while the body arrives (`super::incremental`).
macro_rules! batch_request {
    ($($request:ty),+) => {$(
        impl From<$request> for $crate::api::validate::BatchFields {
            fn from(req: $request) -> Self {
                $crate::api::validate::BatchFields {
                    commands: req.commands,
                    text: req.text,
                    batch_size: req.batch_size,
                    on_error: req.on_error,
                    simulated_rtt_ms: req.simulated_rtt_ms,
                    simulated_bandwidth_mbps: req.simulated_bandwidth_mbps,
                    resp3: req.resp3,
                    watch: req.watch,
                }
            }
        }

        impl $crate::api::json::HasCommands for $request {
            fn set_commands(&mut self, commands: $crate::api::arg::JsonCommands) {
                self.commands = Some(commands);
            }
        }
    )+};
}
pub(crate) use batch_request;

/// Where the commands came from, to name one in errors.
#[derive(Debug, Clone)]
enum Origins {
    /// `commands`: command `i` is `commands[i]`.
    Json,
    /// `text`: the line each command starts on.
    Lines(Vec<usize>),
}

impl Origins {
    /// The field that holds command `i`.
    fn field(&self, i: usize) -> String {
        match self {
            Origins::Json => format!("commands[{i}]"),
            Origins::Lines(lines) => format!("text, line {}", lines[i]),
        }
    }
}

/// Validated fields, ready to become a [`Batch`] in any mode.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub commands: Commands,
    origins: Origins,
    /// Everything but the mode, which [`Prepared::batch`] sets.
    pub plan: Plan,
    /// The commands' checks made as they were parsed, if they were.
    checked: Option<Checked>,
}

/// Bodies from this size on have their commands checked and encoded as
/// they are parsed ([`Checker`]); a smaller batch's passes after its last
/// byte cost less than setting that up.
pub const CHECK_WHILE_PARSING: usize = 64 * 1024;

/// Most RESP bytes a [`Checker`] encodes ahead (the rest of a larger
/// batch is checked and encoded after its last byte, as a small one).
const ENCODE_AHEAD_MAX: usize = 256 * 1024 * 1024;


/// A batch's commands checked one by one while its body is parsed
/// (`super::incremental`), with the rules of the Redis it will run on, so
/// that after the body's last byte each per-command check is a look-up:
/// it records the first command each check of [`BatchFields::prepare`]
/// and [`Prepared::into_batch`] refuses (per mode, as `mode` may come
/// after `commands`), and the executor's checks and every command's RESP
/// ([`Prechecked`]). Nothing is sent before the body is whole and checked.
pub struct Checker {
    rules: Rules,
    max_arg_bytes: usize,
    max_watch_keys: usize,
    seen: usize,
    first_shape: Option<usize>,
    refused: [Option<usize>; 4],
    engine: Prechecked,
}

/// What a [`Checker`] recorded: the first command each check refuses.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Commands checked (the record holds for a batch of that many).
    commands: usize,
    /// The table the commands were checked with.
    table: std::sync::Arc<pipelab_engine::commands::Table>,
    /// The first command `json_commands` refuses (empty, or an argument over the limit).
    first_shape: Option<usize>,
    /// Per mode ([`Mode::index`]), the first command `into_batch` refuses.
    refused: [Option<usize>; 4],
    engine: std::sync::Arc<Prechecked>,
}

impl Checker {
    /// A checker for a `/batch` body of `expected` bytes from `caller`, if
    /// it is worth one (at least [`CHECK_WHILE_PARSING`] bytes) and its
    /// rules are known before the body is read: a shared Redis whose
    /// command table was read already. In the sandbox a visitor's Redis is
    /// given only once the body is found valid, so it is not asked for here.
    pub async fn early(state: &super::AppState, caller: &pipelab_http::caller::Caller, expected: usize) -> Option<Checker> {
        if expected < CHECK_WHILE_PARSING || state.http.engine.sandbox().is_some() {
            return None;
        }
        let backend = state.backend(caller).await.ok()?;
        let table = backend.probe().commands_if_checked()?;
        let rules = Rules { table, access: backend.access, allow: state.allow };
        Some(Checker::new(rules, &state.http.limits, expected))
    }

    /// A checker with `rules` and `limits`, for a body of about `expected` bytes.
    pub fn new(rules: Rules, limits: &Limits, expected: usize) -> Checker {
        // RESP takes about a third more than JSON argv arrays of short
        // strings; reserved within the body's own cap (a declared length
        // is only a claim).
        let expected = expected.min(super::json::RESERVE_MAX);
        let engine = Prechecked::new(rules.table.clone(), expected + expected / 2, ENCODE_AHEAD_MAX);
        Checker { rules, max_arg_bytes: limits.max_arg_bytes, max_watch_keys: limits.max_watch_keys, seen: 0, first_shape: None, refused: [None; 4], engine }
    }

    /// Checks the next command parsed.
    pub fn command(&mut self, argv: ArgvRef<'_>) {
        let i = self.seen;
        self.seen += 1;
        let (quiet, longest) = self.engine.command(argv);
        if self.first_shape.is_none() && (argv.is_empty() || longest > self.max_arg_bytes) {
            self.first_shape = Some(i);
        }
        // A command no rule concerns is refused in no mode (but to a read-only caller).
        let quiet = quiet && self.rules.access != pipelab_engine::commands::Access::ReadOnly;
        let watch_over = too_many_watched(argv, self.max_watch_keys);
        if quiet && !watch_over {
            return;
        }
        for (k, mode) in Mode::ALL.into_iter().enumerate() {
            if self.refused[k].is_none() && (watch_over || self.rules.refusal(argv, mode).is_some()) {
                self.refused[k] = Some(i);
            }
        }
    }

    /// Encodes no more commands ahead ([`Prechecked::stop_encoding`]).
    pub fn stop_encoding(&mut self) {
        self.engine.stop_encoding();
    }

    /// What was recorded.
    pub fn finish(self) -> Checked {
        Checked {
            commands: self.seen,
            table: self.rules.table,
            first_shape: self.first_shape,
            refused: self.refused,
            engine: std::sync::Arc::new(self.engine),
        }
    }
}

/// WATCH with more keys than `--max-watch-keys`.
fn too_many_watched(argv: ArgvRef<'_>, max_watch_keys: usize) -> bool {
    argv.len() > max_watch_keys + 1 && argv.name().is_some_and(|n| n.eq_ignore_ascii_case(b"watch"))
}

impl Prepared {
    /// Where command `i` is in the request: `commands[i]`, or `text, line L`.
    pub fn field(&self, i: usize) -> String {
        self.origins.field(i)
    }
}

impl BatchFields {
    /// Check everything that does not depend on the mode.
    pub fn prepare(self, limits: &Limits) -> Result<Prepared, ApiError> {
        self.prepare_checked(limits, None)
    }

    /// [`BatchFields::prepare`] of `commands` checked as they were parsed
    /// (`checked`, if they were): the same answers, without a pass over them.
    pub fn prepare_checked(self, limits: &Limits, checked: Option<Checked>) -> Result<Prepared, ApiError> {
        let checked = checked.filter(|c| self.commands.as_ref().is_some_and(|cmds| cmds.0.len() == c.commands));
        let (commands, origins) =
            match (self.commands, self.text) {
                (Some(_), Some(_)) => {
                    return Err(ApiError::field(
                        ApiCode::ConflictingFields,
                        "commands",
                        "give either \"commands\" or \"text\", not both",
                    ))
                }
                (None, None) => return Err(ApiError::field(
                    ApiCode::MissingCommands,
                    "commands",
                    "missing: give \"commands\" (argv arrays) or \"text\" (inline lines or RESP)",
                )),
                (Some(cmds), None) => json_commands(cmds.0, limits, checked.as_ref().map(|c| c.first_shape))?,
                (None, Some(text)) => text_commands(&text, limits)?,
            };
        let plan = Plan {
            batch_size: batch_size(self.batch_size)?,
            on_error: on_error(self.on_error.as_deref())?,
            simulated_rtt_ms: rtt(self.simulated_rtt_ms)?,
            simulated_bandwidth_mbps: bandwidth(self.simulated_bandwidth_mbps)?,
            resp3: self.resp3.unwrap_or(DEFAULTS.resp3),
            watch: watch_keys(self.watch.unwrap_or_default(), limits)?,
            ..Plan::new(DEFAULT_MODE)
        };
        Ok(Prepared { commands, origins, plan, checked })
    }
}

/// The `watch` keys, decoded, within `--max-watch-keys` (counted before any
/// is decoded) and, all together, `--max-arg-bytes`: they are sent as one
/// WATCH command, whose cost in Redis 7.0 grows with the square of its keys.
fn watch_keys(keys: Vec<ArgBytes>, limits: &Limits) -> Result<Vec<Vec<u8>>, ApiError> {
    if keys.len() > limits.max_watch_keys {
        return Err(ApiError::field(
            ApiCode::TooManyWatchKeys,
            "watch",
            format!("{} keys; at most {} (--max-watch-keys)", keys.len(), limits.max_watch_keys),
        ));
    }
    let keys: Vec<Vec<u8>> = keys
        .into_iter()
        .enumerate()
        .map(|(i, a)| argument(a, &format!("watch[{i}]"), limits))
        .collect::<Result<_, _>>()?;
    let bytes: usize = keys.iter().map(Vec::len).sum();
    if bytes > limits.max_arg_bytes {
        return Err(ApiError::field(
            ApiCode::TooManyWatchKeys,
            "watch",
            format!("{bytes} bytes of keys in all; at most {} (--max-arg-bytes: WATCH is one command)", limits.max_arg_bytes),
        ));
    }
    Ok(keys)
}

impl Prepared {
    /// The batch for `mode`, after the per-mode checks (refused commands,
    /// `watch` outside transactions, simulated RTT that cannot fit the timeout).
    pub fn batch(&self, mode: Mode, limits: &Limits, rules: &Rules) -> Result<Batch, ApiError> {
        self.clone().into_batch(mode, limits, rules)
    }

    /// [`Prepared::batch`] without copying the commands.
    pub fn into_batch(self, mode: Mode, limits: &Limits, rules: &Rules) -> Result<Batch, ApiError> {
        // Checked as they were parsed, with these rules: from the first refused on.
        let checked = self.checked.filter(|c| c.commands == self.commands.len() && std::sync::Arc::ptr_eq(&c.table, &rules.table));
        let from = checked.as_ref().map_or(0, |c| c.refused[mode.index()].unwrap_or(self.commands.len()));
        // By index: skipping an iterator's items would still make each one.
        for i in from..self.commands.len() {
            let argv = self.commands.get(i);
            if let Some(reason) = rules.refusal(argv, mode) {
                return Err(ApiError::field(ApiCode::RefusedCommand, self.origins.field(i), reason));
            }
            // Redis 7.0 checks each WATCHed key against the connection's
            // list: 100,000 keys stall it for minutes.
            if too_many_watched(argv, limits.max_watch_keys) {
                return Err(ApiError::field(
                    ApiCode::TooManyWatchKeys,
                    self.origins.field(i),
                    format!("WATCH with {} keys; at most {} (--max-watch-keys)", argv.len() - 1, limits.max_watch_keys),
                ));
            }
        }
        if !self.plan.watch.is_empty() && mode != Mode::Transaction {
            return Err(ApiError::field(
                ApiCode::InvalidField,
                "watch",
                "only used in transaction mode (WATCH runs before MULTI)",
            ));
        }
        // The executor checks its own rules again (one reply per command,
        // ...) before sending anything; every command they forbid is
        // refused above with a reason (a test in `refuse` keeps it so).
        let batch = Batch::new(self.commands, Plan { mode, ..self.plan }).with_checked(checked.map(|c| c.engine));
        check_rtt_budget(&batch, limits)?;
        Ok(batch)
    }
}

/// Least number of round trips `batch` needs: each costs at least the
/// simulated RTT. The rule is `pipelab_model`'s, which the page's warning
/// runs through the wasm module.
pub fn min_round_trips(mode: Mode, commands: usize, batch_size: usize, clients: usize) -> u64 {
    pipelab_model::min_round_trips(mode, commands as u64, batch_size as u64, clients as u64)
}

/// Refuse up front a batch whose simulated RTT alone, or its requests'
/// bytes at the simulated bandwidth alone, exceed the batch timeout, instead
/// of letting it run into a 504.
fn check_rtt_budget(batch: &Batch, limits: &Limits) -> Result<(), ApiError> {
    let plan = &batch.plan;
    if let Some(mbps) = plan.simulated_bandwidth_mbps {
        let bytes: usize = batch.commands.iter().map(resp::encoded_command_len).sum();
        let ms = bytes as f64 * 8.0 / (mbps * 1000.0);
        if ms > limits.batch_timeout_ms as f64 {
            return Err(ApiError::field(
                ApiCode::InvalidField,
                "simulated_bandwidth_mbps",
                format!(
                    "{bytes} bytes of commands at {mbps} Mbit/s take {ms:.0} ms, over the batch timeout of \
                     {} ms; raise simulated_bandwidth_mbps or send fewer commands",
                    limits.batch_timeout_ms
                ),
            ));
        }
    }
    let trips = min_round_trips(plan.mode, batch.commands.len(), plan.batch_size, plan.clients);
    let ms = trips as f64 * plan.simulated_rtt_ms;
    if ms > limits.batch_timeout_ms as f64 {
        return Err(ApiError::field(
            ApiCode::InvalidRtt,
            "simulated_rtt_ms",
            format!(
                "{trips} round trips × {} ms = {:.0} ms of simulated RTT, over the batch timeout of \
                 {} ms; lower simulated_rtt_ms, send fewer commands or {}",
                plan.simulated_rtt_ms,
                ms,
                limits.batch_timeout_ms,
                match plan.mode {
                    Mode::Pipeline => "raise batch_size",
                    Mode::Auto => "raise clients",
                    _ => "use pipeline mode",
                }
            ),
        ));
    }
    Ok(())
}

/// `mode`: one of sequential, pipeline, transaction (400 `unknown_mode`).
pub fn mode(field: &str, value: &str) -> Result<Mode, ApiError> {
    one_of(ApiCode::UnknownMode, field, "mode", value)
}

/// `value` as one of `T`'s names (those serde and clap derive from its
/// variants); else 400 `code` about `field`, listing the names:
/// `unknown {what} "x"; expected "a", "b" or "c"`.
pub fn one_of<T: clap::ValueEnum + serde::de::DeserializeOwned>(code: ApiCode, field: &str, what: &str, value: &str) -> Result<T, ApiError> {
    // serde's match on the name, not clap's walk over every variant's names.
    if let Ok(v) = T::deserialize(serde::de::value::StrDeserializer::<serde::de::value::Error>::new(value)) {
        return Ok(v);
    }
    let names: Vec<String> = T::value_variants()
        .iter()
        .filter_map(|v| v.to_possible_value())
        .map(|p| format!("{:?}", p.get_name()))
        .collect();
    let expected = match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(ApiError::field(code, field, format!("unknown {what} {value:?}; expected {expected}")))
}

pub fn batch_size(value: Option<i64>) -> Result<usize, ApiError> {
    match value {
        None => Ok(DEFAULT_BATCH_SIZE),
        Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(n) => Err(ApiError::field(
            ApiCode::InvalidBatchSize,
            "batch_size",
            format!("must be at least 1 (commands per pipeline chunk), got {n}"),
        )),
    }
}

fn on_error(value: Option<&str>) -> Result<OnError, ApiError> {
    value.map_or(Ok(DEFAULTS.on_error), |v| one_of(ApiCode::InvalidField, "on_error", "value", v))
}

/// Auto mode's `clients` (1 to 1000, default 10) and `window_us` (0 to
/// 1 000 000 µs, default 0), set on `plan`. 400 `invalid_field` naming the field.
pub fn auto_fields(plan: &mut Plan, clients: Option<i64>, window_us: Option<i64>) -> Result<(), ApiError> {
    use pipelab_engine::exec::auto::{MAX_CLIENTS, MAX_WINDOW_US};
    if let Some(n) = clients {
        if !(1..=MAX_CLIENTS as i64).contains(&n) {
            return Err(ApiError::field(ApiCode::InvalidField, "clients", format!("must be 1 to {MAX_CLIENTS} (simulated callers), got {n}")));
        }
        plan.clients = n as usize;
    }
    if let Some(us) = window_us {
        if !(0..=MAX_WINDOW_US as i64).contains(&us) {
            return Err(ApiError::field(ApiCode::InvalidField, "window_us", format!("must be 0 to {MAX_WINDOW_US} µs, got {us}")));
        }
        plan.window_us = us as u64;
    }
    Ok(())
}

/// `simulated_rtt_ms`: finite, 0 to 1000 ms (docs/api.md#limits).
pub fn rtt(value: Option<f64>) -> Result<f64, ApiError> {
    let v = value.unwrap_or(DEFAULTS.simulated_rtt_ms);
    if !(0.0..=DEFAULTS.max_simulated_rtt_ms).contains(&v) {
        return Err(ApiError::field(
            ApiCode::InvalidRtt,
            "simulated_rtt_ms",
            format!("must be between 0 and {MAX_SIMULATED_RTT_MS} ms, got {v}"),
        ));
    }
    Ok(v)
}

/// `simulated_bandwidth_mbps`: absent (unlimited), or finite, 0.01 to 100000 Mbit/s.
pub fn bandwidth(value: Option<f64>) -> Result<Option<f64>, ApiError> {
    pipelab_engine::delay::check_bandwidth(value).map_err(|e| ApiError::field(ApiCode::InvalidField, "simulated_bandwidth_mbps", e.to_string()))
}

/// `first_bad`: the commands were checked as they were parsed, and the
/// first one the loop below refuses is this one (`None`: none is).
fn json_commands(cmds: Commands, limits: &Limits, first_bad: Option<Option<usize>>) -> Result<(Commands, Origins), ApiError> {
    if cmds.is_empty() {
        return Err(ApiError::field(
            ApiCode::EmptyBatch,
            "commands",
            "empty: a batch needs at least one command",
        ));
    }
    check_count(cmds.len(), "commands", limits)?;
    let from = first_bad.map_or(0, |first| first.unwrap_or(cmds.len()));
    // By index: skipping an iterator's items would still make each one.
    for i in from..cmds.len() {
        let cmd = cmds.get(i);
        if cmd.is_empty() {
            return Err(ApiError::field(
                ApiCode::EmptyArgv,
                format!("commands[{i}]"),
                "a command needs at least one argument (its name)",
            ));
        }
        for (j, a) in cmd.iter().enumerate() {
            if a.len() > limits.max_arg_bytes {
                check_arg_len(a.len(), &format!("commands[{i}][{j}]"), limits)?;
            }
        }
    }
    Ok((cmds, Origins::Json))
}

fn text_commands(text: &str, limits: &Limits) -> Result<(Commands, Origins), ApiError> {
    let buf = text.as_bytes();
    let mut reader = resp::RequestReader::new();
    reader.max_bulk_len = limits.max_arg_bytes as u64;
    let (mut out, mut lines) = (Commands::new(), Vec::new());
    let mut pos = 0;
    loop {
        match reader.next(&buf[pos..], true) {
            Ok(Some(req)) => {
                pos += req.consumed;
                lines.push(req.line);
                check_count(out.len() + 1, "text", limits)?;
                for arg in &req.argv {
                    check_arg_len(arg.len(), &format!("text, line {}", req.line), limits)?;
                }
                out.push(&req.argv);
            }
            Ok(None) => break,
            Err(e) => {
                let at = match e.column {
                    Some(c) => format!("line {}, column {}", e.line, c),
                    None => format!("line {} (byte {})", e.line, e.offset),
                };
                return Err(ApiError::field(
                    ApiCode::ParseError,
                    "text",
                    format!("{at}: {}", e.message),
                ));
            }
        }
    }
    if out.is_empty() {
        return Err(ApiError::field(
            ApiCode::EmptyBatch,
            "text",
            "holds no command (only blank lines)",
        ));
    }
    Ok((out, Origins::Lines(lines)))
}

fn check_count(n: usize, field: &str, limits: &Limits) -> Result<(), ApiError> {
    let max = limits.max_commands;
    within(n <= max, ApiCode::TooManyCommands, field, || {
        format!("more than the server's limit of {max} commands per batch")
    })
}

fn check_arg_len(len: usize, field: &str, limits: &Limits) -> Result<(), ApiError> {
    let max = limits.max_arg_bytes;
    within(len <= max, ApiCode::ArgumentTooLarge, field, || {
        format!("argument of {len} bytes, over the server's limit of {max} bytes")
    })
}

/// `Ok` when `ok`, else the 4xx `code` naming `field`, with the message.
fn within(ok: bool, code: ApiCode, field: &str, message: impl FnOnce() -> String) -> Result<(), ApiError> {
    if ok {
        Ok(())
    } else {
        Err(ApiError::field(code, field, message()))
    }
}

/// One argument's bytes, within the size limit (its JSON form was checked
/// while parsing, see [`ArgBytes`]).
pub fn argument(value: ArgBytes, field: &str, limits: &Limits) -> Result<Vec<u8>, ApiError> {
    check_arg_len(value.0.len(), field, limits)?;
    Ok(value.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name clap lists (the message's) is one serde reads (the parse's).
    #[test]
    fn every_listed_name_is_read() {
        fn check<T: clap::ValueEnum + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>() {
            for v in T::value_variants() {
                let name = v.to_possible_value().expect("a name");
                assert_eq!(one_of::<T>(ApiCode::InvalidField, "f", "value", name.get_name()).ok().as_ref(), Some(v));
            }
        }
        check::<Mode>();
        check::<OnError>();
        check::<super::super::kept::Keep>();
    }

    /// The names come from the enums, and the message lists them.
    #[test]
    fn unknown_names_are_listed() {
        let e = mode("modes[1]", "fast").unwrap_err();
        assert_eq!(e.code(), ApiCode::UnknownMode);
        assert_eq!(
            e.body.message,
            r#"modes[1]: unknown mode "fast"; expected "sequential", "pipeline", "transaction" or "auto""#
        );
        let e = on_error(Some("halt")).unwrap_err();
        assert_eq!(e.code(), ApiCode::InvalidField);
        assert_eq!(e.body.message, r#"on_error: unknown value "halt"; expected "continue" or "stop""#);
        assert_eq!(mode("mode", "transaction").unwrap(), Mode::Transaction);
        assert_eq!(on_error(None).unwrap(), OnError::Continue);
        assert!(mode("mode", "Pipeline").is_err(), "names are case-sensitive, as before");
    }
}
