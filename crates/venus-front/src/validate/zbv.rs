//! The ZBV schedule rules (`schedule zbv`): E0325 (a pipeline to run on, shared with the
//! zero-bubble hand schedules), E0353 (layers that split evenly into two chunks per stage,
//! in place of E0302's split rule) and E0354
//! (the two model chunks the V places); E0326 (the optimizer overlaps the zero-bubble runtime
//! rejects) is checked with the hand schedules.
//!
//! Input: the [`Validator`]'s pp, layers and the plan's `schedule` and `vpp`. Output:
//! [`PlanProblem`]s.
//! Invariants: the rules read only a written `schedule zbv`; the chunk rule is the schedule
//! IR's own (`PipelineShape::check`: vpp 2), so a plan that passes builds.

use super::problem::{PlanProblem, ZbvIssue, ZbvProblem};
use super::{loc_of, split_layers, ScheduleKind, StageSplit, Validator};

impl Validator<'_> {
    /// Where `schedule zbv` is written.
    pub(super) fn zbv(&self) -> Option<venus_diag::diag::Loc> {
        let s = self.def.plan.schedule.as_ref()?;
        (s.value == ScheduleKind::Zbv).then_some(s.loc)
    }

    fn report_zbv(&mut self, issue: ZbvIssue) {
        if let Some(loc) = self.zbv() {
            self.report(PlanProblem::Zbv(ZbvProblem { loc, issue }));
        }
    }

    // sail-sg/zero-bubble-pipeline-parallelism (main, 39f2c186a275) megatron/core/
    // zbpp_utils.py:109-114: `num_layers % transformer_pipeline_model_parallel_size == 0`
    // and "zero bubble v and 1f1b v schedule requires number of layers per pipeline stage to
    // be even"; the V's chunks are `num_layers_per_pipeline_stage // 2` layers each, so no
    // uneven end, accounting or layout applies. Replaces E0302 for a ZBV plan (one error
    // with the fix the V takes); the split of a plan that passes.
    pub(super) fn check_zbv_split(&mut self) -> Option<StageSplit> {
        let p = &self.def.plan;
        let uneven = [
            ("pipeline_layout", p.pipeline_layout.as_ref().map(|s| s.loc)),
            ("first_stage_layers", loc_of(&p.first_stage_layers)),
            ("last_stage_layers", loc_of(&p.last_stage_layers)),
            ("account_for_embedding", loc_of(&p.account_for_embedding)),
            ("account_for_loss", loc_of(&p.account_for_loss)),
        ]
        .into_iter()
        .find_map(|(key, loc)| loc.map(|l| (key, l)));
        if let Some((key, key_loc)) = uneven {
            self.report_zbv(ZbvIssue::UnevenSplit { key, key_loc });
            return None;
        }
        let (layers, pp) = (self.layers, self.pp);
        if layers.is_multiple_of(pp.saturating_mul(2)) {
            return split_layers(layers, pp, 2, None, None).ok();
        }
        // The pp nearest the plan's (the smaller on a tie) with an even split that the
        // cluster's GPUs still divide into (tp × cp × pp must divide the world, E0301).
        let rest = self.tp.saturating_mul(self.cp).max(1);
        let world = self.world;
        let fix_pp = (2..=layers / 2)
            .filter(|&p| layers.is_multiple_of(p.saturating_mul(2)))
            .filter(|&p| world.is_multiple_of(rest.saturating_mul(p).max(1)))
            .min_by_key(|&p| (p.abs_diff(pp), p));
        let layers_loc = self.def.model.layers.loc;
        self.report_zbv(ZbvIssue::Layers {
            layers,
            pp,
            layers_loc,
            pp_loc: loc_of(&self.def.plan.pp),
            fix_pp,
        });
        None
    }

    // zbpp_utils.py:115-118: "num_layers_per_virtual_pipeline_stage should not be set with
    // zero bubble v and 1f1b v schedule"; the runtime sets vpp to 2 itself.
    pub(super) fn check_zbv_chunks(&mut self) {
        if self.zbv().is_none() {
            return;
        }
        let Some(v) = self.def.plan.vpp.as_ref().filter(|v| v.value != 2) else {
            return;
        };
        let (vpp, vpp_loc) = (v.value, v.loc);
        self.report_zbv(ZbvIssue::Chunks { vpp, vpp_loc });
    }
}
