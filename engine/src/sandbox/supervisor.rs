//! The supervisor: which visitor has which redis-server child, the warm
//! spares, the idle reaper, the cap on visitors and what a dead child
//! becomes. Children are started on a thread of its own (the kernel's
//! parent-death signal is tied to the thread that forks), which also runs
//! the tasks that wait for them; requests only take what is ready.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::child::{Exit, Process, StartError};
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
/// Counter: children ended, by `cause` (the restarts', `idle`, `shutdown`).
pub const ENDED_COUNTER: &str = "pipelab_sandbox_children_ended_total";

/// One visitor's redis-server and the pool of connections to it.
pub struct Child {
    pub process: Process,
    pub pool: Arc<Pool>,
}

impl Child {
    pub fn target(&self) -> &RedisTarget {
        self.pool.target()
    }

    /// It has not ended.
    pub fn is_alive(&self) -> bool {
        self.process.exit().is_none()
    }
}

/// A visitor and their live child, for one request.
#[derive(Clone)]
pub struct Lease {
    pub visitor: Arc<Visitor>,
    pub child: Arc<Child>,
}

/// Why a visitor got no Redis.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `--sandbox-max-visitors` visitors hold a Redis and none has been
    /// idle long enough to give theirs up.
    #[error("the sandbox is full: {max} visitors have a Redis of their own; one frees up within {} s", retry_after.as_secs().max(1))]
    Full { max: usize, retry_after: Duration },
    /// `--sandbox-visitors-per-address` visitors from this client address
    /// hold a Redis.
    #[error("{max} visitors from your address have a Redis of their own already, the most one address may; one frees up within {} s", retry_after.as_secs().max(1))]
    AddressFull { max: usize, retry_after: Duration },
    #[error("{0}")]
    Start(#[from] StartError),
}

/// The sandbox's redis-server children.
pub struct Supervisor {
    settings: Settings,
    /// The private directory (0700) the children's own are made in.
    root: tempfile::TempDir,
    visitors: Mutex<HashMap<VisitorId, Arc<Visitor>>>,
    spares: Mutex<Vec<Arc<Child>>>,
    /// One spare started at a time for a look ([`Supervisor::spare`]), however
    /// many probes ask at once.
    spare_start: tokio::sync::Mutex<()>,
    /// Wakes the task that starts spares.
    refill: Notify,
    /// The command table every child shares (same binary, same settings):
    /// read once from the first child, not again for each visitor.
    template: Arc<Pool>,
    /// The supervisor thread's runtime: children are started there.
    rt: tokio::runtime::Handle,
    /// What confines every child (set on the supervisor's thread).
    jail: Arc<super::Jail>,
    /// Dropped with the supervisor: its thread ends, and with it every child.
    _stop: tokio::sync::oneshot::Sender<()>,
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
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (bin, max_bytes, path) = (settings.redis_server.clone(), settings.max_bytes, root.path().to_path_buf());
        let jail = Arc::new(super::Jail::for_settings(&settings)?);
        let thread_jail = jail.clone();
        std::thread::Builder::new()
            .name("pipelab-sandbox".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                    Ok(rt) => rt,
                    Err(e) => return drop(ready_tx.send(Err(spawn_err(e)))),
                };
                super::jail::set_for_thread(thread_jail);
                // Until the supervisor is dropped; the children die with this thread.
                rt.block_on(async {
                    let first = match Process::start(&bin, &path, max_bytes).await {
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
            visitors: Mutex::default(),
            spares: Mutex::default(),
            spare_start: tokio::sync::Mutex::new(()),
            refill: Notify::new(),
            template,
            rt,
            jail,
            _stop: stop,
        });
        let first = me.child(first);
        me.spares.lock().expect("spares lock").push(first);
        me.rt.spawn(keep_spares(Arc::downgrade(&me)));
        me.rt.spawn(reap_idle(Arc::downgrade(&me)));
        me.gauges();
        Ok(me)
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What confines the children.
    pub fn jail(&self) -> &super::Jail {
        &self.jail
    }

    /// The command table of the children's redis-server.
    pub fn commands(&self) -> Arc<Table> {
        self.template.commands()
    }

    /// The id a request goes on with: `id` if it is a visitor's the
    /// supervisor knows, else a new one (so that every id was made here).
    pub fn admit(&self, id: Option<VisitorId>, from: Option<std::net::IpAddr>) -> VisitorId {
        let mut visitors = self.visitors.lock().expect("visitors lock");
        if let Some(v) = id.and_then(|id| visitors.get(&id).cloned()) {
            v.touch();
            return v.id.clone();
        }
        let id = VisitorId::random();
        visitors.insert(id.clone(), Arc::new(Visitor::new(id.clone(), from, self.settings.visitor_batches, self.settings.visitor_sessions)));
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

    /// The visitor's live redis-server: theirs, or a spare (or a new
    /// child) if they had none or theirs died (the batch that met its end
    /// said why). Waits while a cut script is being stopped on it.
    ///
    /// Errors: the sandbox is full, or no child could be started.
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
        // A new visitor's place is held from here until their child is theirs.
        let _place = match current {
            Some(child) if child.is_alive() => return Ok(Lease { visitor: visitor.clone(), child }),
            Some(dead) => {
                let exit = dead.process.exit().unwrap_or(Exit::Crashed("unknown".into()));
                metrics::counter!(RESTARTS_COUNTER, "cause" => exit.cause()).increment(1);
                tracing::warn!(cause = exit.cause(), "a sandbox visitor's redis-server ended; the visitor gets a new one");
                None
            }
            None => Some(self.make_room(&visitor)?),
        };
        let child = self.take_child().await?;
        *visitor.child.lock().expect("visitor lock") = Some(child.clone());
        self.gauges();
        Ok(Lease { visitor, child })
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

    /// A visitor without a Redis may get one: a place under the caps (after
    /// the idle reaper's turn if need be), held until the returned
    /// [`Place`] drops.
    fn make_room(&self, visitor: &Arc<Visitor>) -> Result<Place, SandboxError> {
        let full = match self.reserve(visitor) {
            Ok(place) => return Ok(place),
            Err(full) => full,
        };
        self.reap();
        if let Ok(place) = self.reserve(visitor) {
            return Ok(place);
        }
        let now = Instant::now();
        let soonest = self
            .visitors
            .lock()
            .expect("visitors lock")
            .values()
            .filter(|v| v.holds_place() && (full == Cap::Visitors || v.from == visitor.from))
            .map(|v| (*v.last_seen.lock().expect("visitor lock") + self.settings.idle).saturating_duration_since(now))
            .min()
            .unwrap_or(self.settings.idle)
            .max(Duration::from_secs(1));
        Err(match full {
            Cap::Visitors => SandboxError::Full { max: self.settings.max_visitors, retry_after: soonest },
            Cap::Address => SandboxError::AddressFull { max: self.settings.visitors_per_address, retry_after: soonest },
        })
    }

    /// A place under `--sandbox-max-visitors` and the visitor's address's
    /// share, counting the places held and those of Redis still starting;
    /// checked and taken under the visitors' lock. Errors: the cap reached.
    fn reserve(&self, visitor: &Arc<Visitor>) -> Result<Place, Cap> {
        let visitors = self.visitors.lock().expect("visitors lock");
        let held: Vec<&Arc<Visitor>> = visitors.values().filter(|v| v.holds_place()).collect();
        if held.len() >= self.settings.max_visitors {
            return Err(Cap::Visitors);
        }
        if visitor.from.is_some() && held.iter().filter(|v| v.from == visitor.from).count() >= self.settings.visitors_per_address {
            return Err(Cap::Address);
        }
        visitor.placing.store(true, Ordering::Release);
        Ok(Place(visitor.clone()))
    }

    /// Whether a new visitor can be served now: a spare is ready, or a
    /// child starts (kept as a spare). Errors: why not.
    pub async fn ready(&self) -> Result<(), StartError> {
        self.spare().await.map(drop)
    }

    /// A spare child, left a spare (started now if there is none): what a
    /// new visitor's Redis will look like, for a look without taking one.
    pub async fn spare(&self) -> Result<Arc<Child>, StartError> {
        let alive = || self.spares.lock().expect("spares lock").iter().find(|c| c.is_alive()).cloned();
        if let Some(child) = alive() {
            return Ok(child);
        }
        let _one = self.spare_start.lock().await;
        if let Some(child) = alive() {
            return Ok(child);
        }
        let child = self.start_child().await?;
        self.spares.lock().expect("spares lock").push(child.clone());
        Ok(child)
    }

    /// Visitors holding a child now.
    pub fn children(&self) -> usize {
        self.visitors.lock().expect("visitors lock").values().filter(|v| v.child.lock().expect("visitor lock").is_some()).count()
    }

    /// Visitors remembered now (with a Redis or not).
    pub fn visitors(&self) -> usize {
        self.visitors.lock().expect("visitors lock").len()
    }

    /// Spares ready now.
    pub fn spares(&self) -> usize {
        self.spares.lock().expect("spares lock").len()
    }

    /// A spare if one is alive, else a new child started now.
    async fn take_child(&self) -> Result<Arc<Child>, SandboxError> {
        loop {
            let spare = self.spares.lock().expect("spares lock").pop();
            self.refill.notify_one();
            match spare {
                Some(child) if child.is_alive() => return Ok(child),
                Some(_) => continue,
                None => break,
            }
        }
        Ok(self.start_child().await?)
    }

    /// A new child, started on the supervisor's thread.
    async fn start_child(&self) -> Result<Arc<Child>, StartError> {
        let (bin, max_bytes, root) = (self.settings.redis_server.clone(), self.settings.max_bytes, self.root.path().to_path_buf());
        let process = self
            .rt
            .spawn(async move { Process::start(&bin, &root, max_bytes).await })
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

    /// Gives up the children of visitors idle past `--sandbox-idle` (and
    /// forgets visitors who never ran anything after at most 5 minutes).
    fn reap(&self) {
        let now = Instant::now();
        let (batches, sessions) = (self.settings.visitor_batches, self.settings.visitor_sessions);
        let gone: Vec<Arc<Visitor>> = {
            let mut visitors = self.visitors.lock().expect("visitors lock");
            let ids: Vec<VisitorId> = visitors
                .values()
                .filter(|v| {
                    // A visitor who never ran anything holds no Redis: forgotten sooner.
                    let idle = match v.child.lock().expect("visitor lock").is_some() {
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
                child.process.stop("idle");
            }
        }
        self.gauges();
    }

    fn gauges(&self) {
        metrics::gauge!(CHILDREN_GAUGE).set(self.children() as f64);
        metrics::gauge!(SPARES_GAUGE).set(self.spares() as f64);
    }
}

/// A new visitor's place under `--sandbox-max-visitors` while their Redis starts.
/// A place taken for a visitor whose Redis is still starting.
struct Place(Arc<Visitor>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.placing.store(false, Ordering::Release);
    }
}

/// Which cap a new visitor met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cap {
    Visitors,
    Address,
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

/// Keeps `--sandbox-spares` children started ahead.
async fn keep_spares(me: std::sync::Weak<Supervisor>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(sup) = me.upgrade() else { return };
        if sup.spares() >= sup.settings.spares {
            // Checked again now and then: a spare may have died.
            let _ = tokio::time::timeout(Duration::from_secs(5), sup.refill.notified()).await;
            continue;
        }
        match sup.start_child().await {
            Ok(child) => {
                sup.spares.lock().expect("spares lock").push(child);
                sup.gauges();
                backoff = Duration::from_millis(100);
            }
            Err(e) => {
                tracing::error!(error = %e, "could not start a spare redis-server for the sandbox");
                drop(sup);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
            }
        }
    }
}

/// Runs the idle reaper a few times per `--sandbox-idle`.
async fn reap_idle(me: std::sync::Weak<Supervisor>) {
    loop {
        let every = match me.upgrade() {
            Some(sup) => {
                sup.reap();
                (sup.settings.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(10))
            }
            None => return,
        };
        tokio::time::sleep(every).await;
    }
}
