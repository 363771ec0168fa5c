//! What the doctor reports, as JSON (`--json`: one [`Event`] per line) and
//! to the live summary. Times in data are µs (`*_us`) or ms (`*_ms`, as
//! fractions) as their names say; byte counts are bytes on the wire.

use std::collections::BTreeMap;

use serde::Serialize;

/// One round trip of one connection: the commands the client wrote before
/// a reply reached it, and how long it waited for their replies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flight {
    /// Commands in the flight (its pipeline depth).
    pub commands: u32,
    /// When its first command reached the doctor, µs since the doctor started.
    pub start_us: u64,
    /// From its first command to its last reply, µs (the client's wait).
    pub wait_us: u64,
    /// The client's own time before it: from the reply it last received to
    /// this flight's first command, µs (`None` for a connection's first).
    pub think_us: Option<u64>,
    /// Request bytes of its commands.
    pub bytes_up: u64,
    /// Reply bytes of its replies.
    pub bytes_down: u64,
    /// Its first command's pattern (`SET user:*`).
    pub pattern: String,
}

/// How many commands of a run had one pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternCount {
    pub pattern: String,
    pub commands: u64,
}

/// A run of single-command flights on one connection that a pipeline could
/// have sent as one round trip (see [`super::missed`] for the rule).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissedPipeline {
    /// The connection's number (in accept order, from 1).
    pub connection: u64,
    /// The client's address.
    pub peer: String,
    /// Commands (= round trips) in the run.
    pub commands: u64,
    /// The most frequent pattern (`SET user:*`).
    pub pattern: String,
    /// For people: `SET user:* ×1000 sequential`.
    pub description: String,
    /// Every pattern of the run with its count, most frequent first (at most
    /// 8; more are counted under `…`).
    pub patterns: Vec<PatternCount>,
    /// The run's first command, µs since the doctor started.
    pub start_us: u64,
    /// From its first command to its last reply, ms.
    pub duration_ms: f64,
    /// Longest think time between a reply and the next command in the run, µs.
    pub think_us_max: u64,
    /// Why the run was judged independent, for people: what was compared
    /// and found not carried, and the think-time bound it stayed under.
    pub why: String,
    /// Comparisons of a command with an earlier reply of the run, in all;
    /// none found the command carrying bytes of the reply.
    pub replies_compared: u64,
    /// The RTT the saving is computed at (`--rtt`), ms.
    pub rtt_ms: f64,
    /// `(commands − 1) × rtt_ms`: the round trips a pipeline would save, ms.
    pub saving_ms: f64,
}

impl MissedPipeline {
    /// Its saving at `rtt_ms` instead of the doctor's `--rtt`.
    pub fn at_rtt(&mut self, rtt_ms: f64) {
        self.rtt_ms = rtt_ms;
        self.saving_ms = self.commands.saturating_sub(1) as f64 * rtt_ms;
    }
}

/// Flights whose depth is in `min..=max`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DepthBucket {
    pub min: u64,
    /// `None` for the last, open-ended bucket.
    pub max: Option<u64>,
    pub flights: u64,
    pub commands: u64,
}

/// A connection whose traffic the doctor stopped decoding (it is still forwarded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Undecoded {
    pub connection: u64,
    pub peer: String,
    /// Why (`requests: byte 0: …`, `SUBSCRIBE: replies are not one per command`).
    pub reason: String,
}

/// One connection, at its end (or at the summary for an open one).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionReport {
    pub connection: u64,
    pub peer: String,
    pub commands: u64,
    pub flights: u64,
    pub max_depth: u64,
    /// Its last flights (at most [`super::tracker::FLIGHT_RING`]), oldest first.
    pub recent_flights: Vec<Flight>,
}

/// One connection's flights, for `--ui` (`GET /api/doctor/flights`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnectionFlights {
    /// Its counters; `recent_flights` holds only its kept flights that
    /// started after the `since` asked for, oldest first.
    #[serde(flatten)]
    pub report: ConnectionReport,
    /// False once the connection closed (it stays listed among the 20 most recent).
    pub open: bool,
}

/// The whole run, at the end (SIGINT/SIGTERM, or the last client leaving
/// with `--exit-when-idle`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Since the doctor started, ms.
    pub duration_ms: f64,
    pub rtt_ms: f64,
    pub think_time_us: u64,
    pub connections: u64,
    /// Connections refused because `--max-connections` were open.
    pub connections_refused: u64,
    pub commands: u64,
    pub flights: u64,
    /// Flights per second of `duration_ms`.
    pub round_trips_per_s: f64,
    /// Depth distribution: 1, 2–9, 10–99, 100–999, 1000 and more.
    pub depth: Vec<DepthBucket>,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Time connections had commands waiting on Redis, summed, ms.
    pub wait_ms: f64,
    /// Time connections spent between a reply and their next command, summed, ms.
    pub client_ms: f64,
    /// `wait_ms / (wait_ms + client_ms)` (0 when both are 0).
    pub wait_share: f64,
    /// MULTI commands seen.
    pub transactions: u64,
    /// Commands that run a script or a function seen (EVAL, EVALSHA, FCALL
    /// and their `_RO` forms: the command table's `Table::runs_script`).
    pub scripts: u64,
    /// Commands that set up their connection (SELECT, HELLO, AUTH, CLIENT
    /// SETNAME, …: the command table's `Table::sets_connection_state`) by name.
    pub state_changes: BTreeMap<String, u64>,
    /// The missed pipelines' totals, their fields at this level of the JSON.
    #[serde(flatten)]
    pub missed: MissedTotals,
    /// Single-command round trips that came just after the think-time
    /// threshold: pipelines the threshold may have missed.
    pub near_misses: NearMisses,
    /// Connections no longer decoded (at most 100 listed).
    pub undecoded: Vec<Undecoded>,
    /// The last connections (at most 20), with their recent flights.
    pub recent_connections: Vec<ConnectionReport>,
}

impl Summary {
    /// The savings at `rtt_ms` instead of the doctor's `--rtt`: each is
    /// `(n − 1) × RTT`, so their sum is (commands − pipelines) × RTT.
    pub fn at_rtt(&mut self, rtt_ms: f64) {
        self.rtt_ms = rtt_ms;
        let m = &mut self.missed;
        m.saving_ms = m.missed_commands.saturating_sub(m.missed_pipelines) as f64 * rtt_ms;
        m.top_missed.iter_mut().for_each(|p| p.at_rtt(rtt_ms));
    }
}

/// Round trips that would have continued a missed pipeline but for a think
/// time just over `--think-time-us` (up to 100 times it): a loop slowed by a
/// busy machine, or an application that works between its commands. Many of
/// them and the summary suggests a threshold that would take them in.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NearMisses {
    pub flights: u64,
    /// The longest of their think times, µs.
    pub think_us_max: u64,
    /// A `--think-time-us` that would count them (a round number at or over
    /// `think_us_max`), when they are many: at least 3 and 1% of all flights.
    pub suggested_think_time_us: Option<u64>,
}

impl NearMisses {
    pub fn of(flights: u64, think_us_max: u64, all_flights: u64, threshold: u64) -> NearMisses {
        let many = flights >= 3 && flights * 100 >= all_flights;
        let suggested = (many && think_us_max > threshold).then(|| round_up(think_us_max));
        NearMisses { flights, think_us_max, suggested_think_time_us: suggested }
    }
}

/// The first of 1, 2, 5, 10, 20, 50, … at or over `x`.
fn round_up(x: u64) -> u64 {
    let mut p = 1u64;
    loop {
        for m in [1, 2, 5] {
            if p.saturating_mul(m) >= x {
                return p.saturating_mul(m);
            }
        }
        p = p.saturating_mul(10);
    }
}

/// The missed pipelines of a run, counted as each one ends.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MissedTotals {
    pub missed_pipelines: u64,
    /// Commands in missed pipelines.
    pub missed_commands: u64,
    /// Sum of the missed pipelines' `saving_ms`.
    pub saving_ms: f64,
    /// The largest missed pipelines by saving (at most `top` of [`MissedTotals::add`]).
    pub top_missed: Vec<MissedPipeline>,
}

impl MissedTotals {
    /// Counts `m`, and keeps it if its saving is among the `top` largest.
    pub fn add(&mut self, m: MissedPipeline, top: usize) {
        self.missed_pipelines += 1;
        self.missed_commands += m.commands;
        self.saving_ms += m.saving_ms;
        self.top_missed.push(m);
        self.top_missed.sort_by(|a, b| b.saving_ms.total_cmp(&a.saving_ms));
        self.top_missed.truncate(top);
    }
}

/// One line of `--json` output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    MissedPipeline(MissedPipeline),
    Undecoded(Undecoded),
    Summary(Box<Summary>),
}
