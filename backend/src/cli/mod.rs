//! The command line: one file per subcommand.

pub mod healthcheck;
pub mod input;
pub mod resp;
pub mod serve;
