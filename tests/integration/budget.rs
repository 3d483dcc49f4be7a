//! Budgets before allocating, time overflow and the other "no entry point can be broken"
//! findings of the reliability report (H1, H4, M1, M3, L2, L7): each reproducer runs the
//! binary under an address-space limit and the hang guard, and must end in a coded
//! diagnostic, never an abort, an out-of-memory kill or a false deadlock.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The address space a run may use: far below what any of these inputs used to take
/// (6–110 GB), above what the debug binary and its threads reserve.
const MEMORY_LIMIT_KIB: u64 = 4 << 20;

const DEMO: &str = include_str!("../../examples/venussim_demo.venus");

/// The report's H4 plan (check-clean): 100,000 layers with tp 2 over pp 8.
const DEEP: &str = "model deep < hidden 64 layers 100000 heads 2 vocab 32000 seq 2048 >\n\
cluster c : dgx_h100 < nodes 2 >\n\
plan < tp 2 pp 8 micro_batch 1 global_batch 64 sp recompute full distributed_optimizer >\n";

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "venusc-budget-{}-{test}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `venusc ARGS` under [`MEMORY_LIMIT_KIB`] and the hang guard (`guard.rs`): (exit, stdout, stderr).
/// Panics on a signal (an abort, an out-of-memory kill), a panic's 101, or a hang.
fn venusc(scratch: &Scratch, args: &[&str]) -> (i32, String, String) {
    let (out, err) = (scratch.path("stdout"), scratch.path("stderr"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {MEMORY_LIMIT_KIB} && exec \"$0\" \"$@\" >'{out}' 2>'{err}'"
        ))
        .arg(env!("CARGO_BIN_EXE_venusc"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Some(spent) = super::guard::overdue(child.id(), start, super::guard::WALL_LIMIT) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`venusc {}` still running after {spent}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    let code = status.code().unwrap_or_else(|| {
        panic!(
            "`venusc {}` died from a signal: {status}\n{stderr}",
            args.join(" ")
        )
    });
    assert_ne!(code, 101, "`venusc {}` panicked:\n{stderr}", args.join(" "));
    (
        code,
        std::fs::read_to_string(&out).unwrap_or_default(),
        stderr,
    )
}

fn demo_with(from: &str, to: &str) -> String {
    assert!(DEMO.contains(from), "{from}");
    DEMO.replace(from, to)
}

#[test]
fn a_deep_tp_model_is_over_the_trace_budget_before_it_allocates() {
    // 64 microbatches passed 6 GB after 13 s; 1,024 would have taken ~110 GB (report H4).
    let s = Scratch::new("deep");
    for (gb, nodes, help) in [
        (
            "128",
            "76801024",
            "lower `global_batch` from 128 to 64 or less",
        ),
        (
            "1024",
            "614408192",
            "lower `global_batch` from 1024 to 102 or less",
        ),
    ] {
        let file = s.write(
            "deep.venus",
            &DEEP.replace("global_batch 64", &format!("global_batch {gb}")),
        );
        let (code, stdout, stderr) = venusc(&s, &["sim", &file]);
        assert_eq!(code, 1, "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.contains(&format!("error[E0601]: the trace of `deep` would hold about {nodes} nodes, over the simulation budget of 67108864")),
            "{stderr}"
        );
        assert!(stderr.contains(&format!("help: {help}")), "{stderr}");
    }
    // `sweep` counts such candidates under the code instead of running them in parallel.
    let file = s.write(
        "sweep.venus",
        &DEEP.replace("global_batch 64", "global_batch [128 1024]"),
    );
    let (code, stdout, stderr) = venusc(&s, &["sweep", &file]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains("2 plans: 2 E0601"), "{stdout}");
}

#[test]
fn billions_of_iterations_fail_fast_in_sim_and_every_trace_emitter() {
    // `iterations 4000000000` aborted on a 32 GB allocation (report H1).
    let s = Scratch::new("iterations");
    let file = s.write(
        "it.venus",
        &demo_with("iterations 5", "iterations 4000000000"),
    );
    let (code, _, stderr) = venusc(&s, &["sim", &file]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("error[E0601]"), "{stderr}");
    assert!(
        stderr.contains("help: simulate fewer iterations: `iterations 65535` or fewer fits"),
        "{stderr}"
    );
    for emit in ["perfetto", "simplified-trace", "template-trace"] {
        let out = s.path(emit);
        let (code, _, stderr) = venusc(&s, &["compile", &file, "--emit", emit, "-o", &out]);
        assert_eq!(code, 1, "{emit}: {stderr}");
        assert!(stderr.contains("error[E0601]"), "{emit}: {stderr}");
        assert!(
            !Path::new(&out).join("it.0.et").exists(),
            "{emit} wrote traces"
        );
    }
}

#[test]
fn all_ranks_on_a_huge_world_is_refused_with_the_symmetric_run_as_help() {
    // 262,144 GPUs took 178 s and 10 GB with `--all-ranks`; 1,048,576 would take ~40 GB (M3).
    let s = Scratch::new("all-ranks");
    let file = s.write(
        "big.venus",
        &demo_with("dim ib ring 2", "dim ib ring 32768")
            .replace("global_batch 64", "global_batch 524288")
            .replace("dp 2", "dp 32768"),
    );
    let (code, _, stderr) = venusc(&s, &["sim", &file, "--all-ranks"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("error[E0601]: `--all-ranks` would simulate 262144 ranks of `big` one by one, over the budget of 131072"),
        "{stderr}"
    );
    assert!(stderr.contains("help: drop `--all-ranks`"), "{stderr}");
}

#[test]
fn time_past_213_days_is_reported_as_such_never_as_a_deadlock() {
    // Each of these was "deadlock: 1499 of 1536 nodes never finish" (report M1).
    let s = Scratch::new("time");
    for (name, from, to) in [
        ("mfu", "mfu 100%", "mfu 0.000000000000001"),
        ("peak", "peak 1000TFLOP/s", "peak 30000000FLOP/s"),
        ("latency", "450GB/s 1000ns", "450GB/s 1000000000s"),
        ("bandwidth", "450GB/s 1000ns", "1B/s 1000ns"),
    ] {
        let file = s.write(&format!("{name}.venus"), &demo_with(from, to));
        let (code, _, stderr) = venusc(&s, &["sim", &file]);
        assert_eq!(code, 1, "{name}: {stderr}");
        assert!(
            stderr.contains("exceeds 213 days, the engine's range"),
            "{name}: {stderr}"
        );
        assert!(stderr.contains("error[E0602]"), "{name}: {stderr}");
        assert!(!stderr.contains("deadlock"), "{name}: {stderr}");
    }
    // `mfu 0%` is out of range when checked: every node would last forever.
    let file = s.write("zero.venus", &demo_with("mfu 100%", "mfu 0%"));
    let (code, stdout, _) = venusc(&s, &["check", &file]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stdout
            .contains("error[E0202]: `0%` is out of range: every compute node would last forever"),
        "{stdout}"
    );
}

#[test]
fn schedule_width_outside_one_to_ten_thousand_is_a_usage_error() {
    // 2^64 − 1 panicked ("capacity overflow"), 2^32 aborted on 68 GB, 0 drew one column (L2).
    let s = Scratch::new("width");
    let file = s.write("demo.venus", DEMO);
    for width in ["0", "10001", "4294967296", "18446744073709551615"] {
        let (code, stdout, stderr) = venusc(&s, &["schedule", &file, "--width", width]);
        assert_eq!(code, 2, "{width}: {stderr}");
        assert!(stdout.is_empty());
        assert!(
            stderr.contains(&format!(
                "`--width {width}` is out of range: the picture is 1 to 10000 columns wide"
            )),
            "{stderr}"
        );
    }
    let (code, stdout, _) = venusc(&s, &["schedule", &file, "--width", "10000"]);
    assert_eq!(code, 0);
    assert!(
        stdout.lines().any(|l| l.chars().count() > 1000),
        "a wide picture"
    );
}

#[test]
fn timeline_ranks_must_be_ranks_the_run_simulated() {
    // `--timeline-ranks 4294967295` wrote 0 slices with exit 0 (report L7).
    let s = Scratch::new("timeline");
    let file = s.write("demo.venus", DEMO);
    let out = s.path("t.json");
    for (rank, why) in [
        ("4294967295", "the cluster has ranks 0 to 15"),
        ("1", "the run simulates one rank per symmetry class"),
    ] {
        let (code, stdout, stderr) = venusc(
            &s,
            &["sim", &file, "--timeline", &out, "--timeline-ranks", rank],
        );
        assert_eq!(code, 2, "{stderr}");
        assert!(stdout.is_empty(), "no report before the refusal");
        assert!(
            stderr.contains(&format!("error[E0603]: `--timeline-ranks` names rank {rank}, which the run has no trace of: {why}")),
            "{stderr}"
        );
        assert!(!Path::new(&out).exists());
    }
    let (code, _, stderr) = venusc(
        &s,
        &["sim", &file, "--timeline", &out, "--timeline-ranks", "0,2"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(Path::new(&out).exists());
}

#[test]
fn a_trace_directory_of_empty_files_is_an_error_not_zero_milliseconds() {
    // Every file holding `0` nodes simulated to "iteration time 0.000 ms", exit 0 (report L7).
    let s = Scratch::new("empty-trace");
    let file = s.write("demo.venus", DEMO);
    std::fs::create_dir_all(s.0.join("traces")).unwrap();
    for rank in 0..16 {
        s.write(&format!("traces/t.{rank}.et"), "0\n");
    }
    let (code, stdout, stderr) = venusc(&s, &["sim", &file, "--trace", &s.path("traces")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("error[E0606]: the 16 trace files replayed on `demo` hold no node"),
        "{stderr}"
    );
}

#[test]
fn a_replayed_node_past_213_days_is_a_time_overflow_in_sim_trace() {
    // A `comp_replay` node of 2^64 − 1 ns listed 15 misleading "waits for ranks" lines (M1).
    let s = Scratch::new("replay-overflow");
    let file = s.write("demo.venus", DEMO);
    std::fs::create_dir_all(s.0.join("traces")).unwrap();
    for rank in 0..16 {
        s.write(
            &format!("traces/t.{rank}.et"),
            "2\n0\nroot\n-1\n1 1\n1\ncomp_replay_forward~0\n1 0\n18446744073709551615\n",
        );
    }
    let (code, _, stderr) = venusc(&s, &["sim", &file, "--trace", &s.path("traces")]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("error[E0602]: simulated time of `demo` exceeds 213 days"),
        "{stderr}"
    );
    assert!(!stderr.contains("deadlock"), "{stderr}");
}
