//! Cost model: what each scheduled compute op costs, and the sizes of the messages around it.
//!
//! Input: a validated [`Scenario`]. Output: a [`ComputeModel`] that prices one forward,
//! backward or weight-gradient pass of a (pipeline stage, model chunk) as a [`ChunkCost`]
//! (embedding extra, per-layer attention and MLP blocks, output-layer extra) and the optimizer
//! step of a stage.
//! [`model_for`] picks the implementation the plan asks for:
//! - `measured` set: [`MeasuredModel`], VenusSim's step snapshot (first/middle/last virtual stage
//!   forward+backward per microbatch per chunk, split 1:2);
//! - `mfu` set: [`MfuModel`], VenusSim's node durations exactly ([`venussim`]);
//! - neither: [`analytic::AnalyticModel`], per-layer GEMM / attention / memory-bound work with
//!   the constants of one [`analytic::Calibration`].
//!
//! Invariants: pure functions of the scenario, no I/O, no panics on user numbers. Every chunk of
//! a stage holds the same layers ([`venus_plan::plan::StageSplit`]), and all decoder layers of a
//! model are alike (a MoE model's leading `first_k_dense` layers excepted: a chunk that holds
//! some prices its MLP as the layer-weighted mean, so its total is exact), so a [`ChunkCost`]
//! prices one layer and says how many there are.

pub mod analytic;
pub mod venussim;

use venus_base::base::{Ratio, Seconds};
use venus_plan::plan::Scenario;

pub use analytic::{AnalyticModel, Calibration};

/// Forward, backward or weight-gradient pass.
///
/// A schedule that runs the weight gradient as its own op (`W`, the zero-bubble schedules of
/// Qi et al., "Zero Bubble (Almost) Pipeline Parallelism", ICLR 2024) prices it as
/// [`Pass::Weight`] and its input-gradient op (`B`) as the backward less that share
/// ([`ComputeModel::input_gradient`]); every other schedule prices the whole backward as
/// [`Pass::Backward`]. For a GEMM `Y = XW` the backward is two GEMMs of the forward's size,
/// `dX = dY·Wᵀ` (B) and `dW = Xᵀ·dY` (W), so W ≈ B (the paper's §2); work without weights
/// (attention core, element-wise kernels, recompute) stays in B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pass {
    Forward,
    Backward,
    /// The weight-gradient share of the backward.
    Weight,
}

/// The compute of one pass of one microbatch over one model chunk, split so that the
/// lowering can put collectives between the pieces. In forward order: `pre`, then `layers`
/// times (`attention`, `mlp`), then `post`; a backward runs the same pieces in reverse.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChunkCost {
    /// Embedding lookup (stage 0, chunk 0); zero elsewhere.
    pub pre: Seconds,
    /// Decoder layers in the chunk.
    pub layers: u64,
    /// One layer's attention block (norm, QKV, attention core, output projection).
    pub attention: Seconds,
    /// One layer's MLP block (norm, MLP or router + experts).
    pub mlp: Seconds,
    /// Output layer and loss (last stage, last chunk); zero elsewhere.
    pub post: Seconds,
    /// The whole chunk. Equal to the sum of the pieces up to rounding; models whose node
    /// durations are defined per chunk (VenusSim's) set it exactly, and a lowering that emits
    /// one node per chunk uses it.
    pub total: Seconds,
}

impl ChunkCost {
    /// A chunk priced per piece; `total` is their sum.
    pub fn from_pieces(
        pre: Seconds,
        layers: u64,
        attention: Seconds,
        mlp: Seconds,
        post: Seconds,
    ) -> ChunkCost {
        let total = pre.0 + layers as f64 * (attention.0 + mlp.0) + post.0;
        ChunkCost {
            pre,
            layers,
            attention,
            mlp,
            post,
            total: Seconds(total),
        }
    }

    /// A chunk priced as a whole, split evenly over its layers' two blocks so that TP
    /// collectives can sit between them (VenusSim has one node per chunk and no per-layer
    /// split; the even split keeps the chunk total).
    pub fn even(total: Seconds, layers: u64) -> ChunkCost {
        if layers == 0 {
            return ChunkCost {
                pre: total,
                layers: 0,
                attention: Seconds(0.0),
                mlp: Seconds(0.0),
                post: Seconds(0.0),
                total,
            };
        }
        let half = Seconds(total.0 / (2.0 * layers as f64));
        ChunkCost {
            pre: Seconds(0.0),
            layers,
            attention: half,
            mlp: half,
            post: Seconds(0.0),
            total,
        }
    }
}

impl ChunkCost {
    /// This cost less `other`, piece by piece (never below zero).
    pub fn less(&self, other: &ChunkCost) -> ChunkCost {
        let sub = |a: Seconds, b: Seconds| Seconds((a.0 - b.0).max(0.0));
        ChunkCost {
            pre: sub(self.pre, other.pre),
            layers: self.layers,
            attention: sub(self.attention, other.attention),
            mlp: sub(self.mlp, other.mlp),
            post: sub(self.post, other.post),
            total: sub(self.total, other.total),
        }
    }
}

/// Prices the compute ops of a scheduled stage.
pub trait ComputeModel {
    /// One pass of one microbatch over model chunk `chunk` of pipeline stage `stage`.
    /// [`Pass::Backward`] is the whole backward, [`Pass::Weight`] its weight-gradient share.
    fn chunk(&self, stage: u64, chunk: u64, pass: Pass) -> ChunkCost;

    /// The input-gradient op (`B`) of a schedule that runs the weight gradient on its own:
    /// the backward less its [`Pass::Weight`] share, so that B + W is the whole backward.
    fn input_gradient(&self, stage: u64, chunk: u64) -> ChunkCost {
        self.chunk(stage, chunk, Pass::Backward)
            .less(&self.chunk(stage, chunk, Pass::Weight))
    }
    /// The optimizer step of a stage (per rank, over its local shard).
    fn optimizer_step(&self, stage: u64) -> Seconds;
    /// `analytic`, `mfu` or `measured`, for reports.
    fn name(&self) -> &'static str;
}

/// The model the plan asks for: `measured` wins over `mfu` (as VenusSim's
/// `use_step_snapshot` replaces the FLOP-based nodes), else the analytic model.
pub fn model_for(sc: &Scenario) -> Box<dyn ComputeModel> {
    let gpu = &sc.cluster.gpu;
    let analytic = AnalyticModel::new(sc, Calibration::for_arch(gpu.arch).with_gemm(gpu.gemm));
    if sc.plan.replayed().is_some() {
        Box::new(MeasuredModel::new(sc, analytic))
    } else if let Some(mfu) = &sc.plan.mfu {
        Box::new(MfuModel::new(sc, *mfu, analytic))
    } else {
        Box::new(analytic)
    }
}

/// VenusSim-compatible compute: node durations exactly as VenusSim computes them
/// (`venussim::forward_node_ops`, `node_time_ns`), at the GPU's (bf16) peak × `mfu`.
/// The optimizer step, which VenusSim does not model, comes from the analytic model.
pub struct MfuModel {
    forward_ns: u64,
    forward_embedding_ns: u64,
    backward_ns: u64,
    backward_embedding_ns: u64,
    shape: venussim::VenusShape,
    sc_split: venus_plan::plan::StageSplit,
    optimizer: AnalyticModel,
}

impl MfuModel {
    pub fn new(sc: &Scenario, mfu: Ratio, optimizer: AnalyticModel) -> MfuModel {
        let m = venussim::VenusModel::from_scenario(sc);
        let sh = venussim::VenusShape::from_scenario(sc);
        let peak = sc.cluster.gpu.peak;
        let ns = |ops| venussim::node_time_ns(ops, peak, mfu);
        MfuModel {
            forward_ns: ns(venussim::forward_node_ops(&m, &sh, false)),
            forward_embedding_ns: ns(venussim::forward_node_ops(&m, &sh, true)),
            backward_ns: ns(venussim::backward_node_ops(&m, &sh, false)),
            backward_embedding_ns: ns(venussim::backward_node_ops(&m, &sh, true)),
            shape: sh,
            sc_split: sc.split.clone(),
            optimizer,
        }
    }
}

impl ComputeModel for MfuModel {
    fn chunk(&self, stage: u64, chunk: u64, pass: Pass) -> ChunkCost {
        let emb = venussim::carries_embedding(&self.shape, stage, chunk);
        let ns = match (pass, emb) {
            (Pass::Forward, false) => self.forward_ns,
            (Pass::Forward, true) => self.forward_embedding_ns,
            (Pass::Backward, false) => self.backward_ns,
            (Pass::Backward, true) => self.backward_embedding_ns,
            // VenusSim prices a backward as one node of twice the forward's GEMM work; W ≈ B
            // (Qi et al. 2024, §2) gives the weight gradient half of it.
            (Pass::Weight, false) => self.backward_ns / 2,
            (Pass::Weight, true) => self.backward_embedding_ns / 2,
        };
        ChunkCost::even(
            Seconds::from_ns(ns as f64),
            self.sc_split.chunk_layers(stage, chunk),
        )
    }

    fn optimizer_step(&self, stage: u64) -> Seconds {
        self.optimizer.optimizer_step(stage)
    }

    fn name(&self) -> &'static str {
        "mfu"
    }
}

/// VenusSim's step snapshot: the measured forward+backward time of one microbatch on one
/// model chunk per stage kind, forward = ⅓ and backward = ⅔, each truncated to whole
/// nanoseconds as `int(data · 1e6 · (1/3))` (VenusSim generator/utils.py:88-100). A
/// one-stage pipeline uses `first`, as VenusSim tests the first stage before the last.
pub struct MeasuredModel {
    first: Seconds,
    middle: Seconds,
    last: Seconds,
    pp: u64,
    vpp: u64,
    split: venus_plan::plan::StageSplit,
    optimizer: AnalyticModel,
}

impl MeasuredModel {
    pub fn new(sc: &Scenario, optimizer: AnalyticModel) -> MeasuredModel {
        let (first, middle, last) = match sc.plan.replayed() {
            Some(m) => (m.first, m.middle, m.last),
            None => (Seconds(0.0), Seconds(0.0), Seconds(0.0)),
        };
        MeasuredModel {
            first,
            middle,
            last,
            pp: sc.pp,
            vpp: sc.vpp,
            split: sc.split.clone(),
            optimizer,
        }
    }
}

impl ComputeModel for MeasuredModel {
    fn chunk(&self, stage: u64, chunk: u64, pass: Pass) -> ChunkCost {
        let step = match venussim::snapshot_kind(self.pp, self.vpp, stage, chunk) {
            0 => self.first,
            2 => self.last,
            _ => self.middle,
        };
        let share = match pass {
            Pass::Forward => 1.0 / 3.0,
            Pass::Backward => 2.0 / 3.0,
            // Half of the backward: W ≈ B (Qi et al. 2024, §2).
            Pass::Weight => 1.0 / 3.0,
        };
        let ns = (step.0 * 1e3 * 1e6 * share).max(0.0).floor();
        ChunkCost::even(Seconds::from_ns(ns), self.split.chunk_layers(stage, chunk))
    }

    fn optimizer_step(&self, stage: u64) -> Seconds {
        self.optimizer.optimizer_step(stage)
    }

    fn name(&self) -> &'static str {
        "measured"
    }
}

#[cfg(test)]
mod graphs_tests;
#[cfg(test)]
mod tests;
