//! The model's own shape rules: E0315 (the mixture-of-experts keys), E0316 (heads over
//! kv_groups), E0317 (hidden over heads without `head_dim`), E0318 (multi-head latent
//! attention keys).
//!
//! Input: the [`Validator`]'s typed model. Output: [`PlanProblem`]s.
//! Invariants: only written keys are checked (a default never fails its own rule); every
//! proposed value passes the rule it fixes; searches are over divisors, bounded whatever the
//! numbers.

use super::problem::{HeadsOverGroups, HiddenOverHeads, MlaShape, ModelKey, MoeShape};
use super::problem::{PlanProblem, Setting};
use super::{divisors, nearest, Validator};
use crate::ty::Opt;

fn written(key: &'static str, o: &Opt<u64>) -> Option<ModelKey> {
    o.as_ref().map(|s| ModelKey {
        key,
        value: s.value,
        loc: s.loc,
    })
}

impl Validator<'_> {
    // megatron/core/transformer/transformer_config.py (`moe_router_topk` ≤ `num_moe_experts`,
    // MoE options need `num_moe_experts`) and arguments.py `--moe-layer-freq`.
    pub(super) fn check_moe_shape(&mut self) {
        let m = &self.def.model;
        let Some(experts) = written("experts", &m.experts) else {
            let keys: Vec<ModelKey> = [
                written("topk", &m.topk),
                written("moe_ffn", &m.moe_ffn),
                written("shared_expert_ffn", &m.shared_expert_ffn),
                written("shared_experts", &m.shared_experts),
                written("first_k_dense", &m.first_k_dense),
                written("moe_latent_size", &m.moe_latent_size),
                written("routed_groups", &m.routed_groups),
                written("topk_groups", &m.topk_groups),
                written("moe_layer_freq", &m.moe_layer_freq),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !keys.is_empty() {
                let model = m.name.clone();
                self.report(PlanProblem::MoeShape(MoeShape::WithoutExperts {
                    model,
                    keys,
                }));
            }
            return;
        };
        if let Some(topk) = written("topk", &m.topk) {
            if topk.value > experts.value {
                self.report(PlanProblem::MoeShape(MoeShape::TopkOverExperts {
                    topk,
                    experts: experts.clone(),
                }));
            }
        }
        let m = &self.def.model;
        let mut no_moe_layer = false;
        if let Some(k) = written("first_k_dense", &m.first_k_dense) {
            if k.value >= self.layers {
                no_moe_layer = true;
                self.report(PlanProblem::MoeShape(MoeShape::NoMoeLayer {
                    first_k_dense: k,
                    layers: self.layers,
                    layers_loc: m.layers.loc,
                }));
            }
        }
        // gpt_layer_specs.py:643-660 (d98e8a64): a `moe_layer_freq` pattern of no expert layer
        // builds no MoE layer; layers N, 2N, … (from 1) past `first_k_dense` have experts.
        let m = &self.def.model;
        if let Some(f) = written("moe_layer_freq", &m.moe_layer_freq) {
            let first_k = m.first_k_dense.as_ref().map_or(0, |k| k.value);
            let spec = super::to_plan::model(m);
            if !no_moe_layer
                && m.hybrid_override_pattern.is_none()
                && spec.moe_layers_in(0, self.layers) == 0
            {
                self.report(PlanProblem::MoeShape(MoeShape::NoMoeLayerAtFreq {
                    freq: f,
                    first_k_dense: first_k,
                    layers: self.layers,
                    layers_loc: m.layers.loc,
                }));
            }
        }
        self.check_routed_groups(experts);
    }

    // megatron/core/transformer/transformer_config.py:2671-2690 (d98e8a64): group-limited
    // routing needs `moe_router_num_groups`; `num_moe_experts % moe_router_num_groups == 0`;
    // `moe_router_group_topk <= moe_router_num_groups`.
    fn check_routed_groups(&mut self, experts: ModelKey) {
        let m = &self.def.model;
        let groups = written("routed_groups", &m.routed_groups);
        let topk_groups = written("topk_groups", &m.topk_groups);
        if let Some(g) = &groups {
            if !experts.value.is_multiple_of(g.value.max(1)) {
                let options = Setting::list(
                    "routed_groups",
                    nearest(divisors(experts.value), g.value, 2),
                );
                self.report(PlanProblem::MoeShape(MoeShape::GroupsOverExperts {
                    routed_groups: g.clone(),
                    experts: experts.clone(),
                    options,
                }));
            }
        }
        if let Some(t) = topk_groups {
            match groups {
                Some(g) if t.value > g.value => {
                    self.report(PlanProblem::MoeShape(MoeShape::TopkGroups {
                        topk_groups: t,
                        routed_groups: Some(g),
                        experts: experts.value,
                    }));
                }
                Some(_) => {}
                None => self.report(PlanProblem::MoeShape(MoeShape::TopkGroups {
                    topk_groups: t,
                    routed_groups: None,
                    experts: experts.value,
                })),
            }
        }
    }

    // megatron/training/arguments.py: `num_attention_heads % num_query_groups == 0`.
    pub(super) fn check_heads_over_groups(&mut self) {
        let m = &self.def.model;
        let Some(kv) = &m.kv_groups else { return };
        let (heads, g) = (self.heads, kv.value.max(1));
        if heads.is_multiple_of(g) {
            return;
        }
        let options = Setting::list("kv_groups", nearest(divisors(heads), g, 2));
        self.report(PlanProblem::HeadsOverGroups(HeadsOverGroups {
            heads,
            heads_loc: m.heads.loc,
            groups: g,
            groups_loc: kv.loc,
            options,
        }));
    }

    // megatron/training/arguments.py: without `--kv-channels`, `hidden_size %
    // num_attention_heads == 0` (kv_channels = hidden_size // num_attention_heads).
    pub(super) fn check_hidden_over_heads(&mut self) {
        let m = &self.def.model;
        if m.head_dim.is_some() || m.kv_lora_rank.is_some() {
            return;
        }
        let (h, n) = (m.hidden.value, self.heads.max(1));
        if h.is_multiple_of(n) {
            return;
        }
        let options = Setting::list("heads", nearest(divisors(h), n, 2));
        self.report(PlanProblem::HiddenOverHeads(HiddenOverHeads {
            model: m.name.clone(),
            hidden: h,
            hidden_loc: m.hidden.loc,
            heads: n,
            heads_loc: m.heads.loc,
            options,
        }));
    }

    // megatron/core/transformer/multi_latent_attention.py: MLA builds per-head keys and values
    // from the latent (training.py's FLOPs count asserts `not args.group_query_attention`).
    pub(super) fn check_mla_shape(&mut self) {
        let m = &self.def.model;
        let Some(rank) = written("kv_lora_rank", &m.kv_lora_rank) else {
            let keys: Vec<ModelKey> = [
                written("q_lora_rank", &m.q_lora_rank),
                written("qk_nope_head_dim", &m.qk_nope_head_dim),
                written("qk_rope_head_dim", &m.qk_rope_head_dim),
                written("v_head_dim", &m.v_head_dim),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !keys.is_empty() {
                let model = m.name.clone();
                self.report(PlanProblem::MlaShape(MlaShape::WithoutRank { model, keys }));
            }
            return;
        };
        if let Some(groups) = written("kv_groups", &m.kv_groups) {
            if groups.value != self.heads {
                let heads = self.heads;
                self.report(PlanProblem::MlaShape(MlaShape::WithGroups {
                    groups,
                    heads,
                    rank,
                }));
            }
        }
    }
}
