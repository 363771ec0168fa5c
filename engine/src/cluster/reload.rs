//! Reading the slot map again when a batch saw that it may be stale: a
//! MOVED, a master whose connection failed or timed out, CLUSTERDOWN,
//! TRYAGAIN, or a node answering that it is a replica now (`READONLY`).
//!
//! A dead master never answers MOVED, so a client that reloads only on
//! MOVED keeps sending its slots to it after its replica took over (go-redis
//! and Jedis reload when a node's connection fails, as here). One reload
//! runs at a time per cluster target: a batch asking while one runs waits
//! for it and takes its map; a reload asked within [`MIN_INTERVAL`] of the
//! last one is skipped (the map just read serves), so a dead master hit by
//! every window of every batch costs at most one `CLUSTER SHARDS` per
//! interval. The masters are asked first (those whose connection failed
//! last), then the replicas, then the configured seeds; a failed reload
//! keeps the old map.

use std::time::Duration;

/// Least time between two reloads of one cluster's slot map.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The Prometheus counter of slot-map reloads, by `cause`.
pub const RELOADS_TOTAL: &str = "pipelab_cluster_slot_map_reloads_total";

/// How long asking one node for the map may take (connect, then the
/// reply), and connecting to a master marked down: a node that does not
/// answer must not hold every batch waiting.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(1);

/// Why the slot map was read again (the `cause` label of [`RELOADS_TOTAL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// A MOVED reply: the slot has another owner.
    Moved,
    /// `TRYAGAIN`: a multi-key command during a slot's migration.
    TryAgain,
    /// `CLUSTERDOWN`: the cluster cannot serve the slot now.
    ClusterDown,
    /// A node answered `READONLY`: it is a replica now.
    Replica,
    /// A master's connection failed or timed out.
    Connection,
}

impl Cause {
    pub const ALL: [Cause; 5] = [Cause::Moved, Cause::TryAgain, Cause::ClusterDown, Cause::Replica, Cause::Connection];

    pub fn name(self) -> &'static str {
        match self {
            Cause::Moved => "moved",
            Cause::TryAgain => "tryagain",
            Cause::ClusterDown => "clusterdown",
            Cause::Replica => "replica",
            Cause::Connection => "connection",
        }
    }
}

/// Counts one reload on `/metrics`.
pub(super) fn count(cause: Cause) {
    metrics::counter!(RELOADS_TOTAL, "cause" => cause.name()).increment(1);
}
