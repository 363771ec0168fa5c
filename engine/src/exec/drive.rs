//! One plan run on a connection: its [`Execution`] made, the plan's mode
//! chosen, the books closed. Above the execution's primitives and the
//! modes that use them.

use super::execution::Execution;
use super::source::{CommandSource, ResultSink, StreamReport};
use super::{auto, pipeline, sequential, transaction, ExecError, ExecOptions, Mode, Plan};
use crate::commands::Table;
use crate::conn::{Conn, RedisTarget};

/// Connects, runs the plan's mode, and closes the books.
pub(crate) async fn connect_and_run_plan<S: CommandSource, K: ResultSink>(
    target: &RedisTarget,
    plan: &Plan,
    source: &mut S,
    sink: &mut K,
    opts: &ExecOptions,
    check: bool,
    table: std::sync::Arc<Table>,
) -> Result<StreamReport<S::Error>, ExecError> {
    let settings = plan.conn_settings(opts);
    let conn = Conn::connect(target, &settings).await?;
    let probe = match plan.server_stats {
        true => Some(super::server::Probe::start(Conn::connect(target, &super::server::side_settings(&settings)).await).await),
        false => None,
    };
    // One execution on either path: each would have its own room in this future.
    let mut r = Execution::new(conn, None, plan, source, sink, check, table, None);
    run_mode(&mut r, plan).await;
    let mut report = r.finish().report;
    if let Some(probe) = probe {
        // pipelab's own: the side connection and the batch's.
        report.summary.server = Some(probe.finish(2).await.0);
    }
    Ok(report)
}

/// Runs the plan's mode on `r` (an [`Execution`] of `plan`); the caller
/// closes the books ([`Execution::finish`]). By reference: an async fn's
/// argument is held twice in its future, and an execution is kilobytes,
/// copied on every batch.
pub(crate) async fn run_mode<S: CommandSource, K: ResultSink>(r: &mut Execution<'_, S, K>, plan: &Plan) {
    match plan.mode {
        Mode::Sequential => sequential::run(r, plan.on_error).await,
        Mode::Pipeline => pipeline::run(r, plan.batch_size, plan.on_error, true).await,
        Mode::Transaction => transaction::run(r, &plan.watch).await,
        Mode::Auto => auto::run(r, plan.clients, plan.window_us, plan.on_error).await,
    }
}

#[cfg(test)]
mod tests {
    //! The first-write fallback of [`Execution::write`], which the pool's probe
    //! hides in integration tests: here a dead connection is handed to the
    //! execution directly. A real redis-server on a Unix socket (free TCP port
    //! too, as every test server), where a write to a closed peer fails at
    //! once with nothing accepted.
    use super::*;
    use crate::exec::source::BatchSource;
    use crate::conn::ConnSettings;
    use crate::exec::{Commands, Prechecked};
    use crate::exec::{OnError, Plan, Status};
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    struct Server {
        child: Child,
        _dir: tempfile::TempDir,
    }
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn start() -> (Server, RedisTarget) {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("r.sock");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--unixsocket")
            .arg(&sock)
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server on PATH");
        for _ in 0..500 {
            if std::os::unix::net::UnixStream::connect(&sock).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let target = RedisTarget::parse(sock.to_str().unwrap()).unwrap();
        (Server { child, _dir: dir }, target)
    }

    async fn one(conn: &mut Conn, argv: &[&str]) -> resp::Value {
        let mut out = Vec::new();
        resp::encode_command(argv, &mut out);
        conn.write(&out).await.unwrap();
        conn.read_reply().await.unwrap().0
    }

    /// A connection killed by Redis (CLIENT KILL), its close already seen.
    async fn dead_conn(target: &RedisTarget, settings: &ConnSettings) -> Conn {
        let mut victim = Conn::connect(target, settings).await.unwrap();
        let resp::Value::Integer(id) = one(&mut victim, &["CLIENT", "ID"]).await else { panic!("CLIENT ID") };
        let mut admin = Conn::connect(target, settings).await.unwrap();
        one(&mut admin, &["CLIENT", "KILL", "ID", &id.to_string()]).await;
        for _ in 0..100 {
            if !victim.probe_idle() {
                // As the pool hands it out: counts zeroed for the new batch.
                victim.prepare_reuse(settings);
                return victim;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the killed connection still looks alive");
    }

    fn plan() -> Plan {
        Plan { on_error: OnError::Continue, ..Plan::default() }
    }

    #[tokio::test]
    async fn the_probe_passes_a_live_connection_and_fails_one_with_bytes_nobody_asked_for() {
        let (_server, target) = start();
        let settings = plan().conn_settings(&ExecOptions::default());
        let mut conn = Conn::connect(&target, &settings).await.unwrap();
        assert_eq!(one(&mut conn, &["PING"]).await, resp::Value::Simple(b"PONG".to_vec()));
        // However often it is probed, a live connection stays whole.
        for _ in 0..3 {
            assert!(conn.probe_idle());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(one(&mut conn, &["ECHO", "whole"]).await, resp::Value::Bulk(b"whole".to_vec()));
        assert!(conn.probe_idle());

        // A message published to a channel it subscribed to arrives unasked.
        one(&mut conn, &["SUBSCRIBE", "news"]).await;
        assert!(conn.probe_idle(), "nothing arrived yet");
        let mut publisher = Conn::connect(&target, &settings).await.unwrap();
        assert_eq!(one(&mut publisher, &["PUBLISH", "news", "hi"]).await, resp::Value::Integer(1));
        for _ in 0..100 {
            if !conn.probe_idle() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("a connection with a message waiting still looks idle");
    }

    /// Commands encoded ahead only in part (the parser fell behind): the
    /// executor writes the encoded ones as they are and encodes the rest,
    /// in every mode, each command once and in order.
    #[tokio::test]
    async fn a_record_encoded_in_part_sends_every_command_once() {
        let (_server, target) = start();
        let commands = Commands::from_iter((0..10).map(|i| vec!["RPUSH".to_string(), "list".into(), i.to_string()]));
        let mut encoded = Vec::new();
        for argv in commands.iter() {
            resp::encode_command(argv, &mut encoded);
        }
        let table = crate::commands::fallback::table();
        for (mode, batch_size) in [(Mode::Pipeline, 3), (Mode::Pipeline, 100), (Mode::Sequential, 1), (Mode::Transaction, 1), (Mode::Auto, 1)] {
            let mut pre = Prechecked::new(table.clone(), 0, usize::MAX);
            for (i, argv) in commands.iter().enumerate() {
                if i == 4 {
                    pre.stop_encoding();
                }
                pre.command(argv);
            }
            let plan = Plan { mode, batch_size, ..plan() };
            let settings = plan.conn_settings(&ExecOptions::default());
            let mut conn = Conn::connect(&target, &settings).await.unwrap();
            one(&mut conn, &["DEL", "list"]).await;
            conn.prepare_reuse(&settings);
            let (mut source, mut results) = (BatchSource::new(&commands), Vec::new());
            let mut r = Execution::new(conn, None, &plan, &mut source, &mut results, false, table.clone(), Some(&pre));
            run_mode(&mut r, &plan).await;
            let ran = r.finish();
            assert!(ran.report.connection_error.is_none(), "{mode:?}: {:?}", ran.report.connection_error);
            assert_eq!(results.iter().filter(|r| r.status == Status::Ok).count(), 10, "{mode:?}");
            if mode != Mode::Transaction {
                assert_eq!(ran.report.summary.bytes_sent, encoded.len() as u64, "{mode:?}");
            }
            let mut check = Conn::connect(&target, &settings).await.unwrap();
            let want: Vec<resp::Value> = (0..10).map(|i| resp::Value::Bulk(i.to_string().into_bytes())).collect();
            assert_eq!(one(&mut check, &["LRANGE", "list", "0", "-1"]).await, resp::Value::Array(want), "{mode:?}");
        }
    }

    #[tokio::test]
    async fn dead_reused_connection_falls_back_before_anything_is_sent() {
        let (_server, target) = start();
        let settings = plan().conn_settings(&ExecOptions::default());
        let commands = Commands::from_iter([vec!["INCR", "n"]]);

        // With the fallback (a pooled connection): the batch runs once, on a fresh connection.
        let dead = dead_conn(&target, &settings).await;
        let (mut source, mut results) = (BatchSource::new(&commands), Vec::new());
        let mut r = Execution::new(dead, Some((&target, &settings)), &plan(), &mut source, &mut results, true, crate::commands::fallback::table(), None);
        run_mode(&mut r, &plan()).await;
        let ran = r.finish();
        assert!(ran.report.connection_error.is_none(), "{:?}", ran.report.connection_error);
        assert_eq!(results[0].status, Status::Ok);
        assert_eq!(results[0].reply, Some(resp::Value::Integer(1)));
        assert!(ran.reusable.is_some(), "the fresh connection ended cleanly");

        // Without it (a connection of the batch's own): not sent, not unknown, never retried.
        let dead = dead_conn(&target, &settings).await;
        let (mut source, mut results) = (BatchSource::new(&commands), Vec::new());
        let mut r = Execution::new(dead, None, &plan(), &mut source, &mut results, true, crate::commands::fallback::table(), None);
        run_mode(&mut r, &plan()).await;
        let ran = r.finish();
        assert_eq!(results[0].status, Status::NotSent);
        assert!(ran.report.connection_error.is_some());
        assert!(ran.reusable.is_none());

        let mut check = Conn::connect(&target, &settings).await.unwrap();
        assert_eq!(one(&mut check, &["GET", "n"]).await, resp::Value::Bulk(b"1".to_vec()), "INCR ran exactly once");
    }
}
