//! The command line: one file per subcommand. Exit status (CONTRACT.md §2):
//! 0 success, 1 the work ran but Redis returned error replies, 2 bad usage or input.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod proxy;
mod run;

#[derive(Parser)]
#[command(name = "pipelab", version, about = "Make Redis pipelining visible: run command batches sequentially, pipelined or as MULTI/EXEC, measured per command")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Execute a command file (inline lines or RESP) against Redis.
    Run(run::Args),
    /// A TCP proxy that adds a simulated round-trip time (the delay line).
    Proxy(proxy::Args),
}

/// Parses the arguments (usage errors exit 2, as clap does) and runs the subcommand.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("pipelab: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match cli.command {
        Command::Run(args) => rt.block_on(run::main(args)),
        Command::Proxy(args) => rt.block_on(proxy::main(args)),
    }
}
