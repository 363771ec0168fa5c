//! What the Redis server did for a batch (`summary.server`): the deltas of
//! `INFO stats` (`total_reads_processed`, `total_writes_processed`,
//! `total_net_input_bytes`, `total_net_output_bytes`) and `INFO
//! commandstats` (`calls`, `usec` summed over commands) between one `INFO`
//! before the batch and one after it, on a side connection, outside the
//! batch's clock. The server's own counts of its `read()` and `write()`
//! calls, to set beside the executor's `read_syscalls` / `write_syscalls`.
//!
//! The side connection's own work is taken out: the read of the second
//! `INFO` and its request bytes, the write of the first `INFO`'s reply and
//! its bytes, and the first `INFO`'s call (counted in commandstats only
//! once it returned). Everything else any client did meanwhile is in the
//! deltas, so they are [`ServerWork::approximate`] when more clients were
//! connected than pipelab's own. A fresh batch connection's handshake
//! (`HELLO` / `CLIENT SETNAME`) is counted too: pooled connections have none.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::conn::{AskError, Conn, ConnSettings, ConnectError};

/// A side connection's settings, from the batch's: no delay line (a
/// reading must not wait a simulated RTT), RESP2, no reply-size limit.
pub(crate) fn side_settings(batch: &ConnSettings) -> ConnSettings {
    ConnSettings { resp3: false, simulated_rtt_ms: 0.0, simulated_bandwidth_mbps: None, max_reply_bytes: None, ..batch.clone() }
}

/// A reading taken before a batch, on its side connection.
pub(crate) struct Probe {
    side: Option<Conn>,
    before: Option<Reading>,
}

impl Probe {
    /// Takes the first reading on `side` (if it could be opened).
    pub(crate) async fn start(side: Result<Conn, ConnectError>) -> Probe {
        let Ok(mut conn) = side else { return Probe { side: None, before: None } };
        match Reading::take(&mut conn).await {
            Ok(r) => Probe { side: Some(conn), before: Some(r) },
            Err(_) => Probe { side: None, before: None },
        }
    }

    /// [`Probe::start`] on a side connection from `pool`, if `plan` asks
    /// for `summary.server`.
    pub(crate) async fn pooled(pool: &super::Pool, plan: &super::Plan, batch: &ConnSettings) -> Option<Probe> {
        if !plan.server_stats {
            return None;
        }
        // Boxed: the batch's future must not carry a connect's state inline.
        Some(Box::pin(async { Probe::start(pool.checkout(&side_settings(batch)).await.map(|l| l.conn)).await }).await)
    }

    /// [`Probe::finish`] into `summary.server`, the side connection given
    /// back to `pool`. pipelab's own connections: the side one, the
    /// batch's and the pool's idle ones.
    pub(crate) async fn finish_pooled(probe: Option<Probe>, pool: &super::Pool, summary: &mut super::Summary) {
        let Some(probe) = probe else { return };
        let (work, side) = Box::pin(probe.finish(2 + pool.idle_count() as u64)).await;
        summary.server = Some(work);
        if let Some(side) = side {
            pool.checkin(side);
        }
    }

    /// Takes the second reading: the work between them (`None` if the
    /// server could not be asked) and the side connection, if it is still
    /// fit for another use.
    pub(crate) async fn finish(self, own_clients: u64) -> (Option<ServerWork>, Option<Conn>) {
        let (Some(mut conn), Some(before)) = (self.side, self.before) else { return (None, None) };
        match Reading::take(&mut conn).await {
            Ok(after) => (Some(before.work_until(&after, own_clients)), Some(conn)),
            Err(_) => (None, None),
        }
    }
}

/// The server's work for one batch (`summary.server`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"reads": 1, "writes": 1, "net_input_bytes": 31000, "net_output_bytes": 5000,
    "usec": 480, "calls": 1000, "approximate": false})))]
pub struct ServerWork {
    /// `read()` calls the server made on client sockets (`total_reads_processed`).
    pub reads: u64,
    /// `write()` calls to clients (`total_writes_processed`).
    pub writes: u64,
    /// Bytes read from clients (`total_net_input_bytes`).
    pub net_input_bytes: u64,
    /// Bytes written to clients (`total_net_output_bytes`).
    pub net_output_bytes: u64,
    /// µs spent running commands, summed over `INFO commandstats` (but
    /// EXEC's, which is the time of the commands it ran, counted already).
    pub usec: u64,
    /// Commands run, summed over `INFO commandstats` (`calls`).
    pub calls: u64,
    /// Other clients were connected (`connected_clients` above pipelab's
    /// own connections): their work may be in these counts.
    pub approximate: bool,
}

/// The one command of a reading: the three sections at once (Redis ≥ 7.0
/// takes several; an older server answers only the first, and then the
/// reading is incomplete and `server` is null).
pub const INFO: [&[u8]; 4] = [b"INFO", b"stats", b"clients", b"commandstats"];

/// Why no reading could be taken ([`Reading::take`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadingError {
    /// The connection failed.
    #[error("{0}")]
    Conn(#[from] AskError),
    /// The reply, shown whole, is not `INFO`'s text.
    #[error("INFO answered {0}")]
    NotInfo(String),
    #[error("INFO lacks the stats, clients or commandstats section")]
    Incomplete,
}

/// One `INFO` reading.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    reads: u64,
    writes: u64,
    net_input_bytes: u64,
    net_output_bytes: u64,
    /// `connected_clients`.
    pub connected_clients: u64,
    /// `cmdstat_NAME` → (calls, usec).
    commands: HashMap<String, (u64, u64)>,
    /// Bytes of the `INFO` reply as RESP (the first reading's reply is
    /// written to the side connection during the batch).
    reply_bytes: u64,
}

impl Reading {
    /// Parses `INFO`'s text; `None` unless it has every count used here.
    pub fn parse(info: &str) -> Option<Reading> {
        let mut r = Reading::default();
        let mut seen = 0;
        for line in info.lines() {
            let Some((name, value)) = line.trim_end().split_once(':') else { continue };
            let slot = match name {
                "total_reads_processed" => &mut r.reads,
                "total_writes_processed" => &mut r.writes,
                "total_net_input_bytes" => &mut r.net_input_bytes,
                "total_net_output_bytes" => &mut r.net_output_bytes,
                "connected_clients" => &mut r.connected_clients,
                _ => {
                    if let Some(cmd) = name.strip_prefix("cmdstat_") {
                        // calls=3,usec=12,usec_per_call=4.00,rejected_calls=0,failed_calls=0
                        let field = |key: &str| {
                            value.split(',').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse::<u64>().ok())
                        };
                        r.commands.insert(cmd.to_string(), (field("calls")?, field("usec")?));
                    }
                    continue;
                }
            };
            *slot = value.parse().ok()?;
            seen += 1;
        }
        let len = info.len() as u64;
        r.reply_bytes = 1 + len.to_string().len() as u64 + 2 + len + 2;
        (seen == 5).then_some(r)
    }

    /// Takes a reading on `conn` (a side connection: never the batch's).
    /// Errors: the connection failed or the reply is not a full `INFO`.
    pub async fn take(conn: &mut Conn) -> Result<Reading, ReadingError> {
        let mut out = Vec::new();
        resp::encode_command(INFO, &mut out);
        conn.write(&out).await.map_err(AskError::from)?;
        let (reply, _) = conn.read_reply().await.map_err(AskError::from)?;
        let text = match &reply {
            resp::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            resp::Value::Verbatim { text, .. } => String::from_utf8_lossy(text).into_owned(),
            other => return Err(ReadingError::NotInfo(other.display())),
        };
        Reading::parse(&text).ok_or(ReadingError::Incomplete)
    }

    /// The work between `self` (before the batch) and `after`, the side
    /// connection's own taken out; `approximate` when more than
    /// `own_clients` clients were connected at either reading.
    pub fn work_until(&self, after: &Reading, own_clients: u64) -> ServerWork {
        let mut info_request = Vec::new();
        resp::encode_command(INFO, &mut info_request);
        let (mut calls, mut usec) = (0u64, 0u64);
        for (name, &(c, u)) in &after.commands {
            let (c0, u0) = self.commands.get(name).copied().unwrap_or((0, 0));
            let (mut dc, mut du) = (c.saturating_sub(c0), u.saturating_sub(u0));
            if name == "info" && dc > 0 {
                // The first reading's INFO is counted once it returned.
                du -= du / dc;
                dc -= 1;
            }
            // EXEC's time includes the commands it ran, each counted under
            // its own name: summed, a transaction's work counted twice.
            if name == "exec" {
                du = 0;
            }
            calls += dc;
            usec += du;
        }
        ServerWork {
            reads: after.reads.saturating_sub(self.reads).saturating_sub(1),
            writes: after.writes.saturating_sub(self.writes).saturating_sub(1),
            net_input_bytes: after.net_input_bytes.saturating_sub(self.net_input_bytes).saturating_sub(info_request.len() as u64),
            net_output_bytes: after.net_output_bytes.saturating_sub(self.net_output_bytes).saturating_sub(self.reply_bytes),
            usec,
            calls,
            approximate: self.connected_clients.max(after.connected_clients) > own_clients,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "# Stats\r\ntotal_net_input_bytes:100\r\ntotal_net_output_bytes:200\r\n\
        total_reads_processed:10\r\ntotal_writes_processed:8\r\n# Clients\r\nconnected_clients:2\r\n\
        # Commandstats\r\ncmdstat_info:calls=4,usec=40,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n\
        cmdstat_set:calls=1,usec=2,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n";

    #[test]
    fn deltas_leave_out_the_side_connection() {
        let before = Reading::parse(BEFORE).unwrap();
        let after = BEFORE
            .replace("input_bytes:100", "input_bytes:1100")
            .replace("output_bytes:200", "output_bytes:5000")
            .replace("processed:10", "processed:13")
            .replace("processed:8", "processed:11")
            .replace("calls=4,usec=40", "calls=5,usec=50")
            .replace("calls=1,usec=2,", "calls=1001,usec=1502,")
            + "cmdstat_get:calls=7,usec=7,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n";
        let after = Reading::parse(&after).unwrap();
        let w = before.work_until(&after, 2);
        assert_eq!((w.reads, w.writes), (2, 2), "one read and one write are the side connection's INFOs");
        assert_eq!((w.calls, w.usec), (1007, 1507), "the first INFO's call is left out");
        let mut request = Vec::new();
        resp::encode_command(INFO, &mut request);
        assert_eq!(w.net_input_bytes, 1000 - request.len() as u64);
        assert_eq!(w.net_output_bytes, 4800 - before.reply_bytes);
        assert!(!w.approximate);
        assert!(before.work_until(&after, 1).approximate);
        assert!(Reading::parse("# Stats\r\ntotal_reads_processed:1\r\n").is_none());
    }

    #[test]
    fn a_transaction_is_counted_once() {
        let before = Reading::parse(BEFORE).unwrap();
        // MULTI, 1000 SETs (1500 µs), EXEC (whose 1510 µs are the SETs' and its own).
        let after = BEFORE.replace("calls=4,usec=40", "calls=5,usec=50").replace("calls=1,usec=2,", "calls=1001,usec=1502,")
            + "cmdstat_multi:calls=1,usec=1,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"
            + "cmdstat_exec:calls=1,usec=1510,usec_per_call=1510.00,rejected_calls=0,failed_calls=0\r\n";
        let w = before.work_until(&Reading::parse(&after).unwrap(), 2);
        assert_eq!((w.calls, w.usec), (1002, 1501));
    }
}
