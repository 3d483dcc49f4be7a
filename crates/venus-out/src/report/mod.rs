//! Report: timeline → metrics, text and JSON reports, `expect` checks, Perfetto export.
//!
//! Input: the validated [`Scenario`], the [`Trace`] that was simulated, the engine's
//! [`Timeline`], the [`Window`] of the reported iteration and the engine's wall time. Output: a
//! [`Report`] (plain data, every quantity in a unit newtype), rendered by [`text::text`] and
//! [`json::json`], checked by [`expect::check_expect`]; [`perfetto`] streams the timeline as a
//! Chrome/Perfetto trace.
//!
//! Definitions (all per simulated rank, clipped to the window, then min/max or mean; the
//! user-facing statement of each is docs/report.md):
//! - **phase** of a [`Category`]: the sum of its nodes' durations; communication counts from
//!   posting, so waiting for a peer is included (VenusSim's phases, `trace-generator/utils.py`).
//! - **compute**: the union of the intervals of `Compute` and `Delay` nodes (any category,
//!   the optimizer step included).
//! - The rest of the window is idle, and [`attribution`] charges each idle instant to what
//!   held the rank's critical path then (the chain of last-finishing predecessors of the
//!   compute that waited): another stage's compute is **pipeline bubble** (Megatron's sense:
//!   idle because of the schedule's dependencies), a collective or P2P transfer of group kind
//!   K is **exposed communication** of K (a forward delayed by its stage's DP parameter
//!   all-gather charges the next stage's wait to DP), nothing is **other idle**. Per rank
//!   compute + bubble + exposed + other idle = the window, exactly.
//! - **bubble fraction**: pipeline bubble ÷ window, averaged over the simulated ranks of each
//!   pipeline stage, then over the stages; [`Report::breakdown`] averages every term the same
//!   way, so its terms add up to the iteration time.
//! - **exposed communication** of a group kind: min and max over ranks of its charged time.
//! - **throughput**: Megatron's FLOPs ([`flops::megatron_flops`]) ÷ (iteration time × world ×
//!   1e12), as `training.py` prints it; MFU divides by the GPU's `peak` (the BF16 dense peak,
//!   also under `precision fp8`, so FP8 runs are compared on the BF16 scale Megatron-era papers
//!   use).
//!
//! Invariants: a report is a pure function of its inputs; the only non-deterministic input is
//! the engine wall time, which [`Report::deterministic`] zeroes. Ranks that the engine did not
//! simulate are represented by their symmetry class's simulated rank, whose times are
//! identical, so min/max over the simulated ranks equal min/max over the world. A zero-length
//! window gives zero throughput rather than an infinity.

pub mod attribution;
pub mod diff;
pub mod expect;
pub mod flops;
pub mod html;
pub mod json;
pub mod perfetto;
pub mod scenario;
pub mod straggler;
pub mod table;
pub mod text;

pub use expect::check_expect;
pub use flops::megatron_flops;
pub use html::{html, summary_html};
pub use json::json;
pub use perfetto::{write_perfetto, PerfettoOptions};
pub use scenario::{groups_json, memory_table};
pub use text::text;

use std::fmt;

use venus_base::base::{
    Bytes, Dollars, DollarsPerGpuHour, Flops, FlopsPerSec, Precision, Ratio, Recompute,
    RecomputeMethod, ScheduleKind, Seconds,
};
use venus_diag::diag::render::LocatedDiagnostic;
use venus_plan::plan::goodput::Goodput;
use venus_plan::plan::layout::Layout;
use venus_plan::plan::Scenario;
use venus_sim::engine::Timeline;
use venus_sim::trace::{Category, Node, NodeKind, Ps, Trace};

/// Tokens processed per second.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Default)]
pub struct TokensPerSec(pub f64);

/// The simulated time span of the reported iteration, `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: Ps,
    pub end: Ps,
}

impl Window {
    /// The whole run: from 0 to the timeline's makespan (a one-iteration simulation).
    pub fn whole(timeline: &Timeline) -> Window {
        Window {
            start: Ps::ZERO,
            end: timeline.makespan(),
        }
    }

    pub fn len(self) -> Ps {
        Ps(self.end.0.saturating_sub(self.start.0))
    }

    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }

    /// `[start, end)` of a node clipped to the window, `None` when they do not overlap.
    fn clip(self, start: u64, end: u64) -> Option<(u64, u64)> {
        let (a, b) = (start.max(self.start.0), end.min(self.end.0));
        (a < b).then_some((a, b))
    }
}

/// Smallest and largest value over the simulated ranks.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct MinMax {
    pub min: Seconds,
    pub max: Seconds,
}

impl MinMax {
    /// Min and max of per-rank picosecond totals (zero for no ranks).
    fn of(values: impl IntoIterator<Item = u64>) -> MinMax {
        let mut it = values.into_iter();
        let Some(first) = it.next() else {
            return MinMax::default();
        };
        let (lo, hi) = it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v)));
        MinMax {
            min: Ps(lo).seconds(),
            max: Ps(hi).seconds(),
        }
    }
}

/// One phase: a node category's time per rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    pub category: Category,
    pub time: MinMax,
}

/// The process-group kind a communication node belongs to, for exposed communication.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommKind {
    /// Pipeline P2P: `send`, `recv`.
    Pp,
    Tp,
    Cp,
    Ep,
    /// Data parallel: gradient reduce and parameter all-gather.
    Dp,
    /// The embedding gradient all-reduce between the first and last stage.
    Embedding,
    /// Communication in any other category.
    Other,
}

impl CommKind {
    pub const COUNT: usize = 7;
    pub const ALL: [CommKind; CommKind::COUNT] = [
        CommKind::Pp,
        CommKind::Tp,
        CommKind::Cp,
        CommKind::Ep,
        CommKind::Dp,
        CommKind::Embedding,
        CommKind::Other,
    ];

    pub fn of(category: Category) -> CommKind {
        match category {
            Category::Send | Category::Recv => CommKind::Pp,
            Category::TpComm => CommKind::Tp,
            Category::CpComm => CommKind::Cp,
            Category::EpComm => CommKind::Ep,
            Category::AllGradsSync | Category::ParamsAllGather => CommKind::Dp,
            Category::EmbeddingSync => CommKind::Embedding,
            Category::ForwardCompute
            | Category::BackwardCompute
            | Category::Optimizer
            | Category::Other => CommKind::Other,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CommKind::Pp => "pp",
            CommKind::Tp => "tp",
            CommKind::Cp => "cp",
            CommKind::Ep => "ep",
            CommKind::Dp => "dp",
            CommKind::Embedding => "embedding",
            CommKind::Other => "other",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for CommKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Communication of one group kind not hidden behind compute.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Exposed {
    pub kind: CommKind,
    pub time: MinMax,
}

/// Memory of one GPU of a pipeline stage at its peak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StageMemoryRow {
    pub stage: u64,
    pub weights: Bytes,
    pub gradients: Bytes,
    pub optimizer: Bytes,
    pub activations: Bytes,
    pub peak: Bytes,
    /// Static buffers of the CUDA graph memory pool (in `peak`).
    pub graph_pool: Bytes,
    /// Activations offloaded to host memory (not in `activations` or `peak`).
    pub offloaded: Bytes,
}

impl StageMemoryRow {
    /// The named terms that add up to the peak, in the order reports stack them. A renderer
    /// iterates over these (and shows what the peak holds beyond them as `other`), so a term
    /// added to the memory model needs only its line here.
    pub fn terms(&self) -> Vec<(&'static str, Bytes)> {
        let mut terms = vec![
            ("weights", self.weights),
            ("gradients", self.gradients),
            ("optimizer", self.optimizer),
            ("activations", self.activations),
        ];
        if self.graph_pool.0 > 0 {
            terms.push(("cuda graph pool", self.graph_pool));
        }
        terms
    }

    /// What the peak holds beyond the named [`terms`](Self::terms) (zero when they add up).
    pub fn unnamed(&self) -> Bytes {
        let named = self
            .terms()
            .iter()
            .fold(0u64, |acc, (_, b)| acc.saturating_add(b.0));
        Bytes(self.peak.0.saturating_sub(named))
    }
}

/// The plan as validation resolved it: every default filled in and every derived number
/// computed (`plan::Scenario`'s fields), so a reader of the report need not redo them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPlan {
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    pub etp: u64,
    pub dp: u64,
    pub expert_dp: u64,
    pub vpp: u64,
    pub micro_batch: u64,
    pub global_batch: u64,
    /// Microbatches per iteration on each pipeline: global_batch / (micro_batch × dp).
    pub microbatches: u64,
    /// Decoder layers per pipeline stage, stage 0 first.
    pub layers_per_stage: Vec<u64>,
    /// `None`: no pipelining (pp = 1).
    pub schedule: Option<ScheduleKind>,
    pub precision: Precision,
    pub recompute: Recompute,
    /// Effective sequence parallelism (off when tp = 1).
    pub sp: bool,
    pub distributed_optimizer: bool,
    /// The modules selective recompute reruns (empty without `recompute selective`).
    pub recompute_modules: Vec<&'static str>,
    /// `recompute full`'s method and layer count (`None` without full recompute).
    pub recompute_layers: Option<(RecomputeMethod, u64)>,
    /// FP8 weights and parameter gather (`fp8_param_gather` with an FP8 recipe).
    pub fp8_param_gather: bool,
}

impl ResolvedPlan {
    pub fn of(sc: &Scenario) -> ResolvedPlan {
        ResolvedPlan {
            tp: sc.tp,
            pp: sc.pp,
            cp: sc.cp,
            ep: sc.ep,
            etp: sc.etp,
            dp: sc.dp,
            expert_dp: sc.expert_dp,
            vpp: sc.vpp,
            micro_batch: sc.micro_batch,
            global_batch: sc.global_batch,
            microbatches: sc.microbatches,
            layers_per_stage: (0..sc.pp).map(|s| sc.stage_layers(s)).collect(),
            schedule: sc.schedule,
            precision: sc.plan.precision(),
            recompute: sc.recompute,
            sp: sc.sp,
            distributed_optimizer: sc.flags.distributed_optimizer,
            recompute_modules: sc.plan.recompute_modules().words(),
            recompute_layers: (sc.recompute == Recompute::Full)
                .then(|| (sc.plan.recompute_method(), sc.plan.recompute_num_layers())),
            fp8_param_gather: sc.recipe.param_gather.bytes() == 1,
        }
    }

    /// `tp 8 pp 16 dp 128`, with the other sizes where they are not 1.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!("tp {}", self.tp), format!("pp {}", self.pp)];
        for (name, v) in [("cp", self.cp), ("ep", self.ep), ("vpp", self.vpp)] {
            if v > 1 {
                parts.push(format!("{name} {v}"));
            }
        }
        parts.push(format!("dp {}", self.dp));
        parts.join(" ")
    }
}

/// What training on the scenario's token budget takes (the scenario's `train` block): the
/// iterations that cover the tokens, at the simulated iteration time.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct TrainCost {
    pub tokens: u64,
    /// tokens ÷ tokens per iteration, rounded down: the iterations Megatron-LM runs for a
    /// budget of `tokens ÷ seq` samples (`train_iters = train_samples // global_batch_size`,
    /// megatron/training/training.py:2174 `update_train_iters`, commit d98e8a64dd).
    pub iterations: u64,
    pub time: Seconds,
    /// time × world ÷ 3600.
    pub gpu_hours: f64,
    /// With a `price`: the price and gpu_hours × price.
    pub price: Option<DollarsPerGpuHour>,
    pub cost: Option<Dollars>,
}

impl TrainCost {
    /// `None` when the scenario states no token budget, or an iteration holds no token.
    pub fn of(sc: &Scenario, iteration_time: Seconds, tokens_per_iteration: u64) -> Option<Self> {
        let tokens = sc.train.tokens?;
        if tokens_per_iteration == 0 {
            return None;
        }
        let iterations = tokens / tokens_per_iteration;
        let time = Seconds(iterations as f64 * iteration_time.0);
        let gpu_hours = time.0 * sc.world as f64 / 3600.0;
        Some(TrainCost {
            tokens,
            iterations,
            time,
            gpu_hours,
            price: sc.train.price,
            cost: sc.train.price.map(|p| p.cost(gpu_hours)),
        })
    }
}

/// What interruptions cost the job (`plan::goodput`, from the cluster's failure rates and
/// checkpoint storage), with the figures the iteration time turns it into.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoodputReport {
    pub model: Goodput,
    /// The checkpoint interval in whole iterations, at least one: Megatron-LM's
    /// `--save-interval` (arguments.py), which counts iterations.
    pub save_interval: u64,
    /// With a `train` block: the wall-clock time to train, interruptions included
    /// (time to train ÷ goodput).
    pub wall_time_to_train: Option<Seconds>,
}

impl GoodputReport {
    /// `None` without failure rates and a checkpoint storage bandwidth.
    pub fn of(sc: &Scenario, iteration_time: Seconds, train: Option<&TrainCost>) -> Option<Self> {
        let model = Goodput::of(sc)?;
        let save_interval = if iteration_time.0 > 0.0 {
            let n = (model.interval.0 / iteration_time.0).round();
            if n.is_finite() {
                (n as u64).max(1)
            } else {
                1
            }
        } else {
            1
        };
        Some(GoodputReport {
            model,
            save_interval,
            wall_time_to_train: train.map(|t| model.wall_time(t.time)),
        })
    }
}

/// What the engine did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EngineStats {
    pub events: u64,
    pub simulated_ranks: u64,
    /// Host wall-clock time of the simulation: the only non-deterministic field.
    pub wall: Seconds,
}

/// The performance report of one simulated iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub scenario: String,
    pub world_size: u64,
    pub iteration_time: Seconds,
    /// Megatron's FLOPs for one iteration of the global batch.
    pub flops: Flops,
    /// Achieved model FLOP/s per GPU.
    pub tflops_per_gpu: FlopsPerSec,
    /// The GPU's BF16 dense peak that `mfu` is relative to.
    pub peak: FlopsPerSec,
    pub mfu: Ratio,
    pub tokens_per_second: TokensPerSec,
    pub bubble_fraction: Ratio,
    /// The schedule's closed form of the bubble (uniform stages, free communication: what
    /// `venusc schedule` and hover show), `Scenario::bubble_fraction`.
    pub schedule_bubble_fraction: Ratio,
    /// Where the iteration goes, mean over stages: its terms add up to `iteration_time`.
    pub breakdown: TimeBreakdown,
    /// The model's parameter counts (`plan::ParamCounts`).
    pub parameters: Parameters,
    /// The eight VenusSim phases always, in [`Category`] order, then any other category present.
    pub phases: Vec<Phase>,
    /// Group kinds that have communication nodes, in [`CommKind`] order.
    pub exposed: Vec<Exposed>,
    /// Stage 0 first.
    pub memory: Vec<StageMemoryRow>,
    /// Kept back per GPU beside every stage's peak (`Scenario::reserve`): E0401 checks
    /// peak + reserve.
    pub memory_reserve: Bytes,
    pub engine: EngineStats,
    /// The resolved plan.
    pub plan: ResolvedPlan,
    /// global_batch × seq.
    pub tokens_per_iteration: u64,
    /// Time, GPU-hours and cost of the scenario's token budget (its `train` block).
    pub train: Option<TrainCost>,
    /// Interruptions, checkpoints and goodput (with the cluster's failure rates).
    pub goodput: Option<GoodputReport>,
    /// The scenario's warnings (checking it, before the simulation), with their positions;
    /// empty until [`Report::with_warnings`].
    pub warnings: Vec<LocatedDiagnostic>,
    /// The simulated span of the reported iteration.
    pub window: Window,
    /// What the cluster's `slow_*` GPUs cost, against the same plan without them; `None`
    /// without stragglers.
    pub stragglers: Option<straggler::Stragglers>,
}

/// The iteration split into compute, pipeline bubble, exposed communication per group kind and
/// other idle ([`attribution`]), each the mean over pipeline stages of the mean over the
/// stage's simulated ranks.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct TimeBreakdown {
    pub compute: Seconds,
    pub bubble: Seconds,
    /// Group kinds that have communication nodes, in [`CommKind`] order.
    pub exposed: Vec<(CommKind, Seconds)>,
    /// The window less the other terms.
    pub other_idle: Seconds,
}

impl TimeBreakdown {
    /// compute + bubble + Σ exposed + other idle.
    pub fn total(&self) -> Seconds {
        Seconds(self.exposed.iter().fold(
            self.compute.0 + self.bubble.0 + self.other_idle.0,
            |a, (_, t)| a + t.0,
        ))
    }

    /// Σ exposed communication.
    pub fn exposed_total(&self) -> Seconds {
        Seconds(self.exposed.iter().map(|(_, t)| t.0).sum())
    }
}

/// The model's parameters: all of them, those one token uses, and the multi-token prediction
/// modules (not in `total`, as model cards count them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Parameters {
    pub total: u64,
    pub active: u64,
    pub mtp: u64,
    /// The parameters that train (`total` unless `task lora` freezes the base).
    pub trainable: u64,
}

impl Parameters {
    pub fn of(sc: &Scenario) -> Parameters {
        Parameters {
            total: sc.params.total,
            active: sc.params.active,
            mtp: sc.params.mtp,
            trainable: sc.trainable_params(),
        }
    }

    /// `8.03B total, 8.03B active per token` (and the MTP modules when there are some).
    pub fn summary(&self) -> String {
        let b = venus_base::base::math::short_count;
        let mut s = format!(
            "{} total, {} active per token",
            b(self.total),
            b(self.active)
        );
        if self.mtp > 0 {
            s.push_str(&format!(", {} in MTP modules", b(self.mtp)));
        }
        if self.trainable != self.total {
            s.push_str(&format!(", {} trainable", b(self.trainable)));
        }
        s
    }
}

/// Phases every report lists, present in the trace or not (VenusSim's names where they exist).
pub const REQUIRED_PHASES: [Category; 8] = [
    Category::ForwardCompute,
    Category::BackwardCompute,
    Category::Send,
    Category::Recv,
    Category::TpComm,
    Category::AllGradsSync,
    Category::ParamsAllGather,
    Category::Optimizer,
];

impl Report {
    /// Builds the report of the iteration in `window`. `wall` is the host time the engine took.
    /// The mean iteration of a report of `n` back-to-back iterations (a replayed trace holds
    /// them all, as VenusSim's `train-iters`): times divided by `n`, rates multiplied by it,
    /// the bubble fraction (a ratio) kept. VenusSim's own report divides the same way
    /// (trace-generator/utils.py:11-27).
    pub fn per_iteration(mut self, n: u64) -> Report {
        if n <= 1 {
            return self;
        }
        let k = n as f64;
        let mean = |m: MinMax| MinMax {
            min: Seconds(m.min.0 / k),
            max: Seconds(m.max.0 / k),
        };
        self.iteration_time = Seconds(self.iteration_time.0 / k);
        self.tflops_per_gpu = FlopsPerSec(self.tflops_per_gpu.0 * k);
        self.mfu = Ratio(self.mfu.0 * k);
        self.tokens_per_second = TokensPerSec(self.tokens_per_second.0 * k);
        for p in &mut self.phases {
            p.time = mean(p.time);
        }
        for e in &mut self.exposed {
            e.time = mean(e.time);
        }
        self
    }

    pub fn new(
        sc: &Scenario,
        trace: &Trace,
        timeline: &Timeline,
        window: Window,
        wall: Seconds,
    ) -> Report {
        let ranks = rank_stats(trace, timeline, window);
        let Headline {
            iteration_time,
            flops,
            tflops_per_gpu: per_gpu,
            mfu,
            tokens_per_second,
            tokens_per_iteration,
            train,
            goodput,
        } = Headline::of(sc, window);
        let peak = sc.cluster.gpu.peak;
        Report {
            scenario: sc.name.clone(),
            world_size: sc.world,
            iteration_time,
            flops,
            tflops_per_gpu: per_gpu,
            peak,
            mfu,
            tokens_per_second,
            bubble_fraction: bubble_fraction(sc, &ranks, window),
            schedule_bubble_fraction: sc.bubble_fraction(),
            breakdown: breakdown(sc, &ranks, window),
            parameters: Parameters::of(sc),
            phases: phases(&ranks),
            exposed: exposed(&ranks),
            memory: sc
                .memory
                .iter()
                .map(|m| StageMemoryRow {
                    stage: m.stage,
                    weights: m.weights,
                    gradients: m.gradients,
                    optimizer: m.optimizer,
                    activations: m.activations,
                    peak: m.peak,
                    graph_pool: m.graph_pool,
                    offloaded: m.offloaded,
                })
                .collect(),
            memory_reserve: sc.reserve().0,
            engine: EngineStats {
                events: timeline.events(),
                simulated_ranks: timeline.simulated_ranks().len() as u64,
                wall,
            },
            plan: ResolvedPlan::of(sc),
            tokens_per_iteration,
            goodput,
            train,
            warnings: Vec::new(),
            window,
            stragglers: None,
        }
    }

    /// The report with the scenario's warnings ([`venus_diag::diag::render::locate`]d).
    pub fn with_warnings(mut self, warnings: Vec<LocatedDiagnostic>) -> Report {
        self.warnings = warnings;
        self
    }

    /// The same report with the engine wall time zeroed, so that two runs render
    /// byte-identically (for tests and for diffing reports).
    pub fn deterministic(mut self) -> Report {
        self.engine.wall = Seconds(0.0);
        self
    }

    /// The stage with the largest peak memory (the first one on ties).
    pub fn peak_stage(&self) -> Option<&StageMemoryRow> {
        self.memory
            .iter()
            .fold(None, |best: Option<&StageMemoryRow>, m| match best {
                Some(b) if b.peak >= m.peak => Some(b),
                _ => Some(m),
            })
    }
}

/// The figures of an iteration that follow from its window alone: what `Report::new` reports
/// at the top and what a sweep ranks by. No per-rank attribution is needed for them, so a
/// sweep computes them without walking every rank's timeline (`simulate::headline`).
#[derive(Clone, Debug, PartialEq)]
pub struct Headline {
    pub iteration_time: Seconds,
    pub flops: Flops,
    pub tflops_per_gpu: FlopsPerSec,
    pub mfu: Ratio,
    pub tokens_per_second: TokensPerSec,
    pub tokens_per_iteration: u64,
    pub train: Option<TrainCost>,
    pub goodput: Option<GoodputReport>,
}

impl Headline {
    pub fn of(sc: &Scenario, window: Window) -> Headline {
        let iteration_time = window.len().seconds();
        let flops = megatron_flops(sc);
        let peak = sc.cluster.gpu.peak;
        let per_gpu = if iteration_time.0 > 0.0 && sc.world > 0 {
            FlopsPerSec(flops.0 / (iteration_time.0 * sc.world as f64))
        } else {
            FlopsPerSec(0.0)
        };
        let mfu = if peak.0 > 0.0 {
            Ratio(per_gpu.0 / peak.0)
        } else {
            Ratio(0.0)
        };
        let tokens_per_iteration = sc.global_batch.saturating_mul(sc.model.seq);
        let tokens = (sc.global_batch as f64) * (sc.model.seq as f64);
        let train = TrainCost::of(sc, iteration_time, tokens_per_iteration);
        let tokens_per_second = if iteration_time.0 > 0.0 {
            TokensPerSec(tokens / iteration_time.0)
        } else {
            TokensPerSec(0.0)
        };
        Headline {
            iteration_time,
            flops,
            tflops_per_gpu: per_gpu,
            mfu,
            tokens_per_second,
            tokens_per_iteration,
            goodput: GoodputReport::of(sc, iteration_time, train.as_ref()),
            train,
        }
    }
}

/// What the report needs from one simulated rank, in picoseconds inside the window.
#[derive(Clone, Debug, PartialEq)]
struct RankStats {
    rank: u32,
    /// The ranks this simulated rank stands for (its symmetry class; 1 without classes).
    weight: u64,
    /// Summed node durations per category.
    by_category: [u64; Category::COUNT],
    /// Whether the rank has a node of the category at all (even outside the window).
    has_category: [bool; Category::COUNT],
    /// The window tiled into compute, bubble, exposed communication and other idle.
    time: attribution::Breakdown,
    has_comm: [bool; CommKind::COUNT],
}

fn is_comm(node: &Node) -> bool {
    matches!(
        node.kind,
        NodeKind::Send { .. } | NodeKind::Recv { .. } | NodeKind::Collective { .. }
    )
}

fn rank_stats(trace: &Trace, timeline: &Timeline, window: Window) -> Vec<RankStats> {
    let weight = straggler::class_sizes(trace);
    let times = attribution::breakdowns(trace, timeline, window);
    trace
        .ranks()
        .iter()
        .zip(times)
        .enumerate()
        .map(|(i, (rt, time))| {
            let (starts, ends) = (timeline.starts(i), timeline.ends(i));
            let mut s = RankStats {
                rank: rt.rank().0,
                weight: weight(rt.rank().0),
                by_category: [0; Category::COUNT],
                has_category: [false; Category::COUNT],
                time,
                has_comm: [false; CommKind::COUNT],
            };
            for (k, node) in rt.nodes().enumerate() {
                let c = node.category.index();
                s.has_category[c] = true;
                let kind = CommKind::of(node.category);
                if is_comm(&node) {
                    s.has_comm[kind.index()] = true;
                }
                let (Some(&Ps(a)), Some(&Ps(b))) = (starts.get(k), ends.get(k)) else {
                    continue;
                };
                let Some((a, b)) = window.clip(a, b) else {
                    continue;
                };
                s.by_category[c] = s.by_category[c].saturating_add(b - a);
            }
            s
        })
        .collect()
}

fn phases(ranks: &[RankStats]) -> Vec<Phase> {
    Category::ALL
        .iter()
        .copied()
        .filter(|c| REQUIRED_PHASES.contains(c) || ranks.iter().any(|r| r.has_category[c.index()]))
        .map(|c| Phase {
            category: c,
            time: MinMax::of(ranks.iter().map(|r| r.by_category[c.index()])),
        })
        .collect()
}

fn exposed(ranks: &[RankStats]) -> Vec<Exposed> {
    CommKind::ALL
        .iter()
        .copied()
        .filter(|k| ranks.iter().any(|r| r.has_comm[k.index()]))
        .map(|k| Exposed {
            kind: k,
            time: MinMax::of(ranks.iter().map(|r| r.time.exposed[k.index()])),
        })
        .collect()
}

/// The pipeline stage of each simulated rank (0 without a layout) and the number of stages.
fn stages_of(sc: &Scenario, ranks: &[RankStats]) -> (Vec<usize>, usize) {
    let layout = Layout::for_scenario(sc).ok();
    let stage: Vec<usize> = ranks
        .iter()
        .map(|r| match &layout {
            Some(l) if r.rank < l.world() => l.coords(r.rank).pp as usize,
            _ => 0,
        })
        .collect();
    let count = stage.iter().copied().max().unwrap_or(0) + 1;
    (stage, count)
}

/// Mean over pipeline stages of the mean of `value` over the stage's simulated ranks, in
/// picoseconds. Integer sums, one rounded division per stage: a stage's mean is the same
/// whether one representative or every replica was simulated (`--all-ranks` agrees exactly).
fn stage_mean(sc: &Scenario, ranks: &[RankStats], value: impl Fn(&RankStats) -> u64) -> f64 {
    let (stage, count) = stages_of(sc, ranks);
    let mut sums = vec![(0u128, 0u128); count];
    for (r, &s) in ranks.iter().zip(&stage) {
        // Each simulated rank counts for the ranks of its class: with stragglers the classes
        // of one stage differ in size.
        let w = u128::from(r.weight);
        sums[s].0 += u128::from(value(r)) * w;
        sums[s].1 += w;
    }
    let means: Vec<f64> = sums
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|&(sum, n)| ((sum + n / 2) / n) as f64)
        .collect();
    means.iter().sum::<f64>() / means.len().max(1) as f64
}

/// The pipeline bubble ÷ the window, [`stage_mean`]ed.
fn bubble_fraction(sc: &Scenario, ranks: &[RankStats], window: Window) -> Ratio {
    let len = window.len().0;
    if len == 0 || ranks.is_empty() {
        return Ratio(0.0);
    }
    Ratio(stage_mean(sc, ranks, |r| r.time.bubble) / len as f64)
}

/// Every term of the ranks' breakdowns, [`stage_mean`]ed; other idle is the window less the
/// rest, so the terms add up to the iteration (each rank's do exactly).
fn breakdown(sc: &Scenario, ranks: &[RankStats], window: Window) -> TimeBreakdown {
    if ranks.is_empty() {
        return TimeBreakdown {
            other_idle: window.len().seconds(),
            ..TimeBreakdown::default()
        };
    }
    let secs = |ps: f64| Seconds(ps * 1e-12);
    let compute = stage_mean(sc, ranks, |r| r.time.compute);
    let bubble = stage_mean(sc, ranks, |r| r.time.bubble);
    let exposed: Vec<(CommKind, f64)> = CommKind::ALL
        .iter()
        .copied()
        .filter(|k| ranks.iter().any(|r| r.has_comm[k.index()]))
        .map(|k| (k, stage_mean(sc, ranks, |r| r.time.exposed[k.index()])))
        .collect();
    let named = compute + bubble + exposed.iter().map(|(_, t)| t).sum::<f64>();
    TimeBreakdown {
        compute: secs(compute),
        bubble: secs(bubble),
        exposed: exposed.into_iter().map(|(k, t)| (k, secs(t))).collect(),
        other_idle: secs((window.len().0 as f64 - named).max(0.0)),
    }
}

#[cfg(test)]
mod tests;
