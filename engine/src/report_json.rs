//! A batch's report as JSON, written while the batch runs: `{"results":[`,
//! each result as it comes, then `summary`, `transaction` and
//! `connection_error` (docs/api.md#response). `pipelab run --json` and
//! `POST /api/v1/batch` both write it through [`ReportJson`], so that
//! their shapes cannot drift apart.
//!
//! Results are written directly rather than by `serde_json::to_writer`:
//! serde_json escapes every member name as if it could hold a quote, about
//! ten strings per result; in a 100k-command report that was the largest
//! single cost of the response (`format_escaped_str`, 11% of the server's
//! CPU). Here member names are constants and only the reply's text is
//! escaped (by serde_json). Replies other than the common scalars go
//! through the reply's `Serialize` (`resp::json`). The bytes are those
//! serde_json writes for the same [`CommandResult`], which the tests check
//! value by value.

use serde::Serialize;

use crate::exec::{CommandResult, Status, Summary, TransactionOutcome};
use resp::Value;

/// Writes a report's JSON piece by piece, into byte buffers the caller sends on.
#[derive(Debug, Default)]
pub struct ReportJson {
    /// A result was written (a comma goes before the next).
    any: bool,
}

impl ReportJson {
    /// Appends `result`, after `{"results":[` (the first) or a comma.
    pub fn result(&mut self, out: &mut Vec<u8>, result: &CommandResult) {
        out.extend_from_slice(if self.any { b"," } else { b"{\"results\":[" });
        self.any = true;
        write_result(out, result);
    }

    /// Appends the end of `results`, then `"summary"`, `"transaction"` and
    /// `"connection_error"` (each if present). The object is left open for
    /// more members: the caller appends them and the closing `}`.
    pub fn tail(
        &mut self,
        out: &mut Vec<u8>,
        summary: &Summary,
        transaction: Option<&TransactionOutcome>,
        connection_error: Option<&str>,
    ) {
        out.extend_from_slice(if self.any { b"]," } else { b"{\"results\":[]," });
        self.any = true;
        out.extend_from_slice(b"\"summary\":");
        write_summary(out, summary);
        if let Some(t) = transaction {
            out.extend_from_slice(b",\"transaction\":");
            serde_json::to_writer(&mut *out, t).expect("a transaction outcome serializes to JSON");
        }
        if let Some(e) = connection_error {
            out.extend_from_slice(b",\"connection_error\":");
            serde_json::to_writer(&mut *out, e).expect("a string serializes to JSON");
        }
    }
}

/// Appends `summary` as the JSON object serde_json writes for it (its
/// `Serialize`: members in declaration order, those skipped when empty
/// left out), member names as constants: through serde_json, the
/// summary's 20-odd escaped names were a tenth of a one-command
/// request's instructions (callgrind, `bench/api_instructions.sh`).
/// The nested members that only some batches have (`auto`, `server`,
/// `nodes`) still go through serde. A test checks the bytes against
/// serde_json's.
pub fn write_summary(out: &mut Vec<u8>, s: &Summary) {
    let mut num = itoa::Buffer::new();
    let mut member = |out: &mut Vec<u8>, name: &[u8], n: u64| {
        out.extend_from_slice(name);
        out.extend_from_slice(num.format(n).as_bytes());
    };
    out.extend_from_slice(match s.mode {
        None => b"{\"mode\":null".as_slice(),
        Some(m) => match m {
            crate::exec::Mode::Sequential => b"{\"mode\":\"sequential\"",
            crate::exec::Mode::Pipeline => b"{\"mode\":\"pipeline\"",
            crate::exec::Mode::Transaction => b"{\"mode\":\"transaction\"",
            crate::exec::Mode::Auto => b"{\"mode\":\"auto\"",
        },
    });
    member(out, b",\"commands\":", s.commands as u64);
    member(out, b",\"ok\":", s.ok as u64);
    member(out, b",\"errors\":", s.errors as u64);
    member(out, b",\"not_sent\":", s.not_sent as u64);
    member(out, b",\"unknown\":", s.unknown as u64);
    member(out, b",\"round_trips\":", s.round_trips);
    member(out, b",\"write_calls\":", s.write_calls);
    member(out, b",\"write_syscalls\":", s.write_syscalls);
    member(out, b",\"read_syscalls\":", s.read_syscalls);
    member(out, b",\"bytes_sent\":", s.bytes_sent);
    member(out, b",\"bytes_received\":", s.bytes_received);
    if s.pushes != 0 {
        member(out, b",\"pushes\":", s.pushes);
    }
    member(out, b",\"total_us\":", s.total_us);
    out.extend_from_slice(b",\"commands_per_sec\":");
    write_f64(out, s.commands_per_sec);
    out.extend_from_slice(b",\"simulated_rtt_ms\":");
    write_f64(out, s.simulated_rtt_ms);
    if let Some(ms) = s.achieved_rtt_ms {
        out.extend_from_slice(b",\"achieved_rtt_ms\":");
        write_f64(out, ms);
    }
    if let Some(mbps) = s.simulated_bandwidth_mbps {
        out.extend_from_slice(b",\"simulated_bandwidth_mbps\":");
        write_f64(out, mbps);
    }
    member(out, b",\"batch_size\":", s.batch_size as u64);
    out.extend_from_slice(if s.resp3 { b",\"resp3\":true" } else { b",\"resp3\":false" });
    if let Some(auto) = &s.auto {
        out.extend_from_slice(b",\"auto\":");
        serialize(out, auto);
    }
    if let Some(server) = &s.server {
        out.extend_from_slice(b",\"server\":");
        serialize(out, server);
    }
    if s.redirections != 0 {
        member(out, b",\"redirections\":", s.redirections);
    }
    if !s.nodes.is_empty() {
        out.extend_from_slice(b",\"nodes\":");
        serialize(out, &s.nodes);
    }
    if let Some(w) = &s.shared {
        member(out, b",\"shared\":{\"batches\":", w.batches as u64);
        member(out, b",\"commands\":", w.commands as u64);
        out.push(b'}');
    }
    out.push(b'}');
}

/// A float as serde_json writes it (shortest round-trip form, `null` if not finite).
fn write_f64(out: &mut Vec<u8>, x: f64) {
    serialize(out, &x);
}

/// Appends `result` as `{"index":…,"status":…,"reply":…,"sent_us":…,"reply_us":…,"latency_us":…,"node":…}`
/// (members that are `None` left out), exactly as serde_json would.
pub fn write_result(out: &mut Vec<u8>, result: &CommandResult) {
    let mut num = itoa::Buffer::new();
    out.extend_from_slice(b"{\"index\":");
    out.extend_from_slice(num.format(result.index).as_bytes());
    out.extend_from_slice(match result.status {
        Status::Ok => b",\"status\":\"ok\"".as_slice(),
        Status::Error => b",\"status\":\"error\"",
        Status::NotSent => b",\"status\":\"not_sent\"",
        Status::Unknown => b",\"status\":\"unknown\"",
    });
    if let Some(reply) = &result.reply {
        out.extend_from_slice(b",\"reply\":");
        write_reply(out, reply);
    }
    if let Some(us) = result.sent_us {
        out.extend_from_slice(b",\"sent_us\":");
        out.extend_from_slice(num.format(us).as_bytes());
    }
    if let Some(us) = result.reply_us {
        out.extend_from_slice(b",\"reply_us\":");
        out.extend_from_slice(num.format(us).as_bytes());
    }
    if let Some(us) = result.latency_us {
        out.extend_from_slice(b",\"latency_us\":");
        out.extend_from_slice(num.format(us).as_bytes());
    }
    if let Some(node) = &result.node {
        out.extend_from_slice(b",\"node\":");
        serde_json::to_writer(&mut *out, &**node).expect("a string serializes to JSON");
    }
    out.push(b'}');
}

/// Reply JSON (docs/reply-json.md) for `reply`.
fn write_reply(out: &mut Vec<u8>, reply: &Value) {
    let (kind, text): (&[u8], &[u8]) = match reply {
        Value::Simple(b) => (b"simple", b),
        Value::Error(b) => (b"error", b),
        Value::Bulk(b) => (b"bulk", b),
        Value::BlobError(b) => (b"blob_error", b),
        Value::Integer(i) => {
            out.extend_from_slice(b"{\"type\":\"integer\",\"value\":");
            out.extend_from_slice(itoa::Buffer::new().format(*i).as_bytes());
            out.push(b'}');
            return;
        }
        Value::Null | Value::NullBulk | Value::NullArray => {
            out.extend_from_slice(b"{\"type\":\"null\"}");
            return;
        }
        other => return serialize(out, other),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return serialize(out, reply); // `"base64"`
    };
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind);
    out.extend_from_slice(b"\",\"value\":");
    serde_json::to_writer(&mut *out, text).expect("a string serializes to JSON");
    out.push(b'}');
}

/// Bytes of `reply`'s reply JSON, as [`write_result`] writes it, give or
/// take a few bytes per value (member names and number widths are
/// counted at their largest): what the reply limit is counted in, since a
/// reply's JSON can be six times its RESP (a NUL byte is `\u0000`) and a
/// third larger for bytes that are not UTF-8 (base64).
pub fn reply_json_len(reply: &Value) -> u64 {
    /// `{"type":"blob_error","value":}` and a little more.
    const WRAPPER: u64 = 40;
    let pairs = |kv: &[(Value, Value)]| kv.iter().map(|(k, v)| 8 + reply_json_len(k) + reply_json_len(v)).sum::<u64>();
    WRAPPER
        + match reply {
            Value::Simple(b) | Value::Error(b) | Value::Bulk(b) | Value::BlobError(b) | Value::BigNumber(b) => string_json_len(b),
            Value::Verbatim { text, .. } => 20 + string_json_len(text),
            Value::Integer(_) | Value::Double(_) => 24,
            Value::Null | Value::NullBulk | Value::NullArray | Value::Boolean(_) => 0,
            Value::Array(items) | Value::Set(items) | Value::Push(items) => items.iter().map(|v| 1 + reply_json_len(v)).sum(),
            Value::Map(kv) => pairs(kv),
            Value::Attributed { attributes, value } => 20 + pairs(attributes) + reply_json_len(value),
        }
}

/// A string's JSON: quoted and escaped as serde_json does (`\"`, `\\`,
/// `\n`-style escapes, `\u00XX` for other control bytes), or base64 if it
/// is not UTF-8.
fn string_json_len(bytes: &[u8]) -> u64 {
    if std::str::from_utf8(bytes).is_err() {
        return 2 + (bytes.len() as u64).div_ceil(3) * 4;
    }
    let escapes: u64 = bytes
        .iter()
        .map(|&b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    2 + bytes.len() as u64 + escapes
}

fn serialize<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("serializes to JSON");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(index: usize, status: Status, reply: Option<Value>, sent: Option<u64>, at: Option<u64>) -> CommandResult {
        CommandResult { index, status, reply, sent_us: sent, reply_us: at, latency_us: at.map(|t| t / 2), node: None }
    }

    #[test]
    fn the_same_bytes_as_serde_json() {
        let replies = [
            Value::Simple(b"OK".to_vec()),
            Value::Simple(Vec::new()),
            Value::Error(b"ERR wrong \"type\"\t\\ \x01".to_vec()),
            Value::Bulk("héllo \u{2028} \u{1F600}".as_bytes().to_vec()),
            Value::Bulk(vec![0xff, 0, 1]),
            Value::BlobError(b"SYNTAX x".to_vec()),
            Value::Integer(i64::MIN),
            Value::Integer(0),
            Value::Integer(i64::MAX),
            Value::Null,
            Value::NullBulk,
            Value::NullArray,
            Value::Boolean(true),
            Value::Double(f64::NAN),
            Value::Double(-1.5e300),
            Value::BigNumber(b"-12345678901234567890".to_vec()),
            Value::Verbatim { format: *b"txt", text: b"Some string".to_vec() },
            Value::Array(vec![Value::Integer(1), Value::Bulk(vec![0xfe])]),
            Value::Map(vec![(Value::Simple(b"a".to_vec()), Value::Set(vec![Value::Null]))]),
            Value::Attributed {
                attributes: vec![(Value::Simple(b"ttl".to_vec()), Value::Integer(3600))],
                value: Box::new(Value::Bulk(b"hi".to_vec())),
            },
        ];
        let mut cases: Vec<CommandResult> = replies
            .into_iter()
            .enumerate()
            .map(|(i, r)| result(i * 977, if r.is_error() { Status::Error } else { Status::Ok }, Some(r), Some(3), Some(u64::MAX)))
            .collect();
        cases.push(result(usize::MAX, Status::NotSent, None, None, None));
        cases.push(result(7, Status::Unknown, None, Some(12), None));
        cases.push(CommandResult { node: Some("127.0.0.1:7000".into()), ..result(8, Status::Ok, Some(Value::Integer(1)), Some(1), Some(2)) });
        for case in &cases {
            let mut fast = Vec::new();
            write_result(&mut fast, case);
            let serde = serde_json::to_vec(case).unwrap();
            assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&serde), "{case:?}");
            if let Some(reply) = &case.reply {
                let real = serde_json::to_vec(reply).unwrap().len() as u64;
                let counted = reply_json_len(reply);
                assert!(counted >= real && counted <= real + 120, "{reply:?}: counted {counted}, real {real}");
            }
        }
    }

    /// The summary and the members after it, as serde_json writes the
    /// report's tail (a `Serialize` struct of the three).
    #[test]
    fn the_tail_as_serde_json() {
        use crate::exec::{Mode, TransactionOutcome, TransactionStatus};
        #[derive(Serialize)]
        struct Tail<'a> {
            summary: &'a Summary,
            #[serde(skip_serializing_if = "Option::is_none")]
            transaction: Option<&'a TransactionOutcome>,
            #[serde(skip_serializing_if = "Option::is_none")]
            connection_error: Option<&'a str>,
        }
        let full = Summary {
            mode: Some(Mode::Auto),
            commands: usize::MAX,
            ok: 3,
            errors: 1,
            not_sent: 2,
            unknown: 7,
            round_trips: u64::MAX,
            write_calls: 5,
            write_syscalls: 6,
            read_syscalls: 8,
            bytes_sent: 54,
            bytes_received: 40,
            pushes: 2,
            total_us: 812,
            commands_per_sec: 2463.054187192118,
            simulated_rtt_ms: 0.25,
            achieved_rtt_ms: Some(0.2631),
            simulated_bandwidth_mbps: Some(12.5),
            batch_size: 1000,
            resp3: true,
            auto: Some(Default::default()),
            server: Some(Some(Default::default())),
            redirections: 4,
            nodes: vec![Default::default()],
            shared: Some(crate::exec::SharedWrite { batches: 3, commands: 9 }),
        };
        let summaries = [
            Summary::default(),
            Summary { mode: Some(Mode::Pipeline), commands_per_sec: 1e21, ..Summary::default() },
            Summary { mode: Some(Mode::Sequential), commands_per_sec: f64::NAN, simulated_rtt_ms: 1e-7, ..Summary::default() },
            Summary { mode: Some(Mode::Transaction), server: Some(None), ..Summary::default() },
            full,
        ];
        let outcome = TransactionOutcome { status: TransactionStatus::Aborted, rejected_index: Some(1), message: Some("EXECABORT \"x\"".into()), rejected: Vec::new() };
        for summary in &summaries {
            for (transaction, connection_error) in [(None, None), (Some(&outcome), Some("lost \u{7}"))] {
                let mut fast = Vec::new();
                ReportJson { any: true }.tail(&mut fast, summary, transaction, connection_error);
                let serde = serde_json::to_string(&Tail { summary, transaction, connection_error }).unwrap();
                // `tail` continues the object after `results`: `],` then the members, unclosed.
                assert_eq!(format!("{{{}}}", String::from_utf8_lossy(&fast[2..])), serde);
            }
        }
    }

    #[test]
    fn zero_bytes_count_six_times() {
        let zeros = Value::Bulk(vec![0; 1000]);
        let real = serde_json::to_vec(&zeros).unwrap().len() as u64;
        assert!(real > 6000);
        assert!(reply_json_len(&zeros) >= real);
    }
}
