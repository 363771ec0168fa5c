//! Where the keys are in a command's argv, as the server says (`COMMAND`:
//! each entry's first-key position, element 4 of the reply, and for
//! container commands such as `OBJECT` the entries of their subcommands,
//! element 10, named `object|encoding`). The doctor reduces only the argument
//! at that position to a pattern ([`super::pattern`]); no other argument
//! (values, AUTH passwords) is ever looked at.
//!
//! Without the table (the upstream refused `COMMAND`, e.g. an ACL user
//! without it), commands are grouped by name only.

use std::collections::HashMap;

use resp::Value;

/// One command's key rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Entry {
    /// argv index of the first key; 0: the command takes no key.
    first_key: usize,
    /// Subcommands by lower-case name (`kill` of `client|kill`).
    subcommands: HashMap<String, usize>,
}

/// The key positions of every command the server knows.
#[derive(Debug, Clone, Default)]
pub struct KeyTable {
    commands: HashMap<String, Entry>,
}

fn text(v: &Value) -> Option<String> {
    match v.unattributed() {
        Value::Bulk(b) | Value::Simple(b) | Value::Verbatim { text: b, .. } => Some(String::from_utf8_lossy(b).to_ascii_lowercase()),
        _ => None,
    }
}

fn items(v: &Value) -> Option<&[Value]> {
    match v.unattributed() {
        Value::Array(a) | Value::Set(a) => Some(a),
        _ => None,
    }
}

/// (name, first key) of one `COMMAND` entry.
fn entry_head(v: &Value) -> Option<(String, usize)> {
    let e = items(v)?;
    let name = text(e.first()?)?;
    let first = match e.get(3)?.unattributed() {
        Value::Integer(n) if *n > 0 => *n as usize,
        _ => 0,
    };
    Some((name, first))
}

impl KeyTable {
    /// The table from a `COMMAND` reply; entries it cannot read are left out.
    pub fn from_command_reply(reply: &Value) -> KeyTable {
        let mut commands = HashMap::new();
        for v in items(reply).unwrap_or(&[]) {
            let Some((name, first_key)) = entry_head(v) else { continue };
            let mut subcommands = HashMap::new();
            if let Some(subs) = items(v).and_then(|e| e.get(9)).and_then(items) {
                for s in subs {
                    if let Some((full, first)) = entry_head(s) {
                        let sub = full.split_once('|').map_or(full.as_str(), |(_, s)| s).to_string();
                        subcommands.insert(sub, first);
                    }
                }
            }
            commands.insert(name, Entry { first_key, subcommands });
        }
        KeyTable { commands }
    }

    /// True when the table holds no command (no `COMMAND` reply).
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty()
    }

    /// The command's name as shown (`CLIENT KILL` for a subcommand the table
    /// knows) and the argv index of its first key, if it has one.
    pub fn name_and_key(&self, argv: &[Vec<u8>]) -> (String, Option<usize>) {
        let name = super::pattern::command_name(argv.first().map_or(&[][..], |a| a.as_slice()));
        let Some(entry) = self.commands.get(&name.to_ascii_lowercase()) else {
            return (name, None);
        };
        if !entry.subcommands.is_empty() {
            if let Some(sub) = argv.get(1).map(|s| String::from_utf8_lossy(s).to_ascii_lowercase()) {
                if let Some(&first) = entry.subcommands.get(&sub) {
                    let shown = format!("{name} {}", super::pattern::command_name(sub.as_bytes()));
                    return (shown, (first > 0 && first < argv.len()).then_some(first));
                }
            }
        }
        let first = entry.first_key;
        (name, (first > 0 && first < argv.len()).then_some(first))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::Bulk(s.as_bytes().to_vec())
    }
    fn entry(name: &str, first: i64, subs: Vec<Value>) -> Value {
        Value::Array(vec![
            bulk(name),
            Value::Integer(-2),
            Value::Array(vec![]),
            Value::Integer(first),
            Value::Integer(first),
            Value::Integer(1),
            Value::Array(vec![]),
            Value::Array(vec![]),
            Value::Array(vec![]),
            Value::Array(subs),
        ])
    }
    fn argv(args: &[&str]) -> Vec<Vec<u8>> {
        args.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn first_keys_and_subcommands_come_from_the_reply() {
        let reply = Value::Array(vec![
            entry("set", 1, vec![]),
            entry("auth", 0, vec![]),
            entry("object", 0, vec![entry("object|encoding", 2, vec![])]),
        ]);
        let t = KeyTable::from_command_reply(&reply);
        assert_eq!(t.name_and_key(&argv(&["set", "k", "v"])), ("SET".into(), Some(1)));
        assert_eq!(t.name_and_key(&argv(&["AUTH", "secret"])), ("AUTH".into(), None));
        assert_eq!(t.name_and_key(&argv(&["object", "encoding", "k"])), ("OBJECT ENCODING".into(), Some(2)));
        assert_eq!(t.name_and_key(&argv(&["set"])), ("SET".into(), None));
        assert_eq!(t.name_and_key(&argv(&["nosuch", "x"])), ("NOSUCH".into(), None));
        assert!(KeyTable::default().name_and_key(&argv(&["set", "k", "v"])).1.is_none());
    }
}
