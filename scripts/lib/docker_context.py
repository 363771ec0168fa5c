"""What `docker build .` would send as its build context, computed without a
Docker engine: every file under the repository's root that .dockerignore
does not exclude, matched as Docker matches it (moby's patternmatcher: a
pattern is relative to the root, `*` and `?` stay within one path segment,
`**` spans any number, a pattern that matches a directory excludes all
under it, `!` re-includes, the last matching line decides).

  python3 scripts/lib/docker_context.py [--max-mb N] [--list] [--self-test]

Prints the total size, the file count and the largest top-level entries;
with --list every file; exits 1 when the context is over --max-mb or lacks
a file the Dockerfile's stages need. --self-test checks the matcher on
cases whose Docker answer is known.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Files the Dockerfile's stages read (COPY . ., COPY scripts/ web/, the entrypoint).
NEEDED = [
    "Cargo.toml", "Cargo.lock", "Dockerfile", "backend/Cargo.toml", "cli/Cargo.toml", "cli/src/main.rs", "doctor/Cargo.toml", "http/Cargo.toml", "http/build.rs", "model/Cargo.toml", "resp/Cargo.toml",
    "wasm/Cargo.toml", "scripts/build-rust.sh", "scripts/build-web.sh", "scripts/setup.sh",
    "scripts/docker-entrypoint.sh", "web/package.json", "web/package-lock.json", "web/index.html",
    "web/doctor.html", "web/src/main.ts",
]


def compile_pattern(pattern):
    """A .dockerignore pattern (already cleaned) as a regular expression over slash-separated paths."""
    out, i = "^", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):  # `**/`: zero or more whole segments
                out += "(?:.*/)?"
                i += 1
            else:
                out += ".*"
            continue
        if c == "*":
            out += "[^/]*"
        elif c == "?":
            out += "[^/]"
        elif c == "[":
            j = pattern.find("]", i + 1)
            if j < 0:
                out += re.escape(c)
            else:
                body = pattern[i + 1:j]
                out += "[" + ("^" + body[1:] if body.startswith("^") else body) + "]"
                i = j
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        else:
            out += re.escape(c)
        i += 1
    return re.compile(out + "$")


def read_rules(text):
    """(regex, excludes) per pattern line, in order: `excludes` False for a `!` line."""
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        excludes = not line.startswith("!")
        if not excludes:
            line = line[1:].strip()
        line = os.path.normpath(line).replace(os.sep, "/").lstrip("/")
        if line in ("", "."):
            continue
        rules.append((compile_pattern(line), excludes))
    return rules


def excluded(path, rules):
    """Whether `path` (relative, slash-separated) is left out: the last rule that matches it or a parent decides."""
    parents = [path]
    while "/" in parents[-1]:
        parents.append(parents[-1].rsplit("/", 1)[0])
    out = False
    for regex, excludes in rules:
        if any(regex.match(p) for p in parents):
            out = excludes
    return out


def context(root, rules):
    """(path, size) of every file of the context, walking `root`."""
    reinclude = any(not e for _, e in rules)
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel + "/"
        # A directory left out is not walked, unless a `!` line could bring part of it back.
        dirnames[:] = sorted(d for d in dirnames if reinclude or not excluded(rel + d, rules))
        for f in sorted(filenames):
            path = rel + f
            if not excluded(path, rules):
                yield path, os.lstat(os.path.join(dirpath, f)).st_size


def self_test():
    rules = read_rules("target\n**/node_modules\n*.rdb\nweb/dist\ndocs/*.md\n!docs/keep.md\n/fuzz/\n")
    cases = {
        "target/debug/pipelab": True, "backend/target/x": False, "web/node_modules/a/b.js": True,
        "node_modules/x": True, "dump.rdb": True, "a/dump.rdb": False, "web/dist/index.html": True,
        "web/distant": False, "docs/api.md": True, "docs/keep.md": False, "docs/sub/x.md": False,
        "fuzz/corpus/1": True, "Cargo.toml": False,
    }
    for path, want in cases.items():
        got = excluded(path, rules)
        assert got == want, f"{path}: excluded {got}, Docker says {want}"
    print(f"docker_context: matcher agrees with Docker on {len(cases)} cases")


def main(argv):
    if "--self-test" in argv:
        self_test()
        return 0
    max_mb = float(argv[argv.index("--max-mb") + 1]) if "--max-mb" in argv else None
    ignore = os.path.join(ROOT, ".dockerignore")
    rules = read_rules(open(ignore).read()) if os.path.exists(ignore) else []
    files = list(context(ROOT, rules))
    total = sum(size for _, size in files)
    if "--list" in argv:
        for path, size in files:
            print(f"{size:>12} {path}")
    tops = {}
    for path, size in files:
        top = path.split("/", 1)[0]
        tops[top] = tops.get(top, 0) + size
    largest = ", ".join(f"{t} {s / 1e6:.1f} MB" for t, s in sorted(tops.items(), key=lambda x: -x[1])[:6])
    print(f"docker_context: {len(files)} files, {total / 1e6:.1f} MB (largest: {largest})")
    listed = {p for p, _ in files}
    missing = [p for p in NEEDED if p not in listed]
    if missing:
        print(f"docker_context: the build needs {', '.join(missing)}, which .dockerignore leaves out", file=sys.stderr)
        return 1
    if max_mb is not None and total > max_mb * 1e6:
        print(f"docker_context: {total / 1e6:.1f} MB is over {max_mb:g} MB: add what is not needed to .dockerignore", file=sys.stderr)
        return 1
    return 0


sys.exit(main(sys.argv[1:]))
