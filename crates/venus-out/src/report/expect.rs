//! `expect` checks: a scenario's bounds against its report (E0501).
//!
//! Input: the typed [`Expect`] block and the [`Report`]. Output: one E0501 [`Diagnostic`] per
//! broken bound, in the order `iteration_time_max`, `tflops_min`, `memory_max`, `mfu_min`.
//! Invariants: the message shows prediction and bound; the primary label is on the bound's
//! value; the help says by how much the prediction misses and the nearest bound it would meet,
//! written as `.venus` source (`1126ms`, `142TFLOP/s`, `72GiB`, `38%`). A bound equal to the
//! prediction holds. `memory_max` is checked against the largest peak over the stages.

use venus_base::base::units::trim;
use venus_base::base::{Bytes, FlopsPerSec, Ratio, Seconds};
use venus_diag::diag::Loc;
use venus_diag::diag::{Code, Diagnostic};
use venus_plan::plan::{ExpectLocs, ExpectSpec};

use super::Report;

/// E0501 for every bound the report breaks.
/// `at` says where each bound was written (the labels' place).
pub fn check_expect(expect: &ExpectSpec, at: &ExpectLocs, report: &Report) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let loc = |l: Option<Loc>| l.unwrap_or_default();
    if let Some(bound) = expect.iteration_time_max {
        out.extend(iteration_time(bound, loc(at.iteration_time_max), report));
    }
    if let Some(bound) = expect.tflops_min {
        out.extend(tflops(bound, loc(at.tflops_min), report));
    }
    if let Some(bound) = expect.memory_max {
        out.extend(memory(bound, loc(at.memory_max), report));
    }
    if let Some(bound) = expect.mfu_min {
        out.extend(mfu(bound, loc(at.mfu_min), report));
    }
    out
}

/// One broken bound, in display units.
struct Miss<'a> {
    key: &'a str,
    /// `predicted iteration time` …
    what: String,
    predicted: f64,
    bound: f64,
    /// Unit for the message: ` ms`, ` TFLOP/s`.
    unit: &'a str,
    /// Decimals of the prediction in the message.
    decimals: usize,
    /// The `.venus` bound the prediction would meet.
    suggestion: String,
    upper: bool,
}

impl Miss<'_> {
    fn diagnostic(&self, loc: venus_diag::diag::Loc) -> Diagnostic {
        let verb = if self.upper { "exceeds" } else { "is below" };
        let predicted = format!("{:.*}{}", self.decimals, self.predicted, self.unit);
        let bound = format!("{}{}", trim(self.bound), self.unit);
        let message = format!("{} {predicted} {verb} `{}` {bound}", self.what, self.key);
        let label = format!("the prediction is {predicted}");
        let (side, action) = if self.upper {
            ("over", "raise")
        } else {
            ("under", "lower")
        };
        let help = if self.bound > 0.0 {
            let pct = (self.predicted - self.bound).abs() / self.bound * 100.0;
            format!(
                "the prediction is {pct:.1}% {side} the bound; {action} it to {} or change the plan",
                self.suggestion
            )
        } else {
            format!(
                "{action} the bound to {} or change the plan",
                self.suggestion
            )
        };
        Diagnostic::new(Code::E0501, message, loc, label).with_help(help)
    }
}

fn iteration_time(bound: Seconds, at: Loc, r: &Report) -> Option<Diagnostic> {
    let (predicted, limit) = (r.iteration_time.ms(), bound.ms());
    (predicted > limit).then(|| {
        Miss {
            key: "iteration_time_max",
            what: "predicted iteration time".into(),
            predicted,
            bound: limit,
            unit: " ms",
            decimals: 2,
            suggestion: format!("{}ms", trim(round_up(predicted))),
            upper: true,
        }
        .diagnostic(at)
    })
}

fn tflops(bound: FlopsPerSec, at: Loc, r: &Report) -> Option<Diagnostic> {
    let (predicted, limit) = (r.tflops_per_gpu.0 / 1e12, bound.0 / 1e12);
    (predicted < limit).then(|| {
        Miss {
            key: "tflops_min",
            what: "predicted throughput per GPU".into(),
            predicted,
            bound: limit,
            unit: " TFLOP/s",
            decimals: 2,
            suggestion: format!("{}TFLOP/s", trim(round_down(predicted))),
            upper: false,
        }
        .diagnostic(at)
    })
}

fn memory(bound: Bytes, at: Loc, r: &Report) -> Option<Diagnostic> {
    let stage = r.peak_stage()?;
    if stage.peak <= bound {
        return None;
    }
    let (predicted, limit) = (stage.peak.gib(), bound.gib());
    Some(
        Miss {
            key: "memory_max",
            what: format!("predicted peak memory of stage {}", stage.stage),
            predicted,
            bound: limit,
            unit: " GiB",
            decimals: 2,
            suggestion: format!("{}GiB", trim(round_up(predicted))),
            upper: true,
        }
        .diagnostic(at),
    )
}

fn mfu(bound: Ratio, at: Loc, r: &Report) -> Option<Diagnostic> {
    let (predicted, limit) = (r.mfu.0 * 100.0, bound.0 * 100.0);
    (predicted < limit).then(|| {
        Miss {
            key: "mfu_min",
            what: "predicted mfu".into(),
            predicted,
            bound: limit,
            unit: "%",
            decimals: 2,
            suggestion: format!("{}%", trim(round_down(predicted))),
            upper: false,
        }
        .diagnostic(at)
    })
}

/// The smallest whole number at or above `v` (a bound the prediction meets), or with more
/// decimals when `v` is below 1 so the suggestion stays close.
fn round_up(v: f64) -> f64 {
    for decimals in 0..=3 {
        let scale = 10f64.powi(decimals);
        let r = (v * scale).ceil() / scale;
        if v >= 1.0 || r <= v * 1.5 {
            return r;
        }
    }
    v
}

/// The largest whole number at or below `v`, or with up to three decimals when the whole
/// number would be 0 (a zero bound is not a useful suggestion).
fn round_down(v: f64) -> f64 {
    for decimals in 0..=3 {
        let scale = 10f64.powi(decimals);
        let r = (v * scale).floor() / scale;
        if r > 0.0 {
            return r;
        }
    }
    0.0
}
