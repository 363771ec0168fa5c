//! Requests split as the Redis server splits them (processInputBuffer):
//! `*` starts a multibulk, anything else is an inline line. The same rules
//! are checked against a real server in tests/redis_server.rs.

use resp::request::{PROTO_INLINE_MAX_SIZE, PROTO_MAX_BULK_LEN};
use resp::{Request, RequestError, RequestReader};

fn args(items: &[&str]) -> Vec<Vec<u8>> {
    items.iter().map(|a| a.as_bytes().to_vec()).collect()
}

/// Every request of a whole stream, as a file reader does.
fn all(stream: &[u8]) -> Result<Vec<Request>, RequestError> {
    let mut r = RequestReader::new();
    let mut at = 0;
    let mut out = vec![];
    while let Some(req) = r.next(&stream[at..], true)? {
        at += req.consumed;
        out.push(req);
    }
    assert_eq!(r.offset(), at, "the reader's offset is the bytes consumed");
    Ok(out)
}

fn argvs(stream: &[u8]) -> Vec<Vec<Vec<u8>>> {
    all(stream).unwrap().into_iter().map(|r| r.argv).collect()
}

#[test]
fn mixed_stream() {
    let stream = b"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\na\r\nb\n\r\nGET k\n\n*0\r\n*-1\r\nECHO \"x y\"";
    let reqs = all(stream).unwrap();
    let got: Vec<_> = reqs.iter().map(|r| (r.argv.clone(), r.line, r.offset)).collect();
    assert_eq!(
        got,
        vec![
            (args(&["PING"]), 1, 0),
            (args(&["SET", "k", "a\r\nb\n"]), 2, 6),
            // Lines count every LF, those inside bulk arguments too (as an editor shows them).
            (args(&["GET", "k"]), 11, 37),
            // Blank lines, `*0` and `*-1` are skipped as the server does.
            (args(&["ECHO", "x y"]), 15, 53),
        ]
    );
    // The skipped bytes belong to the request after them.
    assert_eq!(reqs[3].consumed, 63 - 43);
}

#[test]
fn blank_lines_before_a_partial_request_are_not_lost() {
    // Found by tests/prop.rs: skipped blank lines were counted by the reader
    // though the caller, told "more bytes needed", kept them.
    let mut r = RequestReader::new();
    assert_eq!(r.next(b"\n\nPI", false).unwrap(), None);
    let req = r.next(b"\n\nPING\n", false).unwrap().unwrap();
    assert_eq!((req.line, req.offset, req.consumed), (3, 2, 7));
    let e = r.next(b"\n*x\r\n", false).unwrap_err();
    assert_eq!((e.line, e.offset), (5, 8));
}

#[test]
fn partial_input_waits() {
    let stream = b"*2\r\n$4\r\nECHO\r\n$3\r\nabc\r\nPING\n";
    // Fed growing prefixes, without eof, the reader says "more" until a
    // request is whole, then gives exactly the same requests.
    let mut r = RequestReader::new();
    let mut buf: Vec<u8> = vec![];
    let mut got = vec![];
    for &b in stream.iter() {
        buf.push(b);
        while let Some(req) = r.next(&buf, false).unwrap() {
            buf.drain(..req.consumed);
            got.push(req.argv);
        }
    }
    assert_eq!(got, vec![args(&["ECHO", "abc"]), args(&["PING"])]);
    // Without a final newline, a last inline line is only a command at eof.
    let mut r = RequestReader::new();
    assert_eq!(r.next(b"PING", false).unwrap(), None);
    assert_eq!(r.next(b"PING", true).unwrap().unwrap().argv, args(&["PING"]));
}

#[test]
fn truncated_multibulk_at_eof_is_an_error() {
    for cut in [b"*2\r\n$4\r\nECHO\r\n".as_slice(), b"*2\r\n$4\r\nEC", b"*2\r\n$4", b"*2"] {
        let e = all(cut).unwrap_err();
        assert!(e.message.contains("incomplete"), "{e}");
        // At the multibulk, or at the bulk argument cut short.
        assert!(e.offset == 0 || e.offset == 4, "{e}");
        assert_eq!(e.column, None);
    }
}

#[test]
fn multibulk_errors_name_the_byte() {
    let cases: &[(&[u8], usize, &str)] = &[
        (b"*x\r\n", 0, "invalid multibulk length \"x\""),
        (b"*+1\r\n", 0, "invalid multibulk length \"+1\""),
        (b"*2147483648\r\n", 0, "multibulk length 2147483648 exceeds 2147483647"),
        (b"*1\r\n:1\r\n", 4, "expected '$' for a bulk argument, got ':'"),
        (b"*1\r\n$-1\r\n", 4, "invalid bulk length -1 (0 to 536870912)"),
        (b"*1\r\n$536870913\r\n", 4, "invalid bulk length 536870913"),
        (b"*1\r\n$01\r\nx\r\n", 4, "invalid bulk length \"01\""),
        (b"*1\r\n$1\r\nxy\r\n", 9, "bulk length 1 but 2 bytes before CRLF"),
        (b"*1\r\n$1\r\nxyz", 9, "bulk argument of 1 bytes is not followed by CRLF"),
        // Too long a length at the end of the input: the length is wrong, not "incomplete".
        (b"*2\r\n$4\r\nECHO\r\n$9\r\nhello\r\n", 14, "bulk length 9 but 5 bytes before CRLF"),
        (b"*1\r\x00\n", 2, "multibulk header must end with CRLF"),
        (b"PING\n*1\r\n$1\r\nxy\r\n", 14, "bulk length 1 but 2 bytes before CRLF"),
    ];
    for (stream, offset, words) in cases {
        let e = all(stream).unwrap_err();
        assert_eq!(e.offset, *offset, "{:?}: {e}", String::from_utf8_lossy(stream));
        assert!(e.message.contains(words), "{:?}: {e}", String::from_utf8_lossy(stream));
        assert_eq!(e.to_string(), format!("byte {offset}: {}", e.message));
    }
    // Line numbers count the newlines before the error.
    assert_eq!(all(b"PING\nPING\n*1\r\n:1\r\n").unwrap_err().line, 4);
}

#[test]
fn inline_errors_have_line_and_column() {
    let e = all(b"PING\r\nSET k v\r\nSET k \"v\r\n").unwrap_err();
    assert_eq!((e.line, e.column, e.offset), (3, Some(7), 21));
    assert_eq!(e.to_string(), "line 3, column 7: unbalanced double quote");
    let e = all(b"*1\r\n$1\r\n\n\r\n'x'y").unwrap_err();
    assert_eq!((e.line, e.column, e.offset), (5, Some(4), 14));
}

#[test]
fn nul_in_an_inline_line_is_an_error() {
    let e = all(b"PING\nSET k a\0b\n").unwrap_err();
    assert_eq!((e.line, e.column, e.offset), (2, Some(8), 12));
    assert!(e.message.contains("NUL byte"), "{e}");
    // In a bulk argument a NUL is just a byte.
    assert_eq!(argvs(b"*1\r\n$1\r\n\0\r\n"), vec![vec![b"\0".to_vec()]]);
}

#[test]
fn inline_length_limit() {
    assert_eq!(PROTO_INLINE_MAX_SIZE, 65536);
    assert_eq!(PROTO_MAX_BULK_LEN, 512 << 20);
    let mut r = RequestReader::new();
    r.max_inline_len = 8;
    assert_eq!(r.next(b"ECHO abc\n", false).unwrap().unwrap().argv, args(&["ECHO", "abc"]));
    let e = r.next(b"ECHO abcd\n", false).unwrap_err();
    assert!(e.message.contains("inline command longer than 8 bytes"), "{e}");
    // Also when the line has not ended yet: the server does not wait forever.
    let mut r = RequestReader::new();
    r.max_inline_len = 8;
    assert!(r.next(b"ECHO abcdefgh", false).is_err());
    assert_eq!(r.next(b"ECHO abc", false).unwrap(), None);
    // And the default, on a multibulk header too.
    // (one byte of slack for the CR that may precede the LF)
    let long = vec![b'a'; PROTO_INLINE_MAX_SIZE + 2];
    assert!(RequestReader::new().next(&long, false).is_err());
    assert_eq!(RequestReader::new().next(&long[1..], false).unwrap(), None);
    let mut star = b"*".to_vec();
    star.extend(vec![b'1'; PROTO_INLINE_MAX_SIZE + 1]);
    assert!(RequestReader::new().next(&star, false).unwrap_err().message.contains("multibulk header longer"));
}

/// Found by the fuzz target: the limit verdict depended on where the stream
/// was cut (a CR arriving after the limit, a line ending in CR).
#[test]
fn limit_verdicts_do_not_depend_on_chunking() {
    let mut header = b"*".to_vec();
    header.extend_from_slice(&[b'1'; 9]);
    header.extend_from_slice(b"\rx");
    for cut in 1..=header.len() {
        let mut r = RequestReader::new();
        r.max_inline_len = 8;
        let first = r.next(&header[..cut], false);
        let e = match first {
            Err(e) => e,
            Ok(None) => r.next(&header, false).unwrap_err(),
            Ok(Some(req)) => panic!("{req:?}"),
        };
        assert_eq!((e.offset, e.message.as_str()), (0, "multibulk header longer than 8 bytes"), "cut {cut}");
    }
    // An inline line of exactly the limit, whose CR arrives before its LF.
    let line = b"ECHO abc\r\n";
    for cut in 1..=line.len() {
        let mut r = RequestReader::new();
        r.max_inline_len = 8;
        assert_eq!(r.next(&line[..cut], false).unwrap().map(|q| q.argv), if cut == line.len() { Some(args(&["ECHO", "abc"])) } else { None }, "cut {cut}");
    }
}

#[test]
fn bulk_length_limit_is_adjustable() {
    let mut r = RequestReader::new();
    r.max_bulk_len = 3;
    assert_eq!(r.next(b"*1\r\n$3\r\nabc\r\n", true).unwrap().unwrap().argv, args(&["abc"]));
    assert!(r.next(b"*1\r\n$4\r\nabcd\r\n", true).unwrap_err().message.contains("invalid bulk length 4 (0 to 3)"));
}

#[test]
fn no_allocation_from_a_multibulk_header() {
    // A huge count with no arguments behind it only waits.
    let mut r = RequestReader::new();
    assert_eq!(r.next(b"*2147483647\r\n$1\r\na\r\n", false).unwrap(), None);
    assert!(r.next(b"*2147483647\r\n$1\r\na\r\n", true).is_err());
}

#[test]
fn binary_arguments() {
    assert_eq!(argvs(b"*2\r\n$1\r\n\0\r\n$2\r\n\xff\n\r\n"), vec![vec![b"\0".to_vec(), b"\xff\n".to_vec()]]);
    assert_eq!(argvs(b"SET k \"\\x00\\xff\"\n"), vec![vec![b"SET".to_vec(), b"k".to_vec(), b"\0\xff".to_vec()]]);
}
