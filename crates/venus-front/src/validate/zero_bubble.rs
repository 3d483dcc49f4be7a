//! The zero-bubble schedule rules (`schedule zb_h1`, `schedule zb_h2`; E0325 and E0326 also
//! for `schedule zbv`): E0325 (a pipeline to
//! run on), E0326 (features the reference runtime does not run with them), E0327 (enough
//! microbatches for the warmup) and W0014 (below the microbatch count the reference asserts).
//!
//! Input: the [`Validator`]'s pp, vpp and the plan's `schedule`, optimizer flags and
//! microbatch count. Output: [`PlanProblem`]s.
//! Invariants: the rules read only a written zero-bubble schedule; the microbatch bounds are
//! the schedule IR's own ([`PipelineShape::least_zero_bubble_microbatches`]), so a plan that
//! passes builds.

use super::problem::{
    PlanProblem, ZeroBubbleFeature, ZeroBubbleMicrobatches, ZeroBubbleProblem,
    ZeroBubbleUnsupported,
};
use super::{on, ScheduleKind, Validator};
use venus_plan::schedule::{Kind, PipelineShape};

impl Validator<'_> {
    /// The written zero-bubble schedule and where it is written.
    fn zero_bubble(&self) -> Option<(ScheduleKind, venus_diag::diag::Loc)> {
        let s = self.def.plan.schedule.as_ref()?;
        s.value.is_zero_bubble().then_some((s.value, s.loc))
    }

    // sail-sg/zero-bubble-pipeline-parallelism (main, 39f2c186a275) megatron/core/zbpp_utils.py:134
    // "zero bubble must be enabled with pipeline parallelism".
    /// The zero-bubble hand schedules, or ZBV (which sets `enable_zero_bubble`, zbpp_utils.py:
    /// 121-122, so the runtime's zero-bubble asserts hold for it too).
    fn any_zero_bubble(&self) -> Option<(ScheduleKind, venus_diag::diag::Loc)> {
        self.zero_bubble()
            .or_else(|| self.zbv().map(|loc| (ScheduleKind::Zbv, loc)))
    }

    pub(super) fn check_zero_bubble_pipeline(&mut self) {
        let Some((schedule, loc)) = self.any_zero_bubble() else {
            return;
        };
        if self.pp > 1 {
            return;
        }
        let pp_loc = self.def.plan.pp.as_ref().map(|s| s.loc);
        self.report(PlanProblem::ZeroBubbleNeedsPipeline(ZeroBubbleProblem {
            schedule,
            loc,
            pp_loc,
        }));
    }

    // runtime.py:1573 (main, 39f2c186a275): "got virtual pipeline parallel but v_schedule is
    // disabled"; zbpp_utils.py:131-133: with the distributed optimizer, neither
    // `overlap_param_gather` ("the original code somehow doesn't work") nor
    // `overlap_grad_reduce` ("not supported yet because we didn't verify the correctness").
    pub(super) fn check_zero_bubble_features(&mut self) {
        let Some((schedule, loc)) = self.any_zero_bubble() else {
            return;
        };
        let p = &self.def.plan;
        let mut found = Vec::new();
        // ZBV's chunks are its own (E0354).
        let hand = schedule != ScheduleKind::Zbv;
        if let Some(vpp) = p.vpp.as_ref().filter(|v| hand && v.value > 1) {
            found.push((ZeroBubbleFeature::Vpp(vpp.value), vpp.loc));
        }
        if on(&p.distributed_optimizer) {
            for (flag, feature) in [
                (&p.overlap_grad_reduce, ZeroBubbleFeature::OverlapGradReduce),
                (
                    &p.overlap_param_gather,
                    ZeroBubbleFeature::OverlapParamGather,
                ),
            ] {
                if let Some(f) = flag.as_ref().filter(|f| f.value) {
                    found.push((feature, f.loc));
                }
            }
        }
        let distributed_optimizer = p.distributed_optimizer.as_ref().map(|d| d.loc);
        for (feature, feature_loc) in found {
            self.report(PlanProblem::ZeroBubbleUnsupported(ZeroBubbleUnsupported {
                schedule,
                loc,
                feature,
                feature_loc,
                distributed_optimizer,
            }));
        }
    }

    // megatron/core/pipeline_parallel/efficiency.py:110-124 (arxiv branch, f68d38794764)
    // `get_hand_schedule`: rank 0 runs (pp − 1)·c warmup forwards, so m ≥ (pp − 1)·c, and
    // m ≥ pp (see `PipelineShape::check_zero_bubble`); efficiency.py:111 asserts m ≥ 2·pp.
    pub(super) fn check_zero_bubble_microbatches(&mut self, dp: u64, m: u64) {
        let Some((schedule, loc)) = self.zero_bubble() else {
            return;
        };
        if self.pp <= 1 {
            return;
        }
        let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let shape = PipelineShape::new(Kind::from(schedule), narrow(self.pp), 1, narrow(m));
        let least = u64::from(shape.least_zero_bubble_microbatches());
        let asserted = self.pp.saturating_mul(2);
        if m >= asserted {
            return;
        }
        // 2·pp ≥ max(pp, 2·(pp − 1)): the proposed batch passes both rules.
        let want = asserted.max(least);
        let per_microbatch = self.micro_batch.saturating_mul(dp);
        let p = &self.def.plan;
        let problem = ZeroBubbleMicrobatches {
            schedule,
            loc,
            m,
            pp: self.pp,
            least,
            asserted,
            dp,
            global_batch: self.global_batch,
            micro_batch: self.micro_batch,
            global_batch_loc: p.global_batch.loc,
            fix: want.saturating_mul(per_microbatch),
            fix_microbatches: want,
        };
        self.report(if m < least {
            PlanProblem::ZeroBubbleMicrobatches(problem)
        } else {
            PlanProblem::ZeroBubbleBelowAssert(problem)
        });
    }
}
