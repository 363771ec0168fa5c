//! `pipelab doctor --listen ADDR --upstream URL [--rtt MS] [--json] [--ui ADDR]`: point
//! an application at the listen address instead of Redis and see its round
//! trips, its pipeline depth and the pipelines it missed (`pipelab_server::doctor`).
//!
//! Output: without `--json`, a line a second on stdout (as `redis-cli
//! --stat`) and the summary in words at the end; with `--json`, one JSON
//! object per line on stdout: a `missed_pipeline` record when a run ends, an
//! `undecoded` record when a connection's traffic cannot be followed, and a
//! final `summary`. With `--ui ADDR`, also a page and its JSON API
//! (`pipelab_doctor::page`). The end is SIGINT or SIGTERM, or with `--exit-when-idle`
//! the moment the last client leaves (after at least one came). Exit 0 then;
//! 2 for bad options; 1 if the listen address cannot be bound.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pipelab_doctor::report::Event;
use pipelab_doctor::{self as doctor, live, Doctor, KeyTable, Rule};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    ends: super::proxy::Ends,
    /// RTT that savings are computed at, in ms (your application's RTT to its Redis).
    #[arg(long, default_value_t = 0.5, value_parser = pipelab_http::config::rtt_ms, allow_negative_numbers = true)]
    rtt: f64,
    /// Round-trip time to add to the traffic, in ms, as `pipelab proxy --rtt` (0 to 1000).
    #[arg(long, default_value_t = 0.0, value_parser = pipelab_http::config::rtt_ms, allow_negative_numbers = true)]
    add_rtt: f64,
    /// Longest time between a reply and the next command for the two to
    /// stay in one missed pipeline, in µs: a longer pause means the client
    /// was idle. Whether a command could have been pipelined is decided on
    /// evidence (it carries no bytes of an earlier reply); this bound is
    /// only the secondary signal, and sits far above a busy machine's stalls.
    #[arg(long, default_value_t = doctor::missed::THINK_TIME_US)]
    think_time_us: u64,
    /// Fewest commands in a reported missed pipeline (at least 2).
    #[arg(long, default_value_t = doctor::missed::MIN_RUN, value_parser = clap::value_parser!(u64).range(2..))]
    min_run: u64,
    /// Most client connections open at once; more are closed at once (counted as refused).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: u64,
    /// JSON lines on stdout instead of the live view.
    #[arg(long)]
    json: bool,
    /// End (with the summary) when the last client leaves, after the first came.
    #[arg(long)]
    exit_when_idle: bool,
    /// Serve the doctor's page (timelines, depth histogram, missed pipelines)
    /// and its JSON API (`/api/doctor/…`) on this address, e.g. 127.0.0.1:8081.
    #[arg(long, value_name = "ADDR")]
    ui: Option<std::net::SocketAddr>,
    /// The playground that "open in playground" links to: a `pipelab
    /// serve`'s address (`http://HOST:PORT/`). Default: where `pipelab
    /// serve` listens by the same environment (`PIPELAB_LISTEN`, else
    /// 127.0.0.1:8080).
    #[arg(long, env = "PIPELAB_PLAYGROUND_URL", value_name = "URL", value_parser = playground_url)]
    playground_url: Option<String>,
    /// Runtime threads (1: a current-thread runtime, relaying, decoding and
    /// the page on one thread). bench/doctor.sh measured no gain from 1 on
    /// a loaded 2-core machine (bench/README.md), hence 2, as the other subcommands.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    threads: u64,
    /// For `--ui`: serve the page's files (`doctor.html` and its assets, a
    /// built web/dist: scripts/build-web.sh) from this directory instead of
    /// the page built into the binary.
    #[arg(long, env = "PIPELAB_WEB_DIR", value_name = "DIR")]
    web_dir: Option<std::path::PathBuf>,
}

/// `--playground-url`: an http(s) URL, or a path the page resolves
/// against its own address (`./`, `/`).
fn playground_url(s: &str) -> Result<String, String> {
    let absolute = url::Url::parse(s).ok().is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
    if absolute || s.starts_with('/') || s.starts_with("./") {
        Ok(s.to_string())
    } else {
        Err(format!("{s:?} is not an http(s) URL such as http://127.0.0.1:8080/ (a pipelab serve's address) or a path such as ./"))
    }
}

/// Where `pipelab serve` listens by this environment (`PIPELAB_LISTEN`,
/// as `pipelab healthcheck` reads it), so that a doctor started beside it
/// links to it; `http://127.0.0.1:8080/`, serve's default, otherwise.
fn default_playground_url() -> String {
    super::healthcheck::listen_url(std::env::var("PIPELAB_LISTEN").ok().as_deref(), "/").unwrap_or_else(|_| "http://127.0.0.1:8080/".into())
}

fn print_event(e: &Event) {
    let mut out = std::io::stdout().lock();
    if serde_json::to_writer(&mut out, e).is_ok() {
        let _ = writeln!(out);
        let _ = out.flush();
    }
}

/// Runs the doctor on a runtime of `--threads` threads (current-thread for 1).
pub fn run(args: Args) -> ExitCode {
    let built = match args.threads {
        1 => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        n => tokio::runtime::Builder::new_multi_thread().worker_threads(n as usize).enable_all().build(),
    };
    match built {
        Ok(rt) => rt.block_on(main(args)),
        Err(e) => {
            eprintln!("pipelab doctor: cannot start the async runtime: {e}");
            ExitCode::from(2)
        }
    }
}

pub async fn main(args: Args) -> ExitCode {
    let (upstream, link) = match super::proxy::upstream_and_link("doctor", &args.ends.upstream, "--add-rtt", args.add_rtt, None) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let connect_timeout = Duration::from_millis(args.ends.connect_timeout_ms);
    let listener = match super::proxy::bind("doctor", &args.ends.listen).await {
        Ok(l) => l,
        Err(code) => return code,
    };
    let keys = match doctor::key_table(&upstream, connect_timeout).await {
        Ok(k) => k,
        Err(e) => {
            eprintln!("pipelab doctor: no key table from {upstream} (commands are grouped by name only): {e}");
            KeyTable::default()
        }
    };
    let rule = Rule { think_time_us: args.think_time_us, min_run: args.min_run, rtt_ms: args.rtt };
    let sink: doctor::stats::Sink = if args.json { Box::new(print_event) } else { Box::new(|_| {}) };
    let doc = Arc::new(Doctor::new(rule, Arc::new(keys), args.max_connections as usize, sink));
    let local = listener.local_addr().map(|a| a.to_string()).unwrap_or(args.ends.listen.clone());
    eprintln!(
        "pipelab doctor: listening on {local}, forwarding to {upstream} (added RTT {} ms); savings at {} ms RTT, think time {} µs",
        args.add_rtt, args.rtt, args.think_time_us
    );
    let ui = match args.ui {
        Some(addr) => match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => {
                let playground = args.playground_url.clone().unwrap_or_else(default_playground_url);
                eprintln!(
                    "pipelab doctor: page on http://{}/; its \"open in playground\" goes to {playground} (--playground-url)",
                    l.local_addr().map(|a| a.to_string()).unwrap_or(addr.to_string())
                );
                if !addr.ip().is_loopback() {
                    eprintln!(
                        "pipelab doctor: warning: --ui {addr} is reachable from other machines, with no token: the page shows your \
                         application's key patterns, commands and timings; prefer --ui 127.0.0.1:PORT (and an SSH tunnel)"
                    );
                }
                let state = pipelab_doctor::page::UiState { doctor: doc.clone(), playground_url: playground, page: pipelab_http::page::Page::from_flag(args.web_dir.clone()) };
                Some(tokio::spawn(async move { axum::serve(l, pipelab_doctor::page::router(state)).await }))
            }
            Err(e) => {
                eprintln!("pipelab doctor: cannot listen on --ui {addr}: {e}");
                return ExitCode::from(1);
            }
        },
        None => None,
    };
    let server = tokio::spawn(doctor::serve(listener, upstream, connect_timeout, link, doc.clone()));
    let ticker = (!args.json).then(|| tokio::spawn(live_view(doc.clone())));
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pipelab doctor: cannot watch SIGTERM: {e}");
            return ExitCode::from(1);
        }
    };
    let idle = async {
        if args.exit_when_idle {
            doc.idle.notified().await
        } else {
            std::future::pending().await
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = idle => {}
    }
    server.abort();
    if let Some(u) = ui {
        u.abort();
    }
    if let Some(t) = ticker {
        t.abort();
    }
    let summary = doc.summary();
    if args.json {
        print_event(&Event::Summary(Box::new(summary)));
    } else {
        print!("{}", live::summary_text(&summary));
    }
    ExitCode::SUCCESS
}

/// A line a second, a header every [`live::HEADER_EVERY`] lines.
async fn live_view(doc: Arc<Doctor>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await;
    let mut prev = doc.live();
    let mut at = Instant::now();
    for n in 0u64.. {
        tick.tick().await;
        let now = doc.live();
        if n % live::HEADER_EVERY == 0 {
            println!("{}", live::header());
        }
        println!("{}", live::line(&prev, &now, at.elapsed().as_secs_f64()));
        prev = now;
        at = Instant::now();
    }
}
