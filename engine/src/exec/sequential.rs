//! Sequential mode: write one command, read its reply, then the next: N
//! round trips. The way most client code runs without pipelining; pipelab
//! runs it to show what the round trips cost.

use super::execution::Execution;
use super::source::{CommandSource, ResultSink};
use super::{pipeline, OnError};

/// With `on_error: stop`, nothing is sent after the first error reply.
pub(super) async fn run<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, on_error: OnError) {
    // One command per write and per wait: exactly a pipeline of chunk size 1.
    pipeline::run(r, 1, on_error, false).await
}
