//! The decoder, type by type, error by error, limit by limit.
//!
//! Offsets are asserted exactly: a person fixing a file needs the byte.

use resp::{decode_all, DecodeError, Decoded, Decoder, Limits, Value};

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}
fn simple(s: &str) -> Value {
    Value::Simple(s.as_bytes().to_vec())
}

/// One complete value that takes the whole input.
fn one(input: &[u8]) -> Value {
    match Decoder::new().decode(input) {
        Ok(Decoded::Complete { value, consumed }) => {
            assert_eq!(consumed, input.len(), "{:?}: consumed", String::from_utf8_lossy(input));
            value
        }
        other => panic!("{:?}: expected a value, got {other:?}", String::from_utf8_lossy(input)),
    }
}

fn error_with(input: &[u8], limits: Limits) -> DecodeError {
    match Decoder::with_limits(limits).decode(input) {
        Err(e) => e,
        other => panic!("{:?}: expected an error, got {other:?}", String::from_utf8_lossy(input)),
    }
}

/// The error for `input`, checked to be at `offset` and to mention `words`.
fn error_at(input: &[u8], offset: usize, words: &str) -> DecodeError {
    error_at_with(input, offset, words, Limits::default())
}

fn error_at_with(input: &[u8], offset: usize, words: &str, limits: Limits) -> DecodeError {
    let e = error_with(input, limits);
    assert_eq!(e.offset, offset, "{:?}: offset of {e}", String::from_utf8_lossy(input));
    assert!(e.message.contains(words), "{:?}: message {:?} should contain {words:?}", String::from_utf8_lossy(input), e.message);
    assert_eq!(e.to_string(), format!("byte {offset}: {}", e.message));
    e
}

fn incomplete(input: &[u8]) -> Option<usize> {
    incomplete_with(input, Limits::default())
}

fn incomplete_with(input: &[u8], limits: Limits) -> Option<usize> {
    match Decoder::with_limits(limits).decode(input) {
        Ok(Decoded::Incomplete { needed }) => needed,
        other => panic!("{:?}: expected incomplete, got {other:?}", String::from_utf8_lossy(input)),
    }
}

// ---------------------------------------------------------------- RESP2 types

#[test]
fn simple_string() {
    assert_eq!(one(b"+OK\r\n"), simple("OK"));
    assert_eq!(one(b"+\r\n"), simple(""));
    // Only CR LF ends the line; a lone CR or LF inside is an error (as hiredis).
    error_at(b"+a\rb\r\n", 2, "simple string contains a CR byte");
    error_at(b"+ab\nc\r\n", 3, "simple string contains a LF byte");
    error_at(b"*2\r\n:1\r\n-E\nR\r\n", 10, "simple error contains a LF byte");
    assert_eq!(incomplete(b"+a\nb"), None);
    assert_eq!(one(b"+\xff\x00\r\n"), Value::Simple(vec![0xff, 0]));
}

#[test]
fn simple_error() {
    assert_eq!(one(b"-ERR unknown command 'x'\r\n"), Value::Error(b"ERR unknown command 'x'".to_vec()));
    assert!(one(b"-WRONGTYPE x\r\n").is_error());
    assert_eq!(one(b"-\r\n"), Value::Error(vec![]));
}

#[test]
fn integers_cover_the_i64_range() {
    for (bytes, v) in [
        (&b":0\r\n"[..], 0i64),
        (b":1\r\n", 1),
        (b":-1\r\n", -1),
        (b":1000\r\n", 1000),
        (b":9223372036854775807\r\n", i64::MAX),
        (b":-9223372036854775808\r\n", i64::MIN),
    ] {
        assert_eq!(one(bytes), Value::Integer(v));
    }
}

#[test]
fn integers_are_strict_as_string2ll() {
    for bad in [
        &b":+1\r\n"[..],
        b":01\r\n",
        b":00\r\n",
        b":-0\r\n",
        b":-\r\n",
        b":\r\n",
        b": 1\r\n",
        b":1 \r\n",
        b":1a\r\n",
        b":0x10\r\n",
        b":1.0\r\n",
        b":9223372036854775808\r\n",
        b":-9223372036854775809\r\n",
        b":99999999999999999999\r\n",
        b":123456789012345678901\r\n",
    ] {
        error_at(bad, 0, "invalid integer");
    }
}

#[test]
fn bulk_strings() {
    assert_eq!(one(b"$5\r\nhello\r\n"), bulk("hello"));
    assert_eq!(one(b"$0\r\n\r\n"), bulk(""));
    // Binary safe: CR LF and NUL inside the body.
    assert_eq!(one(b"$7\r\na\r\nb\0\r\n\r\n"), Value::Bulk(b"a\r\nb\0\r\n".to_vec()));
    assert_eq!(one(b"$-1\r\n"), Value::NullBulk);
}

#[test]
fn bulk_length_is_strict() {
    error_at(b"$-2\r\n", 0, "invalid bulk string length -2 (must be >= 0 or -1)");
    error_at(b"$+1\r\na\r\n", 0, "invalid bulk string length \"+1\"");
    error_at(b"$01\r\na\r\n", 0, "invalid bulk string length \"01\"");
    error_at(b"$\r\n", 0, "invalid bulk string length \"\"");
    error_at(b"$-0\r\n\r\n", 0, "invalid bulk string length");
    error_at(b"$1x\r\n", 0, "\"1x\"");
    error_at(b"$\xff\r\n", 0, "\"\\xff\"");
    error_at(b"$-9223372036854775809\r\n", 0, "invalid bulk string length");
}

#[test]
fn bulk_body_must_end_with_crlf() {
    let e = error_at(b"$3\r\nabcde\r\n", 7, "bulk string of 3 bytes is not followed by CRLF");
    assert_eq!(e.to_string(), "byte 7: bulk string of 3 bytes is not followed by CRLF");
    error_at(b"$0\r\nX\r\n", 4, "not followed by CRLF");
    error_at(b"$1\r\na\n\r", 5, "not followed by CRLF");
    // Inside an aggregate the offset is still from the start of the buffer.
    error_at(b"*2\r\n:1\r\n$2\r\nabc\r\n", 14, "bulk string of 2 bytes");
}

#[test]
fn arrays() {
    assert_eq!(one(b"*0\r\n"), Value::Array(vec![]));
    assert_eq!(one(b"*-1\r\n"), Value::NullArray);
    assert_eq!(
        one(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n"),
        Value::Array(vec![bulk("SET"), bulk("k"), Value::NullBulk])
    );
    assert_eq!(
        one(b"*2\r\n*2\r\n:1\r\n-E\r\n*0\r\n"),
        Value::Array(vec![Value::Array(vec![Value::Integer(1), Value::Error(b"E".to_vec())]), Value::Array(vec![])])
    );
    assert_eq!(one(b"*1\r\n*-1\r\n"), Value::Array(vec![Value::NullArray]));
    error_at(b"*-2\r\n", 0, "invalid array length -2 (must be >= 0 or -1)");
    error_at(b"*01\r\n:1\r\n", 0, "invalid array length \"01\"");
    error_at(b"*+1\r\n:1\r\n", 0, "invalid array length \"+1\"");
    error_at(b"*1\r\n*x\r\n", 4, "invalid array length \"x\"");
}

#[test]
fn bad_type_byte() {
    let e = error_at(b"@foo\r\n", 0, "invalid type byte \"@\"");
    assert!(e.message.contains("expected one of + - : $ * _ , # ! = ( % ~ | >"), "{e}");
    // Reported at once, without waiting for a CRLF.
    error_at(b"x", 0, "invalid type byte \"x\"");
    error_at(b"GET k\r\n", 0, "invalid type byte \"G\"");
    error_at(b"*2\r\n:1\r\n\x00\r\n", 8, "invalid type byte \"\\x00\"");
    error_at(b"*2\r\n:1\r\n?", 8, "invalid type byte \"?\"");
    error_at(b"\r\n", 0, "invalid type byte \"\\x0d\"");
}

// ---------------------------------------------------------------- RESP3 types

#[test]
fn null() {
    assert_eq!(one(b"_\r\n"), Value::Null);
    error_at(b"_x\r\n", 0, "null '_' must be followed by CRLF, found \"x\"");
}

#[test]
fn doubles() {
    for (bytes, v) in [
        (&b",1.5\r\n"[..], 1.5f64),
        (b",0\r\n", 0.0),
        (b",-0\r\n", -0.0),
        (b",3\r\n", 3.0),
        (b",-1.25e-3\r\n", -1.25e-3),
        (b",1E5\r\n", 1e5),
        (b",1e+5\r\n", 1e5),
        (b",.5\r\n", 0.5),
        (b",1.\r\n", 1.0),
        (b",inf\r\n", f64::INFINITY),
        (b",-inf\r\n", f64::NEG_INFINITY),
        (b",INF\r\n", f64::INFINITY),
        (b",1.7976931348623157e308\r\n", f64::MAX),
        (b",5e-324\r\n", 5e-324),
    ] {
        assert_eq!(one(bytes), Value::Double(v), "{:?}", String::from_utf8_lossy(bytes));
    }
    assert!(one(b",-0\r\n") == Value::Double(-0.0) && matches!(one(b",-0\r\n"), Value::Double(d) if d.is_sign_negative()));
    for nan in [&b",nan\r\n"[..], b",-nan\r\n", b",NaN\r\n"] {
        assert!(matches!(one(nan), Value::Double(d) if d.is_nan()));
    }
    for bad in [
        &b",\r\n"[..],
        b",abc\r\n",
        b", 1\r\n",
        b",1 \r\n",
        b",0x10\r\n",
        b",infinity\r\n",
        b",+inf\r\n",
        b",1e400\r\n",
        b",-1e400\r\n",
        b",1e\r\n",
        b",.\r\n",
        b",-\r\n",
        b",1..2\r\n",
        b",1,5\r\n",
    ] {
        error_at(bad, 0, "invalid double");
    }
}

#[test]
fn booleans_are_t_or_f() {
    assert_eq!(one(b"#t\r\n"), Value::Boolean(true));
    assert_eq!(one(b"#f\r\n"), Value::Boolean(false));
    // Deliberately stricter than hiredis, which also takes `T` and `F`: the
    // RESP3 specification and Redis only use lower case.
    error_at(b"#T\r\n", 0, "invalid boolean \"T\" (expected t or f)");
    error_at(b"#F\r\n", 0, "invalid boolean");
    error_at(b"#\r\n", 0, "invalid boolean");
    error_at(b"#tt\r\n", 0, "invalid boolean");
    error_at(b"#1\r\n", 0, "invalid boolean");
}

#[test]
fn blob_errors() {
    let v = one(b"!21\r\nSYNTAX invalid syntax\r\n");
    assert_eq!(v, Value::BlobError(b"SYNTAX invalid syntax".to_vec()));
    assert!(v.is_error());
    assert_eq!(v.error_message(), Some(&b"SYNTAX invalid syntax"[..]));
    assert_eq!(one(b"!0\r\n\r\n"), Value::BlobError(vec![]));
    error_at(b"!-1\r\n", 0, "invalid blob error length -1 (must be >= 0)");
    error_at(b"!2\r\nabc\r\n", 6, "blob error of 2 bytes is not followed by CRLF");
}

#[test]
fn verbatim_strings() {
    assert_eq!(one(b"=15\r\ntxt:Some string\r\n"), Value::Verbatim { format: *b"txt", text: b"Some string".to_vec() });
    assert_eq!(one(b"=4\r\nmkd:\r\n"), Value::Verbatim { format: *b"mkd", text: vec![] });
    error_at(b"=3\r\ntxt\r\n", 4, "verbatim string must start with a 3-byte format and ':'");
    error_at(b"=5\r\ntxtab\r\n", 4, "3-byte format");
    error_at(b"=0\r\n\r\n", 4, "3-byte format");
    error_at(b"=-1\r\n", 0, "invalid verbatim string length -1");
}

#[test]
fn big_numbers() {
    assert_eq!(
        one(b"(3492890328409238509324850943850943825024385\r\n"),
        Value::BigNumber(b"3492890328409238509324850943850943825024385".to_vec())
    );
    assert_eq!(one(b"(-1\r\n"), Value::BigNumber(b"-1".to_vec()));
    assert_eq!(one(b"(0\r\n"), Value::BigNumber(b"0".to_vec()));
    for bad in [&b"(\r\n"[..], b"(-\r\n", b"(+1\r\n", b"(1a\r\n", b"( 1\r\n", b"(1.5\r\n"] {
        error_at(bad, 0, "invalid big number");
    }
}

#[test]
fn maps_keep_wire_order_and_any_key_type() {
    assert_eq!(
        one(b"%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n#t\r\n"),
        Value::Map(vec![(simple("first"), Value::Integer(1)), (bulk("second"), Value::Boolean(true))])
    );
    assert_eq!(one(b"%0\r\n"), Value::Map(vec![]));
    // Aggregate keys and duplicate keys are kept as they came.
    assert_eq!(
        one(b"%2\r\n*1\r\n:1\r\n_\r\n*1\r\n:1\r\n_\r\n"),
        Value::Map(vec![
            (Value::Array(vec![Value::Integer(1)]), Value::Null),
            (Value::Array(vec![Value::Integer(1)]), Value::Null)
        ])
    );
    error_at(b"%-1\r\n", 0, "invalid map length -1 (must be >= 0)");
    // A map of 1 pair needs 2 elements.
    assert_eq!(incomplete(b"%1\r\n+a\r\n"), None);
}

#[test]
fn sets_and_pushes() {
    assert_eq!(one(b"~2\r\n+orange\r\n:100\r\n"), Value::Set(vec![simple("orange"), Value::Integer(100)]));
    assert_eq!(one(b"~0\r\n"), Value::Set(vec![]));
    assert_eq!(
        one(b">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$2\r\nhi\r\n"),
        Value::Push(vec![bulk("message"), bulk("chan"), bulk("hi")])
    );
    error_at(b"~-1\r\n", 0, "invalid set length -1");
    error_at(b">-1\r\n", 0, "invalid push length -1");
}

#[test]
fn attributes_attach_to_the_next_value() {
    let v = one(b"|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n");
    assert_eq!(
        v,
        Value::Attributed { attributes: vec![(simple("ttl"), Value::Integer(3600))], value: Box::new(bulk("hi")) }
    );
    assert_eq!(v.unattributed(), &bulk("hi"));
    // Inside an aggregate, attribute + value count as one element.
    let v = one(b"*2\r\n|1\r\n+a\r\n:1\r\n:2\r\n:3\r\n");
    assert_eq!(
        v,
        Value::Array(vec![
            Value::Attributed { attributes: vec![(simple("a"), Value::Integer(1))], value: Box::new(Value::Integer(2)) },
            Value::Integer(3)
        ])
    );
    // Attributes on an error still make an error.
    assert!(one(b"|0\r\n-ERR x\r\n").is_error());
    assert_eq!(one(b"|0\r\n-ERR x\r\n").error_message(), Some(&b"ERR x"[..]));
    // An attribute needs its value.
    assert_eq!(incomplete(b"|1\r\n+a\r\n:1\r\n"), None);
    error_at(b"|-1\r\n", 0, "invalid attribute length -1");
}

#[test]
fn streamed_strings() {
    assert_eq!(one(b"$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n"), bulk("Hello word"));
    assert_eq!(one(b"$?\r\n;0\r\n"), bulk(""));
    // Chunks are binary safe.
    assert_eq!(one(b"$?\r\n;2\r\n\r\n\r\n;0\r\n"), bulk("\r\n"));
    error_at(b"$?\r\n:1\r\n", 4, "expected a streamed string chunk ';', found \":\"");
    error_at(b"$?\r\n;-1\r\n", 4, "invalid streamed string chunk length -1 (must be >= 0)");
    error_at(b"$?\r\n;01\r\na\r\n", 4, "invalid streamed string chunk length \"01\"");
    error_at(b"$?\r\n;1\r\nab\r\n", 9, "streamed string chunk of 1 bytes is not followed by CRLF");
    error_at(b";1\r\na\r\n", 0, "streamed string chunk ';' outside a streamed string '$?'");
    assert_eq!(incomplete(b"$?\r\n;4\r\nHell\r\n"), None);
    assert_eq!(incomplete(b"$?\r\n;4\r\nHe"), Some(4));
}

#[test]
fn streamed_aggregates() {
    assert_eq!(one(b"*?\r\n:1\r\n:2\r\n.\r\n"), Value::Array(vec![Value::Integer(1), Value::Integer(2)]));
    assert_eq!(one(b"*?\r\n.\r\n"), Value::Array(vec![]));
    assert_eq!(one(b"~?\r\n+a\r\n.\r\n"), Value::Set(vec![simple("a")]));
    assert_eq!(one(b"%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n"), Value::Map(vec![(simple("a"), Value::Integer(1)), (simple("b"), Value::Integer(2))]));
    // Nested: a streamed array in a streamed array in a counted one, with a streamed string.
    assert_eq!(
        one(b"*2\r\n*?\r\n*?\r\n$?\r\n;1\r\nx\r\n;0\r\n.\r\n.\r\n:7\r\n"),
        Value::Array(vec![Value::Array(vec![Value::Array(vec![bulk("x")])]), Value::Integer(7)])
    );
    // Attributes inside a streamed map count as part of their value.
    assert_eq!(
        one(b"%?\r\n+k\r\n|1\r\n+a\r\n:1\r\n:2\r\n.\r\n"),
        Value::Map(vec![(
            simple("k"),
            Value::Attributed { attributes: vec![(simple("a"), Value::Integer(1))], value: Box::new(Value::Integer(2)) }
        )])
    );
    error_at(b"%?\r\n+a\r\n.\r\n", 8, "streamed map ended after a key without its value");
    error_at(b".\r\n", 0, "end of stream '.' outside a streamed aggregate");
    error_at(b"*1\r\n.\r\n", 4, "outside a streamed aggregate");
    error_at(b"*?\r\n.x\r\n", 4, "end of stream '.' must be followed by CRLF");
    // Only `*?`, `~?`, `%?` stream; a push or attribute cannot.
    error_at(b">?\r\n", 0, "invalid push length \"?\"");
    error_at(b"|?\r\n", 0, "invalid attribute length \"?\"");
    error_at(b"!?\r\n", 0, "invalid blob error length \"?\"");
    assert_eq!(incomplete(b"*?\r\n:1\r\n"), None);
}

// ------------------------------------------------------ incremental decoding

/// Every value's proper prefixes are "incomplete", never an error and never a
/// value; the whole is the value.
#[test]
fn every_prefix_is_incomplete() {
    let inputs: &[&[u8]] = &[
        b"+OK\r\n",
        b"-ERR x\r\n",
        b":-42\r\n",
        b"$5\r\nhello\r\n",
        b"$0\r\n\r\n",
        b"$-1\r\n",
        b"*-1\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n",
        b"_\r\n",
        b",1.5\r\n",
        b"#t\r\n",
        b"!3\r\nERR\r\n",
        b"=15\r\ntxt:Some string\r\n",
        b"(12345\r\n",
        b"%1\r\n+a\r\n:1\r\n",
        b"~1\r\n:1\r\n",
        b">2\r\n+a\r\n:1\r\n",
        b"|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n",
        b"$?\r\n;4\r\nHell\r\n;0\r\n",
        b"*?\r\n:1\r\n*?\r\n.\r\n.\r\n",
        b"%?\r\n+a\r\n:1\r\n.\r\n",
    ];
    for input in inputs {
        let whole = one(input);
        for cut in 0..input.len() {
            // A fresh decoder on the prefix…
            incomplete(&input[..cut]);
        }
        // …and one decoder fed growing prefixes, as a socket reader does.
        let mut d = Decoder::new();
        for cut in 0..input.len() {
            assert!(matches!(d.decode(&input[..cut]), Ok(Decoded::Incomplete { .. })), "{:?} at {cut}", String::from_utf8_lossy(input));
        }
        assert_eq!(d.decode(input), Ok(Decoded::Complete { value: whole, consumed: input.len() }));
    }
}

#[test]
fn needed_bytes_inside_a_bulk_string() {
    assert_eq!(incomplete(b""), None);
    assert_eq!(incomplete(b"$"), None);
    assert_eq!(incomplete(b"$5"), None);
    assert_eq!(incomplete(b"$5\r"), None);
    assert_eq!(incomplete(b"$5\r\n"), Some(7));
    assert_eq!(incomplete(b"$5\r\nhel"), Some(4));
    assert_eq!(incomplete(b"$5\r\nhello"), Some(2));
    assert_eq!(incomplete(b"$5\r\nhello\r"), Some(1));
    assert_eq!(incomplete(b"*2\r\n$3\r\nab"), Some(3));
    assert_eq!(incomplete(b"*2\r\n$3\r\nabc\r\n"), None);
    assert_eq!(incomplete(b"!3\r\nE"), Some(4));
    assert_eq!(incomplete(b"=8\r\ntxt:"), Some(6));
    assert_eq!(incomplete(b"$?\r\n;3\r\n"), Some(5));
    // No allocation and no wait beyond the limits: the count is just reported.
    assert_eq!(incomplete(b"$536870912\r\n"), Some(536870914));
}

#[test]
fn consumed_leaves_the_rest() {
    let buf = b"+OK\r\n:1\r\n$1\r\na\r\n*1\r\n_\r\n+par";
    let mut d = Decoder::new();
    let mut at = 0;
    let mut values = vec![];
    loop {
        match d.decode(&buf[at..]).unwrap() {
            Decoded::Complete { value, consumed } => {
                values.push(value);
                at += consumed;
            }
            Decoded::Incomplete { needed } => {
                assert_eq!(needed, None);
                break;
            }
        }
    }
    assert_eq!(values, vec![simple("OK"), Value::Integer(1), bulk("a"), Value::Array(vec![Value::Null])]);
    assert_eq!(at, 23);
    assert_eq!(&buf[at..], b"+par");
}

#[test]
fn resumes_across_chunks_of_every_size() {
    let mut stream = Vec::new();
    let mut expected = Vec::new();
    for i in 0..50 {
        let v = Value::Array(vec![
            Value::Bulk(format!("key:{i}").into_bytes()),
            Value::Integer(i),
            Value::Map(vec![(simple("x"), Value::Double(i as f64 / 4.0))]),
            Value::Bulk(vec![b'\n'; i as usize]),
        ]);
        v.encode(&mut stream);
        expected.push(v);
    }
    for chunk in [1, 2, 3, 7, 64, 1000, stream.len()] {
        let mut d = Decoder::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut got = Vec::new();
        for piece in stream.chunks(chunk) {
            buf.extend_from_slice(piece);
            while let Decoded::Complete { value, consumed } = d.decode(&buf).unwrap() {
                got.push(value);
                buf.drain(..consumed);
            }
        }
        assert!(buf.is_empty());
        assert_eq!(got, expected, "chunk size {chunk}");
    }
}

/// A decoder handed a shorter buffer than last time (a caller that changed
/// buffers) starts over instead of reading out of bounds.
#[test]
fn a_shorter_buffer_restarts() {
    let mut d = Decoder::new();
    assert!(matches!(d.decode(b"*2\r\n:1\r\n:"), Ok(Decoded::Incomplete { .. })));
    assert_eq!(d.decode(b"+a\r\n"), Ok(Decoded::Complete { value: simple("a"), consumed: 4 }));
    // And after `reset` the same buffer is re-read from its start.
    assert!(matches!(d.decode(b"*2\r\n:1\r\n"), Ok(Decoded::Incomplete { .. })));
    d.reset();
    assert_eq!(d.decode(b"+b\r\n"), Ok(Decoded::Complete { value: simple("b"), consumed: 4 }));
}

#[test]
fn the_decoder_is_reusable_after_an_error() {
    let mut d = Decoder::new();
    assert!(d.decode(b"*1\r\n:x\r\n").is_err());
    assert_eq!(d.decode(b":5\r\n"), Ok(Decoded::Complete { value: Value::Integer(5), consumed: 4 }));
}

#[test]
fn decode_all_reports_values_consumed_error_and_incomplete() {
    let r = decode_all(b"+OK\r\n:1\r\n");
    assert_eq!((r.values.len(), r.consumed, r.error, r.incomplete), (2, 9, None, false));

    let r = decode_all(b"+OK\r\n:1\r\n$5\r\nhel");
    assert_eq!(r.values, vec![simple("OK"), Value::Integer(1)]);
    assert_eq!((r.consumed, r.incomplete, r.error.is_none()), (9, true, true));

    // The error offset counts from the start of the whole buffer.
    let r = decode_all(b"+OK\r\n:1\r\n:1x\r\n+never\r\n");
    assert_eq!(r.values.len(), 2);
    assert_eq!(r.consumed, 9);
    assert!(!r.incomplete);
    let e = r.error.unwrap();
    assert_eq!(e.offset, 9);
    assert_eq!(e.to_string(), "byte 9: invalid integer \"1x\"");

    let r = decode_all(b"");
    assert_eq!((r.values.len(), r.consumed, r.error, r.incomplete), (0, 0, None, false));
}

#[test]
fn error_messages_show_bad_bytes_readably() {
    let e = error_at(b":\x01\"\\\r\n", 0, "");
    assert_eq!(e.message, "invalid integer \"\\x01\\\"\\\\\"");
    // Long garbage is cut.
    let long = format!(":{}\r\n", "9".repeat(100));
    let e = error_at(long.as_bytes(), 0, "...");
    assert!(e.message.len() < 80, "{}", e.message);
}

// ---------------------------------------------------------------- limits

fn limits(max_depth: usize, max_bulk_len: u64, max_aggregate_len: u64) -> Limits {
    Limits { max_depth, max_bulk_len, max_aggregate_len }
}

#[test]
fn default_limits() {
    let l = Limits::default();
    assert_eq!(l, limits(1024, 512 * 1024 * 1024, u32::MAX as u64));
    assert_eq!(Decoder::new().limits(), l);
}

#[test]
fn depth_limit_default_1024() {
    let nested = |n: usize| {
        let mut b = b"*1\r\n".repeat(n);
        b.extend_from_slice(b":1\r\n");
        b
    };
    let ok = nested(1024);
    let mut v = one(&ok);
    for _ in 0..1024 {
        v = match v {
            Value::Array(mut items) => items.pop().unwrap(),
            other => panic!("{other:?}"),
        };
    }
    assert_eq!(v, Value::Integer(1));
    error_at(&nested(1025), 4 * 1024, "nesting deeper than the limit of 1024 levels");
    // Far deeper input fails at the same place, before reading further.
    error_at(&nested(100_000), 4 * 1024, "nesting deeper");
}

#[test]
fn depth_limit_custom() {
    let l = limits(2, 100, 100);
    assert_eq!(
        match Decoder::with_limits(l).decode(b"*1\r\n*1\r\n:1\r\n").unwrap() {
            Decoded::Complete { value, .. } => value,
            d => panic!("{d:?}"),
        },
        Value::Array(vec![Value::Array(vec![Value::Integer(1)])])
    );
    error_at_with(b"*1\r\n*1\r\n*1\r\n:1\r\n", 8, "nesting deeper than the limit of 2 levels", l);
    // Every kind of nesting counts: maps, sets, pushes, attributes, streamed forms.
    error_at_with(b"%1\r\n~1\r\n>1\r\n:1\r\n:1\r\n", 8, "nesting", l);
    error_at_with(b"|1\r\n+a\r\n|1\r\n+b\r\n|0\r\n", 16, "nesting", l);
    error_at_with(b"*?\r\n*?\r\n$?\r\n", 8, "nesting", l);
    // Depth 0: only scalars, and empty aggregates (which nest nothing).
    let l0 = limits(0, 100, 100);
    assert!(Decoder::with_limits(l0).decode(b":1\r\n").is_ok());
    assert!(Decoder::with_limits(l0).decode(b"*0\r\n").is_ok());
    error_at_with(b"*1\r\n:1\r\n", 0, "nesting deeper than the limit of 0 levels", l0);
}

#[test]
fn bulk_limit_default_512_mib() {
    assert_eq!(incomplete(b"$536870912\r\n"), Some(536870914));
    error_at(b"$536870913\r\n", 0, "bulk string length 536870913 exceeds the limit of 536870912 bytes");
    error_at(b"!536870913\r\n", 0, "blob error length 536870913 exceeds the limit");
    error_at(b"=536870913\r\n", 0, "verbatim string length 536870913 exceeds the limit");
    error_at(b"$?\r\n;536870913\r\n", 4, "streamed string chunk length 536870913 exceeds the limit");
    error_at(b"$9223372036854775807\r\n", 0, "exceeds the limit");
}

#[test]
fn bulk_limit_custom() {
    let l = limits(10, 3, 100);
    assert!(matches!(Decoder::with_limits(l).decode(b"$3\r\nabc\r\n"), Ok(Decoded::Complete { .. })));
    error_at_with(b"$4\r\nabcd\r\n", 0, "bulk string length 4 exceeds the limit of 3 bytes", l);
    error_at_with(b"*2\r\n$1\r\na\r\n$4\r\nabcd\r\n", 11, "exceeds the limit of 3 bytes", l);
    error_at_with(b"!4\r\nabcd\r\n", 0, "blob error length 4 exceeds", l);
    error_at_with(b"=8\r\ntxt:abcd\r\n", 0, "verbatim string length 8 exceeds", l);
    // Per chunk, and for the whole streamed string, which is one bulk string.
    assert!(matches!(Decoder::with_limits(l).decode(b"$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n"), Ok(Decoded::Complete { .. })));
    error_at_with(b"$?\r\n;3\r\nabc\r\n;4\r\ndefg\r\n;0\r\n", 13, "streamed string chunk length 4 exceeds", l);
    error_at_with(b"$?\r\n;2\r\nab\r\n;2\r\ncd\r\n;0\r\n", 12, "streamed string of 4 bytes exceeds the limit of 3 bytes", l);
    // The limit is checked on the header, before the body arrives.
    error_at_with(b"$4\r\n", 0, "exceeds", l);
    // Simple strings are lines, not bulk strings: not limited.
    assert!(matches!(Decoder::with_limits(l).decode(b"+abcdefgh\r\n"), Ok(Decoded::Complete { .. })));
}

#[test]
fn aggregate_limit_default() {
    assert_eq!(incomplete(b"*4294967295\r\n"), None);
    error_at(b"*4294967296\r\n", 0, "array length 4294967296 exceeds the limit of 4294967295 elements");
    error_at(b"*2305843009213693954\r\n", 0, "exceeds the limit");
    error_at(b"%4294967296\r\n", 0, "map length 4294967296 exceeds");
    error_at(b"~4294967296\r\n", 0, "set length");
    error_at(b">4294967296\r\n", 0, "push length");
    error_at(b"|4294967296\r\n", 0, "attribute length");
}

#[test]
fn aggregate_limit_custom() {
    let l = limits(10, 100, 2);
    assert!(matches!(Decoder::with_limits(l).decode(b"*2\r\n:1\r\n:2\r\n"), Ok(Decoded::Complete { .. })));
    error_at_with(b"*3\r\n:1\r\n:2\r\n:3\r\n", 0, "array length 3 exceeds the limit of 2 elements", l);
    // A map counts pairs.
    assert!(matches!(Decoder::with_limits(l).decode(b"%2\r\n:1\r\n:2\r\n:3\r\n:4\r\n"), Ok(Decoded::Complete { .. })));
    error_at_with(b"%3\r\n", 0, "map length 3 exceeds", l);
    error_at_with(b"*1\r\n~3\r\n", 4, "set length 3 exceeds", l);
    // Streamed aggregates are counted as they grow (error at the first
    // element beyond the limit).
    assert!(matches!(Decoder::with_limits(l).decode(b"*?\r\n:1\r\n:2\r\n.\r\n"), Ok(Decoded::Complete { .. })));
    error_at_with(b"*?\r\n:1\r\n:2\r\n:3\r\n", 12, "streamed aggregate has more than the limit of 2 elements", l);
    error_at_with(b"*1\r\n~?\r\n:1\r\n:2\r\n:3\r\n.\r\n", 16, "streamed aggregate has more than the limit of 2", l);
    assert!(matches!(Decoder::with_limits(l).decode(b"%?\r\n:1\r\n:2\r\n:3\r\n:4\r\n.\r\n"), Ok(Decoded::Complete { .. })));
    error_at_with(b"%?\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n", 20, "streamed map has more than the limit of 2", l);
    // `*-1` is a null, not a length.
    assert!(matches!(Decoder::with_limits(l).decode(b"*-1\r\n"), Ok(Decoded::Complete { .. })));
}

/// With the limits lifted, a header of any size is only "incomplete": the
/// check pass allocates nothing from it (see also tests/alloc.rs).
#[test]
fn unlimited_headers_wait_without_allocating() {
    let l = limits(1024, u64::MAX, u64::MAX);
    assert_eq!(incomplete_with(b"*2305843009213693954\r\n", l), None);
    assert_eq!(incomplete_with(b"%4611686018427387903\r\n", l), None);
    assert_eq!(incomplete_with(b"*9223372036854775807\r\n:1\r\n", l), None);
    // 2^63 - 1 bytes do not fit in memory, but do fit in a 64-bit usize: incomplete.
    #[cfg(target_pointer_width = "64")]
    assert_eq!(incomplete_with(b"$9223372036854775807\r\n", l), Some(9223372036854775807 + 2));
}
