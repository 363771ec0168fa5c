//! What a cluster error reply asks of the client (Redis Cluster
//! specification, "Redirection and resharding"): `MOVED slot host:port`
//! (the slot lives elsewhere now: the command did not run; refresh the map
//! and send it there), `ASK slot host:port` (this key is being migrated:
//! send `ASKING` and the command to that node, once, map unchanged),
//! `TRYAGAIN` (a multi-key command during a migration) and `CLUSTERDOWN`
//! (the cluster cannot serve now): wait and send again, a bounded number of
//! times; `READONLY` (the node is a replica now, after a failover): read the
//! map again and send it to the slot's master. None of them ran the command,
//! so following them never executes it twice; a command whose outcome is
//! unknown is never sent again.

use std::time::Duration;

/// Most redirections followed for one command before its last error reply
/// is its result (redis-py and Jedis stop after 5 too).
pub const MAX_REDIRECTIONS: u8 = 5;

/// Most `TRYAGAIN` / `CLUSTERDOWN` retries for one command.
pub const MAX_RETRIES: u8 = 5;

/// What an error reply asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redirect {
    Moved(String),
    Ask(String),
    TryAgain,
    ClusterDown,
    Replica,
}

/// The redirection `reply` asks for, if it is one.
pub fn of(reply: &resp::Value) -> Option<Redirect> {
    let msg = reply.unattributed().error_message()?;
    let word = |w: &[u8]| msg.len() >= w.len() && msg[..w.len()].eq_ignore_ascii_case(w);
    let address = || {
        let text = String::from_utf8_lossy(msg);
        text.split_whitespace().nth(2).map(str::to_string)
    };
    if word(b"MOVED ") {
        address().map(Redirect::Moved)
    } else if word(b"ASK ") {
        address().map(Redirect::Ask)
    } else if word(b"TRYAGAIN") {
        Some(Redirect::TryAgain)
    } else if word(b"CLUSTERDOWN") {
        Some(Redirect::ClusterDown)
    } else if word(b"READONLY") {
        Some(Redirect::Replica)
    } else {
        None
    }
}

/// The wait before retry `n` (1-based): 10 ms, doubled each time (up to 160 ms).
pub fn back_off(n: u8) -> Duration {
    Duration::from_millis(10 << n.saturating_sub(1).min(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> resp::Value {
        resp::Value::Error(s.as_bytes().to_vec())
    }

    #[test]
    fn classifies() {
        assert_eq!(of(&err("MOVED 3999 127.0.0.1:6381")), Some(Redirect::Moved("127.0.0.1:6381".into())));
        assert_eq!(of(&err("ASK 3999 127.0.0.1:6381")), Some(Redirect::Ask("127.0.0.1:6381".into())));
        assert_eq!(of(&err("TRYAGAIN Multiple keys request during rehashing of slot")), Some(Redirect::TryAgain));
        assert_eq!(of(&err("CLUSTERDOWN The cluster is down")), Some(Redirect::ClusterDown));
        assert_eq!(of(&err("READONLY You can't write against a read only replica.")), Some(Redirect::Replica));
        assert_eq!(of(&err("CROSSSLOT Keys in request don't hash to the same slot")), None);
        assert_eq!(of(&resp::Value::Simple(b"MOVED 1 a:1".to_vec())), None, "only error replies");
        assert_eq!(back_off(1), Duration::from_millis(10));
        assert_eq!(back_off(9), Duration::from_millis(160));
    }
}
