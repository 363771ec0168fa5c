//! Which results a batch's answer keeps ([`Keep`]) and the sink that keeps
//! them ([`KeptResults`]), counting their JSON against the reply limit and
//! charging it to the server's budget for answers, for every route that
//! answers a report: whole, streamed or live.

use pipelab_engine::exec::{CommandResult, ResultSink, Status};
use pipelab_engine::report_json::reply_json_len;

use super::AppState;
use pipelab_http::budget::{Charge, Held, CHARGED_FROM};

/// Which per-command results a batch response carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, utoipa::ToSchema, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
#[schema(as = ResultsFilter)]
pub enum Keep {
    /// Every command's result (the default).
    #[default]
    All,
    /// Only results whose status is not ok (error, not_sent, unknown); each keeps its index.
    Errors,
    /// No per-command results; the summary still counts every command.
    None,
}

impl Keep {
    pub fn keeps(self, status: Status) -> bool {
        match self {
            Keep::All => true,
            Keep::Errors => status != Status::Ok,
            Keep::None => false,
        }
    }
}

/// A result's JSON besides its reply's, at most (index, status, timings).
pub(super) const RESULT_JSON: u64 = 160;

/// Bytes a decoded reply holds until its report is written: its strings
/// and a `Value` for each element.
fn held_len(reply: &resp::Value) -> u64 {
    use resp::Value::*;
    let pairs = |kv: &[(resp::Value, resp::Value)]| kv.iter().map(|(k, v)| held_len(k) + held_len(v)).sum::<u64>();
    std::mem::size_of::<resp::Value>() as u64
        + match reply {
            Simple(b) | Error(b) | Bulk(b) | BlobError(b) | BigNumber(b) => b.len() as u64,
            Verbatim { text, .. } => text.len() as u64,
            Array(items) | Set(items) | Push(items) => items.iter().map(held_len).sum(),
            Map(kv) => pairs(kv),
            Attributed { attributes, value } => pairs(attributes) + held_len(value),
            Integer(_) | Double(_) | Null | NullBulk | NullArray | Boolean(_) => 0,
        }
}

/// Collects the results `keep` keeps, counting their replies' JSON
/// against the reply limit (`--max-reply-bytes`): the executor counts the
/// RESP bytes it reads, but a reply's JSON can be six times as large (a
/// 60 MB value of NUL bytes was a 377 MB response).
pub struct KeptResults {
    pub results: Vec<CommandResult>,
    keep: Keep,
    /// JSON bytes of the kept replies so far.
    pub(super) json_bytes: u64,
    /// Bytes the kept results hold until written, and their JSON: what
    /// is charged ([`KeptResults::admit`]).
    held_bytes: u64,
    /// Of those, the bytes charged so far (some may have gone on with
    /// their results: `GroupSink`).
    charged: u64,
    max_json_bytes: u64,
    /// The kept replies' JSON, charged to the server's budget for answers
    /// (`pipelab_http::budget`); why it refused one, if it did.
    pub(super) charge: Charge,
    refused: Option<String>,
}

impl KeptResults {
    pub fn new(state: &AppState, keep: Keep, capacity: usize) -> KeptResults {
        let max_json_bytes = state.http.limits.max_reply_bytes;
        KeptResults { results: Vec::with_capacity(capacity), keep, json_bytes: 0, held_bytes: 0, charged: 0, max_json_bytes, charge: Charge::new(&state.http.budget), refused: None }
    }

    /// The charge of the kept replies, handed to the answer made of them.
    pub fn take_charge(&mut self) -> Held {
        Held::new(self.charge.take())
    }

    /// The charge of the kept replies, to be added to another.
    pub fn charge_mut(&mut self) -> &mut Charge {
        &mut self.charge
    }
}

impl ResultSink for KeptResults {
    fn push(&mut self, result: CommandResult) {
        if self.keep.keeps(result.status) {
            self.results.push(result);
        }
    }

    fn admit(&mut self, reply: &resp::Value) -> Result<(), u64> {
        let status = if reply.is_error() { Status::Error } else { Status::Ok };
        if self.json_bytes > self.max_json_bytes {
            return Err(self.max_json_bytes);
        }
        if self.keep.keeps(status) {
            let len = reply_json_len(reply);
            self.json_bytes += len;
            if self.json_bytes > self.max_json_bytes {
                return Err(self.max_json_bytes);
            }
            // Charged before its JSON is made: the JSON as it will be
            // written, and the reply and its result held until then.
            self.held_bytes += len + RESULT_JSON + held_len(reply) + std::mem::size_of::<CommandResult>() as u64;
            // Answers under `CHARGED_FROM` are not charged (`budget::charged`):
            // a small batch's replies stay off the shared counter.
            if self.held_bytes < CHARGED_FROM {
                return Ok(());
            }
            if let Err(why) = self.charge.grow(self.held_bytes - self.charged) {
                self.refused = Some(why.to_string());
                return Err(self.max_json_bytes);
            }
            self.charged = self.held_bytes;
        }
        Ok(())
    }

    fn refusal(&self) -> Option<String> {
        self.refused.clone()
    }
}
