//! Experiments on the executor: the same batch in every mode
//! ([`compare`]), one command template at several pipeline batch sizes
//! ([`sweep`]) and the sweep's key clean-up ([`cleanup`]).
//!
//! Plain Rust in and out, nothing of HTTP or terminals: `POST
//! /api/v1/compare` and `/sweep` (`api::compare`, `api::sweep`) and
//! `pipelab compare` / `pipelab sweep` are thin adapters over these, so
//! both run the same code and write the same JSON. Batches run on a
//! [`Runner`]: the API's (its limits and pooled connections) or
//! [`Direct`] (the executor on a new connection per batch).

pub mod cleanup;
pub mod compare;
pub mod cpu;
pub mod error;
pub mod removed;
pub mod runner;
pub mod sweep;

pub use error::{InputError, LabError, Problem};
pub use runner::{Direct, Runner};
