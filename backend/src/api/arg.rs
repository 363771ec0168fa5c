//! One command argument as it arrives in JSON: a string, or
//! `{"base64": "..."}` for bytes that are not UTF-8 (docs/reply-json.md#command-arguments),
//! deserialized straight into bytes.
//!
//! Going through `serde_json::Value` first would allocate every argument
//! twice; a 100k-command batch has 300k of them. Errors carry their API
//! error code inside the serde message ([`tagged`]), which
//! [`super::extract`] unpacks, so that a number argument is
//! `invalid_argument` and bad base64 is `invalid_base64`, each naming its
//! JSON path.

use std::fmt;

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use pipelab_http::error::ApiCode;
use pipelab_engine::exec::Commands;

/// Standard alphabet; padding optional, so `"/wAB"` and `"/wA"` both decode.
pub(super) const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Marks a serde error message as carrying an API error code:
/// `\u{1}CODE\u{1}SUFFIX\u{1}message`, where SUFFIX is appended to the JSON
/// path (`.base64`) and may be empty.
const MARK: char = '\u{1}';

/// An argument's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgBytes(pub Vec<u8>);

/// A serde error message tagged with an API error code (see [`untag`]).
pub fn tagged(code: ApiCode, path_suffix: &str, message: impl fmt::Display) -> String {
    format!("{MARK}{}{MARK}{path_suffix}{MARK}{message}", code.name())
}

/// The (code, path suffix, message) of a [`tagged`] message, if it is one.
pub fn untag(message: &str) -> Option<(ApiCode, &str, &str)> {
    let rest = message.strip_prefix(MARK)?;
    let mut parts = rest.splitn(3, MARK);
    Some((ApiCode::from_name(parts.next()?)?, parts.next()?, parts.next()?))
}

fn not_an_argument<E: de::Error>(kind: &str) -> E {
    E::custom(tagged(
        ApiCode::InvalidArgument,
        "",
        format!("an argument must be a string or {{\"base64\": \"...\"}}, not {kind}"),
    ))
}

impl<'de> Deserialize<'de> for ArgBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ArgVisitor)
    }
}

struct ArgVisitor;

impl<'de> Visitor<'de> for ArgVisitor {
    type Value = ArgBytes;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or {\"base64\": \"...\"}")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<ArgBytes, E> {
        Ok(ArgBytes(s.as_bytes().to_vec()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<ArgBytes, E> {
        Ok(ArgBytes(s.into_bytes()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ArgBytes, E> {
        Err(not_an_argument(&format!("a number ({v})")))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ArgBytes, E> {
        Err(not_an_argument(&format!("a number ({v})")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ArgBytes, E> {
        Err(not_an_argument(&format!("a number ({v})")))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ArgBytes, E> {
        Err(not_an_argument(&format!("a boolean ({v})")))
    }

    fn visit_unit<E: de::Error>(self) -> Result<ArgBytes, E> {
        Err(not_an_argument("null"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<ArgBytes, A::Error> {
        Err(not_an_argument("an array"))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ArgBytes, A::Error> {
        let mut bytes = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "base64" && bytes.is_some() {
                return Err(not_an_argument("an object with \"base64\" twice"));
            }
            if key != "base64" {
                return Err(not_an_argument(&format!(
                    "an object with key {key:?} (only \"base64\" is allowed)"
                )));
            }
            let text = map.next_value::<serde_json::Value>()?;
            let serde_json::Value::String(text) = text else {
                return Err(de::Error::custom(tagged(
                    ApiCode::InvalidArgument,
                    ".base64",
                    "must be a base64 string",
                )));
            };
            bytes = Some(BASE64.decode(text.as_bytes()).map_err(|e| {
                de::Error::custom(tagged(
                    ApiCode::InvalidBase64,
                    ".base64",
                    format!("invalid base64: {e}"),
                ))
            })?);
        }
        bytes
            .map(ArgBytes)
            .ok_or_else(|| not_an_argument("an empty object"))
    }
}

/// `commands`: an array of argv arrays, parsed straight into one
/// [`Commands`] buffer (no allocation per command or argument). Errors are
/// those of [`ArgBytes`], at the same JSON paths; an empty argv is kept (the
/// validation names it).
#[derive(Debug, Clone, Default)]
pub struct JsonCommands(pub Commands);

impl<'de> Deserialize<'de> for JsonCommands {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Outer;
        impl<'de> Visitor<'de> for Outer {
            type Value = JsonCommands;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of commands, each an array of arguments")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsonCommands, A::Error> {
                let mut out = Commands::new();
                while seq.next_element_seed(ArgvSeed(&mut out))?.is_some() {}
                Ok(JsonCommands(out))
            }
        }
        d.deserialize_seq(Outer)
    }
}

/// `impl DeserializeSeed` for a seed that is its own visitor, deserialized
/// with `$how` (`deserialize_any`, `deserialize_seq`): a seed that appends
/// to a [`Commands`] buffer in place instead of building a value. Given
/// `$expecting` and the `visit_*` methods too, it writes the seed's
/// `impl Visitor<'de>` (`Value = ()`) around them.
macro_rules! self_seed {
    ($ty:ident, $how:ident) => {
        impl<'de> serde::de::DeserializeSeed<'de> for $ty<'_> {
            type Value = ();
            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.$how(self)
            }
        }
    };
    ($ty:ident, $how:ident, $expecting:literal, { $($visit:tt)* }) => {
        $crate::api::arg::self_seed!($ty, $how);

        impl<'de> serde::de::Visitor<'de> for $ty<'_> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str($expecting)
            }
            $($visit)*
        }
    };
}
pub(crate) use self_seed;

/// One argv array, appended to the buffer as a command.
struct ArgvSeed<'a>(&'a mut Commands);

self_seed!(ArgvSeed, deserialize_seq, "a command: an array of arguments", {
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ArgSeed(self.0))?.is_some() {}
        self.0.end_command();
        Ok(())
    }
});

/// One argument, appended to the command being built.
struct ArgSeed<'a>(&'a mut Commands);

self_seed!(ArgSeed, deserialize_any, "a string or {\"base64\": \"...\"}", {
    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        self.0.push_arg(s.as_bytes());
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        ArgVisitor.visit_i64(v).map(|_| ())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        ArgVisitor.visit_u64(v).map(|_| ())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        ArgVisitor.visit_f64(v).map(|_| ())
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        ArgVisitor.visit_bool(v).map(|_| ())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        ArgVisitor.visit_unit().map(|_| ())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        ArgVisitor.visit_seq(seq).map(|_| ())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let ArgBytes(bytes) = ArgVisitor.visit_map(map)?;
        self.0.push_arg(&bytes);
        Ok(())
    }
});

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<ArgBytes, serde_json::Error> {
        serde_json::from_str::<ArgBytes>(json)
    }

    #[test]
    fn strings_and_base64() {
        assert_eq!(parse(r#""SET""#).unwrap().0, b"SET");
        assert_eq!(parse(r#""\u00e9""#).unwrap().0, "é".as_bytes());
        assert_eq!(parse(r#"{"base64": "/wAB"}"#).unwrap().0, [0xff, 0, 1]);
        assert_eq!(parse(r#"{"base64": "/wA"}"#).unwrap().0, [0xff, 0]);
    }

    #[test]
    fn commands_parse_into_one_buffer() {
        let c: JsonCommands =
            serde_json::from_str(r#"[["SET", "k", {"base64": "/wAB"}], [], ["GET", "\u00e9"]]"#).unwrap();
        assert_eq!(c.0.len(), 3);
        assert_eq!(c.0.get(0).to_vec(), vec![b"SET".to_vec(), b"k".to_vec(), vec![0xff, 0, 1]]);
        assert!(c.0.get(1).is_empty());
        assert_eq!(c.0.get(2).get(1), Some("é".as_bytes()));
        let err = serde_json::from_str::<JsonCommands>(r#"[["SET", 5]]"#).unwrap_err().to_string();
        assert_eq!(untag(&err).map(|(c, _, _)| c), Some(ApiCode::InvalidArgument), "{err}");
    }

    #[test]
    fn errors_carry_their_code() {
        for (json, code, suffix) in [
            ("5", ApiCode::InvalidArgument, ""),
            ("null", ApiCode::InvalidArgument, ""),
            ("[1]", ApiCode::InvalidArgument, ""),
            ("true", ApiCode::InvalidArgument, ""),
            (r#"{"hex": "ff"}"#, ApiCode::InvalidArgument, ""),
            ("{}", ApiCode::InvalidArgument, ""),
            (r#"{"base64": 5}"#, ApiCode::InvalidArgument, ".base64"),
            (r#"{"base64": "!!"}"#, ApiCode::InvalidBase64, ".base64"),
        ] {
            let msg = parse(json).unwrap_err().to_string();
            let (c, s, _) = untag(&msg).unwrap_or_else(|| panic!("{json}: untagged {msg}"));
            assert_eq!((c, s), (code, suffix), "{json}");
        }
    }
}
