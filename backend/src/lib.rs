//! pipelab's HTTP side: the REST API (`server::router`, driven in-process by
//! the tests) and the Upstash-compatible surface over the engine
//! (`pipelab_engine`), the serve loop (`serve`), configuration and
//! telemetry, the doctor's page, and the embedded redis-server; the `pipelab`
//! binary wires it to its flags.

pub mod api;
pub mod config;
pub mod doctor_page;
pub mod embedded;
pub mod http;
pub mod net;
pub mod serve;
pub mod server;
pub mod telemetry;
pub mod upstash;
