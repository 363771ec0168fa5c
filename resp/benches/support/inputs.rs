//! The inputs of the decoder benchmark (benches/decode.rs) and of its
//! instruction-count twin (examples/decode_profile.rs), in one place so that
//! both measure the same bytes.
#![allow(dead_code)]

pub fn set_commands(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n * 48);
    for i in 0..n {
        resp::encode_command(&[b"SET".as_slice(), format!("key:{i}").as_bytes(), format!("value_{i}").as_bytes()], &mut out);
    }
    out
}

/// What a pipeline of SETs gets back.
pub fn ok_replies(n: usize) -> Vec<u8> {
    b"+OK\r\n".repeat(n)
}

/// Small replies as a pipeline of mixed commands gets them.
pub fn mixed_resp2(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        match i % 8 {
            0 => out.extend_from_slice(b"+OK\r\n"),
            1 => out.extend_from_slice(format!(":{i}\r\n").as_bytes()),
            2 => out.extend_from_slice(format!("$8\r\nv{:07}\r\n", i % 10_000_000).as_bytes()),
            3 => out.extend_from_slice(b"$-1\r\n"),
            4 => out.extend_from_slice(b"*3\r\n$1\r\na\r\n$1\r\nb\r\n:1\r\n"),
            5 => out.extend_from_slice(b"-ERR value is not an integer or out of range\r\n"),
            6 => out.extend_from_slice(b"*2\r\n$5\r\nfield\r\n$5\r\nvalue\r\n"),
            _ => out.extend_from_slice(b":-1\r\n"),
        }
    }
    out
}

pub fn mixed_resp3(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        match i % 8 {
            0 => out.extend_from_slice(b"+OK\r\n"),
            1 => out.extend_from_slice(format!(":{i}\r\n").as_bytes()),
            2 => out.extend_from_slice(b"$5\r\nhello\r\n"),
            3 => out.extend_from_slice(b"_\r\n"),
            4 => out.extend_from_slice(b",3.14\r\n"),
            5 => out.extend_from_slice(b"#t\r\n"),
            6 => out.extend_from_slice(b"%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:2\r\n"),
            _ => out.extend_from_slice(b"~2\r\n$1\r\nx\r\n$1\r\ny\r\n"),
        }
    }
    out
}
