//! pipelab's HTTP surfaces over the engine (`pipelab_engine`), on the HTTP
//! layer they share (`pipelab_http`): the REST API (`api`), the
//! Upstash-compatible surface (`upstash`), the router that joins them
//! (`server::router`, driven in-process by the tests), the serve loop
//! (`serve`) and the embedded redis-server it starts when no Redis is given
//! (`embedded`); the `pipelab` binary wires it to its flags and the doctor.

pub mod api;
pub mod embedded;
pub mod serve;
pub mod server;
pub mod upstash;
