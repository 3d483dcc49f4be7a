//! Activation offloading and CUDA graph pools: the bytes they move off or add to a GPU.
//!
//! Input: the typed model, an [`ActivationShape`] and the plan's [`GraphsOffload`]. Output:
//! per-layer offloaded bytes (shared by the memory model and the compute model's copy time),
//! the bytes a stage's peak no longer holds, and the static buffers CUDA graphs keep.
//! Invariants: integer bytes in saturating `u128`; nothing here changes a figure unless the
//! plan writes `cuda_graphs`, `offload_modules` or `offload_layers`.
//!
//! The model (NVIDIA/Megatron-LM d98e8a64):
//! - Fine-grained offloading (`offload_modules`, transformer_config.py:1323-1342): each named
//!   submodule's saved inputs go to pinned host memory after its forward and come back before
//!   its backward, on their own copy streams
//!   (megatron/core/pipeline_parallel/fine_grained_activation_offload.py;
//!   <https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/fine_grained_activation_offloading.md>, "Offload/Reload Flow").
//!   At a stage's peak every in-flight layer-microbatch but one has its groups on the host:
//!   the one at the backward front is reloaded (the manager also keeps its last groups on the
//!   GPU, "Reserve margin"). `offload_fraction` offloads that share of the groups.
//! - Layer-level offloading (`offload_layers N`, `--cpu-offloading-num-layers`,
//!   model_parallel_config.py:458-475): the whole activations of N layers go to the host
//!   (pp 1 only, transformer_config.py:1891, so one microbatch is in flight).
//! - CUDA graph pools: each per-layer graph is captured once per (layer, microbatch in flight)
//!   (megatron/core/transformer/cuda_graphs.py:2322-2378, `_get_sample_arguments`: one sample
//!   per layer and microbatch, reused only after that microbatch's backward), and each keeps a
//!   static copy of its input in the graph memory pool (cuda_graphs.py:1273-1276,
//!   `alloc_tensor_from_graph_mempool`). The pool therefore holds one layer-input tensor
//!   (`2·s·b·h` bytes, sequence-split with sp) per captured layer per in-flight microbatch.
//!   A full-iteration graph (megatron/core/full_cuda_graph.py) captures the step's own
//!   allocations and keeps only its batch inputs: no extra term here.

use crate::plan::memory::{layer_activation_bytes_of, ActivationShape};
use crate::plan::spec::ModelSpec as Model;
use venus_base::base::{
    BytesPerSec, CudaGraphImpl, CudaGraphModules, GpuArch, OffloadModules, Ratio, Recompute,
};

/// What the plan captures in CUDA graphs and offloads to host memory.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct GraphsOffload {
    pub cuda_graphs: CudaGraphImpl,
    /// The parts per-layer graphs capture (empty: the whole layer).
    pub graph_modules: CudaGraphModules,
    /// Fine-grained offloading's modules (empty: none).
    pub modules: OffloadModules,
    /// The share of eligible groups offloaded, `[0, 1]`.
    pub fraction: Ratio,
    /// Layer-level offloading's layer count (0: none).
    pub layers: u64,
}

impl GraphsOffload {
    /// Whether any activation leaves the GPU.
    pub fn offloads(&self) -> bool {
        (!self.modules.is_empty() && self.fraction.0 > 0.0) || self.layers > 0
    }
}

fn prod(xs: &[u128]) -> u128 {
    xs.iter().fold(1u128, |a, &x| a.saturating_mul(x))
}

/// Bytes one layer's forward saves for its backward in each submodule `modules` names, for one
/// microbatch on one GPU (2-byte activations, the memory model's tensors of
/// [`layer_activation_bytes_of`]): `attn_norm` and `mlp_norm` the norms' inputs (2h per token,
/// sequence-split with sp), `qkv_linear` the QKV input (2h; none when `layernorm` recompute
/// drops it), `core_attn` Q, K and V (`2·(q + 2·kv)` per token over tp; with MLA Q, K of
/// `n·d_qk` and V of `n·d_v`; none when `mla_up_proj` drops them), `attn_proj` the core's
/// output (`2·q`, with MLA `2·n·d_v`), and on a MoE layer `expert_fc1` the dispatched tokens
/// (`2·width` per token copy), `moe_act` the FC1 output (`2·moe_ffn`, twice with SwiGLU),
/// `fused_group_mlp` both and the activation output (none of the three when `moe` recompute
/// reruns the layer, transformer_config.py:2166-2175).
pub fn layer_offload_bytes(
    m: &Model,
    a: &ActivationShape,
    moe: bool,
    modules: OffloadModules,
) -> u128 {
    if modules.is_empty() || a.recompute == Recompute::Full {
        return 0;
    }
    let re = if a.recompute == Recompute::Selective {
        a.modules
    } else {
        Default::default()
    };
    let tokens = prod(&[a.seq as u128, a.micro_batch as u128]);
    let h = m.hidden as u128;
    let tp = a.tp.max(1) as u128;
    let tsp = if a.sp { tp } else { 1 };
    let hd = m.head_dim() as u128;
    let (q, kv) = (
        prod(&[m.heads as u128, hd]),
        prod(&[m.kv_groups() as u128, hd]),
    );
    let (core, proj) = if m.is_mla() {
        let n = m.heads as u128;
        let qk = prod(&[4, n, m.qk_head_dim() as u128]);
        let v = prod(&[2, n, m.v_head_dim() as u128]);
        (
            if re.mla_up_proj {
                0
            } else {
                qk.saturating_add(v)
            },
            v,
        )
    } else {
        (prod(&[2, q]).saturating_add(prod(&[4, kv])), prod(&[2, q]))
    };
    let mut replicated = 0u128;
    let mut split = 0u128;
    if modules.has("attn_norm") {
        replicated += 2 * h;
    }
    if modules.has("qkv_linear") && !re.layernorm {
        replicated += 2 * h;
    }
    if modules.has("mlp_norm") {
        replicated += 2 * h;
    }
    if modules.has("core_attn") {
        split = split.saturating_add(core);
    }
    if modules.has("attn_proj") {
        split = split.saturating_add(proj);
    }
    let mut bytes = (prod(&[tokens, replicated]) / tsp).saturating_add(prod(&[tokens, split]) / tp);
    if moe && !re.moe {
        let etp = a.etp.max(1) as u128;
        let glu: u128 = if m.swiglu() { 2 } else { 1 };
        let fc1_in = prod(&[2, m.expert_width() as u128, etp]);
        let fc1_out = prod(&[2, glu, m.moe_ffn() as u128]);
        let act_out = prod(&[2, m.moe_ffn() as u128]);
        let mut per = 0u128;
        if modules.has("fused_group_mlp") {
            per = fc1_in.saturating_add(fc1_out).saturating_add(act_out);
        } else {
            if modules.has("expert_fc1") {
                per = per.saturating_add(fc1_in);
            }
            if modules.has("moe_act") {
                per = per.saturating_add(fc1_out);
            }
        }
        let mut routed = prod(&[tokens, m.topk() as u128, per]) / tsp;
        if a.moe_load.0 > 1.0 {
            routed = (routed as f64 * a.moe_load.0).min(u128::MAX as f64) as u128;
        }
        bytes = bytes.saturating_add(routed);
    }
    bytes
}

/// The bytes one offloaded layer moves to the host per microbatch, and the share of a stage's
/// layers that offload: fine-grained offloading's groups times `fraction` on every layer, or,
/// with `offload_layers`, the whole activations of that many of the stage's layers.
/// `moe_layers` of the `stage_layers` are MoE layers (a MoE model's leading dense layers have
/// no expert groups); the bytes are their layer-weighted mean.
pub fn layer_offload(
    m: &Model,
    a: &ActivationShape,
    g: &GraphsOffload,
    stage_layers: u64,
    moe_layers: u64,
) -> (f64, f64) {
    if !g.offloads() || stage_layers == 0 {
        return (0.0, 0.0);
    }
    let moe_share = moe_layers.min(stage_layers) as f64 / stage_layers as f64;
    let mixed = |f: &dyn Fn(bool) -> u128| {
        if m.is_moe() {
            moe_share * f(true) as f64 + (1.0 - moe_share) * f(false) as f64
        } else {
            f(false) as f64
        }
    };
    if g.layers > 0 {
        let share = g.layers.min(stage_layers) as f64 / stage_layers as f64;
        return (mixed(&|moe| layer_activation_bytes_of(m, a, moe)), share);
    }
    (
        g.fraction.0 * mixed(&|moe| layer_offload_bytes(m, a, moe, g.modules)),
        1.0,
    )
}

/// The mean bytes one layer of a stage moves to the host per microbatch
/// ([`layer_offload`]'s bytes times its share).
pub fn mean_layer_offload_bytes(
    m: &Model,
    a: &ActivationShape,
    g: &GraphsOffload,
    stage_layers: u64,
    moe_layers: u64,
) -> f64 {
    let (bytes, share) = layer_offload(m, a, g, stage_layers, moe_layers);
    bytes * share
}

/// Bytes a stage's peak no longer holds on the GPU: with fine-grained offloading the mean
/// layer's offloaded bytes for every in-flight layer-microbatch but the one at the backward
/// front; with `offload_layers` its layers' whole activations (one microbatch in flight).
pub fn offloaded_at_peak(
    m: &Model,
    a: &ActivationShape,
    g: &GraphsOffload,
    stage_layers: u64,
    moe_layers: u64,
    layer_microbatches: u128,
) -> u128 {
    let per = mean_layer_offload_bytes(m, a, g, stage_layers, moe_layers);
    if per <= 0.0 {
        return 0;
    }
    let held = if g.layers > 0 {
        stage_layers as f64
    } else {
        layer_microbatches.saturating_sub(1) as f64
    };
    (per * held).min(u128::MAX as f64) as u128
}

/// Whether per-layer graphs capture a layer (any of its parts): the whole layer when no part
/// is named; a hybrid model's layer kinds are all counted as captured when any part is.
pub fn captures_layers(g: &GraphsOffload) -> bool {
    g.cuda_graphs.per_layer()
}

/// The static input buffers per-layer CUDA graphs keep on a stage: one layer input
/// (`2·s·b·h`, sequence-split with sp) per captured part's layer and in-flight
/// layer-microbatch; a layer with both its attention and its MLP captured separately keeps
/// two (each graph has its own input).
pub fn graph_pool_bytes(
    m: &Model,
    a: &ActivationShape,
    g: &GraphsOffload,
    layer_microbatches: u128,
) -> u128 {
    if !captures_layers(g) {
        return 0;
    }
    let graphs_per_layer: u128 = if g.graph_modules.is_empty() {
        1
    } else {
        let mlp_side = ["mlp", "moe", "moe_router"]
            .iter()
            .any(|w| g.graph_modules.has(w));
        let mixer_side = g.graph_modules.has("attn") || g.graph_modules.has("mamba");
        u128::from(mlp_side) + u128::from(mixer_side)
    };
    let tokens = prod(&[a.seq as u128, a.micro_batch as u128]);
    let tsp = if a.sp { a.tp.max(1) as u128 } else { 1 };
    prod(&[
        2,
        m.hidden as u128,
        tokens,
        graphs_per_layer,
        layer_microbatches,
    ]) / tsp
}

/// Bandwidth of one GPU's host link per direction for activation copies: PCIe 4.0 x16 on
/// Ampere and Ada (16 GT/s × 16 lanes, 128b/130b: 31.5 GB/s), PCIe 5.0 x16 on Hopper,
/// Blackwell and the AMD CDNA parts (63 GB/s; PCI-SIG PCIe 5.0 base specification), each at
/// 80 % for DMA payload after packet headers and flow control (256-byte max payload TLPs carry
/// about 90 % payload on the wire; pinned-memory copies measured by CUDA's `bandwidthTest`
/// reach 25-26 GB/s on PCIe 4.0 x16). GB200's NVLink-C2C host link is faster: a plan there
/// overestimates the copy time, never underestimates it.
pub fn host_link_bandwidth(arch: GpuArch) -> BytesPerSec {
    const EFFICIENCY: f64 = 0.8;
    let raw = match arch {
        GpuArch::Ampere | GpuArch::Ada => 31.5e9,
        GpuArch::Hopper
        | GpuArch::Blackwell
        | GpuArch::BlackwellUltra
        | GpuArch::Cdna3
        | GpuArch::Cdna4 => 63.0e9,
    };
    BytesPerSec(raw * EFFICIENCY)
}
