//! `venusc calibrate` end to end: an nccl-tests log and a GEMM table, both in their tools'
//! formats and drawn from known constants, fit back to those constants, and the calibrated
//! library moves `sim`'s figures the way the measurements say.

use std::path::{Path, PathBuf};
use std::process::Command;

fn venusc(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_venusc"))
        .args(args)
        .current_dir(dir)
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
    let dir = std::env::temp_dir().join(format!("venusc-calibrate-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// tp 8 inside one DGX H100 (NVLink 450 GB/s, written 80% and 1 µs), two nodes.
const RUN: &str = "model m < hidden 4096 layers 8 heads 32 vocab 32000 seq 2048 >\n\
cluster pod : dgx_h100 < nodes 2 >\n\
plan p < tp 8 micro_batch 1 global_batch 16 >\n\
scenario s < model m cluster pod plan p >\n";

/// An `all_reduce_perf` log in nccl-tests' format of 8 ranks on one host whose NVLink runs at
/// `eff` of 450 GB/s with `alpha` seconds per message: the direct (fully connected) all-reduce's
/// closed form, 2α + 2(n−1)/n · S / (B · eff), which is what the engine runs on an `fc` dim.
fn all_reduce_log(eff: f64, alpha: f64) -> String {
    let n = 8.0;
    let mut out = String::from(
        "# Collective test starting: all_reduce_perf\n\
         # nThread 1 nGpus 8 minBytes 1024 maxBytes 1073741824 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n\
         #\n# Using devices\n",
    );
    for r in 0..8 {
        out.push_str(&format!(
            "#  Rank  {r} Group  0 Pid  {} on     node-a device  {r} [0x18] NVIDIA H100 80GB HBM3\n",
            100 + r
        ));
    }
    out.push_str(
        "#\n#                                                              out-of-place                       in-place\n\
         #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n\
         #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n",
    );
    let mut s = 1024u64;
    while s <= 1 << 30 {
        let t = 2.0 * alpha + 2.0 * (n - 1.0) / n * s as f64 / (450e9 * eff);
        let alg = s as f64 / t / 1e9;
        let bus = alg * 2.0 * (n - 1.0) / n;
        out.push_str(&format!(
            "{s:12} {:13}     float     sum      -1 {:8.2} {alg:7.2} {bus:7.2}      0 {:8.2} {alg:7.2} {bus:7.2}      0\n",
            s / 4,
            t * 1e6,
            t * 1e6
        ));
        s *= 4;
    }
    out.push_str("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 100\n");
    out
}

/// GEMMs on the analytic curve E · Π d/(d + h) with E 60% and h 400, at the H100's BF16 peak.
fn gemm_table() -> String {
    let mut out = String::from("m\tn\tk\tdtype\ttflops\n");
    for m in [512.0, 2048.0, 8192.0, 16384.0] {
        for k in [1024.0, 4096.0, 8192.0] {
            let f = |d: f64| d / (d + 400.0);
            let e = 0.6 * f(m) * f(4096.0) * f(k);
            out.push_str(&format!("{m}\t4096\t{k}\tbf16\t{:.4}\n", e * 989.4));
        }
    }
    out
}

fn tp_comm_ms(report: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    v["phases"]["tp-comm"]["max_ms"].as_f64().unwrap()
}

#[test]
fn a_network_half_as_fast_as_written_doubles_tp_communication_once_calibrated() {
    let dir = scratch("half");
    std::fs::write(dir.join("run.venus"), RUN).unwrap();
    // Written: 80% and 1 µs; measured: 40% and 1 µs, a network 50% slower.
    std::fs::write(dir.join("all_reduce_perf.log"), all_reduce_log(0.40, 1e-6)).unwrap();
    std::fs::write(dir.join("gemm.tsv"), gemm_table()).unwrap();
    let (code, _, stderr) = venusc(
        &dir,
        &[
            "calibrate",
            "run.venus",
            "--nccl",
            "nvlink=all_reduce_perf.log",
            "--gemm",
            "gemm.tsv",
            "-o",
            "calibration.venus",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let lib = std::fs::read_to_string(dir.join("calibration.venus")).unwrap();
    assert!(
        lib.contains("  dim nvlink fc 8 450GB/s 1000ns 40.0%\n"),
        "{lib}"
    );
    assert!(
        lib.contains("  dim ib switch 2 50GB/s 5000ns 90.0%\n"),
        "{lib}"
    );
    assert!(
        lib.contains("  gemm_efficiency 60.0%\n  gemm_half_dim 400\n"),
        "{lib}"
    );
    assert!(lib.contains("typical error 0.0%"), "{lib}");
    // The library is fmt-clean and checks clean on its own.
    let (code, _, stderr) = venusc(&dir, &["fmt", "--check", "calibration.venus"]);
    assert_eq!(code, 0, "{stderr}");

    std::fs::write(
        dir.join("calibrated.venus"),
        format!(
            "use \"calibration.venus\"\n{}",
            RUN.replace("cluster pod : dgx_h100 < nodes 2 >\n", "")
                .replace("cluster pod plan", "cluster pod_calibrated plan")
        ),
    )
    .unwrap();
    let (_, before, _) = venusc(&dir, &["sim", "run.venus", "--format", "json"]);
    let (code, after, stderr) = venusc(&dir, &["sim", "calibrated.venus", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    // TP all-reduces at half the efficiency take twice as long, less the latency (1 µs per
    // message, measured as written), which does not move.
    let ratio = tp_comm_ms(&after) / tp_comm_ms(&before);
    assert!(ratio > 1.95 && ratio < 2.0, "tp-comm moved by {ratio}");
}

#[test]
fn a_log_that_cannot_measure_the_named_dim_is_e0622_naming_the_dim_it_does() {
    let dir = scratch("mismatch");
    std::fs::write(dir.join("run.venus"), RUN).unwrap();
    std::fs::write(dir.join("all_reduce_perf.log"), all_reduce_log(0.8, 1e-6)).unwrap();
    let (code, _, stderr) = venusc(
        &dir,
        &["calibrate", "run.venus", "--nccl", "ib=all_reduce_perf.log"],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            "error[E0622]: `all_reduce_perf.log`: a log of 8 ranks does not measure dim `ib`"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("name dim `nvlink` for it"), "{stderr}");
    let (code, _, stderr) = venusc(
        &dir,
        &[
            "calibrate",
            "run.venus",
            "--nccl",
            "eth=all_reduce_perf.log",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains("help: name one of its dims: `nvlink`, `ib`"),
        "{stderr}"
    );
    // A table of another precision has nothing to fit.
    std::fs::write(
        dir.join("fp8.tsv"),
        "m\tn\tk\tdtype\ttflops\n8192\t8192\t8192\tfp8\t1400\n",
    )
    .unwrap();
    let (code, _, stderr) = venusc(&dir, &["calibrate", "run.venus", "--gemm", "fp8.tsv"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("error[E0622]: `fp8.tsv`: the GEMM table has no bf16 row"),
        "{stderr}"
    );
}

#[test]
fn a_malformed_log_is_e0607_at_its_line() {
    let dir = scratch("malformed");
    std::fs::write(dir.join("run.venus"), RUN).unwrap();
    let log = all_reduce_log(0.8, 1e-6).replacen("    float     sum", "    float     sum  oops", 1);
    std::fs::write(dir.join("all_reduce_perf.log"), log).unwrap();
    let (code, _, stderr) = venusc(
        &dir,
        &[
            "calibrate",
            "run.venus",
            "--nccl",
            "nvlink=all_reduce_perf.log",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            "error[E0607]: `all_reduce_perf.log` line 17: the time column holds `-1`, not a number"
        ),
        "{stderr}"
    );
}

const RUNS_COLUMNS: &str = "id\tsource\tmodel\tparams_b\tlayers\thidden\tffn_hidden\theads\tkv_groups\tvocab\tseq_len\tglobal_batch\tmicro_batch\ttp\tpp\tvpp\tdp\tcp\tep\tseq_parallel\trecompute\tdist_optimizer\tgpu\tnum_gpus\tmetric\tvalue\tnotes\tframework\ttask\tprecision\tmegatron_args\tnvlink_domain\tnic_gbps\tgpu_memory_gib";

/// Three small GPT runs on `gpu` in RUNS.md's format (`iter_time_s`), valued by `value(i)`.
fn runs_table(gpu: &str, value: impl Fn(usize) -> f64) -> String {
    let shapes = [
        (4, 1024, 16, 1, 8, 64, 2),
        (4, 2048, 16, 2, 4, 32, 1),
        (4, 4096, 32, 4, 2, 16, 1),
    ];
    let mut out = format!("{RUNS_COLUMNS}\n");
    for (i, (l, h, heads, tp, dp, gb, mb)) in shapes.into_iter().enumerate() {
        out.push_str(&format!(
            "run{i}\tour cluster\tgpt-{h}\t\t{l}\t{h}\t{}\t{heads}\t{heads}\t32000\t2048\t{gb}\t{mb}\t{tp}\t1\t\t{dp}\t1\t1\tno\tno\tyes\t{gpu}\t{}\titer_time_s\t{}\t\tmegatron\tpretrain\tbf16\t\t\t\t\n",
            4 * h,
            tp * dp,
            value(i)
        ));
    }
    out
}

#[test]
fn runs_measured_as_venusc_predicts_them_fit_back_to_the_archs_constants() {
    let dir = scratch("runs");
    std::fs::write(dir.join("run.venus"), RUN).unwrap();
    std::fs::write(dir.join("probe.tsv"), runs_table("H100-SXM5-80GB", |_| 1.0)).unwrap();
    // `validate` gives each row's predicted iteration time: the runs as venusc predicts them.
    let (code, json, stderr) = venus_json(&dir, &["validate", "--format", "json", "probe.tsv"]);
    assert_eq!(code, 0, "{stderr}");
    let times: Vec<f64> = json["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["predicted"].as_f64().unwrap())
        .collect();
    assert_eq!(times.len(), 3);
    std::fs::write(
        dir.join("runs.tsv"),
        runs_table("H100-SXM5-80GB", |i| times[i]),
    )
    .unwrap();
    let (code, lib, stderr) = venusc(
        &dir,
        &[
            "calibrate",
            "run.venus",
            "--runs",
            "runs.tsv",
            "--keep-network",
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    // Hopper's calibration (80%, 320) is already the optimum: the fit stays there.
    assert!(
        lib.contains("  gemm_efficiency 80.0%\n  gemm_half_dim 320\n"),
        "{lib}"
    );
    assert!(lib.contains("network efficiency ×1.000"), "{lib}");
    assert!(lib.contains("# row `run0` iter_time_s: published"), "{lib}");
    assert!(lib.contains("+0.0%"), "{lib}");
    assert!(
        lib.contains("  dim nvlink fc 8 450GB/s 1000ns 80.0%\n"),
        "{lib}"
    );
    // The library is fmt-clean.
    std::fs::write(dir.join("calibration.venus"), &lib).unwrap();
    let (code, _, stderr) = venusc(&dir, &["fmt", "--check", "calibration.venus"]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_runs_table_of_another_arch_is_e0626_naming_its_arch() {
    let dir = scratch("runs-arch");
    std::fs::write(dir.join("run.venus"), RUN).unwrap();
    std::fs::write(dir.join("a100.tsv"), runs_table("A100-SXM4-80GB", |_| 1.0)).unwrap();
    let (code, _, stderr) = venusc(&dir, &["calibrate", "run.venus", "--runs", "a100.tsv"]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            "error[E0626]: `a100.tsv`: the runs table has no speed row on a `hopper` GPU that \
             simulates"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("(it has rows of `ampere`)"), "{stderr}");
}

fn venus_json(dir: &Path, args: &[&str]) -> (i32, serde_json::Value, String) {
    let (code, out, err) = venusc(dir, args);
    (code, serde_json::from_str(&out).unwrap_or_default(), err)
}
