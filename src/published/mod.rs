//! `venusc validate`: predict every fully specified published run and compare.
//!
//! Input: the published-runs TSV text (RUNS.md). Output: a [`Validation`] — per row the
//! generated scenario, the published value and the predicted one in the row's own metric and
//! the error of that metric. A speed row's prediction is the simulated iteration (the scenario
//! through the front end, the lowering and the engine, with the default compute model) turned
//! into its metric with the source's FLOP convention ([`flops`]); a `peak_mem_gib` row's is the
//! memory model's peak, kept even when it exceeds the GPU's memory. Rendered as Markdown by
//! [`Validation::markdown`] (committed as `docs/validation.md`) or as RUNS.md's JSON object by
//! [`Validation::json`]; both state the same errors.
//!
//! Invariants: pure (the stdlib is built in, nothing is read); deterministic (the engine runs
//! on integer picoseconds), so debug and release builds print the same table.

pub mod flops;
pub mod imported;
pub mod scenario;
pub mod split;
pub mod tsv;

use crate::base::{GpuArch, Seconds};
use crate::engine;
use crate::lower::{self, LowerOptions};
use crate::plan::Scenario;
use crate::session::Session;
use crate::trace::Category;
use scenario::{Built, Source};
use std::fmt::Write as _;
use std::path::Path;
use tsv::Row;

/// A row's `metric` (RUNS.md, "Metrics").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// `iter_time_s`: seconds per optimizer step.
    IterTime,
    /// `tokens_per_s_per_gpu`.
    TokensPerGpu,
    /// `tflops_per_gpu`, with the source's FLOP convention.
    TflopsPerGpu,
    /// `mfu`: a ratio of the GPU's dense BF16 peak.
    Mfu,
    /// `peak_mem_gib`: peak allocated memory of the busiest GPU, GiB.
    PeakMem,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::IterTime,
        Metric::TokensPerGpu,
        Metric::TflopsPerGpu,
        Metric::Mfu,
        Metric::PeakMem,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::IterTime => "iter_time_s",
            Metric::TokensPerGpu => "tokens_per_s_per_gpu",
            Metric::TflopsPerGpu => "tflops_per_gpu",
            Metric::Mfu => "mfu",
            Metric::PeakMem => "peak_mem_gib",
        }
    }

    pub fn parse(text: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == text)
    }

    /// `peak_mem_gib`; the others are speed metrics (RUNS.md's `time` summary).
    pub fn is_memory(self) -> bool {
        self == Metric::PeakMem
    }
}

/// What the simulation of one scenario gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub iteration: Seconds,
    /// Forward + backward compute of the busiest simulated rank.
    pub compute: Seconds,
}

/// A speed row's iteration times: the one its published value implies and the simulated one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub published: Seconds,
    pub predicted: Prediction,
}

/// One row's outcome.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Compared: the published and the predicted value, both in the row's own metric's unit.
    Compared {
        built: Built,
        metric: Metric,
        published: f64,
        predicted: f64,
        /// The iteration times of a speed row; `None` for `peak_mem_gib`.
        timing: Option<Timing>,
        /// The arch of the row's GPU (the calibration it was costed with).
        arch: GpuArch,
    },
    /// Not simulated, with the reason.
    Skipped(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct RowResult {
    pub row: Row,
    pub source: Source,
    pub outcome: Outcome,
}

impl RowResult {
    /// Signed relative error of the row's own metric: (predicted − published) / published.
    pub fn error(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Compared {
                published,
                predicted,
                ..
            } if *published > 0.0 => Some((predicted - published) / published),
            _ => None,
        }
    }

    /// The metric of a compared row.
    pub fn metric(&self) -> Option<Metric> {
        match &self.outcome {
            Outcome::Compared { metric, .. } => Some(*metric),
            Outcome::Skipped(_) => None,
        }
    }

    /// In the acceptance set: BF16 dense speed rows whose plan the source fully states (SC21
    /// Table 1, the Megatron-LM README table, MegaScale).
    pub fn in_acceptance_set(&self) -> bool {
        matches!(
            self.source,
            Source::Sc21Table1 | Source::MegatronReadme | Source::MegaScale
        ) && matches!(&self.outcome, Outcome::Compared { built, metric, .. }
            if !built.moe && !built.precision_fp8 && !metric.is_memory())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    pub rows: Vec<RowResult>,
}

/// The one scenario of a `.venus` text, validated (the first error as the skip reason).
/// With `keep_over_memory`, a scenario whose only error is E0401 is returned too: a
/// `peak_mem_gib` row compares its memory, whatever the model thinks fits.
fn scenario_of(name: &str, text: &str, keep_over_memory: bool) -> Result<Scenario, String> {
    let mut session = Session::new();
    let mut read =
        |p: &Path| Err::<Vec<u8>, _>(format!("`{}` is not available", p.display()).into());
    let root = session.load(Path::new(name), text.as_bytes(), &mut read);
    let checked = if keep_over_memory {
        session.check_keeping_over_memory(root)
    } else {
        session.check(root)
    };
    let blocking = |d: &&crate::diag::Diagnostic| {
        d.is_error() && !(keep_over_memory && d.code == crate::diag::Code::E0401)
    };
    if let Some(d) = checked.diagnostics.iter().find(blocking) {
        return Err(format!("{}: {}", d.code.as_str(), d.message));
    }
    checked
        .scenarios
        .into_iter()
        .next()
        .ok_or_else(|| "no scenario".to_string())
}

/// Simulates a `.venus` text holding one scenario with the default options.
pub fn simulate_text(name: &str, text: &str) -> Result<Prediction, String> {
    predict(&scenario_of(name, text, false)?)
}

/// Lowers and simulates one iteration of a validated scenario: its iteration time and the
/// busiest rank's compute.
pub fn predict(sc: &Scenario) -> Result<Prediction, String> {
    let lowered = lower::lower(sc, &LowerOptions::default()).map_err(|e| e.to_string())?;
    let tl = engine::run_trace(
        &lowered.trace,
        &lowered.network,
        &engine::Options::default(),
    )
    .map_err(|e| e.to_string())?;
    let (start, end) = lowered.iteration_span(&tl, 0);
    let compute = (0..lowered.ranks.len())
        .map(|i| {
            lowered
                .busy_in_iteration(&tl, i, 0, Category::ForwardCompute)
                .0
                + lowered
                    .busy_in_iteration(&tl, i, 0, Category::BackwardCompute)
                    .0
        })
        .max()
        .unwrap_or(0);
    let ps = crate::trace::Ps::PER_SECOND as f64;
    Ok(Prediction {
        iteration: Seconds(end.0.saturating_sub(start.0) as f64 / ps),
        compute: Seconds(compute as f64 / ps),
    })
}

/// The memory model's peak of the busiest GPU, GiB: the largest stage's peak, without the
/// reserve (RUNS.md's `peak_mem_gib` is allocated memory; the reserve is the CUDA context,
/// NCCL's buffers and the allocator's slack around it). The figure `check --memory` prints.
pub fn predicted_peak_gib(sc: &Scenario) -> f64 {
    crate::plan::memory::worst(&sc.memory).map_or(0.0, |s| s.peak.gib())
}

/// Why a row `id` cannot name the file `validate --emit-scenarios` writes (`DIR/<id>.venus`),
/// or `None` when it can: only letters, digits, `-`, `_` and `.`, not starting with `.`, so
/// no id reaches outside DIR (`../x`, `/abs/x`) or hides a file.
pub fn file_stem_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        return Some("the id is empty".to_string());
    }
    if id.starts_with('.') {
        return Some(format!("id `{id}` starts with `.`"));
    }
    let bad = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))?;
    let shown = crate::diag::escape_excerpt(&bad.to_string(), 1);
    Some(format!(
        "id `{}` holds `{shown}`, which a file name here may not",
        crate::diag::escape_excerpt(id, 80)
    ))
}

/// Validates every row of the table.
pub fn run(table: &str) -> Result<Validation, tsv::TsvError> {
    let rows = tsv::parse(table)?;
    Ok(Validation {
        rows: rows.into_iter().map(validate_row).collect(),
    })
}

/// Builds, simulates and compares one row.
pub fn validate_row(row: Row) -> RowResult {
    let source = Source::of(&row);
    let outcome = match compare(&row, source) {
        Ok(o) => o,
        Err(reason) => Outcome::Skipped(reason),
    };
    RowResult {
        row,
        source,
        outcome,
    }
}

fn compare(row: &Row, source: Source) -> Result<Outcome, String> {
    let built = scenario::build(row).map_err(|s| s.0)?;
    let metric = Metric::parse(&row.metric).ok_or_else(|| {
        format!(
            "metric `{}` is none of {}",
            crate::diag::escape_excerpt(&row.metric, 40),
            Metric::ALL.map(|m| format!("`{}`", m.name())).join(", ")
        )
    })?;
    let published = row
        .value
        .filter(|v| *v > 0.0)
        .ok_or_else(|| "value not stated (or not positive)".to_string())?;
    let name = format!("{}.venus", row.id);
    if metric.is_memory() {
        let sc = scenario_of(&name, &built.venus, true)?;
        return Ok(Outcome::Compared {
            predicted: predicted_peak_gib(&sc),
            built,
            metric,
            published,
            timing: None,
            arch: sc.cluster.gpu.arch,
        });
    }
    let sc = scenario_of(&name, &built.venus, false)?;
    let conversion = speed_conversion(row, source, metric, &sc)?;
    let predicted = predict(&sc)?;
    Ok(Outcome::Compared {
        built,
        metric,
        published,
        predicted: conversion.metric(predicted.iteration),
        timing: Some(Timing {
            published: conversion.time(published),
            predicted,
        }),
        arch: sc.cluster.gpu.arch,
    })
}

/// How a speed row's metric follows from the iteration time, with the source's FLOP convention.
fn speed_conversion(
    row: &Row,
    source: Source,
    metric: Metric,
    sc: &Scenario,
) -> Result<flops::Conversion, String> {
    let iteration_flops =
        flops::convention_flops(row, source).unwrap_or_else(|| crate::report::megatron_flops(sc).0);
    flops::conversion(row, metric, iteration_flops, sc.cluster.gpu.peak.0)
        .ok_or_else(|| format!("metric `{}` cannot be converted", metric.name()))
}

/// A speed row made ready to be simulated again and again (`venusc calibrate --runs`): its
/// validated scenario, its published value and the conversion between its metric and the
/// iteration time, built exactly as `validate` builds it.
#[derive(Clone, Debug)]
pub struct SpeedRow {
    pub row: Row,
    pub metric: Metric,
    pub scenario: Scenario,
    pub published: f64,
    pub conversion: flops::Conversion,
}

impl SpeedRow {
    /// The row as `validate` would simulate it, or why it cannot be (a `peak_mem_gib` row has
    /// no iteration time to fit).
    pub fn of(row: &Row) -> Result<SpeedRow, String> {
        let source = Source::of(row);
        let built = scenario::build(row).map_err(|s| s.0)?;
        let metric = Metric::parse(&row.metric)
            .filter(|m| !m.is_memory())
            .ok_or_else(|| {
                format!(
                    "metric `{}` is not a speed metric",
                    crate::diag::escape_excerpt(&row.metric, 40)
                )
            })?;
        let published = row
            .value
            .filter(|v| *v > 0.0)
            .ok_or_else(|| "value not stated (or not positive)".to_string())?;
        let scenario = scenario_of(&format!("{}.venus", row.id), &built.venus, false)?;
        let conversion = speed_conversion(row, source, metric, &scenario)?;
        Ok(SpeedRow {
            row: row.clone(),
            metric,
            scenario,
            published,
            conversion,
        })
    }

    /// The iteration time the published value implies.
    pub fn published_time(&self) -> Seconds {
        self.conversion.time(self.published)
    }
}

/// RUNS.md's summary of some rows' errors: how many, their mean absolute error and the
/// largest one, as fractions (`None` without rows).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub rows: usize,
    pub mape: Option<f64>,
    pub worst: Option<f64>,
}

impl Summary {
    pub fn of<'a>(results: impl IntoIterator<Item = &'a RowResult>) -> Summary {
        let errs: Vec<f64> = results
            .into_iter()
            .filter_map(|r| r.error())
            .map(f64::abs)
            .collect();
        if errs.is_empty() {
            return Summary {
                rows: 0,
                mape: None,
                worst: None,
            };
        }
        Summary {
            rows: errs.len(),
            mape: Some(errs.iter().sum::<f64>() / errs.len() as f64),
            worst: Some(errs.iter().fold(0.0f64, |m, e| m.max(*e))),
        }
    }

    /// `8.5%` and `19.6%`, or dashes without rows.
    fn percents(&self) -> (String, String) {
        let pct = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{:.1}%", 100.0 * v));
        (pct(self.mape), pct(self.worst))
    }
}

impl Validation {
    pub fn acceptance(&self) -> Vec<&RowResult> {
        self.rows.iter().filter(|r| r.in_acceptance_set()).collect()
    }

    /// The compared rows of speed metrics (RUNS.md's `time`) or of `peak_mem_gib` (`memory`).
    fn compared(&self, memory: bool) -> impl Iterator<Item = &RowResult> {
        self.rows
            .iter()
            .filter(move |r| r.metric().is_some_and(|m| m.is_memory() == memory))
    }

    /// RUNS.md's `validate --format json` object: every row, then the summary.
    pub fn json(&self) -> String {
        let rows: Vec<RowJson> = self.rows.iter().map(RowJson::of).collect();
        let simulated = self.rows.iter().filter(|r| r.metric().is_some()).count();
        let doc = ValidationJson {
            rows,
            summary: SummaryJson {
                simulated,
                skipped: self.rows.len() - simulated,
                time: Summary::of(self.compared(false)).into(),
                memory: Summary::of(self.compared(true)).into(),
            },
        };
        // Plain structs of strings and finite numbers (a non-finite one is written as null).
        let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
        out.push('\n');
        out
    }

    /// The report committed as `docs/validation.md`.
    pub fn markdown(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "# Validation against published training runs\n");
        let _ = writeln!(
            o,
            "Generated by `venusc validate published-runs.tsv` (a test fails when this file is \
             stale). Every fully specified row of the table becomes a `.venus` scenario on a \
             stdlib cluster and is simulated with the default (analytic) compute model — no \
             `mfu`, one set of constants per GPU type. The predicted iteration time is turned \
             into the row's own metric with the source's own FLOP convention (published-runs.md \
             §3.6): SC21 TFLOP/s with Eq. 3 (recompute-inclusive), Megatron-LM README TFLOP/s \
             with Megatron's July 2024 `num_floating_point_operations`, other TFLOP/s and MFU \
             with Megatron's current count, tokens/s and iteration times as they are; a \
             `peak_mem_gib` row compares the memory model's peak of the busiest GPU, without \
             the reserve. Error = (predicted − published) / published of the row's metric \
             (`venusc validate --format json` gives the same figures).\n"
        );
        let acc = Summary::of(self.acceptance());
        if acc.rows > 0 {
            let (m, worst) = acc.percents();
            let _ = writeln!(
                o,
                "**Acceptance set** (BF16 dense rows with a stated plan: SC21 Table 1, Megatron-LM \
                 README, MegaScale): {} rows, MAPE {m}, worst {worst}.\n",
                acc.rows
            );
        }
        let memory = Summary::of(self.compared(true));
        if memory.rows > 0 {
            let (m, worst) = memory.percents();
            let _ = writeln!(
                o,
                "**Memory** (`peak_mem_gib` rows): {} rows, MAPE {m}, worst {worst}.\n",
                memory.rows
            );
        }
        let _ = writeln!(o, "## MAPE per source\n");
        let _ = writeln!(
            o,
            "Speed metrics only; the `peak_mem_gib` rows are summarised above.\n"
        );
        let _ = writeln!(o, "| source | rows simulated | skipped | MAPE | worst |");
        let _ = writeln!(o, "|---|---:|---:|---:|---:|");
        let mut sources: Vec<Source> = self.rows.iter().map(|r| r.source).collect();
        sources.sort();
        sources.dedup();
        for s in sources {
            let of: Vec<&RowResult> = self.rows.iter().filter(|r| r.source == s).collect();
            let compared = of.iter().filter(|r| r.error().is_some()).count();
            let skipped = of.len() - compared;
            let speed = of
                .iter()
                .copied()
                .filter(|r| !r.metric().is_some_and(Metric::is_memory));
            let (m, w) = Summary::of(speed).percents();
            let _ = writeln!(o, "| {} | {compared} | {skipped} | {m} | {w} |", s.name());
        }
        self.breakdowns(&mut o);
        let _ = writeln!(o, "\n## Rows\n");
        let _ = writeln!(
            o,
            "| id | model | GPUs | plan | metric | published | predicted | published iter (s) | predicted iter (s) | compute (s) | error |"
        );
        let _ = writeln!(o, "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|");
        for r in &self.rows {
            if let Outcome::Compared {
                built,
                published,
                predicted,
                timing,
                ..
            } = &r.outcome
            {
                let secs =
                    |t: Option<Seconds>| t.map_or("–".to_string(), |t| format!("{:.3}", t.0));
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:+.1}% |",
                    r.row.id,
                    r.row.model,
                    r.row.num_gpus.unwrap_or(0),
                    plan_summary(&built.venus),
                    r.row.metric,
                    published,
                    significant(*predicted),
                    secs(timing.map(|t| t.published)),
                    secs(timing.map(|t| t.predicted.iteration)),
                    secs(timing.map(|t| t.predicted.compute)),
                    100.0 * r.error().unwrap_or(0.0)
                );
            }
        }
        let _ = writeln!(o, "\n## Skipped rows\n");
        let _ = writeln!(o, "| id | model | reason |");
        let _ = writeln!(o, "|---|---|---|");
        for r in &self.rows {
            if let Outcome::Skipped(reason) = &r.outcome {
                let _ = writeln!(o, "| {} | {} | {} |", r.row.id, r.row.model, reason);
            }
        }
        let _ = writeln!(o, "\n## Assumptions\n");
        let _ = writeln!(
            o,
            "Values a source does not state are filled by one rule per source (never per row); \
             each generated scenario lists them as `# assumed:` comments \
             (`venusc validate --emit-scenarios DIR` writes them out).\n"
        );
        let mut seen: Vec<(Source, String)> = Vec::new();
        for r in &self.rows {
            if let Outcome::Compared { built, .. } = &r.outcome {
                for a in &built.assumed {
                    let rule = a.split_once(' ').map(|(k, rest)| {
                        // Group by key and rule, without the row's own value.
                        let why = rest.split_once('(').map(|(_, w)| w).unwrap_or(rest);
                        format!("`{k}`: ({why}")
                    });
                    if let Some(rule) = rule {
                        if !seen.contains(&(r.source, rule.clone())) {
                            seen.push((r.source, rule));
                        }
                    }
                }
            }
        }
        for (s, rule) in &seen {
            let _ = writeln!(o, "- {}: {rule}", s.name());
        }
        o
    }
}

/// A way to group the rows for a breakdown table: its title, its column's name and each row's
/// group.
type Grouping = (&'static str, &'static str, fn(&RowResult) -> Option<String>);

/// The breakdowns `docs/validation.md` gives besides the sources (issue 16 item 2).
const GROUPINGS: [Grouping; 3] = [
    ("MAPE per GPU arch", "arch", |r| match &r.outcome {
        Outcome::Compared { arch, .. } => Some(format!("`{}`", arch.word())),
        Outcome::Skipped(_) => None,
    }),
    ("MAPE per precision", "precision", |r| {
        let p = r.row.precision.trim().to_ascii_lowercase();
        Some(if p.is_empty() { "bf16".into() } else { p })
    }),
    ("MAPE per model family", "family", |r| {
        Some(model_family(&r.row.model))
    }),
];

/// A model's family: the leading letters of its name (`GPT-3 175B`, `GPT3-5B` → `gpt`, `Llama
/// 3.1 8B`, `LLAMA2-70B` → `llama`), with GPT-OSS apart from GPT (another architecture).
pub fn model_family(model: &str) -> String {
    let upper = model.to_ascii_uppercase();
    if upper.starts_with("GPT-OSS") {
        return "gpt-oss".into();
    }
    let family: String = model
        .chars()
        .take_while(char::is_ascii_alphabetic)
        .collect::<String>()
        .to_ascii_lowercase();
    if family.is_empty() {
        "other".into()
    } else {
        family
    }
}

impl Validation {
    /// One table per [`GROUPINGS`] entry: per group its speed rows' and memory rows' MAPE and
    /// worst error.
    fn breakdowns(&self, o: &mut String) {
        for (title, column, group_of) in GROUPINGS {
            let _ = writeln!(o, "\n## {title}\n");
            let _ = writeln!(
                o,
                "| {column} | time rows | time MAPE | time worst | memory rows | memory MAPE | memory worst |"
            );
            let _ = writeln!(o, "|---|---:|---:|---:|---:|---:|---:|");
            let mut groups: Vec<String> = self
                .rows
                .iter()
                .filter(|r| r.error().is_some())
                .filter_map(group_of)
                .collect();
            groups.sort();
            groups.dedup();
            for g in groups {
                let of = |memory: bool| {
                    Summary::of(
                        self.compared(memory)
                            .filter(|r| group_of(r).as_ref() == Some(&g)),
                    )
                };
                let (time, memory) = (of(false), of(true));
                let ((tm, tw), (mm, mw)) = (time.percents(), memory.percents());
                let _ = writeln!(
                    o,
                    "| {g} | {} | {tm} | {tw} | {} | {mm} | {mw} |",
                    time.rows, memory.rows
                );
            }
        }
    }
}

/// A predicted value for the table: four significant digits (`1234`, `3.909`, `0.4172`).
fn significant(v: f64) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

/// One row of `validate --format json` (RUNS.md): `reason` is null for a compared row,
/// `predicted` and `error` null for a skipped one.
#[derive(serde::Serialize)]
struct RowJson<'a> {
    id: &'a str,
    status: &'static str,
    reason: Option<&'a str>,
    metric: &'a str,
    published: Option<f64>,
    predicted: Option<f64>,
    error: Option<f64>,
}

impl<'a> RowJson<'a> {
    fn of(r: &'a RowResult) -> RowJson<'a> {
        let (status, reason, predicted) = match &r.outcome {
            Outcome::Compared { predicted, .. } => ("simulated", None, Some(*predicted)),
            Outcome::Skipped(why) => ("skipped", Some(why.as_str()), None),
        };
        RowJson {
            id: &r.row.id,
            status,
            reason,
            metric: &r.row.metric,
            published: r.row.value,
            predicted: predicted.filter(|v| v.is_finite()),
            error: r.error().filter(|v| v.is_finite()),
        }
    }
}

#[derive(serde::Serialize)]
struct SummaryBlockJson {
    rows: usize,
    mape: Option<f64>,
    worst: Option<f64>,
}

impl From<Summary> for SummaryBlockJson {
    fn from(s: Summary) -> Self {
        SummaryBlockJson {
            rows: s.rows,
            mape: s.mape,
            worst: s.worst,
        }
    }
}

#[derive(serde::Serialize)]
struct SummaryJson {
    simulated: usize,
    skipped: usize,
    time: SummaryBlockJson,
    memory: SummaryBlockJson,
}

#[derive(serde::Serialize)]
struct ValidationJson<'a> {
    rows: Vec<RowJson<'a>>,
    summary: SummaryJson,
}

/// The plan line of a generated scenario, compacted for the table.
fn plan_summary(venus: &str) -> String {
    let plan = venus.split("plan p <").nth(1).unwrap_or("");
    let words: Vec<&str> = plan
        .split_whitespace()
        .filter(|w| *w != ">")
        .take_while(|w| *w != "micro_batch")
        .collect();
    let mut s = words.join(" ");
    if let Some(mb) = plan
        .split("micro_batch ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
    {
        let _ = write!(s, " mb {mb}");
    }
    for (k, short) in [
        ("sp", "sp"),
        ("overlap_tp_comm", "tpo"),
        ("recompute full", "rc-full"),
        ("recompute selective", "rc-sel"),
        ("recompute op", "rc-op"),
        ("distributed_optimizer", "dopt"),
        ("precision fp8", "fp8"),
        ("precision fp4", "fp4"),
    ] {
        if plan.lines().any(|l| l.trim().starts_with(k)) {
            let _ = write!(s, " {short}");
        }
    }
    s
}

#[cfg(test)]
mod tests;
