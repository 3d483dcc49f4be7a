//! The precision recipe: the number format of every class of tensor a plan moves or keeps.
//!
//! Input: the plan's `precision`. Output: one [`Recipe`], stored in the `Scenario` and read by
//! the memory model (weights, gradients, optimizer state), lowering (message sizes) and the
//! compute model (GEMM peak, activation traffic). Invariant: no other module writes a byte
//! width of a training tensor; a new recipe (FP8 parameter gather, MXFP8) is a new constructor.

use venus_base::base::{Dtype, Precision};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Recipe {
    /// GEMM inputs: picks the compute peak (`GpuSpec::peak_for`). A precision, not a
    /// [`Dtype`]: FP4 exists only as a GEMM input, no tensor of the recipe is stored in it.
    pub gemm: Precision,
    /// The model's parameters as the forward and backward read them.
    pub weights: Dtype,
    /// The weights of the linear layers (attention, MLP, experts): `weights` unless
    /// `--fp8-param-gather` keeps them in FP8.
    pub linear_weights: Dtype,
    /// The gradient buffer the backward accumulates into.
    pub main_grads: Dtype,
    /// Data-parallel gradient reduction (reduce-scatter or all-reduce).
    pub grad_comm: Dtype,
    /// The distributed optimizer's parameter all-gather.
    pub param_gather: Dtype,
    /// Activations kept for the backward, and the attention/MLP traffic they cause.
    pub activations: Dtype,
    /// Pipeline send/receive of activations and their gradients.
    pub p2p: Dtype,
    /// Tensor-, context- and expert-parallel collectives on activations.
    pub tp_comm: Dtype,
    /// The optimizer's master copy of the parameters.
    pub master_weights: Dtype,
    /// Adam's first moment (`exp_avg`).
    pub moments: Dtype,
    /// Adam's second moment (`exp_avg_sq`).
    pub second_moment: Dtype,
}

impl Recipe {
    /// Megatron-LM's mixed-precision recipe for `--bf16` (and `--fp8-format` or
    /// `--fp4-format` on top of it, which change only the GEMM inputs: parameters, gradients
    /// and communication stay as in BF16 unless `--fp8-param-gather` is set).
    // megatron/training/arguments.py: `--bf16` sets `accumulate_allreduce_grads_in_fp32`, so the
    // main gradients and their reduction are fp32 (`grad_reduce_in_fp32`); `pipeline_dtype` is
    // the params dtype; `--main-params-dtype`, `--exp-avg-dtype` and `--exp-avg-sq-dtype`
    // default to fp32.
    pub fn for_precision(precision: Precision) -> Recipe {
        Recipe {
            gemm: precision,
            weights: Dtype::Bf16,
            linear_weights: Dtype::Bf16,
            main_grads: Dtype::Fp32,
            grad_comm: Dtype::Fp32,
            param_gather: Dtype::Bf16,
            activations: Dtype::Bf16,
            p2p: Dtype::Bf16,
            tp_comm: Dtype::Bf16,
            master_weights: Dtype::Fp32,
            moments: Dtype::Fp32,
            second_moment: Dtype::Fp32,
        }
    }

    /// The recipe with the plan's gradient dtype (`--grad-reduce-in-bf16`: the main-gradient
    /// buffer and its data-parallel reduction in bf16, arguments.py:1213-1214) and the
    /// precision-aware optimizer's dtypes (`--main-params-dtype`, `--exp-avg-dtype`,
    /// `--exp-avg-sq-dtype`; megatron/core/optimizer/distrib_optimizer.py keeps the master copy
    /// and both moments of its shard in them). `None` keeps the `--bf16` default (fp32).
    pub fn with_training_dtypes(
        mut self,
        grads: Option<Dtype>,
        main_params: Option<Dtype>,
        exp_avg: Option<Dtype>,
        exp_avg_sq: Option<Dtype>,
    ) -> Recipe {
        if let Some(g) = grads {
            self.main_grads = g;
            self.grad_comm = g;
        }
        self.master_weights = main_params.unwrap_or(self.master_weights);
        self.moments = exp_avg.unwrap_or(self.moments);
        self.second_moment = exp_avg_sq.unwrap_or(self.second_moment);
        self
    }

    /// The recipe of `--fp8-param-gather` (with an FP8 recipe): Transformer Engine creates the
    /// linear layers' weights as FP8 tensors and keeps no BF16 copy (transformer_config.py:602
    /// `fp8_param`, set from `--fp8-param-gather` by megatron/training/argument_utils.py:312, at
    /// d98e8a64), and the distributed optimizer all-gathers the updated parameters in FP8
    /// (megatron/core/optimizer/distrib_optimizer.py:2825 casts its fp32 shard into them). The
    /// norms and embeddings stay BF16; the gather counts every parameter at 1 byte, as the
    /// linear weights are all but a sliver of a transformer's.
    pub fn with_fp8_param_gather(mut self, on: bool) -> Recipe {
        if on && self.gemm == Precision::Fp8 {
            self.linear_weights = Dtype::Fp8;
            self.param_gather = Dtype::Fp8;
        }
        self
    }

    /// Optimizer state per parameter: the master copy and both Adam moments (12 bytes in the
    /// default recipe, Korthikanti et al. 2022 and Megatron's `report_theoretical_memory`).
    pub fn optimizer_bytes(&self) -> u64 {
        self.master_weights.bytes() + self.moments.bytes() + self.second_moment.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_recipe_keeps_fp32_gradients_and_twelve_bytes_of_optimizer_state() {
        let r = Recipe::for_precision(Precision::Bf16);
        assert_eq!(r.weights.bytes(), 2);
        assert_eq!(r.main_grads.bytes(), 4);
        assert_eq!(r.grad_comm.bytes(), 4);
        assert_eq!(r.param_gather.bytes(), 2);
        assert_eq!(r.linear_weights.bytes(), 2);
        assert_eq!(
            (r.activations.bytes(), r.p2p.bytes(), r.tp_comm.bytes()),
            (2, 2, 2)
        );
        assert_eq!(r.optimizer_bytes(), 12);
        assert_eq!(r.gemm, Precision::Bf16);
    }

    /// Megatron's distributed-optimizer table
    /// (<https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/dist_optimizer.md>): bf16 params with fp32 grads keep 6 + 12/d bytes per parameter; bf16 grads make it
    /// 4 + 12/d; bf16 moments with the precision-aware optimizer 4 + 8/d.
    #[test]
    fn training_dtypes_change_the_gradient_and_optimizer_bytes_per_parameter() {
        let base = Recipe::for_precision(Precision::Bf16);
        let bf16_grads = base.with_training_dtypes(Some(Dtype::Bf16), None, None, None);
        assert_eq!(
            bf16_grads.weights.bytes() + bf16_grads.main_grads.bytes(),
            4
        );
        assert_eq!(bf16_grads.grad_comm.bytes(), 2);
        assert_eq!(bf16_grads.optimizer_bytes(), 12);
        let aware = base.with_training_dtypes(None, None, Some(Dtype::Bf16), Some(Dtype::Bf16));
        assert_eq!(aware.optimizer_bytes(), 8);
        let fp8 = base.with_training_dtypes(None, Some(Dtype::Fp16), Some(Dtype::Fp8), None);
        assert_eq!(fp8.optimizer_bytes(), 2 + 1 + 4);
        assert_eq!(base.with_training_dtypes(None, None, None, None), base);
    }

    #[test]
    fn fp8_param_gather_keeps_linear_weights_and_the_gather_at_one_byte_only_with_fp8() {
        let fp8 = Recipe::for_precision(Precision::Fp8).with_fp8_param_gather(true);
        assert_eq!(
            (
                fp8.linear_weights.bytes(),
                fp8.param_gather.bytes(),
                fp8.weights.bytes()
            ),
            (1, 1, 2)
        );
        let bf16 = Recipe::for_precision(Precision::Bf16);
        assert_eq!(bf16.with_fp8_param_gather(true), bf16);
        let off = Recipe::for_precision(Precision::Fp8);
        assert_eq!(off.with_fp8_param_gather(false), off);
    }

    #[test]
    fn fp8_and_fp4_recipes_change_only_the_gemm_inputs() {
        let bf16 = Recipe::for_precision(Precision::Bf16);
        for low in [Precision::Fp8, Precision::Fp4] {
            let r = Recipe::for_precision(low);
            assert_eq!(r.gemm, low);
            assert_eq!(
                Recipe {
                    gemm: Precision::Bf16,
                    ..r
                },
                bf16
            );
        }
    }
}
