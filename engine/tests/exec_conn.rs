//! Connections: Unix socket, AUTH (password and ACL user), SELECT, the
//! client name, TLS (rustls) with a CA made by openssl for the test.

mod common;

use std::path::Path;
use std::process::Command;

use common::{free_port, RedisServer};
use pipelab_engine::conn::{ConnectError, RedisTarget};
use pipelab_engine::exec::{Batch, ExecError, ExecOptions, Report, Status};
use pipelab_model::Mode;
use common::execute;
use resp::Value;

fn batch(lines: &[&str]) -> Batch {
    common::batch(Mode::Pipeline, lines)
}

async fn run(url: &str, lines: &[&str]) -> Result<Report, ExecError> {
    execute(&RedisTarget::parse(url).unwrap(), &batch(lines), &ExecOptions::default()).await
}

fn bulk(s: &str) -> Value {
    Value::Bulk(s.as_bytes().to_vec())
}

#[tokio::test]
async fn unix_socket_select_and_client_name() {
    let server = RedisServer::start();
    let sock = server.socket.display().to_string();
    for url in [sock.clone(), format!("unix://{sock}?db=2"), format!("redis://127.0.0.1:{}/3", server.port)] {
        let r = run(&url, &["CLIENT GETNAME", "SET where here", "CLIENT INFO"]).await.unwrap();
        assert_eq!(r.results[0].reply, Some(bulk("pipelab")), "{url}");
        let Some(Value::Bulk(info)) = &r.results[2].reply else { panic!() };
        let db = RedisTarget::parse(&url).unwrap().db;
        assert!(String::from_utf8_lossy(info).contains(&format!(" db={db} ")), "{url}");
        // The handshake is not part of the batch's counts.
        assert_eq!(r.summary.write_calls, 1);
    }
    assert_eq!(server.cmd_str(&["SELECT", "2"]), Value::Simple(b"OK".to_vec()));
    let Value::Bulk(ks) = server.cmd_str(&["INFO", "keyspace"]) else { panic!() };
    let ks = String::from_utf8(ks).unwrap();
    assert!(ks.contains("db0:keys=1") && ks.contains("db2:keys=1") && ks.contains("db3:keys=1"), "{ks}");
}

#[tokio::test]
async fn auth_with_password_and_acl_user() {
    let server = RedisServer::start_with(&["--requirepass", "p@ss word"]);
    let port = server.port;
    let r = run(&format!("redis://:p%40ss%20word@127.0.0.1:{port}"), &["PING"]).await.unwrap();
    assert_eq!(r.results[0].status, Status::Ok);
    let r = run(&format!("redis://default:p%40ss%20word@127.0.0.1:{port}"), &["ACL WHOAMI"]).await.unwrap();
    assert_eq!(r.results[0].reply, Some(bulk("default")));

    let admin = format!("redis://:p%40ss%20word@127.0.0.1:{port}");
    run(&admin, &["ACL SETUSER alice on >wonder ~* &* +@all"]).await.unwrap();
    for resp3 in [false, true] {
        let mut b = batch(&["ACL WHOAMI"]);
        b.plan.resp3 = resp3;
        let t = RedisTarget::parse(&format!("redis://alice:wonder@127.0.0.1:{port}")).unwrap();
        let r = execute(&t, &b, &ExecOptions::default()).await.unwrap();
        assert_eq!(r.results[0].reply, Some(bulk("alice")), "resp3 {resp3}");
    }
    let e = run(&format!("redis://alice:nope@127.0.0.1:{port}"), &["PING"]).await.unwrap_err();
    // Redis refused: the step and its reply, typed (no retry as the same user helps).
    assert!(matches!(e, ExecError::Connect(ConnectError::Refused { step: "AUTH", ref reply, .. }) if reply.contains("WRONGPASS")), "{e}");
    assert!(matches!(e, ExecError::Connect(ref c) if c.is_refused() && !c.to_string().contains("nope")), "{e}");
    let e = run(&format!("redis://127.0.0.1:{port}"), &["PING"]).await.unwrap();
    // Without credentials the handshake passes (CLIENT SETNAME is not fatal) and commands get NOAUTH.
    assert!(e.results[0].reply.as_ref().unwrap().error_message().unwrap().starts_with(b"NOAUTH"));
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl on PATH (scripts/test-exec.sh installs it)");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA and a server certificate for localhost / 127.0.0.1.
fn make_certs(dir: &Path) {
    openssl(dir, &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=pipelab test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    openssl(dir, &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n").unwrap();
    openssl(dir, &["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt",
        "-days", "2", "-extfile", "ext.cnf"]);
}

#[tokio::test]
async fn tls_with_rustls() {
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let p = |f: &str| certs.path().join(f).display().to_string();
    let tls_port = free_port();
    let tls_port_s = tls_port.to_string();
    let (cert, key, ca) = (p("server.crt"), p("server.key"), p("ca.crt"));
    let started = RedisServer::try_start_with(&[
        "--tls-port", &tls_port_s, "--tls-cert-file", &cert, "--tls-key-file", &key, "--tls-ca-cert-file", &ca, "--tls-auth-clients", "no",
    ]);
    let _server = match started {
        Ok(server) => server,
        // Valkey's PyPI builds: "Missing implement of connection type tls".
        Err(said) if said.to_lowercase().contains("tls") => return common::lacks("tls_with_rustls", "TLS (built without it)"),
        Err(said) => panic!("redis-server with TLS did not start: {said}"),
    };
    for host in ["localhost", "127.0.0.1"] {
        let r = run(&format!("rediss://{host}:{tls_port}/1?tls_ca={ca}"), &["PING", "SET t 1"]).await.unwrap();
        assert_eq!(r.results[0].reply, Some(Value::Simple(b"PONG".to_vec())), "{host}");
    }
    // The test CA is not among the Mozilla roots: verification fails…
    let e = run(&format!("rediss://localhost:{tls_port}"), &["PING"]).await.unwrap_err();
    assert!(matches!(e, ExecError::Connect(ConnectError::Unreachable { ref reason, .. }) if reason.contains("TLS") && reason.contains("certificate")), "{e}");
    // …unless asked not to verify.
    let r = run(&format!("rediss://localhost:{tls_port}#insecure"), &["PING"]).await.unwrap();
    assert_eq!(r.results[0].status, Status::Ok);
    // Through the delay line too.
    let mut b = batch(&["PING"]);
    b.plan.simulated_rtt_ms = 1.0;
    let t = RedisTarget::parse(&format!("rediss://localhost:{tls_port}?tls_ca={ca}")).unwrap();
    let r = execute(&t, &b, &ExecOptions::default()).await.unwrap();
    assert_eq!(r.results[0].status, Status::Ok);
    assert!(r.results[0].reply_us.unwrap() >= 1000);
}

/// A server that accepts the TCP connection and never answers: the connect
/// timeout covers the handshake (and the TLS
/// handshake), so the batch fails after it, not after the read timeout or
/// the batch's deadline.
#[tokio::test]
async fn a_server_that_never_answers_fails_at_the_connect_timeout() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s); // kept open, never written to
        }
    });
    let wait = std::time::Duration::from_secs(20);
    let opts = ExecOptions {
        connect_timeout: std::time::Duration::from_millis(500),
        read_timeout: wait,
        deadline: Some(std::time::Instant::now() + wait),
        ..ExecOptions::default()
    };
    // Plain TCP connects, then the handshake waits; TLS waits in its own handshake, inside the socket's step.
    for (url, handshake) in [(format!("redis://127.0.0.1:{port}"), true), (format!("rediss://127.0.0.1:{port}"), false)] {
        let started = std::time::Instant::now();
        let e = execute(&RedisTarget::parse(&url).unwrap(), &batch(&["PING"]), &opts).await.unwrap_err();
        let took = started.elapsed();
        match e {
            ExecError::Connect(ConnectError::HandshakeTimeout { ms: 500, .. }) if handshake => {}
            ExecError::Connect(ConnectError::SocketTimeout { ms: 500, .. }) if !handshake => {}
            e => panic!("{url}: {e}"),
        }
        assert!(e.to_string().contains("500 ms"), "{url}: {e}");
        // 0.5 s expected; well below the 20 s read timeout even on a loaded machine.
        assert!(took >= std::time::Duration::from_millis(400) && took < std::time::Duration::from_secs(8), "{url}: {took:?}");
    }
    accepted.abort();
}
