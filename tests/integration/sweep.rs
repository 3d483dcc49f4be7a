//! End-to-end tests of `venusc sweep`: pruning counts, JSON and CSV output, shards merged into
//! the unsharded result, and `--emit-best` reproducing the sweep's figure under `venusc sim`.

use std::path::{Path, PathBuf};
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

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("venusc-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A model small enough for a debug build to simulate hundreds of plans in seconds; the
/// cluster is 2 DGX A100 nodes (16 GPUs).
const DEFS: &str = "model tiny < hidden 1024 layers 8 heads 16 vocab 32000 seq 1024 >\n\
cluster pod : dgx_a100 < nodes 2 >\n";

/// A smaller world for the whole `--auto` sweeps these tests run in a debug build: 4 layers on
/// 8 GPUs (the communication and recompute rows multiply `DEFS`'s 16-GPU space to 12,220).
const AUTO_DEFS: &str = "model tiny < hidden 1024 layers 4 heads 16 vocab 32000 seq 1024 >\n\
cluster pod : dgx_a100 < nodes 1 >\n";

/// The data-parallel sharding written in full (the distributed optimizer and DDP as
/// Megatron-FSDP's `no_shard`), so that `--auto` leaves out its `dp_sharding` row and a whole
/// auto sweep of `DEFS` stays quick to simulate in a debug build.
const WRITTEN_SHARDING: &str = "distributed_optimizer on fsdp no_shard megatron";

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn lists_file(dir: &Path) -> String {
    write(
        dir,
        "lists.venus",
        &format!("{DEFS}plan p <\n  tp [1 2 4 8] pp [1 2 4]\n  micro_batch 1 global_batch 32\n>\n"),
    )
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn json_counts_every_candidate_as_pruned_or_simulated() {
    let dir = scratch("json");
    let (code, stdout, stderr) = venusc(&["sweep", &lists_file(&dir), "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let v = json(&stdout);
    assert_eq!(v["candidates"], 12);
    // tp 8 × pp 4 = 32 GPUs of 16.
    assert_eq!(v["pruned"], serde_json::json!({"E0301": 1}));
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 11);
    let times: Vec<f64> = results
        .iter()
        .map(|r| r["iteration_time_ms"].as_f64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    for key in ["tflops_per_gpu", "peak_memory_bytes"] {
        assert!(results[0][key].as_f64().is_some_and(|x| x > 0.0), "{key}");
    }
    assert_eq!(
        results[0]["plan"]["dp"].as_u64().unwrap()
            * results[0]["plan"]["tp"].as_u64().unwrap()
            * results[0]["plan"]["pp"].as_u64().unwrap(),
        16
    );
    assert!(v.get("shard").is_none());
}

#[test]
fn text_prints_the_summary_the_ranking_and_the_pareto_front() {
    let dir = scratch("text");
    let (code, stdout, _) = venusc(&["sweep", &lists_file(&dir), "--top", "3"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "sweep of scenario `lists` on 16 GPUs");
    assert_eq!(
        lines[1],
        "12 plans: 1 E0301 (parallel sizes do not match the cluster's GPU count), 11 simulated"
    );
    assert_eq!(lines[3], "fastest 3 of 11 (ties broken by peak memory)");
    assert!(lines[5].trim_start().starts_with("1 "), "{stdout}");
    assert!(stdout.contains("pareto front of iteration time vs peak memory"));
}

#[test]
fn csv_has_a_row_per_simulated_plan() {
    let dir = scratch("csv");
    let (code, stdout, _) = venusc(&["sweep", &lists_file(&dir), "--format", "csv"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1 + 11);
    assert!(lines[0].starts_with("rank,candidate,tp,pp,"));
    assert!(lines[1].starts_with("1,"));
    assert!(
        lines[1].ends_with(",true"),
        "the fastest plan is on the Pareto front: {}",
        lines[1]
    );
}

#[test]
fn merged_shards_equal_the_unsharded_auto_sweep() {
    let dir = scratch("shards");
    let file = write(
        &dir,
        "auto.venus",
        &format!("{AUTO_DEFS}plan p < global_batch 32 {WRITTEN_SHARDING} >\n"),
    );
    let (code, whole, stderr) = venusc(&["sweep", &file, "--auto", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let mut shards = Vec::new();
    let mut covered = 0;
    for i in 1..=4 {
        let (code, out, stderr) = venusc(&[
            "sweep",
            &file,
            "--auto",
            "--shard",
            &format!("{i}/4"),
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{stderr}");
        covered += json(&out)["candidates"].as_u64().unwrap();
        shards.push(write(&dir, &format!("shard-{i}.json"), &out));
    }
    assert_eq!(covered, json(&whole)["candidates"].as_u64().unwrap());
    // Every (tp, sp, overlap, pp, vpp, schedule, cp) shape of 8 GPUs and 4 layers with each
    // of its CP exchanges, × 4 micro-batch sizes × 5 recompute choices (none, selective with
    // three module sets, full; `sweep::tests::auto_axes_cover_the_world_the_layers_and_the_
    // sequence` checks the rows one by one); the plan writes its data-parallel sharding.
    assert_eq!(covered, 4_340);
    let mut args = vec!["sweep", "--format", "json", "--merge"];
    args.extend(shards.iter().map(String::as_str));
    let (code, merged, stderr) = venusc(&args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(merged, whole);

    // With the file, a merge can write the best plan; shards of other options are refused.
    let best = dir.join("best.venus").display().to_string();
    let mut args = vec![
        "sweep",
        &file,
        "--auto",
        "--format",
        "json",
        "--emit-best",
        &best,
        "--merge",
    ];
    args.extend(shards.iter().map(String::as_str));
    let (code, _, stderr) = venusc(&args);
    assert_eq!(code, 0, "{stderr}");
    let (_, report, _) = venusc(&["sim", &best, "--format", "json"]);
    assert_eq!(
        json(&report)["iteration_time_ms"],
        json(&whole)["results"][0]["iteration_time_ms"]
    );
    let mut args = vec!["sweep", &file, "--auto", "--allow-cross-node-tp", "--merge"];
    args.extend(shards.iter().map(String::as_str));
    let (code, _, stderr) = venusc(&args);
    assert_eq!(code, 2);
    assert!(stderr.contains("come from another sweep"), "{stderr}");

    let (code, _, stderr) = venusc(&["sweep", "--merge", &shards[0], &shards[1]]);
    assert_eq!(code, 2);
    assert!(stderr.contains("missing shards: 3/4, 4/4"), "{stderr}");
}

#[test]
fn the_emitted_best_plan_simulates_to_the_sweeps_iteration_time() {
    let dir = scratch("best");
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    write(&src, "defs.venus", AUTO_DEFS);
    let file = write(
        &src,
        "sweep.venus",
        &format!("use \"defs.venus\"\nplan p < global_batch 32 {WRITTEN_SHARDING} >\nscenario s < model tiny cluster pod plan p >\n"),
    );
    let best = dir.join("out").join("best.venus");
    std::fs::create_dir_all(best.parent().unwrap()).unwrap();
    let best = best.display().to_string();
    let (code, stdout, stderr) = venusc(&[
        "sweep",
        &file,
        "--auto",
        "--format",
        "json",
        "--emit-best",
        &best,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let winner = json(&stdout)["results"][0].clone();
    // The best plan in `out/` uses `src/defs.venus`: outside its directory, so the root that
    // holds both is named (E0109 otherwise).
    assert!(stderr.contains("--root"), "{stderr}");
    let root = dir.display().to_string();
    let (code, report, stderr) = venusc(&["--root", &root, "sim", &best, "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let report = json(&report);
    assert_eq!(
        report["iteration_time_ms"].as_f64(),
        winner["iteration_time_ms"].as_f64()
    );
    assert_eq!(
        report["tflops_per_gpu"].as_f64(),
        winner["tflops_per_gpu"].as_f64()
    );
    let text = std::fs::read_to_string(&best).unwrap();
    assert!(
        text.starts_with("# The fastest of 4,340 candidate plans"),
        "{text}"
    );
    // The header states the memory as `venusc check` does: peak plus reserve.
    let peak = winner["peak_memory_bytes"].as_u64().unwrap();
    let reserve = winner["reserve_bytes"].as_u64().unwrap();
    assert!(reserve > 0);
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    let with_reserve = format!(
        "{:.2} GiB per GPU with reserve ({:.2} GiB peak + {:.2} GiB reserve)",
        gib(peak + reserve),
        gib(peak),
        gib(reserve)
    );
    assert!(text.contains(&with_reserve), "{text}");
    assert!(
        text.contains(&format!("tp {}", winner["plan"]["tp"])),
        "{text}"
    );
    // The written plan is laid out as `venusc fmt` lays it out.
    let (code, _, stderr) = venusc(&["--root", &root, "fmt", "--check", &best]);
    assert_eq!(code, 0, "{stderr}\n{text}");
}

#[test]
fn a_typo_in_a_list_is_reported_against_the_file() {
    let dir = scratch("typo");
    let file = write(
        &dir,
        "typo.venus",
        &format!("{DEFS}plan p < tp [1 2 fuor] micro_batch 1 global_batch 32 >\n"),
    );
    let (code, stdout, stderr) = venusc(&["sweep", &file]);
    assert_eq!(code, 1);
    assert!(stdout.is_empty());
    assert!(stderr.contains("error[E0201]"), "{stderr}");
    assert!(stderr.contains("tp [1 2 fuor]"), "{stderr}");
}

#[test]
fn a_bad_shard_is_a_usage_error() {
    let dir = scratch("badshard");
    let (code, _, stderr) = venusc(&["sweep", &lists_file(&dir), "--shard", "5/4"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("`5/4` is not a shard"), "{stderr}");
}

#[test]
fn the_example_sweep_has_1080_candidates_and_shards_them() {
    let (code, stdout, stderr) = venusc(&[
        "sweep",
        "examples/sweeps/llama3_70b.venus",
        "--shard",
        "1/216",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v = json(&stdout);
    assert_eq!(v["candidates"], 5);
    assert_eq!(v["shard"]["total_candidates"], 3 * 5 * 4 * 3 * 3 * 2);
    assert_eq!(v["world_size"], 1024);
}

#[test]
fn the_objective_headroom_and_pareto_flags_change_the_ranking_the_pruning_and_the_view() {
    let dir = scratch("flags");
    let file = lists_file(&dir);
    let (code, stdout, stderr) =
        venusc(&["sweep", &file, "--objective", "throughput", "--top", "3"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("best 3 of 11 by tokens/s per GPU (ties broken by peak memory)"),
        "{stdout}"
    );
    assert!(stdout.contains("tokens/s/GPU"), "{stdout}");
    let (code, stdout, _) = venusc(&[
        "sweep",
        &file,
        "--objective",
        "gpu-hours",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0);
    let v = json(&stdout);
    assert_eq!(v["objective"], "gpu-hours");
    let per_token: Vec<f64> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| 1.0 / r["tokens_per_second_per_gpu"].as_f64().unwrap())
        .collect();
    assert!(per_token.windows(2).all(|w| w[0] <= w[1]), "{per_token:?}");

    // A tiny model peaks at a few GiB of the A100's 80: keeping 99.9% free prunes every plan.
    let (code, stdout, _) = venusc(&["sweep", &file, "--headroom", "99.9%"]);
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with(
            "sweep of scenario `lists` on 16 GPUs, keeping 99.9% of GPU memory free\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("11 E0401 (a pipeline stage does not fit in GPU memory, keeping 99.9% free)"),
        "{stdout}"
    );
    for bad in ["100", "-5%", "ten"] {
        let (code, _, stderr) = venusc(&["sweep", &file, &format!("--headroom={bad}")]);
        assert_eq!(code, 2, "{bad}");
        assert!(stderr.contains("is not a headroom"), "{bad}: {stderr}");
    }

    let (code, stdout, _) = venusc(&["sweep", &file, "--pareto"]);
    assert_eq!(code, 0);
    assert!(!stdout.contains("fastest"), "{stdout}");
    assert!(
        stdout.contains("pareto front of iteration time vs peak memory"),
        "{stdout}"
    );
    let (code, _, _) = venusc(&["sweep", &file, "--pareto", "--shard", "1/2"]);
    assert_eq!(code, 2);
}

#[test]
fn emit_best_with_every_candidate_pruned_is_e0621_naming_the_code_that_pruned_most() {
    let dir = scratch("no-best");
    // A 100B-class model on 16 A100s: no tp × pp of the lists fits in 80 GB.
    let file = write(
        &dir,
        "huge.venus",
        "model huge < hidden 12288 layers 96 heads 96 vocab 51200 seq 2048 >\n\
         cluster pod : dgx_a100 < nodes 2 >\n\
         plan p < tp [1 2] pp [1 2] micro_batch 1 global_batch 32 >\n\
         scenario s < model huge cluster pod plan p >\n",
    );
    let best = dir.join("best.venus").display().to_string();
    let (code, _, stderr) = venusc(&["sweep", &file, "--emit-best", &best]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "error[E0621]: no plan of `s`'s 4 candidates was simulated, so there is no best plan \
             to write"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("help: 4 candidates did not fit in memory: add larger `pp` or `tp`"),
        "{stderr}"
    );
    assert!(!Path::new(&best).exists());
}

#[test]
fn prune_lists_the_exhaustive_top_k_and_emit_megatron_writes_the_winners_flags() {
    let dir = scratch("prune");
    let file = write(
        &dir,
        "prune.venus",
        &format!(
            "{DEFS}plan p <\n  tp [1 2 4 8] pp [1 2 4] micro_batch [1 2]\n  global_batch 32 recompute [none full]\n>\n"
        ),
    );
    let (code, stdout, stderr) = venusc(&["sweep", &file, "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let all = json(&stdout);
    let flags = dir.join("best.sh").display().to_string();
    let (code, stdout, stderr) = venusc(&[
        "sweep",
        &file,
        "--prune",
        "--top",
        "3",
        "--format",
        "json",
        "--emit-megatron",
        &flags,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let best = json(&stdout);
    let results = all["results"].as_array().unwrap();
    assert_eq!(best["results"].as_array().unwrap(), &results[..3]);
    assert_eq!(best["kept"], 3);
    // Every valid plan the pruned sweep does not list counts under `bound`.
    let valid = results.len() as u64 + all["pruned"]["duplicate"].as_u64().unwrap_or(0);
    assert_eq!(best["pruned"]["bound"].as_u64(), Some(valid - 3));
    // It simulated fewer plans than the exhaustive sweep did.
    let simulated: u64 = stderr
        .split("simulated ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(simulated < valid, "{stderr}");
    let text = std::fs::read_to_string(&flags).unwrap();
    assert!(
        text.starts_with("# The fastest of 48 candidate plans"),
        "{text}"
    );
    let winner = &results[0]["plan"];
    for (flag, key) in [
        ("--tensor-model-parallel-size", "tp"),
        ("--pipeline-model-parallel-size", "pp"),
        ("--micro-batch-size", "micro_batch"),
    ] {
        assert!(
            text.contains(&format!("{flag} {}", winner[key])),
            "{flag}: {text}"
        );
    }
    // The text view lists the K plans and no Pareto front of them.
    let (code, stdout, _) = venusc(&["sweep", &file, "--prune", "--top", "2"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("cannot rank among the best 2"), "{stdout}");
    assert!(stdout.contains("fastest 2 of 2"), "{stdout}");
    assert!(!stdout.contains("pareto front"), "{stdout}");
    let (code, _, stderr) = venusc(&["sweep", &file, "--prune", "--pareto"]);
    assert_eq!(code, 2, "{stderr}");
}
