//! The supervisor: which visitor has which redis-server child, the warm
//! spares, hibernation (a quiet visitor's keys saved to the state
//! directory, their child stopped, started again on that file when they
//! come back), the memory and disk budgets, the rate of new visitors per
//! address, the idle reaper and what a dead child becomes. Children are started on a thread of its own (the kernel's
//! parent-death signal is tied to the thread that forks), which also runs
//! the tasks that wait for them; requests only take what is ready.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::child::{Child, Exit, Process, StartError};
use super::visitor::{Visitor, VisitorId};
use super::Settings;
use crate::commands::Table;
use crate::conn::RedisTarget;
use crate::exec::{Pool, PoolConfig};

/// Gauge: visitors holding a redis-server child now.
pub const CHILDREN_GAUGE: &str = "pipelab_sandbox_children";
/// Gauge: spare children started ahead, ready for the next visitor.
pub const SPARES_GAUGE: &str = "pipelab_sandbox_spares";
/// Counter: children replaced under a visitor, by `cause` (`out_of_memory`, `crashed`, `script`).
pub const RESTARTS_COUNTER: &str = "pipelab_sandbox_restarts_total";
/// Counter: children ended, by `cause` (the restarts', `idle`, `hibernated`, `shutdown`).
pub const ENDED_COUNTER: &str = "pipelab_sandbox_children_ended_total";
/// Gauge: visitors hibernated (their keys in the state directory).
pub const HIBERNATED_GAUGE: &str = "pipelab_sandbox_hibernated";
/// Counter: hibernations, by `why` (`idle`, `memory`).
pub const HIBERNATIONS_COUNTER: &str = "pipelab_sandbox_hibernations_total";
/// Gauge: the private memory the children hold together, bytes.
pub const MEMORY_GAUGE: &str = "pipelab_sandbox_memory_bytes";
/// Gauge: the bytes of saved keys in the state directory.
pub const DISK_GAUGE: &str = "pipelab_sandbox_saved_bytes";
/// Counter: visitors who came with another node's cookie (the balancer
/// moved them: their node is down or draining) and got a new Redis here.
pub const MOVED_COUNTER: &str = "pipelab_sandbox_visitors_moved_total";
/// Counter: saved keys removed to keep `--sandbox-disk`.
pub const DISCARDED_COUNTER: &str = "pipelab_sandbox_saved_discarded_total";
/// Visitors saved at once when the node stops, when they are idle and
/// for the memory budget: each SAVE runs in a redis-server of its own.
const SAVES_AT_ONCE: usize = 4;

/// The most saves at once that keep `--sandbox-max-visitors` when many
/// visitors come back together.
const MAX_CAP_SAVES_AT_ONCE: usize = 32;

/// What a visitor whose saved keys had to go is told.
const DISCARDED: &str = "Your saved keys were removed while you were away (this sandbox's room for saved keys was full, and yours had waited longest): your Redis is new and empty.";
/// What a visitor whose saved keys would not load is told.
const UNREADABLE: &str = "Your saved keys could not be loaded: your Redis is new and empty.";

/// A visitor and their live child, for one request.
#[derive(Clone)]
pub struct Lease {
    pub visitor: Arc<Visitor>,
    pub child: Arc<Child>,
}

/// Why a visitor got no Redis.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `--sandbox-new-visitors-per-minute` new visitors came from this
    /// client address in the last minute.
    #[error("{max} new visitors a minute may come from one address, and yours has had them; the next may start within {} s", retry_after.as_secs().max(1))]
    AddressFull { max: u32, retry_after: Duration },
    #[error("{0}")]
    Start(#[from] StartError),
}

/// The sandbox's redis-server children.
pub struct Supervisor {
    settings: Settings,
    /// The private directory (0700) the children's own are made in.
    root: tempfile::TempDir,
    /// Where hibernated visitors' keys are (`<id>.rdb`).
    state: PathBuf,
    /// Locked while this supervisor uses `state`: no other node shares it.
    _state_lock: std::fs::File,
    /// The bytes saved keys may take there (`--sandbox-disk`, resolved).
    disk: u64,
    /// pipelab's own user's password on every child (`SAVE`, `PING`).
    save_password: String,
    /// Wakes the task that keeps the memory budget.
    pressure: Notify,
    /// Wakes the task that keeps `--sandbox-max-visitors`.
    over_cap: Notify,
    /// New visitors per address: a bucket each, refilled over a minute.
    arrivals: Mutex<HashMap<std::net::IpAddr, Bucket>>,
    visitors: Mutex<HashMap<VisitorId, Arc<Visitor>>>,
    spares: Mutex<Vec<Arc<Child>>>,
    /// One spare started at a time for a look ([`Supervisor::spare`]), however
    /// many probes ask at once.
    spare_start: tokio::sync::Mutex<()>,
    /// Wakes the task that starts spares.
    refill: Notify,
    /// When spares were taken lately (the last [`TAKEN_WINDOW`]): how many
    /// to keep ready follows the rate new visitors come at.
    taken: Mutex<std::collections::VecDeque<Instant>>,
    /// New visitors waiting for a child, the newest last. Each child
    /// started goes to the newest still waiting: under a flood of new
    /// visitors one who comes now is served within a few starts, while the
    /// flood, which would keep every start busy anyway, waits its turn.
    waiting: Mutex<Vec<Waiter>>,
    /// Visitors being given a child now, counted against
    /// `--sandbox-max-visitors` before their child runs.
    entering: AtomicUsize,
    /// Visitors with a child, those hibernated and their files' bytes, kept
    /// as the slots change: the table holds every visitor of the last
    /// `--sandbox-idle`, too many to count at each start or save.
    tally: Tally,
    /// The command table every child shares (same binary, same settings):
    /// read once from the first child, not again for each visitor.
    template: Arc<Pool>,
    /// The supervisor thread's runtime: children are started there.
    rt: tokio::runtime::Handle,
    /// What confines every child: passed into each start.
    jail: Arc<super::Jail>,
    /// Dropped with the supervisor: its thread ends, and with it every child.
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// What [`Supervisor::children`], [`Supervisor::hibernated`] and the disk
/// budget count, changed with each visitor's slots.
#[derive(Default)]
struct Tally {
    running: AtomicUsize,
    hibernated: AtomicUsize,
    saved_bytes: std::sync::atomic::AtomicU64,
}

/// A visitor being given a child: counted in [`Supervisor::enter`], uncounted when dropped.
struct Entering<'a>(&'a AtomicUsize);

impl Drop for Entering<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// How long a cut batch's Redis has to answer PING before it is replaced.
const SETTLE_WAIT: Duration = Duration::from_secs(2);

/// How long a visitor who holds no Redis (they only looked) is remembered.
const CHILDLESS_IDLE: Duration = Duration::from_secs(300);

/// Connections a child's pool keeps idle.
const POOL_IDLE: usize = 4;

impl Supervisor {
    /// Starts the supervisor's thread and a first child (checking that
    /// redis-server runs at all, and reading the command table from it),
    /// then fills the spares in the background.
    ///
    /// Errors: the thread or the first child could not be started.
    pub fn start(settings: Settings) -> Result<Arc<Supervisor>, StartError> {
        let spawn_err = |source| StartError::Spawn { bin: "the sandbox's supervisor thread".into(), source };
        let root = tempfile::Builder::new().prefix("pipelab-sandbox-").permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700)).tempdir().map_err(spawn_err)?;
        let state = settings.state_dir.clone().unwrap_or_else(|| root.path().join("state"));
        let state_err = |source: std::io::Error| StartError::Spawn { bin: format!("the sandbox's state directory {}", state.display()), source };
        let state_lock = open_state(&state).map_err(state_err)?;
        let disk = match settings.disk {
            0 => default_disk(&state),
            n => n,
        };
        let save_password = crate::sandbox::VisitorId::random().as_str().to_string();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (bin, max_bytes, path, password) = (settings.redis_server.clone(), settings.max_bytes, root.path().to_path_buf(), save_password.clone());
        let jail = Arc::new(super::Jail::for_settings(&settings)?);
        let thread_jail = jail.clone();
        std::thread::Builder::new()
            .name("pipelab-sandbox".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => return drop(ready_tx.send(Err(spawn_err(e)))),
                };
                // Until the supervisor is dropped; the children die with this thread.
                rt.block_on(async {
                    let first = match Process::start_from(&bin, &path, max_bytes, Some(&password), None, &thread_jail).await {
                        Ok(first) => first,
                        Err(e) => return drop(ready_tx.send(Err(e))),
                    };
                    let template = Pool::new(target_of(&first), PoolConfig { max_idle: 0, share: false, ..PoolConfig::default() });
                    template.commands_loaded(Duration::from_secs(5)).await;
                    let _ = ready_tx.send(Ok((tokio::runtime::Handle::current(), first, template)));
                    let _ = stop_rx.await;
                });
            })
            .map_err(spawn_err)?;
        let (rt, first, template) = ready_rx.recv().map_err(|_| spawn_err(std::io::Error::other("the supervisor thread ended")))??;
        let me = Arc::new(Supervisor {
            settings,
            root,
            state,
            _state_lock: state_lock,
            disk,
            save_password,
            pressure: Notify::new(),
            over_cap: Notify::new(),
            arrivals: Mutex::default(),
            visitors: Mutex::default(),
            spares: Mutex::default(),
            spare_start: tokio::sync::Mutex::new(()),
            refill: Notify::new(),
            taken: Mutex::default(),
            waiting: Mutex::default(),
            entering: AtomicUsize::new(0),
            tally: Tally::default(),
            template,
            rt,
            jail,
            _stop: stop,
        });
        let first = me.child(first);
        me.spares.lock().expect("spares lock").push(first);
        me.rt.spawn(keep_spares(Arc::downgrade(&me)));
        me.adopt_saved();
        me.rt.spawn(reap_idle(Arc::downgrade(&me)));
        me.rt.spawn(keep_memory(Arc::downgrade(&me)));
        me.rt.spawn(keep_cap(Arc::downgrade(&me)));
        me.gauges();
        Ok(me)
    }

    /// What confines the children.
    pub fn jail(&self) -> &super::Jail {
        &self.jail
    }

    /// The directory hibernated visitors' keys are kept in.
    pub fn state_dir(&self) -> &Path {
        &self.state
    }

    /// The bytes saved keys may take there (`--sandbox-disk`, resolved).
    pub fn disk_budget(&self) -> u64 {
        self.disk
    }

    /// The file visitor `id`'s keys are saved to while they hibernate.
    fn saved_path(&self, id: &VisitorId) -> PathBuf {
        self.state.join(format!("{}.rdb", id.as_str()))
    }

    /// Visitors whose keys a previous run of this node saved (the same
    /// state directory): they come back as hibernated visitors, idle since
    /// the file was written; files older than `--sandbox-idle` go.
    fn adopt_saved(&self) {
        let Ok(entries) = std::fs::read_dir(&self.state) else { return };
        let now = Instant::now();
        let mut visitors = self.visitors.lock().expect("visitors lock");
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".rdb.tmp") {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let Some(id) = name.strip_suffix(".rdb").and_then(VisitorId::parse) else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            let age = meta.modified().ok().and_then(|m| m.elapsed().ok()).unwrap_or_default();
            if age >= self.settings.idle {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let v = Visitor::new(id.clone(), None, self.settings.visitor_batches, self.settings.visitor_sessions);
            v.started.store(true, Ordering::Release);
            self.set_saved(&v, Some(meta.len()));
            *v.last_seen.lock().expect("visitor lock") = now.checked_sub(age).unwrap_or(now);
            visitors.insert(id, Arc::new(v));
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The command table of the children's redis-server.
    pub fn commands(&self) -> Arc<Table> {
        self.template.commands()
    }

    /// The id a request goes on with: `id` if it is a visitor's the
    /// supervisor knows, else a new one (so that every id was made here).
    /// A visitor with another node's id is told their Redis is new.
    pub fn admit(&self, id: Option<VisitorId>, from: Option<std::net::IpAddr>) -> VisitorId {
        let moved = id.as_ref().and_then(|id| id.elsewhere()).map(|node| {
            format!("Your Redis was on node {node}, which is not reachable now: this is a new one, on node {}, without your keys.", crate::node::id())
        });
        let mut visitors = self.visitors.lock().expect("visitors lock");
        if let Some(v) = id.and_then(|id| visitors.get(&id).cloned()) {
            v.touch();
            return v.id.clone();
        }
        let id = VisitorId::random();
        let visitor = Visitor::new(id.clone(), from, self.settings.visitor_batches, self.settings.visitor_sessions);
        if moved.is_some() {
            metrics::counter!(MOVED_COUNTER).increment(1);
            *visitor.notice.lock().expect("visitor lock") = moved;
        }
        visitors.insert(id.clone(), Arc::new(visitor));
        id
    }

    /// The redis-server visitor `id` holds now, if any.
    pub fn child_of(&self, id: &VisitorId) -> Option<Arc<Child>> {
        self.visitor(id)?.child.lock().expect("visitor lock").clone()
    }

    /// The visitor `id`, if known.
    pub fn visitor(&self, id: &VisitorId) -> Option<Arc<Visitor>> {
        self.visitors.lock().expect("visitors lock").get(id).cloned()
    }

    /// The visitor's live redis-server: theirs; a child started on their
    /// saved keys if they hibernated (it answers once the file is loaded);
    /// else a spare (or a new child) if they had none or theirs died (the
    /// batch that met its end said why). Waits while a cut script is being
    /// stopped on it, or while they are being hibernated.
    ///
    /// Errors: a new visitor past their address's rate, or no child could
    /// be started.
    pub async fn checkout(&self, id: &VisitorId) -> Result<Lease, SandboxError> {
        let visitor = {
            let mut visitors = self.visitors.lock().expect("visitors lock");
            let v = visitors.entry(id.clone()).or_insert_with(|| Arc::new(Visitor::new(id.clone(), None, self.settings.visitor_batches, self.settings.visitor_sessions)));
            v.clone()
        };
        visitor.touch();
        let settling = visitor.settling.clone();
        let _settled = settling.lock().await;
        let current = visitor.child.lock().expect("visitor lock").clone();
        match current {
            Some(child) if child.is_alive() => return Ok(Lease { visitor: visitor.clone(), child }),
            Some(dead) => {
                let exit = dead.process.exit().unwrap_or(Exit::Crashed("unknown".into()));
                metrics::counter!(RESTARTS_COUNTER, "cause" => exit.cause()).increment(1);
                tracing::warn!(cause = exit.cause(), "a sandbox visitor's redis-server ended; the visitor gets a new one");
            }
            None => {}
        }
        let hibernated = visitor.saved.lock().expect("visitor lock").is_some();
        if !hibernated && !visitor.started.load(Ordering::Acquire) {
            self.arrive(visitor.from)?;
        }
        let entering = self.enter();
        let child = match hibernated {
            true => self.restore(&visitor).await?,
            false => self.take_child().await?,
        };
        visitor.started.store(true, Ordering::Release);
        let was = visitor.child.lock().expect("visitor lock").replace(child.clone());
        if was.is_none() {
            self.tally.running.fetch_add(1, Ordering::AcqRel);
        }
        drop(entering);
        self.gauges();
        self.pressure.notify_one();
        Ok(Lease { visitor, child })
    }

    /// One more visitor about to run, counted until their child is theirs;
    /// past `--sandbox-max-visitors` room is made as their child starts
    /// ([`keep_cap`]), not at the budget's next look: a crowd coming back
    /// at once would start hundreds in between.
    fn enter(&self) -> Entering<'_> {
        let coming = self.entering.fetch_add(1, Ordering::AcqRel) + 1;
        if self.children() + coming > self.settings.max_visitors {
            self.over_cap.notify_one();
        }
        Entering(&self.entering)
    }

    /// While more visitors run or are being given a child than
    /// `--sandbox-max-visitors`, the least recently active of those who
    /// can be (no request of theirs under way) hibernate, as many at once
    /// as are past it (at least [`SAVES_AT_ONCE`], at most
    /// [`MAX_CAP_SAVES_AT_ONCE`]).
    /// When all of them are busy it looks again a little later, for a
    /// couple of seconds: visitors who arrived together go quiet together.
    async fn keep_cap(&self) {
        let max = self.settings.max_visitors;
        for _ in 0..100 {
            let mut running: Vec<(Instant, Arc<Visitor>)> = {
                let visitors = self.visitors.lock().expect("visitors lock");
                visitors.values().filter(|v| v.child.lock().expect("visitor lock").is_some()).map(|v| (v.last_seen(), v.clone())).collect()
            };
            let mut count = running.len() + self.entering.load(Ordering::Acquire);
            if count <= max {
                return;
            }
            running.sort_by_key(|r| r.0);
            let before = count;
            // As many saves at once as visitors past the cap: they are
            // started as fast as they come back, and a save (at the child's
            // lower priority) is slower than a start.
            let at_once = (count - max).clamp(SAVES_AT_ONCE, MAX_CAP_SAVES_AT_ONCE);
            self.hibernate_while(running.into_iter().map(|(_, v)| (v, 0)), at_once, &mut 0, &mut count, |_, count| count > max).await;
            if count == before {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }

    /// A child started on the visitor's saved keys (their file then
    /// removed); a spare, and a notice for them, if the file would not load.
    async fn restore(&self, visitor: &Arc<Visitor>) -> Result<Arc<Child>, SandboxError> {
        let path = self.saved_path(&visitor.id);
        match self.start_child_from(Some(path.clone())).await {
            Ok(child) => {
                self.set_saved(visitor, None);
                let _ = std::fs::remove_file(&path);
                Ok(child)
            }
            // The file itself is at fault (redis-server refused it, or it is gone): the visitor starts afresh.
            Err(StartError::Exited { log, .. }) => {
                tracing::warn!(log, "a sandbox visitor's saved keys would not load; they get an empty Redis");
                self.forget_saved(visitor, UNREADABLE);
                Ok(self.take_child().await?)
            }
            Err(StartError::Spawn { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                self.forget_saved(visitor, UNREADABLE);
                Ok(self.take_child().await?)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Visitor `v`'s saved keys set to `to` (their file's size), kept in
    /// the tally: what they were.
    fn set_saved(&self, v: &Visitor, to: Option<u64>) -> Option<u64> {
        let was = std::mem::replace(&mut *v.saved.lock().expect("visitor lock"), to);
        let t = &self.tally;
        if let Some(bytes) = was {
            t.hibernated.fetch_sub(1, Ordering::AcqRel);
            t.saved_bytes.fetch_sub(bytes, Ordering::AcqRel);
        }
        if let Some(bytes) = to {
            t.hibernated.fetch_add(1, Ordering::AcqRel);
            t.saved_bytes.fetch_add(bytes, Ordering::AcqRel);
        }
        was
    }

    /// The visitor's saved keys are gone (the file removed if still
    /// there); `why` is what they are told.
    fn forget_saved(&self, visitor: &Visitor, why: &str) {
        self.set_saved(visitor, None);
        *visitor.notice.lock().expect("visitor lock") = Some(why.to_string());
        let _ = std::fs::remove_file(self.saved_path(&visitor.id));
    }

    /// What visitor `id` must be told on this response, if anything: their
    /// saved keys are gone. Told until their new Redis has served them.
    pub fn notice(&self, id: &VisitorId) -> Option<String> {
        let v = self.visitor(id)?;
        let mut notice = v.notice.lock().expect("visitor lock");
        let told = notice.clone();
        if v.child.lock().expect("visitor lock").is_some() {
            *notice = None;
        }
        told
    }

    /// Another new visitor from `from` (an address's network), under
    /// `--sandbox-new-visitors-per-minute`. Errors: its bucket is empty.
    fn arrive(&self, from: Option<std::net::IpAddr>) -> Result<(), SandboxError> {
        let (Some(ip), per_minute) = (from, self.settings.new_visitors_per_minute) else { return Ok(()) };
        if per_minute == 0 {
            return Ok(());
        }
        let now = Instant::now();
        let mut arrivals = self.arrivals.lock().expect("arrivals lock");
        if arrivals.len() > 10_000 {
            // Full buckets are the same as none.
            arrivals.retain(|_, b| b.level(now, per_minute) < f64::from(per_minute));
        }
        let bucket = arrivals.entry(ip).or_insert(Bucket { tokens: f64::from(per_minute), at: now });
        bucket.take(now, per_minute).map_err(|retry_after| SandboxError::AddressFull { max: per_minute, retry_after })
    }

    /// Hibernates visitor `v` if nothing of theirs is under way (no
    /// request holds their Redis, no batch runs): their keys saved to the
    /// state directory, their child stopped. Whether it did.
    async fn hibernate(&self, v: &Arc<Visitor>, why: &'static str) -> bool {
        // Their next request waits on this until the file is written.
        let Ok(_settling) = v.settling.clone().try_lock_owned() else { return false };
        let child = {
            let mut slot = v.child.lock().expect("visitor lock");
            let quiet = v.batches.available_permits() == self.settings.visitor_batches.max(1);
            match slot.as_ref() {
                // Only the slot holds it: no request of theirs has it.
                Some(c) if c.is_alive() && quiet && Arc::strong_count(c) == 1 => slot.take().expect("checked"),
                _ => return false,
            }
        };
        self.tally.running.fetch_sub(1, Ordering::AcqRel);
        match self.save(&v.id, &child).await {
            Ok(bytes) => {
                self.set_saved(v, Some(bytes));
                child.process.stop("hibernated");
                // Its memory is free, and a session on it sees why, before this returns.
                let _ = tokio::time::timeout(Duration::from_secs(5), child.process.ended()).await;
                metrics::counter!(HIBERNATIONS_COUNTER, "why" => why).increment(1);
                self.gauges();
                self.keep_disk();
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not save a sandbox visitor's keys; their Redis goes on");
                *v.child.lock().expect("visitor lock") = Some(child);
                self.tally.running.fetch_add(1, Ordering::AcqRel);
                false
            }
        }
    }

    /// `child`'s keys saved, moved to `<state>/<id>.rdb` (written whole, then
    /// renamed): its size.
    async fn save(&self, id: &VisitorId, child: &Child) -> std::io::Result<u64> {
        let dump = child.process.save(&self.save_password).await?;
        let path = self.saved_path(id);
        tokio::task::spawn_blocking(move || {
            let tmp = path.with_extension("rdb.tmp");
            if std::fs::rename(&dump, &tmp).is_err() {
                std::fs::copy(&dump, &tmp)?;
            }
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            Ok(std::fs::metadata(&path)?.len())
        })
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))?
    }

    /// Visitor `id` hibernated now if nothing of theirs is under way
    /// (as after `--sandbox-hibernate-after`). Whether it did.
    pub async fn hibernate_now(&self, id: &VisitorId) -> bool {
        let Some(v) = self.visitor(id) else { return false };
        self.hibernate(&v, "idle").await
    }

    /// Their keys are in the state directory, their child stopped.
    pub fn is_hibernated(&self, id: &VisitorId) -> bool {
        self.visitor(id).is_some_and(|v| v.saved.lock().expect("visitor lock").is_some())
    }

    /// Every visitor with a running child hibernated (a node that stops:
    /// started again on the same state directory, it serves them again).
    pub async fn hibernate_all(&self) {
        self.hibernate_all_but(&Default::default()).await;
    }

    /// [`Supervisor::hibernate_all`] but for the visitors in `keep` (those
    /// with a session open, which a save would end).
    pub async fn hibernate_all_but(&self, keep: &std::collections::HashSet<VisitorId>) {
        use futures_util::StreamExt;
        let running: Vec<Arc<Visitor>> =
            self.visitors.lock().expect("visitors lock").iter().filter(|(id, v)| !keep.contains(*id) && v.child.lock().expect("visitor lock").is_some()).map(|(_, v)| v.clone()).collect();
        // Each SAVE runs in its own redis-server: a few at once end the
        // stop sooner, more would only queue on the disk and the cores.
        futures_util::stream::iter(running)
            .for_each_concurrent(SAVES_AT_ONCE, |v| async move {
                self.hibernate(&v, "shutdown").await;
            })
            .await;
    }

    /// Visitors with a running child idle past `--sandbox-hibernate-after`
    /// hibernated.
    async fn hibernate_idle(&self) {
        let now = Instant::now();
        let after = self.settings.hibernate_after;
        let idle: Vec<Arc<Visitor>> = self
            .visitors
            .lock()
            .expect("visitors lock")
            .values()
            .filter(|v| v.child.lock().expect("visitor lock").is_some() && now.saturating_duration_since(v.last_seen()) >= after)
            .cloned()
            .collect();
        use futures_util::StreamExt;
        futures_util::stream::iter(idle)
            .for_each_concurrent(SAVES_AT_ONCE, |v| async move {
                self.hibernate(&v, "idle").await;
            })
            .await;
    }

    /// The memory budget: while the children (spares too) hold more than
    /// `--sandbox-memory`, visitors hibernate, the least recently active
    /// first (past `--sandbox-max-visitors` running, [`keep_cap`] is
    /// woken). Past the memory budget only those holding more than an even
    /// share of it are taken (a quiet
    /// visitor with a few keys frees little, and did nothing): an offender
    /// whose batch still runs is waited for, not replaced by a quiet
    /// visitor. When every child holds more than its share (a crowd), that
    /// is all of them; the others go only if they pass the budget by
    /// themselves.
    async fn keep_memory_budget(&self) {
        let alive: Vec<(Arc<Visitor>, Instant, Arc<Child>)> = {
            let visitors = self.visitors.lock().expect("visitors lock");
            visitors
                .values()
                .filter_map(|v| {
                    let child = v.child.lock().expect("visitor lock").clone()?;
                    child.is_alive().then(|| (v.clone(), v.last_seen(), child))
                })
                .collect()
        };
        let spare_children = self.spares.lock().expect("spares lock").clone();
        // A /proc read per child: off the thread that starts children.
        let read = tokio::task::spawn_blocking(move || {
            let spares: u64 = spare_children.iter().map(|c| c.process.private_bytes()).sum();
            (spares, alive.into_iter().map(|(v, seen, child)| (v, seen, child.process.private_bytes())).collect::<Vec<_>>())
        });
        let Ok((spares, running)) = read.await else { return };
        let mut total = spares + running.iter().map(|r| r.2).sum::<u64>();
        let mut count = running.len();
        metrics::gauge!(MEMORY_GAUGE).set(total as f64);
        let budget = self.settings.memory;
        if count > self.settings.max_visitors {
            self.over_cap.notify_one();
        }
        if total <= budget {
            return;
        }
        let share = budget / (count + self.spares()).max(1) as u64;
        let (mut offenders, others): (Vec<_>, Vec<_>) = running.into_iter().partition(|r| r.2 > share);
        offenders.sort_by_key(|r| r.1);
        self.hibernate_while(offenders.iter().map(|(v, _, bytes)| (v.clone(), *bytes)), SAVES_AT_ONCE, &mut total, &mut count, |total, _| total > budget).await;
        let crowd = spares + others.iter().map(|r| r.2).sum::<u64>();
        // The rest of the overage is the offenders' whose batches run: theirs to end.
        let mut by_recency = offenders.into_iter().filter(|(v, _, _)| self.child_of(&v.id).is_some()).chain(others).collect::<Vec<_>>();
        by_recency.sort_by_key(|r| r.1);
        let over = |total: u64, _| total > budget && crowd > budget;
        self.hibernate_while(by_recency.into_iter().map(|(v, _, bytes)| (v, bytes)), SAVES_AT_ONCE, &mut total, &mut count, over).await;
    }

    /// Hibernates `candidates` (each with the bytes its child holds) in
    /// their order while `over(total, count)` holds of what would be left,
    /// `at_once` at a time. A candidate that cannot hibernate (a batch of
    /// theirs runs) leaves its room to the next.
    async fn hibernate_while(&self, mut candidates: impl Iterator<Item = (Arc<Visitor>, u64)>, at_once: usize, total: &mut u64, count: &mut usize, over: impl Fn(u64, usize) -> bool) {
        use futures_util::stream::{FuturesUnordered, StreamExt};
        let mut saving = FuturesUnordered::new();
        // What the saves under way will free, if they succeed.
        let (mut freeing, mut leaving) = (0u64, 0usize);
        loop {
            while saving.len() < at_once && over(total.saturating_sub(freeing), count.saturating_sub(leaving)) {
                let Some((v, bytes)) = candidates.next() else { break };
                (freeing, leaving) = (freeing + bytes, leaving + 1);
                saving.push(async move { (self.hibernate(&v, "memory").await, bytes) });
            }
            let Some((done, bytes)) = saving.next().await else { return };
            (freeing, leaving) = (freeing - bytes, leaving - 1);
            if done {
                *total = total.saturating_sub(bytes);
                *count -= 1;
            }
        }
    }

    /// The disk budget: while saved keys take more than `--sandbox-disk`,
    /// those of the visitors idle longest are removed (they are told when
    /// they come back).
    fn keep_disk(&self) {
        let total = self.tally.saved_bytes.load(Ordering::Acquire);
        metrics::gauge!(DISK_GAUGE).set(total as f64);
        if total <= self.disk {
            return;
        }
        let mut saved: Vec<(Arc<Visitor>, Instant, u64)> = self
            .visitors
            .lock()
            .expect("visitors lock")
            .values()
            .filter_map(|v| Some((v.clone(), v.last_seen(), (*v.saved.lock().expect("visitor lock"))?)))
            .collect();
        let mut total: u64 = saved.iter().map(|s| s.2).sum();
        metrics::gauge!(DISK_GAUGE).set(total as f64);
        if total <= self.disk {
            return;
        }
        saved.sort_by_key(|s| s.1);
        for (v, _, bytes) in saved {
            if total <= self.disk {
                break;
            }
            // Not one whose keys are being loaded now.
            let Ok(_settling) = v.settling.try_lock() else { continue };
            if v.child.lock().expect("visitor lock").is_some() {
                continue;
            }
            self.forget_saved(&v, DISCARDED);
            metrics::counter!(DISCARDED_COUNTER).increment(1);
            total = total.saturating_sub(bytes);
        }
        metrics::gauge!(DISK_GAUGE).set(total as f64);
    }

    /// Settles the visitor's Redis after a cut batch, before their next
    /// batch runs: `SCRIPT KILL` and `FUNCTION KILL` if the batch ran
    /// scripts; then, if a script wrote (UNKILLABLE) or Redis does not
    /// answer PING at once (a command still running), the child is
    /// stopped and their next batch gets a new one.
    pub fn settle(self: &Arc<Self>, lease: Lease, scripts: bool, connect_timeout: Duration) {
        let Ok(settling) = lease.visitor.settling.clone().try_lock_owned() else { return };
        self.rt.spawn(async move {
            let _settling = settling;
            let child = &lease.child;
            let mut cause = "stalled";
            if scripts {
                match crate::conn::side::kill_scripts(child.target(), connect_timeout, Duration::from_secs(2)).await {
                    Ok(answers) if answers.iter().any(|a| a.starts_with("UNKILLABLE")) => cause = "script",
                    _ => {}
                }
            }
            // A killed script stops at its next instruction: PING says when
            // (given time: a busy machine runs the child late).
            if cause == "script" || !settles(child.target(), connect_timeout).await {
                if child.is_alive() {
                    tracing::warn!(cause, "a sandbox visitor's redis-server did not settle after a cut batch; stopping it");
                    child.process.stop(cause);
                }
                child.process.ended().await;
            }
        });
    }

    /// Whether a new visitor can be served now: a spare is ready, or a
    /// child starts (kept as a spare). Errors: why not.
    pub async fn ready(&self) -> Result<(), StartError> {
        self.spare().await.map(drop)
    }

    /// A spare child, left a spare (started now if there is none): what a
    /// new visitor's Redis will look like, for a look without taking one.
    pub async fn spare(&self) -> Result<Arc<Child>, StartError> {
        // The first, and one started here goes first: new visitors take
        // the last, so what a probe looked at is given out last.
        let alive = || self.spares.lock().expect("spares lock").iter().find(|c| c.is_alive()).cloned();
        if let Some(child) = alive() {
            return Ok(child);
        }
        let _one = self.spare_start.lock().await;
        if let Some(child) = alive() {
            return Ok(child);
        }
        let child = self.start_child().await?;
        let waiting = self.waiting.lock().expect("waiting lock");
        match waiting.is_empty() {
            true => {
                self.spares.lock().expect("spares lock").insert(0, child.clone());
                drop(waiting);
                self.gauges();
            }
            // A new visitor waits: it is theirs (a look at it changes nothing).
            false => {
                drop(waiting);
                self.add_spare(child.clone());
            }
        }
        Ok(child)
    }

    /// Visitors holding a child now.
    pub fn children(&self) -> usize {
        self.tally.running.load(Ordering::Acquire)
    }

    /// Visitors remembered now (with a Redis or not).
    pub fn visitors(&self) -> usize {
        self.visitors.lock().expect("visitors lock").len()
    }

    /// Spares ready now.
    pub fn spares(&self) -> usize {
        self.spares.lock().expect("spares lock").len()
    }

    /// Spares to keep ready: `--sandbox-spares`, or as many as new visitors
    /// take in [`SPARES_LEAD`] at the rate they came lately, up to
    /// [`SPARES_FOLLOW`] times `--sandbox-spares` (none if that is 0).
    fn spares_wanted(&self) -> usize {
        let configured = self.settings.spares;
        let now = Instant::now();
        let mut taken = self.taken.lock().expect("taken lock");
        while taken.front().is_some_and(|t| now.saturating_duration_since(*t) > TAKEN_WINDOW) {
            taken.pop_front();
        }
        let lead = (taken.len() as f64 * SPARES_LEAD.as_secs_f64() / TAKEN_WINDOW.as_secs_f64()).ceil() as usize;
        lead.clamp(configured, configured * SPARES_FOLLOW)
    }

    /// `child` to the newest new visitor still waiting, or a spare if none is.
    fn add_spare(&self, child: Arc<Child>) {
        let mut waiting = self.waiting.lock().expect("waiting lock");
        let mut child = Ok(child);
        while let Some(waiter) = waiting.pop() {
            match waiter.send(child) {
                Ok(()) => return,
                // They left: the next one.
                Err(back) => child = back,
            }
        }
        if let Ok(child) = child {
            self.spares.lock().expect("spares lock").push(child);
        }
        drop(waiting);
        self.gauges();
    }

    /// `e` to the new visitors waiting: the newest only if the start was
    /// slow (the machine is busy, the next may do), every one if
    /// redis-server cannot start at all.
    fn fail_waiting(&self, e: StartError) {
        let mut waiting = self.waiting.lock().expect("waiting lock");
        let failed: Vec<Waiter> = match e {
            StartError::Timeout { .. } => waiting.pop().into_iter().collect(),
            _ => std::mem::take(&mut *waiting),
        };
        drop(waiting);
        // The newest gets the error itself; the others a copy of its words.
        let why = e.to_string();
        let mut own = Some(e);
        for waiter in failed.into_iter().rev() {
            let e = own.take().unwrap_or_else(|| StartError::Spawn { bin: self.settings.redis_server.clone(), source: std::io::Error::other(why.clone()) });
            let _ = waiter.send(Err(e));
        }
    }

    /// New visitors waiting for a child who are still there.
    fn waiting(&self) -> usize {
        let mut waiting = self.waiting.lock().expect("waiting lock");
        waiting.retain(|w| !w.is_closed());
        waiting.len()
    }

    /// A live spare, if there is one.
    fn pop_spare(&self) -> Option<Arc<Child>> {
        loop {
            let spare = self.spares.lock().expect("spares lock").pop();
            self.refill.notify_one();
            match spare {
                Some(child) if child.is_alive() => return Some(child),
                Some(_) => continue,
                None => return None,
            }
        }
    }

    /// A spare if one is alive, else the next child started (a few start
    /// at once: [`keep_spares`]) that no newer visitor is waiting for.
    async fn take_child(&self) -> Result<Arc<Child>, SandboxError> {
        self.taken.lock().expect("taken lock").push_back(Instant::now());
        let rx = {
            // Under the lock add_spare hands children out by: a child started
            // meanwhile is either a spare seen here or handed to this waiter.
            let mut waiting = self.waiting.lock().expect("waiting lock");
            if let Some(child) = self.pop_spare() {
                return Ok(child);
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            waiting.push(tx);
            rx
        };
        self.refill.notify_one();
        let mut waiter = Waiting { sup: self, rx };
        let started = (&mut waiter.rx).await.map_err(|_| StartError::Spawn { bin: self.settings.redis_server.clone(), source: std::io::Error::other("the supervisor thread ended") })?;
        Ok(started?)
    }

    /// A new child, started on the supervisor's thread.
    async fn start_child(&self) -> Result<Arc<Child>, StartError> {
        self.start_child_from(None).await
    }

    /// A new child on the keys of `rdb` if given, started on the supervisor's thread.
    async fn start_child_from(&self, rdb: Option<PathBuf>) -> Result<Arc<Child>, StartError> {
        let (bin, max_bytes, root, password) = (self.settings.redis_server.clone(), self.settings.max_bytes, self.root.path().to_path_buf(), self.save_password.clone());
        let jail = self.jail.clone();
        let process = self
            .rt
            .spawn(async move { Process::start_from(&bin, &root, max_bytes, Some(&password), rdb.as_deref(), &jail).await })
            .await
            .map_err(|e| StartError::Spawn { bin: self.settings.redis_server.clone(), source: std::io::Error::other(e.to_string()) })??;
        Ok(self.child(process))
    }

    /// `process` with its pool (sharing the template's command table), its
    /// end counted when it comes.
    fn child(&self, process: Process) -> Arc<Child> {
        let _rt = self.rt.enter();
        let config = PoolConfig { max_idle: POOL_IDLE, share: false, ..PoolConfig::default() };
        let child = Arc::new(Child { pool: self.template.sibling_unmetered(target_of(&process), config), process });
        let mut ended = child.process.exit_watch();
        self.rt.spawn(async move {
            if let Ok(exit) = ended.wait_for(Option::is_some).await {
                let cause = exit.as_ref().map_or("unknown", Exit::cause);
                metrics::counter!(ENDED_COUNTER, "cause" => cause).increment(1);
            }
        });
        child
    }

    /// Forgets visitors idle past `--sandbox-idle`, their child stopped and
    /// their saved keys removed (and visitors who never ran anything after
    /// at most 5 minutes).
    fn reap(&self) {
        let now = Instant::now();
        let (batches, sessions) = (self.settings.visitor_batches, self.settings.visitor_sessions);
        let gone: Vec<Arc<Visitor>> = {
            let mut visitors = self.visitors.lock().expect("visitors lock");
            let ids: Vec<VisitorId> = visitors
                .values()
                .filter(|v| {
                    // A visitor who never ran anything holds no Redis: forgotten sooner.
                    let idle = match v.started.load(Ordering::Acquire) {
                        true => self.settings.idle,
                        false => self.settings.idle.min(CHILDLESS_IDLE),
                    };
                    now.saturating_duration_since(*v.last_seen.lock().expect("visitor lock")) >= idle && v.is_quiet(batches, sessions)
                })
                .map(|v| v.id.clone())
                .collect();
            ids.iter().filter_map(|id| visitors.remove(id)).collect()
        };
        for v in gone {
            if let Some(child) = v.child.lock().expect("visitor lock").take() {
                self.tally.running.fetch_sub(1, Ordering::AcqRel);
                child.process.stop("idle");
            }
            if self.set_saved(&v, None).is_some() {
                let _ = std::fs::remove_file(self.saved_path(&v.id));
            }
        }
        self.gauges();
    }

    /// Visitors hibernated now.
    pub fn hibernated(&self) -> usize {
        self.tally.hibernated.load(Ordering::Acquire)
    }

    fn gauges(&self) {
        metrics::gauge!(CHILDREN_GAUGE).set(self.children() as f64);
        metrics::gauge!(HIBERNATED_GAUGE).set(self.hibernated() as f64);
        metrics::gauge!(SPARES_GAUGE).set(self.spares() as f64);
    }
}

/// New visitors from one address: `per_minute` tokens at most, one
/// taken by each, refilled evenly over a minute.
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn level(&self, now: Instant, per_minute: u32) -> f64 {
        let per_minute = f64::from(per_minute);
        (self.tokens + now.saturating_duration_since(self.at).as_secs_f64() * per_minute / 60.0).min(per_minute)
    }

    /// One token, or how long until there is one.
    fn take(&mut self, now: Instant, per_minute: u32) -> Result<(), Duration> {
        self.tokens = self.level(now, per_minute);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        Err(Duration::from_secs_f64((1.0 - self.tokens) * 60.0 / f64::from(per_minute)))
    }
}

/// The state directory, made (0700) if need be, and locked for this node:
/// the lock's file, held open while the supervisor lives.
fn open_state(state: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(state)?;
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o700))?;
    let lock = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(state.join(".lock"))?;
    // A node that stops saves its visitors first: its successor waits for that a while.
    let until = Instant::now() + Duration::from_secs(10);
    // SAFETY: flock on a descriptor this function owns.
    while unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        if Instant::now() > until {
            return Err(std::io::Error::other("another pipelab uses it: give each node a --sandbox-state-dir of its own"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(lock)
}

/// `--sandbox-disk` by default: the smaller of 1 GiB and a tenth of the
/// state directory's filesystem.
fn default_disk(state: &Path) -> u64 {
    let gib = 1 << 30;
    let Ok(path) = std::ffi::CString::new(state.as_os_str().as_encoded_bytes()) else { return gib };
    // SAFETY: statvfs writes only the struct it is given.
    let mut fs: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &mut fs) } != 0 {
        return gib;
    }
    (fs.f_blocks as u64 * fs.f_frsize as u64 / 10).min(gib)
}

/// Whether the Redis at `target` answers PING with anything but an error
/// (`-BUSY` while a killed script winds down) within [`SETTLE_WAIT`].
async fn settles(target: &RedisTarget, connect_timeout: Duration) -> bool {
    let until = Instant::now() + SETTLE_WAIT;
    while Instant::now() < until {
        let left = until.saturating_duration_since(Instant::now());
        if crate::conn::side::answers_ping(target, connect_timeout.min(left), left).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

/// The `unix://` target of a child's socket.
fn target_of(process: &Process) -> RedisTarget {
    RedisTarget::parse(&format!("unix://{}", process.socket.display())).expect("a unix:// URL of our own")
}

/// The window the rate of spares taken is measured over.
const TAKEN_WINDOW: Duration = Duration::from_secs(2);
/// Spares kept ready cover the visitors of this long at that rate: about
/// what a few starts take on a busy machine.
const SPARES_LEAD: Duration = Duration::from_millis(250);
/// Most spares kept, as a multiple of `--sandbox-spares`.
const SPARES_FOLLOW: usize = 4;
/// Spares started at once: a start mostly waits for redis-server to load,
/// so a few overlap, but each forks and execs on the supervisor's thread.
const STARTS_AT_ONCE: usize = 4;

/// A new visitor's place among those waiting for a child.
type Waiter = tokio::sync::oneshot::Sender<Result<Arc<Child>, StartError>>;

/// A new visitor waiting for a child; a child handed to them after they
/// left (their request dropped) goes back to the spares.
struct Waiting<'a> {
    sup: &'a Supervisor,
    rx: tokio::sync::oneshot::Receiver<Result<Arc<Child>, StartError>>,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.rx.close();
        if let Ok(Ok(child)) = self.rx.try_recv() {
            self.sup.add_spare(child);
        }
    }
}

/// Keeps children starting, a few at once, for the new visitors waiting
/// and [`Supervisor::spares_wanted`] ahead of them.
async fn keep_spares(me: std::sync::Weak<Supervisor>) {
    let mut backoff = Duration::from_millis(100);
    let mut starting = tokio::task::JoinSet::new();
    loop {
        let Some(sup) = me.upgrade() else { return };
        let short = (sup.spares_wanted() + sup.waiting()).saturating_sub(sup.spares() + starting.len());
        for _ in 0..short.min(STARTS_AT_ONCE.saturating_sub(starting.len())) {
            let sup = sup.clone();
            starting.spawn(async move { sup.start_child().await });
        }
        if starting.is_empty() {
            // Checked again now and then: a spare may have died.
            let _ = tokio::time::timeout(Duration::from_secs(5), sup.refill.notified()).await;
            continue;
        }
        let started = tokio::select! {
            started = starting.join_next() => started,
            _ = sup.refill.notified() => continue,
        };
        match started {
            Some(Ok(Ok(child))) => {
                sup.add_spare(child);
                backoff = Duration::from_millis(100);
            }
            Some(Ok(Err(e))) => {
                tracing::error!(error = %e, "could not start a redis-server for the sandbox");
                let slow = matches!(e, StartError::Timeout { .. });
                sup.fail_waiting(e);
                drop(sup);
                if slow {
                    continue;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
            Some(Err(_)) | None => {}
        }
    }
}

/// Runs the idle reaper and hibernates idle visitors a few times per
/// `--sandbox-hibernate-after` (at least each second).
async fn reap_idle(me: std::sync::Weak<Supervisor>) {
    loop {
        let every = match me.upgrade() {
            Some(sup) => {
                sup.reap();
                sup.hibernate_idle().await;
                (sup.settings.idle.min(sup.settings.hibernate_after) / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
            }
            None => return,
        };
        tokio::time::sleep(every).await;
    }
}

/// Keeps `--sandbox-max-visitors` when a visitor enters past it
/// ([`Supervisor::keep_cap`]).
async fn keep_cap(me: std::sync::Weak<Supervisor>) {
    loop {
        let Some(sup) = me.upgrade() else { return };
        // Timed, so that a supervisor dropped meanwhile is let go.
        if tokio::time::timeout(Duration::from_secs(1), sup.over_cap.notified()).await.is_ok() {
            sup.keep_cap().await;
        }
    }
}

/// Keeps the memory budget: after a child is given out, and each second;
/// at most five times a second, as each look reads every child's memory
/// on the thread that starts children.
async fn keep_memory(me: std::sync::Weak<Supervisor>) {
    loop {
        let Some(sup) = me.upgrade() else { return };
        sup.keep_memory_budget().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _ = tokio::time::timeout(Duration::from_millis(800), sup.pressure.notified()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_visitors_per_address_are_a_rate() {
        let t0 = Instant::now();
        let mut b = Bucket { tokens: 3.0, at: t0 };
        for _ in 0..3 {
            assert!(b.take(t0, 3).is_ok());
        }
        let wait = b.take(t0, 3).expect_err("a fourth in the same instant");
        assert!((19..=20).contains(&wait.as_secs()), "{wait:?}");
        // A third of a minute later, one more (3 a minute).
        assert!(b.take(t0 + Duration::from_secs(20), 3).is_ok());
        assert!(b.take(t0 + Duration::from_secs(20), 3).is_err());
        // Never more than a minute's worth saved up.
        assert!((b.level(t0 + Duration::from_secs(3600), 3) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn the_disk_budget_is_at_most_a_gib() {
        let dir = tempfile::tempdir().unwrap();
        let budget = default_disk(dir.path());
        assert!(budget > 0 && budget <= 1 << 30, "{budget}");
    }
}
