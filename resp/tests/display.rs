//! The redis-cli TTY format: unit cases, then the real `redis-cli` against a
//! real redis-server on nested replies, RESP2 and RESP3.

mod common;

use common::{call, read_reply, RedisServer};
use resp::{decode_all, Value};
use std::io::Write;
use std::process::Command;

fn shown(bytes: &[u8]) -> String {
    let all = decode_all(bytes);
    assert!(all.error.is_none() && !all.incomplete, "{:?}", String::from_utf8_lossy(bytes));
    all.values[0].display()
}

#[test]
fn scalars() {
    assert_eq!(shown(b"+OK\r\n"), "OK\n");
    assert_eq!(shown(b"-ERR unknown command\r\n"), "(error) ERR unknown command\n");
    assert_eq!(shown(b"!3\r\nERR\r\n"), "(error) ERR\n");
    assert_eq!(shown(b":1\r\n"), "(integer) 1\n");
    assert_eq!(shown(b":-9223372036854775808\r\n"), "(integer) -9223372036854775808\n");
    assert_eq!(shown(b"$1\r\na\r\n"), "\"a\"\n");
    assert_eq!(shown(b"$0\r\n\r\n"), "\"\"\n");
    // sdscatrepr escapes.
    assert_eq!(shown(b"$10\r\n\"\\\n\r\t\x07\x08\x00\xff~\r\n"), "\"\\\"\\\\\\n\\r\\t\\a\\b\\x00\\xff~\"\n");
    assert_eq!(shown(b"$-1\r\n"), "(nil)\n");
    assert_eq!(shown(b"*-1\r\n"), "(nil)\n");
    assert_eq!(shown(b"_\r\n"), "(nil)\n");
    assert_eq!(shown(b",1.5\r\n"), "(double) 1.5\n");
    assert_eq!(shown(b",3\r\n"), "(double) 3\n");
    assert_eq!(shown(b",-inf\r\n"), "(double) -inf\n");
    assert_eq!(shown(b"#t\r\n"), "(true)\n");
    assert_eq!(shown(b"#f\r\n"), "(false)\n");
    assert_eq!(shown(b"(123\r\n"), "(big number) 123\n");
    // Verbatim strings are printed raw, without their format.
    assert_eq!(shown(b"=9\r\ntxt:a\r\nb\"\r\n"), "a\r\nb\"\n");
}

#[test]
fn aggregates() {
    assert_eq!(shown(b"*0\r\n"), "(empty array)\n");
    assert_eq!(shown(b"~0\r\n"), "(empty set)\n");
    assert_eq!(shown(b"%0\r\n"), "(empty hash)\n");
    assert_eq!(shown(b">0\r\n"), "(empty push)\n");
    assert_eq!(shown(b"*2\r\n$1\r\na\r\n:1\r\n"), "1) \"a\"\n2) (integer) 1\n");
    assert_eq!(
        shown(b"*3\r\n$1\r\na\r\n*2\r\n_\r\n-ERR x\r\n*1\r\n*0\r\n"),
        "1) \"a\"\n2) 1) (nil)\n   2) (error) ERR x\n3) 1) (empty array)\n"
    );
    assert_eq!(shown(b"~2\r\n+a\r\n+b\r\n"), "1~ a\n2~ b\n");
    assert_eq!(shown(b">2\r\n$7\r\nmessage\r\n:1\r\n"), "1) \"message\"\n2) (integer) 1\n");
    // A multi-line map value starts on its own line; a one-line one does not.
    assert_eq!(shown(b"%2\r\n+a\r\n:1\r\n+b\r\n*2\r\n:2\r\n:3\r\n"), "1# a => (integer) 1\n2# b => \n   1) (integer) 2\n   2) (integer) 3\n");
    assert_eq!(shown(b"%1\r\n+a\r\n*1\r\n%1\r\n+b\r\n:1\r\n"), "1# a => 1) 1# b => (integer) 1\n");
    assert_eq!(shown(b"%1\r\n+a\r\n*0\r\n"), "1# a => (empty array)\n");
    // Ten or more elements: indexes right-aligned, nested prefix one wider.
    let mut ten = b"*10\r\n".to_vec();
    for i in 0..9 {
        ten.extend_from_slice(format!(":{i}\r\n").as_bytes());
    }
    ten.extend_from_slice(b"*2\r\n:1\r\n:2\r\n");
    let s = shown(&ten);
    assert!(s.starts_with(" 1) (integer) 0\n 2) (integer) 1\n"), "{s}");
    assert!(s.ends_with(" 9) (integer) 8\n10) 1) (integer) 1\n    2) (integer) 2\n"), "{s}");
    // Attributes are not shown (as redis-cli).
    assert_eq!(shown(b"|1\r\n+a\r\n:1\r\n:2\r\n"), "(integer) 2\n");
}

fn have(bin: &str) -> bool {
    Command::new(bin).arg("--version").output().is_ok()
}

/// What `redis-cli --no-raw` prints for `args`, and what `display` prints for
/// the reply the server sends us for the same command.
fn compare(server: &RedisServer, resp3: bool, args: &[&str]) {
    let mut cli = Command::new("redis-cli");
    cli.args(["-p", &server.port.to_string(), "--no-raw"]);
    if resp3 {
        cli.arg("-3");
    }
    let out = cli.args(args).output().expect("redis-cli");
    let expected = String::from_utf8_lossy(&out.stdout).into_owned();

    let mut c = server.connect();
    if resp3 {
        call(&mut c, &[b"HELLO", b"3"]);
    }
    let argv: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let mut bytes = Vec::new();
    resp::encode_command(&argv, &mut bytes);
    c.write_all(&bytes).unwrap();
    let mut buf = Vec::new();
    let mut reply = read_reply(&mut c, &mut buf).unwrap();
    // A push message before the reply (DEBUG PROTOCOL push): redis-cli prints
    // both.
    let mut got = String::new();
    while let Value::Push(_) = reply {
        got.push_str(&reply.display());
        reply = read_reply(&mut c, &mut buf).unwrap();
    }
    got.push_str(&reply.display());
    assert_eq!(got, expected, "{} {args:?}", if resp3 { "RESP3" } else { "RESP2" });
}

#[test]
fn same_as_real_redis_cli() {
    if !have("redis-cli") {
        eprintln!("redis-cli is not on PATH: skipped (scripts/setup.sh installs it)");
        return;
    }
    let server = RedisServer::start(&["--enable-debug-command", "yes"]);
    let mut c = server.connect();
    call(&mut c, &[b"SET", b"k", b"v"]);
    call(&mut c, &[b"SET", b"bin", b"a\x00\xff\n\"\\b"]);
    call(&mut c, &[b"RPUSH", b"l", b"a", b"b c", b""]);
    let many: Vec<String> = (0..12).map(|i| format!("e{i}")).collect();
    let mut argv: Vec<&[u8]> = vec![b"RPUSH", b"big"];
    argv.extend(many.iter().map(|s| s.as_bytes()));
    call(&mut c, &argv);
    call(&mut c, &[b"HSET", b"h", b"f1", b"v1", b"f2", b"v2"]);
    call(&mut c, &[b"SADD", b"s", b"m"]);
    call(&mut c, &[b"ZADD", b"z", b"1.5", b"a", b"3", b"b"]);

    let lua_nested = "return {1,'a',{2,{3,'b'},{}},redis.error_reply('ERR x'),redis.status_reply('FINE'),false}";
    let commands: &[&[&str]] = &[
        &["GET", "k"],
        &["GET", "missing"],
        &["GET", "bin"],
        &["INCR", "k"],
        &["STRLEN", "bin"],
        &["SET", "k2", "v"],
        &["LRANGE", "l", "0", "-1"],
        &["LRANGE", "big", "0", "-1"],
        &["LRANGE", "missing", "0", "-1"],
        &["HGETALL", "h"],
        &["HGETALL", "missing"],
        &["SMEMBERS", "s"],
        &["SMEMBERS", "missing"],
        &["ZSCORE", "z", "a"],
        &["ZSCORE", "z", "b"],
        &["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        &["EVAL", lua_nested, "0"],
        &["CLIENT", "TRACKINGINFO"],
        &["COMMAND", "DOCS", "set"],
        &["DEBUG", "PROTOCOL", "double"],
        &["DEBUG", "PROTOCOL", "map"],
        &["DEBUG", "PROTOCOL", "set"],
        &["DEBUG", "PROTOCOL", "true"],
        &["DEBUG", "PROTOCOL", "false"],
        &["DEBUG", "PROTOCOL", "null"],
        &["DEBUG", "PROTOCOL", "verbatim"],
        // Not compared: `bignum` (redis-cli 7.0 exits with "Unknown reply
        // type: 13"; 7.2 prints `(big number) N`, as we do) and `attrib`
        // (redis-cli 7.0's hiredis rejects the `|` type byte).
    ];
    for resp3 in [false, true] {
        for args in commands {
            compare(&server, resp3, args);
        }
    }
}
