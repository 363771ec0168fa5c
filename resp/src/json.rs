//! Reply JSON ("typed JSON", docs/reply-json.md): one RESP value as one
//! JSON object, lossless in both directions.
//!
//! - strings (simple, error, bulk, blob error, verbatim) carry `"value"`
//!   when they are valid UTF-8, else `"base64"` (standard alphabet, padded);
//! - integers are JSON numbers over the full i64 range;
//! - doubles are numbers, or the strings `"inf"`, `"-inf"`, `"nan"`;
//! - maps and attributes are arrays of `[key, value]` pairs;
//! - the three nulls are all `{"type":"null"}` (deserialized as RESP3 `_`);
//! - attributes ride on the value they precede as `"attributes"`;
//! - a verbatim format that is not UTF-8 (Redis only sends `txt` and `mkd`)
//!   is `"format_base64"` instead of `"format"`.

use crate::value::Value;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use core::fmt;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Error as _, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A command argument in JSON: a string, or `{"base64": "..."}` for bytes
/// that are not UTF-8 (docs/reply-json.md#command-arguments).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonBytes(pub Vec<u8>);

impl Serialize for JsonBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match core::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("base64", &STANDARD.encode(&self.0))?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for JsonBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Text(String),
            Binary { base64: String },
        }
        match Wire::deserialize(d).map_err(|_| D::Error::custom("expected a string or {\"base64\": \"...\"}"))? {
            Wire::Text(t) => Ok(JsonBytes(t.into_bytes())),
            Wire::Binary { base64 } => {
                STANDARD.decode(base64.as_bytes()).map(JsonBytes).map_err(|e| D::Error::custom(alloc::format!("invalid base64: {}", e)))
            }
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Simple(_) => "simple",
        Value::Error(_) => "error",
        Value::Integer(_) => "integer",
        Value::Bulk(_) => "bulk",
        Value::Null | Value::NullBulk | Value::NullArray => "null",
        Value::Array(_) => "array",
        Value::Double(_) => "double",
        Value::Boolean(_) => "boolean",
        Value::BlobError(_) => "blob_error",
        Value::Verbatim { .. } => "verbatim",
        Value::BigNumber(_) => "big_number",
        Value::Map(_) => "map",
        Value::Set(_) => "set",
        Value::Push(_) => "push",
        Value::Attributed { value, .. } => type_name(value),
    }
}

fn text_entry<M: SerializeMap>(m: &mut M, bytes: &[u8]) -> Result<(), M::Error> {
    match core::str::from_utf8(bytes) {
        Ok(s) => m.serialize_entry("value", s),
        Err(_) => m.serialize_entry("base64", &STANDARD.encode(bytes)),
    }
}

/// Pairs as `[[k, v], ...]`.
struct Pairs<'a>(&'a [(Value, Value)]);
impl Serialize for Pairs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(k, v)| [k, v]))
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Attributes (possibly several layers) go on the innermost value.
        let mut attributes: Vec<&(Value, Value)> = Vec::new();
        let mut v = self;
        while let Value::Attributed { attributes: a, value } = v {
            attributes.extend(a.iter());
            v = value;
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("type", type_name(v))?;
        match v {
            Value::Simple(b) | Value::Error(b) | Value::Bulk(b) | Value::BlobError(b) => text_entry(&mut m, b)?,
            Value::Integer(i) => m.serialize_entry("value", i)?,
            Value::Null | Value::NullBulk | Value::NullArray | Value::Attributed { .. } => {}
            Value::Array(items) | Value::Set(items) | Value::Push(items) => m.serialize_entry("value", items)?,
            Value::Double(d) if d.is_nan() => m.serialize_entry("value", "nan")?,
            Value::Double(d) if d.is_infinite() => m.serialize_entry("value", if *d > 0.0 { "inf" } else { "-inf" })?,
            Value::Double(d) => m.serialize_entry("value", d)?,
            Value::Boolean(b) => m.serialize_entry("value", b)?,
            Value::Verbatim { format, text } => {
                // Redis sends `txt` or `mkd`; other bytes stay lossless.
                match core::str::from_utf8(format) {
                    Ok(f) => m.serialize_entry("format", f)?,
                    Err(_) => m.serialize_entry("format_base64", &STANDARD.encode(format))?,
                }
                text_entry(&mut m, text)?;
            }
            Value::BigNumber(n) => m.serialize_entry("value", &String::from_utf8_lossy(n))?,
            Value::Map(kv) => m.serialize_entry("value", &Pairs(kv))?,
        }
        if !attributes.is_empty() {
            m.serialize_entry("attributes", &AttrList(&attributes))?;
        }
        m.end()
    }
}

struct AttrList<'a>(&'a [&'a (Value, Value)]);
impl Serialize for AttrList<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(k, v)| [k, v]))
    }
}

/// The JSON object as it arrives, before its `"value"` is read by `"type"`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    value: Option<WireValue>,
    #[serde(default)]
    base64: Option<String>,
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    format_base64: Option<String>,
    #[serde(default)]
    attributes: Option<Vec<(Value, Value)>>,
}

enum WireValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    Pairs(Vec<(Value, Value)>),
    List(Vec<Value>),
}

/// One element of an array `"value"`: a reply object, or a `[key, value]` pair.
enum Element {
    Reply(Value),
    Pair(Value, Value),
}

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Element;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a reply object or a [key, value] pair")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Element, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Element::Reply)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Element, A::Error> {
                let k = seq.next_element::<Value>()?.ok_or_else(|| A::Error::custom("a [key, value] pair needs 2 elements, got 0"))?;
                let v = seq.next_element::<Value>()?.ok_or_else(|| A::Error::custom("a [key, value] pair needs 2 elements, got 1"))?;
                if seq.next_element::<IgnoredAny>()?.is_some() {
                    return Err(A::Error::custom("a [key, value] pair needs 2 elements, got more"));
                }
                Ok(Element::Pair(k, v))
            }
        }
        d.deserialize_any(V)
    }
}

/// Hand-written rather than `#[serde(untagged)]`, so that an error deep
/// inside says what is wrong instead of "did not match any variant".
impl<'de> Deserialize<'de> for WireValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WireValue;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("\"value\": a number, boolean, string, or an array of replies or of [key, value] pairs")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<WireValue, E> {
                Ok(WireValue::Bool(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<WireValue, E> {
                Ok(WireValue::Int(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<WireValue, E> {
                // Beyond i64: only a double can hold it.
                Ok(i64::try_from(v).map(WireValue::Int).unwrap_or(WireValue::Float(v as f64)))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<WireValue, E> {
                Ok(WireValue::Float(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<WireValue, E> {
                Ok(WireValue::Text(String::from(v)))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<WireValue, E> {
                Ok(WireValue::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<WireValue, A::Error> {
                let mut list = Vec::new();
                let mut pairs = Vec::new();
                while let Some(e) = seq.next_element::<Element>()? {
                    match e {
                        Element::Reply(v) => list.push(v),
                        Element::Pair(k, v) => pairs.push((k, v)),
                    }
                    if !list.is_empty() && !pairs.is_empty() {
                        return Err(A::Error::custom("\"value\" mixes replies and [key, value] pairs"));
                    }
                }
                Ok(if pairs.is_empty() { WireValue::List(list) } else { WireValue::Pairs(pairs) })
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        let bytes = |w: &Wire| -> Result<Vec<u8>, D::Error> {
            match (&w.value, &w.base64) {
                (Some(WireValue::Text(t)), None) => Ok(t.clone().into_bytes()),
                (None, Some(b)) => STANDARD.decode(b.as_bytes()).map_err(|e| D::Error::custom(alloc::format!("invalid base64: {}", e))),
                _ => Err(D::Error::custom(alloc::format!("type {} needs a string \"value\" or \"base64\"", w.ty))),
            }
        };
        let list = |w: Wire| -> Result<Vec<Value>, D::Error> {
            match w.value {
                Some(WireValue::List(l)) => Ok(l),
                Some(WireValue::Pairs(p)) if p.is_empty() => Ok(Vec::new()),
                _ => Err(D::Error::custom(alloc::format!("type {} needs an array \"value\"", w.ty))),
            }
        };
        let attributes = w.attributes.clone();
        let v = match w.ty.as_str() {
            "simple" => Value::Simple(bytes(&w)?),
            "error" => Value::Error(bytes(&w)?),
            "bulk" => Value::Bulk(bytes(&w)?),
            "blob_error" => Value::BlobError(bytes(&w)?),
            "verbatim" => {
                let f = match (&w.format, &w.format_base64) {
                    (Some(f), None) => f.clone().into_bytes(),
                    (None, Some(b)) => STANDARD.decode(b.as_bytes()).map_err(|e| D::Error::custom(alloc::format!("invalid base64 in \"format_base64\": {}", e)))?,
                    (None, None) => b"txt".to_vec(),
                    (Some(_), Some(_)) => return Err(D::Error::custom("verbatim: \"format\" or \"format_base64\", not both")),
                };
                let format: [u8; 3] = f.as_slice().try_into().map_err(|_| D::Error::custom("verbatim \"format\" must be 3 bytes"))?;
                Value::Verbatim { format, text: bytes(&w)? }
            }
            "integer" => match w.value {
                Some(WireValue::Int(i)) => Value::Integer(i),
                _ => return Err(D::Error::custom("type integer needs an integer \"value\" in the i64 range")),
            },
            "double" => Value::Double(match w.value {
                Some(WireValue::Int(i)) => i as f64,
                Some(WireValue::Float(f)) => f,
                Some(WireValue::Text(ref t)) if t == "inf" => f64::INFINITY,
                Some(WireValue::Text(ref t)) if t == "-inf" => f64::NEG_INFINITY,
                Some(WireValue::Text(ref t)) if t == "nan" => f64::NAN,
                _ => return Err(D::Error::custom("type double needs a number or \"inf\", \"-inf\", \"nan\"")),
            }),
            "boolean" => match w.value {
                Some(WireValue::Bool(b)) => Value::Boolean(b),
                _ => return Err(D::Error::custom("type boolean needs true or false")),
            },
            "big_number" => match w.value {
                Some(WireValue::Text(t)) if { let d = t.strip_prefix('-').unwrap_or(&t); !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) } => {
                    Value::BigNumber(t.into_bytes())
                }
                _ => return Err(D::Error::custom("type big_number needs a string of digits")),
            },
            "null" => Value::Null,
            "array" => Value::Array(list(w)?),
            "set" => Value::Set(list(w)?),
            "push" => Value::Push(list(w)?),
            "map" => match w.value {
                Some(WireValue::Pairs(p)) => Value::Map(p),
                Some(WireValue::List(l)) if l.is_empty() => Value::Map(Vec::new()),
                _ => return Err(D::Error::custom("type map needs an array of [key, value] pairs")),
            },
            other => return Err(D::Error::custom(alloc::format!("unknown reply type {:?}", other))),
        };
        Ok(match attributes {
            Some(a) => Value::Attributed { attributes: a, value: Box::new(v) },
            None => v,
        })
    }
}
