//! `pipelab`: run Redis command batches sequentially, pipelined or as
//! MULTI/EXEC, measured per command; the REST API and playground server; RESP tools.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
