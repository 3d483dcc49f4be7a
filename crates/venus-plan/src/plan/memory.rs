//! The memory model: peak bytes per GPU on each pipeline stage.
//!
//! Input: the typed [`Model`] and a [`MemoryPlan`] (the plan's numbers after validation).
//! Output: one [`StageMemory`] per pipeline stage: weights, gradients, optimizer state and
//! activations at the peak of the schedule.
//! Invariants: integer bytes, computed in `u128` and saturated into [`Bytes`]; no panics on
//! user numbers.
//!
//! Choices (documented here because they differ between sources):
//! - Weights, gradients, optimizer: mixed-precision Adam, bf16 weights (2 B), fp32 main
//!   gradients (4 B), fp32 master weights + Adam m, v (12 B) = 18 B per parameter; with
//!   `distributed_optimizer` the 12 B are sharded: 6 + 12/d (Megatron-LM's distributed optimizer
//!   guide, <https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/dist_optimizer.md>;
//!   megatron/training/theoretical_memory_usage.py:293-303). Dense params
//!   shard over dp × cp, the group Megatron's distributed optimizer really reduce-scatters over
//!   (`dp-cp`, megatron/core/parallel_state.py:963) — theoretical_memory_usage.py uses dp alone,
//!   which is the same when cp = 1; expert params shard over expert_dp = world / (etp·ep·pp).
//! - The recipe's dtypes set the bytes per element: `grad_dtype bf16` 2-byte gradients
//!   (`--grad-reduce-in-bf16`), the precision-aware optimizer's master weights and moments
//!   (`--main-params-dtype`, `--exp-avg-dtype`, `--exp-avg-sq-dtype`).
//! - `task lora`: the base keeps its weights only; gradients and optimizer state are the
//!   adapters' ([`trainable_params`]). `fsdp` shards by strategy ([`model_state_bytes`]).
//! - Parameters: as theoretical_memory_usage.py:12-120 (no linear biases; two LayerNorms of 2h
//!   per layer and a final one; router h·E; tp shards attention, MLP, shared expert and the
//!   vocabulary-parallel embedding/output; etp × ep shard the routed experts). The last stage
//!   keeps a copy of tied embeddings when pp > 1, as Megatron does. Position embeddings are not
//!   counted (the language has no key for them; rotary models have none).
//! - Activations: Korthikanti et al. 2022, Table 2, generalised per tensor so GQA, SwiGLU,
//!   `ffn` ≠ 4h and MoE change the constants (published-runs.md §3.4 caveat); for an MHA GeLU
//!   model with ffn = 4h the per-layer bytes are exactly s·b·h·(34 + 5·a·s/h) and its tp/sp
//!   variants. Context parallelism divides the sequence: s → s/cp. Full recompute keeps the
//!   layer input (2·s·b·h, sequence-sharded with sp) per layer and adds one layer's full
//!   activations as the working set of the layer being recomputed.
//! - Microbatches in flight at the peak come from the schedule
//!   ([`crate::schedule::peak_in_flight`], equal to what its built IR holds): no pipelining 1;
//!   GPipe m; 1F1B min(pp − r, m), its warmup plus one
//!   (megatron/core/pipeline_parallel/schedules.py:2277); interleaved
//!   min(2·(pp − r − 1) + (vpp − 1)·pp + 1, m·vpp) model-chunk microbatches
//!   (schedules.py:929-986 `get_pp_rank_microbatches` warmup + 1); the zero-bubble schedules
//!   hold a microbatch from its F until its W (W reads every linear layer's input), ZB-H1
//!   min(pp, m) and ZB-H2 min(2·pp − 1, m) on every stage.
//! - What the process holds beside its tensors (CUDA context, library workspaces, NCCL buffers,
//!   fragmentation) is in no stage's peak: it is the scenario's reserve
//!   (`Scenario::reserve`, [`DEFAULT_RESERVE`] unless written), which E0401 adds to the peak.

use crate::plan::derive::{padded_vocab, param_counts, StageSplit};
use crate::plan::recipe::Recipe;
use crate::plan::spec::ModelSpec as Model;
use crate::plan::spec::{HybridCounts, HybridLayer};
use crate::schedule::{self, Kind, PipelineShape};
use venus_base::base::{
    Attention, Bytes, CrossEntropy, FsdpStrategy, LoraTargets, PipelineRuntime, Recompute,
    ScheduleKind,
};
use venus_base::base::{Ratio, RecomputeMethod, RecomputeModules};

/// What a training process holds on its GPU beside the tensors the model above counts, when
/// neither the plan nor the cluster writes `reserve`: 2.5 GiB, the sum of
/// - the CUDA context with lazy module loading (CUDA 11.7+, the Linux default since 12.2):
///   about 300 MB for PyTorch alone, over 1000 MB before lazy loading (pytorch/pytorch#107667);
///   a Megatron process also loads Transformer Engine, cuDNN and NCCL kernels: 512 MiB;
/// - cuBLAS workspaces: 32 MiB per handle on Hopper and later, as the cuBLAS documentation
///   recommends (`cublasSetWorkspace`), for four GEMM streams: 128 MiB;
/// - NCCL buffers: 544 to 688 MB per communicator after its first all-reduce, measured on
///   A100 NVLink (NVIDIA/nccl#964): per channel and peer a FIFO of `NCCL_BUFFSIZE` (4 MiB) for
///   the Simple protocol plus the LL and LL128 buffers, linear in the channel count
///   (NVIDIA/nccl#986). A Megatron rank communicates on three groups at least (tensor, data,
///   pipeline): 3 × 640 MiB.
///
/// Allocator fragmentation is not in the default: it depends on the allocator's settings
/// (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` removes most of it), so a plan that
/// expects some adds it with `reserve`.
pub const DEFAULT_RESERVE: Bytes = Bytes(CUDA_CONTEXT + CUBLAS_WORKSPACES + 3 * NCCL_COMMUNICATOR);
const MIB: u64 = 1 << 20;
const CUDA_CONTEXT: u64 = 512 * MIB;
const CUBLAS_WORKSPACES: u64 = 4 * 32 * MIB;
const NCCL_COMMUNICATOR: u64 = 640 * MIB;

/// Where the reserve of a scenario comes from: the plan's `reserve` wins over the cluster's,
/// and the default stands in for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveSource {
    Plan,
    Cluster,
    Default,
}

impl ReserveSource {
    /// How reports name it: `the plan's reserve`.
    pub fn describe(self) -> &'static str {
        match self {
            ReserveSource::Plan => "the plan's `reserve`",
            ReserveSource::Cluster => "the cluster's `reserve`",
            ReserveSource::Default => "the default",
        }
    }
}

/// The plan numbers the memory model needs (a validated plan, or a candidate fix).
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryPlan {
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    pub etp: u64,
    pub dp: u64,
    pub expert_dp: u64,
    pub vpp: u64,
    pub microbatches: u64,
    pub micro_batch: u64,
    /// Effective (already off when tp = 1).
    pub sp: bool,
    pub recompute: Recompute,
    /// Flash attention keeps no s × s scores (the plan's `attention`, flash by default).
    pub attention: Attention,
    /// What the loss keeps of the logits ([`output_activation_bytes`]).
    pub cross_entropy: CrossEntropy,
    /// What drives the pipeline ([`pipeline_runtime_bytes`]).
    pub pipeline_runtime: PipelineRuntime,
    pub distributed_optimizer: bool,
    /// None: no pipelining (pp = 1).
    pub schedule: Option<ScheduleKind>,
    /// Megatron's combined 1F1B (`Flags::overlap_ep_comm`): one more warmup forward in flight.
    pub overlap_ep_comm: bool,
    pub split: StageSplit,
    /// The byte widths of weights, gradients and optimizer state.
    pub recipe: Recipe,
    /// The busiest EP rank's routed token copies over the mean (`PlanSpec::moe_load_factor`;
    /// 1.0: balanced): its expert activations are that much larger.
    pub moe_load: Ratio,
    /// Megatron-FSDP's sharding strategy (`None`: DDP).
    pub fsdp: Option<FsdpStrategy>,
    /// `fsdp_keep_unsharded`: the FSDP units stay gathered, and their gradients unsharded, from
    /// the step's first forward to its last backward ([`fsdp_kept_unsharded`]).
    pub fsdp_keep_unsharded: bool,
    /// LoRA adapters on a frozen base (`None`: every parameter trains).
    pub lora: Option<LoraPlan>,
    /// The model's memory figures ZBV's greedy order weighs (`derive::v_memory`).
    pub v_memory: schedule::VMemory,
    /// Which submodules and layers recompute re-runs (read with the granularity it refines).
    pub recompute_detail: RecomputeDetail,
    /// CUDA graphs and activation offloading ([`super::offload`]).
    pub graphs_offload: super::offload::GraphsOffload,
    /// The share of the optimizer state kept in host memory (`optimizer_offload`, 0 to 1).
    pub optimizer_offload: Ratio,
}

/// What refines the plan's recompute granularity: the submodules of `recompute selective`
/// and the layers of `recompute full` (Megatron-LM d98e8a64, transformer_config.py:532-583).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecomputeDetail {
    /// The submodules `selective` re-runs (Megatron's default `core_attn` unless written).
    pub modules: RecomputeModules,
    pub method: RecomputeMethod,
    /// Layers per `uniform` group, or recomputed layers per model chunk with `block`.
    pub num_layers: u64,
}

impl Default for RecomputeDetail {
    /// Megatron's defaults: `core_attn`, and `full` as venusc always ran it (every layer,
    /// one per group).
    fn default() -> Self {
        RecomputeDetail {
            modules: RecomputeModules::CORE_ATTN,
            method: RecomputeMethod::Uniform,
            num_layers: 1,
        }
    }
}

/// The adapters of `task lora`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoraPlan {
    pub rank: u64,
    pub targets: LoraTargets,
}

/// Peak memory of one GPU of a pipeline stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageMemory {
    pub stage: u64,
    pub layers: u64,
    /// Dense and replicated parameters held by one GPU of the stage.
    pub params: u64,
    /// Routed-expert parameters held by one GPU of the stage.
    pub expert_params: u64,
    /// Parameters that train on one GPU of the stage (with LoRA only the adapters).
    pub trainable_params: u64,
    pub weights: Bytes,
    pub gradients: Bytes,
    /// The optimizer state in GPU memory (with `optimizer_offload`, what stays on the GPU).
    pub optimizer: Bytes,
    pub activations: Bytes,
    /// Microbatches whose activations are held at the peak (model-chunk microbatches when
    /// interleaved).
    pub in_flight: u64,
    pub peak: Bytes,
    /// Activations offloaded to host memory at the peak (not in `activations` or `peak`).
    pub offloaded: Bytes,
    /// Static buffers of the CUDA graph memory pool (in `peak`).
    pub graph_pool: Bytes,
    /// The optimizer state `optimizer_offload` keeps in host memory instead (not in `peak`).
    pub optimizer_host: Bytes,
}

/// Per-layer activation bytes for one microbatch on one GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ActivationShape {
    /// Sequence on this GPU (seq / cp).
    pub seq: u64,
    pub micro_batch: u64,
    pub tp: u64,
    pub etp: u64,
    pub sp: bool,
    pub recompute: Recompute,
    pub attention: Attention,
    /// The busiest EP rank's routed token copies over the mean (1.0: balanced).
    pub moe_load: Ratio,
    /// The submodules `Recompute::Selective` re-runs.
    pub modules: RecomputeModules,
    /// The linear layers run FP8 or FP4 GEMMs (the recipe's `gemm` is not bf16): each keeps
    /// its quantized input for the weight gradient, 1 byte an element, instead of the bf16
    /// input ([`QUANTIZED_INPUT_BYTES`]).
    pub quantized_inputs: bool,
    /// `task lora`: the base's linear layers are frozen and only `targets` have adapters
    /// ([`linear_input_bytes`]); `None` when every parameter trains.
    pub frozen_base: Option<LoraTargets>,
}

/// Bytes per element of the input a quantized linear layer keeps for its backward. Transformer
/// Engine quantizes a linear layer's input once and saves that copy, keeping only the
/// column-wise (transposed) data the weight-gradient GEMM reads (TransformerEngine v2.4
/// transformer_engine/pytorch/module/linear.py `_Linear.forward`: `inputmat.update_usage(
/// rowwise_usage=False, columnwise_usage=True)` before `save_for_backward`; layernorm_linear.py
/// saves `ln_out` the same way): 1 byte for FP8 and MXFP8 (MXFP8's one E8M0 scale per 32
/// elements, 3 %, is left out). NVFP4 is counted at the same byte: its 4-bit data with one
/// FP8 scale per 16 elements is smaller, so the figure is an upper bound for it.
pub const QUANTIZED_INPUT_BYTES: u128 = 1;

impl ActivationShape {
    /// Whether the plan's GEMMs quantize their inputs (FP8 or FP4).
    pub fn quantizes(gemm: venus_base::base::Precision) -> bool {
        gemm != venus_base::base::Precision::Bf16
    }
}

fn inner_bytes_per_token(ffn: u64, swiglu: bool) -> u128 {
    // GeLU: activation input and output, 2 bytes each per element of ffn (Korthikanti's 16sbh
    // for ffn = 4h). SwiGLU: gate+up output (2·ffn) and the product (ffn).
    let elems: u128 = if swiglu { 3 } else { 2 };
    (2 * elems).saturating_mul(ffn as u128)
}

/// Bytes per element a linear layer keeps of its input for the backward, the input no other
/// op keeps: 2 (bf16); [`QUANTIZED_INPUT_BYTES`] with quantized GEMMs; with a frozen base
/// (`task lora`) none, since a frozen layer computes no weight gradient (TransformerEngine
/// v2.4 linear.py `_Linear.forward`: `backward_needs_input = is_grad_enabled and
/// weight.requires_grad`), unless the layer is one of the adapters' `targeted` modules, whose
/// adapter keeps the same input in bf16 (Megatron-Bridge peft/lora_layers.py `LoRALinear`
/// feeds the wrapped layer's input, or its norm output, to the adapter's `linear_in`).
pub fn linear_input_bytes(a: &ActivationShape, targeted: fn(&LoraTargets) -> bool) -> u128 {
    match a.frozen_base {
        Some(t) if targeted(&t) => 2,
        Some(_) => 0,
        None if a.quantized_inputs => QUANTIZED_INPUT_BYTES,
        None => 2,
    }
}

/// [`inner_bytes_per_token`] with the MLP's second linear layer keeping its input (the
/// activation function's output, ffn elements) in [`linear_input_bytes`]; the activation
/// function's own saved input stays bf16.
fn kept_inner_bytes_per_token(ffn: u64, swiglu: bool, a: &ActivationShape) -> u128 {
    inner_bytes_per_token(ffn, swiglu)
        .saturating_sub(prod(&[2, ffn as u128]))
        .saturating_add(prod(&[linear_input_bytes(a, |t| t.fc2), ffn as u128]))
}

/// The attention bytes per token `kept` (counting the output projection's `proj_in`-element
/// input once in bf16) as the projection keeps its input ([`linear_input_bytes`]). Flash
/// attention saves its bf16 output for its own backward unless `core_attn` re-runs the core
/// (TransformerEngine v2.4 dot_product_attention/backends.py `FusedAttnFunc.forward` saves
/// `out`; flash-attn's `_flash_attn_forward` likewise): a quantized projection adds its 1-byte
/// copy to it, and a bf16 or frozen one keeps nothing more (the same tensor). Otherwise the
/// projection's own copy is all that is kept.
fn kept_proj_input(kept: u128, proj_in: u128, a: &ActivationShape, re: RecomputeModules) -> u128 {
    let bytes = if a.attention == Attention::Flash && !re.core_attn {
        if a.quantized_inputs && a.frozen_base.is_none() {
            2 + QUANTIZED_INPUT_BYTES
        } else {
            2
        }
    } else {
        linear_input_bytes(a, |t| t.proj)
    };
    kept.saturating_sub(prod(&[2, proj_in]))
        .saturating_add(prod(&[bytes, proj_in]))
}

/// Saturating product of `u128` factors (user numbers can make any product absurd).
fn prod(xs: &[u128]) -> u128 {
    xs.iter().fold(1u128, |a, &x| a.saturating_mul(x))
}

/// Stored activation bytes of one layer for one microbatch, without recompute working sets.
// Korthikanti et al. 2022 §4, Table 2 (published-runs.md §3.4).
pub fn layer_activation_bytes(m: &Model, a: &ActivationShape) -> u128 {
    layer_activation_bytes_of(m, a, m.is_moe())
}

/// Stored activation bytes of one layer, a MoE layer (`moe`) or a dense one (a MoE model's
/// leading `first_k_dense` layers).
pub fn layer_activation_bytes_of(m: &Model, a: &ActivationShape, moe: bool) -> u128 {
    let tokens = prod(&[a.seq as u128, a.micro_batch as u128]);
    let h = m.hidden as u128;
    let tp = a.tp.max(1) as u128;
    let tsp = if a.sp { tp } else { 1 };
    if a.recompute == Recompute::Full {
        // Only the layer input is kept (sequence-sharded with sp).
        return prod(&[2, h, tokens]) / tsp;
    }
    if a.recompute == Recompute::Op {
        return op_checkpoint_bytes(m, a, moe);
    }
    // The submodules selective recompute re-runs drop what they save inside and keep their
    // inputs (transformer_config.py:560-583, d98e8a64); without recompute none does.
    let re = if a.recompute == Recompute::Selective {
        a.modules
    } else {
        RecomputeModules::default()
    };
    let hd = m.head_dim() as u128;
    let q = prod(&[m.heads as u128, hd]);
    let kv = prod(&[m.kv_groups() as u128, hd]);
    // MLA (multi_latent_attention.py): Q and K of n·(d_nope + d_rope), V and the output
    // projection input of n·d_v, split by tp; the latents (q_lora_rank, kv_lora_rank + d_rope)
    // and their norm outputs, 2 bytes each, on every tp rank. `mla_up_proj` discards the up
    // projections' Q, K and V (the latents they are recomputed from stay).
    let (qk_v, latent) = if m.is_mla() {
        let n = m.heads as u128;
        let qk = prod(&[4, n, m.qk_head_dim() as u128]);
        let v = prod(&[4, n, m.v_head_dim() as u128]);
        let lat = (m.q_lora_rank() as u128)
            .saturating_add(m.kv_lora_rank() as u128)
            .saturating_add(m.qk_rope_head_dim() as u128);
        let kept = if re.mla_up_proj {
            v / 2
        } else {
            qk.saturating_add(v)
        };
        (kept, prod(&[4, lat]))
    } else {
        // QK-norm keeps its inputs, the query and key before their norms (2 bytes each,
        // split by tp with the heads; attention.py `q_layernorm`/`k_layernorm`), besides
        // the normed Q and K the core reads.
        let norms = if m.qk_norm() { 2 } else { 0 };
        let qk = prod(&[4 + norms, q]).saturating_add(prod(&[2 + norms, kv]));
        (qk.saturating_add(prod(&[2, kv])), 0)
    };
    // Not split by tp (split by sp): two LayerNorm inputs 4h, QKV input 2h, attention
    // dropout mask h, MLP input 2h, MLP dropout mask h: Korthikanti's 10·s·b·h. `layernorm`
    // discards the two norms' outputs (the QKV and MLP inputs, 4h).
    let mut replicated = if re.layernorm {
        prod(&[6, h])
    } else {
        prod(&[10, h])
    };
    // The QKV input and a dense layer's MLP input are the `ln_out` of Megatron's fused
    // `TELayerNormColumnParallelLinear` (gpt_layer_specs.py
    // `get_gpt_layer_with_transformer_engine_spec`, d98e8a64), kept as [`linear_input_bytes`]
    // says. MLA's two down projections each keep the shared norm output (2 bytes either way);
    // a MoE layer's router reads the MLP input in bf16 (it stays whole).
    if !re.layernorm {
        if !m.is_mla() {
            replicated = replicated
                .saturating_sub(prod(&[2, h]))
                .saturating_add(prod(&[linear_input_bytes(a, |t| t.qkv), h]));
        }
        if !moe {
            replicated = replicated
                .saturating_sub(prod(&[2, h]))
                .saturating_add(prod(&[linear_input_bytes(a, |t| t.fc1), h]));
        }
    }
    // Split by tp: Q and K for QKᵀ, V, the output projection input (8·s·b·h for MHA), and
    // the MLP inner activations (none kept when `mlp`, `moe` or `shared_experts` re-runs them).
    // The second linear layer keeps the activation function's output, its input, as
    // [`kept_inner_bytes_per_token`] says.
    let inner_of = |ffn: u64| kept_inner_bytes_per_token(ffn, m.swiglu(), a);
    let mlp_inner = if moe {
        if m.shared_expert_ffn() > 0 && !re.shared_experts && !re.moe {
            inner_of(m.shared_expert_ffn())
        } else {
            0
        }
    } else if re.mlp {
        0
    } else {
        inner_of(m.ffn())
    };
    let proj_in = if m.is_mla() {
        prod(&[m.heads as u128, m.v_head_dim() as u128])
    } else {
        q
    };
    let qk_v = kept_proj_input(qk_v, proj_in, a, re);
    let tp_split = qk_v.saturating_add(mlp_inner);
    let mut bytes =
        (prod(&[tokens, replicated]) / tsp).saturating_add(prod(&[tokens, tp_split]) / tp);
    if latent > 0 {
        bytes = bytes.saturating_add(prod(&[tokens, latent]));
    }
    if moe && !re.moe {
        // Each token reaches topk experts: the dispatched input (2h, gathered over etp) and the
        // expert's inner activations (split by etp), per rank tokens / tp with sp. `moe_act`
        // discards the activation function's output (ffn elements of 2 bytes).
        let topk = m.topk() as u128;
        let etp = a.etp.max(1) as u128;
        // With latent MoE the dispatched tokens are `moe_latent_size` wide.
        let width = m.expert_width() as u128;
        let mut inner = inner_bytes_per_token(m.moe_ffn(), m.swiglu());
        if a.quantized_inputs || a.frozen_base.is_some() {
            // The expert's second GEMM keeps its own quantized copy of its input (TE's
            // `GroupedLinear`), or none when frozen, whether or not `moe_act` discards the
            // bf16 output.
            inner = kept_inner_bytes_per_token(m.moe_ffn(), m.swiglu(), a);
        } else if re.moe_act {
            inner = inner.saturating_sub(prod(&[2, m.moe_ffn() as u128]));
        }
        // The dispatched tokens, kept by the experts' first GEMM.
        let input = linear_input_bytes(a, |t| t.fc1);
        let per = prod(&[input, width, etp]).saturating_add(inner);
        let mut routed = prod(&[tokens, topk, per]) / tsp;
        if a.moe_load.0 > 1.0 {
            // The busiest EP rank holds `moe_load` times the mean token copies.
            routed = (routed as f64 * a.moe_load.0).min(u128::MAX as f64) as u128;
        }
        bytes = bytes.saturating_add(routed);
    }
    // The attention scores: unless `core_attn` re-runs the core, unfused attention keeps its
    // softmax output (2), dropout mask (1) and dropout output (2) of the a·s·s scores, split
    // over tp by heads: 5·a·s²·b / t; flash attention never writes them and keeps the fp32
    // log-sum-exp of each (head, token) row for its backward: 4·a·s·b / t (flash-attention's
    // `softmax_lse`), with or without `core_attn`.
    match a.attention {
        Attention::Unfused if !re.core_attn => {
            bytes = bytes.saturating_add(prod(&[5, m.heads as u128, a.seq as u128, tokens]) / tp);
        }
        Attention::Flash | Attention::Flash2 => {
            bytes = bytes.saturating_add(prod(&[4, m.heads as u128, tokens]) / tp);
        }
        Attention::Unfused => {}
    }
    bytes
}

/// The sizes `recompute op`'s two terms read: tokens of the microbatch, hidden size, tp (and
/// the sequence split, tp with sp), the query and key/value widths, and the MLP's first-matmul
/// width: the dense `ffn`, or on a MoE layer each routed copy's expert and the shared expert's
/// (torchtitan's op policy, written for Llama's dense block, applied to each expert's matmuls
/// in turn).
struct OpDims {
    tokens: u128,
    h: u128,
    tp: u128,
    tsp: u128,
    q: u128,
    kv: u128,
    mlp: u128,
}

impl OpDims {
    fn of(m: &Model, a: &ActivationShape, moe: bool) -> OpDims {
        let tp = a.tp.max(1) as u128;
        let hd = m.head_dim() as u128;
        let mlp = if moe {
            prod(&[m.topk() as u128, m.moe_ffn() as u128])
                .saturating_add(m.shared_expert_ffn() as u128)
        } else {
            m.ffn() as u128
        };
        OpDims {
            tokens: prod(&[a.seq as u128, a.micro_batch as u128]),
            h: m.hidden as u128,
            tp,
            tsp: if a.sp { tp } else { 1 },
            q: prod(&[m.heads as u128, hd]),
            kv: prod(&[m.kv_groups() as u128, hd]),
            mlp,
        }
    }
}

/// The tensors one layer keeps under `recompute op`, PyTorch's per-op selective checkpointing
/// as torchtitan applies it (pytorch/torchtitan@9dec370 torchtitan/parallelisms/
/// parallelize_llama.py:214-276): the block's input (the checkpoint's), the outputs of the
/// odd-numbered `aten.mm` calls — in Llama's order wq, wk, wv, wo, w1, w3, w2 those of wq, wv,
/// w1 and w2 (models/llama/model.py `Attention.forward`, `FeedForward.forward`: w2(silu(w1 x) ·
/// w3 x)) — the attention kernel's output and fp32 log-sum-exp, and every
/// `reduce_scatter_tensor` output (the sequence-parallel outputs of wo and w2 under tp); all
/// 2 bytes an element but the log-sum-exp. Under tp the column-parallel outputs are split by
/// tp and w2's row-parallel output is the whole sequence's partial sum before its reduce-scatter.
pub fn op_checkpoint_bytes(m: &Model, a: &ActivationShape, moe: bool) -> u128 {
    let OpDims {
        tokens,
        h,
        tp,
        tsp,
        q,
        kv,
        mlp,
    } = OpDims::of(m, a, moe);
    let input = prod(&[2, h, tokens]) / tsp;
    // wq, wv, the attention output (2 bytes each) and the log-sum-exp (4 bytes a head).
    let column = prod(&[2, q])
        .saturating_add(prod(&[2, kv]))
        .saturating_add(prod(&[2, q]))
        .saturating_add(prod(&[4, m.heads as u128]))
        .saturating_add(prod(&[2, mlp]));
    let mut kept = input.saturating_add(prod(&[tokens, column]) / tp);
    // SwiGLU's w2 is the 7th matmul and kept: the whole sequence's partial sums under tp
    // (GeLU's second linear is the 6th, re-run). Under tp the two reduce-scatters' outputs too.
    if m.swiglu() {
        kept = kept.saturating_add(prod(&[2, h, tokens]));
    }
    if tp > 1 {
        kept = kept.saturating_add(prod(&[2, 2, h, tokens]) / tp);
    }
    kept
}

/// What `recompute op` re-runs of one layer at its backward, alive beside the kept tensors:
/// the two norms' outputs (and under tp their all-gathered copies, which the column-parallel
/// matmuls read), wk's output, the rotated Q and K, wo's output, and the MLP's even matmul and
/// element-wise outputs: SwiGLU's w3 output, SiLU output and their product, or GeLU's
/// activation and second linear (what the policy does not save, parallelize_llama.py:257-264).
pub fn op_recomputed_bytes(m: &Model, a: &ActivationShape, moe: bool) -> u128 {
    let OpDims {
        tokens,
        h,
        tp,
        tsp,
        q,
        kv,
        mlp,
    } = OpDims::of(m, a, moe);
    let norms = prod(&[4, h, tokens]) / tsp;
    let gathered = if tp > 1 { prod(&[4, h, tokens]) } else { 0 };
    // SwiGLU re-runs w3, the SiLU and the product (ffn each); GeLU the activation (ffn) and
    // the second linear (its whole-sequence output, as wo's).
    let (mlp_inner, mlp_out) = if m.swiglu() { (6, 0) } else { (2, 2) };
    let column = prod(&[2, kv])
        .saturating_add(prod(&[2, q.saturating_add(kv)]))
        .saturating_add(prod(&[mlp_inner, mlp]));
    norms
        .saturating_add(gathered)
        .saturating_add(prod(&[tokens, column]) / tp)
        .saturating_add(prod(&[2 + mlp_out, h, tokens]))
}

/// Input-embedding activations of one microbatch (first stage, chunk 0): token ids (8·s·b) and
/// the embedding dropout mask (s·b·h). // theoretical_memory_usage.py:308-379 (8sbp + sbhp)
pub fn embedding_activation_bytes(m: &Model, a: &ActivationShape) -> u128 {
    let tokens = prod(&[a.seq as u128, a.micro_batch as u128]);
    let tsp = if a.sp { a.tp.max(1) as u128 } else { 1 };
    prod(&[8, tokens]).saturating_add(prod(&[tokens, m.hidden as u128]) / tsp)
}

/// Output activations of one microbatch (last stage, last chunk): final norm and output-layer
/// inputs (4·s·b·h) and the fp32 logits the loss keeps (4·s·b·V/t per copy): one copy for
/// Megatron's vocab-parallel cross entropy, three or four at the backward of PyTorch's
/// (`CrossEntropy::fp32_logit_copies`).
// theoretical_memory_usage.py: s·b·h·4·(1 + V_pad/h) / tp with sp.
pub fn output_activation_bytes(
    m: &Model,
    a: &ActivationShape,
    padded_vocab: u64,
    loss: CrossEntropy,
) -> u128 {
    let tokens = prod(&[a.seq as u128, a.micro_batch as u128]);
    let tp = a.tp.max(1) as u128;
    let tsp = if a.sp { tp } else { 1 };
    let logits = prod(&[4, tokens, padded_vocab as u128]) / tp;
    (prod(&[4, tokens, m.hidden as u128]) / tsp)
        .saturating_add(prod(&[logits, loss.fp32_logit_copies(a.tp)]))
}

/// What PyTorch's `torch.distributed.pipelining` keeps on a pipeline rank beside the layers'
/// activations (`pipeline_runtime torch`; none for Megatron's runtime, which frees a stage's
/// output once sent, schedules.py `deallocate_output_tensor`). From torch/distributed/
/// pipelining/stage.py:
/// - every virtual stage but the first allocates an activation receive buffer for each of the
///   step's microbatches (`_prepare_forward_infra`), every one but the last a gradient receive
///   buffer (`_prepare_backward_infra`): one stage-boundary activation (2·s·b·h/t with sp) each;
/// - a stage other than the last keeps its output of every in-flight microbatch until that
///   microbatch's backward (`fwd_cache`);
/// - the last stage keeps every microbatch's output, the bf16 logits (2·s·b·V/t), until the
///   step ends (`output_chunks`), and at its last backward the input gradient of every
///   microbatch sits on its receive buffers (`.grad`, cleared by `clear_runtime_states`).
///
/// `in_flight` counts the chunk microbatches held at the peak (all chunks).
pub fn pipeline_runtime_bytes(
    model: &Model,
    plan: &MemoryPlan,
    a: &ActivationShape,
    stage: u64,
    in_flight: u64,
    padded_vocab: u64,
) -> u128 {
    if plan.pipeline_runtime != PipelineRuntime::Torch || plan.pp <= 1 {
        return 0;
    }
    let tokens = prod(&[a.seq as u128, a.micro_batch as u128]);
    let tsp = if a.sp { a.tp.max(1) as u128 } else { 1 };
    let boundary = prod(&[2, tokens, model.hidden as u128]) / tsp;
    let microbatches = plan.microbatches.max(1) as u128;
    let chunks = plan.split.vpp.max(1) as u128;
    let (first, last) = (stage == 0, stage + 1 >= plan.pp);
    // Receive buffers: 2 per virtual stage, less the first's activations and the last's
    // gradients.
    let buffers = (2 * chunks).saturating_sub(u128::from(first) + u128::from(last));
    let mut held = prod(&[buffers, microbatches, boundary]);
    // Outputs kept for the in-flight microbatches' backward, but the last virtual stage's
    // (its logits, below).
    let sending = if last {
        ceil_div(prod(&[in_flight as u128, chunks - 1]), chunks)
    } else {
        in_flight as u128
    };
    held = held.saturating_add(prod(&[sending, boundary]));
    if last {
        let logits = prod(&[2, tokens, padded_vocab as u128]) / a.tp.max(1) as u128;
        held = held.saturating_add(prod(&[microbatches, logits.saturating_add(boundary)]));
    }
    held
}

/// Microbatches in flight at a stage's peak: (all chunks, chunk 0, last chunk), as the
/// schedule IR of the plan's pipeline holds them ([`schedule::peak_in_flight`]).
pub fn in_flight(plan: &MemoryPlan, stage: u64) -> (u64, u64, u64) {
    let f = schedule::peak_in_flight(
        &plan.pipeline_shape(),
        u32::try_from(stage).unwrap_or(u32::MAX),
    );
    (f.total, f.first_chunk, f.last_chunk)
}

impl MemoryPlan {
    /// The pipeline this plan runs, as the schedule IR takes it (N = pp, Megatron's default
    /// `microbatch_group_size_per_vp_stage`, model_parallel_config.py:567). Counts beyond
    /// `u32` saturate; validation bounds them far below.
    pub fn pipeline_shape(&self) -> PipelineShape {
        let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let kind = self.schedule.map_or(Kind::NoPipelining, Kind::from);
        let mut shape = PipelineShape::new(
            kind,
            narrow(self.pp.max(1)),
            narrow(self.vpp.max(1)),
            narrow(self.microbatches.max(1)),
        );
        shape.overlap_ep_comm = self.overlap_ep_comm;
        shape.v_memory = self.v_memory;
        shape
    }
}

fn ceil_div(a: u128, b: u128) -> u128 {
    a.div_ceil(b.max(1))
}

fn bytes(v: u128) -> Bytes {
    Bytes(u64::try_from(v).unwrap_or(u64::MAX))
}

/// Decoder layers with routed experts on a stage (all its chunks).
pub fn stage_moe_layers(model: &Model, split: &StageSplit, stage: u64) -> u64 {
    (0..split.vpp.max(1)).fold(0u64, |acc, c| {
        acc.saturating_add(
            model.moe_layers_in(split.first_layer(stage, c), split.chunk_layers(stage, c)),
        )
    })
}

/// The layers of a stage that hold routed experts, from its `[layers, moe_layers, mtp]`: a
/// transformer MoE model's MoE layers and MTP depths (each depth one MoE layer), every layer of
/// a model whose layers are all MoE, and only the `E` layers of a hybrid pattern
/// (megatron/core/ssm/mamba_block.py, `MambaStack.__init__`: only `LayerSymbols.MOE` builds
/// `submodules.moe_layer`; the `M`, `*` and `-` layers hold no expert).
fn stage_expert_layers(model: &Model, [layers, moe_layers, mtp]: [u128; 3]) -> u128 {
    if model.is_hybrid() {
        moe_layers
    } else if model.is_moe() && (model.has_dense_layers() || mtp > 0) {
        moe_layers.saturating_add(mtp)
    } else {
        layers
    }
}

/// A hybrid model's layers of each kind on a stage (all its chunks).
pub fn stage_hybrid_counts(model: &Model, split: &StageSplit, stage: u64) -> HybridCounts {
    let mut c = HybridCounts::default();
    for chunk in 0..split.vpp.max(1) {
        let part = model.hybrid_layers_in(
            split.first_layer(stage, chunk),
            split.chunk_layers(stage, chunk),
        );
        for (a, b) in c.0.iter_mut().zip(part.0) {
            *a = a.saturating_add(b);
        }
    }
    c
}

/// Stored activation bytes of one layer of a hybrid model for one microbatch. Each kind is one
/// sublayer with its pre-norm, so each keeps Korthikanti's per-sublayer replicated 5·s·b·h (norm
/// input 2h, the sublayer's input 2h, dropout mask h; split by sp) and its own inner tensors:
/// - Mamba-2: the `in_proj` output z, x, B, C, dt (2·d_inner + 2·ngroups·d_state + nheads), the
///   scan output y and the gated norm's output (the `out_proj` input), d_inner each, 2 bytes an
///   element and split by tp; the chunked scan recomputes its states in backward (mamba_ssm
///   ops/triton/ssd_combined.py `MambaChunkScanCombinedFn` saves only its inputs and output), so
///   no state is kept;
/// - attention: Q, K, V and the projection input, and flash attention's log-sum-exp;
/// - MLP: the MLP inner activations of `ffn`; MoE: the routed (and shared) experts' as a MoE
///   layer of a transformer.
///
/// Full recompute keeps only the layer input (2·s·b·h, split by sp).
pub fn hybrid_layer_activation_bytes(m: &Model, a: &ActivationShape, kind: HybridLayer) -> u128 {
    let tokens = prod(&[a.seq as u128, a.micro_batch as u128]);
    let h = m.hidden as u128;
    let tp = a.tp.max(1) as u128;
    let tsp = if a.sp { tp } else { 1 };
    if a.recompute == Recompute::Full {
        return prod(&[2, h, tokens]) / tsp;
    }
    let mut replicated = prod(&[tokens, 5, h]) / tsp;
    let re = if a.recompute == Recompute::Selective {
        a.modules
    } else {
        RecomputeModules::default()
    };
    // The sublayer's input is the `ln_out` of a fused norm + linear (Mamba's `in_proj`,
    // attention's QKV, the MLP's first linear: mamba_layer_specs.py, d98e8a64), kept as
    // [`linear_input_bytes`] says; no LoRA target names Mamba's projections.
    let input = match kind {
        HybridLayer::Mamba => linear_input_bytes(a, |_| false),
        HybridLayer::Attention => linear_input_bytes(a, |t| t.qkv),
        HybridLayer::Mlp => linear_input_bytes(a, |t| t.fc1),
        HybridLayer::Moe => 2,
    };
    if input != 2 {
        replicated = replicated
            .saturating_sub(prod(&[tokens, 2, h]) / tsp)
            .saturating_add(prod(&[tokens, input, h]) / tsp);
    }
    let inner = match kind {
        HybridLayer::Mamba => {
            let d_inner = m.mamba_d_inner() as u128;
            let bc = prod(&[2, m.n_groups() as u128, m.ssm_state_size() as u128]);
            let zxbcdt = prod(&[2, d_inner])
                .saturating_add(bc)
                .saturating_add(m.mamba_num_heads() as u128);
            let mut kept = prod(&[2, zxbcdt.saturating_add(prod(&[2, d_inner]))]);
            // `out_proj` keeps the gated norm's output as its input.
            kept = kept
                .saturating_sub(prod(&[2, d_inner]))
                .saturating_add(prod(&[linear_input_bytes(a, |_| false), d_inner]));
            prod(&[tokens, kept]) / tp
        }
        HybridLayer::Attention => {
            let hd = m.head_dim() as u128;
            let qkv = prod(&[4, m.heads as u128, hd]).saturating_add(prod(&[
                4,
                m.kv_groups() as u128,
                hd,
            ]));
            let qkv = kept_proj_input(qkv, prod(&[m.heads as u128, hd]), a, re);
            let mut bytes = prod(&[tokens, qkv]) / tp;
            if matches!(a.recompute, Recompute::None | Recompute::Selective)
                && a.attention != Attention::Unfused
            {
                bytes = bytes.saturating_add(prod(&[4, m.heads as u128, tokens]) / tp);
            } else if a.recompute == Recompute::None {
                bytes =
                    bytes.saturating_add(prod(&[5, m.heads as u128, a.seq as u128, tokens]) / tp);
            }
            bytes
        }
        HybridLayer::Mlp => {
            prod(&[tokens, kept_inner_bytes_per_token(m.ffn(), m.swiglu(), a)]) / tp
        }
        HybridLayer::Moe => {
            // A transformer MoE layer's bytes less its attention part and its 5h of the
            // attention sublayer's replicated tensors.
            let full = layer_activation_bytes_of(m, a, true);
            let attention = hybrid_layer_activation_bytes(m, a, HybridLayer::Attention);
            return full.saturating_sub(attention);
        }
    };
    replicated.saturating_add(inner)
}

/// The peak memory of every pipeline stage.
pub fn stage_memory(model: &Model, plan: &MemoryPlan) -> Vec<StageMemory> {
    (0..plan.pp.max(1))
        .map(|r| one_stage(model, plan, r))
        .collect()
}

/// Which parameter copy of a rank [`one_copy`] sizes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ParamCopy {
    /// The rank's one copy (every schedule but DualPipe).
    Only,
    /// DualPipe's forward-direction stage of the rank (its chunk 0).
    Forward,
    /// DualPipe's reverse-direction stage, `stage` = pp − 1 − rank (the rank's chunk 1): its
    /// own weights, gradients and optimizer state, and the embedding or output activations
    /// of its microbatches; the layer activations of every in-flight microbatch are counted
    /// once, with the forward copy.
    Reverse,
}

/// The peak memory of one pipeline stage. DualPipe's rank r holds two parameter copies,
/// stage r and stage pp − 1 − r (DeepSeek-V3 technical report §3.2.1: "DualPipe requires
/// keeping two copies of the model parameters"; deepseek-ai/DualPipe 3da1bbea5360
/// dualpipe.py:12-21 takes `modules` as a pair): their model states add up.
pub fn one_stage(model: &Model, plan: &MemoryPlan, stage: u64) -> StageMemory {
    if plan.schedule != Some(ScheduleKind::DualPipe) {
        return one_copy(model, plan, stage, ParamCopy::Only);
    }
    let mirrored = plan.pp.max(1).saturating_sub(1).saturating_sub(stage);
    let a = one_copy(model, plan, stage, ParamCopy::Forward);
    let b = one_copy(model, plan, mirrored, ParamCopy::Reverse);
    let sum = |x: Bytes, y: Bytes| Bytes(x.0.saturating_add(y.0));
    let weights = sum(a.weights, b.weights);
    let gradients = sum(a.gradients, b.gradients);
    let optimizer = sum(a.optimizer, b.optimizer);
    let activations = sum(a.activations, b.activations);
    let graph_pool = sum(a.graph_pool, b.graph_pool);
    StageMemory {
        stage,
        layers: a.layers.saturating_add(b.layers),
        params: a.params.saturating_add(b.params),
        expert_params: a.expert_params.saturating_add(b.expert_params),
        trainable_params: a.trainable_params.saturating_add(b.trainable_params),
        weights,
        gradients,
        optimizer,
        activations,
        in_flight: a.in_flight,
        peak: sum(
            sum(sum(weights, gradients), sum(optimizer, activations)),
            graph_pool,
        ),
        offloaded: sum(a.offloaded, b.offloaded),
        graph_pool,
        optimizer_host: sum(a.optimizer_host, b.optimizer_host),
    }
}

/// Whether a stage of `copy` holds the embedding and the output layer. DualPipeV's rank 0
/// holds both (virtual stages 0 and 2·pp − 1, dualpipev.py: the loss is computed on the first
/// rank), and so does ZBV's (parallel_state.py:331 in sail-sg/zero-bubble-pipeline-parallelism
/// 39f2c186a275: with the V schedule the embedding ranks are `[pp_ranks[0]]`); every other
/// schedule (and each DualPipe copy) has them on its first and last stage.
fn ends(plan: &MemoryPlan, stage: u64) -> (bool, bool) {
    let pp = plan.pp.max(1);
    if matches!(
        plan.schedule,
        Some(ScheduleKind::DualPipeV | ScheduleKind::Zbv)
    ) {
        return (stage == 0, stage == 0);
    }
    (stage == 0, stage + 1 == pp)
}

/// The peak memory of one parameter copy on a pipeline stage.
fn one_copy(model: &Model, plan: &MemoryPlan, stage: u64, copy: ParamCopy) -> StageMemory {
    let pp = plan.pp.max(1);
    let tp = plan.tp.max(1) as u128;
    let vocab = padded_vocab(model.vocab, plan.tp);
    let counts = param_counts(model, vocab, pp);
    let per = counts.per_layer;
    let layers = plan.split.layers(stage) as u128;
    let (first, last) = ends(plan, stage);
    let moe_layers = stage_moe_layers(model, &plan.split, stage) as u128;
    let dense_layers = layers.saturating_sub(moe_layers);
    // The MTP depths sit on the last stage, or where a `pipeline_layout` puts them.
    let mtp = if stage == plan.split.mtp_stage() {
        model.mtp_layers() as u128
    } else {
        0
    };

    // A hybrid model's stage: its layers counted by kind (the pattern's positions).
    let hybrid = counts
        .hybrid
        .map(|hp| (hp, stage_hybrid_counts(model, &plan.split, stage)));
    let mut dense = if let Some((hp, c)) = &hybrid {
        ceil_div(hp.sum(c, |p| p.attention.saturating_add(p.mlp)) as u128, tp)
    } else if model.is_moe() && (model.has_dense_layers() || mtp > 0) {
        // Leading dense layers, the MoE layers and the MTP depths (one MoE layer each, with
        // two input norms, the `2h × h` projection and a final norm).
        let d = counts.dense_layer;
        let h = model.hidden as u128;
        let split_of = |p: &super::derive::LayerParams| p.attention as u128 + p.mlp as u128;
        ceil_div(
            prod(&[split_of(&d), dense_layers])
                .saturating_add(prod(&[split_of(&per), moe_layers.saturating_add(mtp)]))
                .saturating_add(prod(&[2, h, h, mtp])),
            tp,
        )
    } else {
        ceil_div(prod(&[per.attention as u128 + per.mlp as u128, layers]), tp)
    };
    let replicated_of =
        |p: &super::derive::LayerParams| p.norms as u128 + p.router as u128 + p.latent as u128;
    // The layers' linear weights (all of `dense` so far): FP8 with `fp8_param_gather`.
    let linear_dense = dense;
    let mut replicated = if let Some((hp, c)) = &hybrid {
        hp.sum(c, |p| {
            p.norms.saturating_add(p.router).saturating_add(p.latent)
        }) as u128
    } else if dense_layers > 0 && model.is_moe() {
        prod(&[replicated_of(&counts.dense_layer), dense_layers])
            .saturating_add(prod(&[replicated_of(&per), moe_layers]))
    } else {
        prod(&[replicated_of(&per), layers])
    };
    if first {
        dense = dense.saturating_add(ceil_div(counts.embedding as u128, tp));
    }
    if last {
        dense = dense.saturating_add(ceil_div(counts.output as u128, tp));
        replicated = replicated.saturating_add(counts.final_norm as u128);
    }
    if mtp > 0 {
        // MTP's layers, norms and latent parts; with pp > 1 and untied embeddings the MTP
        // stage also builds the embedding the MTP input needs (gpt_model.py).
        replicated = replicated.saturating_add(prod(&[
            replicated_of(&per).saturating_add(prod(&[6, model.hidden as u128])),
            mtp,
        ]));
        if pp > 1 && model.untied_embeddings() && !first {
            dense = dense.saturating_add(ceil_div(counts.embedding as u128, tp));
        }
    }
    let expert_shards = prod(&[plan.etp.max(1) as u128, plan.ep.max(1) as u128]);
    let expert_layers = stage_expert_layers(model, [layers, moe_layers, mtp]);
    // A hybrid model's experts are those of its `E` layers.
    let layer_experts = hybrid
        .as_ref()
        .map_or(per.experts, |(hp, _)| hp.moe.experts);
    let expert = ceil_div(prod(&[layer_experts as u128, expert_layers]), expert_shards);
    let local = dense.saturating_add(replicated);

    // One layer's parameters on this GPU: the unit Megatron-FSDP gathers (a MoE layer where
    // the model has them, its largest).
    let unit = ceil_div(split_of_layer(&per), tp)
        .saturating_add(replicated_of(&per))
        .saturating_add(ceil_div(per.experts as u128, expert_shards));
    let trainable = trainable_params(model, plan, stage, [local, expert]);
    let (mut weights, gradients, optimizer) =
        model_state_bytes(plan, [local, expert], trainable, unit);
    let (optimizer, optimizer_host) = offloaded(optimizer, plan.optimizer_offload);
    weights = weights.saturating_sub(fp8_weight_saving(plan, [linear_dense, expert], unit));

    let shape = ActivationShape {
        seq: model.seq / plan.cp.max(1),
        micro_batch: plan.micro_batch,
        tp: plan.tp,
        etp: plan.etp,
        sp: plan.sp,
        recompute: plan.recompute,
        attention: plan.attention,
        moe_load: plan.moe_load,
        modules: plan.recompute_detail.modules,
        quantized_inputs: ActivationShape::quantizes(plan.recipe.gemm),
        frozen_base: plan.lora.map(|l| l.targets),
    };
    let rank = if copy == ParamCopy::Reverse {
        pp.saturating_sub(1).saturating_sub(stage)
    } else {
        stage
    };
    let (units, first_units, last_units) = in_flight(plan, rank);
    // A DualPipe copy's embedding and output activations are those of its own chunk's
    // microbatches.
    let (first_units, last_units) = match copy {
        ParamCopy::Only => (first_units, last_units),
        ParamCopy::Forward => (first_units, first_units),
        ParamCopy::Reverse => (last_units, last_units),
    };
    let layer_units = if copy == ParamCopy::Reverse { 0 } else { units };
    let stage_layers = plan.split.layers(stage) as u128;
    let chunks = plan.split.vpp.max(1) as u128;
    let mut activations = if let Some((_, c)) = &hybrid {
        // The stage's layers of each kind, spread evenly over its in-flight chunk microbatches.
        let per_chunk = HybridLayer::ALL.iter().fold(0u128, |acc, &k| {
            acc.saturating_add(prod(&[
                c.of(k) as u128,
                hybrid_layer_activation_bytes(model, &shape, k),
            ]))
        }) / chunks;
        prod(&[units as u128, per_chunk])
    } else if model.is_moe() && model.has_dense_layers() {
        // The stage's layers of each kind, spread evenly over its in-flight chunk microbatches.
        let per_chunk = prod(&[moe_layers, layer_activation_bytes_of(model, &shape, true)])
            .saturating_add(prod(&[
                dense_layers,
                layer_activation_bytes_of(model, &shape, false),
            ]))
            / (plan.split.vpp.max(1) as u128);
        prod(&[layer_units as u128, per_chunk])
    } else {
        // The in-flight chunk microbatches hold the stage's chunks in turn: each the mean of
        // its chunks' layers (exactly a chunk's layers when the chunks are equal).
        ceil_div(
            prod(&[
                layer_units as u128,
                stage_layers,
                layer_activation_bytes(model, &shape),
            ]),
            chunks,
        )
    };
    if plan.recompute == Recompute::Full && layers > 0 && copy != ParamCopy::Reverse {
        let working = ActivationShape {
            recompute: Recompute::None,
            ..shape
        };
        let whole_layer = if model.is_hybrid() {
            // The largest kind's layer is the one being recomputed at the peak.
            HybridLayer::ALL
                .iter()
                .map(|&k| hybrid_layer_activation_bytes(model, &working, k))
                .max()
                .unwrap_or(0)
        } else {
            layer_activation_bytes(model, &working)
        };
        let rc = full_recompute_counts(&plan.split, stage, plan.recompute_detail);
        if (rc.inputs, rc.whole) != (stage_layers, 0) {
            // Fewer checkpoints than layers (groups, or `block`'s layers kept whole): the
            // input-only bytes above scale to the checkpoints, and each in-flight chunk
            // microbatch keeps its whole layers' activations.
            activations = ceil_div(prod(&[activations, rc.inputs]), stage_layers.max(1));
            activations = activations.saturating_add(ceil_div(
                prod(&[layer_units as u128, rc.whole, whole_layer]),
                chunks,
            ));
        }
        // The layers being recomputed at the peak: one group's.
        activations = activations.saturating_add(prod(&[rc.working, whole_layer]));
    }
    if plan.recompute == Recompute::Op && layers > 0 && copy != ParamCopy::Reverse {
        // The layer whose backward runs re-creates what the policy did not save.
        let moe = model.is_moe() && moe_layers > 0;
        activations = activations.saturating_add(op_recomputed_bytes(model, &shape, moe));
    }
    // Activation offloading and CUDA graph pools: their own terms (offload.rs).
    let layer_microbatches = ceil_div(prod(&[layer_units as u128, stage_layers]), chunks);
    let go = &plan.graphs_offload;
    let offloaded = super::offload::offloaded_at_peak(
        model,
        &shape,
        go,
        plan.split.layers(stage),
        moe_layers as u64,
        layer_microbatches,
    )
    .min(activations);
    activations -= offloaded;
    let graph_pool = super::offload::graph_pool_bytes(model, &shape, go, layer_microbatches);
    if first {
        activations = activations.saturating_add(prod(&[
            first_units as u128,
            embedding_activation_bytes(model, &shape),
        ]));
    }
    if last {
        activations = activations.saturating_add(prod(&[
            last_units as u128,
            output_activation_bytes(model, &shape, vocab, plan.cross_entropy),
        ]));
    }
    if mtp > 0 {
        // Per depth: the 2h concatenated input (2 bytes), one layer, another output layer.
        let depth = prod(&[
            4,
            shape.seq as u128,
            shape.micro_batch as u128,
            model.hidden as u128,
        ])
        .saturating_add(layer_activation_bytes(model, &shape))
        .saturating_add(output_activation_bytes(
            model,
            &shape,
            vocab,
            plan.cross_entropy,
        ));
        activations = activations.saturating_add(prod(&[last_units as u128, mtp, depth]));
    }

    activations = activations.saturating_add(pipeline_runtime_bytes(
        model, plan, &shape, stage, units, vocab,
    ));

    let peak = weights
        .saturating_add(gradients)
        .saturating_add(optimizer)
        .saturating_add(activations)
        .saturating_add(graph_pool);
    StageMemory {
        stage,
        layers: plan.split.layers(stage),
        params: u64::try_from(local).unwrap_or(u64::MAX),
        expert_params: u64::try_from(expert).unwrap_or(u64::MAX),
        trainable_params: u64::try_from(trainable[0].saturating_add(trainable[1]))
            .unwrap_or(u64::MAX),
        weights: bytes(weights),
        gradients: bytes(gradients),
        optimizer: bytes(optimizer),
        activations: bytes(activations),
        in_flight: units,
        peak: bytes(peak),
        offloaded: bytes(offloaded),
        graph_pool: bytes(graph_pool),
        optimizer_host: bytes(optimizer_host),
    }
}

/// The host link an `optimizer_offload` share crosses, per direction: PCIe Gen5 x16, 32 GT/s
/// on 16 lanes, 64 GB/s each way (the NVIDIA H100 datasheet's "PCIe Gen5: 128GB/s" counts both
/// directions). No stdlib cluster states a host link, and no published row runs an offloaded
/// optimizer, so this is the link's peak, not a calibrated figure.
pub const HOST_LINK: venus_base::base::BytesPerSec = venus_base::base::BytesPerSec(64e9);

/// The bytes one step moves over the host link for `host` bytes of offloaded optimizer state:
/// those parameters' gradients down in the main-gradient dtype, then their updated parameters
/// back in the master-weight dtype (hybrid_optimizer.py:97-125 at d98e8a64: `copy_(grad)` to
/// the CPU copies before the step, `gpu_param.data.copy_(param.data)` in the post-step hook).
pub fn offload_traffic(recipe: &Recipe, host: Bytes) -> Bytes {
    let per_param = recipe.optimizer_bytes().max(1);
    let params = host.0 / per_param;
    let moved = recipe.main_grads.bytes() + recipe.master_weights.bytes();
    Bytes(params.saturating_mul(moved))
}

/// The optimizer state split into what stays on the GPU and what `optimizer_offload` moves to
/// host memory: Megatron's `HybridDeviceOptimizer` hands the first `offload_fraction` of the
/// distributed optimizer's shard (by element count) to a CPU optimizer, whose fp32 master
/// copy and moments live in pinned host memory
/// (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:251-276 at d98e8a64; it offloads
/// whole tensors until the threshold, which this model takes as the exact fraction).
pub fn offloaded(optimizer: u128, fraction: Ratio) -> (u128, u128) {
    let fraction = fraction.0;
    if fraction <= 0.0 {
        return (optimizer, 0);
    }
    let host = ((optimizer as f64) * fraction.min(1.0)).round() as u128;
    let host = host.min(optimizer);
    (optimizer - host, host)
}

/// How `recompute full` keeps a stage's layers (all its chunks): checkpointed inputs, layers
/// kept whole, and the layers recomputed together at the backward's peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FullRecomputeCounts {
    pub inputs: u128,
    pub whole: u128,
    pub working: u128,
}

/// Megatron-LM d98e8a64 megatron/core/recompute.py:157-181, per model chunk (a
/// `TransformerBlock`'s `num_layers_per_pipeline_rank`): `uniform` checkpoints the input of
/// each group of `recompute_num_layers` layers (the last group may be shorter) and re-runs a
/// group at a time; `block` checkpoints the first `recompute_num_layers` layers one by one and
/// runs the rest without recompute.
pub fn full_recompute_counts(
    split: &StageSplit,
    stage: u64,
    detail: RecomputeDetail,
) -> FullRecomputeCounts {
    let n = detail.num_layers.max(1);
    let mut c = FullRecomputeCounts {
        inputs: 0,
        whole: 0,
        working: 0,
    };
    for chunk in 0..split.vpp.max(1) {
        let layers = split.chunk_layers(stage, chunk);
        let (inputs, whole, working) = match detail.method {
            RecomputeMethod::Uniform => (layers.div_ceil(n), 0, n.min(layers)),
            RecomputeMethod::Block => {
                let re = n.min(layers);
                (re, layers - re, re.min(1))
            }
        };
        c.inputs = c.inputs.saturating_add(inputs as u128);
        c.whole = c.whole.saturating_add(whole as u128);
        c.working = c.working.max(working as u128);
    }
    c
}

/// Attention and MLP parameters of a layer (split by tp).
fn split_of_layer(p: &super::derive::LayerParams) -> u128 {
    p.attention as u128 + p.mlp as u128
}

/// The parameters that train on one GPU of a stage, (dense and replicated, routed experts):
/// the stage's own with every parameter trained; with LoRA only the adapters of its layers
/// (megatron/core/distributed/distributed_data_parallel.py allocates gradient buffers only for
/// parameters with `requires_grad`, and the optimizer sees only those; Megatron-Bridge's
/// `PEFT.freeze_model` freezes the base, peft/base.py).
pub fn trainable_params(
    model: &Model,
    plan: &MemoryPlan,
    stage: u64,
    base: [u128; 2],
) -> [u128; 2] {
    let Some(lora) = plan.lora else {
        return base;
    };
    let layers = plan.split.layers(stage) as u128;
    let moe_layers = stage_moe_layers(model, &plan.split, stage) as u128;
    let of = |moe: bool| super::derive::adapter_params(model, lora.rank, lora.targets, moe);
    let (dense_layer, moe_layer) = (of(false), of(true));
    let dense_layers = layers.saturating_sub(moe_layers);
    let dense = prod(&[dense_layer.dense as u128, dense_layers])
        .saturating_add(prod(&[moe_layer.dense as u128, moe_layers]));
    let experts = prod(&[moe_layer.experts as u128, moe_layers]);
    let expert_shards = prod(&[plan.etp.max(1) as u128, plan.ep.max(1) as u128]);
    [
        ceil_div(dense, plan.tp.max(1) as u128),
        ceil_div(experts, expert_shards),
    ]
}

/// Weights, gradients and optimizer state of one GPU, from the parameters it holds (`held`:
/// dense and replicated, routed experts), those that train (`trainable`, the same pair) and one
/// layer's parameters (`unit`, Megatron-FSDP's unit).
/// - Weights: every held parameter in the recipe's weight dtype, plus LoRA's adapters. With
///   `fsdp optim_grads_params` they are sharded over dp × cp (experts over expert dp) and two
///   units are unsharded at any time: the one computing and the one prefetched (Megatron-FSDP's
///   double buffer: "Parameters are un-sharded prior to fprop and dgrad ... at least two FSDP
///   units", <https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/megatron_fsdp.md>).
/// - Gradients: the trainable parameters in the main-gradient dtype; sharded with
///   `fsdp optim_grads` and `optim_grads_params`, plus two units' unsharded gradients being
///   reduce-scattered (the same document: "at least two FSDP units worth of un-sharded gradient
///   memory").
/// - Optimizer: master copy and both moments of the trainable parameters, sharded over
///   dp × cp with the distributed optimizer or any FSDP strategy but `no_shard` (Megatron-FSDP
///   v1 runs Megatron's distributed optimizer, arguments.py:1128-1136).
pub fn model_state_bytes(
    plan: &MemoryPlan,
    held: [u128; 2],
    trainable: [u128; 2],
    unit: u128,
) -> (u128, u128, u128) {
    let r = &plan.recipe;
    let dp_cp = prod(&[plan.dp.max(1) as u128, plan.cp.max(1) as u128]);
    let expert_dp = plan.expert_dp.max(1) as u128;
    let shard = |per: u128, [dense, expert]: [u128; 2]| {
        ceil_div(prod(&[per, dense]), dp_cp)
            .saturating_add(ceil_div(prod(&[per, expert]), expert_dp))
    };
    let whole = |per: u128, [dense, expert]: [u128; 2]| prod(&[per, dense.saturating_add(expert)]);
    let fsdp = plan.fsdp.unwrap_or(FsdpStrategy::NoShard);
    let adapters = if plan.lora.is_some() {
        trainable
    } else {
        [0, 0]
    };
    let w = u128::from(r.weights.bytes());
    let g = u128::from(r.main_grads.bytes());
    let o = u128::from(r.optimizer_bytes());
    let optimizer = if plan.distributed_optimizer || fsdp.shards_optimizer() {
        shard(o, trainable)
    } else {
        whole(o, trainable)
    };
    if plan.fsdp_keep_unsharded && fsdp.shards_parameters() {
        let (weights, gradients) = fsdp_kept_unsharded(w, g, held, trainable, adapters);
        return (weights, gradients, optimizer);
    }
    let weights = if fsdp.shards_parameters() {
        shard(w, held)
            .saturating_add(shard(w, adapters))
            .saturating_add(prod(&[2, w, unit]))
    } else {
        whole(w, held).saturating_add(whole(w, adapters))
    };
    let gradients = if fsdp.shards_gradients() {
        let trainable_unit = if plan.lora.is_some() { 0 } else { unit };
        shard(g, trainable).saturating_add(prod(&[2, g, trainable_unit]))
    } else {
        whole(g, trainable)
    };
    (weights, gradients, optimizer)
}

/// Weights and gradients of one GPU whose FSDP units stay unsharded for the whole step
/// (`fsdp_keep_unsharded`), from the bytes per weight and per gradient element, the parameters
/// it holds, those that train, and LoRA's adapters:
/// - every held parameter gathered in the weight dtype: torchtitan builds its FSDP2 units with
///   `reshard_after_forward=False` when pipelining ("For PP, do not reshard after forward to
///   avoid per-microbatch all-gathers", pytorch/torchtitan@9dec370
///   torchtitan/parallelisms/parallelize_llama.py `apply_fsdp`), and the pipeline stage turns
///   `set_reshard_after_backward(False)` on for every backward but the last
///   (pytorch/pytorch v2.6 torch/distributed/pipelining/stage.py
///   `_PipelineStageBase.backward_maybe_with_nosync`); the shard FSDP2 keeps between steps is
///   the fp32 master copy, counted with the optimizer state;
/// - every trainable parameter's gradient unsharded in the main-gradient dtype: the same stage
///   sets `set_requires_gradient_sync(False)` until the last backward, and FSDP2 accumulates
///   the unsharded gradient upcast to the policy's `reduce_dtype` (torch/distributed/
///   _composable/fsdp/_fsdp_param.py `FSDPParam.to_accumulated_grad_if_needed`; torchtitan's
///   `mixed_precision_reduce` is float32), reduce-scattered once, layer by layer, after the
///   last backward. The sharded gradients that reduce-scatter writes replace the unsharded
///   ones layer by layer, so they add at most one layer and are not counted.
pub fn fsdp_kept_unsharded(
    w: u128,
    g: u128,
    [dense, expert]: [u128; 2],
    [t_dense, t_expert]: [u128; 2],
    [a_dense, a_expert]: [u128; 2],
) -> (u128, u128) {
    let held = dense.saturating_add(expert);
    let adapters = a_dense.saturating_add(a_expert);
    let weights = prod(&[w, held.saturating_add(adapters)]);
    let gradients = prod(&[g, t_dense.saturating_add(t_expert)]);
    (weights, gradients)
}

/// The weight bytes `fp8_param_gather` saves on one GPU: the linear weights (`linear`: dense
/// and routed experts) held in the recipe's `linear_weights` instead of `weights`, sharded as
/// [`model_state_bytes`] shards the weights (FSDP's two unsharded units counted whole).
fn fp8_weight_saving(plan: &MemoryPlan, linear: [u128; 2], unit: u128) -> u128 {
    let r = &plan.recipe;
    let per = u128::from(r.weights.bytes().saturating_sub(r.linear_weights.bytes()));
    if per == 0 {
        return 0;
    }
    let fsdp = plan.fsdp.unwrap_or(FsdpStrategy::NoShard);
    let [dense, expert] = linear;
    // Kept unsharded, every linear weight is gathered whole.
    if fsdp.shards_parameters() && !plan.fsdp_keep_unsharded {
        let dp_cp = prod(&[plan.dp.max(1) as u128, plan.cp.max(1) as u128]);
        ceil_div(prod(&[per, dense]), dp_cp)
            .saturating_add(ceil_div(
                prod(&[per, expert]),
                plan.expert_dp.max(1) as u128,
            ))
            .saturating_add(prod(&[2, per, unit]))
    } else {
        prod(&[per, dense.saturating_add(expert)])
    }
}

/// The stage with the highest peak (the first one on ties).
pub fn worst(stages: &[StageMemory]) -> Option<&StageMemory> {
    stages
        .iter()
        .fold(None, |best: Option<&StageMemory>, s| match best {
            Some(b) if b.peak >= s.peak => Some(b),
            _ => Some(s),
        })
}

/// `93.4 GiB`, `80 GiB`: one decimal, trailing `.0` dropped.
pub fn gib(b: Bytes) -> String {
    let s = format!("{:.1}", b.gib());
    let s = s.strip_suffix(".0").map(str::to_string).unwrap_or(s);
    format!("{s} GiB")
}
