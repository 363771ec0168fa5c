//! The encoder: canonical bytes for every value, decode → encode identity on
//! canonical input, and argv → multibulk.

use resp::{decode_all, encode_command, encoded_command_len, Decoded, Decoder, Value};

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

#[test]
fn canonical_bytes_of_every_variant() {
    let cases: Vec<(Value, &[u8])> = vec![
        (Value::Simple(b("OK")), b"+OK\r\n"),
        (Value::Error(b("ERR bad")), b"-ERR bad\r\n"),
        (Value::Integer(-42), b":-42\r\n"),
        (Value::Integer(i64::MIN), b":-9223372036854775808\r\n"),
        (Value::Integer(i64::MAX), b":9223372036854775807\r\n"),
        (Value::Bulk(b("hello")), b"$5\r\nhello\r\n"),
        (Value::Bulk(vec![]), b"$0\r\n\r\n"),
        (Value::Bulk(vec![0xff, b'\r', b'\n']), b"$3\r\n\xff\r\n\r\n"),
        (Value::Null, b"_\r\n"),
        (Value::NullBulk, b"$-1\r\n"),
        (Value::NullArray, b"*-1\r\n"),
        (Value::Array(vec![]), b"*0\r\n"),
        (Value::Array(vec![Value::Integer(1), Value::Array(vec![Value::Null])]), b"*2\r\n:1\r\n*1\r\n_\r\n"),
        (Value::Double(1.5), b",1.5\r\n"),
        (Value::Double(3.0), b",3\r\n"),
        (Value::Double(-0.0), b",-0\r\n"),
        (Value::Double(1e300), b",1e300\r\n"),
        (Value::Double(1.25e-7), b",1.25e-7\r\n"),
        (Value::Double(f64::INFINITY), b",inf\r\n"),
        (Value::Double(f64::NEG_INFINITY), b",-inf\r\n"),
        (Value::Double(f64::NAN), b",nan\r\n"),
        (Value::Boolean(true), b"#t\r\n"),
        (Value::Boolean(false), b"#f\r\n"),
        (Value::BlobError(b("SYNTAX x")), b"!8\r\nSYNTAX x\r\n"),
        (Value::Verbatim { format: *b"txt", text: b("Some string") }, b"=15\r\ntxt:Some string\r\n"),
        (Value::BigNumber(b("-123456789012345678901234567890")), b"(-123456789012345678901234567890\r\n"),
        (Value::Map(vec![(Value::Simple(b("a")), Value::Integer(1))]), b"%1\r\n+a\r\n:1\r\n"),
        (Value::Set(vec![Value::Integer(1)]), b"~1\r\n:1\r\n"),
        (Value::Push(vec![Value::Bulk(b("message")), Value::Bulk(b("c"))]), b">2\r\n$7\r\nmessage\r\n$1\r\nc\r\n"),
        (
            Value::Attributed { attributes: vec![(Value::Simple(b("ttl")), Value::Integer(3600))], value: Box::new(Value::Bulk(b("hi"))) },
            b"|1\r\n+ttl\r\n:3600\r\n$2\r\nhi\r\n",
        ),
    ];
    for (value, bytes) in cases {
        let mut out = Vec::new();
        value.encode(&mut out);
        assert_eq!(out, bytes, "{value:?}: got {:?}", String::from_utf8_lossy(&out));
        assert_eq!(value.to_resp(), bytes);
        // And back.
        let back = match Decoder::new().decode(bytes).unwrap() {
            Decoded::Complete { value, consumed } => {
                assert_eq!(consumed, bytes.len());
                value
            }
            d => panic!("{d:?}"),
        };
        match (&back, &value) {
            (Value::Double(x), Value::Double(y)) if y.is_nan() => assert!(x.is_nan()),
            _ => assert_eq!(back, value),
        }
    }
}

/// Canonical input (what Redis sends) decodes and re-encodes to itself.
#[test]
fn decode_then_encode_is_the_identity_on_canonical_input() {
    let inputs: &[&[u8]] = &[
        b"+OK\r\n-ERR x\r\n:0\r\n:-1\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n_\r\n",
        b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$-1\r\n",
        b",1.5\r\n,3\r\n,-2.5e-10\r\n,inf\r\n,-inf\r\n,nan\r\n,0\r\n",
        b"#t\r\n#f\r\n!3\r\nERR\r\n=15\r\ntxt:Some string\r\n(-1234567890123456789012\r\n",
        b"%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n#t\r\n~2\r\n+orange\r\n:100\r\n",
        b">3\r\n$7\r\nmessage\r\n$4\r\nchan\r\n$2\r\nhi\r\n",
        b"|1\r\n+ttl\r\n:3600\r\n*2\r\n|0\r\n:1\r\n%1\r\n|1\r\n+a\r\n_\r\n+k\r\n+v\r\n",
        // HELLO 3 from Redis 7.0.
        b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:3\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
    ];
    for input in inputs {
        let all = decode_all(input);
        assert!(all.error.is_none() && !all.incomplete, "{:?}", String::from_utf8_lossy(input));
        let mut out = Vec::new();
        for v in &all.values {
            v.encode(&mut out);
        }
        assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(input));
    }
}

/// Streamed forms are decoded to the complete value, whose canonical form is
/// the counted one.
#[test]
fn streamed_input_encodes_counted() {
    let all = decode_all(b"$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n*?\r\n:1\r\n.\r\n%?\r\n+a\r\n:1\r\n.\r\n~?\r\n.\r\n");
    let mut out = Vec::new();
    for v in &all.values {
        v.encode(&mut out);
    }
    assert_eq!(out, b"$3\r\nabc\r\n*1\r\n:1\r\n%1\r\n+a\r\n:1\r\n~0\r\n");
}

#[test]
fn argv_to_multibulk() {
    let mut out = Vec::new();
    encode_command(&["SET", "key:1", "value_1"], &mut out);
    assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$7\r\nvalue_1\r\n");
    assert_eq!(encoded_command_len(&["SET", "key:1", "value_1"]), out.len());

    // Binary arguments, empty arguments, appending to what is there.
    let argv: Vec<Vec<u8>> = vec![b"ECHO".to_vec(), vec![], vec![0, b'\r', b'\n', 0xff]];
    let before = out.len();
    encode_command(&argv, &mut out);
    assert_eq!(&out[before..], b"*3\r\n$4\r\nECHO\r\n$0\r\n\r\n$4\r\n\0\r\n\xff\r\n");
    assert_eq!(encoded_command_len(&argv), out.len() - before);

    // An empty argv and many arguments (two-digit counts and lengths).
    let mut out = Vec::new();
    encode_command::<&[&str]>(&[], &mut out);
    assert_eq!(out, b"*0\r\n");
    assert_eq!(encoded_command_len::<&[&str]>(&[]), 4);
    let many: Vec<String> = (0..12).map(|i| "x".repeat(i * 10)).collect();
    let mut out = Vec::new();
    encode_command(&many, &mut out);
    assert_eq!(encoded_command_len(&many), out.len());
    let v = match Decoder::new().decode(&out).unwrap() {
        Decoded::Complete { value, .. } => value,
        d => panic!("{d:?}"),
    };
    assert_eq!(v, Value::Array(many.iter().map(|s| Value::Bulk(s.clone().into_bytes())).collect()));
}

/// Values as deep as the decoder allows (1024) encode, display, serialize
/// and drop without overflowing a test thread's stack.
#[test]
fn deep_values_do_not_overflow() {
    let mut input = b"*1\r\n%1\r\n".repeat(512);
    input.extend_from_slice(b":1\r\n");
    input.extend_from_slice(&b":2\r\n".repeat(512));
    let all = decode_all(&input);
    assert!(all.error.is_none() && !all.incomplete);
    let v = &all.values[0];
    assert_eq!(v.to_resp(), input);
    assert!(v.display().contains("(integer) 1"));
    // serde's recursion costs far more stack per level than ours (about
    // 4 KiB per level in a debug build): the reply JSON of such a value needs
    // a bigger stack than a test thread's 2 MiB.
    #[cfg(feature = "json")]
    {
        let v = v.clone();
        let json = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || serde_json::to_string(&v).unwrap())
            .unwrap()
            .join()
            .unwrap();
        assert!(json.contains("\"integer\""));
    }
}
