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

#[path = "support/inputs.rs"]
mod inputs;

const N: usize = 1_000_000;

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
        [("set_commands", inputs::set_commands(N), theirs_resp2), ("mixed_resp2", inputs::mixed_resp2(N), theirs_resp2), ("mixed_resp3", inputs::mixed_resp3(N), theirs_resp3)];
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
