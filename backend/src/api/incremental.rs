//! A request's `commands` parsed while its body is still arriving.
//!
//! Why: a 100k-command batch is about 4 MB of JSON that a client takes ~3
//! ms to send, and parsing it after its last byte took 5–10 ms more before
//! the first command could go to Redis (`bench/README-api.md`). Here each
//! piece of the body is parsed as it arrives, the argvs straight into
//! [`Commands`], so the parse is done soon after the last byte.
//!
//! This is a fast path, not a second parser the API depends on. It takes
//! the usual shape only: `commands` a member of the top-level object, an
//! array of arrays of strings or `{"base64": "..."}` objects. Anything else
//! (`text`, a number where an argument should be, an escaped key, malformed
//! JSON) makes it decline, and the whole body is then parsed by serde_json,
//! which also gives every error its message and JSON path. What
//! it accepts it reads exactly as serde_json does (the same unescaping and
//! UTF-8 rules; a differential test checks). The other members are parsed
//! by serde_json from the body with `commands`' value replaced by `null`.

use base64::Engine as _;

use super::arg::{JsonCommands, BASE64};
use super::json::{parse_json, HasCommands, RESERVE_MAX};
use super::validate::{Checked, Checker};
use pipelab_engine::exec::Commands;

/// Bytes of members before `commands` searched at most (rescanned as data
/// arrives, so bounded): a body with more declines.
const PREFIX_MAX: usize = 64 * 1024;

/// Largest unfinished command parsed again as data arrives: a larger one
/// (a big value) declines, since parsing it again for every piece of the
/// body would take time quadratic in its size. serde_json reads such a
/// body as fast as this path would.
const COMMAND_MAX: usize = 64 * 1024;

/// Why a scan stopped.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The body ends here so far: try again with more.
    More,
    /// Not the shape this fast path takes (or not valid JSON): decline.
    No,
}

type Scan<T> = Result<T, Stop>;

#[derive(Debug)]
enum Phase {
    /// Looking for the `"commands"` member.
    Prefix,
    /// In the commands array opened at `open`; `at` is just after the last
    /// complete argv (or the `[`).
    Elements { open: usize, at: usize, first: bool },
    /// The array is `open..end`; the rest is read when the body is complete.
    Done { open: usize, end: usize },
    Declined,
}

/// The body received so far and what has been parsed of it.
pub struct IncrementalBody {
    buf: Vec<u8>,
    commands: Commands,
    phase: Phase,
    /// Checks and encodes each command as it is parsed.
    checker: Option<Checker>,
}

impl IncrementalBody {
    /// `expected`: the body's declared length, if any (reserved up front,
    /// up to `RESERVE_MAX`).
    pub fn new(expected: usize) -> Self {
        // Room for the commands of a usual body, so that its arena is not
        // copied as it grows: at most `expected` argument bytes, and an
        // argument (`"x", `) or a command of SET's size every 8 or 32 bytes.
        let expected = expected.min(RESERVE_MAX);
        let commands = Commands::with_capacity(expected, expected / 8, expected / 32);
        IncrementalBody { buf: Vec::with_capacity(expected), commands, phase: Phase::Prefix, checker: None }
    }

    /// Each command parsed is handed to `checker` as soon as it is whole.
    pub fn with_checker(mut self, checker: Option<Checker>) -> Self {
        self.checker = checker;
        self
    }

    /// More of the body is waiting than was parsed: commands from here on
    /// are checked but not encoded ahead ([`pipelab_engine::exec::Prechecked::stop_encoding`]).
    pub fn behind(&mut self) {
        if let Some(checker) = &mut self.checker {
            checker.stop_encoding();
        }
    }

    /// Takes the next piece of the body and parses as far as it goes.
    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
        self.advance();
    }

    /// The whole body arrived: the request, or `Err(body)` if the fast path
    /// declined (then parse `body` the ordinary way).
    pub fn finish<T: HasCommands>(self) -> Result<T, Vec<u8>> {
        self.finish_checked().map(|(req, _)| req)
    }

    /// [`IncrementalBody::finish`], with what the checker recorded of the
    /// request's `commands` (if it was given one).
    pub fn finish_checked<T: HasCommands>(mut self) -> Result<(T, Option<Checked>), Vec<u8>> {
        let Phase::Done { open, end } = self.phase else { return Err(self.buf) };
        // A body of `commands` alone (the usual one) leaves nothing else to
        // read: the other members are parsed from an empty object.
        let rest = if only_commands(&self.buf[..open], &self.buf[end..]) {
            b"{}".to_vec()
        } else {
            let mut rest = Vec::with_capacity(self.buf.len() - (end - open) + 4);
            rest.extend_from_slice(&self.buf[..open]);
            rest.extend_from_slice(b"null");
            rest.extend_from_slice(&self.buf[end..]);
            rest
        };
        // Any error (even one outside `commands`) is left to the ordinary
        // parse of the whole body, whose messages give the right positions.
        match parse_json::<T>(&rest) {
            Ok(mut req) => {
                req.set_commands(JsonCommands(std::mem::take(&mut self.commands)));
                Ok((req, self.checker.take().map(Checker::finish)))
            }
            Err(_) => Err(self.buf),
        }
    }

    fn advance(&mut self) {
        loop {
            match self.phase {
                Phase::Prefix => match find_commands(&self.buf) {
                    Ok(open) => self.phase = Phase::Elements { open, at: open + 1, first: true },
                    Err(Stop::More) if self.buf.len() <= PREFIX_MAX => return,
                    Err(_) => self.phase = Phase::Declined,
                },
                Phase::Elements { open, at, first } => match self.elements(at, first) {
                    Ok(end) => self.phase = Phase::Done { open, end },
                    Err((at, first, Stop::More)) if self.buf.len() - at <= COMMAND_MAX => {
                        self.phase = Phase::Elements { open, at, first };
                        return;
                    }
                    Err(_) => {
                        self.commands = Commands::new(); // freed now, not after the ordinary parse
                        self.checker = None;
                        self.phase = Phase::Declined;
                    }
                },
                Phase::Done { .. } | Phase::Declined => return,
            }
        }
    }

    /// Parses argvs from `at` on; `Ok` with the index after the array's
    /// `]`, or where to resume (after the last complete argv).
    fn elements(&mut self, mut at: usize, mut first: bool) -> Result<usize, (usize, bool, Stop)> {
        let b = &self.buf;
        loop {
            let stop = |e| (at, first, e);
            let mut i = ws(b, at);
            match peek(b, i).map_err(stop)? {
                b']' => return Ok(i + 1),
                b',' if !first => i = ws(b, i + 1),
                _ if first => {}
                _ => return Err(stop(Stop::No)),
            }
            match argv(b, i, &mut self.commands) {
                Ok(next) => {
                    if let Some(checker) = &mut self.checker {
                        checker.command(self.commands.get(self.commands.len() - 1));
                    }
                    at = next;
                    first = false;
                }
                Err(e) => {
                    self.commands.abandon_command();
                    return Err(stop(e));
                }
            }
        }
    }
}

/// Index of the `[` that opens the value of the top-level `"commands"`.
fn find_commands(b: &[u8]) -> Scan<usize> {
    let mut i = ws(b, 0);
    expect(b, i, b'{')?;
    i = ws(b, i + 1);
    loop {
        let (start, end) = plain_key(b, i)?;
        i = ws(b, end + 1);
        expect(b, i, b':')?;
        i = ws(b, i + 1);
        if &b[start..end] == b"commands" {
            expect(b, i, b'[')?;
            return Ok(i);
        }
        i = ws(b, skip_value(b, i)?);
        match peek(b, i)? {
            b',' => i = ws(b, i + 1),
            _ => return Err(Stop::No),
        }
    }
}

/// A member name without escapes: the span between its quotes.
fn plain_key(b: &[u8], i: usize) -> Scan<(usize, usize)> {
    expect(b, i, b'"')?;
    let mut j = i + 1;
    loop {
        match peek(b, j)? {
            b'"' => return Ok((i + 1, j)),
            b'\\' | 0..=0x1f => return Err(Stop::No),
            _ => j += 1,
        }
    }
}

/// The index after the JSON value starting at `i`. Not a validation: the
/// members outside `commands` are parsed by serde_json afterwards.
fn skip_value(b: &[u8], i: usize) -> Scan<usize> {
    match peek(b, i)? {
        b'"' => skip_string(b, i),
        b'[' | b'{' => {
            let (mut depth, mut j) = (0usize, i);
            loop {
                match peek(b, j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            // A number, true, false or null: up to the next delimiter.
            let mut j = i;
            while !matches!(peek(b, j)?, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                j += 1;
            }
            if j == i {
                Err(Stop::No)
            } else {
                Ok(j)
            }
        }
    }
}

/// The index after the string at `i` (its opening quote), escapes skipped.
fn skip_string(b: &[u8], i: usize) -> Scan<usize> {
    let mut j = i + 1;
    loop {
        match peek(b, j)? {
            b'"' => return Ok(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// A whole body that is only argv arrays of strings, Upstash's shape:
/// one argv (`["SET","k","v"]`, `many` false) or an array of them
/// (`[["SET","k","v"],["GET","k"]]`), appended to `out`. `false` (with
/// `out` as it was) for anything else, numbers and booleans included:
/// then parse the body the ordinary way, which gives every error its
/// message. What it accepts it reads as serde_json does (the same string
/// rules as the API's fast path; `upstash::request`'s tests compare).
/// Why: serde_json's visitors took a sixth of a 10,000-command
/// `/pipeline` request's instructions (callgrind).
pub fn string_commands(body: &[u8], many: bool, out: &mut Commands) -> bool {
    let mark = out.len();
    let parsed = (|| {
        let mut i = ws(body, 0);
        if !many {
            return argv_of(body, i, out, false);
        }
        expect(body, i, b'[')?;
        i = ws(body, i + 1);
        if peek(body, i)? == b']' {
            return Ok(i + 1);
        }
        loop {
            i = ws(body, argv_of(body, i, out, false)?);
            match peek(body, i)? {
                b',' => i = ws(body, i + 1),
                b']' => return Ok(i + 1),
                _ => return Err(Stop::No),
            }
        }
    })();
    match parsed {
        Ok(end) if ws(body, end) == body.len() => true,
        _ => {
            out.truncate(mark);
            false
        }
    }
}

/// One argv array at `i`, appended to `out` as a command; the index after its `]`.
fn argv(b: &[u8], i: usize, out: &mut Commands) -> Scan<usize> {
    argv_of(b, i, out, true)
}

/// [`argv`]; `{"base64"}` arguments only with `objects`.
fn argv_of(b: &[u8], i: usize, out: &mut Commands, objects: bool) -> Scan<usize> {
    expect(b, i, b'[')?;
    let mut i = ws(b, i + 1);
    if peek(b, i)? == b']' {
        out.end_command();
        return Ok(i + 1);
    }
    loop {
        i = match peek(b, i)? {
            b'"' => string(b, i, out.arg_buffer())?,
            b'{' if objects => base64_object(b, i, out.arg_buffer())?,
            _ => return Err(Stop::No),
        };
        out.end_arg();
        i = ws(b, i);
        match peek(b, i)? {
            b',' => i = ws(b, i + 1),
            b']' => {
                out.end_command();
                return Ok(i + 1);
            }
            _ => return Err(Stop::No),
        }
    }
}

/// `{"base64": "..."}` at `i`, decoded onto `out`; the index after its `}`.
fn base64_object(b: &[u8], i: usize, out: &mut Vec<u8>) -> Scan<usize> {
    let mut i = ws(b, i + 1);
    let (start, end) = plain_key(b, i)?;
    if &b[start..end] != b"base64" {
        return Err(Stop::No);
    }
    i = ws(b, end + 1);
    expect(b, i, b':')?;
    i = ws(b, i + 1);
    expect(b, i, b'"')?;
    let mut text = Vec::new();
    i = ws(b, string(b, i, &mut text)?);
    expect(b, i, b'}')?;
    BASE64.decode_vec(&text, out).map_err(|_| Stop::No)?;
    Ok(i + 1)
}

/// The JSON string at `i` (its opening quote), unescaped onto `out`; the
/// index after its closing quote. Declines control characters, bad escapes,
/// lone surrogates and invalid UTF-8, as serde_json refuses them.
fn string(b: &[u8], i: usize, out: &mut Vec<u8>) -> Scan<usize> {
    let start = out.len();
    let mut j = i + 1;
    let mut run = j;
    let mut ascii = true;
    loop {
        j = plain_run_end(b, j);
        match peek(b, j)? {
            b'"' => break,
            b'\\' => {
                out.extend_from_slice(&b[run..j]);
                j = escape(b, j, out)?;
                run = j;
            }
            0..=0x1f => return Err(Stop::No),
            _ => {
                ascii = false;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&b[run..j]);
    // An escape only ever produces whole characters, so checking the
    // result checks the raw bytes between escapes.
    if !ascii && std::str::from_utf8(&out[start..]).is_err() {
        return Err(Stop::No);
    }
    Ok(j + 1)
}

/// The index of the first byte from `j` that is not printable ASCII other
/// than `"` and `\` (the bytes a string is usually made of), or `b.len()`.
/// Eight bytes at a time while it can.
fn plain_run_end(b: &[u8], mut j: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = b.get(j..j + 8) {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        // The high bit is set in each byte that is 0x80 or above, below
        // 0x20 (subtracting borrows), `"` or `\` (a zero after the XOR).
        // Borrows can only flag bytes above a flagged one, so the lowest
        // flag, the only one used, is exact.
        let zero = |v: u64| v.wrapping_sub(ONES) & !v;
        let special = (x | x.wrapping_sub(0x20 * ONES) | zero(x ^ (u64::from(b'"') * ONES)) | zero(x ^ (u64::from(b'\\') * ONES))) & HIGH;
        if special != 0 {
            return j + (special.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    while let Some(&c) = b.get(j) {
        if !(0x20..0x80).contains(&c) || c == b'"' || c == b'\\' {
            break;
        }
        j += 1;
    }
    j
}

/// The escape at `j` (a backslash), decoded onto `out`; the index after it.
fn escape(b: &[u8], j: usize, out: &mut Vec<u8>) -> Scan<usize> {
    let byte = match peek(b, j + 1)? {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => {
            let hi = hex4(b, j + 2)?;
            let (code, next) = match hi {
                0xd800..=0xdbff => {
                    expect(b, j + 6, b'\\')?;
                    expect(b, j + 7, b'u')?;
                    let lo = hex4(b, j + 8)?;
                    if !(0xdc00..=0xdfff).contains(&lo) {
                        return Err(Stop::No);
                    }
                    (0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00), j + 12)
                }
                0xdc00..=0xdfff => return Err(Stop::No),
                _ => (hi, j + 6),
            };
            let c = char::from_u32(code).ok_or(Stop::No)?;
            out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            return Ok(next);
        }
        _ => return Err(Stop::No),
    };
    out.push(byte);
    Ok(j + 2)
}

/// Four hex digits at `i`.
fn hex4(b: &[u8], i: usize) -> Scan<u32> {
    let mut v = 0;
    for k in i..i + 4 {
        let d = (peek(b, k)? as char).to_digit(16).ok_or(Stop::No)?;
        v = v * 16 + d;
    }
    Ok(v)
}

fn peek(b: &[u8], i: usize) -> Scan<u8> {
    b.get(i).copied().ok_or(Stop::More)
}

fn expect(b: &[u8], i: usize, want: u8) -> Scan<()> {
    if peek(b, i)? == want {
        Ok(())
    } else {
        Err(Stop::No)
    }
}

/// The index of the first byte from `i` that is not JSON whitespace.
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// `prefix` + the commands array + `suffix` is `{"commands": [...]}`, with
/// only JSON whitespace around the tokens.
fn only_commands(prefix: &[u8], suffix: &[u8]) -> bool {
    fn trim(b: &[u8]) -> &[u8] {
        let ws = |c: &u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
        let start = b.iter().position(|c| !ws(c)).unwrap_or(b.len());
        let end = b.iter().rposition(|c| !ws(c)).map_or(start, |i| i + 1);
        &b[start..end]
    }
    trim(suffix) == b"}"
        && trim(prefix).strip_prefix(b"{").and_then(|p| trim(p).strip_prefix(b"\"commands\"")).is_some_and(|p| trim(p) == b":")
}

#[cfg(test)]
mod tests {
    //! The fast path against serde_json: whatever it accepts, fed in pieces
    //! of any size, must equal the ordinary parse of the whole body.
    use super::super::batch::BatchRequest;
    use super::super::json::parse_json;
    use super::*;
    use proptest::prelude::*;

    /// The fast path's result, the body fed `step` bytes at a time.
    fn fast(body: &[u8], step: usize) -> Option<BatchRequest> {
        let mut inc = IncrementalBody::new(0);
        for piece in body.chunks(step.max(1)) {
            inc.feed(piece);
        }
        inc.finish::<BatchRequest>().ok()
    }

    /// Checks the fast path against serde_json for several piece sizes;
    /// true if it accepted the body.
    fn agrees(body: &[u8]) -> bool {
        let slow = parse_json::<BatchRequest>(body).map(|r| format!("{r:?}"));
        let mut accepted = None;
        for step in [1, 2, 3, 5, 64, 4096, body.len()] {
            let got = fast(body, step).map(|r| format!("{r:?}"));
            if let Some(got) = &got {
                match &slow {
                    Ok(want) => assert_eq!(got, want, "step {step}: {}", String::from_utf8_lossy(body)),
                    Err(e) => panic!("accepted what serde_json refuses ({e:?}): {}", String::from_utf8_lossy(body)),
                }
            }
            assert!(accepted.is_none_or(|a| a == got.is_some()), "step {step} changes the outcome");
            accepted = Some(got.is_some());
        }
        accepted.unwrap_or(false)
    }

    #[test]
    fn takes_the_usual_shapes_as_serde_json_reads_them() {
        for body in [
            r#"{"commands": [["SET", "k", "v"], ["GET", "k"]], "mode": "pipeline", "batch_size": 100000}"#,
            r#"{"mode": "pipeline", "batch_size": 10, "on_error": "stop", "simulated_rtt_ms": 0.5, "resp3": true, "commands": [["PING"]]}"#,
            " { \"commands\" : [ [ \"SET\" , \"k\" , \"v\" ] , [ ] ] , \"results\" : \"errors\" } \n",
            r#"{"commands": [["SET", "k", "a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\u0000"]]}"#,
            r#"{"commands": [["SET", "ключ", "😀 é"]]}"#,
            r#"{"commands": [["SET", "k", {"base64": "/wAB"}], ["SET", "k2", { "base64" : "/wA" }]]}"#,
            r#"{"commands": []}"#,
            r#"{"commands": [["SET", "bench", "v"]]}"#,
            "\r\n{\t\"commands\"\n:[[\"PING\"]]\r}\n",
            r#"{"watch": ["a", {"base64": "YQ=="}], "mode": "transaction", "commands": [["GET", "a"]]}"#,
            r#"{"text": null, "commands": [["ECHO", "[\"not\", \"an\"], [\"argv\"]"]]}"#,
        ] {
            assert!(agrees(body.as_bytes()), "declined: {body}");
        }
    }

    #[test]
    fn declines_the_rest_and_leaves_the_errors_to_serde_json() {
        for body in [
            r#"{"text": "SET k v"}"#,
            r#"{"commands": null}"#,
            r#"{"commands": [["SET", 5]]}"#,
            r#"{"commands": [["SET", "k"]], "commands": [["GET", "k"]]}"#,
            r#"{"comm\u0061nds": [["PING"]]}"#,
            r#"{"commands": [["PING"]]} x"#,
            r#"{"commands": [["PING"]]}}"#,
            "{\"commands\": [[\"PING\"]]}\u{c}",
            "\u{c}{\"commands\": [[\"PING\"]]}",
            r#"{"commands": [["PING"]], "mode": }"#,
            r#"{"commands": [["PING"]]"#,
            r#"{"commands": [["PING"]"#,
            r#"{"commands": [["PING"],]}"#,
            r#"{"commands": [["PING",]]}"#,
            r#"{"commands": [[["x"]]]}"#,
            r#"{"commands": [["SET", "k", {"base64": "!!"}]]}"#,
            r#"{"commands": [["SET", "k", {"base64": "YQ==", "x": 1}]]}"#,
            r#"{"commands": [["SET", "\ud800"]]}"#,
            r#"{"commands": [["SET", "\x"]]}"#,
            r#"{"batch_size": -1e3, "commands": [["PING"]]}"#,
            r#"{"commands": [["PING"]], "bogus": 1}"#,
            r#"[["PING"]]"#,
            "{\"commands\": [[\"SET\", \"a\u{1}b\"]]}",
        ] {
            assert!(!agrees(body.as_bytes()), "accepted: {body}");
        }
        // Invalid UTF-8 inside a string.
        assert!(!agrees(b"{\"commands\": [[\"SET\", \"\xff\xfe\"]]}"));
    }

    #[test]
    fn a_big_command_arriving_in_pieces_declines_instead_of_being_reparsed_per_piece() {
        let value = "v".repeat(4 * COMMAND_MAX);
        let body = format!(r#"{{"commands": [["PING"], ["SET", "k", "{value}"], ["PING"]]}}"#);
        assert!(fast(body.as_bytes(), 4096).is_none());
        // Whole, it is taken: nothing is parsed twice.
        assert!(fast(body.as_bytes(), body.len()).is_some());
        assert!(parse_json::<BatchRequest>(body.as_bytes()).is_ok());
    }

    #[test]
    fn a_long_prefix_declines_instead_of_being_rescanned_forever() {
        let pad = "x".repeat(2 * PREFIX_MAX);
        let body = format!(r#"{{"text": null, "mode": "{pad}", "commands": [["PING"]]}}"#);
        assert!(fast(body.as_bytes(), 1024).is_none());
        // serde_json still reads it (and refuses the mode later, by name).
        assert!(parse_json::<BatchRequest>(body.as_bytes()).is_ok());
    }

    /// An argument as it may appear in a body, and whether it is one: a
    /// JSON string of any text (escaped by serde_json), a base64 object, or
    /// something that is not an argument.
    fn arg() -> impl Strategy<Value = (String, bool)> {
        prop_oneof![
            4 => any::<String>().prop_map(|s| (serde_json::to_string(&s).unwrap(), true)),
            2 => "[ -~]{0,8}".prop_map(|s| (serde_json::to_string(&s).unwrap(), true)),
            1 => proptest::collection::vec(any::<u8>(), 0..6)
                .prop_map(|b| (format!("{{\"base64\": \"{}\"}}", BASE64.encode(b)), true)),
            1 => Just(("5".to_string(), false)),
            1 => Just(("{}".to_string(), false)),
        ]
    }

    /// A body, and whether the fast path must take it (a valid request of
    /// its shape, not mutated).
    fn body() -> impl Strategy<Value = (Vec<u8>, bool)> {
        let argv = proptest::collection::vec(arg(), 0..4).prop_map(|a| {
            let ok = a.iter().all(|(_, ok)| *ok);
            (format!("[{}]", a.into_iter().map(|(a, _)| a).collect::<Vec<_>>().join(", ")), ok)
        });
        let commands = proptest::collection::vec(argv, 0..5).prop_map(|c| {
            let ok = c.iter().all(|(_, ok)| *ok);
            (format!("[{}]", c.into_iter().map(|(c, _)| c).collect::<Vec<_>>().join(",")), ok)
        });
        let members = proptest::sample::subsequence(
            vec![r#""mode": "pipeline""#, r#""batch_size": 7"#, r#""watch": ["a", {"base64": "YQ=="}]"#, r#""results": "err\"ors""#],
            0..4,
        );
        (members, any::<usize>(), commands, any::<Option<(usize, u8)>>()).prop_map(
            |(mut members, at, (commands, args_ok), mutation)| {
                let commands = format!(r#""commands": {commands}"#);
                members.insert(at % (members.len() + 1), &commands);
                let mut b = format!("{{{}}}", members.join(", ")).into_bytes();
                // Sometimes one byte changed: mostly invalid JSON, or an odd shape.
                if let Some((at, byte)) = mutation {
                    let at = at % b.len();
                    b[at] = byte;
                }
                (b, args_ok && mutation.is_none())
            },
        )
    }

    /// Limits small enough for the generated commands to break them.
    fn small_limits() -> pipelab_http::config::Limits {
        <pipelab_http::config::Limits as clap::FromArgMatches>::from_arg_matches(
            &<pipelab_http::config::Limits as clap::Args>::augment_args(clap::Command::new("x"))
                .get_matches_from(["x", "--max-arg-bytes", "8", "--max-watch-keys", "2"]),
        )
        .unwrap()
    }

    /// A `commands` array of argvs the checks concern: refused in some
    /// modes or all, empty, with an argument over the limit, WATCH with
    /// too many keys, blocking or running a script.
    fn checked_commands() -> impl Strategy<Value = String> {
        let name = proptest::sample::select(vec![
            "SET", "get", "PING", "SUBSCRIBE", "MULTI", "exec", "WATCH", "BLPOP", "CONFIG", "EVAL", "SELECT", "CLIENT", "NOSUCH",
        ]);
        let arg = prop_oneof![Just("0".to_string()), Just("k".to_string()), Just("reply".to_string()), Just("off".to_string()), "[a-z]{0,12}"];
        let argv = prop_oneof![
            1 => Just(Vec::new()),
            12 => (name, proptest::collection::vec(arg, 0..5)).prop_map(|(n, mut a)| {
                a.insert(0, n.to_string());
                a
            }),
        ];
        proptest::collection::vec(argv, 1..12).prop_map(|c| serde_json::to_string(&c).unwrap())
    }

    /// The batch for `mode` from `body`'s `commands`, as the API makes it
    /// (`prepare`, `into_batch`), with what the checker recorded or without.
    fn batch_of(body: &[u8], checked: Option<Checked>, mode: pipelab_model::Mode, access: pipelab_engine::commands::Access) -> Result<pipelab_engine::exec::Batch, (String, String)> {
        let rules = super::super::refuse::Rules { table: pipelab_engine::commands::fallback::table(), access, allow: Default::default() };
        let limits = small_limits();
        let req = parse_json::<BatchRequest>(body).unwrap();
        let fields = super::super::validate::BatchFields::from(req);
        let prepared = fields.prepare_checked(&limits, checked).map_err(|e| (format!("{:?}", e.code()), e.body.message.clone()))?;
        prepared.into_batch(mode, &limits, &rules).map_err(|e| (format!("{:?}", e.code()), e.body.message.clone()))
    }

    proptest! {
        /// Commands checked as they are parsed, in pieces of any size, get
        /// the answers of the checks made after the body, in every mode
        /// (the mode given after them); the executor's checks and traits
        /// agree; their RESP is their encoding.
        #[test]
        fn commands_checked_while_parsed_answer_as_checked_after(
            commands in checked_commands(),
            step in 1usize..64,
            access in proptest::sample::select(vec![pipelab_engine::commands::Access::Full, pipelab_engine::commands::Access::ReadOnly, pipelab_engine::commands::Access::Operator, pipelab_engine::commands::Access::Visitor]),
        ) {
            use pipelab_model::Mode;
            let body = format!(r#"{{"commands": {commands}, "mode": "transaction"}}"#).into_bytes();
            let table = pipelab_engine::commands::fallback::table();
            let rules = super::super::refuse::Rules { table: table.clone(), access, allow: Default::default() };
            let mut inc = IncrementalBody::new(0).with_checker(Some(super::super::validate::Checker::new(rules, &small_limits(), 0)));
            for piece in body.chunks(step) {
                inc.feed(piece);
            }
            let (_, checked) = inc.finish_checked::<BatchRequest>().unwrap_or_else(|_| panic!("declined"));
            let checked = checked.expect("a record");
            for mode in Mode::ALL {
                let after = batch_of(&body, None, mode, access);
                let during = batch_of(&body, Some(checked.clone()), mode, access);
                match (&after, &during) {
                    (Err(a), Err(d)) => prop_assert_eq!(a, d, "{:?}", mode),
                    (Ok(a), Ok(d)) => {
                        prop_assert!(a.checked.is_none());
                        let pre = d.checked_for(&table).expect("the record holds");
                        let mut encoded = Vec::new();
                        for argv in d.commands.iter() {
                            resp::encode_command(argv, &mut encoded);
                        }
                        prop_assert_eq!(pre.resp(0..pre.resp_len()), encoded.as_slice());
                        prop_assert_eq!(pipelab_engine::exec::validate(a, &table), pipelab_engine::exec::validate(d, &table), "{:?}", mode);
                        let (ta, td) = (pipelab_engine::engine::kill::Traits::of(a, &table), pipelab_engine::engine::kill::Traits::of(d, &table));
                        prop_assert_eq!((ta.blocks, ta.scripts), (td.blocks, td.scripts));
                        let state = d.commands.iter().position(|argv| table.changes_connection_state(argv));
                        prop_assert_eq!(pre.first_state_change(), state);
                    }
                    _ => prop_assert!(false, "{:?}: after {:?}, during {:?}", mode, after.as_ref().err(), during.as_ref().err()),
                }
            }
        }

        #[test]
        fn plain_runs_end_where_a_byte_loop_says(b in proptest::collection::vec(prop_oneof![0x20u8..0x80, any::<u8>()], 0..40)) {
            for j in 0..=b.len() {
                let naive = (j..b.len()).find(|&k| !(0x20..0x80).contains(&b[k]) || b[k] == b'"' || b[k] == b'\\').unwrap_or(b.len());
                prop_assert_eq!(plain_run_end(&b, j), naive, "from {}", j);
            }
        }

        #[test]
        fn accepts_only_what_serde_json_reads_the_same((body, usual) in body()) {
            let accepted = agrees(&body);
            prop_assert!(accepted || !usual, "declined: {}", String::from_utf8_lossy(&body));
        }
    }
}
