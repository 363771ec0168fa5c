//! The per-connection stream tracker: turns what a client wrote and what
//! Redis answered into flights (round trips) and missed pipelines.
//!
//! A flight is the commands the client wrote with no reply reaching it in
//! between: the first command written after a reply was forwarded to the
//! client starts a new flight. Replies are matched to commands in order
//! (Redis answers in order); RESP3 push frames (`>`) answer no command and
//! are skipped. The tracker sees the bytes before they are forwarded each
//! way, so a reply is counted before the client can react to it.
//!
//! It only reads the bytes: it keeps a copy of an incomplete request or
//! reply at the end of a chunk (at most [`MAX_PENDING_BYTES`]) and nothing
//! else. When it cannot follow a stream (bytes that are not RESP, a request
//! or reply over that bound, pub/sub, MONITOR or CLIENT REPLY OFF where
//! replies are not one per command), it stops for that connection and says
//! why; forwarding goes on untouched.
//!
//! What a command does (ends one reply per command, opens or ends a
//! transaction, runs a script, sets up the connection) is asked of the
//! command table ([`KeyTable::rules`]: the server's, else the built-in
//! fallback), never of a list of names here.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use resp::{Decoded, Decoder, RequestReader, Value};

use super::depends::Replies;
use super::keys::KeyTable;
use pipelab_engine::commands::{Table, TransactionStep};
use pipelab_engine::exec::Commands;
use super::missed::{Detector, FlightFacts, Rule, Run};
use super::pattern::key_pattern;
use super::report::{ConnectionReport, Flight, MissedPipeline, Undecoded};

/// Flights kept per connection (the most recent), for its report.
pub const FLIGHT_RING: usize = 64;
/// Largest incomplete request or reply the tracker holds a copy of, bytes;
/// past it the connection is no longer decoded (still forwarded).
pub const MAX_PENDING_BYTES: usize = 1 << 20;

/// Arguments of a command the table's rules read: the name, a subcommand
/// and one more word (CLIENT REPLY OFF). Only these are copied for them.
const RULE_ARGS: usize = 3;

/// What happened on a connection, for the doctor's totals.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Missed(MissedPipeline),
    Undecoded(Undecoded),
    /// A command, by kind, when it is written.
    Transaction,
    Script,
    StateChange(String),
}

/// A flight whose replies have not all arrived.
#[derive(Debug)]
struct OpenFlight {
    start: Instant,
    think_us: Option<u64>,
    /// Its first command carries bytes of an earlier reply of the run.
    carried: bool,
    /// Replies of the run that command was compared with.
    compared: u64,
    commands: u32,
    replied: u32,
    bytes_up: u64,
    bytes_down: u64,
    breaks_runs: bool,
    pattern: String,
}

/// Depth buckets: 1, 2–9, 10–99, 100–999, 1000 and more.
pub const DEPTH_BOUNDS: [(u64, u64); 5] = [(1, 1), (2, 9), (10, 99), (100, 999), (1000, u64::MAX)];

/// Counters of one connection. Kept here, not in shared totals, so that a
/// flight touches no lock but its own connection's: the doctor sums them
/// when it reports (once a second for the live line).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnCounters {
    /// Commands written.
    pub commands: u64,
    pub flights: u64,
    /// Per [`DEPTH_BOUNDS`] bucket: flights ended and their commands.
    pub depth: [(u64, u64); 5],
    /// Request bytes of ended flights.
    pub bytes_up: u64,
    /// Reply bytes of ended flights.
    pub bytes_down: u64,
    pub max_depth: u64,
    /// Time with commands outstanding, µs.
    pub wait_us: u64,
    /// Time between a reply and the next command with nothing outstanding, µs.
    pub client_us: u64,
    pub state_changes: BTreeMap<String, u64>,
    /// Single-command flights whose think time was just over the threshold
    /// ([`Detector::near_miss`]), and the longest such think time, µs.
    pub near_misses: u64,
    pub near_think_us_max: u64,
}

/// One connection's tracker.
pub struct Tracker {
    id: u64,
    peer: String,
    origin: Instant,
    keys: Arc<KeyTable>,
    requests: RequestReader,
    request_tail: Vec<u8>,
    /// The current command's first [`RULE_ARGS`] arguments, for the table
    /// (one buffer reused: no allocation per command).
    head: Commands,
    replies: Decoder,
    reply_tail: Vec<u8>,
    /// Hashes of recent replies' data, for [`super::depends`].
    seen: Replies,
    stopped: bool,
    /// Oldest first; the back one takes new commands while `accepting`.
    open: VecDeque<OpenFlight>,
    accepting: bool,
    last_reply: Option<Instant>,
    busy_since: Option<Instant>,
    watching: bool,
    in_multi: bool,
    detector: Detector,
    ring: VecDeque<Flight>,
    pub counters: ConnCounters,
    /// What happened since the caller last drained it.
    pub outcomes: Vec<Outcome>,
}

fn us(d: std::time::Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// `argv`'s command as written, upper-cased, with its subcommand when the
/// table's entry is a container: `CLIENT SETINFO` even from a server that
/// lacks it (Redis 7.0), whose table knows only `CLIENT`.
fn shown_name(table: &Table, argv: &[Vec<u8>]) -> String {
    let Some(first) = argv.first() else { return String::new() };
    let name = super::pattern::command_name(first);
    match argv.get(1) {
        Some(sub) if table.get(first).is_some_and(|c| !c.subcommands.is_empty()) => format!("{name} {}", super::pattern::command_name(sub)),
        _ => name,
    }
}

/// Runs `parse` on the bytes held from the last chunk followed by `chunk`
/// (on `chunk` itself when nothing is held: no copy), then holds what
/// `parse` left unconsumed. `parse` returns the bytes it consumed, or why
/// the stream cannot be followed. Errors (`"{stream}: …"`) also when the
/// unconsumed rest exceeds [`MAX_PENDING_BYTES`].
fn feed<E>(tail: &mut Vec<u8>, chunk: &[u8], stream: &'static str, item: &'static str, parse: impl FnOnce(&[u8]) -> Result<usize, E>) -> Result<(), StreamError<E>> {
    let consumed;
    if tail.is_empty() {
        consumed = parse(chunk).map_err(|error| StreamError::Parse { stream, error })?;
        tail.extend_from_slice(&chunk[consumed..]);
    } else {
        tail.extend_from_slice(chunk);
        consumed = parse(tail).map_err(|error| StreamError::Parse { stream, error })?;
        tail.drain(..consumed);
    }
    if tail.len() > MAX_PENDING_BYTES {
        return Err(StreamError::TooLong { stream, item });
    }
    Ok(())
}

/// Why one stream of a connection cannot be followed: the parser's error
/// `E`, or too much held undecoded. Each names the stream.
#[derive(Debug, thiserror::Error)]
enum StreamError<E> {
    #[error("{stream}: {error}")]
    Parse { stream: &'static str, error: E },
    #[error("{stream}: {item} longer than {MAX_PENDING_BYTES} bytes is not decoded")]
    TooLong { stream: &'static str, item: &'static str },
}

impl Tracker {
    /// A tracker for connection `id` from `peer`; times are counted from `origin`.
    pub fn new(id: u64, peer: String, origin: Instant, keys: Arc<KeyTable>, rule: Rule) -> Tracker {
        Tracker {
            id,
            peer,
            origin,
            keys,
            requests: RequestReader::new(),
            request_tail: Vec::new(),
            head: Commands::new(),
            replies: Decoder::new(),
            reply_tail: Vec::new(),
            seen: Replies::default(),
            stopped: false,
            open: VecDeque::new(),
            accepting: false,
            last_reply: None,
            busy_since: None,
            watching: false,
            in_multi: false,
            detector: Detector::new(rule),
            ring: VecDeque::new(),
            counters: ConnCounters::default(),
            outcomes: Vec::new(),
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// True once the tracker gave up on this connection.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    fn stop(&mut self, reason: String) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        self.request_tail = Vec::new();
        self.reply_tail = Vec::new();
        self.open.clear();
        if let Some(run) = self.detector.finish() {
            self.push_run(run);
        }
        self.outcomes.push(Outcome::Undecoded(Undecoded { connection: self.id, peer: self.peer.clone(), reason }));
    }

    /// Feeds `chunk` of one stream through [`feed`], the held bytes in
    /// `tail_of(self)`; `parse` is given the tracker and the bytes. Stops the
    /// tracker on an error, and holds nothing once it stopped.
    fn feed_stream<E: std::fmt::Display>(
        &mut self,
        chunk: &[u8],
        tail_of: fn(&mut Tracker) -> &mut Vec<u8>,
        (stream, item): (&'static str, &'static str),
        parse: impl FnOnce(&mut Tracker, &[u8]) -> Result<usize, E>,
    ) {
        if self.stopped {
            return;
        }
        let mut tail = std::mem::take(tail_of(self));
        match feed(&mut tail, chunk, stream, item, |buf| parse(self, buf)) {
            Ok(()) if !self.stopped => *tail_of(self) = tail,
            Ok(()) => {}
            Err(reason) => self.stop(reason.to_string()),
        }
    }

    /// Bytes the client wrote, at `now`, before they are forwarded.
    pub fn on_requests(&mut self, chunk: &[u8], now: Instant) {
        self.feed_stream(chunk, |t| &mut t.request_tail, ("requests", "a command"), |t, buf| {
            let mut pos = 0;
            while let Some(req) = t.requests.next(&buf[pos..], false)? {
                pos += req.consumed;
                t.on_command(&req.argv, req.consumed as u64, now);
                if t.stopped {
                    break;
                }
            }
            Ok::<_, resp::RequestError>(pos)
        });
    }

    fn on_command(&mut self, argv: &[Vec<u8>], bytes: u64, now: Instant) {
        let starts_flight = !self.accepting || self.open.is_empty();
        let rules = self.keys.rules();
        self.head.clear();
        self.head.push(&argv[..argv.len().min(RULE_ARGS)]);
        let head = self.head.get(0);
        let (one_reply, step, script, set_up) =
            (rules.answers_once(head).is_ok(), rules.transaction_step(head), rules.runs_script(head), rules.sets_connection_state(head));
        if !one_reply {
            let name = shown_name(rules, argv);
            return self.stop(format!("{name}: replies are not one per command from here on"));
        }
        let breaks_runs = self.watching || self.in_multi || step.is_some();
        match step {
            Some(TransactionStep::Watch) => self.watching = true,
            Some(TransactionStep::Multi) => {
                self.in_multi = true;
                self.outcomes.push(Outcome::Transaction);
            }
            Some(TransactionStep::End) => {
                self.in_multi = false;
                self.watching = false;
            }
            Some(TransactionStep::Unwatch) if !self.in_multi => self.watching = false,
            _ => {}
        }
        if script {
            self.outcomes.push(Outcome::Script);
        }
        if set_up {
            let state_name = shown_name(self.keys.rules(), argv);
            *self.counters.state_changes.entry(state_name.clone()).or_default() += 1;
            self.outcomes.push(Outcome::StateChange(state_name));
        }
        // Connection set-up (HELLO, AUTH, CLIENT SETNAME …) is not the
        // application's loop, nor what client libraries send on their own:
        // a ready check (ioredis's INFO) and the QUIT that closes.
        let library = head.name().is_some_and(|n| n.eq_ignore_ascii_case(b"info") || n.eq_ignore_ascii_case(b"quit"));
        let breaks_runs = breaks_runs || set_up || library;
        self.counters.commands += 1;
        if self.busy_since.is_none() {
            self.busy_since = Some(now);
            if let Some(r) = self.last_reply {
                self.counters.client_us += us(now.saturating_duration_since(r));
            }
        }
        if starts_flight {
            // The table (and its copy of the argv) only for a flight's first
            // command: the one whose pattern is kept.
            let (name, key) = self.keys.name_and_key(argv);
            let think_us = self.last_reply.map(|r| us(now.saturating_duration_since(r)));
            // The evidence: the run's replies so far, those a pipeline would have sent it with.
            let (carried, compared) = self.seen.carried(argv, self.detector.run_len());
            // Only a flight's first command gets a pattern: the rest of a
            // pipeline is never part of a run.
            let pattern = match key {
                Some(i) => format!("{name} {}", key_pattern(&argv[i])),
                None => name,
            };
            self.open.push_back(OpenFlight { start: now, think_us, carried, compared, commands: 0, replied: 0, bytes_up: 0, bytes_down: 0, breaks_runs: false, pattern });
            self.accepting = true;
        }
        let f = self.open.back_mut().expect("just pushed");
        f.commands += 1;
        f.bytes_up += bytes;
        f.breaks_runs |= breaks_runs;
    }

    /// Bytes Redis sent, at `now`, before they are forwarded.
    pub fn on_replies(&mut self, chunk: &[u8], now: Instant) {
        // The decoder resumes its check where it stopped: the next call
        // gives it the same bytes (the tail) followed by more.
        self.feed_stream(chunk, |t| &mut t.reply_tail, ("replies", "a reply"), |t, buf| {
            let mut pos = 0;
            while pos < buf.len() {
                match t.replies.decode(&buf[pos..])? {
                    Decoded::Complete { value, consumed } => {
                        pos += consumed;
                        if !matches!(value, Value::Push(_)) {
                            t.seen.add(&value);
                            t.on_reply(consumed as u64, now);
                        }
                    }
                    Decoded::Incomplete { .. } => break,
                }
            }
            Ok::<_, resp::DecodeError>(pos)
        });
    }

    fn on_reply(&mut self, bytes: u64, now: Instant) {
        self.last_reply = Some(now);
        self.accepting = false;
        let Some(f) = self.open.front_mut() else {
            return; // a reply to no command (an error before Redis closes)
        };
        f.replied += 1;
        f.bytes_down += bytes;
        if f.replied < f.commands {
            return;
        }
        let f = self.open.pop_front().expect("front exists");
        if self.open.is_empty() {
            if let Some(b) = self.busy_since.take() {
                self.counters.wait_us += us(now.saturating_duration_since(b));
            }
        }
        let start_us = us(f.start.saturating_duration_since(self.origin));
        let end_us = us(now.saturating_duration_since(self.origin));
        let flight = Flight {
            commands: f.commands,
            start_us,
            wait_us: end_us.saturating_sub(start_us),
            think_us: f.think_us,
            bytes_up: f.bytes_up,
            bytes_down: f.bytes_down,
            pattern: f.pattern,
        };
        self.counters.flights += 1;
        self.counters.max_depth = self.counters.max_depth.max(u64::from(f.commands));
        let facts = FlightFacts {
            commands: flight.commands,
            breaks_runs: f.breaks_runs,
            think_us: flight.think_us,
            carried: f.carried,
            compared: f.compared,
            start_us,
            end_us,
            pattern: &flight.pattern,
        };
        if self.detector.near_miss(&facts) {
            self.counters.near_misses += 1;
            self.counters.near_think_us_max = self.counters.near_think_us_max.max(facts.think_us.unwrap_or(0));
        }
        if let Some(run) = self.detector.on_flight(&facts) {
            self.push_run(run);
        }
        let d = u64::from(flight.commands);
        if let Some(i) = DEPTH_BOUNDS.iter().position(|&(lo, hi)| (lo..=hi).contains(&d)) {
            self.counters.depth[i].0 += 1;
            self.counters.depth[i].1 += d;
        }
        self.counters.bytes_up += flight.bytes_up;
        self.counters.bytes_down += flight.bytes_down;
        if self.ring.len() == FLIGHT_RING {
            self.ring.pop_front();
        }
        self.ring.push_back(flight);
    }

    fn push_run(&mut self, run: Run) {
        let missed = self.missed_of(run);
        self.outcomes.push(Outcome::Missed(missed));
    }

    /// The run going on now, if it is already long enough to report.
    pub fn current_missed(&self) -> Option<MissedPipeline> {
        self.detector.current().map(|run| self.missed_of(run))
    }

    /// The kept flights (at most [`FLIGHT_RING`]) that started after `since_us`, oldest first.
    pub fn flights_since(&self, since_us: u64) -> Vec<Flight> {
        self.ring.iter().filter(|f| f.start_us > since_us).cloned().collect()
    }

    fn missed_of(&self, run: Run) -> MissedPipeline {
        let top = run.patterns.first().map(|p| p.pattern.clone()).unwrap_or_default();
        let description = if run.patterns.len() == 1 {
            format!("{top} ×{} sequential", run.commands)
        } else {
            let parts: Vec<String> = run.patterns.iter().map(|p| format!("{} ×{}", p.pattern, p.commands)).collect();
            format!("{} sequential", parts.join(", "))
        };
        let rtt_ms = if run.commands > 1 { run.saving_ms / (run.commands - 1) as f64 } else { 0.0 };
        let why = format!(
            "no command carried bytes of an earlier reply of the run ({} comparisons of an argument, whole and cut at \
             key separators, with the data of up to {} replies back); longest think time {:.1} ms, under the {:.0} ms \
             that ends a run",
            run.compared,
            super::depends::WINDOW,
            run.think_us_max as f64 / 1000.0,
            self.detector.rule().think_time_us as f64 / 1000.0
        );
        MissedPipeline {
            connection: self.id,
            peer: self.peer.clone(),
            commands: run.commands,
            pattern: top,
            description,
            patterns: run.patterns,
            start_us: run.start_us,
            duration_ms: run.end_us.saturating_sub(run.start_us) as f64 / 1000.0,
            think_us_max: run.think_us_max,
            why,
            replies_compared: run.compared,
            rtt_ms,
            saving_ms: run.saving_ms,
        }
    }

    /// Ends the connection's current run (it closed, or the doctor stops).
    pub fn finish(&mut self) {
        if let Some(run) = self.detector.finish() {
            self.push_run(run);
        }
    }

    /// The connection as reported.
    pub fn report(&self) -> ConnectionReport {
        ConnectionReport { recent_flights: self.ring.iter().cloned().collect(), ..self.report_without_flights() }
    }

    /// The connection's counters, `recent_flights` left empty.
    pub fn report_without_flights(&self) -> ConnectionReport {
        ConnectionReport {
            connection: self.id,
            peer: self.peer.clone(),
            commands: self.counters.commands,
            flights: self.counters.flights,
            max_depth: self.counters.max_depth,
            recent_flights: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const RULE: Rule = Rule { think_time_us: 50_000, min_run: 3, rtt_ms: 1.0 };

    fn tracker() -> (Tracker, Instant) {
        let origin = Instant::now();
        (Tracker::new(1, "peer".into(), origin, Arc::new(KeyTable::default()), RULE), origin)
    }
    fn at(origin: Instant, us: u64) -> Instant {
        origin + Duration::from_micros(us)
    }
    fn flights(t: &Tracker) -> Vec<u32> {
        t.ring.iter().map(|f| f.commands).collect()
    }
    fn missed(t: &Tracker) -> Vec<&MissedPipeline> {
        t.outcomes.iter().filter_map(|o| if let Outcome::Missed(m) = o { Some(m) } else { None }).collect()
    }

    #[test]
    fn a_sequential_loop_is_flights_of_one_and_a_missed_pipeline() {
        let (mut t, o) = tracker();
        for i in 0..10u64 {
            t.on_requests(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", at(o, i * 100));
            t.on_replies(b"+OK\r\n", at(o, i * 100 + 90));
        }
        t.finish();
        assert_eq!(flights(&t), vec![1; 10]);
        let m = missed(&t);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].commands, 10);
        assert_eq!(m[0].pattern, "SET"); // no key table: names only
        assert_eq!(m[0].saving_ms, 9.0);
        assert_eq!(t.counters.wait_us, 900);
        assert_eq!(t.counters.client_us, 90);
    }

    #[test]
    fn a_pipeline_cut_anywhere_is_one_flight_and_push_frames_are_not_replies() {
        let (mut t, o) = tracker();
        let reqs = b"PING\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\n";
        for (i, b) in reqs.chunks(3).enumerate() {
            t.on_requests(b, at(o, i as u64));
        }
        let reps = b"+PONG\r\n>2\r\n$7\r\nmessage\r\n$1\r\nx\r\n+PONG\r\n$5\r\nhello\r\n";
        for (i, b) in reps.chunks(2).enumerate() {
            t.on_replies(b, at(o, 100 + i as u64));
        }
        assert_eq!(flights(&t), vec![3]);
        assert!(!t.stopped());
    }

    #[test]
    fn commands_written_after_a_reply_start_a_new_flight() {
        let (mut t, o) = tracker();
        t.on_requests(b"PING\r\nPING\r\n", at(o, 0));
        t.on_replies(b"+PONG\r\n", at(o, 10));
        t.on_requests(b"PING\r\n", at(o, 20));
        t.on_replies(b"+PONG\r\n+PONG\r\n", at(o, 30));
        assert_eq!(flights(&t), vec![2, 1]);
    }

    #[test]
    fn a_loop_that_reads_an_id_then_writes_its_key_is_not_a_missed_pipeline() {
        let (mut t, o) = tracker();
        let mut now = 0;
        for i in 0..100u64 {
            let id = 1000 + i;
            t.on_requests(format!("GET next:{i}\r\n").as_bytes(), at(o, now));
            t.on_replies(format!("${}\r\n{id}\r\n", id.to_string().len()).as_bytes(), at(o, now + 5));
            t.on_requests(format!("SET user:{id} x\r\n").as_bytes(), at(o, now + 10));
            t.on_replies(b"+OK\r\n", at(o, now + 15));
            now += 20;
        }
        t.finish();
        assert_eq!(t.counters.flights, 200);
        assert!(missed(&t).is_empty(), "{:?}", missed(&t));
        // The same loop writing keys of its own: one run of 200, and why.
        let (mut t, o) = tracker();
        for i in 0..100u64 {
            t.on_requests(format!("GET next:{i}\r\n").as_bytes(), at(o, i * 20));
            t.on_replies(b"$4\r\n7777\r\n", at(o, i * 20 + 5));
            t.on_requests(format!("SET user:{i} x\r\n").as_bytes(), at(o, i * 20 + 10_000));
            t.on_replies(b"+OK\r\n", at(o, i * 20 + 10_005));
        }
        t.finish();
        let m = missed(&t);
        assert_eq!(m.iter().map(|m| m.commands).collect::<Vec<_>>(), [200], "think time of 10 ms stays under the bound");
        assert!(m[0].replies_compared >= 199, "{:?}", m[0]);
        assert!(m[0].why.starts_with("no command carried bytes of an earlier reply"), "{}", m[0].why);
    }

    #[test]
    fn garbage_stops_decoding_and_says_why() {
        let (mut t, o) = tracker();
        t.on_requests(b"*x\r\n", at(o, 0));
        assert!(t.stopped());
        assert!(matches!(&t.outcomes[0], Outcome::Undecoded(u) if u.reason.starts_with("requests: byte 0")));
        t.on_requests(b"PING\r\n", at(o, 1));
        t.on_replies(b"+PONG\r\n", at(o, 2));
        assert!(flights(&t).is_empty());
    }

    #[test]
    fn transactions_are_not_missed_pipelines() {
        let (mut t, o) = tracker();
        let mut now = 0;
        for _ in 0..5 {
            for (cmd, reply) in [("WATCH k", "+OK"), ("GET k", "$-1"), ("MULTI", "+OK"), ("SET k v", "+QUEUED"), ("EXEC", "*1\r\n+OK")] {
                t.on_requests(format!("{cmd}\r\n").as_bytes(), at(o, now));
                t.on_replies(format!("{reply}\r\n").as_bytes(), at(o, now + 5));
                now += 10;
            }
        }
        t.finish();
        assert_eq!(flights(&t).len(), 25);
        assert!(missed(&t).is_empty());
        assert!(t.outcomes.iter().filter(|o| matches!(o, Outcome::Transaction)).count() == 5);
    }

    #[test]
    fn connection_set_up_is_counted_but_not_part_of_a_run() {
        let (mut t, o) = tracker();
        let mut now = 0;
        for (cmd, reply) in [("HELLO 2", "*0"), ("CLIENT SETINFO LIB-NAME x", "+OK"), ("SELECT 0", "+OK")].into_iter().chain([("INCR n", ":1"); 5]) {
            t.on_requests(format!("{cmd}\r\n").as_bytes(), at(o, now));
            t.on_replies(format!("{reply}\r\n").as_bytes(), at(o, now + 5));
            now += 10;
        }
        t.finish();
        let m = missed(&t);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].commands, 5);
        let names: Vec<&str> = t.counters.state_changes.keys().map(String::as_str).collect();
        assert_eq!(names, vec!["CLIENT SETINFO", "HELLO", "SELECT"]);
    }

    #[test]
    fn a_client_librarys_ready_check_and_quit_are_not_part_of_a_run() {
        let (mut t, o) = tracker();
        let mut now = 0;
        let commands = [("INFO", "$3\r\nx:1"), ("info server", "$3\r\nx:1")].into_iter().chain([("GET k", "$-1"); 4]).chain([("QUIT", "+OK")]);
        for (cmd, reply) in commands {
            t.on_requests(format!("{cmd}\r\n").as_bytes(), at(o, now));
            t.on_replies(format!("{reply}\r\n").as_bytes(), at(o, now + 5));
            now += 10;
        }
        t.finish();
        let m = missed(&t);
        assert_eq!((m.len(), m[0].commands, m[0].pattern.as_str()), (1, 4, "GET"), "{m:?}");
    }

    #[test]
    fn subscribe_stops_tracking() {
        for cmd in ["SUBSCRIBE a b", "unsubscribe a b", "MONITOR", "CLIENT REPLY OFF"] {
            let (mut t, o) = tracker();
            t.on_requests(format!("{cmd}\r\n").as_bytes(), at(o, 0));
            assert!(t.stopped(), "{cmd}");
        }
        // CLIENT REPLY ON answers +OK: still one reply per command.
        let (mut t, o) = tracker();
        t.on_requests(b"CLIENT REPLY ON\r\nEVAL x 0\r\n", at(o, 0));
        assert!(!t.stopped());
        assert!(t.outcomes.contains(&Outcome::Script));
        assert!(t.outcomes.contains(&Outcome::StateChange("CLIENT REPLY".into())));
    }

    #[test]
    fn a_huge_incomplete_request_is_not_held() {
        let (mut t, o) = tracker();
        t.on_requests(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$9999999\r\n", at(o, 0));
        t.on_requests(&vec![b'x'; MAX_PENDING_BYTES + 10], at(o, 1));
        assert!(t.stopped());
        assert!(t.request_tail.is_empty());
    }
}
