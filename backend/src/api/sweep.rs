//! `POST /api/v1/sweep`: one command template, `total` copies with `{i}`
//! replaced by the index, pipelined at each of several batch sizes: how
//! commands/s grows with the batch size at a given RTT.
//!
//! The request and the server's limits are checked here; the runs, the
//! report and the clean-up of the keys the sweep created are
//! [`pipelab_engine::lab::sweep`]'s (`pipelab sweep` runs the same).

use axum::extract::{FromRequest, Request};
use axum::Json;
use serde::Deserialize;
use utoipa::ToSchema;

use super::arg::ArgBytes;
use pipelab_http::caller::Caller;
use pipelab_http::error::{ApiCode, ApiError, BatchErrors};
use super::extract::ApiJson;
use super::refuse::Rules;
use super::run::OnBackend;
use super::schema;
use super::validate::{self, min_round_trips};
use super::AppState;
use pipelab_engine::exec::{Argv, Commands};
use pipelab_model::Mode;
use pipelab_engine::lab::sweep::{SweepReport, SweepSpec};

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
    /// Simulated bandwidth of the link in each direction, in Mbit/s, 0.01 to
    /// 100000 (fractions allowed). Default: unlimited. Each direction sends
    /// its bytes one after another at this rate, besides the RTT.
    #[schema(minimum = 0.01, maximum = 100000, example = 100)]
    pub simulated_bandwidth_mbps: Option<f64>,
    /// Runs per batch size, 1 to 10 (default 3); each point is its size's
    /// median run. A size stops repeating once its runs took 1 s together,
    /// or when the client's command rate limit has no room for another run
    /// (only the first run of each size is counted before the sweep starts).
    #[schema(minimum = 1, maximum = 10, example = 3)]
    pub repeats: Option<i64>,
}

/// Run a command template at several pipeline batch sizes.
///
/// Each batch size is up to `repeats` pipeline-mode runs of `total`
/// commands, in the order given; its point is the median run. The model
/// beside them is fitted on the runs that were not mostly round trips. The keys the sweep created are deleted
/// afterwards, even when a run failed.
#[utoipa::path(post, path = "/api/v1/sweep", tag = "batches", request_body = SweepRequest, responses(
    (status = 200, description = "Throughput per batch size", body = SweepReport),
    BatchErrors,
))]
pub async fn sweep(PreparedSweep { spec, runner }: PreparedSweep) -> Result<Json<SweepReport>, ApiError> {
    // If the client leaves mid-sweep, this handler is dropped with the
    // sweep in it, whose clean-up then deletes the keys in a task of its own.
    Ok(Json(pipelab_engine::lab::sweep::sweep(&runner, &spec).await?))
}

/// A [`SweepRequest`] checked against the server's limits and the
/// caller's rules, its first run of each batch size taken from the rate
/// limit: the extractor of `POST /sweep`.
pub struct PreparedSweep {
    spec: SweepSpec,
    runner: Metered,
}

/// Rejections: the body's ([`ApiJson`]), then the 4xx of a bad field or a
/// refused command, or the rate limit's 429.
impl FromRequest<AppState> for PreparedSweep {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let (caller, ApiJson(req)) = Caller::with_body(req, state).await?;
        prepare(state, caller, req).await
    }
}

async fn prepare(state: &AppState, caller: Caller, req: SweepRequest) -> Result<PreparedSweep, ApiError> {
    let limits = &state.http.limits;
    let template = req
        .command
        .into_iter()
        .enumerate()
        .map(|(j, a)| validate::argument(a, &format!("command[{j}]"), limits))
        .collect::<Result<Argv, _>>()?;
    let rtt = validate::rtt(req.simulated_rtt_ms)?;
    let mut spec = SweepSpec::new(template, req.total, &req.batch_sizes, rtt)?;
    spec.simulated_bandwidth_mbps = validate::bandwidth(req.simulated_bandwidth_mbps)?;
    if let Some(r) = req.repeats {
        spec = spec.with_repeats(r)?;
    }
    let on = state.backend(&caller).await?;
    let rules = Rules::of(state, &on).await;
    if let Some(reason) = rules.refusal(Commands::from(vec![spec.template.clone()]).get(0), Mode::Pipeline) {
        return Err(ApiError::field(ApiCode::RefusedCommand, "command", reason));
    }
    if spec.total > limits.max_commands as u64 {
        return Err(ApiError::field(
            ApiCode::TooManyCommands,
            "total",
            format!(
                "{} is over the server's limit of {} commands per batch",
                spec.total, limits.max_commands
            ),
        ));
    }
    if spec.batch_sizes.len() > limits.max_sweep_points {
        return Err(ApiError::field(
            ApiCode::InvalidField,
            "batch_sizes",
            format!(
                "{} entries, over the server's limit of {}",
                spec.batch_sizes.len(),
                limits.max_sweep_points
            ),
        ));
    }
    for (k, &b) in spec.batch_sizes.iter().enumerate() {
        let trips = min_round_trips(Mode::Pipeline, spec.total as usize, b, 1);
        let ms = trips as f64 * rtt;
        if ms > limits.batch_timeout_ms as f64 {
            return Err(ApiError::field(
                ApiCode::InvalidRtt,
                "simulated_rtt_ms",
                format!(
                    "batch_sizes[{k}] = {b} needs {trips} round trips × {rtt} ms = {ms:.0} ms, over \
                     the batch timeout of {} ms",
                    limits.batch_timeout_ms
                ),
            ));
        }
    }
    // Each batch size runs `total` commands once; its repeats are taken
    // from the rate limit as they run, if there is room (`Metered`).
    let commands = spec.total as usize * spec.batch_sizes.len();
    pipelab_http::rate::take_commands(&state.http, caller.client.as_ref(), commands)?;
    Ok(PreparedSweep { spec, runner: Metered { on: OnBackend { state: state.clone(), on }, client: caller.client } })
}


/// The API as the sweep's runner: [`OnBackend`], with each repeat of a
/// batch size taken from the client's command rate limit if it has room
/// (the sandbox's burst of 100,000 covers lesson 3's five sizes of 10,000
/// twice, not three times): a repeat left out leaves fewer `runs_us`,
/// never a refused sweep.
#[derive(Clone)]
struct Metered {
    on: OnBackend,
    client: Option<pipelab_http::rate::Client>,
}

impl pipelab_engine::lab::Runner for Metered {
    type Error = ApiError;

    fn run(&self, batch: &pipelab_engine::exec::Batch) -> impl std::future::Future<Output = Result<pipelab_engine::exec::Report, ApiError>> + Send {
        self.on.run(batch)
    }

    async fn command(&self, argv: &[&[u8]]) -> Result<Option<resp::Value>, ApiError> {
        self.on.command(argv).await
    }

    fn batch_timeout(&self) -> std::time::Duration {
        self.on.batch_timeout()
    }

    async fn commands(&self) -> std::sync::Arc<pipelab_engine::commands::Table> {
        self.on.commands().await
    }

    fn may_repeat(&self, commands: u64) -> bool {
        pipelab_http::rate::take_commands_if_room(&self.on.state.http, self.client.as_ref(), commands as usize)
    }
}
