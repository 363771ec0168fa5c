//! Every case of `../shared/vectors/*.json` (checked against a real
//! redis-server and hiredis) through the library. The CLI and the wasm
//! module run the same files in their own tests.

use serde_json::Value as Json;
use std::path::PathBuf;

fn vectors(name: &str) -> Vec<Json> {
    let dir = std::env::var("PIPELAB_VECTORS").map(PathBuf::from).unwrap_or_else(|_| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/vectors")
    });
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn inline_vectors() {
    let cases = vectors("inline.json");
    assert!(cases.len() >= 10);
    for case in cases {
        let input = case["input"].as_str().unwrap();
        let parsed = resp::parse_inline(input.as_bytes());
        if case["error"].as_bool().unwrap() {
            assert_eq!(parsed.errors.len(), 1, "{input:?} should be an error");
            assert!(parsed.commands.is_empty());
        } else {
            assert!(parsed.errors.is_empty(), "{input:?}: {:?}", parsed.errors);
            let mut out = Vec::new();
            for c in &parsed.commands {
                resp::encode_command(&c.argv, &mut out);
            }
            assert_eq!(out, hex(case["resp_hex"].as_str().unwrap()), "{input:?}");
        }
    }
}

#[test]
fn resp_vectors() {
    let cases = vectors("resp.json");
    assert!(cases.len() >= 20);
    for case in cases {
        let bytes = hex(case["input_hex"].as_str().unwrap());
        let got = resp::decode_all(&bytes);
        match case["expect"].as_str().unwrap() {
            "values" => {
                assert!(got.error.is_none() && !got.incomplete, "{:?}: {:?}", case["input"], got.error);
                let json = serde_json::to_value(&got.values).unwrap();
                assert_eq!(json, case["values"], "{:?}", case["input"]);
                // And back: reply JSON -> Value -> the same JSON.
                let back: Vec<resp::Value> = serde_json::from_value(json.clone()).unwrap();
                assert_eq!(serde_json::to_value(&back).unwrap(), json);
                // decode -> encode is the identity on these canonical inputs.
                let mut enc = Vec::new();
                for v in &got.values {
                    v.encode(&mut enc);
                }
                assert_eq!(enc, bytes, "{:?}", case["input"]);
            }
            "error" => assert!(got.error.is_some(), "{:?} should be an error", case["input"]),
            "incomplete" => assert!(got.incomplete && got.error.is_none(), "{:?} should be incomplete", case["input"]),
            other => panic!("unknown expect {other}"),
        }
    }
}
