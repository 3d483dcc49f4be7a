//! The human report (`venusc sim`): [`Report`] → text, in the spirit of VenusSim's
//! (`trace-generator/utils.py` `get_perf`: TFLOP/s/GPU, iteration time, per-phase (min, max)
//! ms), plus MFU, tokens per second, the bubble, exposed communication and memory per stage.
//!
//! Input: a [`Report`]. Output: lines ending in `\n`.
//! Invariants: every number has a fixed number of decimals; the only host-dependent value is
//! the wall time on the final `engine:` line (zero after [`Report::deterministic`]).

use std::fmt::Write as _;

use super::{MinMax, Report};
use venus_base::base::{Bytes, Ratio};

/// Renders the report.
pub fn text(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "scenario `{}` on {} GPUs", r.scenario, r.world_size);
    let summary = summary(r);
    let width = summary.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &summary {
        let _ = writeln!(out, "  {k:<width$}  {v}");
    }

    out.push('\n');
    // A phase no rank spent time in (the zero-byte TP all-reduces VenusSim's traces keep at
    // tp 1) says nothing here; the JSON report keeps every phase.
    let rows = r
        .phases
        .iter()
        .filter(|p| p.time.max.0 > 0.0)
        .map(|p| min_max_row(p.category.name(), p.time))
        .collect();
    table(&mut out, "phase (ms per rank)", ["min", "max"], rows);

    if !r.exposed.is_empty() {
        out.push('\n');
        let rows = r
            .exposed
            .iter()
            .map(|e| min_max_row(e.kind.name(), e.time))
            .collect();
        table(
            &mut out,
            "exposed communication (ms per rank)",
            ["min", "max"],
            rows,
        );
    }

    out.push('\n');
    table(
        &mut out,
        "iteration (mean over stages)",
        ["ms", "share"],
        breakdown_rows(r),
    );

    if !r.memory.is_empty() {
        out.push('\n');
        let g = |b: Bytes| format!("{:.2}", b.gib());
        let rows = r
            .memory
            .iter()
            .map(|m| {
                vec![
                    m.stage.to_string(),
                    g(m.weights),
                    g(m.gradients),
                    g(m.optimizer),
                    g(m.activations),
                    g(m.peak),
                ]
            })
            .collect();
        let _ = writeln!(out, "  memory per GPU at the stage's peak (GiB)");
        table(
            &mut out,
            "stage",
            ["weights", "gradients", "optimizer", "activations", "peak"],
            rows,
        );
        let _ = writeln!(
            out,
            "  reserve {} GiB per GPU beside each peak (CUDA context, NCCL buffers, fragmentation)",
            g(r.memory_reserve)
        );
        if let Some(line) = graphs_offload_line(&r.memory) {
            let _ = writeln!(out, "  {line}");
        }
    }

    if let Some(st) = &r.stragglers {
        out.push('\n');
        stragglers(&mut out, st);
    }

    out.push('\n');
    let _ = writeln!(
        out,
        "engine: {} events, {} simulated ranks, {:.3} ms wall",
        r.engine.events,
        r.engine.simulated_ranks,
        r.engine.wall.ms()
    );
    out
}

/// The headline figures, as (name, formatted value): the text report's summary, which the
/// HTML report shows too.
pub fn summary(r: &Report) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        ("iteration time", format!("{:.3} ms", r.iteration_time.ms())),
        (
            "throughput",
            format!("{:.2} TFLOP/s/GPU", r.tflops_per_gpu.0 / 1e12),
        ),
        (
            "mfu",
            format!("{:.2}% of {:.1} TFLOP/s", r.mfu.0 * 100.0, r.peak.0 / 1e12),
        ),
        ("tokens per second", format!("{:.1}", r.tokens_per_second.0)),
        ("pipeline bubble", bubble(r)),
        ("model FLOPs", format!("{:.4e} per iteration", r.flops.0)),
        ("parameters", r.parameters.summary()),
    ];
    if let Some(t) = &r.train {
        rows.extend(train_rows(t));
    }
    if let Some(g) = &r.goodput {
        rows.extend(goodput_rows(g));
    }
    rows
}

/// Interruptions, checkpoints and goodput (the cluster's failure rates and storage).
fn goodput_rows(g: &super::GoodputReport) -> Vec<(&'static str, String)> {
    let m = &g.model;
    let i = &m.interruptions;
    let interval = if m.interval_written {
        format!(
            "{} (written; Young/Daly optimum {}), every {} iterations",
            duration(m.interval.0),
            duration(m.optimal_interval.0),
            g.save_interval
        )
    } else {
        format!(
            "{} (Young/Daly optimum), every {} iterations",
            duration(m.interval.0),
            g.save_interval
        )
    };
    let mut rows = vec![
        (
            "interruptions",
            format!(
                "{:.2} per day ({:.2} GPU, {:.2} node, {:.2} link), one every {}",
                i.per_day().0,
                i.gpus.0,
                i.nodes.0,
                i.links.0,
                duration(m.job_mtbf.0)
            ),
        ),
        (
            "checkpoint",
            format!(
                "{:.2} TB, written in {} at {:.2} TB/s, read in {}",
                m.checkpoint_size.0 as f64 / 1e12,
                duration(m.checkpoint_write.0),
                m.write_bandwidth.0 / 1e12,
                duration(m.checkpoint_read.0)
            ),
        ),
        ("checkpoint interval", interval),
        (
            "lost per interruption",
            format!(
                "{} (half an interval and its checkpoint, restart {}, read {})",
                duration(m.lost_per_interruption.0),
                duration(m.restart.0),
                duration(m.checkpoint_read.0)
            ),
        ),
        (
            "goodput",
            format!("{:.2}% of wall time trains", m.goodput.0 * 100.0),
        ),
    ];
    if let Some(w) = g.wall_time_to_train {
        let days = if w.0.is_finite() {
            format!("{:.2} days", w.0 / 86_400.0)
        } else {
            "never: every interruption loses more than the job runs between two".to_string()
        };
        rows.push(("time with interruptions", days));
    }
    rows
}

/// A duration in the unit that reads best: `2.8 s`, `4.1 min`, `3.09 h`, `2.50 days`.
fn duration(s: f64) -> String {
    if !s.is_finite() {
        "never".to_string()
    } else if s < 120.0 {
        format!("{s:.1} s")
    } else if s < 7200.0 {
        format!("{:.1} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.2} h", s / 3600.0)
    } else {
        format!("{:.2} days", s / 86_400.0)
    }
}

/// The measured bubble, and the schedule's closed form beside it when the plan pipelines.
fn bubble(r: &Report) -> String {
    let measured = format!("{:.2}%", r.bubble_fraction.0 * 100.0);
    match r.plan.schedule {
        Some(_) => format!(
            "{measured} (schedule's closed form {:.2}%)",
            r.schedule_bubble_fraction.0 * 100.0
        ),
        None => measured,
    }
}

/// The iteration tiled into compute, bubble, exposed communication per kind and other idle
/// (mean over stages), as table rows (name, ms, share of the iteration) ending in the total.
pub fn breakdown_rows(r: &Report) -> Vec<Vec<String>> {
    let b = &r.breakdown;
    let len = r.iteration_time.0;
    let row = |name: String, t: venus_base::base::Seconds| {
        let share = if len > 0.0 { t.0 / len * 100.0 } else { 0.0 };
        vec![name, format!("{:.3}", t.ms()), format!("{share:.2}%")]
    };
    let mut rows = vec![
        row("compute".into(), b.compute),
        row("pipeline bubble".into(), b.bubble),
    ];
    rows.extend(
        b.exposed
            .iter()
            .map(|(k, t)| row(format!("exposed {k}"), *t)),
    );
    rows.push(row("other idle".into(), b.other_idle));
    rows.push(row("iteration".into(), b.total()));
    rows
}

/// The `train` block's figures: time to train, GPU-hours, cost.
fn train_rows(t: &super::TrainCost) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        (
            "time to train",
            format!(
                "{:.2} days for {} tokens ({} iterations)",
                t.time.0 / 86_400.0,
                venus_base::base::math::short_count(t.tokens),
                t.iterations
            ),
        ),
        ("GPU-hours", whole(t.gpu_hours)),
    ];
    if let (Some(p), Some(c)) = (t.price, t.cost) {
        rows.push((
            "cost",
            format!("${} at ${:.2} per GPU-hour", whole(c.0), p.0),
        ));
    }
    rows
}

/// A non-negative figure rounded to a whole number, with thousands separators.
fn whole(v: f64) -> String {
    let n = if v.is_finite() && v > 0.0 {
        v.round().min(u64::MAX as f64) as u64
    } else {
        0
    };
    venus_base::base::math::thousands(n)
}

fn min_max_row(name: &str, t: MinMax) -> Vec<String> {
    vec![
        name.to_string(),
        format!("{:.3}", t.min.ms()),
        format!("{:.3}", t.max.ms()),
    ]
}

/// A table of the report, indented two spaces under its heading ([`super::table::render`]).
fn table<const N: usize>(out: &mut String, first: &str, heads: [&str; N], rows: Vec<Vec<String>>) {
    let mut header = vec![first];
    header.extend(heads);
    super::table::render(out, "  ", &header, &rows);
}

/// The straggler section: who is slow, what it costs, which groups wait for it.
fn stragglers(out: &mut String, st: &super::straggler::Stragglers) {
    let pct = |r: Ratio| format!("{:.0}%", r.0 * 100.0);
    let mut named: Vec<String> = st
        .listed
        .iter()
        .map(|s| format!("rank {} at {}", s.rank, pct(s.speed)))
        .collect();
    if st.slow_gpus > st.listed.len() as u64 {
        named.push(format!("{} more", st.slow_gpus - st.listed.len() as u64));
    }
    if st.slow_gpus > 0 {
        let gpus = if st.slow_gpus == 1 { "GPU" } else { "GPUs" };
        let _ = writeln!(
            out,
            "stragglers: {} slow {gpus} ({}), the slowest at {}",
            st.slow_gpus,
            named.join(", "),
            pct(st.slowest)
        );
    }
    if st.slow_links > 0 {
        let nics = if st.slow_links == 1 { "NIC" } else { "NICs" };
        let _ = writeln!(
            out,
            "slow links: {} GPUs' scale-out {nics}, the slowest at {} of its bandwidth",
            st.slow_links,
            pct(st.slowest_link)
        );
    }
    let _ = writeln!(
        out,
        "  iteration time {:.3} ms, {:.3} ms without them: {:+.3} ms ({:+.2}%)",
        st.baseline.ms() + st.cost.ms(),
        st.baseline.ms(),
        st.cost.ms(),
        st.share().0 * 100.0
    );
    match st.path() {
        Some(kind) => {
            let waits: Vec<String> = st
                .waits
                .iter()
                .map(|w| format!("{} +{:.3} ms", w.kind.name(), w.added.ms()))
                .collect();
            let _ = writeln!(
                out,
                "  propagates through the {kind} group: extra waiting per GPU {}",
                waits.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  no peer waits longer: the slow GPUs are off the critical path"
            );
        }
    }
}

/// The CUDA graph pool and offloaded activations of each stage, one line, only when a plan
/// has either (`check --memory` writes the same figures).
pub fn graphs_offload_line(memory: &[super::StageMemoryRow]) -> Option<String> {
    let list = |f: &dyn Fn(&super::StageMemoryRow) -> Bytes| {
        memory
            .iter()
            .map(|m| format!("{:.2}", f(m).gib()))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let mut parts = Vec::new();
    if memory.iter().any(|m| m.graph_pool.0 > 0) {
        parts.push(format!(
            "cuda graph pool {} GiB (static input buffers, in the peak)",
            list(&|m| m.graph_pool)
        ));
    }
    if memory.iter().any(|m| m.offloaded.0 > 0) {
        parts.push(format!(
            "offloaded to host {} GiB (not in activations or peak)",
            list(&|m| m.offloaded)
        ));
    }
    (!parts.is_empty()).then(|| format!("per stage: {}", parts.join("; ")))
}
