//! Decode throughput (MB/s and replies/s) of `resp` against `redis-protocol`
//! 6 on the same bytes. Figures and how to read them: resp/BENCH.md.
//!
//!     cargo bench -p resp --bench decode
//!
//! (a) the RESP of 1M `SET key:N value_N` commands (what a server or
//!     `pipelab run` reads), (b) a reply stream of 1M mixed small RESP2
//!     replies, (c) the same in RESP3 with its own types.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;

const N: usize = 1_000_000;

fn set_commands() -> Vec<u8> {
    let mut out = Vec::with_capacity(N * 48);
    for i in 0..N {
        resp::encode_command(&[b"SET".as_slice(), format!("key:{i}").as_bytes(), format!("value_{i}").as_bytes()], &mut out);
    }
    out
}

/// Small replies as a pipeline of mixed commands gets them.
fn mixed_resp2() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..N {
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

fn mixed_resp3() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..N {
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

fn ours(buf: &[u8]) -> usize {
    let mut d = resp::Decoder::new();
    let mut at = 0;
    let mut n = 0;
    while at < buf.len() {
        match d.decode(&buf[at..]) {
            Ok(resp::Decoded::Complete { value, consumed }) => {
                black_box(value);
                at += consumed;
                n += 1;
            }
            other => panic!("{other:?}"),
        }
    }
    n
}

fn theirs_resp2(buf: &[u8]) -> usize {
    let mut at = 0;
    let mut n = 0;
    while at < buf.len() {
        let (frame, used) = redis_protocol::resp2::decode::decode(&buf[at..]).unwrap().unwrap();
        black_box(frame);
        at += used;
        n += 1;
    }
    n
}

fn theirs_resp3(buf: &[u8]) -> usize {
    let mut at = 0;
    let mut n = 0;
    while at < buf.len() {
        let (frame, used) = redis_protocol::resp3::decode::complete::decode(&buf[at..]).unwrap().unwrap();
        black_box(frame);
        at += used;
        n += 1;
    }
    n
}

/// Name, input, and the redis-protocol decoder for it.
type Case = (&'static str, Vec<u8>, fn(&[u8]) -> usize);

fn bench(c: &mut Criterion) {
    let cases: [Case; 3] =
        [("set_commands", set_commands(), theirs_resp2), ("mixed_resp2", mixed_resp2(), theirs_resp2), ("mixed_resp3", mixed_resp3(), theirs_resp3)];
    for (name, buf, theirs) in cases {
        // Both decoders agree on the count before being timed.
        assert_eq!(ours(&buf), N);
        assert_eq!(theirs(&buf), N);
        let mut g = c.benchmark_group(name);
        g.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(8));
        g.throughput(Throughput::ElementsAndBytes { elements: N as u64, bytes: buf.len() as u64 });
        g.bench_function("resp", |b| b.iter_batched(|| (), |_| ours(black_box(&buf)), BatchSize::PerIteration));
        g.bench_function("redis-protocol", |b| b.iter_batched(|| (), |_| theirs(black_box(&buf)), BatchSize::PerIteration));
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
