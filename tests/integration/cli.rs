//! End-to-end tests of the `venusc` binary: exit codes, output formats.

use std::process::Command;

fn venusc(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_passes_every_shipped_example() {
    let mut files: Vec<String> = std::fs::read_dir("examples")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "venus"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    let mut args = vec!["check"];
    args.extend(files.iter().map(|s| s.as_str()));
    let (code, stdout, stderr) = venusc(&args);
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn check_fails_with_exit_1_on_each_invalid_example_with_its_code() {
    for (file, code) in [
        ("examples/invalid/e0301_world_size.venus", "E0301"),
        ("examples/invalid/e0401_out_of_memory.venus", "E0401"),
    ] {
        let (exit, stdout, _) = venusc(&["check", "--format", "json", file]);
        assert_eq!(exit, 1, "{file}: {stdout}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        let codes: Vec<&str> = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["code"].as_str().unwrap())
            .collect();
        assert!(codes.contains(&code), "{file}: {codes:?}");
        let d = v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["code"] == code)
            .unwrap();
        assert!(
            d["help"].as_str().is_some_and(|h| !h.is_empty()),
            "{file}: no help"
        );
        assert!(d["labels"].as_array().unwrap().len() >= 2, "{file}: {d}");
    }
}

#[test]
fn check_exits_2_for_an_unreadable_file_and_a_bad_flag() {
    assert_eq!(venusc(&["check", "does/not/exist.venus"]).0, 2);
    assert_eq!(
        venusc(&["check", "--format", "yaml", "examples/venussim_demo.venus"]).0,
        2
    );
    assert_eq!(venusc(&["explain", "E9999"]).0, 2);
}

#[test]
fn explain_prints_the_markdown_of_a_code() {
    let (code, stdout, _) = venusc(&["explain", "e0301"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("# E0301"), "{stdout}");
    assert!(stdout.contains("```venus"));
}
