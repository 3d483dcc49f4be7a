//! Renders a sweep [`Outcome`]: the pruning summary, the top-k table and the Pareto front as
//! text; every result as CSV; the whole outcome as JSON (the format `--merge` reads back).
//!
//! Input: an [`Outcome`]. Output: strings. Invariant: the output is a function of the outcome
//! alone (no timings), so a merged sweep prints byte-identically to an unsharded one.

use std::fmt::Write as _;

use super::{Outcome, Ranked};
use crate::diag::Code;

use venus_base::base::math::count_of;
pub use venus_base::base::math::thousands;

/// `1,240 plans: 612 E0401 (a pipeline stage does not fit ...), 301 E0303 (...), 210 simulated`.
/// Codes by count, most first.
pub fn summary(o: &Outcome) -> String {
    let mut by_count: Vec<(&String, &u64)> = o.pruned.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = by_count
        .iter()
        .map(|(code, n)| match Code::parse(code) {
            Some(c) => format!("{} {code} ({})", thousands(**n), c.title()),
            None => format!("{} {code} failed", thousands(**n)),
        })
        .collect();
    parts.push(format!("{} simulated", thousands(o.results.len() as u64)));
    format!("{}: {}\n", count_of(o.candidates, "plan"), parts.join(", "))
}

const GIB: f64 = (1u64 << 30) as f64;

/// The ranked plans `rows` (indices into the results) as one table of the shared renderer:
/// plan words left-aligned, numbers right-aligned.
fn table(o: &Outcome, rows: &[usize]) -> String {
    use crate::report::table::{render_aligned, Align::*};
    const COLUMNS: [(&str, crate::report::table::Align); 13] = [
        ("rank", Right),
        ("tp", Right),
        ("pp", Right),
        ("vpp", Right),
        ("cp", Right),
        ("dp", Right),
        ("mb", Right),
        ("recompute", Left),
        ("sp", Left),
        ("schedule", Left),
        ("iteration (ms)", Right),
        ("TFLOP/s/GPU", Right),
        ("peak (GiB)", Right),
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|&i| o.results.get(i).map(|r| (i, r)))
        .map(|(i, r)| {
            let p = &r.plan;
            vec![
                (i + 1).to_string(),
                p.tp.to_string(),
                p.pp.to_string(),
                p.vpp.to_string(),
                p.cp.to_string(),
                p.dp.to_string(),
                p.micro_batch.to_string(),
                p.recompute.to_string(),
                if p.sp { "on" } else { "off" }.to_string(),
                p.schedule.to_string(),
                format!("{:.3}", r.iteration_time_ms()),
                format!("{:.2}", r.per_gpu().0 / 1e12),
                format!("{:.2}", r.peak_memory().0 as f64 / GIB),
            ]
        })
        .collect();
    let mut out = String::new();
    render_aligned(&mut out, "  ", &COLUMNS, &cells);
    out
}

/// The summary, the `top` fastest plans and the Pareto front.
pub fn text(o: &Outcome, top: usize) -> String {
    let mut out = format!(
        "sweep of scenario `{}` on {} GPUs\n",
        o.scenario,
        thousands(o.world_size)
    );
    out.push_str(&summary(o));
    if o.results.is_empty() {
        out.push_str(
            "\nno plan passed the checks: `venusc explain CODE` tells what each rule requires\n",
        );
        return out;
    }
    let shown = top.min(o.results.len());
    let _ = writeln!(
        out,
        "\nfastest {shown} of {} (ties broken by peak memory)",
        thousands(o.results.len() as u64)
    );
    out.push_str(&table(o, &(0..shown).collect::<Vec<_>>()));
    let front = o.pareto();
    let _ = writeln!(
        out,
        "\npareto front of iteration time vs peak memory ({})",
        count_of(front.len() as u64, "plan")
    );
    out.push_str(&table(o, &front));
    out
}

/// Every result, best first, with its rank and whether it is on the Pareto front.
pub fn csv(o: &Outcome) -> String {
    let front = o.pareto();
    let mut out = String::from(
        "rank,candidate,tp,pp,cp,ep,dp,vpp,micro_batch,global_batch,microbatches,schedule,recompute,sp,distributed_optimizer,iteration_time_ms,tflops_per_gpu,peak_memory_bytes,pareto\n",
    );
    for (i, r) in o.results.iter().enumerate() {
        let p = &r.plan;
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            i + 1,
            r.candidate,
            p.tp,
            p.pp,
            p.cp,
            p.ep,
            p.dp,
            p.vpp,
            p.micro_batch,
            p.global_batch,
            p.microbatches,
            p.schedule,
            p.recompute,
            p.sp,
            p.distributed_optimizer,
            r.iteration_time_ms(),
            r.per_gpu().0 / 1e12,
            r.peak_memory().0,
            front.binary_search(&i).is_ok(),
        );
    }
    out
}

/// The outcome as JSON: `{"candidates", "pruned", "results", ["shard"]}`.
pub fn json(o: &Outcome) -> String {
    let mut s =
        serde_json::to_string_pretty(o).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// Reads an outcome written by [`json`].
pub fn read_json(text: &str) -> Result<Outcome, String> {
    serde_json::from_str(text).map_err(|e| format!("not the JSON output of `venusc sweep`: {e}"))
}

/// The lines `--emit-best` writes above the winning plan.
pub fn best_header(o: &Outcome, best: &Ranked, source: &str, describe: &str) -> Vec<String> {
    vec![
        format!(
            "The fastest of {} ({} simulated) of `venusc sweep {source}`:",
            count_of(o.candidates, "candidate plan"),
            thousands(o.results.len() as u64)
        ),
        format!(
            "{:.3} ms per iteration, {:.2} TFLOP/s per GPU, {:.2} GiB peak memory per GPU.",
            best.iteration_time_ms(),
            best.per_gpu().0 / 1e12,
            best.peak_memory().0 as f64 / GIB
        ),
        format!("Candidate {}: {describe}.", best.candidate),
    ]
}
