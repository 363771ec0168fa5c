//! `pipelab`: run Redis command batches sequentially, pipelined or as
//! MULTI/EXEC, measured per command; the REST API and playground server; RESP tools.

mod api;
mod cli;
mod config;
mod embedded;
mod exec;
mod scratch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "pipelab", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the web playground and the REST API (/api/v1).
    Serve(config::ServeConfig),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Serve(cfg) => cli::serve::main(cfg),
    }
}
