//! Types and units: resolved items → typed definitions.
//!
//! Input: the resolved (inheritance-merged) items of each definition from `resolve`.
//! Output: [`Model`], [`Gpu`], [`Cluster`], [`Plan`] and [`ScenarioDef`] with every value in
//! its unit newtype, plus E0101–E0103 and E0201–E0204 diagnostics, W0002, and the
//! rack-scale domain errors E0313 and E0314 (`domain`).
//! Invariant: every value keeps the [`Loc`] of the item that wrote it (in the base's file when
//! inherited), so later stages can label the exact span; defaults have no `Loc` (`Opt` is None).

pub mod check;
pub mod domain;
pub mod problem;
pub mod value;

pub use venus_base::base::kinds::{
    Attention, CollectiveAlgorithm, Fabric, GpuArch, LinkKind, Precision, Recompute, ScheduleKind,
    Topology,
};
pub use venus_base::base::units;
pub use venus_base::base::{Bytes, BytesPerSec, Flops, FlopsPerSec, Ratio, Seconds};
use venus_diag::diag::Loc;

/// A value and the place that wrote it.
#[derive(Clone, Debug, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub loc: Loc,
}

impl<T> Spanned<T> {
    pub fn new(value: T, loc: Loc) -> Spanned<T> {
        Spanned { value, loc }
    }
}

/// An optional key: `None` when neither the block nor its bases wrote it.
pub type Opt<T> = Option<Spanned<T>>;

fn or<T: Copy>(v: &Opt<T>, default: T) -> T {
    v.as_ref().map_or(default, |s| s.value)
}

#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub name: String,
    /// The definition's name (or keyword, for inline blocks).
    pub loc: Loc,
    pub hidden: Spanned<u64>,
    pub layers: Spanned<u64>,
    pub heads: Spanned<u64>,
    pub vocab: Spanned<u64>,
    pub seq: Spanned<u64>,
    pub ffn: Opt<u64>,
    pub kv_groups: Opt<u64>,
    pub head_dim: Opt<u64>,
    pub swiglu: Opt<bool>,
    pub untied_embeddings: Opt<bool>,
    pub experts: Opt<u64>,
    pub topk: Opt<u64>,
    pub moe_ffn: Opt<u64>,
    pub shared_expert_ffn: Opt<u64>,
    pub shared_experts: Opt<u64>,
    pub first_k_dense: Opt<u64>,
    pub q_lora_rank: Opt<u64>,
    pub kv_lora_rank: Opt<u64>,
    pub qk_nope_head_dim: Opt<u64>,
    pub qk_rope_head_dim: Opt<u64>,
    pub v_head_dim: Opt<u64>,
    pub mtp_layers: Opt<u64>,
    pub hybrid_override_pattern: Opt<LayoutText>,
    pub mamba_num_heads: Opt<u64>,
    pub mamba_head_dim: Opt<u64>,
    pub ssm_state_size: Opt<u64>,
    pub n_groups: Opt<u64>,
    pub conv_kernel: Opt<u64>,
    pub moe_latent_size: Opt<u64>,
    pub sliding_window: Opt<u64>,
    pub sliding_window_pattern: Opt<u64>,
    pub attention_sinks: Opt<bool>,
    pub qk_norm: Opt<bool>,
    pub routed_groups: Opt<u64>,
    pub topk_groups: Opt<u64>,
    pub moe_layer_freq: Opt<u64>,
    pub expert_bias: Opt<bool>,
    pub load_balancing: Opt<venus_plan::plan::spec::LoadBalancing>,
}

impl Model {
    pub fn ffn(&self) -> u64 {
        or(&self.ffn, self.hidden.value.saturating_mul(4))
    }
    pub fn kv_groups(&self) -> u64 {
        or(&self.kv_groups, self.heads.value)
    }
    pub fn head_dim(&self) -> u64 {
        or(&self.head_dim, self.hidden.value / self.heads.value.max(1))
    }
    pub fn swiglu(&self) -> bool {
        or(&self.swiglu, false)
    }
    pub fn untied_embeddings(&self) -> bool {
        or(&self.untied_embeddings, false)
    }
    pub fn is_moe(&self) -> bool {
        self.experts.is_some()
    }
    pub fn experts(&self) -> u64 {
        or(&self.experts, 0)
    }
    pub fn topk(&self) -> u64 {
        or(&self.topk, if self.is_moe() { 1 } else { 0 })
    }
    pub fn moe_ffn(&self) -> u64 {
        or(&self.moe_ffn, self.ffn())
    }
    pub fn shared_expert_ffn(&self) -> u64 {
        or(&self.shared_expert_ffn, 0)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Gpu {
    pub name: String,
    pub loc: Loc,
    pub peak: Spanned<FlopsPerSec>,
    pub memory: Spanned<Bytes>,
    pub mem_bw: Spanned<BytesPerSec>,
    /// Dense FP8 peak; unset: the GPU has no FP8 tensor cores.
    pub fp8_peak: Opt<FlopsPerSec>,
    /// Dense FP4 peak; unset: the GPU has no FP4 tensor cores.
    pub fp4_peak: Opt<FlopsPerSec>,
    pub arch: Opt<GpuArch>,
    /// A measured GEMM efficiency and size scale; unset: the arch's calibration.
    pub gemm_efficiency: Opt<Ratio>,
    pub gemm_half_dim: Opt<u64>,
    /// Streaming multiprocessors; unset: the arch's ([`GpuArch::default_sms`]).
    pub sms: Opt<u64>,
}

impl Gpu {
    /// The written peak of GEMMs in `precision`, with its location; `None` when the GPU has
    /// no tensor cores for it (E0312).
    pub fn peak_for(&self, precision: Precision) -> Option<Spanned<FlopsPerSec>> {
        match precision {
            Precision::Bf16 => Some(self.peak.clone()),
            Precision::Fp8 => self.fp8_peak.clone(),
            Precision::Fp4 => self.fp4_peak.clone(),
        }
    }
    pub fn arch(&self) -> GpuArch {
        or(&self.arch, GpuArch::Hopper)
    }
}

/// A stdlib GPU as the helps that name alternatives see it (E0312).
#[derive(Clone, Debug, PartialEq)]
pub struct StdlibGpu {
    pub name: String,
    /// The precisions it has tensor cores for (`peak`, `fp8_peak`, `fp4_peak`).
    pub precisions: Vec<Precision>,
    /// Its architecture (the recipes it runs: E0356-E0358).
    pub arch: GpuArch,
}

impl StdlibGpu {
    pub fn of(gpu: &Gpu) -> StdlibGpu {
        StdlibGpu {
            name: gpu.name.clone(),
            precisions: Precision::ALL
                .iter()
                .copied()
                .filter(|&p| gpu.peak_for(p).is_some())
                .collect(),
            arch: gpu.arch(),
        }
    }
}

/// One network dimension. Ranks fill the innermost dim first.
#[derive(Clone, Debug, PartialEq)]
pub struct Dim {
    pub name: Spanned<String>,
    pub topology: Spanned<Topology>,
    /// GPUs along this dim (after `nodes N` for the outermost).
    pub size: Spanned<u64>,
    /// Per GPU per direction.
    pub bandwidth: Spanned<BytesPerSec>,
    /// 0 when not written (then `loc` is the whole item).
    pub latency: Spanned<Seconds>,
    /// Achieved bus bandwidth / link bandwidth (NCCL reaches less than the link's peak);
    /// `None`: 100%.
    pub efficiency: Opt<Ratio>,
    /// The collective algorithm written with `algo DIM WORD`; `None`: the topology's default.
    pub algorithm: Opt<CollectiveAlgorithm>,
    /// What `rail`, `fat_tree` and `sharp` items say about the dim's switches (the default:
    /// one ideal switch). Plain data: nothing after `ty` labels these items.
    pub fabric: Fabric,
    /// The whole `dim` item.
    pub loc: Loc,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    pub name: Option<String>,
    pub loc: Loc,
    pub gpu: Gpu,
    /// The `gpu` item of the cluster.
    pub gpu_loc: Loc,
    /// Innermost first.
    pub dims: Vec<Dim>,
    /// Memory kept back per GPU of this cluster (a plan's `reserve` wins).
    pub reserve: Opt<Bytes>,
    /// The `slow_gpus`, `slow_rank`, `slow_node` and `slow_link` items (stragglers), in source
    /// order.
    pub slow: Vec<Slow>,
    /// Failure rates, checkpoint storage and restart time (the goodput report's inputs).
    pub reliability: Reliability,
}

/// One `slow_*` item: which GPUs, at what speed, with the locations validation labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Slow {
    pub which: venus_plan::plan::straggler::SlowWhich,
    /// The rank, node or fraction argument.
    pub which_loc: Loc,
    pub speed: Spanned<Ratio>,
    /// The whole item.
    pub loc: Loc,
}

impl Slow {
    pub fn spec(&self) -> venus_plan::plan::straggler::SlowSpec {
        venus_plan::plan::straggler::SlowSpec {
            which: self.which,
            speed: self.speed.value,
        }
    }
}

/// The cluster's reliability keys: what interrupts a job and what bringing it back costs.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Reliability {
    pub gpu_mtbf: Opt<Seconds>,
    pub node_mtbf: Opt<Seconds>,
    pub link_mtbf: Opt<Seconds>,
    pub storage_write_bw: Opt<BytesPerSec>,
    pub storage_read_bw: Opt<BytesPerSec>,
    pub restart: Opt<Seconds>,
}

impl Reliability {
    /// Whether any failure rate is written (the goodput report needs one).
    pub fn has_rates(&self) -> bool {
        self.gpu_mtbf.is_some() || self.node_mtbf.is_some() || self.link_mtbf.is_some()
    }
}

impl Cluster {
    /// Product of the dim sizes (saturating: an absurd product is caught by validation).
    pub fn world_size(&self) -> u64 {
        self.dims
            .iter()
            .fold(1u64, |acc, d| acc.saturating_mul(d.size.value))
    }
}

/// VenusSim's step snapshot: forward+backward of one microbatch on one model chunk.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub first: Spanned<Seconds>,
    pub middle: Spanned<Seconds>,
    pub last: Spanned<Seconds>,
    /// Kept for VenusSim (`use_step_snapshot 0`), not replayed.
    pub unused: bool,
    pub loc: Loc,
}

/// Declares [`Plan`]: the fields written by hand, then one `Opt` per plain plan key of
/// `venus_plan::plan_keys!` (the one declaration of those keys).
macro_rules! plan_struct {
    (({ $($custom:tt)* }) $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
        #[derive(Clone, Debug, PartialEq)]
        pub struct Plan {
            $($custom)*
            $( $(#[$doc])* pub $field: Opt<$ty>, )*
        }
    };
}

venus_plan::plan_keys!(plan_struct!({
    pub name: Option<String>,
    pub loc: Loc,
    pub micro_batch: Spanned<u64>,
    pub global_batch: Spanned<u64>,
    pub measured: Option<Measured>,
    /// FSDP sharding strategy (the `fsdp` item's location).
    pub fsdp: Opt<venus_base::base::FsdpStrategy>,
    /// FSDP implementation (`megatron` unless the item names `torch`).
    pub fsdp_impl: Opt<venus_base::base::FsdpImpl>,
    /// Megatron's `--pipeline-model-parallel-layout`, as written.
    pub pipeline_layout: Opt<LayoutText>,
    /// MoE token dispatcher (`moe_dispatcher`, its flex backend included).
    pub moe_dispatcher: Opt<venus_base::base::MoeDispatcher>,
    /// The flex backend word of the `moe_dispatcher` item, when one is written.
    pub moe_backend: Opt<venus_base::base::FlexBackend>,
    /// `cp_comm a2a_p2p A`: the a2a group size A (its count's location).
    pub cp_a2a: Opt<u64>,
    /// The parts per-layer graphs capture (`cuda_graphs`' later words; the item's location).
    pub cuda_graph_modules: Opt<venus_base::base::CudaGraphModules>,
    /// `venussim "SECTION.FIELD" "JSON"` items, in written order.
    pub venussim: Vec<VenusSimItem>,
}));

/// One `venussim` item: its two strings, each with its location.
#[derive(Clone, Debug, PartialEq)]
pub struct VenusSimItem {
    pub path: Spanned<String>,
    pub json: Spanned<String>,
    pub loc: Loc,
}

/// A `pipeline_layout` string: its text and whether offsets into it are offsets into the
/// source (no escapes were resolved), from one past the opening quote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutText {
    pub text: String,
    pub raw: bool,
}

impl Plan {
    pub fn flag(v: &Opt<bool>) -> bool {
        or(v, false)
    }
}

/// `ty::Plan`'s accessors of the keys with a plain default: the value as written, else the
/// default of `venus_plan::plan::spec::defaults`, which the plan key list declares once.
macro_rules! plan_default_accessors {
    (() $( $(#[$doc:meta])* $variant:ident = $entry:expr => $field:ident : $ty:ty, $how:ident
        $(, default($dk:ident $(($dv:expr))?, $dt:literal))? ; )*) => {
        impl Plan {
            $( $(
                #[doc = concat!("`", stringify!($field), "` as written, else its default: ", $dt, ".")]
                pub fn $field(&self) -> $ty {
                    self.$field
                        .as_ref()
                        .map_or_else(venus_plan::plan::spec::defaults::$field, |s| s.value)
                }
            )? )*
        }
    };
}

venus_base::plan_key_list!([plan_default_accessors]());

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Expect {
    pub iteration_time_max: Opt<Seconds>,
    pub tflops_min: Opt<FlopsPerSec>,
    pub memory_max: Opt<Bytes>,
    pub mfu_min: Opt<Ratio>,
}

/// The scenario's `train` block: a token budget and a price of GPU time.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Train {
    pub tokens: Opt<u64>,
    pub price: Opt<units::DollarsPerGpuHour>,
}

/// A scenario whose model, cluster and plan all type-checked.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioDef {
    pub name: String,
    pub loc: Loc,
    pub model: Model,
    pub cluster: Cluster,
    pub plan: Plan,
    pub expect: Expect,
    pub train: Train,
}

/// A scenario whose definitions had errors, typed from the items that did check (required
/// keys all present), for plan validation to run on in the same run. `failed` lists the keys
/// whose items were rejected (their value is absent, so a default stands in): a plan rule that
/// reads one of them is skipped, so an error is not followed by its own cascade.
#[derive(Clone, Debug, PartialEq)]
pub struct PartialScenario {
    pub def: ScenarioDef,
    pub failed: Vec<venus_syntax::syntax::schema::Key>,
}

impl PartialScenario {
    /// True when the item `key` was rejected (a key belongs to one block kind, so the key
    /// names the definition kind too).
    pub fn failed(&self, key: venus_syntax::syntax::schema::Key) -> bool {
        self.failed.contains(&key)
    }
}
