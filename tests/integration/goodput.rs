//! The goodput report end to end: the Llama 3 405B scenario with the failure rates of the
//! Llama 3 paper against the paper's own figures, the text rows, and `sweep --objective
//! goodput`.

use std::path::PathBuf;
use std::process::Command;

const LLAMA: &str = "examples/llama3_405b_16k_goodput.venus";

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

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("venusc-goodput-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn llama_json() -> serde_json::Value {
    let (code, stdout, stderr) = venusc(&["sim", LLAMA, "--format", "json", "--deterministic"]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn within(value: f64, target: f64, share: f64) -> bool {
    (value - target).abs() <= share * target
}

/// The Llama 3 paper (arXiv:2407.21783, section 3.3.4): 419 unexpected interruptions in a
/// 54-day snapshot on 16,384 GPUs, and "higher than 90% effective training time". The
/// example's rates are Table 5's counts per component kind, so the interruptions reproduce
/// the 419 by construction; the goodput is the model's prediction, from the paper's storage
/// bandwidth (2 TB/s) and an assumed 10-minute restart.
#[test]
fn llama3_405b_16k_goodput_lands_within_ten_percent_of_the_llama3_paper() {
    let v = llama_json();
    let g = &v["goodput"];
    let per_day = f(&g["interruptions_per_day"]);
    assert!(within(per_day, 419.0 / 54.0, 0.10), "{per_day} per day");
    assert!((per_day - 419.0 / 54.0).abs() < 0.01, "{per_day} per day");
    let goodput = f(&g["goodput"]);
    assert!(within(goodput, 0.90, 0.10), "goodput {goodput}");
    // What the model gives (not tuned to the paper): 92.4%, above the paper's "higher than 90%".
    assert!((goodput - 0.924).abs() < 0.001, "goodput {goodput}");
}

#[test]
fn llama3_405b_16k_goodput_figures_follow_from_the_inputs() {
    let v = llama_json();
    let g = &v["goodput"];
    // bf16 weights (2 bytes) + fp32 master weights and two fp32 Adam moments (12 bytes).
    let params = v["parameters"]["total"].as_u64().unwrap();
    assert_eq!(g["checkpoint_bytes"].as_u64().unwrap(), params * 14);
    // 5.68 TB at the storage's 2 TB/s (16,384 GPUs' 50 GB/s links carry far more).
    let delta = params as f64 * 14.0 / 2e12;
    assert!((f(&g["checkpoint_write_s"]) - delta).abs() < 1e-9);
    assert!((f(&g["checkpoint_read_s"]) - delta).abs() < 1e-9);
    // Per day: 16,384 / 79,230 h + 2,048 / 24,351 h + 16,384 / 505,563 h, times 24 h.
    let per_day = 24.0 * (16_384.0 / 79_230.0 + 2_048.0 / 24_351.0 + 16_384.0 / 505_563.0);
    assert!((f(&g["interruptions_per_day"]) - per_day).abs() < 1e-9);
    let m = 86_400.0 / per_day;
    assert!((f(&g["job_mtbf_s"]) - m).abs() < 1e-6);
    let tau = (2.0 * delta * m).sqrt() - delta;
    assert!((f(&g["optimal_interval_s"]) - tau).abs() < 1e-6);
    assert_eq!(g["interval_s"], g["optimal_interval_s"]);
    assert_eq!(f(&g["restart_s"]), 600.0);
    let lost = (tau + delta) / 2.0 + 600.0 + delta;
    assert!((f(&g["lost_per_interruption_s"]) - lost).abs() < 1e-6);
    let goodput = tau / (tau + delta) * (1.0 - lost / m);
    assert!((f(&g["goodput"]) - goodput).abs() < 1e-12);
    let iterations = (tau / (f(&v["iteration_time_ms"]) / 1e3)).round() as u64;
    assert_eq!(g["save_interval_iterations"].as_u64().unwrap(), iterations);
    let days = f(&v["train"]["time_days"]) / goodput;
    assert!((f(&g["time_to_train_days"]) - days).abs() < 1e-9);
}

#[test]
fn text_report_shows_interruptions_checkpoint_interval_and_goodput() {
    let (code, stdout, stderr) = venusc(&["sim", LLAMA, "--deterministic"]);
    assert_eq!(code, 0, "{stderr}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no `{name}` row in\n{stdout}"))
            .to_string()
    };
    assert!(row("interruptions").contains("7.76 per day (4.96 GPU, 2.02 node, 0.78 link)"));
    assert!(row("checkpoint  ").contains("5.68 TB, written in 2.8 s at 2.00 TB/s"));
    assert!(row("checkpoint interval").contains("4.1 min (Young/Daly optimum)"));
    assert!(row("goodput").contains("92.40% of wall time trains"));
    assert!(row("time with interruptions").contains("days"));
}

/// Two checkpoint intervals on a cluster whose 16 GPUs fail every 100 hours each: the sweep
/// ranks the one near the Young/Daly optimum first, and the plans without failure inputs
/// keep a goodput of 1 (not written in the JSON).
#[test]
fn sweep_goodput_objective_ranks_the_interval_near_the_optimum_first() {
    let dir = scratch("sweep");
    let file = dir.join("interval.venus");
    std::fs::write(
        &file,
        "model m : llama2_7b < >
cluster c : dgx_h100 < nodes 2 gpu_mtbf 100h storage_write_bw 100GB/s restart 5min >
plan < tp 8 sp micro_batch 1 global_batch 64 checkpoint_interval [4h 200s] allow W0017 >
",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let (code, stdout, stderr) =
        venusc(&["sweep", path, "--objective", "goodput", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(
        results[0]["plan"]["settings"]["checkpoint_interval"],
        "200s"
    );
    let (best, worst) = (f(&results[0]["goodput"]), f(&results[1]["goodput"]));
    // 16 GPUs at 100 h: M = 6.25 h; a 4 h interval loses 2 h of every 6.25 h.
    assert!(best > 0.97 && worst < 0.70, "{best} {worst}");
    assert_eq!(v["objective"], "goodput");
    let (code, text, stderr) = venusc(&["sweep", path, "--objective", "goodput"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains("by goodput-weighted tokens/s per GPU"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
