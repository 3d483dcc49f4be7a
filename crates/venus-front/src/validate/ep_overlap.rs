//! The EP-overlap rule (`overlap_ep_comm`, Megatron's `--overlap-moe-expert-parallel-comm`):
//! W0015 when the plan writes it where it does not run.
//!
//! Input: the [`Validator`]'s pp, vpp, ep, the model's experts and the plan's schedule and
//! recompute. Output: a [`PlanProblem`]; [`Validator::ep_overlap_runs`] decides the
//! effective flag (`Flags::overlap_ep_comm`) from the same conditions, so the warning and the
//! simulation cannot disagree.

use super::problem::{EpOverlapIgnored, EpOverlapReason, PlanProblem};
use super::{ScheduleKind, Validator};
use venus_base::base::{MoeDispatcher, Recompute};

impl Validator<'_> {
    /// Why `overlap_ep_comm` would not run on this plan (None: it runs). Megatron-LM
    /// (d98e8a64ddf3) megatron/core/transformer/transformer_config.py:3002-3041: expert
    /// parallelism, vpp with pp > 1, no full recompute. Megatron runs it as the combined 1F1B
    /// of the interleaved schedule (schedules.py:1485) or, without a pipeline, as
    /// `combined_1f1b_schedule_for_no_pipelining` (combined_1f1b.py), both modelled.
    fn ep_overlap_blocker(&self) -> Option<EpOverlapReason> {
        let p = &self.def.plan;
        if self.ep <= 1 || !self.def.model.is_moe() {
            return Some(EpOverlapReason::NoExpertParallel { ep: self.ep });
        }
        if p.recompute() == Recompute::Full {
            return Some(EpOverlapReason::FullRecompute);
        }
        // transformer_config.py:3013-3046 (E05): "supported with alltoall/flex token
        // dispatcher".
        if p.moe_dispatcher.as_ref().map(|d| d.value) == Some(MoeDispatcher::AllGather) {
            return Some(EpOverlapReason::AllGatherDispatcher);
        }
        let explicit = p.schedule.as_ref().map(|s| s.value);
        if let Some(s) = explicit.filter(|s| *s != ScheduleKind::Interleaved) {
            return Some(EpOverlapReason::Schedule(s));
        }
        if self.pp > 1 && self.vpp <= 1 {
            return Some(EpOverlapReason::NoInterleaving {
                pp: self.pp,
                vpp: self.interleaving_vpp(),
            });
        }
        None
    }

    /// The smallest vpp that splits the layers evenly over the plan's stages, the one a help
    /// proposes to interleave the schedule (`None` without a pipeline, or when none does).
    pub(super) fn interleaving_vpp(&self) -> Option<u64> {
        (2..=self.layers.min(64))
            .find(|&v| self.layers.is_multiple_of(self.pp.max(2).saturating_mul(v)))
            .filter(|_| self.pp > 1)
    }

    /// Whether Megatron's combined 1F1B runs on this plan.
    pub(super) fn ep_overlap_runs(&self) -> bool {
        self.ep_overlap_blocker().is_none()
    }

    pub(super) fn check_ep_overlap(&mut self) {
        let Some(flag) = self.def.plan.overlap_ep_comm.as_ref().filter(|f| f.value) else {
            return;
        };
        let loc = flag.loc;
        if let Some(reason) = self.ep_overlap_blocker() {
            self.report(PlanProblem::EpOverlapIgnored(EpOverlapIgnored {
                loc,
                reason,
            }));
        }
    }
}
