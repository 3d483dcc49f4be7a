//! The rules on CUDA graphs and activation offloading: E0359 (`cuda_graphs` modules that do
//! not fit the capture or the model), E0360 (CUDA graphs with a plan feature they cannot
//! capture), E0361 (activation offloading Megatron-LM rejects for the plan) and W0024 (an
//! offload key that offloads nothing).
//!
//! Input: the plan's `cuda_graphs`, `offload_*`, `recompute*`, `pp` and MoE capacity items and
//! the model's layers and experts. Output: [`PlanProblem`]s. Invariant: each rule cites the
//! Megatron-LM source it reproduces (NVIDIA/Megatron-LM d98e8a64); the fixes are computed here.

use super::problem::{GraphsProblem, PlanProblem};
use super::{on, to_plan, Validator};
use venus_base::base::{CudaGraphImpl, Recompute};

impl Validator<'_> {
    /// E0359 and E0360.
    pub(super) fn check_cuda_graphs(&mut self) {
        let p = &self.def.plan;
        let Some(graphs) = &p.cuda_graphs else {
            return;
        };
        let (imp, loc) = (graphs.value, graphs.loc);
        let modules = p
            .cuda_graph_modules
            .as_ref()
            .map(|m| m.value)
            .unwrap_or_default();
        let m = to_plan::model(&self.def.model);
        let mut problems = Vec::new();
        if !modules.is_empty() && !imp.per_layer() {
            // transformer_config.py:2794-2796 (arguments.py:1969-1971): modules "must be empty
            // when cuda_graph_impl=full_iteration"; with `none` they capture nothing
            // (transformer_config.py:1087).
            problems.push(GraphsProblem::ModulesWithout {
                imp: imp.word(),
                modules: modules.words(),
                loc,
            });
        }
        if imp.per_layer() {
            // transformer_config.py:2812-2844.
            let dense_mlp = !m.is_moe() || m.first_k_dense() > 0 || m.is_hybrid();
            for w in modules.words() {
                let lacks = match w {
                    "moe" | "moe_router" | "moe_preprocess" if !m.is_moe() => {
                        Some("routed experts")
                    }
                    "mlp" if !dense_mlp => Some("a dense MLP layer"),
                    "mamba" if !m.is_hybrid() => Some("a Mamba layer"),
                    _ => None,
                };
                if let Some(lacks) = lacks {
                    problems.push(GraphsProblem::ModuleUnfit {
                        module: w,
                        lacks,
                        model: self.def.model.name.clone(),
                        loc,
                    });
                }
            }
            if m.is_moe() && modules.has("moe") && modules.has("moe_router") {
                problems.push(GraphsProblem::ModulePair {
                    module: "moe",
                    other: "moe_router",
                    together: false,
                    loc,
                });
            }
            if m.is_moe() && modules.has("moe_preprocess") && !modules.has("moe_router") {
                problems.push(GraphsProblem::ModulePair {
                    module: "moe_preprocess",
                    other: "moe_router",
                    together: true,
                    loc,
                });
            }
            let drop_pad = p.moe_capacity_headroom.is_some() && on(&p.moe_pad_to_capacity);
            if m.is_moe() && modules.has("moe") && !drop_pad {
                problems.push(GraphsProblem::MoeNeedsDropPad { loc });
            }
            // transformer_config.py:2854-2857: "full recompute is only supported with full
            // iteration CUDA graph".
            if let Some(r) = p.recompute.as_ref().filter(|r| r.value == Recompute::Full) {
                problems.push(GraphsProblem::FullRecompute {
                    imp: imp.word(),
                    loc,
                    recompute: r.loc,
                });
            }
            // transformer_config.py:2800-2801: "CUDA graphs not supported with CPU offloading".
            if let Some(n) = p.offload_layers.as_ref().filter(|n| n.value > 0) {
                problems.push(GraphsProblem::CpuOffload {
                    imp: imp.word(),
                    loc,
                    layers: (n.value, n.loc),
                });
            }
        }
        if let Some(off) = p.offload_modules.as_ref().filter(|o| !o.value.is_empty()) {
            if imp != CudaGraphImpl::None {
                // <https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/fine_grained_activation_offloading.md> "CUDA Graph
                // Integration": `cuda_graph_impl` must be `transformer_engine`; `attn_norm` and
                // `mlp_norm` cross graph boundaries and cannot be offloaded.
                if imp != CudaGraphImpl::TransformerEngine {
                    problems.push(GraphsProblem::OffloadNeedsTe {
                        imp: imp.word(),
                        loc,
                        offload: off.loc,
                    });
                }
                let norms: Vec<&'static str> = off
                    .value
                    .words()
                    .into_iter()
                    .filter(|w| *w == "attn_norm" || *w == "mlp_norm")
                    .collect();
                if !norms.is_empty() {
                    let kept: Vec<&'static str> = off
                        .value
                        .words()
                        .into_iter()
                        .filter(|w| !norms.contains(w))
                        .collect();
                    problems.push(GraphsProblem::OffloadNorms {
                        norms,
                        kept,
                        loc: off.loc,
                        graphs: loc,
                    });
                }
            }
        }
        for problem in problems {
            self.report(PlanProblem::Graphs(problem));
        }
    }

    /// E0361 and W0024.
    pub(super) fn check_offload(&mut self) {
        let p = &self.def.plan;
        let m = to_plan::model(&self.def.model);
        let mut problems = Vec::new();
        let modules = p.offload_modules.as_ref().map(|o| (o.value, o.loc));
        if let Some((mods, loc)) = modules {
            // transformer_config.py:2148-2153: attn_proj's input is core_attn's output.
            if mods.has("attn_proj") && !mods.has("core_attn") {
                problems.push(GraphsProblem::AttnProjAlone {
                    written: mods.words(),
                    loc,
                });
            }
            // transformer_config.py:2186-2194.
            let parts: Vec<&'static str> = ["expert_fc1", "moe_act"]
                .into_iter()
                .filter(|w| mods.has(w))
                .collect();
            if mods.has("fused_group_mlp") && !parts.is_empty() {
                problems.push(GraphsProblem::FusedWithParts { parts, loc });
            }
            let experts: Vec<&'static str> = ["expert_fc1", "moe_act", "fused_group_mlp"]
                .into_iter()
                .filter(|w| mods.has(w))
                .collect();
            let recompute = p.recompute.as_ref();
            let moe_recomputed = recompute.is_some_and(|r| r.value == Recompute::Selective)
                && p.recompute_modules.as_ref().is_some_and(|r| r.value.moe);
            if !experts.is_empty() && !m.is_moe() {
                problems.push(GraphsProblem::ExpertsWithoutMoe {
                    modules: experts.clone(),
                    model: self.def.model.name.clone(),
                    loc,
                });
            } else if !experts.is_empty() && moe_recomputed {
                // transformer_config.py:2166-2175.
                problems.push(GraphsProblem::ExpertsRecomputed {
                    modules: experts,
                    loc,
                    recompute: p.recompute_modules.as_ref().map_or(loc, |r| r.loc),
                });
            }
            if let Some(r) = recompute.filter(|r| r.value == Recompute::Full) {
                problems.push(GraphsProblem::OffloadWithFullRecompute {
                    loc,
                    recompute: r.loc,
                });
            }
            // transformer_config.py:2127-2130.
            if let Some(n) = p.offload_layers.as_ref().filter(|n| n.value > 0) {
                problems.push(GraphsProblem::BothOffloads {
                    loc,
                    layers: (n.value, n.loc),
                });
            }
        }
        if let Some(f) = &p.offload_fraction {
            if modules.is_none() {
                problems.push(GraphsProblem::FractionWithout { loc: f.loc });
            } else if f.value.0 <= 0.0 {
                problems.push(GraphsProblem::FractionZero { loc: f.loc });
            }
        }
        if let Some(n) = p.offload_layers.as_ref().filter(|n| n.value > 0) {
            let layers = (n.value, n.loc);
            let pp = p.pp.as_ref().map(|x| (x.value, x.loc));
            // transformer_config.py:1884-1899.
            if n.value >= m.layers {
                problems.push(GraphsProblem::LayersTooMany {
                    layers,
                    model_layers: m.layers,
                });
            }
            if let Some((pp, pp_loc)) = pp.filter(|(v, _)| *v > 1) {
                problems.push(GraphsProblem::LayersWithPp {
                    layers,
                    pp: (pp, pp_loc),
                });
            }
            if let Some(r) = p.recompute.as_ref().filter(|r| r.value != Recompute::None) {
                problems.push(GraphsProblem::LayersWithRecompute {
                    layers,
                    recompute: (r.value.word(), r.loc),
                });
            }
        }
        for problem in problems {
            self.report(PlanProblem::Graphs(problem));
        }
    }
}
