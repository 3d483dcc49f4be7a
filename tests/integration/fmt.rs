//! `venusc fmt` and the formatter on every `.venus` file of the repository: idempotent, same
//! tree, same `check` diagnostics.

use std::path::{Path, PathBuf};
use std::process::Command;

fn venus_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = ["examples", "stdlib", "tests/ui"]
        .iter()
        .map(PathBuf::from)
        .collect();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "venus") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn check_codes(path: &Path) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(["check", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let mut codes: Vec<String> = v["diagnostics"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|d| d["code"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    codes.sort();
    codes
}

#[test]
fn formatting_every_repo_file_is_idempotent_and_keeps_tree_and_diagnostics() {
    let files = venus_files();
    assert!(files.len() >= 15, "{files:?}");
    let scratch = std::env::temp_dir().join(format!("venusc-fmt-test-{}", std::process::id()));
    let mut formatted_count = 0;
    let mut compared = Vec::new();
    // First write every file's copy (formatted, or verbatim when it cannot be formatted), so a
    // file's `use`d neighbours are in place before its diagnostics are compared.
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let rel = path.strip_prefix(".").unwrap_or(path);
        let copy = scratch.join(rel);
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        let Ok(text) = String::from_utf8(bytes.clone()) else {
            std::fs::write(&copy, &bytes).unwrap();
            continue;
        };
        let once = match venusc::fmt::format(&text) {
            Ok(s) => s,
            Err(venusc::fmt::FormatError::Syntax(_)) => {
                std::fs::write(&copy, &bytes).unwrap();
                continue;
            }
            Err(e) => panic!("{}: {e}", path.display()),
        };
        formatted_count += 1;
        assert_eq!(
            venusc::fmt::format(&once).unwrap(),
            once,
            "{} is not idempotent",
            path.display()
        );
        let before = venusc::syntax::parse(&text, venusc::diag::FileId(0)).file;
        let after = venusc::syntax::parse(&once, venusc::diag::FileId(0)).file;
        assert!(
            venusc::fmt::equivalent(&before, &after),
            "{}",
            path.display()
        );
        std::fs::write(&copy, &once).unwrap();
        compared.push((path.clone(), copy));
    }
    // Same diagnostics codes from `venusc check` (stdlib files are checked as user files).
    for (path, copy) in &compared {
        assert_eq!(check_codes(path), check_codes(copy), "{}", path.display());
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(formatted_count >= 15, "{formatted_count}");
}

#[test]
fn fmt_check_names_unformatted_files_and_fmt_rewrites_them() {
    let dir = std::env::temp_dir().join(format!("venusc-fmt-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let messy = dir.join("messy.venus");
    let clean = dir.join("clean.venus");
    std::fs::write(&messy, "plan   p <pp 4;dp 4>\n").unwrap();
    std::fs::write(&clean, "plan q < pp 2 >\n").unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
            .args(args)
            .arg(&dir)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, stdout) = run(&["fmt", "--check"]);
    assert_eq!(code, Some(1));
    assert!(
        stdout.contains("messy.venus") && !stdout.contains("clean.venus"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(&messy).unwrap(),
        "plan   p <pp 4;dp 4>\n"
    );
    let (code, _) = run(&["fmt"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        std::fs::read_to_string(&messy).unwrap(),
        "plan p < pp 4 dp 4 >\n"
    );
    let (code, stdout) = run(&["fmt", "--check"]);
    assert_eq!((code, stdout.as_str()), (Some(0), ""));
    // A file with a syntax error is reported and left alone.
    std::fs::write(&messy, "plan p < pp 4\n").unwrap();
    let (code, _) = run(&["fmt"]);
    assert_eq!(code, Some(1));
    assert_eq!(std::fs::read_to_string(&messy).unwrap(), "plan p < pp 4\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The repository's `.venus` files are fixed points of `fmt` (the formatter keeps the
/// author's layout, so a shipped file is already formatted); `.ci/run` checks the same with
/// `venusc fmt --check`. Files that exist to be broken or unusual say `# venusc: fmt skip`.
#[test]
fn every_venus_file_of_the_repository_is_a_fixed_point_of_fmt() {
    let mut files = Vec::new();
    let mut dirs: Vec<PathBuf> = ["examples", "stdlib", "tests", "editors", "docs"]
        .iter()
        .map(PathBuf::from)
        .collect();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() && !p.ends_with("node_modules") {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "venus") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 150, "{} files", files.len());
    let mut args = vec!["fmt".to_string(), "--check".to_string()];
    args.extend(files.iter().map(|p| p.display().to_string()));
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(&args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "not formatted:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The example of the language contract is formatted as it is written there.
#[test]
fn the_language_references_examples_are_fixed_points() {
    let text = std::fs::read_to_string("docs/reference/LANGUAGE.md").unwrap();
    let mut blocks = 0;
    for block in text.split("```venus\n").skip(1) {
        let code = block.split("```").next().unwrap_or("");
        match venusc::fmt::format(code) {
            Ok(out) => {
                assert_eq!(out, code, "LANGUAGE.md example changes under fmt");
                blocks += 1;
            }
            Err(venusc::fmt::FormatError::Syntax(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert!(blocks >= 1);
}
