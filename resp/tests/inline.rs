//! Inline commands split exactly as Redis `sdssplitargs` (src/sds.c), and
//! multi-line texts with line/column errors. tests/redis_server.rs checks the
//! same rules against a real redis-server on thousands of generated lines.

use resp::{parse_inline, split_args, to_inline, SplitError};

fn ok(line: &[u8]) -> Vec<Vec<u8>> {
    split_args(line).unwrap_or_else(|e| panic!("{:?}: {e:?}", String::from_utf8_lossy(line)))
}

fn args(items: &[&[u8]]) -> Vec<Vec<u8>> {
    items.iter().map(|a| a.to_vec()).collect()
}

fn err(line: &[u8]) -> SplitError {
    match split_args(line) {
        Err(e) => e,
        Ok(v) => panic!("{:?} should be an error, got {v:?}", String::from_utf8_lossy(line)),
    }
}

#[test]
fn bare_words_and_blanks() {
    assert_eq!(ok(b"SET k v"), args(&[b"SET", b"k", b"v"]));
    assert_eq!(ok(b"   PING  "), args(&[b"PING"]));
    assert_eq!(ok(b""), Vec::<Vec<u8>>::new());
    assert_eq!(ok(b" \t \r\n\x0b\x0c"), Vec::<Vec<u8>>::new());
    // Tabs, CR and LF separate too.
    assert_eq!(ok(b"a\tb\rc\nd"), args(&[b"a", b"b", b"c", b"d"]));
    // Vertical tab and form feed are skipped before an argument (isspace) but
    // do not end one.
    assert_eq!(ok(b"\x0ba\x0bb \x0cc\x0c"), args(&[b"a\x0bb", b"c\x0c"]));
    // A backslash outside quotes is an ordinary byte.
    assert_eq!(ok(b"ECHO a\\ b"), args(&[b"ECHO", b"a\\", b"b"]));
    assert_eq!(ok(b"a\\nb"), args(&[b"a\\nb"]));
    // Bytes above 0x7f are kept as they are.
    assert_eq!(ok("SET clé \u{e9}t\u{e9}".as_bytes()), args(&[b"SET", "clé".as_bytes(), "été".as_bytes()]));
    assert_eq!(ok(b"\xff\xfe x"), args(&[b"\xff\xfe", b"x"]));
}

#[test]
fn double_quotes_and_their_escapes() {
    assert_eq!(ok(br#"set k "hello world""#), args(&[b"set", b"k", b"hello world"]));
    assert_eq!(ok(br#""""#), args(&[b""]));
    assert_eq!(ok(br#""a\nb\r\t\b\a""#), args(&[b"a\nb\r\t\x08\x07"]));
    assert_eq!(ok(br#""\\ \" \q \' \0""#), args(&[b"\\ \" q ' 0"]));
    assert_eq!(ok(br#""\x41\x62\x00\xfF\xAa""#), args(&[b"Ab\x00\xff\xaa"]));
    // \x without two hex digits is the generic escape: `x` itself.
    assert_eq!(ok(br#""\xZZ""#), args(&[b"xZZ"]));
    assert_eq!(ok(br#""\x4""#), args(&[b"x4"]));
    assert_eq!(ok(br#""\x""#), args(&[b"x"]));
    // A quote may open mid-argument.
    assert_eq!(ok(br#"a"b c"  d"#), args(&[b"ab c", b"d"]));
    // Followed by a blank of any kind, or the end.
    assert_eq!(ok(b"\"a\"\tb"), args(&[b"a", b"b"]));
    assert_eq!(ok(b"\"a\"\x0bb"), args(&[b"a", b"b"]));
    assert_eq!(ok(b"\"a\"\r"), args(&[b"a"]));
    // Quotes keep blanks and the other quote.
    assert_eq!(ok(br#""it's  ok""#), args(&[b"it's  ok"]));
}

#[test]
fn single_quotes_take_only_backslash_quote() {
    assert_eq!(ok(b"set k 'hello world'"), args(&[b"set", b"k", b"hello world"]));
    assert_eq!(ok(br"ECHO 'it\'s'"), args(&[b"ECHO", b"it's"]));
    assert_eq!(ok(br"'a\nb\x41\\z'"), args(&[b"a\\nb\\x41\\\\z"]));
    // `\'` always escapes, even after another backslash.
    assert_eq!(err(br"'a\\'").message, "unbalanced single quote");
    assert_eq!(ok(br#"'say "hi"'"#), args(&[b"say \"hi\""]));
    assert_eq!(ok(b"''"), args(&[b""]));
    assert_eq!(ok(b"x'y z'"), args(&[b"xy z"]));
}

#[test]
fn closing_quote_must_be_followed_by_a_blank() {
    let e = err(br#"ECHO "foo"bar"#);
    assert_eq!(e.offset, 10);
    assert_eq!(e.message, "closing quote must be followed by a space or the end of the line");
    assert_eq!(err(br#""a""b""#).offset, 3);
    assert_eq!(err(b"'a'b").offset, 3);
    assert_eq!(err(b"'a'\"b\"").offset, 3);
}

#[test]
fn unbalanced_quotes() {
    let e = err(br#"ECHO "foo"#);
    assert_eq!((e.offset, e.message), (5, "unbalanced double quote"));
    let e = err(b"ECHO 'foo");
    assert_eq!((e.offset, e.message), (5, "unbalanced single quote"));
    // An escaped closing quote does not close.
    assert_eq!(err(br#""abc\""#).offset, 0);
    assert_eq!(err(br"'abc\'").offset, 0);
    // A trailing backslash in double quotes is kept, then the quote is unclosed.
    assert_eq!(err(b"x \"a\\").offset, 2);
    assert_eq!(err(b"a\"").offset, 1);
}

#[test]
fn nul_ends_the_line_as_in_c() {
    assert_eq!(ok(b"SET k v\0garbage \"unclosed"), args(&[b"SET", b"k", b"v"]));
    assert_eq!(ok(b"\0SET"), Vec::<Vec<u8>>::new());
    // Inside quotes a NUL is where the C string ends: the quote is unbalanced.
    assert_eq!(err(b"\"ab\0cd\"").message, "unbalanced double quote");
    // \x00 is how to put a NUL in an argument.
    assert_eq!(ok(br#""\x00""#), args(&[b"\0"]));
}

#[test]
fn nul_in_a_line_of_text_is_an_error() {
    // The server never finds the end of such a line (tests/redis_server.rs).
    let p = parse_inline(b"PING\nSET k a\0b\nECHO \"\\x00\"");
    assert_eq!(p.commands.len(), 2);
    assert_eq!(p.commands[1].argv, args(&[b"ECHO", b"\0"]));
    assert_eq!(p.errors.len(), 1);
    let e = &p.errors[0];
    assert_eq!((e.line, e.column, e.offset), (2, 8, 12));
    assert!(e.message.starts_with("NUL byte in an inline command"), "{e}");
}

#[test]
fn multi_line_text() {
    let p = parse_inline(b"SET a 1\r\n\r\n  \nGET a\nECHO \"x y\"");
    assert!(p.errors.is_empty());
    let argvs: Vec<_> = p.commands.iter().map(|c| (c.line, c.argv.clone(), c.start, c.end)).collect();
    assert_eq!(
        argvs,
        vec![
            (1, args(&[b"SET", b"a", b"1"]), 0, 7),
            (4, args(&[b"GET", b"a"]), 14, 19),
            (5, args(&[b"ECHO", b"x y"]), 20, 30),
        ]
    );
    assert!(parse_inline(b"").commands.is_empty());
    assert!(parse_inline(b"\n\n\r\n").commands.is_empty());
    // A lone CR inside a line separates arguments (sdssplitargs); only the CR
    // right before LF belongs to the line break.
    let p = parse_inline(b"a\rb\r\n");
    assert_eq!(p.commands[0].argv, args(&[b"a", b"b"]));
    assert_eq!(p.commands[0].end, 3);
}

#[test]
fn every_bad_line_is_reported_with_line_and_column() {
    let text = "PING\nSET k \"v\nGET k\n  ECHO 'a'b\r\nSET \"é\" \"x\n";
    let p = parse_inline(text.as_bytes());
    assert_eq!(p.commands.len(), 2);
    let errors: Vec<_> = p.errors.iter().map(|e| (e.line, e.column, e.offset, e.to_string())).collect();
    assert_eq!(
        errors,
        vec![
            (2, 7, 11, "line 2, column 7: unbalanced double quote".to_string()),
            (4, 11, 30, "line 4, column 11: closing quote must be followed by a space or the end of the line".to_string()),
            // Columns count characters: "é" is one, though two bytes.
            (5, 9, 42, "line 5, column 9: unbalanced double quote".to_string()),
        ]
    );
    for e in &p.errors {
        assert!(b"\"'b".contains(&text.as_bytes()[e.offset]), "{e:?}");
    }
}

#[test]
fn to_inline_round_trips() {
    let cases: Vec<Vec<Vec<u8>>> = vec![
        args(&[b"SET", b"k", b"v"]),
        args(&[b"ECHO", b""]),
        args(&[b"ECHO", b"a b", b"it's", b"say \"hi\"", b"back\\slash"]),
        args(&[b"\0\x01\x7f\xff", b"\r\n\t\x07\x08", b"\x0b"]),
        args(&["été".as_bytes()]),
    ];
    for argv in cases {
        let line = to_inline(&argv);
        assert_eq!(split_args(line.as_bytes()).unwrap(), argv, "{line}");
    }
    assert_eq!(to_inline(&["SET", "k", "hello world"]), r#"SET k "hello world""#);
}
