//! What the server says of each command for people: summary, group,
//! complexity and arguments from `COMMAND DOCS` (Redis 7), joined with the
//! arity of the command table, and the syntax line built from the
//! arguments as redis.io writes it (`SET key value [NX | XX] …`). The
//! page's autocompletion, hover and arity check read it
//! (`GET /api/v1/commands`).
//!
//! A server without `COMMAND DOCS` (Redis 6) still gives every command of
//! its table with its arity; the rest is then empty.

use serde::Serialize;

use resp::Value;

use super::command::Command;
use super::table::Table;

/// One command or subcommand, for people.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "SET", "summary": "Set the string value of a key", "since": "1.0.0",
    "group": "string", "complexity": "O(1)", "arity": -3, "syntax": "SET key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]",
    "arguments": [{"name": "key", "type": "key", "optional": false, "multiple": false}]})))]
pub struct CommandDoc {
    /// As people write it: `SET`, `CLIENT KILL`.
    pub name: String,
    pub summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complexity: Option<String>,
    /// Redis's arity (`COMMAND`): `n` exactly n words, `-n` at least n, the
    /// name (and a subcommand's name) included.
    pub arity: i64,
    /// The syntax line built from `arguments`; the name alone when the
    /// server gave no arguments.
    pub syntax: String,
    pub arguments: Vec<ArgDoc>,
    /// A container (`CLIENT`, `CONFIG`): its subcommands are entries of their own.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub container: bool,
}

/// One argument as `COMMAND DOCS` describes it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ArgDoc {
    pub name: String,
    /// `key`, `string`, `integer`, `double`, `pattern`, `unix-time`,
    /// `pure-token`, `oneof` or `block`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The word that introduces it (`EX`), or the token itself for a `pure-token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    /// The token comes again before each repetition (`multiple_token`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub multiple_token: bool,
    /// A `oneof`'s choices or a `block`'s parts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "openapi", schema(no_recursion))]
    pub arguments: Vec<ArgDoc>,
}

/// Every command of `table` (subcommands as entries of their own), sorted
/// by name, with what `docs` (the `COMMAND DOCS` reply, RESP2 or RESP3;
/// `None` or an error: none) says of each.
pub fn docs(table: &Table, docs: Option<&Value>) -> Vec<CommandDoc> {
    let described: Vec<(String, &Value)> = match docs {
        Some(v) => pairs(v).into_iter().filter_map(|(k, v)| Some((text(k)?, v))).collect(),
        None => Vec::new(),
    };
    let find = |name: &str| described.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v);
    let mut out = Vec::new();
    for c in table.iter() {
        let doc = find(&c.name);
        out.push(entry(c, doc));
        // A subcommand's docs are inside its container's (`subcommands`).
        let sub_docs = doc.and_then(|d| field(d, "subcommands"));
        for s in c.subcommands.values() {
            let sd = sub_docs.and_then(|m| pairs(m).into_iter().find(|(k, _)| text(k).is_some_and(|n| n.eq_ignore_ascii_case(&s.name))).map(|(_, v)| v));
            out.push(entry(s, sd));
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn entry(c: &Command, doc: Option<&Value>) -> CommandDoc {
    let name = c.display_name();
    let arguments: Vec<ArgDoc> = doc.and_then(|d| field(d, "arguments")).map(args).unwrap_or_default();
    let mut syntax = name.clone();
    for a in &arguments {
        syntax.push(' ');
        syntax.push_str(&a.syntax(true));
    }
    let str_field = |k: &str| doc.and_then(|d| field(d, k)).and_then(text);
    // A module's command (Redis 8's vector sets are one) comes with only
    // `group module` and the module's name: say so rather than nothing.
    let summary = str_field("summary").or_else(|| {
        let module = str_field("module").filter(|_| str_field("group").as_deref() == Some("module"))?;
        Some(format!("A command of the server's {module} module, which gives no summary or syntax for it"))
    });
    CommandDoc {
        summary: summary.unwrap_or_default(),
        since: str_field("since"),
        group: str_field("group"),
        complexity: str_field("complexity"),
        arity: c.arity,
        syntax,
        arguments,
        container: !c.subcommands.is_empty(),
        name,
    }
}

fn args(v: &Value) -> Vec<ArgDoc> {
    items(v).iter().map(arg).collect()
}

fn arg(v: &Value) -> ArgDoc {
    let s = |k: &str| field(v, k).and_then(text);
    let flags: Vec<String> = field(v, "flags").map(|f| items(f).iter().filter_map(text).collect()).unwrap_or_default();
    let has = |f: &str| flags.iter().any(|x| x == f);
    ArgDoc {
        name: s("name").unwrap_or_default(),
        kind: s("type").unwrap_or_default(),
        token: s("token"),
        optional: has("optional"),
        multiple: has("multiple"),
        multiple_token: has("multiple_token"),
        arguments: field(v, "arguments").map(args).unwrap_or_default(),
    }
}

impl ArgDoc {
    /// As redis.io writes it: `[EX seconds | PX milliseconds]`, `key [key ...]`,
    /// `<ASC | DESC>` for a choice that must be made. `top`: an argument of
    /// the command itself (a nested choice is not bracketed twice).
    fn syntax(&self, top: bool) -> String {
        let inner = match self.kind.as_str() {
            "pure-token" => self.token.clone().unwrap_or_else(|| self.name.to_uppercase()),
            "oneof" => self.arguments.iter().map(|a| a.syntax(false)).collect::<Vec<_>>().join(" | "),
            "block" => self.arguments.iter().map(|a| a.syntax(false)).collect::<Vec<_>>().join(" "),
            _ => self.name.clone(),
        };
        let token = match (&self.token, self.kind.as_str()) {
            (Some(t), k) if k != "pure-token" => format!("{t} "),
            _ => String::new(),
        };
        let one = format!("{token}{inner}");
        let repeated = if self.multiple {
            let again = if self.multiple_token { one.clone() } else { inner.clone() };
            format!("{one} [{again} ...]")
        } else {
            one
        };
        if self.optional {
            format!("[{repeated}]")
        } else if self.kind == "oneof" && (top || !self.multiple) && self.arguments.len() > 1 {
            format!("<{repeated}>")
        } else {
            repeated
        }
    }
}

/// The key/value pairs of a RESP2 flat array or a RESP3 map.
fn pairs(v: &Value) -> Vec<(&Value, &Value)> {
    match v {
        Value::Map(m) => m.iter().map(|(k, v)| (k, v)).collect(),
        Value::Array(a) => a.chunks_exact(2).map(|p| (&p[0], &p[1])).collect(),
        _ => Vec::new(),
    }
}

fn field<'v>(v: &'v Value, name: &str) -> Option<&'v Value> {
    pairs(v).into_iter().find(|(k, _)| text(k).is_some_and(|k| k == name)).map(|(_, v)| v)
}

fn items(v: &Value) -> &[Value] {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        _ => &[],
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Simple(b) | Value::Bulk(b) | Value::Verbatim { text: b, .. } => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::Bulk(s.as_bytes().to_vec())
    }
    fn map(kv: &[(&str, Value)]) -> Value {
        Value::Array(kv.iter().flat_map(|(k, v)| [bulk(k), v.clone()]).collect())
    }
    fn a(name: &str, kind: &str, extra: &[(&str, Value)]) -> Value {
        let mut kv = vec![("name", bulk(name)), ("type", bulk(kind))];
        kv.extend(extra.iter().cloned());
        map(&kv)
    }
    fn flags(f: &[&str]) -> Value {
        Value::Array(f.iter().map(|x| Value::Simple(x.as_bytes().to_vec())).collect())
    }

    #[test]
    fn syntax_lines_read_as_redis_io_writes_them() {
        let set_args = Value::Array(vec![
            a("key", "key", &[]),
            a("value", "string", &[]),
            a("condition", "oneof", &[("flags", flags(&["optional"])), ("arguments", Value::Array(vec![
                a("nx", "pure-token", &[("token", bulk("NX"))]),
                a("xx", "pure-token", &[("token", bulk("XX"))]),
            ]))]),
            a("expiration", "oneof", &[("flags", flags(&["optional"])), ("arguments", Value::Array(vec![
                a("seconds", "integer", &[("token", bulk("EX"))]),
                a("keepttl", "pure-token", &[("token", bulk("KEEPTTL"))]),
            ]))]),
        ]);
        let del_args = Value::Array(vec![a("key", "key", &[("flags", flags(&["multiple"]))])]);
        let sort_args = Value::Array(vec![a("order", "oneof", &[("arguments", Value::Array(vec![
            a("asc", "pure-token", &[("token", bulk("ASC"))]),
            a("desc", "pure-token", &[("token", bulk("DESC"))]),
        ]))])]);
        let get_args = Value::Array(vec![a("pattern", "pattern", &[("token", bulk("GET")), ("flags", flags(&["optional", "multiple", "multiple_token"]))])]);
        let reply = Value::Array(vec![
            bulk("set"), map(&[("summary", bulk("Set the string value of a key")), ("group", bulk("string")), ("arguments", set_args)]),
            bulk("del"), map(&[("summary", bulk("Delete keys")), ("arguments", del_args)]),
            bulk("sort"), map(&[("arguments", sort_args)]),
            bulk("get"), map(&[("arguments", get_args)]),
            bulk("vcard"), map(&[("group", bulk("module")), ("module", bulk("vectorset"))]),
        ]);
        let table = Table::new(
            [("set", -3), ("del", -2), ("sort", -2), ("get", 2), ("ping", -1), ("vcard", -1)].map(|(n, arity)| Command::bare(n, arity, vec![], vec![])),
            None,
        );
        let d = docs(&table, Some(&reply));
        let line = |n: &str| d.iter().find(|c| c.name == n).unwrap().syntax.clone();
        let vcard = d.iter().find(|c| c.name == "VCARD").unwrap();
        assert_eq!((vcard.summary.as_str(), vcard.syntax.as_str()), ("A command of the server's vectorset module, which gives no summary or syntax for it", "VCARD"));
        assert_eq!(line("SET"), "SET key value [NX | XX] [EX seconds | KEEPTTL]");
        assert_eq!(line("DEL"), "DEL key [key ...]");
        assert_eq!(line("SORT"), "SORT <ASC | DESC>");
        assert_eq!(line("GET"), "GET [GET pattern [GET pattern ...]]");
        let set = d.iter().find(|c| c.name == "SET").unwrap();
        assert_eq!((set.summary.as_str(), set.group.as_deref(), set.arity), ("Set the string value of a key", Some("string"), -3));
        // A command the docs do not describe is still there, with its arity.
        let ping = d.iter().find(|c| c.name == "PING").unwrap();
        assert_eq!((ping.syntax.as_str(), ping.arity, ping.summary.as_str()), ("PING", -1, ""));
        assert_eq!(d.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["DEL", "GET", "PING", "SET", "SORT", "VCARD"]);
        // No docs at all (Redis 6): names and arities.
        assert_eq!(docs(&table, None).len(), 6);
    }
}
