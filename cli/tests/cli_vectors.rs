//! Every case of `../shared/vectors/*.json` through `pipelab resp encode`
//! and `pipelab resp decode`, with the exit codes and messages of
//! docs/cli.md#exit-status.

use serde_json::Value as Json;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn vectors(name: &str) -> Vec<Json> {
    let dir = std::env::var("PIPELAB_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/vectors"));
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// Runs `pipelab resp <sub> -` with `input` on stdin: (exit code, stdout, stderr).
fn pipelab(sub: &str, input: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pipelab"))
        .args(["resp", sub, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap(), out.stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn inline_vectors_through_encode() {
    for case in vectors("inline.json") {
        let input = case["input"].as_str().unwrap();
        let (code, stdout, stderr) = pipelab("encode", input.as_bytes());
        if case["error"].as_bool().unwrap() {
            assert_eq!(code, 2, "{input:?} must fail");
            assert!(stderr.starts_with("pipelab resp encode: line 1, column "), "{input:?}: {stderr}");
            assert!(stdout.is_empty());
        } else {
            assert_eq!(code, 0, "{input:?}: {stderr}");
            assert_eq!(stdout, hex(case["resp_hex"].as_str().unwrap()), "{input:?}");
        }
    }
}

#[test]
fn resp_vectors_through_decode() {
    for case in vectors("resp.json") {
        let bytes = hex(case["input_hex"].as_str().unwrap());
        let (code, stdout, stderr) = pipelab("decode", &bytes);
        let what = &case["input"];
        match case["expect"].as_str().unwrap() {
            "values" => {
                assert_eq!(code, 0, "{what:?}: {stderr}");
                let got: Vec<Json> = String::from_utf8(stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
                assert_eq!(Json::Array(got), case["values"], "{what:?}");
            }
            "error" => {
                assert_eq!(code, 2, "{what:?}");
                assert!(stderr.starts_with("pipelab resp decode: byte "), "{what:?}: {stderr}");
            }
            "incomplete" => {
                assert_eq!(code, 2, "{what:?}");
                assert!(stderr.starts_with("pipelab resp decode: byte ") && stderr.contains("incomplete"), "{what:?}: {stderr}");
            }
            other => panic!("unknown expect {other}"),
        }
    }
}

#[test]
fn encode_reports_line_and_column_and_what_was_written() {
    let (code, stdout, stderr) = pipelab("encode", b"SET a 1\n\nSET b 'x\n");
    assert_eq!(code, 2);
    assert_eq!(stdout, b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n");
    assert!(stderr.starts_with("pipelab resp encode: line 3, column 7: unbalanced single quote"), "{stderr}");
    assert!(stderr.contains("1 command before line 3 written"), "{stderr}");
}

#[test]
fn decode_error_offset_is_absolute_across_values() {
    let (code, stdout, stderr) = pipelab("decode", b"+OK\r\n:1\r\n:+1\r\n");
    assert_eq!(code, 2);
    assert_eq!(String::from_utf8(stdout).unwrap().lines().count(), 2);
    assert!(stderr.starts_with("pipelab resp decode: byte 9: invalid integer"), "{stderr}");
}

#[test]
fn format_prints_like_redis_cli() {
    let (code, stdout, _) = pipelab("format", b"*3\r\n$1\r\na\r\n*2\r\n_\r\n-ERR x\r\n:7\r\n");
    assert_eq!(code, 0);
    assert_eq!(String::from_utf8(stdout).unwrap(), "1) \"a\"\n2) 1) (nil)\n   2) (error) ERR x\n3) (integer) 7\n");
}

#[test]
fn inline_reads_mixed_resp_and_inline() {
    let (code, stdout, _) = pipelab("inline", b"*2\r\n$3\r\nGET\r\n$3\r\na b\r\nSET k v\r\n");
    assert_eq!(code, 0);
    assert_eq!(String::from_utf8(stdout).unwrap(), "GET \"a b\"\nSET k v\n");
}

#[test]
fn bad_usage_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_pipelab")).args(["resp", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
