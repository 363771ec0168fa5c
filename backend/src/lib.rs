//! pipelab as a library: the executor and what it stands on, shared by the
//! `pipelab` binary (CLI, REST API) and the integration tests.

pub mod conn;
pub mod delay;
pub mod exec;
