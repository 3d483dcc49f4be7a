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
        matches!(self, GpuArch::Ampere | GpuArch::Hopper)
    }

    /// The calibrated arch whose kernels behave most like this one's: the arch itself when
    /// calibrated. Blackwell and Blackwell Ultra keep Hopper's asynchronous tensor-core
    /// pipeline (TMA, warp-specialised kernels); Ada's tensor cores are issued like Ampere's
    /// (`mma.sync`, no TMA or `wgmma`); CDNA3/CDNA4 have no NVIDIA counterpart and take
    /// Hopper's, as every non-A100 GPU did before `arch` existed.
    pub fn nearest_calibrated(self) -> GpuArch {
        match self {
            GpuArch::Ampere | GpuArch::Ada => GpuArch::Ampere,
            GpuArch::Hopper
            | GpuArch::Blackwell
            | GpuArch::BlackwellUltra
            | GpuArch::Cdna3
            | GpuArch::Cdna4 => GpuArch::Hopper,
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
        assert_eq!(GpuArch::Ada.nearest_calibrated(), GpuArch::Ampere);
        assert_eq!(
            GpuArch::BlackwellUltra.nearest_calibrated(),
            GpuArch::Hopper
        );
    }
}
