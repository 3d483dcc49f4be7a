//! The mixture-of-experts rules (E0309): `ep` needs experts that it divides and an expert grid
//! (etp × ep × pp) that divides the GPU count; a mixture-of-experts model with tp needs sp.
//!
//! Input: the [`Validator`]'s plan sizes and the model's experts. Output: [`PlanProblem`]s.
//! Invariants: the rules on `ep` are one problem (the value of `ep`): the first it breaks is
//! the diagnostic, the others its notes; a rejected `ep` is recorded so W0001 says nothing
//! about where its groups land.

use super::problem::{EpFailure, ExpertParallel, MoeNeedsSp, PlanProblem, Setting, Written};
use super::{divisors, loc_of, nearest, on, Validator};

impl Validator<'_> {
    /// The ep values nearest the written one that divide the experts and whose expert grid
    /// (etp × ep × pp) divides the GPU count: they pass every ep rule of E0309.
    fn ep_options(&self) -> Vec<Setting> {
        let (tp, pp) = (self.etp(), self.pp);
        let fits = |x: u64| {
            let grid = tp.saturating_mul(x).saturating_mul(pp).max(1);
            self.world.is_multiple_of(grid) && self.def.model.experts().is_multiple_of(x)
        };
        Setting::list(
            "ep",
            nearest(
                divisors(self.world).into_iter().filter(|&x| fits(x)),
                self.ep,
                2,
            ),
        )
    }

    pub(super) fn check_experts(&mut self) {
        let p = &self.def.plan;
        let m = &self.def.model;
        let (ep, tp) = (self.ep, self.tp);
        let mut failures: Vec<EpFailure> = Vec::new();
        match &m.experts {
            // megatron/training/arguments.py:1656 (E01)
            None if ep > 1 => failures.push(EpFailure::Dense {
                model: m.name.clone(),
                model_loc: m.loc,
            }),
            // megatron/training/arguments.py:1658 (E02)
            Some(e) if e.value % ep != 0 => failures.push(EpFailure::Experts {
                experts: e.value,
                experts_loc: e.loc,
                options: self.ep_options(),
            }),
            _ => {}
        }
        // megatron/core/parallel_state.py:883 (W02): etp defaults to tp (arguments.py:587-588);
        // a written etp that breaks the grid is E0342's (`check_etp`).
        let etp = self.etp();
        let group = (etp as u128)
            .saturating_mul(ep as u128)
            .saturating_mul(self.pp as u128);
        let etp_written = p.etp.is_some() && m.is_moe();
        if ep > 1 && group > 0 && !etp_written && !(self.world as u128).is_multiple_of(group) {
            let written = Written::of(&[("tp", &p.tp), ("pp", &p.pp)]);
            failures.push(EpFailure::Grid {
                world: self.world,
                tp: etp,
                pp: self.pp,
                group,
                written,
                dims: self.dim_sizes(),
                options: self.ep_options(),
            });
        }
        let mut failures = failures.into_iter();
        if let Some(first) = failures.next() {
            let problem = ExpertParallel {
                ep,
                ep_loc: loc_of(&p.ep).unwrap_or(p.loc),
                first,
                also: failures.collect(),
            };
            self.rejected.push("ep");
            self.report(PlanProblem::ExpertParallel(problem));
        }
        // megatron/core/transformer/moe/moe_layer.py:636-640 (P04)
        let p = &self.def.plan;
        let m = &self.def.model;
        if m.is_moe() && tp > 1 && !on(&p.sp) {
            let problem = MoeNeedsSp {
                model: m.name.clone(),
                tp,
                primary: loc_of(&p.tp).unwrap_or(p.loc),
                experts: m.experts.as_ref().map(|e| (e.value, e.loc)),
            };
            self.report(PlanProblem::MoeNeedsSp(problem));
        }
    }
}
