//! Plan validation: Megatron-LM's own preconditions on a typed scenario, as diagnostics.
//!
//! Input: a [`ScenarioDef`]. Output: E0301–E0312, E0315–E0321, E0401, W0001, W0003, W0005–W0007 (and E0202
//! for a cluster too large to model), and the validated [`Scenario`] when there is no error.
//! Invariants: checks run in the order of the code table (Megatron's own order: world size,
//! layers, heads, batch, schedule, parallel features, optimizer) and every rule that applies is
//! reported, each once; a check that needs a value another check rejected (dp, the microbatch
//! count, the layer split) is skipped rather than guessed. Every diagnostic has a primary label
//! on the item to change, secondary labels on the other factors and a help computed from the
//! input. No arithmetic on user numbers can overflow or panic.

pub(crate) mod to_plan;

#[cfg(test)]
mod graphs_tests;
#[cfg(test)]
mod plan_memory_tests;

pub use to_plan::provenance;

/// The plain model of a typed one (for the parameter counts editors show).
pub fn model_spec(m: &crate::ty::Model) -> venus_plan::plan::ModelSpec {
    to_plan::model(m)
}

use crate::ty::{Bytes, Opt, PartialScenario, Recompute, ScenarioDef, ScheduleKind, StdlibGpu};
use venus_diag::diag::{Code, Diagnostic, Loc};
use venus_plan::plan::derive::{
    divisors, padded_vocab, param_counts, split_accounting, split_layers, SplitError, StageSplit,
};
use venus_plan::plan::memory::{gib, stage_memory, worst, MemoryPlan, StageMemory};
use venus_plan::plan::{Flags, Recipe, Scenario};
use venus_plan::schedule::{Kind, PipelineShape};
use venus_syntax::syntax::ast::DefKind;
use venus_syntax::syntax::schema::{BlockKind, Key};

/// The largest world venusc models (2^20 GPUs): larger products are typos, and the memory model
/// and the rank layout hold per-stage and per-rank tables.
pub const MAX_WORLD: u64 = 1 << 20;

/// W0003 threshold: bubble above this fraction of the iteration.
const BUBBLE_LIMIT: f64 = 0.25;
/// W0005 threshold: stage memory above this fraction of GPU memory.
const MEMORY_WARN: f64 = 0.90;

/// Validates a typed scenario. Returns the [`Scenario`] when no error was found, and every
/// diagnostic (errors and warnings) in check order.
pub fn validate(def: &ScenarioDef) -> (Option<Scenario>, Vec<Diagnostic>) {
    validate_in(def, &[])
}

/// [`validate`], with the stdlib's GPUs for the helps that name alternatives (E0312); the
/// session passes `Program::stdlib_gpus`.
pub fn validate_in(
    def: &ScenarioDef,
    stdlib_gpus: &[StdlibGpu],
) -> (Option<Scenario>, Vec<Diagnostic>) {
    let mut v = Validator::new(def, stdlib_gpus);
    let scenario = v.run();
    (scenario, v.diags)
}

/// [`validate_in`], but a scenario whose only error is E0401 (a stage over the GPU's memory)
/// is returned too, its per-stage memory filled in; E0401 stays among the diagnostics. For
/// `venusc validate`, whose `peak_mem_gib` rows compare the model's peak with one a real run
/// measured, which may well exceed what the model thinks fits.
pub fn validate_keeping_over_memory_in(
    def: &ScenarioDef,
    stdlib_gpus: &[StdlibGpu],
) -> (Option<Scenario>, Vec<Diagnostic>) {
    let mut v = Validator::new(def, stdlib_gpus);
    v.keep_over_memory = true;
    let scenario = v.run();
    (scenario, v.diags)
}

/// Validates a scenario whose definitions had errors ([`PartialScenario`]): every rule whose
/// inputs all type-checked (or were left to their defaults) runs; a rule that reads a rejected
/// key is skipped, so it cannot report a consequence of the default standing in for it. No
/// [`Scenario`] is produced and the memory rules (which read everything) do not run.
pub fn validate_partial(p: &PartialScenario) -> Vec<Diagnostic> {
    validate_partial_in(p, &[])
}

/// [`validate_partial`], with the stdlib's GPUs (as [`validate_in`]).
pub fn validate_partial_in(p: &PartialScenario, stdlib_gpus: &[StdlibGpu]) -> Vec<Diagnostic> {
    let mut v = Validator::new(&p.def, stdlib_gpus);
    v.failed = p.failed.clone();
    v.run_partial();
    v.diags
}

/// The plan's vpp, or the one its schedule implies: ZBV places two chunks per rank
/// (sail-sg/zero-bubble-pipeline-parallelism 39f2c186a275, zbpp_utils.py:115-116 sets
/// `virtual_pipeline_model_parallel_size = 2`).
fn implied_vpp(p: &crate::ty::Plan) -> u64 {
    let zbv = p
        .schedule
        .as_ref()
        .is_some_and(|s| s.value == ScheduleKind::Zbv);
    if zbv && p.vpp.is_none() {
        2
    } else {
        p.vpp()
    }
}

/// The vpp a `pipeline_layout` gives when the plan writes none: its virtual stages over pp
/// (megatron/training/arguments.py:940-952@d98e8a64, L02).
fn layout_vpp(def: &ScenarioDef) -> Option<u64> {
    let p = &def.plan;
    if p.vpp.is_some() {
        return None;
    }
    let text = &p.pipeline_layout.as_ref()?.value.text;
    let n = venus_plan::plan::pipeline_layout::parse(text)
        .ok()?
        .stages
        .len() as u64;
    let pp = p.pp().max(1);
    n.is_multiple_of(pp).then_some(n / pp)
}

fn loc_of<T>(o: &Opt<T>) -> Option<Loc> {
    o.as_ref().map(|s| s.loc)
}

fn on(o: &Opt<bool>) -> bool {
    o.as_ref().is_some_and(|s| s.value)
}

/// Joins alternatives: `a`, `a or b`, `a, b or c`.
fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [a] => a.clone(),
        [init @ .., last] => format!("{} and {}", init.join(", "), last),
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// The values of `pred` nearest to `current` among `candidates`, nearest first (ties: smaller).
fn nearest(candidates: impl IntoIterator<Item = u64>, current: u64, n: usize) -> Vec<u64> {
    let mut c: Vec<u64> = candidates.into_iter().filter(|&x| x != current).collect();
    c.sort_by_key(|&x| (x.abs_diff(current), x));
    c.dedup();
    c.truncate(n);
    c
}

/// The multiples of `step` just below (if positive) and just above `value`.
fn neighbour_multiples(value: u64, step: u64) -> Vec<u64> {
    let step = step.max(1);
    let below = value / step * step;
    let above = below.saturating_add(step);
    let mut out = Vec::new();
    if below > 0 && below != value {
        out.push(below);
    }
    if above != value {
        out.push(above);
    }
    out
}

struct Validator<'a> {
    def: &'a ScenarioDef,
    /// The stdlib's GPUs (E0312's alternatives); empty when the caller has none.
    stdlib_gpus: &'a [StdlibGpu],
    diags: Vec<Diagnostic>,
    world: u64,
    tp: u64,
    pp: u64,
    cp: u64,
    ep: u64,
    vpp: u64,
    layers: u64,
    heads: u64,
    seq: u64,
    micro_batch: u64,
    global_batch: u64,
    /// The keys rejected by `ty` (partial validation only).
    failed: Vec<Key>,
    /// The group sizes (`tp`, `cp`, `ep`) an error already rejected: W0001 says nothing about
    /// where such a group lands.
    rejected: Vec<&'static str>,
    /// Return the scenario even when E0401 is its only error
    /// ([`validate_keeping_over_memory_in`]).
    keep_over_memory: bool,
}

impl<'a> Validator<'a> {
    fn new(def: &'a ScenarioDef, stdlib_gpus: &'a [StdlibGpu]) -> Validator<'a> {
        let p = &def.plan;
        let m = &def.model;
        Validator {
            def,
            stdlib_gpus,
            diags: Vec::new(),
            world: def.cluster.world_size(),
            tp: p.tp().max(1),
            pp: p.pp().max(1),
            cp: p.cp().max(1),
            ep: p.ep().max(1),
            vpp: layout_vpp(def).unwrap_or_else(|| implied_vpp(p)).max(1),
            layers: m.layers.value,
            heads: m.heads.value,
            seq: m.seq.value,
            micro_batch: p.micro_batch.value.max(1),
            global_batch: p.global_batch.value,
            failed: Vec::new(),
            rejected: Vec::new(),
            keep_over_memory: false,
        }
    }

    /// The virtual stages of the plan's `pipeline_layout`, when it parses.
    fn layout_stages(&self) -> Option<u64> {
        let text = &self.def.plan.pipeline_layout.as_ref()?.value.text;
        venus_plan::plan::pipeline_layout::parse(text)
            .ok()
            .map(|p| p.stages.len() as u64)
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn has_error(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }

    fn run(&mut self) -> Option<Scenario> {
        if !self.check_world_limit() {
            return None;
        }
        let dp = self.check_world(); // E0301
        let split = self.check_layers(); // E0302 (E0353 for zbv)
        self.check_heads(); // E0303
        self.check_kv_groups(); // E0304
        let m = dp.and_then(|dp| self.check_batch(dp)); // E0305
        if let (Some(dp), Some(m)) = (dp, m) {
            self.check_interleaved_microbatches(dp, m); // E0306
            self.check_zero_bubble_microbatches(dp, m); // E0327, W0014
            self.check_dualpipe_microbatches(dp, m); // E0329
        }
        self.check_vpp(); // E0307
        self.check_seq(); // E0308
        self.check_experts(); // E0309
        self.check_capacity(); // E0350
        self.check_optimizer_flags(); // E0310
        self.check_schedule(); // E0311
        self.check_zero_bubble_pipeline(); // E0325
        self.check_zero_bubble_features(); // E0326
        self.check_dualpipe_pipeline(); // E0328
        self.check_dualpipe_chunks(); // E0330
        self.check_zbv_chunks(); // E0354
        self.check_ep_overlap(); // W0015
        self.check_etp(); // E0342, W0020
        self.check_dispatcher(); // E0343, W0020
        self.check_cp_comm(); // E0344, E0345, W0020
        self.check_model_shape(); // E0315-E0318, E0331-E0334, E0349, W0022
        self.check_precision(); // E0312
        self.check_fp8_recipe(); // E0356-E0358, W0023
        self.check_lora_keys(); // E0319
        self.check_fsdp(); // E0320
        self.check_optimizer_dtypes(); // E0321
        self.check_optimizer_offload(); // E0346
        self.check_recompute_refinements(); // E0339
        self.check_recompute_modules(); // E0340, W0019
        self.check_fp8_param_gather(); // E0341
        self.check_fsdp_keep_unsharded(); // E0369
        self.check_stragglers(); // E0337, E0338, W0018
        self.check_reliability(); // E0335, E0336
        self.check_venussim_fields(); // E0355
        self.check_cuda_graphs(); // E0359, E0360
        self.check_offload(); // E0361, W0024
        if let Some(dp) = dp {
            self.check_group_spans(); // W0001
            if let Some(m) = m {
                self.check_bubble(dp, m); // W0003
            }
        }
        self.check_sp_without_tp(); // W0006
        self.check_overlap_p2p_without_interleaving(); // W0025
        self.check_calibration(); // W0007
        if self.has_error() {
            return None;
        }
        let (dp, m, split) = (dp?, m?, split?);
        let mut scenario = self.scenario(dp, m, split);
        scenario.memory = stage_memory(&scenario.model, &scenario.memory_plan());
        self.check_checkpoint_interval(&scenario); // W0017
        self.check_memory(&scenario); // E0401, W0005
                                      // Every earlier error returned above: an error now is E0401.
        if self.has_error() && !self.keep_over_memory {
            return None;
        }
        Some(scenario)
    }

    /// The model's own shape: E0315, E0316, E0317, E0318.
    fn check_model_shape(&mut self) {
        self.check_moe_shape(); // E0315
        self.check_heads_over_groups(); // E0316
        self.check_hidden_over_heads(); // E0317
        self.check_mla_shape(); // E0318
        self.check_hybrid(); // E0331-E0334
        self.check_window(); // E0349, W0022
    }

    /// True when none of `keys` (and, with `cluster`, no key of the cluster or its gpu) was
    /// rejected.
    fn inputs_ok(&self, keys: &[Key], cluster: bool) -> bool {
        !self.failed.iter().any(|key| {
            keys.contains(key)
                || (cluster
                    && matches!(key.block(), BlockKind::Def(DefKind::Cluster | DefKind::Gpu)))
        })
    }

    /// [`Validator::run`] for a partial scenario: each rule only when its inputs are sound.
    fn run_partial(&mut self) {
        use Key::*;
        if !self.inputs_ok(&[], true) || !self.check_world_limit() {
            return;
        }
        let dp = if self.inputs_ok(&[Tp, Pp, Cp, Dp], true) {
            self.check_world() // E0301
        } else {
            None
        };
        const SPLIT: &[Key] = &[
            Pp,
            Vpp,
            FirstStageLayers,
            LastStageLayers,
            Layers,
            AccountForEmbedding,
            AccountForLoss,
            PipelineLayout,
            MtpLayers,
        ];
        if self.inputs_ok(SPLIT, false) {
            self.check_layers(); // E0302
        }
        if self.inputs_ok(&[Tp, Heads], false) {
            self.check_heads(); // E0303
        }
        if self.inputs_ok(&[Tp, Heads, KvGroups], false) {
            self.check_kv_groups(); // E0304
        }
        let batch_ok = self.inputs_ok(&[MicroBatch, GlobalBatch], false);
        let m = dp.filter(|_| batch_ok).and_then(|dp| self.check_batch(dp)); // E0305
        const SCHEDULE: &[Key] = &[Pp, Vpp, Schedule, OverlapP2p, PipelineLayout];
        if let (Some(dp), Some(m)) = (dp, m) {
            if self.inputs_ok(SCHEDULE, false) {
                self.check_interleaved_microbatches(dp, m); // E0306
                self.check_zero_bubble_microbatches(dp, m); // E0327, W0014
                self.check_dualpipe_microbatches(dp, m); // E0329
            }
        }
        if self.inputs_ok(SCHEDULE, false) {
            self.check_vpp(); // E0307
            self.check_schedule(); // E0311
            self.check_zero_bubble_pipeline(); // E0325
            self.check_dualpipe_pipeline(); // E0328
            self.check_dualpipe_chunks(); // E0330
            self.check_zbv_chunks(); // E0354
        }
        let flags = [
            SCHEDULE,
            &[DistributedOptimizer, OverlapGradReduce, OverlapParamGather],
        ]
        .concat();
        if self.inputs_ok(&flags, false) {
            self.check_zero_bubble_features(); // E0326
        }
        if self.inputs_ok(&[Tp, Cp, Sp, Seq], false) {
            self.check_seq(); // E0308
        }
        const EXPERT: &[Key] = &[Tp, Pp, Cp, Dp, Ep];
        let moe = [EXPERT, &[Experts, Topk, MoeFfn, SharedExpertFfn]].concat();
        if self.inputs_ok(&moe, true) {
            self.check_experts(); // E0309
        }
        const SHAPE: &[Key] = &[
            Hidden,
            Layers,
            Heads,
            KvGroups,
            HeadDim,
            Experts,
            Topk,
            MoeFfn,
            SharedExpertFfn,
            SharedExperts,
            FirstKDense,
            QLoraRank,
            KvLoraRank,
            QkNopeHeadDim,
            QkRopeHeadDim,
            VHeadDim,
            SlidingWindow,
            SlidingWindowPattern,
            Seq,
        ];
        if self.inputs_ok(SHAPE, false) {
            self.check_model_shape(); // E0315-E0318, E0331-E0334, E0349, W0022
        }
        let optimizer = [
            DistributedOptimizer,
            OverlapGradReduce,
            OverlapParamGather,
            DelayGradReduce,
            DelayParamGather,
        ];
        if self.inputs_ok(&optimizer, false) {
            self.check_optimizer_flags(); // E0310
        }
        if dp.is_some() && self.inputs_ok(EXPERT, true) {
            self.check_group_spans(); // W0001
        }
        let folding = [EXPERT, &[Etp, Experts, MoeFfn, Ffn, Hidden]].concat();
        if self.inputs_ok(&folding, true) {
            self.check_etp(); // E0342, W0020
        }
        if self.inputs_ok(&[folding.as_slice(), &[MoeDispatcher]].concat(), true) {
            self.check_dispatcher(); // E0343, W0020
        }
        if self.inputs_ok(&[Tp, Cp, Heads, KvGroups, CpComm], false) {
            self.check_cp_comm(); // E0344, E0345, W0020
        }
        if self.inputs_ok(&[Precision], true) {
            self.check_precision(); // E0312
        }
        if self.inputs_ok(&[Precision, Fp8Recipe, Fp8Format, Fp8Attention], true) {
            self.check_fp8_recipe(); // E0356-E0358, W0023
        }
        if self.inputs_ok(&[Sp, Tp], false) {
            self.check_sp_without_tp(); // W0006
        }
        if self.inputs_ok(&[OverlapP2p, Pp, Vpp, Schedule], false) {
            self.check_overlap_p2p_without_interleaving(); // W0025
        }
        if self.inputs_ok(&[Task, LoraRank, LoraModules], false) {
            self.check_lora_keys(); // E0319
        }
        if self.inputs_ok(
            &[Fsdp, Pp, Ep, DistributedOptimizer, UntiedEmbeddings],
            false,
        ) {
            self.check_fsdp(); // E0320
        }
        let dtypes = [
            DistributedOptimizer,
            Fsdp,
            MainParamsDtype,
            ExpAvgDtype,
            ExpAvgSqDtype,
        ];
        if self.inputs_ok(&dtypes, false) {
            self.check_optimizer_dtypes(); // E0321
        }
        if self.inputs_ok(&[DistributedOptimizer, Fsdp, OptimizerOffload], false) {
            self.check_optimizer_offload(); // E0346
        }
        let recompute = [
            Recompute,
            RecomputeModules,
            RecomputeMethod,
            RecomputeNumLayers,
        ];
        if self.inputs_ok(&recompute, false) {
            self.check_recompute_refinements(); // E0339
            if self.inputs_ok(SHAPE, false) {
                self.check_recompute_modules(); // E0340, W0019
            }
        }
        let graphs = [
            CudaGraphs,
            OffloadModules,
            OffloadFraction,
            OffloadLayers,
            Recompute,
            RecomputeModules,
            Pp,
            MoeCapacityHeadroom,
            MoePadToCapacity,
        ];
        if self.inputs_ok(&[graphs.as_slice(), SHAPE].concat(), false) {
            self.check_cuda_graphs(); // E0359, E0360
            self.check_offload(); // E0361, W0024
        }
        let fp8_gather = [Fp8ParamGather, Precision, DistributedOptimizer, Fsdp];
        if self.inputs_ok(&fp8_gather, false) {
            self.check_fp8_param_gather(); // E0341
        }
        if self.inputs_ok(&[FsdpKeepUnsharded, Fsdp], false) {
            self.check_fsdp_keep_unsharded(); // E0369
        }
        if self.inputs_ok(&[Mfu, Measured], true) {
            self.check_calibration(); // W0007
        }
        // The cluster is sound here (checked first): its world and `slow_*` items are known.
        self.check_stragglers(); // E0337, E0338, W0018
        if self.inputs_ok(&[CheckpointInterval], true) {
            self.check_reliability(); // E0335, E0336
        }
    }

    fn scenario(&self, dp: u64, m: u64, split: StageSplit) -> Scenario {
        let def = self.def;
        let p = &def.plan;
        let etp = self.etp();
        let expert_dp = self.world / (etp * self.ep * self.pp).max(1);
        let vocab = padded_vocab(def.model.vocab.value, self.tp);
        Scenario {
            name: def.name.clone(),
            model: to_plan::model(&def.model),
            cluster: to_plan::cluster(&def.cluster),
            plan: to_plan::plan(p),
            expect: to_plan::expect(&def.expect),
            world: self.world,
            tp: self.tp,
            pp: self.pp,
            cp: self.cp,
            ep: self.ep,
            etp,
            dp,
            expert_dp,
            vpp: self.vpp,
            schedule: resolved_schedule(self.pp, self.vpp, p.schedule.as_ref().map(|s| s.value)),
            micro_batch: self.micro_batch,
            global_batch: self.global_batch,
            microbatches: m,
            // megatron/training/arguments.py:1434-1439: sp is turned off when tp = 1.
            sp: p.sp() && self.tp > 1,
            recompute: p.recompute(),
            flags: Flags {
                distributed_optimizer: on(&p.distributed_optimizer),
                overlap_grad_reduce: on(&p.overlap_grad_reduce),
                overlap_param_gather: on(&p.overlap_param_gather),
                delay_grad_reduce: on(&p.delay_grad_reduce),
                delay_param_gather: on(&p.delay_param_gather),
                // megatron/training/arguments.py:1010-1017: cleared without interleaving.
                overlap_p2p: on(&p.overlap_p2p) && self.vpp > 1,
                overlap_tp_comm: on(&p.overlap_tp_comm) && p.sp() && self.tp > 1,
                overlap_ep_comm: on(&p.overlap_ep_comm) && self.ep_overlap_runs(),
                fsdp: p.fsdp.as_ref().map(|f| f.value),
            },
            recipe: Recipe::for_precision(p.precision())
                .with_training_dtypes(
                    p.grad_dtype.as_ref().map(|d| d.value),
                    p.main_params_dtype.as_ref().map(|d| d.value),
                    p.exp_avg_dtype.as_ref().map(|d| d.value),
                    p.exp_avg_sq_dtype.as_ref().map(|d| d.value),
                )
                .with_fp8_param_gather(on(&p.fp8_param_gather))
                .with_fp8_recipe(
                    p.fp8_recipe
                        .as_ref()
                        .map_or(venus_base::base::Fp8Recipe::Delayed, |r| r.value),
                ),
            split,
            padded_vocab: vocab,
            train: to_plan::train(&def.train),
            params: param_counts(&to_plan::model(&def.model), vocab, self.pp),
            memory: Vec::new(),
        }
    }

    // ---------------------------------------------------------------- W0003

    fn check_bubble(&mut self, dp: u64, m: u64) {
        let (pp, vpp) = (self.pp, self.vpp);
        if pp <= 1 || self.has_error() {
            return;
        }
        let p = &self.def.plan;
        let written = p.schedule.as_ref().map(|s| s.value);
        // W0003's fixes (more microbatches, more chunks) are those of the 1F1B family; a
        // DualPipe plan's microbatch count is bounded by E0329 and its chunks are fixed, as
        // are ZBV's.
        if written.is_some_and(|s| s.is_dualpipe() || s == ScheduleKind::Zbv) {
            return;
        }
        // The bubble of the schedule this plan would run with `m` microbatches and `v` chunks,
        // from the schedule itself (equal to what its built IR shows).
        let bubble_at = |m: u64, v: u64| -> f64 {
            let narrow = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
            let kind = resolved_schedule(pp, v, if v > 1 { None } else { written });
            let kind = kind.map_or(Kind::NoPipelining, Kind::from);
            let shape = PipelineShape::new(kind, narrow(pp), narrow(v), narrow(m));
            venus_plan::schedule::bubble(&shape).fraction().0
        };
        let bubble = bubble_at(m, vpp);
        if bubble <= BUBBLE_LIMIT {
            return;
        }
        let interleaved = self.interleaved();
        let mut options = Vec::new();
        // The fewest microbatches whose bubble is within the limit; a multiple of pp when
        // interleaved (E0306). Found by pp·3 steps at most: (pp − 1) / (m·v + pp − 1) ≤ 1/4
        // ⇔ m·v ≥ 3·(pp − 1).
        let step = if interleaved { pp } else { 1 };
        let m_need = (1..=3 * pp)
            .map(|k| k * step)
            .find(|&m| bubble_at(m, vpp) <= BUBBLE_LIMIT)
            .unwrap_or(3 * pp * step);
        let gb = m_need.saturating_mul(self.micro_batch).saturating_mul(dp);
        options.push(BubbleOption::GlobalBatch {
            global_batch: gb,
            microbatches: m_need,
            bubble: Ratio(bubble_at(m_need, vpp)),
        });
        let per_replica = self.global_batch / dp.max(1);
        // The largest smaller micro_batch that divides the per-replica batch into enough
        // microbatches (divisors, so the search is bounded whatever the numbers).
        let mb = divisors(per_replica).into_iter().rev().find(|&b| {
            let m2 = per_replica / b;
            b < self.micro_batch && m2 >= m_need && (!interleaved || m2.is_multiple_of(pp))
        });
        if let Some(b) = mb {
            let m2 = per_replica / b;
            options.push(BubbleOption::MicroBatch {
                micro_batch: b,
                microbatches: m2,
                bubble: Ratio(bubble_at(m2, vpp)),
            });
        }
        let vpp_ok = pp >= 3 || on(&p.overlap_p2p);
        if vpp_ok
            && m >= pp
            && m.is_multiple_of(pp)
            && p.first_stage_layers.is_none()
            && p.last_stage_layers.is_none()
            && p.pipeline_layout.is_none()
            && !on(&p.account_for_embedding)
            && !on(&p.account_for_loss)
        {
            let v = (vpp + 1..=(self.layers / pp).min(64))
                .find(|&v| self.layers.is_multiple_of(pp * v) && bubble_at(m, v) <= BUBBLE_LIMIT);
            if let Some(v) = v {
                options.push(BubbleOption::Vpp {
                    vpp: v,
                    bubble: Ratio(bubble_at(m, v)),
                });
            }
        }
        self.report(PlanProblem::Bubble(Bubble {
            bubble: Ratio(bubble),
            pp,
            m,
            vpp,
            micro_batch: self.micro_batch,
            primary: loc_of(&p.pp).unwrap_or(p.loc),
            global_batch_loc: p.global_batch.loc,
            micro_batch_loc: p.micro_batch.loc,
            vpp_written: p.vpp.as_ref().map(|s| (s.value, s.loc)),
            options,
        }));
    }
}

use crate::ty::Ratio;
use problem::{Bubble, BubbleOption, PlanProblem};

/// The schedule a plan runs: none without pipelining, else the written one or the default.
pub fn resolved_schedule(pp: u64, vpp: u64, written: Option<ScheduleKind>) -> Option<ScheduleKind> {
    if pp <= 1 {
        return None;
    }
    Some(written.unwrap_or(if vpp > 1 {
        ScheduleKind::Interleaved
    } else {
        ScheduleKind::OneFOneB
    }))
}

// The rules, one submodule per area (each an `impl Validator` block); they report typed
// values that `problem` alone turns into diagnostics, and `repair` is the memory-fix search.
mod batch;
mod capacity;
mod dualpipe;
mod ep_overlap;
mod experts;
mod flags;
mod folding;
mod fp8;
mod gpu;
mod graphs;
mod hybrid;
mod memory;
mod model;
mod problem;
mod recompute;
mod reliability;
mod repair;
mod schedule;
mod shape;
mod span;
mod straggler;
mod training;
mod venussim;
mod window;
mod world;
mod zbv;
mod zero_bubble;

#[cfg(test)]
mod tests;
