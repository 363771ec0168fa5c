//! Reading the values of a `COMMAND` reply as Redis writes them in RESP2
//! (flat arrays, key/value arrays) or RESP3 (sets and maps).

use resp::Value;

/// The items of an array (RESP2) or set (RESP3).
pub(crate) fn list(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(a) | Value::Set(a) | Value::Push(a) => Some(a),
        Value::Attributed { value, .. } => list(value),
        _ => None,
    }
}

/// A string reply's text (simple, bulk or verbatim), lossily as UTF-8.
pub(crate) fn text(v: &Value) -> Option<String> {
    match v {
        Value::Simple(b) | Value::Bulk(b) | Value::Verbatim { text: b, .. } => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Attributed { value, .. } => text(value),
        _ => None,
    }
}

/// A string reply's bytes (simple, bulk or verbatim).
pub(crate) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Simple(b) | Value::Bulk(b) | Value::Verbatim { text: b, .. } => Some(b),
        Value::Attributed { value, .. } => bytes(value),
        _ => None,
    }
}

pub(crate) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Integer(n) => Some(*n),
        Value::Attributed { value, .. } => int(value),
        _ => None,
    }
}

/// The fields of a map: a RESP3 map, or a RESP2 array of alternating
/// names and values (Redis's key specs in RESP2).
pub(crate) fn fields(v: &Value) -> Option<Vec<(String, &Value)>> {
    match v {
        Value::Map(pairs) => Some(pairs.iter().filter_map(|(k, v)| Some((text(k)?, v))).collect()),
        Value::Attributed { value, .. } => fields(value),
        _ => {
            let items = list(v)?;
            Some(items.chunks_exact(2).filter_map(|kv| Some((text(&kv[0])?, &kv[1]))).collect())
        }
    }
}
