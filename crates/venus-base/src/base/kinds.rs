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
