//! A hybrid (Mamba-2 / attention) model's rules: E0331 (the pattern's length against
//! `layers`), E0332 (a symbol Megatron-LM does not know), E0333 (keys that disagree with the
//! pattern), E0334 (Mamba-2 heads and groups that do not split).
//!
//! Input: the [`Validator`]'s typed model and plan. Output: [`PlanProblem`]s.
//! Invariants: only written keys are checked; every proposed value passes the rule it fixes;
//! searches are over divisors, bounded whatever the numbers.
//!
//! Source: megatron/core/models/hybrid/hybrid_layer_allocation.py (`Symbols`, the pattern's
//! length must equal `--num-layers`) and megatron/core/ssm/mamba_mixer.py (`MambaMixer`
//! asserts `nheads % tp == 0`, `ngroups % tp == 0`, `nheads % ngroups == 0`), NVIDIA/Megatron-LM
//! d98e8a64.

use super::problem::{HybridProblem, ModelKey, PlanProblem, Setting};
use super::{divisors, loc_of, nearest, Validator};
use crate::ty::{Opt, Spanned};
use venus_base::base::math::gcd;
use venus_diag::diag::{Loc, Span};
use venus_plan::plan::HybridLayer;

fn written(key: &'static str, o: &Opt<u64>) -> Option<ModelKey> {
    o.as_ref().map(|s| ModelKey {
        key,
        value: s.value,
        loc: s.loc,
    })
}

/// The location of character `offset` (bytes) of a string literal, or the whole literal when
/// escapes moved the offsets.
fn char_loc(lit: &Spanned<crate::ty::LayoutText>, offset: usize, len: usize) -> Loc {
    if !lit.value.raw {
        return lit.loc;
    }
    let start = lit.loc.span.start as usize + 1 + offset;
    Loc::new(lit.loc.file, Span::new(start, start + len.max(1)))
}

impl Validator<'_> {
    pub(super) fn check_hybrid(&mut self) {
        let m = &self.def.model;
        let Some(lit) = &m.hybrid_override_pattern else {
            self.check_mamba_keys_without_pattern();
            return;
        };
        let text = &lit.value.text;
        if let Some((offset, c)) = text
            .char_indices()
            .find(|&(_, c)| HybridLayer::from_symbol(c).is_none())
        {
            self.report(PlanProblem::Hybrid(HybridProblem::Symbol {
                symbol: c,
                at: char_loc(lit, offset, c.len_utf8()),
                cleaned: text
                    .chars()
                    .filter(|&c| HybridLayer::from_symbol(c).is_some())
                    .collect(),
                layers: self.layers,
            }));
            return;
        }
        let len = text.chars().count() as u64;
        if len != self.layers {
            self.report(PlanProblem::Hybrid(HybridProblem::Length {
                pattern: lit.loc,
                len,
                layers: self.layers,
                layers_loc: m.layers.loc,
            }));
        }
        self.check_hybrid_moe(lit);
        self.check_hybrid_exclusions();
        self.check_mamba_split();
    }

    /// E0333: mamba dims written on a model without a pattern.
    fn check_mamba_keys_without_pattern(&mut self) {
        let m = &self.def.model;
        let keys: Vec<ModelKey> = [
            written("mamba_num_heads", &m.mamba_num_heads),
            written("mamba_head_dim", &m.mamba_head_dim),
            written("ssm_state_size", &m.ssm_state_size),
            written("n_groups", &m.n_groups),
            written("conv_kernel", &m.conv_kernel),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !keys.is_empty() {
            self.report(PlanProblem::Hybrid(HybridProblem::MambaWithoutPattern {
                model: m.name.clone(),
                keys,
                layers: self.layers,
            }));
        }
    }

    /// E0333: `E` layers and `experts` go together.
    fn check_hybrid_moe(&mut self, lit: &Spanned<crate::ty::LayoutText>) {
        let m = &self.def.model;
        let text = &lit.value.text;
        let moe_layers = text.chars().filter(|&c| c == 'E').count() as u64;
        match (written("experts", &m.experts), moe_layers) {
            (None, n) if n > 0 => {
                let offset = text.find('E').unwrap_or(0);
                self.report(PlanProblem::Hybrid(HybridProblem::MoeWithoutExperts {
                    model: m.name.clone(),
                    at: char_loc(lit, offset, 1),
                    moe_layers: n,
                }));
            }
            (Some(experts), 0) => {
                self.report(PlanProblem::Hybrid(HybridProblem::ExpertsWithoutMoe {
                    experts,
                    pattern: lit.loc,
                }));
            }
            _ => {}
        }
    }

    /// E0333: what a hybrid model's pattern replaces (`first_k_dense`) and what venusc does not
    /// model on one (`mtp_layers`, `sliding_window`, Megatron's `/` patterns; `task lora`).
    fn check_hybrid_exclusions(&mut self) {
        let m = &self.def.model;
        let keys: Vec<ModelKey> = [
            written("first_k_dense", &m.first_k_dense),
            written("mtp_layers", &m.mtp_layers).filter(|k| k.value > 0),
            written("sliding_window", &m.sliding_window),
        ]
        .into_iter()
        .flatten()
        .collect();
        let lora = self
            .def
            .plan
            .task
            .as_ref()
            .filter(|t| t.value == venus_base::base::Task::Lora)
            .map(|t| t.loc);
        if let Some(at) = keys.first().map(|k| k.loc).or(lora) {
            self.report(PlanProblem::Hybrid(HybridProblem::NotForHybrid {
                model: m.name.clone(),
                keys,
                lora,
                at,
            }));
        }
    }

    /// E0334: Mamba-2 heads split into groups, and both over tp.
    fn check_mamba_split(&mut self) {
        let m = &self.def.model;
        let heads = m
            .mamba_num_heads
            .as_ref()
            .map(|s| s.value)
            .unwrap_or_else(|| {
                m.hidden.value.saturating_mul(2)
                    / m.mamba_head_dim.as_ref().map_or(64, |s| s.value).max(1)
            });
        let groups = m.n_groups.as_ref().map_or(8, |s| s.value).max(1);
        if heads == 0 || !heads.is_multiple_of(groups) {
            let options = Setting::list("n_groups", nearest(divisors(heads.max(1)), groups, 2));
            self.report(PlanProblem::Hybrid(HybridProblem::HeadsOverGroups {
                heads,
                heads_loc: loc_of(&m.mamba_num_heads).unwrap_or(m.loc),
                groups,
                groups_loc: loc_of(&m.n_groups),
                options,
            }));
            return;
        }
        let tp = self.tp.max(1);
        let common = gcd(heads, groups);
        if !common.is_multiple_of(tp) {
            let options = Setting::list("tp", nearest(divisors(common), tp, 2));
            self.report(PlanProblem::Hybrid(HybridProblem::OverTp {
                heads,
                groups,
                tp,
                tp_loc: loc_of(&self.def.plan.tp).unwrap_or(self.def.plan.loc),
                model_loc: loc_of(&m.mamba_num_heads).unwrap_or(m.loc),
                options,
            }));
        }
    }
}
