//! The serve loop of `pipelab serve`: the REST API and the web playground
//! on their listeners, one hyper connection per accepted socket.
//!
//! Without --redis / REDIS_URL it starts its own redis-server (see
//! [`crate::embedded`]) and stops it on exit, Ctrl-C and SIGTERM included.
//! Shutdown first drains (`pipelab_http::drain`: `/readyz` 503, nothing
//! new taken; sandbox visitors saved) until running batches and open
//! sessions are done, then stops accepting connections and lets running
//! requests finish, all within `--shutdown-grace-ms`, saves the sandbox
//! visitors active meanwhile, then exits.

use std::io;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use pipelab_http::guard::Policy;
use crate::api::info::DoctorInfo;
use crate::api::{AppState, AppStateBuilder};
use pipelab_engine::engine::RedisSource;
use pipelab_http::net::cap::{ConnCap, Permit};
use pipelab_http::net::write_timeout::WriteTimeout;
use pipelab_http::config::ServeConfig;
use crate::embedded::Supervised;
use pipelab_engine::conn::RedisTarget;

/// Why the server does not start, on stderr: one JSON object a line when
/// JSON logs are asked for, as every other line.
macro_rules! refuse {
    ($cfg:expr, $($arg:tt)*) => {
        pipelab_http::telemetry::fatal($cfg.log_format, &format!($($arg)*))
    };
}

/// Starts the doctor of `--doctor-listen` (the binary passes the doctor's
/// own): its proxy accepting on the listener (on the runtime given), each
/// connection relayed to the Redis given; returns the address it listens
/// on (`host:port`) and its JSON routes.
pub type StartDoctor = fn(&ServeConfig, &tokio::runtime::Runtime, tokio::net::TcpListener, RedisTarget) -> (String, axum::Router);

/// Run the server until Ctrl-C or SIGTERM, the doctor of `--doctor-listen`
/// started by `start_doctor`. Exit status 0 after a clean shutdown; 1 if
/// it could not start (port in use, no redis-server, bad URL); 2 for an
/// invalid setting.
pub fn main(cfg: ServeConfig, start_doctor: StartDoctor) -> ExitCode {
    pipelab_http::telemetry::init_logging(cfg.log_format);
    pipelab_http::telemetry::install_metrics();
    // Before anything makes an id: every visitor, session and live batch id starts with it.
    if let Err(e) = cfg.node_id().and_then(|id| pipelab_engine::node::set(&id).map_err(pipelab_http::config::NodeIdFlagError::Set)) {
        refuse!(cfg, "pipelab serve: {e}");
        return ExitCode::from(2);
    }
    let shown = pipelab_http::auth::token_flags_in(std::env::args().skip(2));
    if !shown.is_empty() {
        tracing::warn!(
            "{} given on the command line: every user of this machine sees the token in `ps`; give it in the environment \
             (PIPELAB_TOKENS, PIPELAB_READONLY_TOKENS, PIPELAB_OPERATOR_TOKENS) or in --tokens-file instead",
            shown.join(", ")
        );
    }
    // Rate limits are on by default in the sandbox (a public page), off otherwise.
    let preset = if cfg.sandbox.sandbox { pipelab_http::rate::RateLimits::sandbox() } else { pipelab_http::rate::RateLimits::off() };
    // As text: the first error of the three is told, whichever its kind.
    let rate = pipelab_http::rate::RateLimits::from_config(&cfg.rate, preset).map_err(|e| e.to_string());
    let auth = pipelab_http::auth::Auth::from_config(&cfg.auth).map_err(|e| e.to_string());
    let upstash = pipelab_http::config::UpstashSettings::from_config(&cfg.upstash).map_err(|e| e.to_string());
    let access = match (auth, upstash, rate) {
        (Ok(auth), Ok(upstash), Ok(rate)) => (auth, upstash, rate),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            refuse!(cfg, "pipelab serve: {e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = pipelab_http::protected::check(cfg.listen, access.0.enabled(), cfg.sandbox.sandbox, cfg.allow_unauthenticated) {
        refuse!(cfg, "pipelab serve: {e}");
        return ExitCode::from(2);
    }
    if let Some(Err(e)) = cfg.doctor_listen.map(|d| pipelab_http::protected::check_doctor(d, cfg.sandbox.sandbox, cfg.allow_unauthenticated)) {
        refuse!(cfg, "pipelab serve: {e}");
        return ExitCode::from(2);
    }
    if cfg.sandbox.sandbox && cfg.redis.is_some() {
        refuse!(
            cfg,
            "pipelab serve: --sandbox gives every visitor a redis-server of their own, which pipelab starts itself: \
             it cannot run on --redis / REDIS_URL (leave it out; --redis-server names the binary)"
        );
        return ExitCode::from(2);
    }
    // The embedded Redis gets ACL users (the batches', the read-only
    // tokens'): a second wall behind pipelab's own rules, the only one a
    // script's `redis.call` meets.
    let allow = pipelab_engine::commands::Allow { migrate: cfg.allow_migrate };
    let mut embedded_cfg = cfg.embedded.clone();
    let users = (cfg.redis.is_none() && !cfg.sandbox.sandbox).then(|| pipelab_engine::acl::Users::generate(allow));
    if let Some(users) = &users {
        embedded_cfg.acl_args = users.server_args();
    }

    // Its own supervisor thread starts it, and restarts it should it die.
    let (redis, embedded) = match (&cfg.redis, cfg.sandbox.sandbox) {
        (Some(url), _) => match RedisTarget::parse(url) {
            Ok(t) => (Backing::Shared(t, RedisSource::Configured), None),
            Err(e) => {
                refuse!(cfg, "pipelab serve: --redis / REDIS_URL: {e}");
                return ExitCode::from(2);
            }
        },
        (None, true) => match {
            // Each visitor's Redis holds a few of pipelab's descriptors (its
            // pool, its process): the soft limit's usual 1,024 would run out.
            raise_open_files();
            pipelab_engine::sandbox::Supervisor::start(cfg.sandbox.settings(&cfg.redis_server))
        } {
            Ok(sup) => (Backing::Sandbox(sup), None),
            Err(e) => {
                refuse!(cfg, "pipelab serve: --sandbox: {e}");
                return ExitCode::from(1);
            }
        },
        (None, false) => match Supervised::start(&cfg.redis_server, &embedded_cfg) {
            Ok(child) => {
                // Batches run as the batch user; the default user is pipelab's own.
                let target = RedisTarget::parse(child.url()).expect("a unix:// URL of our own");
                tracing::info!(socket = %child.socket().display(), pid = child.pid(), "started redis-server");
                (Backing::Shared(target, RedisSource::Embedded), Some(child))
            }
            Err(e) => {
                refuse!(cfg, "pipelab serve: {e}");
                return ExitCode::from(1);
            }
        },
    };

    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let code = serve_on_threads(&cfg, redis, threads, access, users.as_ref(), start_doctor);
    if let Some(child) = embedded {
        child.stop();
        tracing::info!("stopped redis-server");
    }
    code
}

/// Serves on `threads` threads, each running its own single-threaded
/// (current-thread) tokio runtime, with one acceptor on the first that deals
/// the accepted connections out in turn: Webdis's model (an event loop per
/// thread), rather than one multi-threaded runtime.
///
/// Why: with tokio's multi-threaded scheduler, every request woke the idle
/// worker (a worker that finds work while "searching" notifies another,
/// which finds nothing and parks again): two futex calls and two context
/// switches per request, about half of pipelab's CPU at one connection
/// (`perf`: `finish_task_switch`, `strace -c`: futex calls per request).
/// A connection lives on one thread, and so does the pooled Redis
/// connection it uses (the pool reuses a connection only on the runtime
/// it was opened on), so a request runs without any cross-thread wake-up
/// (figures: bench/README-api.md). The cost: a CPU-heavy request (parsing a 100k-command
/// body) delays the other connections of its thread, not those of the
/// others, where a multi-threaded runtime would have moved them.
fn serve_on_threads(
    cfg: &ServeConfig,
    redis: Backing,
    threads: usize,
    access: (pipelab_http::auth::Auth, pipelab_http::config::UpstashSettings, pipelab_http::rate::RateLimits),
    users: Option<&pipelab_engine::acl::Users>,
    start_doctor: StartDoctor,
) -> ExitCode {
    // Each thread's runtime collects the answers' budget when it parks.
    let runtimes = (0..threads).map(|_| tokio::runtime::Builder::new_current_thread().on_thread_park(pipelab_http::budget::collect_if_due).enable_all().build());
    let mut runtimes = match runtimes.collect::<io::Result<Vec<_>>>() {
        Ok(runtimes) => runtimes,
        Err(e) => {
            refuse!(cfg, "pipelab serve: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let first = &runtimes[0];
    let listener = match first.block_on(async { listen(cfg.listen) }) {
        Ok(l) => l,
        Err(e) => {
            refuse!(cfg, "pipelab serve: cannot listen on {}: {e} (choose another with --listen / PIPELAB_LISTEN)", cfg.listen);
            return ExitCode::from(1);
        }
    };
    let doctor = match cfg.doctor_listen.map(|d| (d, first.block_on(tokio::net::TcpListener::bind(d)))) {
        None => None,
        Some((_, Ok(l))) => Some(l),
        Some((d, Err(e))) => {
            refuse!(cfg, "pipelab serve: cannot listen on --doctor-listen {d}: {e} (choose another address, or leave the flag out)");
            return ExitCode::from(1);
        }
    };
    let local = listener.local_addr().unwrap_or(cfg.listen);
    let addr = local.to_string();
    let shown = match &redis {
        Backing::Shared(target, _) => target.to_string(),
        Backing::Sandbox(sup) => format!("a redis-server of their own for each visitor, jail: {}", sup.jail().describe()),
    };
    tracing::info!(%addr, node = pipelab_engine::node::id(), redis = %shown, page = %pipelab_http::page::Page::from_flag(cfg.web_dir.clone()).describe(), threads, "pipelab serve listening");
    // One line on stdout that scripts (and the tests) can wait for.
    pipelab_http::telemetry::banner(cfg.log_format, &format!("pipelab serve: listening on http://{addr} (Redis: {shown})"));

    // One state (batch slots, connection pool) for all threads; its pool's
    // reaper task runs on the first runtime.
    let handles = runtimes.iter().map(|rt| rt.handle().clone()).collect();
    let state = app_state(cfg, redis, first, handles, Some(local), access, users, doctor.map(|l| (l, start_doctor)));
    // Large replies being read take their room from the answers' budget.
    pipelab_engine::conn::set_reply_memory(state.http.budget.clone());
    if let (None, Some(shared)) = (users, state.http.engine.shared()) {
        // `--redis`: pipelab cannot make the user; it tells what scripts could reach.
        let (pool, allow, wait) = (shared.pool.clone(), pipelab_engine::commands::Allow { migrate: cfg.allow_migrate }, cfg.limits.connect_timeout());
        first.spawn(async move { pipelab_engine::acl::warn_if_scripts_reach_refused(&pool, allow, wait).await });
    }
    let cap = ConnCap::new(cfg.connection_cap(), cfg.max_connections_per_ip);
    let sandbox = state.http.engine.sandbox().cloned();
    let http = state.http.clone();
    let app = crate::server::router(state);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let grace = Duration::from_millis(cfg.shutdown_grace_ms);
    let header_timeout = Duration::from_millis(cfg.header_timeout_ms);
    let write_timeout = Duration::from_millis(cfg.write_timeout_ms);
    let mut queues = Vec::with_capacity(threads);
    let mut serving = Vec::with_capacity(threads);
    for _ in 0..threads {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        queues.push(tx);
        serving.push(serve_connections(DealtConnections { rx }, app.clone(), stop_rx.clone(), (http.drain.clone(), grace), (header_timeout, write_timeout)));
    }
    // A request's tasks may run on another thread's runtime (a big batch,
    // its body's parse): no runtime shuts down before every thread has
    // finished serving, or those tasks would be cancelled mid-request.
    let all_served = std::sync::Arc::new(tokio::sync::Barrier::new(threads));
    let mut serving = serving.into_iter();
    let first_part = serving.next().expect("at least one thread");
    let others = match spawn_serving_threads(runtimes.drain(1..).zip(serving), &all_served) {
        Ok(others) => others,
        Err(e) => {
            refuse!(cfg, "pipelab serve: cannot start a serving thread: {e}");
            return ExitCode::from(1);
        }
    };
    let first = runtimes.pop().expect("the first runtime");
    first.block_on(async move {
        tokio::join!(accept(listener, cap, queues, stop_tx, drained(http, grace)), first_part);
        all_served.wait().await;
        // Saved to the state directory: started again on it, this node serves them again.
        if let Some(sandbox) = sandbox {
            sandbox.hibernate_all().await;
        }
    });
    // A serving thread that panicked is a failure.
    // Every thread is joined, also after one that panicked.
    let joined: Vec<bool> = others.into_iter().map(|handle| handle.join().is_ok()).collect();
    let ok = joined.iter().all(|&ok| ok);
    first.shutdown_timeout(Duration::from_millis(100));
    if !ok {
        return ExitCode::from(1);
    }
    tracing::info!("pipelab serve stopped");
    ExitCode::SUCCESS
}

/// A thread for each runtime and its part of the serving, which waits for
/// every thread to have served (`all_served`) before its runtime stops.
fn spawn_serving_threads<F: std::future::Future<Output = ()> + Send + 'static>(
    parts: impl Iterator<Item = (tokio::runtime::Runtime, F)>,
    all_served: &std::sync::Arc<tokio::sync::Barrier>,
) -> io::Result<Vec<std::thread::JoinHandle<()>>> {
    let mut threads = Vec::new();
    for (i, (rt, part)) in parts.enumerate() {
        let all_served = all_served.clone();
        threads.push(std::thread::Builder::new().name(format!("pipelab-serve-{}", i + 1)).spawn(move || {
            rt.block_on(async move {
                part.await;
                all_served.wait().await;
            });
            // Requests still running after the drain period are abandoned here.
            rt.shutdown_timeout(Duration::from_millis(100));
        })?);
    }
    Ok(threads)
}

/// The server's state: the engine over `redis` (its tasks on `first`, big
/// batches on `handles`), the HTTP policy of `cfg` and `access`, the ACL
/// `users` pipelab made, and the doctor of `--doctor-listen` started on
/// its listener.
#[allow(clippy::too_many_arguments)]
fn app_state(
    cfg: &ServeConfig,
    redis: Backing,
    first: &tokio::runtime::Runtime,
    handles: Vec<tokio::runtime::Handle>,
    local: Option<SocketAddr>,
    access: (pipelab_http::auth::Auth, pipelab_http::config::UpstashSettings, pipelab_http::rate::RateLimits),
    users: Option<&pipelab_engine::acl::Users>,
    doctor: Option<(tokio::net::TcpListener, StartDoctor)>,
) -> AppState {
    let state = match redis {
        Backing::Shared(target, source) => {
            let batches = users.map_or_else(|| target.clone(), |u| u.batches.target(&target));
            let doctor = doctor.map(|(l, start_doctor)| {
                let (listen, routes) = start_doctor(cfg, first, l, batches.clone());
                (DoctorInfo { listen, rtt_ms: cfg.doctor_rtt }, routes)
            });
            let _rt = first.enter();
            let state = AppStateBuilder::shared(batches, source, cfg.limits.clone(), pipelab_http::page::Page::from_flag(cfg.web_dir.clone()), handles);
            let state = match doctor {
                Some((info, routes)) => state.with_doctor(info, routes),
                None => state,
            };
            match users {
                Some(users) => state.with_users(users, target),
                None => state,
            }
        }
        Backing::Sandbox(sup) => {
            let _rt = first.enter();
            let s = sup.settings();
            tracing::info!(max_visitors = s.max_visitors, spares = s.spares, max_bytes = s.max_bytes, idle_s = s.idle.as_secs(), hibernate_after_s = s.hibernate_after.as_secs(), memory = s.memory, disk = sup.disk_budget(), state_dir = %sup.state_dir().display(), "sandbox on: a redis-server of their own for each visitor");
            AppStateBuilder::sandboxed(sup, cfg.limits.clone(), pipelab_http::page::Page::from_flag(cfg.web_dir.clone()), handles)
        }
    };
    state
        .with_guard(Policy::new(&cfg.guard, local))
        .with_allow(pipelab_engine::commands::Allow { migrate: cfg.allow_migrate })
        .configure(access.0, access.1)
        .with_rate(access.2)
        .build()
}

/// Ctrl-C or SIGTERM, then the drain until nothing is under way or `grace`
/// is over: connections are still accepted meanwhile (the balancer reads
/// `/readyz`'s 503, the node's visitors and sessions are still served).
async fn drained(http: pipelab_http::HttpState, grace: Duration) {
    shutdown_signal().await;
    http.drain.start();
    // Sandbox visitors saved while the port is still open: once it closes,
    // only those active meanwhile are left to save (a balancer holds their
    // requests that long). Those with a session open keep it until the end.
    if let Some(sandbox) = http.engine.sandbox() {
        let keep = http.engine.sessions.visitors();
        let _ = tokio::time::timeout_at(http.drain.deadline(grace).into(), sandbox.hibernate_all_but(&keep)).await;
    }
    pipelab_http::drain::settled(&http, grace).await;
}

/// Accepts connections until `stop` ([`drained`]), dealing them to the
/// serving threads in turn; then closes the listening socket and tells
/// every thread to stop (finishing its running requests). A connection
/// past a cap of `cap` is closed at once.
async fn accept(
    listener: tokio::net::TcpListener,
    cap: std::sync::Arc<ConnCap>,
    queues: Vec<tokio::sync::mpsc::UnboundedSender<Accepted>>,
    stop_tx: tokio::sync::watch::Sender<bool>,
    stop: impl std::future::Future<Output = ()>,
) {
    let mut next = 0;
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let permit = match cap.admit(peer.ip()) {
                        Ok(permit) => permit,
                        Err(refused) => {
                            tracing::debug!(%peer, reason = refused.reason(), "connection refused");
                            continue;
                        }
                    };
                    // Each response is one complete write: send it now
                    // rather than wait for the ACK of the previous one.
                    let _ = tcp.set_nodelay(true);
                    // Handed over as a std socket: the serving thread registers it with its own runtime.
                    let Ok(tcp) = tcp.into_std() else { continue };
                    let _ = queues[next].send((tcp, peer, permit));
                    next = (next + 1) % queues.len();
                }
                // As axum's own listener: a connection that failed before it
                // was accepted is skipped; anything else (too many open files)
                // is logged and retried after a second.
                Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset) => {}
                Err(e) => {
                    tracing::error!("accept error: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            },
            _ = &mut stop => break,
        }
    }
    // Connections the kernel has already completed are served, not reset by
    // the close: a balancer cannot resend a request that met a reset (it
    // may have run), so it would answer 502.
    if let Ok(listener) = listener.into_std() {
        while let Ok((tcp, peer)) = listener.accept() {
            let Ok(permit) = cap.admit(peer.ip()) else { continue };
            if tcp.set_nonblocking(true).is_err() {
                continue;
            }
            let _ = tcp.set_nodelay(true);
            let _ = queues[next].send((tcp, peer, permit));
            next = (next + 1) % queues.len();
        }
    }
    let _ = stop_tx.send(true);
}

/// One serving thread: hyper over the connections dealt to it, with the
/// router as its service, until told to stop; then running requests get
/// what is left of `grace` since the drain began to finish. hyper's HTTP/1 directly rather than `axum::serve`,
/// which sets no timer and so no limit on slow request headers
/// (`header_timeout`); HTTP/1 only, as `axum::serve` without its `http2`
/// feature.
async fn serve_connections(
    mut listener: DealtConnections,
    app: crate::server::App,
    stop_rx: tokio::sync::watch::Receiver<bool>,
    (drain, grace): (std::sync::Arc<pipelab_http::drain::Drain>, Duration),
    (header_timeout, write_timeout): (Duration, Duration),
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    tokio::spawn(timer_keepalive());
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut stopped = stop_rx;
    loop {
        tokio::select! {
            (io, peer, permit) = listener.accept() => {
                // The peer's address in every request (`ConnectInfo`: rate limits per client address).
                let app = tower::Layer::layer(&axum::Extension(axum::extract::ConnectInfo(peer)), app.clone());
                let service = hyper_util::service::TowerToHyperService::new(app);
                let io = WriteTimeout::new(io, write_timeout);
                let conn = builder.serve_connection(TokioIo::new(io), service);
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    let _ = conn.await;
                    drop(permit);
                });
            }
            _ = stopped.wait_for(|stopped| *stopped) => break,
        }
    }
    // Dealt before the stop (the acceptor's last ones): served too.
    while let Some((io, peer, permit)) = listener.try_accept() {
        let app = tower::Layer::layer(&axum::Extension(axum::extract::ConnectInfo(peer)), app.clone());
        let service = hyper_util::service::TowerToHyperService::new(app);
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(WriteTimeout::new(io, write_timeout)), service));
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep_until(drain.deadline(grace).into()) => tracing::warn!("requests still running after {grace:?}; exiting anyway"),
    }
}

/// Raises this process's soft limit on open files to its hard limit.
fn raise_open_files() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit on this process with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// What the API runs on: one Redis for everyone, or the sandbox's children.
enum Backing {
    Shared(RedisTarget, RedisSource),
    Sandbox(std::sync::Arc<pipelab_engine::sandbox::Supervisor>),
}

/// Keeps a timer pending on this thread's runtime, one tick a second.
///
/// Why: tokio's timer wakes its driver (a write to an eventfd, and one
/// more `epoll_wait` return) whenever a timer is set that expires before
/// every pending one, even from the runtime's own thread; with no timer
/// pending that is every timer. A batch sets two (the batch timeout and the
/// read timeout, 30 s by default): two `write` system calls per request on
/// every serving thread without another timer (`strace -c`: 17,902 writes
/// for 8,951 requests). With a tick due within a second, a 30 s timer
/// expires after it and wakes no one.
async fn timer_keepalive() {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
    }
}

/// An accepted connection, its peer and its place under the connection caps.
type Accepted = (std::net::TcpStream, SocketAddr, Permit);

/// The connections dealt to one serving thread.
struct DealtConnections {
    rx: tokio::sync::mpsc::UnboundedReceiver<Accepted>,
}

impl DealtConnections {
    /// A connection already dealt, without waiting.
    fn try_accept(&mut self) -> Option<(tokio::net::TcpStream, SocketAddr, Permit)> {
        while let Ok((tcp, peer, permit)) = self.rx.try_recv() {
            match tokio::net::TcpStream::from_std(tcp) {
                Ok(tcp) => return Some((tcp, peer, permit)),
                Err(e) => tracing::error!("cannot register an accepted connection: {e}"),
            }
        }
        None
    }

    /// The next connection, registered with this thread's runtime, its
    /// peer, and its place under the caps (freed when dropped).
    async fn accept(&mut self) -> (tokio::net::TcpStream, SocketAddr, Permit) {
        loop {
            match self.rx.recv().await {
                Some((tcp, peer, permit)) => match tokio::net::TcpStream::from_std(tcp) {
                    Ok(tcp) => return (tcp, peer, permit),
                    Err(e) => tracing::error!("cannot register an accepted connection: {e}"),
                },
                // The acceptor stopped: so does serving, by the shutdown signal.
                None => std::future::pending::<()>().await,
            }
        }
    }
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("shutting down");
}

/// Connections the kernel may complete before they are accepted: a crowd
/// arriving at once (a lesson linked from a popular page) meets resets
/// past tokio's default of 1,024. The kernel caps it at `net.core.somaxconn`.
const BACKLOG: u32 = 4096;

/// A listener on `addr` as `TcpListener::bind` makes one (address reuse
/// for a quick restart), with room for a crowd's connections.
fn listen(addr: std::net::SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}
