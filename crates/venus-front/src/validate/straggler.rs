//! The straggler rules: E0337 (a `slow_rank`, `slow_node` or `slow_link` outside the
//! cluster), E0338 (a straggler at 0% speed, a slow link at 0% bandwidth), W0018 (a
//! `slow_gpus` fraction that rounds to no GPU).
//!
//! Input: the cluster's `slow_*` items ([`crate::ty::Slow`]) and the world size. Output:
//! [`PlanProblem`]s. Invariant: a scenario that passes has only stragglers that exist and
//! finish (every speed above 0), so the lowering's `1 / speed` is finite.

use super::problem::{PlanProblem, SlowNone, SlowOutside, SlowStopped, SlowUnit};
use super::Validator;
use venus_plan::plan::straggler::{fraction_count, SlowWhich};

impl Validator<'_> {
    pub(super) fn check_stragglers(&mut self) {
        let c = &self.def.cluster;
        let world = self.world;
        let nodes = c.dims.last().map_or(1, |d| d.size.value).max(1);
        let mut problems = Vec::new();
        for s in &c.slow {
            let key = match s.which {
                SlowWhich::Fraction { .. } => "slow_gpus",
                SlowWhich::Rank(_) => "slow_rank",
                SlowWhich::Node(_) => "slow_node",
                SlowWhich::Link(_) => "slow_link",
            };
            if s.speed.value.0 <= 0.0 {
                problems.push(PlanProblem::SlowStopped(SlowStopped {
                    key,
                    link: matches!(s.which, SlowWhich::Link(_)),
                    loc: s.speed.loc,
                }));
            }
            let outside = |unit, written: u64, count: u64| {
                (written >= count).then_some(PlanProblem::SlowOutside(SlowOutside {
                    unit,
                    written,
                    count,
                    loc: s.which_loc,
                    world,
                }))
            };
            problems.extend(match s.which {
                SlowWhich::Rank(r) => outside(SlowUnit::Rank, r, world),
                SlowWhich::Node(n) => outside(SlowUnit::Node, n, nodes),
                SlowWhich::Link(n) => outside(SlowUnit::Link, n, nodes),
                SlowWhich::Fraction { share, .. } => {
                    (fraction_count(share, world) == 0).then_some(PlanProblem::SlowNone(SlowNone {
                        share: share.0,
                        world,
                        loc: s.which_loc,
                    }))
                }
            });
        }
        for p in problems {
            self.report(p);
        }
    }
}
