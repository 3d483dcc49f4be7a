//! The simulator's own compute model (used when the plan sets neither `mfu` nor `measured`).
//!
//! Input: a [`Scenario`] and a [`Calibration`]. Output: per-layer forward and backward times of
//! the attention and MLP blocks, embedding and output-layer extras, and the optimizer step.
//!
//! Per layer and microbatch, on one rank (tokens `T = s/cp · b`):
//! - GEMMs at `peak × gemm efficiency(shape)` (the fp8 / fp4 peak with `precision fp8` /
//!   `fp4`, [`venus_plan::plan::GpuSpec::peak_for`]): QKV
//!   `2·T·h·(q + 2·kv)/tp` (grouped-query attention: `kv = kv_groups · head_dim`), output
//!   projection `2·T·q·h/tp`, MLP up (+ gate with SwiGLU) and down `2·T·h·ffn·(3 or 2)/tp`; on a
//!   MoE layer the router `2·T·h·E` and the expert GEMMs over `T·topk` token copies
//!   `2·T·topk·h·moe_ffn·(3 or 2)/etp` (each EP rank gets `T·topk` pairs on average), plus a
//!   shared expert like a dense MLP; with multi-head latent attention (`kv_lora_rank`) the
//!   replicated down-projections `2·T·h·(q_lora + kv_lora + d_rope)`, the tp-split
//!   up-projections and the output projection `2·T·n·d_v·h/tp` replace QKV and the projection;
//! - on a MoE layer the routing around the router GEMM is memory bound ([`router_traffic`]):
//!   fp32 scoring and top-k, the probs and routing map, the expert bias, group-limited routing's
//!   masks, a balance loss, and the permute / unpermute of the `T·topk` token copies (fused
//!   with `moe_permute_fusion`), each kernel with its launch overhead;
//! - a MoE model's dense layers (`first_k_dense`, `moe_layer_freq`) have the dense MLP of `ffn`; the MTP
//!   depths (`mtp_layers`) add to the output layer one layer, the `2h → h` projection and another
//!   logits GEMM and loss each;
//! - causal flash attention `2·b·s·(s/cp)·q/tp` FLOPs forward (half of `4·b·s_q·s_k·q`; with MLA
//!   `b·s·(s/cp)·n·(d_qk + d_v)/tp`) at its
//!   own efficiency; backward ×[`Calibration::attention_backward`] (flash recomputes the scores);
//! - memory-bound work at `mem_bw × memory efficiency`: two norms, two residual adds and two
//!   dropouts over `h` per token (on `T/tp` tokens with `sp`), rotary embedding on q and k and
//!   the activation function on `ffn/tp`; backward ×[`Calibration::memory_backward`];
//! - with `task lora` the base is frozen: its GEMMs' backward is the input gradient alone
//!   (1 × forward), the embedding gets no gradient and the logits GEMM no `dW`; the adapters
//!   (`x·A`, then `·B`, rank × (in + out) per targeted linear, split by tp) add their forward,
//!   twice that in backward and once in the weight share; the optimizer steps only them;
//! - GEMM backward = 2 × forward (input and weight gradients); the weight-gradient share
//!   ([`Pass::Weight`]) is one forward of every GEMM with its kernel overhead, the embedding's
//!   whole backward (a gradient scatter-add into the weights) and the logits GEMM;
//! - recompute adds the recomputed forward to the backward: `selective` the attention core,
//!   `full` the whole layer;
//! - TP and CP divide the work as above; `sp` changes only the memory-bound token count.
//!
//! The embedding (stage 0, chunk 0) is a memory-bound lookup; the output layer (last stage,
//! last chunk) is the logits GEMM `2·T·h·V/tp`, the final norm, and a memory-bound fp32 cross
//! entropy over the logits. The optimizer step streams [`optimizer_step_bytes`] per local
//! parameter (the rank's shard with the distributed optimizer) at HBM bandwidth: the gradient
//! norm's read, Adam, and the copy back into the model's parameters, in the recipe's dtypes.
//!
//! Invariant: every tunable constant lives in [`Calibration`]; nothing else here is a guess.

use super::{ChunkCost, ComputeModel, Pass};
use venus_base::base::{
    Attention, BytesPerSec, FlopsPerSec, GpuArch, LoraTargets, Recompute, RecomputeModules, Seconds,
};
use venus_plan::plan::{CastTarget, GemmFit, HybridLayer, Operand, Recipe, Scaling, Scenario};

/// Every constant of the analytic model, per GPU architecture ([`Calibration::for_arch`]).
///
/// Structural figures (bytes per element, backward/forward ratios) come from the kernels'
/// definitions; the efficiencies were fitted once per GPU type to the BF16 dense rows of the
/// published-runs table (`docs/validation.md`), never per row: `gemm_efficiency`,
/// `gemm_half_dim` and `kernel_overhead` set how far from peak a layer runs, and the same values
/// serve every model size of that GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// Fraction of peak an unboundedly large GEMM reaches (cuBLAS/cuBLASLt).
    pub gemm_efficiency: f64,
    /// Each GEMM dimension `d` scales the efficiency by `d / (d + gemm_half_dim)`: tile
    /// quantisation, wave tails and the fixed prologue/epilogue of a kernel cost about
    /// `gemm_half_dim` rows' worth per dimension, so small and skinny GEMMs run further from
    /// peak (a 2048³ GEMM at `gemm_half_dim` 128 reaches 0.83 of a huge one).
    pub gemm_half_dim: f64,
    /// Fraction of (bf16) peak of causal flash attention forward (FlashAttention-2 on A100
    /// about 0.5-0.6 of peak forward; cuDNN / FlashAttention-3 on H100 0.5-0.6 in bf16).
    pub attention_efficiency: f64,
    /// Flash attention backward / forward time: dQ, dK, dV plus the recomputed scores are
    /// 2.5× the forward FLOPs (Dao 2023, FlashAttention-2 §3.2).
    pub attention_backward: f64,
    /// HBM bytes per score element of the unfused attention forward: `baddbmm` writes the
    /// scores (2), the fused scale-mask-softmax reads and writes them (4), dropout reads them
    /// and writes its output and a 1-byte mask (5), the `bmm` with V reads them (2).
    pub unfused_bytes_per_score: f64,
    /// Fraction of HBM bandwidth reached by elementwise kernels (STREAM-like copies reach
    /// about 0.8-0.9 of the datasheet bandwidth on A100 and H100).
    pub memory_efficiency: f64,
    /// Memory-bound backward / forward traffic (read the saved input and the output
    /// gradient, write the input gradient: about twice the forward's read + write).
    pub memory_backward: f64,
    /// Fixed cost per kernel (launch, ramp-up and tail), seconds; a layer's forward runs
    /// about [`KERNELS_ATTENTION`] + [`KERNELS_MLP`] kernels, its backward twice as many.
    pub kernel_overhead: Seconds,
    /// Keys per tile of the flash-attention kernels: a sliding window of `w` keys touches the
    /// key tiles that overlap the band, about `w + attention_block` keys per query, since a
    /// tile is computed whole and masked (FlashAttention-2/3 forward tiles of 128 keys,
    /// flash-attention `hopper/tile_size.h` and `flash_fwd_launch_template.h` `kBlockN`).
    pub attention_block: f64,
    /// Fraction of the FP8 peak of FP8 flash attention forward (`fp8_attention`):
    /// FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608, abstract and §4.1) reaches 740
    /// TFLOP/s in BF16 (0.75 of H100's 989) and about 1.2 PFLOP/s in FP8 (0.61 of 1979): the
    /// FP8 kernel keeps 0.81 of BF16's fraction of its peak, so `attention_efficiency` × 0.81.
    pub fp8_attention_efficiency: f64,
    /// Fraction of (bf16) peak of FlashAttention-2's causal forward (`attention flash2`), whose
    /// backward takes [`Calibration::attention_backward`] × as long like the fused kernels':
    /// about 35% of H100's peak ("FlashAttention-2 achieves only 35% utilization on H100",
    /// Shah et al. 2024, FlashAttention-3, arXiv:2407.08608 §1), 50% on A100 (Dao 2023,
    /// FlashAttention-2 §4.1: 50-73% of A100's peak forward; the fused `attention_efficiency`
    /// there, which is FlashAttention-2's own).
    pub flash2_efficiency: f64,
    /// The host's share of [`Calibration::kernel_overhead`]: the launch path (the framework's
    /// op dispatch and `cudaLaunchKernel`), exposed between short dependent kernels, which a
    /// CUDA graph replays with one launch; the rest of the overhead (ramp-up, tail, the drain
    /// between dependent kernels) stays with graphs. NVIDIA's "Getting Started with CUDA
    /// Graphs" (2019) measures the driver part alone: 2.9 µs kernels take 3.8 µs each launched
    /// from a stream and 3.4 µs from a graph; the framework's dispatch adds microseconds per op
    /// on the host (PyTorch blog, "Accelerating PyTorch with CUDA Graphs", 2021). No published
    /// row pairs a run with and without graphs, so the split is not fitted: half of the fitted
    /// overhead, 2.5 µs, a stated assumption; predictions without graphs do not depend on it.
    pub launch_overhead: Seconds,
}

/// BF16 maximum achievable matmul FLOPS over the dense peak, H100 SXM: 794.5 of 989 TFLOP/s
/// (ml-engineering's MAMF table, [`Calibration::cdna3`]).
const HOPPER_MAMF_EFFICIENCY: f64 = 794.5 / 989.0;
/// The same for the MI300X: 668.4 of 1,300 TFLOP/s.
const CDNA3_MAMF_EFFICIENCY: f64 = 668.4 / 1300.0;
/// The same for the MI355X: 1,565 TFLOP/s over the stdlib's 2,500 TFLOP/s dense peak.
const CDNA4_MAMF_EFFICIENCY: f64 = 1565.0 / 2500.0;

/// `x` to three decimals: a derived constant is stated as it is written in the docs.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Kernels of one layer's attention block forward: norm, QKV GEMM, rotary / bias, attention
/// (flash: 1; unfused: baddbmm, softmax, dropout, bmm count as 3 more), output projection,
/// dropout + residual.
pub const KERNELS_ATTENTION: f64 = 6.0;
/// Kernels of one layer's MLP block forward: norm, FC1, activation, FC2, dropout + residual.
pub const KERNELS_MLP: f64 = 5.0;
/// Kernels of a MoE layer's MLP block forward that `cuda_graphs … moe_router` captures: the
/// pre-MLP norm and the router GEMM with its top-k (TransformerLayer._forward_mlp up to
/// MoELayer.router(), transformer_config.py:1090-1106); `moe_preprocess` adds one more, the
/// dispatcher's preprocess.
pub const KERNELS_MOE_ROUTER: f64 = 2.0;
/// Kernels of one Mamba-2 layer forward (megatron/core/ssm/mamba_mixer.py, the fused path):
/// norm + in_proj, causal conv1d, the chunked scan's chunk-cumsum, chunk-state, state-passing
/// and chunk-scan kernels, gated RMSNorm, out_proj, dropout + residual.
pub const KERNELS_MAMBA: f64 = 10.0;

impl Default for Calibration {
    /// The Hopper (H100) calibration.
    fn default() -> Calibration {
        Calibration::hopper()
    }
}

impl Calibration {
    /// H100 SXM (also H200, H800, H20): fitted to the Megatron-LM README H100 table.
    ///
    /// That fit predates the SMs `overlap_tp_comm` takes ([`UB_COMM_SMS`]), which all its tp 8
    /// rows run. A refit on the nine rows with them (`venusc calibrate h100.venus --runs
    /// README.tsv --keep-network`, a scenario on `dgx_h100`) runs the asymptote to its 100 %
    /// bound (half dimension 583, MAPE 10.8 %) and leaves the same pattern, tp 1 and 2 rows
    /// about +20 % and the tp 8 rows −5 to −17 %: these rows do not determine the curve, whose
    /// residuals there are exposed data-parallel time and pipeline fill, so it stays.
    pub fn hopper() -> Calibration {
        Calibration {
            gemm_efficiency: 0.80,
            gemm_half_dim: 320.0,
            attention_efficiency: 0.5,
            attention_backward: 2.5,
            unfused_bytes_per_score: 13.0,
            memory_efficiency: 0.8,
            memory_backward: 2.0,
            kernel_overhead: Seconds(5e-6),
            attention_block: 128.0,
            flash2_efficiency: 0.35,
            launch_overhead: Seconds(2.5e-6),
            fp8_attention_efficiency: 0.5 * 0.81,
        }
    }

    /// A100: fitted to SC21 Table 1 and MegaScale's Megatron-LM rows.
    pub fn ampere() -> Calibration {
        Calibration {
            gemm_efficiency: 0.86,
            gemm_half_dim: 200.0,
            attention_efficiency: 0.5,
            attention_backward: 2.5,
            unfused_bytes_per_score: 13.0,
            memory_efficiency: 0.8,
            memory_backward: 2.0,
            kernel_overhead: Seconds(5e-6),
            attention_block: 128.0,
            flash2_efficiency: 0.5,
            launch_overhead: Seconds(2.5e-6),
            fp8_attention_efficiency: 0.5 * 0.81,
        }
    }

    /// B200 and GB200: the GEMM curve fitted by `venusc calibrate --runs` on the
    /// published-runs table's `blackwell` rows; the other constants are Hopper's (the same
    /// asynchronous tensor-core pipeline: TMA, warp-specialised kernels).
    ///
    /// Fit (`docs/data/published-runs.tsv` as of this commit, with Megatron-Bridge's MoE rows on
    /// their recipes' token dispatchers and EP overlap, and an overlapped pair's compute on the
    /// SMs a B200's 148 leave; a scenario on `dgx_b200`): `venusc calibrate b200.venus --runs
    /// docs/data/published-runs.tsv --keep-network --hold-out-odd`, run until it returns its
    /// input (a fixed point). 25 `blackwell` rows simulate; the fit used the 13 at even
    /// positions: MAPE 20.2 % on them, 19.4 % on the 12 held out. The largest residuals are
    /// model gaps, not the curve: Megatron-Core's DeepSeek-V3 baseline run (+83 %), GPT-OSS in
    /// BF16 (+31 % and +52 %) and Nemotron 3 Super in NVFP4 (+44 %) predicted too fast, Qwen3
    /// 30B-A3B (−36 %) and 235B-A22B (−31 %) too slow. The fits before: 77.7 % and 1249 with the
    /// pair on an H100's 132 SMs; 60.0 % and 794 with those MoE rows on Megatron-LM's
    /// `allgather` dispatcher, which they do not run.
    pub fn blackwell() -> Calibration {
        Calibration {
            gemm_efficiency: 0.785,
            gemm_half_dim: 1287.0,
            ..Calibration::hopper()
        }
    }

    /// B300 and GB300: as [`Calibration::blackwell`], on the `blackwell_ultra` rows.
    ///
    /// Fit: `venusc calibrate b300.venus --runs docs/data/published-runs.tsv --keep-network
    /// --hold-out-odd` (a scenario on `dgx_b300`). 23 `blackwell_ultra` rows simulate; the fit
    /// used the 12 at even positions (GB300 and B300 rows of Megatron-Bridge 25.11 and 26.06:
    /// GPT-OSS, DeepSeek-V3, Qwen3, Llama 3.1 405B, Nemotron 3, Llama 3 70B SFT/LoRA): MAPE
    /// 32.1 % on them, 22.9 % on the 11 held out (37.1 % and 56.9 % on GB300 and B300 rows
    /// with Hopper's constants before). The largest residuals are the Nemotron 3 hybrid rows
    /// (+160 % with NVFP4), whose Mamba scan has no kernel model of its own: a model gap that
    /// pulls the curve, left in rather than picking rows.
    ///
    /// Refit with the MoE rows on their recipes' token dispatchers and EP overlap (the same
    /// command, 26 rows, 13 fitted): the asymptote runs to its 100 % bound (MAPE 21.8 % fitted,
    /// 31.5 % held out), so these rows do not determine it while the MoE gaps (Qwen3 −30 % to
    /// −40 %, Nemotron 3 Super NVFP4 +75 %) dominate them, and this fit stays: at it the
    /// 26 rows' MAPE is 23.7 % (24.1 % before an overlapped pair's compute took its SMs from
    /// the B300's own 160); refit once more with that, it still runs to the bound.
    pub fn blackwell_ultra() -> Calibration {
        Calibration {
            gemm_efficiency: 0.943,
            gemm_half_dim: 1553.0,
            ..Calibration::hopper()
        }
    }

    /// L40S (Ada): Ampere's constants (Ada issues its tensor cores like Ampere, `mma.sync`
    /// without TMA or `wgmma`) with the GEMM asymptote alone fitted to the two MLPerf
    /// Training v4.0 L40S rows (Llama 2 70B LoRA, FP8, tp 4 cp 2 on 16 and 96 four-GPU
    /// PCIe nodes): one configuration, so only one constant; the half dimension stays
    /// Ampere's.
    ///
    /// Fit: `venusc calibrate l40s.venus --runs docs/data/published-runs.tsv --keep-network
    /// --keep-gemm-shape` (a scenario on `l40s_server`): `gemm_efficiency` 0.754 (Ampere's
    /// 0.86 gave -2.8 % and -2.1 %); residuals -0.4 % (16 nodes) and +0.4 % (96 nodes). With
    /// `--hold-out-odd` the 16-node row alone fits 0.740 and the 96-node row is predicted at
    /// +0.7 %. The rows are communication-heavy (PCIe, no NVLink): ten points of efficiency
    /// move their time about 2.5 %, so the asymptote is loosely determined; it rests on this
    /// one configuration and a dense BF16 run on Ada may well differ.
    pub fn ada() -> Calibration {
        Calibration {
            gemm_efficiency: 0.754,
            ..Calibration::ampere()
        }
    }

    /// MI300X and MI325X (CDNA3): Hopper's fit scaled by the measured matmul efficiency of the
    /// two GPUs, since the published-runs table has no run on a CDNA GPU to fit.
    ///
    /// Source: the "Maximum Achievable Matmul FLOPS comparison table" of Stas Bekman's *Machine
    /// Learning Engineering* (https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md,
    /// measured with its `mamf-finder.py`): BF16 MAMF of the H100 SXM 794.5 TFLOP/s of 989
    /// (80.3 %) and of the MI300X 668.4 of 1,300 (51.4 %, ROCm 6.3, TunableOp on). The
    /// asymptote and the attention efficiency are Hopper's times 51.4 / 80.3 = 0.640 (flash
    /// attention is tensor-core bound like a GEMM: the same software-and-clock gap applies; an
    /// assumption until an attention measurement exists). The GEMM shape curve, the HBM
    /// efficiency (about 0.8 of the datasheet bandwidth reached by copies, as on Hopper), the
    /// backward ratios and the kernel overhead are Hopper's. The MI325X measured 60.4 % at
    /// 1,000 W: stdlib `mi325x` writes its own `gemm_efficiency`.
    pub fn cdna3() -> Calibration {
        let gap = CDNA3_MAMF_EFFICIENCY / HOPPER_MAMF_EFFICIENCY;
        let h = Calibration::hopper();
        Calibration {
            gemm_efficiency: round3(h.gemm_efficiency * gap),
            attention_efficiency: round3(h.attention_efficiency * gap),
            ..h
        }
    }

    /// MI355X (CDNA4): as [`Calibration::cdna3`], with the MI355X's measured BF16 MAMF of the
    /// same table, 1,565 TFLOP/s (ROCm 7.0.2), which is 0.626 of the 2,500 TFLOP/s dense peak
    /// the stdlib's `mi355x` states from AMD's datasheet (the table divides by 2,300, the
    /// MI350X's figure).
    pub fn cdna4() -> Calibration {
        let gap = CDNA4_MAMF_EFFICIENCY / HOPPER_MAMF_EFFICIENCY;
        let h = Calibration::hopper();
        Calibration {
            gemm_efficiency: round3(h.gemm_efficiency * gap),
            attention_efficiency: round3(h.attention_efficiency * gap),
            ..h
        }
    }

    /// The constants of an architecture's GPUs, fitted to published runs or derived from
    /// published kernel measurements, or `None` for an arch without either
    /// ([`GpuArch::is_calibrated`] says the same, for the stages that cannot see this module; a
    /// test keeps the two in step). Every arch of this release has one.
    pub fn fitted(arch: GpuArch) -> Option<Calibration> {
        match arch {
            GpuArch::Ampere => Some(Calibration::ampere()),
            GpuArch::Hopper => Some(Calibration::hopper()),
            GpuArch::Blackwell => Some(Calibration::blackwell()),
            GpuArch::BlackwellUltra => Some(Calibration::blackwell_ultra()),
            GpuArch::Cdna3 => Some(Calibration::cdna3()),
            GpuArch::Cdna4 => Some(Calibration::cdna4()),
            GpuArch::Ada => Some(Calibration::ada()),
        }
    }

    /// The calibration for a GPU architecture (never for a name: a GPU renamed or written
    /// inline is costed as the one it copies): its own fit, else the fit of
    /// [`GpuArch::nearest_calibrated`] (plan validation warns with W0007 when that happens).
    pub fn for_arch(arch: GpuArch) -> Calibration {
        Calibration::fitted(arch)
            .or_else(|| Calibration::fitted(arch.nearest_calibrated()))
            .unwrap_or_default()
    }

    /// This calibration with a GPU's measured GEMM constants where it writes them
    /// (`gemm_efficiency`, `gemm_half_dim`: `venusc calibrate --gemm` fits both from the
    /// user's GEMM table, on the same `E · Π d/(d + h)` curve as [`Calibration::gemm`]).
    pub fn with_gemm(mut self, fit: GemmFit) -> Calibration {
        if let Some(e) = fit.efficiency {
            self.gemm_efficiency = e.0;
        }
        if let Some(h) = fit.half_dim {
            self.gemm_half_dim = h as f64;
        }
        self
    }

    /// Efficiency of a GEMM `[m × k] · [k × n]`.
    pub fn gemm(&self, m: f64, n: f64, k: f64) -> f64 {
        let f = |d: f64| d.max(0.0) / (d.max(0.0) + self.gemm_half_dim);
        self.gemm_efficiency * f(m) * f(n) * f(k)
    }
}

/// The per-layer, per-microbatch work of one rank, in seconds per block and pass.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
struct Blocks {
    attention_f: f64,
    attention_b: f64,
    mlp_f: f64,
    mlp_b: f64,
    /// Weight-gradient shares of the backwards.
    attention_w: f64,
    mlp_w: f64,
}

/// A hybrid model's layer kinds, each one sublayer: the mixer (Mamba-2 or attention) in the
/// attention slot of [`Blocks`], the MLP or MoE in the MLP slot.
#[derive(Clone, Debug)]
struct HybridBlocks {
    model: venus_plan::plan::ModelSpec,
    mamba: Blocks,
    attention: Blocks,
    mlp: Blocks,
    moe: Blocks,
}

impl HybridBlocks {
    fn of(&self, kind: HybridLayer) -> &Blocks {
        match kind {
            HybridLayer::Mamba => &self.mamba,
            HybridLayer::Attention => &self.attention,
            HybridLayer::Mlp => &self.mlp,
            HybridLayer::Moe => &self.moe,
        }
    }

    /// Σ over the layers `start..start + n` of `f(their kind's blocks)`.
    fn sum(&self, start: u64, n: u64, f: impl Fn(&Blocks) -> f64) -> f64 {
        let c = self.model.hybrid_layers_in(start, n);
        HybridLayer::ALL
            .iter()
            .map(|&k| c.of(k) as f64 * f(self.of(k)))
            .sum()
    }
}

/// The analytic model, with every per-layer figure computed once.
#[derive(Clone, Debug)]
pub struct AnalyticModel {
    cal: Calibration,
    blocks: Blocks,
    /// A MoE model's leading dense layers (`first_k_dense`), priced with the dense MLP.
    /// A MoE model's dense layers (`first_k_dense`, `moe_layer_freq`): their blocks, and the
    /// model that places them.
    dense_blocks: Option<(Blocks, venus_plan::plan::ModelSpec)>,
    /// A hybrid model: each layer kind's blocks and the pattern that places them.
    hybrid: Option<HybridBlocks>,
    /// A sliding-window layer's attention saving over a full one, (forward, backward), and
    /// the model that places those layers (`None` without `sliding_window`).
    window: Option<((f64, f64), venus_plan::plan::ModelSpec)>,
    /// Multi-token prediction on the last chunk: per pass (forward, backward, weight).
    mtp: (f64, f64, f64),
    embedding: (f64, f64),
    output: (f64, f64),
    /// The output layer's weight gradient (the logits GEMM's `dW`).
    output_weight: f64,
    /// Optimizer step per stage, stage 0 first.
    optimizer: Vec<f64>,
    split: venus_plan::plan::StageSplit,
    pp: u64,
    vpp: u64,
    /// `recompute full` with `recompute_method block`: the layers of each chunk it reruns
    /// (`None`: every layer).
    full_block: Option<u64>,
}

impl AnalyticModel {
    pub fn new(sc: &Scenario, cal: Calibration) -> AnalyticModel {
        let w = Work::new(sc, cal);
        let blocks = w.with_offload(w.blocks());
        let m = &sc.model;
        let dense_blocks = m
            .has_dense_layers()
            .then(|| (w.with_offload(w.blocks_with(None)), m.clone()));
        let hybrid = m.is_hybrid().then(|| w.hybrid_blocks(m));
        // Validation refuses a window on a hybrid model (E0350); its pattern places the
        // attention layers.
        let window =
            (m.sliding_window.is_some() && !m.is_hybrid()).then(|| (w.window_delta(), m.clone()));
        AnalyticModel {
            cal,
            blocks,
            dense_blocks,
            hybrid,
            window,
            mtp: w.mtp(&blocks, m.mtp_layers()),
            embedding: w.embedding(),
            output: w.output(),
            output_weight: w.output_weight(),
            optimizer: (0..sc.pp.min(1 << 20))
                .map(|s| w.optimizer_step(s))
                .collect(),
            split: sc.split.clone(),
            pp: sc.pp,
            vpp: sc.vpp.max(1),
            full_block: (sc.recompute == Recompute::Full
                && sc.plan.recompute_method() == venus_base::base::RecomputeMethod::Block)
                .then(|| sc.plan.recompute_num_layers()),
        }
    }

    pub fn calibration(&self) -> &Calibration {
        &self.cal
    }

    /// The weight-gradient share of a chunk's backward (see the module header).
    fn weight_gradient(&self, stage: u64, chunk: u64) -> ChunkCost {
        let pre = if stage == 0 && chunk == 0 {
            self.embedding.1
        } else {
            0.0
        };
        let last_chunk = chunk + 1 == self.vpp;
        let mut post = 0.0;
        if stage + 1 == self.pp && last_chunk {
            post += self.output_weight;
        }
        if stage == self.split.mtp_stage() && last_chunk {
            post += self.mtp.2;
        }
        let mlp_w = self.mixed_mlp(stage, chunk, self.blocks.mlp_w, |d| d.mlp_w);
        let (attention_w, mlp_w) =
            self.per_layer(stage, chunk, (self.blocks.attention_w, mlp_w), |b| {
                (b.attention_w, b.mlp_w)
            });
        ChunkCost::from_pieces(
            Seconds(pre),
            self.split.chunk_layers(stage, chunk),
            Seconds(attention_w),
            Seconds(mlp_w),
            Seconds(post),
        )
    }

    /// A chunk's (mixer, MLP) times per layer: `uniform` for a transformer; for a hybrid model
    /// the chunk's layers summed by kind and spread over its layers (the chunk's total is
    /// exact).
    fn per_layer(
        &self,
        stage: u64,
        chunk: u64,
        uniform: (f64, f64),
        pick: impl Fn(&Blocks) -> (f64, f64),
    ) -> (f64, f64) {
        let Some(hy) = &self.hybrid else {
            return uniform;
        };
        let layers = self.split.chunk_layers(stage, chunk);
        if layers == 0 {
            return (0.0, 0.0);
        }
        let start = self.split.first_layer(stage, chunk);
        let n = layers as f64;
        (
            hy.sum(start, layers, |b| pick(b).0) / n,
            hy.sum(start, layers, |b| pick(b).1) / n,
        )
    }

    /// With `recompute_method block`, the share of a chunk's layers that keep their
    /// activations and rerun nothing (megatron/core/recompute.py:167-181: the first
    /// `recompute_num_layers` of the chunk are recomputed); `None` when every layer reruns.
    fn layers_kept_whole(&self, stage: u64, chunk: u64) -> Option<f64> {
        let n = self.full_block?;
        let layers = self.split.chunk_layers(stage, chunk);
        (layers > n).then(|| (layers - n) as f64 / layers as f64)
    }

    /// A chunk's attention time per layer with its windowed layers' saving spread over its
    /// layers (the chunk's total is exact).
    fn windowed(&self, stage: u64, chunk: u64, attention: f64, fwd: bool) -> f64 {
        let Some(((df, db), m)) = &self.window else {
            return attention;
        };
        let layers = self.split.chunk_layers(stage, chunk);
        if layers == 0 {
            return attention;
        }
        let start = self.split.first_layer(stage, chunk);
        let share = m.window_layers_in(start, layers) as f64 / layers as f64;
        attention + share * if fwd { *df } else { *db }
    }

    /// A chunk's MLP time per layer: the MoE figure, or with leading dense layers in the chunk
    /// the layer-weighted mean of the dense and MoE figures (the chunk's total is exact).
    fn mixed_mlp(&self, stage: u64, chunk: u64, moe: f64, dense: impl Fn(&Blocks) -> f64) -> f64 {
        let Some((d, m)) = &self.dense_blocks else {
            return moe;
        };
        let layers = self.split.chunk_layers(stage, chunk);
        if layers == 0 {
            return moe;
        }
        let start = self.split.first_layer(stage, chunk);
        let moe_layers = m.moe_layers_in(start, layers).min(layers);
        let dense_layers = layers - moe_layers;
        (moe * moe_layers as f64 + dense(d) * dense_layers as f64) / layers as f64
    }
}

impl ComputeModel for AnalyticModel {
    fn chunk(&self, stage: u64, chunk: u64, pass: Pass) -> ChunkCost {
        if pass == Pass::Weight {
            return self.weight_gradient(stage, chunk);
        }
        let fwd = pass == Pass::Forward;
        let pick = |(f, b): (f64, f64)| Seconds(if fwd { f } else { b });
        let pre = if stage == 0 && chunk == 0 {
            pick(self.embedding)
        } else {
            Seconds(0.0)
        };
        // The output layer ends the last stage's last chunk; the MTP depths end the last
        // chunk of their stage (the last one unless a `pipeline_layout` moves them).
        let last_chunk = chunk + 1 == self.vpp;
        let mut post = Seconds(0.0);
        if stage + 1 == self.pp && last_chunk {
            post = pick(self.output);
        }
        if stage == self.split.mtp_stage() && last_chunk && self.mtp != (0.0, 0.0, 0.0) {
            post = Seconds(post.0 + pick((self.mtp.0, self.mtp.1)).0);
        }
        let b = &self.blocks;
        let forward = self.per_layer(
            stage,
            chunk,
            (
                b.attention_f,
                self.mixed_mlp(stage, chunk, b.mlp_f, |d| d.mlp_f),
            ),
            |k| (k.attention_f, k.mlp_f),
        );
        let (attention, mlp) = if fwd {
            forward
        } else if let Some(kept) = self.layers_kept_whole(stage, chunk) {
            // `block` reruns the forward of only its first layers: the others' backward is
            // the backward without recompute (the per-layer figures are the chunk's mean).
            let (a, m) = self.per_layer(
                stage,
                chunk,
                (
                    b.attention_b,
                    self.mixed_mlp(stage, chunk, b.mlp_b, |d| d.mlp_b),
                ),
                |k| (k.attention_b, k.mlp_b),
            );
            (a - kept * forward.0, m - kept * forward.1)
        } else {
            self.per_layer(
                stage,
                chunk,
                (
                    b.attention_b,
                    self.mixed_mlp(stage, chunk, b.mlp_b, |d| d.mlp_b),
                ),
                |k| (k.attention_b, k.mlp_b),
            )
        };
        let attention = self.windowed(stage, chunk, attention, fwd);
        ChunkCost::from_pieces(
            pre,
            self.split.chunk_layers(stage, chunk),
            Seconds(attention),
            Seconds(mlp),
            post,
        )
    }

    fn optimizer_step(&self, stage: u64) -> Seconds {
        Seconds(self.optimizer.get(stage as usize).copied().unwrap_or(0.0))
    }

    fn name(&self) -> &'static str {
        "analytic"
    }
}

/// HBM bytes one optimizer step moves per local parameter, in the recipe's dtypes (bf16
/// parameters, fp32 main gradients, master copy and moments by default: 38 bytes), each pass as
/// Megatron-LM runs it (megatron/core/optimizer/optimizer.py `MixedPrecisionOptimizer.step` at
/// d98e8a64):
/// - the gradient norm for clipping (`--clip-grad`, default 1.0): `get_grad_norm_fp32` reads
///   every main gradient once (`multi_tensor_l2norm`, megatron/core/optimizer/clip_grads.py);
///   its one-element all-reduce over the model-parallel group is latency-bound, microseconds
///   per iteration, and not priced. The rescale (`clip_grad_by_total_norm_fp32`,
///   `multi_tensor_scale`) runs only when the norm exceeds the threshold (`clip_coeff < 1.0`),
///   which a healthy run rarely does: not counted;
/// - Adam over the fp32 master copy (`FusedAdam`, multi-tensor): reads the master parameter,
///   the gradient and both moments, writes the parameter and both moments;
/// - the updated master copied into the model's parameters (`_copy_main_params_to_model_params`):
///   reads the master, writes the parameter.
///
/// No loss-scale pass: the unscale and inf check (`_unscale_main_grads_and_check_for_nan`)
/// run only with a grad scaler, which Megatron builds only for `--fp16`; bf16 and the FP8/FP4
/// recipes (bf16 master weights' model copy) have none.
pub fn optimizer_step_bytes(r: &venus_plan::plan::Recipe) -> f64 {
    let b = |d: venus_base::base::Dtype| d.width().0;
    let norm = b(r.main_grads);
    let adam = b(r.master_weights)
        + b(r.main_grads)
        + b(r.moments)
        + b(r.second_moment)
        + b(r.master_weights)
        + b(r.moments)
        + b(r.second_moment);
    let copy = b(r.master_weights) + b(r.weights);
    norm + adam + copy
}

/// The scenario's numbers as `f64`, and the rates.
struct Work {
    cal: Calibration,
    gemm_peak: FlopsPerSec,
    bf16_peak: FlopsPerSec,
    mem_bw: BytesPerSec,
    /// Bytes per activation element (the recipe's `activations`).
    act_bytes: f64,
    /// Tokens per rank per microbatch (`s/cp · b`).
    t: f64,
    /// Tokens of the memory-bound, sequence-parallel regions (`T/tp` with `sp`).
    t_sp: f64,
    s: f64,
    b: f64,
    h: f64,
    q: f64,
    kv: f64,
    /// Multi-head latent attention dims (None: standard attention).
    mla: Option<Mla>,
    ffn: f64,
    swiglu: bool,
    tp: f64,
    etp: f64,
    ep: f64,
    cp: f64,
    moe: Option<Moe>,
    vocab: f64,
    recompute: Recompute,
    /// The modules `Recompute::Selective` reruns.
    modules: RecomputeModules,
    attention: Attention,
    head_dim: f64,
    sc_stage_params: Vec<(f64, f64)>,
    dp: f64,
    expert_dp: f64,
    distributed_optimizer: bool,
    /// HBM bytes per local parameter of one optimizer step ([`optimizer_step_bytes`]).
    optimizer_bytes: f64,
    /// `task lora`: the adapters' rank and targets; the base's weight gradients vanish.
    lora: Option<(f64, LoraTargets)>,
    /// A hybrid model's Mamba-2 dims (None: a transformer).
    mamba: Option<Mamba>,
    /// `sliding_window`: keys per query of a windowed layer (None: full causal attention).
    window: Option<f64>,
    qk_norm: bool,
    /// CUDA graph capture and activation offloading (`cuda_graphs`, `offload_*`).
    graphs: venus_plan::plan::offload::GraphsOffload,
    /// Per offloaded layer and microbatch: the host copy's seconds each way and the share of
    /// the layers that offload ((0, 0): none).
    offload_copy: (f64, f64),
    /// The precision recipe: the casts around each FP8 / FP4 GEMM ([`Work::casts`]).
    recipe: Recipe,
    /// The GPU's per-tensor-scaled FP8 GEMMs take only the TN layout.
    tn_only: bool,
    /// Microbatches of an iteration: a weight is cast on the first and cached.
    microbatches: f64,
    /// The attention core's peak: the FP8 peak with `fp8_attention`, else BF16's.
    attention_peak: FlopsPerSec,
    /// How much slower a GEMM runs whose tensor-parallel collective a userbuffers kernel
    /// overlaps on the SMs it takes ([`UB_COMM_SMS`]); 1 without `overlap_tp_comm`.
    ub_slowdown: f64,
}

/// The SMs a userbuffers communication kernel takes from the GEMM it overlaps, with
/// `overlap_tp_comm`. Megatron-LM's `--tp-comm-overlap` without `--tp-comm-overlap-cfg` passes
/// no per-GEMM configuration (megatron/training/initialize.py `_initialize_tp_communicators`),
/// so Transformer Engine's defaults hold (TE 2.x transformer_engine/pytorch/module/base.py
/// `initialize_ub`, `get_default_config`): the `pipeline` method (the reduce-scatter after
/// `proj_fprop` and `fc2_fprop`) and the `bulk` method (the input all-gather and the gradient
/// reduce-scatter beside `qkv_dgrad`/`qkv_wgrad` and `fc1_dgrad`/`fc1_wgrad`) run on
/// `num_sm` 16 SMs with `set_sm_margin`, so their GEMMs get the other SMs; the `ring_exchange`
/// method (the all-gathers before `qkv_fprop`, `fc1_fprop`, `proj_dgrad`, `fc2_dgrad`) moves
/// data with copy engines and takes no SMs from its GEMM (`num_sm` 1, no margin).
const UB_COMM_SMS: u64 = 16;

/// Mamba-2 dims (megatron/core/ssm/mamba_mixer.py).
struct Mamba {
    d_inner: f64,
    heads: f64,
    /// `2·ngroups·d_state`: the B and C projections.
    bc: f64,
    state: f64,
    groups: f64,
}

/// Tokens per chunk of the SSD scan: `MambaMixer(chunk_size=128)`, Megatron's default
/// (megatron/core/ssm/mamba_mixer.py:194, NVIDIA/Megatron-LM d98e8a64; Nemotron-H's config.json
/// `chunk_size` 128).
const SSD_CHUNK: f64 = 128.0;

/// HBM bytes per token (on one rank, the dims already split by tp) of the SSD scan's forward
/// kernels, `_mamba_chunk_scan_combined_fwd` in state-spaces/mamba
/// mamba_ssm/ops/triton/ssd_combined.py (e9594ce1): `_chunk_cumsum_fwd` reads dt and writes
/// dt and its cumulative decay in fp32, which `_chunk_state_fwd` and `_chunk_scan_fwd` read
/// again (26 bytes per head); x is read by the chunk-state and chunk-scan kernels and y
/// written once; B is read by the chunk-state and `_bmm_chunk_fwd` kernels, C by the latter
/// and the chunk scan; each chunk's `d_inner × N` states are written in fp32, read and written
/// back in the activation dtype by `_state_passing_fwd`, and read by the chunk scan (12 bytes
/// per element, one chunk per `SSD_CHUNK` tokens); the `C·Bᵀ` blocks (`ngroups × Q × Q` per
/// chunk) are written and read in fp32. The five kernels exchange these tensors through HBM,
/// which is why the scan is bound by memory bandwidth, not by its FLOPs (PyTorch blog,
/// "Accelerating Mamba2 with Kernel Fusion", 2025: "mostly bottlenecked by memory bandwidth
/// and latency").
fn ssd_scan_bytes_per_token(d: &Mamba, tp: f64, act_bytes: f64) -> f64 {
    let (d_inner, heads, groups) = (d.d_inner / tp, d.heads / tp, d.groups / tp);
    act_bytes * (3.0 * d_inner + 2.0 * d.bc / tp)
        + 26.0 * heads
        + 12.0 * d_inner * d.state / SSD_CHUNK
        + 8.0 * groups * SSD_CHUNK
}

/// The parts of a layer whose kernels CUDA graphs may capture (`cuda_graphs` modules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GraphPart {
    Attention,
    Mlp,
    Moe,
    Mamba,
}

/// The host copy of one offloaded layer per microbatch, (seconds each way, share of the
/// layers that offload), over the whole model (layer-level offloading runs on pp 1):
/// [`venus_plan::plan::offload::layer_offload`]'s bytes at the GPU's host-link bandwidth
/// ([`venus_plan::plan::offload::host_link_bandwidth`]).
fn offload_copy(sc: &Scenario) -> (f64, f64) {
    use venus_plan::plan::offload;
    let mp = sc.memory_plan();
    let g = &mp.graphs_offload;
    if !g.offloads() {
        return (0.0, 0.0);
    }
    let shape = venus_plan::plan::memory::ActivationShape {
        seq: sc.model.seq / sc.cp.max(1),
        micro_batch: sc.micro_batch,
        tp: sc.tp,
        etp: sc.etp,
        sp: sc.sp,
        recompute: sc.recompute,
        attention: sc.plan.attention(),
        moe_load: sc.plan.moe_load_factor(),
        modules: mp.recompute_detail.modules,
        quantized_inputs: venus_plan::plan::memory::ActivationShape::quantizes(sc.recipe.gemm),
        frozen_base: mp.lora.map(|l| l.targets),
    };
    let pp = sc.pp.clamp(1, 1 << 20);
    let layers: u64 = (0..pp).map(|s| sc.stage_layers(s)).sum();
    let moe_layers: u64 = (0..pp).map(|s| sc.stage_moe_layers(s)).sum();
    let (bytes, share) = offload::layer_offload(&sc.model, &shape, g, layers, moe_layers);
    let bw = offload::host_link_bandwidth(sc.cluster.gpu.arch).0;
    (bytes / bw, share)
}

/// The LoRA adapters of a stage's layers, (dense, routed experts), before any sharding.
fn lora_stage_params(sc: &Scenario, stage: u64) -> (f64, f64) {
    use venus_plan::plan::derive::adapter_params;
    let m = &sc.model;
    let (rank, targets) = (sc.plan.lora_rank(), sc.plan.lora_modules());
    let moe_layers = sc.stage_moe_layers(stage) as f64;
    let dense_layers = sc.stage_layers(stage) as f64 - moe_layers;
    let dense = adapter_params(m, rank, targets, false);
    let moe = adapter_params(m, rank, targets, true);
    (
        dense.dense as f64 * dense_layers + moe.dense as f64 * moe_layers,
        moe.experts as f64 * moe_layers,
    )
}

/// MLA's dims (megatron/core/transformer/multi_latent_attention.py).
struct Mla {
    heads: f64,
    q_lora: f64,
    kv_lora: f64,
    qk_head: f64,
    nope: f64,
    rope: f64,
    v_head: f64,
}

struct Moe {
    experts: f64,
    topk: f64,
    /// The busiest EP rank's token copies over the mean (1: balanced): the expert GEMMs of
    /// every rank are priced at the busiest one's, which the others wait for at the combine.
    load: f64,
    ffn: f64,
    shared_ffn: f64,
    /// `moe_latent_size` (0: none): experts run on it between two replicated projections.
    latent: f64,
    /// The router's and the permutation's memory-bound work ([`router_traffic`]).
    routing: RouterShape,
}

/// What the router and the token permutation of one MoE layer work on, per rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouterShape {
    /// Tokens the router scores (`T/tp` with sequence parallelism).
    pub tokens: f64,
    pub experts: f64,
    pub topk: f64,
    /// `routed_groups` (1: no group-limited routing).
    pub groups: f64,
    /// Bytes of a logit and of a dispatched element (the activation dtype).
    pub act_bytes: f64,
    /// The dispatched width (hidden, or `moe_latent_size`).
    pub width: f64,
    /// Token copies the permutation moves per routed token (`topk` × the load factor).
    pub copies: f64,
    pub expert_bias: bool,
    pub balance_loss: bool,
    pub permute_fusion: bool,
    /// Transformer Engine's fused router kernels (`moe_router_fusion`).
    pub router_fusion: bool,
}

/// HBM bytes and kernels of one MoE layer's routing, forward and backward.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouterTraffic {
    pub forward_bytes: f64,
    /// What autograd reads and writes again: the scores' and the permuted tokens' gradients
    /// (before [`Calibration::memory_backward`]).
    pub backward_bytes: f64,
    pub forward_kernels: f64,
    pub backward_kernels: f64,
}

/// The memory-bound work around the router GEMM of one MoE layer, byte by byte as
/// NVIDIA/Megatron-LM d98e8a64 runs it unfused (`--moe-router-fusion` off, its default), `n`
/// tokens, `E` experts, `k` = topk, `a` the activation bytes, fp32 scores
/// (megatron/core/transformer/moe/moe_utils.py `topk_routing_with_score_function`: "Logits are
/// converted to fp32 for score functions"), per token:
/// - scoring (softmax or sigmoid): read `a·E`, write `4E`; top-k reads `4E` and writes `12k`
///   (fp32 values, int64 indices); the `[n, E]` probs and routing map (`zeros_like(logits)
///   .scatter`, `zeros_like(logits).int().scatter(...).bool()`): `3a·E + 9E`;
/// - the expert bias (`--moe-router-enable-expert-bias`): `scores + expert_bias` read and
///   write `4E`, and the step's `routing_map.sum(dim=0)` (router.py `_apply_expert_bias`)
///   reads `E`;
/// - group-limited routing (`group_limited_topk`): the in-group top-k reads `4E`, the expanded
///   group mask is written `4E`, turned to bool (`4E + E`) and inverted (`2E`), and
///   `masked_fill` reads `5E` and writes `4E`: `24E`;
/// - a balance loss (`aux_loss` or `seq_aux_loss`, router.py `_apply_aux_loss`,
///   `_apply_seq_aux_loss` with `compute_routing_scores_for_aux_loss`): scores, top-k and
///   routing map again (`3a·E + 17E`) and the loss's sums over probs and map (`5E`);
/// - permute (`permute`, the dispatcher's): unfused, the transposed map (`2E`), the argsort of
///   its `n·E` flags with int64 indices (about `18E`: keys read, indices written, twice), the
///   probs gathered through a transposed copy (`2a·E`) and `index_select` of the `k` token
///   copies (read and write `k·w·a`); fused (Transformer Engine's `moe_permute_with_probs`),
///   the row map (`5E`) and the copies (`2k·w·a`);
/// - unpermute: unfused, the probs selected through transposed copies (`3a·E + 3E`), the copies
///   scaled by them (read and write `k·w·a`), a zeroed output (`w·a`) and `scatter_add`
///   (read `k·w·a`, read and write the output per copy, `2k·w·a`); fused, each copy read once
///   and each token written once (`k·w·a + w·a`).
///
/// Backward: the scores, the balance loss's scores and the permuted tokens carry gradients
/// (the scoring and top-k gather, the loss's scores, and the permute / unpermute copies run
/// back once); the masks, sorts and counts do not. Kernels: each line above is one kernel per
/// step (scoring 2, top-k 1, probs and map 4, bias 2, groups 5, loss 7, permute 6 unfused or 1
/// fused, unpermute 7 or 1).
///
/// With `--moe-router-fusion` (router.py `routing` and `_apply_aux_loss` pass
/// `fused=self.config.moe_router_fusion` to moe_utils.py `topk_routing_with_score_function`,
/// `compute_routing_scores_for_aux_loss` and `switch_load_balancing_loss_func`, which then
/// call Transformer Engine's transformer_engine/pytorch/router.py kernels) the scoring, top-k,
/// expert bias, group limit, probs and routing map are one kernel
/// (`fused_topk_with_score_function`): read `a·E`, write the fp32 probs `4E`, the map `E`
/// and the fp32 intermediate it keeps for backward `4E`; the bias keeps its count (`E`, one
/// kernel); the loss's scores are one kernel of the same bytes
/// (`fused_compute_score_for_moe_aux_loss`), its count `E` one more and `fused_moe_aux_loss`
/// reads the probs `4E`: `a·E + 14E` in 3 kernels. Backward, each fused kernel reads its
/// intermediate and the probs' gradient and writes the logits' gradient (`a·E + 8E`, one
/// kernel each). The permutation is `permute_fusion`'s, unchanged.
pub fn router_traffic(r: &RouterShape) -> RouterTraffic {
    let (e, a, w) = (r.experts, r.act_bytes, r.width);
    let c = r.copies;
    let router = router_kernels_traffic(r);
    let (scoring, maps, bias, groups, loss) = (
        router.scoring,
        router.maps,
        router.bias,
        router.groups,
        router.loss,
    );
    let (permute_copies, permute_rest, unpermute_copies, unpermute_rest) = if r.permute_fusion {
        (2.0 * c * w * a, 5.0 * e, c * w * a + w * a, 0.0)
    } else {
        (
            2.0 * c * w * a,
            2.0 * e + 18.0 * e + 2.0 * a * e,
            5.0 * c * w * a + w * a,
            3.0 * a * e + 3.0 * e,
        )
    };
    let per_token = scoring
        + maps
        + bias
        + groups
        + loss
        + permute_copies
        + permute_rest
        + unpermute_copies
        + unpermute_rest;
    let grads = router.score_grads + permute_copies + unpermute_copies;
    let fused = r.permute_fusion;
    let forward_kernels = router.forward_kernels + if fused { 2.0 } else { 13.0 };
    let backward_kernels = router.backward_kernels + if fused { 2.0 } else { 4.0 };
    RouterTraffic {
        forward_bytes: r.tokens * per_token,
        backward_bytes: r.tokens * grads,
        forward_kernels,
        backward_kernels,
    }
}

/// Bytes per token and kernels of the router's own steps (before the permutation), unfused
/// or fused as [`router_traffic`] lists them.
struct RouterKernels {
    scoring: f64,
    maps: f64,
    bias: f64,
    groups: f64,
    loss: f64,
    /// The scores' and the loss's scores' gradients.
    score_grads: f64,
    forward_kernels: f64,
    backward_kernels: f64,
}

fn router_kernels_traffic(r: &RouterShape) -> RouterKernels {
    let (e, k, a) = (r.experts, r.topk, r.act_bytes);
    let n = |on: bool, v: f64| if on { v } else { 0.0 };
    let (bias_on, groups_on, loss_on) = (r.expert_bias, r.groups > 1.0, r.balance_loss);
    if r.router_fusion {
        return RouterKernels {
            scoring: a * e + 4.0 * e + e + 4.0 * e,
            maps: 0.0,
            bias: n(bias_on, e),
            groups: 0.0,
            loss: n(loss_on, a * e + 9.0 * e + e + 4.0 * e),
            score_grads: a * e + 8.0 * e + n(loss_on, a * e + 8.0 * e),
            forward_kernels: 1.0 + n(bias_on, 1.0) + n(loss_on, 3.0),
            backward_kernels: 1.0 + n(loss_on, 1.0),
        };
    }
    RouterKernels {
        scoring: a * e + 4.0 * e + 4.0 * e + 12.0 * k,
        maps: 3.0 * a * e + 9.0 * e,
        bias: n(bias_on, 8.0 * e + e),
        groups: n(groups_on, 24.0 * e),
        loss: n(loss_on, 3.0 * a * e + 17.0 * e + 5.0 * e),
        score_grads: a * e + 4.0 * e + n(loss_on, a * e + 4.0 * e),
        forward_kernels: 7.0 + n(bias_on, 2.0) + n(groups_on, 5.0) + n(loss_on, 7.0),
        backward_kernels: 2.0 + n(loss_on, 2.0),
    }
}

impl Work {
    fn new(sc: &Scenario, cal: Calibration) -> Work {
        let m = &sc.model;
        let gpu = &sc.cluster.gpu;
        let f = |v: u64| v as f64;
        let tp = f(sc.tp.max(1));
        let cp = f(sc.cp.max(1));
        let t = f(m.seq) / cp * f(sc.micro_batch);
        let moe = m.is_moe().then(|| Moe {
            experts: f(m.experts().max(1)),
            topk: f(m.topk().max(1)),
            load: sc.plan.moe_load_factor().0,
            ffn: f(m.moe_ffn()),
            shared_ffn: f(m.shared_expert_ffn()),
            latent: f(m.moe_latent_size.unwrap_or(0)),
            routing: RouterShape {
                tokens: if sc.sp { t / tp } else { t },
                experts: f(m.experts().max(1)),
                topk: f(m.topk().max(1)),
                groups: f(m.routed_groups()),
                act_bytes: sc.recipe.activations.width().0,
                width: f(m.expert_width()),
                copies: f(m.topk().max(1)) * sc.plan.moe_load_factor().0.max(1.0),
                expert_bias: m.expert_bias(),
                balance_loss: m.load_balancing() != venus_plan::plan::spec::LoadBalancing::None,
                permute_fusion: sc.plan.moe_permute_fusion(),
                router_fusion: sc.plan.moe_router_fusion(),
            },
        });
        let per_layer = sc.params.per_layer;
        let expert_per_layer = f(per_layer.experts);
        let dense_per_layer = f(per_layer.total()) - expert_per_layer;
        let mixed = m.is_moe() && (m.has_dense_layers() || m.mtp_layers() > 0);
        let sc_stage_params = (0..sc.pp.min(1 << 20))
            .map(|s| {
                if sc.plan.lora() {
                    // Only the adapters of the stage's layers have optimizer state.
                    return lora_stage_params(sc, s);
                }
                if let Some(hp) = &sc.params.hybrid {
                    // A hybrid model's routed experts are those of the stage's `E` layers.
                    let expert = f(hp.moe.experts) * f(sc.stage_moe_layers(s));
                    return (f(sc.stage_params(s)) - expert, expert);
                }
                if mixed {
                    // Routed experts of the stage's MoE layers (and of the MTP layers on the
                    // last stage); everything else is dense.
                    let mtp = if s == sc.split.mtp_stage() {
                        m.mtp_layers()
                    } else {
                        0
                    };
                    let expert = expert_per_layer * f(sc.stage_moe_layers(s).saturating_add(mtp));
                    return (f(sc.stage_params(s)) - expert, expert);
                }
                let layers = f(sc.stage_layers(s));
                let extras = f(sc.stage_params(s)) - f(per_layer.total()) * layers;
                (dense_per_layer * layers + extras, expert_per_layer * layers)
            })
            .collect();
        Work {
            cal,
            // A GPU without units for the precision never gets here (E0312); a scenario built
            // by hand that has one is priced at the BF16 peak, never at an invented one.
            gemm_peak: gpu.peak_for(sc.recipe.gemm).unwrap_or(gpu.peak),
            bf16_peak: gpu.peak,
            mem_bw: gpu.mem_bw,
            act_bytes: sc.recipe.activations.width().0,
            t,
            t_sp: if sc.sp { t / tp } else { t },
            s: f(m.seq),
            b: f(sc.micro_batch),
            h: f(m.hidden),
            q: f(m.heads) * f(m.head_dim()),
            kv: f(m.kv_groups()) * f(m.head_dim()),
            mla: m.is_mla().then(|| Mla {
                heads: f(m.heads),
                q_lora: f(m.q_lora_rank()),
                kv_lora: f(m.kv_lora_rank()),
                qk_head: f(m.qk_head_dim()),
                nope: f(m.qk_nope_head_dim()),
                rope: f(m.qk_rope_head_dim()),
                v_head: f(m.v_head_dim()),
            }),
            ffn: f(m.ffn()),
            swiglu: m.swiglu(),
            tp,
            etp: f(sc.etp.max(1)),
            ep: f(sc.ep.max(1)),
            cp,
            moe,
            vocab: f(sc.padded_vocab),
            recompute: sc.recompute,
            modules: sc.plan.recompute_modules(),
            attention: sc.plan.attention(),
            head_dim: f(m.head_dim()),
            sc_stage_params,
            dp: f(sc.dp.max(1)),
            expert_dp: f(sc.expert_dp.max(1)),
            distributed_optimizer: sc.flags.distributed_optimizer
                || sc.flags.fsdp.is_some_and(|f| f.shards_optimizer()),
            optimizer_bytes: optimizer_step_bytes(&sc.recipe),
            lora: sc
                .plan
                .lora()
                .then(|| (f(sc.plan.lora_rank()), sc.plan.lora_modules())),
            mamba: m.is_hybrid().then(|| Mamba {
                d_inner: f(m.mamba_d_inner()),
                heads: f(m.mamba_num_heads()),
                bc: 2.0 * f(m.n_groups()) * f(m.ssm_state_size()),
                state: f(m.ssm_state_size()),
                groups: f(m.n_groups()),
            }),
            window: m.sliding_window.map(f),
            qk_norm: m.qk_norm() && !m.is_mla(),
            graphs: sc.memory_plan().graphs_offload,
            offload_copy: offload_copy(sc),
            recipe: sc.recipe,
            // Transformer Engine runs FP8 GEMMs in every layout from compute capability 10.0
            // (`is_non_tn_fp8_gemm_supported` in transformer_engine/pytorch/utils.py);
            // before Blackwell the backward reads a transposed copy.
            tn_only: !matches!(gpu.arch, GpuArch::Blackwell | GpuArch::BlackwellUltra),
            microbatches: f(sc.microbatches.max(1)),
            attention_peak: match gpu.fp8_peak {
                Some(p) if sc.plan.fp8_attention() => p,
                _ => gpu.peak,
            },
            ub_slowdown: if sc.flags.overlap_tp_comm && sc.tp > 1 {
                gpu.slowdown_beside(UB_COMM_SMS)
            } else {
                1.0
            },
        }
    }

    /// The casts around one group of `groups` low-precision GEMMs `[m × k] · [k × n]` (a
    /// grouped GEMM's experts quantize in one multi-tensor kernel), seconds per microbatch
    /// (forward, backward): forward quantizes the input `X` (`m·k`) and the weight (`k·n`,
    /// on the first microbatch only: its share of each), backward the output gradient `dY`
    /// (`m·n`); bytes per element from [`Recipe::cast_bytes`] at the memory-bound rate, plus
    /// the fixed cost of each cast kernel. `after_norm`: `X` is a norm's output (QKV, FC1,
    /// Mamba's in_proj), which delayed scaling quantizes inside the norm. Zero for BF16.
    fn casts(&self, groups: f64, m: f64, n: f64, k: f64, after_norm: bool) -> (f64, f64) {
        if self.recipe.scaling == Scaling::None || groups <= 0.0 {
            return (0.0, 0.0);
        }
        let target = CastTarget {
            tn_only: self.tn_only,
            after_norm,
        };
        let plain = CastTarget {
            after_norm: false,
            ..target
        };
        let x = self.recipe.cast_bytes(Operand::Activation, target);
        let w = self.recipe.cast_bytes(Operand::Weight, plain);
        let dy = self.recipe.cast_bytes(Operand::Gradient, plain);
        let launch = self.cal.kernel_overhead.0;
        let weight = self.memory(w.total().of(groups * k * n)) + w.kernels * launch;
        let fwd = self.memory(x.total().of(groups * m * k))
            + x.kernels * launch
            + weight / self.microbatches.max(1.0);
        let bwd = self.memory(dy.total().of(groups * m * n)) + dy.kernels * launch;
        (fwd, bwd)
    }

    /// [`Work::casts`] summed over GEMMs `(m, n, k, after_norm)`, one each.
    fn casts_of(&self, gemms: &[(f64, f64, f64, bool)]) -> (f64, f64) {
        gemms.iter().fold((0.0, 0.0), |(f, b), &(m, n, k, norm)| {
            let (cf, cb) = self.casts(1.0, m, n, k, norm);
            (f + cf, b + cb)
        })
    }

    /// The casts of an attention block's linears (see [`Work::blocks_with`] for the shapes).
    fn attention_casts(&self) -> (f64, f64) {
        let (t, h, tp) = (self.t, self.h, self.tp);
        match &self.mla {
            Some(a) => {
                let mut g = vec![
                    (t, a.kv_lora + a.rope, h, true),
                    (t, a.heads * (a.nope + a.v_head) / tp, a.kv_lora, false),
                    (t, h, a.heads * a.v_head / tp, false),
                ];
                if a.q_lora > 0.0 {
                    g.push((t, a.q_lora, h, true));
                    g.push((t, a.heads * a.qk_head / tp, a.q_lora, false));
                } else {
                    g.push((t, a.heads * a.qk_head / tp, h, true));
                }
                self.casts_of(&g)
            }
            None => self.casts_of(&[
                (t, (self.q + 2.0 * self.kv) / tp, h, true),
                (t, h, self.q / tp, false),
            ]),
        }
    }

    /// The casts of an MLP's two linears on `width`-wide tokens (`groups` experts at once).
    fn mlp_casts(
        &self,
        groups: f64,
        tokens: f64,
        ffn: f64,
        split: f64,
        width: f64,
        norm: bool,
    ) -> (f64, f64) {
        let up = if self.swiglu { 2.0 * ffn } else { ffn };
        let (f1, b1) = self.casts(groups, tokens, up / split, width, norm);
        let (f2, b2) = self.casts(groups, tokens, width, ffn / split, false);
        (f1 + f2, b1 + b2)
    }

    /// The casts of one layer's MLP block: the dense MLP, or a MoE layer's routed experts (one
    /// grouped GEMM per linear over the rank's experts, inputs from the dispatch), the latent
    /// projections and the shared expert; the router stays BF16 ([`Work::gemm_bf16`]).
    fn mlp_block_casts(&self, moe: Option<&Moe>) -> (f64, f64) {
        let (t, h, tp) = (self.t, self.h, self.tp);
        let Some(moe) = moe else {
            return self.mlp_casts(1.0, t, self.ffn, tp, h, true);
        };
        let rows = t * moe.topk * moe.load * self.ep / moe.experts;
        let local = (moe.experts / self.ep).max(1.0);
        let width = if moe.latent > 0.0 { moe.latent } else { h };
        let (mut f, mut b) = self.mlp_casts(local, rows, moe.ffn, self.etp, width, false);
        let mut add = |(cf, cb): (f64, f64)| {
            f += cf;
            b += cb;
        };
        if moe.latent > 0.0 {
            add(self.casts_of(&[(t, moe.latent, h, true), (t, h, moe.latent, false)]));
        }
        if moe.shared_ffn > 0.0 {
            add(self.mlp_casts(1.0, t, moe.shared_ffn, tp, h, true));
        }
        (f, b)
    }

    /// FP8 attention's own casts (`fp8_attention`), seconds (forward, backward): Transformer
    /// Engine's FP8 fused attention quantizes Q, K and V and returns O in FP8, which the
    /// output projection's BF16 path reads back (read 2 bytes, write 1, each way); the
    /// backward quantizes dO the same way (transformer_engine/pytorch/attention/
    /// dot_product_attention/backends.py `FusedAttnFunc` with `fp8`).
    fn fp8_attention_casts(&self) -> (f64, f64) {
        if self.attention_peak == self.bf16_peak || self.attention != Attention::Flash {
            return (0.0, 0.0);
        }
        let per_elem = 3.0;
        let qkv = match &self.mla {
            Some(a) => a.heads * (2.0 * a.qk_head + a.v_head) / self.tp,
            None => (self.q + 2.0 * self.kv) / self.tp,
        };
        let out = match &self.mla {
            Some(a) => a.heads * a.v_head / self.tp,
            None => self.q / self.tp,
        };
        let launch = self.cal.kernel_overhead.0;
        (
            self.memory(self.t * (qkv + 2.0 * out) * per_elem) + 2.0 * launch,
            self.memory(self.t * out * per_elem) + launch,
        )
    }

    /// Seconds of one GEMM that Megatron runs in BF16 whatever the recipe: the output layer
    /// (`tensor_parallel.ColumnParallelLinear` unless MXFP8's `fp8_output_proj`,
    /// megatron/core/models/gpt/gpt_model.py:273-277 at d98e8a64) and the MoE router
    /// (`router_gating_linear` in the input's dtype, megatron/core/transformer/moe/
    /// router.py:106-111).
    fn gemm_bf16(&self, m: f64, n: f64, k: f64) -> f64 {
        let flops = 2.0 * m * n * k;
        let eff = self.cal.gemm(m, n, k);
        if flops <= 0.0 || eff <= 0.0 {
            return 0.0;
        }
        flops / (self.bf16_peak.0 * eff)
    }

    /// One Mamba-2 layer on this rank, in the mixer slot of [`Blocks`]: `in_proj`
    /// `2·T·h·(2·d_inner + 2·G·N + H)/tp` and `out_proj` `2·T·d_inner·h/tp` GEMMs, the chunked
    /// SSD scan `7·T·d_inner·N/tp` FLOPs (the count of Megatron's `mamba_layer_flops`,
    /// training.py), the depthwise conv over x, B, C and the gated norm over d_inner (memory
    /// bound), and the pre-norm, residual and dropout over h. The scan has a cost basis of its
    /// own: its five kernels' HBM traffic ([`ssd_scan_bytes_per_token`]) at the memory-bound
    /// rate, plus its FLOPs on tensor cores. Its chunk matmuls (`C·Bᵀ`, the states, `·x`) are
    /// tiled with the decay applied on chip, as flash attention tiles `QKᵀ` with its softmax
    /// (Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060, §6), so the FLOPs take
    /// flash attention's efficiency; no SSD kernel efficiency of its own is published. Backward
    /// (`_mamba_chunk_scan_combined_bwd` recomputes the states) takes flash attention's backward
    /// ratio on the FLOPs and the memory-bound ratio on the traffic.
    fn mamba_blocks(&self, d: &Mamba) -> Blocks {
        let (t, h, tp) = (self.t, self.h, self.tp);
        let gemm = self.gemm(t, (2.0 * d.d_inner + d.bc + d.heads) / tp, h)
            + self.gemm(t, h, d.d_inner / tp);
        let (cast_f, cast_b) = self.casts_of(&[
            (t, (2.0 * d.d_inner + d.bc + d.heads) / tp, h, true),
            (t, h, d.d_inner / tp, false),
        ]);
        let scan =
            7.0 * t * d.d_inner * d.state / tp / (self.bf16_peak.0 * self.cal.attention_efficiency);
        let scan_traffic = self.memory(t * ssd_scan_bytes_per_token(d, tp, self.act_bytes));
        // conv1d reads x, B, C (its short window stays in cache) and writes them; the gated
        // norm reads y and z and writes its output.
        let conv = t * 2.0 * (d.d_inner + d.bc) / tp * self.act_bytes;
        let norm = t * 3.0 * d.d_inner / tp * self.act_bytes;
        let mem = self.memory(self.t_sp * 15.0 * h + conv + norm);
        let k = KERNELS_MAMBA * self.per_kernel(GraphPart::Mamba);
        let wgrad = self.base_wgrad();
        let f = gemm + scan + scan_traffic + mem + k + cast_f;
        let mut b = (1.0 + wgrad) * gemm
            + cast_b
            + 2.0 * k
            + self.cal.attention_backward * scan
            + self.cal.memory_backward * (mem + scan_traffic);
        if self.recompute == Recompute::Full {
            b += f;
        }
        Blocks {
            attention_f: f,
            attention_b: b,
            attention_w: wgrad * gemm + k,
            ..Blocks::default()
        }
    }

    /// The four kinds of a hybrid model's layers: Mamba-2, attention alone, dense MLP alone,
    /// MoE alone (megatron/core/models/hybrid/hybrid_layer_specs.py).
    fn hybrid_blocks(&self, m: &venus_plan::plan::ModelSpec) -> HybridBlocks {
        let dense = self.blocks_with(None);
        let moe = self.blocks_with(self.moe.as_ref());
        let mixer_only = |b: &Blocks| Blocks {
            mlp_f: 0.0,
            mlp_b: 0.0,
            mlp_w: 0.0,
            ..*b
        };
        let mlp_only = |b: &Blocks| Blocks {
            attention_f: 0.0,
            attention_b: 0.0,
            attention_w: 0.0,
            ..*b
        };
        HybridBlocks {
            model: m.clone(),
            mamba: self
                .mamba
                .as_ref()
                .map_or_else(Blocks::default, |d| self.mamba_blocks(d)),
            attention: mixer_only(&dense),
            mlp: mlp_only(&dense),
            moe: mlp_only(&moe),
        }
    }

    /// 1 when the base weights get their gradient GEMMs (`dW = Xᵀ·dY`), 0 when LoRA freezes
    /// them: a frozen linear's backward computes only the input gradient (Transformer
    /// Engine's and Megatron's linears skip `wgrad` when the weight has no `requires_grad`,
    /// megatron/core/tensor_parallel/layers.py `LinearWithGradAccumulationAndAsyncCommunication`).
    fn base_wgrad(&self) -> f64 {
        if self.lora.is_some() {
            0.0
        } else {
            1.0
        }
    }

    /// One adapter's forward: `x·A` (rank × in) then `(x·A)·B` (out × rank), both split by tp as
    /// their base linear (Megatron-Bridge peft/utils.py `ParallelLinearAdapter`).
    fn adapter(&self, tokens: f64, rank: f64, inp: f64, out: f64, split: f64) -> f64 {
        self.gemm(tokens, rank, inp / split) + self.gemm(tokens, out / split, rank)
    }

    /// The adapters' forward GEMMs of one layer's attention and MLP blocks (0, 0 without LoRA);
    /// their backward is twice that (input and adapter-weight gradients), the weight share once.
    fn adapters(&self, moe: Option<&Moe>) -> (f64, f64) {
        let Some((r, t)) = self.lora else {
            return (0.0, 0.0);
        };
        let (tokens, h, tp) = (self.t, self.h, self.tp);
        let on = |b: bool| if b { 1.0 } else { 0.0 };
        let attention = on(t.qkv) * self.adapter(tokens, r, h, self.q + 2.0 * self.kv, tp)
            + on(t.proj) * self.adapter(tokens, r, self.q, h, tp);
        let up = |ffn: f64| if self.swiglu { 2.0 * ffn } else { ffn };
        let mlp_of = |rows: f64, ffn: f64, split: f64| {
            on(t.fc1) * self.adapter(rows, r, h, up(ffn), split)
                + on(t.fc2) * self.adapter(rows, r, ffn, h, split)
        };
        let mlp = match moe {
            None => mlp_of(tokens, self.ffn, tp),
            Some(moe) => {
                let rows = tokens * moe.topk * moe.load * self.ep / moe.experts;
                let local = (moe.experts / self.ep).max(1.0);
                let shared = if moe.shared_ffn > 0.0 {
                    mlp_of(tokens, moe.shared_ffn, tp)
                } else {
                    0.0
                };
                local * mlp_of(rows, moe.ffn, self.etp) + shared
            }
        };
        (attention, mlp)
    }

    /// Seconds of one GEMM `[m × k] · [k × n]` (`2·m·n·k` FLOPs).
    fn gemm(&self, m: f64, n: f64, k: f64) -> f64 {
        let flops = 2.0 * m * n * k;
        if flops <= 0.0 {
            return 0.0;
        }
        let eff = self.cal.gemm(m, n, k);
        if eff <= 0.0 {
            return 0.0;
        }
        flops / (self.gemm_peak.0 * eff)
    }

    /// Seconds of a MoE layer's routing ([`router_traffic`]), (forward, backward): its bytes at
    /// the memory-bound rate, backward ×[`Calibration::memory_backward`], and its kernels.
    fn routing(&self, r: &RouterShape) -> (f64, f64) {
        let tr = router_traffic(r);
        let k = self.cal.kernel_overhead.0;
        (
            self.memory(tr.forward_bytes) + tr.forward_kernels * k,
            self.cal.memory_backward * self.memory(tr.backward_bytes) + tr.backward_kernels * k,
        )
    }

    /// Seconds to stream `bytes` through HBM.
    fn memory(&self, bytes: f64) -> f64 {
        bytes.max(0.0) / (self.mem_bw.0 * self.cal.memory_efficiency)
    }

    /// Attention core forward of one layer, seconds, and the backward / forward ratio.
    /// Flash: causal `2·b·s·(s/cp)·q/tp` FLOPs (half of `4·b·s_q·s_k·q`) at the attention
    /// efficiency. Unfused: the full (non-causal) `4·b·s_q·s_k·q/tp` FLOPs as batched GEMMs
    /// with inner dimension `head_dim`, plus the score traffic through HBM.
    fn attention_core(&self) -> (f64, f64) {
        self.attention_core_with(None)
    }

    /// (query, key) pairs of one sequence flash attention computes, causal: `s²/2` for full
    /// attention; with a window of `w` keys the band `w·s − w²/2` (the integral of
    /// `min(i, w)`, the same continuous form as `s²/2`), widened by one kernel tile
    /// ([`Calibration::attention_block`]) for the partly masked tiles along its edge.
    fn causal_pairs(&self, window: Option<f64>) -> f64 {
        let full = self.s * self.s / 2.0;
        match window {
            Some(w) => {
                let band = w + self.cal.attention_block;
                if band >= self.s {
                    full
                } else {
                    band * self.s - band * band / 2.0
                }
            }
            None => full,
        }
    }

    /// [`Work::attention_core`] of a layer with full attention (`None`) or a sliding window.
    /// Megatron's FLOPs count (`num_floating_point_operations`, training.py d98e8a64) ignores
    /// `--window-size`; the kernel's time does not.
    fn attention_core_with(&self, window: Option<f64>) -> (f64, f64) {
        match self.attention {
            Attention::Flash | Attention::Flash2 => {
                // `2·pairs` score elements per head over QKᵀ and ·V, split over cp and tp.
                let pairs = self.b * self.causal_pairs(window) / self.cp;
                let flops = match &self.mla {
                    // QKᵀ over the query/key head size, ·V over the value head size.
                    Some(a) => 2.0 * pairs * a.heads * (a.qk_head + a.v_head) / self.tp,
                    None => 4.0 * pairs * self.q / self.tp,
                };
                let efficiency = if self.attention_peak != self.bf16_peak {
                    self.cal.fp8_attention_efficiency
                } else if self.attention == Attention::Flash2 {
                    self.cal.flash2_efficiency
                } else {
                    self.cal.attention_efficiency
                };
                (
                    flops / (self.attention_peak.0 * efficiency),
                    self.cal.attention_backward,
                )
            }
            Attention::Unfused => {
                let heads = (self.q / self.head_dim.max(1.0) / self.tp).max(1.0);
                let (sq, sk) = (self.s / self.cp, self.s);
                // QKᵀ and ·V: `2·sq·sk·d` FLOPs each per head and sequence. Their thin inner
                // (or outer) dimension `d` makes them bound by the score traffic counted
                // below, so the FLOPs run at the large-GEMM efficiency (no shape penalty,
                // which would count that traffic twice).
                let scores = self.b * heads * sq * sk;
                let gemms =
                    4.0 * scores * self.head_dim / (self.gemm_peak.0 * self.cal.gemm_efficiency);
                let mem = self.memory(scores * self.cal.unfused_bytes_per_score);
                let fwd = gemms + mem;
                let bwd = 2.0 * gemms + self.cal.memory_backward * mem;
                (fwd, if fwd > 0.0 { bwd / fwd } else { 0.0 })
            }
        }
    }

    /// What a windowed layer's attention block saves over a full one, (forward, backward), as
    /// non-positive seconds: the core's difference, with its backward ratio and, under
    /// selective or full recompute, once more for the recomputed core. Unfused attention
    /// computes every score and masks the band, so it saves nothing.
    fn window_delta(&self) -> (f64, f64) {
        let Some(w) = self.window else {
            return (0.0, 0.0);
        };
        let (full, ratio) = self.attention_core_with(None);
        let (banded, _) = self.attention_core_with(Some(w));
        let d = banded - full;
        let recomputed = match self.recompute {
            // `op` keeps the attention kernel's output: the core never re-runs.
            Recompute::None | Recompute::Op => 0.0,
            Recompute::Selective | Recompute::Full => d,
        };
        (d, ratio * d + recomputed)
    }

    fn mlp_gemms(&self, tokens: f64, ffn: f64, split: f64) -> f64 {
        self.mlp_gemms_on(tokens, ffn, split, self.h)
    }

    /// An MLP's GEMMs on `width`-wide tokens (a latent MoE's experts run on the latent).
    fn mlp_gemms_on(&self, tokens: f64, ffn: f64, split: f64, width: f64) -> f64 {
        let (up, down) = self.mlp_gemm_pair(tokens, ffn, split, width);
        up + down
    }

    /// An MLP's up (FC1, with the gate under SwiGLU) and down (FC2) GEMMs, seconds each.
    fn mlp_gemm_pair(&self, tokens: f64, ffn: f64, split: f64, width: f64) -> (f64, f64) {
        let up = if self.swiglu { 2.0 * ffn } else { ffn };
        (
            self.gemm(tokens, up / split, width),
            self.gemm(tokens, width, ffn / split),
        )
    }

    /// MLA's projections (multi_latent_attention.py `MLASelfAttention.get_query_key_value_tensors`):
    /// the replicated down-projections `h → q_lora_rank` and `h → kv_lora_rank + d_rope`, the
    /// tp-split up-projections `q_lora_rank → n·(d_nope + d_rope)` (or `h →` without q
    /// compression) and `kv_lora_rank → n·(d_nope + d_v)`, and the output `n·d_v → h`.
    fn mla_gemms(&self, a: &Mla) -> f64 {
        let (t, h, tp) = (self.t, self.h, self.tp);
        let q = if a.q_lora > 0.0 {
            self.gemm(t, a.q_lora, h) + self.gemm(t, a.heads * a.qk_head / tp, a.q_lora)
        } else {
            self.gemm(t, a.heads * a.qk_head / tp, h)
        };
        q + self.gemm(t, a.kv_lora + a.rope, h)
            + self.gemm(t, a.heads * (a.nope + a.v_head) / tp, a.kv_lora)
            + self.gemm(t, h, a.heads * a.v_head / tp)
    }

    /// MLA's up projections, what `recompute_modules mla_up_proj` reruns: `q_lora_rank →
    /// n·(d_nope + d_rope)` (with q compression) and `kv_lora_rank → n·(d_nope + d_v)`.
    fn mla_up_projections(&self, a: &Mla) -> f64 {
        let (t, tp) = (self.t, self.tp);
        let q = if a.q_lora > 0.0 {
            self.gemm(t, a.heads * a.qk_head / tp, a.q_lora)
        } else {
            0.0
        };
        q + self.gemm(t, a.heads * (a.nope + a.v_head) / tp, a.kv_lora)
    }

    fn blocks(&self) -> Blocks {
        self.blocks_with(self.moe.as_ref())
    }

    /// One layer's blocks with the given MLP: routed experts, or the dense `ffn` (`None`).
    fn blocks_with(&self, moe: Option<&Moe>) -> Blocks {
        let (t, h, tp) = (self.t, self.h, self.tp);
        let ub = self.ub_slowdown;
        // Attention block: QKV, core, projection; norm + residual + dropout over h. Forward
        // and one backward pass of its GEMMs (input gradient; the weight gradient has the same
        // shapes), each with the userbuffers kernels' SMs taken where `overlap_tp_comm` runs
        // them beside it ([`UB_COMM_SMS`]): the projection forward, QKV backward.
        let (attn_gemm, attn_gemm_f, attn_gemm_b) = match &self.mla {
            Some(a) => {
                let all = self.mla_gemms(a);
                let proj = self.gemm(t, h, a.heads * a.v_head / tp);
                (all, all + (ub - 1.0) * proj, all)
            }
            None => {
                let qkv = self.gemm(t, (self.q + 2.0 * self.kv) / tp, h);
                let proj = self.gemm(t, h, self.q / tp);
                (qkv + proj, qkv + ub * proj, ub * qkv + proj)
            }
        };
        let (core, core_backward) = self.attention_core();
        // Bytes per token of norm (read h, write h), residual add (read 2h, write h) and
        // dropout (read h, write h, a 1-byte mask): 7.5h elements of 2 bytes.
        let ew_bytes = 15.0 * h;
        // Rotary embedding reads and writes q and k (with MLA only their rotary parts: n·d_rope
        // of the query and the d_rope key shared by all heads).
        let rotary = match &self.mla {
            Some(a) => t * 2.0 * (a.heads * a.rope / tp + a.rope) * self.act_bytes,
            None => t * 2.0 * (self.q + self.kv) / tp * self.act_bytes,
        };
        // QK-norm reads and writes q and k once more (attention.py `q_layernorm`).
        let qk_norm = if self.qk_norm {
            t * 2.0 * (self.q + self.kv) / tp * self.act_bytes
        } else {
            0.0
        };
        let attn_mem = self.memory(self.t_sp * ew_bytes + rotary + qk_norm);
        // MLP block: GEMMs, activation; norm + residual + dropout over h.
        // Activation-function elements (the MLP inner size per token, over all experts).
        let dense_fc = self.mlp_gemm_pair(t, self.ffn, tp, h);
        let (mlp_gemm, act_elems, shared_gemm, routed_act_elems) = match moe {
            None => (dense_fc.0 + dense_fc.1, t * self.ffn / tp, 0.0, 0.0),
            Some(moe) => {
                let router = self.gemm_bf16(t, moe.experts, h);
                let pairs = t * moe.topk * moe.load;
                // Per-expert GEMM rows: the pairs of one EP rank over its E/ep experts.
                let rows = pairs * self.ep / moe.experts;
                let local_experts = (moe.experts / self.ep).max(1.0);
                let (width, latent_proj) = if moe.latent > 0.0 {
                    // moe_layer.py: fc1_latent_proj h → latent before the dispatch,
                    // fc2_latent_proj latent → h after the combine, replicated over tp.
                    (
                        moe.latent,
                        self.gemm(t, moe.latent, h) + self.gemm(t, h, moe.latent),
                    )
                } else {
                    (h, 0.0)
                };
                let experts =
                    local_experts * self.mlp_gemms_on(rows, moe.ffn, self.etp, width) + latent_proj;
                let shared = if moe.shared_ffn > 0.0 {
                    self.mlp_gemms(t, moe.shared_ffn, tp)
                } else {
                    0.0
                };
                (
                    router + experts + shared,
                    pairs * moe.ffn / self.etp + t * moe.shared_ffn / tp,
                    shared,
                    pairs * moe.ffn / self.etp,
                )
            }
        };
        // The dense MLP's FC2 forward and FC1 backward beside userbuffers kernels, as above;
        // a MoE layer's experts and router have no userbuffers overlap.
        let (mlp_gemm_f, mlp_gemm_b) = match moe {
            None => {
                let (fc1, fc2) = dense_fc;
                (fc1 + ub * fc2, ub * fc1 + fc2)
            }
            Some(_) => (mlp_gemm, mlp_gemm),
        };
        // SwiGLU reads gate and up and writes one; GeLU reads one and writes one.
        let act_bytes_per_elem = if self.swiglu { 3.0 } else { 2.0 } * self.act_bytes;
        let mlp_mem = self.memory(self.t_sp * ew_bytes + act_elems * act_bytes_per_elem);
        let unfused_kernels = match self.attention {
            Attention::Flash | Attention::Flash2 => 0.0,
            Attention::Unfused => 3.0,
        };
        let k_attn = (KERNELS_ATTENTION + unfused_kernels) * self.per_kernel(GraphPart::Attention);
        let k_mlp = KERNELS_MLP
            * self.per_kernel(if moe.is_some() {
                GraphPart::Moe
            } else {
                GraphPart::Mlp
            });
        // LoRA: the adapters run beside every targeted linear; the base keeps only dgrad.
        let (attn_adapters, mlp_adapters) = self.adapters(moe);
        let wgrad = self.base_wgrad();
        // FP8 / FP4: the casts around the low-precision linears, and FP8 attention's own.
        let (attn_cast_f, attn_cast_b) = self.attention_casts();
        let (dpa_cast_f, dpa_cast_b) = self.fp8_attention_casts();
        let (mlp_cast_f, mlp_cast_b) = self.mlp_block_casts(moe);
        let attention_f =
            attn_gemm_f + attn_adapters + core + attn_mem + k_attn + attn_cast_f + dpa_cast_f;
        // The router's and the permutation's memory-bound kernels on a MoE layer.
        let (route_f, route_b) = moe.map_or((0.0, 0.0), |m| self.routing(&m.routing));
        let mlp_f = mlp_gemm_f + mlp_adapters + mlp_mem + k_mlp + mlp_cast_f + route_f;
        let mut attention_b = (1.0 + wgrad) * attn_gemm_b
            + 2.0 * (attn_adapters + k_attn)
            + core_backward * core
            + self.cal.memory_backward * attn_mem
            + attn_cast_b
            + dpa_cast_b;
        let mut mlp_b = (1.0 + wgrad) * mlp_gemm_b
            + 2.0 * (mlp_adapters + k_mlp)
            + self.cal.memory_backward * mlp_mem
            + mlp_cast_b
            + route_b;
        match self.recompute {
            Recompute::None => {}
            // Selective recompute reruns the forward of each of its modules before the
            // backward (transformer_config.py:560-583, d98e8a64).
            Recompute::Selective => {
                let re = self.modules;
                if re.core_attn {
                    attention_b += core;
                }
                if re.layernorm {
                    // input_layernorm and pre_mlp_layernorm: read h, write h each.
                    let norm = self.memory(self.t_sp * 2.0 * h * self.act_bytes);
                    attention_b += norm;
                    mlp_b += norm;
                }
                if re.mla_up_proj {
                    if let Some(a) = &self.mla {
                        attention_b += self.mla_up_projections(a) + self.memory(rotary);
                    }
                }
                match moe {
                    None if re.mlp => mlp_b += mlp_f,
                    Some(_) if re.moe => mlp_b += mlp_f,
                    Some(_) => {
                        if re.shared_experts {
                            mlp_b += shared_gemm;
                        }
                        if re.moe_act {
                            mlp_b += self.memory(routed_act_elems * act_bytes_per_elem);
                        }
                    }
                    None => {}
                }
            }
            Recompute::Full => {
                attention_b += attention_f;
                mlp_b += mlp_f;
            }
            // Per-op checkpointing re-runs the even-numbered matmuls (wk and wo; w3 of a SwiGLU
            // MLP, the second linear of a GeLU one) and every element-wise kernel: the norms,
            // rotary, the activation function (torchtitan@9dec370 parallelize_llama.py:214-264;
            // `memory::op_checkpoint_bytes` keeps the rest).
            Recompute::Op => {
                let rerun_attn = match &self.mla {
                    Some(_) => attn_gemm / 2.0,
                    None => self.gemm(t, self.kv / tp, h) + self.gemm(t, h, self.q / tp),
                };
                let mlp_share = if self.swiglu { 1.0 / 3.0 } else { 0.5 };
                attention_b += rerun_attn + attn_mem;
                mlp_b += mlp_share * mlp_gemm + mlp_mem;
            }
        }
        Blocks {
            attention_f,
            attention_b,
            mlp_f,
            mlp_b,
            attention_w: wgrad * attn_gemm_b + attn_adapters + k_attn,
            mlp_w: wgrad * mlp_gemm_b + mlp_adapters + k_mlp,
        }
    }

    /// Embedding lookup: read rows and write `[T, h]` (forward); scatter-add the gradient
    /// into the fp32 main grad (backward).
    fn embedding(&self) -> (f64, f64) {
        let fwd = self.memory(self.t_sp * self.h * 2.0 * self.act_bytes);
        // A frozen embedding (LoRA) gets no gradient: nothing to scatter.
        let bwd =
            self.base_wgrad() * self.memory(self.t_sp * self.h * (self.act_bytes + 2.0 * 4.0));
        (fwd, bwd)
    }

    /// Final norm, logits GEMM, fp32 cross entropy over the vocabulary shard.
    fn output(&self) -> (f64, f64) {
        let logits = self.gemm_bf16(self.t, self.vocab / self.tp, self.h);
        let norm = self.memory(self.t_sp * self.h * 2.0 * self.act_bytes);
        // Read bf16 logits, write fp32 softmax, read it again for the loss.
        let ce = self.memory(self.t * self.vocab / self.tp * (self.act_bytes + 4.0 + 4.0));
        let fwd = logits + norm + ce;
        let bwd = (1.0 + self.base_wgrad()) * logits + self.cal.memory_backward * (norm + ce);
        (fwd, bwd)
    }

    /// The logits GEMM's weight gradient, one forward's worth (`dW = Xᵀ·dY`); none when LoRA
    /// freezes the output layer.
    fn output_weight(&self) -> f64 {
        self.base_wgrad() * self.gemm_bf16(self.t, self.vocab / self.tp, self.h)
    }

    /// Multi-token prediction on the last chunk, per (forward, backward, weight) pass: per
    /// depth the `2h → h` projection, one transformer layer of the model's kind and another
    /// output layer with its loss (megatron/core/transformer/multi_token_prediction.py).
    fn mtp(&self, b: &Blocks, depths: u64) -> (f64, f64, f64) {
        if depths == 0 {
            return (0.0, 0.0, 0.0);
        }
        let d = depths as f64;
        let proj = self.gemm(self.t, self.h / self.tp, 2.0 * self.h);
        let (out_f, out_b) = self.output();
        (
            d * (proj + b.attention_f + b.mlp_f + out_f),
            d * (2.0 * proj + b.attention_b + b.mlp_b + out_b),
            d * (proj + b.attention_w + b.mlp_w + self.output_weight()),
        )
    }

    /// The share of a part's kernels CUDA graphs capture: all with `full_iteration` or a
    /// per-layer graph of the whole layer; with `cuda_graphs … MODULES` the parts named
    /// (`moe_router` [`KERNELS_MOE_ROUTER`] of the MoE block's [`KERNELS_MLP`],
    /// `moe_preprocess` one more).
    fn captured_share(&self, part: GraphPart) -> f64 {
        use venus_base::base::CudaGraphImpl;
        let g = &self.graphs;
        match g.cuda_graphs {
            CudaGraphImpl::None => return 0.0,
            CudaGraphImpl::FullIteration => return 1.0,
            CudaGraphImpl::Local | CudaGraphImpl::TransformerEngine => {}
        }
        let m = g.graph_modules;
        if m.is_empty() {
            return 1.0;
        }
        let on = |w: &str| if m.has(w) { 1.0 } else { 0.0 };
        match part {
            GraphPart::Attention => on("attn"),
            GraphPart::Mlp => on("mlp"),
            GraphPart::Mamba => on("mamba"),
            GraphPart::Moe if m.has("moe") => 1.0,
            GraphPart::Moe => {
                (on("moe_router") * KERNELS_MOE_ROUTER + on("moe_preprocess")) / KERNELS_MLP
            }
        }
    }

    /// The fixed cost of one kernel of a part: [`Calibration::kernel_overhead`] less the host
    /// launch cost ([`Calibration::launch_overhead`]) of its captured share.
    fn per_kernel(&self, part: GraphPart) -> f64 {
        self.cal.kernel_overhead.0 - self.captured_share(part) * self.cal.launch_overhead.0
    }

    /// A layer's blocks with the exposed part of its offload copies: the device-to-host copy
    /// of a layer's offloaded tensors runs on its own stream beside the layer's forward, the
    /// host-to-device reload beside the backward of the layer after it
    /// (fine_grained_activation_offload.py: `d2h_stream`, `h2d_stream`), so each pass waits
    /// `max(0, copy − compute)` for its copy; an offloading share `< 1` of the layers
    /// (`offload_layers`) scales the wait. The weight-gradient share is not touched.
    fn with_offload(&self, mut b: Blocks) -> Blocks {
        let (copy, share) = self.offload_copy;
        if copy <= 0.0 || share <= 0.0 {
            return b;
        }
        b.mlp_f += share * (copy - (b.attention_f + b.mlp_f)).max(0.0);
        b.mlp_b += share * (copy - (b.attention_b + b.mlp_b)).max(0.0);
        b
    }

    fn optimizer_step(&self, stage: u64) -> f64 {
        let (dense, expert) = self
            .sc_stage_params
            .get(stage as usize)
            .copied()
            .unwrap_or((0.0, 0.0));
        let mut dense_local = dense / self.tp;
        let mut expert_local = expert / (self.ep * self.etp);
        if self.distributed_optimizer {
            dense_local /= self.dp * self.cp;
            expert_local /= self.expert_dp;
        }
        self.memory((dense_local + expert_local) * self.optimizer_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nemotron-H 8B's Mamba-2 layer (d_inner 8192, 128 heads, 8 groups, state 128) in bf16
    /// at tp 1: x twice and y 3·8192·2, B and C twice 4·2048·2, dt 26·128, the states
    /// 12·8192·128/128 and `C·Bᵀ` 8·8·128 make 167,168 bytes per token; tp 2 halves it.
    #[test]
    fn the_ssd_scan_moves_its_chunk_states_and_operands_through_hbm() {
        let d = Mamba {
            d_inner: 8192.0,
            heads: 128.0,
            bc: 2.0 * 8.0 * 128.0,
            state: 128.0,
            groups: 8.0,
        };
        assert_eq!(ssd_scan_bytes_per_token(&d, 1.0, 2.0), 167_168.0);
        assert_eq!(ssd_scan_bytes_per_token(&d, 2.0, 2.0), 167_168.0 / 2.0);
        // The chunk states are the largest term (98,304 of 167,168 bytes): state 256 (Nemotron-H
        // 56B) doubles them and B and C.
        let wide = Mamba {
            state: 256.0,
            bc: 2.0 * 8.0 * 256.0,
            ..d
        };
        assert_eq!(
            ssd_scan_bytes_per_token(&wide, 1.0, 2.0) - ssd_scan_bytes_per_token(&d, 1.0, 2.0),
            98_304.0 + 8.0 * 8.0 * 128.0
        );
    }

    #[test]
    fn gemm_efficiency_falls_with_each_small_dimension() {
        let c = Calibration {
            gemm_efficiency: 0.8,
            gemm_half_dim: 128.0,
            ..Calibration::default()
        };
        let f = 2048.0 / (2048.0 + 128.0);
        assert!((c.gemm(2048.0, 2048.0, 2048.0) - 0.8 * f * f * f).abs() < 1e-15);
        // A skinny GEMM (128 columns) runs at half the efficiency of a wide one.
        let wide = c.gemm(4096.0, 4096.0, 4096.0);
        let skinny = c.gemm(4096.0, 128.0, 4096.0);
        let g = 4096.0 / (4096.0 + 128.0);
        assert!((skinny / wide - 0.5 / g).abs() < 1e-12);
        assert_eq!(c.gemm(0.0, 10.0, 10.0), 0.0);
    }

    #[test]
    fn an_optimizer_step_moves_38_bytes_per_parameter_in_the_default_recipe() {
        use venus_base::base::{Dtype, Precision};
        use venus_plan::plan::Recipe;
        // Norm read 4; Adam reads master, grad, m, v (16) and writes master, m, v (12); the
        // copy reads the master (4) and writes the bf16 parameter (2).
        let r = Recipe::for_precision(Precision::Bf16);
        assert_eq!(optimizer_step_bytes(&r), 4.0 + 16.0 + 12.0 + 6.0);
        // The precision-aware optimizer's bf16 moments halve their four passes: 8 bytes less.
        let bf16_moments = r.with_training_dtypes(None, None, Some(Dtype::Bf16), Some(Dtype::Bf16));
        assert_eq!(optimizer_step_bytes(&bf16_moments), 38.0 - 8.0);
    }

    #[test]
    fn ampere_and_hopper_have_their_own_calibration() {
        assert_eq!(
            Calibration::for_arch(GpuArch::Ampere),
            Calibration::ampere()
        );
        assert_eq!(
            Calibration::for_arch(GpuArch::Hopper),
            Calibration::hopper()
        );
        assert_ne!(Calibration::ampere(), Calibration::hopper());
    }

    #[test]
    fn an_arch_has_a_fit_exactly_when_it_says_it_is_calibrated() {
        for &arch in GpuArch::ALL {
            assert_eq!(
                Calibration::fitted(arch).is_some(),
                arch.is_calibrated(),
                "{arch:?}"
            );
        }
    }

    #[test]
    fn cdna_calibrations_scale_hoppers_by_the_measured_matmul_gap() {
        // MI300X: 668.4/1300 over H100's 794.5/989 = 0.640, times Hopper's 0.80 and 0.5.
        let c3 = Calibration::for_arch(GpuArch::Cdna3);
        assert_eq!((c3.gemm_efficiency, c3.attention_efficiency), (0.512, 0.32));
        // MI355X: 1565/2500 over 794.5/989 = 0.779.
        let c4 = Calibration::for_arch(GpuArch::Cdna4);
        assert_eq!((c4.gemm_efficiency, c4.attention_efficiency), (0.623, 0.39));
        let h = Calibration::hopper();
        for c in [c3, c4] {
            assert_eq!(
                (c.gemm_half_dim, c.memory_efficiency, c.kernel_overhead),
                (h.gemm_half_dim, h.memory_efficiency, h.kernel_overhead)
            );
        }
    }

    #[test]
    fn a_large_bf16_gemm_on_mi300x_runs_at_the_cdna3_efficiency() {
        // 8192³ at gemm_half_dim 320: 0.512 · (8192/8512)³ = 0.4564 of 1,307.4 TFLOP/s, so
        // 2·8192³ FLOPs take 1.84 ms.
        let c = Calibration::for_arch(GpuArch::Cdna3);
        let d = 8192.0;
        let eff = c.gemm(d, d, d);
        assert!((eff - 0.512 * (d / (d + 320.0)).powi(3)).abs() < 1e-12);
        let seconds = 2.0 * d * d * d / (1307.4e12 * eff);
        assert!((seconds - 1.843e-3).abs() < 1e-5, "{seconds}");
    }

    #[test]
    fn every_arch_has_its_own_calibration_and_ada_is_amperes_with_its_fitted_asymptote() {
        for &a in GpuArch::ALL {
            assert_eq!(Calibration::fitted(a).is_some(), a.is_calibrated(), "{a:?}");
            assert!(a.is_calibrated(), "{a:?}");
        }
        let ada = Calibration::for_arch(GpuArch::Ada);
        assert_eq!(ada.gemm_efficiency, 0.754);
        assert_eq!(
            Calibration {
                gemm_efficiency: Calibration::ampere().gemm_efficiency,
                ..ada
            },
            Calibration::ampere()
        );
        // Blackwell has its own fit now: its GEMM curve, Hopper's other constants.
        let b = Calibration::for_arch(GpuArch::Blackwell);
        assert_eq!((b.gemm_efficiency, b.gemm_half_dim), (0.785, 1287.0));
        assert_eq!(
            b.attention_efficiency,
            Calibration::hopper().attention_efficiency
        );
    }
}
