//! Plan problems as typed values, and the one place they become diagnostics.
//!
//! Input: a [`PlanProblem`] built by a rule of [`super`]: the facts it found (sizes, counts,
//! the locs of the items involved) and the fixes it computed. Output: the [`Diagnostic`] with
//! its code, message, labels, notes and help ([`PlanProblem::into_diagnostic`]).
//! Invariants: every word of a plan diagnostic is written here and nowhere else; rules decide,
//! this module only renders, so nothing downstream ever needs to read a message to learn what
//! a problem was. A rule computes each fix (and its figures) before building the problem.

use super::repair::{Change, Repair};
use super::{gib, join_and, join_or, pct, SplitError, StageSplit, Validator, MAX_WORLD};
use super::{Code, Diagnostic, Loc};
use crate::ty::{Bytes, GpuArch, Opt, Precision, Ratio, Recompute, ScheduleKind};
use venus_diag::diag::Identity;
use venus_plan::plan::pipeline_layout;

/// A plan key and the value written for it, as a secondary label: `tp 4`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub key: &'static str,
    pub value: u64,
    pub loc: Loc,
}

impl Written {
    /// The counts of `items` the plan wrote, in order (an unwritten one has no label).
    pub fn of(items: &[(&'static str, &Opt<u64>)]) -> Vec<Written> {
        items
            .iter()
            .filter_map(|&(key, o)| {
                o.as_ref().map(|s| Written {
                    key,
                    value: s.value,
                    loc: s.loc,
                })
            })
            .collect()
    }
}

/// A cluster dim's size, as a secondary label: ``8 GPUs in dim `nvlink` ``.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DimSize {
    pub name: String,
    pub size: u64,
    pub loc: Loc,
}

/// One plan setting a help proposes: `` `tp 4` ``.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub key: &'static str,
    pub value: u64,
}

impl Setting {
    /// `key` set to each of `values`, in order.
    pub fn list(key: &'static str, values: impl IntoIterator<Item = u64>) -> Vec<Setting> {
        values
            .into_iter()
            .map(|value| Setting { key, value })
            .collect()
    }

    fn text(self) -> String {
        format!("`{} {}`", self.key, self.value)
    }
}

/// A group of consecutive ranks W0001 checks against the cluster's dims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Tp,
    Cp,
    Ep,
}

impl Group {
    pub fn word(self) -> &'static str {
        match self {
            Group::Tp => "tp",
            Group::Cp => "cp",
            Group::Ep => "ep",
        }
    }
}

/// A boolean plan key E0310 and W0006 talk about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    Sp,
    DistributedOptimizer,
    OverlapGradReduce,
    OverlapParamGather,
    DelayGradReduce,
    DelayParamGather,
    OverlapTpComm,
}

impl Flag {
    pub fn word(self) -> &'static str {
        match self {
            Flag::Sp => "sp",
            Flag::DistributedOptimizer => "distributed_optimizer",
            Flag::OverlapGradReduce => "overlap_grad_reduce",
            Flag::OverlapParamGather => "overlap_param_gather",
            Flag::DelayGradReduce => "delay_grad_reduce",
            Flag::DelayParamGather => "delay_param_gather",
            Flag::OverlapTpComm => "overlap_tp_comm",
        }
    }
}

/// How E0310's help fixes a flag whose prerequisite is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagFix {
    /// Add the prerequisite.
    Add,
    /// Add the prerequisite or drop the flag (the flag means nothing on its own).
    AddOrRemove,
}

/// `tp 1 × pp 8 × dp 4`: the factors of a world size (cp only when used or written).
fn factors(tp: u64, pp: u64, cp: u64, dp: Option<u64>, cp_written: bool) -> String {
    let mut parts = vec![format!("tp {tp}"), format!("pp {pp}")];
    if cp > 1 || cp_written {
        parts.push(format!("cp {cp}"));
    }
    if let Some(dp) = dp {
        parts.push(format!("dp {dp}"));
    }
    parts.join(" × ")
}

fn use_settings(options: &[Setting]) -> String {
    let texts: Vec<String> = options.iter().map(|s| s.text()).collect();
    format!("use {}", join_or(&texts))
}

fn with_written(mut d: Diagnostic, written: &[Written]) -> Diagnostic {
    for w in written {
        d = d.with_secondary(w.loc, format!("{} {}", w.key, w.value));
    }
    d
}

fn with_dims(mut d: Diagnostic, dims: &[DimSize]) -> Diagnostic {
    for dim in dims {
        d = d.with_secondary(dim.loc, format!("{} GPUs in dim `{}`", dim.size, dim.name));
    }
    d
}

/// A problem with the plan, one per diagnostic.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanProblem {
    /// E0202: the cluster is larger than venusc models.
    WorldTooLarge(WorldTooLarge),
    /// E0301: tp × pp × cp × dp is not the GPU count.
    WorldMismatch(WorldMismatch),
    /// E0302: the layers cannot be split over the pipeline stages.
    LayerSplit(LayerSplit),
    /// E0303: tp does not divide the attention heads.
    HeadsSplit(HeadsSplit),
    /// E0304: kv_groups is neither a multiple nor a divisor of tp.
    KvGroupsSplit(KvGroupsSplit),
    /// E0305: the global batch is not a multiple of micro_batch × dp.
    BatchSplit(BatchSplit),
    /// E0306: the interleaved schedule's microbatch count is not a multiple of pp.
    InterleavedMicrobatches(InterleavedMicrobatches),
    /// E0307: vpp without the pipeline it interleaves.
    Vpp(VppProblem),
    /// E0308: cp needs seq to be a multiple of 2 × cp.
    SeqOverCp(SeqOverCp),
    /// E0308: sp scatters each cp rank's tokens over tp.
    SeqOverTp(SeqOverTp),
    /// E0309: ep breaks one or more expert rules.
    ExpertParallel(ExpertParallel),
    /// E0309: a mixture-of-experts model with tp needs sp.
    MoeNeedsSp(MoeNeedsSp),
    /// E0310: a flag without the flag it needs.
    FlagNeeds(FlagNeeds),
    /// E0311: the schedule does not fit pp or vpp.
    Schedule(ScheduleProblem),
    /// E0315: the MoE keys do not describe a mixture of experts.
    MoeShape(MoeShape),
    /// E0316: kv_groups does not divide the attention heads.
    HeadsOverGroups(HeadsOverGroups),
    /// E0317: hidden is not a multiple of heads and no head_dim is written.
    HiddenOverHeads(HiddenOverHeads),
    /// E0318: multi-head latent attention keys that do not fit.
    MlaShape(MlaShape),
    /// W0001: a group of ranks crosses a slower dim.
    GroupSpan(GroupSpan),
    /// W0003: the pipeline bubble is above a quarter of the iteration.
    Bubble(Bubble),
    /// W0006: sp with tp 1.
    SpWithoutTp(SpWithoutTp),
    /// E0312: the plan's precision needs tensor cores the GPU does not have.
    PrecisionUnsupported(PrecisionUnsupported),
    /// W0007: the GPU's arch has no calibration of its own.
    Uncalibrated(Uncalibrated),
    /// E0401 (over the GPU's memory) or W0005 (close to it).
    Memory(MemoryProblem),
    /// E0319: LoRA keys without `task lora`.
    LoraWithoutTask(LoraWithoutTask),
    /// E0320: `fsdp ... torch` with a plan feature Megatron's torch FSDP2 path rejects.
    TorchFsdpUnsupported(TorchFsdpUnsupported),
    /// E0321: precision-aware optimizer dtypes without the distributed optimizer.
    OptimizerDtypeWithoutSharding(OptimizerDtypeWithoutSharding),
    /// E0346: `optimizer_offload` without the distributed optimizer.
    OffloadWithoutSharding(OffloadWithoutSharding),
    /// E0325: a zero-bubble schedule with pp 1.
    ZeroBubbleNeedsPipeline(ZeroBubbleProblem),
    /// E0326: a zero-bubble schedule with a feature its reference runtime does not support.
    ZeroBubbleUnsupported(ZeroBubbleUnsupported),
    /// E0327: fewer microbatches than a zero-bubble schedule's warmup.
    ZeroBubbleMicrobatches(ZeroBubbleMicrobatches),
    /// W0014: fewer microbatches than the 2·pp the reference hand schedule asserts.
    ZeroBubbleBelowAssert(ZeroBubbleMicrobatches),
    /// E0322, E0323, E0324: a `pipeline_layout` that does not parse, fit or place.
    Layout(LayoutProblem),
    /// E0337: `slow_rank` or `slow_node` past the end of the cluster.
    SlowOutside(SlowOutside),
    /// E0338: a straggler at 0% speed.
    SlowStopped(SlowStopped),
    /// W0018: a `slow_gpus` fraction that rounds to no GPU.
    SlowNone(SlowNone),
    /// E0335: a zero MTBF or checkpoint interval.
    ZeroReliability(ZeroReliability),
    /// E0336: goodput inputs that do not give an estimate.
    GoodputIncomplete(GoodputIncomplete),
    /// W0017: a written checkpoint interval well below the optimum's goodput.
    CheckpointInterval(CheckpointIntervalCost),
    /// E0331-E0334: a hybrid model's pattern, keys or Mamba-2 split.
    Hybrid(HybridProblem),
    /// E0328, E0329, E0330: a DualPipe schedule the reference's step loop does not run.
    DualPipe(DualPipeProblem),
    /// W0015: `overlap_ep_comm` where Megatron's combined 1F1B does not run.
    EpOverlapIgnored(EpOverlapIgnored),
    /// W0025: `overlap_p2p` where the interleaved schedule does not run.
    P2pOverlapIgnored(P2pOverlapIgnored),
    /// E0355: a `venussim` item venusc cannot keep.
    VenusSimField(VenusSimFieldProblem),
    /// E0339: a recompute key refining a granularity the plan does not use.
    RecomputeRefinementWithout(RecomputeRefinementWithout),
    /// E0340 / W0019: a recompute module the model does not have.
    RecomputeModuleUnfit(RecomputeModuleUnfit),
    /// E0341: `fp8_param_gather` without FP8 or a sharded optimizer.
    Fp8ParamGatherNeeds(Fp8ParamGatherNeeds),
    /// E0369: `fsdp_keep_unsharded` without an `fsdp` strategy that shards parameters.
    KeepUnshardedNeedsFsdp(KeepUnshardedNeedsFsdp),
    /// E0353, E0354: a ZBV plan the reference's V schedule does not split.
    Zbv(ZbvProblem),
    /// E0342: an `etp` the experts' ffn or the expert grid does not admit.
    Etp(EtpProblem),
    /// E0356-E0358: an FP8 / FP4 recipe the GPU's architecture does not run.
    RecipeArch(RecipeArch),
    /// W0023: an FP8 key that changes nothing at the plan's precision.
    Fp8Unused(Fp8Unused),
    /// E0343: a `moe_dispatcher` Megatron does not run on this plan.
    Dispatcher(DispatcherProblem),
    /// E0344: heads a2a context parallelism cannot scatter.
    CpA2aHeads(CpA2aHeads),
    /// E0345: `cp_comm` hierarchical sizes that do not give cp.
    CpHierarchy(CpHierarchy),
    /// W0020: an `etp`, `moe_dispatcher` or `cp_comm` that changes nothing.
    NoEffect(NoEffect),
    /// E0349, W0022: sliding-window keys that window no layer.
    Window(WindowProblem),
    /// E0350: expert-capacity keys without experts or without a capacity.
    Capacity(CapacityProblem),
    /// E0359, E0360, E0361, W0024: CUDA graphs and activation offloading.
    Graphs(GraphsProblem),
}

impl PlanProblem {
    /// The diagnostic users see, carrying the problem's identity.
    pub fn into_diagnostic(self) -> Diagnostic {
        let identity = Identity::of(&self);
        self.render().with_identity(identity)
    }

    fn render(self) -> Diagnostic {
        match self {
            PlanProblem::WorldTooLarge(p) => p.render(),
            PlanProblem::WorldMismatch(p) => p.render(),
            PlanProblem::LayerSplit(p) => p.render(),
            PlanProblem::HeadsSplit(p) => p.render(),
            PlanProblem::KvGroupsSplit(p) => p.render(),
            PlanProblem::BatchSplit(p) => p.render(),
            PlanProblem::InterleavedMicrobatches(p) => p.render(),
            PlanProblem::Vpp(p) => p.render(),
            PlanProblem::SeqOverCp(p) => p.render(),
            PlanProblem::SeqOverTp(p) => p.render(),
            PlanProblem::ExpertParallel(p) => p.render(),
            PlanProblem::MoeNeedsSp(p) => p.render(),
            PlanProblem::FlagNeeds(p) => p.render(),
            PlanProblem::Schedule(p) => p.render(),
            PlanProblem::MoeShape(p) => p.render(),
            PlanProblem::HeadsOverGroups(p) => p.render(),
            PlanProblem::HiddenOverHeads(p) => p.render(),
            PlanProblem::MlaShape(p) => p.render(),
            PlanProblem::Hybrid(p) => p.render(),
            PlanProblem::GroupSpan(p) => p.render(),
            PlanProblem::Bubble(p) => p.render(),
            PlanProblem::SpWithoutTp(p) => p.render(),
            PlanProblem::PrecisionUnsupported(p) => p.render(),
            PlanProblem::Uncalibrated(p) => p.render(),
            PlanProblem::Memory(p) => p.render(),
            PlanProblem::LoraWithoutTask(p) => p.render(),
            PlanProblem::TorchFsdpUnsupported(p) => p.render(),
            PlanProblem::OptimizerDtypeWithoutSharding(p) => p.render(),
            PlanProblem::OffloadWithoutSharding(p) => p.render(),
            PlanProblem::ZeroBubbleNeedsPipeline(p) => p.render(),
            PlanProblem::ZeroBubbleUnsupported(p) => p.render(),
            PlanProblem::ZeroBubbleMicrobatches(p) => p.render(Code::E0327),
            PlanProblem::ZeroBubbleBelowAssert(p) => p.render(Code::W0014),
            PlanProblem::Layout(p) => p.render(),
            PlanProblem::SlowOutside(p) => p.render(),
            PlanProblem::SlowStopped(p) => p.render(),
            PlanProblem::SlowNone(p) => p.render(),
            PlanProblem::ZeroReliability(p) => p.render(),
            PlanProblem::GoodputIncomplete(p) => p.render(),
            PlanProblem::CheckpointInterval(p) => p.render(),
            PlanProblem::DualPipe(p) => p.render(),
            PlanProblem::EpOverlapIgnored(p) => p.render(),
            PlanProblem::P2pOverlapIgnored(p) => p.render(),
            PlanProblem::VenusSimField(p) => p.render(),
            PlanProblem::RecomputeRefinementWithout(p) => p.render(),
            PlanProblem::RecomputeModuleUnfit(p) => p.render(),
            PlanProblem::Fp8ParamGatherNeeds(p) => p.render(),
            PlanProblem::KeepUnshardedNeedsFsdp(p) => p.render(),
            PlanProblem::Zbv(p) => p.render(),
            PlanProblem::Etp(p) => p.render(),
            PlanProblem::Dispatcher(p) => p.render(),
            PlanProblem::CpA2aHeads(p) => p.render(),
            PlanProblem::CpHierarchy(p) => p.render(),
            PlanProblem::NoEffect(p) => p.render(),
            PlanProblem::Window(p) => p.render(),
            PlanProblem::Capacity(p) => p.render(),
            PlanProblem::Graphs(p) => p.render(),
            PlanProblem::RecipeArch(p) => p.render(),
            PlanProblem::Fp8Unused(p) => p.render(),
        }
    }
}

impl Validator<'_> {
    /// Renders a problem and records it: the one way a rule reports.
    pub(super) fn report(&mut self, problem: PlanProblem) {
        self.push(problem.into_diagnostic());
    }
}

// -------------------------------------------------------------------------------- E0202

#[derive(Clone, Debug, PartialEq)]
pub struct WorldTooLarge {
    /// The product of the dim sizes (u128: the sizes may overflow u64 together).
    pub product: u128,
    /// The last dim's size (the one that makes it too large).
    pub loc: Loc,
    /// The other dims, outermost first.
    pub others: Vec<DimSize>,
}

impl WorldTooLarge {
    fn render(self) -> Diagnostic {
        let d = Diagnostic::new(
            Code::E0202,
            format!(
                "cluster has {} GPUs, more than venusc models ({MAX_WORLD})",
                self.product
            ),
            self.loc,
            "makes the GPU count too large",
        )
        .with_help(format!(
            "use dims whose sizes multiply to at most {MAX_WORLD}"
        ));
        with_dims(d, &self.others)
    }
}

// -------------------------------------------------------------------------------- E0301

#[derive(Clone, Debug, PartialEq)]
pub struct WorldMismatch {
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    /// The dp the plan wrote (None: dp is derived and the world is not a multiple).
    pub dp: Option<u64>,
    pub world: u64,
    /// Whether the plan wrote `cp` (then it is named even when 1).
    pub cp_written: bool,
    /// tp × pp × cp.
    pub model: u128,
    pub primary: Loc,
    /// The written factors other than the primary one.
    pub factors: Vec<Written>,
    pub dims: Vec<DimSize>,
    pub help: WorldHelp,
    /// The `dp` value to write when that is the first option.
    pub fix: Option<(Loc, u64)>,
}

/// E0301's help.
#[derive(Clone, Debug, PartialEq)]
pub enum WorldHelp {
    /// Change one factor: the first option of the list.
    Use(Vec<WorldOption>),
    /// No single factor fits; the plan needs this many GPUs as written.
    NoSingleChange { need: u64 },
}

/// One factor changed so the world fits: `` `pp 4` (tp 1 × pp 4 × dp 4 = 16) ``.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorldOption {
    pub set: Setting,
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub dp: u64,
}

impl WorldMismatch {
    fn render(self) -> Diagnostic {
        let (tp, pp, cp, world, cpw) = (self.tp, self.pp, self.cp, self.world, self.cp_written);
        let names = |dp: bool| {
            let mut n = vec!["tp", "pp"];
            if cp > 1 || cpw {
                n.push("cp");
            }
            if dp {
                n.push("dp");
            }
            n.join(" × ")
        };
        let model = self.model;
        let (message, label) = match self.dp {
            Some(dp) => {
                let need = model.saturating_mul(dp as u128);
                (
                    format!(
                        "plan needs {need} GPUs ({}) but cluster has {world}",
                        factors(tp, pp, cp, Some(dp), cpw)
                    ),
                    format!("{} = {need}", names(true)),
                )
            }
            None => (
                format!(
                    "plan needs a multiple of {model} GPUs ({}) but cluster has {world}",
                    factors(tp, pp, cp, None, cpw)
                ),
                format!("{} = {model}", names(false)),
            ),
        };
        let d = Diagnostic::new(Code::E0301, message, self.primary, label);
        let d = with_dims(with_written(d, &self.factors), &self.dims);
        let help = match &self.help {
            WorldHelp::Use(options) => {
                let texts: Vec<String> = options
                    .iter()
                    .map(|o| {
                        format!(
                            "{} ({} = {world})",
                            o.set.text(),
                            factors(o.tp, o.pp, o.cp, Some(o.dp), cpw)
                        )
                    })
                    .collect();
                format!("use {}", join_or(&texts))
            }
            WorldHelp::NoSingleChange { need } => format!("no change of one factor fits {world} GPUs; use a cluster of {need} GPUs or change several factors"),
        };
        let d = d.with_help(help);
        match self.fix {
            Some((loc, dp)) => d.with_fix(loc, dp.to_string()),
            None => d,
        }
    }
}

// -------------------------------------------------------------------------------- E0302

#[derive(Clone, Debug, PartialEq)]
pub struct LayerSplit {
    pub error: SplitError,
    pub layers: u64,
    pub pp: u64,
    pub vpp: u64,
    pub primary: Loc,
    pub layers_loc: Loc,
    /// The written split keys other than the primary one.
    pub written: Vec<Written>,
    pub help: SplitHelp,
}

/// E0302's help.
#[derive(Clone, Debug, PartialEq)]
pub enum SplitHelp {
    /// An even split: other pp or vpp values (none: a pp that divides the layers).
    Even(Vec<EvenOption>),
    /// Uneven ends with pp 1: remove them.
    OneStage,
    /// Uneven ends: the nearest end values that split (none: remove the ends).
    Ends(Vec<EndOption>),
    /// Uneven ends with `account_for_*` (L10): remove one; `ends_alone` when the ends split
    /// the layers without the accounting.
    Conflict { ends_alone: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvenOption {
    /// `` `pp 4` (8 layers per stage) ``.
    Pp {
        pp: u64,
        per_stage: u64,
    },
    /// `` `first_stage_layers 7 last_stage_layers 7` (8 layers on each of the 14 middle
    /// stages) ``: the written pp kept, with lighter first and last stages.
    Ends {
        first: u64,
        last: u64,
        per_stage: u64,
        middle: u64,
    },
    /// No interleaving.
    NoVpp,
    Vpp(u64),
    /// `account_for_embedding` and/or `account_for_loss` (both false: remove them):
    /// `per_chunk` layers in each of the `chunks` model chunks.
    Account {
        embedding: bool,
        loss: bool,
        per_chunk: u64,
        chunks: u64,
    },
    /// A `pipeline_layout` over `stages` virtual stages ([`pipeline_layout::balanced`]).
    Layout {
        layers: u64,
        stages: u64,
        mtp: u64,
    },
}

/// `` `first_stage_layers 3` (layers: …) ``.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndOption {
    pub first: bool,
    pub value: u64,
    pub split: StageSplit,
}

/// `the embedding`, `the loss`, `the embedding and the loss`.
fn accounted_names(embedding: bool, loss: bool) -> &'static str {
    match (embedding, loss) {
        (true, true) => "the embedding and the loss",
        (true, false) => "the embedding",
        _ => "the loss",
    }
}

fn end_key(first: bool) -> &'static str {
    if first {
        "first_stage_layers"
    } else {
        "last_stage_layers"
    }
}

impl LayerSplit {
    fn render(self) -> Diagnostic {
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        let (message, label) = match self.error {
            SplitError::Even { .. } => {
                let msg = if vpp > 1 {
                    format!("{l} layers cannot be split over pp {pp} × vpp {vpp} = {} model chunks", pp.saturating_mul(vpp))
                } else {
                    format!("{l} layers cannot be split evenly over pp {pp}")
                };
                (msg, format!("{l} % {} ≠ 0", pp.saturating_mul(vpp)))
            }
            SplitError::EndsNeedTwoStages => (
                "`first_stage_layers` and `last_stage_layers` need pp of at least 2".to_string(),
                "pp is 1".to_string(),
            ),
            SplitError::EndsExceed { ends: n, layers } => (
                format!("the first and last stages take {n} layers but the model has {layers}"),
                format!("{n} > {layers}"),
            ),
            SplitError::EndNotDivisible { first, n, vpp } => (
                format!("`{}` {n} is not divisible by vpp {vpp}", end_key(first)),
                format!("{n} layers over {vpp} model chunks"),
            ),
            SplitError::MiddleMismatch { layers, stages } => (
                format!("{layers} layers are left for {stages} middle pipeline stages"),
                format!("leaves {layers} layers for {stages} stages"),
            ),
            SplitError::MiddleNotDivisible { layers, stages } => (
                format!("{layers} middle layers cannot be split evenly over {stages} middle stages"),
                format!("leaves {layers} layers for {stages} stages"),
            ),
            SplitError::MiddleChunks { per_stage, vpp } => (
                format!("{per_stage} layers per middle stage cannot be split into vpp {vpp} model chunks"),
                format!("leaves {per_stage} layers per middle stage"),
            ),
            SplitError::Accounted { slots, pp, vpp, embedding, loss } => {
                let what = accounted_names(embedding, loss);
                let chunks = pp.saturating_mul(vpp);
                (
                    format!("{l} layers and {what} ({slots}) cannot be split over pp {pp} × vpp {vpp} = {chunks} model chunks"),
                    format!("{slots} % {chunks} ≠ 0"),
                )
            }
            SplitError::EndsWithAccounting => (
                "`first_stage_layers`/`last_stage_layers` cannot be combined with `account_for_embedding`/`account_for_loss`".to_string(),
                "counts the embedding or loss as a layer".to_string(),
            ),
        };
        let d = Diagnostic::new(Code::E0302, message, self.primary, label)
            .with_secondary(self.layers_loc, format!("{l} layers"));
        let d = with_written(d, &self.written);
        let help = match self.help {
            SplitHelp::Even(options) if options.is_empty() => format!("use a pp that divides {l}"),
            SplitHelp::Even(options) => {
                let texts: Vec<String> = options
                    .iter()
                    .map(|o| match *o {
                        EvenOption::Pp { pp, per_stage } => {
                            format!("`pp {pp}` ({per_stage} layers per stage)")
                        }
                        EvenOption::Ends { first, last, per_stage, middle } => {
                            let stages = if middle == 1 {
                                "the middle stage".to_string()
                            } else {
                                format!("each of the {middle} middle stages")
                            };
                            format!("`first_stage_layers {first} last_stage_layers {last}` ({per_stage} layers on {stages})")
                        }
                        EvenOption::NoVpp => "no `vpp`".to_string(),
                        EvenOption::Vpp(v) => format!("`vpp {v}`"),
                        EvenOption::Account { embedding: false, loss: false, per_chunk, .. } => {
                            format!("no `account_for_embedding`/`account_for_loss` ({per_chunk} layers per model chunk)")
                        }
                        EvenOption::Account { embedding, loss, per_chunk, chunks } => {
                            let keys = match (embedding, loss) {
                                (true, true) => "`account_for_embedding` and `account_for_loss`",
                                (true, false) => "`account_for_embedding`",
                                _ => "`account_for_loss`",
                            };
                            let added = u64::from(embedding) + u64::from(loss);
                            format!("{keys} ({l} + {added} = {} = {chunks} × {per_chunk})", l.saturating_add(added))
                        }
                        EvenOption::Layout { layers, stages, mtp } => {
                            let counts = pipeline_layout::balanced(layers, stages).unwrap_or_default();
                            format!("`pipeline_layout \"{}\"`", pipeline_layout::render(&counts, mtp))
                        }
                    })
                    .collect();
                format!("use {}", join_or(&texts))
            }
            SplitHelp::Conflict { ends_alone: true } => "remove `account_for_embedding` and `account_for_loss`: the first and last stage layers already split the layers".to_string(),
            SplitHelp::Conflict { ends_alone: false } => "remove `first_stage_layers` and `last_stage_layers`, or `account_for_embedding` and `account_for_loss`".to_string(),
            SplitHelp::OneStage => "remove `first_stage_layers` and `last_stage_layers`: with pp 1 all layers are on one stage".to_string(),
            SplitHelp::Ends(options) if options.is_empty() => {
                "remove `first_stage_layers` and `last_stage_layers` to split the layers evenly"
                    .to_string()
            }
            SplitHelp::Ends(options) => {
                let texts: Vec<String> = options
                    .iter()
                    .map(|o| {
                        format!(
                            "`{} {}` (layers: {})",
                            end_key(o.first),
                            o.value,
                            o.split.describe()
                        )
                    })
                    .collect();
                format!("use {}", join_or(&texts))
            }
        };
        d.with_help(help)
    }
}

// -------------------------------------------------------------------------------- E0303, E0304

#[derive(Clone, Debug, PartialEq)]
pub struct HeadsSplit {
    pub heads: u64,
    pub tp: u64,
    pub world: u64,
    pub primary: Loc,
    pub heads_loc: Loc,
    /// tp values that divide the heads and fit the world, nearest first.
    pub options: Vec<Setting>,
}

impl HeadsSplit {
    fn render(self) -> Diagnostic {
        let (heads, tp) = (self.heads, self.tp);
        let help = if self.options.is_empty() {
            format!("use a tp that divides {heads}")
        } else {
            format!(
                "{} (divides {heads} heads and fits {} GPUs)",
                use_settings(&self.options),
                self.world
            )
        };
        Diagnostic::new(
            Code::E0303,
            format!("{heads} attention heads cannot be split over tp {tp}"),
            self.primary,
            format!("{heads} % {tp} ≠ 0"),
        )
        .with_secondary(self.heads_loc, format!("{heads} heads"))
        .with_help(help)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct KvGroupsSplit {
    pub groups: u64,
    pub tp: u64,
    pub primary: Loc,
    pub groups_loc: Loc,
    pub options: Vec<Setting>,
}

impl KvGroupsSplit {
    fn render(self) -> Diagnostic {
        let (g, tp) = (self.groups, self.tp);
        Diagnostic::new(
            Code::E0304,
            format!("`kv_groups` {g} is neither a multiple nor a divisor of tp {tp}"),
            self.primary,
            format!("tp {tp}"),
        )
        .with_secondary(self.groups_loc, format!("{g} kv groups"))
        .with_help(if self.options.is_empty() {
            format!("use a tp that divides {g} or is a multiple of it")
        } else {
            use_settings(&self.options)
        })
    }
}

// -------------------------------------------------------------------------------- E0305, E0306

#[derive(Clone, Debug, PartialEq)]
pub struct BatchSplit {
    pub global_batch: u64,
    pub micro_batch: u64,
    pub dp: u64,
    pub global_batch_loc: Loc,
    pub micro_batch_loc: Loc,
    pub dp_from: DpSource,
    /// `global_batch` values around the written one that divide.
    pub options: Vec<Setting>,
}

/// Where dp came from: written (its loc), or derived from the world (the derivation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DpSource {
    Written(Loc),
    Derived {
        world: u64,
        tp: u64,
        pp: u64,
        cp: u64,
        cp_written: bool,
    },
}

impl BatchSplit {
    fn render(self) -> Diagnostic {
        let (gb, mb, dp) = (self.global_batch, self.micro_batch, self.dp);
        let step = mb.saturating_mul(dp);
        let d = Diagnostic::new(
            Code::E0305,
            format!("`global_batch` {gb} is not divisible by micro_batch {mb} × dp {dp} = {step}"),
            self.global_batch_loc,
            format!("{gb} sequences per iteration"),
        )
        .with_secondary(self.micro_batch_loc, format!("micro_batch {mb}"));
        let d = match self.dp_from {
            DpSource::Written(loc) => d.with_secondary(loc, format!("dp {dp}")),
            DpSource::Derived {
                world,
                tp,
                pp,
                cp,
                cp_written,
            } => d.with_note(format!(
                "dp {dp} = {world} GPUs / ({})",
                factors(tp, pp, cp, None, cp_written)
            )),
        };
        d.with_help(use_settings(&self.options))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct InterleavedMicrobatches {
    /// The microbatch count.
    pub m: u64,
    pub pp: u64,
    pub dp: u64,
    pub global_batch: u64,
    pub micro_batch: u64,
    pub global_batch_loc: Loc,
    pub micro_batch_loc: Loc,
    /// The written dp, pp and vpp.
    pub written: Vec<Written>,
    /// `(global_batch, microbatches)` around the written batch that interleave.
    pub options: Vec<(u64, u64)>,
}

impl InterleavedMicrobatches {
    fn render(self) -> Diagnostic {
        let (m, pp) = (self.m, self.pp);
        let message = if m < pp {
            format!("interleaved schedule needs at least pp {pp} microbatches, found {m}")
        } else {
            format!("interleaved schedule needs a microbatch count that is a multiple of pp {pp}, found {m}")
        };
        let d = Diagnostic::new(
            Code::E0306,
            message,
            self.global_batch_loc,
            format!("{m} microbatches"),
        )
        .with_secondary(
            self.micro_batch_loc,
            format!("micro_batch {}", self.micro_batch),
        );
        let options: Vec<String> = self
            .options
            .iter()
            .map(|(g, m)| format!("`global_batch {g}` ({m} microbatches)"))
            .collect();
        with_written(d, &self.written)
            .with_note(format!(
                "m = global_batch / (micro_batch × dp) = {} / ({} × {})",
                self.global_batch, self.micro_batch, self.dp
            ))
            .with_help(format!("use {}", join_or(&options)))
    }
}

// -------------------------------------------------------------------------------- E0307

#[derive(Clone, Debug, PartialEq)]
pub struct VppProblem {
    pub vpp: u64,
    pub vpp_loc: Loc,
    /// The written `pp` (1 or 2).
    pub pp_loc: Option<Loc>,
    pub kind: VppKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VppKind {
    /// pp 1: no stages to interleave.
    NoPipeline,
    /// pp 2 without `overlap_p2p`.
    TwoStagesWithoutOverlap,
}

impl VppProblem {
    fn render(self) -> Diagnostic {
        let vpp = self.vpp;
        let (d, pp_label, help) = match self.kind {
            VppKind::NoPipeline => (
                Diagnostic::new(
                    Code::E0307,
                    format!("`vpp` {vpp} needs pipeline parallelism but pp is 1"),
                    self.vpp_loc,
                    "model chunks need pipeline stages",
                ),
                "pp 1",
                "remove `vpp`, or use pp 3 or more (pp 2 with `overlap_p2p`)",
            ),
            VppKind::TwoStagesWithoutOverlap => (
                Diagnostic::new(
                    Code::E0307,
                    format!("`vpp` {vpp} with pp 2 needs `overlap_p2p`"),
                    self.vpp_loc,
                    "interleaving over 2 stages",
                )
                .with_note(
                    "without overlap, batched p2p would put two sends to the same peer in one batch",
                ),
                "pp 2",
                "add `overlap_p2p` to the plan",
            ),
        };
        let d = match self.pp_loc {
            Some(loc) => d.with_secondary(loc, pp_label),
            None => d,
        };
        d.with_help(help)
    }
}

// -------------------------------------------------------------------------------- E0308

#[derive(Clone, Debug, PartialEq)]
pub struct SeqOverCp {
    pub seq: u64,
    pub cp: u64,
    pub primary: Loc,
    pub seq_loc: Loc,
    /// Nearby cp values, then nearby seq values.
    pub options: Vec<Setting>,
}

impl SeqOverCp {
    fn render(self) -> Diagnostic {
        let (seq, cp) = (self.seq, self.cp);
        Diagnostic::new(
            Code::E0308,
            format!(
                "`seq` {seq} is not a multiple of 2 × cp {cp} = {}",
                cp.saturating_mul(2)
            ),
            self.primary,
            format!(
                "cp {cp} splits the sequence into {} chunks",
                cp.saturating_mul(2)
            ),
        )
        .with_secondary(self.seq_loc, format!("seq {seq}"))
        .with_help(use_settings(&self.options))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SeqOverTp {
    pub seq: u64,
    pub cp: u64,
    pub tp: u64,
    pub sp_loc: Loc,
    pub seq_loc: Loc,
    pub tp_loc: Option<Loc>,
    pub cp_loc: Option<Loc>,
    /// seq values that split; the help always ends with "no `sp`".
    pub seqs: Vec<u64>,
}

impl SeqOverTp {
    fn render(self) -> Diagnostic {
        let (seq, cp, tp) = (self.seq, self.cp, self.tp);
        let mut options: Vec<String> = self.seqs.iter().map(|s| format!("`seq {s}`")).collect();
        options.push("no `sp`".to_string());
        let local = if cp > 1 {
            format!("seq {seq} / cp {cp}")
        } else {
            format!("seq {seq}")
        };
        let mut d = Diagnostic::new(
            Code::E0308,
            format!("with `sp`, {local} is not divisible by tp {tp}"),
            self.sp_loc,
            "scatters the sequence over tp",
        )
        .with_secondary(self.seq_loc, format!("seq {seq}"));
        if let Some(loc) = self.tp_loc {
            d = d.with_secondary(loc, format!("tp {tp}"));
        }
        if let Some(loc) = self.cp_loc {
            d = d.with_secondary(loc, format!("cp {cp}"));
        }
        d.with_help(format!("use {}", join_or(&options)))
    }
}

// -------------------------------------------------------------------------------- E0309

/// Every expert rule `ep` breaks: the first is the diagnostic, the others its notes (one
/// diagnostic per problem: the value of `ep`).
#[derive(Clone, Debug, PartialEq)]
pub struct ExpertParallel {
    pub ep: u64,
    pub ep_loc: Loc,
    pub first: EpFailure,
    pub also: Vec<EpFailure>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EpFailure {
    /// ep > 1 on a dense model.
    Dense { model: String, model_loc: Loc },
    /// ep does not divide the experts.
    Experts {
        experts: u64,
        experts_loc: Loc,
        options: Vec<Setting>,
    },
    /// etp × ep × pp does not divide the GPU count.
    Grid {
        world: u64,
        tp: u64,
        pp: u64,
        group: u128,
        written: Vec<Written>,
        dims: Vec<DimSize>,
        options: Vec<Setting>,
    },
}

impl EpFailure {
    fn message(&self, ep: u64) -> String {
        match self {
            EpFailure::Dense { model, .. } => {
                format!("`ep` {ep} needs a mixture-of-experts model but `{model}` is dense")
            }
            EpFailure::Experts { experts, .. } => {
                format!("{experts} experts cannot be split over ep {ep}")
            }
            EpFailure::Grid {
                world,
                tp,
                pp,
                group,
                ..
            } => format!(
                "cluster has {world} GPUs, not a multiple of etp {tp} × ep {ep} × pp {pp} = {group}"
            ),
        }
    }

    fn render(self, ep: u64, ep_loc: Loc) -> Diagnostic {
        let message = self.message(ep);
        match self {
            EpFailure::Dense { model, model_loc } => {
                Diagnostic::new(Code::E0309, message, ep_loc, "expert parallelism")
                    .with_secondary(model_loc, format!("model `{model}` has no `experts`"))
                    .with_help("remove `ep`, or use a model with `experts`")
            }
            EpFailure::Experts {
                experts,
                experts_loc,
                options,
            } => Diagnostic::new(
                Code::E0309,
                message,
                ep_loc,
                format!("{experts} % {ep} ≠ 0"),
            )
            .with_secondary(experts_loc, format!("{experts} experts"))
            .with_help(if options.is_empty() {
                format!("use an ep that divides {experts} experts")
            } else {
                use_settings(&options)
            }),
            EpFailure::Grid {
                written,
                dims,
                options,
                ..
            } => {
                let d = Diagnostic::new(Code::E0309, message, ep_loc, format!("ep {ep}"));
                with_dims(with_written(d, &written), &dims).with_help(if options.is_empty() {
                    "use an ep whose expert grid divides the GPU count".to_string()
                } else {
                    use_settings(&options)
                })
            }
        }
    }
}

impl ExpertParallel {
    fn render(self) -> Diagnostic {
        let ep = self.ep;
        let mut d = self.first.render(ep, self.ep_loc);
        for other in &self.also {
            d = d.with_note(format!("`ep` {ep} also breaks: {}", other.message(ep)));
        }
        d
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct MoeNeedsSp {
    pub model: String,
    pub tp: u64,
    pub primary: Loc,
    /// The model's `experts` item.
    pub experts: Option<(u64, Loc)>,
}

impl MoeNeedsSp {
    fn render(self) -> Diagnostic {
        let tp = self.tp;
        let mut d = Diagnostic::new(
            Code::E0309,
            format!(
                "mixture-of-experts model `{}` with tp {tp} needs `sp`",
                self.model
            ),
            self.primary,
            format!("tp {tp}"),
        )
        .with_help("add `sp` to the plan");
        if let Some((n, loc)) = self.experts {
            d = d.with_secondary(loc, format!("{n} experts"));
        }
        d
    }
}

// -------------------------------------------------------------------------------- E0315

/// A model key as written, as a label: `topk 2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelKey {
    pub key: &'static str,
    pub value: u64,
    pub loc: Loc,
}

fn key_list(keys: &[ModelKey]) -> String {
    let names: Vec<String> = keys.iter().map(|k| format!("`{}`", k.key)).collect();
    join_and(&names)
}

#[derive(Clone, Debug, PartialEq)]
pub enum MoeShape {
    /// `topk` above `experts`: a token cannot be routed to more experts than there are.
    TopkOverExperts { topk: ModelKey, experts: ModelKey },
    /// MoE keys on a model without `experts` (they would be ignored).
    WithoutExperts { model: String, keys: Vec<ModelKey> },
    /// `first_k_dense` leaves no MoE layer.
    NoMoeLayer {
        first_k_dense: ModelKey,
        layers: u64,
        layers_loc: Loc,
    },
    /// E0364: `topk_groups` above `routed_groups`, or without it.
    TopkGroups {
        topk_groups: ModelKey,
        /// `None`: no `routed_groups` is written.
        routed_groups: Option<ModelKey>,
        experts: u64,
    },
    /// E0365: `routed_groups` that do not split the experts evenly.
    GroupsOverExperts {
        routed_groups: ModelKey,
        experts: ModelKey,
        /// Divisors of the experts nearest the written groups.
        options: Vec<Setting>,
    },
    /// E0366: `moe_layer_freq` (after `first_k_dense`) leaves no MoE layer.
    NoMoeLayerAtFreq {
        freq: ModelKey,
        first_k_dense: u64,
        layers: u64,
        layers_loc: Loc,
    },
}

impl MoeShape {
    fn render(self) -> Diagnostic {
        match self {
            MoeShape::TopkOverExperts { topk, experts } => Diagnostic::new(
                Code::E0315,
                format!(
                    "`topk` {} routes each token to more experts than the {} the model has",
                    topk.value, experts.value
                ),
                topk.loc,
                format!("topk {} > {} experts", topk.value, experts.value),
            )
            .with_secondary(experts.loc, format!("{} experts", experts.value))
            .with_help(format!(
                "use `topk {}` or fewer, or `experts {}` or more",
                experts.value, topk.value
            )),
            MoeShape::WithoutExperts { model, keys } => {
                let list = key_list(&keys);
                let first = &keys[0];
                let mut d = Diagnostic::new(
                    Code::E0315,
                    format!("model `{model}` sets {list} but has no `experts`"),
                    first.loc,
                    format!("{} {} needs `experts`", first.key, first.value),
                );
                for k in &keys[1..] {
                    d = d.with_secondary(k.loc, format!("{} {}", k.key, k.value));
                }
                let least = keys
                    .iter()
                    .find(|k| k.key == "topk")
                    .map_or(2, |k| k.value.max(2));
                d.with_help(format!(
                    "add `experts {least}` or more to model `{model}`, or remove {list}"
                ))
            }
            MoeShape::NoMoeLayer {
                first_k_dense,
                layers,
                layers_loc,
            } => Diagnostic::new(
                Code::E0315,
                format!(
                    "`first_k_dense` {} leaves none of the {layers} layers with experts",
                    first_k_dense.value
                ),
                first_k_dense.loc,
                format!("first_k_dense {}", first_k_dense.value),
            )
            .with_secondary(layers_loc, format!("{layers} layers"))
            .with_help(if layers > 1 {
                format!("use `first_k_dense {}` or fewer", layers - 1)
            } else {
                "remove `first_k_dense` or use more `layers`".to_string()
            }),
            MoeShape::TopkGroups {
                topk_groups,
                routed_groups: Some(groups),
                ..
            } => Diagnostic::new(
                Code::E0364,
                format!(
                    "`topk_groups` {} lets a token reach more groups than the {} routed groups",
                    topk_groups.value, groups.value
                ),
                topk_groups.loc,
                format!("{} > {} groups", topk_groups.value, groups.value),
            )
            .with_secondary(groups.loc, format!("routed_groups {}", groups.value))
            .with_help(format!(
                "use `topk_groups {}` or fewer, or `routed_groups {}` or more",
                groups.value, topk_groups.value
            )),
            MoeShape::TopkGroups {
                topk_groups,
                routed_groups: None,
                experts,
            } => {
                // The least group count above topk_groups that divides the experts.
                let fit = (topk_groups.value.max(1)..=experts.max(1))
                    .find(|g| experts.is_multiple_of(*g) && *g >= topk_groups.value)
                    .unwrap_or(experts.max(1));
                Diagnostic::new(
                    Code::E0364,
                    "`topk_groups` without `routed_groups`: group-limited routing needs the group count",
                    topk_groups.loc,
                    format!("topk_groups {} of no groups", topk_groups.value),
                )
                .with_help(format!(
                    "add `routed_groups {fit}` (it divides the {experts} experts), or remove `topk_groups`"
                ))
            }
            MoeShape::GroupsOverExperts {
                routed_groups,
                experts,
                options,
            } => Diagnostic::new(
                Code::E0365,
                format!(
                    "{} experts cannot be split into {} equal routing groups",
                    experts.value, routed_groups.value
                ),
                routed_groups.loc,
                format!("{} % {} ≠ 0", experts.value, routed_groups.value),
            )
            .with_secondary(experts.loc, format!("{} experts", experts.value))
            .with_help(format!(
                "{} (divides {} experts)",
                use_settings(&options),
                experts.value
            )),
            MoeShape::NoMoeLayerAtFreq {
                freq,
                first_k_dense,
                layers,
                layers_loc,
            } => {
                // Any N up to the layers after `first_k_dense` has a multiple among them.
                let room = layers.saturating_sub(first_k_dense);
                let help = if room > 0 {
                    format!(
                        "use `moe_layer_freq {room}` or less: layers {}-{layers} then hold a multiple of it",
                        first_k_dense + 1
                    )
                } else {
                    "use fewer `first_k_dense` layers or more `layers`".to_string()
                };
                Diagnostic::new(
                    Code::E0366,
                    format!(
                        "`moe_layer_freq` {} leaves none of the {layers} layers with experts",
                        freq.value
                    ),
                    freq.loc,
                    format!("moe_layer_freq {}", freq.value),
                )
                .with_secondary(layers_loc, format!("{layers} layers"))
                .with_help(help)
            }
        }
    }
}

// -------------------------------------------------------------------------------- E0316

#[derive(Clone, Debug, PartialEq)]
pub struct HeadsOverGroups {
    pub heads: u64,
    pub heads_loc: Loc,
    pub groups: u64,
    pub groups_loc: Loc,
    /// Divisors of the heads nearest the written groups.
    pub options: Vec<Setting>,
}

impl HeadsOverGroups {
    fn render(self) -> Diagnostic {
        let (heads, g) = (self.heads, self.groups);
        Diagnostic::new(
            Code::E0316,
            format!("{heads} attention heads cannot share {g} key-value groups evenly"),
            self.groups_loc,
            format!("{heads} % {g} ≠ 0"),
        )
        .with_secondary(self.heads_loc, format!("{heads} heads"))
        .with_help(format!(
            "{} (divides {heads} heads)",
            use_settings(&self.options)
        ))
    }
}

// -------------------------------------------------------------------------------- E0317

#[derive(Clone, Debug, PartialEq)]
pub struct HiddenOverHeads {
    pub model: String,
    pub hidden: u64,
    pub hidden_loc: Loc,
    pub heads: u64,
    pub heads_loc: Loc,
    /// Head counts near the written one that divide hidden.
    pub options: Vec<Setting>,
}

impl HiddenOverHeads {
    fn render(self) -> Diagnostic {
        let (h, n) = (self.hidden, self.heads);
        let floor = h / n.max(1);
        let mut help = format!("add `head_dim {}` to model `{}`", floor.max(1), self.model);
        if !self.options.is_empty() {
            help = format!("{help}, or {}", use_settings(&self.options));
        }
        Diagnostic::new(
            Code::E0317,
            format!("hidden {h} is not a multiple of {n} heads and no `head_dim` is written"),
            self.heads_loc,
            format!("{h} % {n} ≠ 0"),
        )
        .with_secondary(self.hidden_loc, format!("hidden {h}"))
        .with_help(help)
    }
}

// -------------------------------------------------------------------------------- E0350

#[derive(Clone, Debug, PartialEq)]
pub enum CapacityProblem {
    /// A capacity key on a model without routed experts.
    Dense {
        model: String,
        at: Loc,
        key: &'static str,
    },
    /// `moe_pad_to_capacity` without a capacity to pad to.
    PadWithoutCapacity { at: Loc },
}

impl CapacityProblem {
    fn render(self) -> Diagnostic {
        match self {
            CapacityProblem::Dense { model, at, key } => Diagnostic::new(
                Code::E0350,
                format!("`{key}` caps routed experts, but model `{model}` has no `experts`"),
                at,
                "no experts to cap",
            )
            .with_help(format!("remove `{key}`, or add `experts` and `topk` to model `{model}`")),
            CapacityProblem::PadWithoutCapacity { at } => Diagnostic::new(
                Code::E0350,
                "`moe_pad_to_capacity` without `moe_capacity_headroom`: there is no capacity to pad to",
                at,
                "pads to no capacity",
            )
            .with_help(
                "add `moe_capacity_headroom 0%` (Megatron's capacity factor 1.0) or more, or remove `moe_pad_to_capacity`",
            ),
        }
    }
}

// -------------------------------------------------------------------------------- E0349, W0022

#[derive(Clone, Debug, PartialEq)]
pub enum WindowProblem {
    /// E0349: `sliding_window_pattern` without the window it places.
    PatternWithoutWindow {
        model: String,
        pattern: ModelKey,
        seq: u64,
    },
    /// E0349: `sliding_window_pattern 1`: every layer keeps full attention.
    NoWindowedLayer { window: ModelKey, pattern: ModelKey },
    /// W0022: a window of at least `seq` keys: every query already sees its whole prefix.
    CoversSequence {
        window: ModelKey,
        seq: u64,
        seq_loc: Loc,
    },
}

impl WindowProblem {
    fn render(self) -> Diagnostic {
        match self {
            WindowProblem::PatternWithoutWindow {
                model,
                pattern,
                seq,
            } => Diagnostic::new(
                Code::E0349,
                format!(
                    "model `{model}` sets `sliding_window_pattern` but no `sliding_window`"
                ),
                pattern.loc,
                format!("sliding_window_pattern {} needs a window", pattern.value),
            )
            .with_help(format!(
                "add `sliding_window N` with N below the {seq}-token sequence (the keys a windowed layer sees), or remove `sliding_window_pattern {}`",
                pattern.value
            )),
            WindowProblem::NoWindowedLayer { window, pattern } => Diagnostic::new(
                Code::E0349,
                "`sliding_window_pattern 1` keeps full attention in every layer, so no layer is windowed",
                pattern.loc,
                "every layer is a multiple of 1",
            )
            .with_secondary(window.loc, format!("sliding_window {}", window.value))
            .with_help(format!(
                "write `sliding_window_pattern 2` (every second layer full, as GPT-OSS) or more, or remove `sliding_window {}` and `sliding_window_pattern 1`",
                window.value
            )),
            WindowProblem::CoversSequence {
                window,
                seq,
                seq_loc,
            } => Diagnostic::new(
                Code::W0022,
                format!(
                    "`sliding_window {}` covers the whole {seq}-token sequence: no attention is windowed",
                    window.value
                ),
                window.loc,
                format!("{} ≥ seq {seq}", window.value),
            )
            .with_secondary(seq_loc, format!("seq {seq}"))
            .with_help(format!(
                "remove `sliding_window {}`, or use a window below {seq} (e.g. `sliding_window {}`)",
                window.value,
                (seq / 2).max(1)
            )),
        }
    }
}

// -------------------------------------------------------------------------------- E0318

#[derive(Clone, Debug, PartialEq)]
pub enum MlaShape {
    /// MLA dims without `kv_lora_rank`, the key that turns MLA on.
    WithoutRank { model: String, keys: Vec<ModelKey> },
    /// MLA with grouped-query attention: every head has its own key and value.
    WithGroups {
        groups: ModelKey,
        heads: u64,
        rank: ModelKey,
    },
}

impl MlaShape {
    fn render(self) -> Diagnostic {
        match self {
            MlaShape::WithoutRank { model, keys } => {
                let list = key_list(&keys);
                let first = &keys[0];
                let mut d = Diagnostic::new(
                    Code::E0318,
                    format!("model `{model}` sets {list} but has no `kv_lora_rank`"),
                    first.loc,
                    format!("{} {} needs `kv_lora_rank`", first.key, first.value),
                );
                for k in &keys[1..] {
                    d = d.with_secondary(k.loc, format!("{} {}", k.key, k.value));
                }
                d.with_help(format!(
                    "add `kv_lora_rank` to model `{model}` for multi-head latent attention, or remove {list}"
                ))
            }
            MlaShape::WithGroups {
                groups,
                heads,
                rank,
            } => Diagnostic::new(
                Code::E0318,
                format!(
                    "multi-head latent attention has a key and value per head, not {} groups",
                    groups.value
                ),
                groups.loc,
                format!("kv_groups {}", groups.value),
            )
            .with_secondary(rank.loc, format!("kv_lora_rank {}", rank.value))
            .with_help(format!(
                "remove `kv_groups {}` (MLA uses all {heads} heads)",
                groups.value
            )),
        }
    }
}

// -------------------------------------------------------------------------------- E0331-E0334

#[derive(Clone, Debug, PartialEq)]
pub enum HybridProblem {
    /// E0331: the pattern has another number of symbols than the model has layers.
    Length {
        pattern: Loc,
        len: u64,
        layers: u64,
        layers_loc: Loc,
    },
    /// E0332: a symbol other than `M`, `*`, `-`, `E`.
    Symbol {
        symbol: char,
        at: Loc,
        /// The pattern without the unknown symbols.
        cleaned: String,
        layers: u64,
    },
    /// E0333: `E` layers on a model without `experts`.
    MoeWithoutExperts {
        model: String,
        at: Loc,
        moe_layers: u64,
    },
    /// E0333: `experts` on a hybrid model without an `E` layer.
    ExpertsWithoutMoe { experts: ModelKey, pattern: Loc },
    /// E0333: Mamba-2 dims on a model without a pattern.
    MambaWithoutPattern {
        model: String,
        keys: Vec<ModelKey>,
        layers: u64,
    },
    /// E0333: keys the pattern replaces or venusc does not model on a hybrid model.
    NotForHybrid {
        model: String,
        keys: Vec<ModelKey>,
        lora: Option<Loc>,
        /// The first key, else `task lora`.
        at: Loc,
    },
    /// E0334: Mamba-2 heads that the B/C groups do not divide.
    HeadsOverGroups {
        heads: u64,
        heads_loc: Loc,
        groups: u64,
        groups_loc: Option<Loc>,
        options: Vec<Setting>,
    },
    /// E0334: Mamba-2 heads or groups that tp does not divide.
    OverTp {
        heads: u64,
        groups: u64,
        tp: u64,
        tp_loc: Loc,
        model_loc: Loc,
        options: Vec<Setting>,
    },
}

impl HybridProblem {
    fn render(self) -> Diagnostic {
        match self {
            HybridProblem::Length {
                pattern,
                len,
                layers,
                layers_loc,
            } => Diagnostic::new(
                Code::E0331,
                format!("`hybrid_override_pattern` has {len} layers but the model has {layers}"),
                pattern,
                format!("{len} symbols"),
            )
            .with_secondary(layers_loc, format!("{layers} layers"))
            .with_help(format!(
                "write `layers {len}`, or a pattern of {layers} symbols ({} {})",
                len.abs_diff(layers),
                if len > layers { "fewer" } else { "more" }
            )),
            HybridProblem::Symbol {
                symbol,
                at,
                cleaned,
                layers,
            } => {
                let d = Diagnostic::new(
                    Code::E0332,
                    format!("`{symbol}` is not a hybrid layer symbol"),
                    at,
                    "unknown symbol",
                );
                let help = if cleaned.chars().count() as u64 == layers && !cleaned.is_empty() {
                    format!("write `hybrid_override_pattern \"{cleaned}\"` (without `{symbol}`)")
                } else {
                    format!(
                        "replace `{symbol}` by `M` (Mamba-2), `*` (attention), `-` (MLP) or `E` (MoE)"
                    )
                };
                d.with_help(help)
            }
            HybridProblem::MoeWithoutExperts {
                model,
                at,
                moe_layers,
            } => Diagnostic::new(
                Code::E0333,
                format!("model `{model}` has {moe_layers} MoE layers (`E`) but no `experts`"),
                at,
                "a MoE layer needs `experts`",
            )
            .with_help(format!(
                "add `experts` and `topk` to model `{model}`, or write `-` (a dense MLP) for each `E`"
            )),
            HybridProblem::ExpertsWithoutMoe { experts, pattern } => Diagnostic::new(
                Code::E0333,
                format!(
                    "`experts` {} on a hybrid model whose pattern has no MoE layer (`E`)",
                    experts.value
                ),
                experts.loc,
                format!("experts {}", experts.value),
            )
            .with_secondary(pattern, "no `E` here")
            .with_help("write `E` for the MoE layers in `hybrid_override_pattern`, or remove `experts`"),
            HybridProblem::MambaWithoutPattern {
                model,
                keys,
                layers,
            } => {
                let list = key_list(&keys);
                let first = &keys[0];
                let mut d = Diagnostic::new(
                    Code::E0333,
                    format!("model `{model}` sets {list} but has no `hybrid_override_pattern`"),
                    first.loc,
                    format!("{} {} needs Mamba-2 layers", first.key, first.value),
                );
                for k in &keys[1..] {
                    d = d.with_secondary(k.loc, format!("{} {}", k.key, k.value));
                }
                d.with_help(format!(
                    "add a `hybrid_override_pattern` of {layers} symbols (`M` for Mamba-2) to model `{model}`, or remove {list}"
                ))
            }
            HybridProblem::NotForHybrid {
                model,
                keys,
                lora,
                at,
            } => {
                let mut names: Vec<String> = keys.iter().map(|k| format!("`{}`", k.key)).collect();
                if lora.is_some() {
                    names.push("`task lora`".to_string());
                }
                let list = join_and(&names);
                let label = keys
                    .first()
                    .map_or("task lora".to_string(), |k| format!("{} {}", k.key, k.value));
                let mut d = Diagnostic::new(
                    Code::E0333,
                    format!("hybrid model `{model}` cannot have {list}"),
                    at,
                    label,
                );
                for k in keys.iter().skip(1) {
                    d = d.with_secondary(k.loc, format!("{} {}", k.key, k.value));
                }
                if let (Some(l), false) = (lora, keys.is_empty()) {
                    d = d.with_secondary(l, "task lora");
                }
                let first_k = keys.iter().any(|k| k.key == "first_k_dense");
                d.with_help(if first_k {
                    format!("remove {list}: write `-` (dense) or `E` (MoE) per layer in the pattern instead")
                } else {
                    format!("remove {list} (venusc models neither MTP depths, sliding windows nor LoRA adapters on Mamba-2 hybrids)")
                })
            }
            HybridProblem::HeadsOverGroups {
                heads,
                heads_loc,
                groups,
                groups_loc,
                options,
            } => {
                let d = Diagnostic::new(
                    Code::E0334,
                    format!("{heads} Mamba-2 heads cannot share {groups} B/C groups evenly"),
                    groups_loc.unwrap_or(heads_loc),
                    format!("{heads} % {groups} ≠ 0"),
                );
                let d = if groups_loc.is_some() {
                    d.with_secondary(heads_loc, format!("{heads} heads"))
                } else {
                    d
                };
                d.with_help(if options.is_empty() {
                    "write a `mamba_num_heads` that `n_groups` divides".to_string()
                } else {
                    format!("{} (divides {heads} heads)", use_settings(&options))
                })
            }
            HybridProblem::OverTp {
                heads,
                groups,
                tp,
                tp_loc,
                model_loc,
                options,
            } => Diagnostic::new(
                Code::E0334,
                format!("tp {tp} does not divide the {heads} Mamba-2 heads and {groups} groups"),
                tp_loc,
                format!("tp {tp}"),
            )
            .with_secondary(model_loc, format!("{heads} heads, {groups} groups"))
            .with_help(format!(
                "{} (divides both heads and groups)",
                use_settings(&options)
            )),
        }
    }
}

// -------------------------------------------------------------------------------- E0310

#[derive(Clone, Debug, PartialEq)]
pub struct FlagNeeds {
    pub flag: Flag,
    pub needs: Flag,
    pub flag_loc: Loc,
    /// What the flag does (the primary label).
    pub label: &'static str,
    pub fix: FlagFix,
    /// Where the needed flag was written off (a secondary label).
    pub needs_off: Option<Loc>,
}

impl FlagNeeds {
    fn render(self) -> Diagnostic {
        let (flag, needs) = (self.flag.word(), self.needs.word());
        let help = match self.fix {
            FlagFix::Add => format!("add `{needs}` to the plan"),
            FlagFix::AddOrRemove => format!("add `{needs}` to the plan, or remove `{flag}`"),
        };
        let d = Diagnostic::new(
            Code::E0310,
            format!("`{flag}` needs `{needs}`"),
            self.flag_loc,
            self.label,
        )
        .with_help(help);
        match self.needs_off {
            Some(loc) => d.with_secondary(loc, format!("{needs} off")),
            None => d,
        }
    }
}

// -------------------------------------------------------------------------------- E0311

#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleProblem {
    pub schedule: ScheduleKind,
    pub loc: Loc,
    pub kind: ScheduleIssue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleIssue {
    /// Interleaved or GPipe with pp 1.
    NeedsPipeline { pp_loc: Option<Loc> },
    /// Interleaved with vpp 1; the smallest vpp that splits the layers, if any.
    NeedsChunks {
        vpp: Option<u64>,
        vpp_loc: Option<Loc>,
    },
    /// GPipe or 1F1B with vpp > 1.
    CannotRunChunks { vpp: u64, vpp_loc: Option<Loc> },
}

impl ScheduleProblem {
    fn render(self) -> Diagnostic {
        let word = self.schedule.word();
        let (message, help, secondary) = match self.kind {
            ScheduleIssue::NeedsPipeline { pp_loc } => (
                format!("`schedule {word}` needs pipeline parallelism but pp is 1"),
                format!("remove `schedule {word}`, or set pp above 1"),
                pp_loc.map(|l| (l, "pp 1".to_string())),
            ),
            ScheduleIssue::NeedsChunks { vpp, vpp_loc } => (
                "`schedule interleaved` needs more than one model chunk per stage (vpp > 1)"
                    .to_string(),
                match vpp {
                    Some(v) => format!("add `vpp {v}`, or remove `schedule interleaved`"),
                    None => "remove `schedule interleaved`".to_string(),
                },
                vpp_loc.map(|l| (l, "vpp 1".to_string())),
            ),
            ScheduleIssue::CannotRunChunks { vpp, vpp_loc } => (
                format!("`schedule {word}` cannot run vpp {vpp} model chunks per stage"),
                "use `schedule interleaved` or remove `vpp`".to_string(),
                vpp_loc.map(|l| (l, format!("vpp {vpp}"))),
            ),
        };
        let d = Diagnostic::new(Code::E0311, message, self.loc, format!("schedule {word}"))
            .with_help(help);
        match secondary {
            Some((l, m)) => d.with_secondary(l, m),
            None => d,
        }
    }
}

// -------------------------------------------------------------------------------- W0001

#[derive(Clone, Debug, PartialEq)]
pub struct GroupSpan {
    pub group: Group,
    /// The group's size (`tp 8`).
    pub size: u64,
    /// Consecutive ranks one group covers (tp × size for cp and ep).
    pub span: u64,
    pub tp: u64,
    pub primary: Loc,
    /// The slower dim the group crosses.
    pub outer: DimSize,
    /// The innermost dim.
    pub inner: DimSize,
    /// The dims a group should stay inside, and how many GPUs they hold.
    pub inside: Vec<String>,
    pub fit: u64,
    /// The largest group size that stays inside (None: none to propose).
    pub keep: Option<u64>,
    /// The written tp, labelled for cp and ep groups.
    pub tp_loc: Option<Loc>,
    /// The size the group's span multiplies: `tp`, or `etp` for an ep group with `etp`
    /// written (the expert grid's order is etp-ep-dp-pp).
    pub lead: &'static str,
}

impl GroupSpan {
    fn render(self) -> Diagnostic {
        let name = self.group.word();
        let (size, span, tp) = (self.size, self.span, self.tp);
        let message = if self.group == Group::Tp {
            format!(
                "tp group of {span} GPUs spans the slower dim `{}`",
                self.outer.name
            )
        } else {
            format!("{name} group ({} {tp} × {name} {size} = {span} consecutive GPUs) spans the slower dim `{}`", self.lead, self.outer.name)
        };
        let inside: Vec<String> = self.inside.iter().map(|n| format!("`{n}`")).collect();
        let keep_inside = match self.keep {
            Some(x) => format!(
                "use `{name} {x}` to keep each {name} group inside {} ({} GPUs)",
                join_and(&inside),
                self.fit
            ),
            None => format!(
                "keep {name} groups inside {} ({} GPUs)",
                join_and(&inside),
                self.fit
            ),
        };
        // Cross-node cp and ep are how long-context and many-expert runs are built (Llama 3's
        // cp 16 at 128K, DeepSeek-V3's ep 64): Megatron overlaps the cp ring exchange with
        // attention, and all-to-all crosses nodes by design. Only tp across nodes is a slip.
        let help = match self.group {
            Group::Tp => keep_inside,
            Group::Cp | Group::Ep => format!(
                "{name} across nodes is common ({}); keep it if `venusc sim` shows little exposed {name} communication, or {keep_inside}",
                if self.group == Group::Cp { "long sequences" } else { "many experts" }
            ),
        };
        let mut d = Diagnostic::new(Code::W0001, message, self.primary, format!("{name} {size}"))
            .with_secondary(self.outer.loc, format!("crosses dim `{}`", self.outer.name))
            .with_secondary(
                self.inner.loc,
                format!("{} GPUs in dim `{}`", self.inner.size, self.inner.name),
            )
            .with_help(help);
        if let Some(loc) = self.tp_loc {
            d = d.with_secondary(loc, format!("{} {tp}", self.lead));
        }
        d
    }
}

// -------------------------------------------------------------------------------- W0003

#[derive(Clone, Debug, PartialEq)]
pub struct Bubble {
    /// The bubble's share of the iteration.
    pub bubble: Ratio,
    pub pp: u64,
    /// The microbatch count.
    pub m: u64,
    pub vpp: u64,
    pub micro_batch: u64,
    pub primary: Loc,
    pub global_batch_loc: Loc,
    pub micro_batch_loc: Loc,
    pub vpp_written: Option<(u64, Loc)>,
    /// The changes that bring the bubble down, in the order the help lists them.
    pub options: Vec<BubbleOption>,
}

/// One way to shrink the bubble, with the bubble it leaves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BubbleOption {
    /// More microbatches through a larger global batch.
    GlobalBatch {
        global_batch: u64,
        microbatches: u64,
        bubble: Ratio,
    },
    /// More microbatches through a smaller micro batch.
    MicroBatch {
        micro_batch: u64,
        microbatches: u64,
        bubble: Ratio,
    },
    /// More model chunks per stage.
    Vpp { vpp: u64, bubble: Ratio },
}

impl Bubble {
    fn render(self) -> Diagnostic {
        let (pp, m, vpp) = (self.pp, self.m, self.vpp);
        let options: Vec<String> = self
            .options
            .iter()
            .map(|o| match *o {
                BubbleOption::GlobalBatch {
                    global_batch,
                    microbatches,
                    bubble,
                } => format!(
                    "raise `global_batch` to {global_batch} ({microbatches} microbatches, bubble {})",
                    pct(bubble.0)
                ),
                BubbleOption::MicroBatch {
                    micro_batch,
                    microbatches,
                    bubble,
                } => format!(
                    "lower `micro_batch` to {micro_batch} ({microbatches} microbatches, bubble {})",
                    pct(bubble.0)
                ),
                BubbleOption::Vpp { vpp, bubble } => {
                    format!("use `vpp {vpp}` (bubble {})", pct(bubble.0))
                }
            })
            .collect();
        let mut d = Diagnostic::new(
            Code::W0003,
            format!(
                "pipeline bubble is {} of the iteration (pp {pp}, {m} microbatches)",
                pct(self.bubble.0)
            ),
            self.primary,
            format!("{pp} stages"),
        )
        .with_secondary(
            self.global_batch_loc,
            format!("{m} microbatches per iteration"),
        )
        .with_secondary(
            self.micro_batch_loc,
            format!("micro_batch {}", self.micro_batch),
        )
        .with_note(format!(
            "bubble = (pp − 1) / (m·vpp + pp − 1) = {} / ({m}·{vpp} + {})",
            pp.saturating_sub(1),
            pp.saturating_sub(1)
        ));
        if let Some((v, loc)) = self.vpp_written {
            d = d.with_secondary(loc, format!("vpp {v}"));
        }
        d.with_help(join_or(&options))
    }
}

// -------------------------------------------------------------------------------- W0006

#[derive(Clone, Debug, PartialEq)]
pub struct SpWithoutTp {
    pub sp_loc: Loc,
    pub tp_loc: Option<Loc>,
}

impl SpWithoutTp {
    fn render(self) -> Diagnostic {
        let d = Diagnostic::new(
            Code::W0006,
            "`sp` has no effect with tp 1",
            self.sp_loc,
            "sequence parallelism",
        )
        .with_note("Megatron-LM turns sequence parallelism off when tp = 1")
        .with_help("remove `sp`, or use tp above 1");
        match self.tp_loc {
            Some(loc) => d.with_secondary(loc, "tp 1"),
            None => d,
        }
    }
}

// -------------------------------------------------------------------------------- E0312

/// The GPU key that gives a precision's peak.
fn peak_key(precision: Precision) -> &'static str {
    match precision {
        Precision::Bf16 => "peak",
        Precision::Fp8 => "fp8_peak",
        Precision::Fp4 => "fp4_peak",
    }
}

fn code_words<T>(items: &[T], word: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| format!("`{}`", word(i))).collect()
}

#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionUnsupported {
    pub precision: Precision,
    pub precision_loc: Loc,
    pub gpu: String,
    /// The cluster's `gpu` item.
    pub gpu_loc: Loc,
    /// The precisions the GPU has tensor cores for (bf16 at least: `peak` is required).
    pub supported: Vec<Precision>,
    /// The stdlib GPUs that have the precision, in stdlib order.
    pub alternatives: Vec<String>,
}

impl PrecisionUnsupported {
    fn render(self) -> Diagnostic {
        let word = self.precision.word();
        let upper = word.to_ascii_uppercase();
        let key = peak_key(self.precision);
        let lowest = self.supported.last().copied().unwrap_or(Precision::Bf16);
        let fallback = format!("`precision {}`", lowest.word());
        let help = if self.alternatives.is_empty() {
            format!("use a GPU with an `{key}`, or {fallback}")
        } else {
            format!(
                "use a GPU with {upper} tensor cores ({}), or {fallback}",
                join_or(&code_words(&self.alternatives, |s| s.as_str()))
            )
        };
        Diagnostic::new(
            Code::E0312,
            format!(
                "`precision {word}` on `{}`, which has no {upper} tensor cores",
                self.gpu
            ),
            self.precision_loc,
            format!("GEMMs in {word}"),
        )
        .with_secondary(self.gpu_loc, format!("`{}` has no `{key}`", self.gpu))
        .with_note(format!(
            "`{}` runs {}",
            self.gpu,
            join_and(&code_words(&self.supported, |p| p.word()))
        ))
        .with_help(help)
    }
}

// -------------------------------------------------------------------------------- W0007

#[derive(Clone, Debug, PartialEq)]
pub struct Uncalibrated {
    pub gpu: String,
    pub arch: GpuArch,
    /// The calibrated arch whose constants cost it.
    pub fallback: GpuArch,
    /// Every calibrated arch, for the note.
    pub calibrated: Vec<GpuArch>,
    /// The cluster's `gpu` item.
    pub gpu_loc: Loc,
    /// The GPU's `arch` item, where written.
    pub arch_loc: Option<Loc>,
}

impl Uncalibrated {
    fn render(self) -> Diagnostic {
        let (arch, fallback) = (self.arch.word(), self.fallback.word());
        let d = Diagnostic::new(
            Code::W0007,
            format!(
                "arch `{arch}` of `{}` has no compute-model calibration: it is costed with `{fallback}`'s",
                self.gpu
            ),
            self.gpu_loc,
            format!("costed with the `{fallback}` calibration"),
        )
        .with_note(format!(
            "the analytic model's GEMM, attention and kernel efficiencies come from published runs or kernel measurements on {} GPUs only",
            join_and(&code_words(&self.calibrated, |a| a.word()))
        ))
        .with_help(format!(
            "set `mfu` or `measured` in the plan to cost compute from a measurement on `{}`",
            self.gpu
        ));
        match self.arch_loc {
            Some(loc) => d.with_secondary(loc, format!("arch `{arch}`")),
            None => d,
        }
    }
}

// -------------------------------------------------------------------------------- E0401, W0005

#[derive(Clone, Debug, PartialEq)]
pub struct MemoryProblem {
    /// E0401 when the stage does not fit at all, else W0005.
    pub over: bool,
    pub gpu: String,
    pub capacity: Bytes,
    /// The scenario's reserve (plan, cluster or default): kept back per GPU, added to the
    /// stage's peak.
    pub reserve: Bytes,
    pub capacity_loc: Loc,
    pub plan_loc: Loc,
    /// The written tp, pp and dp.
    pub written: Vec<Written>,
    /// The largest stage, term by term.
    pub breakdown: MemoryBreakdown,
    /// `(stages over the limit, stages)` when more than one stage is over.
    pub over_limit: Option<(usize, usize)>,
    pub repair: Repair,
}

/// One pipeline stage's peak memory, term by term (the notes of E0401 and W0005).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryBreakdown {
    pub stage: u64,
    pub peak: Bytes,
    pub weights: Bytes,
    /// Parameters held by one GPU (dense and expert).
    pub params: u64,
    pub gradients: Bytes,
    pub optimizer: Bytes,
    /// dp × cp when the distributed optimizer shards the optimizer state.
    pub sharded_over: Option<u64>,
    pub activations: Bytes,
    pub layers: u64,
    pub in_flight: u64,
    pub recompute: Recompute,
    /// How the model state is kept: dtypes, LoRA's trainable share, FSDP.
    pub state: StateKeeping,
}

/// The words of the model-state notes that depend on the plan's training keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateKeeping {
    /// The main-gradient dtype word (`grad_dtype`).
    pub grads: &'static str,
    /// Master weights, first and second moment dtype words.
    pub optimizer: [&'static str; 3],
    /// With LoRA: the adapter parameters per GPU, the only ones with gradients and state.
    pub trainable: Option<u64>,
    /// The FSDP strategy word, when the plan shards with FSDP.
    pub fsdp: Option<&'static str>,
}

impl StateKeeping {
    fn gradients(&self) -> String {
        match self.trainable {
            Some(n) => format!(
                "{}, {} trainable adapter parameters",
                self.grads,
                venus_base::base::math::thousands(n)
            ),
            None => self.grads.to_string(),
        }
    }
    fn optimizer(&self) -> String {
        match self.optimizer {
            ["fp32", "fp32", "fp32"] => "fp32 master weights and Adam moments".to_string(),
            [w, m, v] => format!("{w} master weights, {m} and {v} Adam moments"),
        }
    }
}

impl MemoryBreakdown {
    fn notes(&self) -> [String; 4] {
        let shards = match self.sharded_over {
            Some(n) => format!(", sharded over dp × cp = {n}"),
            None => String::new(),
        };
        let fsdp = match self.state.fsdp {
            Some(w) => format!(", fsdp {w}"),
            None => String::new(),
        };
        [
            format!(
                "stage {}: weights {} ({} parameters per GPU, 2 bytes each{fsdp})",
                self.stage,
                gib(self.weights),
                venus_base::base::math::thousands(self.params)
            ),
            format!(
                "gradients {} ({})",
                gib(self.gradients),
                self.state.gradients()
            ),
            format!(
                "optimizer state {} ({}{shards})",
                gib(self.optimizer),
                self.state.optimizer()
            ),
            format!(
                "activations {} ({} layers, {} in flight, recompute {})",
                gib(self.activations),
                self.layers,
                if self.in_flight == 1 {
                    "1 microbatch".to_string()
                } else {
                    format!("{} microbatches", self.in_flight)
                },
                self.recompute.word()
            ),
        ]
    }
}

impl MemoryProblem {
    fn render(self) -> Diagnostic {
        let w = &self.breakdown;
        let cap = self.capacity;
        // The check is peak + reserve <= capacity, and the messages state that sum.
        let need = Bytes(w.peak.0.saturating_add(self.reserve.0));
        let (code, message) = if self.over {
            (
                Code::E0401,
                format!(
                    "pipeline stage {} needs {} but `{}` has {}",
                    w.stage,
                    gib(need),
                    self.gpu,
                    gib(cap)
                ),
            )
        } else {
            (
                Code::W0005,
                format!(
                    "pipeline stage {} needs {}, {:.0}% of the {} of `{}`",
                    w.stage,
                    gib(need),
                    need.0 as f64 / cap.0.max(1) as f64 * 100.0,
                    gib(cap),
                    self.gpu
                ),
            )
        };
        let d = Diagnostic::new(
            code,
            message,
            self.plan_loc,
            format!("stage {} needs {}", w.stage, gib(need)),
        )
        .with_secondary(
            self.capacity_loc,
            format!("`{}` has {}", self.gpu, gib(cap)),
        );
        let mut d = with_written(d, &self.written);
        for note in w.notes() {
            d = d.with_note(note);
        }
        if self.reserve.0 > 0 {
            d = d.with_note(format!(
                "reserve {} kept back per GPU (CUDA context, NCCL buffers, fragmentation)",
                gib(self.reserve)
            ));
        }
        if let Some((over, stages)) = self.over_limit {
            d = d.with_note(format!("{over} of {stages} stages are over the limit"));
        }
        d.with_help(render_repair(&self.repair, cap))
    }
}

/// The text of one change applied alone: ``add `sp` ``.
fn change_alone(c: &Change) -> String {
    let dp = |dp: Option<u64>| match dp {
        Some(dp) => format!(" and `dp {dp}`"),
        None => String::new(),
    };
    match *c {
        Change::AddSp => "add `sp`".to_string(),
        Change::AddDistributedOptimizer => "add `distributed_optimizer`".to_string(),
        Change::Recompute(r) => format!("use `recompute {}`", r.word()),
        Change::Tp { tp, dp: d } => format!("use `tp {tp}`{}", dp(d)),
        Change::Pp { pp, dp: d } => format!("use `pp {pp}`{}", dp(d)),
    }
}

/// The item of one change in a combination: `` `sp` ``.
fn change_item(c: &Change) -> String {
    match *c {
        Change::AddSp => "`sp`".to_string(),
        Change::AddDistributedOptimizer => "`distributed_optimizer`".to_string(),
        Change::Recompute(r) => format!("`recompute {}`", r.word()),
        Change::Tp { tp, .. } => format!("`tp {tp}`"),
        Change::Pp { pp, .. } => format!("`pp {pp}`"),
    }
}

fn render_repair(r: &Repair, cap: Bytes) -> String {
    let items = |changes: &[Change]| -> Vec<String> { changes.iter().map(change_item).collect() };
    let dp = |dp: Option<u64>| match dp {
        Some(dp) => format!(" with `dp {dp}`"),
        None => String::new(),
    };
    match r {
        Repair::One { change, peak } => format!(
            "{}: the largest stage then needs {} of {}",
            change_alone(change),
            gib(*peak),
            gib(cap)
        ),
        Repair::Combined {
            changes,
            dp: d,
            peak,
        } => format!(
            "combine {}{}: the largest stage then needs {} of {}",
            join_and(&items(changes)),
            dp(*d),
            gib(*peak),
            gib(cap)
        ),
        Repair::NotEnough {
            changes,
            dp: d,
            peak,
        } => format!(
            "even with {}{} the largest stage needs {}; use more GPUs or GPUs with more memory",
            join_and(&items(changes)),
            dp(*d),
            gib(*peak)
        ),
        Repair::None { peak } => format!(
            "use GPUs with more than {} of memory, or more GPUs",
            gib(*peak)
        ),
    }
}

#[cfg(test)]
mod tests;

// -------------------------------------------------------------------------------- E0319

#[derive(Clone, Debug, PartialEq)]
pub struct LoraWithoutTask {
    /// `plan `p`` or `the plan`.
    pub plan: String,
    /// The LoRA items written (`lora_rank 16`, `lora_modules`), in order; never empty.
    pub keys: Vec<(String, Loc)>,
    /// The `task` item when one is written (its word is not `lora`).
    pub task: Option<(&'static str, Loc)>,
}

impl LoraWithoutTask {
    fn render(self) -> Diagnostic {
        let (first, first_loc) = self.keys[0].clone();
        let names: Vec<String> = self
            .keys
            .iter()
            .map(|(k, _)| format!("`{}`", k.split(' ').next().unwrap_or(k)))
            .collect();
        let (message, help) = match self.task {
            Some((word, _)) => (
                format!(
                    "{} shapes LoRA adapters but the task is `{word}`",
                    join_and(&names)
                ),
                format!(
                    "write `task lora` instead of `task {word}`, or remove {}",
                    join_and(&names)
                ),
            ),
            None => (
                format!(
                    "{} shapes LoRA adapters but the plan has no `task lora`",
                    join_and(&names)
                ),
                format!(
                    "add `task lora` to {}, or remove {}",
                    self.plan,
                    join_and(&names)
                ),
            ),
        };
        let mut d = Diagnostic::new(
            Code::E0319,
            message,
            first_loc,
            format!("`{first}` needs `task lora`"),
        );
        for (k, loc) in &self.keys[1..] {
            d = d.with_secondary(*loc, format!("`{k}`"));
        }
        if let Some((word, loc)) = self.task {
            d = d.with_secondary(loc, format!("task {word}: every parameter trains"));
        }
        d.with_help(help)
    }
}

// -------------------------------------------------------------------------------- E0320

/// One plan feature Megatron's `--use-torch-fsdp2` path rejects.
#[derive(Clone, Debug, PartialEq)]
pub enum TorchFsdpLimit {
    Pipeline { pp: u64, loc: Option<Loc> },
    Expert { ep: u64, loc: Option<Loc> },
    DistributedOptimizer { loc: Option<Loc> },
    TiedEmbeddings { model: String },
}

impl TorchFsdpLimit {
    fn what(&self) -> String {
        match self {
            TorchFsdpLimit::Pipeline { pp, .. } => format!("pipeline parallelism (pp {pp})"),
            TorchFsdpLimit::Expert { ep, .. } => format!("expert parallelism (ep {ep})"),
            TorchFsdpLimit::DistributedOptimizer { .. } => "`distributed_optimizer`".to_string(),
            TorchFsdpLimit::TiedEmbeddings { model } => {
                format!("tied embeddings (model `{model}` has no `untied_embeddings`)")
            }
        }
    }
    fn loc(&self) -> Option<Loc> {
        match self {
            TorchFsdpLimit::Pipeline { loc, .. }
            | TorchFsdpLimit::Expert { loc, .. }
            | TorchFsdpLimit::DistributedOptimizer { loc } => *loc,
            TorchFsdpLimit::TiedEmbeddings { .. } => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct TorchFsdpUnsupported {
    pub strategy: &'static str,
    /// The `fsdp` item.
    pub loc: Loc,
    /// Never empty.
    pub limits: Vec<TorchFsdpLimit>,
}

impl TorchFsdpUnsupported {
    fn render(self) -> Diagnostic {
        let whats: Vec<String> = self.limits.iter().map(TorchFsdpLimit::what).collect();
        let mut d = Diagnostic::new(
            Code::E0320,
            format!("torch FSDP2 does not support {}", join_and(&whats)),
            self.loc,
            "`--use-torch-fsdp2`",
        );
        for limit in &self.limits {
            if let Some(loc) = limit.loc() {
                d = d.with_secondary(loc, limit.what());
            }
        }
        d.with_help(format!(
            "write `fsdp {} megatron` (Megatron-FSDP shards the same state and takes these)",
            self.strategy
        ))
    }
}

// -------------------------------------------------------------------------------- E0321

#[derive(Clone, Debug, PartialEq)]
pub struct OptimizerDtypeWithoutSharding {
    /// The non-fp32 optimizer dtype items: key, word, location; never empty.
    pub keys: Vec<(&'static str, &'static str, Loc)>,
    /// `distributed_optimizer off`, when written.
    pub distributed_optimizer_off: Option<Loc>,
}

impl OptimizerDtypeWithoutSharding {
    fn render(self) -> Diagnostic {
        let (key, word, loc) = self.keys[0];
        let names: Vec<String> = self.keys.iter().map(|(k, _, _)| format!("`{k}`")).collect();
        let mut d = Diagnostic::new(
            Code::E0321,
            format!(
                "{} {} the distributed optimizer (the precision-aware optimizer)",
                join_and(&names),
                if names.len() == 1 { "needs" } else { "need" }
            ),
            loc,
            format!("`{key} {word}` keeps optimizer state below fp32"),
        );
        for (k, w, l) in &self.keys[1..] {
            d = d.with_secondary(*l, format!("{k} {w}"));
        }
        if let Some(off) = self.distributed_optimizer_off {
            d = d.with_secondary(off, "distributed_optimizer off");
        }
        d.with_help("add `distributed_optimizer` to the plan (it shards the lower-precision state)")
    }
}

// -------------------------------------------------------------------------------- E0346

#[derive(Clone, Debug, PartialEq)]
pub struct OffloadWithoutSharding {
    /// The written share, 0 to 1.
    pub fraction: f64,
    pub loc: Loc,
    /// `distributed_optimizer off`, when written.
    pub distributed_optimizer_off: Option<Loc>,
}

impl OffloadWithoutSharding {
    fn render(self) -> Diagnostic {
        let percent = (self.fraction * 100.0 * 100.0).round() / 100.0;
        let mut d = Diagnostic::new(
            Code::E0346,
            "`optimizer_offload` needs the distributed optimizer (Megatron's CPU offload runs inside the precision-aware distributed optimizer)",
            self.loc,
            format!("{percent}% of the optimizer state would live in host memory"),
        );
        if let Some(off) = self.distributed_optimizer_off {
            d = d.with_secondary(off, "distributed_optimizer off");
        }
        d.with_help(
            "add `distributed_optimizer` to the plan (or `fsdp optim`), or remove `optimizer_offload`",
        )
    }
}

// -------------------------------------------------------------------------- E0325-E0327, W0014

#[derive(Clone, Debug, PartialEq)]
pub struct ZeroBubbleProblem {
    pub schedule: ScheduleKind,
    pub loc: Loc,
    /// The written `pp 1`, if any.
    pub pp_loc: Option<Loc>,
}

impl ZeroBubbleProblem {
    fn render(self) -> Diagnostic {
        let word = self.schedule.word();
        let d = Diagnostic::new(
            Code::E0325,
            format!("`schedule {word}` needs pipeline parallelism but pp is 1"),
            self.loc,
            format!("schedule {word}"),
        )
        .with_note(
            "a zero-bubble schedule fills the pipeline's bubble with deferred weight gradients; \
             with one stage there is no bubble to fill",
        )
        .with_help(format!("remove `schedule {word}`"));
        match self.pp_loc {
            Some(l) => d.with_secondary(l, "pp 1"),
            None => d,
        }
    }
}

/// A plan feature the zero-bubble runtime of the reference does not run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroBubbleFeature {
    /// Model chunks (the hand schedules run one chunk per stage).
    Vpp(u64),
    /// `overlap_grad_reduce` with the distributed optimizer.
    OverlapGradReduce,
    /// `overlap_param_gather` with the distributed optimizer.
    OverlapParamGather,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ZeroBubbleUnsupported {
    pub schedule: ScheduleKind,
    pub loc: Loc,
    pub feature: ZeroBubbleFeature,
    pub feature_loc: Loc,
    /// The written `distributed_optimizer`, for the overlap flags.
    pub distributed_optimizer: Option<Loc>,
}

impl ZeroBubbleUnsupported {
    fn render(self) -> Diagnostic {
        let word = self.schedule.word();
        let (message, label, help) = match self.feature {
            ZeroBubbleFeature::Vpp(v) => (
                format!("`schedule {word}` runs one model chunk per stage, but vpp is {v}"),
                format!("vpp {v}"),
                format!("remove `vpp {v}`"),
            ),
            ZeroBubbleFeature::OverlapGradReduce => (
                format!(
                    "`schedule {word}` does not support `overlap_grad_reduce` with the distributed optimizer"
                ),
                "overlap_grad_reduce".to_string(),
                "remove `overlap_grad_reduce`".to_string(),
            ),
            ZeroBubbleFeature::OverlapParamGather => (
                format!(
                    "`schedule {word}` does not support `overlap_param_gather` with the distributed optimizer"
                ),
                "overlap_param_gather".to_string(),
                "remove `overlap_param_gather`".to_string(),
            ),
        };
        let d = Diagnostic::new(Code::E0326, message, self.feature_loc, label)
            .with_secondary(self.loc, format!("schedule {word}"))
            .with_help(help);
        match (self.feature, self.distributed_optimizer) {
            (ZeroBubbleFeature::Vpp(_), _) | (_, None) => d,
            (_, Some(l)) => d.with_secondary(l, "distributed_optimizer"),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ZeroBubbleMicrobatches {
    pub schedule: ScheduleKind,
    pub loc: Loc,
    /// The microbatch count.
    pub m: u64,
    pub pp: u64,
    /// The fewest microbatches the schedule runs with, max(pp, (pp − 1)·c).
    pub least: u64,
    /// The fewest the reference's hand schedule asserts, 2·pp.
    pub asserted: u64,
    pub dp: u64,
    pub global_batch: u64,
    pub micro_batch: u64,
    pub global_batch_loc: Loc,
    /// The global batch that gives `fix_microbatches`.
    pub fix: u64,
    pub fix_microbatches: u64,
}

impl ZeroBubbleMicrobatches {
    fn render(self, code: Code) -> Diagnostic {
        let word = self.schedule.word();
        let (m, pp) = (self.m, self.pp);
        let message = if code == Code::E0327 {
            format!(
                "`schedule {word}` needs at least {} microbatches on pp {pp}, found {m}",
                self.least
            )
        } else {
            format!(
                "`schedule {word}` with {m} microbatches is below the 2 × pp = {} the reference hand schedule asserts",
                self.asserted
            )
        };
        let why = if code == Code::E0327 {
            match self.schedule {
                ScheduleKind::ZbH2 => format!(
                    "the first stage runs 2 × (pp − 1) = {} forwards before its first backward",
                    self.least
                ),
                _ => format!(
                    "every stage needs a steady step of F, B and W after its warmup: at least pp = {pp} microbatches"
                ),
            }
        } else {
            "the op order is built as the reference generates it, but its bubble was only \
             measured from 2 × pp microbatches up"
                .to_string()
        };
        Diagnostic::new(
            code,
            message,
            self.global_batch_loc,
            format!("{m} microbatches"),
        )
        .with_secondary(self.loc, format!("schedule {word}"))
        .with_note(format!(
            "m = global_batch / (micro_batch × dp) = {} / ({} × {}); {why}",
            self.global_batch, self.micro_batch, self.dp
        ))
        .with_help(format!(
            "use `global_batch {}` ({} microbatches)",
            self.fix, self.fix_microbatches
        ))
    }
}

// -------------------------------------------------------------------------------- E0328-E0330

/// What keeps DualPipe's step loop from running the plan.
#[derive(Clone, Debug, PartialEq)]
pub enum DualPipeIssue {
    /// E0328: pp 1 (the written `pp`, if any).
    NeedsPipeline { pp_loc: Option<Loc> },
    /// E0328: `dualpipe` on an odd pp.
    OddStages { pp: u64, pp_loc: Option<Loc> },
    /// E0329: fewer than 2·pp microbatches, or an odd count for `dualpipe`.
    Microbatches {
        m: u64,
        least: u64,
        even: bool,
        dp: u64,
        global_batch: u64,
        micro_batch: u64,
        global_batch_loc: Loc,
        /// The global batch that gives `fix_microbatches`.
        fix: u64,
        fix_microbatches: u64,
    },
    /// E0330: a vpp the schedule does not place (`dualpipev` 2, `dualpipe` 1).
    Chunks {
        vpp: u64,
        vpp_loc: Option<Loc>,
        want: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct DualPipeProblem {
    pub schedule: ScheduleKind,
    pub loc: Loc,
    pub issue: DualPipeIssue,
}

impl DualPipeProblem {
    fn render(self) -> Diagnostic {
        let word = self.schedule.word();
        let here = format!("schedule {word}");
        match self.issue {
            DualPipeIssue::NeedsPipeline { pp_loc } => {
                let d = Diagnostic::new(
                    Code::E0328,
                    format!("`schedule {word}` needs pipeline parallelism but pp is 1"),
                    self.loc,
                    here,
                )
                .with_note(
                    "DualPipe feeds microbatches from both ends of the pipeline and exchanges \
                     them with a previous and a next rank",
                )
                .with_help(format!("remove `schedule {word}`"));
                match pp_loc {
                    Some(l) => d.with_secondary(l, "pp 1"),
                    None => d,
                }
            }
            DualPipeIssue::OddStages { pp, pp_loc } => {
                let primary = pp_loc.unwrap_or(self.loc);
                let d = Diagnostic::new(
                    Code::E0328,
                    format!("`schedule dualpipe` needs an even pp, found {pp}"),
                    primary,
                    format!("pp {pp}"),
                )
                .with_note(
                    "rank r holds stage r of the forward direction and stage pp − 1 − r of the \
                     reverse one; the reference asserts `num_ranks % 2 == 0`",
                )
                .with_help(
                    "use `schedule dualpipev` with `vpp 2`: the V-shaped variant runs on any pp",
                );
                if pp_loc.is_some() {
                    d.with_secondary(self.loc, here)
                } else {
                    d
                }
            }
            DualPipeIssue::Microbatches {
                m,
                least,
                even,
                dp,
                global_batch,
                micro_batch,
                global_batch_loc,
                fix,
                fix_microbatches,
            } => {
                let what = if even {
                    format!("an even count of at least {least}")
                } else {
                    format!("at least {least}")
                };
                Diagnostic::new(
                    Code::E0329,
                    format!("`schedule {word}` needs {what} microbatches, found {m}"),
                    global_batch_loc,
                    format!("{m} microbatches"),
                )
                .with_secondary(self.loc, here)
                .with_note(format!(
                    "m = global_batch / (micro_batch × dp) = {global_batch} / ({micro_batch} × {dp}); \
                     the step loop's warmup fills both arms with 2 × pp = {least} microbatches{}",
                    if even {
                        ", half of them fed from each end"
                    } else {
                        ""
                    }
                ))
                .with_help(format!(
                    "use `global_batch {fix}` ({fix_microbatches} microbatches)"
                ))
            }
            DualPipeIssue::Chunks { vpp, vpp_loc, want } => {
                let why = if want == 2 {
                    "the V-shaped schedule places two model chunks on every rank"
                } else {
                    "each direction runs a plain pp-stage split; the second chunk of a rank is \
                     the second parameter copy"
                };
                let message = format!("`schedule {word}` runs with vpp {want}, but vpp is {vpp}");
                match vpp_loc {
                    Some(l) => Diagnostic::new(Code::E0330, message, l, format!("vpp {vpp}"))
                        .with_secondary(self.loc, here)
                        .with_note(why)
                        .with_help(if want == 1 {
                            format!("remove `vpp {vpp}`")
                        } else {
                            format!("use `vpp {want}`")
                        }),
                    None => Diagnostic::new(Code::E0330, message, self.loc, here)
                        .with_note(why)
                        .with_help(format!("add `vpp {want}` to the plan")),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------- W0015

/// What keeps Megatron's combined 1F1B from running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpOverlapReason {
    /// ep 1 or a dense model: no expert all-to-all to hide.
    NoExpertParallel { ep: u64 },
    /// Full recompute (transformer_config.py asserts against it).
    FullRecompute,
    /// The allgather dispatcher has no all-to-all to overlap (transformer_config.py E05).
    AllGatherDispatcher,
    /// A schedule other than the interleaved one.
    Schedule(ScheduleKind),
    /// No interleaving: pp 1, or pp > 1 without vpp (Megatron asserts vpp); `vpp` is the
    /// smallest count that splits the layers.
    NoInterleaving { pp: u64, vpp: Option<u64> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct EpOverlapIgnored {
    pub loc: Loc,
    pub reason: EpOverlapReason,
}

impl EpOverlapIgnored {
    fn render(self) -> Diagnostic {
        let (why, help) = match self.reason {
            EpOverlapReason::NoExpertParallel { ep } => (
                format!("there is no expert all-to-all to overlap (ep {ep})"),
                "remove `overlap_ep_comm`".to_string(),
            ),
            EpOverlapReason::FullRecompute => (
                "Megatron-LM does not run it with full recompute".to_string(),
                "use `recompute selective`".to_string(),
            ),
            EpOverlapReason::AllGatherDispatcher => (
                "Megatron-LM runs it with the alltoall and flex dispatchers only".to_string(),
                "write `moe_dispatcher alltoall`".to_string(),
            ),
            EpOverlapReason::Schedule(s) => (
                format!(
                    "it overlaps the interleaved schedule's steps, not `schedule {}`'s",
                    s.word()
                ),
                format!("remove `schedule {}`", s.word()),
            ),
            EpOverlapReason::NoInterleaving { pp, vpp } => (
                format!(
                    "with a pipeline it runs on the interleaved schedule only, which needs vpp > 1 (pp {pp}, no vpp)"
                ),
                match vpp {
                    Some(v) => format!("add `vpp {v}` to the plan"),
                    None => "remove `overlap_ep_comm`".to_string(),
                },
            ),
        };
        Diagnostic::new(
            Code::W0015,
            format!("`overlap_ep_comm` has no effect: {why}"),
            self.loc,
            "overlap_ep_comm",
        )
        .with_note(
            "Megatron-LM's `--overlap-moe-expert-parallel-comm` runs one microbatch's forward \
             together with another's backward so that each hides the other's all-to-alls \
             (transformer_config.py); the prediction runs without it",
        )
        .with_help(help)
    }
}

// -------------------------------------------------------------------------------- W0025

/// `overlap_p2p` on a plan whose schedule is not the interleaved one.
#[derive(Clone, Debug, PartialEq)]
pub struct P2pOverlapIgnored {
    pub loc: Loc,
    pub pp: u64,
    /// The schedule the plan runs (`None`: no pipeline).
    pub schedule: Option<ScheduleKind>,
    /// A vpp that would interleave the plan's layers over its stages (pp > 1 only).
    pub vpp: Option<u64>,
}

impl P2pOverlapIgnored {
    fn render(self) -> Diagnostic {
        let why = match self.schedule {
            None => format!("there is no pipeline to overlap (pp {})", self.pp),
            Some(s) => format!(
                "only the interleaved schedule overlaps its sends and receives, not `{}`",
                s.word()
            ),
        };
        let help = match (self.schedule, self.vpp) {
            (Some(ScheduleKind::OneFOneB), Some(v)) => {
                format!("remove `overlap_p2p`, or interleave the stages with `vpp {v}`")
            }
            _ => "remove `overlap_p2p`".to_string(),
        };
        Diagnostic::new(
            Code::W0025,
            format!("`overlap_p2p` has no effect: {why}"),
            self.loc,
            "overlap_p2p",
        )
        .with_note(
            "Megatron-LM clears `--overlap-p2p-communication` without a virtual pipeline \
             (arguments.py) and its non-interleaved schedule refuses it (schedules.py); the \
             prediction runs without it",
        )
        .with_help(help)
    }
}

// -------------------------------------------------------------------------------- E0322-E0324

/// What is wrong with a `pipeline_layout`.
#[derive(Clone, Debug, PartialEq)]
pub enum LayoutIssue {
    /// E0322.
    Syntax(pipeline_layout::SyntaxError),
    /// E0323.
    Count(pipeline_layout::CountError),
    /// E0323 (L11): the layout with other split keys.
    Conflict(Vec<(&'static str, Loc)>),
    /// E0324.
    Place(pipeline_layout::PlaceError),
}

#[derive(Clone, Debug, PartialEq)]
pub struct LayoutProblem {
    pub issue: LayoutIssue,
    pub text: String,
    /// The string literal, quotes included.
    pub loc: Loc,
    /// Offsets into `text` are offsets into the source (no escapes).
    pub raw: bool,
    pub layers: u64,
    pub layers_loc: Loc,
    pub pp: u64,
    pub pp_loc: Option<Loc>,
    /// The written vpp, if any.
    pub vpp: Option<(u64, Loc)>,
    pub mtp: u64,
    /// The virtual stages of the layout, when it parses.
    pub stages: Option<u64>,
}

impl LayoutProblem {
    /// The source location of a byte range of the text (the whole literal when escapes moved
    /// the offsets).
    fn at(&self, at: Option<pipeline_layout::At>) -> Loc {
        match at {
            Some(a) if self.raw => {
                let start = self.loc.span.start as usize + 1 + a.start;
                Loc::new(
                    self.loc.file,
                    venus_diag::diag::Span::new(start, start + a.len.max(1)),
                )
            }
            _ => self.loc,
        }
    }

    /// A layout venusc would write for these sizes over `stages` virtual stages.
    fn proposal(&self, stages: u64) -> Option<String> {
        pipeline_layout::balanced(self.layers, stages).map(|c| {
            format!(
                "`pipeline_layout \"{}\"`",
                pipeline_layout::render(&c, self.mtp)
            )
        })
    }

    /// The stages of a layout that fits: pp × the written vpp, else the nearest multiple of pp
    /// to `stages`.
    fn fitting_stages(&self, stages: u64) -> u64 {
        let pp = self.pp.max(1);
        match self.vpp {
            Some((v, _)) => pp.saturating_mul(v.max(1)),
            None => (stages.saturating_add(pp / 2) / pp)
                .max(1)
                .saturating_mul(pp),
        }
    }

    fn render(self) -> Diagnostic {
        match self.issue.clone() {
            LayoutIssue::Syntax(e) => self.render_syntax(e),
            LayoutIssue::Count(e) => self.render_count(e),
            LayoutIssue::Conflict(keys) => {
                let names: Vec<String> = keys.iter().map(|(k, _)| format!("`{k}`")).collect();
                let mut d = Diagnostic::new(
                    Code::E0323,
                    format!(
                        "`pipeline_layout` cannot be combined with {}",
                        join_and(&names)
                    ),
                    self.loc,
                    "places every layer itself",
                );
                for (k, loc) in &keys {
                    d = d.with_secondary(*loc, format!("`{k}` written here"));
                }
                d.with_help(format!(
                    "remove {}: the layout already says where each layer goes",
                    join_and(&names)
                ))
            }
            LayoutIssue::Place(e) => self.render_place(e),
        }
    }

    fn render_syntax(&self, e: pipeline_layout::SyntaxError) -> Diagnostic {
        use pipeline_layout::SyntaxError as S;
        let slice = |a: pipeline_layout::At| {
            self.text
                .get(a.start..a.start + a.len)
                .unwrap_or("")
                .to_string()
        };
        let (msg, at, label, help) = match e {
            S::BadChar { ch, at } => {
                let near = ['E', 't', 'm', 'L']
                    .into_iter()
                    .find(|c| c.eq_ignore_ascii_case(&ch));
                let help = match near {
                    Some(c) => format!("write `{c}`: layout symbols are case-sensitive"),
                    None => format!("remove `{ch}`: a layout holds `E`, `t`, `m`, `L`, `|`, `(...)*N` and `x*N`"),
                };
                (
                    format!("`{ch}` is not a pipeline layout symbol"),
                    Some(at),
                    "not E, t, m, L or |".to_string(),
                    help,
                )
            }
            S::Unclosed { at } => (
                "unclosed `(` in the pipeline layout".to_string(),
                Some(at),
                "opened here".to_string(),
                format!(
                    "close the group with `)*N` (the text has {} `(` and {} `)`)",
                    self.text.matches('(').count(),
                    self.text.matches(')').count()
                ),
            ),
            S::Unopened { at } => (
                "`)` without a `(` in the pipeline layout".to_string(),
                Some(at),
                "closes nothing".to_string(),
                format!(
                    "remove the `)` at character {}, or open its group with `(`",
                    at.start + 1
                ),
            ),
            S::NoCount { at } => {
                let group = slice(at);
                let help = if group.is_empty() || group == "*" {
                    "write `*N` after a symbol or a group: `t*4`, `(tt|)*3`".to_string()
                } else {
                    format!("write `{group}*N` with the number of repetitions")
                };
                (
                    "a pipeline layout group without a repeat count".to_string(),
                    Some(at),
                    "needs `*N`".to_string(),
                    help,
                )
            }
            S::NoDigits { at } => (
                "`*` without a count in the pipeline layout".to_string(),
                Some(at),
                "needs a number".to_string(),
                "write the repetitions after `*`: `t*4`, `(tt|)*3`".to_string(),
            ),
            S::EmptyGroup { at } => (
                "empty group `()` in the pipeline layout".to_string(),
                Some(at),
                "repeats nothing".to_string(),
                "remove the `()` and its count".to_string(),
            ),
            S::TooDeep { at } => (
                format!(
                    "pipeline layout groups nested deeper than {}",
                    pipeline_layout::MAX_DEPTH
                ),
                Some(at),
                "too deep".to_string(),
                "unroll the innermost group: write its stages out".to_string(),
            ),
            S::TooLarge { at } => (
                format!(
                    "the pipeline layout expands past {} virtual stages",
                    pipeline_layout::MAX_STAGES
                ),
                Some(at),
                "too many repetitions".to_string(),
                match self.proposal(self.fitting_stages(self.pp)) {
                    Some(p) => {
                        format!("write one entry per virtual stage (pp × vpp of them), e.g. {p}")
                    }
                    None => "write one entry per virtual stage (pp × vpp of them)".to_string(),
                },
            ),
            S::Empty => (
                "empty pipeline layout".to_string(),
                None,
                "no stages".to_string(),
                match self.proposal(self.fitting_stages(self.pp)) {
                    Some(p) => format!("write the stages, e.g. {p}, or remove `pipeline_layout`"),
                    None => "write the stages, or remove `pipeline_layout`".to_string(),
                },
            ),
        };
        Diagnostic::new(Code::E0322, msg, self.at(at), label).with_help(help)
    }

    fn render_count(&self, e: pipeline_layout::CountError) -> Diagnostic {
        use pipeline_layout::CountError as C;
        let with_proposal = |base: String, stages: u64| match self.proposal(stages) {
            Some(p) => format!("{base}, e.g. {p}"),
            None => base,
        };
        let d = match e {
            C::Stages { stages, pp } => {
                let fit = self.fitting_stages(stages);
                let d = Diagnostic::new(
                    Code::E0323,
                    format!("the pipeline layout has {stages} virtual stages, not a multiple of pp {pp}"),
                    self.loc,
                    format!("{stages} stages"),
                );
                let d = match self.pp_loc {
                    Some(l) => d.with_secondary(l, format!("pp {pp}")),
                    None => d,
                };
                d.with_help(with_proposal(
                    format!("write {fit} stages (pp {pp} × vpp {})", fit / pp.max(1)),
                    fit,
                ))
            }
            C::Vpp { written, layout } => {
                let d = Diagnostic::new(
                    Code::E0323,
                    format!(
                        "the pipeline layout gives vpp {layout} but the plan writes vpp {written}"
                    ),
                    self.loc,
                    format!(
                        "{} stages over pp {}",
                        layout.saturating_mul(self.pp),
                        self.pp
                    ),
                );
                let d = match self.vpp {
                    Some((_, l)) => d.with_secondary(l, format!("vpp {written}")),
                    None => d,
                };
                d.with_help(format!("remove `vpp`: the layout sets it (vpp {layout})"))
            }
            C::Layers { layout, model } => {
                let stages = self.stages.unwrap_or_else(|| self.fitting_stages(1));
                let change = if layout < model {
                    format!("add {} `t`", model - layout)
                } else {
                    format!("remove {} `t`", layout - model)
                };
                Diagnostic::new(
                    Code::E0323,
                    format!("the pipeline layout holds {layout} layers but the model has {model}"),
                    self.loc,
                    format!("{layout} `t`"),
                )
                .with_secondary(self.layers_loc, format!("{model} layers"))
                .with_help(with_proposal(change, stages))
            }
            C::Mtp { layout, model } => Diagnostic::new(
                Code::E0323,
                format!("the pipeline layout holds {layout} MTP depths but the model has {model}"),
                self.loc,
                format!("{layout} `m`"),
            )
            .with_help(if layout < model {
                format!("add {} `m` before the `L`", model - layout)
            } else {
                format!("remove {} `m`", layout - model)
            }),
        };
        d
    }

    fn render_place(&self, e: pipeline_layout::PlaceError) -> Diagnostic {
        use pipeline_layout::PlaceError as P;
        let (msg, at, label, help) = match e {
            P::EmbeddingNotFirst { at } => (
                "the pipeline layout does not start with the embedding `E`".to_string(),
                at,
                "not first".to_string(),
                "move the `E` to the start of the first stage".to_string(),
            ),
            P::LossNotLast { at } => (
                "the pipeline layout does not end with the loss `L`".to_string(),
                at,
                "not last".to_string(),
                "move the `L` to the end of the last stage".to_string(),
            ),
            P::Twice { sym, count, at } => {
                let c = sym.letter();
                (
                    format!("`{c}` is in the pipeline layout {count} times"),
                    at,
                    "again here".to_string(),
                    format!(
                        "keep one `{c}` ({}), remove the other {}",
                        if c == 'E' {
                            "at the start"
                        } else {
                            "at the end"
                        },
                        count - 1
                    ),
                )
            }
            P::LayerAfterMtp { at } => (
                "a transformer layer `t` after an MTP depth `m` in the pipeline layout".to_string(),
                at,
                "after the `m`".to_string(),
                "move the `m` after the last `t`, just before the `L`".to_string(),
            ),
            P::MtpPlace { stage, at } => {
                let pp = self.pp.max(1);
                (
                    format!("`m` in virtual stage {stage}, which is not the last model chunk of pipeline rank {}", stage % pp),
                    at,
                    "not a rank's last chunk".to_string(),
                    format!("put every `m` in one of the last {pp} virtual stages (each rank's last chunk)"),
                )
            }
        };
        Diagnostic::new(Code::E0324, msg, self.at(at), label).with_help(help)
    }
}

// -------------------------------------------------------------------------- E0337, E0338, W0018

/// What a `slow_rank` / `slow_node` / `slow_link` item counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowUnit {
    Rank,
    Node,
    /// A `slow_link`: it names a node, whose NIC is slow.
    Link,
}

impl SlowUnit {
    fn word(self) -> &'static str {
        match self {
            SlowUnit::Rank => "rank",
            SlowUnit::Node | SlowUnit::Link => "node",
        }
    }

    fn key(self) -> &'static str {
        match self {
            SlowUnit::Rank => "slow_rank",
            SlowUnit::Node => "slow_node",
            SlowUnit::Link => "slow_link",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SlowOutside {
    pub unit: SlowUnit,
    pub written: u64,
    /// Ranks or nodes of the cluster (the last one is `count - 1`).
    pub count: u64,
    pub loc: Loc,
    /// The cluster's GPUs, for the message.
    pub world: u64,
}

impl SlowOutside {
    fn render(self) -> Diagnostic {
        let what = self.unit.word();
        let (plural, of) = match self.unit {
            SlowUnit::Rank => ("ranks", format!("{} GPUs", self.world)),
            SlowUnit::Node | SlowUnit::Link => ("nodes", format!("{} nodes", self.count)),
        };
        Diagnostic::new(
            Code::E0337,
            format!(
                "`{} {}` is outside the cluster of {of}",
                self.unit.key(),
                self.written
            ),
            self.loc,
            format!("no {what} {}", self.written),
        )
        .with_help(format!(
            "{plural} count from 0: name one of 0 to {}",
            self.count.saturating_sub(1)
        ))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SlowStopped {
    pub key: &'static str,
    /// A `slow_link` (a share of bandwidth) rather than a slow GPU (a share of compute).
    pub link: bool,
    pub loc: Loc,
}

impl SlowStopped {
    fn render(self) -> Diagnostic {
        if self.link {
            return Diagnostic::new(
                Code::E0338,
                "a `slow_link` at 0% bandwidth never finishes a step",
                self.loc,
                "0% of its bandwidth",
            )
            .with_help(
                "write the share of its bandwidth the NIC still reaches, such as `50%`; \
                 leave a node whose NIC is down out of the cluster",
            );
        }
        Diagnostic::new(
            Code::E0338,
            format!("a `{}` GPU at 0% speed never finishes a step", self.key),
            self.loc,
            "0% of its compute rate",
        )
        .with_help(
            "write the share of its compute rate the GPU still reaches, such as `80%`; \
             leave a GPU that has stopped out of the cluster",
        )
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct SlowNone {
    pub share: f64,
    pub world: u64,
    pub loc: Loc,
}

impl SlowNone {
    fn render(self) -> Diagnostic {
        // The smallest whole percentage that rounds to one GPU: share × world >= 0.5.
        let pct = (50.0 / self.world.max(1) as f64).ceil().max(1.0);
        Diagnostic::new(
            Code::W0018,
            format!(
                "`slow_gpus {}%` of {} GPUs picks no GPU",
                percent_text(self.share),
                self.world
            ),
            self.loc,
            "rounds to 0 GPUs",
        )
        .with_help(format!(
            "write `slow_gpus {pct}%` or more to slow one GPU, or `slow_rank RANK SPEED` to name it"
        ))
    }
}

/// `1`, `0.5`: a share as the percentage a user writes, without float noise.
fn percent_text(share: f64) -> String {
    let text = format!("{:.4}", share * 100.0);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

// -------------------------------------------------------------------------------- E0335

/// A reliability input of zero: an MTBF (every component would fail at once) or a checkpoint
/// interval (the job would only write checkpoints).
#[derive(Clone, Debug, PartialEq)]
pub struct ZeroReliability {
    /// The key as written (`gpu_mtbf`, `checkpoint_interval`).
    pub key: &'static str,
    pub loc: Loc,
    /// `cluster `meta`` or `plan `p``: where the key is.
    pub owner: String,
}

impl ZeroReliability {
    fn render(self) -> Diagnostic {
        let (why, help) = if self.key == "checkpoint_interval" {
            (
                "the job would do nothing but write checkpoints",
                format!(
                    "write the training time between checkpoints (such as `checkpoint_interval 30min`), or remove it from {} for the Young/Daly optimum",
                    self.owner
                ),
            )
        } else {
            (
                "every such component would fail at once",
                format!(
                    "write the component's mean time between failures (such as `{} 50000h`), or remove `{}` from {} if it never interrupts the job",
                    self.key, self.key, self.owner
                ),
            )
        };
        Diagnostic::new(
            Code::E0335,
            format!("`{}` is zero: {why}", self.key),
            self.loc,
            "must be above 0",
        )
        .with_help(help)
    }
}

// -------------------------------------------------------------------------------- E0336

#[derive(Clone, Debug, PartialEq)]
pub enum GoodputIncomplete {
    /// Failure rates but no `storage_write_bw`: the checkpoint write time is unknown.
    NoStorage {
        /// The first failure-rate item (`gpu_mtbf 79000h`) and where it is.
        rate: (String, Loc),
        /// `cluster `meta``.
        cluster: String,
        /// What the job's GPUs' scale-out links carry at once (an upper bound to suggest).
        link_cap: String,
    },
    /// A `checkpoint_interval` but no failure rate in the cluster.
    NoRates {
        interval: (String, Loc),
        cluster: String,
    },
}

impl GoodputIncomplete {
    fn render(self) -> Diagnostic {
        match self {
            GoodputIncomplete::NoStorage {
                rate,
                cluster,
                link_cap,
            } => Diagnostic::new(
                Code::E0336,
                format!("`{}` states a failure rate but {cluster} has no `storage_write_bw`", rate.0),
                rate.1,
                "a failure rate without a checkpoint write time",
            )
            .with_help(format!(
                "add `storage_write_bw` to {cluster}: the aggregate bandwidth its checkpoint storage sustains (its GPUs' scale-out links carry at most {link_cap})"
            )),
            GoodputIncomplete::NoRates { interval, cluster } => Diagnostic::new(
                Code::E0336,
                format!("`{}` sets a checkpoint interval but {cluster} states no failure rate", interval.0),
                interval.1,
                "a checkpoint interval without failures to weigh it against",
            )
            .with_help(format!(
                "add `gpu_mtbf`, `node_mtbf` or `link_mtbf` to {cluster} (such as `gpu_mtbf 50000h`), or remove `checkpoint_interval`"
            )),
        }
    }
}

// -------------------------------------------------------------------------------- W0017

/// A written `checkpoint_interval` whose goodput is well below the Young/Daly optimum's.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckpointIntervalCost {
    /// `checkpoint_interval 4h` as written.
    pub written: String,
    pub loc: Loc,
    pub goodput: f64,
    pub optimal_goodput: f64,
    /// The optimum as a value of the language (`249s`).
    pub optimum: String,
}

impl CheckpointIntervalCost {
    fn render(self) -> Diagnostic {
        let points = (self.optimal_goodput - self.goodput) * 100.0;
        Diagnostic::new(
            Code::W0017,
            format!(
                "`{}` gives {} goodput, {points:.1} points below the Young/Daly optimum",
                self.written,
                pct(self.goodput)
            ),
            self.loc,
            format!("{} goodput", pct(self.goodput)),
        )
        .with_help(format!(
            "write `checkpoint_interval {}` ({} goodput), or leave it out to use the optimum",
            self.optimum,
            pct(self.optimal_goodput)
        ))
    }
}

// -------------------------------------------------------------------------------- E0355

/// A `venussim` item whose path or value `--emit venussim` cannot write back.
#[derive(Clone, Debug, PartialEq)]
pub struct VenusSimFieldProblem {
    /// The item's first string, as written.
    pub path: String,
    pub problem: venus_plan::plan::venussim::FieldProblem,
    /// The item's second string, as written.
    pub value: String,
    /// The string at fault: the value for a JSON error, else the path.
    pub loc: Loc,
}

impl VenusSimFieldProblem {
    fn render(self) -> Diagnostic {
        use venus_plan::plan::venussim::FieldProblem as F;
        let path = &self.path;
        let (message, label, help) = match self.problem {
            F::Path => (
                format!("`venussim` path {path:?} is not `SECTION.FIELD`"),
                "expected one section and one field, joined by `.`".to_string(),
                format!(
                    "write the config's section and field, such as `venussim \"time_line_visualizer_config.single_pp_group\" \"1\"`; a top-level section of its own is its name alone (`{}`)",
                    path.split('.').find(|s| !s.is_empty()).unwrap_or("extra")
                ),
            ),
            F::UnknownSection => (
                format!("`venussim` path {path:?} names a field of a section VenusSim's config does not have"),
                format!("the sections are {}", venus_plan::plan::venussim::SECTIONS.map(|s| format!("`{s}`")).join(", ")),
                format!(
                    "keep a top-level section of its own whole, by its name alone: `venussim \"{}\" \"{{...}}\"`",
                    path.split('.').next().unwrap_or_default()
                ),
            ),
            F::SectionOnly { section } => (
                format!("`venussim` path {path:?} names a whole section venusc writes"),
                "a section, not a field".to_string(),
                format!("name one field of it, such as `\"{section}.FIELD\"`"),
            ),
            F::Written { from } => (
                format!("`venussim` field {path:?} is written from the scenario"),
                format!("`--emit venussim` writes it from {from}"),
                format!("remove this item and set {from} instead, so the emitted config and the simulated plan agree"),
            ),
            F::Json { message } => (
                format!("the value of `venussim` field {path:?} is not JSON"),
                message.clone(),
                json_help(&self.value),
            ),
        };
        Diagnostic::new(Code::E0355, message, self.loc, label).with_help(help)
    }
}

/// The fix for a value that does not parse: text that is no JSON at all was most likely
/// meant as a JSON string, which needs its own escaped quotes inside the `.venus` string.
fn json_help(value: &str) -> String {
    let quoted = serde_json::Value::String(value.to_string()).to_string();
    let as_venus = format!("\"{}\"", quoted.replace('\\', "\\\\").replace('"', "\\\""));
    format!(
        "write one JSON value: a number (`\"1\"`), `true`/`false`, or, for the text {value:?}, the JSON string `{as_venus}`"
    )
}

// -------------------------------------------------------------------- E0339, E0340, E0341, W0019

/// A recompute key that refines a granularity the plan does not use.
#[derive(Clone, Debug, PartialEq)]
pub struct RecomputeRefinementWithout {
    /// `plan `p`` or `the plan`.
    pub plan: String,
    /// The refining items written (`recompute_modules`, `recompute_num_layers 4`), in order;
    /// never empty.
    pub keys: Vec<(String, Loc)>,
    /// The granularity they refine: `selective` or `full`.
    pub needs: &'static str,
    /// The plan's `recompute` item when one is written (its word is not `needs`).
    pub written: Option<(&'static str, Loc)>,
}

impl RecomputeRefinementWithout {
    fn render(self) -> Diagnostic {
        let (first, first_loc) = self.keys[0].clone();
        let names: Vec<String> = self
            .keys
            .iter()
            .map(|(k, _)| format!("`{}`", k.split(' ').next().unwrap_or(k)))
            .collect();
        let needs = self.needs;
        let verb = if names.len() > 1 { "refine" } else { "refines" };
        let (message, help) = match self.written {
            Some((word, _)) => (
                format!(
                    "{} {verb} {needs} recompute but the plan's recompute is `{word}`",
                    join_and(&names)
                ),
                format!(
                    "write `recompute {needs}` instead of `recompute {word}`, or remove {}",
                    join_and(&names)
                ),
            ),
            None => (
                format!(
                    "{} {verb} {needs} recompute but the plan has no `recompute {needs}`",
                    join_and(&names)
                ),
                format!(
                    "add `recompute {needs}` to {}, or remove {}",
                    self.plan,
                    join_and(&names)
                ),
            ),
        };
        let mut d = Diagnostic::new(
            Code::E0339,
            message,
            first_loc,
            format!("`{first}` is read only with `recompute {needs}`"),
        );
        for (k, loc) in &self.keys[1..] {
            d = d.with_secondary(*loc, format!("`{k}`"));
        }
        if let Some((word, loc)) = self.written {
            d = d.with_secondary(loc, format!("recompute {word}"));
        }
        d.with_help(help)
    }
}

/// `recompute_modules` modules the model does not have: an error where Megatron-LM rejects
/// them (E0340), a warning where they recompute nothing (W0019). One diagnostic per code.
#[derive(Clone, Debug, PartialEq)]
pub struct RecomputeModuleUnfit {
    pub code: Code,
    /// Each module's word and what the model lacks for it, as a phrase (`multi-head latent
    /// attention`, `routed experts`); never empty.
    pub modules: Vec<(&'static str, &'static str)>,
    /// The model's name.
    pub model: String,
    /// The `recompute_modules` item.
    pub loc: Loc,
    /// The modules written that fit, in Megatron's order.
    pub fitting: Vec<&'static str>,
}

impl RecomputeModuleUnfit {
    fn render(self) -> Diagnostic {
        let names: Vec<String> = self.modules.iter().map(|(m, _)| format!("`{m}`")).collect();
        let list = join_and(&names);
        let lacks = self.modules[0].1;
        let one_lack = self.modules.iter().all(|(_, l)| *l == lacks);
        let model = &self.model;
        let message = match (self.code == Code::E0340, one_lack) {
            (true, true) => {
                format!("{list} in `recompute_modules` needs {lacks} but model `{model}` has none")
            }
            (true, false) => {
                format!("{list} in `recompute_modules` need what model `{model}` does not have")
            }
            (false, true) if names.len() == 1 => format!(
                "{list} in `recompute_modules` recomputes nothing: model `{model}` has no {lacks}"
            ),
            (false, true) => format!(
                "{list} in `recompute_modules` recompute nothing: model `{model}` has no {lacks}"
            ),
            (false, false) => {
                format!("{list} in `recompute_modules` recompute nothing in model `{model}`")
            }
        };
        let label: Vec<String> = if one_lack {
            vec![format!("no {lacks} to recompute")]
        } else {
            self.modules
                .iter()
                .map(|(m, l)| format!("`{m}`: no {l}"))
                .collect()
        };
        let help = if self.fitting.is_empty() {
            format!(
                "remove `recompute_modules` to recompute Megatron's default `core_attn`, or name modules the model has instead of {list}"
            )
        } else {
            format!("write `recompute_modules {}`", self.fitting.join(" "))
        };
        Diagnostic::new(self.code, message, self.loc, label.join("; ")).with_help(help)
    }
}

/// What `fp8_param_gather` lacks in a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Fp8ParamGatherNeeds {
    pub plan: String,
    pub loc: Loc,
    /// The plan's precision word when it is not `fp8`, with its item when written.
    pub precision: Option<(&'static str, Option<Loc>)>,
    /// Neither the distributed optimizer nor an FSDP strategy shards the parameters' update.
    pub unsharded: bool,
}

impl Fp8ParamGatherNeeds {
    fn render(self) -> Diagnostic {
        let mut needs = Vec::new();
        let mut adds = Vec::new();
        if let Some((word, _)) = self.precision {
            needs.push(format!("`precision fp8` (the plan's is `{word}`)"));
            adds.push("`precision fp8`".to_string());
        }
        if self.unsharded {
            needs.push("the distributed optimizer or `fsdp`".to_string());
            adds.push("`distributed_optimizer`".to_string());
        }
        let mut d = Diagnostic::new(
            Code::E0341,
            format!("`fp8_param_gather` needs {}", join_and(&needs)),
            self.loc,
            "FP8 weights gathered by the optimizer",
        );
        if let Some((word, Some(loc))) = self.precision {
            d = d.with_secondary(loc, format!("precision {word}"));
        }
        d.with_help(format!(
            "add {} to {}, or remove `fp8_param_gather`",
            join_and(&adds),
            self.plan
        ))
    }
}

// ---------------------------------------------------------------------------------- E0369

/// `fsdp_keep_unsharded` in a plan whose FSDP does not shard the parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct KeepUnshardedNeedsFsdp {
    pub plan: String,
    pub loc: Loc,
    /// The plan's `fsdp` strategy word and item, when one is written.
    pub strategy: Option<(&'static str, Loc)>,
}

impl KeepUnshardedNeedsFsdp {
    fn render(self) -> Diagnostic {
        let (message, help) = match self.strategy {
            Some((word, _)) => (
                format!(
                    "`fsdp_keep_unsharded` needs an `fsdp` strategy that shards parameters, \
                     and `{word}` keeps them whole"
                ),
                format!(
                    "write `fsdp optim_grads_params` in {}, or remove `fsdp_keep_unsharded`",
                    self.plan
                ),
            ),
            None => (
                "`fsdp_keep_unsharded` without `fsdp`".to_string(),
                format!(
                    "add `fsdp optim_grads_params` to {}, or remove `fsdp_keep_unsharded`",
                    self.plan
                ),
            ),
        };
        let mut d = Diagnostic::new(
            Code::E0369,
            message,
            self.loc,
            "parameters kept gathered for the step",
        );
        if let Some((word, loc)) = self.strategy {
            d = d.with_secondary(loc, format!("fsdp {word}"));
        }
        d.with_help(help)
    }
}

// ---------------------------------------------------------------------------------- E0353-E0354

/// What keeps the reference's ZBV from splitting the plan.
#[derive(Clone, Debug, PartialEq)]
pub enum ZbvIssue {
    /// E0353: layers not a multiple of 2·pp (each stage's layers split into two chunks).
    Layers {
        layers: u64,
        pp: u64,
        layers_loc: Loc,
        pp_loc: Option<Loc>,
        /// The pp nearest the plan's that splits the layers and divides the world (None: none
        /// of 2 or more does).
        fix_pp: Option<u64>,
    },
    /// E0353: a key that splits the layers unevenly; the V splits them evenly only.
    UnevenSplit { key: &'static str, key_loc: Loc },
    /// E0354: a written vpp other than the two chunks the V places.
    Chunks { vpp: u64, vpp_loc: Loc },
}

#[derive(Clone, Debug, PartialEq)]
pub struct ZbvProblem {
    pub loc: Loc,
    pub issue: ZbvIssue,
}

impl ZbvProblem {
    fn render(self) -> Diagnostic {
        let here = "schedule zbv";
        match self.issue {
            ZbvIssue::Layers {
                layers,
                pp,
                layers_loc,
                pp_loc,
                fix_pp,
            } => {
                let d = Diagnostic::new(
                    Code::E0353,
                    format!(
                        "`schedule zbv` needs layers in a multiple of 2 × pp = {}, found {layers}",
                        pp.saturating_mul(2)
                    ),
                    self.loc,
                    here,
                )
                .with_secondary(layers_loc, format!("{layers} layers"))
                .with_note(
                    "every rank holds two model chunks of the V, stage r and stage 2 × pp − 1 − r; \
                     the reference asserts an even number of layers per pipeline stage",
                );
                let d = match pp_loc {
                    Some(l) => d.with_secondary(l, format!("pp {pp}")),
                    None => d,
                };
                match fix_pp {
                    Some(f) => d.with_help(format!(
                        "use `pp {f}`: {layers} layers give {} per stage, {} per chunk",
                        layers / f,
                        layers / f / 2
                    )),
                    None => d.with_help(format!(
                        "use another schedule: no pp the cluster divides into splits {layers} \
                         layers into two chunks per stage"
                    )),
                }
            }
            ZbvIssue::UnevenSplit { key, key_loc } => Diagnostic::new(
                Code::E0353,
                format!("`schedule zbv` splits the layers evenly, but `{key}` is written"),
                key_loc,
                key,
            )
            .with_secondary(self.loc, here)
            .with_note(
                "the reference's V schedule gives every stage num_layers / pp layers, half on each \
                 chunk, and takes no uneven split",
            )
            .with_help(format!("remove `{key}`")),
            ZbvIssue::Chunks { vpp, vpp_loc } => Diagnostic::new(
                Code::E0354,
                format!("`schedule zbv` runs with vpp 2, but vpp is {vpp}"),
                vpp_loc,
                format!("vpp {vpp}"),
            )
            .with_secondary(self.loc, here)
            .with_note(
                "the V places two model chunks on every rank; the reference sets vpp to 2 itself \
                 and rejects a per-chunk layer count",
            )
            .with_help(format!("remove `vpp {vpp}` (zbv implies vpp 2)")),
        }
    }
}

// -------------------------------------------------------------------------------- E0342

/// What an `etp` breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EtpIssue {
    /// The experts' ffn is not a multiple of etp.
    Ffn { ffn: u64 },
    /// etp × ep × pp does not divide the GPU count.
    Grid {
        world: u64,
        ep: u64,
        pp: u64,
        grid: u128,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct EtpProblem {
    pub etp: u64,
    pub loc: Loc,
    pub issue: EtpIssue,
    /// The nearest etp values that pass both rules.
    pub options: Vec<Setting>,
}

impl EtpProblem {
    fn render(self) -> Diagnostic {
        let etp = self.etp;
        let (message, label) = match self.issue {
            EtpIssue::Ffn { ffn } => (
                format!("the experts' ffn {ffn} cannot be split over etp {etp}"),
                format!("{ffn} % {etp} ≠ 0"),
            ),
            EtpIssue::Grid { world, ep, pp, grid } => (
                format!(
                    "cluster has {world} GPUs, not a multiple of etp {etp} × ep {ep} × pp {pp} = {grid}"
                ),
                format!("etp {etp}"),
            ),
        };
        Diagnostic::new(Code::E0342, message, self.loc, label)
            .with_note(
                "the routed experts run on Megatron-LM's expert grid, etp × ep × expert dp × pp \
                 (megatron/core/parallel_state.py), each expert's linears split over etp",
            )
            .with_help(if self.options.is_empty() {
                "remove `etp` (it is then tp)".to_string()
            } else {
                use_settings(&self.options)
            })
    }
}

// -------------------------------------------------------------------------------- E0343

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatcherIssue {
    /// A flex backend named after `alltoall` or `allgather`.
    BackendWithout {
        dispatcher: &'static str,
        backend: &'static str,
    },
    /// flex with etp × ep = 1; the smallest ep that gives it ranks to dispatch to.
    FlexAlone { ep_option: Option<u64> },
}

#[derive(Clone, Debug, PartialEq)]
pub struct DispatcherProblem {
    pub loc: Loc,
    pub issue: DispatcherIssue,
}

impl DispatcherProblem {
    fn render(self) -> Diagnostic {
        match self.issue {
            DispatcherIssue::BackendWithout {
                dispatcher,
                backend,
            } => Diagnostic::new(
                Code::E0343,
                format!("`{backend}` is a backend of the `flex` dispatcher, not of `{dispatcher}`"),
                self.loc,
                format!("{dispatcher} {backend}"),
            )
            .with_note(
                "Megatron-LM reads `--moe-flex-dispatcher-backend` only with \
                 `--moe-token-dispatcher-type flex` and rejects DeepEP without it \
                 (megatron/core/transformer/transformer_config.py)",
            )
            .with_help(format!(
                "write `moe_dispatcher flex {backend}`, or `moe_dispatcher {dispatcher}`"
            )),
            DispatcherIssue::FlexAlone { ep_option } => Diagnostic::new(
                Code::E0343,
                "the `flex` dispatcher needs etp × ep > 1 but both are 1",
                self.loc,
                "flex dispatcher",
            )
            .with_note(
                "\"DeepEP dispatcher requires TPxEP > 1\" \
                 (megatron/core/transformer/moe/token_dispatcher.py)",
            )
            .with_help(match ep_option {
                Some(ep) => format!("add `ep {ep}`, or write `moe_dispatcher alltoall`"),
                None => "write `moe_dispatcher alltoall`".to_string(),
            }),
        }
    }
}

// -------------------------------------------------------------------------------- E0344

#[derive(Clone, Debug, PartialEq)]
pub struct CpA2aHeads {
    pub loc: Loc,
    pub comm: &'static str,
    /// The ranks the a2a scatters heads over (cp, or the first hierarchical size).
    pub a2a: u64,
    pub tp: u64,
    /// Query heads and key/value heads per tensor-parallel rank.
    pub q: u64,
    pub kv: u64,
    pub heads_loc: Loc,
    /// The a2a sizes above 1 that divide both head counts.
    pub sizes: Vec<u64>,
}

impl CpA2aHeads {
    fn render(self) -> Diagnostic {
        let (q, kv, a2a) = (self.q, self.kv, self.a2a);
        let bad = if q.is_multiple_of(a2a) { kv } else { q };
        let what = match (q.is_multiple_of(a2a), bad == 1) {
            (true, true) => "key/value head",
            (true, false) => "key/value heads",
            (false, true) => "query head",
            (false, false) => "query heads",
        };
        let help = match (self.comm, self.sizes.last()) {
            ("a2a", Some(&s)) => format!("write `cp_comm a2a_p2p {s}`, or `cp_comm p2p`"),
            ("a2a_p2p", Some(&s)) => format!("write `cp_comm a2a_p2p {s}`"),
            _ => "write `cp_comm p2p`".to_string(),
        };
        Diagnostic::new(
            Code::E0344,
            format!(
                "`cp_comm {}` scatters heads over {a2a} ranks but each tp rank has {bad} {what}",
                self.comm
            ),
            self.loc,
            format!("{bad} % {a2a} ≠ 0"),
        )
        .with_secondary(
            self.heads_loc,
            format!("{q} query and {kv} key/value heads per tp {} rank", self.tp),
        )
        .with_note(
            "Transformer Engine's a2a context parallelism gives each rank heads / cp of the full \
             sequence: \"cp_comm_type='a2a' requires num_heads % cp_size == 0 for Q, K, V\" \
             (transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py)",
        )
        .with_help(help)
    }
}

// -------------------------------------------------------------------------------- E0345

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpHierarchyIssue {
    /// `cp_comm a2a_p2p` without its a2a group size.
    Missing,
    /// The a2a group size does not divide cp.
    NotADivisor { a2a: u64, at: Loc },
    /// A group size after a variant that has no hierarchy.
    NotHierarchical {
        comm: &'static str,
        a2a: u64,
        at: Loc,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct CpHierarchy {
    pub loc: Loc,
    pub cp: u64,
    pub issue: CpHierarchyIssue,
    /// a2a group sizes that split cp into two levels.
    pub options: Vec<u64>,
}

impl CpHierarchy {
    fn render(self) -> Diagnostic {
        let cp = self.cp;
        let sizes: Vec<String> = self
            .options
            .iter()
            .map(|a| format!("`cp_comm a2a_p2p {a}`"))
            .collect();
        let split_help = if sizes.is_empty() {
            format!("write `cp_comm a2a` or `cp_comm p2p` (cp {cp} has no two-level split)")
        } else {
            format!("write {}", join_or(&sizes))
        };
        let note = "Megatron-LM's `--hierarchical-context-parallel-sizes A P` splits the cp \
                    group into a2a groups of A consecutive ranks and a p2p ring of P, with \
                    A × P = cp (megatron/training/arguments.py, parallel_state.py)";
        match self.issue {
            CpHierarchyIssue::Missing => Diagnostic::new(
                Code::E0345,
                "`cp_comm a2a_p2p` needs the size of its a2a groups",
                self.loc,
                "no a2a group size",
            )
            .with_note(note)
            .with_help(split_help),
            CpHierarchyIssue::NotADivisor { a2a, at } => Diagnostic::new(
                Code::E0345,
                format!("a2a groups of {a2a} ranks do not split cp {cp}"),
                at,
                format!("{cp} % {a2a} ≠ 0"),
            )
            .with_note(note)
            .with_help(split_help),
            CpHierarchyIssue::NotHierarchical { comm, a2a, at } => Diagnostic::new(
                Code::E0345,
                format!("`cp_comm {comm}` takes no group size but {a2a} is written"),
                at,
                "group size",
            )
            .with_note(note)
            .with_help(format!(
                "write `cp_comm {comm}`, or `cp_comm a2a_p2p {a2a}`"
            )),
        }
    }
}

// -------------------------------------------------------------------------------- W0020

/// A folding or communication key that changes nothing on its plan.
#[derive(Clone, Debug, PartialEq)]
pub enum NoEffect {
    /// `etp` on a dense model.
    Etp { loc: Loc, model: String },
    /// `moe_dispatcher` on a dense model.
    Dispatcher { loc: Loc, model: String },
    /// `cp_comm` with cp 1.
    CpComm {
        loc: Loc,
        comm: &'static str,
        cp_loc: Option<Loc>,
    },
}

impl NoEffect {
    fn render(self) -> Diagnostic {
        match self {
            NoEffect::Etp { loc, model } => Diagnostic::new(
                Code::W0020,
                format!("`etp` has no effect: `{model}` has no routed experts"),
                loc,
                "expert tensor parallelism",
            )
            .with_help("remove `etp`"),
            NoEffect::Dispatcher { loc, model } => Diagnostic::new(
                Code::W0020,
                format!("`moe_dispatcher` has no effect: `{model}` has no routed experts"),
                loc,
                "token dispatcher",
            )
            .with_help("remove `moe_dispatcher`"),
            NoEffect::CpComm { loc, comm, cp_loc } => {
                let d = Diagnostic::new(
                    Code::W0020,
                    format!("`cp_comm {comm}` has no effect: cp is 1"),
                    loc,
                    "context-parallel exchange",
                );
                match cp_loc {
                    Some(at) => d.with_secondary(at, "cp 1"),
                    None => d,
                }
                .with_help("remove `cp_comm`, or set `cp` above 1")
            }
        }
    }
}

// ------------------------------------------------------------------ E0359, E0360, E0361, W0024

/// CUDA graph and activation offloading problems (validate/graphs.rs cites the Megatron-LM
/// rule each reproduces).
#[derive(Clone, Debug, PartialEq)]
pub enum GraphsProblem {
    /// E0359: modules named after `none` or `full_iteration`.
    ModulesWithout {
        imp: &'static str,
        modules: Vec<&'static str>,
        loc: Loc,
    },
    /// E0359: a module the model has nothing of.
    ModuleUnfit {
        module: &'static str,
        lacks: &'static str,
        model: String,
        loc: Loc,
    },
    /// E0359: `moe` with `moe_router` (`together` false), `moe_preprocess` without
    /// `moe_router` (`together` true).
    ModulePair {
        module: &'static str,
        other: &'static str,
        together: bool,
        loc: Loc,
    },
    /// E0359: the `moe` module without drop-and-pad experts.
    MoeNeedsDropPad { loc: Loc },
    /// E0360: per-layer graphs with `recompute full`.
    FullRecompute {
        imp: &'static str,
        loc: Loc,
        recompute: Loc,
    },
    /// E0360: per-layer graphs with layer-level CPU offloading.
    CpuOffload {
        imp: &'static str,
        loc: Loc,
        layers: (u64, Loc),
    },
    /// E0360: fine-grained offloading with graphs other than Transformer Engine's.
    OffloadNeedsTe {
        imp: &'static str,
        loc: Loc,
        offload: Loc,
    },
    /// E0360: the norms' inputs offloaded with graphs.
    OffloadNorms {
        norms: Vec<&'static str>,
        kept: Vec<&'static str>,
        loc: Loc,
        graphs: Loc,
    },
    /// E0361: `attn_proj` without `core_attn`.
    AttnProjAlone {
        written: Vec<&'static str>,
        loc: Loc,
    },
    /// E0361: `fused_group_mlp` with the expert parts it already offloads.
    FusedWithParts { parts: Vec<&'static str>, loc: Loc },
    /// E0361: expert modules offloaded while `recompute_modules moe` reruns the MoE layer.
    ExpertsRecomputed {
        modules: Vec<&'static str>,
        loc: Loc,
        recompute: Loc,
    },
    /// E0361: `offload_modules` and `offload_layers` together.
    BothOffloads { loc: Loc, layers: (u64, Loc) },
    /// E0361: `offload_layers` at or above the model's layers.
    LayersTooMany {
        layers: (u64, Loc),
        model_layers: u64,
    },
    /// E0361: `offload_layers` with pipeline parallelism.
    LayersWithPp { layers: (u64, Loc), pp: (u64, Loc) },
    /// E0361: `offload_layers` with recompute.
    LayersWithRecompute {
        layers: (u64, Loc),
        recompute: (&'static str, Loc),
    },
    /// W0024: expert modules on a model without routed experts.
    ExpertsWithoutMoe {
        modules: Vec<&'static str>,
        model: String,
        loc: Loc,
    },
    /// W0024: `offload_modules` with `recompute full`: the layers keep only their inputs.
    OffloadWithFullRecompute { loc: Loc, recompute: Loc },
    /// W0024: `offload_fraction` without `offload_modules`.
    FractionWithout { loc: Loc },
    /// W0024: `offload_fraction 0%`.
    FractionZero { loc: Loc },
}

impl GraphsProblem {
    fn render(self) -> Diagnostic {
        let ticked = |ws: &[&str]| {
            ws.iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            GraphsProblem::ModulesWithout { imp, modules, loc } => Diagnostic::new(
                Code::E0359,
                format!("`cuda_graphs {imp}` names modules, which only per-layer graphs capture"),
                loc,
                format!("{} after {imp}", modules.join(" ")),
            )
            .with_help(if imp == "none" {
                format!(
                    "write `cuda_graphs transformer_engine {}` to capture them, or `cuda_graphs none` alone",
                    modules.join(" ")
                )
            } else {
                format!(
                    "write `cuda_graphs {imp}` alone (it captures the whole step), or `cuda_graphs transformer_engine {}`",
                    modules.join(" ")
                )
            }),
            GraphsProblem::ModuleUnfit {
                module,
                lacks,
                model,
                loc,
            } => Diagnostic::new(
                Code::E0359,
                format!("`cuda_graphs` module `{module}` needs {lacks}, and model `{model}` has none"),
                loc,
                format!("{module} captures nothing here"),
            )
            .with_help(format!(
                "remove `{module}` from `cuda_graphs` (no module named captures the whole layer)"
            )),
            GraphsProblem::ModulePair {
                module,
                other,
                together,
                loc,
            } => {
                let (message, help) = if together {
                    (
                        format!("`cuda_graphs` module `{module}` is captured only with `{other}`"),
                        format!("add `{other}` to `cuda_graphs`, or remove `{module}`"),
                    )
                } else {
                    (
                        format!("`cuda_graphs` modules `{module}` and `{other}` overlap: name one"),
                        format!("keep `{module}` (the whole MoE block) or `{other}` (up to the router), not both"),
                    )
                };
                let label = if together {
                    format!("{module} without {other}")
                } else {
                    format!("{module} with {other}")
                };
                Diagnostic::new(Code::E0359, message, loc, label)
                    .with_help(help)
            }
            GraphsProblem::MoeNeedsDropPad { loc } => Diagnostic::new(
                Code::E0359,
                "`cuda_graphs` module `moe` captures the experts only when their inputs have a fixed size",
                loc,
                "moe without drop-and-pad experts",
            )
            .with_help(
                "add `moe_capacity_headroom 0%` and `moe_pad_to_capacity` (drop and pad at the capacity), or capture `moe_router moe_preprocess` instead of `moe`",
            ),
            GraphsProblem::FullRecompute {
                imp,
                loc,
                recompute,
            } => Diagnostic::new(
                Code::E0360,
                format!("`cuda_graphs {imp}` cannot capture layers that `recompute full` reruns"),
                loc,
                "per-layer graphs",
            )
            .with_secondary(recompute, "recompute full")
            .with_help(
                "write `cuda_graphs full_iteration` (one graph of the whole step), or `recompute selective`",
            ),
            GraphsProblem::CpuOffload { imp, loc, layers } => Diagnostic::new(
                Code::E0360,
                format!("`cuda_graphs {imp}` does not run with layer-level CPU offloading"),
                loc,
                "per-layer graphs",
            )
            .with_secondary(layers.1, format!("offload_layers {}", layers.0))
            .with_help(format!(
                "remove `offload_layers {}`, or write `cuda_graphs full_iteration`, or offload with `offload_modules` and `cuda_graphs transformer_engine`",
                layers.0
            )),
            GraphsProblem::OffloadNeedsTe { imp, loc, offload } => Diagnostic::new(
                Code::E0360,
                format!("fine-grained activation offloading runs with CUDA graphs only from Transformer Engine, not `{imp}`"),
                loc,
                format!("cuda_graphs {imp}"),
            )
            .with_secondary(offload, "offload_modules")
            .with_help("write `cuda_graphs transformer_engine attn moe_router` (or `attn mlp` on a dense model), or remove `cuda_graphs`"),
            GraphsProblem::OffloadNorms {
                norms,
                kept,
                loc,
                graphs,
            } => Diagnostic::new(
                Code::E0360,
                format!(
                    "{} cannot be offloaded with CUDA graphs: the norms' inputs cross graph boundaries",
                    ticked(&norms)
                ),
                loc,
                norms.join(", "),
            )
            .with_secondary(graphs, "cuda_graphs")
            .with_help(if kept.is_empty() {
                "remove `offload_modules`, or remove `cuda_graphs`".to_string()
            } else {
                format!("write `offload_modules {}`", kept.join(" "))
            }),
            GraphsProblem::AttnProjAlone { written, loc } => {
                let mut fixed = vec!["core_attn"];
                fixed.extend(written.iter().copied());
                Diagnostic::new(
                    Code::E0361,
                    "`offload_modules` names `attn_proj` without `core_attn`: attn_proj's input is core_attn's output, which core_attn's backward needs",
                    loc,
                    "attn_proj alone",
                )
                .with_help(format!("write `offload_modules {}`", fixed.join(" ")))
            }
            GraphsProblem::FusedWithParts { parts, loc } => Diagnostic::new(
                Code::E0361,
                format!(
                    "`fused_group_mlp` already offloads the whole grouped MLP, so {} cannot be named with it",
                    ticked(&parts)
                ),
                loc,
                format!("fused_group_mlp with {}", parts.join(", ")),
            )
            .with_help(format!(
                "remove {} from `offload_modules`, or `fused_group_mlp`",
                ticked(&parts)
            )),
            GraphsProblem::ExpertsRecomputed {
                modules,
                loc,
                recompute,
            } => Diagnostic::new(
                Code::E0361,
                format!(
                    "{} cannot be offloaded while `recompute_modules moe` reruns the whole MoE layer",
                    ticked(&modules)
                ),
                loc,
                modules.join(", "),
            )
            .with_secondary(recompute, "moe recomputed")
            .with_help(format!(
                "remove {} from `offload_modules`, or `moe` from `recompute_modules`",
                ticked(&modules)
            )),
            GraphsProblem::BothOffloads { loc, layers } => Diagnostic::new(
                Code::E0361,
                "fine-grained activation offloading cannot run with layer-level CPU offloading",
                loc,
                "offload_modules",
            )
            .with_secondary(layers.1, format!("offload_layers {}", layers.0))
            .with_help(format!(
                "remove `offload_layers {}` or `offload_modules`",
                layers.0
            )),
            GraphsProblem::LayersTooMany {
                layers,
                model_layers,
            } => Diagnostic::new(
                Code::E0361,
                format!(
                    "`offload_layers {}` offloads every layer: CPU offloading takes fewer than the model's {model_layers}",
                    layers.0
                ),
                layers.1,
                format!("{} ≥ {model_layers}", layers.0),
            )
            .with_help(format!(
                "write `offload_layers {}` or fewer",
                model_layers.saturating_sub(1).max(1)
            )),
            GraphsProblem::LayersWithPp { layers, pp } => Diagnostic::new(
                Code::E0361,
                "layer-level CPU offloading does not run with pipeline parallelism",
                layers.1,
                format!("offload_layers {}", layers.0),
            )
            .with_secondary(pp.1, format!("pp {}", pp.0))
            .with_help(format!(
                "offload with `offload_modules core_attn attn_proj` (it runs with pipelining), or write `pp 1` instead of `pp {}`",
                pp.0
            )),
            GraphsProblem::LayersWithRecompute { layers, recompute } => Diagnostic::new(
                Code::E0361,
                "layer-level CPU offloading does not work when activations are recomputed",
                layers.1,
                format!("offload_layers {}", layers.0),
            )
            .with_secondary(recompute.1, format!("recompute {}", recompute.0))
            .with_help(format!(
                "remove `recompute {}`, or offload with `offload_modules` (it combines with selective recompute)",
                recompute.0
            )),
            GraphsProblem::ExpertsWithoutMoe {
                modules,
                model,
                loc,
            } => Diagnostic::new(
                Code::W0024,
                format!(
                    "offloading {} moves nothing: model `{model}` has no routed experts",
                    ticked(&modules)
                ),
                loc,
                modules.join(", "),
            )
            .with_help(format!("remove {} from `offload_modules`", ticked(&modules))),
            GraphsProblem::OffloadWithFullRecompute { loc, recompute } => Diagnostic::new(
                Code::W0024,
                "`offload_modules` offloads nothing with `recompute full`: a layer keeps only its input",
                loc,
                "offload_modules",
            )
            .with_secondary(recompute, "recompute full")
            .with_help("remove `offload_modules`, or write `recompute selective` to offload what the layers keep"),
            GraphsProblem::FractionWithout { loc } => Diagnostic::new(
                Code::W0024,
                "`offload_fraction` without `offload_modules` offloads nothing",
                loc,
                "no offload groups",
            )
            .with_help("add `offload_modules core_attn attn_proj` (the groups the fraction picks from), or remove `offload_fraction`"),
            GraphsProblem::FractionZero { loc } => Diagnostic::new(
                Code::W0024,
                "`offload_fraction 0%` offloads none of the groups of `offload_modules`",
                loc,
                "0%",
            )
            .with_help("remove `offload_modules` and `offload_fraction`, or write `offload_fraction 50%`"),
        }
    }
}

// ------------------------------------------------------------------------ E0356-E0358, W0023

/// What a [`RecipeArch`] asks of the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecipeNeed {
    /// E0356: `fp8_recipe mxfp8` (Blackwell).
    Mxfp8,
    /// E0356: `precision fp4`, Transformer Engine's NVFP4 (Blackwell).
    Nvfp4,
    /// E0357: `fp8_recipe blockwise` (Hopper or later).
    Blockwise,
    /// E0358: `fp8_attention` (Hopper or later).
    Fp8Attention,
}

impl RecipeNeed {
    /// The architectures that run it.
    pub fn archs(self) -> &'static [GpuArch] {
        match self {
            RecipeNeed::Mxfp8 | RecipeNeed::Nvfp4 => &[GpuArch::Blackwell, GpuArch::BlackwellUltra],
            RecipeNeed::Blockwise | RecipeNeed::Fp8Attention => {
                &[GpuArch::Hopper, GpuArch::Blackwell, GpuArch::BlackwellUltra]
            }
        }
    }

    fn code(self) -> Code {
        match self {
            RecipeNeed::Mxfp8 | RecipeNeed::Nvfp4 => Code::E0356,
            RecipeNeed::Blockwise => Code::E0357,
            RecipeNeed::Fp8Attention => Code::E0358,
        }
    }

    /// The item as written.
    fn item(self) -> &'static str {
        match self {
            RecipeNeed::Mxfp8 => "`fp8_recipe mxfp8`",
            RecipeNeed::Nvfp4 => "`precision fp4`",
            RecipeNeed::Blockwise => "`fp8_recipe blockwise`",
            RecipeNeed::Fp8Attention => "`fp8_attention`",
        }
    }

    /// What the item runs, for the label.
    fn runs(self) -> &'static str {
        match self {
            RecipeNeed::Mxfp8 => "MXFP8 block scaling",
            RecipeNeed::Nvfp4 => "NVFP4 block scaling",
            RecipeNeed::Blockwise => "FP8 block scaling",
            RecipeNeed::Fp8Attention => "FP8 fused attention",
        }
    }

    /// The plan's way out on the same GPU.
    fn fallback(self) -> &'static str {
        match self {
            RecipeNeed::Mxfp8 | RecipeNeed::Blockwise => "`fp8_recipe tensorwise`",
            RecipeNeed::Nvfp4 => "`precision fp8`",
            RecipeNeed::Fp8Attention => "remove `fp8_attention`",
        }
    }
}

/// A recipe the GPU's architecture does not run.
#[derive(Clone, Debug, PartialEq)]
pub struct RecipeArch {
    pub need: RecipeNeed,
    pub loc: Loc,
    pub gpu: String,
    pub arch: GpuArch,
    /// The cluster's `gpu` item (or its `arch` item, where written).
    pub gpu_loc: Loc,
    /// The stdlib GPUs of an arch that runs it (and with the plan's precision), in stdlib order.
    pub alternatives: Vec<String>,
    /// The fallback runs on this GPU (false: an FP8 fallback on a GPU without FP8).
    pub fallback_runs: bool,
}

impl RecipeArch {
    fn render(self) -> Diagnostic {
        let need = self.need;
        let archs = code_words(need.archs(), |a| a.word());
        let mut gpus = String::new();
        if !self.alternatives.is_empty() {
            gpus = format!(
                " ({})",
                join_or(&code_words(&self.alternatives, |s| s.as_str()))
            );
        }
        let help = if self.fallback_runs {
            format!(
                "use a GPU of arch {}{gpus}, or {}",
                join_or(&archs),
                need.fallback()
            )
        } else {
            format!("use a GPU of arch {}{gpus}", join_or(&archs))
        };
        Diagnostic::new(
            need.code(),
            format!(
                "{} on `{}`, whose arch `{}` does not run it",
                need.item(),
                self.gpu,
                self.arch.word()
            ),
            self.loc,
            need.runs(),
        )
        .with_secondary(self.gpu_loc, format!("arch `{}`", self.arch.word()))
        .with_note(format!("{} needs arch {}", need.runs(), join_or(&archs)))
        .with_help(help)
    }
}

/// An FP8 key at a precision that does not read it.
#[derive(Clone, Debug, PartialEq)]
pub struct Fp8Unused {
    /// The key's name.
    pub key: &'static str,
    pub loc: Loc,
    pub precision: Precision,
    pub precision_loc: Option<Loc>,
}

impl Fp8Unused {
    fn render(self) -> Diagnostic {
        let word = self.precision.word();
        let (needs, why) = if self.key == "fp8_attention" {
            (
                "`precision fp8` or `fp4`",
                "it runs only inside an FP8 or FP4 recipe",
            )
        } else {
            ("`precision fp8`", "it applies to FP8 GEMMs")
        };
        let d = Diagnostic::new(
            Code::W0023,
            format!(
                "`{}` has no effect with `precision {word}`: {why}",
                self.key
            ),
            self.loc,
            "no effect",
        );
        match self.precision_loc {
            Some(at) => d.with_secondary(at, format!("precision {word}")),
            None => d.with_note("the plan's precision is bf16 (the default)"),
        }
        .with_help(format!("remove `{}`, or set {needs}", self.key))
    }
}
