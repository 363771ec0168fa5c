//! Quotas per namespace (`--sandbox-max-keys`, `--sandbox-max-bytes`) and
//! the TTL every sandbox key gets (`--sandbox-ttl`).
//!
//! Counting a namespace exactly means scanning the whole keyspace (`SCAN
//! MATCH sbx:{id}:*`) and asking `MEMORY USAGE` of each of its keys: too
//! dear for every batch. So each namespace has an upper bound, kept in
//! memory: what was last measured plus what every batch since may have
//! added (a write command's distinct keys not seen before in the batch,
//! and its argument bytes). Only when a batch could take the bound past a
//! quota is the namespace measured exactly; the commands from the first
//! one past the quota on are then not sent, with the reason
//! ([`Quotas::check`]). A new namespace starts at zero.
//!
//! TTLs: after each batch, every key a write command of it named gets
//! `EXPIRE key ttl` (on a task of its own, so that a client leaving does
//! not skip it): a key lives `ttl` after the batch that last wrote it, and
//! an abandoned namespace disappears from Redis by itself, even if
//! pipelab stops. A key a script writes without naming it in `KEYS` gets
//! none from this: after a batch that ran a script, every key of the
//! namespace without a TTL gets one (`EXPIRE … NX`, after a `SCAN`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::api::AppState;
use crate::commands::{KeyFlags, Table};
use crate::exec::{execute_pooled, Batch, Commands, ExecOptions, Mode, Plan, Status};

use super::{Namespace, SandboxConfig};

/// What one namespace may hold, as far as pipelab knows.
#[derive(Debug, Clone, Copy)]
struct Usage {
    /// Upper bound of its keys.
    keys: u64,
    /// Upper bound of its bytes.
    bytes: u64,
    /// Its last batch.
    seen: Instant,
}

/// The usage of every namespace seen within the TTL.
#[derive(Default)]
pub struct Quotas {
    usage: Mutex<HashMap<Arc<str>, Usage>>,
    last_prune: Mutex<Option<Instant>>,
}

/// The keys `argv` writes: those at key specs flagged `OW`, `RW`,
/// `insert` or `update` (EVAL's and FCALL's keys are `RW`; the command
/// flag `write` is not set on them).
fn written<'a>(table: &Table, argv: crate::exec::ArgvRef<'a>) -> Vec<&'a [u8]> {
    let adds = KeyFlags(KeyFlags::OW.0 | KeyFlags::RW.0 | KeyFlags::INSERT.0 | KeyFlags::UPDATE.0);
    let keys = table.keys(argv).unwrap_or_default();
    keys.positions.iter().filter(|p| p.flags.0 & adds.0 != 0).filter_map(|p| argv.get(p.index)).collect()
}

/// What `argv` may add: the keys it writes, and its argument bytes if it
/// writes at all.
fn growth<'a>(table: &Table, argv: crate::exec::ArgvRef<'a>) -> (Vec<&'a [u8]>, u64) {
    let keys = written(table, argv);
    if keys.is_empty() && !table.command(argv).is_some_and(|c| c.has_flag("write")) {
        return (keys, 0);
    }
    (keys, argv.iter().skip(1).map(|a| a.len() as u64).sum())
}

/// The keys `commands` write (deduplicated), for their TTL.
pub fn written_keys<'a>(table: &Table, commands: impl IntoIterator<Item = crate::exec::ArgvRef<'a>>) -> Vec<Vec<u8>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for argv in commands {
        for k in written(table, argv) {
            if seen.insert(k) {
                out.push(k.to_vec());
            }
        }
    }
    out
}

impl Quotas {
    /// The index of the first command of `batch` past a quota of `ns`, and
    /// why; `None` if the whole batch fits. Measures the namespace in
    /// Redis when the upper bound does not settle it; records what the
    /// commands that will be sent may add.
    pub async fn check(&self, state: &AppState, ns: &Namespace, batch: &Batch, table: &Table, cfg: &SandboxConfig) -> Option<(usize, String)> {
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut steps = Vec::with_capacity(batch.commands.len());
        let (mut keys, mut bytes) = (0u64, 0u64);
        for argv in batch.commands.iter() {
            let (written, b) = growth(table, argv);
            keys += written.into_iter().filter(|k| seen.insert(k)).count() as u64;
            bytes += b;
            steps.push((keys, bytes));
        }
        let mut base = self.usage(ns.prefix());
        if base.keys + keys > cfg.sandbox_max_keys || base.bytes + bytes > cfg.sandbox_max_bytes {
            if let Some((k, b)) = measure(state, ns).await {
                base.keys = k;
                base.bytes = b;
            }
        }
        let cut = steps.iter().position(|&(k, b)| base.keys + k > cfg.sandbox_max_keys || base.bytes + b > cfg.sandbox_max_bytes);
        let sent = cut.map_or(steps.last().copied(), |i| i.checked_sub(1).map(|j| steps[j])).unwrap_or((0, 0));
        self.record(ns.prefix(), Usage { keys: base.keys + sent.0, bytes: base.bytes + sent.1, seen: Instant::now() });
        cut.map(|i| {
            let (k, _) = steps[i];
            let what = if base.keys + k > cfg.sandbox_max_keys {
                format!("more than {} keys (--sandbox-max-keys)", cfg.sandbox_max_keys)
            } else {
                format!("more than {} bytes (--sandbox-max-bytes)", cfg.sandbox_max_bytes)
            };
            (i, format!("sandbox quota: with command {i} your namespace could hold {what}; it and the commands after it were not sent"))
        })
    }

    /// Marks `ns` as used now (a session opened on it, before any batch),
    /// its bounds unchanged: [`Quotas::prune`] forgets it, and its ACL user
    /// is deleted, only once it has been idle past the TTL.
    pub fn touch(&self, ns: &Namespace) {
        let u = self.usage(ns.prefix());
        self.record(ns.prefix(), Usage { seen: Instant::now(), ..u });
    }

    fn usage(&self, prefix: &Arc<str>) -> Usage {
        let usage = self.usage.lock().expect("quota lock");
        usage.get(prefix).copied().unwrap_or(Usage { keys: 0, bytes: 0, seen: Instant::now() })
    }

    fn record(&self, prefix: &Arc<str>, u: Usage) {
        self.usage.lock().expect("quota lock").insert(prefix.clone(), u);
    }

    /// Namespaces idle past `ttl`, forgotten here (their keys have expired
    /// by now); at most once a minute, else none.
    pub fn prune(&self, ttl: Duration) -> Vec<Namespace> {
        {
            let mut last = self.last_prune.lock().expect("quota lock");
            if last.is_some_and(|t| t.elapsed() < Duration::from_secs(60)) {
                return Vec::new();
            }
            *last = Some(Instant::now());
        }
        let mut usage = self.usage.lock().expect("quota lock");
        let idle: Vec<Arc<str>> = usage.iter().filter(|(_, u)| u.seen.elapsed() > ttl).map(|(p, _)| p.clone()).collect();
        idle.iter().for_each(|p| {
            usage.remove(p);
        });
        idle.iter().filter_map(|p| Namespace::from_prefix(p)).collect()
    }
}

/// Side commands (pipelab's own, as the server's user), pipelined: their
/// replies, or `None` if Redis could not be reached.
pub async fn side(state: &AppState, commands: Commands) -> Option<Vec<resp::Value>> {
    if commands.is_empty() {
        return Some(Vec::new());
    }
    let batch = Batch::new(commands, Plan { batch_size: 1000, ..Plan::new(Mode::Pipeline) });
    let opts = ExecOptions {
        connect_timeout: state.limits.connect_timeout(),
        read_timeout: state.limits.batch_timeout(),
        max_reply_bytes: None,
        deadline: Some(std::time::Instant::now() + state.limits.batch_timeout()),
        commands: None,
        cancel: None,
    };
    let report = execute_pooled(state.admin_pool(), &batch, &opts).await.ok()?;
    report.results.into_iter().map(|r| (r.status != Status::NotSent && r.status != Status::Unknown).then_some(r.reply).flatten()).collect()
}

/// The namespace's keys and bytes (`MEMORY USAGE` summed), exactly.
async fn measure(state: &AppState, ns: &Namespace) -> Option<(u64, u64)> {
    let keys = scan(state, ns).await?;
    let usage = side(state, keys.iter().map(|k| vec![&b"MEMORY"[..], b"USAGE", k]).collect()).await?;
    let bytes = usage.iter().map(|v| if let resp::Value::Integer(n) = v { *n.max(&0) as u64 } else { 0 }).sum();
    Some((keys.len() as u64, bytes))
}

/// Every key of the namespace (`SCAN 0 MATCH sbx:{id}:* COUNT 1000` to the end).
async fn scan(state: &AppState, ns: &Namespace) -> Option<Vec<Vec<u8>>> {
    let pattern = ns.pattern();
    let mut cursor = b"0".to_vec();
    let mut keys: Vec<Vec<u8>> = Vec::new();
    loop {
        let argv: Vec<&[u8]> = vec![b"SCAN", &cursor, b"MATCH", pattern.as_bytes(), b"COUNT", b"1000"];
        let reply = side(state, Commands::from_iter([argv])).await?.pop()?;
        let resp::Value::Array(parts) = reply else { return None };
        let [next, resp::Value::Array(found)] = parts.as_slice() else { return None };
        keys.extend(found.iter().filter_map(|k| match k {
            resp::Value::Bulk(b) => Some(b.clone()),
            _ => None,
        }));
        cursor = match next {
            resp::Value::Bulk(c) => c.clone(),
            _ => return None,
        };
        if cursor == b"0" {
            break;
        }
    }
    Some(keys)
}

/// After a batch that ran a script: `EXPIRE key ttl NX` on every key of the
/// namespace (a script may write keys it does not name in `KEYS`; `NX`
/// leaves the TTLs already set, and those keys untouched), on a task of
/// its own: its handle, for a caller that must wait for it.
pub fn expire_namespace_later(state: &AppState, ns: Namespace, ttl: Duration) -> JoinHandle<()> {
    let state = state.clone();
    let secs = ttl.as_secs().to_string();
    tokio::spawn(async move {
        let Some(keys) = scan(&state, &ns).await else { return };
        side(&state, keys.iter().map(|k| vec![&b"EXPIRE"[..], k, secs.as_bytes(), b"NX"]).collect()).await;
    })
}

/// `EXPIRE key ttl` for each of `keys` (already in the namespace), on a
/// task of its own (a client leaving does not cancel it): its handle, for
/// a caller that must wait for it; `None` with no keys.
pub fn expire_later(state: &AppState, keys: Vec<Vec<u8>>, ttl: Duration) -> Option<JoinHandle<()>> {
    if keys.is_empty() {
        return None;
    }
    let state = state.clone();
    let secs = ttl.as_secs().to_string();
    Some(tokio::spawn(async move {
        let commands: Commands = keys.iter().map(|k| vec![&b"EXPIRE"[..], k, secs.as_bytes()]).collect();
        if side(&state, commands).await.is_none() {
            tracing::warn!(keys = keys.len(), "sandbox: could not set the TTL of the keys a batch wrote");
        }
    }))
}
