//! The command line: one file per subcommand. Exit status (docs/cli.md#exit-status):
//! 0 success, 1 the work ran but Redis returned error replies, 2 bad usage or input.

pub mod compare;
pub mod doctor;
pub mod healthcheck;
pub mod input;
pub mod lab;
pub mod openapi;
pub mod options;
pub mod progress;
pub mod proxy;
pub mod resp;
pub mod run;
mod run_source;
pub mod serve;
pub mod sweep;

use std::future::Future;
use std::process::ExitCode;

/// Runs an async subcommand on a small multi-threaded runtime.
pub fn block_on(f: impl Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread().worker_threads(2).on_thread_park(pipelab::http::budget::collect_if_due).enable_all().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => {
            eprintln!("pipelab: cannot start the async runtime: {e}");
            ExitCode::from(2)
        }
    }
}
