//! The sweep's key clean-up: a sweep writes `total` keys into a Redis
//! others use, so afterwards it deletes the keys it created, and only
//! those. The key positions come from Redis itself (the command table's
//! key specs, else `COMMAND GETKEYSANDFLAGS`, for the first command:
//! [`sweep_keys`]); the keys that existed before the
//! sweep are left alone (EXISTS before the first run), though the sweep's
//! commands still ran on them. The clean-up happens after a failed run
//! too, and when the sweep is dropped half-way (a client that went away),
//! in a task of its own.

use std::collections::HashSet;
use std::time::Duration;

use super::error::{InputError, LabError, Problem};
use super::removed::Cleanup;

use super::runner::{pipeline, Runner};
use crate::commands::{from_getkeys_reply, getkeys_argv};
use crate::exec::{Commands, Status};

/// Keys per DEL command during cleanup.
const DEL_CHUNK: usize = 512;
/// Commands per round trip of the EXISTS and DEL batches.
const ADMIN_BATCH_SIZE: usize = 1000;

/// The keys a sweep is about to create, noted before its first run.
/// [`Pending::finish`] deletes them; dropped before that, it deletes them
/// in a task of its own.
pub struct Pending<R: Runner> {
    runner: R,
    /// Distinct keys the commands name.
    keys: usize,
    /// Those that did not exist: the ones to delete. `None` once taken.
    fresh: Option<Vec<Vec<u8>>>,
}

/// Finds the keys `commands` name and which of them do not exist yet.
///
/// Errors: [`Problem::InvalidCommand`] if Redis rejects the first command
/// in `COMMAND GETKEYS`; [`LabError::Unavailable`] if a connection failed
/// while checking; the runner's own errors.
pub async fn prepare<R: Runner>(runner: &R, commands: &Commands) -> Result<Pending<R>, LabError<R::Error>> {
    let keys = sweep_keys(runner, commands).await?;
    let fresh = keys_absent(runner, &keys).await?;
    Ok(Pending { runner: runner.clone(), keys: keys.len(), fresh: Some(fresh) })
}

impl<R: Runner> Pending<R> {
    /// Delete the keys the sweep created; what was found and deleted.
    pub async fn finish(mut self) -> Result<Cleanup, LabError<R::Error>> {
        let fresh = self.fresh.take().unwrap_or_default();
        let deleted = delete_keys(&self.runner, &fresh).await?;
        Ok(Cleanup {
            keys: self.keys as u64,
            preexisting: (self.keys - fresh.len()) as u64,
            deleted,
        })
    }
}

impl<R: Runner> Drop for Pending<R> {
    fn drop(&mut self) {
        if let Some(keys) = self.fresh.take().filter(|k| !k.is_empty()) {
            let runner = self.runner.clone();
            tokio::spawn(async move {
                if let Err(e) = delete_keys(&runner, &keys).await {
                    tracing::warn!(keys = keys.len(), error = %e, "sweep cleanup after disconnect failed");
                }
            });
        }
    }
}

/// The distinct keys `commands` touch, in first-use order. Key positions
/// are those of the first command, from the runner's command table (its
/// key specs); where the specs cannot find them all (or the table lacks
/// the command), from `COMMAND GETKEYSANDFLAGS`, whose error for a command
/// Redis rejects is [`Problem::InvalidCommand`].
pub async fn sweep_keys<R: Runner>(runner: &R, commands: &Commands) -> Result<Vec<Vec<u8>>, LabError<R::Error>> {
    let first = commands.get(0);
    let positions = match runner.commands().await.keys(first) {
        Some(keys) if keys.complete => keys.indexes(),
        _ if first.len() < 2 => Vec::new(), // only a name: no key arguments (and GETKEYS would reject it)
        _ => {
            let reply = runner
                .command(&getkeys_argv(first))
                .await
                .map_err(LabError::Run)?
                .ok_or_else(|| LabError::Unavailable("the connection failed before the reply".into()))?;
            from_getkeys_reply(first, &reply)
                .map_err(|m| InputError::new(Problem::InvalidCommand, "command", format!("Redis rejects it: {m}")))?
                .iter()
                .map(|p| p.index)
                .collect()
        }
    };
    let mut seen = HashSet::new();
    let mut keys = Vec::new();
    for cmd in commands.iter() {
        for key in positions.iter().filter_map(|&j| cmd.get(j)) {
            if seen.insert(key) {
                keys.push(key.to_vec());
            }
        }
    }
    Ok(keys)
}

/// The keys among `keys` that do not exist now.
async fn keys_absent<R: Runner>(runner: &R, keys: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, LabError<R::Error>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let commands = keys
        .iter()
        .map(|k| vec![b"EXISTS".to_vec(), k.clone()])
        .collect();
    let report = runner.run(&pipeline(commands, ADMIN_BATCH_SIZE, 0.0)).await.map_err(LabError::Run)?;
    let mut absent = Vec::new();
    for (key, r) in keys.iter().zip(&report.results) {
        match (&r.status, &r.reply) {
            (Status::Ok, Some(resp::Value::Integer(0))) => absent.push(key.clone()),
            (Status::Ok, Some(_)) => {}
            _ => {
                return Err(LabError::Unavailable(
                    "the connection failed while checking which keys exist".into(),
                ))
            }
        }
    }
    Ok(absent)
}

/// DEL `keys` in chunks; the number deleted.
async fn delete_keys<R: Runner>(runner: &R, keys: &[Vec<u8>]) -> Result<u64, LabError<R::Error>> {
    if keys.is_empty() {
        return Ok(0);
    }
    // On a Redis Cluster a DEL must name keys of one hash slot (else
    // CROSSSLOT): one group per slot there, one group on a single Redis.
    let groups: Vec<Vec<Vec<u8>>> = if runner.commands().await.is_cluster() {
        let mut by_slot: std::collections::BTreeMap<u16, Vec<Vec<u8>>> = Default::default();
        for k in keys {
            by_slot.entry(crate::cluster::slot::slot(k)).or_default().push(k.clone());
        }
        by_slot.into_values().collect()
    } else {
        vec![keys.to_vec()]
    };
    let commands = groups
        .iter()
        .flat_map(|g| g.chunks(DEL_CHUNK))
        .map(|chunk| {
            std::iter::once(b"DEL".to_vec())
                .chain(chunk.iter().cloned())
                .collect()
        })
        .collect();
    // Cleanup must not be cut short by a slow Redis more than the rest is.
    let report = tokio::time::timeout(
        runner.batch_timeout() + Duration::from_secs(1),
        runner.run(&pipeline(commands, ADMIN_BATCH_SIZE, 0.0)),
    )
    .await
    .map_err(|_| LabError::Unavailable("cleanup did not finish in time".into()))?
    .map_err(LabError::Run)?;
    Ok(report
        .results
        .iter()
        .filter_map(|r| match r.reply {
            Some(resp::Value::Integer(n)) => Some(n as u64),
            _ => None,
        })
        .sum())
}
