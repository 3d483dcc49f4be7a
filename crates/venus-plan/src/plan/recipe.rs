//! The precision recipe: the number format of every class of tensor a plan moves or keeps.
//!
//! Input: the plan's `precision`. Output: one [`Recipe`], stored in the `Scenario` and read by
//! the memory model (weights, gradients, optimizer state), lowering (message sizes) and the
//! compute model (GEMM peak, activation traffic). Invariant: no other module writes a byte
//! width of a training tensor; a new recipe (FP8 parameter gather, MXFP8) is a new constructor.

use venus_base::base::{BytesPerElement, Dtype, Fp8Recipe, Precision};

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
    /// How the GEMM inputs are quantized and scaled: the cast traffic around each low-precision
    /// GEMM ([`Recipe::cast_bytes`]).
    pub scaling: Scaling,
}

/// The quantization of a recipe's GEMM inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scaling {
    /// BF16 GEMMs: their inputs are used as they are, nothing is cast.
    None,
    /// A Transformer Engine FP8 recipe (`--fp8-recipe`).
    Fp8(Fp8Recipe),
    /// Transformer Engine NVFP4 (`--fp4-recipe nvfp4`): E2M1 values with one E4M3 scale per
    /// 16 and a per-tensor fp32 scale from the tensor's amax.
    Nvfp4,
}

/// The operand of a low-precision GEMM `Y = X·W` a cast quantizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The input `X` (forward): the layer's activation.
    Activation,
    /// The weight `W`, quantized once per iteration (Megatron passes `is_first_microbatch`
    /// to Transformer Engine, which caches the quantized weight for the later microbatches:
    /// megatron/core/extensions/transformer_engine.py:1338-1345 at d98e8a64).
    Weight,
    /// The output gradient `dY` (backward), the input of both dgrad and wgrad GEMMs.
    Gradient,
}

/// What the GPU's low-precision GEMMs accept, as the cast sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CastTarget {
    /// Per-tensor-scaled FP8 GEMMs take only the TN layout (Hopper, Ada), so the backward's
    /// transposed operands need a transposed FP8 copy; Blackwell runs every layout from the
    /// one copy (Transformer Engine `is_non_tn_fp8_gemm_supported`: compute capability 10.0
    /// and later).
    pub tn_only: bool,
    /// The source was produced by a kernel that can quantize it on the way out: the norm of
    /// a `LayerNormLinear` (QKV, FC1) writes its FP8 output directly when the scale is known
    /// before the tensor exists, which only delayed scaling's amax history gives.
    pub after_norm: bool,
}

/// HBM bytes per element of one cast: read (the source, and with current scaling a first
/// pass for its amax) and written (the quantized copies and their scales).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CastBytes {
    pub read: BytesPerElement,
    pub written: BytesPerElement,
    /// Kernels the cast launches (0 when it is fused into the producing norm).
    pub kernels: f64,
}

impl CastBytes {
    const NONE: CastBytes = CastBytes {
        read: BytesPerElement::ZERO,
        written: BytesPerElement::ZERO,
        kernels: 0.0,
    };

    /// A cast that reads `read` and writes `written` bytes an element in `kernels` kernels.
    fn new(read: f64, written: f64, kernels: f64) -> CastBytes {
        CastBytes {
            read: BytesPerElement(read),
            written: BytesPerElement(written),
            kernels,
        }
    }

    pub fn total(&self) -> BytesPerElement {
        self.read + self.written
    }
}

/// Elements per scale of TE's `Float8BlockScaling`: 1×128 tiles for activations and
/// gradients, 128×128 for weights, one fp32 scale each (DeepSeek-V3 report §3.3.1; TE
/// `transformer_engine/common/recipe/__init__.py` `Float8BlockScaling`, x/grad `block_scaling_dim` 1,
/// w 2).
const BLOCK_1D: f64 = 128.0;
const BLOCK_2D: f64 = 128.0 * 128.0;
/// MXFP8: one E8M0 (1-byte) scale per 32 elements (OCP Microscaling Formats spec v1.0 §5;
/// TE `MXFP8BlockScaling`).
const MX_BLOCK: f64 = 32.0;
/// NVFP4: one E4M3 (1-byte) scale per 16 E2M1 elements (TE `NVFP4BlockScaling`; NVIDIA
/// Blackwell NVFP4 format).
const NVFP4_BLOCK: f64 = 16.0;

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
            scaling: match precision {
                Precision::Bf16 => Scaling::None,
                // Megatron's default recipe (transformer_config.py:594-596 at d98e8a64).
                Precision::Fp8 => Scaling::Fp8(Fp8Recipe::Delayed),
                Precision::Fp4 => Scaling::Nvfp4,
            },
        }
    }

    /// The recipe with the plan's FP8 scaling recipe (`fp8_recipe`); no change unless the
    /// GEMMs run in FP8 (Megatron reads `--fp8-recipe` only with `--fp8-format`).
    pub fn with_fp8_recipe(mut self, recipe: Fp8Recipe) -> Recipe {
        if self.gemm == Precision::Fp8 {
            self.scaling = Scaling::Fp8(recipe);
        }
        self
    }

    /// HBM bytes per element of quantizing one GEMM operand for a training step: both the
    /// forward's copy and the backward's (every operand is read by two GEMMs: `X` by the
    /// forward and wgrad, `W` by the forward and dgrad, `dY` by dgrad and wgrad, each
    /// along a different dimension). Zero for BF16 GEMMs. Transformer Engine 2.x quantizers
    /// (`transformer_engine/pytorch/tensor/`: `float8_tensor.py`, `float8_blockwise_tensor.py`,
    /// `mxfp8_tensor.py`, `nvfp4_tensor.py`):
    /// - read the BF16 source once (the weights' FP8 copy with `fp8_param_gather`, whose
    ///   gather delivers the forward's copy), nothing when fused into the norm;
    /// - current scaling (tensorwise, NVFP4's per-tensor scale) first reads the source for its
    ///   amax in a kernel of its own (`Float8CurrentScalingQuantizer`: amax, then cast);
    ///   delayed scaling takes the scale from the history and updates the amax inside the cast;
    ///   the block recipes find each block's scale inside the cast kernel;
    /// - write the forward's copy, and the backward's: a transposed copy for per-tensor FP8 on
    ///   a TN-only GPU (none on Blackwell, which reads the one copy either way), always a second
    ///   copy for the block recipes (their scales run along the other dimension): 1 byte an
    ///   element for FP8, half for FP4, plus the scales.
    pub fn cast_bytes(&self, operand: Operand, target: CastTarget) -> CastBytes {
        let recipe = match self.scaling {
            Scaling::None => return CastBytes::NONE,
            Scaling::Fp8(r) => Some(r),
            Scaling::Nvfp4 => None,
        };
        let gathered = operand == Operand::Weight && self.linear_weights == Dtype::Fp8;
        let source = match operand {
            Operand::Weight if gathered => self.linear_weights.width(),
            Operand::Weight => self.weights.width(),
            Operand::Activation | Operand::Gradient => self.activations.width(),
        }
        .0;
        let fused = target.after_norm
            && operand == Operand::Activation
            && recipe == Some(Fp8Recipe::Delayed);
        let current = matches!(recipe, Some(Fp8Recipe::Tensorwise) | None);
        let block = |n: f64| {
            if operand == Operand::Weight {
                BLOCK_2D
            } else {
                n
            }
        };
        // (bytes of one quantized copy, copies written).
        let (copy, copies) = match recipe {
            Some(Fp8Recipe::Delayed | Fp8Recipe::Tensorwise) => {
                (1.0, if target.tn_only { 2.0 } else { 1.0 })
            }
            Some(Fp8Recipe::Blockwise) => (1.0 + 4.0 / block(BLOCK_1D), 2.0),
            Some(Fp8Recipe::Mxfp8) => (1.0 + 1.0 / MX_BLOCK, 2.0),
            None => (0.5 + 1.0 / NVFP4_BLOCK, 2.0),
        };
        if gathered {
            // The gather delivered the forward's copy: only the backward's is made from it.
            let second = copies - 1.0;
            return CastBytes::new(
                if second > 0.0 { source } else { 0.0 },
                second * copy,
                if second > 0.0 { 1.0 } else { 0.0 },
            );
        }
        if fused {
            // The norm writes its output quantized instead of in BF16: what the copies add
            // over the BF16 output the norm's own traffic already counts.
            return CastBytes::new(0.0, (copy * copies - source).max(0.0), 0.0);
        }
        let read = if current { 2.0 * source } else { source };
        CastBytes::new(read, copy * copies, if current { 2.0 } else { 1.0 })
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
                    scaling: Scaling::None,
                    ..r
                },
                bf16
            );
        }
    }

    const HOPPER: CastTarget = CastTarget {
        tn_only: true,
        after_norm: false,
    };
    const BLACKWELL: CastTarget = CastTarget {
        tn_only: false,
        after_norm: false,
    };

    fn fp8(recipe: Fp8Recipe) -> Recipe {
        Recipe::for_precision(Precision::Fp8).with_fp8_recipe(recipe)
    }

    /// One GEMM input of 4096 tokens × 8192 (32 Mi elements) quantized for a step: delayed
    /// scaling reads it once (2 bytes) and on Hopper writes the FP8 copy and its transpose
    /// (1 + 1); tensorwise reads it twice (amax, then cast); the block recipes always write
    /// two scaled copies; Blackwell's delayed scaling needs no transpose.
    #[test]
    fn cast_traffic_per_element_follows_each_recipes_reads_copies_and_scales() {
        let per = |r: Recipe, t: CastTarget| r.cast_bytes(Operand::Activation, t);
        let d = per(fp8(Fp8Recipe::Delayed), HOPPER);
        assert_eq!((d.read.0, d.written.0, d.kernels), (2.0, 2.0, 1.0));
        let t = per(fp8(Fp8Recipe::Tensorwise), HOPPER);
        assert_eq!((t.read.0, t.written.0, t.kernels), (4.0, 2.0, 2.0));
        let b = per(fp8(Fp8Recipe::Blockwise), HOPPER);
        assert_eq!((b.read.0, b.written.0), (2.0, 2.0 * (1.0 + 4.0 / 128.0)));
        let m = per(fp8(Fp8Recipe::Mxfp8), BLACKWELL);
        assert_eq!((m.read.0, m.written.0), (2.0, 2.0 * (1.0 + 1.0 / 32.0)));
        assert_eq!(per(fp8(Fp8Recipe::Delayed), BLACKWELL).written.0, 1.0);
        let n = per(Recipe::for_precision(Precision::Fp4), BLACKWELL);
        assert_eq!(
            (n.read.0, n.written.0, n.kernels),
            (4.0, 2.0 * (0.5 + 1.0 / 16.0), 2.0)
        );
        let none = per(Recipe::for_precision(Precision::Bf16), HOPPER);
        assert_eq!(none.total(), BytesPerElement::ZERO);
        // 32 Mi elements: delayed 128 MiB, tensorwise 192 MiB, MXFP8 130 MiB; at 3.35 TB/s the
        // delayed cast takes 40.06 µs.
        let elems = 4096.0 * 8192.0;
        assert_eq!(d.total().of(elems), 134_217_728.0);
        assert_eq!(t.total().of(elems), 201_326_592.0);
        assert_eq!(m.total().of(elems), 136_314_880.0);
        let us = d.total().of(elems) / 3.35e12 * 1e6;
        assert!((us - 40.065).abs() < 1e-3, "{us}");
    }

    /// Weights take 128×128 blocks under blockwise scaling (one fp32 scale per 16 Ki
    /// elements); with `fp8_param_gather` the gather delivers the forward's FP8 copy, so Hopper
    /// only transposes it and Blackwell's delayed scaling casts nothing.
    #[test]
    fn weight_casts_use_square_blocks_and_skip_the_copy_the_fp8_gather_delivers() {
        let w = fp8(Fp8Recipe::Blockwise).cast_bytes(Operand::Weight, HOPPER);
        assert_eq!(w.written.0, 2.0 * (1.0 + 4.0 / 16384.0));
        let gathered = fp8(Fp8Recipe::Delayed).with_fp8_param_gather(true);
        let h = gathered.cast_bytes(Operand::Weight, HOPPER);
        assert_eq!((h.read.0, h.written.0, h.kernels), (1.0, 1.0, 1.0));
        let b = gathered.cast_bytes(Operand::Weight, BLACKWELL);
        assert_eq!(b.total().0 + b.kernels, 0.0);
        // The activations are cast as without the gather.
        assert_eq!(
            gathered.cast_bytes(Operand::Activation, HOPPER),
            fp8(Fp8Recipe::Delayed).cast_bytes(Operand::Activation, HOPPER)
        );
    }

    /// Delayed scaling knows its scale before the tensor exists, so a `LayerNormLinear`'s norm
    /// writes its output in FP8: on Hopper the two copies replace the 2-byte BF16 output and add
    /// nothing; the current-scaling recipes cast after the norm as after any other kernel.
    #[test]
    fn delayed_scaling_quantizes_inside_the_norm_and_current_scaling_does_not() {
        let after = CastTarget {
            tn_only: true,
            after_norm: true,
        };
        let d = fp8(Fp8Recipe::Delayed).cast_bytes(Operand::Activation, after);
        assert_eq!((d.read.0, d.written.0, d.kernels), (0.0, 0.0, 0.0));
        let t = fp8(Fp8Recipe::Tensorwise).cast_bytes(Operand::Activation, after);
        assert_eq!(
            t,
            fp8(Fp8Recipe::Tensorwise).cast_bytes(Operand::Activation, HOPPER)
        );
        // Gradients never come out of a norm.
        let g = fp8(Fp8Recipe::Delayed).cast_bytes(Operand::Gradient, after);
        assert_eq!(g.total(), BytesPerElement(4.0));
    }

    #[test]
    fn the_fp8_recipe_applies_only_to_fp8_gemms() {
        assert_eq!(
            Recipe::for_precision(Precision::Fp8).scaling,
            Scaling::Fp8(Fp8Recipe::Delayed)
        );
        assert_eq!(
            fp8(Fp8Recipe::Mxfp8).scaling,
            Scaling::Fp8(Fp8Recipe::Mxfp8)
        );
        let bf16 = Recipe::for_precision(Precision::Bf16);
        assert_eq!(bf16.with_fp8_recipe(Fp8Recipe::Mxfp8), bf16);
        let fp4 = Recipe::for_precision(Precision::Fp4);
        assert_eq!(
            fp4.with_fp8_recipe(Fp8Recipe::Blockwise).scaling,
            Scaling::Nvfp4
        );
    }
}
