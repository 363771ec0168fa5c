//! The decoder on arbitrary bytes: no panic; decode → encode → decode is
//! stable; chunked (growing prefixes, as a socket reader) == whole buffer;
//! small limits too. The first byte picks the chunking and the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resp::{Decoded, Decoder, Limits, Value};

type Outcome = (Vec<Value>, Option<(usize, String)>, bool);

fn run(input: &[u8], limits: Limits, cuts: &[usize]) -> Outcome {
    let mut d = Decoder::with_limits(limits);
    let mut start = 0;
    let mut values = Vec::new();
    for &end in cuts.iter().chain(std::iter::once(&input.len())) {
        let end = end.max(start).min(input.len());
        while start < end {
            match d.decode(&input[start..end]) {
                Ok(Decoded::Complete { value, consumed }) => {
                    assert!(consumed > 0 && consumed <= end - start);
                    values.push(value);
                    start += consumed;
                }
                Ok(Decoded::Incomplete { needed }) => {
                    if let Some(n) = needed {
                        assert!(n > 0);
                    }
                    break;
                }
                Err(e) => {
                    assert!(e.offset < end - start || (e.offset == end - start && end == input.len()), "offset {} beyond {}", e.offset, end - start);
                    return (values, Some((start + e.offset, e.message)), false);
                }
            }
        }
    }
    (values, None, start < input.len())
}

/// NaN-tolerant, sign-of-zero-exact equality.
fn same(a: &Value, b: &Value) -> bool {
    use Value::*;
    let all = |x: &[Value], y: &[Value]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q));
    let pairs = |x: &[(Value, Value)], y: &[(Value, Value)]| x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(&p.0, &q.0) && same(&p.1, &q.1));
    match (a, b) {
        (Double(x), Double(y)) => (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
        (Array(x), Array(y)) | (Set(x), Set(y)) | (Push(x), Push(y)) => all(x, y),
        (Map(x), Map(y)) => pairs(x, y),
        (Attributed { attributes: p, value: v }, Attributed { attributes: q, value: w }) => pairs(p, q) && same(v, w),
        _ => a == b,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else { return };
    let limits = if mode & 1 == 0 { Limits::default() } else { Limits { max_depth: 3, max_bulk_len: 8, max_aggregate_len: 4 } };

    let whole = run(input, limits, &[]);
    // Chunk points derived from the mode byte: every byte, or strides.
    let stride = 1 + (mode >> 1) as usize % 17;
    let cuts: Vec<usize> = (0..input.len()).step_by(stride).collect();
    let chunked = run(input, limits, &cuts);
    assert_eq!(whole.1, chunked.1, "error differs when chunked");
    assert_eq!(whole.2, chunked.2, "incomplete differs when chunked");
    assert_eq!(whole.0.len(), chunked.0.len());
    assert!(whole.0.iter().zip(&chunked.0).all(|(a, b)| same(a, b)));

    // decode → encode → decode is stable, and canonical bytes re-encode to themselves.
    let mut bytes = Vec::new();
    for v in &whole.0 {
        v.encode(&mut bytes);
    }
    let again = resp::decode_all(&bytes);
    assert!(again.error.is_none() && !again.incomplete, "re-encoded bytes do not decode: {:?}", again.error);
    assert_eq!(again.values.len(), whole.0.len());
    assert!(again.values.iter().zip(&whole.0).all(|(a, b)| same(a, b)));
    let mut bytes2 = Vec::new();
    for v in &again.values {
        v.encode(&mut bytes2);
    }
    assert_eq!(bytes, bytes2);

    // The other views never panic, and reply JSON reads back to the same JSON.
    for v in &whole.0 {
        let _ = v.display();
        let json = serde_json::to_value(v).unwrap();
        if let Ok(back) = serde_json::from_value::<Value>(json.clone()) {
            assert_eq!(serde_json::to_value(&back).unwrap(), json);
        }
    }
});
