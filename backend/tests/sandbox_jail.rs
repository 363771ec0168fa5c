//! The jail of the sandbox's children (engine/src/sandbox/jail.rs), with
//! real processes: a visitor who has taken over their redis-server (a Redis
//! or Lua bug) is played by a stand-in for redis-server, a Python script that
//! tries every way out it knows before it `exec`s the real redis-server with
//! the same arguments. Each attempt must fail, and the visitor must still be
//! served. A jailed redis-server must also still do all a visitor asks of it.

mod api_inproc;
#[path = "../../engine/tests/common/mod.rs"]
mod common;
mod sandbox_client;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use api_inproc::App;
use sandbox_client::{sandbox, Visitor};
use pipelab_engine::sandbox::Settings;
use serde_json::{json, Value as Json};

/// The replies' values, without their RESP types.
fn replies(report: &Json) -> Vec<Json> {
    fn plain(reply: &Json) -> Json {
        match reply.get("value") {
            Some(Json::Array(items)) => Json::Array(items.iter().map(plain).collect()),
            Some(v) => v.clone(),
            None if reply["type"] == "null" => Json::Null,
            None => reply.clone(),
        }
    }
    report["results"].as_array().unwrap_or_else(|| panic!("results: {report}")).iter().map(|r| plain(&r["reply"])).collect()
}

/// The real redis-server the stand-in becomes: one among the system's
/// programs, which the jail lets a child execute (the stand-in is the only
/// other file it may).
fn system_redis_server() -> PathBuf {
    let system = |p: &Path| ["/usr/", "/bin/", "/sbin/", "/lib"].iter().any(|d| p.starts_with(d));
    // Named as found, not resolved: Debian's is a link to redis-check-rdb, which acts by its name.
    let on_path = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).map(|d| d.join("redis-server")).find(|p| p.canonicalize().is_ok_and(|c| system(&c)));
    on_path.or_else(|| Some(PathBuf::from("/usr/bin/redis-server")).filter(|p| p.exists())).unwrap_or_else(|| panic!("this test needs a redis-server installed among the system's programs (/usr/bin: apt-get install redis-server): the jail lets a child execute only those and the stand-in"))
}

/// The stand-in: with `targets` (JSON), tries each way out and writes each
/// attempt's outcome (`ok` or the errno's name) to `escape.json` in its own
/// directory; then becomes `real` with the same arguments.
fn stand_in(targets: &Json, real: &Path) -> String {
    let script = r#"#!/usr/bin/python3 -I
import ctypes, errno, json, os, resource, signal, socket, sys
T = json.loads(r'''__TARGETS__''')
args = sys.argv[1:]
own = args[args.index('--dir') + 1]
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = 'ok'
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:
        out[name] = 'not tried: %r' % e
def unix_connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(path)
    s.close()
def tcp_connect():
    s = socket.create_connection(('127.0.0.1', T['tcp']), timeout=2)
    s.close()
def udp_send():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'escaped', ('127.0.0.1', T['udp']))
def unix_datagram():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'escaped', T['unix_dgram'])
def abstract_unix():
    unix_connect('\0' + T['abstract'])
def write(path):
    with open(path, 'w') as f:
        f.write('escaped')
def read(path):
    with open(path, 'rb') as f:
        f.read(1)
def own_dir():
    write(os.path.join(own, 'own.tmp'))
    os.rename(os.path.join(own, 'own.tmp'), os.path.join(own, 'own.txt'))
    read(os.path.join(own, 'own.txt'))
def raise_file_size_limit():
    # The soft limit up to the hard one, which the kernel allows any process.
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    libc_call('setrlimit', resource.RLIMIT_FSIZE, (ctypes.c_ulong * 2)(hard, hard))
def libc_call(name, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), name)
if T:
    ppid = os.getppid()
    attempt('own_dir', own_dir)
    attempt('connect_other_child', lambda: unix_connect(T['other_socket']))
    attempt('connect_unix_outside', lambda: unix_connect(T['unix']))
    attempt('connect_abstract_unix', abstract_unix)
    attempt('connect_tcp', tcp_connect)
    attempt('send_udp', udp_send)
    attempt('send_unix_datagram', unix_datagram)
    attempt('write_outside', lambda: write(T['outside_file']))
    attempt('write_sandbox_root', lambda: write(os.path.join(os.path.dirname(own), 'escaped')))
    attempt('read_outside', lambda: read(T['secret']))
    attempt('list_other_child', lambda: os.listdir(T['other_dir']))
    attempt('read_other_child_log', lambda: read(os.path.join(T['other_dir'], 'redis.log')))
    attempt('list_sandbox_root', lambda: os.listdir(os.path.dirname(own)))
    attempt('signal_pipelab', lambda: os.kill(ppid, 0))
    attempt('sigcont_pipelab', lambda: os.kill(ppid, signal.SIGCONT))
    attempt('open_pipelab_mem', lambda: os.close(os.open('/proc/%d/mem' % ppid, os.O_RDONLY)))
    attempt('read_pipelab_environ', lambda: read('/proc/%d/environ' % ppid))
    attempt('read_pipelab_cmdline', lambda: read('/proc/%d/cmdline' % ppid))
    attempt('ptrace_other_process', lambda: libc_call('ptrace', 16, T['other_pid'], 0, 0))
    attempt('open_other_process_mem', lambda: os.close(os.open('/proc/%d/mem' % T['other_pid'], os.O_RDONLY)))
    attempt('new_user_namespace', lambda: libc_call('unshare', 0x10000000))
    attempt('raise_file_size_limit', raise_file_size_limit)
    out['environ'] = sorted(os.environ)
    with open(os.path.join(own, 'escape.json'), 'w') as f:
        json.dump(out, f)
os.execv('__REAL__', ['__REAL__'] + args)
"#;
    script.replace("__TARGETS__", &targets.to_string()).replace("__REAL__", real.to_str().unwrap())
}

/// Rewrites `path` in place (same inode: the jail's rule for the
/// redis-server binary names that file).
fn rewrite(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(path).unwrap();
    std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
}

#[tokio::test]
async fn a_taken_over_child_reaches_nothing_but_its_own_directory() {
    let real = system_redis_server();
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("redis-server-stand-in");
    std::fs::write(&bin, stand_in(&Json::Null, &real)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    // What the taken-over child aims at, all pipelab's user's: a Unix socket
    // and a TCP port that listen, a UDP port and a Unix datagram socket, an
    // abstract socket, a file to read and a place to write.
    let unix = std::os::unix::net::UnixListener::bind(t.path().join("outside.sock")).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dgram = std::os::unix::net::UnixDatagram::bind(t.path().join("outside.dgram")).unwrap();
    let abstract_name = format!("pipelab-jail-test-{}", std::process::id());
    let abstract_addr = <std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(abstract_name.as_bytes()).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&abstract_addr).unwrap();
    for l in [&unix, &abstract_listener] {
        l.set_nonblocking(true).unwrap();
    }
    tcp.set_nonblocking(true).unwrap();
    udp.set_nonblocking(true).unwrap();
    dgram.set_nonblocking(true).unwrap();
    let secret = t.path().join("secret");
    std::fs::write(&secret, "a token").unwrap();
    let outside_file = t.path().join("escaped");
    // Another process of pipelab's user to attach to (not pipelab: an attach that worked would stop it).
    let mut other_process = std::process::Command::new("sleep").arg("60").stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();

    let app = App::sandboxed(Settings { redis_server: bin.to_str().unwrap().into(), spares: 0, ..Settings::default() }, &["--batch-timeout-ms", "5000"]);
    let jail = sandbox(&app).jail().describe();
    assert!(jail.starts_with("landlock abi") && jail.contains("seccomp") && jail.contains("no_new_privs"), "this test needs Landlock and seccomp in the kernel: the jail here is {jail}");
    // B, a visitor whose Redis the attacker aims at.
    let mut b = Visitor::at("10.0.0.2");
    let (s, r) = b.batch(&app, "SET secret mine").await;
    assert_eq!((s, replies(&r)), (200, vec![json!("OK")]), "{r}");
    let other = b.child(&app);
    let targets = json!({
        "other_socket": other.process.socket,
        "other_dir": other.process.dir(),
        "unix": t.path().join("outside.sock"),
        "unix_dgram": t.path().join("outside.dgram"),
        "abstract": abstract_name,
        "tcp": tcp.local_addr().unwrap().port(),
        "udp": udp.local_addr().unwrap().port(),
        "outside_file": outside_file,
        "secret": secret,
        "other_pid": other_process.id(),
    });
    rewrite(&bin, &stand_in(&targets, &real));

    // A, the attacker: their child is started now, from the hostile stand-in.
    let mut a = Visitor::at("10.0.0.1");
    let (s, r) = a.batch(&app, "PING\nSET k v\nGET k\nGET secret").await;
    assert_eq!((s, replies(&r)), (200, vec![json!("PONG"), json!("OK"), json!("v"), Json::Null]), "the attacker is still served, on a Redis of their own: {r}");
    let mine = a.child(&app);
    let report = std::fs::read_to_string(mine.process.dir().join("escape.json")).expect("the stand-in ran and wrote its report");
    // An attach that worked left it stopped: it goes before anything is asserted.
    let _ = other_process.kill();
    let _ = other_process.wait();
    let mut outcomes: BTreeMap<String, Json> = serde_json::from_str(&report).unwrap();
    eprintln!("jail: {jail}\nattempts: {outcomes:?}");
    let environ = outcomes.remove("environ").unwrap();
    assert_eq!(outcomes.remove("own_dir"), Some(json!("ok")), "the child writes, renames and reads in its own directory");
    let escaped: Vec<_> = outcomes.iter().filter(|(_, v)| !v.as_str().is_some_and(|v| v.starts_with('E'))).collect();
    assert!(escaped.is_empty(), "ways out that worked, or were not tried (an errno is a refusal): {escaped:?} (all: {outcomes:?})");
    assert_eq!(outcomes.len(), 21, "every attempt was made: {outcomes:?}");
    // Nothing reached the other side either.
    assert!(!outside_file.exists(), "a file was written outside the child's directory");
    assert!(unix.accept().is_err() && abstract_listener.accept().is_err() && tcp.accept().is_err(), "something connected");
    let mut buf = [0u8; 16];
    assert!(udp.recv(&mut buf).is_err() && dgram.recv(&mut buf).is_err(), "a datagram arrived");
    assert!(environ.as_array().unwrap().iter().all(|k| ["PATH", "LANG", "LC_ALL", "LC_COLLATE", "LC_CTYPE", "TZ"].contains(&k.as_str().unwrap())), "pipelab's environment reached the child: {environ}");
    // B is served as before, their key theirs.
    let (s, r) = b.batch(&app, "GET secret").await;
    assert_eq!((s, replies(&r)), (200, vec![json!("mine")]), "{r}");
    let mut log = String::new();
    std::fs::File::open(mine.process.dir().join("redis.log")).unwrap().read_to_string(&mut log).unwrap();
    assert!(!log.contains("Permission denied") && !log.contains("Operation not permitted"), "the jailed redis-server met a refusal: {log}");
}

/// A jailed redis-server (the one on PATH) does all a visitor asks: data
/// commands, Lua, functions, INFO with its resident memory (read from its
/// own `/proc/<pid>`), and writes nothing but its log.
#[tokio::test]
async fn a_jailed_redis_server_serves_a_visitor_as_before() {
    let app = App::sandboxed(Settings { spares: 1, ..Settings::default() }, &["--batch-timeout-ms", "5000"]);
    let jail = sandbox(&app).jail().describe();
    assert!(jail.starts_with("landlock abi") && jail.contains("seccomp"), "this test needs Landlock and seccomp in the kernel: the jail here is {jail}");
    let mut v = Visitor::at("10.0.0.3");
    let text = "PING\nSET k 1\nINCR k\nHSET h f v\nHGET h f\nRPUSH l a b\nLRANGE l 0 -1\nEVAL \"return redis.call('INCR', KEYS[1])\" 1 k\nSCRIPT LOAD \"return 7\"";
    let (s, r) = v.batch(&app, text).await;
    assert_eq!(s, 200, "{r}");
    let got = replies(&r);
    assert_eq!(got[..8], [json!("PONG"), json!("OK"), json!(2), json!(1), json!("v"), json!(2), json!(["a", "b"]), json!(3)], "{r}");
    let sha = got[8].as_str().unwrap().to_string();
    let (s, r) = v.batch(&app, &format!("EVALSHA {sha} 0\nINFO memory")).await;
    assert_eq!(s, 200, "{r}");
    let got = replies(&r);
    assert_eq!(got[0], json!(7), "{r}");
    let rss_of = |info: &str| -> u64 { info.lines().find_map(|l| l.strip_prefix("used_memory_rss:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0) };
    let mut info = got[1].as_str().unwrap_or_else(|| panic!("INFO's text: {r}")).to_string();
    // Redis reads its resident memory in its cron (every 100 ms): a child
    // started moments ago may not have read it yet.
    for _ in 0..20 {
        if rss_of(&info) > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let (s, r) = v.batch(&app, "INFO memory").await;
        assert_eq!(s, 200, "{r}");
        info = replies(&r)[0].as_str().unwrap_or_else(|| panic!("INFO's text: {r}")).to_string();
    }
    assert!(rss_of(&info) > 0, "the jailed redis-server reads its own resident memory: {info}");
    let child = v.child(&app);
    let files: Vec<String> = std::fs::read_dir(child.process.dir()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let mut log = String::new();
    std::fs::File::open(child.process.dir().join("redis.log")).unwrap().read_to_string(&mut log).unwrap();
    assert!(!log.contains("Permission denied") && !log.contains("Operation not permitted"), "the jailed redis-server met a refusal ({files:?}): {log}");
}

/// In its own directory a jailed redis-server saves its keys (a temporary
/// file renamed to `dump.rdb`, the directory synced) and loads them again:
/// what hibernation needs. The stand-in adds a user that may SAVE and DEBUG.
#[tokio::test]
async fn a_jailed_redis_server_saves_and_loads_in_its_own_directory() {
    let real = system_redis_server();
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("redis-server-saver");
    let script = format!("#!/bin/sh\nexec {} \"$@\" --enable-debug-command yes --user saver on '>pw' '+save' '+debug' '+ping'\n", real.display());
    std::fs::write(&bin, script).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let app = App::sandboxed(Settings { redis_server: bin.to_str().unwrap().into(), spares: 0, ..Settings::default() }, &["--batch-timeout-ms", "5000"]);
    assert!(sandbox(&app).jail().describe().starts_with("landlock abi"), "this test needs Landlock: {}", sandbox(&app).jail().describe());
    let mut v = Visitor::at("10.0.0.4");
    let (s, r) = v.batch(&app, "SET kept 42").await;
    assert_eq!((s, replies(&r)), (200, vec![json!("OK")]), "{r}");
    let child = v.child(&app);
    let ask = |cmds: &[&[&str]]| -> Vec<String> {
        use std::io::{BufRead, BufReader, Write};
        let s = std::os::unix::net::UnixStream::connect(&child.process.socket).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let mut w = s.try_clone().unwrap();
        let mut r = BufReader::new(s);
        cmds.iter()
            .map(|argv| {
                let mut out = format!("*{}\r\n", argv.len());
                for a in *argv {
                    out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
                }
                w.write_all(out.as_bytes()).unwrap();
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                line.trim_end().to_string()
            })
            .collect()
    };
    assert_eq!(ask(&[&["AUTH", "saver", "pw"], &["SAVE"], &["DEBUG", "RELOAD"]]), ["+OK", "+OK", "+OK"]);
    assert!(child.process.dir().join("dump.rdb").is_file(), "dump.rdb in the child's directory");
    let (s, r) = v.batch(&app, "GET kept").await;
    assert_eq!((s, replies(&r)), (200, vec![json!("42")]), "the keys came back from the file: {r}");
}

/// A stand-in that tries to connect to each Unix socket of `targets` and,
/// where it gets in, writes a key there (`pwned`); each outcome (`ok` or
/// the errno's name) goes to `escape.json` in its own directory. Then it
/// becomes `real`.
fn prober(targets: &[PathBuf], real: &Path) -> String {
    let script = r#"#!/usr/bin/python3 -I
import errno, json, os, socket, sys
T = json.loads(r'''__TARGETS__''')
args = sys.argv[1:]
own = args[args.index('--dir') + 1]
out = {}
for path in T:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        s.connect(path)
        s.sendall(b'*3\r\n$3\r\nSET\r\n$5\r\npwned\r\n$' + str(len(own)).encode() + b'\r\n' + own.encode() + b'\r\n')
        s.recv(64)
        s.close()
        out[path] = 'ok'
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, str(e.errno))
with open(os.path.join(own, 'escape.json'), 'w') as f:
    json.dump(out, f)
os.execv('__REAL__', ['__REAL__'] + args)
"#;
    script.replace("__TARGETS__", &json!(targets).to_string()).replace("__REAL__", real.to_str().unwrap())
}

/// The child `pid` in `dir` was jailed: every connect the prober tried was
/// refused, and the kernel shows its seccomp filter and `no_new_privs`.
fn assert_jailed(pid: u32, dir: &Path, targets: usize, path: &str) {
    let report = std::fs::read_to_string(dir.join("escape.json")).unwrap_or_else(|e| panic!("{path}: the prober ran and wrote its report ({e})"));
    let outcomes: BTreeMap<String, String> = serde_json::from_str(&report).unwrap();
    assert_eq!(outcomes.len(), targets, "{path}: every connect was tried: {outcomes:?}");
    assert!(outcomes.values().all(|o| o.starts_with('E')), "{path}: a child connected to another's socket: {outcomes:?}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string()).unwrap_or_default();
    assert_eq!((field("Seccomp:"), field("NoNewPrivs:")), ("2".to_string(), "1".to_string()), "{path}: the kernel's account of child {pid}");
}

/// A child started from a thread of its own (not the supervisor's, and
/// with no jail set anywhere but the start's argument) is jailed: the jail
/// goes with each start, never with the thread that starts it.
#[test]
fn a_child_started_from_any_thread_is_jailed() {
    use pipelab_engine::sandbox::child::Process;
    use pipelab_engine::sandbox::Jail;
    let real = system_redis_server();
    let t = tempfile::tempdir().unwrap();
    let victim = std::os::unix::net::UnixListener::bind(t.path().join("victim.sock")).unwrap();
    victim.set_nonblocking(true).unwrap();
    let bin = t.path().join("prober");
    std::fs::write(&bin, prober(&[t.path().join("victim.sock")], &real)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let jail = Arc::new(Jail::probe(bin.to_str().unwrap()).expect("this test needs Landlock or seccomp in the kernel"));
    assert!(jail.seccomp, "this test needs seccomp: {}", jail.describe());
    let root = tempfile::tempdir().unwrap();
    let started = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let p = Process::start(bin.to_str().unwrap(), root.path(), 16 << 20, &jail).await.expect("a child");
            assert_jailed(p.pid, p.dir(), 1, "a start on a thread of its own");
            p.stop("shutdown");
            p.ended().await;
        });
    });
    started.join().expect("the child was jailed");
    assert!(victim.accept().is_err(), "something connected to the victim's socket");
}

/// Every way the sandbox starts a child gives a jailed one: the first
/// child, warm spares, children started on demand for a burst of new
/// visitors, the readiness probe's spare, a returning hibernated visitor's,
/// and the one that replaces a child killed under its visitor. Each is a
/// prober that tries to connect to another sandbox's child (a visitor's
/// real redis-server) and to a socket of the test's; none gets in, and the
/// other visitor's keyspace holds their key only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_child_is_jailed_whichever_path_started_it() {
    use std::time::Duration;
    let real = system_redis_server();
    let t = tempfile::tempdir().unwrap();
    // The victim: a visitor of another sandbox in this process (same user).
    let other = App::sandboxed(Settings { spares: 0, ..Settings::default() }, &["--batch-timeout-ms", "5000"]);
    let mut v = Visitor::at("10.9.0.1");
    let (s, r) = v.batch(&other, "SET mine 1").await;
    assert_eq!((s, replies(&r)), (200, vec![json!("OK")]), "{r}");
    let victim = v.child(&other).process.socket.clone();
    let listener = std::os::unix::net::UnixListener::bind(t.path().join("outside.sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let targets = [victim, t.path().join("outside.sock")];
    let bin = t.path().join("prober");
    std::fs::write(&bin, prober(&targets, &real)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();

    let settings = Settings { redis_server: bin.to_str().unwrap().into(), spares: 2, hibernate_after: Duration::from_secs(3600), ..Settings::default() };
    let app = App::sandboxed(settings, &["--batch-timeout-ms", "5000"]);
    let sup = sandbox(&app).clone();
    assert!(sup.jail().seccomp, "this test needs seccomp in the kernel: the jail here is {}", sup.jail().describe());
    let mut checked = std::collections::BTreeSet::new();
    let mut check = |child: &pipelab_engine::sandbox::Child, path: &str| {
        assert_jailed(child.process.pid, child.process.dir(), targets.len(), path);
        checked.insert(child.process.pid);
    };
    assert!(sandbox_client::until(Duration::from_secs(30), || sup.spares() >= 2).await, "two warm spares");
    // The first child and a warm spare, taken by new visitors.
    let mut a = Visitor::at("10.9.1.1");
    let (s, r) = a.batch(&app, "SET k a").await;
    assert_eq!(s, 200, "{r}");
    check(&a.child(&app), "a warm spare");
    let mut b = Visitor::at("10.9.1.2");
    let (s, r) = b.batch(&app, "SET k b").await;
    assert_eq!(s, 200, "{r}");
    check(&b.child(&app), "the first child");
    // A burst of new visitors: past the spares, children started on demand.
    let burst = (0..6).map(|i| {
        let app = &app;
        async move {
            let mut c = Visitor::at(&format!("10.9.2.{}", i + 1));
            let (s, r) = c.batch(app, "PING").await;
            assert_eq!(s, 200, "{r}");
            c
        }
    });
    for c in futures_util::future::join_all(burst).await {
        check(&c.child(&app), "a burst's child");
    }
    // The readiness probe's spare (started at once when none is left).
    let spare = sup.spare().await.expect("a spare");
    check(&spare, "the readiness probe's spare");
    drop(spare);
    // A returning hibernated visitor: a child started on their saved keys.
    assert!(sup.hibernate_now(&a.id()).await, "A hibernates");
    let (s, r) = a.batch(&app, "GET k").await;
    assert_eq!((s, replies(&r)), (200, vec![json!("a")]), "A's keys came back: {r}");
    check(&a.child(&app), "a returning hibernated visitor's");
    // A child killed under its visitor: the one that replaces it.
    let dead = b.child(&app).process.pid;
    // SAFETY: kill(2) on a child of this test's process.
    unsafe { libc::kill(dead as i32, libc::SIGKILL) };
    assert!(sandbox_client::until(Duration::from_secs(10), || !b.child(&app).is_alive()).await, "the killed child ended");
    let mut served = false;
    for _ in 0..3 {
        let (s, r) = b.batch(&app, "PING").await;
        if s == 200 && replies(&r) == vec![json!("PONG")] {
            served = true;
            break;
        }
    }
    assert!(served, "B is served again after their Redis was killed");
    let restarted = b.child(&app);
    assert_ne!(restarted.process.pid, dead);
    check(&restarted, "a restart after a crash");
    assert!(checked.len() >= 11, "children checked: {checked:?}");
    // Nothing reached the victims.
    assert!(listener.accept().is_err(), "something connected to the test's socket");
    let (s, r) = v.batch(&other, "DBSIZE\nEXISTS pwned").await;
    assert_eq!((s, replies(&r)), (200, vec![json!(1), json!(0)]), "the other visitor's keyspace: {r}");
    eprintln!("{} children checked, each jailed: {}", checked.len(), sup.jail().describe());
}

/// A measurement, not a check (hence ignored): how long a child takes from
/// its start to its first PONG with the jail and without, alternated so
/// that both meet the same machine load. docs/sandbox.md has the figures:
/// `cargo test --release -p pipelab-server --test sandbox_jail -- --ignored --nocapture start_cost`
#[tokio::test]
#[ignore]
async fn start_cost() {
    use pipelab_engine::sandbox::child::Process;
    use pipelab_engine::sandbox::Jail;
    let root = tempfile::tempdir().unwrap();
    let jailed = Arc::new(Jail::probe("redis-server").expect("a jail on this machine"));
    let none = Arc::new(Jail::none());
    let rounds: usize = std::env::var("PIPELAB_START_COST_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(40);
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..2 * rounds {
        let on = i % 2 == 0;
        let started = std::time::Instant::now();
        let p = Process::start("redis-server", root.path(), 16 << 20, if on { &jailed } else { &none }).await.expect("a child");
        let took = started.elapsed().as_secs_f64() * 1000.0;
        p.stop("shutdown");
        p.ended().await;
        if on { with.push(took) } else { without.push(took) }
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v.iter().sum::<f64>() / v.len() as f64, v[v.len() * 9 / 10])
    };
    let (m1, a1, p1) = stats(&mut with);
    let (m0, a0, p0) = stats(&mut without);
    eprintln!("start to PONG, {rounds} starts each: jailed ({}) median {m1:.2} ms, mean {a1:.2} ms, p90 {p1:.2} ms; unjailed median {m0:.2} ms, mean {a0:.2} ms, p90 {p0:.2} ms", jailed.describe());
}
