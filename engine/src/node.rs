//! This process's node id, the prefix of every id it makes (a sandbox
//! visitor's, a session's, a live batch's: `<node>.<random>`), so that a
//! balancer in front of many nodes routes a request by the prefix alone,
//! and a node tells an id of its own from another node's.

use std::sync::OnceLock;

static NODE: OnceLock<String> = OnceLock::new();

/// The id until [`set`] is called (a library user, an in-process test).
pub const DEFAULT: &str = "local";

/// Longest node id: short enough for a cookie, a file name and a pod's name.
pub const MAX_LEN: usize = 32;

/// Why a node id was refused; each quotes the id as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeIdError {
    #[error("{0:?} is not 1 to {MAX_LEN} characters long")]
    Length(String),
    #[error("{0:?} is not made of a-z, 0-9 and inner '-' only")]
    Characters(String),
    /// Another id was set first: that one.
    #[error("the node id is {0:?} already")]
    AlreadySet(String),
}

/// `id` lowercased if it is a node id: 1 to 32 of `a-z`, `0-9`, `-`, not
/// starting or ending with `-` (safe in a file name, a cookie, an HAProxy
/// server name and a Kubernetes pod's name). Errors: why not.
pub fn check(id: &str) -> Result<String, NodeIdError> {
    let given = id.trim();
    let id = given.to_ascii_lowercase();
    if id.is_empty() || id.len() > MAX_LEN {
        return Err(NodeIdError::Length(given.to_string()));
    }
    if !id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') || id.starts_with('-') || id.ends_with('-') {
        return Err(NodeIdError::Characters(given.to_string()));
    }
    Ok(id)
}

/// Sets this process's node id, once, before any id is made. Errors: `id`
/// is not one ([`check`]), or another was set already.
pub fn set(id: &str) -> Result<(), NodeIdError> {
    let id = check(id)?;
    match NODE.set(id.clone()) {
        Ok(()) => Ok(()),
        Err(_) if NODE.get() == Some(&id) => Ok(()),
        Err(_) => Err(NodeIdError::AlreadySet(NODE.get().map_or("", String::as_str).to_string())),
    }
}

/// This process's node id.
pub fn id() -> &'static str {
    NODE.get().map_or(DEFAULT, String::as_str)
}

/// A new id of this node: `<node>.` and 128 bits from the system's
/// generator as 32 lowercase hex digits. Errors: the generator failed.
pub fn new_id() -> Result<String, ring::error::Unspecified> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes)?;
    let mut id = String::with_capacity(id().len() + 33);
    id.push_str(self::id());
    id.push('.');
    for b in bytes {
        id.push_str(&format!("{b:02x}"));
    }
    Ok(id)
}

/// The node an id of the `<node>.<random>` shape names, if it has it.
pub fn of(id: &str) -> Option<&str> {
    let (node, _) = id.split_once('.')?;
    check(node).ok().filter(|n| n == node).map(|_| node)
}

/// The node `id` belongs to if that is another node, not this one.
pub fn elsewhere(id: &str) -> Option<&str> {
    of(id).filter(|node| *node != self::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_short_safe_tokens() {
        assert_eq!(check("Web-1").unwrap(), "web-1");
        for bad in ["", "-a", "a-", "a.b", "a_b", "a b", "ü", &"a".repeat(33)] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ids_carry_their_node() {
        let id = new_id().unwrap();
        assert_eq!(of(&id), Some(self::id()));
        assert_eq!(elsewhere(&id), None);
        assert_eq!(elsewhere("other-2.00ff"), Some("other-2"));
        assert_eq!(of("no-dot"), None);
        assert_eq!(of("UPPER.1"), None);
    }
}
