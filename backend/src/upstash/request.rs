//! Commands as Upstash's clients send them, parsed into [`Commands`].
//!
//! - JSON: one command `["SET", "k", "v", "EX", 100]` (`POST /`), or an
//!   array of them (`/pipeline`, `/multi-exec`). An argument is a JSON
//!   string (its UTF-8 bytes), a number (its JSON text: `100`, `1.5`) or a
//!   boolean (`true` / `false`), as the SDKs send them (`@upstash/redis`
//!   serializes anything else with `JSON.stringify` first).
//! - Path style: `/set/k/v/EX/100`, each segment percent-decoded (binary
//!   safe); a POST or PUT body, if not empty, is appended as the last
//!   argument, and then the query's parameters, `EX=100` as `EX 100` (a
//!   parameter without value as itself), except `_token` (Upstash's REST
//!   API docs, "JSON or Binary Value").

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};

use super::response::UpstashError;
use pipelab_engine::exec::Commands;

/// One JSON command, appended to `out`.
pub fn json_command(body: &[u8], out: &mut Commands) -> Result<(), UpstashError> {
    parse(body, Shape::One, out)
}

/// A JSON array of commands, appended to `out`.
pub fn json_commands(body: &[u8], out: &mut Commands) -> Result<(), UpstashError> {
    parse(body, Shape::Many, out)
}

#[derive(Clone, Copy)]
enum Shape {
    One,
    Many,
}

fn parse(body: &[u8], shape: Shape, out: &mut Commands) -> Result<(), UpstashError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(UpstashError::bad_request(match shape {
            Shape::One => "ERR empty request body: expected a command as a JSON array, [\"SET\", \"k\", \"v\"]",
            Shape::Many => "ERR empty request body: expected a JSON array of commands, [[\"SET\", \"k\", \"v\"], [\"GET\", \"k\"]]",
        }));
    }
    // The usual shape (strings only) without serde's visitors; anything
    // else, and every error, the ordinary way below.
    if crate::api::incremental::string_commands(body, matches!(shape, Shape::Many), out) {
        return Ok(());
    }
    parse_serde(body, shape, out)
}

/// [`parse`] by serde_json alone.
fn parse_serde(body: &[u8], shape: Shape, out: &mut Commands) -> Result<(), UpstashError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = match shape {
        Shape::One => CommandSeed { out: &mut *out, index: None }.deserialize(&mut de),
        Shape::Many => de.deserialize_seq(ManySeed(&mut *out)),
    };
    parsed.and_then(|()| de.end()).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Data => "bad command",
            _ => "malformed JSON",
        };
        UpstashError::bad_request(format!("ERR {what}: {e}"))
    })
}

/// The commands of a pipeline, each at its index.
struct ManySeed<'a>(&'a mut Commands);

impl<'de> Visitor<'de> for ManySeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array of commands, each an array of arguments")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0;
        while seq.next_element_seed(CommandSeed { out: &mut *self.0, index: Some(i) })?.is_some() {
            i += 1;
        }
        Ok(())
    }
}

/// One command: an array of arguments (`index` in a pipeline, for errors).
struct CommandSeed<'a> {
    out: &'a mut Commands,
    index: Option<usize>,
}

/// Where an error is: `command 3: ` in a pipeline, nothing for one command.
/// Written only for an error (made for every command, it was a tenth of a
/// 10,000-command pipeline's instructions).
fn at(index: Option<usize>) -> String {
    index.map(|i| format!("command {i}: ")).unwrap_or_default()
}

crate::api::arg::self_seed!(CommandSeed, deserialize_any);

impl<'de> Visitor<'de> for CommandSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}a command as an array of arguments", at(self.index))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut j = 0;
        while seq.next_element_seed(ArgSeed { out: &mut *self.out, index: self.index, j })?.is_some() {
            j += 1;
        }
        self.out.end_command();
        Ok(())
    }
}

/// One argument: a string, number or boolean.
struct ArgSeed<'a> {
    out: &'a mut Commands,
    /// The command's index in a pipeline.
    index: Option<usize>,
    j: usize,
}

impl ArgSeed<'_> {
    fn refuse<E: de::Error>(&self, what: &str) -> E {
        E::custom(format!("{}argument {}: {what} is not an argument (give a string, number or boolean)", at(self.index), self.j))
    }
}

crate::api::arg::self_seed!(ArgSeed, deserialize_any, "a string, number or boolean", {
    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        self.out.push_arg(s.as_bytes());
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.out.push_arg(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.out.push_arg(itoa::Buffer::new().format(v).as_bytes());
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // Rust's shortest round-trip form, as JavaScript's `String(n)` for
        // the usual range (`1.5`, `0.1`, `-3`).
        self.out.push_arg(format!("{v}").as_bytes());
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.out.push_arg(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(self.refuse("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.refuse("an array"))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        Err(self.refuse("an object"))
    }
});

/// A path-style command: the path's segments after `skip` bytes (the
/// prefix), percent-decoded, then `body` if not empty, then the query's
/// parameters (without `_token`).
pub fn path_command(path: &str, query: Option<&str>, body: &[u8], out: &mut Commands) -> Result<(), UpstashError> {
    let path = path.strip_prefix('/').unwrap_or(path);
    let path = path.strip_suffix('/').unwrap_or(path);
    if path.is_empty() {
        return Err(UpstashError::bad_request("ERR no command in the path: /COMMAND/arg1/arg2…"));
    }
    for segment in path.split('/') {
        let arg: Vec<u8> = percent_encoding::percent_decode_str(segment).collect();
        out.push_arg(&arg);
    }
    if !body.is_empty() {
        out.push_arg(body);
    }
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = match pair.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (pair, None),
        };
        if k == "_token" {
            continue;
        }
        out.push_arg(&pipelab_http::auth::form_decode(k));
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            out.push_arg(&pipelab_http::auth::form_decode(v));
        }
    }
    out.end_command();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(c: &Commands, i: usize) -> Vec<String> {
        c.get(i).iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect()
    }

    #[test]
    fn json_arguments_as_the_sdks_send_them() {
        let mut c = Commands::new();
        json_command(br#"["SET","k","v","EX",100]"#, &mut c).unwrap();
        assert_eq!(argv(&c, 0), ["SET", "k", "v", "EX", "100"]);
        let mut c = Commands::new();
        json_commands(br#"[["zadd","z",1.5,"m",-3,"n"],["setbit","b",7,true]]"#, &mut c).unwrap();
        assert_eq!(argv(&c, 0), ["zadd", "z", "1.5", "m", "-3", "n"]);
        assert_eq!(argv(&c, 1), ["setbit", "b", "7", "true"]);
        let e = json_commands(br#"[["set","k"],["set",null]]"#, &mut Commands::new()).unwrap_err();
        assert!(e.message.contains("command 1: argument 1: null"), "{}", e.message);
        let e = json_command(br#"["set","k""#, &mut Commands::new()).unwrap_err();
        assert!(e.message.starts_with("ERR malformed JSON"), "{}", e.message);
        assert!(json_command(b"  ", &mut Commands::new()).is_err());
        assert!(json_commands(br#"["set","k"]"#, &mut Commands::new()).is_err());
    }

    /// The strings-only fast path reads what it accepts as serde_json does,
    /// takes the SDKs' usual bodies, and declines (appending nothing) the rest.
    #[test]
    fn fast_path_reads_as_serde() {
        let accepted: &[(&[u8], bool)] = &[
            (br#"["SET","k","v"]"#, false),
            (br#" [ "get" , "k" ] "#, false),
            (br#"[]"#, false),
            (br#"[["set","foo","bar"]]"#, true),
            (br#"[["set","a\"b\\c\/d","\u00e9\n\t"],["get","\ud83d\ude00 h\u00e9llo"],[]]"#, true),
            (b"[\n[\"set\", \"k\", \"caf\xc3\xa9\"] ,[\"incr\",\"n\"]\n]", true),
            (br#"[]"#, true),
        ];
        let declined: &[(&[u8], bool)] = &[
            (br#"["SET","k",1]"#, false),
            (br#"["SET","k",true]"#, false),
            (br#"[["set","k",{"base64":"dg=="}]]"#, true),
            (br#"[["set","k"],["set",null]]"#, true),
            (br#"[["set","k"]"#, true),
            (br#"[["set","k"]] x"#, true),
            (br#"["set","\ud800"]"#, false),
            (b"[\"set\",\"\xff\"]", false),
            (br#"["set","k"]"#, true),
            (br#"[["set","k"]]"#, false),
        ];
        for &(body, many) in accepted {
            let shape = if many { Shape::Many } else { Shape::One };
            let mut fast = Commands::new();
            fast.push(&["earlier"]);
            assert!(crate::api::incremental::string_commands(body, many, &mut fast), "{}", String::from_utf8_lossy(body));
            let mut serde = Commands::new();
            serde.push(&["earlier"]);
            parse_serde(body, shape, &mut serde).unwrap();
            assert_eq!(fast, serde, "{}", String::from_utf8_lossy(body));
        }
        for &(body, many) in declined {
            let mut fast = Commands::new();
            fast.push(&["earlier"]);
            assert!(!crate::api::incremental::string_commands(body, many, &mut fast), "{}", String::from_utf8_lossy(body));
            assert_eq!(fast, Commands::from_iter([vec!["earlier"]]), "nothing appended: {}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn path_style_with_body_and_query() {
        let mut c = Commands::new();
        path_command("/set/a%2Fb/x%00y/", Some("EX=100&NX&_token=t"), b"", &mut c).unwrap();
        assert_eq!(c.get(0).to_vec(), [b"set".to_vec(), b"a/b".to_vec(), b"x\0y".to_vec(), b"EX".to_vec(), b"100".to_vec(), b"NX".to_vec()]);
        let mut c = Commands::new();
        path_command("/set/k", Some("EX=10"), b"{\"a\": 1}", &mut c).unwrap();
        assert_eq!(argv(&c, 0), ["set", "k", "{\"a\": 1}", "EX", "10"]);
        assert!(path_command("/", None, b"", &mut Commands::new()).is_err());
    }
}
