//! End-to-end simulation benchmark: front end (parse, resolve, check) + lowering + event
//! engine + report, through the library as `venusc sim` drives it. For each case: wall time
//! (best of N runs; the 4,096-GPU `--all-ranks` case runs once), events, simulated ranks and
//! events per second.
//!
//! Run: `cargo bench --bench sim` (plain `std::time` measurement). `-- --quick` skips the
//! `--all-ranks` case, which takes tens of seconds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use venusc::simulate::{simulate, SimOptions};

struct Case {
    name: &'static str,
    file: &'static str,
    all_ranks: bool,
    runs: u32,
}

const CASES: &[Case] = &[
    Case {
        name: "VenusSim demo (16 GPUs)",
        file: "examples/venussim_demo.venus",
        all_ranks: false,
        runs: 20,
    },
    Case {
        name: "GPT-1T, 3,072 GPUs",
        file: "examples/sc21_gpt_1t.venus",
        all_ranks: false,
        runs: 3,
    },
    Case {
        name: "Llama 3 405B, 16,384 GPUs",
        file: "examples/llama3_405b_16k.venus",
        all_ranks: false,
        runs: 5,
    },
    Case {
        name: "GPT-3 175B, 4,096 GPUs, all ranks",
        file: "benches/fixtures/gpt3_175b_4096.venus",
        all_ranks: true,
        runs: 1,
    },
];

struct Run {
    wall: Duration,
    events: u64,
    ranks: u64,
    iteration_ms: f64,
}

/// Front end + lowering + simulation of one file, timed as a whole.
fn run_once(path: &Path, all_ranks: bool) -> Run {
    let t0 = Instant::now();
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut session = venusc::Session::new();
    let mut read = |p: &Path| std::fs::read(p).map_err(|e| e.to_string().into());
    let root = session.load(path, &bytes, &mut read);
    let checked = session.check(root);
    assert!(
        !checked.has_errors(),
        "{}: {:?}",
        path.display(),
        checked.diagnostics
    );
    let sc = checked
        .select(None)
        .unwrap_or_else(|_| panic!("{}: no single scenario", path.display()));
    let opts = SimOptions {
        all_ranks,
        ..SimOptions::default()
    };
    let sim = simulate(sc, &opts).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let wall = t0.elapsed();
    Run {
        wall,
        events: sim.report.engine.events,
        ranks: sim.report.engine.simulated_ranks,
        iteration_ms: sim.report.iteration_time.0 * 1e3,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    println!(
        "{:<36} {:>6} {:>6} {:>10} {:>11} {:>13} {:>16}",
        "case", "runs", "ranks", "events", "wall ms", "M events/s", "iteration ms"
    );
    for case in CASES {
        if quick && case.all_ranks {
            continue;
        }
        let path = root.join(case.file);
        let mut best: Option<Run> = None;
        for _ in 0..case.runs {
            let r = run_once(&path, case.all_ranks);
            if best.as_ref().is_none_or(|b| r.wall < b.wall) {
                best = Some(r);
            }
        }
        let Some(b) = best else { continue };
        let secs = b.wall.as_secs_f64();
        println!(
            "{:<36} {:>6} {:>6} {:>10} {:>11.2} {:>13.2} {:>16.3}",
            case.name,
            case.runs,
            b.ranks,
            b.events,
            secs * 1e3,
            b.events as f64 / secs / 1e6,
            b.iteration_ms,
        );
    }
}
