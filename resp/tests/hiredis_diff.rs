//! Differential test against hiredis (the C parser behind redis-py, from
//! PyPI `hiredis`): thousands of generated inputs, valid and corrupted,
//! decoded by both; values, errors and "incomplete" must agree.
//!
//! hiredis keeps less than we do (a set is a list, a map a Python dict, a
//! verbatim string loses its format, simple and bulk strings are both
//! bytes), so both sides are compared through the same projection (see
//! hiredis_diff.py).
//!
//! Deliberate differences, each counted and reported, never silently
//! skipped (also listed in the crate docs):
//! - `#T` / `#F`: hiredis takes upper case; the RESP3 spec and Redis only
//!   lower case, and we reject it. `#\0` too: hiredis checks the byte with
//!   `strchr("tTfF", c)`, which finds the string's terminating NUL, and
//!   reads it as false (found by the 1M-input run).
//! - `(` with no digits (`(\r\n`, `(-\r\n`): hiredis takes it; we reject it.
//! - the CRLF after a bulk body: hiredis skips two bytes unseen; we check them.
//! - `-1` lengths of `%`, `~`, `>`, `|`, `=`, `!`: hiredis reads a null; only
//!   `$-1` and `*-1` are nulls in RESP (we reject the others).
//! - limits: a bulk over 512 MiB is an error for us (Redis's
//!   proto-max-bulk-len), hiredis waits for it.
//! - hiredis (as built in the PyPI wheel) has no blob error `!`, no streamed
//!   strings or aggregates, and rejects doubles of 326 characters or more,
//!   with a leading `+`, or that underflow to 0 (`1e-400`); C hiredis's
//!   `strtod` and the RESP3 grammar take the last two, and so do we.
//! - attributes: hiredis hands them over as a separate reply; not compared.

mod common;

use common::{seed, Rng};
use resp::{decode_all, Value};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::process::Command;

/// Cases in one run of the test; `PIPELAB_HIREDIS_CASES=1000000` for the
/// long run (docs/testing.md#reliability), checked in chunks of [`CHUNK`].
const CASES: usize = 6000;
const CHUNK: usize = 100_000;

// ---------------------------------------------------------------- generation

struct Gen {
    rng: Rng,
    key: u64,
}

impl Gen {
    fn text(&mut self) -> Vec<u8> {
        let n = self.rng.below(8);
        (0..n).map(|_| *self.rng.pick(b"abcXYZ 019:-+_\xff\xc3\xa9\r\n\t")).collect()
    }
    /// A simple string or error: no CR or LF (corruption may add them).
    fn line(&mut self) -> Vec<u8> {
        let mut t = self.text();
        t.retain(|&b| b != b'\r' && b != b'\n');
        t
    }
    fn scalar(&mut self) -> Value {
        match self.rng.below(13) {
            0 => Value::Simple(self.line()),
            1 => Value::Error(self.line()),
            2 => Value::Integer(*self.rng.pick(&[0, 1, -1, 42, i64::MAX, i64::MIN, 1000000])),
            3 => Value::Integer(self.rng.next() as i64 >> self.rng.below(64)),
            4 | 5 => Value::Bulk(self.text()),
            6 => self.rng.pick(&[Value::Null, Value::NullBulk, Value::NullArray]).clone(),
            7 => Value::Double(*self.rng.pick(&[0.0, -0.0, 1.5, 3.0, -2.25e-7, 1e300, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.1])),
            8 => Value::Double(f64::from_bits(self.rng.next())),
            9 => Value::Boolean(self.rng.chance(50)),
            10 => Value::Verbatim { format: *self.rng.pick(&[*b"txt", *b"mkd"]), text: self.text() },
            11 => Value::BigNumber(self.rng.pick(&["0", "-1", "123456789012345678901234567890", "-98765432109876543210"]).as_bytes().to_vec()),
            _ => Value::Bulk(vec![]),
        }
    }
    /// A map key Python can hash and that is unique in its map.
    fn key(&mut self) -> Value {
        self.key += 1;
        if self.rng.chance(70) {
            Value::Bulk(format!("k{}", self.key).into_bytes())
        } else {
            Value::Integer(1000 + self.key as i64)
        }
    }
    fn value(&mut self, depth: usize) -> Value {
        if depth >= 4 || self.rng.chance(55) {
            return self.scalar();
        }
        let n = self.rng.below(5);
        match self.rng.below(5) {
            0 | 1 => Value::Array((0..n).map(|_| self.value(depth + 1)).collect()),
            2 => Value::Set((0..n).map(|_| self.value(depth + 1)).collect()),
            3 => Value::Push((0..n).map(|_| self.value(depth + 1)).collect()),
            _ => Value::Map((0..n).map(|_| (self.key(), self.value(depth + 1))).collect()),
        }
    }
}

/// Lines on which decoders commonly disagree.
const TRICKY: &[&[u8]] = &[
    b":+1\r\n", b":01\r\n", b":-0\r\n", b":\r\n", b":9223372036854775808\r\n", b":-9223372036854775809\r\n", b": 1\r\n",
    b"$-2\r\n", b"*-2\r\n", b"$01\r\na\r\n", b"$+1\r\na\r\n", b"$1x\r\n", b"*1x\r\n", b"*+0\r\n",
    b"%-1\r\n", b"~-1\r\n", b">-1\r\n", b"=-1\r\n",
    b"#T\r\n", b"#F\r\n", b"#x\r\n", b"#\r\n", b"#tt\r\n",
    b"(\r\n", b"(-\r\n", b"(1a\r\n", b"(+1\r\n",
    b",+1\r\n", b",1e400\r\n", b",1e-400\r\n", b", 1\r\n", b",nan\r\n", b",-nan\r\n", b",INF\r\n", b",-Inf\r\n", b",1.\r\n",
    b",.5\r\n", b",.\r\n", b",1e\r\n", b",0x10\r\n", b",infinity\r\n", b",1e-320\r\n", b",-0\r\n", b",1E+05\r\n",
    b"_x\r\n", b"_\r\n", b"=3\r\ntxt\r\n", b"=4\r\ntxt:\r\n", b"=5\r\ntxtab\r\n",
    b"$1\r\naXY", b"$3\r\nabc\n\r", b"$0\r\n\r\n", b"*0\r\n", b"%0\r\n",
    b"@\r\n", b"x", b"\r\n", b"+\r\n", b"-\r\n",
];

fn corrupt(g: &mut Gen, mut b: Vec<u8>) -> Vec<u8> {
    let rng = &mut g.rng;
    match rng.below(6) {
        0 if !b.is_empty() => {
            let i = rng.below(b.len());
            b[i] = rng.next() as u8;
        }
        1 => {
            let i = rng.below(b.len() + 1);
            b.insert(i, *rng.pick(b"\r\n?.;-+0123456789*$%~>_,#=(:tf"));
        }
        2 if !b.is_empty() => {
            b.remove(rng.below(b.len()));
        }
        3 => {
            let cut = rng.below(b.len() + 1);
            b.truncate(cut);
        }
        4 => {
            // A tricky line at the start of some header line.
            let starts: Vec<usize> = (0..b.len()).filter(|&i| i == 0 || b[i - 1] == b'\n').collect();
            let at = if starts.is_empty() { 0 } else { *rng.pick(&starts) };
            let t = *rng.pick(TRICKY);
            b.splice(at..at, t.iter().copied());
        }
        _ => {
            let t = *rng.pick(TRICKY);
            b.extend_from_slice(t);
        }
    }
    b
}

fn cases(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut g = Gen { rng: Rng(seed), key: 0 };
    let mut out = Vec::new();
    for t in TRICKY {
        out.push(t.to_vec());
        let mut arr = b"*2\r\n".to_vec();
        arr.extend_from_slice(t);
        arr.extend_from_slice(b":1\r\n");
        out.push(arr);
    }
    while out.len() < n {
        let mut bytes = Vec::new();
        for _ in 0..1 + g.rng.below(3) {
            g.value(0).encode(&mut bytes);
        }
        if g.rng.chance(60) {
            for _ in 0..1 + g.rng.below(2) {
                bytes = corrupt(&mut g, bytes);
            }
        }
        out.push(bytes);
    }
    out
}

// ---------------------------------------------------------------- projection

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn double(d: f64) -> Json {
    if d.is_nan() {
        json!({"double": "nan"})
    } else {
        json!({"double": hex(&d.to_bits().to_be_bytes())})
    }
}

/// Python's `==` between two projected dict keys (hash equality).
fn same_key(a: &Json, b: &Json) -> bool {
    fn num(j: &Json) -> Option<f64> {
        // Ints as f64 lose nothing for the keys generated here (< 2^53)
        // except i64 extremes, which are never keys.
        if let Some(i) = j.get("int") {
            return i.as_str()?.parse::<i64>().ok().map(|i| i as f64);
        }
        if let Some(b) = j.get("bool") {
            return Some(if b.as_bool()? { 1.0 } else { 0.0 });
        }
        if let Some(d) = j.get("double") {
            let s = d.as_str()?;
            if s == "nan" {
                return None;
            }
            return Some(f64::from_bits(u64::from_str_radix(s, 16).ok()?));
        }
        None
    }
    if a.is_null() || b.is_null() {
        return a.is_null() && b.is_null();
    }
    if let (Some(x), Some(y)) = (a.get("str"), b.get("str")) {
        return x == y;
    }
    matches!((num(a), num(b)), (Some(x), Some(y)) if x == y)
}

/// What hiredis-py would hand over for `v`; `Err` if Python cannot build it
/// (a list or dict as a dict key).
fn project(v: &Value) -> Result<Json, &'static str> {
    Ok(match v {
        Value::Simple(s) | Value::Bulk(s) | Value::BigNumber(s) => json!({"str": hex(s)}),
        Value::Verbatim { text, .. } => json!({"str": hex(text)}),
        Value::Error(e) | Value::BlobError(e) => json!({"err": String::from_utf8_lossy(e)}),
        Value::Integer(i) => json!({"int": i.to_string()}),
        Value::Null | Value::NullBulk | Value::NullArray => Json::Null,
        Value::Double(d) => double(*d),
        Value::Boolean(b) => json!({"bool": b}),
        Value::Array(items) | Value::Set(items) => json!({"arr": items.iter().map(project).collect::<Result<Vec<_>, _>>()?}),
        Value::Push(items) => json!({"push": items.iter().map(project).collect::<Result<Vec<_>, _>>()?}),
        Value::Map(kv) => {
            let mut pairs: Vec<(Json, Json)> = Vec::new();
            for (k, val) in kv {
                let k = project(k)?;
                if k.get("arr").is_some() || k.get("push").is_some() || k.get("map").is_some() {
                    return Err("unhashable");
                }
                let val = project(val)?;
                match pairs.iter_mut().find(|(pk, _)| same_key(pk, &k)) {
                    Some(p) => p.1 = val,
                    None => pairs.push((k, val)),
                }
            }
            json!({"map": pairs.into_iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()})
        }
        Value::Attributed { .. } => return Err("attribute"),
    })
}

fn has_attribute(v: &Value) -> bool {
    match v {
        Value::Attributed { .. } => true,
        Value::Array(i) | Value::Set(i) | Value::Push(i) => i.iter().any(has_attribute),
        Value::Map(kv) => kv.iter().any(|(k, v)| has_attribute(k) || has_attribute(v)),
        _ => false,
    }
}

fn has_duplicate_keys(v: &Value) -> bool {
    match v {
        Value::Array(i) | Value::Set(i) | Value::Push(i) => i.iter().any(has_duplicate_keys),
        Value::Map(kv) => {
            let keys: Vec<Json> = kv.iter().filter_map(|(k, _)| project(k).ok()).collect();
            keys.iter().enumerate().any(|(i, a)| keys[..i].iter().any(|b| same_key(a, b)))
                || kv.iter().any(|(k, v)| has_duplicate_keys(k) || has_duplicate_keys(v))
        }
        Value::Attributed { value, .. } => has_duplicate_keys(value),
        _ => false,
    }
}

/// Our result, projected: (values, end, first unprojectable index).
fn ours(input: &[u8]) -> (Vec<Json>, &'static str, Option<resp::DecodeError>, Vec<Value>) {
    let all = decode_all(input);
    let mut values = Vec::new();
    for v in &all.values {
        match project(v) {
            Ok(j) => values.push(j),
            Err("unhashable") => return (values, "unhashable", None, all.values),
            Err(_) => return (values, "attribute", None, all.values),
        }
    }
    let end = if all.error.is_some() {
        "error"
    } else if all.incomplete {
        "incomplete"
    } else {
        "ok"
    };
    (values, end, all.error, all.values)
}

/// The header line at `offset` (type byte and content, without CRLF).
fn line_at(input: &[u8], offset: usize) -> &[u8] {
    let rest = &input[offset.min(input.len())..];
    let end = rest.windows(2).position(|w| w == b"\r\n").unwrap_or(rest.len());
    &rest[..end]
}

/// A double line we accept and the PyPI hiredis build does not: a leading
/// `+`, or digits that underflow to 0.
fn lenient_double(line: &[u8]) -> bool {
    let Some(body) = line.strip_prefix(b",").and_then(|l| l.strip_suffix(b"\r")) else { return false };
    let Ok(s) = std::str::from_utf8(body) else { return false };
    let Ok(d) = s.parse::<f64>() else { return false };
    s.starts_with('+') || (d == 0.0 && s.bytes().take_while(|b| *b != b'e' && *b != b'E').any(|b| (b'1'..=b'9').contains(&b)))
}

/// Which deliberate difference explains a disagreement, if any.
fn explain(input: &[u8], our_err: Option<&resp::DecodeError>, their_end: &str, their_msg: &str) -> Option<&'static str> {
    if let Some(e) = our_err {
        let line = line_at(input, e.offset);
        let m = e.message.as_str();
        if m.starts_with("invalid boolean") && (line == b"#T" || line == b"#F") {
            return Some("#T/#F (hiredis takes upper case)");
        }
        if m.starts_with("invalid boolean") && line == b"#\0" {
            return Some("#\\0 (hiredis's strchr(\"tTfF\", c) matches the NUL: false)");
        }
        if m.starts_with("invalid big number") && (line == b"(" || line == b"(-") {
            return Some("big number without digits (hiredis takes it)");
        }
        if m.contains("is not followed by CRLF") {
            return Some("CRLF after a bulk body (hiredis does not check it)");
        }
        if m.contains("length -1 (must be >= 0)") {
            return Some("-1 length of a RESP3 type (hiredis reads a null)");
        }
        if m.contains("exceeds the limit") {
            return Some("limits (hiredis has none on bulk length)");
        }
    }
    if their_end == "error" {
        if their_msg == "Bad double value" && input.split(|&b| b == b'\n').any(lenient_double) {
            return Some("doubles with '+' or underflowing to 0 (PyPI hiredis rejects, C hiredis takes)");
        }
        if their_msg.contains("got \"!\"") {
            return Some("blob error '!' (not in this hiredis)");
        }
        if their_msg.contains("got \".\"") || their_msg.contains("got \";\"") || input.windows(3).any(|w| w == b"?\r\n") {
            return Some("streamed types (not in hiredis)");
        }
        if their_msg.contains("Double value is too large") {
            return Some("doubles of 326+ characters (hiredis rejects)");
        }
    }
    None
}

#[test]
fn agrees_with_hiredis() {
    let have = Command::new("python3").args(["-c", "import hiredis"]).status().map(|s| s.success()).unwrap_or(false);
    assert!(have, "python3 with the `hiredis` package is needed (scripts/setup.sh installs it)");
    let total: usize = std::env::var("PIPELAB_HIREDIS_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(CASES);
    let seed = seed(42);
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unexplained = Vec::new();
    let mut done = 0;
    for chunk in 0.. {
        if done >= total {
            break;
        }
        let n = CHUNK.min(total - done).max(TRICKY.len() * 2 + 1);
        let cases = cases(seed.wrapping_add(chunk), n);
        compare_chunk(&cases, done, &mut tally, &mut unexplained);
        done += cases.len();
    }
    eprintln!("{done} cases:");
    for (k, n) in &tally {
        eprintln!("  {n:7}  {k}");
    }
    assert!(unexplained.is_empty(), "{} unexplained differences:\n{}", unexplained.len(), unexplained.iter().take(15).cloned().collect::<Vec<_>>().join("\n"));
    let agree: usize = tally.iter().filter(|(k, _)| k.starts_with("agree")).map(|(_, n)| n).sum();
    assert!(agree > done * 3 / 4, "only {agree} of {done} agree exactly");
    assert!(tally.get("agree: error").copied().unwrap_or(0) > done / 12, "the generator must produce many errors");
    assert!(tally.get("agree: incomplete").copied().unwrap_or(0) > done / 30);
}

/// Decodes `cases` with both and adds each outcome to `tally` (case
/// numbers from `first`); a difference no deliberate one explains goes to
/// `unexplained`.
fn compare_chunk(cases: &[Vec<u8>], first: usize, tally: &mut BTreeMap<&'static str, usize>, unexplained: &mut Vec<String>) {
    let dir = std::env::temp_dir().join(format!("resp-hiredis-{}-{first}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input_file = dir.join("cases.hex");
    std::fs::write(&input_file, cases.iter().map(|c| hex(c) + "\n").collect::<String>()).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hiredis_diff.py");
    let out = Command::new("python3").arg(script).arg(&input_file).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "hiredis_diff.py: {}", String::from_utf8_lossy(&out.stderr));
    let theirs: Vec<Json> = String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(theirs.len(), cases.len());

    for (i, (input, their)) in cases.iter().zip(&theirs).enumerate() {
        let i = first + i;
        let (values, end, err, raw) = ours(input);
        let their_values = their["values"].as_array().unwrap();
        let their_end = their["end"].as_str().unwrap();
        let their_msg = their["message"].as_str().unwrap_or("");
        let attribute_line = input.iter().enumerate().any(|(i, &b)| b == b'|' && (i == 0 || input[i - 1] == b'\n'));
        if end == "attribute" || raw.iter().any(has_attribute) || (attribute_line && (&values != their_values || end != their_end)) {
            *tally.entry("not compared: attributes").or_default() += 1;
            continue;
        }
        if &values == their_values && end == their_end {
            *tally.entry(match end {
                "ok" => "agree: values",
                "error" => "agree: error",
                "incomplete" => "agree: incomplete",
                _ => "agree: unhashable key",
            })
            .or_default() += 1;
            continue;
        }
        // Up to where the two first differ, they must agree.
        let k = values.iter().zip(their_values).take_while(|(a, b)| a == b).count();
        let ours_stopped = k == values.len() && end != "ok";
        let theirs_stopped = k == their_values.len() && their_end != "ok";
        let why = if their_end == "unhashable" && end != "ok" {
            // hiredis-py hashes an aggregate map key as soon as it opens,
            // before the malformed or missing bytes after it.
            Some("not compared: hiredis-py fails on an aggregate map key before the reply ends")
        } else if raw.iter().any(has_duplicate_keys) {
            // hiredis-py builds a dict as its elements arrive, and a repeated
            // key sends later values to the wrong keys.
            *tally.entry("not compared: repeated map keys (hiredis-py mis-assigns values)").or_default() += 1;
            continue;
        } else {
            explain(input, err.as_ref(), their_end, their_msg)
        };
        match why {
            Some(why) if ours_stopped || theirs_stopped => *tally.entry(why).or_default() += 1,
            _ => unexplained.push(format!(
                "case {i} {:?}\n  ours:   {end} {} {:?}\n  hiredis: {their_end} {their_msg} {}",
                String::from_utf8_lossy(input),
                serde_json::to_string(&values).unwrap(),
                err.map(|e| e.to_string()),
                serde_json::to_string(their_values).unwrap()
            )),
        }
    }
}
