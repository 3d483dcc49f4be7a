//! UI tests: every `tests/ui/**/*.venus` file is checked; the multiset of (line, code) pairs
//! must equal the inline expectations, and the rendered output must equal its insta snapshot.
//!
//! An expectation is a comment on the line the diagnostic's primary label starts on:
//! `# error[E0301]` or `# warning[W0002]` (several may share a line). A file with no
//! expectation must check clean. Directories named `lib` hold files that UI roots `use`:
//! they are not roots themselves.

use std::path::{Path, PathBuf};

use venusc::diag::render::{self, SourceFiles};
use venusc::diag::Severity;

fn ui_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            // `lib/` holds files that UI roots `use`; they are checked through their users.
            if p.file_name().is_some_and(|n| n != "lib") {
                ui_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "venus") {
            out.push(p);
        }
    }
}

/// (line, "error[E0301]") pairs written in the file's comments, sorted; a pair written twice
/// expects two diagnostics (so a diagnostic reported twice is caught).
fn expectations(text: &str) -> Vec<(usize, String)> {
    let mut set = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Some(hash) = line.find('#') else { continue };
        let comment = &line[hash..];
        for sev in ["error", "warning"] {
            let mut rest = comment;
            while let Some(at) = rest.find(&format!("{sev}[")) {
                let after = &rest[at + sev.len() + 1..];
                if let Some(close) = after.find(']') {
                    set.push((i + 1, format!("{sev}[{}]", &after[..close])));
                }
                rest = &rest[at + 1..];
            }
        }
    }
    set.sort();
    set
}

/// The CLI's reader with its default root, the directory of the file checked: `use` outside
/// it is E0109, as `venusc check FILE` reports it.
fn project(path: &Path) -> venusc::files::Root {
    venusc::files::Root::at(path.parent().unwrap_or(Path::new(".")), false)
        .expect("the UI directory exists")
}

#[test]
fn ui_files_report_exactly_their_inline_expectations() {
    let mut files = Vec::new();
    ui_files(Path::new("tests/ui"), &mut files);
    assert!(
        files.len() >= 30,
        "expected the UI suite, found {} files",
        files.len()
    );
    let mut failures = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let mut session = venusc::Session::new();
        let root = session.load(path, &bytes, &mut project(path).reader());
        let mut result = session.check(root);
        // `# ui: sim` files are checked as `venusc sim` sees them: selecting the scenario to
        // run is part of it (E0108 for a library has nothing to run).
        if text.lines().any(|l| l.trim() == "# ui: sim") {
            if let Err(Some(d)) = result.select(None) {
                result.diagnostics.push(*d);
            }
        }
        let sources: SourceFiles = session.source_files();
        let mut actual: Vec<(usize, String)> = result
            .diagnostics
            .iter()
            .filter(|d| d.primary.loc.file == root)
            .map(|d| {
                let (line, _) = sources.line_col(root, d.primary.loc.span.start);
                let sev = if d.severity == Severity::Error {
                    "error"
                } else {
                    "warning"
                };
                (line, format!("{sev}[{}]", d.code))
            })
            .collect();
        actual.sort();
        let expected = expectations(&text);
        if actual != expected {
            failures.push(format!(
                "{}:\n  expected {:?}\n  actual   {:?}\n{}",
                path.display(),
                expected,
                actual,
                render::human(&result.diagnostics, &sources, false)
            ));
        }
        let rendered = render::human(&result.diagnostics, &sources, false);
        let name = path
            .strip_prefix("tests/ui")
            .unwrap()
            .with_extension("")
            .display()
            .to_string()
            .replace('/', "__");
        insta::with_settings!({ snapshot_path => "../ui/snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(name, rendered);
        });
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every code of DIAGNOSTICS.md has a UI file that triggers it, except those that are not
/// `check` diagnostics: E0501 (an `expect` check fails) and E0601–E0602 need the simulator,
/// E0603–E0607 come from command-line options, shard, VenusSim, HF or trace files (the CLI tests,
/// `sim.rs`, `hostile.rs`, trigger those), E0608–E0610, W0012 and W0013 from Megatron-LM launch
/// scripts (`megatron.rs` and its golden files under tests/golden/megatron trigger those),
/// E0620 from no input (a plan the simulator refuses after validation is venusc's bug), E0621
/// from `sweep --emit-best` when every candidate was pruned (`sweep.rs`), and
/// the I/O codes E07xx, which files and streams
/// raise (`input_files.rs` and `lsp.rs` test them), and W0007, which no arch of this release
/// raises (every arch has a calibration of its own).
const NOT_FROM_CHECK: &[&str] = &[
    "E0501", "E0601", "E0602", "E0603", "E0604", "E0605", "E0606", "E0607", "E0608", "E0609",
    "E0610", "E0620", "E0621", "E0622", "E0626", "W0007", "W0012", "W0013",
];
#[test]
fn ui_suite_triggers_every_code_except_e0501() {
    let mut files = Vec::new();
    ui_files(Path::new("tests/ui"), &mut files);
    let mut seen = std::collections::BTreeSet::new();
    for path in &files {
        let text = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
        seen.extend(expectations(&text).into_iter().map(|(_, e)| e));
    }
    let missing: Vec<String> = venusc::diag::Code::ALL
        .iter()
        // E0501 and E06xx come from `sim` and its inputs; the I/O codes (E07xx) from files
        // and streams, not from text.
        .filter(|c| !NOT_FROM_CHECK.contains(&c.as_str()) && !c.is_io())
        .map(|c| {
            let sev = if c.as_str().starts_with('W') {
                "warning"
            } else {
                "error"
            };
            format!("{sev}[{}]", c.as_str())
        })
        .filter(|e| !seen.contains(e))
        .collect();
    assert!(missing.is_empty(), "no UI file triggers {missing:?}");
}
