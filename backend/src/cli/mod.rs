//! Subcommands of the `pipelab` binary, one file each.

pub mod serve;
