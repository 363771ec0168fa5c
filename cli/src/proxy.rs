//! `pipelab proxy --listen ADDR --upstream URL --rtt MS [--bandwidth MBPS]`:
//! the delay line of `simulated_rtt_ms` (and `simulated_bandwidth_mbps`) as
//! a standalone TCP proxy, so that any client (redis-cli, redis-benchmark,
//! your application) can feel a given RTT and bandwidth.
//!
//! Bytes are relayed untouched (the client does its own AUTH/SELECT); with a
//! `rediss://` upstream the proxy speaks TLS to Redis and plain TCP to clients.

use std::process::ExitCode;
use std::time::Duration;

use pipelab_engine::conn::{connect_stream, RedisTarget};
use pipelab_engine::delay;

/// Where a proxy listens and forwards to (`pipelab proxy`, `pipelab doctor`).
#[derive(clap::Args)]
pub struct Ends {
    /// Address to listen on (the client connects here instead of Redis).
    #[arg(long, default_value = "127.0.0.1:6380")]
    pub listen: String,
    /// Redis to forward to (defaults to REDIS_URL, then redis://127.0.0.1:6379).
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub upstream: String,
    /// Timeout for connecting to the upstream, in ms.
    #[arg(long, default_value_t = 5000)]
    pub connect_timeout_ms: u64,
}

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    ends: Ends,
    /// Round-trip time to add, in ms (0 to 1000, fractional): RTT/2 each way.
    #[arg(long, default_value_t = 0.0, value_parser = pipelab_http::config::rtt_ms, allow_negative_numbers = true)]
    rtt: f64,
    /// Bandwidth of the simulated link in each direction, in Mbit/s (0.01 to
    /// 100000; default unlimited).
    #[arg(long, value_parser = super::input::bandwidth_mbps)]
    bandwidth: Option<f64>,
}

/// `--upstream URL`, the RTT and bandwidth to simulate, as `pipelab proxy`
/// and `pipelab doctor` take them (`cmd` and `rtt_flag` name them in
/// errors): the target and the link, or exit status 2 after saying what is wrong.
pub fn upstream_and_link(cmd: &str, url: &str, rtt_flag: &str, rtt_ms: f64, mbps: Option<f64>) -> Result<(RedisTarget, delay::Link), ExitCode> {
    let upstream = RedisTarget::parse(url).map_err(|e| {
        eprintln!("pipelab {cmd}: --upstream: {e}");
        ExitCode::from(2)
    })?;
    let link = delay::Link::new(rtt_ms, mbps).map_err(|e| {
        eprintln!("pipelab {cmd}: {rtt_flag}: {e}");
        ExitCode::from(2)
    })?;
    Ok((upstream, link))
}

/// Binds `--listen`, or exit status 1 after saying why not.
pub async fn bind(cmd: &str, addr: &str) -> Result<tokio::net::TcpListener, ExitCode> {
    tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        eprintln!("pipelab {cmd}: cannot listen on {addr}: {e}");
        ExitCode::from(1)
    })
}

pub async fn main(args: Args) -> ExitCode {
    let (upstream, link) = match upstream_and_link("proxy", &args.ends.upstream, "--rtt", args.rtt, args.bandwidth) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let listener = match bind("proxy", &args.ends.listen).await {
        Ok(l) => l,
        Err(code) => return code,
    };
    let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(args.ends.listen.clone());
    let bandwidth = args.bandwidth.map(|b| format!(", {b} Mbit/s each way")).unwrap_or_default();
    eprintln!("pipelab proxy: listening on {local}, forwarding to {upstream} with {} ms added RTT{bandwidth}", args.rtt);
    let connect_timeout = Duration::from_millis(args.ends.connect_timeout_ms);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = tokio::signal::ctrl_c() => return ExitCode::SUCCESS,
        };
        let (client, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                eprintln!("pipelab proxy: accept: {e}");
                continue;
            }
        };
        let _ = client.set_nodelay(true);
        let upstream = upstream.clone();
        tokio::spawn(async move {
            match connect_stream(&upstream, connect_timeout).await {
                Ok(server) => {
                    if let Err(e) = delay::relay(client, server, link).await {
                        eprintln!("pipelab proxy: {peer}: {e}");
                    }
                }
                // Dropping `client` closes it: the client sees the refusal at once.
                Err(e) => eprintln!("pipelab proxy: {peer}: {e}"),
            }
        });
    }
}
