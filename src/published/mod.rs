//! `venusc validate`: predict every fully specified published run and compare.
//!
//! Input: the published-runs TSV text. Output: a [`Validation`] — per row the generated
//! scenario, the published iteration time (converted with the source's FLOP convention,
//! [`flops`]), the predicted one (the scenario through the front end, the lowering and the
//! engine, with the default compute model) and the error — rendered as Markdown by
//! [`Validation::markdown`] (committed as `docs/validation.md`).
//!
//! Invariants: pure (the stdlib is built in, nothing is read); deterministic (the engine runs
//! on integer picoseconds), so debug and release builds print the same table.

pub mod flops;
pub mod scenario;
pub mod split;
pub mod tsv;

use crate::base::Seconds;
use crate::engine;
use crate::lower::{self, LowerOptions};
use crate::plan::Scenario;
use crate::session::Session;
use crate::trace::Category;
use scenario::{Built, Source};
use std::fmt::Write as _;
use std::path::Path;
use tsv::Row;

/// What the simulation of one scenario gave.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub iteration: Seconds,
    /// Forward + backward compute of the busiest simulated rank.
    pub compute: Seconds,
}

/// One row's outcome.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Simulated: published and predicted iteration time.
    Compared {
        built: Built,
        published: Seconds,
        predicted: Prediction,
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
    /// Signed relative error of the predicted iteration time.
    pub fn error(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Compared {
                published,
                predicted,
                ..
            } if published.0 > 0.0 => Some((predicted.iteration.0 - published.0) / published.0),
            _ => None,
        }
    }

    /// In the acceptance set: BF16 dense rows whose plan the source fully states (SC21
    /// Table 1, the Megatron-LM README table, MegaScale).
    pub fn in_acceptance_set(&self) -> bool {
        matches!(
            self.source,
            Source::Sc21Table1 | Source::MegatronReadme | Source::MegaScale
        ) && matches!(&self.outcome, Outcome::Compared { built, .. } if !built.moe && !built.precision_fp8)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    pub rows: Vec<RowResult>,
}

/// Simulates a `.venus` text holding one scenario with the default options.
pub fn simulate_text(name: &str, text: &str) -> Result<Prediction, String> {
    let mut session = Session::new();
    let mut read =
        |p: &Path| Err::<Vec<u8>, _>(format!("`{}` is not available", p.display()).into());
    let root = session.load(Path::new(name), text.as_bytes(), &mut read);
    let checked = session.check(root);
    if let Some(d) = checked.diagnostics.iter().find(|d| d.is_error()) {
        return Err(format!("{}: {}", d.code.as_str(), d.message));
    }
    let sc = checked
        .scenarios
        .first()
        .ok_or_else(|| "no scenario".to_string())?;
    predict(sc)
}

/// Lowers and simulates one iteration of a validated scenario: its iteration time and the
/// busiest rank's compute.
pub fn predict(sc: &Scenario) -> Result<Prediction, String> {
    let lowered = lower::lower(sc, &LowerOptions::default()).map_err(|e| e.to_string())?;
    let tl = engine::simulate(
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
    let published = flops::published_iteration_time(row, source)
        .ok_or_else(|| format!("metric `{}` cannot be converted", row.metric))?;
    let predicted = simulate_text(&format!("{}.venus", row.id), &built.venus)?;
    Ok(Outcome::Compared {
        built,
        published,
        predicted,
    })
}

/// Mean absolute percentage error and the largest absolute error of some results, in percent.
pub fn mape(results: &[&RowResult]) -> Option<(f64, f64)> {
    let errs: Vec<f64> = results.iter().filter_map(|r| r.error()).collect();
    if errs.is_empty() {
        return None;
    }
    let mean = errs.iter().map(|e| e.abs()).sum::<f64>() / errs.len() as f64;
    let max = errs.iter().fold(0.0f64, |m, e| m.max(e.abs()));
    Some((100.0 * mean, 100.0 * max))
}

impl Validation {
    pub fn acceptance(&self) -> Vec<&RowResult> {
        self.rows.iter().filter(|r| r.in_acceptance_set()).collect()
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
             `mfu`, one set of constants per GPU type. The published figure is converted to an \
             iteration time with the source's own FLOP convention (published-runs.md §3.6): \
             SC21 TFLOP/s with Eq. 3 (recompute-inclusive), Megatron-LM README TFLOP/s with \
             Megatron's July 2024 `num_floating_point_operations`, tokens/s and iteration \
             times as they are. Error = (predicted − published) / published.\n"
        );
        let acc = self.acceptance();
        if let Some((m, worst)) = mape(&acc) {
            let _ = writeln!(
                o,
                "**Acceptance set** (BF16 dense rows with a stated plan: SC21 Table 1, Megatron-LM \
                 README, MegaScale): {} rows, iteration-time MAPE {m:.1}%, worst {worst:.1}%.\n",
                acc.len()
            );
        }
        let _ = writeln!(o, "## MAPE per source\n");
        let _ = writeln!(o, "| source | rows simulated | skipped | MAPE | worst |");
        let _ = writeln!(o, "|---|---:|---:|---:|---:|");
        let mut sources: Vec<Source> = self.rows.iter().map(|r| r.source).collect();
        sources.sort();
        sources.dedup();
        for s in sources {
            let of: Vec<&RowResult> = self.rows.iter().filter(|r| r.source == s).collect();
            let compared = of.iter().filter(|r| r.error().is_some()).count();
            let skipped = of.len() - compared;
            let (m, w) = match mape(&of) {
                Some((m, w)) => (format!("{m:.1}%"), format!("{w:.1}%")),
                None => ("–".into(), "–".into()),
            };
            let _ = writeln!(o, "| {} | {compared} | {skipped} | {m} | {w} |", s.name());
        }
        let _ = writeln!(o, "\n## Rows\n");
        let _ = writeln!(
            o,
            "| id | model | GPUs | plan | metric | published | published iter (s) | predicted iter (s) | compute (s) | error |"
        );
        let _ = writeln!(o, "|---|---|---:|---|---|---:|---:|---:|---:|---:|");
        for r in &self.rows {
            if let Outcome::Compared {
                built,
                published,
                predicted,
            } = &r.outcome
            {
                let _ = writeln!(
                    o,
                    "| {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {:+.1}% |",
                    r.row.id,
                    r.row.model,
                    r.row.num_gpus.unwrap_or(0),
                    plan_summary(&built.venus),
                    r.row.metric,
                    r.row.value.unwrap_or(0.0),
                    published.0,
                    predicted.iteration.0,
                    predicted.compute.0,
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
