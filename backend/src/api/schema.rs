//! The OpenAPI schema of a command argument as the API reads it
//! ([`super::arg::ArgBytes`], which deserializes by hand). It describes,
//! never carries, data; the executor's types carry their own schemas, and
//! reply JSON's (docs/reply-json.md) is in [`pipelab_engine::exec::reply_schema`].
#![allow(dead_code)]

use utoipa::ToSchema;

/// A command argument: a string, or `{"base64": "..."}` for bytes that are
/// not valid UTF-8.
#[derive(ToSchema)]
#[serde(untagged)]
#[schema(example = json!("SET"))]
pub enum Arg {
    Text(String),
    Binary {
        /// Standard base64 (padding optional).
        base64: String,
    },
}

