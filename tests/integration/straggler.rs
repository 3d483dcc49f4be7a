//! Stragglers end to end: `slow_rank`, `slow_node` and `slow_gpus` items slow the GPUs they
//! name and `slow_link` items their nodes' NICs, the report prices them against the same plan without them, symmetric and
//! `--all-ranks` runs agree, and a seeded fraction is the same run to run.

use std::path::PathBuf;
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

/// A scenario file in a directory of its own, removed on drop.
struct Scenario {
    dir: PathBuf,
    file: PathBuf,
}

impl Scenario {
    fn new(tag: &str, text: &str) -> Scenario {
        let dir = std::env::temp_dir().join(format!("venusc-slow-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{tag}.venus"));
        std::fs::write(&file, text).unwrap();
        Scenario { dir, file }
    }

    /// A fixture with `items` added to its cluster (`cluster c : BASE < nodes N >`).
    fn with_cluster_items(tag: &str, fixture: &str, items: &str) -> Scenario {
        let text = std::fs::read_to_string(fixture).unwrap();
        let (head, tail) = text.split_once("cluster c :").unwrap();
        let (cluster, rest) = tail.split_once('>').unwrap();
        Scenario::new(tag, &format!("{head}cluster c :{cluster} {items} >{rest}"))
    }

    fn path(&self) -> &str {
        self.file.to_str().unwrap()
    }

    fn json(&self, extra: &[&str]) -> (String, serde_json::Value) {
        let mut args = vec!["sim", "--format", "json", "--deterministic"];
        args.extend_from_slice(extra);
        args.push(self.path());
        let (code, stdout, stderr) = venusc(&args);
        assert_eq!(code, 0, "{stderr}");
        let v = serde_json::from_str(&stdout).unwrap();
        (stdout, v)
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

fn ms(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap()
}

fn without_engine(mut v: serde_json::Value) -> serde_json::Value {
    v.as_object_mut().unwrap().remove("engine");
    v
}

#[test]
fn one_slow_rank_in_a_pp1_data_parallel_group_costs_its_compute_times_the_slowdown() {
    // pp 1, dp 16, no overlap: every rank computes its forward and backward, then the gradient
    // all-reduce waits for the slowest member, then each runs the optimizer step. A rank at
    // 80% takes 1 / 0.8 = 1.25 times as long for all three, so the step is longer by exactly
    // 0.25 × (forward + backward + optimizer) of a full-speed rank.
    let s = Scenario::new(
        "closed",
        "model m : gpt_1_7b < >\ncluster c : dgx_h100 < nodes 2 slow_rank 5 80% >\n\
         plan < dp 16 micro_batch 1 global_batch 64 >\n",
    );
    let (_, r) = s.json(&[]);
    let min = |phase: &str| ms(&r["phases"][phase]["min_ms"]);
    let max = |phase: &str| ms(&r["phases"][phase]["max_ms"]);
    let compute = min("forward-compute") + min("backward-compute") + min("optimizer");
    let st = &r["stragglers"];
    assert_eq!(st["slow_gpus"], 1);
    assert_eq!(st["listed"][0]["rank"], 5);
    let expected = 0.25 * compute;
    assert!(
        (ms(&st["cost_ms"]) - expected).abs() < 1e-3,
        "cost {} vs {expected}",
        st["cost_ms"]
    );
    // The slow rank's own compute is 1.25 times the others'.
    assert!((max("forward-compute") / min("forward-compute") - 1.25).abs() < 1e-6);
    // Its peers wait for it in the gradient all-reduce: that is where it propagates, by
    // 15/16 of its delay per GPU on average (the slow rank itself does not wait).
    assert_eq!(st["propagates_through"], "dp");
    let delay = 0.25 * (min("forward-compute") + min("backward-compute"));
    let dp_wait = ms(&st["waits"][0]["added_ms"]);
    assert!(
        (dp_wait - delay * 15.0 / 16.0).abs() < 1e-3,
        "{dp_wait} vs {}",
        delay * 15.0 / 16.0
    );
    assert!(
        (ms(&r["iteration_time_ms"]) - ms(&st["baseline_iteration_time_ms"]) - ms(&st["cost_ms"]))
            .abs()
            < 1e-9
    );
}

#[test]
fn a_slow_link_in_a_pp1_data_parallel_group_costs_only_its_gradient_sync() {
    // pp 1, dp 16 on two nodes, no overlap: node 1's scale-out NICs at 50% slow only the
    // cross-node phase of the gradient all-reduce, which every member waits for. Compute is
    // untouched, so the step is longer by exactly the sync's extra time.
    let text = |items: &str| {
        format!(
            "model m : gpt_1_7b < >\ncluster c : dgx_h100 < nodes 2 {items} >\n\
             plan < dp 16 micro_batch 1 global_batch 64 >\n"
        )
    };
    let slow = Scenario::new("link", &text("slow_link 1 50%"));
    let plain = Scenario::new("nolink", &text(""));
    let (_, r) = slow.json(&[]);
    let (_, p) = plain.json(&[]);
    let phase = |v: &serde_json::Value, name: &str, m: &str| ms(&v["phases"][name][m]);
    for name in ["forward-compute", "backward-compute", "optimizer"] {
        assert_eq!(
            phase(&r, name, "max_ms"),
            phase(&p, name, "max_ms"),
            "{name}"
        );
    }
    let st = &r["stragglers"];
    assert_eq!(st["slow_gpus"], 0);
    assert_eq!(st["slow_links"], 8);
    assert_eq!(st["slowest_link_speed"], 0.5);
    assert_eq!(st["propagates_through"], "dp");
    let sync = phase(&r, "all-grads-sync", "max_ms") - phase(&p, "all-grads-sync", "max_ms");
    assert!(sync > 0.0);
    assert!(
        (ms(&st["cost_ms"]) - sync).abs() < 1e-6,
        "cost {} vs sync {sync}",
        st["cost_ms"]
    );
    assert_eq!(st["baseline_iteration_time_ms"], p["iteration_time_ms"]);
    let (code, out, stderr) = venusc(&["sim", slow.path()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        out.contains("slow links: 8 GPUs' scale-out NICs, the slowest at 50% of its bandwidth"),
        "{out}"
    );
    assert!(!out.contains("slow GPU"), "{out}");
}

#[test]
fn stragglers_keep_symmetric_and_all_ranks_reports_identical() {
    // Context parallelism (its ring stays explicit), experts, and an interleaved pipeline
    // with a seeded 1% (5 GPUs); a rank and a node slow. The symmetric run simulates fewer ranks and reports the same figures.
    for (fixture, items) in [
        (
            "tests/fixtures/sym_tp2_cp2_64.venus",
            "slow_rank 13 80% slow_node 3 90%",
        ),
        ("tests/fixtures/sym_moe_ep_64.venus", "slow_rank 40 70%"),
        ("tests/fixtures/sym_moe_ep_64.venus", "slow_link 1 50%"),
        (
            "tests/fixtures/sym_tp8_pp4_vpp2_512.venus",
            "slow_gpus 1% 80% 3",
        ),
    ] {
        let s = Scenario::with_cluster_items("sym", fixture, items);
        let (_, few) = s.json(&[]);
        let (_, all) = s.json(&["--all-ranks"]);
        let (f, a) = (
            few["engine"]["simulated_ranks"].as_u64().unwrap(),
            all["engine"]["simulated_ranks"].as_u64().unwrap(),
        );
        assert!(f <= a, "{fixture}: {f} vs {a}");
        assert!(
            few["stragglers"]["cost_ms"].as_f64().unwrap() > 0.0,
            "{fixture}"
        );
        assert_eq!(without_engine(few), without_engine(all), "{fixture}");
    }
}

#[test]
fn a_4096_gpu_plan_with_one_gpu_at_80_percent_reports_the_slowdown() {
    let s = Scenario::with_cluster_items(
        "one",
        "tests/fixtures/straggler_4096.venus",
        "slow_rank 17 80%",
    );
    let (_, r) = s.json(&[]);
    // Symmetry kept where it holds: rank 17 (tp 1, dp 2 of stage 0) splits each stage into
    // four classes, 16 simulated ranks instead of 4,096.
    assert_eq!(r["engine"]["simulated_ranks"], 16);
    let st = &r["stragglers"];
    assert_eq!(st["slow_gpus"], 1);
    assert_eq!(st["slowest_speed"], 0.8);
    assert!(ms(&st["cost_ms"]) > 0.0);
    assert!(ms(&r["iteration_time_ms"]) > ms(&st["baseline_iteration_time_ms"]));
    let (code, text, stderr) = venusc(&["sim", s.path()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains("stragglers: 1 slow GPU (rank 17 at 80%), the slowest at 80%"),
        "{text}"
    );
    assert!(text.contains("ms without them: +"), "{text}");
    assert!(text.contains("propagates through the dp group"), "{text}");
}

#[test]
fn one_percent_of_4096_gpus_spread_by_a_seed_is_byte_identical_run_to_run() {
    let s = Scenario::with_cluster_items(
        "seed",
        "tests/fixtures/straggler_4096.venus",
        "slow_gpus 1% 80% 7",
    );
    let (first, r) = s.json(&[]);
    let (second, _) = s.json(&[]);
    assert_eq!(first, second);
    // round(1% × 4096) = 41 GPUs.
    assert_eq!(r["stragglers"]["slow_gpus"], 41);
    assert!(ms(&r["stragglers"]["cost_ms"]) > 0.0);
    // Another seed picks other GPUs.
    let other = Scenario::with_cluster_items(
        "seed8",
        "tests/fixtures/straggler_4096.venus",
        "slow_gpus 1% 80% 8",
    );
    let (_, o) = other.json(&[]);
    assert_ne!(r["stragglers"]["listed"], o["stragglers"]["listed"]);
}

#[test]
fn a_plan_without_stragglers_has_no_straggler_section() {
    let (code, stdout, stderr) = venusc(&[
        "sim",
        "--format",
        "json",
        "--deterministic",
        "tests/fixtures/straggler_4096.venus",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(r.get("stragglers").is_none());
    assert_eq!(r["engine"]["simulated_ranks"], 4);
}
