//! Tidy: the rules ARCHITECTURE.md states as absences, checked on the source tree (the model is
//! rust-analyzer's `xtask/src/tidy.rs`).
//!
//! Input: every `.rs` file under `src/` (the root package), `crates/` (the workspace's crates,
//! `crates/venus-<name>/src/<module>/…`), `tests/`, `benches/` and `fuzz/`, read with `std::fs`,
//! and the "Module graph" table of ARCHITECTURE.md. Output: one failure line per broken rule,
//! `file:line: rule: what`, all of them at once (one broken rule does not hide the others).
//!
//! Rules:
//! - `module-graph`: a `crate::X` or `venus_<name>::X` path in non-test code of `src/` or
//!   `crates/` uses a module that the table does not allow (the crates' manifests hold the same
//!   graph at crate level; this holds it at module level, through re-exports), or a module
//!   sits in a crate directory other than its row's. Edges that break it are listed in
//!   [`KNOWN_VIOLATIONS`]; an entry whose edge no longer exists fails too, so the list only
//!   shrinks.
//! - `io`: file I/O or printing outside `src/cli.rs`, `src/main.rs`, `src/lsp/` and
//!   `src/files/` (the one reader and writer; non-test code only: tests may read fixtures
//!   and print).
//! - `pest`: pest outside `crates/venus-syntax/src/syntax/`. `lsp-types`: lsp-types or
//!   lsp-server outside `src/lsp/`.
//! - `header`: a file of `src/` or `crates/` that does not open with a `//!` header; one of
//!   `tests/`, `benches/` or `fuzz/` that does not open with a `//!` or `//` comment.
//! - `citation`: a comment names a `.md` document that resolves neither from the repository
//!   root nor, for a bare name, in `docs/reference/`. URLs are not checked.
//!
//! The scanner is a small lexer, not a parser: it blanks string and char literals, splits
//! comments off, and treats `#[cfg(test)] mod x { … }` (rustfmt'd: the block ends at the `}`
//! of the same indentation) and files declared `#[cfg(test)] mod x;` (or
//! `#[cfg(any(test, feature = "testutil"))] mod x;`, the test builders other crates' tests use)
//! as test code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges the target graph forbids that the code still has. Each entry is (from, to) with
/// where it comes from; remove the entry in the commit that removes the edge.
const KNOWN_VIOLATIONS: &[(&str, &str)] = &[];

/// Submodules that are a stage of their own in the graph, wherever they live: lowering lived
/// under `src/trace/lower/` and now is `src/lower/`; an import of the old path still counts as
/// `lower`, so a revived copy there cannot hide an edge.
const STAGE_SUBMODULES: &[(&str, &str)] = &[("trace", "lower")];

/// Where printing and file I/O are allowed: the edges of the program.
const IO_HOMES: &[&str] = &["src/cli.rs", "src/main.rs", "src/lsp/", "src/files/"];

/// Text that means file I/O, printing or exiting, matched in code with strings and comments
/// removed and not preceded by an identifier character.
const IO_PATTERNS: &[&str] = &[
    "std::fs",
    "fs::read",
    "fs::write",
    "File::open",
    "File::create",
    "OpenOptions",
    "print!",
    "println!",
    "eprint!",
    "eprintln!",
    "dbg!",
    "process::exit",
    "io::stdout",
    "io::stderr",
    "io::stdin",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One line of a source file, split by the lexer.
#[derive(Debug, Default, Clone, PartialEq)]
struct Line {
    /// The code, with the insides of string and char literals blanked.
    code: String,
    /// The text of the comments on this line.
    comment: String,
    /// Inside `#[cfg(test)]` code.
    test: bool,
}

/// A source file: its path relative to the repository root (with `/`), and its lines.
struct Source {
    path: String,
    lines: Vec<Line>,
    /// The whole file is test code (`tests.rs`, or declared `#[cfg(test)] mod x;`).
    test_file: bool,
}

impl Source {
    fn new(path: &str, text: &str) -> Source {
        let mut lines = lex(text);
        mark_test_blocks(&mut lines);
        Source {
            path: path.to_string(),
            lines,
            test_file: false,
        }
    }

    fn is_test(&self, line: &Line) -> bool {
        self.test_file || line.test
    }
}

/// Splits `text` into lines of code and comment, blanking literals. Handles nested block
/// comments, raw strings, byte strings, char literals and lifetimes.
fn lex(text: &str) -> Vec<Line> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Code,
        Str,
        RawStr(usize),
        Block(usize),
    }
    let chars: Vec<char> = text.chars().collect();
    let mut lines = vec![Line::default()];
    let mut state = State::Code;
    let mut line_comment = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let cur = lines.last_mut().expect("one line at least");
        if c == '\n' {
            lines.push(Line::default());
            line_comment = false;
            i += 1;
            continue;
        }
        if line_comment {
            cur.comment.push(c);
            i += 1;
            continue;
        }
        match state {
            State::Code => {
                if c == '/' && next == Some('/') {
                    line_comment = true;
                    i += 2;
                } else if c == '/' && next == Some('*') {
                    state = State::Block(1);
                    i += 2;
                } else if c == '"' {
                    cur.code.push('"');
                    state = State::Str;
                    i += 1;
                } else if c == 'r'
                    && matches!(next, Some('"') | Some('#'))
                    && !ident_before(&chars, i)
                {
                    let mut j = i + 1;
                    while chars.get(j) == Some(&'#') {
                        j += 1;
                    }
                    if chars.get(j) == Some(&'"') {
                        cur.code.push('"');
                        state = State::RawStr(j - i - 1);
                        i = j + 1;
                    } else {
                        cur.code.push(c);
                        i += 1;
                    }
                } else if c == '\'' {
                    // A char literal (`'x'`, `'\n'`, `'\u{7f}'`) or a lifetime (`'a`).
                    if next == Some('\\') {
                        let mut j = i + 2;
                        while j < chars.len() && chars[j] != '\'' && chars[j] != '\n' {
                            j += 1;
                        }
                        cur.code.push_str("' '");
                        i = j + 1;
                    } else if chars.get(i + 2) == Some(&'\'') {
                        cur.code.push_str("' '");
                        i += 3;
                    } else {
                        cur.code.push(c);
                        i += 1;
                    }
                } else {
                    cur.code.push(c);
                    i += 1;
                }
            }
            State::Str => {
                if c == '\\' {
                    i += 2;
                } else {
                    if c == '"' {
                        cur.code.push('"');
                        state = State::Code;
                    }
                    i += 1;
                }
            }
            State::RawStr(hashes) => {
                if c == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    cur.code.push('"');
                    state = State::Code;
                    i += 1 + hashes;
                } else {
                    i += 1;
                }
            }
            State::Block(depth) => {
                if c == '*' && next == Some('/') {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::Block(depth - 1)
                    };
                    i += 2;
                } else if c == '/' && next == Some('*') {
                    state = State::Block(depth + 1);
                    i += 2;
                } else {
                    cur.comment.push(c);
                    i += 1;
                }
            }
        }
    }
    lines
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && is_ident(chars[i - 1])
}

/// Marks `#[cfg(test)] mod x { … }` blocks as test code: rustfmt puts the closing brace at the
/// indentation of the `mod`.
fn mark_test_blocks(lines: &mut [Line]) {
    let mut i = 0;
    while i < lines.len() {
        if lines[i].code.trim() == "#[cfg(test)]" {
            if let Some(next) = lines.get(i + 1) {
                let indent = &next.code[..next.code.len() - next.code.trim_start().len()];
                let head = next.code.trim();
                if head.contains("mod ") && head.ends_with('{') {
                    let close = format!("{indent}}}");
                    let mut j = i;
                    while j < lines.len() {
                        lines[j].test = true;
                        if j > i + 1 && lines[j].code.trim_end() == close {
                            break;
                        }
                        j += 1;
                    }
                    i = j + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
}

/// A `cfg` attribute that compiles its item for tests only: `#[cfg(test)]`, or
/// `#[cfg(any(test, feature = "testutil"))]` (string literals are blanked by then).
fn is_test_cfg(code: &str) -> bool {
    let code = code.trim();
    code == "#[cfg(test)]" || code == "#[cfg(any(test, feature = \"\"))]"
}

/// The names of the modules declared `#[cfg(test)] mod x;` in a file (other attributes may sit
/// between the `cfg` and the `mod`).
fn test_module_decls(src: &Source) -> Vec<String> {
    let mut out = Vec::new();
    for (i, l) in src.lines.iter().enumerate() {
        if is_test_cfg(&l.code) {
            let Some(decl) = src.lines[i + 1..]
                .iter()
                .find(|n| !n.code.trim().starts_with("#["))
            else {
                continue;
            };
            let head = decl.code.trim();
            if let Some(rest) = head.strip_suffix(';') {
                if let Some(name) = rest.split("mod ").nth(1) {
                    out.push(name.trim().to_string());
                }
            }
        }
    }
    out
}

/// Every `.rs` file under the scanned roots, sorted, with test files marked.
fn sources() -> Vec<Source> {
    let root = root();
    let mut paths = Vec::new();
    for dir in ["src", "crates", "tests", "benches", "fuzz", "python"] {
        walk(&root.join(dir), &mut paths);
    }
    paths.sort();
    let mut out: Vec<Source> = paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            let rel = p
                .strip_prefix(&root)
                .expect("walked under the root")
                .to_string_lossy()
                .replace('\\', "/");
            Source::new(&rel, &text)
        })
        .collect();
    // A file is test code when its stem is `tests` or a parent declares it `#[cfg(test)]`.
    let mut test_paths: BTreeSet<String> = BTreeSet::new();
    for s in &out {
        let dir = match s.path.rsplit_once('/') {
            Some((d, f)) if f == "mod.rs" || f == "lib.rs" || f == "main.rs" => d.to_string(),
            _ => s.path.trim_end_matches(".rs").to_string(),
        };
        for m in test_module_decls(s) {
            test_paths.insert(format!("{dir}/{m}.rs"));
            test_paths.insert(format!("{dir}/{m}/mod.rs"));
        }
    }
    for s in &mut out {
        let stem = s.path.rsplit('/').next().unwrap_or("");
        s.test_file = stem == "tests.rs" || test_paths.contains(&s.path);
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().to_string();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                walk(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

// ---- module graph ----

/// The "Module graph" table of ARCHITECTURE.md: crate → (its modules, the crates it may use).
#[derive(Debug)]
struct Graph {
    crate_of: BTreeMap<String, String>,
    uses: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn parse(doc: &str) -> Result<Graph, String> {
        let section = doc
            .split("\n## Module graph")
            .nth(1)
            .ok_or("ARCHITECTURE.md has no `## Module graph` section")?;
        let mut crate_of = BTreeMap::new();
        let mut uses = BTreeMap::new();
        for row in section.lines().skip_while(|l| !l.starts_with('|')) {
            if !row.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            if cells.len() < 4 || !cells[1].starts_with('`') {
                continue; // the header and the separator row
            }
            let name = ticked(cells[1])
                .into_iter()
                .next()
                .ok_or_else(|| format!("row without a crate name: {row}"))?;
            for m in ticked(cells[2]) {
                if let Some(other) = crate_of.insert(m.clone(), name.clone()) {
                    return Err(format!(
                        "module `{m}` is in two crates: `{other}` and `{name}`"
                    ));
                }
            }
            uses.insert(name, ticked(cells[3]).into_iter().collect());
        }
        for (c, deps) in &uses {
            for d in deps {
                if !uses.contains_key(d) && d != "all" {
                    return Err(format!("crate `{c}` uses `{d}`, which has no row"));
                }
            }
        }
        Ok(Graph { crate_of, uses })
    }

    fn allows(&self, from: &str, to: &str) -> bool {
        let (Some(a), Some(b)) = (self.crate_of.get(from), self.crate_of.get(to)) else {
            return false;
        };
        let deps = &self.uses[a];
        a == b || deps.contains(b) || deps.contains("all")
    }

    fn may_use(&self, from: &str) -> String {
        let Some(c) = self.crate_of.get(from) else {
            return "nothing: it has no row".into();
        };
        let deps = &self.uses[c];
        let mut mods: Vec<&str> = self
            .crate_of
            .iter()
            .filter(|(m, k)| m.as_str() != from && (*k == c || deps.contains(*k)))
            .map(|(m, _)| m.as_str())
            .collect();
        if deps.contains("all") {
            mods = vec!["every module"];
        }
        if mods.is_empty() {
            "nothing".into()
        } else {
            mods.join(", ")
        }
    }
}

/// The backticked words of a table cell.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The package a file of `src/` or `crates/` belongs to, as its paths name it: `venusc` for
/// `src/`, `venus_sim` for `crates/venus-sim/`.
fn package_of(path: &str) -> Option<String> {
    if path.starts_with("src/") {
        return Some("venusc".into());
    }
    let rest = path.strip_prefix("crates/")?;
    let (dir, _) = rest.split_once('/')?;
    Some(dir.replace('-', "_"))
}

/// The source path of a file inside its package: `engine/x.rs` for `src/engine/x.rs` and for
/// `crates/venus-sim/src/engine/x.rs`.
fn package_rel(path: &str) -> Option<&str> {
    if let Some(rel) = path.strip_prefix("src/") {
        return Some(rel);
    }
    let rest = path.strip_prefix("crates/")?;
    rest.split_once("/src/").map(|(_, rel)| rel)
}

/// A source file of a package (not of `tests/`, `benches/` or `fuzz/`).
fn in_package(path: &str) -> bool {
    package_rel(path).is_some()
}

/// The graph module a file of `src/` or `crates/*/src/` belongs to (`None` for a crate root).
fn module_of(path: &str) -> Option<String> {
    let rel = package_rel(path)?;
    let mut parts = rel.split('/');
    let first = parts.next()?.trim_end_matches(".rs");
    if first == "lib" {
        return None;
    }
    if let Some(second) = parts.next() {
        let second = second.trim_end_matches(".rs");
        if STAGE_SUBMODULES.contains(&(first, second)) {
            return Some(second.to_string());
        }
    }
    Some(first.to_string())
}

/// One `crate::` or `venus_<name>::` use: the line, the graph modules it names, and the root it
/// starts from as written (`crate`, `venus_sim`).
#[derive(Debug, PartialEq)]
struct Use {
    line: usize,
    targets: Vec<String>,
    via: String,
}

/// Crate-root re-exports: package (`venusc`, `venus_front`) → name (`Session`) → graph module
/// (`session`).
type Reexports = BTreeMap<String, BTreeMap<String, String>>;

/// The `crate::` and `venus_<name>::` paths of the non-test code of a file, with
/// `use crate::{a, b::c}` groups split into their modules and crate-root re-exports
/// (`crate::Session`, `venus_front::validate`) mapped through `reexports`.
fn crate_uses(src: &Source, reexports: &Reexports) -> Vec<Use> {
    let own = package_of(&src.path).unwrap_or_else(|| "venusc".into());
    let mut text = String::new();
    let mut line_of = Vec::new();
    for (n, l) in src.lines.iter().enumerate() {
        let code = if src.is_test(l) { "" } else { l.code.as_str() };
        text.push_str(code);
        text.push('\n');
        line_of.extend(std::iter::repeat_n(n + 1, code.len() + 1));
    }
    let mut out = Vec::new();
    let empty = BTreeMap::new();
    let mut from = 0;
    while let Some(at) = next_root(&text, from) {
        let root: String = text[at..].chars().take_while(|&c| is_ident(c)).collect();
        from = at + root.len() + "::".len();
        let package = if root == "crate" {
            own.clone()
        } else {
            root.clone()
        };
        let mut targets = Vec::new();
        path_targets(
            &text[from..],
            reexports.get(&package).unwrap_or(&empty),
            &mut targets,
        );
        targets.sort();
        targets.dedup();
        if !targets.is_empty() {
            out.push(Use {
                line: line_of[at],
                targets,
                via: root,
            });
        }
    }
    out
}

/// The byte offset of the next `crate::` or `venus_<name>::` path root at or after `from`, not
/// the tail of a longer name (`foo_crate::`, `$crate::`, `a::venus_x::`).
fn next_root(text: &str, from: usize) -> Option<usize> {
    let mut i = from;
    loop {
        let k = [text[i..].find("crate::"), text[i..].find("venus_")]
            .into_iter()
            .flatten()
            .min()?;
        let at = i + k;
        i = at + 1;
        if text[..at].ends_with(|c: char| is_ident(c) || c == ':' || c == '$') {
            continue;
        }
        let name: String = text[at..].chars().take_while(|&c| is_ident(c)).collect();
        let is_root =
            name == "crate" || (name.starts_with("venus_") && name.len() > "venus_".len());
        if is_root && text[at + name.len()..].starts_with("::") {
            return Some(at);
        }
    }
}

/// The graph modules of a path that follows `crate::`: `trace::lower::X` is `lower`,
/// `{a, b::c}` is `a` and `b`.
fn path_targets(rest: &str, reexports: &BTreeMap<String, String>, out: &mut Vec<String>) {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        for entry in split_group(group) {
            path_targets(entry, reexports, out);
        }
        return;
    }
    let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
    if name.is_empty() || name == "self" {
        return;
    }
    let after = rest[name.len()..].trim_start();
    // A crate-root macro (`venus_plan::plan_keys!`) belongs to no module; Cargo's dependency
    // list already bounds which crates may name it.
    if after.starts_with('!') {
        return;
    }
    for &(parent, sub) in STAGE_SUBMODULES {
        if name != parent {
            continue;
        }
        if let Some(tail) = after.strip_prefix("::") {
            let tail = tail.trim_start();
            if let Some(group) = tail.strip_prefix('{') {
                for entry in split_group(group) {
                    let entry = entry.trim_start();
                    let head: String = entry.chars().take_while(|&c| is_ident(c)).collect();
                    out.push(if head == sub { sub } else { parent }.to_string());
                }
                return;
            }
            let head: String = tail.chars().take_while(|&c| is_ident(c)).collect();
            if head == sub {
                out.push(sub.to_string());
                return;
            }
        }
    }
    out.push(reexports.get(&name).cloned().unwrap_or(name));
}

/// The top-level comma-separated entries of a `{…}` group (the text after its `{`).
fn split_group(group: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.push(&group[start..i]);
                return out;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// `pub use module::…::Name;` and `pub use module::{A, B};` items of every crate root
/// (`src/lib.rs`, `crates/*/src/lib.rs`): package → `Name` → the graph module it comes from. A
/// re-export of another crate's item (`pub use venus_sim::engine;`) resolves through that
/// crate's own re-exports, so `crate::engine` in `src/` is `engine`.
fn root_reexports(files: &[Source]) -> Reexports {
    // package → (name, the path it re-exports, split into segments)
    let mut raw: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for lib in files {
        let is_root = package_rel(&lib.path) == Some("lib.rs");
        let Some(package) = package_of(&lib.path).filter(|_| is_root) else {
            continue;
        };
        let code: String = lib
            .lines
            .iter()
            .filter(|l| !lib.is_test(l))
            .map(|l| l.code.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let entries = raw.entry(package).or_default();
        for item in code.split(';') {
            let item = item.trim();
            let Some(at) = item.find("pub use ") else {
                continue;
            };
            let path = &item[at + "pub use ".len()..];
            if item[..at].contains('{') {
                continue; // inside an inline `pub mod x { … }`: not a root name
            }
            flatten_use(path, &mut Vec::new(), entries);
        }
    }
    let mut out: Reexports = BTreeMap::new();
    for (package, entries) in &raw {
        for (name, path) in entries {
            if let Some(m) = resolve_use(path, &raw, 0) {
                out.entry(package.clone())
                    .or_default()
                    .insert(name.clone(), m);
            }
        }
    }
    out
}

/// The names a `use` tree brings in, each with its full path: `a::{b, c::D}` is `b` at `a::b`
/// and `D` at `a::c::D`.
fn flatten_use(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    let tree = tree.trim();
    if let Some(group) = tree.strip_prefix('{') {
        for entry in split_group(group) {
            flatten_use(entry, &mut prefix.clone(), out);
        }
        return;
    }
    let Some((head, tail)) = tree.split_once("::") else {
        let name = tree.split(" as ").last().unwrap_or(tree).trim();
        if !name.is_empty() && name != "*" && name != "self" {
            prefix.push(tree.split(" as ").next().unwrap_or(tree).trim().to_string());
            out.push((name.to_string(), prefix.clone()));
        }
        return;
    };
    prefix.push(head.trim().to_string());
    flatten_use(tail, prefix, out);
}

/// The graph module a re-exported path names, seen from a crate root: its first module,
/// or, for a path into another crate (`venus_front::Session`), what that crate's root
/// re-exports under the name (`session`).
fn resolve_use(
    path: &[String],
    raw: &BTreeMap<String, Vec<(String, Vec<String>)>>,
    depth: usize,
) -> Option<String> {
    let (first, rest) = path.split_first()?;
    if first == "crate" || first == "self" {
        return resolve_use(rest, raw, depth);
    }
    if !first.starts_with("venus_") {
        return Some(first.clone());
    }
    let name = rest.first()?;
    let again = raw
        .get(first)
        .and_then(|e| e.iter().find(|(n, _)| n == name))
        .filter(|_| depth < 8);
    match again {
        Some((_, p)) => resolve_use(p, raw, depth + 1),
        None => Some(name.clone()),
    }
}

/// The module-graph rule over `files` (the sources of `src/`).
fn check_module_graph(files: &[Source], graph: &Graph, known: &[(&str, &str)]) -> Vec<String> {
    let mut failures = Vec::new();
    let reexports = root_reexports(files);
    // Every module of the tree has a row, and every row's module exists (test-only files, such
    // as the test builders, are no module of the graph).
    let mut present: BTreeSet<String> = BTreeSet::new();
    for s in files.iter().filter(|s| !s.test_file) {
        if let Some(m) = module_of(&s.path) {
            present.insert(m);
        }
    }
    for m in &present {
        if !graph.crate_of.contains_key(m) {
            failures.push(format!(
                "ARCHITECTURE.md: module-graph: module `{m}` (src/{m}) has no crate in the table"
            ));
        }
    }
    for m in graph.crate_of.keys() {
        if !present.contains(m) {
            failures.push(format!(
                "ARCHITECTURE.md: module-graph: the table names module `{m}`, which src/ does not have"
            ));
        }
    }
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for s in files {
        let Some(from) = module_of(&s.path) else {
            continue;
        };
        for u in crate_uses(s, &reexports) {
            for to in &u.targets {
                if *to == from {
                    continue;
                }
                seen.insert((from.clone(), to.clone()));
                let via = &u.via;
                if !present.contains(to) {
                    failures.push(format!(
                        "{}:{}: module-graph: `{via}::{to}` is not a module of the graph",
                        s.path, u.line
                    ));
                } else if !graph.allows(&from, to) && !known.contains(&(from.as_str(), to.as_str()))
                {
                    failures.push(format!(
                        "{}:{}: module-graph: `{from}` uses `{via}::{to}`, against ARCHITECTURE.md's module graph ({from} may use: {})",
                        s.path,
                        u.line,
                        graph.may_use(&from)
                    ));
                }
            }
        }
    }
    for &(from, to) in known {
        if graph.allows(from, to) {
            failures.push(format!(
                "tests/integration/tidy.rs: module-graph: known violation `{from}` → `{to}` is allowed by the table: remove it from KNOWN_VIOLATIONS"
            ));
        } else if !seen.contains(&(from.to_string(), to.to_string())) {
            failures.push(format!(
                "tests/integration/tidy.rs: module-graph: known violation `{from}` → `{to}` no longer exists: remove it from KNOWN_VIOLATIONS"
            ));
        }
    }
    failures
}

/// The module-graph rule's other half: a module lives in the directory of its row's crate,
/// `crates/venus-<crate>/src/<module>` or, for `venusc`, `src/<module>`.
fn check_crate_dirs(files: &[Source], graph: &Graph) -> Vec<String> {
    let mut failures = Vec::new();
    let mut placed: BTreeSet<(String, String)> = BTreeSet::new();
    for s in files.iter().filter(|s| !s.test_file) {
        let (Some(m), Some(package)) = (module_of(&s.path), package_of(&s.path)) else {
            continue;
        };
        let Some(row) = graph.crate_of.get(&m) else {
            continue;
        };
        let want = if row == "venusc" {
            "venusc".to_string()
        } else {
            format!("venus_{row}")
        };
        if package != want && placed.insert((m.clone(), package.clone())) {
            let dir = |p: &str| {
                if p == "venusc" {
                    "src/".to_string()
                } else {
                    format!("crates/{}/src/", p.replace('_', "-"))
                }
            };
            failures.push(format!(
                "{}: module-graph: module `{m}` is in {}, but the table puts it in crate `{row}` ({})",
                s.path,
                dir(&package),
                dir(&want)
            ));
        }
    }
    failures
}

// ---- the other rules ----

/// `pattern` occurs in `code`, not preceded by an identifier character or `:` (so `eprint!`
/// does not also count as `print!`, and `ast::File::` is not `File::`).
fn occurs(code: &str, pattern: &str) -> bool {
    code.match_indices(pattern).any(|(i, _)| {
        !code[..i]
            .chars()
            .next_back()
            .is_some_and(|c| is_ident(c) || c == ':')
    })
}

fn check_io(files: &[Source]) -> Vec<String> {
    let mut failures = Vec::new();
    for s in files.iter().filter(|s| in_package(&s.path)) {
        if IO_HOMES
            .iter()
            .any(|h| s.path == *h || (h.ends_with('/') && s.path.starts_with(h)))
        {
            continue;
        }
        for (n, l) in s.lines.iter().enumerate() {
            if s.is_test(l) {
                continue;
            }
            if let Some(p) = IO_PATTERNS.iter().find(|p| occurs(&l.code, p)) {
                failures.push(format!(
                    "{}:{}: io: `{p}` outside src/cli.rs, src/main.rs, src/lsp/ and src/files/ (return the data; the edge does I/O)",
                    s.path,
                    n + 1
                ));
            }
        }
    }
    failures
}

/// A crate that may be named only under `home`.
fn check_confined(files: &[Source], rule: &str, names: &[&str], home: &str) -> Vec<String> {
    let mut failures = Vec::new();
    for s in files.iter().filter(|s| !s.path.starts_with(home)) {
        for (n, l) in s.lines.iter().enumerate() {
            if let Some(name) = names.iter().find(|p| {
                l.code.match_indices(*p).any(|(i, _)| {
                    let before = l.code[..i].chars().next_back();
                    let after = l.code[i + p.len()..].chars().next();
                    !before.is_some_and(|c| is_ident(c) || c == ':') && !after.is_some_and(is_ident)
                })
            }) {
                failures.push(format!(
                    "{}:{}: {rule}: `{name}` outside {home}",
                    s.path,
                    n + 1
                ));
            }
        }
    }
    failures
}

fn check_headers(files: &[Source], raw: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut failures = Vec::new();
    for s in files {
        let text = raw(&s.path);
        let first = text.lines().next().unwrap_or("");
        let (ok, want) = if in_package(&s.path) {
            (first.starts_with("//!"), "`//!`")
        } else {
            (first.starts_with("//"), "`//!` or `//`")
        };
        if !ok {
            failures.push(format!(
                "{}:1: header: the file must open with a {want} comment: purpose, input → output, invariants",
                s.path
            ));
        }
    }
    failures
}

/// The `.md` documents named in a comment: words ending in `.md`, stripped of punctuation,
/// that are not part of a URL.
fn cited_docs(comment: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in comment.split_whitespace() {
        if word.contains("://") {
            continue;
        }
        let word = word.trim_matches(|c: char| !(is_ident(c) || c == '/' || c == '-'));
        let Some(stem) = word.strip_suffix(".md") else {
            continue;
        };
        if !stem.is_empty()
            && stem
                .chars()
                .all(|c| is_ident(c) || c == '/' || c == '.' || c == '-')
        {
            out.push(word.to_string());
        }
    }
    out
}

fn check_citations(files: &[Source], exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut failures = Vec::new();
    for s in files {
        for (n, l) in s.lines.iter().enumerate() {
            for doc in cited_docs(&l.comment) {
                let bare = !doc.contains('/');
                if exists(&doc) || (bare && exists(&format!("docs/reference/{doc}"))) {
                    continue;
                }
                failures.push(format!(
                    "{}:{}: citation: `{doc}` is not in the repository (copy it to docs/reference/ or cite its public URL)",
                    s.path,
                    n + 1
                ));
            }
        }
    }
    failures
}

fn repo_file_exists(rel: &str) -> bool {
    root().join(rel).is_file()
}

fn fail_on(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} tidy failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn graph() -> Graph {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md at the repository root");
    Graph::parse(&doc).unwrap_or_else(|e| panic!("ARCHITECTURE.md: module graph: {e}"))
}

#[test]
fn src_imports_follow_the_module_graph_of_architecture_md() {
    let files: Vec<Source> = sources()
        .into_iter()
        .filter(|s| in_package(&s.path))
        .collect();
    let graph = graph();
    let mut failures = check_module_graph(&files, &graph, KNOWN_VIOLATIONS);
    failures.extend(check_crate_dirs(&files, &graph));
    fail_on(failures);
}

#[test]
fn only_the_cli_and_the_lsp_loop_do_io_or_print() {
    fail_on(check_io(&sources()));
}

#[test]
fn pest_stays_in_syntax_and_lsp_types_in_lsp() {
    let files = sources();
    let mut failures = check_confined(
        &files,
        "pest",
        &["pest", "pest_derive"],
        "crates/venus-syntax/src/syntax/",
    );
    failures.extend(check_confined(
        &files,
        "lsp-types",
        &["lsp_types", "lsp_server"],
        "src/lsp/",
    ));
    fail_on(failures);
}

#[test]
fn every_file_opens_with_a_header_comment() {
    let read = |rel: &str| std::fs::read_to_string(root().join(rel)).unwrap_or_default();
    fail_on(check_headers(&sources(), &read));
}

#[test]
fn every_cited_document_is_in_the_repository() {
    fail_on(check_citations(&sources(), &repo_file_exists));
}

/// The Python binding (`python/`) is its own workspace with its own lock file, so the root's
/// `cargo test --workspace` never builds it (it needs Python); and, an edge like `cli.rs`, it
/// reads files only through `files`, so the project root rules and size caps hold there too.
#[test]
fn the_python_binding_stays_outside_the_workspace_and_reads_through_files() {
    let root = root();
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap_or_default();
    assert!(
        read("Cargo.toml").contains("exclude = [\"python\"]"),
        "the root workspace must exclude `python`"
    );
    let manifest = read("python/Cargo.toml");
    assert!(
        manifest.lines().any(|l| l.trim() == "[workspace]"),
        "{manifest}"
    );
    assert!(read("python/Cargo.lock").contains("name = \"pyo3\""));
    let binding = sources()
        .into_iter()
        .find(|s| s.path == "python/src/lib.rs")
        .expect("python/src/lib.rs is scanned");
    let io: Vec<String> = binding
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| IO_PATTERNS.iter().any(|p| occurs(&l.code, p)))
        .map(|(n, l)| format!("python/src/lib.rs:{}: {}", n + 1, l.code.trim()))
        .collect();
    assert!(io.is_empty(), "read files through `venusc::files`: {io:?}");
}

// ---- the checker checks: each rule fails on a deliberately bad file ----

fn tiny_graph() -> Graph {
    Graph::parse(
        "# A\n\n## Module graph\n\n| crate | modules | may use |\n|---|---|---|\n\
         | `base` | `base` | — |\n| `sim` | `engine` `trace` | `base` |\n\
         | `out` | `report` | `base` `sim` |\n",
    )
    .expect("a well-formed table")
}

fn tiny_tree(engine_mod: &str) -> Vec<Source> {
    vec![
        Source::new("src/lib.rs", "//! root\npub mod base;\n"),
        Source::new("src/base/mod.rs", "//! base\n"),
        Source::new("src/trace/mod.rs", "//! trace\nuse crate::base::Ps;\n"),
        Source::new("src/engine/mod.rs", engine_mod),
        Source::new(
            "src/report/mod.rs",
            "//! report\nuse crate::engine::Timeline;\n",
        ),
    ]
}

#[test]
fn a_backward_import_fails_the_module_graph_with_file_line_and_rule() {
    let bad = "//! engine\nuse crate::trace::Trace;\nuse crate::report::Report;\n";
    let failures = check_module_graph(&tiny_tree(bad), &tiny_graph(), &[]);
    assert_eq!(
        failures,
        vec![
            "src/engine/mod.rs:3: module-graph: `engine` uses `crate::report`, against \
             ARCHITECTURE.md's module graph (engine may use: base, trace)"
                .to_string()
        ]
    );
}

#[test]
fn grouped_and_multi_line_imports_name_each_module_and_tests_are_skipped() {
    let text = "//! engine\nuse crate::{\n    base::Ps,\n    report::{self, Report},\n};\n\
                #[cfg(test)]\nmod tests {\n    use crate::report::X;\n}\n";
    let failures = check_module_graph(&tiny_tree(text), &tiny_graph(), &[]);
    assert_eq!(
        failures,
        vec![
            "src/engine/mod.rs:2: module-graph: `engine` uses `crate::report`, against \
             ARCHITECTURE.md's module graph (engine may use: base, trace)"
                .to_string()
        ]
    );
}

#[test]
fn a_known_violation_passes_until_its_edge_is_gone() {
    let bad = "//! engine\nuse crate::report::Report;\n";
    let known = [("engine", "report")];
    assert!(check_module_graph(&tiny_tree(bad), &tiny_graph(), &known).is_empty());
    let fixed = "//! engine\nuse crate::trace::Trace;\n";
    assert_eq!(
        check_module_graph(&tiny_tree(fixed), &tiny_graph(), &known),
        vec![
            "tests/integration/tidy.rs: module-graph: known violation `engine` → `report` no \
             longer exists: remove it from KNOWN_VIOLATIONS"
                .to_string()
        ]
    );
}

#[test]
fn lowering_under_trace_is_its_own_module() {
    let reexports = BTreeMap::new();
    let s = Source::new(
        "src/simulate.rs",
        "//! s\nuse crate::trace::lower::{self, Lowered};\nuse crate::trace::{lower::X, Trace};\n",
    );
    assert_eq!(
        module_of("src/trace/lower/mod.rs").as_deref(),
        Some("lower")
    );
    assert_eq!(module_of("src/trace/build.rs").as_deref(), Some("trace"));
    let uses = crate_uses(&s, &reexports);
    assert_eq!(
        uses,
        vec![
            Use {
                line: 2,
                targets: vec!["lower".into()],
                via: "crate".into(),
            },
            Use {
                line: 3,
                targets: vec!["lower".into(), "trace".into()],
                via: "crate".into(),
            },
        ]
    );
}

#[test]
fn strings_and_comments_are_not_code() {
    let lines = lex("let s = \"println!(\\\"x\\\")\"; // println!\nlet c = '\"'; r#\"dbg!\"#; /* a\n crate::x */ 1\n");
    assert_eq!(lines[0].code, "let s = \"\"; ");
    assert_eq!(lines[0].comment, " println!");
    assert_eq!(lines[1].code, "let c = ' '; \"\"; ");
    assert_eq!(lines[2].code, " 1");
    assert_eq!(lines[2].comment, " crate::x ");
}

#[test]
fn printing_outside_the_edges_fails_and_tests_may_print() {
    let files = vec![
        Source::new(
            "src/engine/sim.rs",
            "//! e\nfn f() { eprintln!(\"x\"); }\n#[cfg(test)]\nmod tests {\n    fn g() { println!(); }\n}\n",
        ),
        Source::new("src/cli.rs", "//! c\nfn f() { println!(); }\n"),
        Source::new("src/syntax/parse.rs", "//! ast::File::comments\nuse crate::syntax::ast::File::new;\n"),
    ];
    assert_eq!(
        check_io(&files),
        vec![
            "src/engine/sim.rs:2: io: `eprintln!` outside src/cli.rs, src/main.rs, src/lsp/ and \
             src/files/ (return the data; the edge does I/O)"
                .to_string()
        ]
    );
}

#[test]
fn pest_outside_syntax_fails() {
    let files = vec![
        Source::new(
            "src/plan/mod.rs",
            "//! p\nuse pest::Parser;\nlet pester = 1;\n",
        ),
        Source::new("src/syntax/lex.rs", "//! l\nuse pest::Parser;\n"),
    ];
    assert_eq!(
        check_confined(&files, "pest", &["pest"], "src/syntax/"),
        vec!["src/plan/mod.rs:2: pest: `pest` outside src/syntax/".to_string()]
    );
}

#[test]
fn a_file_without_a_header_fails() {
    let files = vec![
        Source::new("src/a.rs", ""),
        Source::new("src/b.rs", ""),
        Source::new("tests/c.rs", ""),
    ];
    let texts = |p: &str| match p {
        "src/a.rs" => "// plain comment\n".to_string(),
        "src/b.rs" => "//! header\n".to_string(),
        _ => "// test header\n".to_string(),
    };
    assert_eq!(
        check_headers(&files, &texts),
        vec![
            "src/a.rs:1: header: the file must open with a `//!` comment: purpose, input → \
             output, invariants"
                .to_string()
        ]
    );
}

#[test]
fn a_citation_resolves_at_its_path_or_in_docs_reference() {
    let files = vec![Source::new(
        "src/a.rs",
        "//! see venussim.md §3, docs/validation.md, (NOWHERE.md).\n\
         // https://example.org/x/README.md is a URL\n",
    )];
    let exists = |p: &str| p == "docs/reference/venussim.md" || p == "docs/validation.md";
    assert_eq!(
        check_citations(&files, &exists),
        vec![
            "src/a.rs:1: citation: `NOWHERE.md` is not in the repository (copy it to \
             docs/reference/ or cite its public URL)"
                .to_string()
        ]
    );
}

fn tiny_crates(engine_mod: &str) -> Vec<Source> {
    vec![
        Source::new("crates/venus-base/src/lib.rs", "//! b\npub mod base;\n"),
        Source::new("crates/venus-base/src/base/mod.rs", "//! base\n"),
        Source::new(
            "crates/venus-sim/src/lib.rs",
            "//! s\npub mod engine;\npub mod trace;\npub use trace::Trace;\n",
        ),
        Source::new(
            "crates/venus-sim/src/trace/mod.rs",
            "//! trace\nuse venus_base::base::Ps;\n",
        ),
        Source::new("crates/venus-sim/src/engine/mod.rs", engine_mod),
        Source::new("crates/venus-out/src/lib.rs", "//! o\npub mod report;\n"),
        Source::new(
            "crates/venus-out/src/report/mod.rs",
            "//! report\nuse venus_sim::{engine::Timeline, Trace};\n",
        ),
    ]
}

#[test]
fn a_path_into_another_crate_is_an_edge_through_its_root_reexports() {
    let ok = "//! engine\nuse crate::trace::Trace;\nuse venus_base::base::Ps;\n";
    assert_eq!(
        check_module_graph(&tiny_crates(ok), &tiny_graph(), &[]),
        Vec::<String>::new()
    );
    let bad = "//! engine\nuse venus_out::{report::Report};\n";
    assert_eq!(
        check_module_graph(&tiny_crates(bad), &tiny_graph(), &[]),
        vec![
            "crates/venus-sim/src/engine/mod.rs:2: module-graph: `engine` uses \
             `venus_out::report`, against ARCHITECTURE.md's module graph (engine may use: \
             base, trace)"
                .to_string()
        ]
    );
    let reexports = root_reexports(&tiny_crates(ok));
    assert_eq!(reexports["venus_sim"]["Trace"], "trace");
    assert_eq!(
        module_of("crates/venus-sim/src/engine/sim/fill.rs").as_deref(),
        Some("engine")
    );
    assert_eq!(module_of("crates/venus-sim/src/lib.rs"), None);
}

#[test]
fn a_module_outside_its_crate_directory_fails() {
    let mut files = tiny_crates("//! engine\n");
    files.push(Source::new(
        "crates/venus-out/src/trace/extra.rs",
        "//! a stray trace file\n",
    ));
    assert_eq!(
        check_crate_dirs(&tiny_crates("//! engine\n"), &tiny_graph()),
        Vec::<String>::new()
    );
    assert_eq!(
        check_crate_dirs(&files, &tiny_graph()),
        vec![
            "crates/venus-out/src/trace/extra.rs: module-graph: module `trace` is in \
             crates/venus-out/src/, but the table puts it in crate `sim` \
             (crates/venus-sim/src/)"
                .to_string()
        ]
    );
}
