//! The built-in table used until the server's is read (and when it cannot
//! be): the handful of commands that must be refused, must keep a
//! connection out of the pool, or run a script (a cut batch's script kill
//! arms on them), even before Redis is reachable, so that a batch validated
//! before its connection opened is held to the same rules. `pipelab doctor`
//! asks it too when its upstream does not answer `COMMAND`.
//!
//! Each line is `name arity flags categories` exactly as Redis 7.0.15's
//! `COMMAND INFO` reports it (`-` for none), subcommands as `container|sub`;
//! no key specs (keys are only looked for with the server's table). A test
//! (`engine/tests/commands_table.rs`) checks every line against the live
//! server.

use std::sync::{Arc, LazyLock};

use super::command::Command;
use super::table::Table;

/// `name arity flags categories`, from Redis 7.0.15.
pub const ENTRIES: &[&str] = &[
    "subscribe -2 pubsub,noscript,loading,stale @pubsub,@slow",
    "psubscribe -2 pubsub,noscript,loading,stale @pubsub,@slow",
    "ssubscribe -2 pubsub,noscript,loading,stale @pubsub,@slow",
    "unsubscribe -1 pubsub,noscript,loading,stale @pubsub,@slow",
    "punsubscribe -1 pubsub,noscript,loading,stale @pubsub,@slow",
    "sunsubscribe -1 pubsub,noscript,loading,stale @pubsub,@slow",
    "monitor 1 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "sync 1 admin,noscript,no_async_loading,no_multi @admin,@slow,@dangerous",
    "psync -3 admin,noscript,no_async_loading,no_multi @admin,@slow,@dangerous",
    "replconf -1 admin,noscript,loading,stale,allow_busy @admin,@slow,@dangerous",
    "multi 1 noscript,loading,stale,fast,allow_busy @fast,@transaction",
    "exec 1 noscript,loading,stale,skip_slowlog @slow,@transaction",
    "discard 1 noscript,loading,stale,fast,allow_busy @fast,@transaction",
    "watch -2 noscript,loading,stale,fast,allow_busy @fast,@transaction",
    "unwatch 1 noscript,loading,stale,fast,allow_busy @fast,@transaction",
    "select 2 loading,stale,fast @fast,@connection",
    "hello -1 noscript,loading,stale,fast,no_auth,allow_busy @fast,@connection",
    "auth -2 noscript,loading,stale,fast,no_auth,allow_busy @fast,@connection",
    "reset 1 noscript,loading,stale,fast,no_auth,allow_busy @fast,@connection",
    "quit -1 noscript,loading,stale,fast,no_auth,allow_busy @fast,@connection",
    "client -2 - @slow",
    "client|setname 3 noscript,loading,stale @slow,@connection",
    "client|caching 3 noscript,loading,stale @slow,@connection",
    "client|tracking -3 noscript,loading,stale @slow,@connection",
    "client|reply 3 noscript,loading,stale @slow,@connection",
    "client|no-evict 3 admin,noscript,loading,stale @admin,@slow,@dangerous,@connection",
    "client|unblock -3 admin,noscript,loading,stale @admin,@slow,@dangerous,@connection",
    "client|trackinginfo 2 noscript,loading,stale @slow,@connection",
    "client|getname 2 noscript,loading,stale @slow,@connection",
    "client|kill -3 admin,noscript,loading,stale @admin,@slow,@dangerous,@connection",
    "client|help 2 loading,stale @slow,@connection",
    "client|getredir 2 noscript,loading,stale @slow,@connection",
    "client|unpause 2 admin,noscript,loading,stale @admin,@slow,@dangerous,@connection",
    "client|pause -3 admin,noscript,loading,stale @admin,@slow,@dangerous,@connection",
    "client|info 2 noscript,loading,stale @slow,@connection",
    "client|id 2 noscript,loading,stale @slow,@connection",
    "client|list -2 admin,noscript,loading,stale @admin,@slow,@dangerous,@connection",
    "readonly 1 loading,stale,fast @fast,@connection",
    "readwrite 1 loading,stale,fast @fast,@connection",
    "asking 1 fast @fast,@connection",
    "shutdown -1 admin,noscript,loading,stale,no_multi,allow_busy @admin,@slow,@dangerous",
    "debug -2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "replicaof 3 admin,noscript,stale,no_async_loading @admin,@slow,@dangerous",
    "slaveof 3 admin,noscript,stale,no_async_loading @admin,@slow,@dangerous",
    "failover -1 admin,noscript,stale @admin,@slow,@dangerous",
    "module -2 - @slow",
    "module|loadex -3 admin,noscript,no_async_loading @admin,@slow,@dangerous",
    "module|load -3 admin,noscript,no_async_loading @admin,@slow,@dangerous",
    "module|help 2 loading,stale @slow",
    "module|list 2 admin,noscript @admin,@slow,@dangerous",
    "module|unload 3 admin,noscript,no_async_loading @admin,@slow,@dangerous",
    "save 1 admin,noscript,no_async_loading,no_multi @admin,@slow,@dangerous",
    "bgsave -1 admin,noscript,no_async_loading @admin,@slow,@dangerous",
    "bgrewriteaof 1 admin,noscript,no_async_loading @admin,@slow,@dangerous",
    "config -2 - @slow",
    "config|rewrite 2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "config|get -3 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "config|resetstat 2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "config|help 2 loading,stale @slow",
    "config|set -4 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl -2 - @slow",
    "acl|list 2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|dryrun -4 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|genpass -2 noscript,loading,stale @slow",
    "acl|load 2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|whoami 2 noscript,loading,stale @slow",
    "acl|cat -2 noscript,loading,stale @slow",
    "acl|setuser -3 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|log -2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|help 2 loading,stale @slow",
    "acl|deluser -3 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|getuser 3 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|users 2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "acl|save 2 admin,noscript,loading,stale @admin,@slow,@dangerous",
    "script -2 - @slow",
    "script|help 2 loading,stale @slow,@scripting",
    "script|debug 3 noscript @slow,@scripting",
    "script|flush -2 noscript @slow,@scripting",
    "script|load 3 noscript,stale @slow,@scripting",
    "script|exists -3 noscript @slow,@scripting",
    "script|kill 2 noscript,allow_busy @slow,@scripting",
    "function -2 - @slow",
    "function|load -3 write,denyoom,noscript @write,@slow,@scripting",
    "function|dump 2 noscript @slow,@scripting",
    "function|kill 2 noscript,allow_busy @slow,@scripting",
    "function|restore -3 write,denyoom,noscript @write,@slow,@scripting",
    "function|delete 3 write,noscript @write,@slow,@scripting",
    "function|help 2 loading,stale @slow,@scripting",
    "function|list -2 noscript @slow,@scripting",
    "function|flush -2 write,noscript @write,@slow,@scripting",
    "function|stats 2 noscript,allow_busy @slow,@scripting",
    "migrate -6 write,movablekeys @keyspace,@write,@slow,@dangerous",
    "blpop -3 write,noscript,blocking @write,@list,@slow,@blocking",
    "brpop -3 write,noscript,blocking @write,@list,@slow,@blocking",
    "bzpopmin -3 write,noscript,blocking,fast @write,@sortedset,@fast,@blocking",
    "bzpopmax -3 write,noscript,blocking,fast @write,@sortedset,@fast,@blocking",
    "blmove 6 write,denyoom,noscript,blocking @write,@list,@slow,@blocking",
    "brpoplpush 4 write,denyoom,noscript,blocking @write,@list,@slow,@blocking",
    "blmpop -5 write,blocking,movablekeys @write,@list,@slow,@blocking",
    "bzmpop -5 write,blocking,movablekeys @write,@sortedset,@slow,@blocking",
    "wait 3 noscript @slow,@connection",
    "xread -4 readonly,blocking,movablekeys @read,@stream,@slow,@blocking",
    "xreadgroup -7 write,blocking,movablekeys @write,@stream,@slow,@blocking",
    "eval -3 noscript,stale,skip_monitor,no_mandatory_keys,movablekeys @slow,@scripting",
    "evalsha -3 noscript,stale,skip_monitor,no_mandatory_keys,movablekeys @slow,@scripting",
    "eval_ro -3 readonly,noscript,stale,skip_monitor,no_mandatory_keys,movablekeys @slow,@scripting",
    "evalsha_ro -3 readonly,noscript,stale,skip_monitor,no_mandatory_keys,movablekeys @slow,@scripting",
    "fcall -3 noscript,stale,skip_monitor,no_mandatory_keys,movablekeys @slow,@scripting",
    "fcall_ro -3 readonly,noscript,stale,skip_monitor,no_mandatory_keys,movablekeys @slow,@scripting",
];

/// The built-in table, borrowed: for a caller that keeps no `Arc`.
pub fn table_ref() -> &'static Table {
    &FALLBACK
}

static FALLBACK: LazyLock<Arc<Table>> = LazyLock::new(|| Arc::new(build()));

/// The built-in table (shared; built once).
pub fn table() -> Arc<Table> {
    FALLBACK.clone()
}

/// Parses one of [`ENTRIES`].
pub fn parse_entry(line: &str) -> Command {
    let mut w = line.split(' ');
    let mut next = || w.next().unwrap_or("-");
    let (name, arity, flags, categories) = (next(), next(), next(), next());
    let words = |s: &str| -> Vec<String> { if s == "-" { Vec::new() } else { s.split(',').map(String::from).collect() } };
    Command::bare(name, arity.parse().unwrap_or(0), words(flags), words(categories))
}

fn build() -> Table {
    let mut top: Vec<Command> = Vec::new();
    for line in ENTRIES {
        let cmd = parse_entry(line);
        match cmd.name.split_once('|') {
            Some((container, sub)) => {
                if let Some(parent) = top.iter_mut().find(|c| c.name == container) {
                    parent.subcommands.insert(sub.as_bytes().into(), cmd);
                }
            }
            None => top.push(cmd),
        }
    }
    for c in &mut top {
        c.reclass();
    }
    Table::new(top, None)
}
