//! wasm-bindgen bindings over `resp` for the playground (CONTRACT.md section 4).
//!
//! Bindings only: every RESP, inline and display rule lives in `resp`. What is
//! here is the crossing into JavaScript: building JS objects, turning byte
//! offsets into the UTF-16 positions an editor uses, and keeping integers that
//! a JS number cannot hold exact (as `BigInt`).

use js_sys::{Array, BigInt, Object, Reflect, Uint32Array, Uint8Array, JSON};
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
        Utf16Cursor { bytes: text.as_bytes(), byte: 0, units: 0 }
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

/// Inline commands (one per line, split as Redis `sdssplitargs`) -> RESP multibulk bytes.
///
/// Returns `{ resp: Uint8Array, commands: number, errors: [{ line, column,
/// offset, pos, message }], spans: Uint32Array }` where
/// - `errors[].line`/`column` are 1-based (column in characters), `offset` is
///   the byte offset in the UTF-8 text and `pos` the UTF-16 index in `text`;
/// - `spans` holds 5 numbers per command: `line` (1-based), `textStart`,
///   `textEnd` (UTF-16 indices in `text`), `respStart`, `respEnd` (byte
///   offsets in `resp`).
///
/// Lines with an error produce no command; the others are still encoded.
#[wasm_bindgen(js_name = inlineToResp)]
pub fn inline_to_resp(text: &str) -> Object {
    let parsed = resp::parse_inline(text.as_bytes());
    let mut out = Vec::with_capacity(text.len() + parsed.commands.len() * 16);
    let mut spans = Vec::with_capacity(parsed.commands.len() * 5);
    let mut cursor = Utf16Cursor::new(text);
    for c in &parsed.commands {
        let resp_start = out.len() as u32;
        resp::encode_command(&c.argv, &mut out);
        spans.extend_from_slice(&[
            c.line as u32,
            cursor.at(c.start),
            cursor.at(c.end),
            resp_start,
            out.len() as u32,
        ]);
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
    set(&result, "commands", parsed.commands.len() as u32);
    set(&result, "errors", errors);
    set(&result, "spans", Uint32Array::from(&spans[..]));
    result
}

/// A RESP reply stream -> reply JSON values (CONTRACT.md sections 1 and 4).
///
/// Returns `{ values: ReplyJson[], consumed: number, incomplete: boolean,
/// error?: { offset: number, message: string } }`. `consumed` is the bytes
/// used by `values`; `incomplete` means the stream ends inside a reply;
/// `error.offset` is the byte of the stream where decoding failed. Integers
/// beyond ±(2^53 − 1) are `BigInt`, all others plain numbers.
#[wasm_bindgen(js_name = decodeReplies)]
pub fn decode_replies(bytes: &[u8]) -> Result<Object, JsError> {
    let resp::DecodeAll { values, consumed, error, incomplete } = resp::decode_all(bytes);
    let result = Object::new();
    set(&result, "values", values_to_js(&values)?);
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

/// Reply JSON for `values` as a JS array.
///
/// Fast path: one JSON text parsed by the engine's `JSON.parse` (far cheaper
/// than building each object across the boundary). Only when an integer does
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
        Value::Map(pairs) => pairs.iter().any(|(k, v)| has_unsafe_integer(k) || has_unsafe_integer(v)),
        Value::Attributed { attributes, value } => {
            has_unsafe_integer(value)
                || attributes.iter().any(|(k, v)| has_unsafe_integer(k) || has_unsafe_integer(v))
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
/// Returns `{ text: string, commands: number, spans: Uint32Array, error?:
/// { offset, line, column, message } }`; `spans` holds 4 numbers per command:
/// `respStart`, `respEnd` (byte offsets in `bytes`), `textStart`, `textEnd`
/// (UTF-16 indices in `text`, line terminator excluded). On an error, the
/// commands before it are still returned; `error.offset` is a byte offset in
/// `bytes`, `line` 1-based, `column` (1-based, characters) only for inline lines. A stream that ends inside a command is
/// an error whose message says `incomplete`.
#[wasm_bindgen(js_name = respToInline)]
pub fn resp_to_inline(bytes: &[u8]) -> Object {
    let mut reader = resp::RequestReader::new();
    let mut text = String::with_capacity(bytes.len());
    let mut text_units = 0u32;
    let mut spans: Vec<u32> = Vec::new();
    let mut pos = 0usize;
    let mut commands = 0u32;
    let result = Object::new();
    loop {
        match reader.next(&bytes[pos..], true) {
            Ok(Some(req)) => {
                let start = text_units;
                let line = resp::to_inline(&req.argv);
                text_units += utf16_len(&line);
                text.push_str(&line);
                // `consumed` also covers blank lines before the request; `offset` is where it starts.
                spans.extend_from_slice(&[req.offset as u32, (pos + req.consumed) as u32, start, text_units]);
                text.push('\n');
                text_units += 1;
                commands += 1;
                if req.consumed == 0 {
                    break; // defensive: never loop without progress
                }
                pos += req.consumed;
            }
            Ok(None) => break,
            Err(e) => {
                let o = Object::new();
                set(&o, "offset", e.offset as u32);
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
    set(&result, "commands", commands);
    set(&result, "spans", Uint32Array::from(&spans[..]));
    result
}

/// One reply, given as reply JSON text (CONTRACT.md section 1), in the
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
