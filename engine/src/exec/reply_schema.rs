//! The OpenAPI schema of reply JSON, the JSON form of a `resp::Value`
//! (`resp::json`, docs/reply-json.md): the `resp` crate is also built for WebAssembly and
//! knows nothing of OpenAPI, so its shape is described here, where the
//! executor's [`super::CommandResult`] refers to it. It describes, never
//! carries, data; the API tests check real replies against it.
#![allow(dead_code)]


/// One RESP2/RESP3 value as reply JSON (docs/reply-json.md#types).
///
/// `type` is one of simple, error, integer, bulk, null, array, double,
/// boolean, blob_error, verbatim, big_number, map, set, push. Strings carry
/// `value`, or `base64` when not valid UTF-8; arrays, sets and pushes carry
/// a list of values; maps and attributes a list of `[key, value]` pairs;
/// doubles a number or "inf", "-inf", "nan".
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"type": "bulk", "value": "hello"})))]
pub struct Reply {
    #[cfg_attr(feature = "openapi", schema(example = "bulk"))]
    pub r#type: String,
    /// The payload; its JSON type depends on `type`.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub value: Option<serde_json::Value>,
    /// Bytes that are not valid UTF-8, standard base64.
    pub base64: Option<String>,
    /// Verbatim strings: the 3-character format, e.g. `txt`.
    pub format: Option<String>,
    /// RESP3 attributes attached to this value: `[key, value]` pairs.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Object>>))]
    pub attributes: Option<Vec<serde_json::Value>>,
}

