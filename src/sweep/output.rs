//! Renders a sweep [`Outcome`]: the pruning summary, the top-k table and the Pareto front as
//! text; every result as CSV; the whole outcome as JSON (the format `--merge` reads back).
//! The text table has a column for every axis that varies among the results (the layer
//! split, ep, TP overlap, the distributed optimizer, lists of other keys); CSV and JSON hold
//! every plan field.
//!
//! Input: an [`Outcome`]. Output: strings. Invariant: the output is a function of the outcome
//! alone (no timings), so a merged sweep prints byte-identically to an unsharded one.

use std::fmt::Write as _;

use super::{Objective, Outcome, PlanSummary, PruneKey, Ranked, BOUND, DUPLICATE};
use crate::diag::Code;
use crate::report::table::Align;

use venus_base::base::math::count_of;
pub use venus_base::base::math::thousands;

/// `1,240 plans: 612 E0401 (a pipeline stage does not fit in GPU memory), 301 E0303 (...), 210 simulated`.
/// Codes by count, most first; E0401 names the headroom when there is one.
pub fn summary(o: &Outcome) -> String {
    let mut by_count: Vec<(&PruneKey, &u64)> = o.pruned.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut parts: Vec<String> = by_count
        .iter()
        .map(|(key, n)| {
            let n = thousands(**n);
            match **key {
                PruneKey::Code(Code::E0401) if o.headroom > 0.0 => format!(
                    "{n} {key} ({}, keeping {} free)",
                    Code::E0401.title(),
                    percent(o.headroom)
                ),
                PruneKey::Code(c) => format!("{n} {key} ({})", c.title()),
                PruneKey::Duplicate => {
                    format!("{n} {DUPLICATE} (the plan of a lower-numbered candidate)")
                }
                PruneKey::Bound => format!(
                    "{n} {BOUND} (cannot rank among the best {})",
                    o.kept.map_or(String::new(), thousands)
                ),
                PruneKey::SimulationFailed => format!("{n} {key} failed"),
            }
        })
        .collect();
    let listed = if o.kept.is_some() {
        "listed"
    } else {
        "simulated"
    };
    parts.push(format!("{} {listed}", thousands(o.results.len() as u64)));
    format!("{}: {}\n", count_of(o.candidates, "plan"), parts.join(", "))
}

/// `10%`, `7.5%` (a share from 0 to 1).
fn percent(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p}%")
    }
}

const GIB: f64 = (1u64 << 30) as f64;

/// One column of the ranking table: its header, alignment and cell.
struct Column {
    title: String,
    align: Align,
    cell: Box<dyn Fn(&Ranked) -> String>,
}

fn column(title: &str, align: Align, cell: impl Fn(&Ranked) -> String + 'static) -> Column {
    Column {
        title: title.to_string(),
        align,
        cell: Box::new(cell),
    }
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

/// Whether `value` takes more than one value among the results: such an axis gets a column.
fn varies<T: PartialEq>(o: &Outcome, value: impl Fn(&PlanSummary) -> T) -> bool {
    let mut values = o.results.iter().map(|r| value(&r.plan));
    match values.next() {
        Some(first) => values.any(|v| v != first),
        None => false,
    }
}

/// The keys of the list axes shown in `settings`, sorted.
fn setting_keys(o: &Outcome) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = o
        .results
        .iter()
        .flat_map(|r| r.plan.settings.keys())
        .collect();
    keys.into_iter().cloned().collect()
}

/// The cell of setting `key` of a plan: its element, or for the `--auto` axes a plan leaves
/// at Megatron's default, that default where it applies (`etp` = tp, `alltoall`, `p2p` with
/// cp > 1, `core_attn` with selective recompute), so that no listed plan has a blank where it
/// has a value.
fn setting_cell(p: &PlanSummary, key: &str) -> String {
    if let Some(v) = p.settings.get(key) {
        return v.clone();
    }
    match key {
        "etp" => p.tp.to_string(),
        "moe_dispatcher" => "alltoall".to_string(),
        "cp_comm" if p.cp > 1 => "p2p".to_string(),
        "recompute_modules" if p.recompute == "selective" => "core_attn".to_string(),
        _ => String::new(),
    }
}

/// The plan columns: the parallel sizes, batch and recomputation always; the layer split, ep,
/// the global batch, TP overlap, the distributed optimizer and each list of another key when
/// it varies among the results (a swept axis).
fn plan_columns(o: &Outcome) -> Vec<Column> {
    use Align::*;
    let mut cols = vec![
        column("tp", Right, |r| r.plan.tp.to_string()),
        column("pp", Right, |r| r.plan.pp.to_string()),
        column("vpp", Right, |r| r.plan.vpp.to_string()),
    ];
    if o.results.iter().any(|r| r.plan.is_uneven()) {
        cols.push(column("layout", Left, |r| r.plan.layout()));
    }
    cols.push(column("cp", Right, |r| r.plan.cp.to_string()));
    if varies(o, |p| p.ep) {
        cols.push(column("ep", Right, |r| r.plan.ep.to_string()));
    }
    cols.push(column("dp", Right, |r| r.plan.dp.to_string()));
    cols.push(column("mb", Right, |r| r.plan.micro_batch.to_string()));
    if varies(o, |p| p.global_batch) {
        cols.push(column("gb", Right, |r| r.plan.global_batch.to_string()));
    }
    cols.push(column("recompute", Left, |r| r.plan.recompute.clone()));
    cols.push(column("sp", Left, |r| on_off(r.plan.sp)));
    if varies(o, |p| p.overlap_tp_comm) {
        cols.push(column("tp overlap", Left, |r| {
            on_off(r.plan.overlap_tp_comm)
        }));
    }
    if varies(o, |p| p.distributed_optimizer) {
        cols.push(column("dist opt", Left, |r| {
            on_off(r.plan.distributed_optimizer)
        }));
    }
    cols.push(column("schedule", Left, |r| r.plan.schedule.clone()));
    for key in setting_keys(o) {
        let title = key.clone();
        cols.push(column(&title, Left, move |r| setting_cell(&r.plan, &key)));
    }
    cols
}

/// The figure columns: time, TFLOP/s and peak memory, and the objective's own figure.
fn figure_columns(o: &Outcome) -> Vec<Column> {
    use Align::*;
    let mut cols = vec![
        column("iteration (ms)", Right, |r| {
            format!("{:.3}", r.iteration_time_ms())
        }),
        column("TFLOP/s/GPU", Right, |r| {
            format!("{:.2}", r.per_gpu().0 / 1e12)
        }),
    ];
    match o.objective {
        Objective::Time => {}
        Objective::Throughput => cols.push(column("tokens/s/GPU", Right, |r| {
            format!("{:.1}", r.tokens_per_second_per_gpu())
        })),
        Objective::GpuHours => cols.push(column("GPU-h/Btok", Right, |r| {
            format!("{:.1}", gpu_hours_per_billion_tokens(r))
        })),
        Objective::Mfu => cols.push(column("MFU", Right, |r| {
            format!("{:.1}%", r.mfu().0 * 100.0)
        })),
        Objective::Goodput => {
            cols.push(column("goodput", Right, |r| {
                format!("{:.2}%", r.goodput().0 * 100.0)
            }));
            cols.push(column("wall tokens/s/GPU", Right, |r| {
                format!("{:.1}", r.effective_tokens_per_second_per_gpu())
            }));
        }
        Objective::TimeToTrain => cols.push(column("train (days)", Right, |r| {
            r.train_time()
                .map_or(String::new(), |t| format!("{:.2}", t.0 / 86_400.0))
        })),
        Objective::Cost => cols.push(column("cost ($M)", Right, |r| {
            r.train_cost()
                .map_or(String::new(), |c| format!("{:.3}", c / 1e6))
        })),
    }
    cols.push(column("peak (GiB)", Right, |r| {
        format!("{:.2}", r.peak_memory().0 as f64 / GIB)
    }));
    cols
}

/// GPU-hours to train 10^9 tokens with the plan.
pub fn gpu_hours_per_billion_tokens(r: &Ranked) -> f64 {
    r.gpu_seconds_per_token() * 1e9 / 3600.0
}

/// The ranked plans `rows` (indices into the results) as one table of the shared renderer:
/// plan words left-aligned, numbers right-aligned.
fn table(o: &Outcome, rows: &[usize]) -> String {
    use crate::report::table::render_aligned;
    let cols: Vec<Column> = std::iter::once(column("rank", Align::Right, |_| String::new()))
        .chain(plan_columns(o))
        .chain(figure_columns(o))
        .collect();
    let header: Vec<(&str, Align)> = cols.iter().map(|c| (c.title.as_str(), c.align)).collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter_map(|&i| o.results.get(i).map(|r| (i, r)))
        .map(|(i, r)| {
            std::iter::once((i + 1).to_string())
                .chain(cols[1..].iter().map(|c| (c.cell)(r)))
                .collect()
        })
        .collect();
    let mut out = String::new();
    render_aligned(&mut out, "  ", &header, &cells);
    out
}

/// What the ranking orders by, as the text output's headings say it.
fn ranked_by(objective: Objective) -> &'static str {
    match objective {
        Objective::Time => "iteration time",
        Objective::Throughput => "tokens/s per GPU",
        Objective::GpuHours => "GPU-hours per token",
        Objective::Mfu => "MFU",
        Objective::Goodput => "goodput-weighted tokens/s per GPU",
        Objective::TimeToTrain => "time to train",
        Objective::Cost => "cost to train",
    }
}

/// The summary, the `top` best plans and the Pareto front (only the front with `pareto_only`).
pub fn text(o: &Outcome, top: usize, pareto_only: bool) -> String {
    let mut out = format!(
        "sweep of scenario `{}` on {} GPUs",
        o.scenario,
        thousands(o.world_size)
    );
    if o.headroom > 0.0 {
        let _ = write!(out, ", keeping {} of GPU memory free", percent(o.headroom));
    }
    out.push('\n');
    out.push_str(&summary(o));
    if o.results.is_empty() {
        out.push_str(
            "\nno plan passed the checks: `venusc explain CODE` tells what each rule requires\n",
        );
        return out;
    }
    if !pareto_only {
        let shown = top.min(o.results.len());
        let n = thousands(o.results.len() as u64);
        let best = match o.objective {
            Objective::Time => format!("fastest {shown} of {n}"),
            other => format!("best {shown} of {n} by {}", ranked_by(other)),
        };
        let _ = writeln!(out, "\n{best} (ties broken by peak memory)");
        out.push_str(&table(o, &(0..shown).collect::<Vec<_>>()));
    }
    if o.kept.is_some() {
        // The front of the kept plans is not the sweep's: `--pareto` sweeps without pruning.
        return out;
    }
    let front = o.pareto();
    let _ = writeln!(
        out,
        "\npareto front of {} vs peak memory ({})",
        ranked_by(o.objective),
        count_of(front.len() as u64, "plan")
    );
    out.push_str(&table(o, &front));
    out
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Every result (only the Pareto front with `pareto_only`), best first, with its rank and
/// whether it is on the Pareto front; a column per list axis shown in `settings`.
pub fn csv(o: &Outcome, pareto_only: bool) -> String {
    let front = o.pareto();
    let keys = setting_keys(o);
    let mut out = String::from(
        "rank,candidate,tp,pp,cp,ep,dp,vpp,micro_batch,global_batch,microbatches,schedule,recompute,sp,distributed_optimizer,overlap_tp_comm,first_stage_layers,middle_stage_layers,last_stage_layers",
    );
    for k in &keys {
        out.push(',');
        out.push_str(&csv_field(k));
    }
    out.push_str(
        ",iteration_time_ms,tflops_per_gpu,tokens_per_second_per_gpu,mfu,peak_memory_bytes,pareto\n",
    );
    for (i, r) in o.results.iter().enumerate() {
        let on_front = front.binary_search(&i).is_ok();
        if pareto_only && !on_front {
            continue;
        }
        let p = &r.plan;
        let _ = write!(
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
            csv_field(&p.schedule),
            csv_field(&p.recompute),
            p.sp,
            p.distributed_optimizer,
            p.overlap_tp_comm,
            p.first_stage_layers,
            p.middle_stage_layers,
            p.last_stage_layers,
        );
        for k in &keys {
            out.push(',');
            out.push_str(&csv_field(&setting_cell(p, k)));
        }
        let _ = writeln!(
            out,
            ",{},{},{},{},{},{}",
            r.iteration_time_ms(),
            r.per_gpu().0 / 1e12,
            r.tokens_per_second_per_gpu(),
            r.mfu().0,
            r.peak_memory().0,
            on_front,
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

/// The outcome with only the Pareto front's results (`--pareto --format json`): no longer a
/// shard `--merge` reads, since its results and pruned counts do not add up.
pub fn pareto_only(o: &Outcome) -> Outcome {
    let mut front = o.clone();
    front.results = o
        .pareto()
        .into_iter()
        .map(|i| o.results[i].clone())
        .collect();
    front
}

/// Reads an outcome written by [`json`].
pub fn read_json(text: &str) -> Result<Outcome, String> {
    serde_json::from_str(text).map_err(|e| format!("not the JSON output of `venusc sweep`: {e}"))
}

/// The lines `--emit-best` writes above the winning plan.
pub fn best_header(o: &Outcome, best: &Ranked, source: &str, describe: &str) -> Vec<String> {
    vec![
        format!(
            "The {} of {} ({} simulated) of `venusc sweep {source}`:",
            match o.objective {
                Objective::Time => "fastest".to_string(),
                other => format!("best by {}", ranked_by(other)),
            },
            count_of(o.candidates, "candidate plan"),
            thousands(o.results.len() as u64)
        ),
        // Peak plus reserve, the figure `venusc check --memory` and E0401 hold against the
        // GPU's memory, then its two parts.
        format!(
            "{:.3} ms per iteration, {:.2} TFLOP/s per GPU, {:.2} GiB per GPU with reserve \
             ({:.2} GiB peak + {:.2} GiB reserve).",
            best.iteration_time_ms(),
            best.per_gpu().0 / 1e12,
            best.peak_with_reserve().0 as f64 / GIB,
            best.peak_memory().0 as f64 / GIB,
            best.reserve().0 as f64 / GIB
        ),
        format!("Candidate {}: {describe}.", best.candidate),
    ]
}

/// The objective's figure of a plan and its axis title: what the ranking orders by.
fn objective_figure(objective: Objective, r: &Ranked) -> f64 {
    match objective {
        Objective::Time => r.iteration_time_ms(),
        Objective::Throughput => r.tokens_per_second_per_gpu(),
        Objective::GpuHours => gpu_hours_per_billion_tokens(r),
        Objective::Mfu => r.mfu().0 * 100.0,
        Objective::Goodput => r.effective_tokens_per_second_per_gpu(),
        Objective::TimeToTrain => r.train_time().map_or(f64::NAN, |t| t.0 / 86_400.0),
        Objective::Cost => r.train_cost().map_or(f64::NAN, |c| c / 1e6),
    }
}

fn objective_axis(objective: Objective) -> &'static str {
    match objective {
        Objective::Time => "iteration time (ms)",
        Objective::Throughput => "tokens/s per GPU",
        Objective::GpuHours => "GPU-hours per 10^9 tokens",
        Objective::Mfu => "MFU (%)",
        Objective::Goodput => "tokens/s per GPU × goodput",
        Objective::TimeToTrain => "time to train (days)",
        Objective::Cost => "cost to train ($M)",
    }
}

/// `&`, `<`, `>` and `"` escaped for HTML text and attributes.
fn escape(s: &str) -> String {
    crate::report::html::escape(s)
}

const PLOT_W: f64 = 720.0;
const PLOT_H: f64 = 360.0;
const MARGIN: f64 = 56.0;

/// The sweep as one self-contained HTML page (inline SVG and style, no script, no URL): the
/// objective against peak memory for every simulated plan, the Pareto front drawn over them,
/// and the ranking table; each point links to its plan's row (`#plan-N`, N the candidate
/// number), which lists the plan's keys.
pub fn html(o: &Outcome) -> String {
    let mut out = String::new();
    let title = format!("sweep of `{}` on {} GPUs", o.scenario, o.world_size);
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{HTML_STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p>{}</p>",
        escape(&title),
        escape(&title),
        escape(summary(o).trim_end())
    );
    plot(&mut out, o);
    ranking(&mut out, o);
    out.push_str("</body>\n</html>\n");
    out
}

/// The scatter of every plan and the Pareto front, with axes.
fn plot(out: &mut String, o: &Outcome) {
    let _ = writeln!(
        out,
        "<h2>Pareto front: {} vs peak memory</h2>",
        objective_axis(o.objective)
    );
    if o.results.is_empty() {
        out.push_str("<p>no plan was simulated</p>\n");
        return;
    }
    let mem = |r: &Ranked| r.peak_memory().0 as f64 / GIB;
    let fig = |r: &Ranked| objective_figure(o.objective, r);
    let range = |v: Vec<f64>| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.01).max(1e-9);
        (lo - pad, hi + pad)
    };
    let (x0, x1) = range(o.results.iter().map(mem).collect());
    let (y0, y1) = range(o.results.iter().map(fig).collect());
    let x = |v: f64| MARGIN + (v - x0) / (x1 - x0) * PLOT_W;
    let y = |v: f64| MARGIN / 2.0 + PLOT_H - (v - y0) / (y1 - y0) * PLOT_H;
    let _ = writeln!(
        out,
        "<svg id=\"pareto\" width=\"{}\" height=\"{}\" role=\"img\">",
        PLOT_W + MARGIN * 1.5,
        PLOT_H + MARGIN * 1.5
    );
    let _ = writeln!(
        out,
        "<rect class=\"bg\" x=\"{MARGIN}\" y=\"{}\" width=\"{PLOT_W}\" height=\"{PLOT_H}\"/>",
        MARGIN / 2.0
    );
    for i in 0..=4 {
        let t = i as f64 / 4.0;
        let (vx, vy) = (x0 + t * (x1 - x0), y0 + t * (y1 - y0));
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{vx:.1}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            x(vx),
            MARGIN / 2.0 + PLOT_H + 16.0,
            MARGIN - 4.0,
            y(vy) + 4.0,
            short(vy)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">peak memory per GPU (GiB)</text>",
        MARGIN + PLOT_W / 2.0,
        MARGIN / 2.0 + PLOT_H + 36.0
    );
    let _ = writeln!(
        out,
        "<text x=\"12\" y=\"{:.1}\" transform=\"rotate(-90 12 {:.1})\" text-anchor=\"middle\">{}</text>",
        MARGIN / 2.0 + PLOT_H / 2.0,
        MARGIN / 2.0 + PLOT_H / 2.0,
        objective_axis(o.objective)
    );
    let front = o.pareto();
    let line: Vec<String> = front
        .iter()
        .map(|&i| format!("{:.1},{:.1}", x(mem(&o.results[i])), y(fig(&o.results[i]))))
        .collect();
    let _ = writeln!(
        out,
        "<polyline class=\"front\" points=\"{}\"/>",
        line.join(" ")
    );
    for (i, r) in o.results.iter().enumerate() {
        let class = if front.contains(&i) {
            "pt front-pt"
        } else {
            "pt"
        };
        let _ = writeln!(
            out,
            "<a href=\"#plan-{}\"><circle class=\"{class}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"5\"><title>#{} {}: {:.3} ms, {:.2} GiB</title></circle></a>",
            r.candidate,
            x(mem(r)),
            y(fig(r)),
            i + 1,
            escape(&plan_words(r)),
            r.iteration_time_ms(),
            mem(r)
        );
    }
    out.push_str("</svg>\n<p class=\"hint\">each point links to its plan below; the Pareto front is drawn in colour</p>\n");
}

/// An axis label: three significant figures.
fn short(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// `tp 4 pp 2 vpp 1 cp 1 dp 2 mb 1 recompute none sp on schedule 1f1b`: the plan columns.
fn plan_words(r: &Ranked) -> String {
    format!(
        "tp {} pp {} vpp {} cp {} ep {} dp {} mb {}",
        r.plan.tp, r.plan.pp, r.plan.vpp, r.plan.cp, r.plan.ep, r.plan.dp, r.plan.micro_batch
    )
}

/// The ranking: one row per plan (the text table's columns), its id the plan's anchor, and
/// the plan's keys under it.
fn ranking(out: &mut String, o: &Outcome) {
    let _ = writeln!(out, "<h2>ranking by {}</h2>", ranked_by(o.objective));
    let cols: Vec<Column> = plan_columns(o)
        .into_iter()
        .chain(figure_columns(o))
        .collect();
    out.push_str("<table id=\"ranking\"><tr><th>rank</th>");
    for c in &cols {
        let _ = write!(out, "<th>{}</th>", escape(&c.title));
    }
    out.push_str("<th>plan</th></tr>\n");
    let front = o.pareto();
    for (i, r) in o.results.iter().enumerate() {
        let class = if front.contains(&i) {
            " class=\"front-row\""
        } else {
            ""
        };
        let _ = write!(
            out,
            "<tr id=\"plan-{}\"{class}><td>{}</td>",
            r.candidate,
            i + 1
        );
        for c in &cols {
            let _ = write!(out, "<td>{}</td>", escape(&(c.cell)(r)));
        }
        let _ = writeln!(
            out,
            "<td><details><summary>candidate {}</summary><pre>{}</pre></details></td></tr>",
            r.candidate,
            escape(&plan_keys(&r.plan))
        );
    }
    out.push_str("</table>\n");
}

/// The plan's keys as `.venus` plan items, one per line.
fn plan_keys(p: &super::PlanSummary) -> String {
    let on = |b: bool| if b { "on" } else { "off" };
    let mut lines = vec![
        format!(
            "tp {}  pp {}  vpp {}  cp {}  ep {}  dp {}",
            p.tp, p.pp, p.vpp, p.cp, p.ep, p.dp
        ),
        format!(
            "micro_batch {}  global_batch {}  ({} microbatches)",
            p.micro_batch, p.global_batch, p.microbatches
        ),
        format!(
            "schedule {}  recompute {}  sp {}",
            p.schedule,
            p.recompute,
            on(p.sp)
        ),
        format!(
            "distributed_optimizer {}  overlap_tp_comm {}",
            on(p.distributed_optimizer),
            on(p.overlap_tp_comm)
        ),
        format!("layers per stage {}", p.layout()),
    ];
    lines.extend(p.settings.iter().map(|(k, v)| format!("{k} {v}")));
    lines.join("\n")
}

const HTML_STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px}
table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
svg text{font:11px system-ui,sans-serif;fill:#333}.bg{fill:#f6f6f6}
.pt{fill:#bab0ac;stroke:#fff}.front-pt{fill:#e15759}.front{fill:none;stroke:#e15759;stroke-width:1.5}
tr.front-row td:first-child{font-weight:600;color:#e15759}:target{background:#fff3c4}
pre{margin:2px 0;font-size:12px}.hint{color:#777;font-size:12px}";
