//! Plan: the validated [`Scenario`] as plain data, with derived values, rank layout
//! ([`layout`]) and the memory model ([`memory`]).
//!
//! Input: plain specs ([`spec`]). The rules that build a [`Scenario`] from a typed scenario
//! (E03xx, E04xx, W0001, W0003, W0005, W0006) are `venus_front::validate`, above this crate.
//! Output: the [`Scenario`] (the definition plus every value Megatron-LM derives from its
//! arguments: dp, expert dp, the resolved schedule, the microbatch count, effective `sp`, the
//! layer split, the padded vocabulary, parameter counts and the memory per stage).
//! Invariant: a `Scenario` exists only for a plan with no error, so later stages may rely on
//! tp × pp × cp × dp = world, exact divisions and a valid layer split.

pub mod derive;
pub mod goodput;
pub mod layout;
pub mod memory;
pub mod offload;
pub mod pipeline_layout;
pub mod recipe;
pub mod spec;
pub mod straggler;
pub mod venussim;

use venus_base::base::{Bytes, Ratio, Recompute, ScheduleKind};

pub use spec::ReliabilitySpec;
pub use spec::{
    ClusterSpec, DimSpec, ExpectLocs, ExpectSpec, GemmFit, GpuSpec, HybridCounts, HybridLayer,
    MeasuredSpec, ModelSpec, PlanSpec, Provenance, TrainSpec,
};

pub use derive::{ParamCounts, StageSplit};
pub use memory::{MemoryPlan, StageMemory};
pub use recipe::Recipe;
pub use recipe::{CastBytes, CastTarget, Operand, Scaling};

/// The optimizer and overlap flags, as Megatron applies them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Flags {
    pub distributed_optimizer: bool,
    pub overlap_grad_reduce: bool,
    pub overlap_param_gather: bool,
    pub delay_grad_reduce: bool,
    pub delay_param_gather: bool,
    /// Effective: Megatron clears it without interleaving (arguments.py:1010-1017).
    pub overlap_p2p: bool,
    /// Megatron's `--tp-comm-overlap`: TP collectives run alongside the GEMMs (needs sp).
    pub overlap_tp_comm: bool,
    /// Megatron's `--overlap-moe-expert-parallel-comm` where Megatron runs it (interleaved
    /// schedule, ep > 1, no full recompute): the combined 1F1B overlaps one microbatch's
    /// forward with another's backward, hiding their expert all-to-alls.
    pub overlap_ep_comm: bool,
    /// Megatron-FSDP's sharding strategy (`None`: DDP, with or without the distributed
    /// optimizer).
    pub fsdp: Option<venus_base::base::FsdpStrategy>,
}

/// A validated scenario with its derived values.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// A label for reports.
    pub name: String,
    pub model: ModelSpec,
    pub cluster: ClusterSpec,
    pub plan: PlanSpec,
    pub expect: ExpectSpec,
    /// GPUs in the cluster (= tp × pp × cp × dp).
    pub world: u64,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    /// Expert tensor parallelism: Megatron's default, = tp (arguments.py:587-588).
    pub etp: u64,
    pub dp: u64,
    /// world / (etp × ep × pp) (megatron/core/parallel_state.py:876-884).
    pub expert_dp: u64,
    pub vpp: u64,
    /// None: no pipelining (pp = 1); else 1F1B, GPipe or interleaved.
    pub schedule: Option<ScheduleKind>,
    pub micro_batch: u64,
    pub global_batch: u64,
    /// global_batch / (micro_batch × dp).
    pub microbatches: u64,
    /// Effective sequence parallelism (off when tp = 1).
    pub sp: bool,
    pub recompute: Recompute,
    pub flags: Flags,
    /// The number format of every tensor class (from `precision`).
    pub recipe: Recipe,
    pub split: StageSplit,
    pub padded_vocab: u64,
    pub params: ParamCounts,
    /// Peak memory per pipeline stage, stage 0 first.
    pub memory: Vec<StageMemory>,
    /// The token budget and price the report prices (`train < tokens 15T price 2.5 >`).
    pub train: TrainSpec,
}

impl Scenario {
    /// Decoder layers on a pipeline stage (all its model chunks).
    pub fn stage_layers(&self, stage: u64) -> u64 {
        self.split.layers(stage)
    }

    /// Decoder layers in one model chunk of a stage ([`StageSplit::chunk_layers`]).
    pub fn chunk_layers(&self, stage: u64, chunk: u64) -> u64 {
        self.split.chunk_layers(stage, chunk)
    }

    /// Global index of the first decoder layer of `(stage, chunk)`.
    pub fn first_layer(&self, stage: u64, chunk: u64) -> u64 {
        self.split.first_layer(stage, chunk)
    }

    /// Unsharded parameters of a stage: its layers, the embedding on stage 0, the output layer
    /// and final norm on the last stage.
    /// Multi-token prediction modules sit after the last decoder layer, on the last stage
    /// (megatron/core/models/gpt/gpt_model.py builds `mtp` with the post-process stage).
    pub fn stage_params(&self, stage: u64) -> u64 {
        let mut n = (0..self.vpp.max(1)).fold(0u64, |acc, c| {
            acc.saturating_add(self.params.layers_params(
                &self.model,
                self.first_layer(stage, c),
                self.chunk_layers(stage, c),
            ))
        });
        if stage == 0 {
            n = n.saturating_add(self.params.embedding);
        }
        if stage + 1 == self.pp {
            n = n
                .saturating_add(self.params.output)
                .saturating_add(self.params.final_norm);
        }
        if stage == self.split.mtp_stage() {
            n = n.saturating_add(self.params.mtp);
        }
        n
    }

    /// Decoder layers with routed experts in one model chunk of a stage (all of them for a
    /// MoE model without `first_k_dense`, none for a dense model).
    pub fn chunk_moe_layers(&self, stage: u64, chunk: u64) -> u64 {
        self.model.moe_layers_in(
            self.first_layer(stage, chunk),
            self.chunk_layers(stage, chunk),
        )
    }

    /// Decoder layers with routed experts on a stage (all its chunks).
    pub fn stage_moe_layers(&self, stage: u64) -> u64 {
        (0..self.vpp.max(1)).fold(0u64, |acc, c| {
            acc.saturating_add(self.chunk_moe_layers(stage, c))
        })
    }

    /// Parameters the iteration trains: every one, or with `task lora` the adapters of the
    /// decoder layers ([`derive::adapter_params`]).
    pub fn trainable_params(&self) -> u64 {
        if !self.plan.lora() {
            return self.params.total;
        }
        let m = &self.model;
        let (rank, targets) = (self.plan.lora_rank(), self.plan.lora_modules());
        let moe_layers = m.moe_layers_in(0, m.layers);
        let dense_layers = m.layers.saturating_sub(moe_layers);
        let dense = derive::adapter_params(m, rank, targets, false);
        let moe = derive::adapter_params(m, rank, targets, true);
        dense.dense.saturating_mul(dense_layers).saturating_add(
            moe.dense
                .saturating_add(moe.experts)
                .saturating_mul(moe_layers),
        )
    }

    /// Analytic bubble fraction of the plan's schedule: (pp − 1) / (m·vpp + pp − 1) (0
    /// without pipelining), and for the zero-bubble schedules their closed form with
    /// F = B = W ([`crate::schedule::bubble`]).
    pub fn bubble_fraction(&self) -> Ratio {
        crate::schedule::bubble(&derive::pipeline_shape(self)).fraction()
    }

    /// Memory kept back per GPU beside every stage's peak (E0401 checks peak + reserve): the
    /// plan's `reserve`, else the cluster's, else [`memory::DEFAULT_RESERVE`].
    pub fn reserve(&self) -> (Bytes, memory::ReserveSource) {
        use memory::ReserveSource;
        match (self.plan.reserve, self.cluster.reserve) {
            (Some(b), _) => (b, ReserveSource::Plan),
            (None, Some(b)) => (b, ReserveSource::Cluster),
            (None, None) => (memory::DEFAULT_RESERVE, ReserveSource::Default),
        }
    }

    /// The numbers the memory model reads.
    pub fn memory_plan(&self) -> MemoryPlan {
        MemoryPlan {
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            ep: self.ep,
            etp: self.etp,
            dp: self.dp,
            expert_dp: self.expert_dp,
            vpp: self.vpp,
            microbatches: self.microbatches,
            micro_batch: self.micro_batch,
            sp: self.sp,
            recompute: self.recompute,
            attention: self.plan.attention(),
            cross_entropy: self.plan.cross_entropy(),
            pipeline_runtime: self.plan.pipeline_runtime(),
            distributed_optimizer: self.flags.distributed_optimizer,
            schedule: self.schedule,
            overlap_ep_comm: self.flags.overlap_ep_comm,
            split: self.split.clone(),
            recipe: self.recipe,
            moe_load: self.plan.moe_load_factor(),
            fsdp: self.flags.fsdp,
            fsdp_keep_unsharded: self.plan.fsdp_keep_unsharded(),
            lora: self.plan.lora().then(|| memory::LoraPlan {
                rank: self.plan.lora_rank(),
                targets: self.plan.lora_modules(),
            }),
            recompute_detail: memory::RecomputeDetail {
                modules: self
                    .plan
                    .recompute_modules
                    .unwrap_or(venus_base::base::RecomputeModules::CORE_ATTN),
                method: self.plan.recompute_method(),
                num_layers: self.plan.recompute_num_layers(),
            },
            v_memory: derive::v_memory(&self.model),
            graphs_offload: offload::GraphsOffload {
                cuda_graphs: self.plan.cuda_graphs(),
                graph_modules: self.plan.cuda_graph_modules(),
                modules: self.plan.offload_modules(),
                fraction: self.plan.offload_fraction(),
                layers: self.plan.offload_layers(),
            },
            optimizer_offload: self.plan.optimizer_offload(),
        }
    }
}
