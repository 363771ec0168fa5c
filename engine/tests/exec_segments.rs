//! Why these tests: a pipeline chunk bigger than 64 KiB goes out in
//! segments, and replies are read without waiting between them (as
//! `redis-cli --pipe` does), while the same chunk is still being written.
//! "Write the chunk, then read one reply per command" then no longer holds
//! by construction: a reply split across a non-waiting read, a segment
//! counted twice or not at all, a connection lost between two segments of
//! one chunk can each shift, lose or duplicate replies, report a command
//! sent that was not (or the reverse), or make every segment pay a round
//! trip. Batches that fit in one segment, which is what the other executor
//! tests send, cannot show any of it; only chunks of many segments, large
//! replies arriving mid-write and connections lost mid-chunk, against a
//! real Redis, can.

mod common;

use std::time::Duration;

use common::RedisServer;
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{Batch, BatchSource, CommandResult, Commands, ExecOptions, OnError, Plan, Report, ResultSink, Status};
use pipelab_model::Mode;
use common::execute;
use pipelab_engine::run::execute_stream;
use resp::Value;

/// The executor's segment size (`SEGMENT` in `exec/pipeline.rs`): the most
/// bytes of encoded commands per write, except that a segment may end with
/// one command that crosses it.
const SEGMENT: usize = 64 * 1024;

fn target(s: &RedisServer) -> RedisTarget {
    RedisTarget::parse(&s.url).unwrap()
}

/// A pipeline batch of `commands` with `batch_size`, the other fields the
/// executor's defaults.
fn pipeline(commands: Commands, batch_size: usize) -> Batch {
    Batch::new(commands, Plan { batch_size, ..Plan::new(Mode::Pipeline) })
}

/// `n` times the same command.
fn repeat(argv: &[&str], n: usize) -> Commands {
    let mut c = Commands::new();
    for _ in 0..n {
        c.push(argv);
    }
    c
}

/// RESP size of one command (`*N\r\n` then `$len\r\narg\r\n` per argument),
/// computed here rather than by the codec under test.
fn resp_len<'a>(argv: impl ExactSizeIterator<Item = &'a [u8]>) -> usize {
    let mut n = format!("*{}\r\n", argv.len()).len();
    for a in argv {
        n += format!("${}\r\n", a.len()).len() + a.len() + 2;
    }
    n
}

fn command_sizes(c: &Commands) -> Vec<usize> {
    c.iter().map(|argv| resp_len(argv.iter())).collect()
}

/// One result per command, at its own index, in order.
fn assert_one_result_per_index(results: &[CommandResult], n: usize) {
    assert_eq!(results.len(), n, "one result per command");
    for (i, c) in results.iter().enumerate() {
        assert_eq!(c.index, i, "results in index order");
    }
}

/// Statuses read answered (ok/error)…, then unknown…, then not_sent…; each
/// carries what its status implies; the summary's counts match. Returns
/// (answered, unknown, not_sent).
fn assert_cut_cleanly(r: &Report, n: usize) -> (usize, usize, usize) {
    assert_one_result_per_index(&r.results, n);
    let rank = |s: Status| match s {
        Status::Ok | Status::Error => 0,
        Status::Unknown => 1,
        Status::NotSent => 2,
    };
    let first_unknown = r.results.iter().position(|c| c.status == Status::Unknown);
    for w in r.results.windows(2) {
        assert!(
            rank(w[0].status) <= rank(w[1].status),
            "command {} is {:?} after command {} {:?} (first unknown: {first_unknown:?})",
            w[1].index,
            w[1].status,
            w[0].index,
            w[0].status
        );
    }
    let mut counts = [0usize; 3];
    let mut last_sent = 0;
    for c in &r.results {
        counts[rank(c.status)] += 1;
        match c.status {
            Status::Ok | Status::Error => {
                assert!(c.reply.is_some() && c.sent_us.is_some() && c.reply_us.is_some(), "{c:?}");
                assert!(c.sent_us <= c.reply_us, "{c:?}");
            }
            Status::Unknown => {
                assert!(c.reply.is_none() && c.reply_us.is_none(), "{c:?}");
                assert!(c.sent_us.is_some(), "an unknown command was written: it has a sent_us: {c:?}");
            }
            Status::NotSent => assert!(c.reply.is_none() && c.sent_us.is_none() && c.reply_us.is_none(), "{c:?}"),
        }
        if let Some(s) = c.sent_us {
            assert!(s >= last_sent, "sent_us goes back at command {}: {s} < {last_sent}", c.index);
            last_sent = s;
        }
    }
    let s = &r.summary;
    assert_eq!(s.commands, n);
    assert_eq!((s.ok + s.errors, s.unknown, s.not_sent), (counts[0], counts[1], counts[2]), "{s:?}");
    assert_eq!(s.ok + s.errors + s.unknown + s.not_sent, n);
    (counts[0], counts[1], counts[2])
}

/// Encoded size of the commands reported written (answered or `unknown`).
fn written_bytes(r: &Report, sizes: &[usize]) -> u64 {
    r.results.iter().filter(|c| c.status != Status::NotSent).map(|c| sizes[c.index] as u64).sum()
}

/// `sent_us` never decreases; commands sharing one form a segment, whose
/// encoded size is below `SEGMENT` plus its last command. Returns the
/// segments as (first index, commands).
fn assert_segments(results: &[CommandResult], sizes: &[usize]) -> Vec<(usize, usize)> {
    let mut segments: Vec<(usize, usize)> = Vec::new();
    let mut prev = 0;
    for (i, c) in results.iter().enumerate() {
        let sent = c.sent_us.expect("written commands have a sent_us");
        assert!(sent >= prev, "sent_us goes back at command {i}: {sent} < {prev}");
        match segments.last_mut() {
            Some((_, n)) if sent == prev && i > 0 => *n += 1,
            _ => segments.push((i, 1)),
        }
        prev = sent;
    }
    for &(first, n) in &segments {
        let bytes: usize = sizes[first..first + n].iter().sum();
        let last = sizes[first + n - 1];
        assert!(
            bytes < SEGMENT + last,
            "commands {first}..{} share a sent_us but are {bytes} bytes: more than one {SEGMENT}-byte segment",
            first + n
        );
    }
    segments
}

/// Fewest segments `sizes` can go out in: each holds less than `SEGMENT`
/// plus one command.
fn min_segments(sizes: &[usize]) -> usize {
    let max = *sizes.iter().max().unwrap();
    sizes.iter().sum::<usize>().div_ceil(SEGMENT + max)
}

/// 50,000 `INCR counter` as one chunk (~1.3 MB, ~21 segments): every reply
/// is on its command, in order, though many were read between segments;
/// still one write call and one round trip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_chunk_of_many_segments_keeps_replies_in_order() {
    const N: usize = 50_000;
    let server = RedisServer::start();
    let commands = repeat(&["INCR", "counter"], N);
    let sizes = command_sizes(&commands);
    for batch_size in [N, 1_000_000] {
        server.cmd_str(&["DEL", "counter"]);
        let r = execute(&target(&server), &pipeline(commands.clone(), batch_size), &ExecOptions::default()).await.unwrap();
        assert!(r.connection_error.is_none(), "{:?}", r.connection_error);
        assert_one_result_per_index(&r.results, N);
        for (i, c) in r.results.iter().enumerate() {
            assert_eq!(c.status, Status::Ok, "command {i}: {c:?}");
            assert_eq!(c.reply, Some(Value::Integer(i as i64 + 1)), "command {i}: reply lost, duplicated or reordered");
            assert!(c.sent_us <= c.reply_us, "{c:?}");
        }
        let s = &r.summary;
        assert_eq!((s.ok, s.errors, s.unknown, s.not_sent), (N, 0, 0, 0));
        assert_eq!(s.round_trips, 1, "batch_size {batch_size}");
        assert_eq!(s.write_calls, 1, "one chunk is one write call, however many segments");
        let segments = assert_segments(&r.results, &sizes);
        let min = min_segments(&sizes);
        assert!(min > 1 && segments.len() >= min, "{} sent_us values, expected at least {min} segments", segments.len());
        assert!(s.write_syscalls >= segments.len() as u64, "{} system calls for {} segments", s.write_syscalls, segments.len());
        assert_eq!(s.bytes_sent, sizes.iter().sum::<usize>() as u64, "every byte of every command, once");
        assert!(s.total_us >= r.results[N - 1].reply_us.unwrap());
        assert_eq!(server.cmd_str(&["GET", "counter"]), Value::Bulk(N.to_string().into_bytes()));
    }
}

/// 20,000 SETs in chunks of 5,000 and 6,000 (each chunk ~400 KB, several
/// segments): one round trip and one write call per chunk, and a chunk is
/// written only after every reply of the previous one was read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_chunks_of_several_segments() {
    const N: usize = 20_000;
    let server = RedisServer::start();
    let value = "v".repeat(50);
    let mut commands = Commands::new();
    for i in 0..N {
        commands.push(&["SET", &format!("k:{i}"), &format!("{i}:{value}")]);
    }
    let sizes = command_sizes(&commands);
    for batch_size in [5_000, 6_000] {
        assert!(sizes[..batch_size].iter().sum::<usize>() > 4 * SEGMENT, "each chunk spans several segments");
        server.cmd_str(&["FLUSHALL"]);
        let r = execute(&target(&server), &pipeline(commands.clone(), batch_size), &ExecOptions::default()).await.unwrap();
        assert!(r.connection_error.is_none(), "{:?}", r.connection_error);
        assert_one_result_per_index(&r.results, N);
        assert!(r.results.iter().all(|c| c.status == Status::Ok && c.reply == Some(Value::Simple(b"OK".to_vec()))));
        let chunks = N.div_ceil(batch_size) as u64;
        let s = &r.summary;
        assert_eq!(s.round_trips, chunks, "batch_size {batch_size}");
        assert_eq!(s.write_calls, chunks, "batch_size {batch_size}");
        assert_eq!(s.bytes_sent, sizes.iter().sum::<usize>() as u64);
        let segments = assert_segments(&r.results, &sizes);
        assert!(s.write_syscalls >= segments.len() as u64);
        // No segment straddles two chunks, and each chunk has as many as its size needs.
        for (k, chunk) in r.results.chunks(batch_size).enumerate() {
            let first = k * batch_size;
            assert!(segments.iter().any(|&(f, _)| f == first), "chunk {k} starts a segment");
            let in_chunk = segments.iter().filter(|&&(f, _)| f >= first && f < first + chunk.len()).count();
            let min = min_segments(&sizes[first..first + chunk.len()]);
            assert!(in_chunk >= min, "chunk {k}: {in_chunk} segments, expected at least {min}");
        }
        // Chunk k+1 is written after chunk k's last reply: a round trip each.
        for k in 1..chunks as usize {
            let (last_reply, next_sent) = (r.results[k * batch_size - 1].reply_us, r.results[k * batch_size].sent_us);
            assert!(last_reply <= next_sent, "chunk {k} written at {next_sent:?}, before the previous chunk's last reply at {last_reply:?}");
        }
        assert_eq!(server.cmd_str(&["DBSIZE"]), Value::Integer(N as i64));
        assert_eq!(server.cmd_str(&["GET", &format!("k:{}", N - 1)]), Value::Bulk(format!("{}:{value}", N - 1).into_bytes()));
    }
}

/// What [`large_replies_arrive_while_the_chunk_is_written`] expects: the 4
/// values, then (GET of value k % 4, INCR seq) pairs.
struct Expect {
    values: Vec<Vec<u8>>,
    next: usize,
    /// (sent_us, reply_us) of every command.
    times: Vec<(u64, u64)>,
}

impl ResultSink for Expect {
    fn push(&mut self, c: CommandResult) {
        let i = self.next;
        self.next += 1;
        assert_eq!((c.index, c.status), (i, Status::Ok), "command {i}");
        let reply = c.reply.expect("an ok result has a reply");
        let ok = if i < self.values.len() {
            reply == Value::Simple(b"OK".to_vec())
        } else {
            let j = i - self.values.len();
            match (j / 2, j % 2) {
                (k, 0) => matches!(&reply, Value::Bulk(v) if *v == self.values[k % self.values.len()]),
                (k, _) => reply == Value::Integer(k as i64 + 1),
            }
        };
        if !ok {
            let shown = match &reply {
                Value::Bulk(v) => format!("bulk of {} bytes starting {:?}", v.len(), String::from_utf8_lossy(&v[..v.len().min(16)])),
                other => format!("{other:?}"),
            };
            panic!("command {i}: wrong reply ({shown}): replies shifted, lost or mangled");
        }
        let (sent, replied) = (c.sent_us.unwrap(), c.reply_us.unwrap());
        assert!(sent <= replied, "command {i}: replied at {replied} µs, before it was sent at {sent} µs");
        self.times.push((sent, replied));
    }
}

/// SET of four 100 KB values under 8 KB keys, then 1,000 × (GET of one,
/// INCR seq) in one chunk: 8 MB of commands (more than the socket buffers
/// hold, so the writer must wait for Redis to read, and Redis answers as it
/// reads) and 100 MB of replies, each split across reads, arriving while
/// later segments are being written. Streamed, so no reply is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_replies_arrive_while_the_chunk_is_written() {
    const VALUE: usize = 100 * 1024;
    const GETS: usize = 1_000;
    let server = RedisServer::start();
    let keys: Vec<String> = (0..4).map(|k| format!("big:{k}:{}", "k".repeat(8 * 1024))).collect();
    let values: Vec<Vec<u8>> = (0..4u32)
        .map(|k| (0..VALUE as u32).map(|i| (i.wrapping_mul(2654435761).wrapping_add(k * 97) >> 11) as u8).collect())
        .collect();
    let mut commands = Commands::new();
    for (key, value) in keys.iter().zip(&values) {
        commands.push(&[b"SET".as_slice(), key.as_bytes(), value.as_slice()]);
    }
    for k in 0..GETS {
        commands.push(&["GET", &keys[k % 4]]);
        commands.push(&["INCR", "seq"]);
    }
    let n = commands.len();
    let sizes = command_sizes(&commands);
    let plan = pipeline(Commands::new(), n).plan;
    let mut sink = Expect { values, next: 0, times: Vec::with_capacity(n) };
    let report = execute_stream(&target(&server), &plan, &mut BatchSource::new(&commands), &mut sink, &ExecOptions::default())
        .await
        .unwrap();
    assert!(report.connection_error.is_none(), "{:?}", report.connection_error);
    assert!(report.input_error.is_none());
    assert_eq!(sink.next, n, "one result per command");
    let s = &report.summary;
    assert_eq!((s.commands, s.ok, s.errors, s.unknown, s.not_sent), (n, n, 0, 0, 0));
    assert_eq!((s.round_trips, s.write_calls), (1, 1));
    assert_eq!(s.bytes_sent, sizes.iter().sum::<usize>() as u64);
    assert!(s.bytes_received > (GETS * VALUE) as u64);
    let last_sent = sink.times.iter().map(|t| t.0).max().unwrap();
    let read_mid_write = sink.times.iter().filter(|t| t.1 < last_sent).count();
    eprintln!("{n} commands, {} segments: {read_mid_write} replies read before the last segment was written", {
        let mut v: Vec<u64> = sink.times.iter().map(|t| t.0).collect();
        v.dedup();
        v.len()
    });
    assert!(read_mid_write > 0, "no reply was read while the chunk was still being written");
    assert_eq!(server.cmd_str(&["GET", "seq"]), Value::Bulk(GETS.to_string().into_bytes()));
}

/// Redis closes the connection while the executor is blocked writing a
/// segment: `DEBUG SLEEP` stops Redis reading while the socket buffers fill
/// (the chunk is ~31 MB, far more than they hold), then `QUIT` closes the
/// connection with most of the chunk unwritten, and the write in progress
/// fails. The commands written are `unknown`, with the time their segment
/// was written (the one whose write failed included: it was issued); those
/// never written `not_sent`; one result each, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_closed_while_a_segment_is_written() {
    const INCRS: usize = 100;
    // DEBUG is refused by default since Redis 7.
    let server = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let mut commands = Commands::new();
    for _ in 0..INCRS {
        commands.push(&["INCR", "counter"]);
    }
    commands.push(&["DEBUG", "SLEEP", "0.5"]);
    commands.push(&["QUIT"]);
    let value = "p".repeat(1000);
    for i in 0..30_000 {
        commands.push(&["SET", &format!("pad:{}", i % 64), &value]);
    }
    let n = commands.len();
    let sizes = command_sizes(&commands);
    let r = execute(&target(&server), &pipeline(commands, n), &ExecOptions::default()).await.unwrap();
    let s = &r.summary;
    eprintln!(
        "closed mid-write: ok {}, unknown {}, not_sent {}, {} bytes sent: {:?}",
        s.ok, s.unknown, s.not_sent, s.bytes_sent, r.connection_error
    );
    assert!(r.connection_error.is_some(), "the connection failure is reported");
    let (answered, unknown, not_sent) = assert_cut_cleanly(&r, n);
    assert!(answered <= INCRS + 2, "nothing after QUIT can be answered: {answered}");
    for (i, c) in r.results[..answered].iter().enumerate() {
        let expected = if i < INCRS { Value::Integer(i as i64 + 1) } else { Value::Simple(b"OK".to_vec()) };
        assert_eq!(c.reply.as_ref(), Some(&expected), "command {i}");
    }
    assert!(unknown > 0, "the commands written after QUIT are unknown");
    assert!(not_sent > 0, "a chunk of {n} commands cannot all be written before the close");
    // Reported written: the segments whose write completed (bytes_sent)
    // and the one whose write failed, no more.
    let (written, max) = (written_bytes(&r, &sizes), *sizes.iter().max().unwrap() as u64);
    assert!(s.bytes_sent <= written && written < s.bytes_sent + (SEGMENT as u64) + max, "{written} bytes reported written, {} sent", s.bytes_sent);
    assert_eq!(r.summary.write_calls, 1, "one chunk, cut while being written");
    assert_eq!(server.cmd_str(&["GET", "counter"]), Value::Bulk(INCRS.to_string().into_bytes()), "only the INCRs before QUIT ran");
}

/// `max_reply_bytes` reached while a huge chunk is being written: the
/// executor drops the connection between two segments. Replies read before
/// are kept, the commands written and unanswered are `unknown` (with the
/// time their segment was written), the rest `not_sent`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reply_limit_cuts_a_chunk_between_segments() {
    const LIMIT: u64 = 20_000;
    let server = RedisServer::start();
    // INCR then SET, 30,000 times: a reply read out of place breaks the sequence.
    let value = "p".repeat(1000);
    let mut commands = Commands::new();
    for i in 0..30_000 {
        commands.push(&["INCR", "counter"]);
        commands.push(&["SET", &format!("pad:{}", i % 64), &value]);
    }
    let n = commands.len();
    let sizes = command_sizes(&commands);
    let opts = ExecOptions { max_reply_bytes: Some(LIMIT), ..ExecOptions::default() };
    let r = execute(&target(&server), &pipeline(commands, n), &opts).await.unwrap();
    let (answered, unknown, not_sent) = assert_cut_cleanly(&r, n);
    eprintln!("reply limit {LIMIT}: answered {answered}, unknown {unknown}, not_sent {not_sent}: {:?}", r.connection_error);
    let e = r.connection_error.as_deref().expect("the cut is reported");
    assert!(e.contains(&LIMIT.to_string()), "{e}");
    assert!(answered > 0 && unknown > 0 && not_sent > 0, "cut in the middle of the chunk");
    for (i, c) in r.results[..answered].iter().enumerate() {
        let expected = if i % 2 == 0 { Value::Integer(i as i64 / 2 + 1) } else { Value::Simple(b"OK".to_vec()) };
        assert_eq!(c.reply.as_ref(), Some(&expected), "command {i}");
    }
    // Written means in a segment whose write completed: the segment pulled
    // and encoded when the cut came is not_sent.
    assert_eq!(written_bytes(&r, &sizes), r.summary.bytes_sent, "commands reported written are exactly those sent");
    assert!(r.summary.bytes_received > LIMIT);
    assert_eq!(r.summary.write_calls, 1);
}

/// An error reply read between segments does not stop the chunk it is in
/// (`on_error: stop` acts between chunks): the whole first chunk runs, the
/// second is not sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_error_stop_finishes_the_chunk_of_many_segments() {
    const N: usize = 20_000;
    let server = RedisServer::start();
    server.cmd_str(&["SET", "s", "text"]);
    let value = "v".repeat(50);
    let mut commands = Commands::new();
    for i in 0..N {
        if i == 10 {
            commands.push(&["INCR", "s"]);
        } else {
            commands.push(&["SET", &format!("k:{i}"), &value]);
        }
    }
    let sizes = command_sizes(&commands);
    let mut b = pipeline(commands, N / 2);
    b.plan.on_error = OnError::Stop;
    let r = execute(&target(&server), &b, &ExecOptions::default()).await.unwrap();
    assert!(r.connection_error.is_none());
    let (answered, unknown, not_sent) = assert_cut_cleanly(&r, N);
    assert_eq!((answered, unknown, not_sent), (N / 2, 0, N / 2));
    assert_eq!(r.results[10].status, Status::Error);
    assert_eq!((r.summary.ok, r.summary.errors), (N / 2 - 1, 1));
    assert_eq!((r.summary.round_trips, r.summary.write_calls), (1, 1));
    assert_eq!(r.summary.bytes_sent, sizes[..N / 2].iter().sum::<usize>() as u64, "the first chunk whole, nothing of the second");
    assert_eq!(server.cmd_str(&["DBSIZE"]), Value::Integer(N as i64 / 2)); // s + k:0..k:9999 without k:10
}

/// Behind 20 ms of simulated RTT, one chunk of ~2.9 MB (~44 segments)
/// costs one RTT, not one per segment (which would be ≥ 880 ms). Few, large
/// commands, so that Redis's own work stays small beside the RTT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_do_not_each_pay_a_round_trip() {
    const N: usize = 4_000;
    const RTT_MS: f64 = 20.0;
    let server = RedisServer::start();
    let value = "r".repeat(700);
    let mut commands = Commands::new();
    for i in 0..N {
        commands.push(&["SET", &format!("k:{}", i % 100), &value]);
    }
    commands.push(&["DBSIZE"]);
    let n = commands.len();
    let segments = min_segments(&command_sizes(&commands));
    assert!(segments >= 40, "{segments}");
    let t = target(&server);
    let baseline = execute(&t, &pipeline(commands.clone(), n), &ExecOptions::default()).await.unwrap();
    let mut b = pipeline(commands, n);
    b.plan.simulated_rtt_ms = RTT_MS;
    let r = execute(&t, &b, &ExecOptions::default()).await.unwrap();
    let total = Duration::from_micros(r.summary.total_us);
    let rtt = Duration::from_secs_f64(RTT_MS / 1000.0);
    eprintln!("{n} commands in one chunk: {:?} without RTT, {total:?} at {RTT_MS} ms RTT", Duration::from_micros(baseline.summary.total_us));
    assert!(r.connection_error.is_none());
    assert_eq!(r.summary.ok, n);
    assert_eq!(r.results[n - 1].reply, Some(Value::Integer(100)));
    assert_eq!((r.summary.round_trips, r.summary.write_calls), (1, 1));
    assert!(total >= rtt, "{total:?}");
    let bound = 2 * rtt + Duration::from_millis(300);
    assert!(bound < rtt * segments as u32 / 2, "the bound must tell one RTT from one per segment");
    assert!(total < bound, "{total:?} for one chunk of {segments}+ segments at {RTT_MS} ms RTT (bound {bound:?})");
    // Every reply waited the RTT: none came back before its segment went out.
    for c in &r.results {
        assert!(c.reply_us.unwrap() >= c.sent_us.unwrap() + (RTT_MS * 1000.0) as u64 * 9 / 10, "{c:?}");
    }
}
