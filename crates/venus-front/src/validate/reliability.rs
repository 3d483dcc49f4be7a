//! The rules on the goodput inputs: E0335 (a zero MTBF or checkpoint interval), E0336 (inputs
//! that give no estimate: failure rates without a storage bandwidth, or a checkpoint interval
//! without failure rates) and W0017 (a written checkpoint interval well below the Young/Daly
//! optimum's goodput).
//!
//! Input: the cluster's reliability keys and the plan's `checkpoint_interval`; for W0017 the
//! validated scenario. Output: [`PlanProblem`]s. The model they guard is `plan::goodput`.

use super::problem::{CheckpointIntervalCost, GoodputIncomplete, PlanProblem, ZeroReliability};
use super::Validator;
use crate::ty::{Opt, Seconds};
use venus_base::base::BytesPerSec;
use venus_plan::plan::goodput::Goodput;
use venus_plan::plan::Scenario;

/// W0017 threshold: a written interval whose goodput is more than this below the optimum's.
/// Calibration note (no source): one percentage point, so that an interval rounded to whole
/// minutes or iterations near the optimum never warns (goodput is flat around it: at the
/// Llama 3 example's rates, twice or half the optimum costs 0.5 to 0.6 points).
const INTERVAL_COST: f64 = 0.01;

impl Validator<'_> {
    /// E0335 and E0336.
    pub(super) fn check_reliability(&mut self) {
        let r = &self.def.cluster.reliability;
        let zero = |o: &Opt<Seconds>| o.as_ref().filter(|s| s.value.0 <= 0.0).map(|s| s.loc);
        let times = [
            ("gpu_mtbf", &r.gpu_mtbf, self.cluster_name()),
            ("node_mtbf", &r.node_mtbf, self.cluster_name()),
            ("link_mtbf", &r.link_mtbf, self.cluster_name()),
            (
                "checkpoint_interval",
                &self.def.plan.checkpoint_interval,
                self.plan_name(),
            ),
        ];
        let mut problems = Vec::new();
        for (key, value, owner) in times {
            if let Some(loc) = zero(value) {
                problems.push(PlanProblem::ZeroReliability(ZeroReliability {
                    key,
                    loc,
                    owner,
                }));
            }
        }
        if let Some(p) = self.incomplete_goodput() {
            problems.push(PlanProblem::GoodputIncomplete(p));
        }
        for p in problems {
            self.report(p);
        }
    }

    fn incomplete_goodput(&self) -> Option<GoodputIncomplete> {
        let c = &self.def.cluster;
        let r = &c.reliability;
        let rates = [
            ("gpu_mtbf", &r.gpu_mtbf),
            ("node_mtbf", &r.node_mtbf),
            ("link_mtbf", &r.link_mtbf),
        ];
        let first_rate = rates.iter().find_map(|(k, o)| {
            o.as_ref()
                .map(|s| (format!("{k} {}", time_text(s.value)), s.loc))
        });
        match (first_rate, &self.def.plan.checkpoint_interval) {
            (Some(rate), _) if r.storage_write_bw.is_none() => {
                let per_gpu = c.dims.last().map_or(0.0, |d| d.bandwidth.value.0);
                let cap = BytesPerSec(per_gpu * self.world as f64);
                Some(GoodputIncomplete::NoStorage {
                    rate,
                    cluster: self.cluster_name(),
                    link_cap: crate::ty::value::bandwidth_text(cap),
                })
            }
            (None, Some(interval)) => Some(GoodputIncomplete::NoRates {
                interval: (
                    format!("checkpoint_interval {}", time_text(interval.value)),
                    interval.loc,
                ),
                cluster: self.cluster_name(),
            }),
            _ => None,
        }
    }

    /// W0017: the written `checkpoint_interval` against the Young/Daly optimum.
    pub(super) fn check_checkpoint_interval(&mut self, sc: &Scenario) {
        let Some(written) = &self.def.plan.checkpoint_interval else {
            return;
        };
        let Some(g) = Goodput::of(sc) else {
            return;
        };
        if g.optimal_goodput.0 - g.goodput.0 <= INTERVAL_COST {
            return;
        }
        self.report(PlanProblem::CheckpointInterval(CheckpointIntervalCost {
            written: format!("checkpoint_interval {}", time_text(written.value)),
            loc: written.loc,
            goodput: g.goodput.0,
            optimal_goodput: g.optimal_goodput.0,
            optimum: time_text(Seconds(g.optimal_interval.0.round().max(1.0))),
        }));
    }

    fn cluster_name(&self) -> String {
        match &self.def.cluster.name {
            Some(n) => format!("cluster `{n}`"),
            None => "the cluster".to_string(),
        }
    }
}

/// A time as the language writes it, in the largest unit that keeps it whole: `4h`, `30min`,
/// `249s`, `0.5s`.
pub fn time_text(t: Seconds) -> String {
    let s = t.0;
    let whole = |unit: f64| s >= unit && (s / unit).fract() == 0.0;
    if whole(3600.0) {
        format!("{}h", s / 3600.0)
    } else if whole(60.0) {
        format!("{}min", s / 60.0)
    } else {
        format!("{}s", venus_base::base::units::trim(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_text_picks_the_largest_whole_unit() {
        assert_eq!(time_text(Seconds(14_400.0)), "4h");
        assert_eq!(time_text(Seconds(1800.0)), "30min");
        assert_eq!(time_text(Seconds(249.0)), "249s");
        assert_eq!(time_text(Seconds(0.0)), "0s");
    }
}
