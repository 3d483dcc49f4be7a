//! The HTML report (`venusc report FILE -o report.html`): one self-contained page with the
//! summary, a per-stage timeline in simulated time, memory per stage as stacked bars, the
//! phase breakdown and the warnings.
//!
//! Input: [`HtmlInput`]: the scenario, its [`Report`], the simulated [`Trace`] and
//! [`Timeline`], and the rank [`Layout`]. Output: one HTML document as a string.
//! Invariants: inline CSS, SVG and script only: the page names no URL and loads nothing
//! (an inline `<svg>` needs no namespace attribute in HTML). Every text that came from the
//! input (names, messages, file names) is escaped. Output is a pure function of the input:
//! numbers have fixed decimals and everything is drawn in a fixed order, so the same input
//! gives byte-identical pages (the engine's wall time is not shown).
//!
//! The timeline has one row per pipeline stage: the lowest simulated rank of the stage (the
//! symmetric rank set's representative), with one lane per stream it uses (compute first).
//! Each node that overlaps the reported window is one slice, coloured by its kind: the pass
//! of a labelled compute node (F, B, W), else the node's category; the legend lists the kinds
//! present. Above [`MAX_SLICES`] slices, each lane is drawn as runs of the kind that covers
//! most of each 1/[`BINS`] of the window, so the page stays a few megabytes. The script lets
//! the wheel zoom and a drag pan the plot's SVG `viewBox`; a double click resets it. When it
//! has drawn the axis it sets `data-ok="1"` on `<body>`; a script error is appended to
//! `data-errors` there (what the browser test reads).

use std::fmt::Write as _;

use venus_base::base::{Bytes, Ps};
use venus_plan::plan::layout::Layout;
use venus_plan::plan::Scenario;
use venus_sim::engine::Timeline;
use venus_sim::trace::{Category, Label, Node, StreamId, Trace};

use super::{MinMax, Report, Window};

/// What the page is drawn from.
#[derive(Clone, Copy)]
pub struct HtmlInput<'a> {
    pub scenario: &'a Scenario,
    pub report: &'a Report,
    pub trace: &'a Trace,
    pub timeline: &'a Timeline,
    pub layout: &'a Layout,
}

/// The most slices the timeline draws one by one (about 100 bytes of HTML each).
pub const MAX_SLICES: usize = 100_000;
/// Columns of a lane drawn as runs when the slices are over [`MAX_SLICES`].
pub const BINS: u64 = 4_000;

/// The pass kinds first, then one kind per node category.
const PASSES: [(&str, &str); 3] = [
    ("F", "forward pass"),
    ("B", "backward pass"),
    ("W", "weight-gradient pass"),
];
const KINDS: usize = PASSES.len() + Category::COUNT;

/// One colour per kind, in kind order: passes, then [`Category::ALL`].
const PALETTE: [&str; KINDS] = [
    "#4e79a7", // F
    "#59a14f", // B
    "#8cd17d", // W
    "#a0cbe8", // forward-compute
    "#b6992d", // backward-compute
    "#f28e2b", // send
    "#ffbe7d", // recv
    "#e15759", // tp-comm
    "#ff9d9a", // cp-comm
    "#b07aa1", // ep-comm
    "#9c755f", // all-grads-sync
    "#d4a6c8", // params-all-gather
    "#76b7b2", // embedding-sync
    "#edc948", // optimizer
    "#bab0ac", // other
];

/// Colours of the memory terms, in [`super::StageMemoryRow::terms`] order, then `other`.
const MEMORY_PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#bab0ac",
];

/// A node's kind: the index of its pass or category in the kind order.
fn kind_of(node: &Node) -> usize {
    match node.label {
        Label::Forward { .. } => 0,
        Label::Backward { .. } => 1,
        Label::Weight { .. } => 2,
        _ => PASSES.len() + node.category.index(),
    }
}

fn kind_name(kind: usize) -> &'static str {
    match PASSES.get(kind) {
        Some((name, _)) => name,
        None => Category::ALL
            .get(kind - PASSES.len())
            .map_or("other", |c| c.name()),
    }
}

fn kind_description(kind: usize) -> &'static str {
    match PASSES.get(kind) {
        Some((_, description)) => description,
        None => kind_name(kind),
    }
}

/// One drawn interval, in picoseconds from the window's start.
#[derive(Clone, Debug, PartialEq)]
struct Slice {
    start: u64,
    end: u64,
    kind: usize,
    label: String,
}

/// One stream of a row's rank.
#[derive(Clone, Debug, PartialEq)]
struct Lane {
    stream: StreamId,
    slices: Vec<Slice>,
}

/// One pipeline stage: its representative rank and that rank's lanes.
#[derive(Clone, Debug, PartialEq)]
struct Row {
    stage: u64,
    rank: u32,
    lanes: Vec<Lane>,
}

/// The pipeline stage of a simulated rank (stage 0 when the layout does not know the rank).
fn stage_of(layout: &Layout, rank: u32) -> u64 {
    if rank < layout.world() {
        u64::from(layout.coords(rank).pp)
    } else {
        0
    }
}

/// The rows of the timeline, stage 0 first, each from the lowest simulated rank of its stage.
fn rows(trace: &Trace, timeline: &Timeline, layout: &Layout, window: Window) -> Vec<Row> {
    let mut chosen: Vec<(u64, u32, usize)> = Vec::new();
    for (index, rt) in trace.ranks().iter().enumerate() {
        let rank = rt.rank().0;
        let stage = stage_of(layout, rank);
        match chosen.iter_mut().find(|(s, _, _)| *s == stage) {
            Some(entry) if entry.1 > rank => *entry = (stage, rank, index),
            Some(_) => {}
            None => chosen.push((stage, rank, index)),
        }
    }
    chosen.sort_unstable();
    chosen
        .into_iter()
        .map(|(stage, rank, index)| Row {
            stage,
            rank,
            lanes: lanes(trace, timeline, index, window),
        })
        .collect()
}

/// The lanes of the simulated rank at `index`: one per stream, in stream order.
fn lanes(trace: &Trace, timeline: &Timeline, index: usize, window: Window) -> Vec<Lane> {
    let Some(rt) = trace.ranks().get(index) else {
        return Vec::new();
    };
    let (starts, ends) = (timeline.starts(index), timeline.ends(index));
    let mut lanes: Vec<Lane> = Vec::new();
    for (k, node) in rt.nodes().enumerate() {
        let (Some(&Ps(a)), Some(&Ps(b))) = (starts.get(k), ends.get(k)) else {
            continue;
        };
        let Some((a, b)) = window.clip(a, b) else {
            continue;
        };
        let slice = Slice {
            start: a - window.start.0,
            end: b - window.start.0,
            kind: kind_of(&node),
            label: node_label(trace, &node),
        };
        match lanes.iter_mut().find(|l| l.stream == node.stream) {
            Some(lane) => lane.slices.push(slice),
            None => lanes.push(Lane {
                stream: node.stream,
                slices: vec![slice],
            }),
        }
    }
    lanes.sort_by_key(|l| l.stream);
    lanes
}

/// The node's label as the schedule and Perfetto name it (`F3.1`, `send→pp2`).
fn node_label(trace: &Trace, node: &Node) -> String {
    if node.label == Label::None {
        node.category.name().to_string()
    } else {
        trace.display(node.label).to_string()
    }
}

/// A lane as runs of the kind that covers most of each of [`BINS`] equal parts of the window
/// (the lowest kind on ties); consecutive parts of one kind are one run.
fn binned(slices: &[Slice], len: u64) -> Vec<Slice> {
    let width = len.div_ceil(BINS).max(1);
    let bins = len.div_ceil(width) as usize;
    let mut cover = vec![[0u64; KINDS]; bins];
    for s in slices {
        let (first, last) = ((s.start / width) as usize, ((s.end - 1) / width) as usize);
        for (bin, slot) in cover.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (bin as u64 * width, (bin as u64 + 1) * width);
            slot[s.kind] += s.end.min(hi).saturating_sub(s.start.max(lo));
        }
    }
    let mut runs: Vec<Slice> = Vec::new();
    for (bin, slot) in cover.iter().enumerate() {
        let Some((kind, _)) = slot.iter().enumerate().filter(|(_, &t)| t > 0).fold(
            None,
            |best: Option<(usize, u64)>, (k, &t)| match best {
                Some((_, bt)) if bt >= t => best,
                _ => Some((k, t)),
            },
        ) else {
            continue;
        };
        let (start, end) = (bin as u64 * width, ((bin as u64 + 1) * width).min(len));
        match runs.last_mut() {
            Some(last) if last.kind == kind && last.end == start => last.end = end,
            _ => runs.push(Slice {
                start,
                end,
                kind,
                label: format!("mostly {}", kind_name(kind)),
            }),
        }
    }
    runs
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Picoseconds as microseconds with three decimals: the plot's x unit.
fn us(ps: u64) -> String {
    format!("{}.{:03}", ps / 1_000_000, (ps % 1_000_000) / 1_000)
}

fn ms(ps: u64) -> String {
    format!("{:.3}", Ps(ps).seconds().ms())
}

/// The page.
pub fn html(input: &HtmlInput<'_>) -> String {
    page(input, MAX_SLICES)
}

/// The page, drawing at most `max_slices` slices one by one.
pub(crate) fn page(input: &HtmlInput<'_>, max_slices: usize) -> String {
    let r = input.report;
    let rows = rows(input.trace, input.timeline, input.layout, r.window);
    let mut out = String::new();
    head(&mut out, r);
    summary(&mut out, input.report, input.scenario);
    timeline(&mut out, &rows, r.window.len().0, max_slices);
    memory(&mut out, input);
    breakdown(&mut out, r);
    phases(&mut out, r);
    warnings(&mut out, r);
    out.push_str(SCRIPT);
    out.push_str("</body>\n</html>\n");
    out
}

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:20px 0 6px}
.sub{color:#555;margin:0 0 10px}
table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.cols{display:flex;gap:40px;flex-wrap:wrap}
.legend span{display:inline-block;margin:0 12px 4px 0}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;border-radius:2px}
svg text{font:11px system-ui,sans-serif;fill:#333}
#tl{border:1px solid #ddd;cursor:grab;user-select:none}
.bg{fill:#f6f6f6}.s{shape-rendering:crispEdges}
.warn li{margin-bottom:6px}.warn .help{color:#555}
.hint{color:#777;font-size:12px}
";

fn head(out: &mut String, r: &Report) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>venusc report: {}</title>\n\
         <script>window.onerror=function(m,s,l){{var b=document.body||document.documentElement;\
         b.setAttribute('data-errors',(b.getAttribute('data-errors')||'')+m+' at line '+l+';');}};</script>\n\
         <style>\n{STYLE}</style>\n</head>\n<body>\n",
        escape(&r.scenario)
    );
}

/// The page's summary alone, with the page's style scoped to it: the heading, the summary
/// and plan tables (what a notebook shows for a report, `Report._repr_html_` in `python/`).
pub fn summary_html(scenario: &Scenario, report: &Report) -> String {
    let mut out = String::from("<div class=\"venusc-report\">\n<style>\n");
    out.push_str(&scoped_style(".venusc-report"));
    out.push_str("</style>\n");
    summary(&mut out, report, scenario);
    out.push_str("</div>\n");
    out
}

/// [`STYLE`] with every selector under `scope`, so a page that embeds the summary keeps its
/// own look (the `body` rule becomes the scope's own).
fn scoped_style(scope: &str) -> String {
    let mut out = String::new();
    for rule in STYLE.split_inclusive('}') {
        let Some((selectors, body)) = rule.trim().split_once('{') else {
            continue;
        };
        let scoped: Vec<String> = selectors
            .split(',')
            .map(|sel| match sel.trim() {
                "body" => scope.to_string(),
                sel => format!("{scope} {sel}"),
            })
            .collect();
        let _ = writeln!(out, "{}{{{body}", scoped.join(","));
    }
    out
}

fn summary(out: &mut String, r: &Report, sc: &Scenario) {
    let _ = writeln!(
        out,
        "<h1>scenario <code>{}</code></h1>\n<p class=\"sub\">model <code>{}</code> on {} × \
         <code>{}</code>; plan {}, {} microbatches of {}, {} schedule, {} precision, recompute \
         {}</p>",
        escape(&r.scenario),
        escape(&sc.model.name),
        r.world_size,
        escape(&sc.cluster.gpu.name),
        escape(&r.plan.summary()),
        r.plan.microbatches,
        r.plan.micro_batch,
        r.plan.schedule.map_or("no pipeline", |s| s.word()),
        r.plan.precision.word(),
        r.plan.recompute.word(),
    );
    out.push_str("<div class=\"cols\">\n<table id=\"summary\">\n");
    let mut rows = super::text::summary(r);
    rows.insert(
        4,
        (
            "tokens per iteration",
            venus_base::base::math::thousands(r.tokens_per_iteration),
        ),
    );
    for (k, v) in rows {
        let _ = writeln!(
            out,
            "<tr><th>{}</th><td>{}</td></tr>",
            escape(k),
            escape(&v)
        );
    }
    out.push_str("</table>\n<table id=\"plan\">\n");
    let layers: Vec<String> = r.plan.layers_per_stage.iter().map(u64::to_string).collect();
    let p = &r.plan;
    let facts = [
        (
            "tp · cp · ep · etp",
            format!("{} · {} · {} · {}", p.tp, p.cp, p.ep, p.etp),
        ),
        ("pp · vpp · dp", format!("{} · {} · {}", p.pp, p.vpp, p.dp)),
        (
            "global batch",
            format!("{} sequences of {} tokens", p.global_batch, sc.model.seq),
        ),
        ("layers per stage", layers.join(" ")),
        (
            "sp · distributed optimizer",
            format!("{} · {}", on_off(p.sp), on_off(p.distributed_optimizer)),
        ),
    ];
    for (k, v) in facts {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", escape(&v));
    }
    out.push_str("</table>\n</div>\n");
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Geometry of the timeline, in SVG user units (pixels at 100 %).
const WIDTH: u64 = 1300;
const LABEL_WIDTH: u64 = 100;
const PLOT_WIDTH: u64 = WIDTH - LABEL_WIDTH;
const COMPUTE_LANE: u64 = 14;
const COMM_LANE: u64 = 4;
const ROW_GAP: u64 = 4;
const AXIS_HEIGHT: u64 = 24;

fn lane_height(stream: StreamId) -> u64 {
    if stream.is_compute() {
        COMPUTE_LANE
    } else {
        COMM_LANE
    }
}

fn row_height(row: &Row) -> u64 {
    row.lanes
        .iter()
        .map(|l| lane_height(l.stream) + 1)
        .sum::<u64>()
        + ROW_GAP
}

fn timeline(out: &mut String, rows: &[Row], len: u64, max_slices: usize) {
    let total: usize = rows
        .iter()
        .flat_map(|r| &r.lanes)
        .map(|l| l.slices.len())
        .sum();
    let exact = total <= max_slices;
    let plot_height: u64 = rows.iter().map(row_height).sum::<u64>().max(1);
    let height = plot_height + AXIS_HEIGHT;
    let span = len.max(1);
    out.push_str("<h2>timeline of one iteration (simulated time)</h2>\n");
    legend(out, rows);
    let _ = writeln!(
        out,
        "<svg id=\"tl\" width=\"100%\" viewBox=\"0 0 {WIDTH} {height}\" data-len-us=\"{}\">",
        us(span)
    );
    // Row stripes and stage names, outside the zoomed plot.
    let mut y = 0;
    for (i, row) in rows.iter().enumerate() {
        let h = row_height(row);
        if i % 2 == 0 {
            let _ = writeln!(
                out,
                "<rect class=\"bg\" x=\"0\" y=\"{y}\" width=\"{WIDTH}\" height=\"{}\"/>",
                h - ROW_GAP + 2
            );
        }
        let _ = writeln!(
            out,
            "<text x=\"4\" y=\"{}\">stage {} · rank {}</text>",
            y + COMPUTE_LANE - 3,
            row.stage,
            row.rank
        );
        y += h;
    }
    let _ = writeln!(
        out,
        "<svg id=\"plot\" x=\"{LABEL_WIDTH}\" y=\"0\" width=\"{PLOT_WIDTH}\" height=\"{plot_height}\" \
         viewBox=\"0 0 {} {plot_height}\" preserveAspectRatio=\"none\">",
        us(span)
    );
    let mut y = 0;
    for row in rows {
        let _ = writeln!(
            out,
            "<g class=\"row\" data-stage=\"{}\" data-rank=\"{}\">",
            row.stage, row.rank
        );
        let mut lane_y = y;
        for lane in &row.lanes {
            let h = lane_height(lane.stream);
            let drawn;
            let slices = if exact {
                &lane.slices
            } else {
                drawn = binned(&lane.slices, span);
                &drawn
            };
            for s in slices {
                let _ = writeln!(
                    out,
                    "<rect class=\"s\" x=\"{}\" y=\"{lane_y}\" width=\"{}\" height=\"{h}\" fill=\"{}\"><title>{} · {} ms at {} ms</title></rect>",
                    us(s.start),
                    us(s.end - s.start),
                    PALETTE[s.kind],
                    escape(&s.label),
                    ms(s.end - s.start),
                    ms(s.start)
                );
            }
            lane_y += h + 1;
        }
        out.push_str("</g>\n");
        y += row_height(row);
    }
    out.push_str("</svg>\n");
    axis(out, span, plot_height);
    out.push_str("</svg>\n");
    let _ = writeln!(
        out,
        "<p class=\"hint\">one row per pipeline stage (its lowest simulated rank), one lane per \
         stream, compute on top; {total} slices{}. Wheel: zoom, drag: pan, double click: \
         reset.</p>",
        if exact {
            String::new()
        } else {
            format!(", drawn as the kind that covers most of each 1/{BINS} of the iteration")
        }
    );
}

/// The kinds present in the rows, in kind order.
fn legend(out: &mut String, rows: &[Row]) {
    let mut present = [false; KINDS];
    for s in rows.iter().flat_map(|r| &r.lanes).flat_map(|l| &l.slices) {
        present[s.kind] = true;
    }
    out.push_str("<div class=\"legend\" id=\"legend\">");
    for kind in (0..KINDS).filter(|&k| present[k]) {
        let _ = write!(
            out,
            "<span data-kind=\"{}\"><i style=\"background:{}\"></i>{}</span>",
            kind_name(kind),
            PALETTE[kind],
            kind_description(kind)
        );
    }
    out.push_str("</div>\n");
}

/// A step of 1, 2 or 5 times a power of ten that cuts `span` into about eight parts.
fn nice_step(span: f64) -> f64 {
    let raw = (span / 8.0).max(f64::MIN_POSITIVE);
    let power = 10f64.powf(raw.log10().floor());
    let m = raw / power;
    power
        * if m < 1.5 {
            1.0
        } else if m < 3.5 {
            2.0
        } else if m < 7.5 {
            5.0
        } else {
            10.0
        }
}

/// The time axis for the whole window (the script redraws it for the zoomed view).
fn axis(out: &mut String, span: u64, plot_height: u64) {
    let span_ms = Ps(span).seconds().ms();
    let step = nice_step(span_ms);
    let _ = writeln!(out, "<g id=\"axis\">");
    let mut i = 0u64;
    loop {
        let t = step * i as f64;
        if t > span_ms || i > 100 {
            break;
        }
        let x = LABEL_WIDTH as f64 + t / span_ms * PLOT_WIDTH as f64;
        let _ = writeln!(
            out,
            "<line x1=\"{x:.2}\" x2=\"{x:.2}\" y1=\"0\" y2=\"{}\" stroke=\"#ccc\"/><text x=\"{x:.2}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            plot_height + 4,
            plot_height + 16,
            trim_ms(t, step)
        );
        i += 1;
    }
    out.push_str("</g>\n");
}

/// `t` in ms with as many decimals as the step needs.
fn trim_ms(t: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{t:.decimals$} ms")
}

fn gib(b: Bytes) -> String {
    format!("{:.2}", b.gib())
}

/// Memory per stage as stacked bars of the report's memory terms
/// ([`super::StageMemoryRow::terms`]) and what the peak holds beyond them (`other`), with the
/// GPU's capacity as a line. Only the report's figures are drawn, so a term the memory model
/// adds shows up without an edit here.
fn memory(out: &mut String, input: &HtmlInput<'_>) {
    let r = input.report;
    out.push_str("<h2>memory per GPU at each stage's peak (GiB)</h2>\n");
    if r.memory.is_empty() {
        out.push_str("<p>no memory figures</p>\n");
        return;
    }
    let capacity = input.scenario.cluster.gpu.memory;
    let names: Vec<&str> = r.memory[0].terms().iter().map(|(n, _)| *n).collect();
    let has_other = r.memory.iter().any(|m| m.unnamed().0 > 0);
    let top = r
        .memory
        .iter()
        .map(|m| m.peak.0)
        .max()
        .unwrap_or(0)
        .max(capacity.0)
        .max(1);
    let (bar, gap, chart_h, left) = (28u64, 10u64, 220u64, 30u64);
    let n = r.memory.len() as u64;
    // Room for the capacity's label above its line.
    let width = (left + n * (bar + gap) + 20).max(left + 160);
    let scale = |b: u64| b as f64 / top as f64 * chart_h as f64;
    out.push_str("<div class=\"legend\" id=\"memory-legend\">");
    let mut legend_names = names.clone();
    if has_other {
        legend_names.push("other");
    }
    for (i, name) in legend_names.iter().enumerate() {
        let _ = write!(
            out,
            "<span><i style=\"background:{}\"></i>{name}</span>",
            MEMORY_PALETTE[i.min(MEMORY_PALETTE.len() - 1)]
        );
    }
    out.push_str("<span><i style=\"background:#000;height:2px\"></i>GPU memory</span></div>\n");
    let _ = writeln!(
        out,
        "<svg id=\"memory\" width=\"{width}\" height=\"{}\" viewBox=\"0 0 {width} {}\">",
        chart_h + 40,
        chart_h + 40
    );
    for m in &r.memory {
        let x = left + m.stage * (bar + gap);
        let mut segments: Vec<(&str, Bytes)> = m.terms();
        if has_other {
            segments.push(("other", m.unnamed()));
        }
        let _ = writeln!(out, "<g class=\"bar\" data-stage=\"{}\">", m.stage);
        let mut base = 0u64;
        for (i, (name, b)) in segments.iter().enumerate() {
            let (y0, y1) = (scale(base), scale(base.saturating_add(b.0)));
            let _ = writeln!(
                out,
                "<rect class=\"seg\" data-term=\"{name}\" x=\"{x}\" y=\"{:.2}\" width=\"{bar}\" height=\"{:.2}\" fill=\"{}\"><title>stage {} {name}: {} GiB</title></rect>",
                10.0 + chart_h as f64 - y1,
                y1 - y0,
                MEMORY_PALETTE[i.min(MEMORY_PALETTE.len() - 1)],
                m.stage,
                gib(*b)
            );
            base = base.saturating_add(b.0);
        }
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>",
            x + bar / 2,
            chart_h + 24,
            m.stage
        );
    }
    let cap_y = 10.0 + chart_h as f64 - scale(capacity.0);
    let _ = writeln!(
        out,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{cap_y:.2}\" y2=\"{cap_y:.2}\" stroke=\"#000\" stroke-width=\"1.5\"/>\
         <text x=\"{left}\" y=\"{:.2}\">GPU memory {} GiB</text>\
         <text x=\"4\" y=\"{}\">0</text><text x=\"{left}\" y=\"{}\">stage</text>",
        width - 10,
        (cap_y - 3.0).max(11.0),
        gib(capacity),
        chart_h + 10,
        chart_h + 38
    );
    out.push_str("</svg>\n<table id=\"memory-table\">\n<tr><th>stage</th>");
    for name in &legend_names {
        let _ = write!(out, "<th class=\"n\">{name}</th>");
    }
    out.push_str("<th class=\"n\">peak</th></tr>\n");
    for m in &r.memory {
        let _ = write!(out, "<tr><td>{}</td>", m.stage);
        for (_, b) in m.terms() {
            let _ = write!(out, "<td class=\"n\">{}</td>", gib(b));
        }
        if has_other {
            let _ = write!(out, "<td class=\"n\">{}</td>", gib(m.unnamed()));
        }
        let _ = writeln!(out, "<td class=\"n\">{}</td></tr>", gib(m.peak));
    }
    out.push_str("</table>\n");
}

/// Colours of the breakdown's terms: compute, bubble, each exposed kind, other idle.
const BREAKDOWN_PALETTE: [&str; 4] = ["#4e79a7", "#bab0ac", "#e15759", "#f6f6f6"];

/// Where the iteration goes (mean over stages): one stacked bar and the text report's table
/// (compute + pipeline bubble + exposed communication + other idle = the iteration).
fn breakdown(out: &mut String, r: &Report) {
    out.push_str(
        "<h2>where the iteration goes (mean over stages)</h2>
",
    );
    let b = &r.breakdown;
    let len = r.iteration_time.0;
    let mut terms = vec![("compute", b.compute, 0), ("pipeline bubble", b.bubble, 1)];
    terms.extend(b.exposed.iter().map(|(k, t)| (k.name(), *t, 2)));
    terms.push(("other idle", b.other_idle, 3));
    out.push_str("<svg id=\"breakdown\" width=\"600\" height=\"16\">");
    let mut x = 0.0;
    for (name, t, colour) in &terms {
        let w = if len > 0.0 { t.0 / len * 600.0 } else { 0.0 };
        let _ = write!(
            out,
            "<rect x=\"{x:.1}\" width=\"{w:.1}\" height=\"16\" fill=\"{}\" stroke=\"#fff\"><title>{name}: {:.3} ms</title></rect>",
            BREAKDOWN_PALETTE[*colour],
            t.ms()
        );
        x += w;
    }
    out.push_str("</svg>\n<table id=\"breakdown-table\"><tr><th>term</th><th class=\"n\">ms</th><th class=\"n\">share</th></tr>\n");
    for row in super::text::breakdown_rows(r) {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            escape(&row[0]),
            row[1],
            row[2]
        );
    }
    out.push_str("</table>\n<p class=\"hint\">pipeline bubble: idle while the rank's critical path ran another stage's compute; exposed communication: idle while it ran a transfer or collective of the kind, charged to what delayed it (docs/report.md)</p>\n");
}

/// The phases and the exposed communication: min and max over ranks, with a bar of the max
/// against the iteration time.
fn phases(out: &mut String, r: &Report) {
    out.push_str("<h2>phases (ms per rank)</h2>\n<div class=\"cols\">\n");
    let rows: Vec<(&str, MinMax)> = r
        .phases
        .iter()
        .map(|p| (p.category.name(), p.time))
        .collect();
    min_max_table(out, "phases", "phase", &rows, r.iteration_time.ms());
    let rows: Vec<(&str, MinMax)> = r.exposed.iter().map(|e| (e.kind.name(), e.time)).collect();
    if !rows.is_empty() {
        min_max_table(
            out,
            "exposed",
            "exposed communication",
            &rows,
            r.iteration_time.ms(),
        );
    }
    out.push_str("</div>\n");
}

fn min_max_table(out: &mut String, id: &str, first: &str, rows: &[(&str, MinMax)], total: f64) {
    let _ = writeln!(
        out,
        "<table id=\"{id}\"><tr><th>{first}</th><th class=\"n\">min</th><th class=\"n\">max</th><th>max of the iteration</th></tr>"
    );
    for (name, t) in rows {
        let share = if total > 0.0 {
            (t.max.ms() / total).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "<tr><td>{name}</td><td class=\"n\">{:.3}</td><td class=\"n\">{:.3}</td>\
             <td><svg width=\"200\" height=\"10\"><rect width=\"{:.1}\" height=\"10\" fill=\"#4e79a7\"/></svg> {:.1}%</td></tr>",
            t.min.ms(),
            t.max.ms(),
            share * 200.0,
            share * 100.0
        );
    }
    out.push_str("</table>\n");
}

fn warnings(out: &mut String, r: &Report) {
    let _ = writeln!(out, "<h2>warnings ({})</h2>", r.warnings.len());
    if r.warnings.is_empty() {
        out.push_str("<p>none</p>\n");
        return;
    }
    out.push_str("<ul class=\"warn\" id=\"warnings\">\n");
    for w in &r.warnings {
        let p = &w.position;
        let _ = write!(
            out,
            "<li data-code=\"{}\"><b>{}</b> {}: {} <span class=\"hint\">({}:{}:{})</span>",
            w.code,
            w.code,
            escape(&w.severity),
            escape(&w.message),
            escape(&p.file),
            p.line,
            p.column
        );
        if let Some(help) = &w.help {
            let _ = write!(out, "<div class=\"help\">help: {}</div>", escape(help));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
}

/// Zoom and pan of the plot's viewBox, the axis for the view, and the `data-ok` marker.
const SCRIPT: &str = r##"<script>
(function () {
  var outer = document.getElementById('tl');
  var plot = document.getElementById('plot');
  var axis = document.getElementById('axis');
  if (!outer || !plot || !axis) { document.body.setAttribute('data-ok', '1'); return; }
  var LABEL = 100, WIDTH = 1200;
  var len = parseFloat(outer.getAttribute('data-len-us'));
  var height = plot.viewBox.baseVal.height;
  var view = { x: 0, w: len };
  function niceStep(span) {
    var raw = Math.max(span / 8, 1e-12);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
  }
  function drawAxis() {
    var startMs = view.x / 1000, spanMs = view.w / 1000;
    var step = niceStep(spanMs);
    var decimals = step >= 1 ? 0 : Math.min(9, Math.ceil(-Math.log10(step) - 1e-9));
    var parts = [];
    for (var t = Math.ceil(startMs / step) * step; t <= startMs + spanMs + 1e-12; t += step) {
      var x = LABEL + (t - startMs) / spanMs * WIDTH;
      parts.push('<line x1="' + x.toFixed(2) + '" x2="' + x.toFixed(2) + '" y1="0" y2="' +
        (height + 4) + '" stroke="#ccc"/><text x="' + x.toFixed(2) + '" y="' + (height + 16) +
        '" text-anchor="middle">' + t.toFixed(decimals) + ' ms</text>');
      if (parts.length > 200) { break; }
    }
    axis.innerHTML = parts.join('');
  }
  function apply() {
    var minW = Math.min(len, 0.001);
    view.w = Math.max(minW, Math.min(len, view.w));
    view.x = Math.max(0, Math.min(len - view.w, view.x));
    plot.setAttribute('viewBox', view.x + ' 0 ' + view.w + ' ' + height);
    drawAxis();
  }
  function fraction(ev) {
    var box = outer.getBoundingClientRect();
    var scale = box.width / (LABEL + WIDTH);
    return Math.max(0, Math.min(1, (ev.clientX - box.left - LABEL * scale) / (WIDTH * scale)));
  }
  outer.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var f = fraction(ev), at = view.x + f * view.w;
    view.w = view.w * (ev.deltaY < 0 ? 1 / 1.25 : 1.25);
    view.x = at - f * view.w;
    apply();
  }, { passive: false });
  var drag = null;
  outer.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, start: view.x }; });
  window.addEventListener('mouseup', function () { drag = null; });
  window.addEventListener('mousemove', function (ev) {
    if (!drag) { return; }
    var box = outer.getBoundingClientRect();
    var perPx = view.w / (WIDTH * box.width / (LABEL + WIDTH));
    view.x = drag.start - (ev.clientX - drag.x) * perPx;
    apply();
  });
  outer.addEventListener('dblclick', function () { view = { x: 0, w: len }; apply(); });
  apply();
  document.body.setAttribute('data-ok', '1');
})();
</script>
"##;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_replaces_the_five_html_specials() {
        assert_eq!(
            escape(r#"<a href="x">&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(escape("plain µs"), "plain µs");
    }

    #[test]
    fn the_summary_style_scopes_every_selector_and_keeps_every_rule() {
        let css = scoped_style(".v");
        assert_eq!(css.lines().count(), STYLE.matches('}').count());
        assert!(css.starts_with(".v{font:14px/1.4 system-ui"));
        assert!(css.contains(".v td,.v th{padding:2px 10px 2px 0;"));
        assert!(css.contains(".v td.n,.v th.n{text-align:right;"));
        for line in css.lines() {
            assert!(line
                .split('{')
                .next()
                .unwrap()
                .split(',')
                .all(|s| s.starts_with(".v")));
        }
    }

    #[test]
    fn microseconds_keep_nanosecond_digits() {
        assert_eq!(us(1_500_000), "1.500");
        assert_eq!(us(999), "0.000");
        assert_eq!(us(12_345_678_901), "12345.678");
    }

    #[test]
    fn nice_steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(8.0), 1.0);
        assert_eq!(nice_step(20.0), 2.0);
        assert_eq!(nice_step(40.0), 5.0);
        assert_eq!(nice_step(18_000.0), 2_000.0);
        assert!((nice_step(0.08) - 0.01).abs() < 1e-12);
    }

    fn slice(start: u64, end: u64, kind: usize) -> Slice {
        Slice {
            start,
            end,
            kind,
            label: String::new(),
        }
    }

    #[test]
    fn binning_keeps_the_dominant_kind_per_bin_and_merges_runs() {
        // 8000 ps in 4000 bins of 2 ps: kind 0 covers [0, 4000), kind 1 [4000, 8000) except
        // one picosecond of kind 2 inside a bin kind 1 holds for the other picosecond.
        let slices = [
            slice(0, 4000, 0),
            slice(4000, 4001, 1),
            slice(4001, 4002, 2),
            slice(4002, 8000, 1),
        ];
        let runs = binned(&slices, 8000);
        let got: Vec<(u64, u64, usize)> = runs.iter().map(|s| (s.start, s.end, s.kind)).collect();
        // The tie in bin [4000, 4002) goes to the lower kind.
        assert_eq!(got, vec![(0, 4000, 0), (4000, 8000, 1)]);
        assert_eq!(runs[1].label, "mostly B");
    }

    #[test]
    fn the_palette_has_one_colour_per_kind_and_kinds_are_named() {
        assert_eq!(PALETTE.len(), PASSES.len() + Category::ALL.len());
        assert_eq!(kind_name(0), "F");
        assert_eq!(kind_name(2), "W");
        assert_eq!(kind_name(PASSES.len()), "forward-compute");
        assert_eq!(kind_name(KINDS - 1), "other");
    }
}
