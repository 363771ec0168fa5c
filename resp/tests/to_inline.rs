//! `to_inline` writes argv as a line that `split_args` reads back the same,
//! keeping readable text readable.

use resp::{split_args, to_inline};

#[test]
fn round_trips_and_stays_readable() {
    let cases: &[(&[&[u8]], &str)] = &[
        (&[b"SET", b"k", b"v"], "SET k v"),
        (&[b"SET", "héllo".as_bytes(), "日本".as_bytes()], "SET héllo 日本"),
        (&[b"SET", b"a b", b""], "SET \"a b\" \"\""),
        (&[b"ECHO", b"it's \"q\"\n\\"], "ECHO \"it's \\\"q\\\"\\n\\\\\""),
        (&[b"ECHO", b"\xff\x00\x01"], "ECHO \"\\xff\\x00\\x01\""),
        (&[b"ECHO", "tab\tand é".as_bytes()], "ECHO \"tab\\tand é\""),
    ];
    for (argv, line) in cases {
        assert_eq!(to_inline(argv), *line);
        let back = split_args(line.as_bytes()).unwrap();
        assert_eq!(back, argv.iter().map(|a| a.to_vec()).collect::<Vec<_>>(), "{line}");
    }
}
