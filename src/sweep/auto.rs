//! The axes `--auto` generates: one row of [`ROWS`] per plan choice, each writing plan items.
//!
//! Input: the scenario typed with placeholder parallelism ([`AutoCx::of`]: world size, NVLink
//! domain, layers, sequence, experts, the optimizer flags the plan writes) and [`AutoOptions`].
//! Output: [`Axis`] values of `Write::Items` for [`super::space::Draft::finish`].
//!
//! A row whose values depend on what earlier rows chose (pp on tp, cp on tp × pp, cp_comm on
//! cp and the heads per tp rank, etp on tp × cp, ep on the expert grid, the dispatcher on
//! etp × ep, recompute_modules on recompute) is `dependent`: every row up to the last dependent one is expanded as a tree
//! into one combined axis (`tp+sp+...`), so only the shapes Megatron accepts for the world
//! size, the layer count and the sequence are candidates (W01, L06/L13–L17, C01, E02/W02 of
//! the validity table). The rules that do not shape the grid (heads over tp, the batch, the
//! interleaved schedule, memory) are left to the checker, so the summary says why a plan went.
//! Invariants: values come out in a fixed order (increasing sizes, table order), so candidate
//! numbers, shards and output never depend on anything but the file and the options.

use super::space::{divisors, Axis, AxisValue, Write};
use crate::base::ScheduleKind;
use crate::plan::derive::split_layers;
use crate::schedule::{Kind, PipelineShape};
use crate::ty::ScenarioDef;

/// Microbatch sizes `--auto` tries.
pub const AUTO_MICRO_BATCHES: [u64; 4] = [1, 2, 4, 8];

/// Model chunks per pipeline rank tried for an uneven split: Megatron's interleaving is used
/// with a few chunks per rank (vpp 2–8 in its published configurations), and each extra value
/// multiplies the space.
const MAX_UNEVEN_VPP: u64 = 16;

/// Plan keys that follow from the others and that `--auto` therefore drops from the plan:
/// `dp` is world / (tp × pp × cp). (`schedule` is a row; its default follows pp and vpp.)
const DERIVED_KEYS: [&str; 1] = ["dp"];

/// The schedules the `schedule` row tries besides the default (1F1B, or interleaved with
/// vpp > 1): the zero-bubble hand schedules and DeepSeek's DualPipe pair.
const AUTO_SCHEDULES: [ScheduleKind; 4] = [
    ScheduleKind::ZbH1,
    ScheduleKind::ZbH2,
    ScheduleKind::DualPipe,
    ScheduleKind::DualPipeV,
];

/// The Megatron-FSDP strategies the `dp_sharding` row tries: ZeRO-2 and ZeRO-3. ZeRO-1
/// (`optim`) shards what the distributed optimizer shards, and lowers to the same plan
/// (`lower`: Megatron-FSDP v1 runs the distributed optimizer, arguments.py:1128-1136), so it
/// would only repeat the `distributed_optimizer on` candidates.
const AUTO_FSDP: [&str; 2] = ["optim_grads", "optim_grads_params"];

/// How `--auto` builds the space.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoOptions {
    /// Let tp span nodes (tp ∈ divisors of the world instead of the NVLink domain).
    pub allow_cross_node_tp: bool,
}

/// What the rows read of the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoCx {
    pub world: u64,
    /// GPUs of the innermost dim (the NVLink domain once `ty::domain` has cut the job).
    pub domain: u64,
    pub layers: u64,
    pub seq: u64,
    /// Routed experts per layer; `None` for a dense model.
    pub experts: Option<u64>,
    /// The plan writes `distributed_optimizer` itself (on or off): no axis for it.
    pub distributed_optimizer_written: bool,
    /// The plan writes `overlap_param_gather on`, which needs the distributed optimizer.
    pub param_gather_overlapped: bool,
    /// The plan writes `fsdp` itself: the sharding row keeps it.
    pub fsdp_written: bool,
    /// The plan writes `overlap_ep_comm` itself (on or off): no axis for it.
    pub ep_overlap_written: bool,
    pub opts: AutoOptions,
    /// Each routed expert's ffn (what `etp` must divide).
    pub moe_ffn: u64,
    /// Query heads and key/value groups (what a CP all-to-all scatters).
    pub heads: u64,
    pub kv_groups: u64,
    /// Some layer has a dense MLP (`recompute_modules mlp` recomputes something): a dense
    /// model, a MoE model with `first_k_dense`, a hybrid.
    pub dense_mlp: bool,
    /// The GPU can run the flex dispatcher's DeepEP kernels.
    pub deepep: bool,
    /// The plan writes `cp_comm`, `etp`, `moe_dispatcher` or `recompute_modules` itself: that
    /// choice stays in every candidate, with no row for it.
    pub cp_comm_written: bool,
    pub etp_written: bool,
    pub dispatcher_written: bool,
    pub modules_written: bool,
    /// The `etp` the plan writes (what the ep and dispatcher rows then read).
    pub written_etp: Option<u64>,
}

impl AutoCx {
    pub fn of(def: &ScenarioDef, opts: AutoOptions) -> AutoCx {
        let p = &def.plan;
        AutoCx {
            world: def.cluster.world_size(),
            domain: def.cluster.dims.first().map_or(1, |d| d.size.value),
            layers: def.model.layers.value,
            seq: def.model.seq.value,
            experts: def.model.experts.as_ref().map(|e| e.value),
            distributed_optimizer_written: p.distributed_optimizer.is_some(),
            param_gather_overlapped: p.overlap_param_gather.as_ref().is_some_and(|s| s.value),
            fsdp_written: p.fsdp.is_some(),
            ep_overlap_written: p.overlap_ep_comm.is_some(),
            opts,
            moe_ffn: def.model.moe_ffn(),
            heads: def.model.heads.value,
            kv_groups: def.model.kv_groups(),
            // validate/recompute.rs: `mlp` recomputes nothing when every layer is MoE (W0019).
            dense_mlp: def.model.experts.is_none()
                || def
                    .model
                    .first_k_dense
                    .as_ref()
                    .is_some_and(|k| k.value > 0)
                || def.model.hybrid_override_pattern.is_some(),
            deepep: runs_deepep(def.cluster.gpu.arch()),
            cp_comm_written: p.cp_comm.is_some(),
            etp_written: p.etp.is_some(),
            dispatcher_written: p.moe_dispatcher.is_some(),
            modules_written: p.recompute_modules.is_some(),
            written_etp: p.etp.as_ref().map(|e| e.value),
        }
    }
}

/// The sizes chosen by the rows before (what a dependent row reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub tp: u64,
    pub sp: bool,
    pub pp: u64,
    /// Model chunks per pipeline rank.
    pub vpp: u64,
    pub cp: u64,
    /// The expert tensor-parallel size (`None`: = tp, Megatron's default).
    pub etp: Option<u64>,
    pub ep: u64,
    /// `recompute selective` chosen (what `recompute_modules` refines).
    pub selective: bool,
}

impl Default for Chosen {
    fn default() -> Chosen {
        Chosen {
            tp: 1,
            sp: false,
            pp: 1,
            vpp: 1,
            cp: 1,
            etp: None,
            ep: 1,
            selective: false,
        }
    }
}

impl Chosen {
    /// The expert tensor-parallel size in effect: the etp row's, else the plan's, else tp.
    fn etp(&self, cx: &AutoCx) -> u64 {
        self.etp.or(cx.written_etp).unwrap_or(self.tp).max(1)
    }
}

/// One value of a row: the items it writes (possibly none) and the sizes after it.
type Choice = (String, Chosen);

/// One choice `--auto` makes.
pub struct Row {
    /// The axis name (a plan key).
    pub name: &'static str,
    /// The plan keys whose items the row replaces (dropped from the plan when the row applies).
    pub keys: &'static [&'static str],
    /// Whether the row applies to the scenario at all.
    pub applies: fn(&AutoCx) -> bool,
    /// Whether `values` reads the choices of earlier rows.
    pub dependent: bool,
    pub values: fn(&AutoCx, Chosen) -> Vec<Choice>,
}

/// The rows in candidate order (the last row varies fastest). A new plan choice is one row:
/// its name, the plan keys it replaces, when it applies, and its values. A row that reads
/// earlier choices (a size, the layout) says `dependent` and reads them from [`Chosen`]; a
/// choice that is valid only with others is offered anyway where the validator decides it
/// (an error prunes the candidate, an ignored flag makes it a duplicate of the plan without).
pub const ROWS: &[Row] = &[
    Row {
        name: "tp",
        keys: &["tp"],
        applies: always,
        dependent: false,
        values: tp_values,
    },
    Row {
        name: "sp",
        keys: &["sp"],
        applies: always,
        dependent: true,
        values: sp_values,
    },
    Row {
        name: "overlap_tp_comm",
        keys: &["overlap_tp_comm"],
        applies: always,
        dependent: true,
        values: overlap_tp_comm_values,
    },
    Row {
        name: "pp",
        keys: &["pp", "vpp", "first_stage_layers", "last_stage_layers"],
        applies: always,
        dependent: true,
        values: pp_values,
    },
    Row {
        name: "schedule",
        keys: &["schedule"],
        applies: always,
        dependent: true,
        values: schedule_values,
    },
    Row {
        name: "cp",
        keys: &["cp"],
        applies: always,
        dependent: true,
        values: cp_values,
    },
    Row {
        name: "cp_comm",
        keys: &[],
        applies: cp_comm_open,
        dependent: true,
        values: cp_comm_values,
    },
    Row {
        name: "etp",
        keys: &[],
        applies: etp_open,
        dependent: true,
        values: etp_values,
    },
    Row {
        name: "ep",
        keys: &["ep"],
        applies: is_moe,
        dependent: true,
        values: ep_values,
    },
    Row {
        name: "moe_dispatcher",
        keys: &[],
        applies: dispatcher_open,
        dependent: true,
        values: dispatcher_values,
    },
    Row {
        name: "micro_batch",
        keys: &["micro_batch"],
        applies: always,
        dependent: false,
        values: micro_batch_values,
    },
    Row {
        name: "recompute",
        keys: &["recompute"],
        applies: always,
        dependent: false,
        values: recompute_values,
    },
    Row {
        name: "recompute_modules",
        keys: &[],
        applies: modules_open,
        dependent: true,
        values: recompute_modules_values,
    },
    Row {
        name: "dp_sharding",
        keys: &[],
        applies: sharding_not_written,
        dependent: false,
        values: dp_sharding_values,
    },
    Row {
        name: "overlap_ep_comm",
        keys: &[],
        applies: ep_overlap_open,
        dependent: false,
        values: ep_overlap_values,
    },
];

fn always(_: &AutoCx) -> bool {
    true
}

fn is_moe(cx: &AutoCx) -> bool {
    cx.experts.is_some()
}

fn sharding_not_written(cx: &AutoCx) -> bool {
    !cx.distributed_optimizer_written || !cx.fsdp_written
}

fn cp_comm_open(cx: &AutoCx) -> bool {
    !cx.cp_comm_written
}

fn etp_open(cx: &AutoCx) -> bool {
    is_moe(cx) && !cx.etp_written
}

fn dispatcher_open(cx: &AutoCx) -> bool {
    is_moe(cx) && !cx.dispatcher_written
}

fn modules_open(cx: &AutoCx) -> bool {
    !cx.modules_written
}

fn ep_overlap_open(cx: &AutoCx) -> bool {
    is_moe(cx) && !cx.ep_overlap_written
}

/// Whether `key`'s items are dropped from a plan `--auto` rewrites.
pub fn replaces(key: &str) -> bool {
    DERIVED_KEYS.contains(&key) || ROWS.iter().any(|r| r.keys.contains(&key))
}

fn item(key: &str, value: impl std::fmt::Display) -> String {
    format!("{key} {value}")
}

/// An item whose key takes optional arguments it leaves out (`cp_comm a2a`, `moe_dispatcher
/// allgather`, `recompute_modules mlp`), ended by a line break: on a shared line the next
/// item's key would be read as the left-out argument. Labels show it on one line ([`axis`]).
fn ended(item: String) -> String {
    format!("{item}\n ")
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// tp: the divisors of the NVLink domain that divide the world, or of the world with
/// `--allow-cross-node-tp` (tensor-parallel all-reduces on every layer want NVLink).
fn tp_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let tps: Vec<u64> = if cx.opts.allow_cross_node_tp {
        divisors(cx.world)
    } else {
        divisors(cx.domain)
            .into_iter()
            .filter(|&t| cx.world.is_multiple_of(t))
            .collect()
    };
    tps.into_iter()
        .map(|tp| (item("tp", tp), Chosen { tp, ..c }))
        .collect()
}

/// sp: off, and on with tp > 1 (Megatron disables it with tp 1: arguments.py:1434-1439, P01).
fn sp_values(_: &AutoCx, c: Chosen) -> Vec<Choice> {
    let mut out = vec![(item("sp", on_off(false)), Chosen { sp: false, ..c })];
    if c.tp > 1 {
        out.push((item("sp", on_off(true)), Chosen { sp: true, ..c }));
    }
    out
}

/// overlap_tp_comm: off, and on with sp (megatron/training/arguments.py:1442, P02: the overlap
/// "can happen only when sequence parallelism is enabled").
fn overlap_tp_comm_values(_: &AutoCx, c: Chosen) -> Vec<Choice> {
    if c.sp {
        vec![
            (String::new(), c),
            (item("overlap_tp_comm", on_off(true)), c),
        ]
    } else {
        vec![(String::new(), c)]
    }
}

/// pp with each layer split: the pipeline depths that leave a whole number of data-parallel
/// groups (W01: world % (tp × pp) == 0; cp comes next), each with its vpp values and layout
/// ([`layouts`]).
fn pp_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let mut out = Vec::new();
    for pp in divisors(cx.world / c.tp.max(1)) {
        for layout in layouts(cx.layers, pp) {
            let mut items = format!("pp {pp} vpp {}", layout.vpp);
            if let Some((first, last)) = layout.ends {
                items.push_str(&format!(
                    " first_stage_layers {first} last_stage_layers {last}"
                ));
            }
            out.push((
                items,
                Chosen {
                    pp,
                    vpp: layout.vpp,
                    ..c
                },
            ));
        }
    }
    out
}

/// The pipeline schedule: the default (nothing written: 1F1B, or interleaved with vpp > 1),
/// then each of [`AUTO_SCHEDULES`] whose shape rules pass for the chosen pp and vpp: the
/// vpp the schedule needs written ([`Kind::written_vpp`], E0330) and
/// [`PipelineShape::check`] (E0325, E0328; zero-bubble schedules run one chunk per rank), the
/// rules the validator applies to a written schedule. The shape is checked at 4·pp
/// microbatches, a count that passes the microbatch rules of every schedule (zero-bubble
/// m ≥ max(pp, 2·(pp − 1)), DualPipe m ≥ 2·pp and even), so that only the rules of the
/// pipeline's shape decide here; the microbatch count of each candidate (E0327, E0329) and the
/// optimizer features the zero-bubble runtime refuses (E0326) are the checker's.
fn schedule_values(_: &AutoCx, c: Chosen) -> Vec<Choice> {
    let mut out = vec![(String::new(), c)];
    let narrow = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    let (pp, vpp) = (narrow(c.pp), narrow(c.vpp));
    for schedule in AUTO_SCHEDULES {
        let kind = Kind::from(schedule);
        if kind.written_vpp().is_some_and(|want| want != vpp) {
            continue;
        }
        let shape = PipelineShape::new(kind, pp, vpp, pp.saturating_mul(4));
        if shape.check().is_ok() {
            out.push((item("schedule", schedule.word()), c));
        }
    }
    out
}

/// A split of the layers over the pipeline: `vpp` chunks per rank, and the first and last
/// stages' layers when uneven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineLayout {
    pub vpp: u64,
    pub ends: Option<(u64, u64)>,
}

/// The layer splits `--auto` tries on `pp` stages. When the layers divide evenly: every vpp
/// that divides the layers per stage (L06, L20; vpp > 1 only with pp > 1, L09). Otherwise
/// (Llama 3.1 405B's 126 layers on 8 stages) the uneven split of [`uneven_ends`] for each vpp
/// that has one (Megatron's `--decoder-first/last-pipeline-num-layers`).
pub fn layouts(layers: u64, pp: u64) -> Vec<PipelineLayout> {
    if pp == 0 || layers == 0 {
        return Vec::new();
    }
    if layers.is_multiple_of(pp) {
        return divisors(layers / pp)
            .into_iter()
            .filter(|&vpp| vpp == 1 || pp > 1)
            .map(|vpp| PipelineLayout { vpp, ends: None })
            .collect();
    }
    if pp < 2 {
        return Vec::new();
    }
    let most = layers.div_ceil(pp).min(MAX_UNEVEN_VPP);
    (1..=most)
        .filter_map(|vpp| {
            uneven_ends(layers, pp, vpp).map(|ends| PipelineLayout {
                vpp,
                ends: Some(ends),
            })
        })
        .collect()
}

/// The uneven split people write: every middle stage gets ⌈layers / pp⌉ layers, rounded up
/// to a multiple of vpp, and the first and last stages share the rest, the first no more
/// than the last, neither more than a middle stage (the ends also hold the embedding and the
/// loss). `(first, last)` when that split passes Megatron's rules
/// (megatron/core/transformer/transformer_config.py:2300-2370, L13–L17, as
/// `plan::derive::split_layers` checks them); 126 layers on pp 8: 15 + 6 × 16 + 15.
pub fn uneven_ends(layers: u64, pp: u64, vpp: u64) -> Option<(u64, u64)> {
    let vpp = vpp.max(1);
    let middles = pp.checked_sub(2)?;
    let per_stage = layers.div_ceil(pp).div_ceil(vpp).checked_mul(vpp)?;
    let ends = layers.checked_sub(middles.checked_mul(per_stage)?)?;
    let first = ends / 2 / vpp * vpp;
    let last = ends - first;
    let fits = first >= vpp && (middles == 0 || last <= per_stage);
    (fits && split_layers(layers, pp, vpp, Some(first), Some(last)).is_ok())
        .then_some((first, last))
}

/// cp: the divisors of world / (tp × pp) (W01) that split the sequence into 2 × cp chunks
/// (megatron/training/arguments.py:1335-1339, C01: seq % (2 × cp) == 0).
fn cp_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let rest = cx.world / c.tp.max(1).saturating_mul(c.pp.max(1));
    divisors(rest)
        .into_iter()
        .filter(|&cp| cp == 1 || cx.seq.is_multiple_of(cp.saturating_mul(2)))
        .map(|cp| (item("cp", cp), Chosen { cp, ..c }))
        .collect()
}

/// cp_comm (cp > 1 only: with cp 1 there is nothing to exchange, W0020): the default p2p ring
/// (nothing written), then Ulysses `a2a`, `allgather`, and the hierarchical `a2a_p2p A` with
/// the largest a2a group size 1 < A < cp that divides cp (C02/C03, arguments.py:580-586). An a2a over
/// A ranks scatters the heads: the query heads and key/value groups per tensor-parallel rank
/// must divide by A (Transformer Engine's context_parallel.py:4246 at d0067d0da6cb, E0345),
/// so only the sizes that pass are offered.
fn cp_comm_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let mut out = vec![(String::new(), c)];
    if c.cp <= 1 {
        return out;
    }
    let tp = c.tp.max(1);
    let (q, kv) = ((cx.heads / tp).max(1), (cx.kv_groups / tp).max(1));
    let scatters = |a: u64| q.is_multiple_of(a) && kv.is_multiple_of(a);
    if scatters(c.cp) {
        out.push((ended(item("cp_comm", "a2a")), c));
    }
    out.push((ended(item("cp_comm", "allgather")), c));
    // One hierarchical split, the largest a2a group that fits: the a2a stays inside the
    // fewest ranks' NVLink when cp is laid out innermost, and each further size would
    // multiply the space by the rest of the rows.
    let largest = divisors(c.cp)
        .into_iter()
        .rev()
        .find(|&a| a > 1 && a < c.cp && scatters(a));
    if let Some(a) = largest {
        out.push((format!("cp_comm a2a_p2p {a}"), c));
    }
    out
}

/// etp (MoE models only): the expert tensor-parallel sizes of parallel folding, where the
/// experts run on etp × ep × expert-dp ranks of the tp × cp × dp ranks attention runs on
/// (megatron/core/parallel_state.py:876-884): the divisors of tp × cp that split each
/// expert's ffn (TEGroupedLinear shards fc1's columns and fc2's rows over etp,
/// megatron/core/extensions/transformer_engine.py:2382; E0342) and whose grid etp × pp divides
/// the world (W02). etp = tp, Megatron's default (arguments.py:587-588), is written as nothing.
fn etp_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let tp = c.tp.max(1);
    divisors(tp.saturating_mul(c.cp.max(1)))
        .into_iter()
        .filter(|&etp| {
            cx.moe_ffn.is_multiple_of(etp)
                && cx.world.is_multiple_of(etp.saturating_mul(c.pp.max(1)))
        })
        .map(|etp| {
            if etp == tp {
                (String::new(), Chosen { etp: None, ..c })
            } else {
                (
                    item("etp", etp),
                    Chosen {
                        etp: Some(etp),
                        ..c
                    },
                )
            }
        })
        .collect()
}

/// ep (MoE models only): the divisors of the experts (E02, arguments.py:1658) whose expert
/// grid etp × ep × pp divides the world (W02, megatron/core/parallel_state.py:883).
fn ep_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let experts = cx.experts.unwrap_or(1);
    let grid = c.etp(cx).saturating_mul(c.pp.max(1));
    divisors(experts)
        .into_iter()
        .filter(|&ep| cx.world.is_multiple_of(grid.saturating_mul(ep)))
        .map(|ep| (item("ep", ep), Chosen { ep, ..c }))
        .collect()
}

/// Whether `arch` runs DeepEP, the flex dispatcher's default kernels: NVIDIA data-centre
/// GPUs with NVLink (deepseek-ai/DeepEP's README lists Ampere SM80 and Hopper SM90 and
/// architectures with the SM90 PTX ISA, NVLink inside a node and RDMA between nodes).
/// Ada's PCIe parts have no NVLink; AMD's Instinct GPUs run other kernels.
fn runs_deepep(arch: crate::base::GpuArch) -> bool {
    use crate::base::GpuArch::*;
    matches!(arch, Ampere | Hopper | Blackwell | BlackwellUltra)
}

/// moe_dispatcher (MoE models only): alltoall, Megatron's default (nothing written), then
/// allgather, then flex (DeepEP) where it runs: over more than one rank of etp × ep
/// (megatron/core/transformer/moe/token_dispatcher.py:1832, "DeepEP dispatcher requires
/// TPxEP > 1", E0343) on a GPU with DeepEP's kernels ([`runs_deepep`]).
fn dispatcher_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let mut out = vec![
        (String::new(), c),
        (ended(item("moe_dispatcher", "allgather")), c),
    ];
    if cx.deepep && c.etp(cx).saturating_mul(c.ep) > 1 {
        out.push((item("moe_dispatcher", "flex deepep"), c));
    }
    out
}

fn micro_batch_values(_: &AutoCx, c: Chosen) -> Vec<Choice> {
    AUTO_MICRO_BATCHES
        .iter()
        .map(|&m| (item("micro_batch", m), c))
        .collect()
}

/// Megatron's recompute granularities: `op` (PyTorch's per-op checkpointing) is a
/// torchtitan choice, not one of the Megatron-LM plans the auto sweep searches.
fn recompute_values(_: &AutoCx, c: Chosen) -> Vec<Choice> {
    crate::syntax::schema::RECOMPUTE
        .iter()
        .filter(|&&r| r != crate::base::Recompute::Op.word())
        .map(|&r| {
            let selective = r == "selective";
            (item("recompute", r), Chosen { selective, ..c })
        })
        .collect()
}

/// recompute_modules (with `recompute selective` only: E0339 otherwise): Megatron's default
/// `core_attn` (nothing written, transformer_config.py:1940-1941), then a few sets people
/// run: `core_attn mlp`, `mlp layernorm` where some layer has a dense MLP (W0019 otherwise;
/// `core_attn layernorm` for a model whose every layer is MoE), and for a MoE model
/// `moe_act` and `core_attn moe_act` (transformer_config.py:560-583).
fn recompute_modules_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let mut out = vec![(String::new(), c)];
    if !c.selective {
        return out;
    }
    let sets: &[&str] = match (cx.dense_mlp, cx.experts.is_some()) {
        (true, false) => &["core_attn mlp", "mlp layernorm"],
        (true, true) => &[
            "core_attn mlp",
            "mlp layernorm",
            "moe_act",
            "core_attn moe_act",
        ],
        (false, _) => &["core_attn layernorm", "moe_act", "core_attn moe_act"],
    };
    out.extend(
        sets.iter()
            .map(|s| (ended(item("recompute_modules", s)), c)),
    );
    out
}

/// How the data-parallel replicas share the model state, as one choice: the distributed
/// optimizer on (ZeRO-1), and off unless the plan overlaps the parameter gather, which needs it
/// (megatron/training/arguments.py:1025-1027, D01); then Megatron-FSDP's ZeRO-2 and ZeRO-3
/// ([`AUTO_FSDP`], `--use-megatron-fsdp --data-parallel-sharding-strategy`), written with the
/// distributed optimizer on, as Megatron-FSDP v1 runs it (arguments.py:1128-1136). One row,
/// not two, so that FSDP is not tried again with the optimizer off (the same plan). What the
/// plan writes stays: a written `distributed_optimizer` leaves only the FSDP choices (and
/// DDP), a written `fsdp` only the optimizer's. Torch FSDP2 refuses pipelines and tied
/// embeddings (E0320) and is left to plans that write it.
fn dp_sharding_values(cx: &AutoCx, c: Chosen) -> Vec<Choice> {
    let mut out = Vec::new();
    if cx.distributed_optimizer_written {
        out.push((String::new(), c));
    } else {
        out.push((item("distributed_optimizer", on_off(true)), c));
        if !cx.param_gather_overlapped {
            out.push((item("distributed_optimizer", on_off(false)), c));
        }
    }
    if !cx.fsdp_written {
        let optimizer = if cx.distributed_optimizer_written {
            String::new()
        } else {
            format!("{} ", item("distributed_optimizer", on_off(true)))
        };
        for strategy in AUTO_FSDP {
            out.push((format!("{optimizer}fsdp {strategy} megatron"), c));
        }
    }
    out
}

/// overlap_ep_comm (MoE models only): off, and on. Megatron runs the overlap only with
/// expert parallelism, on the interleaved schedule or without a pipeline, without full
/// recompute (transformer_config.py:3002-3041, combined_1f1b.py); the validator decides that per candidate
/// (`Flags::overlap_ep_comm` is the effective flag, W0015 otherwise), and a candidate whose
/// overlap does not run is the plan without it, counted as a duplicate.
fn ep_overlap_values(_: &AutoCx, c: Chosen) -> Vec<Choice> {
    vec![
        (String::new(), c),
        (item("overlap_ep_comm", on_off(true)), c),
    ]
}

/// The generated axes: the rows up to the last dependent one as one combined axis (named by
/// its rows joined with `+`), each later row as an axis of its own.
pub fn axes(cx: &AutoCx) -> Vec<Axis> {
    let rows: Vec<&Row> = ROWS.iter().filter(|r| (r.applies)(cx)).collect();
    let joined = rows.iter().rposition(|r| r.dependent).map_or(0, |i| i + 1);
    let mut out = Vec::new();
    if joined > 0 {
        let group = &rows[..joined];
        let name = group.iter().map(|r| r.name).collect::<Vec<_>>().join("+");
        out.push(axis(name, expand(cx, group)));
    }
    for row in &rows[joined..] {
        let values = (row.values)(cx, Chosen::default())
            .into_iter()
            .map(|(items, _)| items)
            .collect();
        out.push(axis(row.name.to_string(), values));
    }
    out
}

/// Every path through `rows`, each row's values given the sizes the earlier rows chose.
fn expand(cx: &AutoCx, rows: &[&Row]) -> Vec<String> {
    let mut paths: Vec<(String, Chosen)> = vec![(String::new(), Chosen::default())];
    for row in rows {
        let mut next = Vec::new();
        for (text, chosen) in &paths {
            for (items, after) in (row.values)(cx, *chosen) {
                next.push((join(text, &items), after));
            }
        }
        paths = next;
    }
    paths.into_iter().map(|(text, _)| text).collect()
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (_, true) => a.to_string(),
        (true, false) => b.to_string(),
        (false, false) => format!("{a} {b}"),
    }
}

fn axis(name: String, values: Vec<String>) -> Axis {
    Axis {
        name,
        values: values
            .into_iter()
            .map(|items| AxisValue {
                label: items.split_whitespace().collect::<Vec<_>>().join(" "),
                write: Write::Items(items),
            })
            .collect(),
    }
}
