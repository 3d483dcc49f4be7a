//! The world-size rules: E0202 (a cluster too large to model) and E0301 (tp × pp × cp × dp
//! is not the GPU count), with the single-factor changes that would fit.
//!
//! Input: the [`Validator`]'s plan sizes and cluster dims. Output: [`PlanProblem`]s, and dp
//! when the world fits.
//! Invariants: products are taken in u128 or saturating, so no user number overflows; a
//! proposed factor also passes the layer split (pp) or the head rules (tp).

use super::problem::{DimSize, PlanProblem, Setting, WorldHelp, WorldMismatch, WorldOption};
use super::problem::{WorldTooLarge, Written};
use super::{divisors, loc_of, nearest, Validator, MAX_WORLD};

impl Validator<'_> {
    /// The cluster's dim sizes, innermost first (secondary labels).
    pub(super) fn dim_sizes(&self) -> Vec<DimSize> {
        self.def
            .cluster
            .dims
            .iter()
            .map(|dim| DimSize {
                name: dim.name.value.clone(),
                size: dim.size.value,
                loc: dim.size.loc,
            })
            .collect()
    }

    pub(super) fn check_world_limit(&mut self) -> bool {
        if self.world <= MAX_WORLD {
            return true;
        }
        let c = &self.def.cluster;
        let product: u128 = c
            .dims
            .iter()
            .fold(1u128, |a, d| a.saturating_mul(d.size.value as u128));
        let loc = c.dims.last().map_or(c.loc, |d| d.size.loc);
        let mut others = self.dim_sizes();
        others.pop();
        others.reverse();
        self.report(PlanProblem::WorldTooLarge(WorldTooLarge {
            product,
            loc,
            others,
        }));
        false
    }

    /// Whether the layers split over `pp` stages (with the plan's vpp, uneven ends and
    /// accounting; with a `pipeline_layout`, whether its stages are a multiple of `pp`).
    pub(super) fn pp_ok(&self, pp: u64) -> bool {
        match self.layout_stages() {
            Some(n) => pp > 0 && n.is_multiple_of(pp),
            None => self.split_at(pp, self.vpp).is_ok(),
        }
    }

    /// Whether `tp` divides the heads and fits the kv groups.
    pub(super) fn tp_ok(&self, tp: u64) -> bool {
        let kv = self.def.model.kv_groups();
        tp > 0
            && self.heads.is_multiple_of(tp)
            && (kv.is_multiple_of(tp) || tp.is_multiple_of(kv.max(1)))
    }

    /// Whether `cp` splits the sequence into 2 × cp chunks (E0308's rule).
    pub(super) fn cp_ok(&self, cp: u64) -> bool {
        cp == 1 || (cp > 1 && self.seq.is_multiple_of(cp.saturating_mul(2)))
    }

    /// Returns dp when tp × pp × cp × dp = world (dp defaulted when unwritten).
    // megatron/training/arguments.py:432 (W01): world % (tp·pp·cp) == 0, dp = world / (tp·pp·cp)
    // (arguments.py:448); megatron/core/parallel_state.py:823.
    pub(super) fn check_world(&mut self) -> Option<u64> {
        let p = &self.def.plan;
        let (tp, pp, cp, world) = (self.tp, self.pp, self.cp, self.world);
        let model = (tp as u128)
            .saturating_mul(pp as u128)
            .saturating_mul(cp as u128);
        let written_dp = p.dp.as_ref().map(|s| s.value);
        let ok_dp = match written_dp {
            Some(dp) if dp > 0 && model.saturating_mul(dp as u128) == world as u128 => Some(dp),
            Some(_) => None,
            None if model > 0 && world > 0 && (world as u128).is_multiple_of(model) => {
                Some((world as u128 / model) as u64)
            }
            None => None,
        };
        if ok_dp.is_some() {
            return ok_dp;
        }
        let primary = loc_of(&p.dp)
            .or(loc_of(&p.pp))
            .or(loc_of(&p.tp))
            .or(loc_of(&p.cp))
            .unwrap_or(p.loc);
        let mut factors =
            Written::of(&[("tp", &p.tp), ("pp", &p.pp), ("cp", &p.cp), ("dp", &p.dp)]);
        factors.retain(|w| w.loc != primary);
        // The first option of the help, `dp N`, is mechanical: rewrite the `dp` value (its
        // loc is the value's).
        let fix = match &p.dp {
            Some(dp) if model > 0 && (world as u128).is_multiple_of(model) => {
                Some((dp.loc, (world as u128 / model) as u64))
            }
            _ => None,
        };
        let problem = WorldMismatch {
            tp,
            pp,
            cp,
            dp: written_dp,
            world,
            cp_written: p.cp.is_some(),
            model,
            primary,
            factors,
            dims: self.dim_sizes(),
            help: self.world_help(written_dp, p.cp.is_some()),
            fix,
        };
        self.report(PlanProblem::WorldMismatch(problem));
        None
    }

    fn world_help(&self, written_dp: Option<u64>, cp_written: bool) -> WorldHelp {
        let (tp, pp, cp, world) = (self.tp, self.pp, self.cp, self.world);
        let mut options: Vec<WorldOption> = Vec::new();
        let option =
            |key: &'static str, value: u64, tp: u64, pp: u64, cp: u64, dp: u64| WorldOption {
                set: Setting { key, value },
                tp,
                pp,
                cp,
                dp,
            };
        let model = tp.saturating_mul(pp).saturating_mul(cp);
        match written_dp {
            Some(dp) => {
                if model > 0 && world % model == 0 {
                    let dp2 = world / model;
                    options.push(option("dp", dp2, tp, pp, cp, dp2));
                }
                let rest = tp.saturating_mul(cp).saturating_mul(dp);
                if rest > 0 && world % rest == 0 && world / rest != pp && self.pp_ok(world / rest) {
                    let pp2 = world / rest;
                    options.push(option("pp", pp2, tp, pp2, cp, dp));
                }
                let rest = pp.saturating_mul(cp).saturating_mul(dp);
                if rest > 0 && world % rest == 0 && world / rest != tp && self.tp_ok(world / rest) {
                    let tp2 = world / rest;
                    options.push(option("tp", tp2, tp2, pp, cp, dp));
                }
                let rest = tp.saturating_mul(pp).saturating_mul(dp);
                if cp_written
                    && rest > 0
                    && world % rest == 0
                    && world / rest != cp
                    && self.cp_ok(world / rest)
                {
                    let cp2 = world / rest;
                    options.push(option("cp", cp2, tp, pp, cp2, dp));
                }
            }
            None => {
                let rest = tp.saturating_mul(cp);
                if rest > 0 && world % rest == 0 {
                    let pps = divisors(world / rest)
                        .into_iter()
                        .filter(|&x| self.pp_ok(x));
                    for pp2 in nearest(pps, pp, 2) {
                        options.push(option("pp", pp2, tp, pp2, cp, world / (rest * pp2)));
                    }
                }
                let rest = pp.saturating_mul(cp);
                if rest > 0 && world % rest == 0 {
                    let tps = divisors(world / rest)
                        .into_iter()
                        .filter(|&x| self.tp_ok(x));
                    if let Some(&tp2) = nearest(tps, tp, 1).first() {
                        options.push(option("tp", tp2, tp2, pp, cp, world / (rest * tp2)));
                    }
                }
                // A written cp that does not divide the world (`cp 3` on 64 GPUs): the
                // nearest cps that do, before any cluster change.
                let rest = tp.saturating_mul(pp);
                if cp_written && rest > 0 && world % rest == 0 {
                    let cps = divisors(world / rest)
                        .into_iter()
                        .filter(|&x| self.cp_ok(x));
                    for cp2 in nearest(cps, cp, 2) {
                        options.push(option("cp", cp2, tp, pp, cp2, world / (rest * cp2)));
                    }
                }
            }
        }
        if options.is_empty() {
            WorldHelp::NoSingleChange {
                need: model.saturating_mul(written_dp.unwrap_or(1)),
            }
        } else {
            WorldHelp::Use(options)
        }
    }
}
