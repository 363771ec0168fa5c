//! Differential tests against a real redis-server (started by the test on a
//! free port): inline lines split by the server's own `sdssplitargs` versus
//! [`resp::split_args`], and mixed RESP/inline request streams split by the
//! server versus [`resp::RequestReader`].
//!
//! Each generated line is sent as `RPUSH c:N <line>\n`; the list read back
//! with LRANGE (over RESP) is the server's argv. A line the server cannot
//! split gets "-ERR Protocol error: unbalanced quotes in request" and the
//! connection is closed: the test then reconnects and goes on.

mod common;

use common::{call, read_reply, seed, splits_unlike_redis, RedisServer, Rng};
use resp::{split_args, RequestReader, Value};
use std::io::Write;
use std::net::TcpStream;

const CASES: usize = 4000;

/// A line of the bytes that matter to sdssplitargs.
#[allow(clippy::explicit_auto_deref)] // `*` picks `&[u8]` out of `&&[u8]`
fn gen_line(rng: &mut Rng) -> Vec<u8> {
    const ATOMS: &[&[u8]] = &[
        b"a", b"b", b"Z", b"0", b"7", b"f", b"x", b"n", b"r", b"t", b"q", b" ", b" ", b"  ", b"\t", b"\r", b"\x0b", b"\x0c",
        b"\"", b"\"", b"'", b"'", b"\\", b"\\", b"\\x", b"\\x4", b"\\x41", b"\\xfF", b"\\xg1", b"\\\"", b"\\'", b"\\n",
        b"\\\\", b"\xff", b"\x80", "é".as_bytes(), b"\x01", b"\x7f", b"$", b"*",
    ];
    let mut line = Vec::new();
    match rng.below(4) {
        // Random atoms.
        0 | 1 => {
            for _ in 0..rng.below(14) {
                line.extend_from_slice(*rng.pick(ATOMS));
            }
        }
        // Well-formed quoted arguments with random insides, and a random tail.
        _ => {
            for _ in 0..1 + rng.below(4) {
                let q: &[u8] = if rng.chance(60) { b"\"" } else { b"'" };
                if rng.chance(20) {
                    line.extend_from_slice(*rng.pick(ATOMS)); // a quote mid-argument
                }
                line.extend_from_slice(q);
                for _ in 0..rng.below(6) {
                    let a = *rng.pick(ATOMS);
                    if a != q {
                        line.extend_from_slice(a);
                    }
                }
                line.extend_from_slice(q);
                line.extend_from_slice(if rng.chance(85) { b" ".as_slice() } else { *rng.pick(ATOMS) });
            }
        }
    }
    // The line ends at LF; the server strips one CR before it. NUL is
    // tested on its own (the server never answers such a line).
    line.retain(|&b| b != b'\n' && b != 0);
    line
}

/// What the server reads for the line: one trailing CR goes with the LF.
fn as_server_reads(mut full: Vec<u8>) -> Vec<u8> {
    if full.last() == Some(&b'\r') {
        full.pop();
    }
    full
}

#[derive(Debug, PartialEq)]
enum Outcome {
    /// The server's argv after `RPUSH c:N`.
    Args(Vec<Vec<u8>>),
    /// "-ERR Protocol error: unbalanced quotes in request", then closed.
    Unbalanced,
}

fn bytes_list(v: &Value) -> Vec<Vec<u8>> {
    match v {
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Bulk(b) => b.clone(),
                other => panic!("LRANGE element {other:?}"),
            })
            .collect(),
        other => panic!("LRANGE reply {other:?}"),
    }
}

/// Sends every line as an inline `RPUSH`, pipelined, reconnecting after
/// each protocol error, and returns the server's outcome for each.
fn server_outcomes(server: &RedisServer, lines: &[Vec<u8>]) -> Vec<Outcome> {
    let mut outcomes: Vec<Option<Outcome>> = (0..lines.len()).map(|_| None).collect();
    let mut next = 0;
    while next < lines.len() {
        let mut c = server.connect();
        let batch_end = (next + 200).min(lines.len());
        let mut out = Vec::new();
        for (i, line) in lines.iter().enumerate().take(batch_end).skip(next) {
            out.extend_from_slice(format!("RPUSH c:{i} ").as_bytes());
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        // The server may close mid-write after a protocol error.
        let _ = c.write_all(&out);
        let mut buf = Vec::new();
        let mut i = next;
        while i < batch_end {
            match read_reply(&mut c, &mut buf) {
                Some(Value::Integer(_)) => outcomes[i] = Some(Outcome::Args(vec![])), // filled below
                Some(Value::Error(e)) if e.starts_with(b"ERR wrong number of arguments") => outcomes[i] = Some(Outcome::Args(vec![])),
                Some(Value::Error(e)) if e == b"ERR Protocol error: unbalanced quotes in request" => {
                    outcomes[i] = Some(Outcome::Unbalanced);
                    // The server closes the connection: nothing more comes.
                    assert!(read_reply(&mut c, &mut buf).is_none(), "connection should be closed after case {i}");
                    i += 1;
                    break;
                }
                other => panic!("case {i} {:?}: unexpected reply {other:?}", String::from_utf8_lossy(&lines[i])),
            }
            i += 1;
        }
        next = i;
    }
    // Read the lists back over RESP, pipelined.
    let mut c = server.connect();
    let mut out = Vec::new();
    for i in 0..lines.len() {
        resp::encode_command(&[b"LRANGE".as_slice(), format!("c:{i}").as_bytes(), b"0", b"-1"], &mut out);
    }
    c.write_all(&out).unwrap();
    let mut buf = Vec::new();
    outcomes
        .into_iter()
        .map(|o| {
            let list = bytes_list(&read_reply(&mut c, &mut buf).unwrap());
            match o.expect("every case has an outcome") {
                Outcome::Args(_) => Outcome::Args(list),
                Outcome::Unbalanced => {
                    assert!(list.is_empty());
                    Outcome::Unbalanced
                }
            }
        })
        .collect()
}

#[test]
fn split_args_matches_the_server() {
    let redis = RedisServer::start(&[]);
    let mut rng = Rng(seed(20261130));
    let mut lines: Vec<Vec<u8>> = (0..CASES).map(|_| gen_line(&mut rng)).collect();
    // And a few by hand: every rule of sdssplitargs at least once.
    for l in [
        &b"\"a\\x41\\n\\r\\t\\b\\a\\\\\\\"\\q\""[..],
        b"'it\\'s' '\\x41'",
        b"a\"b c\"d",
        b"\"a\"b",
        b"'a'b",
        b"\"unbalanced",
        b"'unbalanced",
        b"\x0ba\x0bb\x0c",
        b"\"\"",
        b"",
        b"   ",
    ] {
        lines.push(l.to_vec());
    }
    let outcomes = server_outcomes(&redis, &lines);
    let (mut ok, mut errors, mut empty) = (0, 0, 0);
    for (i, (line, server)) in lines.iter().zip(outcomes).enumerate() {
        let mut full = format!("RPUSH c:{i} ").into_bytes();
        full.extend_from_slice(line);
        let ours = match split_args(&as_server_reads(full)) {
            Ok(argv) => {
                assert_eq!(&argv[..2], &[b"RPUSH".to_vec(), format!("c:{i}").into_bytes()]);
                if argv.len() == 2 {
                    empty += 1;
                } else {
                    ok += 1;
                }
                Outcome::Args(argv[2..].to_vec())
            }
            Err(_) => {
                errors += 1;
                Outcome::Unbalanced
            }
        };
        if ours != server {
            let difference = format!("case {i}: line {:?}: ours {ours:?}, the server's {server:?}", String::from_utf8_lossy(line));
            return splits_unlike_redis(&redis, "split_args_matches_the_server", difference);
        }
    }
    eprintln!("{} lines: {ok} split, {empty} empty, {errors} rejected — all as redis-server", lines.len());
    // The generator must exercise both outcomes substantially.
    assert!(ok > CASES / 4 && errors > CASES / 10, "ok {ok}, errors {errors}");
}

/// redis-server looks for the end of an inline line with `strchr`, which
/// stops at a NUL byte: the line is never executed (until the 64 KiB inline
/// limit). `parse_inline` and `RequestReader` therefore reject NUL in a line.
#[test]
fn the_server_never_answers_an_inline_line_with_nul() {
    use std::io::Read;
    let server = RedisServer::start(&[]);
    let mut c = server.connect();
    c.set_read_timeout(Some(std::time::Duration::from_millis(300))).unwrap();
    c.write_all(b"RPUSH k a\0b\nPING\n").unwrap();
    let mut buf = [0u8; 64];
    let r = c.read(&mut buf);
    assert!(matches!(&r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut), "{r:?}");
    assert!(resp::parse_inline(b"RPUSH k a\0b\n").errors[0].message.contains("NUL"));
    let mut r = RequestReader::new();
    assert!(r.next(b"RPUSH k a\0b\n", false).is_err());
}

/// A stream mixing multibulk and inline requests, blank lines, `*0` and
/// `*-1`, split by RequestReader and by the server.
#[test]
fn request_reader_splits_streams_as_the_server() {
    let server = RedisServer::start(&[]);
    let mut rng = Rng(seed(7));
    for round in 0..20 {
        let mut stream = Vec::new();
        let n = 50 + rng.below(100);
        for i in 0..n {
            match rng.below(6) {
                0 => stream.extend_from_slice(b"\r\n"),
                1 => stream.extend_from_slice(b"  \t\n"),
                2 => stream.extend_from_slice(if rng.chance(50) { b"*0\r\n" } else { b"*-1\r\n" }),
                _ => {}
            }
            let key = format!("r{round}:{i}");
            if rng.chance(50) {
                let mut argv: Vec<Vec<u8>> = vec![b"RPUSH".to_vec(), key.into_bytes()];
                for _ in 0..1 + rng.below(3) {
                    let len = rng.below(12);
                    argv.push((0..len).map(|_| *rng.pick(b"ab \r\n\"'\\\0\xff*$")).collect());
                }
                resp::encode_command(&argv, &mut stream);
            } else {
                // A valid line (the connection must survive the stream).
                let mut line;
                loop {
                    line = gen_line(&mut rng);
                    line.retain(|&b| b != 0 && b != b'\r');
                    if split_args(&line).map(|a| !a.is_empty()).unwrap_or(false) {
                        break;
                    }
                }
                stream.extend_from_slice(format!("RPUSH {key} ").as_bytes());
                stream.extend_from_slice(&line);
                stream.extend_from_slice(if rng.chance(50) { b"\r\n" } else { b"\n" });
            }
        }
        // Ours.
        let mut reader = RequestReader::new();
        let mut at = 0;
        let mut ours = Vec::new();
        while let Some(req) = reader.next(&stream[at..], true).unwrap() {
            at += req.consumed;
            ours.push(req.argv);
        }
        assert_eq!(ours.len(), n, "round {round}");
        // The server's, written in random chunks.
        let mut c: TcpStream = server.connect();
        let mut pos = 0;
        while pos < stream.len() {
            let end = (pos + 1 + rng.below(64)).min(stream.len());
            c.write_all(&stream[pos..end]).unwrap();
            pos = end;
        }
        let mut buf = Vec::new();
        for i in 0..n {
            let r = read_reply(&mut c, &mut buf).unwrap();
            if !matches!(r, Value::Integer(_)) {
                return splits_unlike_redis(&server, "request_reader_splits_streams_as_the_server", format!("round {round} request {i}: {r:?}"));
            }
        }
        for (i, argv) in ours.iter().enumerate() {
            assert_eq!(argv[1], format!("r{round}:{i}").into_bytes(), "round {round}: request {i} key");
            let list = bytes_list(&call(&mut c, &[b"LRANGE", &argv[1], b"0", b"-1"]));
            if list != argv[2..] {
                let difference = format!("round {round} request {i}: ours {:?}, the server's {list:?}", &argv[2..]);
                return splits_unlike_redis(&server, "request_reader_splits_streams_as_the_server", difference);
            }
        }
    }
}
