//! The rooms of the `pipelab-server` crate and what each may import
//! (docs/architecture.md): one crate, so the compiler cannot say it; this
//! test reads the code (comments left out) and names each import that runs
//! the wrong way. The engine below is a crate of its own, which the
//! compiler keeps free of HTTP.

use std::fs;
use std::path::{Path, PathBuf};

/// A room (a module's file or folder under `backend/src`) and the rooms of
/// this crate it must not import.
const RULES: &[(&str, &[&str])] = &[
    ("config.rs", &["http", "api", "upstash", "server", "doctor", "net"]),
    ("net", &["http", "api", "upstash", "server", "doctor"]),
    ("http", &["api", "upstash", "server", "doctor"]),
    ("api", &["upstash", "server", "doctor"]),
    ("upstash", &["server", "doctor"]),
    ("doctor_page.rs", &["upstash", "server"]),
];

fn rust_files(at: &Path, out: &mut Vec<PathBuf>) {
    if at.is_file() {
        out.push(at.to_path_buf());
        return;
    }
    for entry in fs::read_dir(at).expect("a readable folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() || path.extension().is_some_and(|e| e == "rs") {
            rust_files(&path, out);
        }
    }
}

/// `line` without its comment uses `crate::room` (or `pipelab_server::room`) as a path.
fn imports(line: &str, room: &str) -> bool {
    let code = line.split("//").next().unwrap_or_default();
    ["crate", "pipelab_server"].iter().any(|root| code.contains(&format!("{root}::{room}::")) || code.contains(&format!("{root}::{room};")))
}

#[test]
fn no_room_imports_one_above_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut wrong = Vec::new();
    for (room, forbidden) in RULES {
        let mut files = Vec::new();
        rust_files(&src.join(room), &mut files);
        assert!(!files.is_empty(), "no code in {room}");
        for file in files {
            let text = fs::read_to_string(&file).expect("a readable file");
            for (n, line) in text.lines().enumerate() {
                for above in forbidden.iter().filter(|above| imports(line, above)) {
                    wrong.push(format!("{}:{}: {room} imports {above}: {}", file.strip_prefix(&src).unwrap().display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the direction:\n{}", wrong.join("\n"));
}

#[test]
fn a_mention_in_a_comment_is_not_an_import() {
    assert!(!imports("/// ([`crate::upstash::Family`])", "upstash"));
    assert!(imports("use crate::upstash::Settings;", "upstash"));
    assert!(imports("    let s = crate::upstash::Surface::new(&x); // why", "upstash"));
}
