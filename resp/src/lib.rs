//! RESP2/RESP3 and inline-command codec, shared by the `pipelab` server, its
//! CLI and the browser (through wasm). No dependencies beyond `core`/`alloc`
//! (the optional `json` feature adds serde for the reply JSON), so the very
//! same rules run in every place a user meets them.
//!
//! - [`decode`]: incremental, resumable decoder for every RESP2/RESP3 type,
//!   with limits and byte-offset errors, checking a value before building it.
//! - [`encode`]: argv → multibulk, and every [`Value`] back to canonical bytes.
//! - [`inline`]: inline commands split exactly as Redis `sdssplitargs`.
//! - [`request`]: a stream of requests split as the Redis server does
//!   (`*` → multibulk, anything else → inline line).
//! - [`display`]: the redis-cli TTY format.
//! - `json` (feature `json`): the reply JSON of docs/reply-json.md.
//!
//! Exactness is tested against the real thing: the decoder against hiredis
//! on thousands of generated inputs (its deliberate differences, where we
//! follow the RESP3 specification and Redis, are listed in [`decode`]),
//! inline splitting and request streams against redis-server, the display
//! against redis-cli; both parsers are fuzzed (`fuzz/`). See `resp/tests/`,
//! `scripts/test-resp.sh` and, for speed, `resp/BENCH.md`.
#![no_std]
#![forbid(unsafe_code)]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod decode;
pub mod display;
pub mod encode;
pub mod inline;
#[cfg(feature = "json")]
pub mod json;
mod number;
pub mod request;
mod value;

pub use decode::{decode_all, DecodeAll, DecodeError, Decoded, Decoder, Limits};
pub use encode::{encode_command, encoded_command_len};
pub use inline::{parse_inline, split_args, InlineCommand, InlineError, InlineParse, SplitError};
pub use request::{Request, RequestError, RequestReader};
pub use value::Value;
pub use inline::to_inline;
