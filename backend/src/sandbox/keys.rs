//! Rewriting a command's keys into a visitor's namespace: each key the
//! server's key specs locate (`commands::Table::keys`) gets the prefix
//! `sbx:{id}:`, and each pattern a [`Confine`] rule names is confined to
//! it. The argv keeps its length and order, so replies still match
//! commands one for one; `FLUSHDB`/`FLUSHALL` and `DBSIZE` become a script
//! over the namespace's keys with the same reply shape (`+OK`, an integer).

use crate::commands::Table;
use crate::exec::{Argv, ArgvRef};

use super::rules::{self, Confine};

/// Deletes every key of the namespace (`ARGV[1]` is its pattern):
/// `FLUSHDB`/`FLUSHALL` in the sandbox. Answers `+OK` as they do.
pub const FLUSH_SCRIPT: &str = "local c = '0' repeat local r = redis.call('SCAN', c, 'MATCH', ARGV[1], 'COUNT', 1000) c = r[1] \
for _, k in ipairs(r[2]) do redis.call('UNLINK', k) end until c == '0' return redis.status_reply('OK')";

/// Counts the keys of the namespace: `DBSIZE` in the sandbox.
pub const COUNT_SCRIPT: &str = "local c, n = '0', 0 repeat local r = redis.call('SCAN', c, 'MATCH', ARGV[1], 'COUNT', 1000) c = r[1] \
n = n + #r[2] until c == '0' return n";

/// `argv` with its keys in the namespace of `prefix`, or why it is refused
/// in the sandbox (a message naming the command).
pub fn rewrite(table: &Table, argv: ArgvRef<'_>, prefix: &str, scripts_isolated: bool) -> Result<Argv, String> {
    let p = prefix.as_bytes();
    let mut out: Argv = argv.iter().map(<[u8]>::to_vec).collect();
    let display = || table.command(argv).map_or_else(|| String::from_utf8_lossy(argv.name().unwrap_or_default()).to_uppercase(), |c| c.display_name());
    let confine = rules::confine(table, argv, scripts_isolated).map_err(|why| format!("{} is refused in the sandbox: {why}", display()))?;
    let prefixed = |a: &[u8]| [p, a].concat();
    match confine {
        Confine::Keys | Confine::Sort => {
            let Some(keys) = table.keys(argv) else { return Ok(out) };
            if !keys.complete && confine != Confine::Sort {
                return Err(format!(
                    "{} is refused in the sandbox: the server's key specs cannot locate all its keys, so they cannot be kept in your namespace",
                    display()
                ));
            }
            for pos in &keys.positions {
                out[pos.index] = prefixed(&out[pos.index]);
            }
            if confine == Confine::Sort {
                sort_patterns(&mut out, p);
            }
        }
        Confine::Pattern(i) => {
            if let Some(a) = out.get_mut(i) {
                *a = prefixed(a);
            }
        }
        Confine::Scan => {
            let mut matched = false;
            let mut i = 2;
            while i + 1 < out.len() {
                if out[i].eq_ignore_ascii_case(b"match") {
                    out[i + 1] = prefixed(&out[i + 1]);
                    matched = true;
                }
                i += 2;
            }
            if !matched {
                out.push(b"MATCH".to_vec());
                out.push([p, b"*"].concat());
            }
        }
        Confine::Flush | Confine::Count => {
            let script = if confine == Confine::Flush { FLUSH_SCRIPT } else { COUNT_SCRIPT };
            out = vec![b"EVAL".to_vec(), script.as_bytes().to_vec(), b"0".to_vec(), [p, b"*"].concat()];
        }
    }
    Ok(out)
}

/// SORT's `BY` and `GET` patterns, confined (as `sortCommandGeneric` in
/// Redis `src/sort.c` reads them): a `BY` pattern with a `*` names keys (one
/// without is "don't sort"), a `GET` pattern other than `#` names keys.
/// With the prefix in front of the first `*`, every key the pattern can
/// name is in the namespace.
fn sort_patterns(argv: &mut Argv, prefix: &[u8]) {
    let mut i = 2;
    while i < argv.len() {
        let word = argv[i].to_ascii_lowercase();
        match word.as_slice() {
            b"by" if i + 1 < argv.len() => {
                if argv[i + 1].contains(&b'*') {
                    argv[i + 1] = [prefix, &argv[i + 1]].concat();
                }
                i += 2;
            }
            b"get" if i + 1 < argv.len() => {
                if argv[i + 1] != b"#" {
                    argv[i + 1] = [prefix, &argv[i + 1]].concat();
                }
                i += 2;
            }
            b"limit" => i += 3,
            b"store" => i += 2,
            _ => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sort_patterns;

    #[test]
    fn sort_patterns_are_confined() {
        let argv = |s: &str| s.split(' ').map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
        let mut a = argv("SORT l BY w_* LIMIT 0 10 GET # GET o:*->f STORE d ALPHA");
        sort_patterns(&mut a, b"P:");
        assert_eq!(a, argv("SORT l BY P:w_* LIMIT 0 10 GET # GET P:o:*->f STORE d ALPHA"));
        // BY without `*` sorts nothing and names no key.
        let mut a = argv("SORT l BY nosort GET secret");
        sort_patterns(&mut a, b"P:");
        assert_eq!(a, argv("SORT l BY nosort GET P:secret"));
    }
}
