//! Plain enums every stage shares: the words of `.venus` enum keys, as data.
//!
//! They live below every stage so that the schedule builders, the engine and lowering can name
//! a schedule, a topology or a precision without depending on the type checker.

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
}

impl ScheduleKind {
    pub fn word(self) -> &'static str {
        match self {
            ScheduleKind::Gpipe => "gpipe",
            ScheduleKind::OneFOneB => "1f1b",
            ScheduleKind::Interleaved => "interleaved",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recompute {
    None,
    Selective,
    Full,
}

impl Recompute {
    pub fn word(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Precision {
    Bf16,
    Fp8,
}

/// A GPU's architecture: it picks the compute model's calibration, so a GPU renamed or
/// written inline is costed exactly as the one it copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GpuArch {
    Ampere,
    Hopper,
    Blackwell,
    /// AMD Instinct MI300 series.
    Cdna3,
}

impl GpuArch {
    pub fn word(self) -> &'static str {
        match self {
            GpuArch::Ampere => "ampere",
            GpuArch::Hopper => "hopper",
            GpuArch::Blackwell => "blackwell",
            GpuArch::Cdna3 => "cdna3",
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

    pub fn word(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }
}
