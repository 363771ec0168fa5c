//! pipelab as a library: the executor and what it stands on, the REST API
//! (`api::router`, driven in-process by the tests), the experiments the API
//! and the CLI share (`lab`: compare, sweep), its configuration and
//! telemetry, and the embedded redis-server; shared by the `pipelab` binary
//! (the CLI) and the integration tests.

pub mod acl;
pub mod api;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod conn;
pub mod delay;
pub mod doctor;
pub mod embedded;
pub mod exec;
pub mod lab;
pub mod net;
pub mod report_json;
pub mod sandbox;
pub mod telemetry;
pub mod upstash;
