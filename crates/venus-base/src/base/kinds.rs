//! Plain enums every stage shares: the words of `.venus` enum keys, as data.
//!
//! They live below every stage so that the schedule builders, the engine and lowering can name
//! a schedule, a topology or a precision without depending on the type checker.

use super::units::BytesPerElement;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Topology {
    /// `fc`: every GPU has a direct link to every other.
    FullyConnected,
    /// `ring`: neighbours only.
    Ring,
    /// `switch`: every GPU hangs off one switch.
    Switch,
}

impl Topology {
    pub fn word(self) -> &'static str {
        match self {
            Topology::FullyConnected => "fc",
            Topology::Ring => "ring",
            Topology::Switch => "switch",
        }
    }
}

/// A collective algorithm a dim can be pinned to (`algo DIM WORD` in a cluster).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollectiveAlgorithm {
    Ring,
    Direct,
    HalvingDoubling,
    /// NCCL's double binary tree.
    Tree,
}

/// The link technology of a dim (`link DIM WORD` in a cluster): it gives the dim's efficiency
/// when the `dim` item states none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// NVLink through NVSwitch (`nvswitch`).
    Nvlink,
    /// InfiniBand (one NIC per GPU).
    Infiniband,
}

impl LinkKind {
    /// NCCL's bus bandwidth on large messages as a share of the link's peak (nccl-tests
    /// `all_reduce_perf` busbw without NVLink SHARP, NVIDIA's published DGX results): about
    /// 230 of 300GB/s on DGX A100 NVLink3 and 360 of 450GB/s on DGX H100 NVLink4, i.e. 77-80%,
    /// taken as 80%; about 90% of the line rate across InfiniBand (HDR 22-23 of 25GB/s, NDR 45 of
    /// 50GB/s per GPU). The stdlib clusters write the same figures on their dims.
    pub fn default_efficiency(self) -> f64 {
        match self {
            LinkKind::Nvlink => 0.80,
            LinkKind::Infiniband => 0.90,
        }
    }
}

/// How a dim's switches are built, as a cluster states it; the default is one ideal switch
/// (every pair of the dim at full bandwidth, no in-network reduction).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Fabric {
    /// `rail DIM`: rail-optimized scale-out, each GPU's NIC on the rail switch of its local
    /// index (its coordinates on the dims inside). Traffic between GPUs of the same local index
    /// crosses one switch; other pairs first cross the dims inside (NCCL's PXN), which costs
    /// those bytes once more on the inner dim.
    pub rail: bool,
    /// `fat_tree DIM LEAF SHARE`: a fat tree whose leaf switches each hold `LEAF` coordinates
    /// of the dim, with `SHARE` of the bandwidth between leaves (50% = 2:1 oversubscription).
    /// Traffic of a group or pair whose members sit under more than one leaf moves at
    /// `bandwidth × efficiency × SHARE`.
    pub fat_tree: Option<(u32, f64)>,
    /// `sharp DIM`: in-network reduction (NVLink SHARP on NVSwitch 3 and later, SHARP on
    /// InfiniBand): an all-reduce on the dim sends and receives each byte once.
    pub sharp: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScheduleKind {
    Gpipe,
    OneFOneB,
    Interleaved,
    /// Zero-bubble ZB-H1 (Qi et al., ICLR 2024): 1F1B's warmup, the weight gradient of each
    /// backward deferred by the stage index.
    ZbH1,
    /// Zero-bubble ZB-H2: twice the warmup forwards, every W after its B once the pipe is full.
    ZbH2,
    /// DualPipe (DeepSeek-V3 technical report §3.2.1, deepseek-ai/DualPipe): microbatches fed
    /// from both ends of the pipeline, each rank holding two stages (two parameter copies).
    DualPipe,
    /// DualPipeV: DualPipe's step loop on a V-shaped split of 2·pp stages, one parameter copy.
    DualPipeV,
    /// ZBV, the zero-bubble V schedule (sail-sg/zero-bubble-pipeline-parallelism `zbv.py`): a
    /// greedy, cost-driven order of F, B and W on a V-shaped split of 2·pp stages.
    Zbv,
}

impl ScheduleKind {
    pub fn word(self) -> &'static str {
        match self {
            ScheduleKind::Gpipe => "gpipe",
            ScheduleKind::OneFOneB => "1f1b",
            ScheduleKind::Interleaved => "interleaved",
            ScheduleKind::ZbH1 => "zb_h1",
            ScheduleKind::ZbH2 => "zb_h2",
            ScheduleKind::DualPipe => "dualpipe",
            ScheduleKind::DualPipeV => "dualpipev",
            ScheduleKind::Zbv => "zbv",
        }
    }

    /// The zero-bubble schedules, which run each backward as B (input gradient) and W
    /// (weight gradient).
    pub fn is_zero_bubble(self) -> bool {
        matches!(self, ScheduleKind::ZbH1 | ScheduleKind::ZbH2)
    }

    /// The DualPipe schedules (two model chunks per rank, one microbatch's forward overlapped
    /// with another's backward).
    pub fn is_dualpipe(self) -> bool {
        matches!(self, ScheduleKind::DualPipe | ScheduleKind::DualPipeV)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recompute {
    None,
    Selective,
    Full,
    /// PyTorch's per-operator selective checkpointing as torchtitan applies it to each
    /// transformer block (`selective_ac_option = "op"`, pytorch/torchtitan@9dec370
    /// torchtitan/parallelisms/parallelize_llama.py:214-276): the block keeps its input, the
    /// output of every other matrix multiply (the 1st, 3rd, 5th, ...) and the attention
    /// kernel's, and re-runs the rest in the backward.
    Op,
}

impl Recompute {
    pub fn word(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
            Recompute::Op => "op",
        }
    }
}

/// The submodules of a transformer layer that `recompute selective` re-runs in the backward
/// (Megatron-LM's `recompute_modules`, megatron/core/transformer/transformer_config.py:560-583
/// at d98e8a64): each drops the tensors saved inside the module and keeps its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RecomputeModules {
    /// `core_attn`: the attention core (scores, softmax, dropout, ·V).
    pub core_attn: bool,
    /// `mlp`: the dense MLP.
    pub mlp: bool,
    /// `moe_act`: the routed experts' activation function (output discarded).
    pub moe_act: bool,
    /// `layernorm`: `input_layernorm` and `pre_mlp_layernorm` (outputs discarded).
    pub layernorm: bool,
    /// `mla_up_proj`: MLA's up projections and RoPE (outputs discarded).
    pub mla_up_proj: bool,
    /// `moe`: the whole MoE layer, its token dispatch and combine included.
    pub moe: bool,
    /// `shared_experts`: the MoE layer's shared experts.
    pub shared_experts: bool,
}

impl RecomputeModules {
    /// Megatron's default when `--recompute-modules` is not given: `["core_attn"]`
    /// (transformer_config.py:1940-1941).
    pub const CORE_ATTN: RecomputeModules = RecomputeModules {
        core_attn: true,
        mlp: false,
        moe_act: false,
        layernorm: false,
        mla_up_proj: false,
        moe: false,
        shared_experts: false,
    };

    /// Every module's word, in Megatron's order.
    pub const WORDS: [&'static str; 7] = [
        "core_attn",
        "mlp",
        "moe_act",
        "layernorm",
        "mla_up_proj",
        "moe",
        "shared_experts",
    ];

    /// The modules named by `words` (unknown words are ignored: the type checker admits only
    /// the seven names).
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> RecomputeModules {
        words
            .into_iter()
            .fold(RecomputeModules::default(), |mut m, w| {
                if let Some(slot) = m.slot(w) {
                    *slot = true;
                }
                m
            })
    }

    fn slot(&mut self, word: &str) -> Option<&mut bool> {
        Some(match word {
            "core_attn" => &mut self.core_attn,
            "mlp" => &mut self.mlp,
            "moe_act" => &mut self.moe_act,
            "layernorm" => &mut self.layernorm,
            "mla_up_proj" => &mut self.mla_up_proj,
            "moe" => &mut self.moe,
            "shared_experts" => &mut self.shared_experts,
            _ => return None,
        })
    }

    /// Whether the module named `word` is on.
    pub fn has(self, word: &str) -> bool {
        let mut m = self;
        m.slot(word).is_some_and(|s| *s)
    }

    /// The modules that are on, in Megatron's order.
    pub fn words(self) -> Vec<&'static str> {
        Self::WORDS.into_iter().filter(|w| self.has(w)).collect()
    }
}

/// Which layers `recompute full` re-runs (Megatron-LM's `recompute_method`,
/// transformer_config.py:543-555): `uniform` checkpoints every group of
/// `recompute_num_layers` layers at its input; `block` recomputes the first
/// `recompute_num_layers` layers of each model chunk and keeps the rest whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecomputeMethod {
    Uniform,
    Block,
}

impl RecomputeMethod {
    pub fn word(self) -> &'static str {
        match self {
            RecomputeMethod::Uniform => "uniform",
            RecomputeMethod::Block => "block",
        }
    }
}

/// The attention kernel the compute model prices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Attention {
    /// FlashAttention: fused, causal (half the score FLOPs), scores never leave SRAM.
    Flash,
    /// Megatron-LM's pre-2023 path: `baddbmm` QKᵀ and `bmm` ·V over the full s × s scores,
    /// with the fused scale-mask-softmax and dropout reading and writing them through HBM.
    Unfused,
    /// FlashAttention-2's kernels (PyTorch's `scaled_dot_product_attention` flash backend,
    /// the flash-attn 2.x package, Megatron-LM's `--attention-backend flash` without
    /// FlashAttention-3): the same fused causal work as [`Attention::Flash`], which is fitted
    /// to Transformer Engine's cuDNN attention, at FlashAttention-2's own efficiency.
    Flash2,
}

/// How the loss is computed from the output layer's logits: what the memory model keeps of
/// them at the loss's backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CrossEntropy {
    /// Megatron-LM's vocab-parallel cross entropy: it keeps the fp32 softmax of the logits and
    /// writes the gradient into that same tensor (megatron/core/tensor_parallel/cross_entropy.py
    /// `_VocabParallelCrossEntropy`), one fp32 copy of the logits.
    VocabParallel,
    /// PyTorch's `torch.nn.functional.cross_entropy` on fp32 logits, as torchtitan calls it
    /// (pytorch/torchtitan@9dec370 train.py:131-134 `loss_fn`). On whole-vocabulary logits
    /// (tp 1) `log_softmax` saves its fp32 output and its backward allocates the input gradient
    /// while the incoming gradient and that output live: three fp32 copies at the loss's
    /// backward. On vocab-sharded logits (tp > 1: torchtitan enables `loss_parallel`, train.py
    /// `enable_loss_parallel`) DTensor's fused backward
    /// (torch/distributed/tensor/parallel/loss.py `_nll_loss_and_log_softmax_backward`) returns
    /// `(grad_input + exp(x)) * grad_output` with `grad_input = zeros_like(x)`: the saved
    /// output, that zeroed gradient, their sum and the product live at once, four copies.
    Torch,
}

impl CrossEntropy {
    pub fn word(self) -> &'static str {
        match self {
            CrossEntropy::VocabParallel => "vocab_parallel",
            CrossEntropy::Torch => "torch",
        }
    }

    /// The fp32 copies of the (vocab-sharded over `tp`) logits alive at the loss's backward.
    pub fn fp32_logit_copies(self, tp: u64) -> u128 {
        match self {
            CrossEntropy::VocabParallel => 1,
            CrossEntropy::Torch if tp > 1 => 4,
            CrossEntropy::Torch => 3,
        }
    }
}

/// The runtime that drives a pipelined plan's schedule (`pipeline_runtime`): what it keeps
/// beside the layers' activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PipelineRuntime {
    /// Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py): a stage's output
    /// is freed once sent (`deallocate_output_tensor`), receive buffers are allocated per
    /// message.
    Megatron,
    /// PyTorch's `torch.distributed.pipelining`, as torchtitan runs it
    /// (torch/distributed/pipelining/stage.py): each stage keeps its output for every
    /// microbatch in flight (`fwd_cache`), allocates an activation and a gradient receive
    /// buffer for every microbatch of the step (`_prepare_forward_infra`,
    /// `_prepare_backward_infra`), and the last stage keeps every microbatch's output, the
    /// logits, until the step ends (`output_chunks`).
    Torch,
}

impl PipelineRuntime {
    pub fn word(self) -> &'static str {
        match self {
            PipelineRuntime::Megatron => "megatron",
            PipelineRuntime::Torch => "torch",
        }
    }
}

/// The number format of a plan's GEMM inputs (`precision` in a plan). A GPU runs a precision
/// only with tensor cores for it (`fp8_peak`, `fp4_peak`; E0312 otherwise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Precision {
    Bf16,
    /// Transformer Engine FP8 (Megatron-LM `--fp8-format`).
    Fp8,
    /// Transformer Engine NVFP4 (Megatron-LM `--fp4-format e2m1 --fp4-recipe nvfp4`): the
    /// GEMM inputs are 4-bit; everything else stays as in BF16.
    Fp4,
}

impl Precision {
    pub const ALL: &'static [Precision] = &[Precision::Bf16, Precision::Fp8, Precision::Fp4];

    pub fn word(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
            Precision::Fp4 => "fp4",
        }
    }

    /// The precision a `precision` word names.
    pub fn from_word(word: &str) -> Option<Precision> {
        Precision::ALL.iter().copied().find(|p| p.word() == word)
    }
}

/// A GPU's architecture: it picks the compute model's calibration, so a GPU renamed or
/// written inline is costed exactly as the one it copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuArch {
    Ampere,
    Hopper,
    /// B200, GB200.
    Blackwell,
    /// B300, GB300 (Blackwell Ultra).
    BlackwellUltra,
    /// L40S, L4 (Ada Lovelace).
    Ada,
    /// AMD Instinct MI300 series (MI300X, MI325X).
    Cdna3,
    /// AMD Instinct MI350 series (MI355X).
    Cdna4,
}

impl GpuArch {
    pub const ALL: &'static [GpuArch] = &[
        GpuArch::Ampere,
        GpuArch::Hopper,
        GpuArch::Blackwell,
        GpuArch::BlackwellUltra,
        GpuArch::Ada,
        GpuArch::Cdna3,
        GpuArch::Cdna4,
    ];

    pub fn word(self) -> &'static str {
        match self {
            GpuArch::Ampere => "ampere",
            GpuArch::Hopper => "hopper",
            GpuArch::Blackwell => "blackwell",
            GpuArch::BlackwellUltra => "blackwell_ultra",
            GpuArch::Ada => "ada",
            GpuArch::Cdna3 => "cdna3",
            GpuArch::Cdna4 => "cdna4",
        }
    }

    /// The arch an `arch` word names.
    pub fn from_word(word: &str) -> Option<GpuArch> {
        GpuArch::ALL.iter().copied().find(|a| a.word() == word)
    }

    /// Whether the analytic compute model has constants of this arch's own, fitted to
    /// published measurements (`cost::Calibration::fitted` holds them; a test keeps the two
    /// in step). The others borrow [`GpuArch::nearest_calibrated`]'s, with W0007.
    pub fn is_calibrated(self) -> bool {
        matches!(
            self,
            GpuArch::Ampere
                | GpuArch::Ada
                | GpuArch::Hopper
                | GpuArch::Blackwell
                | GpuArch::BlackwellUltra
                | GpuArch::Cdna3
                | GpuArch::Cdna4
        )
    }

    /// Streaming multiprocessors (AMD: compute units) of the arch's stdlib GPU, what a GPU
    /// without `sms` has: A100 108 (NVIDIA A100 Tensor Core GPU Architecture whitepaper,
    /// 2020, "108 SMs"), H100 SXM5 132 (NVIDIA H100 Tensor Core GPU Architecture whitepaper,
    /// 2022), B200 148 (CUDA's `multiProcessorCount` on a B200, as PyTorch's
    /// `torch.cuda.get_device_properties` reports it), B300 160 (NVIDIA technical blog "Inside
    /// NVIDIA Blackwell Ultra", 2025: 160 SMs), L40S 142 (NVIDIA Ada GPU Architecture
    /// whitepaper: the L40S's AD102 with 142 SMs), MI300X 304 CUs and MI355X 256 CUs (AMD
    /// Instinct datasheets).
    pub fn default_sms(self) -> u64 {
        match self {
            GpuArch::Ampere => 108,
            GpuArch::Hopper => 132,
            GpuArch::Blackwell => 148,
            GpuArch::BlackwellUltra => 160,
            GpuArch::Ada => 142,
            GpuArch::Cdna3 => 304,
            GpuArch::Cdna4 => 256,
        }
    }

    /// The calibrated arch whose kernels behave most like this one's: the arch itself when
    /// calibrated, which every arch of this release is (Ada's is Ampere's with its own fitted
    /// GEMM asymptote; CDNA3's and CDNA4's are Hopper's scaled by measured matmul efficiency).
    /// An arch added without a fit names its nearest one here, and W0007 says so.
    pub fn nearest_calibrated(self) -> GpuArch {
        match self {
            GpuArch::Ampere => GpuArch::Ampere,
            GpuArch::Ada => GpuArch::Ada,
            GpuArch::Blackwell => GpuArch::Blackwell,
            GpuArch::BlackwellUltra => GpuArch::BlackwellUltra,
            GpuArch::Hopper => GpuArch::Hopper,
            GpuArch::Cdna3 => GpuArch::Cdna3,
            GpuArch::Cdna4 => GpuArch::Cdna4,
        }
    }
}

/// A number format, for the bytes a tensor takes in memory or on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
}

impl Dtype {
    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::Fp32 => 4,
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp8 => 1,
        }
    }

    /// Bytes per element as the analytic traffic model reads them ([`Dtype::bytes`], typed).
    pub fn width(self) -> BytesPerElement {
        BytesPerElement(self.bytes() as f64)
    }

    pub fn word(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }
}

/// What an iteration trains (`task` in a plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Task {
    /// Every parameter is trained.
    #[default]
    Pretrain,
    /// Supervised fine-tuning: every parameter is trained, as in pretraining (packed sequences
    /// need nothing else).
    Sft,
    /// Low-rank adapters on a frozen base (Megatron-Bridge `peft.LoRA`).
    Lora,
}

impl Task {
    pub fn word(self) -> &'static str {
        match self {
            Task::Pretrain => "pretrain",
            Task::Sft => "sft",
            Task::Lora => "lora",
        }
    }
}

/// The linear layers of a transformer layer a LoRA adapter can target, named as Megatron-Core's
/// modules (Megatron-Bridge `peft/lora.py` `target_modules`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoraTargets {
    /// `linear_qkv`: the fused query/key/value projection (column-parallel).
    pub qkv: bool,
    /// `linear_proj`: the attention output projection (row-parallel).
    pub proj: bool,
    /// `linear_fc1`: the MLP up (and gate) projection (column-parallel).
    pub fc1: bool,
    /// `linear_fc2`: the MLP down projection (row-parallel).
    pub fc2: bool,
}

impl LoraTargets {
    /// Megatron-Bridge's default: every linear layer of the block.
    pub const ALL: LoraTargets = LoraTargets {
        qkv: true,
        proj: true,
        fc1: true,
        fc2: true,
    };
    pub const NONE: LoraTargets = LoraTargets {
        qkv: false,
        proj: false,
        fc1: false,
        fc2: false,
    };

    /// The targets that are on, as their module names, in Megatron-Core's order.
    pub fn words(self) -> Vec<&'static str> {
        [
            (self.qkv, "linear_qkv"),
            (self.proj, "linear_proj"),
            (self.fc1, "linear_fc1"),
            (self.fc2, "linear_fc2"),
        ]
        .into_iter()
        .filter_map(|(on, w)| on.then_some(w))
        .collect()
    }

    /// The targets named by `words` (unknown words are ignored: the type checker admits only
    /// the four module names).
    pub fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> LoraTargets {
        words.into_iter().fold(LoraTargets::NONE, |mut t, w| {
            match w {
                "linear_qkv" => t.qkv = true,
                "linear_proj" => t.proj = true,
                "linear_fc1" => t.fc1 = true,
                "linear_fc2" => t.fc2 = true,
                _ => {}
            }
            t
        })
    }
}

/// Megatron-FSDP's data-parallel sharding strategy (`--data-parallel-sharding-strategy`):
/// what is sharded over the data-parallel ranks (ZeRO stages 0-3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FsdpStrategy {
    /// DDP: nothing sharded.
    NoShard,
    /// ZeRO-1: optimizer state.
    Optim,
    /// ZeRO-2: optimizer state and gradients.
    OptimGrads,
    /// ZeRO-3: optimizer state, gradients and parameters.
    OptimGradsParams,
}

impl FsdpStrategy {
    pub fn word(self) -> &'static str {
        match self {
            FsdpStrategy::NoShard => "no_shard",
            FsdpStrategy::Optim => "optim",
            FsdpStrategy::OptimGrads => "optim_grads",
            FsdpStrategy::OptimGradsParams => "optim_grads_params",
        }
    }
    pub fn shards_optimizer(self) -> bool {
        self >= FsdpStrategy::Optim
    }
    pub fn shards_gradients(self) -> bool {
        self >= FsdpStrategy::OptimGrads
    }
    pub fn shards_parameters(self) -> bool {
        self == FsdpStrategy::OptimGradsParams
    }
}

/// Which FSDP implementation a plan names (`fsdp STRATEGY IMPL`): the two Megatron-LM offers,
/// which differ only in the plans Megatron accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FsdpImpl {
    /// `--use-megatron-fsdp` (per-layer units, megatron/core/distributed/fsdp).
    #[default]
    Megatron,
    /// `--use-torch-fsdp2` (PyTorch's `fully_shard`).
    Torch,
}

/// The MoE token dispatcher (`moe_dispatcher`, Megatron-LM's `--moe-token-dispatcher-type`,
/// megatron/core/transformer/moe/token_dispatcher.py at d98e8a64ddf3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum MoeDispatcher {
    /// `MoEAlltoAllTokenDispatcher` (l.375): all-to-all over ep, all-gather-v / reduce-scatter-v
    /// over the expert tensor-parallel group.
    #[default]
    AllToAll,
    /// `MoEAllGatherTokenDispatcher` (l.233): every token all-gathered over tp_ep (etp × ep),
    /// local selection, the output reduce-scattered back.
    AllGather,
    /// `MoEFlexTokenDispatcher` (l.1809): fused dispatch and combine kernels over tp_ep.
    Flex(FlexBackend),
}

impl MoeDispatcher {
    /// The key's word (and Megatron's `--moe-token-dispatcher-type` value).
    pub fn word(self) -> &'static str {
        match self {
            MoeDispatcher::AllToAll => "alltoall",
            MoeDispatcher::AllGather => "allgather",
            MoeDispatcher::Flex(_) => "flex",
        }
    }
}

/// The flex dispatcher's kernels (`--moe-flex-dispatcher-backend`, transformer_config.py:898).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FlexBackend {
    /// deepseek-ai/DeepEP's normal (high-throughput) kernels, Megatron's default backend.
    #[default]
    DeepEp,
    /// NVIDIA's HybridEP kernels (the `hybrid-ep` branch of DeepEP).
    HybridEp,
}

impl FlexBackend {
    pub fn word(self) -> &'static str {
        match self {
            FlexBackend::DeepEp => "deepep",
            FlexBackend::HybridEp => "hybridep",
        }
    }
}

/// How context-parallel attention exchanges the sequence (`cp_comm`, Megatron-LM's
/// `--cp-comm-type`, megatron/core/transformer/transformer_config.py:1029-1044 at d98e8a64ddf3;
/// the kernels are Transformer Engine's `attention/context_parallel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CpComm {
    /// Ring exchange of K/V blocks, overlapped with attention on the blocks already received.
    #[default]
    P2p,
    /// Ulysses: all-to-all of Q, K, V (heads scattered, sequence gathered) and of the output.
    A2a,
    /// All-gather of the full sequence's K/V before attention (not overlapped).
    AllGather,
    /// Hierarchical: a2a inside groups of the given size, p2p ring between them.
    A2aP2p,
}

impl CpComm {
    /// The key's word.
    pub fn word(self) -> &'static str {
        match self {
            CpComm::P2p => "p2p",
            CpComm::A2a => "a2a",
            CpComm::AllGather => "allgather",
            CpComm::A2aP2p => "a2a_p2p",
        }
    }
    /// Megatron's `--cp-comm-type` value (arguments.py `choices`).
    pub fn megatron(self) -> &'static str {
        match self {
            CpComm::P2p => "p2p",
            CpComm::A2a => "a2a",
            CpComm::AllGather => "all_gather",
            CpComm::A2aP2p => "a2a+p2p",
        }
    }
    pub fn from_word(w: &str) -> Option<CpComm> {
        [CpComm::P2p, CpComm::A2a, CpComm::AllGather, CpComm::A2aP2p]
            .into_iter()
            .find(|c| c.word() == w || c.megatron() == w)
    }
}

/// Transformer Engine's FP8 scaling recipe (`fp8_recipe` in a plan; Megatron-LM
/// `--fp8-recipe`, megatron/core/transformer/transformer_config.py:594-599 at d98e8a64, default
/// `delayed`): how each FP8 GEMM operand gets its scale, which sets the cast traffic around the
/// GEMM (`plan::Recipe::cast_bytes`) and the GPUs that run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fp8Recipe {
    /// One scale per tensor from an amax history (TE `DelayedScaling`).
    Delayed,
    /// One scale per tensor from the tensor's own amax (TE `Float8CurrentScaling`).
    Tensorwise,
    /// One fp32 scale per 1×128 (activations, gradients) or 128×128 (weights) block
    /// (TE `Float8BlockScaling`, DeepSeek-V3's recipe).
    Blockwise,
    /// One E8M0 scale per 32 elements (TE `MXFP8BlockScaling`; Blackwell tensor cores).
    Mxfp8,
}

impl Fp8Recipe {
    pub const ALL: &'static [Fp8Recipe] = &[
        Fp8Recipe::Delayed,
        Fp8Recipe::Tensorwise,
        Fp8Recipe::Blockwise,
        Fp8Recipe::Mxfp8,
    ];

    pub fn word(self) -> &'static str {
        match self {
            Fp8Recipe::Delayed => "delayed",
            Fp8Recipe::Tensorwise => "tensorwise",
            Fp8Recipe::Blockwise => "blockwise",
            Fp8Recipe::Mxfp8 => "mxfp8",
        }
    }

    pub fn from_word(word: &str) -> Option<Fp8Recipe> {
        Fp8Recipe::ALL.iter().copied().find(|r| r.word() == word)
    }
}

/// The FP8 encodings of a recipe (`fp8_format`; Megatron-LM `--fp8-format`,
/// transformer_config.py:587-589): E4M3 everywhere, or E4M3 forward and E5M2 for the
/// gradients (`hybrid`). Both are one byte an element, so the cost is the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fp8Format {
    E4m3,
    Hybrid,
}

impl Fp8Format {
    pub const ALL: &'static [Fp8Format] = &[Fp8Format::E4m3, Fp8Format::Hybrid];

    pub fn word(self) -> &'static str {
        match self {
            Fp8Format::E4m3 => "e4m3",
            Fp8Format::Hybrid => "hybrid",
        }
    }

    pub fn from_word(word: &str) -> Option<Fp8Format> {
        Fp8Format::ALL.iter().copied().find(|f| f.word() == word)
    }
}

/// An enum a plan key names with one word of the key table (`schedule zbv`, `grad_dtype bf16`):
/// how the type checker reads every such key the same way. The table admits only the words of
/// its `Enum` list, and a test in `ty` checks that every one of them maps.
pub trait FromWord: Sized {
    /// The value `word` names; `None` for a word of no value.
    fn from_word(word: &str) -> Option<Self>;
}

/// A set a plan key names with a list of words (`lora_modules linear_qkv linear_proj`).
pub trait FromWords: Sized {
    /// The set of the words named (the key table admits only known words).
    fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self;
}

/// The value among `all` whose `word` is `w`.
fn find_word<T: Copy>(all: &[T], word: impl Fn(T) -> &'static str, w: &str) -> Option<T> {
    all.iter().copied().find(|&v| word(v) == w)
}

impl FromWord for ScheduleKind {
    fn from_word(w: &str) -> Option<Self> {
        use ScheduleKind::*;
        let all = [
            Gpipe,
            OneFOneB,
            Interleaved,
            ZbH1,
            ZbH2,
            DualPipe,
            DualPipeV,
            Zbv,
        ];
        find_word(&all, ScheduleKind::word, w)
    }
}

impl FromWord for Recompute {
    fn from_word(w: &str) -> Option<Self> {
        let all = [
            Recompute::None,
            Recompute::Selective,
            Recompute::Full,
            Recompute::Op,
        ];
        find_word(&all, Recompute::word, w)
    }
}

impl FromWord for RecomputeMethod {
    fn from_word(w: &str) -> Option<Self> {
        let all = [RecomputeMethod::Uniform, RecomputeMethod::Block];
        find_word(&all, RecomputeMethod::word, w)
    }
}

impl Attention {
    pub fn word(self) -> &'static str {
        match self {
            Attention::Flash => "flash",
            Attention::Unfused => "unfused",
            Attention::Flash2 => "flash2",
        }
    }
}

impl FromWord for Attention {
    fn from_word(w: &str) -> Option<Self> {
        let all = [Attention::Flash, Attention::Unfused, Attention::Flash2];
        find_word(&all, Attention::word, w)
    }
}

impl FromWord for PipelineRuntime {
    fn from_word(w: &str) -> Option<Self> {
        let all = [PipelineRuntime::Megatron, PipelineRuntime::Torch];
        find_word(&all, PipelineRuntime::word, w)
    }
}

impl FromWord for CrossEntropy {
    fn from_word(w: &str) -> Option<Self> {
        let all = [CrossEntropy::VocabParallel, CrossEntropy::Torch];
        find_word(&all, CrossEntropy::word, w)
    }
}

impl FromWord for Precision {
    fn from_word(w: &str) -> Option<Self> {
        Precision::from_word(w)
    }
}

impl FromWord for Dtype {
    fn from_word(w: &str) -> Option<Self> {
        let all = [Dtype::Fp32, Dtype::Bf16, Dtype::Fp16, Dtype::Fp8];
        find_word(&all, Dtype::word, w)
    }
}

impl FromWord for Task {
    fn from_word(w: &str) -> Option<Self> {
        find_word(&[Task::Pretrain, Task::Sft, Task::Lora], Task::word, w)
    }
}

impl FromWord for CpComm {
    fn from_word(w: &str) -> Option<Self> {
        CpComm::from_word(w)
    }
}

impl FromWords for RecomputeModules {
    fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        RecomputeModules::from_words(words)
    }
}

impl FromWord for Fp8Recipe {
    fn from_word(w: &str) -> Option<Self> {
        Fp8Recipe::from_word(w)
    }
}

impl FromWord for Fp8Format {
    fn from_word(w: &str) -> Option<Self> {
        Fp8Format::from_word(w)
    }
}

impl FromWord for super::graphs::CudaGraphImpl {
    fn from_word(w: &str) -> Option<Self> {
        super::graphs::CudaGraphImpl::from_word(w)
    }
}

impl FromWords for super::graphs::OffloadModules {
    fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        super::graphs::OffloadModules::from_words(words)
    }
}

impl FromWords for LoraTargets {
    fn from_words<'a>(words: impl IntoIterator<Item = &'a str>) -> Self {
        LoraTargets::from_words(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_arch_and_precision_round_trips_through_its_word() {
        for &a in GpuArch::ALL {
            assert_eq!(GpuArch::from_word(a.word()), Some(a));
        }
        for &p in Precision::ALL {
            assert_eq!(Precision::from_word(p.word()), Some(p));
        }
        for &r in Fp8Recipe::ALL {
            assert_eq!(Fp8Recipe::from_word(r.word()), Some(r));
        }
        for &f in Fp8Format::ALL {
            assert_eq!(Fp8Format::from_word(f.word()), Some(f));
        }
        assert_eq!(GpuArch::from_word("volta"), None);
        assert_eq!(Precision::from_word("fp16"), None);
    }

    #[test]
    fn every_arch_falls_back_to_a_calibrated_one_and_a_calibrated_one_to_itself() {
        for &a in GpuArch::ALL {
            let near = a.nearest_calibrated();
            assert!(near.is_calibrated(), "{a:?} falls back to {near:?}");
            if a.is_calibrated() {
                assert_eq!(near, a);
            }
        }
        assert_eq!(GpuArch::Ada.nearest_calibrated(), GpuArch::Ada);
        assert_eq!(GpuArch::Cdna4.nearest_calibrated(), GpuArch::Cdna4);
        assert_eq!(
            GpuArch::BlackwellUltra.nearest_calibrated(),
            GpuArch::BlackwellUltra
        );
    }
}
