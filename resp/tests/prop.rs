//! Property tests: encode → decode is the identity on arbitrary values, and
//! a stream split into arbitrary chunks decodes exactly as one buffer
//! (values, error and error offset, incomplete).

use proptest::prelude::*;
use resp::{decode_all, split_args, to_inline, Decoded, Decoder, Limits, RequestReader, Value};

/// A line (simple string, error): any bytes but CR and LF.
fn line() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>().prop_filter("no CR or LF in a line", |b| *b != b'\r' && *b != b'\n'), 0..12)
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![prop::collection::vec(any::<u8>(), 0..20), prop::collection::vec(prop::sample::select(b"\r\n$*:ab".to_vec()), 0..20)]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        line().prop_map(Value::Simple),
        line().prop_map(Value::Error),
        any::<i64>().prop_map(Value::Integer),
        prop_oneof![Just(0i64), Just(-1), Just(i64::MIN), Just(i64::MAX)].prop_map(Value::Integer),
        bytes().prop_map(Value::Bulk),
        Just(Value::Null),
        Just(Value::NullBulk),
        Just(Value::NullArray),
        any::<f64>().prop_map(Value::Double),
        prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-0.0), Just(3.0), Just(1e300), Just(5e-324)].prop_map(Value::Double),
        any::<bool>().prop_map(Value::Boolean),
        bytes().prop_map(Value::BlobError),
        (any::<[u8; 3]>(), bytes()).prop_map(|(format, text)| Value::Verbatim { format, text }),
        ("-?[1-9][0-9]{0,40}|0").prop_map(|s| Value::BigNumber(s.into_bytes())),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(5, 48, 6, |inner| {
        let items = prop::collection::vec(inner.clone(), 0..6);
        let pairs = prop::collection::vec((inner.clone(), inner.clone()), 0..4);
        prop_oneof![
            items.clone().prop_map(Value::Array),
            items.clone().prop_map(Value::Set),
            items.prop_map(Value::Push),
            pairs.clone().prop_map(Value::Map),
            (pairs, inner).prop_map(|(attributes, v)| Value::Attributed { attributes, value: Box::new(v) }),
        ]
    })
}

/// Equality with NaN equal to itself and -0 apart from 0 (bit equality).
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

/// What a socket reader sees: the input arriving in `cuts` pieces, the
/// decoder called on the growing unconsumed buffer after each.
fn chunked(input: &[u8], cuts: &[usize], limits: Limits) -> (Vec<Value>, Option<(usize, String)>, bool) {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (input.len() + 1)).collect();
    points.push(input.len());
    points.sort_unstable();
    let mut d = Decoder::with_limits(limits);
    let mut start = 0; // first unconsumed byte
    let mut values = Vec::new();
    for end in points {
        loop {
            if start >= end {
                break;
            }
            match d.decode(&input[start..end]) {
                Ok(Decoded::Complete { value, consumed }) => {
                    values.push(value);
                    start += consumed;
                }
                Ok(Decoded::Incomplete { needed }) => {
                    if let Some(n) = needed {
                        // "needed" is a promise: fewer bytes cannot complete the value.
                        assert!(n >= 1);
                    }
                    break;
                }
                Err(e) => return (values, Some((start + e.offset, e.message)), false),
            }
        }
    }
    let incomplete = start < input.len();
    (values, None, incomplete)
}

fn whole(input: &[u8], limits: Limits) -> (Vec<Value>, Option<(usize, String)>, bool) {
    // decode_all with custom limits.
    let mut d = Decoder::with_limits(limits);
    let mut at = 0;
    let mut values = vec![];
    while at < input.len() {
        match d.decode(&input[at..]) {
            Ok(Decoded::Complete { value, consumed }) => {
                values.push(value);
                at += consumed;
            }
            Ok(Decoded::Incomplete { .. }) => return (values, None, true),
            Err(e) => return (values, Some((at + e.offset, e.message)), false),
        }
    }
    (values, None, false)
}

/// Inputs worth splitting: encoded values, the same with a byte changed,
/// inserted or removed, and raw RESP-ish bytes.
fn encoded() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(value(), 0..4).prop_map(|vs| {
        let mut out = Vec::new();
        for v in &vs {
            v.encode(&mut out);
        }
        out
    })
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => encoded(),
        3 => (encoded(), any::<usize>(), any::<u8>()).prop_map(|(mut b, i, x)| {
            if !b.is_empty() {
                let i = i % b.len();
                b[i] = x;
            }
            b
        }),
        2 => (encoded(), any::<usize>(), prop::sample::select(b"\r\n?.;-+0123456789*$%~|>_,#!=(:".to_vec())).prop_map(|(mut b, i, x)| {
            let i = i % (b.len() + 1);
            b.insert(i, x);
            b
        }),
        2 => (encoded(), any::<usize>()).prop_map(|(mut b, i)| {
            if !b.is_empty() {
                b.remove(i % b.len());
            }
            b
        }),
        2 => prop::collection::vec(prop::sample::select(b"\r\n?.;-+019*$%~|>_,#!=(:tf".to_vec()), 0..40),
        1 => Just(b"$?\r\n;2\r\nab\r\n;0\r\n*?\r\n:1\r\n%?\r\n+a\r\n:1\r\n.\r\n.\r\n".to_vec()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn encode_then_decode_is_the_identity(values in prop::collection::vec(value(), 0..5)) {
        let mut bytes = Vec::new();
        for v in &values {
            v.encode(&mut bytes);
        }
        let all = decode_all(&bytes);
        prop_assert!(all.error.is_none(), "{:?}", all.error);
        prop_assert!(!all.incomplete);
        prop_assert_eq!(all.consumed, bytes.len());
        prop_assert_eq!(all.values.len(), values.len());
        for (a, b) in all.values.iter().zip(&values) {
            prop_assert!(same(a, b), "{:?} != {:?}", a, b);
        }
        // And the bytes are canonical: encoding again gives them back.
        let mut again = Vec::new();
        for v in &all.values {
            v.encode(&mut again);
        }
        prop_assert_eq!(again, bytes);
    }

    #[test]
    fn chunks_decode_as_one_buffer(input in stream(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let limits = Limits::default();
        let (wv, we, wi) = whole(&input, limits);
        let (cv, ce, ci) = chunked(&input, &cuts, limits);
        prop_assert_eq!(&ce, &we, "error");
        prop_assert_eq!(ci, wi, "incomplete");
        prop_assert_eq!(cv.len(), wv.len());
        for (a, b) in cv.iter().zip(&wv) {
            prop_assert!(same(a, b));
        }
        // decode_all agrees with the whole-buffer loop.
        let all = decode_all(&input);
        prop_assert_eq!(all.error.map(|e| (e.offset, e.message)), we);
        prop_assert_eq!(all.incomplete, wi);
    }

    /// Byte by byte, with small limits so that limit errors occur too.
    #[test]
    fn byte_by_byte_with_small_limits(input in stream()) {
        let limits = Limits { max_depth: 2, max_bulk_len: 4, max_aggregate_len: 3 };
        let cuts: Vec<usize> = (0..input.len()).collect();
        let w = whole(&input, limits);
        let c = chunked(&input, &cuts, limits);
        prop_assert_eq!(&c.1, &w.1);
        prop_assert_eq!(c.2, w.2);
        prop_assert_eq!(c.0.len(), w.0.len());
    }

    /// Decoded values always re-encode to bytes that decode to themselves.
    #[test]
    fn decode_encode_decode_is_stable(input in stream()) {
        let first = decode_all(&input);
        let mut bytes = Vec::new();
        for v in &first.values {
            v.encode(&mut bytes);
        }
        let second = decode_all(&bytes);
        prop_assert!(second.error.is_none() && !second.incomplete);
        prop_assert_eq!(second.values.len(), first.values.len());
        for (a, b) in second.values.iter().zip(&first.values) {
            prop_assert!(same(a, b));
        }
    }

    #[test]
    fn to_inline_then_split_args_is_the_identity(argv in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..10), 1..5)) {
        let line = to_inline(&argv);
        prop_assert_eq!(split_args(line.as_bytes()).unwrap(), argv);
    }

    #[test]
    fn inline_parsing_never_panics_and_requests_chunk_as_whole(
        text in prop::collection::vec(prop::sample::select(b"ab \t\r\n\"'\\x41*$0\x00".to_vec()), 0..60),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let p = resp::parse_inline(&text);
        for e in &p.errors {
            prop_assert!(e.offset <= text.len() && e.line >= 1 && e.column >= 1);
        }
        // RequestReader: whole buffer vs growing prefixes.
        let run = |points: &[usize]| -> (Vec<Vec<Vec<u8>>>, Option<usize>) {
            let mut r = RequestReader::new();
            let mut start = 0;
            let mut out = vec![];
            for (k, &end) in points.iter().enumerate() {
                let eof = k == points.len() - 1;
                loop {
                    match r.next(&text[start..end], eof) {
                        Ok(Some(req)) => { start += req.consumed; out.push(req.argv); }
                        Ok(None) => break,
                        Err(e) => return (out, Some(e.offset)),
                    }
                }
            }
            (out, None)
        };
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (text.len() + 1)).collect();
        points.push(text.len());
        points.sort_unstable();
        prop_assert_eq!(run(&points), run(&[text.len()]));
    }
}

#[cfg(feature = "json")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Reply JSON is lossless: JSON → value → JSON gives the same JSON, and
    /// the value encodes as the original does (nulls aside, which JSON joins).
    #[test]
    fn reply_json_round_trips(v in value()) {
        let json = serde_json::to_value(&v).unwrap();
        let back: Value = serde_json::from_value(json.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
}
