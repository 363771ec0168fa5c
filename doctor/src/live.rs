//! The terminal view: a line a second while the doctor runs (as
//! `redis-cli --stat`, a header every 20 lines), and the summary in words
//! at the end.

use std::fmt::Write as _;

use super::report::Summary;
use super::stats::Live;

/// Lines between headers.
pub const HEADER_EVERY: u64 = 20;

/// The column header of the live lines.
pub fn header() -> String {
    format!("{:>5} {:>7} {:>11} {:>9} {:>11} {:>9} {:>7} {:>7} {:>11}", "open", "conns", "commands", "cmd/s", "flights", "rt/s", "depth", "missed", "saving ms")
}

/// One live line: totals, and rates over the `secs` since `prev`.
pub fn line(prev: &Live, now: &Live, secs: f64) -> String {
    let rate = |a: u64, b: u64| if secs > 0.0 { (b.saturating_sub(a)) as f64 / secs } else { 0.0 };
    let flights = now.flights.saturating_sub(prev.flights);
    let depth = if flights > 0 { now.commands.saturating_sub(prev.commands) as f64 / flights as f64 } else { 0.0 };
    format!(
        "{:>5} {:>7} {:>11} {:>9.0} {:>11} {:>9.0} {:>7.1} {:>7} {:>11.1}",
        now.open,
        now.connections,
        now.commands,
        rate(prev.commands, now.commands),
        now.flights,
        rate(prev.flights, now.flights),
        depth,
        now.missed,
        now.saving_ms
    )
}

/// The summary for people.
pub fn summary_text(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "doctor: {:.1} s, {} connections ({} refused), {} commands in {} round trips ({:.0}/s)", s.duration_ms / 1000.0, s.connections, s.connections_refused, s.commands, s.flights, s.round_trips_per_s);
    let _ = writeln!(out, "waiting on Redis {:.1} ms, client's own time {:.1} ms ({:.0}% waiting)", s.wait_ms, s.client_ms, s.wait_share * 100.0);
    let _ = writeln!(out, "pipeline depth (commands per round trip):");
    for b in &s.depth {
        let range = match b.max {
            Some(max) if max == b.min => format!("{}", b.min),
            Some(max) => format!("{}-{}", b.min, max),
            None => format!("{}+", b.min),
        };
        let _ = writeln!(out, "  {range:>9}: {} round trips, {} commands", b.flights, b.commands);
    }
    let _ = writeln!(out, "transactions {}, scripts {}", s.transactions, s.scripts);
    let _ = writeln!(
        out,
        "missed pipelines: {} ({} commands), a pipeline would save {:.1} ms at {} ms RTT",
        s.missed.missed_pipelines, s.missed.missed_commands, s.missed.saving_ms, s.rtt_ms
    );
    for m in &s.missed.top_missed {
        let _ = writeln!(out, "  connection {} ({}): {}, saving {:.1} ms", m.connection, m.peer, m.description, m.saving_ms);
    }
    if let Some(t) = s.near_misses.suggested_think_time_us {
        let _ = writeln!(
            out,
            "near misses: {} single-command round trips came just over --think-time-us {} after the previous reply (the longest {} µs later), \
             so they were not counted in a missed pipeline; if your application sends them in a loop without using the replies \
             (a busy machine slows such a loop), run again with --think-time-us {t}",
            s.near_misses.flights, s.think_time_us, s.near_misses.think_us_max
        );
    }
    for u in &s.undecoded {
        let _ = writeln!(out, "  not decoded: connection {} ({}): {}", u.connection, u.peer, u.reason);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_line_shows_rates_and_depth_since_the_last_one() {
        let prev = Live { commands: 100, flights: 100, ..Live::default() };
        let now = Live { open: 2, connections: 3, commands: 1100, flights: 200, missed: 1, saving_ms: 49.5 };
        let l = line(&prev, &now, 1.0);
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(cols, vec!["2", "3", "1100", "1000", "200", "100", "10.0", "1", "49.5"]);
        assert_eq!(header().split_whitespace().count(), 10); // "saving ms" is two words
    }

    #[test]
    fn the_summary_names_the_threshold_to_use_for_near_misses() {
        use crate::report::NearMisses;
        let mut s = Summary { think_time_us: 50, ..Summary::default() };
        s.near_misses = NearMisses::of(900, 4300, 1000, 50);
        let text = summary_text(&s);
        assert!(text.contains("near misses: 900 single-command round trips came just over --think-time-us 50"), "{text}");
        assert!(text.contains("run again with --think-time-us 5000"), "{text}");
        s.near_misses = NearMisses::of(2, 4300, 1000, 50);
        assert!(!summary_text(&s).contains("near misses"), "a couple are noise");
    }
}
