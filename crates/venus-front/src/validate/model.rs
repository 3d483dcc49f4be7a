//! The rules that split the model over the plan: E0302 (layers over pipeline stages), E0303
//! (heads over tp), E0304 (kv groups over tp), E0308 (the sequence over cp and, with sp, tp).
//!
//! Input: the [`Validator`]'s model and plan sizes. Output: [`PlanProblem`]s, and the layer
//! split when it is valid.
//! Invariants: every proposed value passes the same rule (and fits the GPU count); searches
//! are bounded (divisors, or at most 4096 steps) whatever the numbers.

use super::problem::{EndOption, EvenOption, HeadsSplit, KvGroupsSplit, LayerSplit, PlanProblem};
use super::problem::{SeqOverCp, SeqOverTp, Setting, SplitHelp, Written};
use super::{divisors, loc_of, nearest, neighbour_multiples, on, split_layers, Validator};
use super::{SplitError, StageSplit};

impl Validator<'_> {
    // ---------------------------------------------------------------- E0302

    pub(super) fn check_layers(&mut self) -> Option<StageSplit> {
        let p = &self.def.plan;
        let first = p.first_stage_layers.as_ref().map(|s| s.value);
        let last = p.last_stage_layers.as_ref().map(|s| s.value);
        let err = match split_layers(self.layers, self.pp, self.vpp, first, last) {
            Ok(s) => return Some(s),
            Err(e) => e,
        };
        let first_loc = loc_of(&p.first_stage_layers);
        let last_loc = loc_of(&p.last_stage_layers);
        let ends = first_loc.or(last_loc).unwrap_or(p.loc);
        let primary = match err {
            SplitError::Even { .. } => loc_of(&p.pp).or(loc_of(&p.vpp)).unwrap_or(p.loc),
            SplitError::EndsNeedTwoStages | SplitError::EndsExceed { .. } => {
                last_loc.unwrap_or(ends)
            }
            SplitError::EndNotDivisible { first: true, .. } => first_loc.unwrap_or(ends),
            SplitError::EndNotDivisible { first: false, .. } => last_loc.unwrap_or(ends),
            SplitError::MiddleMismatch { .. }
            | SplitError::MiddleNotDivisible { .. }
            | SplitError::MiddleChunks { .. } => ends,
        };
        let mut written = Written::of(&[
            ("pp", &p.pp),
            ("vpp", &p.vpp),
            ("first_stage_layers", &p.first_stage_layers),
            ("last_stage_layers", &p.last_stage_layers),
        ]);
        written.retain(|w| w.loc != primary);
        let help = match err {
            SplitError::Even { .. } => SplitHelp::Even(self.even_split_options()),
            _ if self.pp == 1 => SplitHelp::OneStage,
            _ => SplitHelp::Ends(self.end_options(first, last)),
        };
        self.report(PlanProblem::LayerSplit(LayerSplit {
            error: err,
            layers: self.layers,
            pp: self.pp,
            vpp: self.vpp,
            primary,
            layers_loc: self.def.model.layers.loc,
            written,
            help,
        }));
        None
    }

    fn even_split_options(&self) -> Vec<EvenOption> {
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        let mut options: Vec<EvenOption> = self.uneven_split().into_iter().collect();
        let rest = self.tp.saturating_mul(self.cp);
        let world_fits =
            |x: u64| rest > 0 && self.world.is_multiple_of(rest.saturating_mul(x).max(1));
        let pps = divisors(l / vpp)
            .into_iter()
            .filter(|&x| l % (x.saturating_mul(vpp)) == 0 && world_fits(x));
        for pp2 in nearest(pps, pp, 2) {
            options.push(EvenOption::Pp {
                pp: pp2,
                per_stage: l / pp2,
            });
        }
        if pp > 0 && l % pp == 0 {
            let vpps = divisors(l / pp)
                .into_iter()
                .filter(|&v| (v == 1 || pp > 1) && v <= vpp.max(2).saturating_mul(2));
            if let Some(&v2) = nearest(vpps, vpp, 1).first() {
                options.push(if v2 == 1 {
                    EvenOption::NoVpp
                } else {
                    EvenOption::Vpp(v2)
                });
            }
        }
        options
    }

    /// The split that keeps the written pp by giving the first and last stages fewer layers
    /// (Megatron-LM's `--decoder-first-pipeline-num-layers` / `--decoder-last-pipeline-num-layers`,
    /// megatron/core/transformer/transformer_block.py `get_num_layers_to_build`): every middle
    /// stage gets ⌈layers / pp⌉ layers (or the nearest count below that works) and the ends
    /// share the rest, the first no more than the last. The ends also hold the embedding and
    /// the loss, so lighter ends balance the stages. `None` with pp < 3 or when no such split
    /// exists.
    fn uneven_split(&self) -> Option<EvenOption> {
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        if pp < 3 {
            return None;
        }
        let middle = pp - 2;
        let most = l.div_ceil(pp);
        (1..=most).rev().find_map(|per_stage| {
            let ends = l.checked_sub(middle.checked_mul(per_stage)?)?;
            let first = ends / 2;
            let last = ends - first;
            let fits = first >= 1 && last <= per_stage;
            split_layers(l, pp, vpp, Some(first), Some(last)).ok()?;
            fits.then_some(EvenOption::Ends {
                first,
                last,
                per_stage,
                middle,
            })
        })
    }

    /// The nearest value of each written end key that makes the split valid.
    fn end_options(&self, first: Option<u64>, last: Option<u64>) -> Vec<EndOption> {
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        let mut options = Vec::new();
        let search = |cur: u64,
                      make: &dyn Fn(u64) -> Result<StageSplit, SplitError>|
         -> Option<(u64, StageSplit)> {
            let limit = l.min(4096);
            (1..=limit).find_map(|dist| {
                [cur.checked_sub(dist), cur.checked_add(dist)]
                    .into_iter()
                    .flatten()
                    .filter(|&c| c >= 1 && c <= l)
                    .find_map(|c| make(c).ok().map(|s| (c, s)))
            })
        };
        if let Some(f) = first {
            if let Some((c, s)) = search(f, &|c| split_layers(l, pp, vpp, Some(c), last)) {
                options.push(EndOption {
                    first: true,
                    value: c,
                    split: s,
                });
            }
        }
        if let Some(la) = last {
            if let Some((c, s)) = search(la, &|c| split_layers(l, pp, vpp, first, Some(c))) {
                options.push(EndOption {
                    first: false,
                    value: c,
                    split: s,
                });
            }
        }
        options
    }

    // ---------------------------------------------------------------- E0303, E0304

    /// The tp values nearest the written one that pass `pred` and fit the GPU count.
    fn tp_options(&self, pred: impl Fn(u64) -> bool) -> Vec<Setting> {
        let rest = self.pp.saturating_mul(self.cp);
        let fits = |t: u64| rest > 0 && self.world.is_multiple_of(rest.saturating_mul(t).max(1));
        let cands = divisors(self.world)
            .into_iter()
            .filter(|&t| pred(t) && fits(t));
        Setting::list("tp", nearest(cands, self.tp, 2))
    }

    // megatron/core/transformer/transformer_config.py:1448 (H01)
    pub(super) fn check_heads(&mut self) {
        let p = &self.def.plan;
        let (heads, tp) = (self.heads, self.tp);
        if heads % tp == 0 {
            return;
        }
        let problem = HeadsSplit {
            heads,
            tp,
            world: self.world,
            primary: loc_of(&p.tp).unwrap_or(p.loc),
            heads_loc: self.def.model.heads.loc,
            options: self.tp_options(|t| self.tp_ok(t)),
        };
        self.rejected.push("tp");
        self.report(PlanProblem::HeadsSplit(problem));
    }

    // megatron/core/transformer/transformer_config.py:1466 (H02). Only when `kv_groups` is
    // written and differs from heads: it defaults to heads, and when it equals heads a tp
    // that fails it fails E0303 first (the same problem, reported once).
    pub(super) fn check_kv_groups(&mut self) {
        let m = &self.def.model;
        let Some(kv) = &m.kv_groups else { return };
        let (g, tp) = (kv.value.max(1), self.tp);
        if g % tp == 0 || tp % g == 0 || (g == self.heads && !self.heads.is_multiple_of(tp)) {
            return;
        }
        let p = &self.def.plan;
        let problem = KvGroupsSplit {
            groups: g,
            tp,
            primary: loc_of(&p.tp).unwrap_or(p.loc),
            groups_loc: kv.loc,
            options: self.tp_options(|t| self.tp_ok(t)),
        };
        self.rejected.push("tp");
        self.report(PlanProblem::KvGroupsSplit(problem));
    }

    // ---------------------------------------------------------------- E0308

    pub(super) fn check_seq(&mut self) {
        let p = &self.def.plan;
        let (seq, cp, tp) = (self.seq, self.cp, self.tp);
        let seq_loc = self.def.model.seq.loc;
        // megatron/training/arguments.py:1335-1339 (C01)
        if cp > 1 && seq % cp.saturating_mul(2) != 0 {
            let cps = nearest(
                divisors(seq / 2)
                    .into_iter()
                    .filter(|&c| c > 1 && seq % (2 * c) == 0 && self.world.is_multiple_of(c)),
                cp,
                2,
            );
            let mut options = Setting::list("cp", cps);
            options.extend(Setting::list(
                "seq",
                neighbour_multiples(seq, cp.saturating_mul(2))
                    .into_iter()
                    .take(2),
            ));
            self.report(PlanProblem::SeqOverCp(SeqOverCp {
                seq,
                cp,
                primary: loc_of(&p.cp).unwrap_or(p.loc),
                seq_loc,
                options,
            }));
        }
        // Sequence parallelism scatters each cp rank's seq / cp tokens over tp:
        // megatron/core/tensor_parallel/mappings.py `_split_along_first_dim` requires the
        // first dimension to be divisible by the tp size.
        let p = &self.def.plan;
        if on(&p.sp) && tp > 1 && seq % cp.saturating_mul(tp) != 0 {
            let step = cp.saturating_mul(tp);
            let step = if cp > 1 {
                venus_base::base::math::lcm(step, cp.saturating_mul(2))
            } else {
                step
            };
            let problem = SeqOverTp {
                seq,
                cp,
                tp,
                sp_loc: loc_of(&p.sp).unwrap_or(p.loc),
                seq_loc,
                tp_loc: loc_of(&p.tp),
                cp_loc: loc_of(&p.cp),
                seqs: neighbour_multiples(seq, step),
            };
            self.report(PlanProblem::SeqOverTp(problem));
        }
    }
}
