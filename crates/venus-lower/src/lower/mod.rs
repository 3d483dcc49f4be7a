//! Lowering: a validated [`Scenario`] → engine [`Trace`] + [`Network`].
//!
//! Input: the scenario and [`LowerOptions`]. Output: [`Lowered`], the trace of every simulated
//! rank, the network, the rank layout and what a report needs (iteration boundaries per rank,
//! representatives of the symmetry classes, the compute model's name).
//!
//! Per rank, the schedule IR of its pipeline rank ([`ScheduleIr`], Megatron's exact op order)
//! is walked `iterations` times and each op becomes nodes:
//! - **Compute** (stream 0): one node per (microbatch, chunk) and pass when nothing has to sit
//!   between layers, else per layer an attention and an MLP piece (plus embedding / output
//!   pieces), all labelled `F3.1` / `B3.1` (`W3` for the weight gradient of a schedule that
//!   splits the backward: B is then priced as [`ComputeModel::input_gradient`] and W as
//!   [`Pass::Weight`], and the gradient buckets launch after the W instead of the backward).
//!   Durations come from the [`ComputeModel`] the plan selects ([`crate::cost::model_for`]).
//! - **Pipeline P2P**: each transfer of a call is a send/receive to the pp neighbour
//!   (`layout.pp_next/prev`) of `[s/cp (/tp with sp), b, h]` × 2 bytes (megatron-semantics.md
//!   §4.1), on its own stream per port (send-next, recv-prev, send-prev, recv-next): the
//!   transfers of one call run concurrently, as `batch_isend_irecv` does, and the two
//!   directions never queue behind each other. Tags: 0 activations, 1 gradients. A blocking
//!   call makes everything the host issues next wait for its transfers; an async call's
//!   transfers are waited on at the IR's `Wait`.
//! - **TP** (tp > 1, on the compute stream, hence on the critical path): per layer forward an
//!   all-reduce after the attention and after the MLP block of `[s/cp, b, h]` × 2 bytes; with
//!   `sp` an all-gather before and a reduce-scatter after each block instead. Backward mirrors
//!   them: two all-reduces (input gradients of QKV and FC1), or with `sp` per block an
//!   all-gather of the output gradient, an all-gather re-gathering the saved input for the
//!   weight gradient, and a reduce-scatter of the input gradient (§4.2). Full recompute
//!   repeats the forward collectives before the layer's backward.
//! - **CP** (cp > 1): with `cp_comm p2p` (the default), per layer, cp − 1 ring steps of one K/V
//!   block `2·(s/cp)·b·max(1, kv_groups/tp)·head_dim` × 2 bytes to the next cp rank (twice that
//!   in backward: K/V and dK/dV), on two CP streams concurrent with the attention piece; the MLP
//!   waits for the last step (§4.6, TE's p2p ring). `a2a`, `allgather` and `a2a_p2p` are
//!   [`folding`]'s.
//! - **EP** (MoE, ep > 1 or etp > 1): the plan's dispatcher ([`folding`]): with `alltoall` an
//!   all-to-all dispatch before and combine after the experts of `tokens·topk·h` × 2 bytes per
//!   rank on the expert-ep group, tokens `s/cp·b (/tp with sp)`, and with etp > 1 the expert-tp
//!   all-gather and reduce-scatter between them; the backward mirrors them (§4.7), full
//!   recompute reruns them. Blocking, on the compute stream. A MoE block keeps the dense TP
//!   collectives only for its shared experts.
//! - **DP** (on one DP stream): gradient buckets per model chunk as Megatron lays them out
//!   (§4.3: `max(40M, 1M·dp_cp)` elements unless `bucket_size` is set, one bucket on pp
//!   ranks after the first, on chunks after the first and without `overlap_grad_reduce`; distributed-optimizer padding to
//!   `lcm(dp_cp, 128)`; the tied embedding in its own bucket), reduce-scattered (distributed
//!   optimizer) or all-reduced over `dp-cp` in fp32, expert parameters over the expert-dp
//!   group. With `overlap_grad_reduce` a bucket launches as soon as the backward piece that
//!   completes it ends, in a backward where grad sync is enabled (the IR's `EnableGradSync`),
//!   or at the IR's `GradSync` (aligned launch); `finalize_model_grads` waits for them. Without
//!   it, all buckets are issued at `FinalizeGrads` and waited for.
//! - **FSDP** (`fsdp`, Megatron-FSDP): buckets are its units, one per transformer layer (the
//!   embedding and output layer in the first / last chunk's end units). `optim` is the
//!   distributed optimizer's traffic; from `optim_grads` every backward reduce-scatters each
//!   unit as soon as its gradients are complete (the overlap is always on); `optim_grads_params`
//!   also all-gathers every unit (bf16) before each forward and each backward of every
//!   microbatch, issued per chunk on the DP stream so later units prefetch while earlier ones
//!   compute, and has no gather after the optimizer step.
//! - **LoRA** (`task lora`): the buckets hold the adapters only (Megatron's DDP buffers only
//!   parameters with `requires_grad`); the distributed optimizer gathers them alone, ZeRO-3
//!   gathers the frozen base too.
//! - **finalize**: with `sp`, the TP all-reduce of the layer-norm gradients; the tied
//!   embedding all-reduce (`V_pad/tp · h` × 4 bytes over the embedding group, §4.5); then the
//!   optimizer step (compute, category `optimizer`).
//! - **Param all-gather** (distributed optimizer, bf16, per bucket, §4.4): without
//!   `overlap_param_gather` right after the optimizer step, blocking; with it at the IR's
//!   `ParamSync` (first forward pre-hook or the aligned `param_sync_func`), and each forward
//!   piece waits for the bucket holding its parameters. We model the steady state, so every
//!   iteration gathers (VenusSim skips the gather in iteration 0, whose parameters come from
//!   initialisation).
//!
//! Symmetry: unless `all_ranks`, one representative per pipeline stage is simulated (the rank
//! with tp = cp = dp = 0) and every rank of the stage is declared its class. This is exact
//! (see `engine` docs) when the rank grids and the cluster dims share a common mixed radix:
//! then relabelling a rank's tp/cp/dp (and expert) digits is a permutation that preserves which
//! dims every pair of ranks differs in. When they do not, every rank is simulated. With
//! stragglers (`slow_*` items: a straggler's compute nodes last `1 / speed` as long) the
//! classes split around the slow ranks (`classes`): only the relabellings that fix them remain.
//!
//! Invariant: a lowering never panics on a validated scenario; sizes that do not fit return a
//! [`LowerError`].

use crate::cost::{self, ChunkCost, ComputeModel, Pass};
use std::fmt;
use std::ops::Range;
use venus_base::base::{Bytes, Seconds};
use venus_plan::plan::layout::{Coords, GroupKind, Layout, LayoutError, LayoutSizes};
use venus_plan::plan::memory;
use venus_plan::plan::HybridLayer;
use venus_plan::plan::Scenario;
use venus_plan::schedule::{ComputeStream, Kind, Op, PipelineShape, Port, ScheduleIr, ShapeError};
use venus_sim::engine::{Network, NetworkError, Timeline};
use venus_sim::trace::{
    Category, CollectiveKind, GroupId, Label, NameId, NodeId, NodeKind, Ps, RankBuilder, RankId,
    StreamId, Trace, TraceBuilder, TraceError,
};

mod classes;
mod folding;
pub mod net;

pub use net::network;

#[cfg(test)]
mod tests;

/// Streams of a rank. 0 is compute (TP and EP collectives run on it, blocking; an overlapped
/// pair's EP collectives run on [`S_EP`]).
const S_SEND_NEXT: StreamId = StreamId(1);
const S_RECV_PREV: StreamId = StreamId(2);
const S_SEND_PREV: StreamId = StreamId(3);
const S_RECV_NEXT: StreamId = StreamId(4);
const S_DP: StreamId = StreamId(5);
const S_CP_SEND: StreamId = StreamId(6);
const S_CP_RECV: StreamId = StreamId(7);
/// Tensor-parallel collectives with `overlap_tp_comm` (TE's userbuffers communicator).
const S_TP: StreamId = StreamId(8);
/// Expert all-to-alls of an overlapped forward/backward pair (DualPipe's
/// `overlapped_forward_backward`, Megatron's combined 1F1B).
const S_EP: StreamId = StreamId(9);

/// The SMs an overlapped forward/backward pair leaves to its communication: DeepSeek-V3
/// technical report §3.2.1 dedicates 20 of the H800's 132 SMs to the all-to-all kernels while
/// computation and communication overlap, so the pair's compute runs on the other 112. The
/// count is DeepSeek's tuning on H800, taken from every GPU's own SMs (`sms`; no other source
/// states one).
const PAIR_COMM_SMS: u64 = 20;

const TAG_ACTIVATION: u32 = 0;
const TAG_GRADIENT: u32 = 1;
const TAG_CP: u32 = 2;

/// Megatron's default DDP bucket: `max(40_000_000, 1_000_000 · dp_cp)` elements
/// (megatron/training/training.py:2179-2194 `resolve_ddp_bucket_size`).
const BUCKET_MIN_ELEMENTS: u64 = 40_000_000;
const BUCKET_PER_DP_ELEMENTS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// Simulate every rank instead of one per symmetry class.
    pub all_ranks: bool,
    /// Training iterations to run back to back (at least 1).
    pub iterations: u32,
}

impl Default for LowerOptions {
    fn default() -> LowerOptions {
        LowerOptions {
            all_ranks: false,
            iterations: 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum LowerError {
    Layout(LayoutError),
    Shape(ShapeError),
    Network(NetworkError),
    Trace(TraceError),
    /// A size of the scenario does not fit the trace's 32-bit ids.
    TooLarge(&'static str),
    /// The trace would hold more nodes than [`MAX_TRACE_NODES`] (checked as it is built, and
    /// projected from the first iteration, before anything of that size is allocated).
    OverBudget {
        nodes: u64,
        budget: u64,
    },
    /// `--all-ranks` on a world of more than [`MAX_ALL_RANKS`] GPUs.
    TooManyRanks {
        ranks: u64,
        budget: u64,
    },
}

/// The most ranks `--all-ranks` simulates one by one: a 131,072-GPU world, the largest the
/// scale bench measures (`docs/scale.md`: GPT 1.7B on 131,072 GPUs runs in it with every
/// replica of a stage sharing one stored trace body). Past it, the per-rank engine state grows
/// linearly (about 26 KiB a rank on that plan) and the symmetric run gives the same report.
pub const MAX_ALL_RANKS: u64 = 1 << 17;

/// The most trace nodes one lowering builds. A node the engine runs costs about 80 bytes of
/// engine state (kind, stream, pairing, dependency counts and reverse edges, start and end);
/// its trace entry (about 56 bytes with its dependencies) is stored once per distinct body,
/// so under `--all-ranks` the replicas of a stage add engine state only. Measured, release
/// build: Llama 3 405B on 16,384 GPUs with `--all-ranks`, 34.4 M nodes in 16 bodies (see
/// `docs/scale.md`); a symmetric trace of many iterations stores every node (~140 bytes a
/// node: 2^26 nodes about 9 GiB at worst). Past it, a plan's `iterations`, microbatches ×
/// layers, or `--all-ranks` on a large world would exhaust memory instead of simulating.
pub const MAX_TRACE_NODES: u64 = 1 << 26;

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LowerError::Layout(e) => write!(f, "rank layout: {e}"),
            LowerError::Shape(e) => write!(f, "schedule: {e}"),
            LowerError::Network(e) => write!(f, "network: {e}"),
            LowerError::Trace(e) => write!(f, "trace: {e}"),
            LowerError::TooLarge(what) => write!(f, "`{what}` is too large to simulate"),
            LowerError::OverBudget { nodes, budget } => write!(
                f,
                "the trace would hold at least {nodes} nodes, over the budget of {budget} \
                 (iterations × microbatches × layers × simulated ranks): lower `iterations`, \
                 `global_batch` or `layers`, or simulate without `--all-ranks`"
            ),
            LowerError::TooManyRanks { ranks, budget } => write!(
                f,
                "`--all-ranks` would simulate {ranks} ranks one by one, over the budget of \
                 {budget}: drop `--all-ranks` (the symmetric run gives the same report)"
            ),
        }
    }
}

impl std::error::Error for LowerError {}

/// A simulated rank: where it sits and where each iteration's nodes are.
#[derive(Clone, Debug, PartialEq)]
pub struct RankInfo {
    pub rank: u32,
    pub coords: Coords,
    /// Node ids of iteration k: `iterations[k]`.
    pub iterations: Vec<Range<u32>>,
}

/// The lowered scenario.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub trace: Trace,
    pub network: Network,
    pub layout: Layout,
    /// The simulated ranks, in the trace's order (= `Timeline` rank index order).
    pub ranks: Vec<RankInfo>,
    /// The representative (simulated) rank of each pipeline stage, stage 0 first.
    pub representatives: Vec<u32>,
    /// Whether only representatives are simulated.
    pub symmetric: bool,
    pub iterations: u32,
    /// `analytic`, `mfu` or `measured`.
    pub compute_model: &'static str,
}

impl Lowered {
    /// Start and end of iteration `k`: from the end of the previous iteration's last node over
    /// all simulated ranks (0 for the first) to the end of this one's.
    pub fn iteration_span(&self, tl: &Timeline, k: usize) -> (Ps, Ps) {
        let end_of = |k: usize| {
            self.ranks
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    let range = r.iterations.get(k)?;
                    let ends = tl.ends(i);
                    ends.get(range.start as usize..range.end as usize)
                        .and_then(|s| s.iter().max().copied())
                })
                .max()
                .unwrap_or(Ps::ZERO)
        };
        let start = if k == 0 { Ps::ZERO } else { end_of(k - 1) };
        (start, end_of(k))
    }

    /// Busy time of a category on simulated rank `rank_index` within iteration `k`
    /// (communication counted from posting, as `Timeline::busy`).
    pub fn busy_in_iteration(
        &self,
        tl: &Timeline,
        rank_index: usize,
        k: usize,
        category: Category,
    ) -> Ps {
        let Some(range) = self.ranks.get(rank_index).and_then(|r| r.iterations.get(k)) else {
            return Ps::ZERO;
        };
        let Some(rt) = self.trace.ranks().get(rank_index) else {
            return Ps::ZERO;
        };
        let (starts, ends) = (tl.starts(rank_index), tl.ends(rank_index));
        let mut sum = Ps::ZERO;
        for id in range.clone() {
            let i = id as usize;
            if rt.node(NodeId(id)).map(|n| n.category) == Some(category) {
                if let (Some(&s), Some(&e)) = (starts.get(i), ends.get(i)) {
                    sum = sum.saturating_add(e.saturating_sub(s));
                }
            }
        }
        sum
    }

    /// The simulated rank standing for `rank`.
    pub fn representative_of(&self, rank: u32) -> u32 {
        self.trace.class_of(RankId(rank)).0
    }
}

fn over_budget(nodes: u64) -> LowerError {
    LowerError::OverBudget {
        nodes,
        budget: MAX_TRACE_NODES,
    }
}

/// Lowers a validated scenario.
pub fn lower(sc: &Scenario, opts: &LowerOptions) -> Result<Lowered, LowerError> {
    lower_with(sc, opts, ScheduleIr::build)
}

/// Lowers a validated scenario running the schedule `schedule` makes of its pipeline shape
/// (the built one, or one written by hand that no builder covers yet).
pub(crate) fn lower_with(
    sc: &Scenario,
    opts: &LowerOptions,
    schedule: impl FnOnce(PipelineShape) -> Result<ScheduleIr, ShapeError>,
) -> Result<Lowered, LowerError> {
    let u32_of =
        |v: u64, what: &'static str| u32::try_from(v).map_err(|_| LowerError::TooLarge(what));
    let sizes = LayoutSizes {
        tp: u32_of(sc.tp, "tp")?,
        cp: u32_of(sc.cp, "cp")?,
        ep: u32_of(sc.ep, "ep")?,
        dp: u32_of(sc.dp, "dp")?,
        pp: u32_of(sc.pp, "pp")?,
        etp: u32_of(sc.etp, "etp")?,
    };
    let dims: Vec<u64> = sc.cluster.dims.iter().map(|d| d.size).collect();
    let layout = Layout::new(sizes, &dims).map_err(LowerError::Layout)?;
    let network = net::network(&sc.cluster).map_err(LowerError::Network)?;
    let shape = venus_plan::plan::derive::pipeline_shape(sc);
    let ir = schedule(shape).map_err(LowerError::Shape)?;
    let model = cost::model_for(sc);
    let world = layout.world();
    let iterations = opts.iterations.max(1);

    let mut tb = TraceBuilder::new(world);
    let names = Names::new(&mut tb);
    let stages: Vec<StagePlan> = (0..sizes.pp)
        .map(|s| StagePlan::new(sc, model.as_ref(), &layout, s))
        .collect();

    if opts.all_ranks && u64::from(world) > MAX_ALL_RANKS {
        return Err(LowerError::TooManyRanks {
            ranks: u64::from(world),
            budget: MAX_ALL_RANKS,
        });
    }
    let slow = Slowdowns::of(sc);
    let cuts = classes::radix(&layout, &leaf_cuts(&sc.cluster)).filter(|_| !opts.all_ranks);
    let symmetric = cuts.is_some();
    let block = world / sizes.pp.max(1);
    let representatives: Vec<u32> = (0..sizes.pp).map(|s| s * block).collect();
    let simulated: Vec<u32> = match &cuts {
        Some(cuts) => {
            // Slow GPUs and the GPUs behind a slow link are both marked: neither may stand for
            // a rank at full speed.
            let mut marked = slow.ranks();
            marked.extend(network.slow_link_ranks().into_iter().map(|r| r.0));
            let class_of = classes::classes(&layout, cuts, &marked);
            let mut reps = class_of.clone();
            reps.sort_unstable();
            reps.dedup();
            tb.set_classes(class_of.into_iter().map(RankId).collect());
            reps
        }
        None => (0..world).collect(),
    };

    let mut ranks = Vec::with_capacity(simulated.len());
    let mut built: u64 = 0;
    for (i, &rank) in simulated.iter().enumerate() {
        let coords = layout.coords(rank);
        let groups = RankGroups::new(sc, &layout, &mut tb, rank, shape.kind == Kind::DualPipe);
        let stage = &stages[coords.pp as usize];
        let ops = ir.rank(coords.pp);
        let mut e = Emitter::new(stage, &groups, &names, shape);
        e.slowdown = slow.factor(rank);
        e.budget = usize::try_from(MAX_TRACE_NODES - built).unwrap_or(usize::MAX);
        // This rank's iterations and those of the ranks after it, all about this one's size.
        let copies = u64::from(iterations).saturating_mul((simulated.len() - i) as u64);
        e.projection = Some(Projection::new(ops, built, copies));
        let mut bounds = Vec::new();
        for k in 0..iterations {
            let start = e.rb.len() as u32;
            e.iteration(ops);
            if let Some(nodes) = e.projected_over {
                return Err(over_budget(nodes));
            }
            if e.over_budget() {
                return Err(over_budget(built + e.rb.len() as u64));
            }
            e.projection = None;
            bounds.push(start..e.rb.len() as u32);
            if k == 0 {
                // Every iteration of a rank has the same nodes, and ranks differ little: project
                // the whole trace from this one before building (and allocating) the rest.
                let per = (e.rb.len() as u64).max(1);
                let projected = built
                    .saturating_add(per.saturating_mul(u64::from(iterations)))
                    .saturating_add(
                        per.saturating_mul(u64::from(iterations))
                            .saturating_mul((simulated.len() - i - 1) as u64),
                    );
                if projected > MAX_TRACE_NODES {
                    return Err(over_budget(projected));
                }
                bounds.reserve(iterations as usize - 1);
            }
        }
        built = built.saturating_add(e.rb.len() as u64);
        let rb = e.rb;
        tb.set_rank(RankId(rank), rb);
        ranks.push(RankInfo {
            rank,
            coords,
            iterations: bounds,
        });
    }
    let trace = tb.finish().map_err(LowerError::Trace)?;
    Ok(Lowered {
        trace,
        network,
        layout,
        ranks,
        representatives,
        symmetric,
        iterations,
        compute_model: model.name(),
    })
}

/// The rank-count cuts of the fat trees' leaves: GPUs under one leaf switch of a dim with
/// `fat_tree DIM LEAF SHARE` (the dims inside × LEAF). A class of ranks runs one network only
/// when these cuts fit the layout's radix too (then every member's groups and peers cross the
/// same leaves).
fn leaf_cuts(c: &venus_plan::plan::ClusterSpec) -> Vec<u64> {
    let mut inner = 1u64;
    let mut cuts = Vec::new();
    for d in &c.dims {
        if let Some((leaf, _)) = d.fabric.fat_tree {
            cuts.push(inner.saturating_mul(u64::from(leaf)).min(c.world_size()));
        }
        inner = inner.saturating_mul(d.size);
    }
    cuts
}

/// The compute slowdown of every straggler (`1 / speed`), from the cluster's `slow_*` items.
struct Slowdowns {
    /// Slow ranks in increasing order, each with its slowdown factor (> 1 for a slower GPU).
    by_rank: Vec<(u32, f64)>,
}

impl Slowdowns {
    fn of(sc: &Scenario) -> Slowdowns {
        Slowdowns {
            by_rank: sc
                .cluster
                .slow_ranks()
                .into_iter()
                .filter(|s| s.speed.0 > 0.0)
                .map(|s| (s.rank, 1.0 / s.speed.0))
                .collect(),
        }
    }

    fn ranks(&self) -> Vec<u32> {
        self.by_rank.iter().map(|&(r, _)| r).collect()
    }

    /// The factor a rank's compute durations are multiplied by (1 for a rank at full speed).
    fn factor(&self, rank: u32) -> f64 {
        self.by_rank
            .binary_search_by_key(&rank, |&(r, _)| r)
            .map_or(1.0, |i| self.by_rank[i].1)
    }
}

/// Interned display names.
struct Names {
    tp: NameId,
    cp: NameId,
    ep: NameId,
    grad: NameId,
    expert_grad: NameId,
    gather: NameId,
    embedding: NameId,
    copies: NameId,
    norms: NameId,
    optimizer: NameId,
}

impl Names {
    fn new(tb: &mut TraceBuilder) -> Names {
        Names {
            tp: tb.name("tp"),
            cp: tb.name("cp-kv"),
            ep: tb.name("ep-a2a"),
            grad: tb.name("grad-bucket"),
            expert_grad: tb.name("expert-grad"),
            gather: tb.name("param-gather"),
            embedding: tb.name("embedding-grad"),
            copies: tb.name("dualpipe-copy-grads"),
            norms: tb.name("sp-norm-grads"),
            optimizer: tb.name("optimizer"),
        }
    }
}

/// The groups and peers of one rank.
struct RankGroups {
    pp_next: u32,
    pp_prev: u32,
    pp_size: u32,
    tp: Option<GroupId>,
    cp_next: u32,
    cp_prev: u32,
    cp: u32,
    dp_cp: Option<GroupId>,
    ep: Option<GroupId>,
    /// The expert grid's tp (etp) and tp-ep groups: the alltoall dispatcher's gathers, the
    /// allgather and flex dispatchers' exchange.
    expert_tp: Option<GroupId>,
    expert_tp_ep: Option<GroupId>,
    expert_dp: Option<GroupId>,
    embedding: Option<GroupId>,
    /// DualPipe: this rank and its mirror pp − 1 − r in the pipeline, which hold the same two
    /// stages as the two parameter copies (`Op::CopyGradAllReduce`).
    copies: Option<GroupId>,
    /// The context-parallel exchange's ring and group for the plan's `cp_comm`.
    cp_peers: folding::CpPeers,
    /// flex over several NVLink domains: (the tp_ep members in this rank's domain, those of
    /// its in-domain index in the other domains); `None` inside one domain.
    flex_hops: Option<(Option<GroupId>, Option<GroupId>)>,
}

impl RankGroups {
    fn new(
        sc: &Scenario,
        layout: &Layout,
        tb: &mut TraceBuilder,
        rank: u32,
        copies: bool,
    ) -> RankGroups {
        // A group of one rank moves nothing: no node is emitted for it.
        let mut group = |kind| {
            layout
                .group_of(kind, rank)
                .filter(|g| g.len() > 1)
                .map(|g| tb.group(&ranks(&g)))
        };
        let tp = group(GroupKind::Tp);
        let dp_cp = group(GroupKind::DpCp);
        let ep = group(GroupKind::ExpertEp);
        let expert_tp = group(GroupKind::ExpertTp);
        let expert_tp_ep = group(GroupKind::ExpertTpEp);
        let expert_dp = group(GroupKind::ExpertDp);
        let embedding = group(GroupKind::Embedding);
        let copies = copies
            .then(|| mirror_pair(layout, rank))
            .flatten()
            .map(|pair| tb.group(&ranks(&pair)));
        let cp_peers = folding::CpPeers::new(sc, layout, tb, rank);
        let flex_hops = flex_hops(sc, layout, tb, rank);
        RankGroups {
            pp_next: layout.pp_next(rank),
            pp_prev: layout.pp_prev(rank),
            pp_size: layout.sizes().pp,
            tp,
            cp_next: cp_peers.next,
            cp_prev: cp_peers.prev,
            cp: cp_peers.ring,
            dp_cp,
            ep,
            expert_tp,
            expert_tp_ep,
            expert_dp,
            embedding,
            copies,
            cp_peers,
            flex_hops,
        }
    }
}

/// The two groups of flex's internode exchange ([`folding::node_limited_copies`]): the tp_ep
/// members inside `rank`'s NVLink domain (the innermost dim) and the members at `rank`'s
/// index within their own domain; `None` when the tp_ep group lies in one domain.
fn flex_hops(
    sc: &Scenario,
    layout: &Layout,
    tb: &mut TraceBuilder,
    rank: u32,
) -> Option<(Option<GroupId>, Option<GroupId>)> {
    if !matches!(
        sc.plan.moe_dispatcher(),
        venus_base::base::MoeDispatcher::Flex(_)
    ) {
        return None;
    }
    let members = layout.group_of(GroupKind::ExpertTpEp, rank)?;
    let domain = sc.cluster.dims.first().map_or(1, |d| d.size.max(1)) as u32;
    let node = |r: u32| r / domain.max(1);
    if members.iter().all(|&r| node(r) == node(rank)) {
        return None;
    }
    let index = |r: u32| {
        members
            .iter()
            .filter(|&&o| node(o) == node(r) && o < r)
            .count()
    };
    let local: Vec<u32> = members
        .iter()
        .copied()
        .filter(|&r| node(r) == node(rank))
        .collect();
    let me = index(rank);
    let rail: Vec<u32> = members
        .iter()
        .copied()
        .filter(|&r| index(r) == me)
        .collect();
    let group = |tb: &mut TraceBuilder, g: &[u32]| (g.len() > 1).then(|| tb.group(&ranks(g)));
    Some((group(tb, &local), group(tb, &rail)))
}

/// `rank` and the rank of its pipeline at the mirrored stage pp − 1 − s, in rank order (both
/// ranks build the same group); None where the two coincide or there is no pipeline.
fn mirror_pair(layout: &Layout, rank: u32) -> Option<[u32; 2]> {
    let members = layout.group_of(GroupKind::Pp, rank)?;
    let me = members.iter().position(|&r| r == rank)?;
    let mirror = *members.get(members.len().checked_sub(1 + me)?)?;
    (mirror != rank).then(|| [rank.min(mirror), rank.max(mirror)])
}

/// The layout's ranks (plain `u32`, the plan's numbering) as the trace's rank ids.
fn ranks(members: &[u32]) -> Vec<RankId> {
    members.iter().copied().map(RankId).collect()
}

/// One pass of a chunk in picoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PassPs {
    pre: Ps,
    layers: u32,
    attention: Ps,
    mlp: Ps,
    post: Ps,
    total: Ps,
}

impl PassPs {
    fn new(c: ChunkCost) -> PassPs {
        PassPs {
            pre: Ps::from_seconds(c.pre),
            layers: u32::try_from(c.layers).unwrap_or(u32::MAX),
            attention: Ps::from_seconds(c.attention),
            mlp: Ps::from_seconds(c.mlp),
            post: Ps::from_seconds(c.post),
            total: Ps::from_seconds(c.total),
        }
    }
}

/// A gradient bucket: its padded size and the parameters it holds, in chunk-local layer
/// indices (`lo..hi`), plus whether it holds the embedding (`pre`) or the output layer.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Bucket {
    /// Gradient elements (reduced after the backward).
    elements: u64,
    /// Parameter elements the all-gather moves (= `elements` unless LoRA freezes a base).
    gathered: u64,
    lo: u32,
    hi: u32,
    pre: bool,
    post: bool,
    expert: bool,
}

/// What every rank of one pipeline stage shares: chunk costs, buckets, message sizes.
struct StagePlan {
    stage: u32,
    vpp: u32,
    forward: Vec<PassPs>,
    backward: Vec<PassPs>,
    /// The backward split for schedules with weight-gradient ops: input gradient (`B`) and
    /// weight gradient (`W`), which sum to `backward`.
    input_gradient: Vec<PassPs>,
    weight: Vec<PassPs>,
    /// Buckets per chunk in launch (backward) order; expert buckets last.
    buckets: Vec<Vec<Bucket>>,
    optimizer: Ps,
    p2p: Bytes,
    tp_tensor: Bytes,
    cp_block: Bytes,
    /// The plan's context-parallel exchange (`cp_comm`).
    cp_comm: folding::CpComm,
    /// The plan's MoE dispatch and combine (`moe_dispatcher`, etp, ep).
    moe: folding::MoeComm,
    /// Leading dense layers of each chunk (a MoE model's `first_k_dense`): no all-to-all.
    dense_lead: Vec<u32>,
    /// A hybrid model's layer kinds per chunk (empty for a transformer): each layer is one
    /// sublayer, one tensor-parallel block.
    hybrid: Vec<Vec<HybridLayer>>,
    embedding_grad: Bytes,
    /// DualPipe: the gradients of both parameter copies on this rank (every chunk's
    /// reduced elements), summed with the mirror rank's.
    copy_grads: Bytes,
    norm_grads: Bytes,
    tp: bool,
    sp: bool,
    /// TP collectives overlap the block's GEMMs (`overlap_tp_comm`).
    overlap_tp: bool,
    /// The GPU's SMs and those an overlapped pair's compute keeps beside its all-to-alls
    /// ([`PAIR_COMM_SMS`] taken, at least one left).
    pair_sms: (u64, u64),
    cp: bool,
    ep: bool,
    /// Bytes per element of the data-parallel gradient reduction and parameter gather.
    grad_bytes: u64,
    param_bytes: u64,
    full_recompute: bool,
    /// The layers of each chunk `recompute full` reruns, from its first: all of them
    /// (`u64::MAX`) but with `recompute_method block` (megatron/core/recompute.py:167-181).
    full_recompute_layers: u64,
    /// `recompute_modules moe`: the MoE layer's forward, dispatch and combine all-to-alls
    /// included, reruns before its backward.
    recompute_moe: bool,
    distributed_optimizer: bool,
    overlap_grad_reduce: bool,
    overlap_param_gather: bool,
    /// Megatron-FSDP `optim_grads` and up: every backward reduce-scatters each layer's
    /// gradients as soon as they are complete.
    fsdp_grads: bool,
    /// Megatron-FSDP `optim_grads_params`: each layer's parameters are all-gathered before its
    /// forward and again before its backward, in every microbatch.
    fsdp_params: bool,
}

/// The host-link time of one step's `optimizer_offload` share on pipeline rank `stage`: its
/// gradients copied to the host before the CPU optimizer runs and its updated parameters
/// copied back after (`memory::offload_traffic`), one after the other and not overlapped
/// (Megatron's default without `--overlap-cpu-optimizer-d2h-h2d`), at
/// [`memory::HOST_LINK`]. Zero without offload.
fn offload_transfer(sc: &Scenario, stage: u64) -> Ps {
    let Some(m) = sc.memory.iter().find(|m| m.stage == stage) else {
        return Ps::ZERO;
    };
    if m.optimizer_host.0 == 0 {
        return Ps::ZERO;
    }
    let traffic = memory::offload_traffic(&sc.recipe, m.optimizer_host);
    Ps::from_seconds(Seconds(traffic.0 as f64 / memory::HOST_LINK.0))
}

impl StagePlan {
    fn new(sc: &Scenario, model: &dyn ComputeModel, layout: &Layout, stage: u32) -> StagePlan {
        let s64 = u64::from(stage);
        // The schedule's chunks per rank (DualPipe runs two on a one-chunk split), each placed
        // where the schedule says (`Kind::chunk_source`).
        let shape = venus_plan::plan::derive::pipeline_shape(sc);
        let vpp = shape.vpp.max(1);
        let pp32 = shape.pp.max(1);
        let source = |c: u64| {
            let (s, c) = shape
                .kind
                .chunk_source(pp32, stage, u32::try_from(c).unwrap_or(u32::MAX));
            (u64::from(s), u64::from(c))
        };
        let m = &sc.model;
        let seq_cp = m.seq / sc.cp.max(1);
        let seq_p2p = if sc.sp { seq_cp / sc.tp.max(1) } else { seq_cp };
        let hb = m.hidden.saturating_mul(sc.micro_batch);
        let kv_per_tp = (m.kv_groups() / sc.tp.max(1)).max(1);
        let tokens = if sc.sp { seq_p2p } else { seq_cp }.saturating_mul(sc.micro_batch);
        let chunks = 0..u64::from(vpp);
        let a2a = a2a_bytes(sc, tokens, sc.recipe.tp_comm.bytes());
        // Element widths from the precision recipe (the scenario's one source of byte widths).
        let (act, grad) = (sc.recipe.tp_comm.bytes(), sc.recipe.grad_comm.bytes());
        let forward = chunks
            .clone()
            .map(source)
            .map(|(s, c)| PassPs::new(model.chunk(s, c, Pass::Forward)))
            .collect();
        let backward = chunks
            .clone()
            .map(source)
            .map(|(s, c)| PassPs::new(model.chunk(s, c, Pass::Backward)))
            .collect();
        let input_gradient = chunks
            .clone()
            .map(source)
            .map(|(s, c)| PassPs::new(model.input_gradient(s, c)))
            .collect();
        let weight = chunks
            .clone()
            .map(source)
            .map(|(s, c)| PassPs::new(model.chunk(s, c, Pass::Weight)))
            .collect();
        let dp_cp = u64::from(layout.group_size(GroupKind::DpCp)).max(1);
        let dense_lead = chunks
            .clone()
            .map(source)
            .map(|(s, c)| {
                let n = sc
                    .chunk_layers(s, c)
                    .saturating_sub(sc.chunk_moe_layers(s, c));
                u32::try_from(n).unwrap_or(u32::MAX)
            })
            .collect();
        let hybrid = if m.is_hybrid() {
            chunks
                .clone()
                .map(source)
                .map(|(s, c)| {
                    let first = sc.first_layer(s, c);
                    (0..sc.chunk_layers(s, c))
                        .filter_map(|l| m.hybrid_layer(first.saturating_add(l)))
                        .collect()
                })
                .collect()
        } else {
            Vec::new()
        };
        let buckets: Vec<Vec<Bucket>> = chunks
            .map(source)
            .map(|(s, c)| buckets(sc, s, c, dp_cp))
            .collect();
        let copy_grads = if shape.kind == Kind::DualPipe {
            let elements = buckets
                .iter()
                .flatten()
                .fold(0u64, |a, b| a.saturating_add(b.elements));
            Bytes(elements.saturating_mul(sc.recipe.grad_comm.bytes()))
        } else {
            Bytes(0)
        };
        let cp_block = Bytes(
            2u64.saturating_mul(seq_cp)
                .saturating_mul(sc.micro_batch)
                .saturating_mul(kv_per_tp)
                .saturating_mul(m.head_dim())
                .saturating_mul(act),
        );
        let norms = sc
            .params
            .per_layer
            .norms
            .saturating_mul(sc.stage_layers(s64))
            .saturating_add(if s64 + 1 == sc.pp {
                sc.params.final_norm
            } else {
                0
            });
        StagePlan {
            stage,
            vpp,
            forward,
            backward,
            input_gradient,
            weight,
            buckets,
            // DualPipe's rank steps both parameter copies (chunk 1's is another stage's).
            optimizer: (0..u64::from(vpp))
                .map(source)
                .filter(|&(_, c)| shape.kind == Kind::DualPipe || c == 0)
                .map(|(s, _)| Ps::from_seconds(model.optimizer_step(s)))
                .fold(Ps::ZERO, |a, b| Ps(a.0.saturating_add(b.0)))
                .saturating_add(offload_transfer(sc, s64)),
            p2p: Bytes(
                seq_p2p
                    .saturating_mul(hb)
                    .saturating_mul(sc.recipe.p2p.bytes()),
            ),
            tp_tensor: Bytes(seq_cp.saturating_mul(hb).saturating_mul(act)),
            cp_block,
            cp_comm: folding::CpComm::new(sc, cp_block, act),
            moe: folding::MoeComm::new(sc, tokens, a2a, act),
            dense_lead,
            hybrid,
            embedding_grad: Bytes(
                (sc.padded_vocab / sc.tp.max(1))
                    .saturating_mul(m.hidden)
                    .saturating_mul(grad),
            ),
            copy_grads,
            norm_grads: Bytes(norms.saturating_mul(grad)),
            grad_bytes: grad,
            param_bytes: sc.recipe.param_gather.bytes(),
            tp: sc.tp > 1,
            sp: sc.sp,
            overlap_tp: sc.flags.overlap_tp_comm,
            pair_sms: sc.cluster.gpu.sms_beside(PAIR_COMM_SMS),
            cp: sc.cp > 1,
            // Expert communication: an all-to-all over ep, or the etp gathers.
            ep: m.is_moe() && (sc.ep > 1 || sc.etp > 1),
            full_recompute: sc.recompute == venus_base::base::Recompute::Full,
            full_recompute_layers: match sc.plan.recompute_method() {
                venus_base::base::RecomputeMethod::Block => sc.plan.recompute_num_layers(),
                venus_base::base::RecomputeMethod::Uniform => u64::MAX,
            },
            recompute_moe: sc.plan.recompute_modules().moe,
            // Megatron-FSDP v1 runs the distributed optimizer (arguments.py:1128-1136): the
            // optimizer shard's gradients are reduce-scattered and its parameters gathered.
            distributed_optimizer: sc.flags.distributed_optimizer
                || sc.flags.fsdp.is_some_and(|f| f.shards_optimizer()),
            overlap_grad_reduce: sc.flags.overlap_grad_reduce,
            overlap_param_gather: sc.flags.overlap_param_gather,
            fsdp_grads: sc.flags.fsdp.is_some_and(|f| f.shards_gradients()),
            fsdp_params: sc.flags.fsdp.is_some_and(|f| f.shards_parameters()),
        }
    }

    /// Collectives or gathers must sit between a chunk's layers.
    fn per_layer_comm(&self) -> bool {
        self.tp || self.cp || self.ep
    }
}

/// One expert all-to-all of one rank (dispatch or combine): its tokens × topk copies of h
/// elements; with `moe_imbalance` the busiest rank's share, which every rank is priced at.
fn a2a_bytes(sc: &Scenario, tokens: u64, act: u64) -> Bytes {
    let m = &sc.model;
    // Latent MoE dispatches `moe_latent_size`-wide tokens (token_dispatcher.py `hidden_dim`).
    let mean = tokens
        .saturating_mul(m.topk())
        .saturating_mul(m.expert_width())
        .saturating_mul(act);
    let load = sc.plan.moe_load_factor().0;
    if load > 1.0 {
        Bytes((mean as f64 * load).min(u64::MAX as f64) as u64)
    } else {
        Bytes(mean)
    }
}

/// Megatron's gradient buckets of one model chunk on one rank (megatron-semantics.md §4.3).
/// Parameters are walked in backward order (output layer, last layer … first layer,
/// embedding); a bucket closes once it holds at least the bucket size. Layers are the unit:
/// a bucket may overshoot by up to one layer (Megatron: one parameter).
fn buckets(sc: &Scenario, stage: u64, chunk: u64, dp_cp: u64) -> Vec<Bucket> {
    let tp = sc.tp.max(1);
    let layers = sc.chunk_layers(stage, chunk) as u32;
    let per_layer = sc.params.per_layer;
    let sizes = PieceSizes::new(sc);
    let dense_layer = sizes.piece(
        per_layer.total().saturating_sub(per_layer.experts) / tp,
        sizes.dense,
    );
    // A hybrid model's routed experts are its `E` layers'.
    let hybrid = sc.params.hybrid;
    let layer_experts = hybrid.map_or(per_layer.experts, |hp| hp.moe.experts);
    let expert_layer = sizes.piece(
        layer_experts / sc.ep.max(1).saturating_mul(sc.etp.max(1)),
        sizes.experts,
    );
    // A MoE model's leading dense layers (`first_k_dense`) lead the chunk and have no experts.
    let moe_layers = sc.chunk_moe_layers(stage, chunk) as u32;
    let lead = if sc.model.is_moe() && hybrid.is_none() {
        layers.saturating_sub(moe_layers)
    } else {
        0
    };
    let lead_layer = sizes.piece(sc.params.dense_layer.total() / tp, sizes.lead);
    let first = stage == 0 && chunk == 0;
    let last = stage + 1 == sc.pp && chunk + 1 == sc.vpp.max(1);
    // The MTP depths (last chunk) are MoE layers of a MoE model: their experts join the
    // expert buffer, the rest the output layer's bucket.
    let mtp_chunk = stage == sc.split.mtp_stage() && chunk + 1 == sc.vpp.max(1);
    let mtp = if mtp_chunk { sc.model.mtp_layers() } else { 0 };
    let mtp_experts = per_layer.experts.saturating_mul(mtp);
    let expert_layers = if sc.model.is_moe() {
        (moe_layers as u64).saturating_add(mtp)
    } else {
        u64::from(layers)
    };
    let tied_shared = !sc.model.untied_embeddings() && sc.pp > 1;
    // training.py:2504-2515: bucketing only with overlap_grad_reduce, on pp rank 0, chunk 0.
    // Megatron-FSDP reduce-scatters each layer (its unit) by itself.
    let per_unit = sc.flags.fsdp.is_some_and(|f| f.shards_gradients());
    let bucketed = per_unit || (sc.flags.overlap_grad_reduce && stage == 0 && chunk == 0);
    let size = match (&sc.plan.bucket_size, per_unit) {
        (_, true) => 1,
        // `bucket_size` is written in bytes of the fp32 gradient buffer.
        (Some(b), false) => (b.0 / sc.recipe.main_grads.bytes().max(1)).max(1),
        (None, false) => BUCKET_MIN_ELEMENTS.max(BUCKET_PER_DP_ELEMENTS.saturating_mul(dp_cp)),
    };
    let sharded =
        sc.flags.distributed_optimizer || sc.flags.fsdp.is_some_and(|f| f.shards_optimizer());
    let pad = |n: u64| {
        if sharded {
            // param_layout.py:19-42: pad each bucket to a multiple of lcm(dp, 128).
            let q = venus_base::base::math::lcm(dp_cp, 128);
            n.div_ceil(q).saturating_mul(q)
        } else {
            n
        }
    };
    let mut out = Vec::new();
    let empty = |hi: u32| Bucket {
        elements: 0,
        gathered: 0,
        lo: hi,
        hi,
        pre: false,
        post: false,
        expert: false,
    };
    let mut open = empty(layers);
    let close = |b: &mut Bucket, out: &mut Vec<Bucket>, next_hi: u32| {
        if b.elements > 0 || b.gathered > 0 || b.pre || b.post {
            out.push(Bucket {
                elements: pad(b.elements),
                gathered: pad(b.gathered),
                ..*b
            });
        }
        *b = empty(next_hi);
    };
    // Multi-token prediction modules sit with the output layer (or end their own chunk).
    let mtp_dense = if mtp_chunk {
        sc.params.mtp.saturating_sub(mtp_experts)
    } else {
        0
    };
    if last {
        let output = if sc.model.untied_embeddings() || sc.pp > 1 {
            sc.params.output / tp
        } else {
            0
        };
        let output = sizes.piece(output, 0);
        open.post = true;
        open.add(sizes.piece(sc.params.final_norm.saturating_add(mtp_dense) / tp, 0));
        if tied_shared {
            // The tied output copy is a `shared_embedding` parameter: its own bucket.
            out.push(Bucket {
                elements: pad(output.0),
                gathered: pad(output.1),
                post: true,
                ..empty(layers)
            });
        } else {
            open.add(output);
        }
    }
    if mtp_chunk && !last {
        // Standalone MTP (a `pipeline_layout` puts the depths on another rank's last chunk):
        // they end that chunk as they end the last one.
        open.post = true;
        open.add(sizes.piece(mtp_dense / tp, 0));
    }
    // Each layer of a hybrid model is a piece of its own kind's size.
    let first_layer = sc.first_layer(stage, chunk);
    let layer_piece = |l: u32| match (hybrid, sc.model.hybrid_layer(first_layer + u64::from(l))) {
        (Some(hp), Some(kind)) => {
            let p = hp.of(kind);
            sizes.piece(p.total().saturating_sub(p.experts) / tp, 0)
        }
        _ if l < lead => lead_layer,
        _ => dense_layer,
    };
    for l in (0..layers).rev() {
        open.lo = l;
        open.add(layer_piece(l));
        if bucketed && open.elements.max(open.gathered) >= size {
            close(&mut open, &mut out, l);
        }
    }
    if first {
        let emb = sizes.piece(sc.params.embedding / tp, 0);
        if tied_shared {
            close(&mut open, &mut out, 0);
            out.push(Bucket {
                elements: pad(emb.0),
                gathered: pad(emb.1),
                pre: true,
                ..empty(0)
            });
        } else {
            open.pre = true;
            open.lo = 0;
            open.add(emb);
        }
    }
    close(&mut open, &mut out, 0);
    if (expert_layer.0 > 0 || expert_layer.1 > 0) && expert_layers > 0 {
        // Expert parameters live in their own buffer over the expert-dp group.
        out.push(Bucket {
            elements: pad(expert_layer.0.saturating_mul(expert_layers)),
            gathered: pad(expert_layer.1.saturating_mul(expert_layers)),
            lo: 0,
            hi: layers,
            expert: true,
            ..empty(0)
        });
    }
    out
}

/// What a piece of the model puts in a bucket: its gradient elements (the parameters that
/// train) and the elements the parameter all-gather moves.
/// - Every parameter trains: both are the piece's parameters.
/// - `task lora`: gradients only for the adapters (Megatron's DDP buffers hold only parameters
///   with `requires_grad`, megatron/core/distributed/distributed_data_parallel.py); the
///   distributed optimizer gathers only what it updates, the adapters, but Megatron-FSDP's
///   ZeRO-3 all-gathers the frozen base too before each use.
#[derive(Clone, Copy, Debug)]
struct PieceSizes {
    lora: bool,
    /// ZeRO-3: the forward and backward gather every parameter of the unit.
    gathers_base: bool,
    /// Adapter elements per layer on this rank: dense (a dense layer, a MoE layer's
    /// attention and shared experts) and the routed experts of a MoE layer.
    dense: u64,
    lead: u64,
    experts: u64,
}

impl PieceSizes {
    fn adapters(sc: &Scenario) -> (u64, u64, u64) {
        use venus_plan::plan::derive::adapter_params;
        let (rank, t) = (sc.plan.lora_rank(), sc.plan.lora_modules());
        let tp = sc.tp.max(1);
        let moe = sc.model.is_moe();
        let layer = adapter_params(&sc.model, rank, t, moe);
        let lead = adapter_params(&sc.model, rank, t, false);
        let experts = layer.experts / sc.ep.max(1).saturating_mul(sc.etp.max(1));
        (layer.dense / tp, lead.dense / tp, experts)
    }

    fn new(sc: &Scenario) -> PieceSizes {
        let lora = sc.plan.lora();
        let (dense, lead, experts) = if lora {
            PieceSizes::adapters(sc)
        } else {
            (0, 0, 0)
        };
        PieceSizes {
            lora,
            gathers_base: sc.flags.fsdp.is_some_and(|f| f.shards_parameters()),
            dense,
            lead,
            experts,
        }
    }

    /// (gradient elements, gathered elements) of a piece of `base` parameters and `adapters`.
    fn piece(&self, base: u64, adapters: u64) -> (u64, u64) {
        if !self.lora {
            return (base, base);
        }
        let gathered = if self.gathers_base {
            base.saturating_add(adapters)
        } else {
            adapters
        };
        (adapters, gathered)
    }
}

impl Bucket {
    fn add(&mut self, (elements, gathered): (u64, u64)) {
        self.elements = self.elements.saturating_add(elements);
        self.gathered = self.gathered.saturating_add(gathered);
    }
}

/// The whole trace's node count, projected during a rank's first iteration from the first
/// compute op of each pass: a forward of a deep stage with tp > 1 emits a node per layer and
/// collective, so one op is enough to see that 10⁵ layers × 10³ microbatches cannot fit,
/// before the iteration (let alone the trace) is allocated.
#[derive(Clone, Debug)]
struct Projection {
    /// Compute ops of each pass (forward, backward, weight) in one iteration of the rank.
    ops_of: [u64; 3],
    /// Nodes the first op of each pass emitted, once seen.
    first: [Option<u64>; 3],
    /// Nodes of the ranks already built.
    built: u64,
    /// Iterations of this rank and the ranks after it: the copies of one iteration to come.
    copies: u64,
}

impl Projection {
    fn new(ops: &[Op], built: u64, copies: u64) -> Projection {
        let mut ops_of = [0u64; 3];
        for op in ops {
            if let Some(p) = compute_pass(op) {
                ops_of[pass_index(p)] += 1;
            }
        }
        Projection {
            ops_of,
            first: [None; 3],
            built,
            copies,
        }
    }

    /// Records the nodes one op of `pass` emitted; the projection when it is the first one.
    fn observe(&mut self, pass: Pass, nodes: u64) -> Option<u64> {
        let slot = &mut self.first[pass_index(pass)];
        if slot.is_some() {
            return None;
        }
        *slot = Some(nodes);
        Some(self.nodes())
    }

    /// At least the nodes of every compute op seen so far's kind, over all copies.
    fn nodes(&self) -> u64 {
        let per_iteration = self
            .ops_of
            .iter()
            .zip(self.first)
            .map(|(&n, first)| n.saturating_mul(first.unwrap_or(0)))
            .fold(0u64, u64::saturating_add);
        self.built
            .saturating_add(per_iteration.saturating_mul(self.copies))
    }
}

fn compute_pass(op: &Op) -> Option<Pass> {
    match op {
        Op::Forward(_) => Some(Pass::Forward),
        Op::Backward(_) => Some(Pass::Backward),
        Op::Weight(_) => Some(Pass::Weight),
        _ => None,
    }
}

fn pass_index(p: Pass) -> usize {
    match p {
        Pass::Forward => 0,
        Pass::Backward => 1,
        Pass::Weight => 2,
    }
}

/// Emits the nodes of one rank.
struct Emitter<'a> {
    rb: RankBuilder,
    /// Nodes this rank may still add before the lowering is over [`MAX_TRACE_NODES`].
    budget: usize,
    /// Set during a rank's first iteration: projects the trace from its first ops.
    projection: Option<Projection>,
    /// The projected node count, once it is over [`MAX_TRACE_NODES`]: lowering stops there.
    projected_over: Option<u64>,
    st: &'a StagePlan,
    g: &'a RankGroups,
    n: &'a Names,
    chunk_label: bool,
    /// The last node on the compute stream (the host's issue point for communication).
    last_compute: Option<NodeId>,
    /// Nodes the host waits for before issuing anything else (blocking calls, waits).
    pending: Vec<NodeId>,
    /// Per-port transfer nodes of the current iteration, indexed by sequence number.
    xfers: [Vec<NodeId>; 4],
    grad_sync_on: bool,
    /// Buckets of each chunk launched this iteration.
    launched: Vec<Vec<bool>>,
    outstanding: Vec<NodeId>,
    /// Param all-gathers the next forward of each chunk waits for, per bucket index.
    gathers: Vec<Vec<Option<NodeId>>>,
    /// ZeRO-3's all-gathers the next backward of each chunk waits for, per bucket index.
    backward_gathers: Vec<Vec<Option<NodeId>>>,
    /// Every compute duration of this rank is multiplied by it: `1 / speed` of a straggler
    /// (`slow_rank`, `slow_node`, `slow_gpus`), 1 otherwise. Communication keeps its time.
    slowdown: f64,
    /// The (microbatch, chunk) pairs whose weight gradient the rank's schedule runs as an op
    /// of its own (`W`): every backward of `zb_h1`/`zb_h2`, DualPipe's `enable_zb` ones.
    weighted: std::collections::HashSet<(u32, u32)>,
    /// Inside an overlapped forward/backward pair (the forward before an `Op::Stream` to a
    /// second compute stream, up to the return to the main one): see [`Emitter::pair_end`].
    in_pair: bool,
    /// The pair's expert all-to-alls, issued on [`S_EP`]; the op after the pair waits for them.
    pair_a2a: Vec<NodeId>,
}

impl<'a> Emitter<'a> {
    fn new(
        st: &'a StagePlan,
        g: &'a RankGroups,
        n: &'a Names,
        shape: PipelineShape,
    ) -> Emitter<'a> {
        Emitter {
            rb: RankBuilder::default(),
            budget: usize::MAX,
            projection: None,
            projected_over: None,
            st,
            g,
            n,
            chunk_label: shape.kind == Kind::Interleaved || shape.kind.is_dualpipe(),
            last_compute: None,
            pending: Vec::new(),
            xfers: Default::default(),
            grad_sync_on: true,
            launched: st.buckets.iter().map(|b| vec![false; b.len()]).collect(),
            outstanding: Vec::new(),
            gathers: st.buckets.iter().map(|b| vec![None; b.len()]).collect(),
            backward_gathers: st.buckets.iter().map(|b| vec![None; b.len()]).collect(),
            slowdown: 1.0,
            weighted: std::collections::HashSet::new(),
            in_pair: false,
            pair_a2a: Vec::new(),
        }
    }

    fn over_budget(&self) -> bool {
        self.rb.len() > self.budget || self.projected_over.is_some()
    }

    /// A compute op of `pass`: emitted, then counted into the projection.
    fn compute_counted(&mut self, mb: u32, chunk: u32, pass: Pass) {
        let before = self.rb.len() as u64;
        self.compute(mb, chunk, pass);
        let added = self.rb.len() as u64 - before;
        let projected = self
            .projection
            .as_mut()
            .and_then(|p| p.observe(pass, added));
        if let Some(nodes) = projected.filter(|&n| n > MAX_TRACE_NODES) {
            self.projected_over = Some(nodes);
        }
    }

    fn iteration(&mut self, ops: &[Op]) {
        for v in &mut self.xfers {
            v.clear();
        }
        self.grad_sync_on = true;
        self.weighted = ops
            .iter()
            .filter_map(|op| match op {
                Op::Weight(m) => Some((m.mb, m.chunk)),
                _ => None,
            })
            .collect();
        for l in &mut self.launched {
            l.iter_mut().for_each(|x| *x = false);
        }
        let mut i = 0;
        while i < ops.len() && !self.over_budget() {
            match ops[i] {
                Op::Forward(m) => {
                    // A forward followed by a switch to a second compute stream starts an
                    // overlapped pair with the backward there.
                    if matches!(ops.get(i + 1), Some(Op::Stream(s)) if *s != ComputeStream::MAIN) {
                        self.in_pair = true;
                    }
                    self.compute_counted(m.mb, m.chunk, Pass::Forward)
                }
                Op::Backward(m) => self.compute_counted(m.mb, m.chunk, Pass::Backward),
                Op::Weight(m) => self.compute_counted(m.mb, m.chunk, Pass::Weight),
                // The engine has one compute stream per rank: both compute streams of an
                // overlapped pair share it (the pair's compute runs no faster than the GPU).
                Op::Stream(s) if s == ComputeStream::MAIN => self.pair_end(),
                Op::Stream(_) => {}
                Op::Call(c) => {
                    let n = usize::from(c.xfers);
                    let mut posted = Vec::with_capacity(n);
                    for op in ops.iter().skip(i + 1).take(n) {
                        if let Op::Xfer(x) = op {
                            posted.push(self.xfer(x.port));
                        }
                    }
                    if c.blocking {
                        self.pending.extend(posted);
                    }
                    i += n;
                }
                Op::Xfer(x) => {
                    // A transfer outside a call (not produced by the IR): issue it blocking.
                    let id = self.xfer(x.port);
                    self.pending.push(id);
                }
                Op::Wait { port, seq } => {
                    if let Some(&id) = self.xfers[port_index(port)].get(seq as usize) {
                        self.pending.push(id);
                    }
                }
                Op::DisableGradSync => self.grad_sync_on = false,
                Op::EnableGradSync => self.grad_sync_on = true,
                Op::GradSync { chunk } => self.launch_all(chunk),
                Op::ParamSync { chunk } => self.param_sync(chunk),
                Op::FinalizeGrads => self.finalize(),
                Op::CopyGradAllReduce => {
                    if let Some(g) = self.g.copies {
                        self.on_compute(
                            collective(CollectiveKind::AllReduce, g, self.st.copy_grads),
                            Category::AllGradsSync,
                            Label::Text(self.n.copies),
                        );
                    }
                }
                Op::EmbeddingGradAllReduce => {
                    if let Some(g) = self.g.embedding {
                        self.on_compute(
                            collective(CollectiveKind::AllReduce, g, self.st.embedding_grad),
                            Category::EmbeddingSync,
                            Label::Text(self.n.embedding),
                        );
                    }
                }
                Op::OptimizerStep => self.optimizer_step(),
            }
            i += 1;
        }
    }

    /// A node on the compute stream after everything the host waits for.
    fn on_compute(&mut self, kind: NodeKind, cat: Category, label: Label) -> NodeId {
        let kind = match kind {
            NodeKind::Compute { duration } if self.slowdown != 1.0 => NodeKind::Compute {
                duration: slowed(duration, self.slowdown),
            },
            other => other,
        };
        let deps = std::mem::take(&mut self.pending);
        let id = self.rb.push(kind, StreamId::COMPUTE, cat, label, &deps);
        self.last_compute = Some(id);
        id
    }

    /// A communication node issued by the host now, on `stream`.
    fn issue(
        &mut self,
        kind: NodeKind,
        stream: StreamId,
        cat: Category,
        label: Label,
        extra: &[NodeId],
    ) -> NodeId {
        let mut deps: Vec<NodeId> = self.last_compute.into_iter().collect();
        deps.extend_from_slice(&self.pending);
        deps.extend_from_slice(extra);
        self.rb.push(kind, stream, cat, label, &deps)
    }

    fn xfer(&mut self, port: Port) -> NodeId {
        let g = self.g;
        let bytes = self.st.p2p;
        let stage_of = |rank_next: bool| {
            let pp = g.pp_size.max(1);
            let s = self.st.stage;
            if rank_next {
                (s + 1) % pp
            } else {
                (s + pp - 1) % pp
            }
        };
        let (kind, stream, cat, label) = match port {
            Port::SendNext => (
                NodeKind::Send {
                    peer: RankId(g.pp_next),
                    bytes,
                    tag: TAG_ACTIVATION,
                },
                S_SEND_NEXT,
                Category::Send,
                Label::SendTo { pp: stage_of(true) },
            ),
            Port::RecvPrev => (
                NodeKind::Recv {
                    peer: RankId(g.pp_prev),
                    bytes,
                    tag: TAG_ACTIVATION,
                },
                S_RECV_PREV,
                Category::Recv,
                Label::RecvFrom {
                    pp: stage_of(false),
                },
            ),
            Port::SendPrev => (
                NodeKind::Send {
                    peer: RankId(g.pp_prev),
                    bytes,
                    tag: TAG_GRADIENT,
                },
                S_SEND_PREV,
                Category::Send,
                Label::SendTo {
                    pp: stage_of(false),
                },
            ),
            Port::RecvNext => (
                NodeKind::Recv {
                    peer: RankId(g.pp_next),
                    bytes,
                    tag: TAG_GRADIENT,
                },
                S_RECV_NEXT,
                Category::Recv,
                Label::RecvFrom { pp: stage_of(true) },
            ),
        };
        let id = self.issue(kind, stream, cat, label, &[]);
        self.xfers[port_index(port)].push(id);
        id
    }

    fn pass_label(&self, mb: u32, chunk: u32, pass: Pass) -> Label {
        let chunk = self
            .chunk_label
            .then_some(chunk.min(u32::from(u16::MAX)) as u16);
        match pass {
            Pass::Forward => Label::Forward {
                microbatch: mb,
                chunk,
            },
            Pass::Backward => Label::Backward {
                microbatch: mb,
                chunk,
            },
            Pass::Weight => Label::Weight {
                microbatch: mb,
                chunk,
            },
        }
    }

    /// One forward or backward of (microbatch, chunk).
    fn compute(&mut self, mb: u32, chunk: u32, pass: Pass) {
        let c = chunk as usize;
        let costs = match pass {
            Pass::Forward => self.st.forward.get(c),
            Pass::Backward if self.weighted.contains(&(mb, chunk)) => self.st.input_gradient.get(c),
            Pass::Backward => self.st.backward.get(c),
            Pass::Weight => self.st.weight.get(c),
        };
        let Some(&costs) = costs else { return };
        let label = self.pass_label(mb, chunk, pass);
        let cat = match pass {
            Pass::Forward => Category::ForwardCompute,
            Pass::Backward | Pass::Weight => Category::BackwardCompute,
        };
        // Weight gradients exist when the op computing them ends: the backward, or its `W`.
        let grads_pass = if self.weighted.contains(&(mb, chunk)) {
            Pass::Weight
        } else {
            Pass::Backward
        };
        self.fsdp_before(c, pass, grads_pass);
        let gathers = match pass {
            Pass::Forward => self.gathers.get(c),
            Pass::Backward => self.backward_gathers.get(c),
            Pass::Weight => None,
        }
        .map_or(0, |g| g.iter().flatten().count());
        let launching = pass == grads_pass
            && (self.st.fsdp_grads || (self.st.overlap_grad_reduce && self.grad_sync_on))
            && self.launched.get(c).is_some_and(|l| l.iter().any(|x| !x));
        let buckets = self.st.buckets.get(c).map_or(0, Vec::len);
        // A weight gradient (the `W` of `zb_h1`/`zb_h2`) lowers to one node. The backward's
        // TP collectives stay with B, also sequence parallelism's re-gather of the input that
        // dW reads (megatron/core/tensor_parallel/layers.py
        // `LinearWithGradAccumulationAndAsyncCommunication.backward`): a simplification (the
        // zero-bubble runtime keeps the gathered input until W, zbpp_utils.py
        // `WeightGradStore`, which costs memory, not time).
        let split = pass != Pass::Weight
            && (self.st.per_layer_comm() || gathers > 1 || (launching && buckets > 1));
        if !split {
            self.wait_gathers(c, |_| true);
            self.wait_backward_gathers(c, |_| true);
            self.on_compute(
                NodeKind::Compute {
                    duration: self.shared_rate(costs.total),
                },
                cat,
                label,
            );
            if launching {
                self.launch_where(c, |_| true);
            }
            return;
        }
        match pass {
            Pass::Forward => self.forward_pieces(c, costs, cat, label),
            Pass::Backward | Pass::Weight => self.backward_pieces(c, costs, cat, label, launching),
        }
    }

    fn piece(&mut self, duration: Ps, cat: Category, label: Label) -> NodeId {
        let duration = self.shared_rate(duration);
        self.on_compute(NodeKind::Compute { duration }, cat, label)
    }

    /// The two-stream sharing model of an overlapped forward/backward pair (DualPipe's
    /// `overlapped_forward_backward`, dualpipe.py:121-183; Megatron's combined 1F1B,
    /// megatron/core/pipeline_parallel/combined_1f1b.py at d98e8a64ddf3): the two passes'
    /// compute shares one GPU, so it runs one piece after the other on the rank's compute
    /// stream, each piece at (sms − 20)/sms of its rate when expert all-to-alls run beside it
    /// ([`PAIR_COMM_SMS`]; 112 of an H100's 132); the all-to-alls leave the compute stream for
    /// [`S_EP`], issued where their pass reaches them, and the op after the pair waits for all
    /// of them. The pair of compute C_F + C_B and all-to-alls A ends at max(C·sms/(sms − 20),
    /// issue of the last all-to-all + its time): the communication is hidden as far as the
    /// other pass's compute lasts.
    fn shared_rate(&self, d: Ps) -> Ps {
        if self.in_pair && self.st.ep {
            let (all, left) = self.st.pair_sms;
            Ps(d.0.saturating_mul(all) / left)
        } else {
            d
        }
    }

    /// The end of an overlapped pair: what follows waits for its all-to-alls.
    fn pair_end(&mut self) {
        self.in_pair = false;
        let a2a = std::mem::take(&mut self.pair_a2a);
        self.pending.extend(a2a);
    }

    fn forward_pieces(&mut self, c: usize, p: PassPs, cat: Category, label: Label) {
        if p.pre > Ps::ZERO {
            self.wait_gathers(c, |b| b.pre);
            self.piece(p.pre, cat, label);
        }
        let lead = self.st.dense_lead.get(c).copied().unwrap_or(0);
        for l in 0..p.layers {
            self.wait_gathers(c, |b| !b.expert && b.lo <= l && l < b.hi);
            match self.hybrid_kind(c, l) {
                Some(kind) => self.hybrid_layer(Pass::Forward, p, cat, label, kind),
                None => self.layer_forward(p, cat, label, l >= lead),
            }
        }
        if p.post > Ps::ZERO || p.layers == 0 {
            self.wait_gathers(c, |_| true);
            self.piece(p.post, cat, label);
        }
        // Buckets not tied to a piece (experts) are waited for at the end of the chunk.
        self.wait_gathers(c, |_| true);
    }

    /// The kind of layer `l` of chunk `c` of a hybrid model (`None` for a transformer).
    fn hybrid_kind(&self, c: usize, l: u32) -> Option<HybridLayer> {
        self.st.hybrid.get(c)?.get(l as usize).copied()
    }

    /// One layer of a hybrid model, forward or backward: a single sublayer between its
    /// tensor-parallel collectives (megatron/core/models/hybrid/hybrid_layer_specs.py: each
    /// symbol is one mixer or one MLP with its pre-norm). Its compute is the chunk's mean
    /// layer (the compute model spreads the chunk's exact total over its layers); a MoE layer
    /// dispatches and combines around it, an attention layer runs the context-parallel ring.
    fn hybrid_layer(
        &mut self,
        pass: Pass,
        p: PassPs,
        cat: Category,
        label: Label,
        kind: HybridLayer,
    ) {
        let duration = Ps(p.attention.0.saturating_add(p.mlp.0));
        let ring_factor = if pass == Pass::Forward { 1 } else { 2 };
        let backward = ring_factor == 2;
        match kind {
            HybridLayer::Moe => self.moe_block(pass, |s| {
                s.piece(duration, cat, label);
            }),
            HybridLayer::Attention => self.tp_block(pass, |s| {
                s.cp_attention(backward, |s| {
                    s.piece(duration, cat, label);
                })
            }),
            _ => self.tp_block(pass, |s| {
                s.piece(duration, cat, label);
            }),
        }
    }

    /// One layer's forward; `moe`: the MLP has routed experts (dispatch and combine).
    fn layer_forward(&mut self, p: PassPs, cat: Category, label: Label, moe: bool) {
        self.tp_block(Pass::Forward, |s| {
            s.cp_attention(false, |s| {
                s.piece(p.attention, cat, label);
            });
        });
        if moe {
            self.moe_block(Pass::Forward, |s| {
                s.piece(p.mlp, cat, label);
            });
        } else {
            self.tp_block(Pass::Forward, |s| {
                s.piece(p.mlp, cat, label);
            });
        }
    }

    /// One attention or MLP block between its tensor-parallel collectives. Without overlap
    /// they block the compute stream before and after the block. With `overlap_tp_comm`
    /// (Megatron's `--tp-comm-overlap`: TE splits each GEMM into chunks and pipelines the
    /// all-gather / reduce-scatter of one chunk with the GEMM of the next) they are issued on
    /// their own stream when the block starts, and the next block waits for them: the block
    /// costs about max(compute, communication).
    fn tp_block(&mut self, pass: Pass, body: impl FnOnce(&mut Self)) {
        if pass == Pass::Weight {
            // Its TP collectives are lowered with B (see `compute`).
            body(self);
            return;
        }
        match (self.st.overlap_tp, self.g.tp) {
            (true, Some(group)) => {
                let label = Label::Text(self.n.tp);
                let tensor = self.st.tp_tensor;
                let kinds: &[CollectiveKind] = match pass {
                    Pass::Forward => &[CollectiveKind::AllGather, CollectiveKind::ReduceScatter],
                    Pass::Backward | Pass::Weight => &[
                        CollectiveKind::AllGather,
                        CollectiveKind::AllGather,
                        CollectiveKind::ReduceScatter,
                    ],
                };
                let ids: Vec<NodeId> = kinds
                    .iter()
                    .map(|&k| {
                        self.issue(
                            collective(k, group, tensor),
                            S_TP,
                            Category::TpComm,
                            label,
                            &[],
                        )
                    })
                    .collect();
                body(self);
                self.pending.extend(ids);
            }
            _ => {
                match pass {
                    Pass::Forward => self.tp_enter(),
                    Pass::Backward | Pass::Weight => self.tp_backward_enter(),
                }
                body(self);
                self.tp_backward_exit();
            }
        }
    }

    fn backward_pieces(&mut self, c: usize, p: PassPs, cat: Category, label: Label, launch: bool) {
        if p.post > Ps::ZERO || p.layers == 0 {
            self.wait_backward_gathers(c, |b| b.post || p.layers == 0);
            self.piece(p.post, cat, label);
        }
        if launch {
            self.launch_where(c, |b| b.post && b.lo == b.hi);
        }
        let lead = self.st.dense_lead.get(c).copied().unwrap_or(0);
        for l in (0..p.layers).rev() {
            let moe = l >= lead;
            self.wait_backward_gathers(c, |b| b.lo <= l && l < b.hi);
            let rerun = self.st.full_recompute && u64::from(l) < self.st.full_recompute_layers;
            if let Some(kind) = self.hybrid_kind(c, l) {
                if rerun {
                    // One sublayer's forward collectives.
                    self.tp_enter();
                    self.tp_exit();
                }
                self.hybrid_layer(Pass::Backward, p, cat, label, kind);
                if launch {
                    self.launch_where(c, |b| !b.pre && !b.expert && b.lo == l && b.hi > b.lo);
                }
                continue;
            }
            if rerun {
                // Full recompute reruns the layer's forward, collectives included: a MoE
                // layer's dispatch and combine too.
                if moe {
                    self.tp_enter();
                    self.tp_exit();
                    self.recompute_moe();
                } else {
                    self.recompute_collectives();
                }
            }
            if moe && self.st.recompute_moe {
                // The recomputed MoE layer (`recompute_modules moe`) dispatches and combines
                // its tokens again.
                self.moe_dispatch();
                self.moe_combine();
            }
            // MLP backward: gradient enters through the row-parallel exit.
            if moe {
                self.moe_block(Pass::Backward, |s| {
                    s.piece(p.mlp, cat, label);
                });
            } else {
                self.tp_block(Pass::Backward, |s| {
                    s.piece(p.mlp, cat, label);
                });
            }
            self.tp_block(Pass::Backward, |s| {
                s.cp_attention(true, |s| {
                    s.piece(p.attention, cat, label);
                });
            });
            if launch {
                self.launch_where(c, |b| !b.pre && !b.expert && b.lo == l && b.hi > b.lo);
            }
        }
        if p.pre > Ps::ZERO {
            self.wait_backward_gathers(c, |_| true);
            self.piece(p.pre, cat, label);
        }
        if launch {
            self.launch_where(c, |_| true);
        }
    }

    /// Megatron-FSDP's per-microbatch work before a pass of chunk `c`: with `optim_grads` and
    /// up a fresh reduce-scatter of every layer in each backward (the gradients are sharded,
    /// so nothing accumulates unsharded across microbatches: "Gradient reduce-scatter is ...
    /// accumulated during every backward pass", Megatron-LM's Megatron-FSDP guide,
    /// <https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/megatron_fsdp.md>), and with
    /// `optim_grads_params` each layer's all-gather before its forward and its backward
    /// ("Model parameters are all-gathered ... pre-forward and pre-backward"). Granularity: one
    /// transformer layer, Megatron-FSDP's unit (mcore_fsdp_adapter.py `fsdp_unit_modules`),
    /// with the embedding and output layer in the first and last chunk's end units; the
    /// gathers of a chunk are issued together on the data-parallel stream, so each prefetches
    /// while the layers before it compute.
    fn fsdp_before(&mut self, c: usize, pass: Pass, grads_pass: Pass) {
        if self.st.fsdp_grads && pass == grads_pass {
            if let Some(l) = self.launched.get_mut(c) {
                l.iter_mut().for_each(|x| *x = false);
            }
        }
        if !self.st.fsdp_params {
            return;
        }
        match pass {
            Pass::Forward => {
                let ids = self.gather_chunk(c);
                if let Some(g) = self.gathers.get_mut(c) {
                    for (slot, id) in g.iter_mut().zip(ids) {
                        *slot = id;
                    }
                }
            }
            Pass::Backward => {
                let ids = self.gather_chunk_backward(c);
                if let Some(g) = self.backward_gathers.get_mut(c) {
                    for (slot, id) in g.iter_mut().zip(ids) {
                        *slot = id;
                    }
                }
            }
            Pass::Weight => {}
        }
    }

    fn wait_backward_gathers(&mut self, c: usize, which: impl Fn(&Bucket) -> bool) {
        let (Some(buckets), Some(gathers)) =
            (self.st.buckets.get(c), self.backward_gathers.get_mut(c))
        else {
            return;
        };
        for (b, g) in buckets.iter().zip(gathers.iter_mut()) {
            if which(b) {
                if let Some(id) = g.take() {
                    self.pending.push(id);
                }
            }
        }
    }

    fn tp_collective(&mut self, kind: CollectiveKind) {
        if let Some(g) = self.g.tp {
            self.on_compute(
                collective(kind, g, self.st.tp_tensor),
                Category::TpComm,
                Label::Text(self.n.tp),
            );
        }
    }

    /// Before a block's forward: the sequence-parallel all-gather.
    fn tp_enter(&mut self) {
        if self.st.sp {
            self.tp_collective(CollectiveKind::AllGather);
        }
    }

    /// After a block's forward: all-reduce, or reduce-scatter with `sp`.
    fn tp_exit(&mut self) {
        let kind = if self.st.sp {
            CollectiveKind::ReduceScatter
        } else {
            CollectiveKind::AllReduce
        };
        self.tp_collective(kind);
    }

    /// Before a block's backward with `sp`: all-gather the output gradient and re-gather the
    /// saved input for the weight gradient (layers.py:667-680).
    fn tp_backward_enter(&mut self) {
        if self.st.sp {
            self.tp_collective(CollectiveKind::AllGather);
            self.tp_collective(CollectiveKind::AllGather);
        }
    }

    /// After a block's backward: the input gradient's all-reduce, or reduce-scatter with `sp`.
    fn tp_backward_exit(&mut self) {
        self.tp_exit();
    }

    fn recompute_collectives(&mut self) {
        for _ in 0..2 {
            self.tp_enter();
            self.tp_exit();
        }
    }

    /// Context-parallel ring: cp − 1 steps of `factor` K/V blocks to the next cp rank, on the
    /// CP streams. Issued before the attention piece so that both run concurrently (TE
    /// overlaps the ring with the attention of the block already received); returns the last
    /// receive, which the node after the attention piece waits for.
    fn cp_ring(&mut self, factor: u64) -> Option<NodeId> {
        if !self.st.cp {
            return None;
        }
        let bytes = Bytes(self.st.cp_block.0.saturating_mul(factor));
        let label = Label::Text(self.n.cp);
        let mut prev_recv: Option<NodeId> = None;
        for _ in 1..self.g.cp {
            let extra: Vec<NodeId> = prev_recv.into_iter().collect();
            self.issue(
                NodeKind::Send {
                    peer: RankId(self.g.cp_next),
                    bytes,
                    tag: TAG_CP,
                },
                S_CP_SEND,
                Category::CpComm,
                label,
                &extra,
            );
            let recv = self.issue(
                NodeKind::Recv {
                    peer: RankId(self.g.cp_prev),
                    bytes,
                    tag: TAG_CP,
                },
                S_CP_RECV,
                Category::CpComm,
                label,
                &[],
            );
            prev_recv = Some(recv);
        }
        prev_recv
    }

    fn wait_gathers(&mut self, c: usize, which: impl Fn(&Bucket) -> bool) {
        let (Some(buckets), Some(gathers)) = (self.st.buckets.get(c), self.gathers.get_mut(c))
        else {
            return;
        };
        for (b, g) in buckets.iter().zip(gathers.iter_mut()) {
            if which(b) {
                if let Some(id) = g.take() {
                    self.pending.push(id);
                }
            }
        }
    }

    /// Launches the not-yet-launched buckets of chunk `c` selected by `which`.
    fn launch_where(&mut self, c: usize, which: impl Fn(&Bucket) -> bool) {
        let Some(buckets) = self.st.buckets.get(c) else {
            return;
        };
        for (i, b) in buckets.iter().enumerate() {
            let done = self.launched.get(c).and_then(|l| l.get(i)).copied();
            if done != Some(false) || !which(b) {
                continue;
            }
            if let Some(l) = self.launched.get_mut(c).and_then(|l| l.get_mut(i)) {
                *l = true;
            }
            let (group, name) = if b.expert {
                (self.g.expert_dp, self.n.expert_grad)
            } else {
                (self.g.dp_cp, self.n.grad)
            };
            let Some(group) = group else { continue };
            let kind = if self.st.distributed_optimizer {
                CollectiveKind::ReduceScatter
            } else {
                CollectiveKind::AllReduce
            };
            let bytes = Bytes(b.elements.saturating_mul(self.st.grad_bytes));
            let id = self.issue(
                collective(kind, group, bytes),
                S_DP,
                Category::AllGradsSync,
                Label::Numbered(name, i as u32),
                &[],
            );
            self.outstanding.push(id);
        }
    }

    fn launch_all(&mut self, chunk: u32) {
        self.launch_where(chunk as usize, |_| true);
    }

    /// `finalize_model_grads`: issue what is not launched yet, wait for every reduction,
    /// then the sequence-parallel norm-gradient all-reduce.
    fn finalize(&mut self) {
        for c in 0..self.st.vpp as usize {
            self.launch_where(c, |_| true);
        }
        let outstanding = std::mem::take(&mut self.outstanding);
        self.pending.extend(outstanding);
        if self.st.sp {
            if let Some(g) = self.g.tp {
                self.on_compute(
                    collective(CollectiveKind::AllReduce, g, self.st.norm_grads),
                    Category::TpComm,
                    Label::Text(self.n.norms),
                );
            }
        }
    }

    fn optimizer_step(&mut self) {
        self.on_compute(
            NodeKind::Compute {
                duration: self.st.optimizer,
            },
            Category::Optimizer,
            Label::Text(self.n.optimizer),
        );
        if self.st.distributed_optimizer && !self.st.overlap_param_gather && !self.st.fsdp_params {
            // Synchronous all-gather inside the step (distrib_optimizer.py:3175-3195); ZeRO-3
            // keeps the updated shards and gathers them at their next use instead.
            let mut ids = Vec::new();
            for c in 0..self.st.vpp as usize {
                ids.extend(self.gather_chunk(c));
            }
            self.pending.extend(ids.into_iter().flatten());
        }
    }

    /// Dispatches the chunk's param all-gathers; its next forward waits for them.
    fn param_sync(&mut self, chunk: u32) {
        if !self.st.distributed_optimizer || self.st.fsdp_params {
            return;
        }
        let c = chunk as usize;
        let ids = self.gather_chunk(c);
        if let Some(g) = self.gathers.get_mut(c) {
            for (slot, id) in g.iter_mut().zip(ids) {
                *slot = id;
            }
        }
    }

    /// ZeRO-3's all-gathers of one chunk before its backward, in backward order (experts
    /// first: the last layer's MLP runs first); returns them per bucket index.
    fn gather_chunk_backward(&mut self, c: usize) -> Vec<Option<NodeId>> {
        let Some(buckets) = self.st.buckets.get(c) else {
            return Vec::new();
        };
        let mut order: Vec<usize> = (0..buckets.len()).filter(|&i| buckets[i].expert).collect();
        order.extend((0..buckets.len()).filter(|&i| !buckets[i].expert));
        self.gather_in_order(c, &order)
    }

    /// All-gathers of one chunk's buckets in forward order; returns them per bucket index.
    fn gather_chunk(&mut self, c: usize) -> Vec<Option<NodeId>> {
        let Some(buckets) = self.st.buckets.get(c) else {
            return Vec::new();
        };
        // Forward order: the embedding bucket (last in backward order) first; experts last.
        let mut order: Vec<usize> = (0..buckets.len())
            .filter(|&i| !buckets[i].expert)
            .rev()
            .collect();
        order.extend((0..buckets.len()).filter(|&i| buckets[i].expert));
        self.gather_in_order(c, &order)
    }

    /// One all-gather per bucket of chunk `c`, issued in `order`; returns them per bucket index.
    fn gather_in_order(&mut self, c: usize, order: &[usize]) -> Vec<Option<NodeId>> {
        let Some(buckets) = self.st.buckets.get(c) else {
            return Vec::new();
        };
        let mut ids = vec![None; buckets.len()];
        for &i in order {
            let b = buckets[i];
            let group = if b.expert {
                self.g.expert_dp
            } else {
                self.g.dp_cp
            };
            let Some(group) = group else { continue };
            let bytes = Bytes(b.gathered.saturating_mul(self.st.param_bytes));
            ids[i] = Some(self.issue(
                collective(CollectiveKind::AllGather, group, bytes),
                S_DP,
                Category::ParamsAllGather,
                Label::Numbered(self.n.gather, i as u32),
                &[],
            ));
        }
        ids
    }
}

/// A compute duration on a GPU `factor` times slower, to the nearest picosecond (saturating:
/// the engine reports a time past its range as E0602).
fn slowed(d: Ps, factor: f64) -> Ps {
    let v = (d.0 as f64 * factor).round();
    if v >= u64::MAX as f64 {
        Ps(u64::MAX)
    } else {
        Ps(v as u64)
    }
}

fn collective(kind: CollectiveKind, group: GroupId, bytes: Bytes) -> NodeKind {
    NodeKind::Collective { kind, group, bytes }
}

fn port_index(p: Port) -> usize {
    match p {
        Port::SendNext => 0,
        Port::RecvPrev => 1,
        Port::SendPrev => 2,
        Port::RecvNext => 3,
    }
}
