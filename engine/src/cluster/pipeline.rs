//! Pipeline and sequential modes on a cluster.
//!
//! Commands are pulled into a window until one master's share reaches the
//! batch size (1 in sequential mode: one command per window, one round
//! trip each). Each command is routed once (one hash slot, one owner) and
//! encoded straight into its master's share, never copied before; each
//! share is written as one pipeline on that master's connection, all
//! masters at once, and their replies read; a window is one round trip
//! however many masters it spans. Replies are put back in request order
//! and emitted as the window ends.
//!
//! In pipeline mode the next windows are pulled, encoded and written before
//! the current one's replies are read, so every master always has work
//! queued while pipelab reads, emits and parses input, and a master that
//! the scheduler delays does not leave the others idle: up to
//! [`super::in_flight_windows`] windows in flight per connection. Redirection
//! rounds (below) need the connections idle: before one, the windows written
//! ahead are read first (their replies settled, their own redirections kept
//! for their turn). Not with
//! `on_error: stop` (nothing is written past a window that may hold the
//! error) nor in sequential mode (one round trip per command).
//!
//! With a simulated RTT, each window waits for its replies before the next
//! is written, as a single Redis's pipeline does: every round trip pays the
//! RTT on each master's link, which is what the figures are for.
//!
//! Redirections (see `redirect`): the commands that got MOVED (after the
//! slot map is read again) or ASK (with `ASKING` before each) are sent again
//! in a further round, only they, and their results keep their place;
//! TRYAGAIN / CLUSTERDOWN are retried after a back-off, a bounded number
//! of times, then the error is the result; READONLY (a replica now) is
//! sent to the slot's master after the map is read again.
//!
//! A master whose connection fails or times out: its commands awaiting
//! replies are `unknown` (never sent again), it gets nothing more in this
//! batch, and the slot map is read again (`super::reload`). Its commands
//! never written, in this window and later ones, are `not_sent`, unless
//! `on_error` is `continue` and the map read again names another master for
//! their slot (its replica took over): then they are sent there, in their
//! place. The other masters' results are kept and they go on.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use crate::commands::Table;
use crate::conn::{Conn, ConnSettings, IoStats, RedisTarget};
use crate::exec::{check_command, CommandResult, CommandSource, InputError, InputErrorKind, Mode, NodeSummary, OnError, ResultSink, Status, StreamReport, Summary};

use super::redirect::{self, Redirect};
use super::route::{route, Route};
use super::{Cause, Cluster, Io, Run, Topology};

/// One master's connection and counts during a batch.
struct NodeState {
    address: Arc<str>,
    target: RedisTarget,
    conn: Option<Conn>,
    /// The connection came from the pool (may have died idle).
    reused: bool,
    /// The connection failed: nothing more is sent to this master.
    failed: bool,
    /// Counts of connections already dropped.
    dropped: IoStats,
    summary: NodeSummary,
}

impl NodeState {
    fn io(&self) -> IoStats {
        self.conn.as_ref().map(Conn::stats).unwrap_or_default() + self.dropped
    }

    fn drop_conn(&mut self) {
        if let Some(c) = self.conn.take() {
            self.dropped = self.dropped + c.stats();
        }
    }
}

/// What became of one command of the window.
#[derive(Debug)]
enum Outcome {
    Reply { reply: resp::Value, sent_us: u64, reply_us: u64, node: Option<usize> },
    Unknown { sent_us: Option<u64>, node: Option<usize> },
    NotSent,
}

/// One command of the window.
struct Entry {
    route: Route,
    /// Its encoded bytes: `window.encoded[.0][.1..(.2)]` (a fan-out's first copy).
    bytes: (usize, usize, usize),
    /// Where a MOVED or ASK said to send it next, and whether with `ASKING`.
    redirect: Option<(String, bool)>,
    redirections: u8,
    retries: u8,
    outcome: Option<Outcome>,
    /// A fanned-out command's reply from each master, in node order, and its first write.
    parts: Vec<Option<resp::Value>>,
    first_sent_us: Option<u64>,
}

/// One command written to a master in a round: its entry, `ASKING` before
/// it, its part of a fanned-out command.
#[derive(Clone, Copy)]
struct Item {
    entry: usize,
    asking: bool,
    part: Option<usize>,
}

/// A window: the commands pulled together, their fresh round (one share per
/// master of the map it was pulled under) and their outcomes so far.
struct Window {
    /// Batch index of its first command.
    base: usize,
    entries: Vec<Entry>,
    /// Each master's share of the fresh round, encoded (kept: a redirected
    /// or retried command is re-sent from these bytes).
    encoded: Vec<Vec<u8>>,
    /// The fresh round's items per master (batch node index, items), until written.
    fresh: Vec<(usize, Vec<Item>)>,
    /// Written, replies not read yet.
    in_flight: Option<Vec<Written>>,
    /// The last round asked for the slot map to be read again (why) / a back-off.
    reload: Option<Cause>,
    wait: Option<u8>,
}

impl Window {
    fn pending(&self) -> bool {
        self.entries.iter().any(|e| e.outcome.is_none())
    }
}

/// One master's part of a round, written (or not: `failed`).
struct Written {
    node: usize,
    items: Vec<Item>,
    /// Replies to read: the items and their `ASKING`s.
    expect: usize,
    sent_at: Option<Instant>,
    /// The write failed.
    failed: Option<Failure>,
}

/// A future of the batch's, boxed so that one per master can be polled together.
type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why a master's write or read failed.
#[derive(Debug, Clone)]
struct Failure {
    why: String,
    /// Not one byte of the write was accepted: what it carried never ran.
    nothing_sent: bool,
    /// The master's link failed or timed out (not the batch's deadline,
    /// cancel or reply limit): the map is read again, the master marked down.
    link: bool,
}

impl Failure {
    fn link(why: impl Into<String>, nothing_sent: bool) -> Failure {
        Failure { why: why.into(), nothing_sent, link: true }
    }

    fn of_write(e: &crate::conn::WriteError, nothing_sent: bool) -> Failure {
        use crate::conn::WriteError::{Io, Timeout};
        Failure { why: e.to_string(), nothing_sent, link: matches!(e, Io(_) | Timeout(_)) }
    }

    fn of_read(e: &crate::conn::ReadError) -> Failure {
        use crate::conn::ReadError::{Closed, Io, Protocol, Timeout};
        Failure { why: e.to_string(), nothing_sent: false, link: matches!(e, Closed | Io(_) | Protocol(_) | Timeout(_)) }
    }
}

/// A master's replies read in a round (each with the instant its read
/// returned), and the failure that ended the reading early.
type ReadOut = (Vec<(resp::Value, Instant)>, Option<Failure>);

/// What a master answered in one round.
struct RoundOut {
    sent_at: Option<Instant>,
    replies: Vec<(resp::Value, Instant)>,
    /// The connection failed.
    failed: Option<Failure>,
}

struct Batcher<'a, S: CommandSource, K: ResultSink> {
    cluster: &'a Cluster,
    settings: &'a ConnSettings,
    /// The map the last window or round was routed by: a reload skips if another batch read a newer one since.
    map: Arc<Topology>,
    /// Commands never written to a lost master may go to its slot's new master (`on_error: continue`).
    reroute: bool,
    table: Arc<Table>,
    source: &'a mut S,
    sink: &'a mut K,
    check: bool,
    mode: Mode,
    nodes: Vec<NodeState>,
    t0: Instant,
    last_io: Instant,
    summary: Summary,
    pulled: usize,
    emitted: usize,
    sent: usize,
    source_done: bool,
    state_changed: bool,
    /// The batch was cut (reply limit): the rest is `not_sent`.
    cut: bool,
    input_error: Option<InputError<S::Error>>,
    connection_error: Option<String>,
    /// A window already emitted, whose entries and encoded shares are
    /// reused (cleared) by the next [`Batcher::fill`]: growing them anew
    /// each window cost a third of the cluster path's own instructions.
    spare: Option<Window>,
}

/// Runs `plan` (pipeline or sequential) on `cluster`, pulling from
/// `io.source` and pushing each result to `io.sink` in index order.
pub(crate) async fn run<S: CommandSource, K: ResultSink>(run: Run<'_>, io: Io<'_, S, K>) -> StreamReport<S::Error> {
    let Run { cluster, settings, plan } = run;
    let Io { source, sink, check, table } = io;
    let size = if plan.mode == Mode::Sequential { 1 } else { plan.batch_size.max(1) };
    let t0 = Instant::now();
    let mut b = Batcher {
        cluster,
        settings,
        map: cluster.topology(),
        reroute: plan.on_error == OnError::Continue,
        table,
        source,
        sink,
        check,
        mode: plan.mode,
        nodes: Vec::new(),
        t0,
        last_io: t0,
        summary: Summary { mode: Some(plan.mode), simulated_rtt_ms: plan.simulated_rtt_ms, resp3: plan.resp3, batch_size: size, ..Summary::default() },
        pulled: 0,
        emitted: 0,
        sent: 0,
        source_done: false,
        state_changed: false,
        cut: false,
        input_error: None,
        connection_error: None,
        spare: None,
    };
    // Every master's connection before the clock starts, as the handshake
    // is outside `total_us` for a single Redis; a master added by a
    // redirection connects when first written to.
    b.connect_masters().await;
    b.t0 = Instant::now();
    b.last_io = b.t0;
    let stop = plan.on_error == OnError::Stop;
    // Windows in flight at once (pipeline mode): the current one and those
    // written ahead of it. With a simulated RTT, one: each window's round
    // trip pays it, as on a single Redis.
    let ahead_allowed = plan.mode == Mode::Pipeline && !stop && plan.simulated_rtt_ms == 0.0;
    let depth = if ahead_allowed { super::in_flight_windows(size) } else { 1 };
    let mut ahead: VecDeque<Window> = VecDeque::new();
    loop {
        let mut cur = match ahead.pop_front() {
            Some(w) => w,
            None => match b.fill(size) {
                Some(mut w) => {
                    b.write_fresh(&mut w).await;
                    w
                }
                None => break,
            },
        };
        while ahead.len() + 1 < depth && !b.cut {
            let Some(mut w) = b.fill(size) else { break };
            b.write_fresh(&mut w).await;
            ahead.push_back(w);
        }
        b.read_fresh(&mut cur).await;
        if cur.pending() {
            // Redirection rounds read their own replies: nothing else in flight.
            for w in ahead.iter_mut() {
                b.read_fresh(w).await;
            }
            b.finish_window(&mut cur).await;
        }
        let had_error = b.emit_window(&mut cur);
        b.spare = Some(cur);
        if b.cut || (had_error && stop) {
            // The windows written ahead ran, or may have: their results as they
            // are (after a cut, unknown), never `not_sent`.
            for mut w in ahead.drain(..) {
                b.read_fresh(&mut w).await;
                b.emit_window(&mut w);
            }
            b.rest_not_sent();
            break;
        }
    }
    b.finish()
}

impl<S: CommandSource, K: ResultSink> Batcher<'_, S, K> {
    fn us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.t0).as_micros() as u64
    }

    /// The index in `nodes` of the master at `address`, added if new.
    fn node(&mut self, address: &str, target: impl FnOnce() -> Option<RedisTarget>) -> Option<usize> {
        if let Some(i) = self.nodes.iter().position(|n| &*n.address == address) {
            return Some(i);
        }
        let target = target()?;
        self.nodes.push(NodeState {
            address: address.into(),
            target,
            conn: None,
            reused: false,
            failed: false,
            dropped: IoStats::default(),
            summary: NodeSummary { address: address.to_string(), ..NodeSummary::default() },
        });
        Some(self.nodes.len() - 1)
    }

    /// The batch's node index of each master of the current map.
    fn masters(&mut self, topology: &super::Topology) -> Vec<usize> {
        topology.nodes.iter().map(|n| self.node(&n.address, || Some(n.target.clone())).expect("a master")).collect()
    }

    /// Pulls commands into a new window until a master's share reaches
    /// `size` (a fanned-out command counts on each), or the input ends;
    /// `None` if nothing was left. Each command is routed once and encoded
    /// into its master's share (a fan-out into every master's).
    fn fill(&mut self, size: usize) -> Option<Window> {
        let topology = self.cluster.topology();
        let masters = self.masters(&topology);
        self.map = topology.clone();
        let (mut entries, mut encoded) = self.spare.take().map(|w| (w.entries, w.encoded)).unwrap_or_default();
        entries.clear();
        encoded.iter_mut().for_each(Vec::clear);
        encoded.resize_with(masters.len(), Vec::new);
        // A master's share never passes `size` items.
        let mut items: Vec<Vec<Item>> = masters.iter().map(|_| Vec::with_capacity(size.min(1 << 14))).collect();
        let base = self.pulled;
        while !self.source_done {
            let argv = match self.source.next_command() {
                Ok(Some(argv)) => argv,
                Ok(None) => {
                    self.source_done = true;
                    break;
                }
                Err(e) => {
                    self.source_done = true;
                    self.input_error = Some(InputError { index: self.pulled, sent: 0, kind: InputErrorKind::Source(e) });
                    break;
                }
            };
            if self.check {
                if let Err(m) = check_command(&self.table, argv, self.mode) {
                    self.source_done = true;
                    self.input_error = Some(InputError { index: self.pulled, sent: 0, kind: InputErrorKind::Invalid(m) });
                    break;
                }
            }
            if !self.state_changed && self.table.changes_connection_state(argv) {
                self.state_changed = true;
            }
            let r = route(&self.table, argv);
            self.pulled += 1;
            let entry = entries.len();
            let mut put = |m: usize, part: Option<usize>| {
                let from = encoded[m].len();
                resp::encode_command(argv, &mut encoded[m]);
                items[m].push(Item { entry, asking: false, part });
                (m, from, encoded[m].len())
            };
            let (bytes, full) = match r {
                Route::Slot(s) => {
                    let at = put(topology.owner(s).unwrap_or(0), None);
                    (at, items[at.0].len() >= size)
                }
                Route::Any => {
                    let at = put(0, None);
                    (at, items[0].len() >= size)
                }
                Route::All(_) => {
                    let first = put(0, Some(0));
                    for m in 1..masters.len() {
                        put(m, Some(m));
                    }
                    (first, items.iter().any(|i| i.len() >= size))
                }
            };
            entries.push(Entry { route: r, bytes, redirect: None, redirections: 0, retries: 0, outcome: None, parts: Vec::new(), first_sent_us: None });
            if let Route::All(_) = r {
                entries[entry].parts = vec![None; masters.len()];
            }
            if full {
                break;
            }
        }
        if entries.is_empty() {
            return None;
        }
        let fresh = masters.into_iter().zip(items).filter(|(_, items)| !items.is_empty()).collect();
        Some(Window { base, entries, encoded, fresh, in_flight: None, reload: None, wait: None })
    }

    /// Writes `w`'s fresh round (every master's share at once); its replies are read by [`Self::read_fresh`].
    async fn write_fresh(&mut self, w: &mut Window) {
        let plan = std::mem::take(&mut w.fresh);
        // The shares of masters with items, in plan order (a share's index is its master's in the map).
        let bufs: Vec<&[u8]> = w.encoded.iter().filter(|b| !b.is_empty()).map(Vec::as_slice).collect();
        w.in_flight = Some(self.write_phase(plan, bufs).await);
    }

    /// Reads the replies of `w`'s round in flight, if any, and settles them.
    async fn read_fresh(&mut self, w: &mut Window) {
        if let Some(written) = w.in_flight.take() {
            let round = self.read_phase(written).await;
            (w.reload, w.wait) = self.settle(w, round);
        }
    }

    /// Rounds until every command of `w` has an outcome (after its fresh
    /// round: redirections and retries), each written and read whole.
    async fn finish_window(&mut self, w: &mut Window) {
        loop {
            if let Some(cause) = w.reload.take() {
                // A MOVED address is used either way: a failed reload only delays the map.
                self.map = self.cluster.reload(&self.map, cause, self.settings).await;
            }
            if let Some(n) = w.wait.take() {
                tokio::time::sleep(redirect::back_off(n)).await;
            }
            let pending: Vec<usize> = (0..w.entries.len()).filter(|&i| w.entries[i].outcome.is_none()).collect();
            if pending.is_empty() {
                return;
            }
            let plan = self.plan_round(w, &pending);
            let bufs: Vec<Vec<u8>> = plan
                .iter()
                .map(|(_, items)| {
                    let mut buf = Vec::new();
                    for it in items {
                        if it.asking {
                            resp::encode_command([b"ASKING".as_slice()], &mut buf);
                        }
                        let (m, from, to) = w.entries[it.entry].bytes;
                        buf.extend_from_slice(&w.encoded[m][from..to]);
                    }
                    buf
                })
                .collect();
            let written = self.write_phase(plan, bufs.iter().map(Vec::as_slice).collect()).await;
            let round = self.read_phase(written).await;
            (w.reload, w.wait) = self.settle(w, round);
        }
    }

    /// Which master each pending command of `w` goes to this round.
    fn plan_round(&mut self, w: &mut Window, pending: &[usize]) -> Vec<(usize, Vec<Item>)> {
        let topology = self.cluster.topology();
        let masters = self.masters(&topology);
        self.map = topology.clone();
        let mut per_node: Vec<(usize, Vec<Item>)> = Vec::new();
        let mut add = |node: usize, item: Item| match per_node.iter_mut().find(|(n, _)| *n == node) {
            Some((_, items)) => items.push(item),
            None => per_node.push((node, vec![item])),
        };
        for &e in pending {
            let entry = &mut w.entries[e];
            let node = match (entry.route, entry.redirect.take()) {
                (Route::All(_), _) => {
                    if entry.parts.is_empty() {
                        entry.parts = vec![None; masters.len()];
                    }
                    for (p, &node) in masters.iter().enumerate() {
                        if entry.parts[p].is_none() {
                            add(node, Item { entry: e, asking: false, part: Some(p) });
                        }
                    }
                    continue;
                }
                (_, Some((address, asking))) => {
                    let seed = &topology.nodes[0].target;
                    match self.node(&address, || super::topology::endpoint_of(&address).map(|ep| seed.at(ep))) {
                        Some(node) => (node, asking),
                        // Redirected to an address that is not host:port: it never ran.
                        None => {
                            w.entries[e].outcome = Some(Outcome::NotSent);
                            continue;
                        }
                    }
                }
                (Route::Slot(s), None) => (masters[topology.owner(s).unwrap_or(0)], false),
                (Route::Any, None) => (masters[0], false),
            };
            if self.nodes[node.0].failed {
                // Lost in this batch, and the map names no other master for it yet: never written.
                w.entries[e].outcome = Some(Outcome::NotSent);
                continue;
            }
            add(node.0, Item { entry: e, asking: node.1, part: None });
        }
        per_node
    }

    /// Connects to every master of the current map (concurrently).
    async fn connect_masters(&mut self) {
        let topology = self.cluster.topology();
        let masters = self.masters(&topology);
        let (cluster, settings) = (self.cluster, self.settings);
        let futures: Vec<Boxed<'_, (usize, Option<String>)>> = self
            .nodes
            .iter_mut()
            .enumerate()
            .filter(|(i, _)| masters.contains(i))
            .map(|(i, n)| Box::pin(async move { (i, connect(cluster, settings, n).await) }) as Boxed<'_, _>)
            .collect();
        for (i, e) in join_all(futures).await {
            if let Some(why) = e {
                self.fail(i, &Failure::link(why, true));
            }
        }
    }

    /// Writes each master's share of a round (`bufs[k]`: the bytes of
    /// `plan[k]`), all masters concurrently; the replies are left to
    /// [`Self::read_phase`]. A master that cannot be reached gets nothing; one
    /// whose write fails is failed at once (nothing more is written to it).
    async fn write_phase(&mut self, plan: Vec<(usize, Vec<Item>)>, bufs: Vec<&[u8]>) -> Vec<Written> {
        let mut out = Vec::with_capacity(plan.len());
        for (node, items) in plan {
            if let Some(why) = connect(self.cluster, self.settings, &mut self.nodes[node]).await {
                self.fail(node, &Failure::link(why, true));
            }
            let expect = items.iter().map(|it| 1 + it.asking as usize).sum();
            let failed = if self.nodes[node].failed {
                // Lost earlier in the batch: the map may name its successor by now.
                Some(Failure::link("master unavailable", true))
            } else {
                let s = &mut self.nodes[node].summary;
                s.commands += items.len();
                s.round_trips += 1;
                None
            };
            out.push(Written { node, items, expect, sent_at: None, failed });
        }
        let settings = self.settings;
        let mut futures: Vec<Boxed<'_, (usize, Result<Instant, Failure>)>> = Vec::new();
        for (n, state) in self.nodes.iter_mut().enumerate() {
            if let Some(k) = out.iter().position(|w| w.node == n && w.failed.is_none()) {
                let buf = bufs[k];
                futures.push(Box::pin(async move { (k, node_write(state, buf, settings).await) }));
            }
        }
        if !futures.is_empty() {
            self.summary.round_trips += 1;
        }
        let issued = Instant::now();
        for (k, r) in join_all(futures).await {
            match r {
                Ok(t) => out[k].sent_at = Some(t),
                Err(f) => {
                    // Some bytes may have gone out: its commands are unknown, sent from here.
                    if !f.nothing_sent {
                        out[k].sent_at = Some(issued);
                    }
                    out[k].failed = Some(f);
                }
            }
        }
        for o in &out {
            if let Some(f) = &o.failed {
                self.fail(o.node, f);
            }
        }
        out
    }

    /// Master `node` failed (`f`): its connection dropped, nothing more
    /// written to it in this batch; a lost link marks it down in the
    /// cluster (`/readyz`, the order the map is asked in) and in `summary.nodes`.
    fn fail(&mut self, node: usize, f: &Failure) {
        let n = &mut self.nodes[node];
        if n.failed {
            return;
        }
        n.failed = true;
        n.drop_conn();
        self.connection_error.get_or_insert(format!("{}: {}", n.address, f.why));
        if f.link {
            n.summary.failed = Some(f.why.clone());
            self.cluster.mark_down(&n.address, &f.why);
        }
    }

    /// Reads the replies of a round [`Self::write_phase`] wrote, all masters concurrently.
    async fn read_phase(&mut self, written: Vec<Written>) -> Vec<(usize, Vec<Item>, RoundOut)> {
        let mut outs: Vec<RoundOut> = written.iter().map(|w| RoundOut { sent_at: w.sent_at, replies: Vec::new(), failed: w.failed.clone() }).collect();
        let mut futures: Vec<Boxed<'_, (usize, ReadOut)>> = Vec::new();
        for (n, state) in self.nodes.iter_mut().enumerate() {
            if let Some(k) = written.iter().position(|w| w.node == n && w.failed.is_none()) {
                let expect = written[k].expect;
                futures.push(Box::pin(async move { (k, node_read(state, expect).await) }));
            }
        }
        for (k, (replies, failed)) in join_all(futures).await {
            outs[k].replies = replies;
            outs[k].failed = failed;
        }
        written.into_iter().zip(outs).map(|(w, out)| (w.node, w.items, out)).collect()
    }

    /// Turns each master's replies into outcomes or redirections. Returns
    /// why the slot map must be read again, if it must (a MOVED, a lost
    /// master…), and the longest back-off asked for (a TRYAGAIN /
    /// CLUSTERDOWN / READONLY retry number).
    fn settle(&mut self, w: &mut Window, written: Vec<(usize, Vec<Item>, RoundOut)>) -> (Option<Cause>, Option<u8>) {
        let mut reload = None;
        let mut wait = None;
        for (node, items, out) in written {
            let sent_us = out.sent_at.map(|t| self.us(t));
            if let Some(t) = out.sent_at {
                self.last_io = self.last_io.max(t);
                self.sent = self.sent.max(items.iter().map(|it| w.base + it.entry + 1).max().unwrap_or(0));
            }
            let mut replies = out.replies.into_iter();
            for it in &items {
                if it.asking {
                    let _ = replies.next(); // ASKING's +OK
                }
                let Some((reply, at)) = replies.next() else {
                    // No reply: unknown if written, else not sent.
                    // (A command written before got a redirection, so it did not run then.)
                    let nothing = out.failed.as_ref().is_some_and(|f| f.nothing_sent);
                    let lost = out.failed.as_ref().is_some_and(|f| f.link);
                    let entry = &mut w.entries[it.entry];
                    if nothing && it.part.is_none() && lost && self.reroute && entry.redirections < redirect::MAX_REDIRECTIONS {
                        // Never written, its master lost: to the slot's master once the map is read again.
                        entry.redirections += 1;
                    } else if nothing && it.part.is_none() {
                        entry.outcome = Some(Outcome::NotSent);
                    } else if nothing {
                        entry.outcome = Some(Outcome::Unknown { sent_us: entry.first_sent_us, node: None });
                    } else {
                        entry.outcome = Some(Outcome::Unknown { sent_us: entry.first_sent_us.or(sent_us), node: Some(node) });
                    }
                    continue;
                };
                self.last_io = self.last_io.max(at);
                let reply_us = self.us(at);
                let entry = &mut w.entries[it.entry];
                let sent = *entry.first_sent_us.get_or_insert(sent_us.unwrap_or(0));
                if let Some(p) = it.part {
                    entry.parts[p] = Some(reply);
                    if entry.parts.iter().all(Option::is_some) {
                        let Route::All(combine) = entry.route else { unreachable!("parts only for fan-outs") };
                        let merged = combine.merge(entry.parts.drain(..).map(|p| p.expect("all present")).collect());
                        entry.outcome = Some(Outcome::Reply { reply: merged, sent_us: sent, reply_us, node: None });
                    }
                    continue;
                }
                match redirect::of(&reply) {
                    Some(Redirect::Moved(addr)) if entry.redirections < redirect::MAX_REDIRECTIONS => {
                        entry.redirections += 1;
                        entry.redirect = Some((addr, false));
                        self.nodes[node].summary.redirections += 1;
                        reload = reload.max(Some(Cause::Moved));
                    }
                    Some(Redirect::Ask(addr)) if entry.redirections < redirect::MAX_REDIRECTIONS => {
                        entry.redirections += 1;
                        entry.redirect = Some((addr, true));
                        self.nodes[node].summary.redirections += 1;
                    }
                    Some(r @ (Redirect::TryAgain | Redirect::ClusterDown | Redirect::Replica)) if entry.retries < redirect::MAX_RETRIES => {
                        entry.retries += 1;
                        wait = wait.max(Some(entry.retries));
                        let cause = match r {
                            Redirect::TryAgain => Cause::TryAgain,
                            Redirect::ClusterDown => Cause::ClusterDown,
                            _ => Cause::Replica,
                        };
                        reload = reload.max(Some(cause));
                    }
                    _ => entry.outcome = Some(Outcome::Reply { reply, sent_us: sent, reply_us, node: Some(node) }),
                }
            }
            if let Some(f) = out.failed {
                if f.link {
                    reload = Some(Cause::Connection);
                }
                self.fail(node, &f);
            }
        }
        // A fan-out with a failed master: unknown (some masters may have run it).
        for entry in &mut w.entries {
            if entry.outcome.is_none() && !entry.parts.is_empty() {
                let topology_failed = entry.parts.iter().any(Option::is_none) && self.nodes.iter().any(|n| n.failed);
                if topology_failed {
                    entry.outcome = Some(Outcome::Unknown { sent_us: entry.first_sent_us, node: None });
                }
            }
        }
        (reload, wait)
    }

    /// Emits the window's results in order; true if any is an error reply.
    fn emit_window(&mut self, w: &mut Window) -> bool {
        let mut had_error = false;
        for entry in &mut w.entries {
            let outcome = entry.outcome.take().unwrap_or(Outcome::NotSent);
            let (status, reply, sent_us, reply_us, node) = match outcome {
                Outcome::Reply { reply, sent_us, reply_us, node } if !self.cut => match self.sink.admit(&reply) {
                    Ok(()) => {
                        let status = if reply.is_error() { Status::Error } else { Status::Ok };
                        had_error |= status == Status::Error;
                        (status, Some(reply), Some(sent_us), Some(reply_us), node)
                    }
                    Err(limit) => {
                        self.cut = true;
                        self.connection_error = Some(format!("reply limit reached: the report would pass {limit} bytes of JSON"));
                        (Status::Unknown, None, Some(sent_us), None, node)
                    }
                },
                Outcome::Reply { sent_us, node, .. } | Outcome::Unknown { sent_us: Some(sent_us), node } => (Status::Unknown, None, Some(sent_us), None, node),
                Outcome::Unknown { sent_us: None, node } => (Status::Unknown, None, None, None, node),
                Outcome::NotSent => (Status::NotSent, None, None, None, None),
            };
            let node = node.map(|n| self.nodes[n].address.clone());
            self.push(status, reply, sent_us, reply_us, node);
        }
        if self.cut {
            for n in &mut self.nodes {
                n.drop_conn();
            }
        }
        had_error
    }

    fn push(&mut self, status: Status, reply: Option<resp::Value>, sent_us: Option<u64>, reply_us: Option<u64>, node: Option<Arc<str>>) {
        self.summary.count(status);
        let index = self.emitted;
        self.emitted += 1;
        self.sink.push(CommandResult { index, status, reply, sent_us, reply_us, latency_us: None, node });
    }

    /// Every command still in the source is `not_sent` (read to its end or first bad command).
    fn rest_not_sent(&mut self) {
        while let Some(w) = self.fill(1024) {
            for _ in 0..w.entries.len() {
                self.push(Status::NotSent, None, None, None, None);
            }
        }
    }

    fn finish(mut self) -> StreamReport<S::Error> {
        let mut io = IoStats::default();
        for n in &mut self.nodes {
            let s = n.io();
            io = io + s;
            n.summary.bytes_sent = s.bytes_sent;
            n.summary.bytes_received = s.bytes_received;
            self.summary.redirections += n.summary.redirections;
            // Clean connections go back to their master's pool (the rules of `exec::pool`).
            if let Some(conn) = n.conn.take() {
                if !n.failed && !self.state_changed && conn.buffer_empty() && !conn.is_delayed() {
                    self.cluster.checkin(&n.address, &n.target, conn);
                }
            }
        }
        let s = &mut self.summary;
        s.set_io(io);
        s.commands = self.emitted;
        s.set_total_us(self.last_io.saturating_duration_since(self.t0).as_micros() as u64);
        s.nodes = self.nodes.iter().filter(|n| n.summary.commands > 0 || n.summary.failed.is_some()).map(|n| n.summary.clone()).collect();
        if let Some(e) = &mut self.input_error {
            e.sent = self.sent;
        }
        StreamReport { summary: self.summary, transaction: None, connection_error: self.connection_error, input_error: self.input_error, reconnect_failed: None }
    }
}

/// A connection to `node` from its pool, unless it has one or failed;
/// `Some(why)` if it cannot be reached (the caller fails it).
async fn connect(cluster: &Cluster, settings: &ConnSettings, node: &mut NodeState) -> Option<String> {
    if node.failed || node.conn.is_some() {
        return None;
    }
    match cluster.checkout(&node.address, &node.target, settings).await {
        Ok(lease) => {
            if !lease.reused {
                cluster.mark_up(&node.address);
            }
            node.reused = lease.reused;
            node.conn = Some(lease.conn);
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

/// Writes `bytes` to the master's connection: the instant the write was
/// issued, or why it failed and whether not one byte was accepted. A
/// connection from the pool whose write fails with not one byte accepted
/// (it died idle) is replaced by a fresh one and the write made there.
async fn node_write(node: &mut NodeState, bytes: &[u8], settings: &ConnSettings) -> Result<Instant, Failure> {
    let Some(conn) = node.conn.as_mut() else { return Err(Failure { why: "not connected".into(), nothing_sent: true, link: false }) };
    let written = match conn.write(bytes).await {
        Ok(t) => Ok(t),
        Err(_) if node.reused && conn.nothing_sent() => {
            node.reused = false;
            match Conn::connect(&node.target, settings).await {
                Ok(fresh) => {
                    let conn = node.conn.insert(fresh);
                    conn.write(bytes).await.map_err(|e| Failure::of_write(&e, conn.nothing_sent()))
                }
                Err(e) => Err(Failure::link(e.to_string(), true)),
            }
        }
        Err(e) => Err(Failure::of_write(&e, conn.nothing_sent())),
    };
    node.reused = false;
    written
}

/// Reads `expect` replies from the master's connection (each with the
/// instant its read returned); the error that ended the reading early, if any.
async fn node_read(node: &mut NodeState, expect: usize) -> ReadOut {
    let mut replies = Vec::with_capacity(expect);
    // Dropped meanwhile (a later write to it failed, or the batch was cut): what was written may have run.
    let Some(conn) = node.conn.as_mut() else {
        return (replies, Some(Failure { why: "connection closed".into(), nothing_sent: false, link: false }));
    };
    for _ in 0..expect {
        match conn.read_reply().await {
            Ok(r) => replies.push(r),
            Err(e) => return (replies, Some(Failure::of_read(&e))),
        }
    }
    (replies, None)
}

/// Polls every future until all are done; their outputs in order.
async fn join_all<F: Future + ?Sized>(mut futures: Vec<Pin<Box<F>>>) -> Vec<F::Output> {
    let mut outs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in futures.iter_mut().zip(outs.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *o = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outs.into_iter().map(|o| o.expect("every future finished")).collect()
}
