//! Options several subcommands take, defined once: where Redis is
//! (`--redis`, `--timeout`: `pipelab run`, `compare`, `sweep`) and how a
//! batch is sent (`--batch-size`, `--rtt`, `--on-error`, `--resp3`,
//! `--watch`: `pipelab run`, `compare`), named as the API's fields are
//! (`batch_size`, `simulated_rtt_ms`, `on_error`, `resp3`, `watch`). Mode
//! and on-error names are the executor's enums' own (`Mode`, `OnError`:
//! clap `ValueEnum`, the same names as in the API's JSON).

use std::time::Duration;

use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{self, ExecOptions, OnError, Plan};
use pipelab_model::Mode;
use pipelab_engine::lab::Direct;

use super::input::at_least_one;
use pipelab_http::config::rtt_ms;

/// Where Redis is, and how long a reply may take.
#[derive(clap::Args)]
pub struct RedisArgs {
    /// Redis URL: redis://[user:pass@]host:port[/db], rediss://…, unix:///path.sock.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis: String,
    /// Longest wait for a reply, in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub timeout: f64,
}

impl RedisArgs {
    /// The target and the executor's options (`Direct` runs each batch on
    /// a new connection with them). Errors name the option.
    pub fn runner(&self) -> Result<Direct, String> {
        let target = RedisTarget::parse(&self.redis).map_err(|e| format!("--redis: {e}"))?;
        if !(self.timeout > 0.0 && self.timeout.is_finite()) {
            return Err("--timeout must be a positive number of seconds".into());
        }
        let opts = ExecOptions { read_timeout: Duration::from_secs_f64(self.timeout), ..ExecOptions::default() };
        Ok(Direct { target, opts })
    }
}

/// How a batch is sent, but for its mode.
#[derive(clap::Args)]
pub struct PlanArgs {
    /// Commands per pipeline chunk (one write, one round trip each; API:
    /// `batch_size`). For a bulk load, at least the number of commands: one
    /// round trip, streamed as `redis-cli --pipe` streams it.
    #[arg(long, default_value_t = exec::DEFAULT_BATCH_SIZE as u64, value_parser = at_least_one)]
    pub batch_size: u64,
    /// Simulated round-trip time to add, in ms (0 to 1000, fractional; API: `simulated_rtt_ms`).
    #[arg(long, default_value_t = 0.0, value_parser = rtt_ms, allow_negative_numbers = true)]
    pub rtt: f64,
    /// Simulated bandwidth in each direction, in Mbit/s (0.01 to 100000;
    /// default unlimited; API: `simulated_bandwidth_mbps`).
    #[arg(long, value_parser = super::input::bandwidth_mbps)]
    pub bandwidth: Option<f64>,
    /// After a chunk with an error reply: keep going, or send nothing more.
    #[arg(long, value_enum, default_value_t = OnError::Continue)]
    pub on_error: OnError,
    /// Switch the connection to RESP3 (HELLO 3).
    #[arg(long)]
    pub resp3: bool,
    /// Key to WATCH before MULTI, in transaction mode (repeatable).
    #[arg(long)]
    pub watch: Vec<String>,
    /// Auto mode: simulated concurrent callers, 1 to 1000 (API: `clients`).
    #[arg(long, default_value_t = exec::auto::DEFAULT_CLIENTS as u64, value_parser = clap::value_parser!(u64).range(1..=exec::auto::MAX_CLIENTS as u64))]
    pub clients: u64,
    /// Auto mode: µs a pending command waits for others to join its write
    /// (0: one event-loop tick; API: `window_us`).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=exec::auto::MAX_WINDOW_US))]
    pub window_us: u64,
    /// Measure the server's work too (`INFO` before and after, on a side
    /// connection; API: `server_stats`).
    #[arg(long)]
    pub server_stats: bool,
}

/// The simulated network of a summary, as the CLI prints it: `simulated
/// RTT: 0.2 ms (achieved 0.214 ms), bandwidth: 100 Mbit/s`.
pub fn network_text(rtt_ms: f64, achieved_rtt_ms: Option<f64>, bandwidth_mbps: Option<f64>) -> String {
    let mut text = format!("simulated RTT: {rtt_ms} ms");
    if let Some(a) = achieved_rtt_ms {
        text += &format!(" (achieved {a:.3} ms)");
    }
    if let Some(b) = bandwidth_mbps {
        text += &format!(", bandwidth: {b} Mbit/s");
    }
    text
}

impl PlanArgs {
    pub fn plan(&self, mode: Mode) -> Plan {
        Plan {
            mode,
            batch_size: self.batch_size as usize,
            on_error: self.on_error,
            simulated_rtt_ms: self.rtt,
            simulated_bandwidth_mbps: self.bandwidth,
            resp3: self.resp3,
            watch: self.watch.iter().map(|k| k.as_bytes().to_vec()).collect(),
            clients: self.clients as usize,
            window_us: self.window_us,
            server_stats: self.server_stats,
            ..Plan::new(mode)
        }
    }
}
