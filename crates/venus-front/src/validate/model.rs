//! The rules that split the model over the plan: E0302 (layers over pipeline stages), E0303
//! (heads over tp), E0304 (kv groups over tp), E0308 (the sequence over cp and, with sp, tp).
//!
//! Input: the [`Validator`]'s model and plan sizes. Output: [`PlanProblem`]s, and the layer
//! split when it is valid.
//! Invariants: every proposed value passes the same rule (and fits the GPU count); searches
//! are bounded (divisors, or at most 4096 steps) whatever the numbers.

use super::problem::{EndOption, EvenOption, HeadsSplit, KvGroupsSplit, LayerSplit, PlanProblem};
use super::problem::{
    LayoutIssue, LayoutProblem, SeqOverCp, SeqOverTp, Setting, SplitHelp, Written,
};
use super::{divisors, loc_of, nearest, neighbour_multiples, on, split_layers, Validator};
use super::{split_accounting, SplitError, StageSplit};
use crate::ty::{LayoutText, Spanned};
use venus_diag::diag::Loc;
use venus_plan::plan::pipeline_layout;

impl Validator<'_> {
    // ---------------------------------------------------------------- E0302

    pub(super) fn check_layers(&mut self) -> Option<StageSplit> {
        if self.zbv().is_some() && self.pp > 1 {
            return self.check_zbv_split(); // E0353
        }
        let p = &self.def.plan;
        if let Some(layout) = &p.pipeline_layout {
            return self.check_layout(layout);
        }
        let first = p.first_stage_layers.as_ref().map(|s| s.value);
        let last = p.last_stage_layers.as_ref().map(|s| s.value);
        let err = match self.split_at(self.pp, self.vpp) {
            Ok(s) => return Some(s),
            Err(e) => e,
        };
        let first_loc = loc_of(&p.first_stage_layers);
        let last_loc = loc_of(&p.last_stage_layers);
        let ends = first_loc.or(last_loc).unwrap_or(p.loc);
        let account_loc = loc_of(&p.account_for_embedding)
            .or(loc_of(&p.account_for_loss))
            .unwrap_or(p.loc);
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
            SplitError::Accounted { .. } | SplitError::EndsWithAccounting => account_loc,
        };
        let mut written = Written::of(&[
            ("pp", &p.pp),
            ("vpp", &p.vpp),
            ("first_stage_layers", &p.first_stage_layers),
            ("last_stage_layers", &p.last_stage_layers),
        ]);
        written.retain(|w| w.loc != primary);
        let help = match err {
            SplitError::Even { .. } | SplitError::Accounted { .. } => {
                SplitHelp::Even(self.even_split_options())
            }
            SplitError::EndsWithAccounting => SplitHelp::Conflict {
                ends_alone: split_layers(self.layers, self.pp, self.vpp, first, last).is_ok(),
            },
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

    /// E0322-E0324: the written `pipeline_layout`, parsed, checked against the model and
    /// plan, and laid out per `(stage, chunk)`.
    // megatron/core/transformer/transformer_config.py:2241-2295@d98e8a64 (L11, L12) and
    // pipeline_parallel_layer_layout.py (`parse_str_to_list`, `validate_layer_layout`).
    fn check_layout(&mut self, layout: &Spanned<LayoutText>) -> Option<StageSplit> {
        let p = &self.def.plan;
        let conflicts: Vec<(&'static str, Loc)> = [
            ("first_stage_layers", loc_of(&p.first_stage_layers)),
            ("last_stage_layers", loc_of(&p.last_stage_layers)),
            ("account_for_embedding", loc_of(&p.account_for_embedding)),
            ("account_for_loss", loc_of(&p.account_for_loss)),
        ]
        .into_iter()
        .filter_map(|(k, l)| l.map(|l| (k, l)))
        .collect();
        let mtp = self.def.model.mtp_layers.as_ref().map_or(0, |s| s.value);
        let issue = if !conflicts.is_empty() {
            LayoutIssue::Conflict(conflicts)
        } else {
            match pipeline_layout::parse(&layout.value.text) {
                Err(e) => LayoutIssue::Syntax(e),
                Ok(parsed) => {
                    let vpp = p.vpp.as_ref().map(|s| s.value);
                    match pipeline_layout::table(&parsed, self.layers, mtp, self.pp, vpp) {
                        Ok((vpp, table)) => return StageSplit::from_layout(self.pp, vpp, table),
                        Err(pipeline_layout::LayoutError::Count(e)) => LayoutIssue::Count(e),
                        Err(pipeline_layout::LayoutError::Place(e)) => LayoutIssue::Place(e),
                    }
                }
            }
        };
        self.report(PlanProblem::Layout(LayoutProblem {
            issue,
            text: layout.value.text.clone(),
            loc: layout.loc,
            raw: layout.value.raw,
            layers: self.layers,
            layers_loc: self.def.model.layers.loc,
            pp: self.pp,
            pp_loc: loc_of(&p.pp),
            vpp: p.vpp.as_ref().map(|s| (s.value, s.loc)),
            mtp,
            stages: self.layout_stages(),
        }));
        None
    }

    /// The embedding and loss accounting the plan writes.
    fn accounting(&self) -> (bool, bool) {
        let p = &self.def.plan;
        (on(&p.account_for_embedding), on(&p.account_for_loss))
    }

    /// The plan's layer split rule at `pp` stages of `vpp` chunks: uneven ends, the
    /// accounting of the embedding and loss, or the even split (a layout is not a rule of pp).
    // transformer_config.py:2229-2239@d98e8a64 (L10: ends and accounting exclude each other)
    pub(super) fn split_at(&self, pp: u64, vpp: u64) -> Result<StageSplit, SplitError> {
        let p = &self.def.plan;
        let first = p.first_stage_layers.as_ref().map(|s| s.value);
        let last = p.last_stage_layers.as_ref().map(|s| s.value);
        let (embedding, loss) = self.accounting();
        if (embedding || loss) && (first.is_some() || last.is_some()) {
            return Err(SplitError::EndsWithAccounting);
        }
        if embedding || loss {
            return split_accounting(self.layers, pp, vpp, embedding, loss);
        }
        split_layers(self.layers, pp, vpp, first, last)
    }

    fn even_split_options(&self) -> Vec<EvenOption> {
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        let mut options: Vec<EvenOption> = self.accounting_option().into_iter().collect();
        if self.accounting() == (false, false) {
            options.extend(self.uneven_split());
        }
        let rest = self.tp.saturating_mul(self.cp);
        let world_fits =
            |x: u64| rest > 0 && self.world.is_multiple_of(rest.saturating_mul(x).max(1));
        let pps = divisors(l / vpp)
            .into_iter()
            .filter(|&x| l % (x.saturating_mul(vpp)) == 0 && world_fits(x));
        // Other pp values for the plain split (with the accounting written, its option above).
        let pps = pps.filter(|_| self.accounting() == (false, false));
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
        // A layout always fits: offered when no key above keeps the written pp and vpp.
        let keeps =
            |o: &EvenOption| matches!(o, EvenOption::Account { .. } | EvenOption::Ends { .. });
        if !options.iter().any(keeps) {
            options.extend(self.layout_option());
        }
        options
    }

    /// The accounting of the embedding and the loss (other than the written one) that splits
    /// the layers over the written pp and vpp: both, the embedding or the loss only, or none.
    fn accounting_option(&self) -> Option<EvenOption> {
        let written = self.accounting();
        [(true, true), (true, false), (false, true), (false, false)]
            .into_iter()
            .filter(|&a| a != written)
            .find_map(|(embedding, loss)| {
                if embedding || loss {
                    split_accounting(self.layers, self.pp, self.vpp, embedding, loss).ok()?;
                } else {
                    split_layers(self.layers, self.pp, self.vpp, None, None).ok()?;
                }
                let chunks = self.pp.saturating_mul(self.vpp).max(1);
                let slots = self.layers + u64::from(embedding) + u64::from(loss);
                Some(EvenOption::Account {
                    embedding,
                    loss,
                    per_chunk: slots / chunks,
                    chunks,
                })
            })
    }

    /// A `pipeline_layout` over the written pp and vpp ([`pipeline_layout::balanced`]), when
    /// the stages are few enough to write one.
    fn layout_option(&self) -> Option<EvenOption> {
        let stages = self.pp.checked_mul(self.vpp)?;
        if !(2..=4096).contains(&stages) {
            return None;
        }
        pipeline_layout::balanced(self.layers, stages)?;
        Some(EvenOption::Layout {
            layers: self.layers,
            stages,
            mtp: self.def.model.mtp_layers.as_ref().map_or(0, |s| s.value),
        })
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
