//! Plan validation: Megatron-LM's own preconditions on a typed scenario, as diagnostics.
//!
//! Input: a [`ScenarioDef`]. Output: E0301–E0311, E0401, W0001, W0003, W0005, W0006 (and E0202
//! for a cluster too large to model), and the validated [`Scenario`] when there is no error.
//! Invariants: checks run in the order of the code table (Megatron's own order: world size,
//! layers, heads, batch, schedule, parallel features, optimizer) and every rule that applies is
//! reported, each once; a check that needs a value another check rejected (dp, the microbatch
//! count, the layer split) is skipped rather than guessed. Every diagnostic has a primary label
//! on the item to change, secondary labels on the other factors and a help computed from the
//! input. No arithmetic on user numbers can overflow or panic.

pub(crate) mod to_plan;

pub use to_plan::provenance;

use crate::diag::{Code, Diagnostic, Loc};
use crate::plan::derive::{
    divisors, padded_vocab, param_counts, split_layers, SplitError, StageSplit,
};
use crate::plan::memory::{gib, stage_memory, worst, MemoryPlan, StageMemory};
use crate::plan::{Flags, Recipe, Scenario};
use crate::schedule::{self, Kind, PipelineShape};
use crate::syntax::ast::DefKind;
use crate::syntax::schema::{BlockKind, Key};
use crate::ty::{Bytes, Opt, PartialScenario, Recompute, ScenarioDef, ScheduleKind};

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
    let mut v = Validator::new(def);
    let scenario = v.run();
    (scenario, v.diags)
}

/// Validates a scenario whose definitions had errors ([`PartialScenario`]): every rule whose
/// inputs all type-checked (or were left to their defaults) runs; a rule that reads a rejected
/// key is skipped, so it cannot report a consequence of the default standing in for it. No
/// [`Scenario`] is produced and the memory rules (which read everything) do not run.
pub fn validate_partial(p: &PartialScenario) -> Vec<Diagnostic> {
    let mut v = Validator::new(&p.def);
    v.failed = p.failed.clone();
    v.run_partial();
    v.diags
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
}

impl<'a> Validator<'a> {
    fn new(def: &'a ScenarioDef) -> Validator<'a> {
        let p = &def.plan;
        let m = &def.model;
        Validator {
            def,
            diags: Vec::new(),
            world: def.cluster.world_size(),
            tp: p.tp().max(1),
            pp: p.pp().max(1),
            cp: p.cp().max(1),
            ep: p.ep().max(1),
            vpp: p.vpp().max(1),
            layers: m.layers.value,
            heads: m.heads.value,
            seq: m.seq.value,
            micro_batch: p.micro_batch.value.max(1),
            global_batch: p.global_batch.value,
            failed: Vec::new(),
            rejected: Vec::new(),
        }
    }

    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn has_error(&self) -> bool {
        self.diags.iter().any(Diagnostic::is_error)
    }

    /// `tp 1 × pp 8 × dp 4`: the factors of the world size as written (cp only when used).
    fn factors(&self, tp: u64, pp: u64, cp: u64, dp: Option<u64>) -> String {
        let mut parts = vec![format!("tp {tp}"), format!("pp {pp}")];
        if cp > 1 || self.def.plan.cp.is_some() {
            parts.push(format!("cp {cp}"));
        }
        if let Some(dp) = dp {
            parts.push(format!("dp {dp}"));
        }
        parts.join(" × ")
    }

    /// Secondary labels on each cluster dim's size.
    fn dim_labels(&self, mut d: Diagnostic) -> Diagnostic {
        for dim in &self.def.cluster.dims {
            d = d.with_secondary(
                dim.size.loc,
                format!("{} GPUs in dim `{}`", dim.size.value, dim.name.value),
            );
        }
        d
    }

    fn run(&mut self) -> Option<Scenario> {
        if !self.check_world_limit() {
            return None;
        }
        let dp = self.check_world(); // E0301
        let split = self.check_layers(); // E0302
        self.check_heads(); // E0303
        self.check_kv_groups(); // E0304
        let m = dp.and_then(|dp| self.check_batch(dp)); // E0305
        if let (Some(dp), Some(m)) = (dp, m) {
            self.check_interleaved_microbatches(dp, m); // E0306
        }
        self.check_vpp(); // E0307
        self.check_seq(); // E0308
        self.check_experts(); // E0309
        self.check_optimizer_flags(); // E0310
        self.check_schedule(); // E0311
        if let Some(dp) = dp {
            self.check_group_spans(); // W0001
            if let Some(m) = m {
                self.check_bubble(dp, m); // W0003
            }
        }
        self.check_sp_without_tp(); // W0006
        if self.has_error() {
            return None;
        }
        let (dp, m, split) = (dp?, m?, split?);
        let mut scenario = self.scenario(dp, m, split);
        scenario.memory = stage_memory(&scenario.model, &scenario.memory_plan());
        self.check_memory(&scenario); // E0401, W0005
        if self.has_error() {
            return None;
        }
        Some(scenario)
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
        if self.inputs_ok(&[Pp, Vpp, FirstStageLayers, LastStageLayers, Layers], false) {
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
        const SCHEDULE: &[Key] = &[Pp, Vpp, Schedule, OverlapP2p];
        if let (Some(dp), Some(m)) = (dp, m) {
            if self.inputs_ok(SCHEDULE, false) {
                self.check_interleaved_microbatches(dp, m); // E0306
            }
        }
        if self.inputs_ok(SCHEDULE, false) {
            self.check_vpp(); // E0307
            self.check_schedule(); // E0311
        }
        if self.inputs_ok(&[Tp, Cp, Sp, Seq], false) {
            self.check_seq(); // E0308
        }
        const EXPERT: &[Key] = &[Tp, Pp, Cp, Dp, Ep];
        let moe = [EXPERT, &[Experts, Topk, MoeFfn, SharedExpertFfn]].concat();
        if self.inputs_ok(&moe, true) {
            self.check_experts(); // E0309
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
        if self.inputs_ok(&[Sp, Tp], false) {
            self.check_sp_without_tp(); // W0006
        }
    }

    fn scenario(&self, dp: u64, m: u64, split: StageSplit) -> Scenario {
        let def = self.def;
        let p = &def.plan;
        let etp = self.tp;
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
            },
            recipe: Recipe::for_precision(p.precision()),
            split,
            padded_vocab: vocab,
            params: param_counts(&to_plan::model(&def.model), vocab, self.pp),
            memory: Vec::new(),
        }
    }

    // ---------------------------------------------------------------- E0202 (world too large)

    fn check_world_limit(&mut self) -> bool {
        if self.world <= MAX_WORLD {
            return true;
        }
        let c = &self.def.cluster;
        let product: u128 = c
            .dims
            .iter()
            .fold(1u128, |a, d| a.saturating_mul(d.size.value as u128));
        let loc = c.dims.last().map_or(c.loc, |d| d.size.loc);
        let mut d = Diagnostic::new(
            Code::E0202,
            format!("cluster has {product} GPUs, more than venusc models ({MAX_WORLD})"),
            loc,
            "makes the GPU count too large",
        )
        .with_help(format!(
            "use dims whose sizes multiply to at most {MAX_WORLD}"
        ));
        for dim in c.dims.iter().rev().skip(1) {
            d = d.with_secondary(
                dim.size.loc,
                format!("{} GPUs in dim `{}`", dim.size.value, dim.name.value),
            );
        }
        self.push(d);
        false
    }

    // ---------------------------------------------------------------- E0301

    /// Whether tp, pp and cp can be split this way (the layer split and the heads allow it).
    fn pp_ok(&self, pp: u64) -> bool {
        let p = &self.def.plan;
        split_layers(
            self.layers,
            pp,
            self.vpp,
            p.first_stage_layers.as_ref().map(|s| s.value),
            p.last_stage_layers.as_ref().map(|s| s.value),
        )
        .is_ok()
    }

    fn tp_ok(&self, tp: u64) -> bool {
        let kv = self.def.model.kv_groups();
        tp > 0
            && self.heads.is_multiple_of(tp)
            && (kv.is_multiple_of(tp) || tp.is_multiple_of(kv.max(1)))
    }

    /// Returns dp when tp × pp × cp × dp = world (dp defaulted when unwritten).
    // megatron/training/arguments.py:432 (W01): world % (tp·pp·cp) == 0, dp = world / (tp·pp·cp)
    // (arguments.py:448); megatron/core/parallel_state.py:823.
    fn check_world(&mut self) -> Option<u64> {
        let p = &self.def.plan;
        let (tp, pp, cp, world) = (self.tp, self.pp, self.cp, self.world);
        let model = (tp as u128)
            .saturating_mul(pp as u128)
            .saturating_mul(cp as u128);
        let written_dp = p.dp.as_ref().map(|s| s.value);
        let ok_dp = match written_dp {
            Some(dp) if dp > 0 && model.saturating_mul(dp as u128) == world as u128 => Some(dp),
            Some(_) => None,
            None if model > 0 && world > 0 && (world as u128).is_multiple_of(model) => {
                Some((world as u128 / model) as u64)
            }
            None => None,
        };
        if ok_dp.is_some() {
            return ok_dp;
        }
        let names = |dp: bool| {
            let mut n = vec!["tp", "pp"];
            if cp > 1 || p.cp.is_some() {
                n.push("cp");
            }
            if dp {
                n.push("dp");
            }
            n.join(" × ")
        };
        let (message, label) = match written_dp {
            Some(dp) => {
                let need = model.saturating_mul(dp as u128);
                (
                    format!(
                        "plan needs {need} GPUs ({}) but cluster has {world}",
                        self.factors(tp, pp, cp, Some(dp))
                    ),
                    format!("{} = {need}", names(true)),
                )
            }
            None => (
                format!(
                    "plan needs a multiple of {model} GPUs ({}) but cluster has {world}",
                    self.factors(tp, pp, cp, None)
                ),
                format!("{} = {model}", names(false)),
            ),
        };
        let primary = loc_of(&p.dp)
            .or(loc_of(&p.pp))
            .or(loc_of(&p.tp))
            .or(loc_of(&p.cp))
            .unwrap_or(p.loc);
        let mut d = Diagnostic::new(Code::E0301, message, primary, label);
        for (name, o) in [("tp", &p.tp), ("pp", &p.pp), ("cp", &p.cp), ("dp", &p.dp)] {
            if let Some(s) = o {
                if s.loc != primary {
                    d = d.with_secondary(s.loc, format!("{name} {}", s.value));
                }
            }
        }
        d = self.dim_labels(d);
        d = d.with_help(self.world_help(written_dp));
        // The first option of the help, `dp N`, is mechanical: rewrite the `dp` value (its
        // loc is the value's).
        if let (Some(dp), true) = (&p.dp, model > 0 && (world as u128).is_multiple_of(model)) {
            d = d.with_fix(dp.loc, (world as u128 / model).to_string());
        }
        self.push(d);
        None
    }

    fn world_help(&self, written_dp: Option<u64>) -> String {
        let (tp, pp, cp, world) = (self.tp, self.pp, self.cp, self.world);
        let mut options: Vec<String> = Vec::new();
        let describe = |key: &str, v: u64, tp: u64, pp: u64, cp: u64, dp: u64| {
            format!(
                "`{key} {v}` ({} = {world})",
                self.factors(tp, pp, cp, Some(dp))
            )
        };
        let model = tp.saturating_mul(pp).saturating_mul(cp);
        match written_dp {
            Some(dp) => {
                if model > 0 && world % model == 0 {
                    let dp2 = world / model;
                    options.push(describe("dp", dp2, tp, pp, cp, dp2));
                }
                let rest = tp.saturating_mul(cp).saturating_mul(dp);
                if rest > 0 && world % rest == 0 && world / rest != pp && self.pp_ok(world / rest) {
                    let pp2 = world / rest;
                    options.push(describe("pp", pp2, tp, pp2, cp, dp));
                }
                let rest = pp.saturating_mul(cp).saturating_mul(dp);
                if rest > 0 && world % rest == 0 && world / rest != tp && self.tp_ok(world / rest) {
                    let tp2 = world / rest;
                    options.push(describe("tp", tp2, tp2, pp, cp, dp));
                }
            }
            None => {
                let rest = tp.saturating_mul(cp);
                if rest > 0 && world % rest == 0 {
                    let pps = divisors(world / rest)
                        .into_iter()
                        .filter(|&x| self.pp_ok(x));
                    for pp2 in nearest(pps, pp, 2) {
                        options.push(describe("pp", pp2, tp, pp2, cp, world / (rest * pp2)));
                    }
                }
                let rest = pp.saturating_mul(cp);
                if rest > 0 && world % rest == 0 {
                    let tps = divisors(world / rest)
                        .into_iter()
                        .filter(|&x| self.tp_ok(x));
                    if let Some(&tp2) = nearest(tps, tp, 1).first() {
                        options.push(describe("tp", tp2, tp2, pp, cp, world / (rest * tp2)));
                    }
                }
            }
        }
        if options.is_empty() {
            let need = model.saturating_mul(written_dp.unwrap_or(1));
            format!("no change of one factor fits {world} GPUs; use a cluster of {need} GPUs or change several factors")
        } else {
            format!("use {}", join_or(&options))
        }
    }

    // ---------------------------------------------------------------- E0302

    fn check_layers(&mut self) -> Option<StageSplit> {
        let p = &self.def.plan;
        let first = p.first_stage_layers.as_ref().map(|s| s.value);
        let last = p.last_stage_layers.as_ref().map(|s| s.value);
        let err = match split_layers(self.layers, self.pp, self.vpp, first, last) {
            Ok(s) => return Some(s),
            Err(e) => e,
        };
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        let first_loc = loc_of(&p.first_stage_layers);
        let last_loc = loc_of(&p.last_stage_layers);
        let ends = first_loc.or(last_loc).unwrap_or(p.loc);
        let (message, primary, label) = match err {
            SplitError::Even { .. } => {
                let msg = if vpp > 1 {
                    format!("{l} layers cannot be split over pp {pp} × vpp {vpp} = {} model chunks", pp.saturating_mul(vpp))
                } else {
                    format!("{l} layers cannot be split evenly over pp {pp}")
                };
                let primary = loc_of(&p.pp).or(loc_of(&p.vpp)).unwrap_or(p.loc);
                (msg, primary, format!("{l} % {} ≠ 0", pp.saturating_mul(vpp)))
            }
            SplitError::EndsNeedTwoStages => (
                "`first_stage_layers` and `last_stage_layers` need pp of at least 2".to_string(),
                last_loc.unwrap_or(ends),
                "pp is 1".to_string(),
            ),
            SplitError::EndsExceed { ends: n, layers } => (
                format!("the first and last stages take {n} layers but the model has {layers}"),
                last_loc.unwrap_or(ends),
                format!("{n} > {layers}"),
            ),
            SplitError::EndNotDivisible { first: is_first, n, vpp } => {
                let key = if is_first { "first_stage_layers" } else { "last_stage_layers" };
                let loc = if is_first { first_loc } else { last_loc };
                (
                    format!("`{key}` {n} is not divisible by vpp {vpp}"),
                    loc.unwrap_or(ends),
                    format!("{n} layers over {vpp} model chunks"),
                )
            }
            SplitError::MiddleMismatch { layers, stages } => (
                format!("{layers} layers are left for {stages} middle pipeline stages"),
                ends,
                format!("leaves {layers} layers for {stages} stages"),
            ),
            SplitError::MiddleNotDivisible { layers, stages } => (
                format!("{layers} middle layers cannot be split evenly over {stages} middle stages"),
                ends,
                format!("leaves {layers} layers for {stages} stages"),
            ),
            SplitError::MiddleChunks { per_stage, vpp } => (
                format!("{per_stage} layers per middle stage cannot be split into vpp {vpp} model chunks"),
                ends,
                format!("leaves {per_stage} layers per middle stage"),
            ),
        };
        let mut d = Diagnostic::new(Code::E0302, message, primary, label)
            .with_secondary(self.def.model.layers.loc, format!("{l} layers"));
        for (name, o) in [
            ("pp", &p.pp),
            ("vpp", &p.vpp),
            ("first_stage_layers", &p.first_stage_layers),
            ("last_stage_layers", &p.last_stage_layers),
        ] {
            if let Some(s) = o {
                if s.loc != primary {
                    d = d.with_secondary(s.loc, format!("{name} {}", s.value));
                }
            }
        }
        let help = match err {
            SplitError::Even { .. } => self.even_split_help(),
            _ => self.uneven_split_help(first, last),
        };
        self.push(d.with_help(help));
        None
    }

    fn even_split_help(&self) -> String {
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        let mut options = Vec::new();
        let rest = self.tp.saturating_mul(self.cp);
        let world_fits =
            |x: u64| rest > 0 && self.world.is_multiple_of(rest.saturating_mul(x).max(1));
        let pps = divisors(l / vpp)
            .into_iter()
            .filter(|&x| l % (x.saturating_mul(vpp)) == 0 && world_fits(x));
        for pp2 in nearest(pps, pp, 2) {
            options.push(format!("`pp {pp2}` ({} layers per stage)", l / pp2));
        }
        if pp > 0 && l % pp == 0 {
            let vpps = divisors(l / pp)
                .into_iter()
                .filter(|&v| (v == 1 || pp > 1) && v <= vpp.max(2).saturating_mul(2));
            if let Some(&v2) = nearest(vpps, vpp, 1).first() {
                options.push(if v2 == 1 {
                    "no `vpp`".to_string()
                } else {
                    format!("`vpp {v2}`")
                });
            }
        }
        if options.is_empty() {
            format!("use a pp that divides {l}")
        } else {
            format!("use {}", join_or(&options))
        }
    }

    /// The nearest value of the written end key(s) that makes the split valid.
    fn uneven_split_help(&self, first: Option<u64>, last: Option<u64>) -> String {
        let (l, pp, vpp) = (self.layers, self.pp, self.vpp);
        if pp == 1 {
            return "remove `first_stage_layers` and `last_stage_layers`: with pp 1 all layers are on one stage".to_string();
        }
        let mut options = Vec::new();
        let search = |cur: u64,
                      make: &dyn Fn(u64) -> Result<StageSplit, SplitError>|
         -> Option<(u64, StageSplit)> {
            let limit = l.min(4096);
            (1..=limit).find_map(|dist| {
                [cur.checked_sub(dist), cur.checked_add(dist)]
                    .into_iter()
                    .flatten()
                    .filter(|&c| c >= 1 && c <= l)
                    .find_map(|c| make(c).ok().map(|s| (c, s)))
            })
        };
        if let Some(f) = first {
            if let Some((c, s)) = search(f, &|c| split_layers(l, pp, vpp, Some(c), last)) {
                options.push(format!(
                    "`first_stage_layers {c}` (layers: {})",
                    s.describe()
                ));
            }
        }
        if let Some(la) = last {
            if let Some((c, s)) = search(la, &|c| split_layers(l, pp, vpp, first, Some(c))) {
                options.push(format!(
                    "`last_stage_layers {c}` (layers: {})",
                    s.describe()
                ));
            }
        }
        if options.is_empty() {
            "remove `first_stage_layers` and `last_stage_layers` to split the layers evenly"
                .to_string()
        } else {
            format!("use {}", join_or(&options))
        }
    }

    // ---------------------------------------------------------------- E0303, E0304

    fn tp_options(&self, pred: impl Fn(u64) -> bool) -> Vec<String> {
        let rest = self.pp.saturating_mul(self.cp);
        let fits = |t: u64| rest > 0 && self.world.is_multiple_of(rest.saturating_mul(t).max(1));
        let cands = divisors(self.world)
            .into_iter()
            .filter(|&t| pred(t) && fits(t));
        nearest(cands, self.tp, 2)
            .into_iter()
            .map(|t| format!("`tp {t}`"))
            .collect()
    }

    // megatron/core/transformer/transformer_config.py:1448 (H01)
    fn check_heads(&mut self) {
        let p = &self.def.plan;
        let (heads, tp) = (self.heads, self.tp);
        if heads % tp == 0 {
            return;
        }
        let primary = loc_of(&p.tp).unwrap_or(p.loc);
        let options = self.tp_options(|t| self.tp_ok(t));
        let mut d = Diagnostic::new(
            Code::E0303,
            format!("{heads} attention heads cannot be split over tp {tp}"),
            primary,
            format!("{heads} % {tp} ≠ 0"),
        )
        .with_secondary(self.def.model.heads.loc, format!("{heads} heads"));
        d = d.with_help(if options.is_empty() {
            format!("use a tp that divides {heads}")
        } else {
            format!(
                "use {} (divides {heads} heads and fits {} GPUs)",
                join_or(&options),
                self.world
            )
        });
        self.rejected.push("tp");
        self.push(d);
    }

    // megatron/core/transformer/transformer_config.py:1466 (H02). Only when `kv_groups` is
    // written and differs from heads: it defaults to heads, and when it equals heads a tp
    // that fails it fails E0303 first (the same problem, reported once).
    fn check_kv_groups(&mut self) {
        let m = &self.def.model;
        let Some(kv) = &m.kv_groups else { return };
        let (g, tp) = (kv.value.max(1), self.tp);
        if g % tp == 0 || tp % g == 0 || (g == self.heads && !self.heads.is_multiple_of(tp)) {
            return;
        }
        let p = &self.def.plan;
        let primary = loc_of(&p.tp).unwrap_or(p.loc);
        let options = self.tp_options(|t| self.tp_ok(t));
        let d = Diagnostic::new(
            Code::E0304,
            format!("`kv_groups` {g} is neither a multiple nor a divisor of tp {tp}"),
            primary,
            format!("tp {tp}"),
        )
        .with_secondary(kv.loc, format!("{g} kv groups"))
        .with_help(if options.is_empty() {
            format!("use a tp that divides {g} or is a multiple of it")
        } else {
            format!("use {}", join_or(&options))
        });
        self.rejected.push("tp");
        self.push(d);
    }

    // ---------------------------------------------------------------- E0305, E0306

    /// Returns the microbatch count m = global_batch / (micro_batch × dp).
    // megatron/core/num_microbatches_calculator.py:381 (B02), :389 (B03)
    fn check_batch(&mut self, dp: u64) -> Option<u64> {
        let p = &self.def.plan;
        let (gb, mb) = (self.global_batch, self.micro_batch);
        let step = mb.saturating_mul(dp);
        if gb % step == 0 && gb >= step {
            return Some(gb / step);
        }
        let mut d = Diagnostic::new(
            Code::E0305,
            format!("`global_batch` {gb} is not divisible by micro_batch {mb} × dp {dp} = {step}"),
            p.global_batch.loc,
            format!("{gb} sequences per iteration"),
        )
        .with_secondary(p.micro_batch.loc, format!("micro_batch {mb}"));
        match &p.dp {
            Some(s) => d = d.with_secondary(s.loc, format!("dp {}", s.value)),
            None => {
                d = d.with_note(format!(
                    "dp {dp} = {} GPUs / ({})",
                    self.world,
                    self.factors(self.tp, self.pp, self.cp, None)
                ))
            }
        }
        let options: Vec<String> = neighbour_multiples(gb, step)
            .into_iter()
            .map(|g| format!("`global_batch {g}`"))
            .collect();
        self.push(d.with_help(format!("use {}", join_or(&options))));
        None
    }

    fn interleaved(&self) -> bool {
        let explicit = self.def.plan.schedule.as_ref().map(|s| s.value);
        self.pp > 1 && self.vpp > 1 && matches!(explicit, None | Some(ScheduleKind::Interleaved))
    }

    // megatron/core/pipeline_parallel/schedules.py:1161-1166 (S01: N > m or N < pp) and
    // :1170-1174 (S02: 0 < m % N < pp), with N = microbatch_group_size_per_vp_stage = pp
    // (megatron/core/model_parallel_config.py:567): m must be a multiple of pp, at least pp.
    fn check_interleaved_microbatches(&mut self, dp: u64, m: u64) {
        if !self.interleaved() {
            return;
        }
        let pp = self.pp;
        if m >= pp && m.is_multiple_of(pp) {
            return;
        }
        let p = &self.def.plan;
        let message = if m < pp {
            format!("interleaved schedule needs at least pp {pp} microbatches, found {m}")
        } else {
            format!("interleaved schedule needs a microbatch count that is a multiple of pp {pp}, found {m}")
        };
        let mut d = Diagnostic::new(
            Code::E0306,
            message,
            p.global_batch.loc,
            format!("{m} microbatches"),
        )
        .with_secondary(
            p.micro_batch.loc,
            format!("micro_batch {}", self.micro_batch),
        );
        for (name, o) in [("dp", &p.dp), ("pp", &p.pp), ("vpp", &p.vpp)] {
            if let Some(s) = o {
                d = d.with_secondary(s.loc, format!("{name} {}", s.value));
            }
        }
        let step = self.micro_batch.saturating_mul(dp).saturating_mul(pp);
        let options: Vec<String> = neighbour_multiples(self.global_batch, step)
            .into_iter()
            .map(|g| {
                format!(
                    "`global_batch {g}` ({} microbatches)",
                    g / self.micro_batch.saturating_mul(dp).max(1)
                )
            })
            .collect();
        d = d.with_note(format!(
            "m = global_batch / (micro_batch × dp) = {} / ({} × {dp})",
            self.global_batch, self.micro_batch
        ));
        self.push(d.with_help(format!("use {}", join_or(&options))));
    }

    // ---------------------------------------------------------------- E0307

    // megatron/training/arguments.py:1001-1009 (L07: vpp with pp ≤ 1; L08: vpp without
    // overlap_p2p and pp ≤ 2); megatron/core/parallel_state.py:830 (L09).
    fn check_vpp(&mut self) {
        let p = &self.def.plan;
        let Some(vpp) = &p.vpp else { return };
        if vpp.value <= 1 {
            return;
        }
        let pp = self.pp;
        let overlap = on(&p.overlap_p2p);
        if pp == 1 {
            let mut d = Diagnostic::new(
                Code::E0307,
                format!("`vpp` {} needs pipeline parallelism but pp is 1", vpp.value),
                vpp.loc,
                "model chunks need pipeline stages",
            );
            if let Some(s) = &p.pp {
                d = d.with_secondary(s.loc, "pp 1");
            }
            self.push(d.with_help("remove `vpp`, or use pp 3 or more (pp 2 with `overlap_p2p`)"));
        } else if pp == 2 && !overlap {
            let mut d = Diagnostic::new(
                Code::E0307,
                format!("`vpp` {} with pp 2 needs `overlap_p2p`", vpp.value),
                vpp.loc,
                "interleaving over 2 stages",
            )
            .with_note(
                "without overlap, batched p2p would put two sends to the same peer in one batch",
            );
            if let Some(s) = &p.pp {
                d = d.with_secondary(s.loc, "pp 2");
            }
            self.push(d.with_help("add `overlap_p2p` to the plan"));
        }
    }

    // ---------------------------------------------------------------- E0308

    fn check_seq(&mut self) {
        let p = &self.def.plan;
        let (seq, cp, tp) = (self.seq, self.cp, self.tp);
        let seq_loc = self.def.model.seq.loc;
        // megatron/training/arguments.py:1335-1339 (C01)
        if cp > 1 && seq % cp.saturating_mul(2) != 0 {
            let primary = loc_of(&p.cp).unwrap_or(p.loc);
            let cps: Vec<String> = nearest(
                divisors(seq / 2)
                    .into_iter()
                    .filter(|&c| c > 1 && seq % (2 * c) == 0 && self.world.is_multiple_of(c)),
                cp,
                2,
            )
            .into_iter()
            .map(|c| format!("`cp {c}`"))
            .collect();
            let mut options = cps;
            options.extend(
                neighbour_multiples(seq, cp.saturating_mul(2))
                    .into_iter()
                    .take(2)
                    .map(|s| format!("`seq {s}`")),
            );
            let d = Diagnostic::new(
                Code::E0308,
                format!(
                    "`seq` {seq} is not a multiple of 2 × cp {cp} = {}",
                    cp.saturating_mul(2)
                ),
                primary,
                format!(
                    "cp {cp} splits the sequence into {} chunks",
                    cp.saturating_mul(2)
                ),
            )
            .with_secondary(seq_loc, format!("seq {seq}"))
            .with_help(format!("use {}", join_or(&options)));
            self.push(d);
        }
        // Sequence parallelism scatters each cp rank's seq / cp tokens over tp:
        // megatron/core/tensor_parallel/mappings.py `_split_along_first_dim` requires the
        // first dimension to be divisible by the tp size.
        if on(&p.sp) && tp > 1 && seq % cp.saturating_mul(tp) != 0 {
            let sp_loc = loc_of(&p.sp).unwrap_or(p.loc);
            let step = cp.saturating_mul(tp);
            let step = if cp > 1 {
                crate::base::math::lcm(step, cp.saturating_mul(2))
            } else {
                step
            };
            let mut options: Vec<String> = neighbour_multiples(seq, step)
                .into_iter()
                .map(|s| format!("`seq {s}`"))
                .collect();
            options.push("no `sp`".to_string());
            let local = if cp > 1 {
                format!("seq {seq} / cp {cp}")
            } else {
                format!("seq {seq}")
            };
            let mut d = Diagnostic::new(
                Code::E0308,
                format!("with `sp`, {local} is not divisible by tp {tp}"),
                sp_loc,
                "scatters the sequence over tp",
            )
            .with_secondary(seq_loc, format!("seq {seq}"));
            if let Some(s) = &p.tp {
                d = d.with_secondary(s.loc, format!("tp {tp}"));
            }
            if let Some(s) = &p.cp {
                d = d.with_secondary(s.loc, format!("cp {cp}"));
            }
            self.push(d.with_help(format!("use {}", join_or(&options))));
        }
    }

    // ---------------------------------------------------------------- E0309

    /// The ep values nearest the written one that divide the experts and whose expert grid
    /// (etp × ep × pp, etp = tp) divides the GPU count: they pass every ep rule of E0309.
    fn ep_options(&self) -> Vec<String> {
        let (tp, pp) = (self.tp, self.pp);
        let fits = |x: u64| {
            let grid = tp.saturating_mul(x).saturating_mul(pp).max(1);
            self.world.is_multiple_of(grid) && self.def.model.experts().is_multiple_of(x)
        };
        nearest(
            divisors(self.world).into_iter().filter(|&x| fits(x)),
            self.ep,
            2,
        )
        .into_iter()
        .map(|x| format!("`ep {x}`"))
        .collect()
    }

    /// E0309 on `ep`: the first rule `ep` fails is the diagnostic, the others its notes (one
    /// diagnostic per problem: the value of `ep`).
    fn check_experts(&mut self) {
        let p = &self.def.plan;
        let m = &self.def.model;
        let (ep, tp) = (self.ep, self.tp);
        let ep_loc = loc_of(&p.ep).unwrap_or(p.loc);
        let mut failures: Vec<Diagnostic> = Vec::new();
        match &m.experts {
            None if ep > 1 => {
                // megatron/training/arguments.py:1656 (E01)
                let d = Diagnostic::new(
                    Code::E0309,
                    format!(
                        "`ep` {ep} needs a mixture-of-experts model but `{}` is dense",
                        m.name
                    ),
                    ep_loc,
                    "expert parallelism",
                )
                .with_secondary(m.loc, format!("model `{}` has no `experts`", m.name))
                .with_help("remove `ep`, or use a model with `experts`");
                failures.push(d);
            }
            Some(e) if e.value % ep != 0 => {
                // megatron/training/arguments.py:1658 (E02)
                let options = self.ep_options();
                let d = Diagnostic::new(
                    Code::E0309,
                    format!("{} experts cannot be split over ep {ep}", e.value),
                    ep_loc,
                    format!("{} % {ep} ≠ 0", e.value),
                )
                .with_secondary(e.loc, format!("{} experts", e.value))
                .with_help(if options.is_empty() {
                    format!("use an ep that divides {} experts", e.value)
                } else {
                    format!("use {}", join_or(&options))
                });
                failures.push(d);
            }
            _ => {}
        }
        // megatron/core/parallel_state.py:883 (W02): etp = tp (arguments.py:587-588)
        let group = (tp as u128)
            .saturating_mul(ep as u128)
            .saturating_mul(self.pp as u128);
        if ep > 1 && group > 0 && !(self.world as u128).is_multiple_of(group) {
            let options = self.ep_options();
            let mut d = Diagnostic::new(
                Code::E0309,
                format!(
                    "cluster has {} GPUs, not a multiple of etp {tp} × ep {ep} × pp {} = {group}",
                    self.world, self.pp
                ),
                ep_loc,
                format!("ep {ep}"),
            );
            for (name, o) in [("tp", &p.tp), ("pp", &p.pp)] {
                if let Some(s) = o {
                    d = d.with_secondary(s.loc, format!("{name} {}", s.value));
                }
            }
            d = self.dim_labels(d);
            failures.push(d.with_help(if options.is_empty() {
                "use an ep whose expert grid divides the GPU count".to_string()
            } else {
                format!("use {}", join_or(&options))
            }));
        }
        let mut failures = failures.into_iter();
        if let Some(mut first) = failures.next() {
            for other in failures {
                first = first.with_note(format!("`ep` {ep} also breaks: {}", other.message));
            }
            self.rejected.push("ep");
            self.push(first);
        }
        // megatron/core/transformer/moe/moe_layer.py:636-640 (P04)
        if m.is_moe() && tp > 1 && !on(&p.sp) {
            let primary = loc_of(&p.tp).unwrap_or(p.loc);
            let mut d = Diagnostic::new(
                Code::E0309,
                format!(
                    "mixture-of-experts model `{}` with tp {tp} needs `sp`",
                    m.name
                ),
                primary,
                format!("tp {tp}"),
            )
            .with_help("add `sp` to the plan");
            if let Some(e) = &m.experts {
                d = d.with_secondary(e.loc, format!("{} experts", e.value));
            }
            self.push(d);
        }
    }

    // ---------------------------------------------------------------- E0310

    fn check_optimizer_flags(&mut self) {
        let p = &self.def.plan;
        let flag = |o: &Opt<bool>| o.as_ref().filter(|s| s.value).map(|s| s.loc);
        let mut out = Vec::new();
        if let Some(opg) = flag(&p.overlap_param_gather) {
            // megatron/training/arguments.py:1025-1027 (D01)
            if !on(&p.distributed_optimizer) {
                out.push(
                    Diagnostic::new(
                        Code::E0310,
                        "`overlap_param_gather` needs `distributed_optimizer`",
                        opg,
                        "gathers parameters sharded by the distributed optimizer",
                    )
                    .with_help("add `distributed_optimizer` to the plan"),
                );
            }
            // megatron/training/arguments.py:1028-1029 (D02)
            if !on(&p.overlap_grad_reduce) {
                out.push(
                    Diagnostic::new(
                        Code::E0310,
                        "`overlap_param_gather` needs `overlap_grad_reduce`",
                        opg,
                        "overlaps the parameter all-gather",
                    )
                    .with_help("add `overlap_grad_reduce` to the plan"),
                );
            }
        }
        if let Some(otc) = flag(&p.overlap_tp_comm) {
            // megatron/training/arguments.py:1442 (P02): "Tensor parallel communication/GEMM
            // overlap can happen only when sequence parallelism is enabled".
            if !on(&p.sp) {
                out.push(
                    Diagnostic::new(
                        Code::E0310,
                        "`overlap_tp_comm` needs `sp`",
                        otc,
                        "overlaps the sequence-parallel all-gathers and reduce-scatters",
                    )
                    .with_help("add `sp` to the plan"),
                );
            }
        }
        // megatron/training/training.py `train` (@core_v0.7.0, the release with these flags):
        // `delay_param_gather` is read only under `overlap_param_gather`, `delay_grad_reduce`
        // only under `overlap_grad_reduce`; Megatron ignores them otherwise, venusc rejects them.
        if let Some(dpg) = flag(&p.delay_param_gather) {
            if !on(&p.overlap_param_gather) {
                out.push(
                    Diagnostic::new(
                        Code::E0310,
                        "`delay_param_gather` needs `overlap_param_gather`",
                        dpg,
                        "delays an overlapped all-gather",
                    )
                    .with_help(
                        "add `overlap_param_gather` to the plan, or remove `delay_param_gather`",
                    ),
                );
            }
        }
        if let Some(dgr) = flag(&p.delay_grad_reduce) {
            if !on(&p.overlap_grad_reduce) {
                out.push(
                    Diagnostic::new(
                        Code::E0310,
                        "`delay_grad_reduce` needs `overlap_grad_reduce`",
                        dgr,
                        "delays an overlapped reduction",
                    )
                    .with_help(
                        "add `overlap_grad_reduce` to the plan, or remove `delay_grad_reduce`",
                    ),
                );
            }
        }
        for d in out {
            let d = match &p.distributed_optimizer {
                Some(s) if d.message.contains("distributed_optimizer") => {
                    d.with_secondary(s.loc, "distributed_optimizer off")
                }
                _ => d,
            };
            self.push(d);
        }
    }

    // ---------------------------------------------------------------- E0311

    fn check_schedule(&mut self) {
        let p = &self.def.plan;
        let Some(s) = &p.schedule else { return };
        let (pp, vpp) = (self.pp, self.vpp);
        let word = s.value.word();
        // (message, help, secondary label)
        type Issue = (String, String, Option<(Loc, String)>);
        let issue: Option<Issue> = match s.value {
            ScheduleKind::Interleaved | ScheduleKind::Gpipe if pp == 1 => Some((
                format!("`schedule {word}` needs pipeline parallelism but pp is 1"),
                format!("remove `schedule {word}`, or set pp above 1"),
                loc_of(&p.pp).map(|l| (l, "pp 1".to_string())),
            )),
            ScheduleKind::Interleaved if vpp == 1 => {
                let v = (2..=self.layers.min(64))
                    .find(|&v| self.layers.is_multiple_of(pp.saturating_mul(v)));
                let help = match v {
                    Some(v) => format!("add `vpp {v}`, or remove `schedule interleaved`"),
                    None => "remove `schedule interleaved`".to_string(),
                };
                Some((
                    "`schedule interleaved` needs more than one model chunk per stage (vpp > 1)"
                        .to_string(),
                    help,
                    loc_of(&p.vpp).map(|l| (l, "vpp 1".to_string())),
                ))
            }
            ScheduleKind::Gpipe | ScheduleKind::OneFOneB if vpp > 1 => Some((
                format!("`schedule {word}` cannot run vpp {vpp} model chunks per stage"),
                "use `schedule interleaved` or remove `vpp`".to_string(),
                loc_of(&p.vpp).map(|l| (l, format!("vpp {vpp}"))),
            )),
            _ => None,
        };
        if let Some((message, help, secondary)) = issue {
            let mut d = Diagnostic::new(Code::E0311, message, s.loc, format!("schedule {word}"))
                .with_help(help);
            if let Some((l, m)) = secondary {
                d = d.with_secondary(l, m);
            }
            self.push(d);
        }
    }

    // ---------------------------------------------------------------- W0001

    /// Index of the outermost dim a block of `span` consecutive, aligned ranks reaches.
    fn outermost_dim(&self, span: u64) -> usize {
        let dims = &self.def.cluster.dims;
        let mut prefix = 1u64;
        for (i, d) in dims.iter().enumerate() {
            prefix = prefix.saturating_mul(d.size.value);
            if prefix.is_multiple_of(span.max(1)) {
                return i;
            }
        }
        dims.len().saturating_sub(1)
    }

    /// Product of the sizes of the dims before `k`.
    fn inner_gpus(&self, k: usize) -> u64 {
        self.def
            .cluster
            .dims
            .iter()
            .take(k)
            .fold(1u64, |a, d| a.saturating_mul(d.size.value))
    }

    // Rank order tp-cp-ep-dp-pp (megatron/core/parallel_state.py:601-624, 465-557): tp groups are
    // blocks of tp consecutive ranks, cp groups live in blocks of tp·cp, expert ep groups in
    // blocks of etp·ep (etp = tp).
    fn check_group_spans(&mut self) {
        let p = &self.def.plan;
        let (tp, cp, ep) = (self.tp, self.cp, self.ep);
        let groups: [(&str, u64, u64, &Opt<u64>); 3] = [
            ("tp", tp, tp, &p.tp),
            ("cp", cp, tp.saturating_mul(cp), &p.cp),
            ("ep", ep, tp.saturating_mul(ep), &p.ep),
        ];
        for (name, size, span, item) in groups {
            if size <= 1 || self.rejected.contains(&name) {
                continue;
            }
            let k = self.outermost_dim(span);
            if k == 0 {
                continue;
            }
            let dims = &self.def.cluster.dims;
            let (Some(outer), Some(inner)) = (dims.get(k), dims.first()) else {
                continue;
            };
            let fit = self.inner_gpus(k);
            let primary = loc_of(item).unwrap_or(p.loc);
            let message = if name == "tp" {
                format!(
                    "tp group of {span} GPUs spans the slower dim `{}`",
                    outer.name.value
                )
            } else {
                format!("{name} group (tp {tp} × {name} {size} = {span} consecutive GPUs) spans the slower dim `{}`", outer.name.value)
            };
            // tp·x must divide `fit`, so x ≤ fit bounds the search.
            let best = (1..=size.min(fit)).rev().find(|&x| {
                let s = if name == "tp" {
                    x
                } else {
                    tp.saturating_mul(x)
                };
                fit.is_multiple_of(s.max(1))
                    && match name {
                        "tp" => self.tp_ok(x),
                        "ep" => self.def.model.experts().is_multiple_of(x),
                        _ => self.seq.is_multiple_of(x.saturating_mul(2)) || x == 1,
                    }
            });
            let inner_names: Vec<String> = dims
                .iter()
                .take(k)
                .map(|d| format!("`{}`", d.name.value))
                .collect();
            let help = match best {
                Some(x) if x > 1 || name != "tp" => format!(
                    "use `{name} {x}` to keep each {name} group inside {} ({fit} GPUs)",
                    join_and(&inner_names)
                ),
                _ => format!(
                    "keep {name} groups inside {} ({fit} GPUs)",
                    join_and(&inner_names)
                ),
            };
            let mut d = Diagnostic::new(Code::W0001, message, primary, format!("{name} {size}"))
                .with_secondary(
                    outer.size.loc,
                    format!("crosses dim `{}`", outer.name.value),
                )
                .with_secondary(
                    inner.size.loc,
                    format!("{} GPUs in dim `{}`", inner.size.value, inner.name.value),
                )
                .with_help(help);
            if name != "tp" {
                if let Some(s) = &p.tp {
                    d = d.with_secondary(s.loc, format!("tp {tp}"));
                }
            }
            self.push(d);
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
        // The bubble of the schedule this plan would run with `m` microbatches and `v` chunks,
        // from the schedule itself (equal to what its built IR shows).
        let bubble_at = |m: u64, v: u64| -> f64 {
            let narrow = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
            let kind = resolved_schedule(pp, v, if v > 1 { None } else { written });
            let kind = kind.map_or(Kind::NoPipelining, Kind::from);
            let shape = PipelineShape::new(kind, narrow(pp), narrow(v), narrow(m));
            schedule::bubble(&shape).fraction()
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
        options.push(format!(
            "raise `global_batch` to {gb} ({m_need} microbatches, bubble {})",
            pct(bubble_at(m_need, vpp))
        ));
        let per_replica = self.global_batch / dp.max(1);
        // The largest smaller micro_batch that divides the per-replica batch into enough
        // microbatches (divisors, so the search is bounded whatever the numbers).
        let mb = divisors(per_replica).into_iter().rev().find(|&b| {
            let m2 = per_replica / b;
            b < self.micro_batch && m2 >= m_need && (!interleaved || m2.is_multiple_of(pp))
        });
        if let Some(b) = mb {
            let m2 = per_replica / b;
            options.push(format!(
                "lower `micro_batch` to {b} ({m2} microbatches, bubble {})",
                pct(bubble_at(m2, vpp))
            ));
        }
        let vpp_ok = pp >= 3 || on(&p.overlap_p2p);
        if vpp_ok
            && m >= pp
            && m.is_multiple_of(pp)
            && p.first_stage_layers.is_none()
            && p.last_stage_layers.is_none()
        {
            let v = (vpp + 1..=(self.layers / pp).min(64))
                .find(|&v| self.layers.is_multiple_of(pp * v) && bubble_at(m, v) <= BUBBLE_LIMIT);
            if let Some(v) = v {
                options.push(format!("use `vpp {v}` (bubble {})", pct(bubble_at(m, v))));
            }
        }
        let primary = loc_of(&p.pp).unwrap_or(p.loc);
        let mut d = Diagnostic::new(
            Code::W0003,
            format!(
                "pipeline bubble is {} of the iteration (pp {pp}, {m} microbatches)",
                pct(bubble)
            ),
            primary,
            format!("{pp} stages"),
        )
        .with_secondary(
            p.global_batch.loc,
            format!("{m} microbatches per iteration"),
        )
        .with_secondary(
            p.micro_batch.loc,
            format!("micro_batch {}", self.micro_batch),
        )
        .with_note(format!(
            "bubble = (pp − 1) / (m·vpp + pp − 1) = {} / ({m}·{vpp} + {})",
            pp - 1,
            pp - 1
        ));
        if let Some(s) = &p.vpp {
            d = d.with_secondary(s.loc, format!("vpp {}", s.value));
        }
        self.push(d.with_help(join_or(&options)));
    }

    // ---------------------------------------------------------------- W0006

    // megatron/training/arguments.py:1434-1439 (P01): sp is silently disabled when tp = 1.
    fn check_sp_without_tp(&mut self) {
        let p = &self.def.plan;
        let Some(s) = p.sp.as_ref().filter(|s| s.value) else {
            return;
        };
        if self.tp > 1 {
            return;
        }
        let mut d = Diagnostic::new(
            Code::W0006,
            "`sp` has no effect with tp 1",
            s.loc,
            "sequence parallelism",
        )
        .with_note("Megatron-LM turns sequence parallelism off when tp = 1")
        .with_help("remove `sp`, or use tp above 1");
        if let Some(t) = &p.tp {
            d = d.with_secondary(t.loc, "tp 1");
        }
        self.push(d);
    }

    // ---------------------------------------------------------------- E0401, W0005

    fn check_memory(&mut self, sc: &Scenario) {
        let Some(w) = worst(&sc.memory).copied() else {
            return;
        };
        let cap = sc.cluster.gpu.memory;
        let gpu = &sc.cluster.gpu;
        // The check is peak + reserve <= capacity: the stage peaks are compared with what the
        // reserve leaves, and messages state the peak plus the reserve.
        let reserve = self.def.plan.reserve();
        let need = Bytes(w.peak.0.saturating_add(reserve.0));
        let over = need > cap;
        let warn_at = Bytes((cap.0 as f64 * MEMORY_WARN) as u64);
        if !over && need <= warn_at {
            return;
        }
        let p = &self.def.plan;
        let (code, message, target) = if over {
            (
                Code::E0401,
                format!(
                    "pipeline stage {} needs {} but `{}` has {}",
                    w.stage,
                    gib(need),
                    gpu.name,
                    gib(cap)
                ),
                cap,
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
                    gpu.name
                ),
                warn_at,
            )
        };
        let mut d = Diagnostic::new(
            code,
            message,
            p.loc,
            format!("stage {} needs {}", w.stage, gib(need)),
        )
        .with_secondary(
            self.def.cluster.gpu.memory.loc,
            format!("`{}` has {}", gpu.name, gib(cap)),
        );
        for (name, o) in [("tp", &p.tp), ("pp", &p.pp), ("dp", &p.dp)] {
            if let Some(s) = o {
                d = d.with_secondary(s.loc, format!("{name} {}", s.value));
            }
        }
        let shards = if sc.flags.distributed_optimizer {
            format!(", sharded over dp × cp = {}", sc.dp * sc.cp)
        } else {
            String::new()
        };
        let others = sc
            .memory
            .iter()
            .filter(|s| s.peak.0.saturating_add(reserve.0) > target.0)
            .count();
        d = d
            .with_note(format!(
                "stage {}: weights {} ({} parameters per GPU, 2 bytes each)",
                w.stage,
                gib(w.weights),
                w.params.saturating_add(w.expert_params)
            ))
            .with_note(format!("gradients {} (fp32)", gib(w.gradients)))
            .with_note(format!(
                "optimizer state {} (fp32 master weights and Adam moments{shards})",
                gib(w.optimizer)
            ))
            .with_note(format!(
                "activations {} ({} layers, {} in flight, recompute {})",
                gib(w.activations),
                w.layers,
                if w.in_flight == 1 {
                    "1 microbatch".to_string()
                } else {
                    format!("{} microbatches", w.in_flight)
                },
                sc.recompute.word()
            ));
        if reserve.0 > 0 {
            d = d.with_note(format!(
                "reserve {} kept back per GPU (CUDA context, NCCL buffers, fragmentation)",
                gib(reserve)
            ));
        }
        if others > 1 {
            d = d.with_note(format!(
                "{others} of {} stages are over the limit",
                sc.memory.len()
            ));
        }
        d = d.with_help(memory_help(self, sc, target));
        self.push(d);
    }
}

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

/// One candidate change for E0401/W0005: how to apply it alone (`add \`sp\``), its item
/// (`\`sp\``) for a combination, and the changed memory plan (None when it does not apply).
type Change = (String, String, Option<MemoryPlan>);

fn changes(v: &Validator<'_>, sc: &Scenario, base: &MemoryPlan) -> Vec<Change> {
    let p = &sc.plan;
    let mut out: Vec<Change> = Vec::new();
    let seq_ok = |tp: u64| sc.model.seq.is_multiple_of(sc.cp.saturating_mul(tp).max(1));
    out.push((
        "add `sp`".into(),
        "`sp`".into(),
        (base.tp > 1 && !base.sp && seq_ok(base.tp)).then(|| MemoryPlan {
            sp: true,
            ..base.clone()
        }),
    ));
    out.push((
        "add `distributed_optimizer`".into(),
        "`distributed_optimizer`".into(),
        (!base.distributed_optimizer).then(|| MemoryPlan {
            distributed_optimizer: true,
            ..base.clone()
        }),
    ));
    out.push((
        "use `recompute selective`".into(),
        "`recompute selective`".into(),
        (base.recompute == Recompute::None).then(|| MemoryPlan {
            recompute: Recompute::Selective,
            ..base.clone()
        }),
    ));
    out.push((
        "use `recompute full`".into(),
        "`recompute full`".into(),
        (base.recompute != Recompute::Full).then(|| MemoryPlan {
            recompute: Recompute::Full,
            ..base.clone()
        }),
    ));
    // Doubling tp within the innermost dim (a node), dp halving to keep the world.
    let tp2 = base.tp.saturating_mul(2);
    let node = sc.cluster.dims.first().map_or(1, |d| d.size);
    let tp_fits = v.tp_ok(tp2)
        && tp2 <= node
        && node.is_multiple_of(tp2)
        && base.dp.is_multiple_of(2)
        && (!base.sp || seq_ok(tp2))
        && (!sc.model.is_moe() || base.sp)
        && sc
            .world
            .is_multiple_of(tp2.saturating_mul(base.ep).saturating_mul(base.pp).max(1));
    let dp_note = |dp: u64| {
        if p.dp.is_some() {
            format!(" and `dp {dp}`")
        } else {
            String::new()
        }
    };
    out.push((
        format!("use `tp {tp2}`{}", dp_note(base.dp / 2)),
        format!("`tp {tp2}`"),
        tp_fits.then(|| MemoryPlan {
            tp: tp2,
            etp: tp2,
            dp: base.dp / 2,
            expert_dp: sc.world / tp2.saturating_mul(base.ep).saturating_mul(base.pp).max(1),
            microbatches: base.microbatches.saturating_mul(2),
            ..base.clone()
        }),
    ));
    // Doubling pp (even split only), dp halving.
    let pp2 = base.pp.saturating_mul(2);
    let uneven = p.first_stage_layers.is_some() || p.last_stage_layers.is_some();
    let split = split_layers(sc.model.layers, pp2, base.vpp, None, None).ok();
    let pp_fits = !uneven
        && split.is_some()
        && base.dp.is_multiple_of(2)
        && (base.vpp == 1 || pp2 >= 3 || sc.flags.overlap_p2p)
        && sc
            .world
            .is_multiple_of(base.tp.saturating_mul(base.ep).saturating_mul(pp2).max(1));
    out.push((
        format!("use `pp {pp2}`{}", dp_note(base.dp / 2)),
        format!("`pp {pp2}`"),
        match (pp_fits, split) {
            (true, Some(split)) => Some(MemoryPlan {
                pp: pp2,
                dp: base.dp / 2,
                expert_dp: sc.world / base.tp.saturating_mul(base.ep).saturating_mul(pp2).max(1),
                microbatches: base.microbatches.saturating_mul(2),
                schedule: resolved_schedule(pp2, base.vpp, p.schedule),
                split,
                ..base.clone()
            }),
            _ => None,
        },
    ));
    out
}

/// Applies the same change on top of an already-changed plan (for the cumulative search).
fn compose(acc: &MemoryPlan, base: &MemoryPlan, change: &MemoryPlan, world: u64) -> MemoryPlan {
    let mut out = acc.clone();
    if change.sp != base.sp {
        out.sp = change.sp;
    }
    if change.distributed_optimizer != base.distributed_optimizer {
        out.distributed_optimizer = change.distributed_optimizer;
    }
    if change.recompute != base.recompute {
        out.recompute = change.recompute;
    }
    if change.tp != base.tp {
        out.tp = change.tp;
        out.etp = change.etp;
        out.dp = (out.dp / 2).max(1);
        out.microbatches = out.microbatches.saturating_mul(2);
    }
    if change.pp != base.pp {
        out.pp = change.pp;
        out.split = change.split;
        out.schedule = change.schedule;
        out.dp = (out.dp / 2).max(1);
        out.microbatches = out.microbatches.saturating_mul(2);
    }
    out.expert_dp = (world / out.tp.saturating_mul(out.ep).saturating_mul(out.pp).max(1)).max(1);
    out
}

/// ` with \`dp N\`` when a combination changed dp and the plan wrote it.
fn dp_change(sc: &Scenario, plan: &MemoryPlan) -> String {
    if sc.plan.dp.is_some() && plan.dp != sc.dp {
        format!(" with `dp {}`", plan.dp)
    } else {
        String::new()
    }
}

/// What the largest stage of `plan` needs: its peak plus the plan's `reserve`.
fn peak_of(sc: &Scenario, plan: &MemoryPlan) -> Bytes {
    let stages: Vec<StageMemory> = stage_memory(&sc.model, plan);
    let peak = worst(&stages).map_or(Bytes(0), |s| s.peak);
    Bytes(peak.0.saturating_add(sc.plan.reserve().0))
}

/// The cheapest change (in the order sp, distributed optimizer, selective recompute, full
/// recompute, double tp, double pp) that brings the largest stage to `target` or below; if no
/// single change does, the shortest prefix of those changes applied together.
fn memory_help(v: &Validator<'_>, sc: &Scenario, target: Bytes) -> String {
    let base = sc.memory_plan();
    let all = changes(v, sc, &base);
    let cap = sc.cluster.gpu.memory;
    for (desc, _, plan) in &all {
        if let Some(plan) = plan {
            let peak = peak_of(sc, plan);
            if peak <= target {
                return format!(
                    "{desc}: the largest stage then needs {} of {}",
                    gib(peak),
                    gib(cap)
                );
            }
        }
    }
    let mut acc = base.clone();
    let mut applied: Vec<String> = Vec::new();
    let mut peak = peak_of(sc, &acc);
    for (_, item, plan) in &all {
        let Some(plan) = plan else { continue };
        // Full recompute replaces selective: keep only the stronger one in the description.
        if plan.recompute == Recompute::Full && plan.recompute != base.recompute {
            applied.retain(|d| !d.contains("recompute"));
        }
        acc = compose(&acc, &base, plan, sc.world);
        applied.push(item.clone());
        peak = peak_of(sc, &acc);
        if peak <= target {
            return format!(
                "combine {}{}: the largest stage then needs {} of {}",
                join_and(&applied),
                dp_change(sc, &acc),
                gib(peak),
                gib(cap)
            );
        }
    }
    if applied.is_empty() {
        format!(
            "use GPUs with more than {} of memory, or more GPUs",
            gib(peak)
        )
    } else {
        format!(
            "even with {}{} the largest stage needs {}; use more GPUs or GPUs with more memory",
            join_and(&applied),
            dp_change(sc, &acc),
            gib(peak)
        )
    }
}

#[cfg(test)]
mod tests;
