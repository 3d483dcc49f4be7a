//! The rules on how a plan recomputes and keeps its weights: E0339 (a recompute key refining
//! a granularity the plan does not use), E0340 / W0019 (a `recompute_modules` module the model
//! does not have) and E0341 (`fp8_param_gather` without FP8 or a sharded optimizer).
//!
//! Input: the plan's `recompute*` items, `fp8_param_gather`, precision, optimizer and fsdp
//! items, and the model's MoE and MLA keys. Output: [`PlanProblem`]s. Invariant: each rule
//! cites the Megatron-LM source it reproduces (NVIDIA/Megatron-LM d98e8a64); the fixes are
//! computed here.

use super::problem::{
    Fp8ParamGatherNeeds, KeepUnshardedNeedsFsdp, PlanProblem, RecomputeModuleUnfit,
    RecomputeRefinementWithout,
};
use super::{on, to_plan, Validator};
use venus_base::base::{Precision, Recompute};
use venus_diag::diag::Code;

impl Validator<'_> {
    /// E0339: `recompute_modules` refines selective recompute, `recompute_method` and
    /// `recompute_num_layers` full recompute (transformer_config.py:1901-1944: modules are read
    /// only with `selective`, a method and layer count only with `full`, and
    /// "recompute_num_layers must be None" with `selective`).
    pub(super) fn check_recompute_refinements(&mut self) {
        let p = &self.def.plan;
        let granularity = p.recompute.as_ref().map(|r| (r.value, r.loc));
        let mut selective = Vec::new();
        if let Some(m) = &p.recompute_modules {
            selective.push(("recompute_modules".to_string(), m.loc));
        }
        let mut full = Vec::new();
        if let Some(m) = &p.recompute_method {
            full.push((format!("recompute_method {}", m.value.word()), m.loc));
        }
        if let Some(n) = &p.recompute_num_layers {
            full.push((format!("recompute_num_layers {}", n.value), n.loc));
        }
        for (keys, needs) in [(selective, Recompute::Selective), (full, Recompute::Full)] {
            if keys.is_empty() || granularity.is_some_and(|(g, _)| g == needs) {
                continue;
            }
            let problem = RecomputeRefinementWithout {
                plan: self.plan_name(),
                keys,
                needs: needs.word(),
                written: granularity.map(|(g, loc)| (g.word(), loc)),
            };
            self.report(PlanProblem::RecomputeRefinementWithout(problem));
        }
    }

    /// E0340: `mla_up_proj` without multi-head latent attention (transformer_config.py:
    /// 1969-1973 raises). W0019: a module the model has nothing of (`moe`, `moe_act`,
    /// `shared_experts` without routed or shared experts, `mlp` with every layer MoE), which
    /// Megatron accepts and skips.
    pub(super) fn check_recompute_modules(&mut self) {
        let p = &self.def.plan;
        let Some(written) = &p.recompute_modules else {
            return;
        };
        if p.recompute.as_ref().map(|r| r.value) != Some(Recompute::Selective) {
            return; // E0339's
        }
        let (modules, loc) = (written.value, written.loc);
        let m = to_plan::model(&self.def.model);
        let dense_mlp = !m.is_moe() || m.has_dense_layers() || m.is_hybrid();
        let lacks = |word: &str| -> Option<(Code, &'static str)> {
            match word {
                "mla_up_proj" if !m.is_mla() => Some((Code::E0340, "multi-head latent attention")),
                "moe" | "moe_act" if !m.is_moe() => Some((Code::W0019, "routed experts")),
                "shared_experts" if m.shared_expert_ffn() == 0 => {
                    Some((Code::W0019, "shared experts"))
                }
                "mlp" if !dense_mlp => Some((Code::W0019, "dense MLP layer")),
                _ => None,
            }
        };
        let words = modules.words();
        let fitting: Vec<&'static str> = words
            .iter()
            .copied()
            .filter(|w| lacks(w).is_none())
            .collect();
        for code in [Code::E0340, Code::W0019] {
            let unfit: Vec<(&'static str, &'static str)> = words
                .iter()
                .filter_map(|&w| lacks(w).filter(|(c, _)| *c == code).map(|(_, l)| (w, l)))
                .collect();
            if unfit.is_empty() {
                continue;
            }
            let problem = RecomputeModuleUnfit {
                code,
                modules: unfit,
                model: self.def.model.name.clone(),
                loc,
                fitting: fitting.clone(),
            };
            self.report(PlanProblem::RecomputeModuleUnfit(problem));
        }
    }

    /// E0341: `fp8_param_gather` keeps FP8 weights (transformer_config.py:1566-1567:
    /// "fp8_param must be used together with fp8 mode") that the distributed optimizer or FSDP
    /// updates and gathers (megatron/training/arguments.py:1095-1097).
    pub(super) fn check_fp8_param_gather(&mut self) {
        let p = &self.def.plan;
        let Some(item) = p.fp8_param_gather.as_ref().filter(|f| f.value) else {
            return;
        };
        let precision = p.precision();
        let precision = (precision != Precision::Fp8)
            .then(|| (precision.word(), p.precision.as_ref().map(|x| x.loc)));
        let unsharded = !on(&p.distributed_optimizer) && p.fsdp.is_none();
        if precision.is_none() && !unsharded {
            return;
        }
        let problem = Fp8ParamGatherNeeds {
            plan: self.plan_name(),
            loc: item.loc,
            precision,
            unsharded,
        };
        self.report(PlanProblem::Fp8ParamGatherNeeds(problem));
    }

    /// E0369: `fsdp_keep_unsharded` keeps FSDP's gathered units for the step, so the plan's
    /// `fsdp` must gather them: only `optim_grads_params` shards the parameters (Megatron-FSDP's
    /// ZeRO-3; the other strategies keep every parameter whole already).
    pub(super) fn check_fsdp_keep_unsharded(&mut self) {
        let p = &self.def.plan;
        let Some(item) = p.fsdp_keep_unsharded.as_ref().filter(|f| f.value) else {
            return;
        };
        let strategy = p.fsdp.as_ref().map(|f| (f.value, f.loc));
        if strategy.is_some_and(|(s, _)| s.shards_parameters()) {
            return;
        }
        let problem = KeepUnshardedNeedsFsdp {
            plan: self.plan_name(),
            loc: item.loc,
            strategy: strategy.map(|(s, loc)| (s.word(), loc)),
        };
        self.report(PlanProblem::KeepUnshardedNeedsFsdp(problem));
    }
}
