//! Reply JSON, row by row of docs/reply-json.md#types, both directions.
#![cfg(feature = "json")]

use resp::json::JsonBytes;
use resp::{decode_all, Value};
use serde_json::{json, Value as Json};

/// The reply JSON of the single value in `bytes`.
fn of(bytes: &[u8]) -> Json {
    let all = decode_all(bytes);
    assert!(all.error.is_none() && !all.incomplete && all.values.len() == 1, "{:?}: {all:?}", String::from_utf8_lossy(bytes));
    serde_json::to_value(&all.values[0]).unwrap()
}

/// Each row: RESP bytes → JSON, and JSON → a value whose JSON is the same.
fn row(bytes: &[u8], expected: Json) {
    let got = of(bytes);
    assert_eq!(got, expected, "{:?}", String::from_utf8_lossy(bytes));
    let back: Value = serde_json::from_value(got.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), got);
}

#[test]
fn contract_table() {
    row(b"+OK\r\n", json!({"type":"simple","value":"OK"}));
    row(b"-ERR bad\r\n", json!({"type":"error","value":"ERR bad"}));
    row(b":-42\r\n", json!({"type":"integer","value":-42}));
    row(b"$5\r\nhello\r\n", json!({"type":"bulk","value":"hello"}));
    row(b"$3\r\n\xff\x00\x01\r\n", json!({"type":"bulk","base64":"/wAB"}));
    row(b"_\r\n", json!({"type":"null"}));
    row(b"$-1\r\n", json!({"type":"null"}));
    row(b"*-1\r\n", json!({"type":"null"}));
    row(b"*1\r\n:1\r\n", json!({"type":"array","value":[{"type":"integer","value":1}]}));
    row(b",1.5\r\n", json!({"type":"double","value":1.5}));
    row(b",inf\r\n", json!({"type":"double","value":"inf"}));
    row(b",-inf\r\n", json!({"type":"double","value":"-inf"}));
    row(b",nan\r\n", json!({"type":"double","value":"nan"}));
    row(b"#t\r\n", json!({"type":"boolean","value":true}));
    row(b"#f\r\n", json!({"type":"boolean","value":false}));
    row(b"!3\r\nERR\r\n", json!({"type":"blob_error","value":"ERR"}));
    row(b"=15\r\ntxt:Some string\r\n", json!({"type":"verbatim","format":"txt","value":"Some string"}));
    row(b"(123456789012345678901234567890\r\n", json!({"type":"big_number","value":"123456789012345678901234567890"}));
    row(b"%1\r\n+a\r\n:1\r\n", json!({"type":"map","value":[[{"type":"simple","value":"a"},{"type":"integer","value":1}]]}));
    row(b"~1\r\n:1\r\n", json!({"type":"set","value":[{"type":"integer","value":1}]}));
    row(b">2\r\n+a\r\n:1\r\n", json!({"type":"push","value":[{"type":"simple","value":"a"},{"type":"integer","value":1}]}));
    row(
        b"|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n",
        json!({"type":"bulk","value":"hi","attributes":[[{"type":"simple","value":"ttl"},{"type":"integer","value":3600}]]}),
    );
    // Streamed forms decode to the complete value.
    row(b"$?\r\n;2\r\nhe\r\n;3\r\nllo\r\n;0\r\n", json!({"type":"bulk","value":"hello"}));
    row(b"*?\r\n:1\r\n.\r\n", json!({"type":"array","value":[{"type":"integer","value":1}]}));
    row(b"~?\r\n:1\r\n.\r\n", json!({"type":"set","value":[{"type":"integer","value":1}]}));
    row(b"%?\r\n+a\r\n:1\r\n.\r\n", json!({"type":"map","value":[[{"type":"simple","value":"a"},{"type":"integer","value":1}]]}));
}

#[test]
fn exact_text_of_a_few_rows() {
    let text = |b: &[u8]| serde_json::to_string(&decode_all(b).values[0]).unwrap();
    assert_eq!(text(b"+OK\r\n"), r#"{"type":"simple","value":"OK"}"#);
    assert_eq!(text(b"=15\r\ntxt:Some string\r\n"), r#"{"type":"verbatim","format":"txt","value":"Some string"}"#);
    assert_eq!(text(b"|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n"), r#"{"type":"bulk","value":"hi","attributes":[[{"type":"simple","value":"ttl"},{"type":"integer","value":3600}]]}"#);
    assert_eq!(text(b"*-1\r\n"), r#"{"type":"null"}"#);
}

#[test]
fn integers_span_i64_as_json_numbers() {
    row(b":9223372036854775807\r\n", json!({"type":"integer","value":9223372036854775807i64}));
    row(b":-9223372036854775808\r\n", json!({"type":"integer","value":-9223372036854775808i64}));
    assert_eq!(serde_json::to_string(&Value::Integer(i64::MIN)).unwrap(), r#"{"type":"integer","value":-9223372036854775808}"#);
}

#[test]
fn non_utf8_strings_use_base64() {
    row(b"+\xff\r\n", json!({"type":"simple","base64":"/w=="}));
    row(b"-\xfe\r\n", json!({"type":"error","base64":"/g=="}));
    row(b"!1\r\n\xff\r\n", json!({"type":"blob_error","base64":"/w=="}));
    row(b"=5\r\ntxt:\xff\r\n", json!({"type":"verbatim","format":"txt","base64":"/w=="}));
    // Found by tests/prop.rs: a format that is not UTF-8 was written lossily.
    row(b"=4\r\n\xff\x00a:\r\n", json!({"type":"verbatim","format_base64":"/wBh","value":""}));
    // Valid UTF-8 beyond ASCII stays text.
    row("$2\r\n\u{e9}\r\n".as_bytes(), json!({"type":"bulk","value":"é"}));
}

#[test]
fn nested_attributes_and_map_keys_of_any_type() {
    row(
        b"%1\r\n*1\r\n:1\r\n|1\r\n+k\r\n+v\r\n#t\r\n",
        json!({"type":"map","value":[[
            {"type":"array","value":[{"type":"integer","value":1}]},
            {"type":"boolean","value":true,"attributes":[[{"type":"simple","value":"k"},{"type":"simple","value":"v"}]]}
        ]]}),
    );
    // Layered attributes are all shown on the value (in order).
    let v = of(b"|1\r\n+a\r\n:1\r\n|1\r\n+b\r\n:2\r\n_\r\n");
    assert_eq!(v["attributes"], json!([[{"type":"simple","value":"a"},{"type":"integer","value":1}],[{"type":"simple","value":"b"},{"type":"integer","value":2}]]));
}

#[test]
fn doubles_read_back_from_numbers() {
    let v: Value = serde_json::from_value(json!({"type":"double","value":2})).unwrap();
    assert_eq!(v, Value::Double(2.0));
    let v: Value = serde_json::from_value(json!({"type":"double","value":"nan"})).unwrap();
    assert!(matches!(v, Value::Double(d) if d.is_nan()));
}

#[test]
fn bad_reply_json_is_rejected_with_a_reason() {
    for (j, words) in [
        (json!({"type":"nope"}), "unknown reply type"),
        (json!({"type":"integer","value":"1"}), "integer"),
        (json!({"type":"integer","value":1.5}), "integer"),
        (json!({"type":"bulk"}), "\"value\" or \"base64\""),
        (json!({"type":"bulk","base64":"!!"}), "invalid base64"),
        (json!({"type":"boolean","value":1}), "true or false"),
        (json!({"type":"big_number","value":"12a"}), "digits"),
        (json!({"type":"verbatim","format":"text","value":"x"}), "3 bytes"),
        (json!({"type":"map","value":[1]}), "a reply object or a [key, value] pair"),
        (json!({"type":"map","value":[[{"type":"null"}]]}), "pair needs 2 elements, got 1"),
        (json!({"type":"array","value":[{"type":"null"},[{"type":"null"},{"type":"null"}]]}), "mixes replies and [key, value] pairs"),
        // An error deep inside is reported as itself.
        (json!({"type":"array","value":[{"type":"array","value":[{"type":"bogus"}]}]}), "unknown reply type \"bogus\""),
        (json!({"type":"map","value":[[{"type":"null"},{"type":"integer","value":"x"}]]}), "integer"),
        (json!({"type":"map","value":[{"type":"null"}]}), "pairs"),
        (json!({"type":"array","value":1}), "array"),
        (json!({"type":"simple","value":"x","extra":1}), "extra"),
    ] {
        let e = serde_json::from_value::<Value>(j.clone()).unwrap_err().to_string();
        assert!(e.contains(words), "{j}: {e}");
    }
}

#[test]
fn command_arguments() {
    let a: Vec<JsonBytes> = serde_json::from_value(json!(["SET", {"base64": "/wAB"}])).unwrap();
    assert_eq!(a, vec![JsonBytes(b"SET".to_vec()), JsonBytes(vec![0xff, 0, 1])]);
    assert_eq!(serde_json::to_value(&a).unwrap(), json!(["SET", {"base64": "/wAB"}]));
    let e = serde_json::from_value::<JsonBytes>(json!(1)).unwrap_err().to_string();
    assert!(e.contains("expected a string or {\"base64\""), "{e}");
    assert!(serde_json::from_value::<JsonBytes>(json!({"base64": "%%"})).unwrap_err().to_string().contains("invalid base64"));
}
