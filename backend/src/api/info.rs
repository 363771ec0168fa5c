//! `GET /api/v1/info`: which Redis the server runs batches against, and the
//! limits and defaults a client should know before sending one.

use std::time::Duration;

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use pipelab_http::caller::Caller;
use super::run::command;
use super::validate::{Defaults, DEFAULTS};
use pipelab_http::error::ApiError;
use super::{AppState, RedisSource};
use pipelab_engine::commands::server::{self, info_field};
use pipelab_engine::commands::RefusedCommand;
use pipelab_http::config::Limits;

/// Server facts.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "version": "0.1.0",
    "redis": {"target": "redis://127.0.0.1:6379", "source": "configured", "reachable": true,
        "version": "7.0.15", "mode": "standalone", "maxmemory": 268435456,
        "maxmemory_policy": "noeviction", "error": null},
    "limits": {"max_body_bytes": 33554432, "max_commands": 200000, "max_arg_bytes": 8388608,
        "max_reply_bytes": 67108864, "batch_timeout_ms": 30000, "connect_timeout_ms": 2000,
        "max_concurrent_batches": 256, "max_watch_keys": 1000, "max_sweep_points": 16,
        "session_idle_ms": 60000, "max_sessions": 100, "max_sessions_per_client": 10, "max_batches_per_client": 64,
        "max_blocking_per_client": 8, "max_response_memory": 536870912, "shared_connections": true},
    "defaults": {"mode": "pipeline", "batch_size": 1000, "on_error": "continue", "simulated_rtt_ms": 0.0,
        "resp3": false, "max_simulated_rtt_ms": 1000.0, "min_simulated_bandwidth_mbps": 0.01,
        "max_simulated_bandwidth_mbps": 100000.0},
    "refused": [{"command": "SELECT", "reason": "connection", "modes": ["sequential", "pipeline", "transaction", "auto"],
        "message": "SELECT is refused: it changes the connection itself, which pipelab sets up for every batch and session (choose the database in the server's Redis URL, redis://host:port/DB)"}]
}))]
pub struct InfoResponse {
    /// pipelab's version.
    #[schema(example = "0.1.0")]
    pub version: &'static str,
    pub redis: RedisInfo,
    pub limits: Limits,
    pub defaults: Defaults,
    /// The commands a batch from this caller is refused for whatever their
    /// arguments (400 `refused_command`), sorted by name, as the server's
    /// command table and the caller's token decide (`Table::refused_commands`):
    /// a client can flag them before sending. Refusals that depend on the
    /// arguments (a blocking command with timeout 0) are not listed; the
    /// batch endpoints still check them. In the sandbox: the visitor's.
    pub refused: Vec<RefusedCommand>,
    /// Present with `--sandbox`: each visitor's keys are private and expire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxInfo>,
    /// Present with `--doctor-listen`: an application pointed at `listen`
    /// is watched live (`GET /api/v1/doctor/summary`, docs/doctor.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doctor: Option<DoctorInfo>,
}

/// The doctor of `pipelab serve --doctor-listen` (docs/doctor.md).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({"listen": "127.0.0.1:6380", "rtt_ms": 0.5}))]
pub struct DoctorInfo {
    /// The address an application connects to instead of Redis (`host:port`).
    pub listen: String,
    /// The RTT its savings are computed at unless a request names one (`--doctor-rtt`), ms.
    pub rtt_ms: f64,
}

/// The sandbox's limits (`pipelab serve --sandbox`, docs/sandbox.md).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"idle_s": 86400, "hibernate_after_s": 120, "max_bytes": 16777216, "visitor_batches": 4, "visitor_sessions": 2, "token": "5f0c…"}))]
pub struct SandboxInfo {
    /// Seconds without a request after which a visitor's keys, saved or
    /// not, are gone (`--sandbox-idle`).
    pub idle_s: u64,
    /// Seconds without a request after which a visitor's keys are saved
    /// to disk and their Redis stopped, started again on their next
    /// request (`--sandbox-hibernate-after`).
    pub hibernate_after_s: u64,
    /// What became of the visitor's keys while they were away, when they
    /// must be told (removed to keep the node's disk budget, or they would
    /// not load); absent otherwise. Also in the `Pipelab-Sandbox-Notice` header.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// The visitor's Redis's `maxmemory` (`--sandbox-max-bytes`).
    pub max_bytes: u64,
    /// Most batches a visitor runs at once (`--sandbox-visitor-batches`).
    pub visitor_batches: usize,
    /// Most sessions a visitor keeps open (`--sandbox-visitor-sessions`).
    pub visitor_sessions: usize,
    /// The visitor's id, as the cookie holds it: the token for clients
    /// that keep no cookie (`Authorization: Bearer`, e.g. an Upstash SDK's
    /// token), naming this visitor's Redis for as long as it lives.
    pub token: String,
    /// What confines each visitor's redis-server, e.g. `landlock abi 7 +
    /// seccomp + no_new_privs` (docs/sandbox.md, the jail).
    pub jail: String,
}

/// The Redis server behind the API. `reachable: false` with `error` when it
/// does not answer right now (this endpoint still answers 200).
#[derive(Debug, Serialize, ToSchema)]
pub struct RedisInfo {
    /// The target, password never shown, e.g. `redis://127.0.0.1:6379` or `unix:///tmp/…/redis.sock`.
    pub target: String,
    /// `embedded`: a redis-server started by `pipelab serve`; `configured`:
    /// --redis / REDIS_URL; `sandbox`: the visitor's own redis-server.
    #[schema(example = "embedded")]
    pub source: &'static str,
    pub reachable: bool,
    /// The server's name from INFO server: `redis`, `valkey` or `redict`.
    #[schema(example = "valkey")]
    pub server: Option<String>,
    /// The server's own version from INFO server (`valkey_version` for
    /// Valkey, `redict_version` for Redict, else `redis_version`).
    #[schema(example = "9.1.2")]
    pub version: Option<String>,
    /// The mode from INFO server (`redis_mode`, `server_mode` or
    /// `redict_mode`): standalone, cluster or sentinel.
    #[schema(example = "standalone")]
    pub mode: Option<String>,
    /// `maxmemory` from INFO memory (bytes; 0: no cap). The embedded Redis
    /// has `--embedded-maxmemory` (default 256 MiB); past it writes get
    /// Redis's OOM error (or evict, by the policy).
    #[schema(example = 268435456)]
    pub maxmemory: Option<u64>,
    /// `maxmemory_policy` from INFO memory (`noeviction`, `allkeys-lru`, ...).
    #[schema(example = "noeviction")]
    pub maxmemory_policy: Option<String>,
    pub error: Option<String>,
    /// Redis Cluster only (`mode: cluster`): the masters batches are split
    /// across, each with its hash-slot ranges; omitted for a single Redis.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<pipelab_engine::cluster::NodeInfo>,
}

/// Redis version and mode, the server's limits and defaults.
#[utoipa::path(
    get,
    path = "/api/v1/info",
    tag = "server",
    responses(
        (status = 200, description = "Server facts", body = InfoResponse),
        (status = 503, description = "In the sandbox: no Redis could be started for the visitor", body = pipelab_http::error::ErrorBody),
    )
)]
pub async fn info(State(state): State<AppState>, caller: Caller) -> Result<Json<InfoResponse>, ApiError> {
    let wait = state.http.limits.connect_timeout().min(Duration::from_secs(2));
    let on = state.backend_to_look(&caller).await?;
    // INFO's default sections (server and memory among them): one round
    // trip, and a Redis older than 7.0 takes no list of sections. The
    // command table at the same time, within the same wait (read once per
    // server; the built-in table while Redis does not answer).
    let (reply, table) = tokio::join!(command(on.probe(), &[b"INFO"], wait), on.probe().commands_loaded(wait));
    let refused = table.refused_commands(on.access, state.allow);
    let (reachable, text, error) = match reply {
        Ok(resp::Value::Bulk(text) | resp::Value::Verbatim { text, .. }) => {
            (true, String::from_utf8_lossy(&text).into_owned(), None)
        }
        // A cluster: INFO went to every master (its request-policy tip); the first one's.
        Ok(resp::Value::Array(texts)) if matches!(texts.first(), Some(resp::Value::Bulk(_) | resp::Value::Verbatim { .. })) => {
            let (resp::Value::Bulk(text) | resp::Value::Verbatim { text, .. }) = &texts[0] else { unreachable!("matched") };
            (true, String::from_utf8_lossy(text).into_owned(), None)
        }
        Ok(other) => (true, String::new(), Some(format!("INFO: {}", other.display()))),
        Err(e) => (false, String::new(), Some(e.body.message)),
    };
    let (target, source) = match state.http.engine.shared() {
        Some(shared) => (
            shared.target.to_string(),
            match shared.source {
                RedisSource::Embedded => "embedded",
                RedisSource::Configured => "configured",
            },
        ),
        None => ("a redis-server of your own".to_string(), "sandbox"),
    };
    Ok(Json(InfoResponse {
        version: env!("CARGO_PKG_VERSION"),
        redis: RedisInfo {
            target,
            source,
            reachable,
            server: (!text.is_empty()).then(|| server::name(&text).to_string()),
            version: server::version(&text).map(str::to_string),
            mode: server::mode(&text).map(str::to_string),
            maxmemory: info_field(&text, "maxmemory").and_then(|v| v.parse().ok()),
            maxmemory_policy: info_field(&text, "maxmemory_policy").map(str::to_string),
            error,
            nodes: on.pool.cluster_nodes().unwrap_or_default(),
        },
        limits: state.http.limits.clone(),
        defaults: DEFAULTS,
        refused,
        sandbox: state.http.engine.sandbox().map(|s| SandboxInfo {
            idle_s: s.settings().idle.as_secs(),
            hibernate_after_s: s.settings().hibernate_after.as_secs(),
            notice: caller.visitor.as_ref().and_then(|id| s.visitor(id)?.notice()),
            max_bytes: s.settings().max_bytes,
            visitor_batches: s.settings().visitor_batches,
            visitor_sessions: s.settings().visitor_sessions,
            token: caller.visitor.as_ref().map(|id| id.as_str().to_string()).unwrap_or_default(),
            jail: s.jail().describe(),
        }),
        doctor: state.doctor.as_ref().map(|(d, _)| d.clone()),
    }))
}

