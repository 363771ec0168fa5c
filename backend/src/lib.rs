//! pipelab as a library: the REST API (`server::router`, driven in-process by
//! the tests) and the Upstash-compatible surface over the engine
//! (`pipelab_engine`), its configuration and telemetry, the doctor, and the
//! embedded redis-server; shared by the `pipelab` binary (the CLI) and the
//! integration tests.

pub mod api;
pub mod config;
pub mod doctor;
pub mod embedded;
pub mod http;
pub mod net;
pub mod server;
pub mod telemetry;
pub mod upstash;
