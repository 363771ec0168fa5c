//! Decodes one generated input once, with `resp` or `redis-protocol`, for
//! stable figures on a busy machine: instruction counts under callgrind
//! rather than time (resp/BENCH.md).
//!
//!     cargo build --release -p resp --example decode_profile
//!     valgrind --tool=callgrind target/release/examples/decode_profile DECODER INPUT N
//!
//! DECODER: `resp`, `redis-protocol`, or `none` (input generation only, to
//! subtract); INPUT: `set` (SET key:N value_N commands), `mixed` (small
//! RESP2 replies, as in benches/decode.rs) or `ok` (`+OK` replies, what a
//! pipeline of SETs gets back); N: how many.

#[path = "../benches/support/inputs.rs"]
mod inputs;

fn usage() -> ! {
    eprintln!("usage: decode_profile resp|redis-protocol|none set|mixed|ok N");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [decoder, input, n] = args.as_slice() else { usage() };
    let n: usize = n.parse().unwrap_or_else(|_| usage());
    let buf = match input.as_str() {
        "set" => inputs::set_commands(n),
        "mixed" => inputs::mixed_resp2(n),
        "ok" => inputs::ok_replies(n),
        _ => usage(),
    };
    let mut at = 0;
    let mut count = 0;
    match decoder.as_str() {
        "resp" => {
            let mut d = resp::Decoder::new();
            while at < buf.len() {
                match d.decode(&buf[at..]) {
                    Ok(resp::Decoded::Complete { value, consumed }) => {
                        std::hint::black_box(value);
                        at += consumed;
                        count += 1;
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        "redis-protocol" => {
            while at < buf.len() {
                let (frame, used) = redis_protocol::resp2::decode::decode(&buf[at..]).unwrap().unwrap();
                std::hint::black_box(frame);
                at += used;
                count += 1;
            }
        }
        "none" => count = n,
        _ => usage(),
    }
    assert_eq!(count, n);
}
