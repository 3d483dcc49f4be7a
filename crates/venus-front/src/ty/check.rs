//! Type checking: merged definitions → typed [`Model`], [`Gpu`], [`Cluster`], [`Plan`] and
//! [`ScenarioDef`].
//!
//! Input: a [`Resolver`] over one program. Output: the typed scenarios of the root file; the
//! diagnostics (E0101–E0103, E0201–E0204, W0002, E0313–E0314 from [`super::domain`], and the
//! resolver's own) go to the resolver.
//! Invariants: a definition is checked once however many scenarios use it, and every user
//! definition is checked even when no scenario uses it; a [`ScenarioDef`] is clean only when
//! everything it uses checked without error, otherwise it is a [`PartialScenario`] that lists
//! the rejected keys; every typed value keeps the
//! [`Loc`] of the value that wrote it (the item, for flags).

use std::collections::HashMap;
use std::sync::Arc;

use super::problem::{DimHint, KeyHint, TyProblem, ValueProblem, WordHint};
use super::value::{self, describe_found, enum_word, Arg, ValueCtx};
use super::{
    Cluster, CollectiveAlgorithm, Dim, Expect, Fabric, Gpu, GpuArch, LinkKind, Measured, Model,
    PartialScenario, Plan, ScenarioDef, Spanned, Topology, Train,
};
use crate::resolve::{DefId, MergedDef, MergedItem, Resolver, ScenarioSource};
use venus_diag::diag::{suggest, Code, Diagnostic, Loc};
use venus_syntax::syntax::ast::{self, DefKind, ValueKind};
use venus_syntax::syntax::schema::{self, ArgType, BlockKind, Key, KeySig};

/// Resolves and type-checks the root's scenarios. Diagnostics are left in the resolver.
pub fn check_program(res: &Resolver) -> Vec<ScenarioDef> {
    check_program_all(res).0
}

/// Resolves and type-checks the root's scenarios and every other user definition (so an
/// error in a definition no scenario uses is still reported). Returns the scenarios that
/// checked without error, and those whose definitions had errors but whose required keys are
/// all there ([`PartialScenario`]: plan validation still runs on them).
pub fn check_program_all(res: &Resolver) -> (Vec<ScenarioDef>, Vec<PartialScenario>) {
    res.resolve_all_names();
    let mut checker = Checker::new(res);
    let mut out = Vec::new();
    let mut partial = Vec::new();
    for source in res.scenarios() {
        checker.frames.push(Status::ok());
        let s = checker.scenario(&source);
        let status = checker.frames.pop().unwrap_or_default();
        match s {
            Some(def) if status.ok => out.push(def),
            Some(def) => partial.push(PartialScenario {
                def,
                failed: status.failed,
            }),
            None => {}
        }
    }
    checker.unused_definitions();
    res.report_unused();
    (out, partial)
}

/// Every stdlib GPU, type-checked, in stdlib order: the alternatives E0312's help names.
pub fn stdlib_gpus(res: &Resolver) -> Vec<super::StdlibGpu> {
    let mut checker = Checker::new(res);
    res.prelude_defs(DefKind::Gpu)
        .into_iter()
        .filter_map(|(_, id)| checker.gpu(&Target::Def(id)))
        .map(|g| super::StdlibGpu::of(&g))
        .collect()
}

/// How a definition (and what it uses) checked: `ok` when without error; `failed` the keys
/// whose items were rejected.
#[derive(Clone, Debug, Default)]
struct Status {
    ok: bool,
    failed: Vec<Key>,
}

impl Status {
    fn ok() -> Status {
        Status {
            ok: true,
            failed: Vec::new(),
        }
    }
    fn absorb(&mut self, other: &Status) {
        self.ok &= other.ok;
        for f in &other.failed {
            if !self.failed.contains(f) {
                self.failed.push(*f);
            }
        }
    }
}

/// What a `Ref` argument points at.
#[derive(Clone, Debug)]
enum Target {
    Def(DefId),
    Inline(Arc<MergedDef>),
}

/// A typed argument with its location.
#[derive(Clone, Debug)]
enum Checked {
    Arg(Arg),
    Flag(bool),
    Ref(Target),
    Nested(Box<Fields>),
}

/// One item whose arguments all type-checked.
#[derive(Clone, Debug)]
struct Item {
    key: Key,
    loc: Loc,
    args: Vec<(Checked, Loc)>,
}

/// The valid items of one block, in order; `ok` is false when any item had an error;
/// `failed` the known keys whose item was rejected.
#[derive(Clone, Debug)]
struct Fields {
    items: Vec<Item>,
    ok: bool,
    failed: Vec<Key>,
}

impl Fields {
    fn first(&self, key: Key) -> Option<&Item> {
        self.items.iter().find(|i| i.key == key)
    }
    fn arg(&self, key: Key) -> Option<(&Checked, Loc)> {
        self.first(key)
            .and_then(|i| i.args.first())
            .map(|(c, l)| (c, *l))
    }
    fn count(&self, key: Key) -> Option<Spanned<u64>> {
        match self.arg(key)? {
            (Checked::Arg(Arg::Count(c)), loc) => Some(Spanned::new(*c, loc)),
            _ => None,
        }
    }
    fn flag(&self, key: Key) -> Option<Spanned<bool>> {
        let item = self.first(key)?;
        match item.args.first() {
            Some((Checked::Flag(b), _)) => Some(Spanned::new(*b, item.loc)),
            _ => None,
        }
    }
    fn word(&self, key: Key) -> Option<Spanned<&'static str>> {
        match self.arg(key)? {
            (Checked::Arg(Arg::Word(w)), loc) => Some(Spanned::new(*w, loc)),
            _ => None,
        }
    }
    fn get<T>(&self, key: Key, f: impl Fn(&Arg) -> Option<T>) -> Option<Spanned<T>> {
        match self.arg(key)? {
            (Checked::Arg(a), loc) => f(a).map(|v| Spanned::new(v, loc)),
            _ => None,
        }
    }
    /// A one-word key as its enum, at the word.
    fn word_of<T: venus_base::base::FromWord>(&self, key: Key) -> Option<Spanned<T>> {
        self.word(key)
            .and_then(|w| T::from_word(w.value).map(|v| Spanned::new(v, w.loc)))
    }
    /// A list-of-words key as its set, at the whole item.
    fn words_of<T: venus_base::base::FromWords>(&self, key: Key) -> Option<Spanned<T>> {
        self.first(key).map(|item| {
            let words = item.args.iter().filter_map(|(c, _)| match c {
                Checked::Arg(Arg::Word(w)) => Some(*w),
                _ => None,
            });
            Spanned::new(T::from_words(words), item.loc)
        })
    }
}

/// Reads one plain plan key of `venus_plan::plan_keys!` by its reading.
macro_rules! read_plain {
    ($f:ident, count, $ty:ty, $key:ident) => {
        $f.count(Key::$key)
    };
    ($f:ident, flag, $ty:ty, $key:ident) => {
        $f.flag(Key::$key)
    };
    ($f:ident, bytes, $ty:ty, $key:ident) => {
        $f.get(Key::$key, bytes)
    };
    ($f:ident, ratio, $ty:ty, $key:ident) => {
        $f.get(Key::$key, ratio)
    };
    ($f:ident, time, $ty:ty, $key:ident) => {
        $f.get(Key::$key, time)
    };
    ($f:ident, word, $ty:ty, $key:ident) => {
        $f.word_of::<$ty>(Key::$key)
    };
    ($f:ident, words, $ty:ty, $key:ident) => {
        $f.words_of::<$ty>(Key::$key)
    };
}

/// The `Plan` literal: the fields given by hand, then every plain key read from `$f`.
macro_rules! fill_plan {
    (($f:ident { $($custom:tt)* }) $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
        Plan {
            $($custom)*
            $( $field: read_plain!($f, $how, $ty, $key), )*
        }
    };
}

/// The plain plan keys as (field, key, reading), for the tests that keep the list and the key
/// table in step.
#[cfg(test)]
macro_rules! plain_plan_keys {
    (() $( $(#[$doc:meta])* $field:ident : $ty:ty = $key:ident, $how:ident; )*) => {
        pub(crate) const PLAIN_PLAN_KEYS: &[(&str, Key, &str)] =
            &[ $( (stringify!($field), Key::$key, stringify!($how)), )* ];
        /// Every word the key table admits for each `word` key maps to a value.
        pub(crate) fn unmapped_plan_words() -> Vec<(&'static str, &'static str)> {
            let mut out = Vec::new();
            $( plain_words!(out, $how, $ty, $key); )*
            out
        }
    };
}

#[cfg(test)]
macro_rules! plain_words {
    ($out:ident, word, $ty:ty, $key:ident) => {
        let sig = &schema::TABLE[Key::$key as usize];
        if let Some(schema::ArgType::Enum(words)) = sig.args.first() {
            for w in words.iter() {
                if <$ty as venus_base::base::FromWord>::from_word(w).is_none() {
                    $out.push((sig.key, *w));
                }
            }
        }
    };
    ($out:ident, $other:ident, $ty:ty, $key:ident) => {};
}

#[cfg(test)]
venus_plan::plan_keys!(plain_plan_keys!());

/// A `moe_dispatcher` item: its dispatcher word and, for `flex`, the backend (DeepEP unless
/// `hybridep` is named, Megatron's default `--moe-flex-dispatcher-backend`).
fn moe_dispatcher_of(item: &Item) -> Option<venus_base::base::MoeDispatcher> {
    use venus_base::base::{FlexBackend, MoeDispatcher};
    let word = |i: usize| match item.args.get(i) {
        Some((Checked::Arg(Arg::Word(w)), _)) => Some(*w),
        _ => None,
    };
    match word(0)? {
        "alltoall" => Some(MoeDispatcher::AllToAll),
        "allgather" => Some(MoeDispatcher::AllGather),
        _ => Some(MoeDispatcher::Flex(match word(1) {
            Some("hybridep") => FlexBackend::HybridEp,
            _ => FlexBackend::DeepEp,
        })),
    }
}

/// An `fsdp` strategy word (the key table admits only its four).
fn fsdp_strategy_of(w: &str) -> venus_base::base::FsdpStrategy {
    use venus_base::base::FsdpStrategy;
    match w {
        "no_shard" => FsdpStrategy::NoShard,
        "optim" => FsdpStrategy::Optim,
        "optim_grads" => FsdpStrategy::OptimGrads,
        _ => FsdpStrategy::OptimGradsParams,
    }
}

/// A `venussim` item's two strings (other items: `None`).
fn venussim_item(item: &Item) -> Option<super::VenusSimItem> {
    if item.key != Key::Venussim {
        return None;
    }
    let text = |i: usize| match item.args.get(i) {
        Some((Checked::Arg(Arg::Str { text, .. }), l)) => Some(Spanned::new(text.clone(), *l)),
        _ => None,
    };
    Some(super::VenusSimItem {
        path: text(0)?,
        json: text(1)?,
        loc: item.loc,
    })
}

fn layout_text(a: &Arg) -> Option<super::LayoutText> {
    if let Arg::Str { text, raw } = a {
        Some(super::LayoutText {
            text: text.clone(),
            raw: *raw,
        })
    } else {
        None
    }
}
fn bytes(a: &Arg) -> Option<super::Bytes> {
    if let Arg::Bytes(b) = a {
        Some(*b)
    } else {
        None
    }
}
fn bandwidth(a: &Arg) -> Option<super::BytesPerSec> {
    if let Arg::Bandwidth(b) = a {
        Some(*b)
    } else {
        None
    }
}
fn time(a: &Arg) -> Option<super::Seconds> {
    if let Arg::Time(t) = a {
        Some(*t)
    } else {
        None
    }
}
fn rate(a: &Arg) -> Option<super::FlopsPerSec> {
    if let Arg::Rate(r) = a {
        Some(*r)
    } else {
        None
    }
}
fn ratio(a: &Arg) -> Option<super::Ratio> {
    if let Arg::Ratio(r) = a {
        Some(*r)
    } else {
        None
    }
}

/// `dim NAME fc|ring|switch COUNT BANDWIDTH [TIME]` (the table renders it).
pub fn signature(sig: &KeySig) -> String {
    sig.signature()
}

/// A plausible value for `key`, for helps: `hidden 4096`, `memory 80GiB`.
pub fn example(sig: &KeySig) -> String {
    let specific = sig.example;
    let args = match specific {
        Some(s) => s.to_string(),
        None => sig
            .args
            .iter()
            .map(|a| example_arg(*a))
            .collect::<Vec<_>>()
            .join(" "),
    };
    if args.is_empty() {
        sig.key.to_string()
    } else {
        format!("{} {args}", sig.key)
    }
}

fn example_arg(a: ArgType) -> String {
    match a {
        ArgType::Count => "8".into(),
        ArgType::Bytes => "80GiB".into(),
        ArgType::Bandwidth => "450GB/s".into(),
        ArgType::Time => "1000ns".into(),
        ArgType::Rate => "989TFLOP/s".into(),
        ArgType::RateOrTflops => "400".into(),
        ArgType::Ratio => "55%".into(),
        ArgType::LargeCount => "15T".into(),
        ArgType::Price => "2.5".into(),
        ArgType::Ref(DefKind::Gpu) => "h100_sxm".into(),
        ArgType::Ref(k) => format!("{} < ... >", k.keyword()),
        ArgType::NewName => "nvlink".into(),
        ArgType::Str => "\"Et|(tt|)*30L\"".into(),
        ArgType::Enum(w) => w.first().copied().unwrap_or("").into(),
        ArgType::Nested(b) => format!(
            "< {} >",
            schema::keys(b)
                .iter()
                .filter(|k| k.required)
                .map(example)
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// The checker's memo of typed definitions (a gpu used by two clusters is checked once).
struct Checker<'r, 'a> {
    res: &'r Resolver<'a>,
    models: HashMap<DefId, Option<Model>>,
    gpus: HashMap<DefId, Option<Gpu>>,
    clusters: HashMap<DefId, Option<Cluster>>,
    plans: HashMap<DefId, Option<Plan>>,
    /// How each memoised definition checked.
    statuses: HashMap<DefId, Status>,
    /// One per definition being checked (innermost last); blocks report into the top one.
    frames: Vec<Status>,
    /// False while checking definitions no scenario uses: an abstract base may leave required
    /// keys to its children, so E0103 is not reported for them.
    report_missing: bool,
    /// The items checked so far (file and span), so a definition checked on its own after
    /// being checked as another's base does not report its items again.
    checked_items: std::collections::HashSet<Loc>,
}

impl<'r, 'a> Checker<'r, 'a> {
    fn new(res: &'r Resolver<'a>) -> Self {
        Checker {
            res,
            models: HashMap::new(),
            gpus: HashMap::new(),
            clusters: HashMap::new(),
            plans: HashMap::new(),
            statuses: HashMap::new(),
            frames: vec![Status::ok()],
            report_missing: true,
            checked_items: std::collections::HashSet::new(),
        }
    }

    /// Type-checks the user definitions no scenario used, each on its own items (not the
    /// inherited ones, which their own definition reports), without E0103.
    fn unused_definitions(&mut self) {
        self.report_missing = false;
        let mut files: Vec<_> = self
            .res
            .user_files()
            .into_iter()
            .filter_map(|f| self.res.index(f).map(|i| i.defs.clone()))
            .collect();
        let mut unused = Vec::new();
        for defs in &mut files {
            for e in defs.iter() {
                let used = match e.kind {
                    DefKind::Model => self.models.contains_key(&e.id),
                    DefKind::Gpu => self.gpus.contains_key(&e.id),
                    DefKind::Cluster => self.clusters.contains_key(&e.id),
                    DefKind::Plan => self.plans.contains_key(&e.id),
                    DefKind::Scenario => true,
                };
                let Some(def) = self.res.def(e.id).filter(|_| !used) else {
                    continue;
                };
                if !self.res.is_duplicate(e) {
                    unused.push(e.clone());
                }
                let items: Vec<MergedItem> = def
                    .body
                    .items
                    .iter()
                    .filter(|item| !self.checked_items.contains(&Loc::new(e.id.file, item.span)))
                    .map(|item| MergedItem {
                        file: e.id.file,
                        item: item.clone(),
                        origin: crate::resolve::Origin::Def(e.id),
                    })
                    .collect();
                let what = match &e.name {
                    Some(n) => format!("{} `{n}`", e.kind.keyword()),
                    None => format!("unnamed {}", e.kind.keyword()),
                };
                self.frames.push(Status::ok());
                let f = self.block(BlockKind::Def(e.kind), &items, e.name_loc, &what);
                // A gpu named by a cluster is checked with it.
                if let Some((Checked::Ref(t), _)) = f.arg(Key::Gpu) {
                    let t = t.clone();
                    self.gpu(&t);
                }
                self.frames.pop();
            }
        }
        self.report_missing = true;
        self.check_unused_defs(&unused);
    }

    /// Definitions no scenario uses are still checked whole, scenario or not (a library is
    /// meant to be `use`d): an inheritance cycle among them is E0105, and one that nothing
    /// references (no definition inherits from it, no scenario names it) must be complete:
    /// its missing required keys are one E0103. Linear in the definitions: each base link is
    /// followed once, and only the leaves of the inheritance forest are merged.
    fn check_unused_defs(&mut self, unused: &[crate::resolve::DefEntry]) {
        let references = self.res.references();
        let referenced: std::collections::HashSet<DefId> =
            references.iter().map(|r| r.target).collect();
        let target_at: HashMap<Loc, DefId> = references.iter().map(|r| (r.at, r.target)).collect();
        let base_of = |e: &crate::resolve::DefEntry| -> Option<DefId> {
            let base = self.res.def(e.id)?.base.as_ref()?;
            target_at.get(&Loc::new(e.id.file, base.span)).copied()
        };
        let bases: HashMap<DefId, DefId> = unused
            .iter()
            .filter_map(|e| base_of(e).map(|b| (e.id, b)))
            .collect();
        self.report_base_cycles(&bases);
        for e in unused {
            if e.kind == DefKind::Scenario || referenced.contains(&e.id) {
                continue;
            }
            let Some(merged) = self.res.merged(e.id) else {
                continue;
            };
            let missing: Vec<&KeySig> = schema::keys(BlockKind::Def(e.kind))
                .iter()
                .filter(|k| k.required && !merged.items.iter().any(|m| m.item.key.text == k.key))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let what = match &e.name {
                Some(n) => format!("{} `{n}`", e.kind.keyword()),
                None => format!("unnamed {}", e.kind.keyword()),
            };
            self.problem(TyProblem::DefMissingKeys {
                what,
                keys: missing.iter().map(|k| k.key).collect(),
                examples: missing.iter().map(|k| example(k)).collect(),
                loc: e.name_loc,
            });
        }
    }

    /// E0105 for each cycle of `base` links (definition → its base), found by following each
    /// chain once (white/grey/black marking); the resolver's merge reports the cycle.
    fn report_base_cycles(&self, bases: &HashMap<DefId, DefId>) {
        let mut done: std::collections::HashSet<DefId> = std::collections::HashSet::new();
        let mut starts: Vec<DefId> = bases.keys().copied().collect();
        starts.sort();
        for start in starts {
            let mut path: Vec<DefId> = Vec::new();
            let mut on_path: std::collections::HashSet<DefId> = std::collections::HashSet::new();
            let mut cur = start;
            while !done.contains(&cur) {
                if !on_path.insert(cur) {
                    // `cur` closes a cycle: merging it reports E0105 (once per cycle).
                    let _ = self.res.merged(cur);
                    break;
                }
                path.push(cur);
                match bases.get(&cur) {
                    Some(&next) => cur = next,
                    None => break,
                }
            }
            done.extend(path);
        }
    }

    fn text(&self, loc: Loc) -> &'a str {
        self.res.text(loc).unwrap_or("")
    }

    fn scenario(&mut self, source: &ScenarioSource) -> Option<ScenarioDef> {
        match source {
            ScenarioSource::Implicit {
                name,
                loc,
                model,
                cluster,
                plan,
            } => {
                let model = self.model(&Target::Def(*model));
                let cluster = self.cluster(&Target::Def(*cluster));
                let plan = self.plan(&Target::Def(*plan));
                Some(ScenarioDef {
                    name: name.clone(),
                    loc: *loc,
                    model: model?,
                    cluster: cluster?,
                    plan: plan?,
                    expect: Expect::default(),
                    train: Train::default(),
                })
            }
            ScenarioSource::Explicit(id) => {
                let def = self.res.merged(*id)?;
                let f = self.block(
                    BlockKind::Def(DefKind::Scenario),
                    &def.items,
                    def.loc,
                    &def.describe(),
                );
                let target = |key: Key| match f.arg(key) {
                    Some((Checked::Ref(t), _)) => Some(t.clone()),
                    _ => None,
                };
                let model = target(Key::Model).and_then(|t| self.model(&t));
                let cluster = target(Key::Cluster).and_then(|t| self.cluster(&t));
                let plan = target(Key::Plan).and_then(|t| self.plan(&t));
                let expect = match f.arg(Key::Expect) {
                    Some((Checked::Nested(e), _)) => expect(e),
                    _ => Expect::default(),
                };
                let train = match f.arg(Key::Train) {
                    Some((Checked::Nested(t), _)) => train(t),
                    _ => Train::default(),
                };
                Some(ScenarioDef {
                    name: def.name.clone().unwrap_or_else(|| "scenario".into()),
                    loc: def.loc,
                    model: model?,
                    cluster: cluster?,
                    plan: plan?,
                    expect,
                    train,
                })
            }
        }
    }

    /// The merged items of a target; `None` when its inheritance is broken (already reported).
    fn merged(&self, t: &Target) -> Option<Arc<MergedDef>> {
        match t {
            Target::Def(id) => self.res.merged(*id),
            Target::Inline(m) => Some(m.clone()),
        }
    }

    fn memo<T: Clone>(
        &mut self,
        t: &Target,
        cache: fn(&mut Self) -> &mut HashMap<DefId, Option<T>>,
        build: fn(&mut Self, &MergedDef) -> Option<T>,
    ) -> Option<T> {
        if let Target::Def(id) = t {
            if let Some(v) = cache(self).get(id) {
                let v = v.clone();
                let status = self.statuses.get(id).cloned().unwrap_or_default();
                self.absorb(&status);
                return v;
            }
        }
        self.frames.push(Status::ok());
        let merged = self.merged(t);
        let v = merged.as_ref().and_then(|m| build(self, m));
        let mut status = self.frames.pop().unwrap_or_default();
        if merged.is_none() {
            status.ok = false;
        }
        if let Target::Def(id) = t {
            cache(self).insert(*id, v.clone());
            self.statuses.insert(*id, status.clone());
        }
        self.absorb(&status);
        v
    }

    fn absorb(&mut self, status: &Status) {
        if let Some(top) = self.frames.last_mut() {
            top.absorb(status);
        }
    }

    fn model(&mut self, t: &Target) -> Option<Model> {
        self.memo(t, |c| &mut c.models, Self::build_model)
    }
    fn gpu(&mut self, t: &Target) -> Option<Gpu> {
        self.memo(t, |c| &mut c.gpus, Self::build_gpu)
    }
    fn cluster(&mut self, t: &Target) -> Option<Cluster> {
        self.memo(t, |c| &mut c.clusters, Self::build_cluster)
    }
    fn plan(&mut self, t: &Target) -> Option<Plan> {
        self.memo(t, |c| &mut c.plans, Self::build_plan)
    }

    fn build_model(&mut self, def: &MergedDef) -> Option<Model> {
        let f = self.block(
            BlockKind::Def(DefKind::Model),
            &def.items,
            def.loc,
            &def.describe(),
        );
        Some(Model {
            name: def.name.clone().unwrap_or_else(|| "model".into()),
            loc: def.loc,
            hidden: f.count(Key::Hidden)?,
            layers: f.count(Key::Layers)?,
            heads: f.count(Key::Heads)?,
            vocab: f.count(Key::Vocab)?,
            seq: f.count(Key::Seq)?,
            ffn: f.count(Key::Ffn),
            kv_groups: f.count(Key::KvGroups),
            head_dim: f.count(Key::HeadDim),
            swiglu: f.flag(Key::Swiglu),
            untied_embeddings: f.flag(Key::UntiedEmbeddings),
            experts: f.count(Key::Experts),
            topk: f.count(Key::Topk),
            moe_ffn: f.count(Key::MoeFfn),
            shared_expert_ffn: f.count(Key::SharedExpertFfn),
            shared_experts: f.count(Key::SharedExperts),
            first_k_dense: f.count(Key::FirstKDense),
            q_lora_rank: f.count(Key::QLoraRank),
            kv_lora_rank: f.count(Key::KvLoraRank),
            qk_nope_head_dim: f.count(Key::QkNopeHeadDim),
            qk_rope_head_dim: f.count(Key::QkRopeHeadDim),
            v_head_dim: f.count(Key::VHeadDim),
            mtp_layers: f.count(Key::MtpLayers),
            hybrid_override_pattern: f.get(Key::HybridOverridePattern, layout_text),
            mamba_num_heads: f.count(Key::MambaNumHeads),
            mamba_head_dim: f.count(Key::MambaHeadDim),
            ssm_state_size: f.count(Key::SsmStateSize),
            n_groups: f.count(Key::NGroups),
            conv_kernel: f.count(Key::ConvKernel),
            moe_latent_size: f.count(Key::MoeLatentSize),
            sliding_window: f.count(Key::SlidingWindow),
            sliding_window_pattern: f.count(Key::SlidingWindowPattern),
            attention_sinks: f.flag(Key::AttentionSinks),
            qk_norm: f.flag(Key::QkNorm),
            routed_groups: f.count(Key::RoutedGroups),
            topk_groups: f.count(Key::TopkGroups),
            moe_layer_freq: f.count(Key::MoeLayerFreq),
            expert_bias: f.flag(Key::ExpertBias),
            // The word was checked against `schema::LOAD_BALANCING` (E0204).
            load_balancing: f.word(Key::LoadBalancing).and_then(|w| {
                venus_plan::plan::spec::LoadBalancing::from_word(w.value)
                    .map(|b| Spanned::new(b, w.loc))
            }),
        })
    }

    fn build_gpu(&mut self, def: &MergedDef) -> Option<Gpu> {
        self.warn_decimal_memory(def);
        let f = self.block(
            BlockKind::Def(DefKind::Gpu),
            &def.items,
            def.loc,
            &def.describe(),
        );
        Some(Gpu {
            name: def.name.clone().unwrap_or_else(|| "gpu".into()),
            loc: def.loc,
            peak: f.get(Key::Peak, rate)?,
            memory: f.get(Key::Memory, bytes)?,
            mem_bw: f.get(Key::MemBw, bandwidth)?,
            fp8_peak: f.get(Key::Fp8Peak, rate),
            fp4_peak: f.get(Key::Fp4Peak, rate),
            gemm_efficiency: f.get(Key::GemmEfficiency, ratio),
            gemm_half_dim: f.count(Key::GemmHalfDim),
            sms: f.count(Key::Sms),
            // The word was checked against `schema::ARCHS` (E0204), whose words are
            // `GpuArch::word`s (a test keeps them equal).
            arch: f.word(Key::Arch).map(|w| {
                Spanned::new(
                    GpuArch::from_word(w.value).unwrap_or(GpuArch::Hopper),
                    w.loc,
                )
            }),
        })
    }

    fn build_cluster(&mut self, def: &MergedDef) -> Option<Cluster> {
        let f = self.block(
            BlockKind::Def(DefKind::Cluster),
            &def.items,
            def.loc,
            &def.describe(),
        );
        let gpu_item = f.first(Key::Gpu);
        let gpu = match gpu_item.and_then(|i| i.args.first()) {
            Some((Checked::Ref(t), _)) => {
                let t = t.clone();
                self.gpu(&t)
            }
            _ => None,
        };
        let mut dims = Vec::new();
        for item in f.items.iter().filter(|i| i.key == Key::Dim) {
            dims.push(dim(item)?);
        }
        let nodes = f.count(Key::Nodes);
        if let Some(nodes) = &nodes {
            // `nodes N` sets the size of the outermost dim, after inheritance.
            if let Some(last) = dims.last_mut() {
                last.size = nodes.clone();
            }
        }
        let keys = super::domain::DomainKeys {
            gpus: f.count(Key::Gpus),
            per_domain: f.count(Key::PerDomain),
            tray: f.count(Key::Tray),
            nodes,
        };
        match super::domain::apply(&mut dims, &keys) {
            Ok(None) => {}
            Ok(Some(warning)) => self.res.report(warning.diagnostic()),
            Err(problem) => self.reject(problem.diagnostic(), Key::Gpus),
        }
        for item in f.items.iter().filter(|i| i.key == Key::Algo) {
            self.pin_algorithm(&mut dims, item);
        }
        for item in f
            .items
            .iter()
            .filter(|i| matches!(i.key, Key::Link | Key::Rail | Key::FatTree | Key::Sharp))
        {
            self.set_fabric(&mut dims, item);
        }
        Some(Cluster {
            name: def.name.clone(),
            loc: def.loc,
            gpu: gpu?,
            gpu_loc: gpu_item?.loc,
            dims,
            reserve: f.get(Key::ClusterReserve, bytes),
            slow: f.items.iter().filter_map(slow_item).collect(),
            reliability: reliability(&f),
        })
    }

    fn build_plan(&mut self, def: &MergedDef) -> Option<Plan> {
        let f = self.block(
            BlockKind::Def(DefKind::Plan),
            &def.items,
            def.loc,
            &def.describe(),
        );
        let measured = match f.first(Key::Measured) {
            Some(item) => match item.args.first() {
                Some((Checked::Nested(m), _)) => Some(Measured {
                    first: m.get(Key::First, time)?,
                    middle: m.get(Key::Middle, time)?,
                    last: m.get(Key::Last, time)?,
                    unused: m.flag(Key::Unused).is_some_and(|f| f.value),
                    loc: item.loc,
                }),
                _ => return None,
            },
            None => None,
        };
        Some(venus_plan::plan_keys!(fill_plan!(f {
            name: def.name.clone(),
            loc: def.loc,
            micro_batch: f.count(Key::MicroBatch)?,
            global_batch: f.count(Key::GlobalBatch)?,
            measured,
            fsdp: f.first(Key::Fsdp).and_then(|item| match item.args.first() {
                Some((Checked::Arg(Arg::Word(w)), _)) => {
                    Some(Spanned::new(fsdp_strategy_of(w), item.loc))
                }
                _ => None,
            }),
            fsdp_impl: f.first(Key::Fsdp).map(|item| {
                let torch = matches!(
                    item.args.get(1),
                    Some((Checked::Arg(Arg::Word("torch")), _))
                );
                let imp = if torch {
                    venus_base::base::FsdpImpl::Torch
                } else {
                    venus_base::base::FsdpImpl::Megatron
                };
                Spanned::new(imp, item.loc)
            }),
            pipeline_layout: f.get(Key::PipelineLayout, layout_text),
            venussim: f.items.iter().filter_map(venussim_item).collect(),
            moe_dispatcher: f
                .first(Key::MoeDispatcher)
                .and_then(|item| moe_dispatcher_of(item).map(|d| Spanned::new(d, item.loc))),
            moe_backend: f
                .first(Key::MoeDispatcher)
                .and_then(|item| match item.args.get(1) {
                    Some((Checked::Arg(Arg::Word(w)), loc)) => Some(Spanned::new(
                        if *w == "hybridep" {
                            venus_base::base::FlexBackend::HybridEp
                        } else {
                            venus_base::base::FlexBackend::DeepEp
                        },
                        *loc,
                    )),
                    _ => None,
                }),
            cp_a2a: f
                .first(Key::CpComm)
                .and_then(|item| match item.args.get(1) {
                    Some((Checked::Arg(Arg::Count(n)), loc)) => Some(Spanned::new(*n, *loc)),
                    _ => None,
                }),
            cuda_graph_modules: f.first(Key::CudaGraphs).and_then(|item| {
                let words: Vec<&str> = item
                    .args
                    .iter()
                    .skip(1)
                    .filter_map(|(c, _)| match c {
                        Checked::Arg(Arg::Word(w)) => Some(*w),
                        _ => None,
                    })
                    .collect();
                (!words.is_empty()).then(|| {
                    Spanned::new(
                        venus_base::base::CudaGraphModules::from_words(words),
                        item.loc,
                    )
                })
            }),
        })))
    }

    /// Checks the items of one block against the key table: E0101, E0102, E0103, E0203 and
    /// the argument types. `owner` is what E0103 labels; `what` names the block in messages.
    fn block(&mut self, kind: BlockKind, items: &[MergedItem], owner: Loc, what: &str) -> Fields {
        let mut fields = Fields {
            items: Vec::new(),
            ok: true,
            failed: Vec::new(),
        };
        let mut seen: HashMap<Key, Loc> = HashMap::new();
        let mut dims: HashMap<String, Loc> = HashMap::new();
        // The item written right after each one in the same block (with a base, the merged
        // list interleaves inherited items, so `i + 1` may be another block's item).
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| {
            let m = &items[i];
            (m.file, m.item.span.start)
        });
        let mut next_written: Vec<Option<usize>> = vec![None; items.len()];
        for pair in order.windows(2) {
            if let (Some(&a), Some(&b)) = (pair.first(), pair.get(1)) {
                if items[a].origin == items[b].origin && items[a].file == items[b].file {
                    next_written[a] = Some(b);
                }
            }
        }
        let mut skipped = std::collections::HashSet::new();
        // Keys an unknown key was taken for (`micro_batch_size` → `micro_batch`): E0101
        // already says to write them, so E0103 does not say it again.
        let mut meant_keys: Vec<Key> = Vec::new();
        for (i, m) in items.iter().enumerate() {
            if skipped.contains(&i) {
                continue;
            }
            let key_loc = Loc::new(m.file, m.item.key.span);
            let Some(sig) = schema::lookup(kind, &m.item.key.text) else {
                if let Some(meant) = megatron_spelling(kind, &m.item.key.text) {
                    meant_keys.push(meant.id);
                }
                self.problem(unknown_key(kind, &m.item.key.text, key_loc, what));
                fields.ok = false;
                continue;
            };
            if !sig.repeatable {
                if let Some(first) = seen.get(&sig.id) {
                    self.problem(TyProblem::WrittenTwice {
                        key: sig.key,
                        what: what.to_string(),
                        loc: key_loc,
                        first: *first,
                    });
                    fields.ok = false;
                    fields.failed.push(sig.id);
                    continue;
                }
                seen.insert(sig.id, key_loc);
            }
            let next = next_written.get(i).copied().flatten();
            if let Some(p) =
                self.name_as_missing_argument(kind, sig, m, next.and_then(|n| items.get(n)))
            {
                self.problem(p.into());
                fields.ok = false;
                fields.failed.push(sig.id);
                skipped.extend(next);
                continue;
            }
            match self.item(sig, m) {
                Some(item) => {
                    if sig.id == Key::Dim {
                        if let Some((Checked::Arg(Arg::Name(n)), loc)) = item.args.first() {
                            if let Some(first) = dims.get(n) {
                                self.problem(TyProblem::DimWrittenTwice {
                                    name: n.clone(),
                                    what: what.to_string(),
                                    loc: *loc,
                                    first: *first,
                                });
                                fields.ok = false;
                                fields.failed.push(sig.id);
                                continue;
                            }
                            dims.insert(n.clone(), *loc);
                        }
                    }
                    fields.items.push(item);
                }
                None => {
                    fields.ok = false;
                    fields.failed.push(sig.id);
                }
            }
        }
        for sig in schema::keys(kind).iter().filter(|k| k.required) {
            // A key that was written but had an error is not also missing.
            let written =
                items.iter().any(|m| m.item.key.text == sig.key) || meant_keys.contains(&sig.id);
            if !written && self.report_missing {
                self.problem(TyProblem::MissingKey {
                    what: what.to_string(),
                    key: sig.key,
                    example: example(sig),
                    owner,
                });
                fields.ok = false;
            }
        }
        self.checked_items
            .extend(items.iter().map(|m| Loc::new(m.file, m.item.span)));
        if let (BlockKind::Def(_), Some(top)) = (kind, self.frames.last_mut()) {
            top.ok &= fields.ok;
            for key in &fields.failed {
                if !top.failed.contains(key) {
                    top.failed.push(*key);
                }
            }
        }
        fields
    }

    /// `tp two`: the parser lets only name-typed slots take a name, so `two` became an item of
    /// its own and `tp` lacks its argument. Reported as the wrong kind of value (E0201) on the
    /// name, rather than as a missing argument plus an unknown key.
    fn name_as_missing_argument(
        &self,
        kind: BlockKind,
        sig: &KeySig,
        m: &MergedItem,
        next: Option<&MergedItem>,
    ) -> Option<ValueProblem> {
        let next = next?;
        if sig.is_flag() {
            return self.word_as_flag_value(kind, sig, m, next);
        }
        let ty = *sig.args.get(m.item.args.len())?;
        if m.item.args.len() >= sig.min_args()
            || next.file != m.file
            || next.origin != m.origin
            || !next.item.args.is_empty()
            || schema::lookup(kind, &next.item.key.text).is_some()
        {
            return None;
        }
        let value = venus_syntax::syntax::ast::Value {
            kind: ValueKind::Name(next.item.key.text.clone()),
            span: next.item.key.span,
        };
        let loc = Loc::new(next.file, next.item.key.span);
        let cx = ValueCtx {
            loc,
            text: self.text(loc),
            key: sig.key,
            allow_zero: false,
        };
        value::typed(ty, &value, &cx)
            .err()
            .and_then(value::Rejected::problem)
    }

    /// `sp yes`: a word after a flag that looks like a flag value but is not `on` / `off`
    /// (which the parser would have taken) is E0204 on the word, not an unknown key.
    fn word_as_flag_value(
        &self,
        kind: BlockKind,
        sig: &KeySig,
        m: &MergedItem,
        next: &MergedItem,
    ) -> Option<ValueProblem> {
        const LOOKALIKES: &[&str] = &["yes", "no", "true", "false", "enabled", "disabled"];
        let word = next.item.key.text.as_str();
        let looks_like_flag_value = LOOKALIKES.contains(&word)
            || suggest(word, schema::FLAG_WORDS.iter().copied()).is_some()
            || schema::FLAG_WORDS
                .iter()
                .any(|w| w.eq_ignore_ascii_case(word));
        if !m.item.args.is_empty()
            || next.file != m.file
            || next.origin != m.origin
            || !next.item.args.is_empty()
            || schema::lookup(kind, word).is_some()
            || !looks_like_flag_value
        {
            return None;
        }
        let loc = Loc::new(next.file, next.item.key.span);
        let cx = ValueCtx {
            loc,
            text: self.text(loc),
            key: sig.key,
            allow_zero: false,
        };
        enum_word(word, schema::FLAG_WORDS, &cx).err().map(|_| {
            let hint = WordHint::FlagOnOff {
                key: sig.key.to_string(),
            };
            value::unknown_word(word, schema::FLAG_WORDS, hint, &cx)
        })
    }

    /// One item: arity, then each argument. `None` after reporting an error.
    fn item(&mut self, sig: &'static KeySig, m: &MergedItem) -> Option<Item> {
        let loc = m.loc();
        let n = m.item.args.len();
        let (min, max) = if sig.is_flag() {
            (0, 1)
        } else {
            (sig.min_args(), sig.args.len())
        };
        if n < min || n > max {
            let expected = match (sig.is_flag(), min == max) {
                (true, _) => "no argument (or `on`/`off`)".to_string(),
                (false, true) => plural(min),
                (false, false) if max == min + 1 => format!("{min} or {max} arguments"),
                (false, false) => format!("{min} to {max} arguments"),
            };
            let at = match m.item.args.get(max) {
                Some(extra) => Loc::new(
                    m.file,
                    venus_diag::diag::Span {
                        start: extra.span.start,
                        end: m.item.span.end,
                    },
                ),
                None => loc,
            };
            self.problem(TyProblem::ArgumentCount {
                key: sig.key,
                expected,
                found: n,
                too_many: n > max,
                at,
                signature: signature(sig),
                example: example(sig),
            });
            return None;
        }
        let mut args = Vec::new();
        let mut ok = true;
        if sig.is_flag() {
            let v = match m.item.args.first() {
                None => Some(true),
                Some(v) => {
                    let vloc = Loc::new(m.file, v.span);
                    let cx = ValueCtx {
                        loc: vloc,
                        text: self.text(vloc),
                        key: sig.key,
                        allow_zero: false,
                    };
                    match &v.kind {
                        ValueKind::Name(w) => match enum_word(w, schema::FLAG_WORDS, &cx) {
                            Ok(w) => Some(w == "on"),
                            Err(p) => {
                                self.problem(p.into());
                                None
                            }
                        },
                        _ => {
                            self.res.report(flag_value(v, &cx));
                            None
                        }
                    }
                }
            };
            return v.map(|b| Item {
                key: sig.id,
                loc,
                args: vec![(Checked::Flag(b), loc)],
            });
        }
        for (v, ty) in m.item.args.iter().zip(sig.args) {
            let vloc = Loc::new(m.file, v.span);
            let cx = ValueCtx {
                loc: vloc,
                text: self.text(vloc),
                key: sig.key,
                allow_zero: sig.allow_zero,
            };
            let checked = match (*ty, &v.kind) {
                (ArgType::Ref(k), ValueKind::Name(name)) => self
                    .res
                    .lookup(vloc, k, name)
                    .map(|id| Checked::Ref(Target::Def(id))),
                (ArgType::Ref(k), ValueKind::Block(b)) => self
                    .res
                    .inline(k, m.file, b)
                    .map(|d| Checked::Ref(Target::Inline(Arc::new(d)))),
                (ArgType::Nested(b), ValueKind::Block(block)) => {
                    let nested: Vec<MergedItem> = block
                        .items
                        .iter()
                        .map(|item| MergedItem {
                            file: m.file,
                            item: item.clone(),
                            origin: m.origin,
                        })
                        .collect();
                    let f = self.block(
                        b,
                        &nested,
                        Loc::new(m.file, m.item.key.span),
                        &format!("`{}`", b.name()),
                    );
                    f.ok.then(|| Checked::Nested(Box::new(f)))
                }
                (ArgType::Ref(_) | ArgType::Nested(_), _) => {
                    self.res.report(wrong(*ty, v, &cx));
                    None
                }
                (ty, _) => match value::typed(ty, v, &cx) {
                    Ok((arg, warning)) => {
                        if let Some(w) = warning {
                            self.problem(w.into());
                        }
                        Some(Checked::Arg(arg))
                    }
                    Err(rejected) => {
                        if let Some(p) = rejected.problem() {
                            self.problem(p.into());
                        }
                        None
                    }
                },
            };
            match checked {
                Some(c) => args.push((c, vloc)),
                None => ok = false,
            }
        }
        ok.then_some(Item {
            key: sig.id,
            loc,
            args,
        })
    }
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 argument".into()
    } else {
        format!("{n} arguments")
    }
}

/// E0201 for a `Ref` or nested-block argument written as something else.
fn wrong(ty: ArgType, v: &venus_syntax::syntax::ast::Value, cx: &ValueCtx) -> Diagnostic {
    let problem = if let ValueKind::List(_) = v.kind {
        TyProblem::Value(ValueProblem::List {
            key: cx.key.to_string(),
            loc: cx.loc,
        })
    } else {
        TyProblem::WrongKind {
            expected: ty.describe(),
            found: describe_found(v, cx.text),
            loc: cx.loc,
        }
    };
    problem.diagnostic()
}

/// E0201 for a flag followed by something other than `on` / `off`.
fn flag_value(v: &venus_syntax::syntax::ast::Value, cx: &ValueCtx) -> Diagnostic {
    if let ValueKind::List(_) = v.kind {
        return wrong(ArgType::Enum(schema::FLAG_WORDS), v, cx);
    }
    TyProblem::FlagWord {
        key: cx.key.to_string(),
        found: describe_found(v, cx.text),
        loc: cx.loc,
    }
    .diagnostic()
}

/// The key of `kind` that `written` spells the Megatron-LM way (`tensor_model_parallel_size`,
/// `--micro-batch-size`, `pipeline_parallel`), read from the key table's Megatron-LM flags:
/// the flag without dashes, with or without its `_size` suffix and its `_model` word.
fn megatron_spelling(kind: BlockKind, written: &str) -> Option<&'static KeySig> {
    let normal = written
        .trim_start_matches('-')
        .replace('-', "_")
        .to_lowercase();
    schema::keys(kind).iter().find(|k| {
        k.megatron.is_some_and(|flag| {
            let flag = flag.trim_start_matches('-').replace('-', "_");
            let short = flag.strip_suffix("_size").unwrap_or(&flag).to_string();
            [
                flag.clone(),
                flag.replace("_model_", "_"),
                short.clone(),
                short.replace("_model_", "_"),
            ]
            .contains(&normal)
        })
    })
}

impl Checker<'_, '_> {
    /// W0009: a GPU's `memory` in decimal units (`80GB`). HBM capacities are binary: the
    /// "80GB" of an H100 datasheet is 80 GiB to the driver (see the stdlib's `gpus.venus`), so
    /// `80GB` models a GPU 7% smaller than the card, which can turn a fitting plan into E0401.
    fn warn_decimal_memory(&mut self, def: &MergedDef) {
        for m in def.items.iter().filter(|m| m.item.key.text == "memory") {
            let Some(ast::Value {
                kind: ValueKind::Quantity { number, unit, .. },
                span,
            }) = m.item.args.first()
            else {
                continue;
            };
            let Some(binary) = binary_twin(unit) else {
                continue;
            };
            // Zero is E0202's, not a unit slip.
            let Some(bytes) = decimal_bytes(unit)
                .map(|f| number.as_f64() * f as f64)
                .filter(|b| *b > 0.0)
            else {
                continue;
            };
            let written = format!("{}{unit}", value::num(*number));
            let gib = bytes / (1u64 << 30) as f64;
            self.problem(TyProblem::DecimalMemory {
                binary: format!("{}{binary}", value::num(*number)),
                written,
                gib,
                loc: Loc::new(m.file, *span),
            });
        }
    }
}

/// A `slow_gpus FRACTION SPEED [SEED]`, `slow_rank RANK SPEED`, `slow_node NODE SPEED` or
/// `slow_link NODE SPEED` item; `None` for any other item (or one whose arguments did not
/// check).
fn slow_item(item: &Item) -> Option<super::Slow> {
    use venus_plan::plan::straggler::SlowWhich;
    let (first, first_loc) = item.args.first()?;
    let speed = match item.args.get(1)? {
        (Checked::Arg(Arg::Ratio(r)), l) => Spanned::new(*r, *l),
        _ => return None,
    };
    let which = match (item.key, first) {
        (Key::SlowGpus, Checked::Arg(Arg::Ratio(share))) => {
            let seed = match item.args.get(2) {
                Some((Checked::Arg(Arg::Count(c)), _)) => *c,
                _ => 0,
            };
            SlowWhich::Fraction {
                share: *share,
                seed,
            }
        }
        (Key::SlowRank, Checked::Arg(Arg::Count(r))) => SlowWhich::Rank(*r),
        (Key::SlowNode, Checked::Arg(Arg::Count(n))) => SlowWhich::Node(*n),
        (Key::SlowLink, Checked::Arg(Arg::Count(n))) => SlowWhich::Link(*n),
        _ => return None,
    };
    Some(super::Slow {
        which,
        which_loc: *first_loc,
        speed,
        loc: item.loc,
    })
}

/// The binary unit a decimal byte unit is usually mistaken for (`GB` → `GiB`).
fn binary_twin(unit: &str) -> Option<&'static str> {
    match unit {
        "MB" => Some("MiB"),
        "GB" => Some("GiB"),
        "TB" => Some("TiB"),
        _ => None,
    }
}

/// Bytes per decimal unit, from the language's unit table.
fn decimal_bytes(unit: &str) -> Option<u64> {
    value::UNITS.iter().find_map(|(u, kind)| match kind {
        value::Unit::Bytes(factor) if *u == unit => Some(*factor),
        _ => None,
    })
}

/// E0101 with the closest key, or the list of valid keys.
fn unknown_key(kind: BlockKind, key: &str, loc: Loc, what: &str) -> TyProblem {
    let keys = schema::keys(kind);
    // `allow W0001 W0002`: `allow` takes one code, so the second was read as a key.
    let hint = if Code::parse(key)
        .is_some_and(|c| c.severity() == venus_diag::diag::Severity::Warning)
        && keys.iter().any(|k| k.key == "allow")
    {
        KeyHint::AllowCode
    } else if let Some(sig) = megatron_spelling(kind, key) {
        KeyHint::Megatron {
            key: sig.key,
            flag: sig.megatron.unwrap_or_default(),
        }
    } else {
        match suggest(key, keys.iter().map(|k| k.key)) {
            Some(s) => KeyHint::DidYouMean(s),
            None => KeyHint::Valid(keys.iter().map(|k| k.key).collect()),
        }
    };
    TyProblem::UnknownKey {
        key: key.to_string(),
        what: what.to_string(),
        block: kind.name(),
        loc,
        hint,
    }
}

impl Checker<'_, '_> {
    /// `algo DIM WORD`: pins the collective algorithm of the dim named DIM (E0104 when the
    /// cluster has no such dim).
    fn pin_algorithm(&mut self, dims: &mut [Dim], item: &Item) {
        let (
            Some((Checked::Arg(Arg::Name(name)), name_loc)),
            Some((Checked::Arg(Arg::Word(word)), word_loc)),
        ) = (item.args.first(), item.args.get(1))
        else {
            return;
        };
        let algorithm = match *word {
            "ring" => CollectiveAlgorithm::Ring,
            "direct" => CollectiveAlgorithm::Direct,
            "halving_doubling" => CollectiveAlgorithm::HalvingDoubling,
            _ => CollectiveAlgorithm::Tree,
        };
        if let Some(d) = self.named_dim(dims, name, *name_loc) {
            d.algorithm = Some(Spanned::new(algorithm, *word_loc));
        }
    }

    /// Reports an error found after the block's items checked (E0313/E0314, a `fat_tree`
    /// share of 0) and counts `key` as rejected: with `gpus` the cluster's size is unknown, so
    /// the world rules say nothing about it.
    /// Reports a problem of the item checker, as its diagnostic.
    fn problem(&self, p: TyProblem) {
        self.res.report(p.diagnostic());
    }

    fn reject(&mut self, d: Diagnostic, key: Key) {
        self.res.report(d);
        if let Some(top) = self.frames.last_mut() {
            top.ok = false;
            if !top.failed.contains(&key) {
                top.failed.push(key);
            }
        }
    }

    /// `link DIM WORD`, `rail DIM`, `fat_tree DIM LEAF SHARE`, `sharp DIM`: what a cluster
    /// states about one dim's links and switches. A `link` gives the dim's efficiency only when
    /// the `dim` item states none.
    fn set_fabric(&mut self, dims: &mut [Dim], item: &Item) {
        let Some((Checked::Arg(Arg::Name(name)), name_loc)) = item.args.first() else {
            return;
        };
        let Some(d) = self.named_dim(dims, name, *name_loc) else {
            return;
        };
        match (item.key, item.args.get(1), item.args.get(2)) {
            (Key::Link, Some((Checked::Arg(Arg::Word(w)), loc)), _) => {
                let kind = if *w == "infiniband" {
                    LinkKind::Infiniband
                } else {
                    LinkKind::Nvlink
                };
                if d.efficiency.is_none() {
                    let e = super::Ratio(kind.default_efficiency());
                    d.efficiency = Some(Spanned::new(e, *loc));
                }
            }
            (Key::Rail, _, _) => d.fabric.rail = true,
            (
                Key::FatTree,
                Some((Checked::Arg(Arg::Count(leaf)), _)),
                Some((Checked::Arg(Arg::Ratio(share)), share_loc)),
            ) => {
                if share.0 > 0.0 {
                    let leaf = u32::try_from(*leaf).unwrap_or(u32::MAX);
                    d.fabric.fat_tree = Some((leaf, share.0));
                } else {
                    let e = TyProblem::FatTreeWithoutUplinks { loc: *share_loc };
                    self.reject(e.diagnostic(), Key::FatTree);
                }
            }
            (Key::Sharp, _, _) => d.fabric.sharp = true,
            _ => {}
        }
    }

    /// The dim of this name, or E0104 naming the cluster's dims.
    fn named_dim<'d>(
        &mut self,
        dims: &'d mut [Dim],
        name: &str,
        name_loc: Loc,
    ) -> Option<&'d mut Dim> {
        if dims.iter().any(|d| d.name.value == name) {
            return dims.iter_mut().find(|d| d.name.value == name);
        }
        let names: Vec<&str> = dims.iter().map(|d| d.name.value.as_str()).collect();
        let hint = match suggest(name, names.iter().copied()) {
            Some(s) => DimHint::DidYouMean(s.to_string()),
            None => DimHint::Dims(names.iter().map(|n| n.to_string()).collect()),
        };
        self.problem(TyProblem::UnknownDim {
            name: name.to_string(),
            loc: name_loc,
            hint,
        });
        None
    }
}

fn dim(item: &Item) -> Option<Dim> {
    let at = |i: usize| item.args.get(i).map(|(c, l)| (c, *l));
    let name = match at(0)? {
        (Checked::Arg(Arg::Name(n)), l) => Spanned::new(n.clone(), l),
        _ => return None,
    };
    let topology = match at(1)? {
        (Checked::Arg(Arg::Word(w)), l) => Spanned::new(
            match *w {
                "ring" => Topology::Ring,
                "switch" => Topology::Switch,
                _ => Topology::FullyConnected,
            },
            l,
        ),
        _ => return None,
    };
    let size = match at(2)? {
        (Checked::Arg(Arg::Count(c)), l) => Spanned::new(*c, l),
        _ => return None,
    };
    let bandwidth = match at(3)? {
        (Checked::Arg(Arg::Bandwidth(b)), l) => Spanned::new(*b, l),
        _ => return None,
    };
    let latency = match at(4) {
        Some((Checked::Arg(Arg::Time(t)), l)) => Spanned::new(*t, l),
        _ => Spanned::new(super::Seconds(0.0), item.loc),
    };
    let efficiency = match at(5) {
        Some((Checked::Arg(Arg::Ratio(r)), l)) => Some(Spanned::new(*r, l)),
        _ => None,
    };
    Some(Dim {
        name,
        topology,
        size,
        bandwidth,
        latency,
        efficiency,
        algorithm: None,
        fabric: Fabric::default(),
        loc: item.loc,
    })
}

fn expect(f: &Fields) -> Expect {
    Expect {
        iteration_time_max: f.get(Key::IterationTimeMax, time),
        tflops_min: f.get(Key::TflopsMin, rate),
        memory_max: f.get(Key::MemoryMax, bytes),
        mfu_min: f.get(Key::MfuMin, ratio),
    }
}

fn reliability(f: &Fields) -> super::Reliability {
    super::Reliability {
        gpu_mtbf: f.get(Key::GpuMtbf, time),
        node_mtbf: f.get(Key::NodeMtbf, time),
        link_mtbf: f.get(Key::LinkMtbf, time),
        storage_write_bw: f.get(Key::StorageWriteBw, bandwidth),
        storage_read_bw: f.get(Key::StorageReadBw, bandwidth),
        restart: f.get(Key::Restart, time),
    }
}

fn train(f: &Fields) -> Train {
    Train {
        tokens: f.count(Key::TrainTokens),
        price: f.get(Key::Price, price),
    }
}

fn price(a: &Arg) -> Option<super::units::DollarsPerGpuHour> {
    if let Arg::Price(p) = a {
        Some(*p)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil;
    use venus_syntax::syntax::schema::KeyDefault;

    fn count(k: Key) -> u64 {
        match k.sig().default {
            KeyDefault::Count(n) => n,
            d => panic!("{k:?} has no count default: {d:?}"),
        }
    }

    fn word(k: Key) -> &'static str {
        match k.sig().default {
            KeyDefault::Word(w) => w,
            d => panic!("{k:?} has no word default: {d:?}"),
        }
    }

    #[test]
    fn table_defaults_are_the_typed_plans_defaults() {
        let p = testutil::plan(1, 8);
        assert_eq!(p.tp(), count(Key::Tp));
        assert_eq!(p.pp(), count(Key::Pp));
        assert_eq!(p.cp(), count(Key::Cp));
        assert_eq!(p.ep(), count(Key::Ep));
        assert_eq!(p.vpp(), count(Key::Vpp));
        assert_eq!(p.iterations(), count(Key::Iterations));
        assert_eq!(p.recompute().word(), word(Key::Recompute));
        assert_eq!(
            format!("{:?}", p.precision()).to_lowercase(),
            word(Key::Precision)
        );
        assert_eq!(
            format!("{:?}", p.attention()).to_lowercase(),
            word(Key::Attention)
        );
        // The key table states the memory model's default reserve, for the plan and the cluster.
        let reserve = KeyDefault::Bytes(venus_plan::plan::memory::DEFAULT_RESERVE.0);
        assert_eq!(Key::Reserve.sig().default, reserve);
        assert_eq!(Key::ClusterReserve.sig().default, reserve);
        assert!(!p.sp());
        for sig in schema::keys(BlockKind::Def(DefKind::Plan))
            .iter()
            .chain(schema::keys(BlockKind::Def(DefKind::Model)))
            .filter(|s| s.is_flag())
        {
            assert_eq!(sig.default, KeyDefault::Off, "{}", sig.key);
        }
        let m = testutil::llama();
        assert!(m.experts.is_none() && m.experts() == 0);
        assert_eq!(Key::Experts.sig().default, KeyDefault::Unset);
    }

    #[test]
    fn required_keys_are_required_in_the_table_and_have_an_example() {
        for sig in schema::TABLE.iter().filter(|s| s.required) {
            assert_eq!(sig.default, KeyDefault::Required, "{}", sig.key);
            assert!(
                sig.example.is_some(),
                "{} needs an example for E0103",
                sig.key
            );
        }
        assert_eq!(example(Key::MicroBatch.sig()), "micro_batch 1".to_string());
        assert_eq!(example(Key::Tp.sig()), "tp 8".to_string());
    }

    /// The plan keys `ty::Plan` reads by hand rather than through `venus_plan::plan_keys!`.
    const HAND_READ_PLAN_KEYS: &[Key] = &[
        Key::MicroBatch,
        Key::GlobalBatch,
        Key::Measured,
        Key::Fsdp,
        Key::PipelineLayout,
        Key::Venussim,
        Key::MoeDispatcher,
        Key::AllowPlan,
    ];

    #[test]
    fn every_plain_plan_key_is_a_plan_key_of_its_own_name_read_as_its_table_types() {
        for &(field, key, how) in PLAIN_PLAN_KEYS {
            let sig = key.sig();
            assert_eq!(sig.key, field, "the field of `{}`", sig.key);
            assert_eq!(sig.block, BlockKind::Def(DefKind::Plan), "{field}");
            let first = sig.args.first().copied();
            let fits = match how {
                "flag" => sig.args.is_empty(),
                "count" => first == Some(ArgType::Count),
                "bytes" => first == Some(ArgType::Bytes),
                "ratio" => first == Some(ArgType::Ratio),
                "time" => first == Some(ArgType::Time),
                "word" => matches!(first, Some(ArgType::Enum(_))),
                "words" => {
                    !sig.args.is_empty() && sig.args.iter().all(|a| matches!(a, ArgType::Enum(_)))
                }
                other => panic!("`{field}`: unknown reading `{other}`"),
            };
            assert!(
                fits,
                "`{field}` is read as `{how}` but takes {:?}",
                sig.args
            );
        }
        assert_eq!(unmapped_plan_words(), Vec::<(&str, &str)>::new());
    }

    #[test]
    fn every_plan_key_of_the_table_is_read_once() {
        for sig in schema::keys(BlockKind::Def(DefKind::Plan)) {
            let plain = PLAIN_PLAN_KEYS.iter().filter(|k| k.1 == sig.id).count();
            let by_hand = HAND_READ_PLAN_KEYS.contains(&sig.id);
            assert_eq!(
                plain + usize::from(by_hand),
                1,
                "`{}`: add it to `venus_plan::plan_keys!` (or read it by hand in `build_plan`)",
                sig.key
            );
        }
    }
}
