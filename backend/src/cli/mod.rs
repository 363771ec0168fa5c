//! The command line: one file per subcommand.

pub mod input;
pub mod resp;
