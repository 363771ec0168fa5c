//! `pipelab serve`: the REST API and the web playground.
//!
//! Without --redis / REDIS_URL it starts its own redis-server (see
//! [`crate::embedded`]) and stops it on exit, Ctrl-C and SIGTERM included.
//! Shutdown stops accepting connections and lets running batches finish
//! for up to `--shutdown-grace-ms`, then exits.

use std::process::ExitCode;
use std::time::Duration;

use crate::api::{self, AppState, RedisSource};
use crate::config::ServeConfig;
use crate::embedded::Supervised;
use pipelab::conn::RedisTarget;

/// Run the server until Ctrl-C or SIGTERM. Exit status 0 after a clean
/// shutdown; 1 if it could not start (port in use, no redis-server, bad URL).
pub fn main(cfg: ServeConfig) -> ExitCode {
    crate::telemetry::init_logging(cfg.log_format);
    crate::telemetry::install_metrics();

    // Its own supervisor thread starts it, and restarts it should it die.
    let (target, source, embedded) = match &cfg.redis {
        Some(url) => match RedisTarget::parse(url) {
            Ok(t) => (t, RedisSource::Configured, None),
            Err(e) => {
                eprintln!("pipelab serve: --redis / REDIS_URL: {e}");
                return ExitCode::from(2);
            }
        },
        None => match Supervised::start(&cfg.redis_server) {
            Ok(child) => {
                let target = RedisTarget::parse(child.url()).expect("a unix:// URL of our own");
                tracing::info!(socket = %child.socket().display(), pid = child.pid(), "started redis-server");
                (target, RedisSource::Embedded, Some(child))
            }
            Err(e) => {
                eprintln!("pipelab serve: {e}");
                return ExitCode::from(1);
            }
        },
    };

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pipelab serve: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(serve(cfg, target, source));
    // Requests still running after the drain period are abandoned here.
    runtime.shutdown_timeout(Duration::from_millis(100));
    if let Some(child) = embedded {
        child.stop();
        tracing::info!("stopped redis-server");
    }
    code
}

async fn serve(cfg: ServeConfig, target: RedisTarget, source: RedisSource) -> ExitCode {
    let listener = match tokio::net::TcpListener::bind(cfg.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("pipelab serve: cannot listen on {}: {e} (choose another with --listen / PIPELAB_LISTEN)", cfg.listen);
            return ExitCode::from(1);
        }
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| cfg.listen.to_string());
    tracing::info!(%addr, redis = %target, web_dir = %cfg.web_dir.display(), "pipelab serve listening");
    // One line on stdout that scripts (and the tests) can wait for.
    println!("pipelab serve: listening on http://{addr} (Redis: {target})");

    let state = AppState::new(target, source, cfg.limits.clone(), cfg.web_dir.clone());
    let app = api::router(state);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let server = axum::serve(listener, app).with_graceful_shutdown(async move {
        shutdown_signal().await;
        let _ = stop_tx.send(true);
    });
    let grace = Duration::from_millis(cfg.shutdown_grace_ms);
    let drain_deadline = async move {
        let mut rx = stop_rx;
        let _ = rx.wait_for(|stopped| *stopped).await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        res = server => {
            if let Err(e) = res {
                eprintln!("pipelab serve: {e}");
                return ExitCode::from(1);
            }
        }
        _ = drain_deadline => tracing::warn!("requests still running after {grace:?}; exiting anyway"),
    }
    tracing::info!("pipelab serve stopped");
    ExitCode::SUCCESS
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}
