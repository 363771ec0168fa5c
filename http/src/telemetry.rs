//! What an operator watches: Prometheus metrics at `/metrics` and one
//! structured log line per batch. Both see only counts, modes, outcomes and
//! durations — never keys, values or arguments, which may be private.
//!
//! Metric names (Prometheus text format, rendered by
//! `metrics-exporter-prometheus`):
//!
//! | name | type | labels | meaning |
//! |---|---|---|---|
//! | `pipelab_batches_total` | counter | `mode`, `outcome` | batches run; outcome `ok` (every command ok), `error_replies`, `unknown` (some outcome unknown), `aborted`/`watch_conflict` (transactions), `redis_unavailable`, `timeout`, `busy`, `invalid` |
//! | `pipelab_commands_total` | counter | `mode`, `status` | commands by status (`ok`, `error`, `not_sent`, `unknown`) |
//! | `pipelab_batch_duration_seconds` | histogram | `mode` | wall time of each batch run, connection included |
//! | `pipelab_redis_connection_failures_total` | counter | | batches that could not connect or finish the handshake |
//! | `pipelab_batches_in_flight` | gauge | | batches running now |
//! | `pipelab_redis_pool_idle` | gauge | | idle Redis connections kept for the next batches (set by `pipelab_engine::exec::pool`) |
//! | `pipelab_cluster_slot_map_reloads_total` | counter | `cause` | Redis Cluster slot maps read again (set by `pipelab_engine::cluster::reload`), by what made them stale: `moved`, `tryagain`, `clusterdown`, `replica` (a node answered READONLY), `connection` (a master's connection failed or timed out) |
//! | `pipelab_node_info` | gauge | `node` | 1, labelled with this node's id (`--node-id`) |
//! | `pipelab_node_draining` | gauge | | 1 once the node drains (after SIGTERM: `/readyz` answers 503) |
//! | `pipelab_sandbox_visitors_moved_total` | counter | | sandbox visitors who came with another node's cookie (the balancer moved them: their node is down or draining) and got a new Redis here |
//! | `pipelab_upstash_requests_total` | counter | `endpoint`, `class` | Upstash-compatible requests by endpoint family (`command`, `path`, `pipeline`, `multi_exec`, `subscribe`) and status class (`2xx`, `4xx`, `5xx`) |

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use metrics::{Counter, Gauge, Histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use pipelab_engine::exec::{Summary, TransactionOutcome, TransactionStatus};
use pipelab_model::Mode;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
static NEXT_BATCH_ID: AtomicU64 = AtomicU64::new(1);

/// Batch durations in seconds: 100 µs (loopback, one command) to 60 s.
const DURATION_BUCKETS: &[f64] = &[0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0];

/// How often histogram samples are folded into their buckets (the
/// exporter's own default upkeep period).
const METRICS_UPKEEP: std::time::Duration = std::time::Duration::from_secs(5);

/// Installs the process-wide metrics recorder (idempotent: tests build many routers).
pub fn install_metrics() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full("pipelab_batch_duration_seconds".into()), DURATION_BUCKETS)
            .expect("static, non-empty buckets")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (a test binary): keep rendering ours.
        let _ = metrics::set_global_recorder(recorder);
        // A histogram keeps every sample until upkeep folds it into the
        // buckets; `build_recorder` (unlike `install`) leaves upkeep to the
        // caller. Without it, a server nobody scraped grew by 16 bytes per
        // batch: +29 MB of RSS over 1.5M batches in `bench/load.sh`.
        let upkeep = handle.clone();
        let spawned = std::thread::Builder::new().name("pipelab-metrics-upkeep".into()).spawn(move || loop {
            std::thread::sleep(METRICS_UPKEEP);
            upkeep.run_upkeep();
        });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the metrics upkeep thread; histogram samples accumulate until /metrics is read");
        }
        // Listed from the start at 0, as docs/api.md#probes lists it: a failure
        // counter that appears only with the first failure cannot be
        // alerted on by its rate.
        metrics::counter!("pipelab_redis_connection_failures_total").increment(0);
        metrics::counter!("pipelab_session_expiries_total").increment(0);
        metrics::gauge!("pipelab_sessions_open").set(0.0);
        metrics::gauge!("pipelab_node_draining").set(0.0);
        handle
    })
}

/// The Prometheus text exposition of every metric so far.
pub fn render_metrics() -> String {
    let handle = install_metrics();
    // Set here rather than at install: the node id is set after the recorder is installed.
    metrics::gauge!("pipelab_node_info", "node" => pipelab_engine::node::id()).set(1.0);
    handle.render()
}

/// Batches running now (every [`BatchSpan`] not ended), for draining.
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Batches running now.
pub fn batches_running() -> usize {
    RUNNING.load(Ordering::Acquire)
}

/// How many modes there are ([`Mode::index`] is below it).
const MODES: usize = Mode::ALL.len();

/// Every `outcome` label of `pipelab_batches_total`.
const OUTCOMES: [&str; 10] =
    ["ok", "error_replies", "unknown", "aborted", "watch_conflict", "redis_unavailable", "timeout", "busy", "invalid", "cancelled"];
/// Every `status` label of `pipelab_commands_total`, in the order of `pipelab_engine::exec::Status`.
const STATUSES: [&str; 4] = ["ok", "error", "not_sent", "unknown"];

/// The metric handles a batch updates, each registered the first time it
/// is used (so `/metrics` lists only series that were used), then kept.
///
/// Why: `metrics::counter!(name, labels)` looks the series up in the
/// recorder's registry on every call (hashing the name and labels, a lock,
/// a label copy), six times for a single-command batch: a share of a
/// one-SET request's CPU that a profile shows.
/// A handle is an `Arc` to the series' atomic: updating it costs an atomic add.
struct Handles {
    in_flight: OnceLock<Gauge>,
    batches: [[OnceLock<Counter>; OUTCOMES.len()]; MODES],
    commands: [[OnceLock<Counter>; STATUSES.len()]; MODES],
    duration: [OnceLock<Histogram>; MODES],
}

static HANDLES: Handles = Handles {
    in_flight: OnceLock::new(),
    batches: [const { [const { OnceLock::new() }; OUTCOMES.len()] }; MODES],
    commands: [const { [const { OnceLock::new() }; STATUSES.len()] }; MODES],
    duration: [const { OnceLock::new() }; MODES],
};

fn in_flight() -> &'static Gauge {
    HANDLES.in_flight.get_or_init(|| metrics::gauge!("pipelab_batches_in_flight"))
}

fn batches_counter(mode: Mode, outcome: &'static str) -> Counter {
    let Some(i) = OUTCOMES.iter().position(|o| *o == outcome) else {
        return metrics::counter!("pipelab_batches_total", "mode" => mode.name(), "outcome" => outcome);
    };
    HANDLES.batches[mode.index()][i]
        .get_or_init(|| metrics::counter!("pipelab_batches_total", "mode" => mode.name(), "outcome" => OUTCOMES[i]))
        .clone()
}

/// One batch as the operator sees it: created when it starts, finished
/// with its report or its failure. Dropped unfinished (the client went
/// away), it still leaves the in-flight gauge and logs `cancelled`.
pub struct BatchSpan {
    id: u64,
    mode: Mode,
    commands: usize,
    started: std::time::Instant,
    done: bool,
}

impl BatchSpan {
    pub fn start(mode: Mode, commands: usize) -> Self {
        install_metrics();
        in_flight().increment(1.0);
        RUNNING.fetch_add(1, Ordering::AcqRel);
        BatchSpan { id: NEXT_BATCH_ID.fetch_add(1, Ordering::Relaxed), mode, commands, started: std::time::Instant::now(), done: false }
    }

    /// The executor returned a report (its summary and transaction outcome).
    pub fn finish(mut self, s: &Summary, transaction: Option<&TransactionOutcome>) {
        let mode = self.mode;
        for (i, n) in [s.ok, s.errors, s.not_sent, s.unknown].into_iter().enumerate() {
            if n > 0 {
                HANDLES.commands[mode.index()][i]
                    .get_or_init(|| {
                        metrics::counter!("pipelab_commands_total", "mode" => mode.name(), "status" => STATUSES[i])
                    })
                    .increment(n as u64);
            }
        }
        let outcome = match transaction.map(|t| t.status) {
            Some(TransactionStatus::Aborted) => "aborted",
            Some(TransactionStatus::WatchConflict) => "watch_conflict",
            _ if s.unknown > 0 => "unknown",
            _ if s.errors > 0 || s.not_sent > 0 => "error_replies",
            _ => "ok",
        };
        self.end(outcome, Some(s));
    }

    /// The batch did not run to a report: `outcome` is one of
    /// `redis_unavailable`, `timeout`, `busy`, `invalid`.
    pub fn fail(mut self, outcome: &'static str) {
        if outcome == "redis_unavailable" {
            metrics::counter!("pipelab_redis_connection_failures_total").increment(1);
        }
        self.end(outcome, None);
    }

    fn end(&mut self, outcome: &'static str, summary: Option<&Summary>) {
        self.done = true;
        let mode = self.mode.name();
        let elapsed = self.started.elapsed();
        in_flight().decrement(1.0);
        RUNNING.fetch_sub(1, Ordering::AcqRel);
        batches_counter(self.mode, outcome).increment(1);
        HANDLES.duration[self.mode.index()]
            .get_or_init(|| metrics::histogram!("pipelab_batch_duration_seconds", "mode" => mode))
            .record(elapsed.as_secs_f64());
        let (round_trips, errors, unknown) = summary.map_or((0, 0, 0), |s| (s.round_trips, s.errors, s.unknown));
        tracing::info!(
            batch_id = self.id,
            mode,
            commands = self.commands,
            outcome,
            errors,
            unknown,
            round_trips,
            duration_ms = duration_ms(elapsed),
            "batch"
        );
    }
}

fn duration_ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

impl Drop for BatchSpan {
    fn drop(&mut self) {
        if !self.done {
            self.end("cancelled", None);
        }
    }
}

/// Status classes of `pipelab_upstash_requests_total`.
const CLASSES: [&str; 3] = ["2xx", "4xx", "5xx"];
/// Endpoint families of `pipelab_upstash_requests_total` (the Upstash surface's endpoint families).
const FAMILIES: [&str; 5] = ["command", "path", "pipeline", "multi_exec", "subscribe"];

static UPSTASH: [[OnceLock<Counter>; CLASSES.len()]; FAMILIES.len()] =
    [const { [const { OnceLock::new() }; CLASSES.len()] }; FAMILIES.len()];

/// Counts one Upstash-compatible request of `endpoint` (a family name)
/// answered with `status`.
pub fn upstash_request(endpoint: &'static str, status: u16) {
    install_metrics();
    let class = match status {
        500.. => 2,
        400.. => 1,
        _ => 0,
    };
    match FAMILIES.iter().position(|f| *f == endpoint) {
        Some(i) => UPSTASH[i][class]
            .get_or_init(|| metrics::counter!("pipelab_upstash_requests_total", "endpoint" => FAMILIES[i], "class" => CLASSES[class]))
            .increment(1),
        None => metrics::counter!("pipelab_upstash_requests_total", "endpoint" => endpoint, "class" => CLASSES[class]).increment(1),
    }
}

/// Log format of `pipelab serve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (for log shippers).
    Json,
}

/// A start-up line on stdout that scripts wait for ("listening on …"):
/// as it is, or with JSON logs as a JSON object of its own, so that
/// everything a log shipper reads is JSON.
pub fn banner(format: LogFormat, text: &str) {
    match format {
        LogFormat::Text => println!("{text}"),
        LogFormat::Json => println!("{}", serde_json::json!({"level": "INFO", "target": "pipelab", "message": text})),
    }
}

/// Why pipelab stops, on stderr: the text itself, or one JSON object.
pub fn fatal(format: LogFormat, text: &str) {
    match format {
        LogFormat::Text => eprintln!("{text}"),
        LogFormat::Json => eprintln!("{}", serde_json::json!({"level": "ERROR", "target": "pipelab", "message": text})),
    }
}

/// Logs go to stderr; the level comes from `PIPELAB_LOG` (e.g. `info`,
/// `pipelab=debug`), else from `RUST_LOG` as the ecosystem sets it (Docker
/// Compose files, systemd units), default `info`.
pub fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("PIPELAB_LOG")
        .or_else(|_| EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| EnvFilter::new("info"));
    use std::io::IsTerminal;
    // Colours only for a person at a terminal, never in a file or a log shipper.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A log line that cannot be written (stderr closed: `serve 2>&1 |
        // head`) is dropped; reporting it would print to that same stderr,
        // and a failed print panics, which stopped the server.
        .log_internal_errors(false)
        .with_ansi(std::io::stderr().is_terminal());
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

