//! The rules on a plan's FP8 / FP4 recipe: E0356 (MXFP8 or NVFP4 before Blackwell), E0357
//! (FP8 block scaling before Hopper), E0358 (FP8 attention before Hopper) and W0023 (an FP8
//! key the plan's precision never reads).
//!
//! Input: the plan's `precision`, `fp8_recipe`, `fp8_format`, `fp8_attention`, the GPU's
//! `arch`, and the stdlib's GPUs (the alternatives the helps name). Output: [`PlanProblem`]s.
//! Invariant: each rule is the check Megatron-LM's Transformer Engine recipes make on the
//! device's compute capability; E0312 (no tensor cores for the precision) comes first and
//! these rules stay silent on a GPU it already rejected.

use super::problem::{Fp8Unused, PlanProblem, RecipeArch, RecipeNeed};
use super::Validator;
use crate::ty::Precision;
use venus_base::base::Fp8Recipe;

impl Validator<'_> {
    /// E0356-E0358 and W0023.
    ///
    /// - `fp8_recipe mxfp8`: "'mxfp8' for Blackwell architecture only"
    ///   (megatron/core/transformer/transformer_config.py:598 at d98e8a64; Transformer Engine's
    ///   `check_mxfp8_support` wants compute capability 10.0);
    /// - `precision fp4`: "NVFP4BlockScaling recipe for Blackwell+ architecture"
    ///   (transformer_config.py:680-681; TE `check_nvfp4_support`, compute capability 10.0);
    /// - `fp8_recipe blockwise`: TE `check_fp8_block_scaling_support` wants compute capability
    ///   9.0 (Hopper) or later; Ada's 8.9 runs only the per-tensor recipes;
    /// - `fp8_attention`: TE's FP8 fused attention (cuDNN) runs on compute capability 9.0 and
    ///   later (`get_attention_backend` turns FusedAttention off below sm90 with FP8);
    /// - W0023: Megatron reads `--fp8-recipe` and `--fp8-format` only with FP8 GEMMs
    ///   (fp8_utils.py:752-810 builds the recipe from them inside the FP8 autocast), and
    ///   `fp8_dot_product_attention` only in an FP8 or FP4 recipe (fp8_utils.py:779-787,
    ///   fp4_utils.py:225).
    pub(super) fn check_fp8_recipe(&mut self) {
        let p = &self.def.plan;
        let gpu = &self.def.cluster.gpu;
        let precision = p.precision.as_ref().map_or(Precision::Bf16, |s| s.value);
        let precision_loc = p.precision.as_ref().map(|s| s.loc);
        let has_peak = gpu.peak_for(precision).is_some();
        let mut needs = Vec::new();
        if precision == Precision::Fp8 {
            match p.fp8_recipe.as_ref() {
                Some(r) if r.value == Fp8Recipe::Mxfp8 => needs.push((RecipeNeed::Mxfp8, r.loc)),
                Some(r) if r.value == Fp8Recipe::Blockwise => {
                    needs.push((RecipeNeed::Blockwise, r.loc))
                }
                _ => {}
            }
        }
        if precision == Precision::Fp4 {
            if let Some(loc) = precision_loc {
                needs.push((RecipeNeed::Nvfp4, loc));
            }
        }
        if precision != Precision::Bf16 {
            if let Some(a) = p.fp8_attention.as_ref().filter(|a| a.value) {
                needs.push((RecipeNeed::Fp8Attention, a.loc));
            }
        }
        let arch = gpu.arch();
        // E0312 already rejects a precision the GPU has no tensor cores for.
        if has_peak {
            for (need, loc) in needs {
                if need.archs().contains(&arch) {
                    continue;
                }
                let alternatives = self
                    .stdlib_gpus
                    .iter()
                    .filter(|g| need.archs().contains(&g.arch) && g.precisions.contains(&precision))
                    .map(|g| g.name.clone())
                    .collect();
                let fallback_runs = match need {
                    RecipeNeed::Nvfp4 => gpu.peak_for(Precision::Fp8).is_some(),
                    _ => true,
                };
                let problem = RecipeArch {
                    need,
                    loc,
                    gpu: gpu.name.clone(),
                    arch,
                    gpu_loc: gpu
                        .arch
                        .as_ref()
                        .map_or(self.def.cluster.gpu_loc, |a| a.loc),
                    alternatives,
                    fallback_runs,
                };
                self.report(PlanProblem::RecipeArch(problem));
            }
        }
        // W0023: keys the precision never reads.
        let mut unused: Vec<(&'static str, venus_diag::diag::Loc)> = Vec::new();
        if precision != Precision::Fp8 {
            if let Some(r) = p.fp8_recipe.as_ref() {
                unused.push(("fp8_recipe", r.loc));
            }
            if let Some(f) = p.fp8_format.as_ref() {
                unused.push(("fp8_format", f.loc));
            }
        }
        if precision == Precision::Bf16 {
            if let Some(a) = p.fp8_attention.as_ref().filter(|a| a.value) {
                unused.push(("fp8_attention", a.loc));
            }
        }
        for (key, loc) in unused {
            self.report(PlanProblem::Fp8Unused(Fp8Unused {
                key,
                loc,
                precision,
                precision_loc,
            }));
        }
    }
}
