//! The decoder on a 32-bit target: lengths that do not fit in usize are
//! errors even when the limits would allow them, never a wait or a panic.
#![cfg(target_arch = "wasm32")]

use resp::{decode_all, Decoded, Decoder, Limits, Value};
use wasm_bindgen_test::wasm_bindgen_test;

fn unlimited() -> Decoder {
    Decoder::with_limits(Limits { max_depth: 1024, max_bulk_len: u64::MAX, max_aggregate_len: u64::MAX })
}

#[wasm_bindgen_test]
fn usize_is_32_bits() {
    assert_eq!(usize::BITS, 32);
}

#[wasm_bindgen_test]
fn lengths_beyond_the_address_space_are_errors() {
    for input in [&b"$4294967296\r\n"[..], b"*4294967296\r\n", b"%4294967296\r\n", b"!9223372036854775807\r\n", b"$?\r\n;4294967296\r\n"] {
        let e = unlimited().decode(input).unwrap_err();
        assert!(e.message.contains("does not fit this platform's address space"), "{:?}: {e}", String::from_utf8_lossy(input));
    }
    // Just below: only incomplete.
    assert_eq!(unlimited().decode(b"*4294967295\r\n").unwrap(), Decoded::Incomplete { needed: None });
    assert!(matches!(unlimited().decode(b"$4294967000\r\n").unwrap(), Decoded::Incomplete { .. }));
    // With the default limits, the limit speaks first.
    let e = Decoder::new().decode(b"$4294967296\r\n").unwrap_err();
    assert!(e.message.contains("exceeds the limit of 536870912 bytes"), "{e}");
}

#[wasm_bindgen_test]
fn a_length_that_fits_but_whose_end_does_not_is_an_error() {
    // 13 header bytes + 4294967294 + CRLF is past the 32-bit address space.
    let e = unlimited().decode(b"$4294967294\r\n").unwrap_err();
    assert!(e.message.contains("overflows this platform's address space"), "{e}");
    // And a needed count near the top does not wrap.
    match unlimited().decode(b"$4294967000\r\nab").unwrap() {
        Decoded::Incomplete { needed } => assert_eq!(needed, Some(4294967000)),
        d => panic!("{d:?}"),
    }
}

#[wasm_bindgen_test]
fn the_codec_works_the_same() {
    let all = decode_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n,1.5\r\n%1\r\n+a\r\n:9223372036854775807\r\n");
    assert!(all.error.is_none() && !all.incomplete);
    assert_eq!(all.values[0], Value::Array(vec![Value::Bulk(b"SET".to_vec()), Value::Bulk(b"k".to_vec()), Value::Double(1.5)]));
    assert_eq!(serde_json::to_string(&all.values[1]).unwrap(), r#"{"type":"map","value":[[{"type":"simple","value":"a"},{"type":"integer","value":9223372036854775807}]]}"#);
    let p = resp::parse_inline(b"SET k \"a b\"\nGET k");
    assert_eq!(p.commands.len(), 2);
}

/// The deepest value the default limits allow (1024 levels) decodes,
/// encodes, displays, serializes to reply JSON and drops within the stack a
/// wasm module gets under node/V8, in a release build (as the playground
/// ships). A debug build exceeds V8's call stack in serde_json's recursion
/// (the decoder's own passes are iterative), hence `--release` in
/// scripts/test-resp.sh.
#[wasm_bindgen_test]
fn the_deepest_value_fits_the_wasm_stack() {
    let mut input = b"*1\r\n%1\r\n".repeat(512);
    input.extend_from_slice(b":1\r\n");
    input.extend_from_slice(&b":2\r\n".repeat(512));
    let all = decode_all(&input);
    assert!(all.error.is_none() && !all.incomplete);
    let v = &all.values[0];
    assert_eq!(v.to_resp(), input);
    assert!(v.display().contains("(integer) 1"));
    assert!(serde_json::to_string(v).unwrap().contains("\"integer\""));
}
