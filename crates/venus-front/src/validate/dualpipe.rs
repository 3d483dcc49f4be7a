//! The DualPipe schedule rules (`schedule dualpipe`, `schedule dualpipev`): E0328 (a pipeline
//! the step loop runs on), E0329 (enough microbatches) and E0330 (the model chunks the
//! schedule places).
//!
//! Input: the [`Validator`]'s pp, vpp and the plan's `schedule` and microbatch count. Output:
//! [`PlanProblem`]s.
//! Invariants: the rules read only a written DualPipe schedule; the bounds are the schedule
//! IR's own (`PipelineShape::check`), so a plan that passes builds.

use super::problem::{DualPipeIssue, DualPipeProblem, PlanProblem};
use super::{loc_of, ScheduleKind, Validator};

impl Validator<'_> {
    /// The written DualPipe schedule and where it is written.
    fn dualpipe(&self) -> Option<(ScheduleKind, venus_diag::diag::Loc)> {
        let s = self.def.plan.schedule.as_ref()?;
        s.value.is_dualpipe().then_some((s.value, s.loc))
    }

    fn report_dualpipe(&mut self, issue: DualPipeIssue) {
        if let Some((schedule, loc)) = self.dualpipe() {
            self.report(PlanProblem::DualPipe(DualPipeProblem {
                schedule,
                loc,
                issue,
            }));
        }
    }

    // deepseek-ai/DualPipe (3da1bbea5360) dualpipe/dualpipe.py:332 `assert num_ranks % 2 ==
    // 0`; both classes exchange with a previous and a next rank (dualpipe.py:36-38).
    pub(super) fn check_dualpipe_pipeline(&mut self) {
        let Some((schedule, _)) = self.dualpipe() else {
            return;
        };
        let pp_loc = loc_of(&self.def.plan.pp);
        if self.pp < 2 {
            self.report_dualpipe(DualPipeIssue::NeedsPipeline { pp_loc });
        } else if schedule == ScheduleKind::DualPipe && !self.pp.is_multiple_of(2) {
            self.report_dualpipe(DualPipeIssue::OddStages {
                pp: self.pp,
                pp_loc,
            });
        }
    }

    // dualpipe.py:333 `num_chunks % 2 == 0 and num_chunks >= num_ranks * 2`;
    // dualpipev.py:318 `num_chunks >= num_ranks * 2`.
    pub(super) fn check_dualpipe_microbatches(&mut self, dp: u64, m: u64) {
        let Some((schedule, _)) = self.dualpipe() else {
            return;
        };
        if self.pp < 2 {
            return;
        }
        let even = schedule == ScheduleKind::DualPipe;
        let least = self.pp.saturating_mul(2);
        if m >= least && (!even || m.is_multiple_of(2)) {
            return;
        }
        let mut want = m.max(least);
        if even && !want.is_multiple_of(2) {
            want = want.saturating_add(1);
        }
        let p = &self.def.plan;
        let issue = DualPipeIssue::Microbatches {
            m,
            least,
            even,
            dp,
            global_batch: self.global_batch,
            micro_batch: self.micro_batch,
            global_batch_loc: p.global_batch.loc,
            fix: want.saturating_mul(self.micro_batch).saturating_mul(dp),
            fix_microbatches: want,
        };
        self.report_dualpipe(issue);
    }

    // dualpipev.py: `module` holds the two arms of the V (`self.module[phase]`, two chunks of
    // one parameter copy); dualpipe.py: the two directions, each a whole pp-stage split.
    pub(super) fn check_dualpipe_chunks(&mut self) {
        let Some((schedule, _)) = self.dualpipe() else {
            return;
        };
        let want = venus_plan::schedule::Kind::from(schedule)
            .written_vpp()
            .map_or(1, u64::from);
        let written = self.def.plan.vpp.as_ref().map(|v| (v.value, v.loc));
        let vpp = written.map_or(1, |(v, _)| v);
        if vpp == want {
            return;
        }
        self.report_dualpipe(DualPipeIssue::Chunks {
            vpp,
            vpp_loc: written.map(|(_, l)| l),
            want,
        });
    }
}
