//! The doctor's totals across connections: what the trackers report is
//! added up here, the live line reads it, and the summary is built from it.
//! Bounded: the connections open are at most `--max-connections`, and the
//! lists kept are capped (10 top missed pipelines, 100 undecoded
//! connections, 20 recent connections with their flight rings).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::keys::KeyTable;
use super::missed::Rule;
use super::report::{ConnectionFlights, ConnectionReport, DepthBucket, Event, MissedPipeline, MissedTotals, NearMisses, Summary, Undecoded};
use super::tracker::{ConnCounters, Outcome, Tracker, DEPTH_BOUNDS};

const TOP_MISSED: usize = 10;
const UNDECODED_LISTED: usize = 100;
const RECENT_CONNECTIONS: usize = 20;

/// Where `missed_pipeline` and `undecoded` events go as they happen (the
/// `--json` printer; nothing for the terminal view).
pub type Sink = Box<dyn Fn(&Event) + Send + Sync>;

#[derive(Default)]
struct Totals {
    connections: u64,
    refused: u64,
    open: usize,
    /// The closed connections' counters, summed.
    closed: ConnCounters,
    transactions: u64,
    scripts: u64,
    missed: MissedTotals,
    undecoded: Vec<Undecoded>,
    recent: VecDeque<ConnectionReport>,
}

/// A snapshot for the live line.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Live {
    pub open: usize,
    pub connections: u64,
    pub commands: u64,
    pub flights: u64,
    pub missed: u64,
    pub saving_ms: f64,
}

/// The state every connection of one doctor shares.
pub struct Doctor {
    pub origin: Instant,
    pub rule: Rule,
    keys: Arc<KeyTable>,
    max_connections: usize,
    next_id: AtomicU64,
    totals: Mutex<Totals>,
    live: Mutex<HashMap<u64, Arc<Mutex<Tracker>>>>,
    sink: Sink,
    /// Signalled when the last open connection closes.
    pub idle: tokio::sync::Notify,
}

fn add_counters(into: &mut ConnCounters, c: &ConnCounters) {
    into.commands += c.commands;
    into.flights += c.flights;
    into.max_depth = into.max_depth.max(c.max_depth);
    for (a, b) in into.depth.iter_mut().zip(c.depth) {
        a.0 += b.0;
        a.1 += b.1;
    }
    into.bytes_up += c.bytes_up;
    into.bytes_down += c.bytes_down;
    into.wait_us += c.wait_us;
    into.client_us += c.client_us;
    into.near_misses += c.near_misses;
    into.near_think_us_max = into.near_think_us_max.max(c.near_think_us_max);
    for (k, v) in &c.state_changes {
        *into.state_changes.entry(k.clone()).or_default() += v;
    }
}

/// Flights ended and the commands in them.
fn flight_totals(c: &ConnCounters) -> (u64, u64) {
    c.depth.iter().fold((0, 0), |(f, n), &(df, dn)| (f + df, n + dn))
}

impl Doctor {
    pub fn new(rule: Rule, keys: Arc<KeyTable>, max_connections: usize, sink: Sink) -> Doctor {
        Doctor {
            origin: Instant::now(),
            rule,
            keys,
            max_connections,
            next_id: AtomicU64::new(1),
            totals: Mutex::new(Totals::default()),
            live: Mutex::new(HashMap::new()),
            sink,
            idle: tokio::sync::Notify::new(),
        }
    }

    /// The key table patterns come from.
    pub fn keys(&self) -> &KeyTable {
        &self.keys
    }

    /// A tracker for a new connection, or `None` (counted as refused) when
    /// `--max-connections` are open.
    pub fn admit(&self, peer: String) -> Option<Arc<Mutex<Tracker>>> {
        {
            let mut t = self.totals.lock().unwrap();
            if t.open >= self.max_connections {
                t.refused += 1;
                return None;
            }
            t.open += 1;
            t.connections += 1;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let tracker = Arc::new(Mutex::new(Tracker::new(id, peer, self.origin, self.keys.clone(), self.rule)));
        self.live.lock().unwrap().insert(id, tracker.clone());
        Some(tracker)
    }

    /// Adds a tracker's outcomes to the totals, draining `outcomes` (its
    /// capacity is kept: the relay reuses one buffer per direction).
    pub fn record(&self, outcomes: &mut Vec<Outcome>) {
        if outcomes.is_empty() {
            return;
        }
        // Printed after the lock is released: a slow reader of stdout must
        // not hold up every connection's bookkeeping.
        let mut events = Vec::new();
        let mut t = self.totals.lock().unwrap();
        for o in outcomes.drain(..) {
            match o {
                Outcome::Missed(m) => {
                    events.push(Event::MissedPipeline(m.clone()));
                    t.missed.add(m, TOP_MISSED);
                }
                Outcome::Undecoded(u) => {
                    events.push(Event::Undecoded(u.clone()));
                    if t.undecoded.len() < UNDECODED_LISTED {
                        t.undecoded.push(u);
                    }
                }
                Outcome::Transaction => t.transactions += 1,
                Outcome::Script => t.scripts += 1,
                Outcome::StateChange(_) => {} // counted per connection
            }
        }
        drop(t);
        for e in &events {
            (self.sink)(e);
        }
    }

    /// Drains a tracker's outcomes into the totals.
    pub fn drain(&self, tracker: &Mutex<Tracker>) {
        let mut outcomes = std::mem::take(&mut tracker.lock().unwrap().outcomes);
        self.record(&mut outcomes);
    }

    /// The connection ended: its last run, its counters and its report.
    pub fn close(&self, tracker: &Mutex<Tracker>) {
        let (id, report, counters) = {
            let mut tr = tracker.lock().unwrap();
            tr.finish();
            (tr.id(), tr.report(), tr.counters.clone())
        };
        self.drain(tracker);
        self.live.lock().unwrap().remove(&id);
        let now_idle = {
            let mut t = self.totals.lock().unwrap();
            add_counters(&mut t.closed, &counters);
            if t.recent.len() == RECENT_CONNECTIONS {
                t.recent.pop_front();
            }
            t.recent.push_back(report);
            t.open -= 1;
            t.open == 0
        };
        if now_idle {
            self.idle.notify_one();
        }
    }

    /// Counts for the live line (the open connections' counters summed with the closed ones').
    pub fn live(&self) -> Live {
        let open: Vec<Arc<Mutex<Tracker>>> = self.live.lock().unwrap().values().cloned().collect();
        let mut c = ConnCounters::default();
        for tr in &open {
            add_counters(&mut c, &tr.lock().unwrap().counters);
        }
        let t = self.totals.lock().unwrap();
        add_counters(&mut c, &t.closed);
        let (flights, commands) = flight_totals(&c);
        Live { open: t.open, connections: t.connections, commands, flights, missed: t.missed.missed_pipelines, saving_ms: t.missed.saving_ms }
    }

    /// The summary; ends the runs of the connections still open (call it once, at the end).
    pub fn summary(&self) -> Summary {
        self.snapshot(true).0
    }

    /// The summary as it stands, for `--ui`: the runs going on are not ended
    /// (they are returned beside it, longest saving first, at most 10).
    pub fn live_summary(&self) -> (Summary, Vec<MissedPipeline>) {
        self.snapshot(false)
    }

    /// The flights of connection `id` (open, or among the 20 most recent
    /// closed) that started after `since_us`, and whether it is still open;
    /// `None` for a connection not (or no longer) known.
    pub fn flights(&self, id: u64, since_us: u64) -> Option<ConnectionFlights> {
        let open = self.live.lock().unwrap().get(&id).cloned();
        if let Some(tr) = open {
            let g = tr.lock().unwrap();
            let report = ConnectionReport { recent_flights: g.flights_since(since_us), ..g.report_without_flights() };
            return Some(ConnectionFlights { report, open: true });
        }
        let t = self.totals.lock().unwrap();
        let r = t.recent.iter().find(|r| r.connection == id)?;
        let recent_flights = r.recent_flights.iter().filter(|f| f.start_us > since_us).cloned().collect();
        Some(ConnectionFlights { report: ConnectionReport { recent_flights, ..r.clone() }, open: false })
    }

    fn snapshot(&self, finish: bool) -> (Summary, Vec<MissedPipeline>) {
        let mut open: Vec<(u64, Arc<Mutex<Tracker>>)> = self.live.lock().unwrap().iter().map(|(&id, t)| (id, t.clone())).collect();
        open.sort_by_key(|(id, _)| *id);
        let mut counters = ConnCounters::default();
        let mut going_on = Vec::new();
        let mut reports = Vec::new();
        // Only the last RECENT_CONNECTIONS are listed: the others are not copied.
        let listed_from = open.len().saturating_sub(RECENT_CONNECTIONS);
        for (i, (_, tr)) in open.iter().enumerate() {
            {
                let mut g = tr.lock().unwrap();
                if finish {
                    g.finish();
                } else {
                    going_on.extend(g.current_missed());
                }
                add_counters(&mut counters, &g.counters);
                if i >= listed_from {
                    reports.push(g.report());
                }
            }
            if finish {
                self.drain(tr);
            }
        }
        going_on.sort_by(|a, b| b.saving_ms.total_cmp(&a.saving_ms));
        going_on.truncate(TOP_MISSED);
        let t = self.totals.lock().unwrap();
        add_counters(&mut counters, &t.closed);
        let duration_ms = self.origin.elapsed().as_secs_f64() * 1000.0;
        let (flights, commands) = flight_totals(&counters);
        let wait_ms = counters.wait_us as f64 / 1000.0;
        let client_ms = counters.client_us as f64 / 1000.0;
        let mut recent: Vec<ConnectionReport> = t.recent.iter().cloned().collect();
        recent.extend(reports);
        let skip = recent.len().saturating_sub(RECENT_CONNECTIONS);
        let summary = Summary {
            duration_ms,
            rtt_ms: self.rule.rtt_ms,
            think_time_us: self.rule.think_time_us,
            connections: t.connections,
            connections_refused: t.refused,
            commands,
            flights,
            round_trips_per_s: if duration_ms > 0.0 { flights as f64 / (duration_ms / 1000.0) } else { 0.0 },
            depth: DEPTH_BOUNDS
                .iter()
                .zip(counters.depth)
                .map(|(&(min, max), (flights, commands))| DepthBucket { min, max: (max != u64::MAX).then_some(max), flights, commands })
                .collect(),
            bytes_up: counters.bytes_up,
            bytes_down: counters.bytes_down,
            wait_ms,
            client_ms,
            wait_share: if wait_ms + client_ms > 0.0 { wait_ms / (wait_ms + client_ms) } else { 0.0 },
            transactions: t.transactions,
            scripts: t.scripts,
            state_changes: counters.state_changes.into_iter().collect::<BTreeMap<_, _>>(),
            missed: t.missed.clone(),
            near_misses: NearMisses::of(counters.near_misses, counters.near_think_us_max, flights, self.rule.think_time_us),
            undecoded: t.undecoded.clone(),
            recent_connections: recent.into_iter().skip(skip).collect(),
        };
        (summary, going_on)
    }
}
