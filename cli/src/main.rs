//! `pipelab`: run Redis command batches sequentially, pipelined or as
//! MULTI/EXEC, measured per command; the REST API and playground server; RESP tools.
//!
//! The command line: one file per subcommand, wiring the crates below
//! (`pipelab_server`, `pipelab_engine`, `resp`) to flags and printing.
//! Exit status (docs/cli.md#exit-status): 0 success, 1 the work ran but
//! Redis returned error replies, 2 bad usage or input.

mod codec;
mod compare;
mod doctor;
mod healthcheck;
mod input;
mod lab;
mod openapi;
mod options;
mod progress;
mod proxy;
mod run;
mod run_source;
mod sweep;

use clap::{Parser, Subcommand};
use std::future::Future;
use std::process::ExitCode;

/// A 100k-command batch allocates every reply and result once; glibc's
/// malloc and free took a third of the API's CPU time on it, mimalloc a
/// fraction of that (`bench/README-api.md`). Without transparent huge pages
/// (`no_thp`): with them, `pipelab run` on 1M commands peaked at 16 MB of
/// RSS instead of 7 MB.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "pipelab", version, about = "Redis pipelining, measured: run batches, serve the playground, RESP tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Execute a command file (inline lines or RESP) against Redis.
    Run(run::Args),
    /// Run a command file once per mode (sequential, pipeline, transaction, auto) and compare.
    Compare(compare::Args),
    /// Run one command template at several pipeline batch sizes, then delete the keys it created.
    Sweep(sweep::Args),
    /// Serve the web playground and the REST API (/api/v1).
    Serve(Box<pipelab_http::config::ServeConfig>),
    /// A TCP proxy that adds a simulated round-trip time (the delay line).
    Proxy(proxy::Args),
    /// A proxy that watches an application's traffic: round trips, pipeline depth, missed pipelines.
    Doctor(doctor::Args),
    /// RESP and inline-command codec on files and pipes.
    #[command(subcommand)]
    Resp(codec::RespCommand),
    /// Print the REST API's OpenAPI document (what GET /api/v1/openapi.json answers).
    Openapi,
    /// GET a health URL; exit 0 on 2xx (for container health checks).
    Healthcheck(healthcheck::HealthcheckArgs),
}

unsafe extern "C" {
    /// mimalloc's "free what can be freed now" for the calling thread's
    /// heap, and with `force` the purges that are due given back to the
    /// system (`mi_collect` in mimalloc.h).
    fn mi_collect(force: bool);
}

/// After a large answer is freed (and on each runtime thread going idle
/// soon after): without it, mimalloc keeps a thread's freed pages until
/// that thread allocates again, and the RSS of clients long gone stayed.
fn give_back_memory() {
    // SAFETY: mi_collect takes no pointer and may be called at any time.
    unsafe { mi_collect(true) }
}

fn main() -> ExitCode {
    pipelab_http::budget::set_release_hook(give_back_memory);
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap's own help/version exit 0; bad usage exits 2 (docs/cli.md#exit-status).
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match cli.command {
        Command::Run(args) => block_on(run::main(args)),
        Command::Compare(args) => block_on(lab::exit(compare::main(args))),
        Command::Sweep(args) => block_on(lab::exit(sweep::main(args))),
        Command::Proxy(args) => block_on(proxy::main(args)),
        Command::Doctor(args) => doctor::run(args),
        Command::Serve(cfg) => pipelab_server::serve::main(*cfg, pipelab_doctor::page::start_in_serve),
        Command::Resp(cmd) => codec::run(cmd).into(),
        Command::Openapi => openapi::run().into(),
        Command::Healthcheck(args) => healthcheck::run(args).into(),
    }
}

/// Runs an async subcommand on a small multi-threaded runtime.
pub fn block_on(f: impl Future<Output = ExitCode>) -> ExitCode {
    match tokio::runtime::Builder::new_multi_thread().worker_threads(2).on_thread_park(pipelab_http::budget::collect_if_due).enable_all().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => {
            eprintln!("pipelab: cannot start the async runtime: {e}");
            ExitCode::from(2)
        }
    }
}
