//! The plain-data description of a run: model, GPU, cluster, plan and `expect` bounds, as the
//! stages after validation read them.
//!
//! Input: built once from the type checker's definitions (`plan::validate`), or directly by
//! code (import, tests, bindings) without inventing source locations. Output: the `model`,
//! `cluster`, `plan` and `expect` fields of a [`crate::plan::Scenario`].
//! Invariants: no `Loc`, no `Spanned`; a key the user did not write is `None` and its default
//! comes from the accessor of the same name; names are labels for reports and never change a
//! result (the GPU's calibration comes from [`GpuArch`], not from its name). Where each value was
//! written lives in the side table [`Provenance`].

use venus_base::base::{
    Bytes, BytesPerSec, CollectiveAlgorithm, DollarsPerGpuHour, Fabric, FlopsPerSec, GpuArch,
    Precision, Ratio, Recompute, RecomputeModules, Seconds, Topology,
};
use venus_base::base::{FromWord, FsdpImpl, FsdpStrategy, LoraTargets, Task};
use venus_diag::diag::Loc;

fn or<T: Copy>(v: Option<T>, default: T) -> T {
    v.unwrap_or(default)
}

/// A decoder-only transformer (dense or MoE).
#[derive(Clone, Debug, PartialEq)]
pub struct ModelSpec {
    /// A label for reports.
    pub name: String,
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub vocab: u64,
    pub seq: u64,
    pub ffn: Option<u64>,
    pub kv_groups: Option<u64>,
    pub head_dim: Option<u64>,
    pub swiglu: Option<bool>,
    pub untied_embeddings: Option<bool>,
    pub experts: Option<u64>,
    pub topk: Option<u64>,
    pub moe_ffn: Option<u64>,
    pub shared_expert_ffn: Option<u64>,
    /// Shared experts of `moe_ffn` each (DeepSeek's `n_shared_experts`).
    pub shared_experts: Option<u64>,
    /// Leading dense layers of a MoE model (DeepSeek's `first_k_dense_replace`).
    pub first_k_dense: Option<u64>,
    /// Multi-head latent attention (MLA) dims; `kv_lora_rank` set means MLA.
    pub q_lora_rank: Option<u64>,
    pub kv_lora_rank: Option<u64>,
    pub qk_nope_head_dim: Option<u64>,
    pub qk_rope_head_dim: Option<u64>,
    pub v_head_dim: Option<u64>,
    /// Multi-token prediction depths.
    pub mtp_layers: Option<u64>,
    /// A hybrid model's layers in order (Megatron's `--hybrid-override-pattern`, HF
    /// `hybrid_override_pattern`), one entry per layer; `None`: every layer is a transformer
    /// layer (attention and MLP).
    pub hybrid_pattern: Option<Vec<HybridLayer>>,
    /// Mamba-2 dims (HF Nemotron-H `mamba_num_heads`, `mamba_head_dim`, `ssm_state_size`,
    /// `n_groups`, `conv_kernel`).
    pub mamba_num_heads: Option<u64>,
    pub mamba_head_dim: Option<u64>,
    pub ssm_state_size: Option<u64>,
    pub n_groups: Option<u64>,
    pub conv_kernel: Option<u64>,
    /// Latent MoE (Megatron's `--moe-latent-size`, Nemotron 3 Super): routed experts run on
    /// this width between a down and an up projection.
    pub moe_latent_size: Option<u64>,
    /// Sliding-window attention: keys each query sees, itself included (HF `sliding_window`;
    /// Megatron's `--window-size (w-1,0)`).
    pub sliding_window: Option<u64>,
    /// With a window, every Nth layer (from 1) keeps full attention (Megatron's
    /// `--window-attn-skip-freq N`); `None`: every layer is windowed.
    pub sliding_window_pattern: Option<u64>,
    /// A learned sink logit per head (GPT-OSS `sinks`; Megatron's `--softmax-type learnable`).
    pub attention_sinks: Option<bool>,
    /// Per-head query and key norms (Qwen3 `q_norm`/`k_norm`; Megatron's `--qk-layernorm`).
    pub qk_norm: Option<bool>,
    /// Group-limited routing: the routed experts in this many equal groups (DeepSeek-V3
    /// `n_group`; Megatron's `--moe-router-num-groups`).
    pub routed_groups: Option<u64>,
    /// The groups a token may reach (`topk_group`; `--moe-router-group-topk`).
    pub topk_groups: Option<u64>,
    /// Every Nth layer (from 1) has routed experts (Llama 4's `interleave_moe_layer_step`).
    pub moe_layer_freq: Option<u64>,
    /// Aux-loss-free balancing: a per-expert routing bias (`--moe-router-enable-expert-bias`).
    pub expert_bias: Option<bool>,
    /// The router's load-balancing loss (`--moe-router-load-balancing-type`).
    pub load_balancing: Option<LoadBalancing>,
}

/// The load-balancing loss a MoE router computes (megatron/core/transformer/moe/router.py
/// `TopKRouter.routing`, NVIDIA/Megatron-LM d98e8a64: `_apply_aux_loss`, `_apply_seq_aux_loss`,
/// each only with a coefficient above 0, `--moe-aux-loss-coeff` default 0.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LoadBalancing {
    #[default]
    None,
    /// The switch-transformer loss over the micro-batch's tokens.
    AuxLoss,
    /// DeepSeek-V3's sequence-wise loss: the same over each sequence.
    SeqAuxLoss,
}

impl LoadBalancing {
    /// The key's word (`schema::LOAD_BALANCING`).
    pub fn word(self) -> &'static str {
        match self {
            LoadBalancing::None => "none",
            LoadBalancing::AuxLoss => "aux_loss",
            LoadBalancing::SeqAuxLoss => "seq_aux_loss",
        }
    }
    pub fn from_word(w: &str) -> Option<LoadBalancing> {
        match w {
            "none" => Some(LoadBalancing::None),
            "aux_loss" => Some(LoadBalancing::AuxLoss),
            "seq_aux_loss" => Some(LoadBalancing::SeqAuxLoss),
            _ => None,
        }
    }
}

/// One layer of a hybrid model: a single mixer or MLP with its pre-norm, as Megatron builds
/// each symbol of the pattern (megatron/core/models/hybrid/hybrid_layer_allocation.py
/// `Symbols`, NVIDIA/Megatron-LM d98e8a64): `M` a Mamba-2 layer, `*` an attention layer, `-`
/// a dense MLP layer, `E` a MoE layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HybridLayer {
    Mamba,
    Attention,
    Mlp,
    Moe,
}

impl HybridLayer {
    /// Every kind, in the order [`HybridCounts`] keeps them.
    pub const ALL: [HybridLayer; 4] = [
        HybridLayer::Mamba,
        HybridLayer::Attention,
        HybridLayer::Mlp,
        HybridLayer::Moe,
    ];

    /// The kind of a pattern symbol (`None` for any other character).
    pub fn from_symbol(c: char) -> Option<HybridLayer> {
        match c {
            'M' => Some(HybridLayer::Mamba),
            '*' => Some(HybridLayer::Attention),
            '-' => Some(HybridLayer::Mlp),
            'E' => Some(HybridLayer::Moe),
            _ => None,
        }
    }

    pub fn symbol(self) -> char {
        match self {
            HybridLayer::Mamba => 'M',
            HybridLayer::Attention => '*',
            HybridLayer::Mlp => '-',
            HybridLayer::Moe => 'E',
        }
    }

    fn index(self) -> usize {
        match self {
            HybridLayer::Mamba => 0,
            HybridLayer::Attention => 1,
            HybridLayer::Mlp => 2,
            HybridLayer::Moe => 3,
        }
    }
}

/// Layers of each kind in a range of a hybrid model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HybridCounts(pub [u64; 4]);

impl HybridCounts {
    pub fn of(&self, kind: HybridLayer) -> u64 {
        self.0[kind.index()]
    }
    fn add(&mut self, kind: HybridLayer) {
        self.0[kind.index()] = self.0[kind.index()].saturating_add(1);
    }
}

/// The pattern of a hybrid model as text (`M-M*-`).
pub fn pattern_text(pattern: &[HybridLayer]) -> String {
    pattern.iter().map(|k| k.symbol()).collect()
}

impl ModelSpec {
    pub fn ffn(&self) -> u64 {
        or(self.ffn, self.hidden.saturating_mul(4))
    }
    pub fn kv_groups(&self) -> u64 {
        or(self.kv_groups, self.heads)
    }
    pub fn head_dim(&self) -> u64 {
        or(self.head_dim, self.hidden / self.heads.max(1))
    }
    pub fn swiglu(&self) -> bool {
        or(self.swiglu, false)
    }
    pub fn untied_embeddings(&self) -> bool {
        or(self.untied_embeddings, false)
    }
    pub fn is_moe(&self) -> bool {
        self.experts.is_some()
    }
    pub fn experts(&self) -> u64 {
        or(self.experts, 0)
    }
    pub fn topk(&self) -> u64 {
        or(self.topk, if self.is_moe() { 1 } else { 0 })
    }
    pub fn moe_ffn(&self) -> u64 {
        or(self.moe_ffn, self.ffn())
    }
    /// The shared experts' inner size together, as Megatron's one fused shared MLP
    /// (`--moe-shared-expert-intermediate-size` = n_shared_experts × moe_ffn,
    /// megatron/core/transformer/moe/shared_experts.py): `shared_expert_ffn` plus
    /// `shared_experts × moe_ffn`.
    pub fn shared_expert_ffn(&self) -> u64 {
        or(self.shared_expert_ffn, 0)
            .saturating_add(or(self.shared_experts, 0).saturating_mul(self.moe_ffn()))
    }
    /// Leading dense layers (0 for a dense model: its layers are all dense anyway).
    pub fn first_k_dense(&self) -> u64 {
        or(self.first_k_dense, 0).min(self.layers)
    }
    /// Every Nth layer has routed experts (1: every layer after `first_k_dense`).
    pub fn moe_layer_freq(&self) -> u64 {
        or(self.moe_layer_freq, 1).max(1)
    }
    /// True when decoder layer `i` (from 0) has routed experts.
    // megatron/core/transformer/moe/moe_utils.py `get_moe_layer_wise_logging_tracker` and
    // transformer_config.py `moe_layer_freq`: a pattern [0]*k + [1]*(L-k) for DeepSeek-V3;
    // Llama 4's `interleave_moe_layer_step` N (HF modeling_llama4.py `moe_layers =
    // range(N-1, L, N)`, Megatron-Bridge's `[0]*(N-1)+[1]` pattern): layers N, 2N, … (from 1).
    pub fn is_moe_layer(&self, i: u64) -> bool {
        if let Some(p) = &self.hybrid_pattern {
            return self.is_moe() && p.get(i as usize) == Some(&HybridLayer::Moe);
        }
        self.is_moe()
            && i >= self.first_k_dense()
            && i.saturating_add(1).is_multiple_of(self.moe_layer_freq())
    }
    /// Decoder layers with routed experts among `start..start + n`.
    pub fn moe_layers_in(&self, start: u64, n: u64) -> u64 {
        if !self.is_moe() {
            return 0;
        }
        if self.is_hybrid() {
            return self.hybrid_layers_in(start, n).of(HybridLayer::Moe);
        }
        let end = start.saturating_add(n);
        let lo = start.max(self.first_k_dense()).min(end);
        // Layers i in lo..end with (i + 1) % f == 0: multiples of f in lo+1..=end.
        let f = self.moe_layer_freq();
        end / f - lo / f
    }
    /// A MoE model with dense layers among its decoder layers (`first_k_dense` or
    /// `moe_layer_freq`): its layers are priced and counted by kind.
    pub fn has_dense_layers(&self) -> bool {
        self.is_moe() && !self.is_hybrid() && self.moe_layers_in(0, self.layers) < self.layers
    }
    /// Decoder layers without routed experts (a transformer MoE model's dense layers).
    pub fn dense_layers(&self) -> u64 {
        if self.is_moe() {
            self.layers - self.moe_layers_in(0, self.layers)
        } else {
            self.layers
        }
    }
    /// Routed-expert groups (1 without group-limited routing).
    pub fn routed_groups(&self) -> u64 {
        or(self.routed_groups, 1).max(1)
    }
    /// Groups a token may reach (all of them without `topk_groups`).
    pub fn topk_groups(&self) -> u64 {
        or(self.topk_groups, self.routed_groups()).clamp(1, self.routed_groups())
    }
    pub fn expert_bias(&self) -> bool {
        or(self.expert_bias, false)
    }
    pub fn load_balancing(&self) -> LoadBalancing {
        or(self.load_balancing, LoadBalancing::None)
    }
    /// Multi-head latent attention (MLA): `kv_lora_rank` is written.
    pub fn is_mla(&self) -> bool {
        self.kv_lora_rank.is_some()
    }
    pub fn q_lora_rank(&self) -> u64 {
        or(self.q_lora_rank, 0)
    }
    pub fn kv_lora_rank(&self) -> u64 {
        or(self.kv_lora_rank, 0)
    }
    pub fn qk_nope_head_dim(&self) -> u64 {
        or(self.qk_nope_head_dim, self.head_dim())
    }
    /// Megatron's `--qk-pos-emb-head-dim` default 64 with MLA; none without.
    pub fn qk_rope_head_dim(&self) -> u64 {
        or(self.qk_rope_head_dim, if self.is_mla() { 64 } else { 0 })
    }
    /// Per-head query and key size: nope + rope with MLA, else `head_dim`.
    pub fn qk_head_dim(&self) -> u64 {
        if self.is_mla() {
            self.qk_nope_head_dim()
                .saturating_add(self.qk_rope_head_dim())
        } else {
            self.head_dim()
        }
    }
    /// Per-head value size: `v_head_dim` with MLA, else `head_dim`.
    pub fn v_head_dim(&self) -> u64 {
        if self.is_mla() {
            or(self.v_head_dim, self.head_dim())
        } else {
            self.head_dim()
        }
    }
    pub fn mtp_layers(&self) -> u64 {
        or(self.mtp_layers, 0)
    }
    /// The width routed experts run on and tokens are dispatched at: `moe_latent_size`, else
    /// hidden (megatron/core/transformer/moe/experts.py, token_dispatcher.py `hidden_dim`).
    pub fn expert_width(&self) -> u64 {
        or(self.moe_latent_size, self.hidden)
    }
    /// True when decoder layer `i` (from 0) runs sliding-window attention: a window is written
    /// and the layer is not one of the pattern's full-attention layers.
    // megatron/core/transformer/utils.py `is_layer_window_attention` (NVIDIA/Megatron-LM
    // d98e8a64): with an int skip frequency, layer_number (from 1) % freq != 0 is windowed.
    pub fn is_window_layer(&self, i: u64) -> bool {
        self.sliding_window.is_some()
            && self
                .sliding_window_pattern
                .is_none_or(|p| p == 0 || !i.saturating_add(1).is_multiple_of(p))
    }
    /// Decoder layers with sliding-window attention among `start..start + n`.
    pub fn window_layers_in(&self, start: u64, n: u64) -> u64 {
        if self.sliding_window.is_none() {
            return 0;
        }
        match self.sliding_window_pattern {
            None | Some(0) => n,
            // Full layers are those whose number (from 1) is a multiple of p.
            Some(p) => n.saturating_sub(start.saturating_add(n) / p - start / p),
        }
    }
    pub fn attention_sinks(&self) -> bool {
        or(self.attention_sinks, false)
    }
    pub fn qk_norm(&self) -> bool {
        or(self.qk_norm, false)
    }
    /// A hybrid model (`hybrid_override_pattern` written).
    pub fn is_hybrid(&self) -> bool {
        self.hybrid_pattern.is_some()
    }
    /// The kind of layer `i` (from 0); a transformer's layers are `None`.
    pub fn hybrid_layer(&self, i: u64) -> Option<HybridLayer> {
        self.hybrid_pattern
            .as_ref()
            .and_then(|p| p.get(usize::try_from(i).ok()?).copied())
    }
    /// Layers of each kind among `start..start + n` of a hybrid model: a pipeline stage holds
    /// the pattern's layers at its positions (hybrid_layer_allocation.py `select_pipeline_segment`).
    pub fn hybrid_layers_in(&self, start: u64, n: u64) -> HybridCounts {
        let mut c = HybridCounts::default();
        let Some(p) = &self.hybrid_pattern else {
            return c;
        };
        let lo = usize::try_from(start).unwrap_or(usize::MAX).min(p.len());
        let hi = usize::try_from(start.saturating_add(n))
            .unwrap_or(usize::MAX)
            .min(p.len());
        for &k in &p[lo..hi] {
            c.add(k);
        }
        c
    }
    /// Mamba-2 head size: Megatron's `--mamba-head-dim` default 64 (arguments.py).
    pub fn mamba_head_dim(&self) -> u64 {
        or(self.mamba_head_dim, 64)
    }
    /// Mamba-2 heads: without `mamba_num_heads`, `d_inner / head_dim` with Megatron's
    /// `expand` 2 (`d_inner = 2·hidden`, megatron/core/ssm/mamba_mixer.py `MambaMixer`).
    pub fn mamba_num_heads(&self) -> u64 {
        or(
            self.mamba_num_heads,
            self.hidden.saturating_mul(2) / self.mamba_head_dim().max(1),
        )
    }
    /// The mixer's inner size `d_inner = nheads · headdim` (mamba_mixer.py).
    pub fn mamba_d_inner(&self) -> u64 {
        self.mamba_num_heads().saturating_mul(self.mamba_head_dim())
    }
    /// SSM state size `d_state`: Megatron's `--mamba-state-dim` default 128.
    pub fn ssm_state_size(&self) -> u64 {
        or(self.ssm_state_size, 128)
    }
    /// B/C groups `ngroups`: Megatron's `--mamba-num-groups` default 8.
    pub fn n_groups(&self) -> u64 {
        or(self.n_groups, 8)
    }
    /// Causal convolution width `d_conv`: 4 in Megatron's `MambaMixer` (HF `conv_kernel`).
    pub fn conv_kernel(&self) -> u64 {
        or(self.conv_kernel, 4)
    }
}

/// One GPU model.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuSpec {
    /// A label for reports and messages.
    pub name: String,
    /// Picks the compute model's calibration.
    pub arch: GpuArch,
    /// Dense BF16 peak.
    pub peak: FlopsPerSec,
    pub memory: Bytes,
    pub mem_bw: BytesPerSec,
    /// Dense FP8 peak; `None`: no FP8 tensor cores.
    pub fp8_peak: Option<FlopsPerSec>,
    /// Dense FP4 peak; `None`: no FP4 tensor cores.
    pub fp4_peak: Option<FlopsPerSec>,
    /// Measured GEMM constants that replace the arch's calibration where written.
    pub gemm: GemmFit,
    /// Streaming multiprocessors (compute units), at least 1.
    pub sms: u64,
}

/// A GPU's own GEMM efficiency curve (`gemm_efficiency`, `gemm_half_dim`), as `venusc
/// calibrate` fits it from measured GEMMs; `None` keeps the arch's calibrated value.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GemmFit {
    pub efficiency: Option<Ratio>,
    pub half_dim: Option<u64>,
}

impl GpuSpec {
    /// The GPU's SMs and those left to compute while a communication kernel holds
    /// `comm_sms` of them (at least one left).
    pub fn sms_beside(&self, comm_sms: u64) -> (u64, u64) {
        let sms = self.sms.max(1);
        (sms, sms.saturating_sub(comm_sms).max(1))
    }

    /// How much slower compute runs while a communication kernel holds `comm_sms` of the
    /// GPU's SMs: `sms / (sms − comm_sms)`, the compute kernels' waves spread over the SMs
    /// left ([`GpuSpec::sms_beside`]).
    pub fn slowdown_beside(&self, comm_sms: u64) -> f64 {
        let (all, left) = self.sms_beside(comm_sms);
        all as f64 / left as f64
    }

    /// The dense tensor-core peak of GEMMs in `precision`; `None` when the GPU has no units
    /// for it (E0312 rejects such a plan before it gets here).
    pub fn peak_for(&self, precision: Precision) -> Option<FlopsPerSec> {
        match precision {
            Precision::Bf16 => Some(self.peak),
            Precision::Fp8 => self.fp8_peak,
            Precision::Fp4 => self.fp4_peak,
        }
    }
}

/// One network dimension. Ranks fill the innermost dim first.
#[derive(Clone, Debug, PartialEq)]
pub struct DimSpec {
    /// A label for messages and reports.
    pub name: String,
    pub topology: Topology,
    /// GPUs along this dim (after `nodes N` for the outermost).
    pub size: u64,
    /// Per GPU per direction.
    pub bandwidth: BytesPerSec,
    pub latency: Seconds,
    /// Achieved bus bandwidth / link bandwidth; `None`: 100%.
    pub efficiency: Option<Ratio>,
    /// `None`: the topology's default algorithm.
    pub algorithm: Option<CollectiveAlgorithm>,
    /// Rails, fat-tree oversubscription and in-network reduction, as the cluster states them.
    pub fabric: Fabric,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSpec {
    /// A label for reports (`None` for an inline cluster).
    pub name: Option<String>,
    pub gpu: GpuSpec,
    /// Innermost first.
    pub dims: Vec<DimSpec>,
    /// Memory kept back per GPU as the cluster writes it (a plan's `reserve` wins).
    pub reserve: Option<Bytes>,
    /// The `slow_gpus`, `slow_rank`, `slow_node` and `slow_link` items, in source order
    /// (stragglers).
    pub slow: Vec<super::straggler::SlowSpec>,
    /// Failure rates, checkpoint storage and restart time (`plan::goodput` reads them).
    pub reliability: ReliabilitySpec,
}

/// The cluster's reliability: mean times between failures of each component kind, the
/// checkpoint storage's aggregate bandwidths and the restart time. Validation has checked
/// every written value is above zero (E0335).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ReliabilitySpec {
    pub gpu_mtbf: Option<Seconds>,
    pub node_mtbf: Option<Seconds>,
    pub link_mtbf: Option<Seconds>,
    pub storage_write_bw: Option<BytesPerSec>,
    /// `None`: as `storage_write_bw`.
    pub storage_read_bw: Option<BytesPerSec>,
    /// `None`: 0 s.
    pub restart: Option<Seconds>,
}

impl ClusterSpec {
    /// The slow ranks the `slow_*` items name, each once with its speed, in rank order.
    pub fn slow_ranks(&self) -> Vec<super::straggler::SlowRank> {
        let per_node = self
            .dims
            .iter()
            .rev()
            .skip(1)
            .fold(1u64, |a, d| a.saturating_mul(d.size));
        super::straggler::slow_ranks(&self.slow, self.world_size(), per_node)
    }

    /// The ranks whose scale-out NIC a `slow_link` item slows, each once with the share of
    /// bandwidth it reaches, in rank order.
    pub fn slow_links(&self) -> Vec<super::straggler::SlowRank> {
        super::straggler::slow_links(&self.slow, self.world_size(), self.gpus_per_node())
    }

    /// The GPUs of one coordinate of the outermost dim (a node): the product of the dims
    /// inside it.
    fn gpus_per_node(&self) -> u64 {
        self.dims
            .iter()
            .rev()
            .skip(1)
            .fold(1u64, |a, d| a.saturating_mul(d.size))
    }

    /// Product of the dim sizes (saturating: an absurd product is caught by validation).
    pub fn world_size(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |acc, d| acc.saturating_mul(d.size))
    }
}

/// VenusSim's step snapshot: forward+backward of one microbatch on one model chunk.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeasuredSpec {
    pub first: Seconds,
    pub middle: Seconds,
    pub last: Seconds,
    /// Kept for `--emit venussim` (VenusSim's `use_step_snapshot 0`), not replayed.
    pub unused: bool,
}

/// The plain plan keys of the one list `venus_base::plan_key_list!` (their table entry, field,
/// type, reading and plain default are declared there, once), as the code that expands them
/// reads them: `plan_keys!(callback!(ARGS))` expands to `callback! { ARGS ENTRY* }`, each entry
/// `#[doc]* field: Type = KeyVariant, reading;` with the `hand` keys left out (they are written
/// out by hand beside the expansion: `micro_batch`, `global_batch`, `measured`, `fsdp`,
/// `pipeline_layout`, `venussim`, `moe_dispatcher`, `allow`, and `cp_comm`'s a2a size and
/// `cuda_graphs`' modules, second values of plain keys). `ty::Plan`'s `Opt` fields, their fill
/// in `ty::check`, the `Option` fields of [`PlanSpec`], the copy in `validate::to_plan` and the
/// test builders all expand from it, so a plain plan key is its entry in that list, the code
/// that gives it meaning and its tests.
#[macro_export]
macro_rules! plan_keys {
    ($cb:ident ! $args:tt) => {
        ::venus_base::plan_key_list! { [$crate::plain_plan_entries] (($cb ! $args) []) }
    };
}

/// `plan_keys!`'s filter: moves each plain entry of the list into the accumulator in the shape
/// its callbacks read and drops the `hand` ones, then calls the callback.
#[doc(hidden)]
#[macro_export]
macro_rules! plain_plan_entries {
    ((($cb:ident ! $args:tt) [$($acc:tt)*])) => {
        $cb! { $args $($acc)* }
    };
    ((($cb:ident ! $args:tt) [$($acc:tt)*])
     $(#[$doc:meta])* $variant:ident = $entry:expr => $field:ident : $ty:ty, hand; $($rest:tt)*) => {
        $crate::plain_plan_entries! { (($cb ! $args) [$($acc)*]) $($rest)* }
    };
    ((($cb:ident ! $args:tt) [$($acc:tt)*])
     $(#[$doc:meta])* $variant:ident = $entry:expr => $field:ident : $ty:ty, $how:ident
     $(, default($($default:tt)*))?; $($rest:tt)*) => {
        $crate::plain_plan_entries! {
            (($cb ! $args) [$($acc)* $(#[$doc])* $field: $ty = $variant, $how;]) $($rest)*
        }
    };
}

/// Declares [`PlanSpec`]: the fields written by hand, then one `Option` per plain key.
macro_rules! plan_spec_struct {
    (({ $($custom:tt)* }) $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
        /// The plan as written (the validated, resolved values are fields of `Scenario`).
        #[derive(Clone, Debug, PartialEq)]
        pub struct PlanSpec {
            $($custom)*
            $( $(#[$doc])* pub $field: Option<$ty>, )*
        }
    };
}

plan_keys!(plan_spec_struct!({
    /// A label (`None` for an inline plan).
    pub name: Option<String>,
    pub micro_batch: u64,
    pub global_batch: u64,
    pub measured: Option<MeasuredSpec>,
    /// Megatron-FSDP sharding strategy (`None`: no FSDP, Megatron's DDP).
    pub fsdp: Option<FsdpStrategy>,
    pub fsdp_impl: Option<FsdpImpl>,
    /// Megatron's `--pipeline-model-parallel-layout` string, as written.
    pub pipeline_layout: Option<String>,
    /// VenusSim config fields kept for `--emit venussim`, in written order; never simulated.
    pub venussim: Vec<super::venussim::VenusSimField>,
    /// MoE token dispatcher (`None`: alltoall).
    pub moe_dispatcher: Option<venus_base::base::MoeDispatcher>,
    /// `cp_comm a2a_p2p A`: ranks of each a2a group (Megatron's first
    /// `--hierarchical-context-parallel-sizes` entry).
    pub cp_a2a: Option<u64>,
    /// The parts per-layer graphs capture (`None`: the whole layer).
    pub cuda_graph_modules: Option<venus_base::base::CudaGraphModules>,
}));

/// Declares [`PlanSpec::written_keys`]: each plain key, in key-table order, with its value as
/// the plan writes it (read back by its reading: a count, a flag, one word, a set of words, a
/// size, a ratio or a time).
macro_rules! plan_spec_written {
    ((written) $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
        impl PlanSpec {
            /// Every plain plan key, in key-table order, with its written value as text
            /// (`None`: not written, its default holds). `venusc diff` compares them, so a key
            /// added to the table is compared without a line of its own.
            pub fn written_keys(&self) -> Vec<(&'static str, Option<String>)> {
                vec![ $( (stringify!($field), self.$field.map(|v| plan_spec_written!(@text $how v))), )* ]
            }
        }
    };
    (@text count $v:ident) => { $v.to_string() };
    (@text flag $v:ident) => { if $v { "on" } else { "off" }.to_string() };
    (@text word $v:ident) => { $v.word().to_string() };
    (@text words $v:ident) => { $v.words().join(" ") };
    (@text bytes $v:ident) => { $v.to_string() };
    (@text ratio $v:ident) => { $v.to_string() };
    (@text time $v:ident) => { $v.to_string() };
}

plan_keys!(plan_spec_written!(written));

impl PlanSpec {
    /// The measured times the compute model replays: none when they are kept `unused`.
    pub fn replayed(&self) -> Option<&MeasuredSpec> {
        self.measured.as_ref().filter(|m| !m.unused)
    }
    pub fn flag(v: Option<bool>) -> bool {
        or(v, false)
    }
    /// True when the base weights are frozen and only adapters train (`task lora`).
    pub fn lora(&self) -> bool {
        self.task() == Task::Lora
    }
    /// Megatron-Bridge's `LoRA.target_modules` default: every linear layer of the block.
    pub fn lora_modules(&self) -> LoraTargets {
        or(self.lora_modules, LoraTargets::ALL)
    }
    /// The submodules selective recompute re-runs: Megatron's `["core_attn"]` unless written
    /// (transformer_config.py:1940-1941 at d98e8a64); none without `recompute selective`.
    pub fn recompute_modules(&self) -> RecomputeModules {
        if self.recompute() != Recompute::Selective {
            return RecomputeModules::default();
        }
        or(self.recompute_modules, RecomputeModules::CORE_ATTN)
    }
    pub fn recompute_num_layers(&self) -> u64 {
        or(self.recompute_num_layers, 1).max(1)
    }
    /// FP8 attention runs only inside an FP8 or FP4 autocast (fp8_utils.py:779-787,
    /// fp4_utils.py:225 at d98e8a64 pass `fp8_dpa` into those recipes).
    pub fn fp8_attention(&self) -> bool {
        or(self.fp8_attention, false) && self.precision() != Precision::Bf16
    }
    pub fn moe_dispatcher(&self) -> venus_base::base::MoeDispatcher {
        self.moe_dispatcher.unwrap_or_default()
    }
    /// The parts per-layer graphs capture; empty: the whole layer (or no graphs).
    pub fn cuda_graph_modules(&self) -> venus_base::base::CudaGraphModules {
        self.cuda_graph_modules.unwrap_or_default()
    }
    /// Fine-grained activation offloading's modules (empty: off).
    pub fn offload_modules(&self) -> venus_base::base::OffloadModules {
        self.offload_modules.unwrap_or_default()
    }
    /// `--activation-offload-fraction`, Megatron's default 1.0 (transformer_config.py:1358).
    pub fn offload_fraction(&self) -> Ratio {
        Ratio(self.offload_fraction.map_or(1.0, |r| r.0.clamp(0.0, 1.0)))
    }
    /// The share of the optimizer state (master weights and moments) Megatron's
    /// `HybridDeviceOptimizer` keeps on the host: `--optimizer-offload-fraction` of the
    /// parameters by element count (megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py:251-276
    /// at d98e8a64); 0 unless written.
    pub fn optimizer_offload(&self) -> Ratio {
        Ratio(self.optimizer_offload.map_or(0.0, |r| r.0.clamp(0.0, 1.0)))
    }
    pub fn fsdp_impl(&self) -> FsdpImpl {
        or(self.fsdp_impl, FsdpImpl::Megatron)
    }
    /// The busiest EP rank's token copies over the mean: 1 + `moe_imbalance` (1: balanced,
    /// Megatron-Bridge's force-balanced benchmark routing).
    ///
    /// A capacity factor `c` (1 + `moe_capacity_headroom`) caps every expert at `c` × the
    /// balanced load, the tokens above it
    /// dropped, and with `moe_pad_to_capacity` every expert computes and receives exactly `c`
    /// × (megatron/core/transformer/moe/moe_utils.py `get_capacity`: ⌈tokens·topk / experts ×
    /// c⌉; token_dispatcher.py `drop_and_pad` sizes every local expert's input at the
    /// capacity, NVIDIA/Megatron-LM d98e8a64).
    pub fn moe_load_factor(&self) -> Ratio {
        let routed = 1.0 + self.moe_imbalance.map_or(0.0, |r| r.0.max(0.0));
        Ratio(
            match self.moe_capacity_headroom.map(|c| 1.0 + c.0.max(0.0)) {
                None => routed,
                Some(c) if PlanSpec::flag(self.moe_pad_to_capacity) => c,
                Some(c) => routed.min(c),
            },
        )
    }
}

/// The plain defaults of `venus_base::plan_key_list!`, one function per key named after it
/// (`defaults::tp() == 1`): the one place a default becomes a value, read by `PlanSpec`'s
/// accessors below and by the type checker's `ty::Plan`. `Count(N)` gives N, `Off` false,
/// `Word("w")` the value of that word. Keys whose default is a rule (another key, a Megatron-LM
/// condition) have none here; their accessors are written by hand in `impl PlanSpec` above.
macro_rules! default_fns {
    (() $( $(#[$doc:meta])* $variant:ident = $entry:expr => $field:ident : $ty:ty, $how:ident
        $(, default($dk:ident $(($dv:expr))?, $dt:literal))? ; )*) => {
        pub mod defaults {
            #[allow(unused_imports)]
            use super::word_default;
            $( $(
                #[doc = concat!("`", stringify!($field), "`'s default: ", $dt, ".")]
                pub fn $field() -> $ty {
                    default_value!($ty, $dk $(($dv))?)
                }
            )? )*
        }

        impl PlanSpec {
            $( $(
                #[doc = concat!("`", stringify!($field), "` as written, else the key table's default: ", $dt, ".")]
                pub fn $field(&self) -> $ty {
                    self.$field.unwrap_or_else(defaults::$field)
                }
            )? )*
        }

        /// The `Word` defaults of the list that name no value of their type (a test keeps it
        /// empty, so the defaults above never fall back).
        #[cfg(test)]
        fn unknown_default_words() -> Vec<&'static str> {
            let mut out = Vec::new();
            $( $( default_word_known!(out, $field, $ty, $dk $(($dv))?); )? )*
            out
        }
    };
}

/// The value of one `default(..)` clause.
macro_rules! default_value {
    ($ty:ty, Count($n:expr)) => {
        $n
    };
    ($ty:ty, Off) => {
        false
    };
    ($ty:ty, Word($w:expr)) => {
        word_default::<$ty>($w)
    };
}

#[cfg(test)]
macro_rules! default_word_known {
    ($out:ident, $field:ident, $ty:ty, Word($w:expr)) => {
        if <$ty as FromWord>::from_word($w).is_none() {
            $out.push(stringify!($field));
        }
    };
    ($out:ident, $field:ident, $ty:ty, $($other:tt)*) => {};
}

/// The value a default word names. Every default word of the list names one, which the test
/// `every_default_word_names_a_value` checks over the whole list, so the arm that stops is
/// unreachable (no user text reaches it: the word is a constant of the list).
fn word_default<T: FromWord>(word: &str) -> T {
    match T::from_word(word) {
        Some(v) => v,
        None => unreachable!("the default word `{word}` of the plan key list names no value"),
    }
}

venus_base::plan_key_list!([default_fns]());

/// The `expect` bounds a scenario's report is checked against (E0501).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ExpectSpec {
    pub iteration_time_max: Option<Seconds>,
    pub tflops_min: Option<FlopsPerSec>,
    pub memory_max: Option<Bytes>,
    pub mfu_min: Option<Ratio>,
}

impl ExpectSpec {
    /// Whether the scenario states any bound (`venusc test` runs only those that do).
    pub fn is_empty(&self) -> bool {
        *self == ExpectSpec::default()
    }
}

/// The scenario's `train` block: a token budget and a price of GPU time, which the report
/// turns into time to train, GPU-hours and cost. Nothing simulated depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct TrainSpec {
    /// Tokens to train on.
    pub tokens: Option<u64>,
    pub price: Option<DollarsPerGpuHour>,
}

/// Where the `expect` bounds were written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ExpectLocs {
    pub iteration_time_max: Option<Loc>,
    pub tflops_min: Option<Loc>,
    pub memory_max: Option<Loc>,
    pub mfu_min: Option<Loc>,
}

/// The side table from a scenario's parts to the source that wrote them, for the consumers
/// that label source (`expect`'s E0501, editors). A scenario built in code has the default
/// (every location in file 0 at offset 0); nothing downstream of validation reads it to decide
/// a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Provenance {
    pub scenario: Loc,
    pub model: Loc,
    pub cluster: Loc,
    pub gpu: Loc,
    pub plan: Loc,
    pub expect: ExpectLocs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_base::base::{CpComm, CudaGraphImpl, Dtype, Fp8Format, Fp8Recipe, RecomputeMethod};

    /// A `PlanSpec` with every key unset.
    macro_rules! unset_spec {
        (() $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
            PlanSpec {
                name: None,
                micro_batch: 1,
                global_batch: 8,
                measured: None,
                fsdp: None,
                fsdp_impl: None,
                pipeline_layout: None,
                venussim: Vec::new(),
                moe_dispatcher: None,
                cp_a2a: None,
                cuda_graph_modules: None,
                $( $field: None, )*
            }
        };
    }

    #[test]
    fn every_default_word_names_a_value() {
        assert_eq!(unknown_default_words(), Vec::<&str>::new());
    }

    #[test]
    fn generated_accessors_give_the_list_defaults_unless_written() {
        let mut p: PlanSpec = crate::plan_keys!(unset_spec!());
        assert_eq!((p.tp(), p.pp(), p.cp(), p.ep(), p.vpp()), (1, 1, 1, 1, 1));
        assert_eq!(
            (p.iterations(), p.lora_rank(), p.offload_layers()),
            (1, 32, 0)
        );
        assert!(!p.sp() && !p.distributed_optimizer() && !p.moe_permute_fusion());
        assert_eq!(p.recompute(), Recompute::None);
        assert_eq!(p.precision(), Precision::Bf16);
        assert_eq!(p.task(), Task::Pretrain);
        assert_eq!(p.recompute_method(), RecomputeMethod::Uniform);
        assert_eq!(p.grad_dtype(), Dtype::Fp32);
        assert_eq!(p.fp8_recipe(), Fp8Recipe::Delayed);
        assert_eq!(p.fp8_format(), Fp8Format::Hybrid);
        assert_eq!(p.cp_comm(), CpComm::P2p);
        assert_eq!(p.cuda_graphs(), CudaGraphImpl::None);
        p.tp = Some(8);
        p.sp = Some(true);
        p.recompute = Some(Recompute::Full);
        assert_eq!((p.tp(), p.sp(), p.recompute()), (8, true, Recompute::Full));
    }
}
