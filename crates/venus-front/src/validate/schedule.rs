//! The pipeline-schedule rules: E0307 (vpp needs a pipeline to interleave) and E0311 (the
//! written schedule fits pp and vpp).
//!
//! Input: the [`Validator`]'s pp, vpp and the plan's `schedule` and `overlap_p2p`. Output:
//! [`PlanProblem`]s.
//! Invariants: each rule reads only what the plan wrote; an unwritten schedule is the default
//! one and never wrong.

use super::problem::{PlanProblem, ScheduleIssue, ScheduleProblem, VppKind, VppProblem};
use super::{loc_of, on, ScheduleKind, Validator};

impl Validator<'_> {
    // megatron/training/arguments.py:1001-1009 (L07: vpp with pp ≤ 1; L08: vpp without
    // overlap_p2p and pp ≤ 2); megatron/core/parallel_state.py:830 (L09).
    pub(super) fn check_vpp(&mut self) {
        let p = &self.def.plan;
        // A `pipeline_layout` sets vpp when the plan writes none (arguments.py:940-952, L02),
        // before these rules run.
        let (vpp, vpp_loc) = match (&p.vpp, &p.pipeline_layout) {
            (Some(v), _) => (v.value, v.loc),
            (None, Some(layout)) => (self.vpp, layout.loc),
            (None, None) => return,
        };
        // DualPipeV's two chunks are its own (E0330), not Megatron's interleaving; so are
        // ZBV's (E0354).
        let dualpipe = p
            .schedule
            .as_ref()
            .is_some_and(|s| s.value.is_dualpipe() || s.value == ScheduleKind::Zbv);
        if vpp <= 1 || dualpipe {
            return;
        }
        let kind = match self.pp {
            1 => VppKind::NoPipeline,
            2 if !on(&p.overlap_p2p) => VppKind::TwoStagesWithoutOverlap,
            _ => return,
        };
        let problem = VppProblem {
            vpp,
            vpp_loc,
            pp_loc: loc_of(&p.pp),
            kind,
        };
        self.report(PlanProblem::Vpp(problem));
    }

    pub(super) fn check_schedule(&mut self) {
        let p = &self.def.plan;
        let Some(s) = &p.schedule else { return };
        let (pp, vpp) = (self.pp, self.vpp);
        let issue = match s.value {
            ScheduleKind::Interleaved | ScheduleKind::Gpipe if pp == 1 => {
                ScheduleIssue::NeedsPipeline {
                    pp_loc: loc_of(&p.pp),
                }
            }
            ScheduleKind::Interleaved if vpp == 1 => ScheduleIssue::NeedsChunks {
                vpp: (2..=self.layers.min(64))
                    .find(|&v| self.layers.is_multiple_of(pp.saturating_mul(v))),
                vpp_loc: loc_of(&p.vpp),
            },
            ScheduleKind::Gpipe | ScheduleKind::OneFOneB if vpp > 1 => {
                ScheduleIssue::CannotRunChunks {
                    vpp,
                    vpp_loc: loc_of(&p.vpp),
                }
            }
            _ => return,
        };
        let problem = ScheduleProblem {
            schedule: s.value,
            loc: s.loc,
            kind: issue,
        };
        self.report(PlanProblem::Schedule(problem));
    }
}
