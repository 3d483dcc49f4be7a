//! Design-space exploration: every candidate plan of a sweep, checked by the same rules as
//! `venusc check`, the valid ones simulated in parallel and ranked.
//!
//! Input: a [`Session`] with the sweep file loaded (plan items may hold lists such as
//! `tp [1 2 4 8]`; `--auto` generates the parallelism axes from the world size instead), and
//! [`SweepOptions`]. Output: [`prepare`] builds the candidate [`Space`]; [`run`] checks and
//! simulates the candidates of one [`Shard`] and returns an [`Outcome`] (the candidate
//! count, the pruned plans per diagnostic code, the simulated plans ranked); [`merge`]
//! combines shard outcomes into the outcome of the whole sweep; [`output`] renders it.
//!
//! Invariants: the outcome is a function of the file and the options alone — candidates are
//! numbered by the space, shards are residues of that number, and results are ordered by
//! (the [`Objective`]'s figure, peak memory, candidate number), so thread timing and sharding
//! never change it. A pruned candidate counts once, under the lowest-numbered error code it has
//! (E03xx rules before E0401 memory, which includes the `--headroom`), so the counts add up to
//! the candidates; a plan equal to a lower-numbered candidate's counts as [`DUPLICATE`].

pub mod auto;
pub mod bound;
pub mod output;
pub mod space;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::diag::{Code, Diagnostic, FileId};
use crate::plan::{self, Scenario};
use crate::ty::{Bytes, FlopsPerSec, Ratio, ScenarioDef, Seconds};
use crate::Session;

pub use auto::AutoOptions;
pub use space::{Axis, Space, TextLayout};

/// How to build the sweep.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SweepOptions {
    /// The scenario to sweep when the file has several.
    pub scenario: Option<String>,
    /// Generate the parallelism axes from the world size (`--auto`).
    pub auto: Option<AutoOptions>,
    /// The share of each GPU's memory a plan must leave free (`--headroom`): a plan whose
    /// largest stage peak plus the plan's `reserve` exceeds (1 − headroom) × the GPU's memory
    /// is pruned under E0401 before it is simulated.
    pub headroom: Ratio,
    /// What the ranking orders by (`--objective`).
    pub objective: Objective,
    /// `--prune --top K`: simulate only the plans that can rank among the best K (by the
    /// [`bound`] of each objective, best bound first) and list those K; `None` simulates every
    /// valid plan and lists them all.
    pub prune: Option<u64>,
}

/// What a sweep ranks by. Every objective breaks ties by peak memory, then candidate number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Objective {
    /// Iteration time, shortest first.
    #[default]
    Time,
    /// Tokens per second per GPU, most first: the time to train a token budget.
    Throughput,
    /// GPU-seconds per token, fewest first: the GPU-hours a token budget costs.
    GpuHours,
    /// Model FLOPs utilization, highest first.
    Mfu,
    /// Tokens per second per GPU times goodput (the cluster's failure rates and checkpoint
    /// storage, `plan::goodput`), most first: the time to train a token budget, interruptions
    /// included. Without failure inputs the goodput is 1 and this ranks as `throughput`.
    Goodput,
    /// The time to train the scenario's `train < tokens ... >` budget, shortest first.
    TimeToTrain,
    /// What that budget costs at the `train` block's `price`, cheapest first.
    Cost,
}

impl Objective {
    pub fn word(self) -> &'static str {
        match self {
            Objective::Time => "time",
            Objective::Throughput => "throughput",
            Objective::GpuHours => "gpu-hours",
            Objective::Mfu => "mfu",
            Objective::Goodput => "goodput",
            Objective::TimeToTrain => "time-to-train",
            Objective::Cost => "cost",
        }
    }

    /// What the scenario must state for this objective to rank by: `None` when it has it.
    pub fn needs(self, sc: &ScenarioDef) -> Option<&'static str> {
        let train = &sc.train;
        match self {
            Objective::TimeToTrain if train.tokens.is_none() => Some("a token budget"),
            Objective::Cost if train.tokens.is_none() || train.price.is_none() => {
                Some("a token budget and a price")
            }
            _ => None,
        }
    }

    /// The figure ranked, lower is better.
    fn cost(self, r: &Ranked) -> f64 {
        match self {
            Objective::Time => r.iteration_time_ms,
            Objective::Throughput => -r.tokens_per_second_per_gpu,
            Objective::GpuHours => r.gpu_seconds_per_token(),
            Objective::Mfu => -r.mfu,
            Objective::Goodput => -r.effective_tokens_per_second_per_gpu(),
            Objective::TimeToTrain => r.train_seconds.unwrap_or(f64::INFINITY),
            Objective::Cost => r.cost_dollars.unwrap_or(f64::INFINITY),
        }
    }
}

/// A prepared sweep: the space and what identifies it.
#[derive(Clone, Debug)]
pub struct Sweep {
    pub space: Space,
    pub path: PathBuf,
    pub root: FileId,
    pub scenario: Option<String>,
    /// The scenario's name (for messages).
    pub scenario_name: String,
    /// The memory a plan must leave free ([`SweepOptions::headroom`]).
    pub headroom: Ratio,
    pub objective: Objective,
    /// The best K a pruned sweep keeps ([`SweepOptions::prune`]).
    pub prune: Option<u64>,
    /// GPUs in the cluster.
    pub world: u64,
    /// Identifies the file and options, so shards of different sweeps do not merge.
    pub fingerprint: String,
    original: String,
    /// What preparing the space cost.
    pub work: PrepareWork,
}

/// The typing passes [`prepare`] ran and the bytes of text they typed: two over the file with
/// every list at its first element, then one per further list element that cannot be typed on
/// its own, each over the file without its lists, so the work grows linearly with a list.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrepareWork {
    pub passes: u64,
    pub bytes: u64,
    /// List elements typed on their own, without a pass over the file.
    pub alone: u64,
}

/// Why a sweep cannot start.
#[derive(Clone, Debug, PartialEq)]
pub enum PrepareError {
    /// Errors in the file as written (every element of every list checked): render them
    /// against the session's sources.
    Diagnostics(Vec<Diagnostic>),
    /// A problem with the request rather than the file.
    Usage(String),
}

/// Builds the candidate space of the file `root` (loaded at `path` in `session`).
///
/// The file is first typed with every list at its first element (and, under `--auto`,
/// placeholder parallelism items), then once per further list element, so a typo in any
/// element is reported against the file rather than pruned. The session's copy of the file
/// is restored before returning, so diagnostics render against the text as written.
pub fn prepare(
    session: &mut Session,
    path: &Path,
    root: FileId,
    opts: &SweepOptions,
) -> Result<Sweep, PrepareError> {
    let original = session.db().file_text(root).to_string();
    let mut work = PrepareWork::default();
    let result = prepare_space(session, path, root, &original, opts, &mut work);
    session.db_mut().set_file(path, original.as_bytes());
    let (space, def) = result?;
    Ok(Sweep {
        space,
        path: path.to_path_buf(),
        root,
        scenario: opts.scenario.clone(),
        scenario_name: def.name.clone(),
        headroom: opts.headroom,
        objective: opts.objective,
        prune: opts.prune,
        world: def.cluster.world_size(),
        fingerprint: fingerprint(&original, opts),
        original,
        work,
    })
}

/// The diagnostics `venusc check` (and the editor) report for the root file `root`: its
/// `checked` diagnostics as they are, unless the file is a sweep (lists in plan items). A sweep
/// file is checked as `venusc sweep` prepares it: the "lists are only allowed in `venusc
/// sweep`" E0201 at each plan list goes, and the errors of the lists' elements (every element
/// of every list typed in the list's place) come instead. Plan rules that read a swept key
/// were already skipped (the key failed to type), so the rules left hold for every candidate.
/// The session's text of `root` is left as it was.
pub fn check_diagnostics(
    session: &mut Session,
    path: &Path,
    root: FileId,
    checked: &crate::session::Checked,
) -> Vec<Diagnostic> {
    let text = session.db().file_text(root).to_string();
    let parsed = crate::syntax::parse(&text, root);
    let sites = space::Sites::find(&parsed.file, &text);
    if sites.lists.is_empty() {
        return checked.diagnostics.clone();
    }
    let list_spans: Vec<crate::diag::Span> = sites.lists.iter().map(|l| l.list).collect();
    let mut out: Vec<Diagnostic> = checked
        .diagnostics
        .iter()
        .filter(|d| {
            !(d.code == Code::E0201
                && d.primary.loc.file == root
                && list_spans.contains(&d.primary.loc.span))
        })
        .cloned()
        .collect();
    // Each scenario is prepared as `venusc sweep --scenario NAME` would (a file without
    // `scenario` blocks has its one implicit scenario): the lists of every plan a scenario uses
    // are typed element by element. Only the file's errors count here; "which scenario" is a
    // question for `sweep`, not a problem of the file.
    let names: Vec<Option<String>> = match checked.program.scenario_names.as_slice() {
        [] => vec![None],
        named => named.iter().map(|(n, _)| Some(n.clone())).collect(),
    };
    for scenario in names {
        let opts = SweepOptions {
            scenario,
            ..SweepOptions::default()
        };
        if let Err(PrepareError::Diagnostics(ds)) = prepare(session, path, root, &opts) {
            for d in ds.into_iter().filter(|d| d.code != Code::E0108) {
                if !out.contains(&d) {
                    out.push(d);
                }
            }
        }
    }
    crate::resolve::sort_diagnostics(&mut out);
    out
}

fn prepare_space(
    session: &mut Session,
    path: &Path,
    root: FileId,
    text: &str,
    opts: &SweepOptions,
    work: &mut PrepareWork,
) -> Result<(Space, ScenarioDef), PrepareError> {
    let parsed = crate::syntax::parse(text, root);
    let sites = space::Sites::find(&parsed.file, text);
    let misplaced = sites.errors(root);
    if !misplaced.is_empty() {
        return Err(PrepareError::Diagnostics(misplaced));
    }
    let mut draft = space::Draft::new(text, sites);
    let scenario = opts.scenario.as_deref();
    if opts.auto.is_some() {
        // Which plan the scenario uses is known only once typed: rewrite every plan first.
        draft.auto_all();
    }
    let (def, map) = typed(session, path, root, &draft, &|_| 0, scenario, work)?;
    if opts.auto.is_some()
        && (def.plan.loc.file != root
            || draft.auto_at(map.to_original(def.plan.loc.span)).is_none())
    {
        return Err(PrepareError::Usage(format!(
            "`--auto` rewrites the plan of scenario `{}`, which must be written in `{}`",
            def.name,
            path.display()
        )));
    }
    draft.keep_used(&def, root, &map);
    let (def, map) = typed(session, path, root, &draft, &|_| 0, scenario, work)?;
    if let Some(missing) = opts.objective.needs(&def) {
        let mut at = def.loc;
        if at.file == root {
            at.span = map.to_original(at.span);
        }
        let d = objective_needs_train(&def, at, opts.objective, missing, text);
        return Err(PrepareError::Diagnostics(vec![d]));
    }
    let lists: Vec<(usize, space::ListSite)> = draft
        .axis_lists()
        .into_iter()
        .map(|(i, l)| (i, l.clone()))
        .collect();
    for (list, site) in &lists {
        for k in 1..site.elements.len() {
            if types_alone(site, k, root) {
                work.alone += 1;
                continue;
            }
            let list = *list;
            let choice = move |i: usize| if i == list { k } else { 0 };
            typed(session, path, root, &draft, &choice, scenario, work)?;
        }
    }
    let auto = opts.auto.map(|a| auto::axes(&auto::AutoCx::of(&def, a)));
    let space = draft.finish(auto).map_err(PrepareError::Usage)?;
    Ok((space, def))
}

/// E0713: `--objective time-to-train` or `cost` on a scenario whose `train` block does not
/// state what the objective is computed from. The help writes the missing items.
fn objective_needs_train(
    def: &ScenarioDef,
    at: crate::diag::Loc,
    objective: Objective,
    missing: &str,
    text: &str,
) -> Diagnostic {
    let has_tokens = def.train.tokens.is_some();
    // The scenario's span in the file as written.
    let (start, end) = (at.span.start as usize, at.span.end as usize);
    let written = text
        .get(start..end)
        .is_some_and(|t| t.trim_start().starts_with("scenario"));
    let help = if has_tokens {
        format!(
            "add `price 2.5` (US dollars per GPU-hour) to the `train` block of scenario `{}`",
            def.name
        )
    } else if written {
        let price = if objective == Objective::Cost {
            " price 2.5"
        } else {
            ""
        };
        format!(
            "add `train < tokens 15T{price} >` (the tokens to train on) to scenario `{}`",
            def.name
        )
    } else {
        "name the scenario to give it a budget: `scenario s < model M cluster C plan P train < tokens 15T price 2.5 > >`"
            .to_string()
    };
    Diagnostic::new(
        Code::E0713,
        format!(
            "`--objective {}` needs {missing}, which scenario `{}` does not state",
            objective.word(),
            def.name
        ),
        at,
        format!("no `train` {missing} here"),
    )
    .with_help(help)
}

/// Whether element `k` of `site` types as its key's argument on its own, which for a number
/// or quantity is all the type checker does with it (`ty::check` types a plan item's value
/// arguments one by one with `value::typed`, after an arity check the list's element passes
/// as the list did): the file with that element then types exactly as with the first, which
/// passed. Names (which the parser may read as items of their own), flags and references go
/// through a whole typing pass, as does an element that fails, for the file's diagnostics.
fn types_alone(site: &space::ListSite, k: usize, root: FileId) -> bool {
    use crate::syntax::ast::{DefKind, ValueKind};
    use crate::syntax::schema::{self, ArgType, BlockKind};
    let Some(sig) = schema::lookup(BlockKind::Def(DefKind::Plan), &site.key) else {
        return false;
    };
    let Some(&ty) = sig.args.get(site.arg) else {
        return false;
    };
    if sig.is_flag() || matches!(ty, ArgType::Ref(_) | ArgType::Nested(_)) {
        return false;
    }
    let (Some(value), Some((text, _))) = (site.values.get(k), site.elements.get(k)) else {
        return false;
    };
    if !matches!(
        value.kind,
        ValueKind::Number(_) | ValueKind::Quantity { .. }
    ) {
        return false;
    }
    let cx = crate::ty::value::ValueCtx {
        loc: crate::diag::Loc::new(root, value.span),
        text,
        key: sig.key,
        allow_zero: sig.allow_zero,
    };
    crate::ty::value::typed(ty, value, &cx).is_ok()
}

/// Types the probe `choice` makes of the root file: its scenario (and the probe's span map),
/// or the front end's errors, located in the file as written.
fn typed(
    session: &mut Session,
    path: &Path,
    root: FileId,
    draft: &space::Draft,
    choice: &dyn Fn(usize) -> usize,
    scenario: Option<&str>,
    work: &mut PrepareWork,
) -> Result<(ScenarioDef, space::SpanMap), PrepareError> {
    let space::Probe { text, map } = draft.probe(choice);
    work.passes += 1;
    work.bytes += text.len() as u64;
    session.db_mut().set_file(path, text.as_bytes());
    let program = session.db().program(root);
    let errors: Vec<Diagnostic> = program
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            let mut d = d.clone();
            for label in std::iter::once(&mut d.primary).chain(d.secondary.iter_mut()) {
                if label.loc.file == root {
                    label.loc.span = map.to_original(label.loc.span);
                }
            }
            d
        })
        .collect();
    if !errors.is_empty() {
        return Err(PrepareError::Diagnostics(errors));
    }
    match program.select_scenario(scenario) {
        Ok(def) => Ok((def.clone(), map)),
        Err(Some(d)) => Err(PrepareError::Diagnostics(vec![d])),
        Err(None) => Err(PrepareError::Usage(
            "the file has no scenario to sweep".into(),
        )),
    }
}

/// FNV-1a (64 bits): stable across builds and machines, unlike `std`'s hasher.
fn fingerprint(text: &str, opts: &SweepOptions) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let auto = match opts.auto {
        None => "lists".to_string(),
        Some(a) => format!("auto cross_node_tp={}", a.allow_cross_node_tp),
    };
    // The headroom decides which plans are pruned; the objective only orders the results,
    // which `--merge` does again, so shards ranked by another objective still merge.
    let headroom = format!("headroom={}", opts.headroom.0);
    // A pruned shard lists only its best K by its objective: only shards pruned alike merge.
    // An unpruned sweep hashes as it always did, so its shard files stay mergeable.
    let prune = opts.prune.map_or(String::new(), |k| {
        format!("prune={k} objective={}", opts.objective.word())
    });
    let parts = [
        env!("CARGO_PKG_VERSION"),
        text,
        opts.scenario.as_deref().unwrap_or(""),
        &auto,
        &headroom,
    ];
    let parts = parts
        .into_iter()
        .chain((!prune.is_empty()).then_some(prune.as_str()));
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// One of `count` slices of a sweep: the candidates whose number ≡ `index` − 1 (mod `count`).
/// Interleaving (rather than ranges) spreads the expensive plans evenly over the shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// 1-based.
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Parses `i/n` with 1 ≤ i ≤ n.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("`{text}` is not a shard: write `i/n` with 1 <= i <= n, as `3/16`");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || count == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    pub fn contains(self, candidate: u64) -> bool {
        candidate % self.count == self.index - 1
    }
}

/// Where a shard's outcome came from (absent in a whole sweep's outcome).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: u64,
    pub count: u64,
    /// Candidates of the whole sweep.
    pub total_candidates: u64,
    pub fingerprint: String,
}

/// The plan of a simulated candidate, as Megatron derives it: every key `--auto` sweeps, and
/// the element of each list axis of a key it has no field for (`settings`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PlanSummary {
    pub tp: u64,
    pub pp: u64,
    pub cp: u64,
    pub ep: u64,
    pub dp: u64,
    pub vpp: u64,
    pub micro_batch: u64,
    pub global_batch: u64,
    pub microbatches: u64,
    /// `none` without pipelining, else `1f1b`, `gpipe` or `interleaved`.
    pub schedule: String,
    pub recompute: String,
    pub sp: bool,
    pub distributed_optimizer: bool,
    #[serde(default)]
    pub overlap_tp_comm: bool,
    /// Decoder layers on the first, each middle and the last pipeline stage.
    #[serde(default)]
    pub first_stage_layers: u64,
    #[serde(default)]
    pub middle_stage_layers: u64,
    #[serde(default)]
    pub last_stage_layers: u64,
    /// `key → element` of the list axes whose key has no field above (`overlap_p2p → on`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, String>,
}

/// The plan keys [`PlanSummary`] has a field for: a list over any other key is shown in
/// `settings`.
pub const SUMMARY_KEYS: [&str; 15] = [
    "tp",
    "pp",
    "cp",
    "ep",
    "dp",
    "vpp",
    "micro_batch",
    "global_batch",
    "schedule",
    "recompute",
    "sp",
    "distributed_optimizer",
    "overlap_tp_comm",
    "first_stage_layers",
    "last_stage_layers",
];

impl PlanSummary {
    /// Whether the pipeline's stages hold different numbers of layers.
    pub fn is_uneven(&self) -> bool {
        self.first_stage_layers != self.middle_stage_layers
            || self.last_stage_layers != self.middle_stage_layers
    }

    /// The layer split: `4x20` (even), `15+6x16+15` (uneven), `62+64` (two stages).
    pub fn layout(&self) -> String {
        let middles = self.pp.saturating_sub(2);
        if !self.is_uneven() {
            format!("{}x{}", self.pp, self.middle_stage_layers)
        } else if middles == 0 {
            format!("{}+{}", self.first_stage_layers, self.last_stage_layers)
        } else {
            format!(
                "{}+{}x{}+{}",
                self.first_stage_layers, middles, self.middle_stage_layers, self.last_stage_layers
            )
        }
    }

    /// The summary of candidate `candidate` of `space`, validated as `sc`.
    pub fn of_candidate(sc: &Scenario, space: &Space, candidate: u64) -> PlanSummary {
        let mut p = PlanSummary::of(sc);
        for (key, label) in space.list_choices(candidate) {
            if !SUMMARY_KEYS.contains(&key) {
                p.settings.insert(key.to_string(), label.to_string());
            }
        }
        p
    }

    pub fn of(sc: &Scenario) -> PlanSummary {
        PlanSummary {
            tp: sc.tp,
            pp: sc.pp,
            cp: sc.cp,
            ep: sc.ep,
            dp: sc.dp,
            vpp: sc.vpp,
            micro_batch: sc.micro_batch,
            global_batch: sc.global_batch,
            microbatches: sc.microbatches,
            schedule: sc.schedule.map_or("none", |s| s.word()).to_string(),
            recompute: sc.recompute.word().to_string(),
            sp: sc.sp,
            distributed_optimizer: sc.flags.distributed_optimizer,
            overlap_tp_comm: sc.flags.overlap_tp_comm,
            // A layout or accounting may vary the middle stages: stage 1 stands for them.
            first_stage_layers: sc.split.layers(0),
            middle_stage_layers: if sc.pp > 2 {
                sc.split.layers(1)
            } else {
                sc.split.layers(0)
            },
            last_stage_layers: sc.split.layers(sc.pp.saturating_sub(1)),
            settings: auto_settings(sc),
        }
    }
}

/// The `--auto` axes with no field of their own, so that a plan without them prints and
/// hashes as before: `fsdp → optim_grads_params` for a plan sharded by FSDP (nothing for
/// DDP), `overlap_ep_comm → on` where the EP overlap runs (the validator's effective flag:
/// a plan whose overlap Megatron would not run is the plan without it), and, where they
/// differ from Megatron's defaults and change the plan: `etp` (a MoE model's expert
/// tensor-parallel size other than tp), `moe_dispatcher` (allgather or flex), `cp_comm` (with
/// cp > 1: `a2a`, `allgather`, `a2a_p2p 2`) and `recompute_modules` (with selective
/// recompute, a set other than `core_attn`: `core_attn+mlp`).
fn auto_settings(sc: &Scenario) -> BTreeMap<String, String> {
    use crate::base::{CpComm, MoeDispatcher, RecomputeModules};
    let mut out = BTreeMap::new();
    if let Some(f) = sc.flags.fsdp {
        out.insert("fsdp".to_string(), f.word().to_string());
    }
    if sc.flags.overlap_ep_comm {
        out.insert("overlap_ep_comm".to_string(), "on".to_string());
    }
    if sc.model.is_moe() {
        if sc.etp != sc.tp {
            out.insert("etp".to_string(), sc.etp.to_string());
        }
        let dispatcher = sc.plan.moe_dispatcher();
        if dispatcher != MoeDispatcher::AllToAll {
            out.insert("moe_dispatcher".to_string(), dispatcher.word().to_string());
        }
    }
    if sc.cp > 1 {
        let comm = sc.plan.cp_comm();
        let word = match comm {
            CpComm::P2p => None,
            CpComm::A2aP2p => Some(format!("a2a_p2p {}", sc.plan.cp_a2a.unwrap_or(1))),
            other => Some(other.word().to_string()),
        };
        if let Some(word) = word {
            out.insert("cp_comm".to_string(), word);
        }
    }
    let modules = sc.plan.recompute_modules();
    if modules != RecomputeModules::default() && modules != RecomputeModules::CORE_ATTN {
        out.insert("recompute_modules".to_string(), modules.words().join("+"));
    }
    out
}

/// A simulated candidate. The figures are stored as written in the JSON (milliseconds,
/// TFLOP/s), so an outcome read back from a shard file ranks and prints exactly as the
/// outcome that wrote it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    /// The candidate's number in the space (`--emit-best` renders it again from it).
    pub candidate: u64,
    pub plan: PlanSummary,
    iteration_time_ms: f64,
    tflops_per_gpu: f64,
    #[serde(default)]
    tokens_per_second_per_gpu: f64,
    #[serde(default)]
    mfu: f64,
    peak_memory_bytes: u64,
    /// The memory kept back beside the peak (`Scenario::reserve`): peak + reserve is what
    /// `venusc check` compares with the GPU's memory (0 in outcomes written before it was kept).
    #[serde(default)]
    reserve_bytes: u64,
    /// Useful training time over wall time (1 without failure inputs, and then not written).
    #[serde(default = "no_failures", skip_serializing_if = "is_no_failures")]
    goodput: f64,
    /// The scenario's `train` budget: its time to train in seconds, and its cost in US
    /// dollars with a `price`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    train_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost_dollars: Option<f64>,
}

fn no_failures() -> f64 {
    1.0
}

fn is_no_failures(g: &f64) -> bool {
    *g == 1.0
}

/// What a simulation measured of one candidate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    pub iteration_time: Seconds,
    pub per_gpu: FlopsPerSec,
    /// Tokens per second per GPU.
    pub tokens_per_gpu: f64,
    pub mfu: Ratio,
    pub peak: Bytes,
    /// The plan's memory reserve beside the peak.
    pub reserve: Bytes,
    /// Time to train the `train` block's tokens, and its cost with a price.
    pub train_time: Option<Seconds>,
    pub cost: Option<crate::base::units::Dollars>,
}

impl Ranked {
    pub fn new(candidate: u64, plan: PlanSummary, f: Figures) -> Ranked {
        Ranked {
            candidate,
            plan,
            iteration_time_ms: f.iteration_time.0 * 1e3,
            tflops_per_gpu: f.per_gpu.0 / 1e12,
            tokens_per_second_per_gpu: f.tokens_per_gpu,
            mfu: f.mfu.0,
            peak_memory_bytes: f.peak.0,
            reserve_bytes: f.reserve.0,
            goodput: no_failures(),
            train_seconds: f.train_time.map(|t| t.0),
            cost_dollars: f.cost.map(|c| c.0),
        }
    }
    /// The candidate with the goodput its report gives (`None`: no failure inputs, 1).
    pub fn with_goodput(mut self, goodput: Option<Ratio>) -> Ranked {
        self.goodput = goodput.map_or(no_failures(), |g| g.0);
        self
    }
    /// Useful training time over wall time.
    pub fn goodput(&self) -> Ratio {
        Ratio(self.goodput)
    }
    /// Tokens per second per GPU over wall time, interruptions included.
    pub fn effective_tokens_per_second_per_gpu(&self) -> f64 {
        self.tokens_per_second_per_gpu * self.goodput
    }
    /// The time to train the scenario's token budget, when it states one.
    pub fn train_time(&self) -> Option<Seconds> {
        self.train_seconds.map(Seconds)
    }
    /// What training the budget costs, when the scenario states a price.
    pub fn train_cost(&self) -> Option<f64> {
        self.cost_dollars
    }
    /// Tokens per second per GPU.
    pub fn tokens_per_second_per_gpu(&self) -> f64 {
        self.tokens_per_second_per_gpu
    }
    /// GPU-seconds per token (infinite for a plan that trains no token).
    pub fn gpu_seconds_per_token(&self) -> f64 {
        if self.tokens_per_second_per_gpu > 0.0 {
            1.0 / self.tokens_per_second_per_gpu
        } else {
            f64::INFINITY
        }
    }
    pub fn mfu(&self) -> Ratio {
        Ratio(self.mfu)
    }
    pub fn iteration_time(&self) -> Seconds {
        Seconds(self.iteration_time_ms / 1e3)
    }
    /// The iteration time in milliseconds exactly as ranked and written.
    pub fn iteration_time_ms(&self) -> f64 {
        self.iteration_time_ms
    }
    pub fn per_gpu(&self) -> FlopsPerSec {
        FlopsPerSec(self.tflops_per_gpu * 1e12)
    }
    pub fn peak_memory(&self) -> Bytes {
        Bytes(self.peak_memory_bytes)
    }
    /// The memory kept back beside the peak (CUDA context, NCCL buffers, fragmentation).
    pub fn reserve(&self) -> Bytes {
        Bytes(self.reserve_bytes)
    }
    /// Peak plus reserve: what `venusc check` (E0401) compares with the GPU's memory.
    pub fn peak_with_reserve(&self) -> Bytes {
        Bytes(self.peak_memory_bytes.saturating_add(self.reserve_bytes))
    }

    /// Better under `objective` first; less memory breaks ties, then the candidate number.
    fn rank_cmp(&self, other: &Ranked, objective: Objective) -> std::cmp::Ordering {
        objective
            .cost(self)
            .total_cmp(&objective.cost(other))
            .then(self.peak_memory_bytes.cmp(&other.peak_memory_bytes))
            .then(self.candidate.cmp(&other.candidate))
    }
}

/// Key of a candidate that passed every rule but whose simulation failed (an engine limit).
pub const SIMULATION_FAILED: &str = "simulation";

/// Key of a valid candidate a pruned sweep (`--prune`) does not list: its bound showed it
/// cannot rank among the best K, or it ranked below them, or (as [`DUPLICATE`] counts in an
/// unpruned sweep) a listed candidate has its plan.
pub const BOUND: &str = "bound";

/// Key of a candidate whose plan is the plan of a lower-numbered candidate (`sp [on off]` with
/// tp 1, a value listed twice): it is counted here, and only the lower number is listed.
pub const DUPLICATE: &str = "duplicate";

/// Why a candidate is not among a sweep's results: the lowest error code it has, or one of the
/// sweep's own reasons. Written in a shard file as its text (`E0401`, [`BOUND`], [`DUPLICATE`],
/// [`SIMULATION_FAILED`]), so the file format is that of plain strings; a shard naming
/// anything else does not parse (`sweep --merge` reports it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PruneKey {
    /// Pruned by a check: its lowest error code.
    Code(Code),
    /// Valid, but not among a pruned sweep's best K.
    Bound,
    /// Valid, with the plan of a lower-numbered candidate.
    Duplicate,
    /// Valid, but the engine failed without a code of its own.
    SimulationFailed,
}

impl PruneKey {
    /// The key as a shard file and the summary write it.
    pub fn as_str(self) -> &'static str {
        match self {
            PruneKey::Code(c) => c.as_str(),
            PruneKey::Bound => BOUND,
            PruneKey::Duplicate => DUPLICATE,
            PruneKey::SimulationFailed => SIMULATION_FAILED,
        }
    }

    /// The key a shard file's text names, if any.
    pub fn parse(text: &str) -> Option<PruneKey> {
        match text {
            BOUND => Some(PruneKey::Bound),
            DUPLICATE => Some(PruneKey::Duplicate),
            SIMULATION_FAILED => Some(PruneKey::SimulationFailed),
            _ => Code::parse(text).map(PruneKey::Code),
        }
    }

    /// A code as its key; an engine failure without one as [`PruneKey::SimulationFailed`].
    fn of_failure(code: Option<Code>) -> PruneKey {
        code.map_or(PruneKey::SimulationFailed, PruneKey::Code)
    }
}

/// Ordered by text, so a map of keys iterates (and a shard file lists them) as the strings
/// did: the codes first, then `bound`, `duplicate`, `simulation`.
impl Ord for PruneKey {
    fn cmp(&self, other: &PruneKey) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl PartialOrd for PruneKey {
    fn partial_cmp(&self, other: &PruneKey) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for PruneKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PruneKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PruneKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PruneKey, D::Error> {
        let text = String::deserialize(d)?;
        PruneKey::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "`{}` is not a prune key (an error code, `{BOUND}`, `{DUPLICATE}` or \
                 `{SIMULATION_FAILED}`)",
                short(&text)
            ))
        })
    }
}

/// What a sweep (or one shard of it) found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The swept scenario.
    pub scenario: String,
    /// GPUs in its cluster.
    pub world_size: u64,
    /// Candidates covered (the shard's share for a shard).
    pub candidates: u64,
    /// Pruned candidates per diagnostic code (each once, under its lowest error code).
    pub pruned: BTreeMap<PruneKey, u64>,
    /// The simulated candidates, best first.
    pub results: Vec<Ranked>,
    /// What `results` are ordered by.
    #[serde(default)]
    pub objective: Objective,
    /// The share of GPU memory the plans had to leave free (0 to 1).
    #[serde(default)]
    pub headroom: f64,
    /// A pruned sweep's K (`--prune --top K`): `results` are its best K plans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
}

impl Outcome {
    /// Orders the results by `objective` (ties by peak memory, then candidate number).
    pub fn rank_by(&mut self, objective: Objective) {
        self.objective = objective;
        self.results.sort_by(|a, b| a.rank_cmp(b, objective));
    }

    /// Drops every result whose plan an earlier-numbered result has, counting it under
    /// [`DUPLICATE`], then ranks. The survivor of equal plans is the lowest candidate number
    /// whatever the objective or the sharding, so a merge keeps the same ones a whole run does.
    fn finish(&mut self, objective: Objective) {
        self.results.sort_by_key(|r| r.candidate);
        let mut seen = std::collections::HashSet::new();
        let before = self.results.len();
        self.results.retain(|r| seen.insert(r.plan.clone()));
        let dropped = (before - self.results.len()) as u64;
        if dropped > 0 {
            let n = self.pruned.entry(PruneKey::Duplicate).or_default();
            *n = n.saturating_add(dropped);
        }
        self.rank_by(objective);
        if let Some(keep) = self.kept {
            self.keep_best(keep);
        }
    }

    /// A pruned sweep lists its best `keep` plans and counts every other valid candidate
    /// under [`BOUND`], duplicates included: which of them were simulated depends on the
    /// sharding, what the best K are does not, so a merge equals the whole sweep.
    fn keep_best(&mut self, keep: u64) {
        let keep = usize::try_from(keep).unwrap_or(usize::MAX);
        let below = self.results.len().saturating_sub(keep) as u64;
        self.results.truncate(keep);
        let duplicates = self.pruned.remove(&PruneKey::Duplicate).unwrap_or(0);
        let n = below.saturating_add(duplicates);
        if n > 0 {
            let e = self.pruned.entry(PruneKey::Bound).or_default();
            *e = e.saturating_add(n);
        }
    }

    /// The pruned candidates over every code, saturating: a shard's counts are untrusted
    /// (`sweep --merge` compares the total with the candidates, so a saturated sum fails
    /// that check instead of overflowing).
    pub fn pruned_total(&self) -> u64 {
        self.pruned
            .values()
            .fold(0u64, |total, &n| total.saturating_add(n))
    }

    /// The indexes (into `results`) of the Pareto front of the objective (iteration time by
    /// default) vs peak memory: the plans no other plan beats on one figure without losing on
    /// the other, best first. Among equal plans the first-ranked stands for them.
    pub fn pareto(&self) -> Vec<usize> {
        let mut front = Vec::new();
        let mut least = u64::MAX;
        for (i, r) in self.results.iter().enumerate() {
            if r.peak_memory_bytes < least {
                least = r.peak_memory_bytes;
                front.push(i);
            }
        }
        front
    }
}

/// Progress of a running sweep (a TTY progress bar in the CLI; nothing in tests).
pub trait Progress: Sync {
    /// A phase begins with `total` steps.
    fn start(&self, _phase: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
    fn finish(&self) {}
}

/// Reports nothing.
pub struct Silent;
impl Progress for Silent {}

/// Where the time of a run went (reported on stderr, never in the outcome).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    pub check: Seconds,
    pub simulate: Seconds,
    pub simulated: u64,
}

impl Timing {
    /// Simulated plans per second of wall time in the simulation phase.
    pub fn plans_per_second(&self) -> f64 {
        if self.simulate.0 > 0.0 {
            self.simulated as f64 / self.simulate.0
        } else {
            0.0
        }
    }
}

/// Checks every candidate of `shard` (all of them when `None`) and simulates the valid ones
/// on rayon's pool. The session's copy of the file is restored afterwards.
pub fn run(
    session: &mut Session,
    sweep: &Sweep,
    shard: Option<Shard>,
    progress: &dyn Progress,
) -> (Outcome, Timing) {
    let started = Instant::now();
    let mine: Vec<u64> = (0..sweep.space.len())
        .filter(|&c| shard.is_none_or(|s| s.contains(c)))
        .collect();
    progress.start("checking", mine.len() as u64);
    let mut pruned: BTreeMap<PruneKey, u64> = BTreeMap::new();
    let mut valid: Vec<(u64, Scenario, PlanSummary)> = Vec::new();
    // A plan equal to a lower-numbered candidate's is not simulated: `Outcome::finish` would
    // drop it under DUPLICATE after simulating it (an ignored flag, such as `overlap_ep_comm`
    // where it does not run, makes such plans).
    let mut plans = std::collections::HashSet::new();
    for (c, checked) in mine.iter().zip(check_all(session, sweep, &mine, progress)) {
        let c = *c;
        match checked {
            Ok(sc) => {
                let plan = PlanSummary::of_candidate(&sc, &sweep.space, c);
                if plans.insert(plan.clone()) {
                    valid.push((c, sc, plan));
                } else {
                    *pruned.entry(PruneKey::Duplicate).or_default() += 1;
                }
            }
            Err(code) => *pruned.entry(PruneKey::Code(code)).or_default() += 1,
        }
    }
    drop(plans);
    session
        .db_mut()
        .set_file(&sweep.path, sweep.original.as_bytes());
    let checked = Instant::now();
    progress.start("simulating", valid.len() as u64);
    let done = AtomicU64::new(0);
    let simulate_one = |(c, sc, plan): &(u64, Scenario, PlanSummary)| {
        let r = simulate_candidate(*c, sc, plan.clone());
        done.fetch_add(1, Ordering::Relaxed);
        progress.advance(1);
        r
    };
    let simulated: Vec<Result<Ranked, Option<Code>>> = match sweep.prune {
        None => valid.par_iter().map(simulate_one).collect(),
        Some(keep) => {
            let (simulated, skipped) = simulate_best(&valid, sweep.objective, keep, &simulate_one);
            progress.advance(skipped);
            if skipped > 0 {
                *pruned.entry(PruneKey::Bound).or_default() += skipped;
            }
            simulated
        }
    };
    progress.finish();
    let mut results = Vec::with_capacity(simulated.len());
    for r in simulated {
        match r {
            Ok(r) => results.push(r),
            // Over the trace budget (E0601) or past the engine's time range (E0602) counts
            // under its code; any other engine failure as a failed simulation.
            Err(code) => *pruned.entry(PruneKey::of_failure(code)).or_default() += 1,
        }
    }
    let timing = Timing {
        check: Seconds(checked.duration_since(started).as_secs_f64()),
        simulate: Seconds(checked.elapsed().as_secs_f64()),
        simulated: done.into_inner(),
    };
    let mut outcome = Outcome {
        scenario: sweep.scenario_name.clone(),
        world_size: sweep.world,
        candidates: mine.len() as u64,
        pruned,
        results,
        objective: sweep.objective,
        headroom: sweep.headroom.0,
        kept: sweep.prune,
        shard: shard.map(|s| ShardInfo {
            index: s.index,
            count: s.count,
            total_candidates: sweep.space.len(),
            fingerprint: sweep.fingerprint.clone(),
        }),
    };
    outcome.finish(sweep.objective);
    (outcome, timing)
}

/// Candidates one worker of [`check_all`] checks in a row on its own session: enough that a
/// session's first typing of the stdlib is a small share of it, few enough that the candidates
/// spread over the pool.
const CHECK_BATCH: usize = 512;

/// [`check_candidate`] of every candidate of `mine`, in that order, on rayon's pool: each
/// worker checks batches of candidates on a session of its own holding the same files (the
/// front end's queries are cached per session, and one session takes one text at a time).
/// The result of each candidate is its own, so the pool never changes it.
fn check_all(
    session: &mut Session,
    sweep: &Sweep,
    mine: &[u64],
    progress: &dyn Progress,
) -> Vec<Result<Scenario, Code>> {
    if mine.len() <= CHECK_BATCH || rayon::current_num_threads() < 2 {
        return mine
            .iter()
            .map(|&c| {
                let r = check_candidate(session, sweep, c);
                progress.advance(1);
                r
            })
            .collect();
    }
    let files = session_files(session);
    let batches: Vec<Vec<Result<Scenario, Code>>> = mine
        .par_chunks(CHECK_BATCH)
        .map_init(
            || session_of(&files),
            |worker, batch| {
                let out: Vec<Result<Scenario, Code>> = batch
                    .iter()
                    .map(|&c| check_candidate(worker, sweep, c))
                    .collect();
                progress.advance(batch.len() as u64);
                out
            },
        )
        .collect();
    batches.into_iter().flatten().collect()
}

/// The files a session holds besides the stdlib, in the order of their ids.
fn session_files(session: &Session) -> Vec<(PathBuf, String)> {
    let db = session.db();
    db.files()
        .into_iter()
        .filter(|&f| !db.is_stdlib(f))
        .map(|f| (PathBuf::from(db.file_name(f)), db.file_text(f).to_string()))
        .collect()
}

/// A session holding `files` under the same ids as the session they came from (ids are given
/// in loading order), so a candidate checks there as it does in the original.
fn session_of(files: &[(PathBuf, String)]) -> Session {
    let mut session = Session::new();
    for (path, text) in files {
        session.db_mut().set_file(path, text.as_bytes());
    }
    session
}

/// Candidates simulated between two updates of the K-th best figure in a pruned sweep: a fixed
/// number, not the thread count, so which plans are simulated depends only on the file and the
/// options. Large enough to keep a many-core pool busy; each batch can simulate at most this
/// many plans the next bound would have skipped.
const PRUNE_BATCH: usize = 32;

/// Simulates the candidates of `valid` that can rank among the best `keep` under
/// `objective`, in the order of their [`bound`] (best first, then candidate number), so the
/// K-th best figure tightens fast: a candidate whose bound is worse than the K-th best
/// simulated figure over distinct plans cannot be among the best K (its own figure is at
/// least its bound), and neither can any later one. Returns the simulations and how many
/// candidates were skipped.
fn simulate_best<F>(
    valid: &[(u64, Scenario, PlanSummary)],
    objective: Objective,
    keep: u64,
    simulate_one: &F,
) -> (Vec<Result<Ranked, Option<Code>>>, u64)
where
    F: Fn(&(u64, Scenario, PlanSummary)) -> Result<Ranked, Option<Code>> + Sync,
{
    let mut order: Vec<(f64, usize)> = valid
        .par_iter()
        .enumerate()
        .map(|(i, (_, sc, _))| {
            let time = bound::iteration_time_lower_bound(sc);
            (bound::objective_bound(objective, sc, time), i)
        })
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut best = KthBest::new(keep);
    let mut out = Vec::new();
    let mut next = 0;
    while next < order.len() {
        let threshold = best.threshold();
        let batch: Vec<usize> = order[next..]
            .iter()
            .take(PRUNE_BATCH)
            .take_while(|(b, _)| *b <= threshold)
            .map(|&(_, i)| i)
            .collect();
        if batch.is_empty() {
            break;
        }
        next += batch.len();
        let results: Vec<Result<Ranked, Option<Code>>> =
            batch.par_iter().map(|&i| simulate_one(&valid[i])).collect();
        for r in results.iter().flatten() {
            best.insert(r, objective);
        }
        out.extend(results);
    }
    (out, (order.len() - next) as u64)
}

/// The K-th best figure over the distinct plans simulated so far (+∞ until there are K).
struct KthBest {
    keep: usize,
    figures: std::collections::HashMap<PlanSummary, f64>,
}

impl KthBest {
    fn new(keep: u64) -> KthBest {
        KthBest {
            keep: usize::try_from(keep).unwrap_or(usize::MAX).max(1),
            figures: std::collections::HashMap::new(),
        }
    }

    fn insert(&mut self, r: &Ranked, objective: Objective) {
        let figure = objective.cost(r);
        let e = self.figures.entry(r.plan.clone()).or_insert(figure);
        *e = e.min(figure);
    }

    fn threshold(&self) -> f64 {
        if self.figures.len() < self.keep {
            return f64::INFINITY;
        }
        let mut all: Vec<f64> = self.figures.values().copied().collect();
        let (_, kth, _) = all.select_nth_unstable_by(self.keep - 1, f64::total_cmp);
        *kth
    }
}

/// Shards named in a "missing shards" error before the rest is counted.
const MAX_NAMED: usize = 8;

/// A name from a shard file, cut for an error message (the file is not trusted).
fn short(text: &str) -> String {
    let mut out: String = text.chars().take(64).flat_map(char::escape_debug).collect();
    if text.chars().count() > 64 {
        out.push('…');
    }
    out
}

/// `the best 10 plans` or `every plan`, for the merge's messages.
fn kept_text(kept: Option<u64>) -> String {
    kept.map_or("every plan".to_string(), |k| format!("the best {k} plans"))
}

/// Candidates of `0..total` that shard `index`/`count` owns: those ≡ `index` − 1 (mod `count`).
fn owned_by(total: u64, index: u64, count: u64) -> u64 {
    let first = index - 1;
    if first >= total {
        0
    } else {
        (total - first - 1) / count + 1
    }
}

/// What one shard claims, checked against the shard's place in the sweep: the candidates it
/// covers are exactly its share, every result is a candidate of its own, once over all shards,
/// with finite non-negative figures, and its results and pruned counts add up.
fn verify_shard(
    part: &Outcome,
    info: &ShardInfo,
    owned: &mut std::collections::HashSet<u64>,
) -> Result<(), String> {
    let name = format!("shard {}/{}", info.index, info.count);
    if !(0.0..1.0).contains(&part.headroom) {
        return Err(format!(
            "{name} claims a memory headroom of {}, not a share from 0 to 1",
            part.headroom
        ));
    }
    let share = owned_by(info.total_candidates, info.index, info.count);
    if part.candidates != share {
        return Err(format!(
            "{name} claims {} candidates, but owns {share} of the sweep's {}",
            part.candidates, info.total_candidates
        ));
    }
    let accounted = (part.results.len() as u64).saturating_add(part.pruned_total());
    if accounted != part.candidates {
        return Err(format!(
            "{name}: {} results and {} pruned do not add up to its {} candidates",
            part.results.len(),
            part.pruned_total(),
            part.candidates
        ));
    }
    for r in &part.results {
        let c = r.candidate;
        if c >= info.total_candidates {
            return Err(format!(
                "{name} has a result for candidate {c}, but the sweep has {} candidates",
                info.total_candidates
            ));
        }
        if c % info.count != info.index - 1 {
            return Err(format!(
                "{name} has a result for candidate {c}, which belongs to shard {}/{}",
                c % info.count + 1,
                info.count
            ));
        }
        if !owned.insert(c) {
            return Err(format!("{name} has candidate {c} twice"));
        }
        let figures = [
            r.iteration_time_ms,
            r.tflops_per_gpu,
            r.tokens_per_second_per_gpu,
            r.mfu,
        ];
        if figures.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err(format!(
                "{name}: candidate {c} has an iteration time of {} ms, {} TFLOP/s and {} tokens/s \
                 per GPU and an MFU of {}, not finite non-negative figures",
                r.iteration_time_ms, r.tflops_per_gpu, r.tokens_per_second_per_gpu, r.mfu
            ));
        }
    }
    Ok(())
}

/// Replaces what merged shards claim about each plan by what the sweep file says: every
/// result's candidate is checked again (as `run` does) and its plan derived from the space.
/// A result for a candidate the rules prune, or with another plan than its candidate's, is
/// an error.
pub fn verify_plans(session: &mut Session, sweep: &Sweep, outcome: &Outcome) -> Result<(), String> {
    let mut failure = None;
    for r in &outcome.results {
        match check_candidate(session, sweep, r.candidate) {
            Ok(sc) if PlanSummary::of_candidate(&sc, &sweep.space, r.candidate) == r.plan => {}
            Ok(sc) => {
                failure = Some(format!(
                    "the shards give candidate {} the plan {}, but it is {} in `{}`",
                    r.candidate,
                    summary_text(&r.plan),
                    summary_text(&PlanSummary::of_candidate(&sc, &sweep.space, r.candidate)),
                    sweep.path.display()
                ));
            }
            Err(code) => {
                failure = Some(format!(
                    "the shards rank candidate {}, which `{}` prunes ({code})",
                    r.candidate,
                    sweep.path.display()
                ));
            }
        }
        if failure.is_some() {
            break;
        }
    }
    session
        .db_mut()
        .set_file(&sweep.path, sweep.original.as_bytes());
    failure.map_or(Ok(()), Err)
}

/// The validated scenario of candidate `candidate` (`--emit-megatron` writes its flags), or
/// the lowest error code it has; the session's copy of the file is restored afterwards.
pub fn candidate_scenario(
    session: &mut Session,
    sweep: &Sweep,
    candidate: u64,
) -> Result<Scenario, Code> {
    let sc = if candidate < sweep.space.len() {
        check_candidate(session, sweep, candidate)
    } else {
        Err(Code::E0604)
    };
    session
        .db_mut()
        .set_file(&sweep.path, sweep.original.as_bytes());
    sc
}

/// `tp 8 pp 4 ... recompute full` (cut), for messages.
fn summary_text(p: &PlanSummary) -> String {
    format!(
        "`tp {} pp {} cp {} ep {} dp {} vpp {} micro_batch {} global_batch {} recompute {} sp {}`",
        p.tp,
        p.pp,
        p.cp,
        p.ep,
        p.dp,
        p.vpp,
        p.micro_batch,
        p.global_batch,
        short(&p.recompute),
        if p.sp { "on" } else { "off" }
    )
}

/// The candidate through the front end and `plan::validate`: its scenario, or the lowest
/// error code it has. A plan that fits the GPU but not the sweep's headroom is E0401 too.
pub fn check_candidate(
    session: &mut Session,
    sweep: &Sweep,
    candidate: u64,
) -> Result<Scenario, Code> {
    let text = sweep.space.render(candidate, TextLayout::Tidy);
    session.db_mut().set_file(&sweep.path, text.as_bytes());
    let program = session.db().program(sweep.root);
    if let Some(code) = lowest_error(&program.diagnostics) {
        return Err(code);
    }
    let def = program
        .select_scenario(sweep.scenario.as_deref())
        .map_err(|d| d.map_or(Code::E0108, |d| d.code))?;
    let (sc, diagnostics) = plan::validate(def);
    match (sc, lowest_error(&diagnostics)) {
        (_, Some(code)) => Err(code),
        (Some(sc), None) if fits_headroom(&sc, sweep.headroom) => Ok(sc),
        (Some(_), None) => Err(Code::E0401),
        (None, None) => Err(Code::E0108),
    }
}

/// Whether the largest stage's peak plus the plan's `reserve` leaves `headroom` of the GPU's
/// memory free: E0401's own test (validate/memory.rs) against (1 − headroom) × the memory. The
/// peak is the one the simulation reports (`report.memory` is `Scenario::memory`), so this
/// prunes no plan the ranking would list (the sweep tests compare with an exhaustive run).
pub fn fits_headroom(sc: &Scenario, headroom: Ratio) -> bool {
    let Some(worst) = plan::memory::worst(&sc.memory) else {
        return true;
    };
    let need = worst.peak.0.saturating_add(sc.reserve().0 .0);
    need as f64 <= sc.cluster.gpu.memory.0 as f64 * (1.0 - headroom.0)
}

fn lowest_error(diagnostics: &[Diagnostic]) -> Option<Code> {
    diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.code)
        .min()
}

/// Simulates a valid candidate as `venusc sim` does (same lowering, engine options and window,
/// so `--emit-best` reproduces the figure), building only the figures the ranking reads
/// (`simulate::headline`: no per-rank attribution); a failure's code, when it has one.
fn simulate_candidate(
    candidate: u64,
    sc: &Scenario,
    plan: PlanSummary,
) -> Result<Ranked, Option<Code>> {
    let headline = crate::simulate::headline(sc).map_err(|e| e.code())?;
    let goodput = headline.goodput.as_ref().map(|g| g.model.goodput);
    Ok(Ranked::new(candidate, plan, figures(sc, &headline)).with_goodput(goodput))
}

/// The figures of a candidate's simulation. The peak is the largest stage peak of the memory
/// model, the report's `peak_stage` (its memory rows are `sc.memory`'s).
fn figures(sc: &Scenario, h: &crate::report::Headline) -> Figures {
    Figures {
        iteration_time: h.iteration_time,
        per_gpu: h.tflops_per_gpu,
        tokens_per_gpu: h.tokens_per_second.0 / sc.world.max(1) as f64,
        mfu: h.mfu,
        peak: sc.memory.iter().map(|m| m.peak).max().unwrap_or(Bytes(0)),
        reserve: sc.reserve().0,
        train_time: h.train.map(|t| t.time),
        cost: h.train.and_then(|t| t.cost),
    }
}

/// The iterations the scenario's `train` budget takes (`TrainCost::of`): `None` without a
/// budget or with an iteration of no token.
pub fn train_iterations(sc: &Scenario) -> Option<f64> {
    let tokens = sc.train.tokens?;
    let per_iteration = sc.global_batch.saturating_mul(sc.model.seq);
    (per_iteration > 0).then(|| (tokens / per_iteration) as f64)
}

/// Combines the outcomes of every shard of one sweep into the outcome of the whole sweep
/// (equal to an unsharded run's).
pub fn merge(parts: Vec<Outcome>) -> Result<Outcome, String> {
    let Some(first) = parts.first() else {
        return Err(
            "nothing to merge: give the JSON outputs of `venusc sweep --shard i/n --format json`"
                .into(),
        );
    };
    let Some(first) = first.shard.clone() else {
        return Err("an input is the outcome of a whole sweep, not of a shard".into());
    };
    let mut seen = vec![
        false;
        usize::try_from(first.count)
            .unwrap_or(usize::MAX)
            .min(1 << 20)
    ];
    if seen.len() as u64 != first.count {
        return Err(format!(
            "a sweep of {} shards is more than venusc merges",
            first.count
        ));
    }
    // Candidates claimed by a result so far (each at most once over all shards).
    let mut owned = std::collections::HashSet::new();
    let mut merged = Outcome {
        scenario: parts[0].scenario.clone(),
        world_size: parts[0].world_size,
        candidates: 0,
        pruned: BTreeMap::new(),
        results: Vec::new(),
        objective: parts[0].objective,
        headroom: parts[0].headroom,
        kept: parts[0].kept,
        shard: None,
    };
    for mut part in parts {
        let Some(info) = part.shard.take() else {
            return Err("an input is the outcome of a whole sweep, not of a shard".into());
        };
        if info.fingerprint != first.fingerprint
            || info.count != first.count
            || info.total_candidates != first.total_candidates
        {
            return Err(format!(
                "shard {}/{} comes from another sweep (a different file, version or options) than shard {}/{}",
                info.index, info.count, first.index, first.count
            ));
        }
        let slot = usize::try_from(info.index)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| seen.get_mut(i));
        match slot {
            Some(s) if !*s => *s = true,
            Some(_) => {
                return Err(format!(
                    "shard {}/{} is given twice",
                    info.index, info.count
                ))
            }
            None => {
                return Err(format!(
                    "shard {}/{} does not exist",
                    info.index, info.count
                ))
            }
        }
        if part.scenario != merged.scenario || part.world_size != merged.world_size {
            return Err(format!(
                "shard {}/{} sweeps scenario `{}` on {} GPUs, shard {}/{} `{}` on {}",
                info.index,
                info.count,
                short(&part.scenario),
                part.world_size,
                first.index,
                first.count,
                short(&merged.scenario),
                merged.world_size
            ));
        }
        if part.kept != merged.kept {
            return Err(format!(
                "shard {}/{} keeps {}, shard {}/{} {}",
                info.index,
                info.count,
                kept_text(part.kept),
                first.index,
                first.count,
                kept_text(merged.kept)
            ));
        }
        if part.headroom.to_bits() != merged.headroom.to_bits() {
            return Err(format!(
                "shard {}/{} prunes with a memory headroom of {}, shard {}/{} with {}",
                info.index, info.count, part.headroom, first.index, first.count, merged.headroom
            ));
        }
        verify_shard(&part, &info, &mut owned)?;
        merged.candidates = merged.candidates.saturating_add(part.candidates);
        for (code, n) in part.pruned {
            let e = merged.pruned.entry(code).or_default();
            *e = e.saturating_add(n);
        }
        merged.results.extend(part.results);
    }
    let missing: Vec<usize> = seen
        .iter()
        .enumerate()
        .filter(|(_, s)| !**s)
        .map(|(i, _)| i + 1)
        .collect();
    if !missing.is_empty() {
        // A few names and a count: a claim of 2^20 shards must not make a 16 MB line.
        let named: Vec<String> = missing
            .iter()
            .take(MAX_NAMED)
            .map(|i| format!("{i}/{}", first.count))
            .collect();
        let rest = match missing.len().saturating_sub(MAX_NAMED) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        return Err(format!("missing shards: {}{rest}", named.join(", ")));
    }
    if merged.candidates != first.total_candidates {
        return Err(format!(
            "the shards cover {} candidates, the sweep has {}",
            merged.candidates, first.total_candidates
        ));
    }
    let objective = merged.objective;
    merged.finish(objective);
    Ok(merged)
}
