//! The batch rules: E0305 (the global batch splits into micro_batch × dp) and E0306 (the
//! interleaved schedule's microbatch count is a multiple of pp).
//!
//! Input: the [`Validator`]'s batch sizes and the dp E0301 accepted. Output: [`PlanProblem`]s,
//! and the microbatch count when it is valid.
//! Invariants: the proposed global batches are the multiples of the step just below and just
//! above the written one, so they pass the same rule.

use super::problem::Written;
use super::problem::{BatchSplit, DpSource, InterleavedMicrobatches, PlanProblem, Setting};
use super::{neighbour_multiples, ScheduleKind, Validator};

impl Validator<'_> {
    /// Returns the microbatch count m = global_batch / (micro_batch × dp).
    // megatron/core/num_microbatches_calculator.py:381 (B02), :389 (B03)
    pub(super) fn check_batch(&mut self, dp: u64) -> Option<u64> {
        let p = &self.def.plan;
        let (gb, mb) = (self.global_batch, self.micro_batch);
        let step = mb.saturating_mul(dp);
        if gb % step == 0 && gb >= step {
            return Some(gb / step);
        }
        let dp_from = match &p.dp {
            Some(s) => DpSource::Written(s.loc),
            None => DpSource::Derived {
                world: self.world,
                tp: self.tp,
                pp: self.pp,
                cp: self.cp,
                cp_written: p.cp.is_some(),
            },
        };
        let problem = BatchSplit {
            global_batch: gb,
            micro_batch: mb,
            dp,
            global_batch_loc: p.global_batch.loc,
            micro_batch_loc: p.micro_batch.loc,
            dp_from,
            options: Setting::list("global_batch", neighbour_multiples(gb, step)),
        };
        self.report(PlanProblem::BatchSplit(problem));
        None
    }

    /// Whether the plan runs the interleaved schedule (written, or the default with vpp).
    pub(super) fn interleaved(&self) -> bool {
        let explicit = self.def.plan.schedule.as_ref().map(|s| s.value);
        self.pp > 1 && self.vpp > 1 && matches!(explicit, None | Some(ScheduleKind::Interleaved))
    }

    // megatron/core/pipeline_parallel/schedules.py:1161-1166 (S01: N > m or N < pp) and
    // :1170-1174 (S02: 0 < m % N < pp), with N = microbatch_group_size_per_vp_stage = pp
    // (megatron/core/model_parallel_config.py:567): m must be a multiple of pp, at least pp.
    pub(super) fn check_interleaved_microbatches(&mut self, dp: u64, m: u64) {
        if !self.interleaved() {
            return;
        }
        let pp = self.pp;
        if m >= pp && m.is_multiple_of(pp) {
            return;
        }
        let p = &self.def.plan;
        let written = Written::of(&[("dp", &p.dp), ("pp", &p.pp), ("vpp", &p.vpp)]);
        let step = self.micro_batch.saturating_mul(dp).saturating_mul(pp);
        let options = neighbour_multiples(self.global_batch, step)
            .into_iter()
            .map(|g| (g, g / self.micro_batch.saturating_mul(dp).max(1)))
            .collect();
        let problem = InterleavedMicrobatches {
            m,
            pp,
            dp,
            global_batch: self.global_batch,
            micro_batch: self.micro_batch,
            global_batch_loc: p.global_batch.loc,
            micro_batch_loc: p.micro_batch.loc,
            written,
            options,
        };
        self.report(PlanProblem::InterleavedMicrobatches(problem));
    }
}
