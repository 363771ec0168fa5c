//! pipelab's engine: the code that talks to Redis, and nothing of HTTP,
//! tokens or terminals (the crates above it serve it over HTTP and the
//! command line; `openapi` and `cli` add the derives they need).
//!
//! From the bottom up: [`conn`] (one connection: socket, handshake, replies
//! read in order), [`delay`] (the simulated round trip), [`argv`] (a
//! command's arguments, a batch's commands) and the modes
//! (`pipelab_model::Mode`) under
//! [`commands`] (the server's command table, the one place that says what a
//! command does); [`exec`] runs a batch in a mode on one Redis, and
//! [`cluster`] across a Redis Cluster's masters on the executor; [`run`] is
//! the one way to run a batch, which chooses between the two once per
//! target; [`lab`] builds experiments (compare, sweep) on it; [`report_json`] writes a report as it comes; [`sandbox`] gives each
//! visitor a redis-server of their own, launched as the server's embedded one
//! is by [`launch`]; [`acl`] makes the read-only user of
//! a Redis pipelab manages; [`engine`] is all of it as many callers share
//! it (their Redis, batch slots, fair shares, script kills), with
//! [`Engine::run`] the one way a caller runs a batch.

pub mod acl;
pub mod argv;
pub mod cluster;
pub mod commands;
pub mod conn;
pub mod delay;
pub mod engine;
pub mod exec;
pub mod lab;
pub mod launch;
pub mod node;
pub mod report_json;
pub mod run;
pub mod sandbox;

pub use engine::Engine;
