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

/// Runs `venusc` with `args` and the given extra environment (and no inherited `NO_COLOR`).
fn venusc_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_venusc"));
    cmd.args(args).env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const MIXED: &str = "tests/fixtures/cli/mixed.venus";
const CLEAN: &str = "tests/fixtures/cli/clean.venus";
const WARNING_ONLY: &str = "tests/fixtures/cli/warning_only.venus";

fn snapshot(name: &str, text: &str) {
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(name, text);
    });
}

#[test]
fn json_format_of_a_file_with_errors_and_warnings_matches_its_snapshot() {
    let (code, stdout, stderr) = venusc(&["check", "--format", "json", MIXED]);
    assert_eq!(code, 1, "{stderr}");
    snapshot("cli_json_mixed", &stdout);
}

#[test]
fn github_format_of_a_file_with_errors_and_warnings_matches_its_snapshot() {
    let (code, stdout, stderr) = venusc(&["check", "--format", "github", MIXED]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("::error ")).count(),
        2,
        "{stdout}"
    );
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("::warning "))
            .count(),
        2,
        "{stdout}"
    );
    snapshot("cli_github_mixed", &stdout);
}

#[test]
fn human_format_ends_with_the_error_and_warning_counts() {
    let (code, stdout, _) = venusc(&["check", MIXED]);
    assert_eq!(code, 1);
    assert!(
        stdout.ends_with("2 errors, 2 warnings emitted\n"),
        "{stdout}"
    );
    let (code, stdout, _) = venusc(&["check", CLEAN]);
    assert_eq!((code, stdout.as_str()), (0, ""));
}

/// The fields DIAGNOSTICS.md promises in the JSON form, with their JSON types.
#[test]
fn json_output_parses_and_carries_every_documented_field() {
    let (_, stdout, _) = venusc(&["check", "--format", "json", MIXED]);
    let v: serde_json::Value = serde_json::from_str(&stdout).expect("valid JSON");
    assert_eq!(v["files"], 1);
    assert_eq!(v["errors"], 2);
    assert_eq!(v["warnings"], 2);
    let diags = v["diagnostics"].as_array().expect("diagnostics array");
    assert_eq!(diags.len(), 4);
    let positions = ["line", "column", "end_line", "end_column"];
    for d in diags {
        for key in ["code", "severity", "message", "file"] {
            assert!(d[key].is_string(), "`{key}` in {d}");
        }
        for key in positions {
            assert!(d[key].as_u64().is_some_and(|n| n >= 1), "`{key}` in {d}");
        }
        assert!(d["help"].is_string() || d["help"].is_null(), "{d}");
        let labels = d["labels"].as_array().expect("labels array");
        assert!(!labels.is_empty(), "{d}");
        for l in labels {
            assert!(l["message"].is_string() && l["file"].is_string(), "{l}");
            for key in positions {
                assert!(l[key].as_u64().is_some_and(|n| n >= 1), "`{key}` in {l}");
            }
        }
    }
    let codes: Vec<&str> = diags.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["W0004", "E0101", "W0002", "E0301"]);
    let severities: Vec<&str> = diags
        .iter()
        .map(|d| d["severity"].as_str().unwrap())
        .collect();
    assert_eq!(severities, ["warning", "error", "warning", "error"]);
    // E0301 sits on `dp 4` of line 11, with the tp factor and both cluster dims as labels.
    let e0301 = &diags[3];
    assert_eq!(
        (&e0301["line"], &e0301["column"], &e0301["end_column"]),
        (&11.into(), &24.into(), &25.into())
    );
    assert_eq!(e0301["labels"].as_array().unwrap().len(), 4);
    assert!(
        e0301["help"].as_str().unwrap().contains("`dp 2`"),
        "{e0301}"
    );
}

#[test]
fn json_of_a_clean_file_has_zero_counts_and_no_diagnostics() {
    let (code, stdout, _) = venusc(&["check", "--format", "json", CLEAN]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (
            v["files"].as_u64(),
            v["errors"].as_u64(),
            v["warnings"].as_u64()
        ),
        (Some(1), Some(0), Some(0))
    );
    assert_eq!(v["diagnostics"].as_array().map(Vec::len), Some(0));
}

#[test]
fn exit_code_is_0_for_a_clean_file_and_for_warnings_only() {
    assert_eq!(venusc(&["check", CLEAN]).0, 0);
    let (code, stdout, _) = venusc(&["check", WARNING_ONLY]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("warning[W0006]"), "{stdout}");
}

#[test]
fn deny_warnings_turns_a_warning_into_exit_1_but_leaves_a_clean_file_at_0() {
    assert_eq!(venusc(&["check", "--deny-warnings", WARNING_ONLY]).0, 1);
    assert_eq!(venusc(&["check", "--deny-warnings", CLEAN]).0, 0);
}

#[test]
fn exit_code_is_1_for_errors_in_any_format() {
    for format in ["human", "json", "github"] {
        assert_eq!(
            venusc(&["check", "--format", format, MIXED]).0,
            1,
            "{format}"
        );
    }
    // One bad file among good ones still fails the run.
    assert_eq!(venusc(&["check", CLEAN, MIXED, WARNING_ONLY]).0, 1);
}

#[test]
fn exit_code_is_2_for_usage_errors_with_a_message_on_stderr() {
    for args in [
        &["check", "tests/fixtures/cli/no_such_file.venus"][..],
        &["check", "--format", "xml", CLEAN],
        &["check", "--no-such-flag", CLEAN],
        &["check"],
        &["frobnicate"],
        &["explain", "E0999"],
        &["explain", "not-a-code"],
    ] {
        let (code, stdout, stderr) = venusc(args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(!stderr.is_empty(), "{args:?}: no message");
    }
}

#[test]
fn unknown_explain_code_suggests_the_nearest_code() {
    let (code, _, stderr) = venusc(&["explain", "E0310x"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("`E0310`") || stderr.contains("`E0301`"),
        "{stderr}"
    );
}

#[test]
fn explain_without_a_code_lists_every_code() {
    let (code, stdout, _) = venusc(&["explain"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout.lines().count(),
        venusc::diag::Code::ALL.len(),
        "{stdout}"
    );
    assert!(stdout.lines().any(|l| l.starts_with("W0006")), "{stdout}");
}

#[test]
fn a_directory_argument_checks_every_venus_file_below_it() {
    let (code, stdout, _) = venusc(&["check", "--format", "json", "tests/fixtures/cli/dir"]);
    assert_eq!(code, 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["files"], 2, "a.venus and nested/b.venus, not notes.txt");
    let diags = v["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{stdout}");
    assert_eq!(diags[0]["code"], "E0301");
    assert!(
        diags[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("nested/b.venus"),
        "{stdout}"
    );
}

#[test]
fn a_directory_and_a_file_together_count_every_file() {
    let (_, stdout, _) = venusc(&["check", "--format", "json", "tests/fixtures/cli/dir", CLEAN]);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["files"], 3);
}

const ESC: char = '\u{1b}';

#[test]
fn no_color_and_color_never_give_no_ansi_escapes() {
    let (_, stdout, _) = venusc_env(&["check", MIXED], &[("NO_COLOR", "1")]);
    assert!(
        stdout.contains("error[E0301]") && !stdout.contains(ESC),
        "{stdout:?}"
    );
    let (_, stdout, _) = venusc_env(&["--color", "never", "check", MIXED], &[]);
    assert!(
        stdout.contains("error[E0301]") && !stdout.contains(ESC),
        "{stdout:?}"
    );
    let (_, stdout, _) = venusc_env(&["check", "--color", "never", MIXED], &[]);
    assert!(!stdout.contains(ESC), "{stdout:?}");
}

#[test]
fn color_always_gives_ansi_escapes_even_when_piped() {
    let (code, stdout, _) = venusc_env(&["--color", "always", "check", MIXED], &[]);
    assert_eq!(code, 1);
    assert!(stdout.contains(ESC), "{stdout:?}");
    // Colour never leaks into the machine-readable formats.
    for format in ["json", "github"] {
        let (_, stdout, _) = venusc_env(
            &["--color", "always", "check", "--format", format, MIXED],
            &[],
        );
        assert!(!stdout.contains(ESC), "{format}: {stdout:?}");
    }
}

#[test]
fn explain_a_key_prints_its_table_entry() {
    let (code, stdout, _) = venusc(&["explain", "micro_batch"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "# `micro_batch` (plan key)\n\n\
         sequences per microbatch\n\n\
         usage:       `micro_batch COUNT`\n\
         default:     required\n\
         unit:        sequences\n\
         Megatron-LM: --micro-batch-size\n\
         VenusSim:    micro-batch-size\n"
    );
}

#[test]
fn explain_a_misspelt_key_suggests_the_key() {
    let (code, _, stderr) = venusc(&["explain", "micro_bach"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("`micro_batch`"), "{stderr}");
}

#[test]
fn a_repository_with_a_library_checks_clean_and_legitimate_warnings_can_be_allowed() {
    let repo = "tests/fixtures/cli/repo";
    let (code, stdout, _) = venusc(&["check", "--format", "json", repo]);
    assert_eq!(code, 0, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // lib/models.venus, runs/a.venus, runs/b.venus and the sweep sweeps/our_8b_tp.venus.
    assert_eq!(v["files"], 4);
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    // Only the cross-node cp of runs/b.venus: no E0108 for the library, no W0004 for the
    // models a run does not use, no E0103 for the partial plan the runs complete, no E0201
    // for the sweep's lists.
    assert_eq!(codes, ["W0001"], "{stdout}");
    let (code, _, _) = venusc(&["check", "--deny-warnings", repo]);
    assert_eq!(code, 1);
    let (code, stdout, _) = venusc(&["check", "--deny-warnings", "--allow", "W0001", repo]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(stdout, "", "nothing to report");
    let (code, stdout, _) = venusc(&["check", "--deny", "W0001", repo]);
    assert_eq!(code, 1);
    assert!(stdout.contains("error[W0001]"), "{stdout}");
}

#[test]
fn a_library_alone_is_checked_whole_and_running_it_is_e0108() {
    let lib = "tests/fixtures/cli/repo/lib/models.venus";
    let (code, stdout, _) = venusc(&["check", lib]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout.contains("error[E0103]: plan `common` is missing required key `global_batch`"),
        "{stdout}"
    );
    // A complete library checks clean, and `sim` of it has nothing to run.
    let complete = "tests/ui/valid/library_of_definitions.venus";
    let (code, stdout, _) = venusc(&["check", complete]);
    assert_eq!((code, stdout.as_str()), (0, ""));
    let (code, _, stderr) = venusc(&["sim", complete]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("error[E0108]: no scenario to run"),
        "{stderr}"
    );
}

#[test]
fn allow_and_deny_reject_error_codes_and_unknown_codes() {
    let (code, _, stderr) = venusc(&["check", "--allow", "E0301", CLEAN]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("only warnings can be allowed or denied"),
        "{stderr}"
    );
    let (code, _, stderr) = venusc(&["check", "--deny", "W9999", CLEAN]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no such code"), "{stderr}");
}

#[test]
fn test_runs_the_expect_bounds_and_annotates_a_missed_one_for_github() {
    let dir = "tests/fixtures/cli/expect";
    let (code, stdout, stderr) = venusc(&["test", dir]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("`holds` ... ok ("), "{stdout}");
    assert!(
        stdout.contains("`misses` ... FAILED: 1 bound missed"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(
            "2 scenarios with `expect`: 1 passed, 1 failed; 1 without `expect` not run\n"
        ),
        "{stdout}"
    );
    assert!(
        stderr.contains("error[E0501]: predicted iteration time"),
        "{stderr}"
    );

    let (code, _, stderr) = venusc(&["test", "--format", "github", dir]);
    assert_eq!(code, 1);
    let annotations: Vec<&str> = stderr.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(annotations.len(), 1, "{stderr}");
    assert!(
        annotations[0].starts_with("::error file=tests/fixtures/cli/expect/bounds.venus,line=13,"),
        "{stderr}"
    );
    assert!(annotations[0].contains("title=E0501::"), "{stderr}");

    let (_, stdout, stderr) = venusc(&["test", "--format", "json", dir]);
    let results: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (results["tested"].as_u64(), results["passed"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(results["results"][1]["status"], "failed");
    let diags: serde_json::Value = serde_json::from_str(&stderr).unwrap();
    assert_eq!(diags["errors"], 1);
    assert_eq!(diags["diagnostics"][0]["code"], "E0501");
}

#[test]
fn test_passes_when_every_bound_holds() {
    let (code, stdout, stderr) = venusc(&["test", "tests/fixtures/cli/expect_holds.venus"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.starts_with("test tests/fixtures/cli/expect_holds.venus `holds` ... ok ("),
        "{stdout}"
    );
    assert!(
        stdout.ends_with(
            "1 scenario with `expect`: 1 passed, 0 failed; 0 without `expect` not run\n"
        ),
        "{stdout}"
    );
    assert_eq!(stderr, "");
}

/// The racks (domains of the `nvlink` dim) the members of a group sit in.
fn racks_of(group: &serde_json::Value, per_rack: u64) -> Vec<u64> {
    let mut racks: Vec<u64> = group
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_u64().unwrap() / per_rack)
        .collect();
    racks.sort_unstable();
    racks.dedup();
    racks
}

#[test]
fn gb200_nvl72_512_gpus_keep_tp_and_cp_in_a_rack_and_dp_across_racks() {
    let file = "examples/gb200_nvl72_512.venus";
    let (code, stdout, stderr) = venusc(&["compile", file, "--emit", "groups"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["world"], 512);
    // 8 racks of 64: `gpus 512` on 72-GPU domains of 4-GPU trays.
    assert_eq!(v["cluster_dims"], serde_json::json!([64, 8]));
    let groups = &v["groups"];
    for kind in ["tp", "cp", "tp-cp"] {
        let list = groups[kind].as_array().unwrap();
        assert!(!list.is_empty());
        for g in list {
            assert_eq!(racks_of(g, 64).len(), 1, "{kind} group {g} leaves its rack");
        }
    }
    let dp = groups["dp"].as_array().unwrap();
    assert_eq!(dp.len(), 16);
    for g in dp {
        assert_eq!(g.as_array().unwrap().len(), 32);
        assert_eq!(racks_of(g, 64).len(), 4, "dp group {g}");
    }
    // And it simulates: a positive iteration time on 512 GPUs.
    let (code, stdout, stderr) = venusc(&["sim", file, "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(r["world_size"], 512);
    assert!(r["iteration_time_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn sim_with_a_json_report_writes_its_diagnostics_as_one_json_document_on_stderr() {
    let file = "tests/fixtures/cli/sim_json_diagnostics.venus";
    let (code, stdout, stderr) = venusc(&["sim", "--format", "json", file]);
    assert_eq!(code, 1, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(report["iteration_time_ms"].as_f64().unwrap() > 1.0);
    let diags: serde_json::Value = serde_json::from_str(&stderr).unwrap();
    let codes: Vec<&str> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["W0004", "E0501"]);
    assert_eq!(
        (diags["errors"].as_u64(), diags["warnings"].as_u64()),
        (Some(1), Some(1))
    );
    // The text report keeps human diagnostics.
    let (_, _, stderr) = venusc(&["sim", file]);
    assert!(
        stderr.contains("warning[W0004]") && stderr.contains("error[E0501]"),
        "{stderr}"
    );
}

#[test]
fn a_sweep_file_checks_as_a_sweep_and_a_bad_list_element_is_reported_where_it_is() {
    let (code, stdout, _) = venusc(&["check", "examples/sweeps/llama3_70b.venus"]);
    assert_eq!((code, stdout.as_str()), (0, ""));
    let dir = std::env::temp_dir().join(format!("venusc-sweep-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.venus");
    std::fs::write(
        &file,
        "model m : llama2_7b < >\ncluster c : dgx_h100 < nodes 2 >\nplan < tp [1 2 4 8 many] micro_batch 1 global_batch [64 128] >\n",
    )
    .unwrap();
    let (code, stdout, _) = venusc(&["check", "--format", "json", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let d = &v["diagnostics"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{stdout}");
    assert_eq!(d[0]["code"], "E0201");
    assert_eq!(
        d[0]["message"],
        "expected count (e.g. 8), found name `many`"
    );
    assert_eq!(
        (d[0]["line"].as_u64(), d[0]["column"].as_u64()),
        (Some(3), Some(20))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_malformed_table_or_shard_is_e0607_with_a_help() {
    let dir = std::env::temp_dir().join(format!("venusc-e0607-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let table = dir.join("runs.tsv");
    std::fs::write(&table, "a\tb\n1\t2\n").unwrap();
    let (code, _, stderr) = venusc(&["validate", table.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error[E0607]: "), "{stderr}");
    assert!(
        stderr.contains("the table lacks 27 columns: `id`, `source`, `model`,"),
        "{stderr}"
    );
    // The help lists every column the table needs and names the table that ships.
    assert!(stderr.contains("= help: a table's header names these columns, in any order: id, source, model, params_b,"), "{stderr}");
    assert!(stderr.contains("docs/data/published-runs.tsv"), "{stderr}");
    let shard = dir.join("part.json");
    std::fs::write(&shard, "{\"not\": \"a sweep\"}").unwrap();
    let (code, _, stderr) = venusc(&["sweep", "--merge", shard.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error[E0607]: "), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_file_of_several_scenarios_checks_each_and_asks_no_scenario_choice() {
    let dir = std::env::temp_dir().join(format!("venusc-sweep-scenarios-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two.venus");
    std::fs::write(
        &file,
        "model m : llama2_7b < >\ncluster c : dgx_h100 < nodes 2 >\n\
         scenario a < model m cluster c plan < tp [1 2 x] micro_batch 1 global_batch 8 > >\n\
         scenario b < model m cluster c plan < tp 8 micro_batch 1 global_batch [8 y] > >\n",
    )
    .unwrap();
    let (code, stdout, _) = venusc(&["check", "--format", "json", file.to_str().unwrap()]);
    assert_eq!(code, 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let found: Vec<(String, u64)> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap(),
            )
        })
        .collect();
    // One bad element in each scenario's plan; no E0108 ("2 scenarios and none chosen").
    assert_eq!(
        found,
        [("E0201".to_string(), 3), ("E0201".to_string(), 4)],
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The table of `tests/fixtures/validate/runs.tsv`: a speed row, a `peak_mem_gib` row whose
/// prediction is over the GPU's 80 GiB (compared all the same) and a row without `tp`.
const RUNS: &str = "tests/fixtures/validate/runs.tsv";

fn close(v: &serde_json::Value, want: f64) -> bool {
    v.as_f64()
        .is_some_and(|x| (x - want).abs() <= 1e-9 * want.abs())
}

#[test]
fn validate_json_gives_runs_md_fields_for_a_speed_a_memory_and_a_skipped_row() {
    let (code, stdout, stderr) = venusc(&["validate", "--format", "json", RUNS]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let keys = |o: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = o.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&v), ["rows", "summary"]);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert_eq!(
            keys(r),
            [
                "error",
                "id",
                "metric",
                "predicted",
                "published",
                "reason",
                "status"
            ]
        );
    }
    // The speed row: tokens/s per GPU of the simulated iteration, the figure `sim` gives for
    // the same scenario (437,589.81 tokens/s over 8 GPUs).
    let speed = &rows[0];
    assert_eq!(speed["id"], "speed_gpt13b_tokens");
    assert_eq!(speed["status"], "simulated");
    assert!(speed["reason"].is_null());
    assert_eq!(speed["metric"], "tokens_per_s_per_gpu");
    assert_eq!(speed["published"], 30000.0);
    assert!(close(&speed["predicted"], 54698.72651113912), "{speed}");
    assert!(
        close(&speed["error"], 54698.72651113912 / 30000.0 - 1.0),
        "{speed}"
    );
    // The memory row: the memory model's peak in GiB, over the GPU's 80 GiB yet compared.
    let memory = &rows[1];
    assert_eq!(memory["id"], "memory_gpt13b_over_80gib");
    assert_eq!(memory["status"], "simulated");
    assert_eq!(memory["metric"], "peak_mem_gib");
    assert_eq!(memory["published"], 90.0);
    assert!(close(&memory["predicted"], 239.60980033874512), "{memory}");
    assert!(
        close(&memory["error"], 239.60980033874512 / 90.0 - 1.0),
        "{memory}"
    );
    let skipped = &rows[2];
    assert_eq!(skipped["id"], "skipped_no_tp");
    assert_eq!(skipped["status"], "skipped");
    assert_eq!(skipped["reason"], "tp not stated");
    assert_eq!(skipped["metric"], "iter_time_s");
    assert_eq!(skipped["published"], 1.5);
    assert!(skipped["predicted"].is_null() && skipped["error"].is_null());
    // Summaries: fractions, one row each.
    let s = &v["summary"];
    assert_eq!(
        (s["simulated"].as_u64(), s["skipped"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(s["time"]["rows"], 1);
    assert!(close(&s["time"]["mape"], 54698.72651113912 / 30000.0 - 1.0));
    assert!(close(
        &s["time"]["worst"],
        54698.72651113912 / 30000.0 - 1.0
    ));
    assert_eq!(s["memory"]["rows"], 1);
    assert!(close(&s["memory"]["mape"], 239.60980033874512 / 90.0 - 1.0));
    // The Markdown report states the same errors.
    let (_, markdown, _) = venusc(&["validate", RUNS]);
    assert!(
        markdown.contains("| 30000 | 54699 | 0.546 | 0.300 |"),
        "{markdown}"
    );
    assert!(markdown.contains("| peak_mem_gib | 90 | 239.6 | – | – | – | +166.2% |"));
    assert!(markdown.contains("| +82.3% |"), "{markdown}");
}

/// The same figures as `sim` and `check` give for the scenarios `validate` generates.
#[test]
fn validate_figures_are_those_of_sim_and_check_on_the_generated_scenarios() {
    let dir = std::env::temp_dir().join(format!("venusc-validate-e2e-{}", std::process::id()));
    let (code, _, stderr) = venusc(&["validate", RUNS, "--emit-scenarios", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let speed = dir.join("speed_gpt13b_tokens.venus");
    let (_, sim, _) = venusc(&["sim", "--format", "json", speed.to_str().unwrap()]);
    let sim: serde_json::Value = serde_json::from_str(&sim).unwrap();
    assert!(
        close(&sim["tokens_per_second"], 54698.72651113912 * 8.0),
        "{sim}"
    );
    // `check` still rejects the memory row's plan: 239.6 GiB + the 2.5 GiB reserve.
    let memory = dir.join("memory_gpt13b_over_80gib.venus");
    let (code, check, _) = venusc(&["check", memory.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(
        check.contains("error[E0401]: pipeline stage 0 needs 242.1 GiB but `h100_sxm` has 80 GiB"),
        "{check}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// RUNS.md: columns may come in any order and unknown columns are ignored.
#[test]
fn validate_ignores_column_order_and_unknown_columns() {
    let table = std::fs::read_to_string(RUNS).unwrap();
    let shuffled: String = table
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let mut cells: Vec<&str> = line.split('\t').collect();
            cells.reverse();
            // A column RUNS.md does not know, in the middle.
            cells.insert(3, if i == 0 { "lab_notes" } else { "seen twice" });
            cells.join("\t") + "\n"
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("venusc-validate-cols-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("runs.tsv");
    std::fs::write(&path, shuffled).unwrap();
    let (_, want, _) = venusc(&["validate", "--format", "json", RUNS]);
    let (code, got, stderr) = venusc(&["validate", "--format", "json", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(got, want);
    assert!(got.contains("\"predicted\": 54698.72651113912"), "{got}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Parallel folding on 64 GPUs (tp 2 × dp 16 × pp 2 for attention; etp 1 × ep 8 × expert dp 4
/// × pp 2 for experts): `--emit groups` lists the expert grid's groups in Megatron's
/// etp-ep-dp-pp order (parallel_state.py's expert `RankGenerator`).
#[test]
fn emit_groups_lists_the_folded_expert_grid() {
    let file = "tests/ui/folding/valid_parallel_folding.venus";
    let (code, stdout, stderr) = venusc(&["compile", file, "--scenario", "s1", "--emit", "groups"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        v["sizes"],
        serde_json::json!({"tp": 2, "cp": 1, "ep": 8, "dp": 16, "pp": 2, "etp": 1, "expert_dp": 4})
    );
    let g = &v["groups"];
    assert_eq!(g["tp"][0], serde_json::json!([0, 1]));
    assert_eq!(g["expert-tp"][0], serde_json::json!([0]));
    assert_eq!(
        g["expert-ep"][0],
        serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7])
    );
    assert_eq!(g["expert-tp-ep"].as_array().unwrap().len(), 8);
    assert_eq!(g["expert-dp"][0], serde_json::json!([0, 8, 16, 24]));
    // The dense dp groups stride over tp: 16 ranks of one pp stage.
    assert_eq!(g["dp"][0].as_array().unwrap().len(), 16);
}
