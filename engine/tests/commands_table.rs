//! The command table (`pipelab_engine::commands`) read from a real redis-server:
//! well-known entries pinned (SET writes key 1, MGET reads keys 1..n, EVAL's
//! keys come from numkeys, SORT with BY reaches other keys, MSET's keys
//! step 2, XREAD's keys follow STREAMS), subcommands, tips, key positions
//! checked against the server's own COMMAND GETKEYS, the built-in fallback
//! checked against the server, and a restarted server's table read again.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{batch, RedisServer};
use pipelab_engine::commands::{self, KeyFlags, Table};
use pipelab_engine::conn::RedisTarget;
use pipelab_engine::exec::{Commands, ExecOptions, Pool, PoolConfig};
use pipelab_model::Mode;
use common::execute_pooled;
use pipelab_engine::run::Target;

async fn table_of(server: &RedisServer) -> (Arc<Target>, Arc<Table>) {
    let pool = Target::new(Pool::new(RedisTarget::parse(&server.url).unwrap(), PoolConfig::default()));
    let table = pool.commands_loaded(Duration::from_secs(5)).await;
    assert!(table.identity().is_some(), "the server's table was read");
    (pool, table)
}

fn argv(line: &str) -> Commands {
    Commands::from_iter([resp::split_args(line.as_bytes()).unwrap()])
}

/// Key indexes of `line` from the table's key specs, and whether complete;
/// checks on the way that `first_key` (cluster routing's) is their first.
fn keys(table: &Table, line: &str) -> (Vec<usize>, bool) {
    let c = argv(line);
    let cmd = table.command(c.get(0)).unwrap_or_else(|| panic!("{line}: not in the table"));
    let k = commands::keys(cmd, c.get(0));
    assert_eq!(commands::first_key(cmd, c.get(0)), k.positions.first().copied(), "{line}");
    (k.indexes(), k.complete)
}

#[tokio::test]
async fn well_known_entries() {
    let server = RedisServer::start();
    let (_pool, t) = table_of(&server).await;
    assert!(t.len() > 200, "{} commands", t.len());

    // SET writes key 1.
    let set = t.get(b"SET").unwrap();
    assert!(set.has_flag("write") && !set.has_flag("readonly"));
    assert_eq!(set.arity, -3);
    assert!(set.in_category("@string") && set.in_category("write"));
    let c = argv("SET k v");
    let k = commands::keys(set, c.get(0));
    assert_eq!(k.indexes(), [1]);
    assert!(k.positions[0].flags.contains(KeyFlags::RW) && k.positions[0].flags.contains(KeyFlags::UPDATE), "{:?}", k.positions[0].flags.names());
    assert!(k.complete);

    // MGET reads keys 1..n.
    assert_eq!(keys(&t, "MGET a b c"), (vec![1, 2, 3], true));
    let c = argv("MGET a b");
    assert!(commands::keys(t.get(b"mget").unwrap(), c.get(0)).positions.iter().all(|p| p.flags.contains(KeyFlags::RO)));
    assert!(t.is_readonly(c.get(0)));
    assert!(!t.is_readonly(argv("SET k v").get(0)));

    // EVAL's keys come from numkeys.
    assert_eq!(keys(&t, "EVAL return 2 a b x y"), (vec![3, 4], true));
    assert_eq!(keys(&t, "EVAL return 0 x"), (vec![], true));
    assert!(t.is_readonly(argv("EVAL_RO return 0").get(0)));
    assert!(!t.is_readonly(argv("EVAL return 0").get(0)));
    // A read-only token: flagged readonly; a
    // command the table does not know is refused (fail closed).
    for (cmd, ok) in [("GET k", true), ("EVAL_RO return 0", true), ("CONFIG GET maxmemory", false), ("SET k v", false), ("EVAL return 0", false), ("PING", false), ("NOSUCHCMD", false)] {
        assert_eq!(t.allows_readonly(argv(cmd).get(0)), ok, "{cmd}");
    }

    // SORT with BY reads other keys: the specs say so (incomplete).
    let (positions, complete) = keys(&t, "SORT k BY w_* GET o_*");
    assert_eq!(t.keys(argv("SORT k BY w_*").get(0)).map(|k| k.complete), Some(false));
    assert_eq!(t.keys(argv("NOSUCH k").get(0)), None);
    assert_eq!(positions, [1]);
    assert!(!complete, "SORT … BY is flagged as reaching keys the specs cannot name");

    // MSET's keys step 2; XREAD's come after STREAMS (the first half).
    assert_eq!(keys(&t, "MSET a 1 b 2 c 3"), (vec![1, 3, 5], true));
    assert_eq!(keys(&t, "XREAD COUNT 2 STREAMS s1 s2 0 0"), (vec![4, 5], true));
    assert_eq!(keys(&t, "XREADGROUP GROUP g c STREAMS s >"), (vec![5], true));

    // MIGRATE: incomplete (KEYS may be anywhere), and it reaches another server.
    let (positions, complete) = keys(&t, "MIGRATE h 6379 \"\" 0 1000 KEYS a b");
    assert_eq!(positions, [3, 7, 8]);
    assert!(!complete);
}

#[tokio::test]
async fn subcommands_and_tips() {
    let server = RedisServer::start();
    let (_pool, t) = table_of(&server).await;
    let c = argv("config get maxmemory");
    let get = t.command(c.get(0)).unwrap();
    assert_eq!(get.name, "config|get");
    assert_eq!(get.display_name(), "CONFIG GET");
    for f in ["admin", "noscript", "loading", "stale"] {
        assert!(get.has_flag(f), "CONFIG GET lacks {f}: {:?}", get.flags);
    }
    assert!(get.in_category("@admin") && get.in_category("@dangerous"));
    assert!(t.get(b"client").unwrap().subcommands.len() > 10);
    let kill = t.command(argv("CLIENT KILL ID 1").get(0)).unwrap();
    assert_eq!(kill.name, "client|kill");
    // A subcommand the server lacks: the container answers.
    assert_eq!(t.command(argv("CLIENT NOSUCH").get(0)).unwrap().name, "client");

    let dbsize = t.get(b"dbsize").unwrap();
    assert_eq!(dbsize.request_policy(), Some("all_shards"));
    assert_eq!(dbsize.response_policy(), Some("agg_sum"));
    let keys_cmd = t.get(b"KEYS").unwrap();
    assert_eq!(keys_cmd.request_policy(), Some("all_shards"));
    assert_eq!(keys_cmd.response_policy(), None);
    assert!(keys_cmd.tips.iter().any(|t| t == "nondeterministic_output_order"));
    assert_eq!(t.get(b"GET").unwrap().request_policy(), None);
}

/// The specs' positions are the server's own (COMMAND GETKEYSANDFLAGS)
/// wherever the specs are complete.
#[tokio::test]
async fn key_positions_agree_with_command_getkeys() {
    let server = RedisServer::start();
    let (_pool, t) = table_of(&server).await;
    for line in [
        "SET k v", "GET k", "MGET a b c", "MSET a 1 b 2", "DEL a b", "RENAME a b", "LMOVE a b LEFT RIGHT",
        "EVAL x 2 a b c", "FCALL f 1 a b", "ZUNIONSTORE d 2 a b WEIGHTS 1 2", "ZINTERCARD 2 a b", "LMPOP 2 a b LEFT",
        "XREAD STREAMS a b 0 0", "XADD s * f v", "BITOP AND d a b", "GEOSEARCHSTORE d s FROMLONLAT 0 0 BYRADIUS 1 m",
        "OBJECT ENCODING k", "MEMORY USAGE k", "SINTERCARD 2 a b", "COPY a b", "BLMPOP 1 2 a b LEFT",
    ] {
        let c = argv(line);
        let (positions, complete) = keys(&t, line);
        assert!(complete, "{line}: complete");
        let args: Vec<&[u8]> = commands::getkeys_argv(c.get(0));
        let reply = server.cmd(&args);
        let theirs: Vec<usize> = commands::from_getkeys_reply(c.get(0), &reply).unwrap().iter().map(|p| p.index).collect();
        let mut ours = positions.clone();
        ours.sort();
        ours.dedup();
        let mut theirs_sorted = theirs.clone();
        theirs_sorted.sort();
        assert_eq!(ours, theirs_sorted, "{line}");
    }
    // The fallback for what the specs cannot find: the server's answer.
    let c = argv("SORT k BY w_* STORE d");
    let reply = server.cmd(&commands::getkeys_argv(c.get(0)));
    let found = commands::from_getkeys_reply(c.get(0), &reply).unwrap();
    assert_eq!(found.iter().map(|p| p.index).collect::<Vec<_>>(), [1, 5]);
    assert!(found[1].flags.contains(KeyFlags::OW), "{:?}", found[1].flags.names());
}

/// The built-in fallback gives the rules' answers the server's own table
/// gives, on every server; on the server it was taken from (Redis 7.0),
/// every line is what the server says, field by field (newer servers add
/// flags, such as Valkey's `no_multi` on MULTI, that no rule reads).
#[tokio::test]
async fn the_fallback_agrees_with_the_server() {
    let server = RedisServer::start();
    let (_pool, t) = table_of(&server).await;
    let id = t.identity().unwrap();
    let source = id.server == "redis" && id.version.starts_with("7.0.");
    let fallback = commands::fallback::table();
    for line in commands::fallback::ENTRIES {
        let ours = commands::fallback::parse_entry(line);
        let (top, sub) = match ours.name.split_once('|') {
            Some((top, sub)) => (top, Some(sub)),
            None => (ours.name.as_str(), None),
        };
        let theirs = t.get(top.as_bytes()).unwrap_or_else(|| panic!("{top} not on the server"));
        let theirs = match sub {
            Some(sub) => theirs.subcommands.get(sub.as_bytes()).unwrap_or_else(|| panic!("{} not on the server", ours.name)),
            None => theirs,
        };
        if source {
            assert_eq!((ours.arity, &ours.flags, &ours.acl_categories), (theirs.arity, &theirs.flags, &theirs.acl_categories), "{line}");
        }
        let c = argv(&ours.name.replace('|', " "));
        for mode in [Mode::Pipeline, Mode::Transaction] {
            let live = t.refusal(c.get(0), mode, Default::default(), Default::default());
            let built_in = fallback.refusal(c.get(0), mode, Default::default(), Default::default());
            assert_eq!(live.map(|r| r.reason), built_in.map(|r| r.reason), "{line} {mode:?}");
        }
        assert_eq!(t.changes_connection_state(c.get(0)), fallback.changes_connection_state(c.get(0)), "{line}");
    }
    // And with a few arguments.
    for line in ["SUBSCRIBE c", "MONITOR", "SELECT 1", "CLIENT REPLY OFF", "CONFIG GET x", "SHUTDOWN", "MIGRATE h 1 k 0 1", "BLPOP k 0", "PING", "CLIENT LIST"] {
        let c = argv(line);
        for mode in [Mode::Pipeline, Mode::Transaction] {
            let live = t.refusal(c.get(0), mode, Default::default(), Default::default());
            let built_in = fallback.refusal(c.get(0), mode, Default::default(), Default::default());
            assert_eq!(live, built_in, "{line} {mode:?}");
        }
        assert_eq!(t.changes_connection_state(c.get(0)), fallback.changes_connection_state(c.get(0)), "{line}");
    }
}

#[tokio::test]
async fn a_restarted_server_has_its_table_read_again() {
    let mut server = RedisServer::start();
    let (pool, t) = table_of(&server).await;
    let first = t.identity().unwrap().clone();
    // Reused connections do not ask again.
    execute_pooled(&pool, &batch(Mode::Pipeline, &["PING"]), &ExecOptions::default()).await.unwrap();
    assert!(Arc::ptr_eq(&pool.commands(), &t), "the same server: the same table");

    server.restart();
    let r = execute_pooled(&pool, &batch(Mode::Pipeline, &["SET k v"]), &ExecOptions::default()).await.unwrap();
    assert_eq!(r.summary.ok, 1, "{:?}", r.connection_error);
    // The table's bytes are not the batch's.
    assert!(r.summary.bytes_received < 100, "{}", r.summary.bytes_received);
    let second = pool.commands();
    let id = second.identity().unwrap();
    assert_ne!(id.run_id, first.run_id, "a new run_id: the table was read again");
    assert_eq!(id.version, first.version);
    assert!(second.get(b"set").is_some());
}

/// Read over RESP3 (sets, maps, verbatim INFO), the table is the same.
#[tokio::test]
async fn a_resp3_connection_reads_the_same_table() {
    let server = RedisServer::start();
    let (_pool, resp2) = table_of(&server).await;
    let pool = Target::new(Pool::new(RedisTarget::parse(&server.url).unwrap(), PoolConfig::default()));
    let mut b = batch(Mode::Pipeline, &["PING"]);
    b.plan.resp3 = true;
    execute_pooled(&pool, &b, &ExecOptions::default()).await.unwrap();
    let resp3 = pool.commands();
    assert_eq!(resp3.identity(), resp2.identity());
    assert_eq!(resp3.len(), resp2.len());
    for name in ["set", "xread", "migrate", "config", "sort", "eval"] {
        let (a, b) = (resp2.get(name.as_bytes()).unwrap(), resp3.get(name.as_bytes()).unwrap());
        assert_eq!((&a.flags, &a.acl_categories, &a.tips, &a.key_specs), (&b.flags, &b.acl_categories, &b.tips, &b.key_specs), "{name}");
        assert_eq!(a.subcommands.len(), b.subcommands.len(), "{name}");
    }
}

/// Scripts and functions run by EVAL*/FCALL* are found by the table (the
/// script kill on a cut batch arms on them); SCRIPT/FUNCTION subcommands
/// and plain commands are not.
#[tokio::test]
async fn commands_that_run_scripts() {
    let server = RedisServer::start();
    let (_pool, t) = table_of(&server).await;
    for line in ["EVAL x 0", "evalsha abc 0", "EVAL_RO x 0", "EVALSHA_RO abc 0", "FCALL f 0", "fcall_ro f 0"] {
        assert!(t.runs_script(argv(line).get(0)), "{line}");
    }
    for line in ["SCRIPT KILL", "SCRIPT LOAD x", "FUNCTION KILL", "FUNCTION LOAD x", "GET k", "NOSUCHCOMMAND"] {
        assert!(!t.runs_script(argv(line).get(0)), "{line}");
    }
}

/// `pipelab doctor`'s tracker once kept hand lists of names (commands after
/// which replies are not one per command, connection set-up, scripts, the
/// transaction's steps); it asks the table now. Every command those lists
/// named gets the answer the list gave, from the server's table and from
/// the built-in fallback (the doctor's when its upstream refuses COMMAND).
#[tokio::test]
async fn the_doctors_old_lists_are_the_tables_answers() {
    use commands::TransactionStep::{End, Multi, Unwatch, Watch};
    let server = RedisServer::start();
    let (_pool, live) = table_of(&server).await;
    let fallback = commands::fallback::table();
    for (which, t) in [("server", &*live), ("fallback", &*fallback)] {
        // Was `UNTRACKABLE` (its CLIENT REPLY now only OFF/SKIP: ON answers +OK).
        for line in ["SUBSCRIBE c", "PSUBSCRIBE p*", "SSUBSCRIBE c", "MONITOR", "SYNC", "PSYNC ? -1", "CLIENT REPLY OFF", "client reply skip"] {
            assert!(t.answers_once(argv(line).get(0)).is_err(), "{which}: {line}");
        }
        // Was `STATE_CHANGES`; CLIENT SETINFO and NO-TOUCH are Redis 7.2's:
        // on 7.0 the container CLIENT answers for them.
        for line in [
            "SELECT 0",
            "HELLO 3",
            "AUTH pw",
            "RESET",
            "READONLY",
            "READWRITE",
            "CLIENT SETNAME n",
            "client tracking on",
            "CLIENT SETINFO LIB-NAME x",
            "CLIENT NO-EVICT on",
            "CLIENT NO-TOUCH on",
        ] {
            assert!(t.sets_connection_state(argv(line).get(0)), "{which}: {line}");
        }
        // Was `SCRIPTS`.
        for line in ["EVAL x 0", "EVALSHA abc 0", "EVAL_RO x 0", "evalsha_ro abc 0", "FCALL f 0", "FCALL_RO f 0"] {
            assert!(t.runs_script(argv(line).get(0)), "{which}: {line}");
        }
        // Was a `match` on WATCH, MULTI, EXEC, DISCARD, UNWATCH and RESET.
        for (line, step) in [("MULTI", Multi), ("watch k", Watch), ("UNWATCH", Unwatch), ("EXEC", End), ("DISCARD", End), ("RESET", End)] {
            assert_eq!(t.transaction_step(argv(line).get(0)), Some(step), "{which}: {line}");
        }
        // What none of them named is none of these.
        for line in ["GET k", "SET k v", "PING", "PUBLISH c m", "CLIENT ID", "CLIENT GETNAME", "CLIENT LIST", "CLIENT KILL ID 1", "QUIT", "SCRIPT LOAD x"] {
            let c = argv(line);
            let a = c.get(0);
            let answers = (t.answers_once(a).is_ok(), t.sets_connection_state(a), t.runs_script(a), t.transaction_step(a));
            assert_eq!(answers, (true, false, false, None), "{which}: {line}");
        }
    }
}

/// COMMANDLOG (Valkey 8.1+) shows what SLOWLOG shows, and is classed as it
/// is: GET reveals other clients' arguments (an operator's), LEN only
/// counts (anyone's), RESET administers the server (no token's).
#[tokio::test]
async fn commandlog_is_classed_as_slowlog() {
    use commands::Access;
    let server = RedisServer::start();
    let (_pool, t) = table_of(&server).await;
    if t.get(b"commandlog").is_none() {
        common::lacks("commandlog_is_classed_as_slowlog", "COMMANDLOG");
        return;
    }
    let refused = |line: &str, access| t.refusal(argv(line).get(0), Mode::Pipeline, access, Default::default()).is_some();
    for (log, slow) in [("COMMANDLOG GET 10 slow", "SLOWLOG GET 10"), ("COMMANDLOG LEN slow", "SLOWLOG LEN"), ("COMMANDLOG RESET slow", "SLOWLOG RESET")] {
        for access in [Access::Full, Access::Operator, Access::ReadOnly, Access::Visitor] {
            assert_eq!(refused(log, access), refused(slow, access), "{log} as {access:?}");
        }
    }
    assert!(refused("COMMANDLOG GET 10 slow", Access::Full) && !refused("COMMANDLOG GET 10 slow", Access::Operator));
    assert!(!refused("COMMANDLOG LEN slow", Access::Full));
}
