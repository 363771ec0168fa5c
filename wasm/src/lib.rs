//! wasm-bindgen bindings over `resp` and `pipelab-model` for the playground (docs/wasm.md).
//!
//! Bindings only: every RESP, inline and display rule lives in `resp`, and
//! the server's rules the page applies in advance in `pipelab-model`. What is
//! here is the crossing into JavaScript: building JS objects (replies through
//! a flat tape, see `Tape`), turning byte offsets into the UTF-16 positions an
//! editor uses, and keeping integers that a JS number cannot hold exact (as
//! `BigInt`).

use js_sys::{Array, BigInt, Float64Array, Object, Reflect, Uint32Array, Uint8Array, JSON};
use resp::Value;
use wasm_bindgen::prelude::*;

/// Largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

fn set(obj: &Object, key: &str, v: impl Into<JsValue>) {
    // Reflect.set on a plain, unfrozen object cannot fail.
    let _ = Reflect::set(obj, &JsValue::from_str(key), &v.into());
}

/// Counts UTF-16 code units of UTF-8 text up to a byte offset, walking forward
/// so that N increasing offsets cost one pass over the text.
///
/// Why: `resp` reports byte offsets; CodeMirror and JS strings index UTF-16
/// code units. Works on any byte offset (also inside a character).
struct Utf16Cursor<'a> {
    bytes: &'a [u8],
    byte: usize,
    units: u32,
}

impl<'a> Utf16Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Utf16Cursor {
            bytes: text.as_bytes(),
            byte: 0,
            units: 0,
        }
    }

    /// UTF-16 index of byte offset `target` (clamped to the text length).
    fn at(&mut self, target: usize) -> u32 {
        let target = target.min(self.bytes.len());
        if target < self.byte {
            self.byte = 0;
            self.units = 0;
        }
        for &b in &self.bytes[self.byte..target] {
            // Each lead byte starts a character (1 unit); 4-byte ones need a surrogate pair.
            if b & 0xC0 != 0x80 {
                self.units += 1 + u32::from(b >= 0xF0);
            }
        }
        self.byte = target;
        self.units
    }
}

fn utf16_len(s: &str) -> u32 {
    s.encode_utf16().count() as u32
}

/// Walks RESP bytes forward and gives the CodeMirror position of a byte
/// offset in the page's RESP view, so that N increasing offsets cost one pass.
///
/// Why here: the view (`web/src/editor/respText.ts`) shows valid UTF-8 as
/// text (one position per UTF-16 unit), every byte that is not valid UTF-8 as
/// one escaped character, and CR LF as its line separator, which CodeMirror
/// counts as one position. Doing this in JavaScript over a 2.5 MB view took
/// longer than parsing the batch.
struct ViewCursor<'a> {
    bytes: &'a [u8],
    byte: usize,
    pos: u32,
}

impl<'a> ViewCursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        ViewCursor { bytes, byte: 0, pos: 0 }
    }

    /// Length of the well-formed UTF-8 sequence at `i` (Unicode Table 3-7,
    /// as `seqLen` in respText.ts), 0 if none.
    fn seq_len(&self, i: usize) -> usize {
        let b = self.bytes;
        let cont = |k: usize, lo: u8, hi: u8| b.get(i + k).is_some_and(|&c| (lo..=hi).contains(&c));
        match b[i] {
            0x00..=0x7f => 1,
            0xc2..=0xdf if cont(1, 0x80, 0xbf) => 2,
            0xe0 if cont(1, 0xa0, 0xbf) && cont(2, 0x80, 0xbf) => 3,
            0xe1..=0xec | 0xee | 0xef if cont(1, 0x80, 0xbf) && cont(2, 0x80, 0xbf) => 3,
            0xed if cont(1, 0x80, 0x9f) && cont(2, 0x80, 0xbf) => 3,
            0xf0 if cont(1, 0x90, 0xbf) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) => 4,
            0xf1..=0xf3 if cont(1, 0x80, 0xbf) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) => 4,
            0xf4 if cont(1, 0x80, 0x8f) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) => 4,
            _ => 0,
        }
    }

    /// View position of byte offset `target` (ascending calls; an offset
    /// between CR and LF gives the position of the line break).
    fn at(&mut self, target: usize) -> u32 {
        let target = target.min(self.bytes.len());
        if target < self.byte {
            (self.byte, self.pos) = (0, 0);
        }
        while self.byte < target {
            let i = self.byte;
            if self.bytes[i] == b'\r' && self.bytes.get(i + 1) == Some(&b'\n') {
                if i + 1 == target {
                    break;
                }
                self.byte += 2;
                self.pos += 1;
                continue;
            }
            match self.seq_len(i) {
                0 => (self.byte, self.pos) = (i + 1, self.pos + 1),
                4 => (self.byte, self.pos) = (i + 4, self.pos + 2),
                n => (self.byte, self.pos) = (i + n, self.pos + 1),
            }
        }
        self.pos
    }
}

/// Inline commands (one per line, split as Redis `sdssplitargs`) -> RESP multibulk bytes.
///
/// Returns `{ resp: Uint8Array, commands: number, errors: [{ line, column,
/// offset, pos, message }], line, textStart, textEnd, respStart, respEnd,
/// viewStart, viewEnd }` where
/// - `errors[].line`/`column` are 1-based (column in characters), `offset` is
///   the byte offset in the UTF-8 text and `pos` the UTF-16 index in `text`;
/// - the other members are `Uint32Array`s with one entry per command: its
///   `line` (1-based), `textStart`/`textEnd` (UTF-16 indices in `text`),
///   `respStart`/`respEnd` (byte offsets in `resp`) and `viewStart`/`viewEnd`
///   (CodeMirror positions of those bytes in the RESP view, see `ViewCursor`).
///
/// Lines with an error produce no command; the others are still encoded.
#[wasm_bindgen(js_name = inlineToResp)]
pub fn inline_to_resp(text: &str) -> Object {
    let parsed = resp::parse_inline(text.as_bytes());
    let n = parsed.commands.len();
    let mut out = Vec::with_capacity(text.len() + n * 16);
    let (mut line, mut text_start, mut text_end) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut resp_start, mut resp_end) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut cursor = Utf16Cursor::new(text);
    for c in &parsed.commands {
        resp_start.push(out.len() as u32);
        resp::encode_command(&c.argv, &mut out);
        resp_end.push(out.len() as u32);
        line.push(c.line as u32);
        text_start.push(cursor.at(c.start));
        text_end.push(cursor.at(c.end));
    }
    let mut view = ViewCursor::new(&out);
    let mut view_start = Vec::with_capacity(n);
    let mut view_end = Vec::with_capacity(n);
    for (&a, &b) in resp_start.iter().zip(&resp_end) {
        view_start.push(view.at(a as usize));
        view_end.push(view.at(b as usize));
    }
    let errors = Array::new();
    let mut cursor = Utf16Cursor::new(text);
    for e in &parsed.errors {
        let o = Object::new();
        set(&o, "line", e.line as u32);
        set(&o, "column", e.column as u32);
        set(&o, "offset", e.offset as u32);
        set(&o, "pos", cursor.at(e.offset));
        set(&o, "message", e.message.as_str());
        errors.push(&o);
    }
    let result = Object::new();
    set(&result, "resp", Uint8Array::from(&out[..]));
    set(&result, "commands", n as u32);
    set(&result, "errors", errors);
    for (name, v) in [
        ("line", &line),
        ("textStart", &text_start),
        ("textEnd", &text_end),
        ("respStart", &resp_start),
        ("respEnd", &resp_end),
        ("viewStart", &view_start),
        ("viewEnd", &view_end),
    ] {
        set(&result, name, Uint32Array::from(&v[..]));
    }
    result
}

/// A RESP reply stream -> reply JSON values (docs/reply-json.md, docs/wasm.md#exports).
///
/// Returns `{ values: ReplyJson[], consumed: number, incomplete: boolean,
/// error?: { offset: number, message: string } }`. `consumed` is the bytes
/// used by `values`; `incomplete` means the stream ends inside a reply;
/// `error.offset` is the byte of the stream where decoding failed. Integers
/// beyond ±(2^53 − 1) are `BigInt`, all others plain numbers.
#[wasm_bindgen(js_name = decodeReplies)]
pub fn decode_replies(bytes: &[u8]) -> Result<Object, JsError> {
    let resp::DecodeAll {
        values,
        consumed,
        error,
        incomplete,
    } = resp::decode_all(bytes);
    let mut tape = Tape::default();
    for v in &values {
        tape.push(v)?;
    }
    let js_values = build_replies(
        &Uint32Array::from(&tape.ops[..]),
        &Float64Array::from(&tape.nums[..]),
        &tape.text,
        &tape.extra,
        values.len() as u32,
    );
    let result = Object::new();
    set(&result, "values", js_values);
    set(&result, "consumed", consumed as u32);
    set(&result, "incomplete", incomplete);
    if let Some(e) = error {
        let o = Object::new();
        set(&o, "offset", e.offset as u32);
        set(&o, "message", e.message.as_str());
        set(&result, "error", o);
    }
    Ok(result)
}

// How reply values cross into JS. Building each object with Reflect.set, or
// printing JSON for JSON.parse, both cost more than decoding (measured: the
// JSON path ran at 0.7x the replies/s of npm redis-parser). Instead Rust
// writes a flat tape: opcodes and string ranges (`ops`), numbers (`nums`),
// one string holding every text (`text`, sliced by UTF-16 ranges), and
// ready-made JS values for the rare cases (`extra`). `buildReplies` turns it
// into reply JSON objects in one tight JS loop. Anything the tape has no
// opcode for (bytes that are not UTF-8, integers beyond 2^53, attributes)
// goes through `resp`'s own reply-JSON serializer, so the shape has one
// source; the Node tests check both paths against the acceptance vectors.
#[wasm_bindgen(inline_js = r#"
export function buildReplies(ops, nums, text, extra, count) {
  let i = 0;
  const str = () => { const s = ops[i++]; return text.slice(s, ops[i++]); };
  const list = () => { const n = ops[i++]; const a = new Array(n); for (let k = 0; k < n; k++) a[k] = one(); return a; };
  function one() {
    switch (ops[i++]) {
      case 0: return { type: 'simple', value: str() };
      case 1: return { type: 'error', value: str() };
      case 2: return { type: 'integer', value: nums[ops[i++]] };
      case 3: return { type: 'bulk', value: str() };
      case 4: return { type: 'null' };
      case 5: return { type: 'array', value: list() };
      case 6: { const v = nums[ops[i++]]; return { type: 'double', value: v === Infinity ? 'inf' : v === -Infinity ? '-inf' : v !== v ? 'nan' : v }; }
      case 7: return { type: 'boolean', value: ops[i++] === 1 };
      case 8: return { type: 'blob_error', value: str() };
      case 9: { const format = str(); return { type: 'verbatim', format, value: str() }; }
      case 10: return { type: 'big_number', value: str() };
      case 11: { const n = ops[i++]; const a = new Array(n); for (let k = 0; k < n; k++) { const key = one(); a[k] = [key, one()]; } return { type: 'map', value: a }; }
      case 12: return { type: 'set', value: list() };
      case 13: return { type: 'push', value: list() };
      case 14: return extra[ops[i++]];
      default: throw new Error('pipelab-wasm: bad reply tape');
    }
  }
  const out = new Array(count);
  for (let k = 0; k < count; k++) out[k] = one();
  return out;
}
"#)]
extern "C" {
    #[wasm_bindgen(js_name = buildReplies)]
    fn build_replies(
        ops: &Uint32Array,
        nums: &Float64Array,
        text: &str,
        extra: &Array,
        count: u32,
    ) -> Array;
}

#[derive(Default)]
struct Tape {
    ops: Vec<u32>,
    nums: Vec<f64>,
    text: String,
    /// UTF-16 length of `text`.
    units: u32,
    extra: Array,
}

impl Tape {
    /// Appends `b` to the text and its UTF-16 range to `ops`; false if not UTF-8.
    fn str(&mut self, b: &[u8]) -> bool {
        let Ok(s) = std::str::from_utf8(b) else {
            return false;
        };
        let start = self.units;
        self.units += if s.is_ascii() {
            s.len() as u32
        } else {
            utf16_len(s)
        };
        self.text.push_str(s);
        self.ops.extend_from_slice(&[start, self.units]);
        true
    }

    fn num(&mut self, x: f64) {
        self.ops.push(self.nums.len() as u32);
        self.nums.push(x);
    }

    fn push(&mut self, v: &Value) -> Result<(), JsError> {
        let mark = (self.ops.len(), self.nums.len(), self.text.len(), self.units);
        if !self.try_push(v) {
            // Roll back whatever part was written, then hand the value over whole.
            self.ops.truncate(mark.0);
            self.nums.truncate(mark.1);
            self.text.truncate(mark.2);
            self.units = mark.3;
            let js = values_to_js(std::slice::from_ref(v))?;
            let arr: Array = js.unchecked_into();
            self.ops.extend_from_slice(&[14, self.extra.length()]);
            self.extra.push(&arr.get(0));
        }
        Ok(())
    }

    /// Writes `v`; false when it needs the fallback (see above).
    fn try_push(&mut self, v: &Value) -> bool {
        let op = |t: &mut Self, code: u32| t.ops.push(code);
        match v {
            Value::Simple(b) => {
                op(self, 0);
                self.str(b)
            }
            Value::Error(b) => {
                op(self, 1);
                self.str(b)
            }
            Value::Integer(i) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(i) => {
                op(self, 2);
                self.num(*i as f64);
                true
            }
            Value::Bulk(b) => {
                op(self, 3);
                self.str(b)
            }
            Value::Null | Value::NullBulk | Value::NullArray => {
                op(self, 4);
                true
            }
            Value::Array(items) => {
                self.ops.extend_from_slice(&[5, items.len() as u32]);
                items.iter().all(|x| self.try_push(x))
            }
            Value::Double(d) => {
                op(self, 6);
                self.num(*d);
                true
            }
            Value::Boolean(b) => {
                self.ops.extend_from_slice(&[7, u32::from(*b)]);
                true
            }
            Value::BlobError(b) => {
                op(self, 8);
                self.str(b)
            }
            Value::Verbatim { format, text } => {
                op(self, 9);
                self.str(format) && self.str(text)
            }
            Value::BigNumber(b) => {
                op(self, 10);
                self.str(b)
            }
            Value::Map(pairs) => {
                self.ops.extend_from_slice(&[11, pairs.len() as u32]);
                pairs
                    .iter()
                    .all(|(k, x)| self.try_push(k) && self.try_push(x))
            }
            Value::Set(items) => {
                self.ops.extend_from_slice(&[12, items.len() as u32]);
                items.iter().all(|x| self.try_push(x))
            }
            Value::Push(items) => {
                self.ops.extend_from_slice(&[13, items.len() as u32]);
                items.iter().all(|x| self.try_push(x))
            }
            Value::Integer(_) | Value::Attributed { .. } => false,
        }
    }
}

/// Reply JSON for `values` as a JS array, through `resp`'s serializer.
///
/// JSON text parsed by the engine's `JSON.parse`; only when an integer does
/// not fit a JS number is the tree built node by node, with `BigInt` there.
fn values_to_js(values: &[Value]) -> Result<JsValue, JsError> {
    if values.iter().any(has_unsafe_integer) {
        let tree = serde_json::to_value(values).map_err(|e| JsError::new(&e.to_string()))?;
        return Ok(json_to_js(&tree));
    }
    let text = serde_json::to_string(values).map_err(|e| JsError::new(&e.to_string()))?;
    JSON::parse(&text).map_err(|_| JsError::new("reply JSON could not be parsed"))
}

fn has_unsafe_integer(v: &Value) -> bool {
    match v {
        Value::Integer(i) => !(-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(i),
        Value::Array(items) | Value::Set(items) | Value::Push(items) => {
            items.iter().any(has_unsafe_integer)
        }
        Value::Map(pairs) => pairs
            .iter()
            .any(|(k, v)| has_unsafe_integer(k) || has_unsafe_integer(v)),
        Value::Attributed { attributes, value } => {
            has_unsafe_integer(value)
                || attributes
                    .iter()
                    .any(|(k, v)| has_unsafe_integer(k) || has_unsafe_integer(v))
        }
        _ => false,
    }
}

/// Any JSON tree -> JS, with integers a JS number cannot hold as `BigInt`.
fn json_to_js(v: &serde_json::Value) -> JsValue {
    use serde_json::Value as J;
    match v {
        J::Null => JsValue::NULL,
        J::Bool(b) => JsValue::from_bool(*b),
        J::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) if (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&i) => {
                JsValue::from_f64(i as f64)
            }
            (Some(i), _) => BigInt::from(i).into(),
            (None, Some(u)) => BigInt::from(u).into(),
            _ => JsValue::from_f64(n.as_f64().unwrap_or(f64::NAN)),
        },
        J::String(s) => JsValue::from_str(s),
        J::Array(items) => items.iter().map(json_to_js).collect::<Array>().into(),
        J::Object(map) => {
            let o = Object::new();
            for (k, v) in map {
                set(&o, k, json_to_js(v));
            }
            o.into()
        }
    }
}

/// Requests as the Redis server reads them (a `*` line starts a multibulk,
/// anything else is an inline command) -> inline text, one command per line.
///
/// Returns `{ text: string, commands: number, respStart, respEnd, viewStart,
/// viewEnd, textStart, textEnd, error?: { offset, pos, line, column, message } }`;
/// the arrays are `Uint32Array`s with one entry per command: `respStart`,
/// `respEnd` (byte offsets in `bytes`), `viewStart`, `viewEnd` (CodeMirror
/// positions of those bytes in the RESP view, see `ViewCursor`), `textStart`,
/// `textEnd` (UTF-16 indices in `text`, line terminator excluded). On an
/// error, the commands before it are still returned; `error.offset` is a byte
/// offset in `bytes` and `error.pos` its view position, `line` 1-based,
/// `column` (1-based, characters) only for inline lines. A stream that ends
/// inside a command is an error whose message says `incomplete`.
#[wasm_bindgen(js_name = respToInline)]
pub fn resp_to_inline(bytes: &[u8]) -> Object {
    let mut reader = resp::RequestReader::new();
    let mut text = String::with_capacity(bytes.len());
    let mut text_units = 0u32;
    let (mut resp_start, mut resp_end, mut text_start, mut text_end) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut view = ViewCursor::new(bytes);
    let (mut view_start, mut view_end) = (Vec::new(), Vec::new());
    let mut pos = 0usize;
    let result = Object::new();
    loop {
        match reader.next(&bytes[pos..], true) {
            Ok(Some(req)) => {
                let line = resp::to_inline(&req.argv);
                text_start.push(text_units);
                text_units += utf16_len(&line);
                text_end.push(text_units);
                text.push_str(&line);
                text.push('\n');
                text_units += 1;
                // `consumed` also covers blank lines before the request; `offset` is where it starts.
                let (start, end) = (req.offset, pos + req.consumed);
                resp_start.push(start as u32);
                resp_end.push(end as u32);
                view_start.push(view.at(start));
                view_end.push(view.at(end));
                if req.consumed == 0 {
                    break; // defensive: never loop without progress
                }
                pos += req.consumed;
            }
            Ok(None) => break,
            Err(e) => {
                let o = Object::new();
                set(&o, "offset", e.offset as u32);
                set(&o, "pos", view.at(e.offset));
                set(&o, "line", e.line as u32);
                if let Some(column) = e.column {
                    set(&o, "column", column as u32);
                }
                set(&o, "message", e.message.as_str());
                set(&result, "error", o);
                break;
            }
        }
    }
    set(&result, "text", text);
    set(&result, "commands", resp_start.len() as u32);
    for (name, v) in [
        ("respStart", &resp_start),
        ("respEnd", &resp_end),
        ("viewStart", &view_start),
        ("viewEnd", &view_end),
        ("textStart", &text_start),
        ("textEnd", &text_end),
    ] {
        set(&result, name, Uint32Array::from(&v[..]));
    }
    result
}

/// One reply, given as reply JSON text (docs/reply-json.md), in the
/// format `redis-cli` prints on a terminal (`(integer) 1`, `1) "a"`, ...).
/// Throws with serde's message when the JSON is not a reply.
#[wasm_bindgen(js_name = formatReply)]
pub fn format_reply(json: &str) -> Result<String, JsError> {
    let value: Value = serde_json::from_str(json).map_err(|e| JsError::new(&e.to_string()))?;
    Ok(value.display())
}

/// One reply, given as reply JSON text, as its canonical RESP bytes.
#[wasm_bindgen(js_name = replyToResp)]
pub fn reply_to_resp(json: &str) -> Result<Uint8Array, JsError> {
    let value: Value = serde_json::from_str(json).map_err(|e| JsError::new(&e.to_string()))?;
    let mut out = Vec::new();
    value.encode(&mut out);
    Ok(Uint8Array::from(&out[..]))
}

/// Least number of round trips of `commands` in `mode` (its API name), as the
/// server counts them when it refuses a batch whose simulated RTT alone would
/// pass its batch timeout. Numbers as JS holds them; whole ones expected.
/// Throws on a mode the API does not know.
#[wasm_bindgen(js_name = minRoundTrips)]
pub fn min_round_trips(mode: &str, commands: f64, batch_size: f64, clients: f64) -> Result<f64, JsError> {
    let mode = pipelab_model::Mode::from_name(mode).ok_or_else(|| JsError::new(&format!("unknown mode {mode:?}")))?;
    Ok(pipelab_model::min_round_trips(mode, commands as u64, batch_size as u64, clients as u64) as f64)
}

/// The sweep's cost model: the time of `total` commands at `batch_size`, in
/// µs (`model` of a sweep report: `rtt_ms`, `wire_us_per_cmd`, `t_cmd_us`).
#[wasm_bindgen(js_name = modelUs)]
pub fn model_us(rtt_ms: f64, wire_us_per_cmd: f64, t_cmd_us: f64, total: f64, batch_size: f64) -> f64 {
    pipelab_model::model_us(rtt_ms, wire_us_per_cmd, t_cmd_us, total as u64, batch_size as u64)
}

/// Commands/s the cost model predicts at `batch_size`; NaN where its time is
/// not positive.
#[wasm_bindgen(js_name = modelRate)]
pub fn model_rate(rtt_ms: f64, wire_us_per_cmd: f64, t_cmd_us: f64, total: f64, batch_size: f64) -> f64 {
    pipelab_model::model_rate(rtt_ms, wire_us_per_cmd, t_cmd_us, total as u64, batch_size as u64)
}
