//! A command's key specs (Redis 7, `COMMAND`'s `key_specs`), as the
//! server describes them: where the search for keys begins and how keys
//! follow from there. Finding the keys of an argv with them is `keys`.

use resp::Value;

use super::reply::{fields, int, list, text};

/// A key spec's flags (`RO`, `RW`, `OW`, `RM`, `access`, `update`,
/// `insert`, `delete`, `not_key`, `incomplete`, `variable_flags`), as a bit set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyFlags(pub u16);

impl KeyFlags {
    /// Read-only: the command reads the key's value.
    pub const RO: KeyFlags = KeyFlags(1);
    /// Read-write: reads and changes it.
    pub const RW: KeyFlags = KeyFlags(1 << 1);
    /// Overwrite: replaces it without reading.
    pub const OW: KeyFlags = KeyFlags(1 << 2);
    /// Remove: deletes it.
    pub const RM: KeyFlags = KeyFlags(1 << 3);
    /// The value is returned or copied (user data leaves the key).
    pub const ACCESS: KeyFlags = KeyFlags(1 << 4);
    pub const UPDATE: KeyFlags = KeyFlags(1 << 5);
    pub const INSERT: KeyFlags = KeyFlags(1 << 6);
    pub const DELETE: KeyFlags = KeyFlags(1 << 7);
    /// Not a key, though it hashes like one (SPUBLISH's channel).
    pub const NOT_KEY: KeyFlags = KeyFlags(1 << 8);
    /// The spec may miss keys.
    pub const INCOMPLETE: KeyFlags = KeyFlags(1 << 9);
    /// The flags depend on the arguments (e.g. SET with GET).
    pub const VARIABLE_FLAGS: KeyFlags = KeyFlags(1 << 10);

    const NAMES: [(&'static str, KeyFlags); 11] = [
        ("RO", Self::RO),
        ("RW", Self::RW),
        ("OW", Self::OW),
        ("RM", Self::RM),
        ("access", Self::ACCESS),
        ("update", Self::UPDATE),
        ("insert", Self::INSERT),
        ("delete", Self::DELETE),
        ("not_key", Self::NOT_KEY),
        ("incomplete", Self::INCOMPLETE),
        ("variable_flags", Self::VARIABLE_FLAGS),
    ];

    /// The flag named `name` as Redis writes it (`RO`, `access`, …).
    pub fn from_name(name: &str) -> Option<KeyFlags> {
        Self::NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, f)| *f)
    }

    pub fn contains(self, other: KeyFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The names of the flags set, as Redis writes them.
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES.iter().filter(|(_, f)| self.contains(*f)).map(|(n, _)| *n).collect()
    }
}

impl std::ops::BitOr for KeyFlags {
    type Output = KeyFlags;
    fn bitor(self, o: KeyFlags) -> KeyFlags {
        KeyFlags(self.0 | o.0)
    }
}

/// Where the search for a spec's keys begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeginSearch {
    /// At this argument index.
    Index(usize),
    /// After `keyword`, searched from `startfrom` (negative: from the end, backwards).
    Keyword { keyword: String, startfrom: i64 },
    /// Cannot be told from the argv.
    Unknown,
}

/// How keys follow from where the search began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FindKeys {
    /// Up to `lastkey` (relative; negative: from the end, `-1` the last
    /// argument), every `keystep`; `limit` > 1 stops at 1/limit of the rest
    /// (XREAD's keys are the first half after STREAMS).
    Range { lastkey: i64, keystep: usize, limit: i64 },
    /// Argument `keynumidx` (relative) holds the number of keys, which start
    /// at `firstkey` (relative), every `keystep` (EVAL's numkeys).
    Keynum { keynumidx: usize, firstkey: usize, keystep: usize },
    Unknown,
}

/// A map's fields by name.
type Fields<'a> = Vec<(String, &'a Value)>;

/// `{type, spec: {field: value…}}` of a key spec's begin_search / find_keys.
fn typed(v: Option<&Value>) -> Option<(String, Fields<'_>)> {
    let f = fields(v?)?;
    let ty = f.iter().find(|(k, _)| k == "type").and_then(|(_, v)| text(v))?;
    let spec = f.iter().find(|(k, _)| k == "spec").and_then(|(_, v)| fields(v)).unwrap_or_default();
    Some((ty, spec))
}

/// One key spec of a command (`COMMAND INFO`'s `key_specs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    pub flags: KeyFlags,
    pub begin_search: BeginSearch,
    pub find_keys: FindKeys,
    /// Redis's note on the spec, if any.
    pub notes: Option<String>,
}

/// A key spec of a `COMMAND` reply that is not a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a key spec is not a map")]
pub struct KeySpecError;


impl KeySpec {
    /// Parses one key spec of a `COMMAND` reply (RESP2 or RESP3).
    pub fn from_reply(v: &Value) -> Result<KeySpec, KeySpecError> {
        let f = fields(v).ok_or(KeySpecError)?;
        let get = |name: &str| f.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        let flags = get("flags")
            .and_then(list)
            .unwrap_or(&[])
            .iter()
            .filter_map(text)
            .filter_map(|n| KeyFlags::from_name(&n))
            .fold(KeyFlags::default(), |a, b| a | b);
        let num = |spec: &Fields<'_>, name: &str| spec.iter().find(|(k, _)| k == name).and_then(|(_, v)| int(v));
        let begin_search = match typed(get("begin_search")) {
            Some((ty, spec)) if ty == "index" => BeginSearch::Index(num(&spec, "index").unwrap_or(0).max(0) as usize),
            Some((ty, spec)) if ty == "keyword" => BeginSearch::Keyword {
                keyword: spec.iter().find(|(k, _)| k == "keyword").and_then(|(_, v)| text(v)).unwrap_or_default(),
                startfrom: num(&spec, "startfrom").unwrap_or(1),
            },
            _ => BeginSearch::Unknown,
        };
        let find_keys = match typed(get("find_keys")) {
            Some((ty, spec)) if ty == "range" => FindKeys::Range {
                lastkey: num(&spec, "lastkey").unwrap_or(0),
                keystep: num(&spec, "keystep").unwrap_or(1).max(1) as usize,
                limit: num(&spec, "limit").unwrap_or(0),
            },
            Some((ty, spec)) if ty == "keynum" => FindKeys::Keynum {
                keynumidx: num(&spec, "keynumidx").unwrap_or(0).max(0) as usize,
                firstkey: num(&spec, "firstkey").unwrap_or(1).max(0) as usize,
                keystep: num(&spec, "keystep").unwrap_or(1).max(1) as usize,
            },
            _ => FindKeys::Unknown,
        };
        Ok(KeySpec { flags, begin_search, find_keys, notes: get("notes").and_then(text) })
    }

    /// True if this spec cannot find all its keys from the argv.
    pub fn is_incomplete(&self) -> bool {
        self.flags.contains(KeyFlags::INCOMPLETE)
            || self.begin_search == BeginSearch::Unknown
            || self.find_keys == FindKeys::Unknown
    }
}
