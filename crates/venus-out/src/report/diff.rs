//! Two reports side by side (`venusc diff`): the resolved plan keys that differ, and every
//! report figure of both with its change, as text, JSON and a self-contained HTML page.
//!
//! Input: two validated [`Scenario`]s and their [`Report`]s. Output: a [`ReportDiff`] (plain
//! data) and its renderings.
//! Invariants: the figures are the report's own ([`figures`] lists each once, in the order
//! the text report shows them), so a figure added to the report needs its line there; a
//! figure only one side has (a stage the other plan lacks, a kind of communication it does
//! not run) is listed with the other side empty; the output is a function of the two reports
//! (wall times are not figures).

use std::fmt::Write as _;

use serde::Serialize;
use venus_base::base::MoeDispatcher;
use venus_plan::plan::Scenario;

use super::html::escape;
use super::{Report, ResolvedPlan};

/// One figure of both reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FigureDiff {
    pub name: String,
    /// `ms`, `%`, `GiB`, `TFLOP/s`, `tokens/s`, or empty for a count.
    pub unit: &'static str,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

impl FigureDiff {
    /// b − a, when both sides have the figure.
    pub fn change(&self) -> Option<f64> {
        Some(self.b? - self.a?)
    }

    /// (b − a) ÷ a in percent, when both have it and a is not zero.
    pub fn relative(&self) -> Option<f64> {
        let (a, b) = (self.a?, self.b?);
        (a != 0.0).then(|| (b - a) / a.abs() * 100.0)
    }
}

/// A resolved plan key whose value differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyDiff {
    pub key: &'static str,
    pub a: String,
    pub b: String,
}

/// The comparison of two scenarios' reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReportDiff {
    pub a: String,
    pub b: String,
    /// Resolved plan keys that differ, in [`plan_keys`] order.
    pub plan: Vec<KeyDiff>,
    pub figures: Vec<FigureDiff>,
}

impl ReportDiff {
    pub fn new(a: (&Scenario, &Report), b: (&Scenario, &Report)) -> ReportDiff {
        let (ka, kb) = (plan_keys(a.0, &a.1.plan), plan_keys(b.0, &b.1.plan));
        let plan = ka
            .into_iter()
            .zip(kb)
            .filter(|((_, x), (_, y))| x != y)
            .map(|((key, a), (_, b))| KeyDiff { key, a, b })
            .collect();
        ReportDiff {
            a: a.1.scenario.clone(),
            b: b.1.scenario.clone(),
            plan,
            figures: pair(figures(a.1), figures(b.1)),
        }
    }
}

/// The plan as validation resolved it, one `(key, value)` per plan key a reader compares:
/// first the resolved sizes, batch, schedule, recipe, stage split and the optimizer and
/// overlap flags, then every other key of the key table as written (`default` where the
/// plan leaves it), so a key added to the table is compared without a line here.
pub fn plan_keys(sc: &Scenario, p: &ResolvedPlan) -> Vec<(&'static str, String)> {
    let mut keys = resolved_keys(sc, p);
    let spec = &sc.plan;
    let dispatcher = spec.moe_dispatcher.map(|d| match d {
        MoeDispatcher::Flex(b) => format!("flex {}", b.word()),
        other => other.word().to_string(),
    });
    let hand = [
        ("moe_dispatcher", dispatcher),
        ("pipeline_layout", spec.pipeline_layout.clone()),
    ];
    let written = spec.written_keys().into_iter().chain(hand);
    for (key, value) in written {
        if !keys.iter().any(|(k, _)| *k == key) {
            keys.push((key, value.unwrap_or_else(|| "default".into())));
        }
    }
    keys
}

/// The keys [`plan_keys`] shows resolved (derived sizes, the effective flags), in its order.
fn resolved_keys(sc: &Scenario, p: &ResolvedPlan) -> Vec<(&'static str, String)> {
    let on = |b: bool| if b { "on" } else { "off" }.to_string();
    let f = &sc.flags;
    vec![
        ("world", sc.world.to_string()),
        ("tp", p.tp.to_string()),
        ("pp", p.pp.to_string()),
        ("cp", p.cp.to_string()),
        ("ep", p.ep.to_string()),
        ("etp", p.etp.to_string()),
        ("dp", p.dp.to_string()),
        ("vpp", p.vpp.to_string()),
        ("micro_batch", p.micro_batch.to_string()),
        ("global_batch", p.global_batch.to_string()),
        ("microbatches", p.microbatches.to_string()),
        (
            "schedule",
            p.schedule.map_or("none", |s| s.word()).to_string(),
        ),
        ("layers_per_stage", sc.split.describe()),
        ("precision", p.precision.word().to_string()),
        ("recompute", p.recompute.word().to_string()),
        ("sp", on(p.sp)),
        ("distributed_optimizer", on(p.distributed_optimizer)),
        ("overlap_grad_reduce", on(f.overlap_grad_reduce)),
        ("overlap_param_gather", on(f.overlap_param_gather)),
        ("overlap_p2p", on(f.overlap_p2p)),
        ("overlap_tp_comm", on(f.overlap_tp_comm)),
        ("fsdp", f.fsdp.map_or("off", |s| s.word()).to_string()),
        ("gpu", sc.cluster.gpu.name.clone()),
    ]
}

type Figure = (String, &'static str, f64);

/// Every figure of a report, named and with its unit, in the text report's order.
pub fn figures(r: &Report) -> Vec<Figure> {
    let pct = |x: f64| x * 100.0;
    let mut v: Vec<Figure> = vec![
        ("iteration time".into(), "ms", r.iteration_time.ms()),
        ("throughput".into(), "TFLOP/s", r.tflops_per_gpu.0 / 1e12),
        ("mfu".into(), "%", pct(r.mfu.0)),
        (
            "tokens per second".into(),
            "tokens/s",
            r.tokens_per_second.0,
        ),
        ("pipeline bubble".into(), "%", pct(r.bubble_fraction.0)),
        (
            "schedule's closed-form bubble".into(),
            "%",
            pct(r.schedule_bubble_fraction.0),
        ),
        ("model FLOPs".into(), "", r.flops.0),
        ("parameters".into(), "", r.parameters.total as f64),
        ("active parameters".into(), "", r.parameters.active as f64),
        (
            "tokens per iteration".into(),
            "",
            r.tokens_per_iteration as f64,
        ),
    ];
    let b = &r.breakdown;
    v.push(("compute".into(), "ms", b.compute.ms()));
    v.push(("bubble".into(), "ms", b.bubble.ms()));
    v.extend(
        b.exposed
            .iter()
            .map(|(k, t)| (format!("exposed {k}"), "ms", t.ms())),
    );
    v.push(("other idle".into(), "ms", b.other_idle.ms()));
    for p in &r.phases {
        let n = p.category.name();
        v.push((format!("{n} min"), "ms", p.time.min.ms()));
        v.push((format!("{n} max"), "ms", p.time.max.ms()));
    }
    for e in &r.exposed {
        v.push((format!("exposed {} max", e.kind), "ms", e.time.max.ms()));
    }
    for m in &r.memory {
        for (term, bytes) in m.terms() {
            v.push((format!("stage {} {term}", m.stage), "GiB", bytes.gib()));
        }
        v.push((format!("stage {} peak", m.stage), "GiB", m.peak.gib()));
    }
    if let Some(t) = &r.train {
        v.push(("days to train".into(), "days", t.time.0 / 86_400.0));
        v.push(("GPU-hours".into(), "", t.gpu_hours));
        if let Some(c) = t.cost {
            v.push(("cost".into(), "$", c.0));
        }
    }
    v
}

/// The figures of both sides, matched by name: a's order, then those only b has.
fn pair(a: Vec<Figure>, b: Vec<Figure>) -> Vec<FigureDiff> {
    let mut out: Vec<FigureDiff> = a
        .iter()
        .map(|(name, unit, x)| FigureDiff {
            name: name.clone(),
            unit,
            a: Some(*x),
            b: b.iter().find(|(n, _, _)| n == name).map(|f| f.2),
        })
        .collect();
    out.extend(
        b.into_iter()
            .filter(|(n, _, _)| !a.iter().any(|(m, _, _)| m == n))
            .map(|(name, unit, y)| FigureDiff {
                name,
                unit,
                a: None,
                b: Some(y),
            }),
    );
    out
}

/// A figure's value: three decimals, or for a count (no unit) and from 10⁶ on a whole number
/// with thousands separators (FLOPs, parameters); `-` when the side lacks it.
fn value(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".into(),
        Some(x) if x.abs() >= 1e6 || unit.is_empty() => {
            let sign = if x < 0.0 { "-" } else { "" };
            let n = x.abs().round().min(u64::MAX as f64) as u64;
            format!("{sign}{}", venus_base::base::math::thousands(n))
        }
        Some(x) => format!("{x:.3}"),
    }
}

fn signed(v: Option<f64>, unit: &str) -> String {
    match v {
        Some(x) if x > 0.0 => format!("+{}", value(Some(x), unit)),
        other => value(other, unit),
    }
}

fn relative(f: &FigureDiff) -> String {
    match f.relative() {
        Some(p) => format!("{p:+.2}%"),
        None => "-".into(),
    }
}

/// The diff as text: the plan keys that differ, then every figure's table.
pub fn text(d: &ReportDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "`{}` → `{}`", d.a, d.b);
    if d.plan.is_empty() {
        out.push_str("  the resolved plans are the same\n");
    } else {
        let rows: Vec<Vec<String>> = d
            .plan
            .iter()
            .map(|k| vec![k.key.to_string(), k.a.clone(), k.b.clone()])
            .collect();
        super::table::render_aligned(
            &mut out,
            "  ",
            &[
                ("plan key", super::table::Align::Left),
                ("a", super::table::Align::Left),
                ("b", super::table::Align::Left),
            ],
            &rows,
        );
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = d
        .figures
        .iter()
        .map(|f| {
            vec![
                f.name.clone(),
                f.unit.to_string(),
                value(f.a, f.unit),
                value(f.b, f.unit),
                signed(f.change(), f.unit),
                relative(f),
            ]
        })
        .collect();
    super::table::render(
        &mut out,
        "  ",
        &["figure", "unit", "a", "b", "change", "%"],
        &rows,
    );
    out
}

/// The diff as pretty JSON with a trailing newline: `a`, `b`, `plan` (each differing key with
/// both values) and `figures` (each with `a`, `b`, `change`, `relative_percent`; `null` where
/// a side lacks the figure or a is zero).
pub fn json(d: &ReportDiff) -> String {
    #[derive(Serialize)]
    struct Row<'a> {
        name: &'a str,
        unit: &'a str,
        a: Option<f64>,
        b: Option<f64>,
        change: Option<f64>,
        relative_percent: Option<f64>,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        a: &'a str,
        b: &'a str,
        plan: &'a [KeyDiff],
        figures: Vec<Row<'a>>,
    }
    let finite = |v: Option<f64>| v.filter(|x| x.is_finite());
    let doc = Doc {
        a: &d.a,
        b: &d.b,
        plan: &d.plan,
        figures: d
            .figures
            .iter()
            .map(|f| Row {
                name: &f.name,
                unit: f.unit,
                a: finite(f.a),
                b: finite(f.b),
                change: finite(f.change()),
                relative_percent: finite(f.relative()),
            })
            .collect(),
    };
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}

/// The diff as one self-contained HTML page (inline style, no script, no URL): the plan keys
/// that differ and every figure, the unchanged ones greyed.
pub fn html(d: &ReportDiff) -> String {
    let mut out = String::new();
    let title = format!("{} vs {}", d.a, d.b);
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>venusc diff: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>",
        escape(&title),
        escape(&title)
    );
    out.push_str("<h2>plan keys that differ</h2>\n");
    if d.plan.is_empty() {
        out.push_str("<p>the resolved plans are the same</p>\n");
    } else {
        let _ = writeln!(
            out,
            "<table id=\"plan\"><tr><th>key</th><th>{}</th><th>{}</th></tr>",
            escape(&d.a),
            escape(&d.b)
        );
        for k in &d.plan {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                k.key,
                escape(&k.a),
                escape(&k.b)
            );
        }
        out.push_str("</table>\n");
    }
    let _ = writeln!(
        out,
        "<h2>figures</h2>\n<table id=\"figures\"><tr><th>figure</th><th>unit</th><th class=\"n\">{}</th><th class=\"n\">{}</th><th class=\"n\">change</th><th class=\"n\">%</th></tr>",
        escape(&d.a),
        escape(&d.b)
    );
    for f in &d.figures {
        let class = if f.change() == Some(0.0) {
            "same"
        } else {
            "changed"
        };
        let _ = writeln!(
            out,
            "<tr class=\"{class}\"><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            escape(&f.name),
            escape(f.unit),
            value(f.a, f.unit),
            value(f.b, f.unit),
            signed(f.change(), f.unit),
            relative(f)
        );
    }
    out.push_str("</table>\n</body>\n</html>\n");
    out
}

const STYLE: &str =
    "body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px}
table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
tr.same td{color:#888}tr.changed td{font-weight:600}";
