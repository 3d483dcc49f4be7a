//! Megatron-LM command lines in and out: `venusc import megatron` (a launch script or a flag
//! list → a `.venus` scenario) and `venusc compile --emit megatron` (a scenario → its flags).
//!
//! Input: the script's text and [`MegatronOptions`] (import); a validated [`Scenario`] (emit).
//! Output: [`MegatronImport`] (the `.venus` text and its W0012/W0013 warnings) or the E0608–E0610
//! errors, each labelled in the script; the flag lines of [`emit_megatron`].
//! Flag names, arities and defaults are those of `megatron/training/arguments.py` at
//! NVIDIA/Megatron-LM `d98e8a64ddf34856e74b24714e3bedb2f5a39553` (2026-08-22), generated into
//! `syntax::megatron_flags`. A flag that maps onto one key is named by the key table
//! (`schema.rs`, `.megatron(...)`) and listed once in [`DIRECT`]; every flag that needs a
//! conversion is explicit code below ([`Converter`], [`emit_megatron`]).
//! Invariants: every flag of the input is mapped, or named in the one W0012 warning, or is an
//! error: nothing is dropped silently; a flag Megatron-LM does not define is E0608 with the
//! nearest defined flag; a value that cannot be read (an unset variable, an unterminated quote,
//! a count out of range) is E0609 at its span; the import never panics and its work is linear
//! in the input (expansions capped in [`shell`]).
//! Every problem is a typed [`MegatronProblem`], worded in [`problem`] and nowhere else.
//! Round trip: `import_megatron(emit_megatron(sc))` with the scenario's GPU count and cluster
//! describes the same model and plan, and emitting it again gives the same lines.

mod problem;
mod shell;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use venus_base::base::{Attention, FsdpImpl, Precision, Ratio, Recompute, RecomputeModules};
use venus_diag::diag::{suggest, Diagnostic, FileId, Loc, Span};
use venus_plan::plan::{PlanSpec, Recipe, Scenario};
use venus_syntax::syntax::ast::DefKind;
use venus_syntax::syntax::megatron_flags::{self, Arity, FLAGS};
use venus_syntax::syntax::schema::{BlockKind, Key, FSDP_STRATEGIES};

pub use problem::{Assumption, Choice, CountError, MegatronProblem};
pub use shell::{Opening, ShellProblem, Word};

/// The stdlib cluster an import writes when none is given (W0013): Megatron-LM's reference
/// platform, the DGX H100 of its published performance tables.
pub const DEFAULT_CLUSTER: &str = "dgx_h100";

/// What the caller knows that the flags do not say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MegatronOptions {
    /// The file the text came from, for labels.
    pub file: FileId,
    /// The stem of the definitions' names (`NAME_model`, `NAME_plan`, scenario `NAME`).
    pub name: String,
    /// Shown in the output's first comment.
    pub source: String,
    /// A cluster of the stdlib (`--cluster`); `None`: [`DEFAULT_CLUSTER`], with W0013.
    pub cluster: Option<String>,
    /// The world size (`--gpus`); the script's torchrun line gives it otherwise.
    pub gpus: Option<u64>,
}

/// A successful import.
#[derive(Clone, Debug, PartialEq)]
pub struct MegatronImport {
    /// The `.venus` file: a model, a cluster sized to the world, a plan and a scenario.
    pub venus: String,
    /// W0012 (flags not modelled) and W0013 (values assumed).
    pub warnings: Vec<Diagnostic>,
    /// The model block's key lines (`hidden 4096`), in key-table order: what `venus` writes.
    pub model: Vec<String>,
    /// The plan block's key lines, in key-table order.
    pub plan: Vec<String>,
    /// Each flag W0012 lists, as written, with why (`--moe-router-num-groups 8: not modelled
    /// by venusc`): for a caller that writes its own file around the key lines.
    pub not_modelled: Vec<String>,
}

/// Flags that map one to one onto a key, the flag being the key table's `.megatron(...)`:
/// a count key takes the flag's value, a flag key is on when the switch is given. Adding a
/// flag that maps this way is one line here (and its `.megatron` in the key table).
pub const DIRECT: &[Key] = &[
    Key::Layers,
    Key::Hidden,
    Key::Heads,
    Key::Seq,
    Key::Swiglu,
    Key::UntiedEmbeddings,
    Key::Experts,
    Key::MoeFfn,
    Key::MtpLayers,
    // The Mamba-2 dims go with the hybrid pattern (`hybrid_conversions`).
    Key::MoeLatentSize,
    Key::QkNorm,
    Key::Tp,
    Key::Pp,
    Key::Cp,
    Key::Ep,
    Key::FirstStageLayers,
    Key::LastStageLayers,
    Key::AccountForEmbedding,
    Key::AccountForLoss,
    Key::MicroBatch,
    Key::DistributedOptimizer,
    Key::OverlapGradReduce,
    Key::OverlapParamGather,
    Key::OverlapTpComm,
    Key::OverlapEpComm,
    Key::Iterations,
    Key::Fp8ParamGather,
    Key::Etp,
];

/// Flags that do not change an iteration's time or memory in venusc's model (data, logging,
/// checkpointing, initialisation, numerics, tokenizer): named in W0012's first note.
const NO_EFFECT_PREFIXES: &[&str] = &[
    "--data-",
    "--split",
    "--log-",
    "--save",
    "--load",
    "--ckpt-",
    "--eval-",
    "--tensorboard-",
    "--wandb-",
    "--tokenizer-",
    "--vocab-file",
    "--merge-file",
    "--lr",
    "--min-lr",
    "--weight-decay",
    "--clip-grad",
    "--adam-",
    "--init-method-",
    "--seed",
    "--attention-dropout",
    "--hidden-dropout",
    "--norm-epsilon",
    "--normalization",
    "--position-embedding-type",
    "--rotary-",
    "--max-position-embeddings",
    "--make-vocab-size-divisible-by",
    "--distributed-backend",
    "--distributed-timeout-minutes",
    "--exit-",
    "--timing-log-level",
    "--use-mcore-models",
    "--transformer-impl",
    "--no-masked-softmax-fusion",
    "--no-bias-",
    "--disable-bias-linear",
    "--no-rope-fusion",
    "--use-flash-attn",
    "--moe-router-force-load-balancing",
    "--moe-z-loss-coeff",
    "--moe-router-dtype",
    "--moe-router-bias-update-rate",
    "--moe-router-score-function",
    "--moe-router-topk-scaling-factor",
    "--moe-grouped-gemm",
    "--qk-layernorm",
    "--micro-batch-size-",
    "--manual-gc",
    "--no-create-attention-mask-in-dataloader",
    "--num-workers",
    "--mock-data",
    "--train-samples",
    "--warmup",
    "--profile",
    "--enable-experimental",
];

/// Imports a launch script or flag list.
pub fn import_megatron(
    text: &str,
    opts: &MegatronOptions,
) -> Result<MegatronImport, Vec<Diagnostic>> {
    let at = |span: Span| Loc::new(opts.file, span);
    let commands = shell::commands(text).map_err(|problem| {
        let loc = at(problem.span());
        vec![MegatronProblem::Shell { problem, loc }.diagnostic()]
    })?;
    let line = launch_line(&commands).ok_or_else(|| {
        vec![MegatronProblem::NoFlags {
            loc: at(Span::new(0, 0)),
        }
        .diagnostic()]
    })?;
    let mut errors = Vec::new();
    let args = Args::parse(&line.flags, opts.file, &mut errors);
    let torchrun = Torchrun::parse(&line.launcher, opts.file, &mut errors);
    if !errors.is_empty() {
        return Err(diagnostics(errors));
    }
    let mut c = Converter {
        args,
        file: opts.file,
        anchor: line.anchor,
        errors: Vec::new(),
        not_modelled: Vec::new(),
        first_noted: None,
        assumed: Vec::new(),
        model: Vec::new(),
        plan: Vec::new(),
    };
    c.convert();
    let world = c.world(&torchrun, opts);
    if !c.errors.is_empty() {
        return Err(diagnostics(c.errors));
    }
    let cluster = match &opts.cluster {
        Some(name) => name.clone(),
        None => {
            c.assumed.push(Assumption::Cluster);
            DEFAULT_CLUSTER.to_string()
        }
    };
    Ok(c.finish(opts, &cluster, world))
}

/// The diagnostics of `problems`, in the order found.
fn diagnostics(problems: Vec<MegatronProblem>) -> Vec<Diagnostic> {
    problems
        .into_iter()
        .map(MegatronProblem::diagnostic)
        .collect()
}

/// The words of the Megatron-LM command and of the launcher before it.
struct LaunchLine {
    launcher: Vec<Word>,
    flags: Vec<Word>,
    /// Where W0013 and errors about absent flags point: the script or first flag.
    anchor: Span,
}

/// The command that runs `pretrain_*.py` (the first `.py` command when none is a
/// `pretrain_` one), or, without one, the lines that are lists of flags.
fn launch_line(commands: &[shell::Command]) -> Option<LaunchLine> {
    let script_at = |c: &shell::Command| {
        c.words
            .iter()
            .position(|w| w.text.ends_with(".py") && !w.text.starts_with('-'))
    };
    let pick = commands
        .iter()
        .find(|c| {
            script_at(c).is_some_and(|i| {
                let base = c.words[i].text.rsplit('/').next().unwrap_or("");
                base.starts_with("pretrain_")
            })
        })
        .or_else(|| commands.iter().find(|c| script_at(c).is_some()));
    if let Some(c) = pick {
        let i = script_at(c)?;
        return Some(LaunchLine {
            launcher: c.words[..i].to_vec(),
            flags: c.words[i + 1..].to_vec(),
            anchor: c.words[i].span,
        });
    }
    let flags: Vec<Word> = commands
        .iter()
        .filter(|c| c.words.first().is_some_and(|w| w.text.starts_with("--")))
        .flat_map(|c| c.words.iter().cloned())
        .collect();
    let anchor = flags.first()?.span;
    Some(LaunchLine {
        launcher: Vec::new(),
        flags,
        anchor,
    })
}

/// One flag of the command line and its values.
#[derive(Clone, Debug)]
struct Arg {
    flag: &'static megatron_flags::Flag,
    span: Span,
    values: Vec<Word>,
}

/// The flags of the command line, the last of a repeated flag winning (as argparse).
struct Args {
    file: FileId,
    by_name: BTreeMap<&'static str, Arg>,
    /// Flag names in the order first written.
    order: Vec<&'static str>,
    used: BTreeSet<&'static str>,
}

impl Args {
    fn parse(words: &[Word], file: FileId, errors: &mut Vec<MegatronProblem>) -> Args {
        let mut args = Args {
            file,
            by_name: BTreeMap::new(),
            order: Vec::new(),
            used: BTreeSet::new(),
        };
        let mut i = 0;
        while i < words.len() {
            let w = &words[i];
            i += 1;
            if let Some((name, span)) = &w.unresolved {
                if w.text.is_empty() || w.text.starts_with('-') {
                    errors.push(unresolved(file, name, *span));
                    continue;
                }
            }
            if !w.text.starts_with("--") {
                errors.push(MegatronProblem::NotAFlag {
                    word: w.text.clone(),
                    loc: Loc::new(file, w.span),
                });
                continue;
            }
            let (name, inline) = match w.text.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (w.text.as_str(), None),
            };
            // The name's own span when the word was written as is, else the whole word's.
            let written = (w.span.end - w.span.start) as usize == w.text.len();
            let name_span = if written {
                Span::new(w.span.start as usize, w.span.start as usize + name.len())
            } else {
                w.span
            };
            let Some(flag) = megatron_flags::flag(name).or_else(|| config_flag(name)) else {
                errors.push(unknown_flag(file, name, name_span));
                // Skip the values it may have had, to report the next real problem.
                while i < words.len() && !words[i].text.starts_with("--") {
                    i += 1;
                }
                continue;
            };
            let mut values = Vec::new();
            if let Some(v) = inline {
                let start = if written {
                    w.span.start as usize + name.len() + 1
                } else {
                    w.span.start as usize
                };
                values.push(Word {
                    text: v.to_string(),
                    span: Span::new(start, w.span.end as usize),
                    unresolved: w.unresolved.clone(),
                });
            } else {
                let takes = |w: &Word| !w.text.starts_with("--");
                match flag.arity {
                    Arity::Switch => {}
                    Arity::Value | Arity::Optional => {
                        if i < words.len() && takes(&words[i]) {
                            values.push(words[i].clone());
                            i += 1;
                        } else if flag.arity == Arity::Value {
                            errors.push(MegatronProblem::MissingValue {
                                flag: flag.name,
                                default: flag.default,
                                loc: Loc::new(file, name_span),
                            });
                            continue;
                        }
                    }
                    Arity::List => {
                        while i < words.len() && takes(&words[i]) {
                            values.push(words[i].clone());
                            i += 1;
                        }
                    }
                }
            }
            if !args.by_name.contains_key(flag.name) {
                args.order.push(flag.name);
            }
            args.by_name.insert(
                flag.name,
                Arg {
                    flag,
                    span: name_span,
                    values,
                },
            );
        }
        args
    }

    fn get(&mut self, name: &'static str) -> Option<Arg> {
        self.used.insert(name);
        self.by_name.get(name).cloned()
    }

    fn has(&mut self, name: &'static str) -> bool {
        self.get(name).is_some()
    }

    /// The flag's one value, resolved.
    fn value(
        &mut self,
        name: &'static str,
        errors: &mut Vec<MegatronProblem>,
    ) -> Option<(String, Span)> {
        let arg = self.get(name)?;
        let w = arg.values.first()?;
        if let Some((var, span)) = &w.unresolved {
            errors.push(unresolved(self.file, var, *span));
            return None;
        }
        Some((w.text.clone(), w.span))
    }

    /// A count (Python's `int(...)`: digits, an optional `+` and `_` separators); `zero`: 0 is
    /// allowed.
    fn count(
        &mut self,
        name: &'static str,
        zero: bool,
        errors: &mut Vec<MegatronProblem>,
    ) -> Option<u64> {
        let (text, span) = self.value(name, errors)?;
        match parse_count(&text) {
            Ok(n) if n > 0 || zero => Some(n),
            Ok(_) => {
                errors.push(MegatronProblem::ZeroCount {
                    flag: name,
                    loc: Loc::new(self.file, span),
                });
                None
            }
            Err(why) => {
                errors.push(MegatronProblem::NotACount {
                    flag: name,
                    text,
                    why,
                    loc: Loc::new(self.file, span),
                });
                None
            }
        }
    }

    /// A flag's count as written, without marking it read or reporting a bad value (the
    /// conversion that owns the flag reports that): for values other conversions depend on.
    fn peek(&self, name: &str) -> Option<u64> {
        let w = self.by_name.get(name)?.values.first()?;
        parse_count(&w.text).ok()
    }

    /// The flag's first value as written, without marking the flag used.
    fn peek_text(&self, name: &str) -> Option<String> {
        Some(self.by_name.get(name)?.values.first()?.text.clone())
    }

    fn span(&self, name: &str) -> Option<Span> {
        self.by_name.get(name).map(|a| a.span)
    }
}

/// `--window-size`'s value as arguments.py `tuple_type` reads it (`(L,R)` or `L,R`): two
/// integers, or `None`.
fn parse_window(text: &str) -> Option<(i64, i64)> {
    let inner = text.trim().trim_start_matches('(').trim_end_matches(')');
    let (l, r) = inner.split_once(',')?;
    Some((l.trim().parse().ok()?, r.trim().parse().ok()?))
}

fn parse_count(text: &str) -> Result<u64, CountError> {
    let t = text.trim().strip_prefix('+').unwrap_or(text.trim());
    let digits: String = t.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || t.starts_with('_') {
        return Err(CountError::NotWhole);
    }
    digits.parse::<u64>().map_err(|_| CountError::TooLarge)
}

fn excerpt(text: &str) -> String {
    venus_diag::diag::escape_excerpt(text, 48)
}

fn unresolved(file: FileId, name: &str, span: Span) -> MegatronProblem {
    MegatronProblem::Unresolved {
        name: name.to_string(),
        loc: Loc::new(file, span),
    }
}

/// TransformerConfig fields that arguments.py keeps off its command line (its
/// `_add_network_size_args` exclude list, megatron/training/arguments.py:2333 at d98e8a64)
/// but that launchers built on Megatron-Core set from a flag of the same name (NeMo's and
/// Megatron-Bridge's recipes, the MLPerf Training submissions): the importer reads them, the
/// emitter writes them as a comment, since Megatron-LM's own parser would reject them.
const CONFIG_FLAGS: &[megatron_flags::Flag] = &[megatron_flags::Flag {
    // transformer_config.py:640 `fp8_dot_product_attention: bool = False`.
    name: "--fp8-dot-product-attention",
    arity: Arity::Switch,
    default: "False",
}];

fn config_flag(name: &str) -> Option<&'static megatron_flags::Flag> {
    CONFIG_FLAGS.iter().find(|f| f.name == name)
}

/// E0608: the nearest flag of arguments.py by edit distance (a wider limit than for keys: flag
/// names are long, and one of 800 is likely close).
fn unknown_flag(file: FileId, name: &str, span: Span) -> MegatronProblem {
    MegatronProblem::UnknownFlag {
        name: name.to_string(),
        nearest: suggest(name, FLAGS.iter().map(|f| f.name)),
        loc: Loc::new(file, span),
    }
}

/// torchrun's (or `torch.distributed.run`'s) world: `--nnodes` × `--nproc-per-node`.
struct Torchrun {
    nodes: Option<(u64, Span)>,
    per_node: Option<(u64, Span)>,
    present: Option<Span>,
}

impl Torchrun {
    fn parse(words: &[Word], file: FileId, errors: &mut Vec<MegatronProblem>) -> Torchrun {
        let mut t = Torchrun {
            nodes: None,
            per_node: None,
            present: None,
        };
        let launcher = words.iter().position(|w| {
            let base = w.text.rsplit('/').next().unwrap_or("");
            base == "torchrun"
                || w.text == "torch.distributed.run"
                || w.text == "torch.distributed.launch"
        });
        let Some(start) = launcher else { return t };
        t.present = Some(words[start].span);
        let mut i = start + 1;
        while i < words.len() {
            let w = &words[i];
            i += 1;
            let (name, inline) = match w.text.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (w.text.clone(), None),
            };
            let key = name.replace('_', "-");
            if key != "--nnodes" && key != "--nproc-per-node" {
                continue;
            }
            let (value, span, unres) = match inline {
                Some(v) => (v, w.span, w.unresolved.clone()),
                None if i < words.len() => {
                    i += 1;
                    (
                        words[i - 1].text.clone(),
                        words[i - 1].span,
                        words[i - 1].unresolved.clone(),
                    )
                }
                None => (String::new(), w.span, None),
            };
            if let Some((var, at)) = unres {
                errors.push(unresolved(file, &var, at));
                continue;
            }
            match parse_count(&value) {
                Ok(n) if n > 0 => {
                    if key == "--nnodes" {
                        t.nodes = Some((n, span));
                    } else {
                        t.per_node = Some((n, span));
                    }
                }
                _ => errors.push(MegatronProblem::LauncherCount {
                    name,
                    value,
                    nodes: key == "--nnodes",
                    loc: Loc::new(file, span),
                }),
            }
        }
        t
    }

    /// The world size the launcher states, and the span that states it.
    fn world(&self) -> Option<(u64, Span)> {
        let at = self.present?;
        let nodes = self.nodes.map_or(1, |n| n.0);
        let per = self.per_node.map_or(1, |n| n.0);
        let span = self.per_node.or(self.nodes).map_or(at, |n| n.1);
        Some((nodes.checked_mul(per)?, span))
    }
}

/// The conversion of parsed flags into key lines.
struct Converter {
    args: Args,
    file: FileId,
    anchor: Span,
    errors: Vec<MegatronProblem>,
    /// (flag and value as written, why) for W0012, in input order at the end.
    not_modelled: Vec<(String, &'static str)>,
    /// Where the first flag W0012 lists was written: what its label points at.
    first_noted: Option<Span>,
    /// What W0013 says was assumed.
    assumed: Vec<Assumption>,
    model: Vec<String>,
    plan: Vec<String>,
}

impl Converter {
    fn loc(&self, span: Span) -> Loc {
        Loc::new(self.file, span)
    }

    /// E0609: `found` is not a word `choice`'s flag takes.
    fn unknown_choice(&mut self, choice: Choice, found: &str, span: Span) {
        let loc = self.loc(span);
        self.errors.push(MegatronProblem::UnknownChoice {
            choice,
            found: found.to_string(),
            loc,
        });
    }

    fn count(&mut self, name: &'static str) -> Option<u64> {
        self.args.count(name, false, &mut self.errors)
    }
    fn count0(&mut self, name: &'static str) -> Option<u64> {
        self.args.count(name, true, &mut self.errors)
    }
    fn word(&mut self, name: &'static str) -> Option<(String, Span)> {
        self.args.value(name, &mut self.errors)
    }

    fn push(&mut self, key: Key, value: impl std::fmt::Display) {
        let line = format!("{} {value}", key.name());
        self.lines(key).push(line);
    }
    fn push_flag(&mut self, key: Key) {
        let line = key.name().to_string();
        self.lines(key).push(line);
    }
    fn lines(&mut self, key: Key) -> &mut Vec<String> {
        if key.block() == BlockKind::Def(DefKind::Model) {
            &mut self.model
        } else {
            &mut self.plan
        }
    }

    /// A required flag's count, or E0610 naming it.
    fn required(&mut self, name: &'static str, key: Key) -> Option<u64> {
        if self.args.by_name.contains_key(name) {
            return self.count(name);
        }
        self.args.used.insert(name);
        self.errors.push(MegatronProblem::MissingFlag {
            flag: name,
            key,
            loc: self.loc(self.anchor),
        });
        None
    }

    fn convert(&mut self) {
        self.direct();
        self.model_conversions();
        self.window_conversions();
        self.hybrid_conversions();
        self.capacity_conversions();
        self.plan_conversions();
        self.folding_conversions();
        self.graphs_offload_conversions();
        self.precision();
        self.list_unmapped();
    }

    /// The one-to-one flags of [`DIRECT`].
    fn direct(&mut self) {
        for &key in DIRECT {
            let Some(flag) = key.sig().megatron else {
                continue;
            };
            let Some(flag) = megatron_flags::flag(flag) else {
                continue;
            };
            if key.sig().is_flag() {
                if self.args.has(flag.name) {
                    self.push_flag(key);
                }
            } else if key == Key::Layers && self.hybrid_pattern_text().is_some() {
                self.layers_of_pattern();
            } else if key.sig().required {
                if let Some(n) = self.required(flag.name, key) {
                    self.push(key, n);
                }
            } else if let Some(n) = if key.sig().allow_zero {
                self.count0(flag.name)
            } else {
                self.count(flag.name)
            } {
                self.push(key, n);
            }
        }
    }

    fn model_conversions(&mut self) {
        let hidden = self.args.peek("--hidden-size");
        let heads = self.args.peek("--num-attention-heads");
        let layers = self.args.peek("--num-layers");
        let swiglu = self.args.by_name.contains_key("--swiglu");

        // Vocabulary: Megatron reads it from the tokenizer, or `--vocab-size` (padded to a
        // multiple of 128 × tp, as venusc's `vocab`), or `--padded-vocab-size` as is
        // (megatron/training/argument_utils.py `gpt_config_from_args`).
        let vocab = match self.count("--padded-vocab-size") {
            Some(v) => Some(v),
            None => self.count("--vocab-size"),
        };
        match vocab {
            Some(v) => self.push(Key::Vocab, v),
            None if !self.args.by_name.contains_key("--padded-vocab-size")
                && !self.args.by_name.contains_key("--vocab-size") =>
            {
                let tokenizer = self.args.span("--tokenizer-type");
                self.errors.push(MegatronProblem::MissingVocab {
                    tokenizer: tokenizer.is_some(),
                    loc: self.loc(tokenizer.unwrap_or(self.anchor)),
                });
            }
            None => {}
        }

        // arguments.py:1320-1330: without `--ffn-hidden-size`, 4 × hidden, or with `--swiglu`
        // int(4 × hidden × 2/3 / 64) × 64; venusc's default is 4 × hidden, so write it.
        match self.count("--ffn-hidden-size") {
            Some(f) => self.push(Key::Ffn, f),
            None => {
                if let (true, Some(h)) = (swiglu, hidden) {
                    let f = (h.saturating_mul(8) / 3) / 64 * 64;
                    self.push(Key::Ffn, f);
                }
            }
        }

        // `--quick-geglu` is a gated linear unit with a quick-GELU activation, the GEMM shapes
        // of `--swiglu` (megatron/training/argument_utils.py `core_transformer_config_from_args`:
        // `gated_linear_unit = True`, at d98e8a64); `--squared-relu` keeps the plain
        // two-matrix MLP venusc models without `swiglu` (same file: only `activation_func`).
        if self.args.has("--quick-geglu") && !swiglu {
            self.push_flag(Key::Swiglu);
        }
        self.args.has("--squared-relu");

        // Grouped-query attention: `--num-query-groups` counts only with
        // `--group-query-attention` (argument_utils.py `core_transformer_config_from_args`).
        let mla = self.args.has("--multi-latent-attention");
        if self.args.has("--group-query-attention") && !mla {
            if let Some(g) = self.count("--num-query-groups") {
                self.push(Key::KvGroups, g);
            }
        } else if let Some(a) = self.args.get("--num-query-groups") {
            let why = if mla {
                "no effect with `--multi-latent-attention`"
            } else {
                "no effect without `--group-query-attention`"
            };
            self.note(&a, why);
        }

        // `--kv-channels`: the head size (default hidden / heads, arguments.py:1331-1333); MLA
        // sizes its heads with its own flags.
        if mla {
            if let Some(a) = self.args.get("--kv-channels") {
                self.note(&a, "no effect with `--multi-latent-attention`");
            }
        } else if let Some(d) = self.count("--kv-channels") {
            if hidden
                .zip(heads)
                .is_none_or(|(h, n)| n == 0 || h / n != d || h % n != 0)
            {
                self.push(Key::HeadDim, d);
            }
        }

        // MoE: Megatron's top-k defaults to 2 (arguments.py `--moe-router-topk`), venusc's to 1.
        if self.args.by_name.contains_key("--num-experts") {
            let k = self.count("--moe-router-topk").unwrap_or(2);
            self.push(Key::Topk, k);
            if let Some(f) = self.count("--moe-shared-expert-intermediate-size") {
                self.push(Key::SharedExpertFfn, f);
            }
            self.moe_layer_freq(layers);
            self.router_conversions();
        } else {
            for flag in [
                "--moe-router-topk",
                "--moe-shared-expert-intermediate-size",
                "--moe-layer-freq",
                "--moe-ffn-hidden-size",
                "--moe-router-num-groups",
                "--moe-router-group-topk",
                "--moe-router-enable-expert-bias",
                "--moe-router-load-balancing-type",
                "--moe-aux-loss-coeff",
                "--moe-permute-fusion",
                "--moe-router-fusion",
            ] {
                if let Some(a) = self.args.get(flag) {
                    self.note(&a, "no effect without `--num-experts`");
                }
            }
            self.model.retain(|l| !l.starts_with("moe_ffn "));
        }

        // Multi-head latent attention: its dims with Megatron's defaults (arguments.py
        // `_add_mla_args`: kv rank 32, qk 128, rope 64, v 128; no query compression).
        let mla_flags: [(&'static str, Key, Option<u64>); 5] = [
            ("--q-lora-rank", Key::QLoraRank, None),
            ("--kv-lora-rank", Key::KvLoraRank, Some(32)),
            ("--qk-head-dim", Key::QkNopeHeadDim, Some(128)),
            ("--qk-pos-emb-head-dim", Key::QkRopeHeadDim, Some(64)),
            ("--v-head-dim", Key::VHeadDim, Some(128)),
        ];
        for (flag, key, default) in mla_flags {
            if mla {
                if let Some(v) = self.count(flag).or(default) {
                    self.push(key, v);
                }
            } else if let Some(a) = self.args.get(flag) {
                self.note(&a, "no effect without `--multi-latent-attention`");
            }
        }
        if let Some(a) = self.args.get("--attention-backend") {
            let w = a.values.first().map(|w| w.text.as_str()).unwrap_or("");
            match w {
                "unfused" | "local" | "AttnBackend.unfused" | "AttnBackend.local" => {
                    self.plan.push(format!("{} unfused", Key::Attention.name()))
                }
                "flash" | "fused" | "auto" | "AttnBackend.flash" | "AttnBackend.fused"
                | "AttnBackend.auto" => {}
                other => self.unknown_choice(
                    Choice::AttentionBackend,
                    other,
                    a.values.first().map_or(a.span, |w| w.span),
                ),
            }
        }
    }

    /// Sliding-window attention, attention sinks: `--window-size (L,R)` (arguments.py
    /// `tuple_type`; L keys before the query, R after, −1 unbounded,
    /// transformer_config.py `window_size`) is `sliding_window L+1` for a causal window
    /// (R = 0); `--window-attn-skip-freq N` (an int: every Nth layer full,
    /// megatron/core/transformer/utils.py `is_layer_window_attention`) is
    /// `sliding_window_pattern N`; `--softmax-type learnable` is `attention_sinks`.
    fn window_conversions(&mut self) {
        let window = self.word("--window-size");
        let mut windowed = false;
        if let Some((text, span)) = window {
            match parse_window(&text) {
                Some((-1, _)) => {}
                Some((left, 0)) if left >= 0 => {
                    windowed = true;
                    self.push(Key::SlidingWindow, left.unsigned_abs().saturating_add(1));
                }
                _ => self.errors.push(MegatronProblem::WindowSize {
                    text,
                    loc: self.loc(span),
                }),
            }
        }
        if let Some((text, span)) = self.word("--window-attn-skip-freq") {
            match parse_count(text.trim()) {
                Ok(n) if n > 0 && windowed => self.push(Key::SlidingWindowPattern, n),
                Ok(n) if n > 0 => {
                    if let Some(a) = self.args.by_name.get("--window-attn-skip-freq").cloned() {
                        self.note(&a, "no effect without a causal `--window-size`");
                    }
                }
                _ => self.errors.push(MegatronProblem::WindowSkipFreq {
                    text,
                    loc: self.loc(span),
                }),
            }
        }
        if let Some(a) = self.args.get("--softmax-type") {
            match a.values.first().map(|w| w.text.as_str()).unwrap_or("") {
                "learnable" => self.push_flag(Key::AttentionSinks),
                "vanilla" => {}
                // A fixed +1 in the denominator: no parameter, no time or memory.
                "off-by-one" => self.note(&a, "no effect on time or memory"),
                other => self.unknown_choice(
                    Choice::SoftmaxType,
                    other,
                    a.values.first().map_or(a.span, |w| w.span),
                ),
            }
        }
    }

    /// Megatron's hybrid CPU-GPU optimizer: `--optimizer-cpu-offload` with
    /// `--optimizer-offload-fraction F` (default 1.0, megatron/training/arguments.py:2918-2923 at
    /// d98e8a64) is `optimizer_offload F`; the fraction alone does nothing, as in Megatron.
    fn optimizer_offload(&mut self) {
        if !self.args.has("--optimizer-cpu-offload") {
            if let Some(a) = self.args.get("--optimizer-offload-fraction") {
                self.note(&a, "no effect without --optimizer-cpu-offload");
            }
            return;
        }
        let (fraction, span) = match self.word("--optimizer-offload-fraction") {
            Some((text, span)) => (text.trim().parse::<f64>().ok(), Some((text, span))),
            None => (Some(1.0), None),
        };
        match fraction {
            Some(0.0) => {}
            Some(f) if (0.0..=1.0).contains(&f) => {
                self.push(
                    Key::OptimizerOffload,
                    format!("{}%", crate::emit::num(f * 100.0)),
                );
            }
            _ => {
                let (text, span) = span.unwrap_or_default();
                self.errors.push(MegatronProblem::OptimizerOffloadFraction {
                    text,
                    loc: self.loc(span),
                });
            }
        }
    }

    /// Expert capacity: `--moe-expert-capacity-factor C` is `moe_capacity_headroom (C − 1)`
    /// for 1 ≤ C ≤ 2 (a negative factor is Megatron's "no capacity", transformer_config.py);
    /// `--moe-pad-expert-input-to-capacity` is `moe_pad_to_capacity`. `--moe-token-drop-policy`
    /// picks which tokens drop, not how many.
    fn capacity_conversions(&mut self) {
        if let Some((text, span)) = self.word("--moe-expert-capacity-factor") {
            match text.trim().parse::<f64>() {
                Ok(c) if c < 0.0 => {}
                Ok(c) if (1.0..=2.0).contains(&c) => {
                    let pct = crate::emit::num((c - 1.0) * 100.0);
                    self.push(Key::MoeCapacityHeadroom, format!("{pct}%"));
                }
                _ => self.errors.push(MegatronProblem::CapacityFactor {
                    text,
                    loc: self.loc(span),
                }),
            }
        }
        if self.args.has("--moe-pad-expert-input-to-capacity") {
            self.push_flag(Key::MoePadToCapacity);
        }
        if let Some(a) = self.args.get("--moe-token-drop-policy") {
            self.note(&a, "no effect on time or memory");
        }
    }

    /// The hybrid pattern's text: `--hybrid-layer-pattern`, or its deprecated spelling
    /// `--hybrid-override-pattern` (arguments.py forwards it), without marking either read.
    fn hybrid_pattern_text(&self) -> Option<String> {
        self.args
            .peek_text("--hybrid-layer-pattern")
            .or_else(|| self.args.peek_text("--hybrid-override-pattern"))
    }

    /// `layers` of a hybrid model: Megatron derives `--num-layers` from the pattern and ignores
    /// a different one (arguments.py, "hybrid_layer_pattern always overrides --num-layers").
    fn layers_of_pattern(&mut self) {
        let Some(text) = self.hybrid_pattern_text() else {
            return;
        };
        let n = text.chars().count() as u64;
        if let Some(a) = self.args.get("--num-layers") {
            if self.args.peek("--num-layers") != Some(n) {
                self.note(&a, "ignored: the hybrid pattern gives the layer count");
            }
        }
        self.push(Key::Layers, n);
    }

    /// A hybrid (Mamba-2) model: the pattern and the Mamba-2 dims (arguments.py
    /// `_add_hybrid_args`/`_add_experimental_args`; pretrain_mamba.py, pretrain_hybrid.py),
    /// each onto its key. Megatron's `|` stage boundaries and `/` MTP patterns, and symbols other
    /// than `M * - E`, are layouts venusc cannot express.
    fn hybrid_conversions(&mut self) {
        let new = self.word("--hybrid-layer-pattern");
        let old = self.word("--hybrid-override-pattern");
        let dims: [(&'static str, Key); 4] = [
            ("--mamba-state-dim", Key::SsmStateSize),
            ("--mamba-head-dim", Key::MambaHeadDim),
            ("--mamba-num-groups", Key::NGroups),
            ("--mamba-num-heads", Key::MambaNumHeads),
        ];
        let Some((text, span)) = new.or(old) else {
            for (flag, _) in dims {
                if let Some(a) = self.args.get(flag) {
                    self.note(&a, "no effect without a hybrid layer pattern");
                }
            }
            if let Some(a) = self.args.get("--is-hybrid-model") {
                self.errors.push(MegatronProblem::HybridWithoutPattern {
                    loc: self.loc(a.span),
                });
            }
            return;
        };
        // The switch only repeats what the pattern says.
        self.args.get("--is-hybrid-model");
        if let Some(bad) = text
            .chars()
            .find(|&c| venus_plan::plan::HybridLayer::from_symbol(c).is_none())
        {
            self.errors.push(MegatronProblem::HybridSymbol {
                pattern: text,
                bad,
                loc: self.loc(span),
            });
            return;
        }
        self.model
            .push(format!("{} \"{text}\"", Key::HybridOverridePattern.name()));
        for (flag, key) in dims {
            if let Some(n) = self.count(flag) {
                self.push(key, n);
            }
        }
    }

    /// `--moe-layer-freq`: venusc models `first_k_dense` dense layers, then MoE layers on every
    /// `moe_layer_freq`-th layer (from 1). Megatron writes the pattern as a Python list
    /// expression (arguments.py `moe_freq_type`): `([0]*K+[1]*M)` with K + M = layers
    /// (DeepSeek-V3), `([0]*(N-1)+[1])*(layers/N)` or `[0,1]*24` (Llama 4), or `1` (all MoE).
    /// An integer N > 1 puts experts on layers 0, N, 2N, … (gpt_layer_specs.py:647-650), which
    /// venusc's keys cannot place.
    fn moe_layer_freq(&mut self, layers: Option<u64>) {
        let Some((text, span)) = self.word("--moe-layer-freq") else {
            return;
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        if compact == "1" {
            return;
        }
        let cap = layers.unwrap_or(1 << 16).min(1 << 16) as usize;
        let parsed = moe_pattern(&compact, cap)
            .filter(|p| layers.is_none_or(|l| p.len() as u64 == l))
            .and_then(|p| dense_then_every(&p));
        match parsed {
            Some((k, n)) => {
                if k > 0 {
                    self.push(Key::FirstKDense, k);
                }
                if n > 1 {
                    self.push(Key::MoeLayerFreq, n);
                }
            }
            _ => {
                self.errors.push(MegatronProblem::MoeLayerFreq {
                    text,
                    layers: layers.unwrap_or(0),
                    loc: self.loc(span),
                });
            }
        }
    }

    /// The router's flags (megatron/core/transformer/moe/router.py, transformer_config.py
    /// d98e8a64): group-limited routing (`--moe-router-num-groups`, `--moe-router-group-topk`),
    /// the aux-loss-free expert bias, the load-balancing loss (a type of
    /// `--moe-router-load-balancing-type` runs only with its `--moe-aux-loss-coeff` above 0,
    /// router.py `get_aux_loss_coeff`), `--moe-permute-fusion` and `--moe-router-fusion`.
    fn router_conversions(&mut self) {
        if let Some(g) = self.count("--moe-router-num-groups") {
            self.push(Key::RoutedGroups, g);
        }
        if let Some(g) = self.count("--moe-router-group-topk") {
            self.push(Key::TopkGroups, g);
        }
        if self.args.has("--moe-router-enable-expert-bias") {
            self.push_flag(Key::ExpertBias);
        }
        if self.args.has("--moe-permute-fusion") {
            self.push_flag(Key::MoePermuteFusion);
        }
        if self.args.has("--moe-router-fusion") {
            self.push_flag(Key::MoeRouterFusion);
        }
        let types = self.args.get("--moe-router-load-balancing-type");
        let coeffs = self.args.get("--moe-aux-loss-coeff");
        let words: Vec<String> = types.as_ref().map_or_else(
            || vec!["aux_loss".to_string()],
            |a| a.values.iter().map(|w| w.text.clone()).collect(),
        );
        let values: Vec<f64> = coeffs.as_ref().map_or_else(Vec::new, |a| {
            a.values
                .iter()
                .map(|w| w.text.parse::<f64>().unwrap_or(0.0))
                .collect()
        });
        // One coefficient serves every type; a list gives one per type.
        let coeff = |i: usize| -> f64 {
            match values.len() {
                0 => 0.0,
                1 => values[0],
                _ => values.get(i).copied().unwrap_or(0.0),
            }
        };
        let active: Vec<&str> = words
            .iter()
            .enumerate()
            .filter(|(i, w)| coeff(*i) > 0.0 && w.as_str() != "none")
            .map(|(_, w)| w.as_str())
            .collect();
        let modelled = ["aux_loss", "seq_aux_loss"];
        if let Some(first) = active.iter().find(|w| modelled.contains(w)) {
            self.push(Key::LoadBalancing, first);
        }
        let unmodelled = active.iter().any(|w| !modelled.contains(w)) || active.len() > 1;
        if unmodelled {
            if let Some(a) = &types {
                self.note(
                    a,
                    "venusc prices one `aux_loss` or `seq_aux_loss` loss; the others are not modelled",
                );
            }
        }
    }

    /// The token dispatcher (`--moe-token-dispatcher-type`, transformer_config.py:891: default
    /// `allgather`; `--moe-flex-dispatcher-backend`, default `deepep`; the deprecated
    /// `--moe-enable-deepep`, l.1743-1752) and the context-parallel exchange
    /// (`--cp-comm-type`, arguments.py default `p2p`, with `--hierarchical-context-parallel-sizes`
    /// for `a2a+p2p`).
    fn folding_conversions(&mut self) {
        let moe = self.args.by_name.contains_key("--num-experts");
        let dispatcher = self.word("--moe-token-dispatcher-type");
        let backend = self.word("--moe-flex-dispatcher-backend");
        let deepep = self.args.has("--moe-enable-deepep");
        if moe {
            let kind = dispatcher.as_ref().map_or("allgather", |(w, _)| w.as_str());
            match kind {
                "alltoall" | "allgather" => self.push(Key::MoeDispatcher, kind),
                "flex" => {
                    let b = match backend.as_ref().map(|(w, s)| (w.as_str(), *s)) {
                        None | Some(("deepep", _)) => Some("deepep"),
                        Some(("hybridep", _)) if !deepep => Some("hybridep"),
                        Some((other, span)) => {
                            self.unknown_choice(Choice::FlexBackend, other, span);
                            None
                        }
                    };
                    if let Some(b) = b {
                        self.push(Key::MoeDispatcher, format!("flex {b}"));
                    }
                }
                other => {
                    let span = dispatcher.as_ref().map_or(self.anchor, |(_, s)| *s);
                    self.unknown_choice(Choice::Dispatcher, other, span);
                }
            }
        }
        let comm = self.args.get("--cp-comm-type");
        let sizes = self.args.get("--hierarchical-context-parallel-sizes");
        let Some(comm) = comm else {
            if let Some(s) = sizes {
                self.note(&s, "read only with `--cp-comm-type a2a+p2p`");
            }
            return;
        };
        let values: Vec<&str> = comm.values.iter().map(|w| w.text.as_str()).collect();
        let first = values.first().copied().unwrap_or("p2p");
        // A per-layer list (transformer_config.py:3105) of one type is that type.
        if values.iter().any(|v| *v != first) {
            self.note(&comm, "venusc runs one `cp_comm` for every layer");
            return;
        }
        let Some(variant) = venus_base::base::CpComm::from_word(first) else {
            let span = comm.values.first().map_or(comm.span, |w| w.span);
            self.unknown_choice(Choice::CpComm, first, span);
            return;
        };
        if variant != venus_base::base::CpComm::A2aP2p {
            self.push(Key::CpComm, variant.word());
            if let Some(s) = sizes {
                self.note(&s, "read only with `--cp-comm-type a2a+p2p`");
            }
            return;
        }
        let counts: Vec<u64> = sizes
            .as_ref()
            .map(|s| {
                s.values
                    .iter()
                    .filter_map(|w| parse_count(&w.text).ok())
                    .collect()
            })
            .unwrap_or_default();
        match counts.as_slice() {
            [a, _] => self.push(Key::CpComm, format!("a2a_p2p {a}")),
            // Without sizes the scenario keeps the variant; `check` reports E0345 (C03).
            [] => self.push(Key::CpComm, "a2a_p2p"),
            _ => {
                let span = sizes.as_ref().map_or(comm.span, |s| s.span);
                self.errors.push(MegatronProblem::HierarchicalSizes {
                    loc: self.loc(span),
                });
            }
        }
    }

    /// CUDA graphs and activation offloading. `--cuda-graph-impl` (transformer_config.py:1075),
    /// or the deprecated `--enable-cuda-graph` (→ `local`) and `--external-cuda-graph` (→
    /// `transformer_engine`), never with `--cuda-graph-impl` nor both (arguments.py:611-631);
    /// `--cuda-graph-modules`, or the deprecated `--cuda-graph-scope` (arguments.py:633-641),
    /// whose `full` is the whole layer and whose `full_iteration` is `--cuda-graph-impl
    /// full_iteration` (<https://github.com/NVIDIA/Megatron-LM/blob/main/docs/user-guide/features/cuda_graph.md>, "Migration Guide").
    /// `--fine-grained-activation-offloading` with `--offload-modules` and
    /// `--activation-offload-fraction` (transformer_config.py:1323-1361);
    /// `--cpu-offloading-num-layers N` turns layer-level offloading on (arguments.py:1950-1951).
    fn graphs_offload_conversions(&mut self) {
        use venus_base::base::{CudaGraphImpl, CudaGraphModules, OffloadModules};
        let impl_word = self.word("--cuda-graph-impl");
        let enable = self.args.get("--enable-cuda-graph");
        let external = self.args.get("--external-cuda-graph");
        let mut imp = match &impl_word {
            Some((w, span)) => match CudaGraphImpl::from_word(w) {
                Some(i) => Some(i),
                None => {
                    self.unknown_choice(Choice::CudaGraphImpl, w, *span);
                    return;
                }
            },
            None => None,
        };
        let legacy: Vec<Arg> = [&enable, &external]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        if !legacy.is_empty() && (imp.is_some() || legacy.len() > 1) {
            let a = legacy.last().cloned().unwrap_or_else(|| legacy[0].clone());
            self.errors.push(MegatronProblem::LegacyCudaGraph {
                loc: self.loc(a.span),
            });
            return;
        }
        if enable.is_some() {
            imp = Some(CudaGraphImpl::Local);
        }
        if external.is_some() {
            imp = Some(CudaGraphImpl::TransformerEngine);
        }
        let modules_arg = self
            .args
            .get("--cuda-graph-modules")
            .or_else(|| self.args.get("--cuda-graph-scope"));
        let mut modules = CudaGraphModules::default();
        if let Some(a) = &modules_arg {
            let words: Vec<&str> = a.values.iter().map(|w| w.text.as_str()).collect();
            if words.contains(&"full_iteration") {
                imp = Some(CudaGraphImpl::FullIteration);
            }
            let known: Vec<&str> = words
                .iter()
                .copied()
                .filter(|w| CudaGraphModules::WORDS.contains(w))
                .collect();
            if known.len()
                + words
                    .iter()
                    .filter(|w| ["full", "full_iteration"].contains(w))
                    .count()
                < words.len()
            {
                self.note(
                    a,
                    "inference graph scopes do not change a training iteration",
                );
            }
            modules = CudaGraphModules::from_words(known);
        }
        if let Some(i) = imp.filter(|i| *i != CudaGraphImpl::None) {
            let mut line = i.word().to_string();
            if i.per_layer() && !modules.is_empty() {
                line = format!("{line} {}", modules.words().join(" "));
            }
            self.push(Key::CudaGraphs, line);
        } else if let Some(a) = &modules_arg {
            self.note(a, "no effect with `--cuda-graph-impl none`");
        }
        if let Some(a) = self.args.get("--cuda-graph-warmup-steps") {
            self.note(
                &a,
                "warmup iterations before capture; venusc simulates captured ones",
            );
        }

        let fine = self.args.get("--fine-grained-activation-offloading");
        let offload = self.args.get("--offload-modules");
        let fraction = self.word("--activation-offload-fraction");
        match (&fine, &offload) {
            (Some(_), Some(a)) => {
                let words: Vec<&str> = a.values.iter().map(|w| w.text.as_str()).collect();
                let known: Vec<&str> = words
                    .iter()
                    .copied()
                    .filter(|w| OffloadModules::WORDS.contains(w))
                    .collect();
                if known.len() < words.len() {
                    self.note(a, "venusc offloads attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act and fused_group_mlp");
                }
                if !known.is_empty() {
                    let m = OffloadModules::from_words(known);
                    self.push(Key::OffloadModules, m.words().join(" "));
                }
                if let Some((text, span)) = &fraction {
                    match text.trim().parse::<f64>() {
                        Ok(f) if (0.0..=1.0).contains(&f) => {
                            if f < 1.0 {
                                let pct = crate::emit::num(f * 100.0);
                                self.push(Key::OffloadFraction, format!("{pct}%"));
                            }
                        }
                        _ => self
                            .errors
                            .push(MegatronProblem::ActivationOffloadFraction {
                                text: text.clone(),
                                loc: self.loc(*span),
                            }),
                    }
                }
            }
            (Some(a), None) => self.errors.push(MegatronProblem::OffloadWithoutModules {
                loc: self.loc(a.span),
            }),
            (None, Some(a)) => {
                self.note(a, "read only with `--fine-grained-activation-offloading`");
            }
            (None, None) => {}
        }
        if fine.is_none() {
            if let Some(a) = self
                .args
                .by_name
                .get("--activation-offload-fraction")
                .cloned()
            {
                self.note(&a, "read only with `--fine-grained-activation-offloading`");
            }
        }
        if let Some(n) = self
            .count0("--cpu-offloading-num-layers")
            .filter(|&n| n > 0)
        {
            self.push(Key::OffloadLayers, n);
        }
    }

    fn plan_conversions(&mut self) {
        // arguments.py `--pipeline-model-parallel-layout`: the layout string as written.
        if let Some((text, _)) = self.word("--pipeline-model-parallel-layout") {
            let quoted = text.replace('\\', "\\\\").replace('"', "\\\"");
            self.push(Key::PipelineLayout, format!("\"{quoted}\""));
        }
        // arguments.py `--grad-reduce-in-bf16` (or the precision-aware optimizer's
        // `--main-grads-dtype bf16`): the main-gradient buffer in bf16.
        let grads_bf16 = self.args.has("--grad-reduce-in-bf16");
        let aware = self.args.has("--use-precision-aware-optimizer");
        let main_grads = self.word("--main-grads-dtype");
        if grads_bf16 || (aware && main_grads.is_some_and(|(w, _)| w == "bf16")) {
            self.push(Key::GradDtype, "bf16");
        }
        // The precision-aware optimizer's state dtypes (megatron/core/optimizer, arguments.py
        // `--use-precision-aware-optimizer`): read only with it, as Megatron does; fp32 is the
        // default each key already has.
        if aware {
            for (flag, key) in [
                ("--main-params-dtype", Key::MainParamsDtype),
                ("--exp-avg-dtype", Key::ExpAvgDtype),
                ("--exp-avg-sq-dtype", Key::ExpAvgSqDtype),
            ] {
                if let Some((w, _)) = self.word(flag) {
                    if w != "fp32" {
                        self.push(key, w);
                    }
                }
            }
        }
        self.optimizer_offload();
        self.fsdp();
        let layers = self.args.peek("--num-layers");
        let pp = self
            .args
            .peek("--pipeline-model-parallel-size")
            .unwrap_or(1);

        // Interleaving (arguments.py:953-978): stages per rank, or layers per virtual stage,
        // which gives (layers / pp) / n; a count of 1 is no interleaving.
        let mut vpp = self.count("--num-virtual-stages-per-pipeline-rank");
        if let Some(n) = self.count("--num-layers-per-virtual-pipeline-stage") {
            let span = self
                .args
                .span("--num-layers-per-virtual-pipeline-stage")
                .unwrap_or(self.anchor);
            match layers {
                Some(l) if pp > 0 && l.is_multiple_of(pp) && (l / pp).is_multiple_of(n) => {
                    vpp = Some(l / pp / n)
                }
                Some(l) => self.errors.push(MegatronProblem::VirtualStageLayers {
                    per_virtual: n,
                    stage_layers: l / pp.max(1),
                    pp,
                    loc: self.loc(span),
                }),
                None => {}
            }
        }
        let vpp = vpp.filter(|&v| v > 1);
        if let Some(v) = vpp {
            self.push(Key::Vpp, v);
        }
        if let Some(b) = self.count("--global-batch-size") {
            self.push(Key::GlobalBatch, b);
        }
        if self.args.has("--sequence-parallel") {
            self.push_flag(Key::Sp);
        }

        // Recomputation (arguments.py:1408-1428, `--recompute-activations` is selective):
        // venusc's `full` is Megatron's full recompute of every layer: `uniform` with one
        // layer per group.
        let granularity = self.word("--recompute-granularity");
        let activations = self.args.has("--recompute-activations");
        match granularity.as_ref().map(|(w, s)| (w.as_str(), *s)) {
            Some(("full", _)) => {
                self.push(Key::Recompute, "full");
                // transformer_config.py:1908-1918 (d98e8a64): full granularity needs a
                // method and a layer count; venusc's defaults are Megatron's usual
                // `uniform` with 1 layer per group.
                if let Some((method, span)) = self.word("--recompute-method") {
                    match method.as_str() {
                        "uniform" => {}
                        "block" => self.push(Key::RecomputeMethod, "block"),
                        other => self.unknown_choice(Choice::RecomputeMethod, other, span),
                    }
                }
                if let Some(n) = self.count("--recompute-num-layers") {
                    if n != 1 {
                        self.push(Key::RecomputeNumLayers, n);
                    }
                }
            }
            Some(("selective", _)) => self.push(Key::Recompute, "selective"),
            None if activations => self.push(Key::Recompute, "selective"),
            Some((other, span)) => self.unknown_choice(Choice::RecomputeGranularity, other, span),
            None => {}
        }
        // `--recompute-modules` refines selective recompute only (transformer_config.py:1943);
        // Megatron's default is `core_attn` alone (:1940-1941).
        if let Some(a) = self.args.get("--recompute-modules") {
            let selective = matches!(
                granularity.as_ref().map(|(w, _)| w.as_str()),
                Some("selective")
            ) || (granularity.is_none() && activations);
            let known: Vec<&str> = a
                .values
                .iter()
                .map(|w| w.text.as_str())
                .filter(|w| RecomputeModules::WORDS.contains(w))
                .collect();
            if !selective {
                self.note(
                    &a,
                    "Megatron reads `--recompute-modules` only with selective recompute",
                );
            } else if known.len() < a.values.len() {
                self.note(
                    &a,
                    "venusc recomputes core_attn, mlp, moe_act, layernorm, mla_up_proj, moe and shared_experts",
                );
            }
            let modules = RecomputeModules::from_words(known.iter().copied());
            if selective && !known.is_empty() && modules != RecomputeModules::CORE_ATTN {
                self.push(Key::RecomputeModules, modules.words().join(" "));
            }
        }

        // Pipeline send/receive overlap: Megatron's default with interleaving
        // (`--no-overlap-p2p-communication` turns it off), cleared without it
        // (arguments.py:1000-1017).
        let no_overlap = self.args.has("--no-overlap-p2p-communication");
        // A layout interleaves when it holds more virtual stages than pp (arguments.py L02).
        let layout_interleaves = self
            .args
            .peek_text("--pipeline-model-parallel-layout")
            .and_then(|t| venus_plan::plan::pipeline_layout::parse(&t).ok())
            .is_some_and(|l| l.stages.len() as u64 > pp);
        if (vpp.is_some() || layout_interleaves) && !no_overlap {
            self.push_flag(Key::OverlapP2p);
        }

        // `--ddp-bucket-size` counts elements; venusc's `bucket_size` bytes of the fp32
        // gradient buffer (lower/mod.rs).
        if let Some(n) = self.count("--ddp-bucket-size") {
            let width = Recipe::for_precision(Precision::Bf16).main_grads.bytes();
            match n.checked_mul(width) {
                Some(b) => self.push(Key::BucketSize, format!("{b}B")),
                None => {
                    let span = self.args.span("--ddp-bucket-size").unwrap_or(self.anchor);
                    self.errors.push(MegatronProblem::BucketTooLarge {
                        elements: n,
                        loc: self.loc(span),
                    });
                }
            }
        }
    }

    /// `--use-megatron-fsdp` → `fsdp STRATEGY`, `--use-torch-fsdp2` → `fsdp STRATEGY torch`, the
    /// strategy `--data-parallel-sharding-strategy` (Megatron's default `optim_grads_params`,
    /// arguments.py at d98e8a64); without either flag the strategy is read by no one, so it
    /// is listed in W0012.
    fn fsdp(&mut self) {
        let megatron = self.args.has("--use-megatron-fsdp");
        let torch = self.args.has("--use-torch-fsdp2");
        if !megatron && !torch {
            return;
        }
        let strategy = match self.word("--data-parallel-sharding-strategy") {
            Some((w, _)) if FSDP_STRATEGIES.contains(&w.as_str()) => w,
            Some((w, span)) => {
                self.unknown_choice(Choice::FsdpStrategy, &w, span);
                return;
            }
            None => "optim_grads_params".to_string(),
        };
        if torch {
            self.push(Key::Fsdp, format!("{strategy} torch"));
        } else {
            self.push(Key::Fsdp, strategy);
        }
    }

    /// `--bf16` (venusc's default), `--fp8-format` → `precision fp8` (`fp8_format e4m3` when
    /// not `hybrid`), `--fp8-recipe` → `fp8_recipe`, `--fp4-format e2m1` → `precision fp4`,
    /// `--fp8-dot-product-attention` → `fp8_attention`. Megatron's choices and defaults are
    /// TransformerConfig's (transformer_config.py:587-599, 621-627, 673-681 at d98e8a64): the
    /// `custom` recipes (a user's quantizer) and the delayed recipe's amax history
    /// (`--fp8-amax-history-len`, `--fp8-amax-compute-algo`: which amax sets the next scale,
    /// no change to the bytes or the kernels) are listed in W0012.
    fn precision(&mut self) {
        let bf16 = self.args.has("--bf16");
        let fp16 = self.args.get("--fp16");
        let fp8 = self.word("--fp8-format");
        let fp4 = self.word("--fp4-format");
        let mut format = None;
        if let Some((f, span)) = &fp8 {
            format = venus_base::base::Fp8Format::from_word(f);
            if format.is_none() {
                self.unknown_choice(Choice::Fp8Format, f, *span);
            }
        }
        if let Some((f, span)) = &fp4 {
            if f != "e2m1" {
                self.unknown_choice(Choice::Fp4Format, f, *span);
            }
        }
        // arguments.py:1100-1101: the two formats exclude each other.
        if let (Some(_), Some((_, span))) = (&fp8, &fp4) {
            self.errors.push(MegatronProblem::BothFormats {
                loc: self.loc(*span),
            });
        }
        let fp8_gemms = fp8.is_some() && fp4.is_none();
        if fp4.is_some() {
            self.push(Key::Precision, "fp4");
        } else if fp8.is_some() {
            self.push(Key::Precision, "fp8");
            if format == Some(venus_base::base::Fp8Format::E4m3) {
                self.push(Key::Fp8Format, "e4m3");
            }
        }
        if let Some((r, span)) = self.word("--fp8-recipe") {
            match venus_base::base::Fp8Recipe::from_word(&r) {
                Some(recipe) if fp8_gemms => {
                    if recipe != venus_base::base::Fp8Recipe::Delayed {
                        self.push(Key::Fp8Recipe, recipe.word());
                    }
                }
                Some(_) => {
                    if let Some(a) = self.args.get("--fp8-recipe") {
                        self.note(&a, "read only with `--fp8-format` (FP8 GEMMs)");
                    }
                }
                None if r == "custom" => {
                    if let Some(a) = self.args.get("--fp8-recipe") {
                        self.note(
                            &a,
                            "a custom quantizer's casts are not modelled: costed as `delayed`",
                        );
                    }
                }
                None => self.unknown_choice(Choice::Fp8Recipe, &r, span),
            }
        }
        if let Some(a) = self.args.get("--fp4-recipe") {
            if a.values.first().is_some_and(|w| w.text != "nvfp4") {
                self.note(
                    &a,
                    "a custom quantizer's casts are not modelled: costed as `nvfp4`",
                );
            }
        }
        for (flag, default) in [
            ("--fp8-amax-history-len", "1"),
            ("--fp8-amax-compute-algo", "most_recent"),
        ] {
            if let Some(a) = self.args.get(flag) {
                if a.values.first().is_some_and(|w| w.text != default) {
                    self.note(
                        &a,
                        "the delayed recipe's amax history: the same casts and kernels",
                    );
                }
            }
        }
        if self.args.has("--fp8-dot-product-attention") {
            self.push_flag(Key::Fp8Attention);
        }
        if let Some(a) = fp16 {
            self.note(&a, "modelled as bf16 (the same byte widths)");
        } else if !bf16 {
            self.not_modelled.push((
                "(no `--bf16`)".into(),
                "Megatron trains in fp32 without `--bf16` or `--fp16`; venusc models bf16",
            ));
        }
    }

    /// A flag that is parsed but whose value venusc does not model, with why.
    fn note(&mut self, a: &Arg, why: &'static str) {
        self.not_modelled.push((shown(a), why));
        self.first_noted.get_or_insert(a.span);
    }

    /// Every flag no conversion read: listed in W0012.
    fn list_unmapped(&mut self) {
        let order = self.args.order.clone();
        for name in order {
            if self.args.used.contains(name) {
                continue;
            }
            let a = self.args.by_name[name].clone();
            let why = if NO_EFFECT_PREFIXES.iter().any(|p| name.starts_with(p)) {
                "no effect on time or memory"
            } else {
                "not modelled by venusc"
            };
            self.note(&a, why);
        }
    }

    /// The world size: the launcher's, `--gpus`, or the smallest the plan takes (W0013).
    fn world(&mut self, torchrun: &Torchrun, opts: &MegatronOptions) -> u64 {
        let get = |c: &Converter, name: &str| c.args.peek(name).unwrap_or(1).max(1);
        let (tp, pp, cp, ep) = (
            get(self, "--tensor-model-parallel-size"),
            get(self, "--pipeline-model-parallel-size"),
            get(self, "--context-parallel-size"),
            get(self, "--expert-model-parallel-size"),
        );
        let model = tp.saturating_mul(pp).saturating_mul(cp);
        let launched = torchrun.world();
        let world = match (launched, opts.gpus) {
            (Some((w, span)), Some(g)) if w != g => {
                self.errors.push(MegatronProblem::GpuCountConflict {
                    launched: w,
                    gpus: g,
                    loc: self.loc(span),
                });
                return w;
            }
            (Some((w, _)), _) => w,
            (None, Some(g)) => g,
            (None, None) => {
                // The smallest world both grids divide (parallel_state.py:876-884:
                // etp × ep × pp divides it; etp defaults to tp, arguments.py:587-588).
                let etp = self
                    .args
                    .peek("--expert-tensor-parallel-size")
                    .unwrap_or(tp)
                    .max(1);
                let expert = etp.saturating_mul(ep).saturating_mul(pp);
                let w = venus_base::base::math::lcm(model.max(1), expert.max(1));
                let dp = (w / model.max(1)).max(1);
                self.assumed.push(Assumption::GpuCount { world: w, dp });
                w
            }
        };
        if model > 0 && !world.is_multiple_of(model) {
            let span = launched.map_or(self.anchor, |(_, s)| s);
            let tp_span = self
                .args
                .span("--tensor-model-parallel-size")
                .unwrap_or(self.anchor);
            self.errors.push(MegatronProblem::WorldNotMultiple {
                world,
                tp,
                pp,
                cp,
                model,
                loc: self.loc(span),
                sizes: self.loc(tp_span),
            });
        }
        world
    }

    fn finish(mut self, opts: &MegatronOptions, cluster: &str, world: u64) -> MegatronImport {
        let n = &opts.name;
        if !self.plan.iter().any(|l| l.starts_with("global_batch ")) {
            // arguments.py:702-704: the global batch defaults to micro × dp.
            let micro = self
                .plan
                .iter()
                .find_map(|l| l.strip_prefix("micro_batch "))
                .and_then(|m| m.parse::<u64>().ok())
                .unwrap_or(1);
            let get = |name: &str| self.args.peek(name).unwrap_or(1).max(1);
            let model = get("--tensor-model-parallel-size")
                .saturating_mul(get("--pipeline-model-parallel-size"))
                .saturating_mul(get("--context-parallel-size"));
            let dp = (world / model.max(1)).max(1);
            self.plan
                .push(format!("global_batch {}", micro.saturating_mul(dp)));
        }
        let mut venus = format!(
            "# Imported from `{}` by `venusc import megatron` (flags of Megatron-LM's\n\
             # megatron/training/arguments.py at {}).\n",
            opts.source.replace('\n', " "),
            &megatron_flags::COMMIT[..12]
        );
        for a in &self.assumed {
            let _ = writeln!(venus, "# assumed: {}", a.text());
        }
        if !self.not_modelled.is_empty() {
            venus.push_str("# not modelled (W0012):\n");
            for (flag, why) in &self.not_modelled {
                let _ = writeln!(venus, "#   {flag}: {why}");
            }
        }
        let _ = writeln!(venus, "\nmodel {n}_model <");
        for l in sorted_lines(&self.model) {
            let _ = writeln!(venus, "  {l}");
        }
        venus.push_str(">\n\n");
        let _ = writeln!(venus, "cluster {n}_cluster : {cluster} < gpus {world} >\n");
        let _ = writeln!(venus, "plan {n}_plan <");
        for l in sorted_lines(&self.plan) {
            let _ = writeln!(venus, "  {l}");
        }
        venus.push_str(">\n\n");
        let _ = writeln!(
            venus,
            "scenario {n} <\n  model {n}_model\n  cluster {n}_cluster\n  plan {n}_plan\n>"
        );

        let mut warnings = Vec::new();
        if !self.not_modelled.is_empty() {
            warnings.push(MegatronProblem::NotModelled {
                flags: self.not_modelled.clone(),
                loc: self.loc(self.first_noted.unwrap_or(self.anchor)),
            });
        }
        if !self.assumed.is_empty() {
            warnings.push(MegatronProblem::Assumed {
                assumed: self.assumed.clone(),
                cluster_given: opts.cluster.is_some(),
                loc: self.loc(self.anchor),
            });
        }
        let warnings = diagnostics(warnings);
        let not_modelled = self
            .not_modelled
            .iter()
            .map(|(flag, why)| format!("{flag}: {why}"))
            .collect();
        MegatronImport {
            venus,
            warnings,
            model: sorted_lines(&self.model),
            plan: sorted_lines(&self.plan),
            not_modelled,
        }
    }
}

/// The `--moe-layer-freq` pattern of `first_k_dense` K and `moe_layer_freq` N:
/// `([0]*(N-1)+[1])*M` when it covers the layers exactly (Llama 4), else the list written out.
fn moe_layer_freq_text(layers: u64, k: u64, n: u64) -> String {
    if k == 0 && layers.is_multiple_of(n) {
        return format!("([0]*{}+[1])*{}", n - 1, layers / n);
    }
    let entries: Vec<&str> = (0..layers)
        .map(|i| {
            if i >= k && (i + 1).is_multiple_of(n) {
                "1"
            } else {
                "0"
            }
        })
        .collect();
    format!("[{}]", entries.join(","))
}

/// A `--moe-layer-freq` list expression (`([0]*3+[1]*58)`, `[0,1]*24`) evaluated to its 0/1
/// entries: lists of 0 and 1, `+` (concatenation), `*COUNT` (repetition) and parentheses, as
/// arguments.py `moe_freq_type` evaluates it. `None` for anything else or past `cap` entries.
fn moe_pattern(text: &str, cap: usize) -> Option<Vec<bool>> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
        cap: usize,
    }
    impl P<'_> {
        fn eat(&mut self, c: u8) -> bool {
            if self.s.get(self.i) == Some(&c) {
                self.i += 1;
                true
            } else {
                false
            }
        }
        fn count(&mut self) -> Option<usize> {
            let start = self.i;
            while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            std::str::from_utf8(&self.s[start..self.i])
                .ok()?
                .parse()
                .ok()
        }
        fn expr(&mut self, depth: u32) -> Option<Vec<bool>> {
            let mut v = self.term(depth)?;
            while self.eat(b'+') {
                v.extend(self.term(depth)?);
                if v.len() > self.cap {
                    return None;
                }
            }
            Some(v)
        }
        fn term(&mut self, depth: u32) -> Option<Vec<bool>> {
            let mut v = self.atom(depth)?;
            while self.eat(b'*') {
                let n = self.count()?;
                if v.len().checked_mul(n)? > self.cap {
                    return None;
                }
                v = v.repeat(n);
            }
            Some(v)
        }
        fn atom(&mut self, depth: u32) -> Option<Vec<bool>> {
            if depth > 32 {
                return None;
            }
            if self.eat(b'(') {
                let v = self.expr(depth + 1)?;
                return self.eat(b')').then_some(v);
            }
            if !self.eat(b'[') {
                return None;
            }
            let mut v = Vec::new();
            loop {
                match self.count()? {
                    0 => v.push(false),
                    1 => v.push(true),
                    _ => return None,
                }
                if self.eat(b']') {
                    return Some(v);
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
    }
    let mut p = P {
        s: text.as_bytes(),
        i: 0,
        cap,
    };
    let v = p.expr(0)?;
    (p.i == p.s.len()).then_some(v)
}

/// The `(first_k_dense, moe_layer_freq)` whose layers with experts are exactly the pattern's
/// 1 entries (layer i from 0 has experts when i ≥ K and (i + 1) is a multiple of N), the
/// smallest K; `None` when no pair gives it.
fn dense_then_every(pattern: &[bool]) -> Option<(u64, u64)> {
    let ones: Vec<usize> = (0..pattern.len()).filter(|&i| pattern[i]).collect();
    let first = *ones.first()?;
    let n = ones.get(1).map_or(1, |&second| second - first);
    // Without leading dense layers when the first MoE layer is already layer n (from 1).
    let k = if (first + 1) % n == 0 && first + 1 == n {
        0
    } else {
        first
    };
    let fits = (0..pattern.len()).all(|i| pattern[i] == (i >= k && (i + 1) % n == 0));
    fits.then_some((k as u64, n as u64))
}

/// The flag as written, values included (`--moe-router-num-groups 8`).
fn shown(a: &Arg) -> String {
    let mut s = a.flag.name.to_string();
    for v in &a.values {
        s.push(' ');
        s.push_str(&excerpt(&v.text));
    }
    s
}

/// Key lines in key-table order, so an import and its round trip write the same file.
fn sorted_lines(lines: &[String]) -> Vec<String> {
    let mut keyed: Vec<(usize, &String)> = lines
        .iter()
        .map(|l| {
            let key = l.split_whitespace().next().unwrap_or("");
            let i = Key::all()
                .position(|k| k.name() == key)
                .unwrap_or(usize::MAX);
            (i, l)
        })
        .collect();
    keyed.sort_by_key(|&(i, _)| i);
    keyed.into_iter().map(|(_, l)| l.clone()).collect()
}

// ------------------------------------------------------------------------------ emit

/// The flags of a scenario's model and plan, one per line with `\` continuations, ready to
/// paste after `pretrain_gpt.py`. Counts are always written, Megatron's default or not (so a
/// reader sees every size); switches only when on; comment lines first: the GPU count (which
/// torchrun gives) and every plan feature no flag expresses.
pub fn emit_megatron(sc: &Scenario) -> String {
    let m = &sc.model;
    let p = &sc.plan;
    let mut f: Vec<String> = Vec::new();
    let mut add = |flag: &str, value: Option<String>| {
        debug_assert!(
            megatron_flags::flag(flag.split(' ').next().unwrap_or(flag)).is_some(),
            "{flag} is not a Megatron-LM flag"
        );
        let list = megatron_flags::flag(flag).is_some_and(|f| f.arity == Arity::List);
        f.push(match value {
            // A list flag's values are words of their own (`--recompute-modules core_attn mlp`).
            Some(v) if list => {
                let words: Vec<String> = v.split(' ').map(shell_quoted).collect();
                format!("{flag} {}", words.join(" "))
            }
            Some(v) => format!("{flag} {}", shell_quoted(&v)),
            None => flag.to_string(),
        });
    };
    let flag_of = |k: Key| k.sig().megatron.unwrap_or("");
    // Model.
    add(flag_of(Key::Layers), Some(m.layers.to_string()));
    add(flag_of(Key::Hidden), Some(m.hidden.to_string()));
    add(flag_of(Key::Ffn), Some(m.ffn().to_string()));
    add(flag_of(Key::Heads), Some(m.heads.to_string()));
    if !m.is_mla() {
        if m.kv_groups() != m.heads {
            add("--group-query-attention", None);
            add(flag_of(Key::KvGroups), Some(m.kv_groups().to_string()));
        }
        add(flag_of(Key::HeadDim), Some(m.head_dim().to_string()));
    }
    add(flag_of(Key::Seq), Some(m.seq.to_string()));
    add(flag_of(Key::Vocab), Some(m.vocab.to_string()));
    if m.swiglu() {
        add(flag_of(Key::Swiglu), None);
    }
    if m.untied_embeddings() {
        add(flag_of(Key::UntiedEmbeddings), None);
    }
    if m.is_moe() {
        add(flag_of(Key::Experts), Some(m.experts().to_string()));
        add(flag_of(Key::Topk), Some(m.topk().to_string()));
        add(flag_of(Key::MoeFfn), Some(m.moe_ffn().to_string()));
        if m.shared_expert_ffn() > 0 {
            add(
                flag_of(Key::SharedExpertFfn),
                Some(m.shared_expert_ffn().to_string()),
            );
        }
        let k = m.first_k_dense();
        let n = m.moe_layer_freq();
        if n > 1 {
            add(
                flag_of(Key::FirstKDense),
                Some(moe_layer_freq_text(m.layers, k, n)),
            );
        } else if k > 0 {
            add(
                flag_of(Key::FirstKDense),
                Some(format!("([0]*{k}+[1]*{})", m.layers - k)),
            );
        }
        if let Some(g) = m.routed_groups {
            add(flag_of(Key::RoutedGroups), Some(g.to_string()));
            add(flag_of(Key::TopkGroups), Some(m.topk_groups().to_string()));
        }
        if m.expert_bias() {
            add(flag_of(Key::ExpertBias), None);
        }
        let lb = m.load_balancing();
        if lb != venus_plan::plan::spec::LoadBalancing::None {
            // A loss runs only with a coefficient above 0 (router.py `get_aux_loss_coeff`);
            // DeepSeek-V3's sequence-wise balance factor is 0.0001 (arXiv:2412.19437 §4.2).
            add(flag_of(Key::LoadBalancing), Some(lb.word().to_string()));
            add("--moe-aux-loss-coeff", Some("0.0001".to_string()));
        }
    }
    if m.is_mla() {
        add("--multi-latent-attention", None);
        if let Some(q) = m.q_lora_rank {
            add(flag_of(Key::QLoraRank), Some(q.to_string()));
        }
        add(flag_of(Key::KvLoraRank), Some(m.kv_lora_rank().to_string()));
        add(
            flag_of(Key::QkNopeHeadDim),
            Some(m.qk_nope_head_dim().to_string()),
        );
        add(
            flag_of(Key::QkRopeHeadDim),
            Some(m.qk_rope_head_dim().to_string()),
        );
        add(flag_of(Key::VHeadDim), Some(m.v_head_dim().to_string()));
    }
    if m.mtp_layers() > 0 {
        add(flag_of(Key::MtpLayers), Some(m.mtp_layers().to_string()));
    }
    if let Some(w) = m.sliding_window {
        // A window of w keys, the query itself included: w − 1 before it, none after.
        add(
            flag_of(Key::SlidingWindow),
            Some(format!("({},0)", w.saturating_sub(1))),
        );
        if let Some(n) = m.sliding_window_pattern {
            add(flag_of(Key::SlidingWindowPattern), Some(n.to_string()));
        }
    }
    if m.attention_sinks() {
        add(flag_of(Key::AttentionSinks), Some("learnable".into()));
    }
    if m.qk_norm() {
        add(flag_of(Key::QkNorm), None);
    }
    if let Some(pattern) = &m.hybrid_pattern {
        add(
            flag_of(Key::HybridOverridePattern),
            Some(venus_plan::plan::spec::pattern_text(pattern)),
        );
    }
    for (key, value) in [
        (Key::MambaNumHeads, m.mamba_num_heads),
        (Key::MambaHeadDim, m.mamba_head_dim),
        (Key::SsmStateSize, m.ssm_state_size),
        (Key::NGroups, m.n_groups),
        (Key::MoeLatentSize, m.moe_latent_size),
    ] {
        if let Some(v) = value {
            add(flag_of(key), Some(v.to_string()));
        }
    }
    // Plan.
    add(flag_of(Key::Tp), Some(sc.tp.to_string()));
    add(flag_of(Key::Pp), Some(sc.pp.to_string()));
    add(flag_of(Key::Cp), Some(sc.cp.to_string()));
    add(flag_of(Key::Ep), Some(sc.ep.to_string()));
    if p.etp.is_some() {
        add(flag_of(Key::Etp), Some(sc.etp.to_string()));
    }
    if m.is_moe() {
        // Megatron's default is `allgather` (transformer_config.py:891), venusc's `alltoall`:
        // the type is always written.
        let d = p.moe_dispatcher();
        add(flag_of(Key::MoeDispatcher), Some(d.word().to_string()));
        if let venus_base::base::MoeDispatcher::Flex(b) = d {
            add("--moe-flex-dispatcher-backend", Some(b.word().to_string()));
        }
        if p.moe_permute_fusion() {
            add(flag_of(Key::MoePermuteFusion), None);
        }
        if p.moe_router_fusion() {
            add(flag_of(Key::MoeRouterFusion), None);
        }
    }
    if let Some(c) = p.cp_comm {
        add(flag_of(Key::CpComm), Some(c.megatron().to_string()));
        if c == venus_base::base::CpComm::A2aP2p {
            if let Some(a) = p.cp_a2a.filter(|&a| a > 0) {
                add(
                    &format!("--hierarchical-context-parallel-sizes {a} {}", sc.cp / a),
                    None,
                );
            }
        }
    }
    // CUDA graphs and activation offloading (`graphs_offload_conversions` reads them back).
    let graphs = p.cuda_graphs();
    if graphs != venus_base::base::CudaGraphImpl::None {
        add(flag_of(Key::CudaGraphs), Some(graphs.word().to_string()));
        let modules = p.cuda_graph_modules();
        if graphs.per_layer() && !modules.is_empty() {
            add("--cuda-graph-modules", Some(modules.words().join(" ")));
        }
    }
    let offload = p.offload_modules();
    if !offload.is_empty() {
        add("--fine-grained-activation-offloading", None);
        add(
            flag_of(Key::OffloadModules),
            Some(offload.words().join(" ")),
        );
        if let Some(f) = p.offload_fraction.filter(|f| f.0 < 1.0) {
            add(
                flag_of(Key::OffloadFraction),
                Some(crate::emit::num(f.0.max(0.0))),
            );
        }
    }
    if p.offload_layers() > 0 {
        add(
            flag_of(Key::OffloadLayers),
            Some(p.offload_layers().to_string()),
        );
    }
    match &p.pipeline_layout {
        // arguments.py L01: a layout and a virtual-stage count are never both written.
        Some(layout) => add(flag_of(Key::PipelineLayout), Some(layout.clone())),
        None if sc.vpp > 1 => add(flag_of(Key::Vpp), Some(sc.vpp.to_string())),
        None => {}
    }
    if p.account_for_embedding == Some(true) {
        add(flag_of(Key::AccountForEmbedding), None);
    }
    if p.account_for_loss == Some(true) {
        add(flag_of(Key::AccountForLoss), None);
    }
    if let Some(n) = p.first_stage_layers {
        add(flag_of(Key::FirstStageLayers), Some(n.to_string()));
    }
    if let Some(n) = p.last_stage_layers {
        add(flag_of(Key::LastStageLayers), Some(n.to_string()));
    }
    add(flag_of(Key::MicroBatch), Some(sc.micro_batch.to_string()));
    add(flag_of(Key::GlobalBatch), Some(sc.global_batch.to_string()));
    if sc.sp {
        add(flag_of(Key::Sp), None);
    }
    match sc.recompute {
        Recompute::None => {}
        Recompute::Selective => {
            add("--recompute-granularity", Some("selective".into()));
            let modules = p.recompute_modules();
            if modules != RecomputeModules::CORE_ATTN {
                add(
                    flag_of(Key::RecomputeModules),
                    Some(modules.words().join(" ")),
                );
            }
        }
        Recompute::Full => {
            add("--recompute-granularity", Some("full".into()));
            add(
                flag_of(Key::RecomputeMethod),
                Some(p.recompute_method().word().into()),
            );
            add(
                flag_of(Key::RecomputeNumLayers),
                Some(p.recompute_num_layers().to_string()),
            );
        }
        // PyTorch's per-op checkpointing has no Megatron-LM flag (`no_flag_notes`).
        Recompute::Op => {}
    }
    let fl = &sc.flags;
    for (on, key) in [
        (fl.distributed_optimizer, Key::DistributedOptimizer),
        (fl.overlap_grad_reduce, Key::OverlapGradReduce),
        (fl.overlap_param_gather, Key::OverlapParamGather),
        (fl.overlap_tp_comm, Key::OverlapTpComm),
        (fl.overlap_ep_comm, Key::OverlapEpComm),
    ] {
        if on {
            add(flag_of(key), None);
        }
    }
    if let Some(strategy) = p.fsdp {
        add(
            match p.fsdp_impl() {
                FsdpImpl::Megatron => "--use-megatron-fsdp",
                FsdpImpl::Torch => "--use-torch-fsdp2",
            },
            None,
        );
        add(flag_of(Key::Fsdp), Some(strategy.word().to_string()));
    }
    if sc.vpp > 1 && !fl.overlap_p2p {
        add(flag_of(Key::OverlapP2p), None);
    }
    if let Some(b) = p.bucket_size {
        add(
            flag_of(Key::BucketSize),
            Some((b.0 / sc.recipe.main_grads.bytes().max(1)).to_string()),
        );
    }
    if sc.recipe.main_grads.bytes() == 2 {
        add("--grad-reduce-in-bf16", None);
    }
    if p.fp8_param_gather() && sc.recipe.gemm == Precision::Fp8 {
        add(flag_of(Key::Fp8ParamGather), None);
    }
    let state = [
        ("--main-params-dtype", p.main_params_dtype),
        ("--exp-avg-dtype", p.exp_avg_dtype),
        ("--exp-avg-sq-dtype", p.exp_avg_sq_dtype),
    ];
    // `--optimizer-cpu-offload` needs the precision-aware optimizer (arguments.py:1884-1888).
    let offload = p.optimizer_offload();
    if offload > Ratio::ZERO || state.iter().any(|(_, d)| d.is_some_and(|d| d.bytes() < 4)) {
        add("--use-precision-aware-optimizer", None);
        for (flag, d) in state {
            if let Some(d) = d.filter(|d| d.bytes() < 4) {
                add(flag, Some(d.word().to_string()));
            }
        }
    }
    if offload > Ratio::ZERO {
        add("--optimizer-cpu-offload", None);
        add(
            flag_of(Key::OptimizerOffload),
            Some(crate::emit::num(offload.0)),
        );
    }
    add("--bf16", None);
    match sc.recipe.gemm {
        Precision::Bf16 => {}
        Precision::Fp8 => {
            add("--fp8-format", Some(p.fp8_format().word().to_string()));
            let recipe = p.fp8_recipe();
            if recipe != venus_base::base::Fp8Recipe::Delayed {
                add("--fp8-recipe", Some(recipe.word().to_string()));
            }
        }
        Precision::Fp4 => add("--fp4-format", Some("e2m1".into())),
    }
    if p.attention() == Attention::Flash2 {
        // Megatron's `flash` backend is Transformer Engine's FlashAttention (flash-attn 2.x).
        add("--attention-backend", Some("flash".into()));
    }
    if p.attention() == Attention::Unfused {
        add("--attention-backend", Some("unfused".into()));
    }
    if let Some(r) = p.moe_capacity_headroom {
        add(
            flag_of(Key::MoeCapacityHeadroom),
            Some(crate::emit::num(1.0 + r.0)),
        );
        if PlanSpec::flag(p.moe_pad_to_capacity) {
            add(flag_of(Key::MoePadToCapacity), None);
        }
    }
    add(flag_of(Key::Iterations), Some(p.iterations().to_string()));

    let mut out = format!(
        "# Megatron-LM flags of scenario `{}` (`venusc compile --emit megatron`), named as in\n\
         # megatron/training/arguments.py at NVIDIA/Megatron-LM {}\n",
        sc.name,
        &megatron_flags::COMMIT[..12]
    );
    let _ = writeln!(
        out,
        "# GPUs: {} (torchrun: {})",
        sc.world,
        torchrun_hint(sc)
    );
    for note in no_flag_notes(sc) {
        let _ = writeln!(out, "# no Megatron-LM flag: {note}");
    }
    let n = f.len();
    for (i, line) in f.into_iter().enumerate() {
        out.push_str(&line);
        out.push_str(if i + 1 < n { " \\\n" } else { "\n" });
    }
    out
}

/// `value` as one shell word: in single quotes when it holds a character the shell would
/// read (`([0]*3+[1]*58)`: parentheses and globs), so the lines paste into a script.
fn shell_quoted(value: &str) -> String {
    if value
        .chars()
        .any(|c| " \t()|&;<>$`\\\"'*?[]#~{}".contains(c))
    {
        format!("'{}'", value.replace('\'', "'\\''"))
    } else {
        value.to_string()
    }
}

/// torchrun's node and per-node counts for the scenario's world on its cluster's innermost
/// dim.
fn torchrun_hint(sc: &Scenario) -> String {
    let per = sc.cluster.dims.first().map_or(1, |d| d.size).max(1);
    if sc.world.is_multiple_of(per) {
        format!("--nnodes {} --nproc-per-node {per}", sc.world / per)
    } else {
        format!("--nnodes 1 --nproc-per-node {}", sc.world)
    }
}

/// The plan's features that no Megatron-LM flag expresses, as written.
fn no_flag_notes(sc: &Scenario) -> Vec<String> {
    let p = &sc.plan;
    let mut notes = Vec::new();
    if p.fp8_attention() {
        notes.push(
            "`fp8_attention` (TransformerConfig `fp8_dot_product_attention = True`: set it in the model config, or pass `--fp8-dot-product-attention` to a NeMo or Megatron-Bridge launcher)"
                .to_string(),
        );
    }
    // megatron/core/ssm/mamba_mixer.py `MambaMixer(d_conv=4)`: no flag sets the width.
    if let Some(k) = sc.model.conv_kernel.filter(|&k| k != 4) {
        notes.push(format!(
            "`conv_kernel {k}` (Megatron-LM's Mamba-2 convolution is 4 wide)"
        ));
    }
    if let Some(s) = p.schedule {
        if s == venus_base::base::ScheduleKind::Gpipe {
            notes.push(
                "`schedule gpipe` (Megatron-LM trains with 1F1B or interleaved 1F1B)".to_string(),
            );
        }
        if s == venus_base::base::ScheduleKind::Zbv {
            notes.push(
                "`schedule zbv` (the zero-bubble runtime's `--zero-bubble-v-schedule`, sail-sg/zero-bubble-pipeline-parallelism)"
                    .to_string(),
            );
        }
        if s.is_dualpipe() {
            notes.push(format!(
                "`schedule {}` (DeepSeek's DualPipe runs outside Megatron-LM's schedules)",
                s.word()
            ));
        }
    }
    if sc.recompute == Recompute::Op {
        notes.push(
            "`recompute op` (PyTorch per-op selective checkpointing, torchtitan's `selective_ac_option = \"op\"`)"
                .into(),
        );
    }
    if p.pipeline_runtime() == venus_base::base::PipelineRuntime::Torch {
        notes.push(
            "`pipeline_runtime torch` (PyTorch's torch.distributed.pipelining, as torchtitan's pipeline)"
                .into(),
        );
    }
    if p.cross_entropy() == venus_base::base::CrossEntropy::Torch {
        notes.push(
            "`cross_entropy torch` (PyTorch's `cross_entropy` on fp32 logits, as torchtitan's loss)"
                .into(),
        );
    }
    if PlanSpec::flag(p.delay_grad_reduce) {
        notes.push("`delay_grad_reduce` (VenusSim's `no-delay-grad-reduce`)".into());
    }
    if PlanSpec::flag(p.delay_param_gather) {
        notes.push("`delay_param_gather` (VenusSim's `delay-param-gather`)".into());
    }
    if let Some(r) = p.mfu {
        notes.push(format!(
            "`mfu {}%` (VenusSim-compatible compute)",
            crate::emit::num(r.0 * 100.0)
        ));
    }
    if p.measured.is_some() {
        notes.push("`measured` (VenusSim's step snapshot)".into());
    }
    if let Some(b) = p.reserve.filter(|b| b.0 > 0) {
        notes.push(format!(
            "`reserve {}B` (memory kept back, a venusc model)",
            b.0
        ));
    }
    if let Some(r) = p.moe_imbalance {
        notes.push(format!(
            "`moe_imbalance {}%` (measured routing imbalance)",
            crate::emit::num(r.0 * 100.0)
        ));
    }
    if p.overlap_p2p == Some(true) && sc.vpp <= 1 {
        notes.push(
            "`overlap_p2p` without interleaving (Megatron-LM turns it off, arguments.py:1010)"
                .into(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_diag::diag::Code;

    fn opts() -> MegatronOptions {
        MegatronOptions {
            file: FileId(0),
            name: "run".into(),
            source: "run.sh".into(),
            cluster: Some("dgx_h100".into()),
            gpus: None,
        }
    }

    const SMALL: &str = "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --vocab-size 128256 --micro-batch-size 1 --global-batch-size 64 --bf16";

    #[test]
    fn the_generated_flag_list_is_sorted_and_holds_every_flag_the_key_table_names() {
        assert!(FLAGS.windows(2).all(|w| w[0].name < w[1].name));
        assert!(FLAGS.len() > 800, "{}", FLAGS.len());
        for k in Key::all() {
            if let Some(f) = k.sig().megatron {
                assert!(megatron_flags::flag(f).is_some(), "{}: {f}", k.name());
            }
        }
        assert_eq!(
            megatron_flags::flag("--swiglu").map(|f| f.arity),
            Some(Arity::Switch)
        );
        assert_eq!(
            megatron_flags::flag("--recompute-modules").map(|f| f.arity),
            Some(Arity::List)
        );
    }

    #[test]
    fn a_flag_list_becomes_a_scenario_with_swiglus_ffn_and_an_assumed_gpu_count() {
        let i = import_megatron(
            &format!("{SMALL} --swiglu --tensor-model-parallel-size 8"),
            &opts(),
        )
        .unwrap();
        assert!(i.venus.contains("  hidden 4096\n  layers 32\n  heads 32\n  vocab 128256\n  seq 4096\n  ffn 10880\n  swiglu\n"), "{}", i.venus);
        assert!(
            i.venus
                .contains("cluster run_cluster : dgx_h100 < gpus 8 >"),
            "{}",
            i.venus
        );
        assert!(
            i.venus
                .contains("plan run_plan <\n  tp 8\n  micro_batch 1\n  global_batch 64\n>"),
            "{}",
            i.venus
        );
        let codes: Vec<Code> = i.warnings.iter().map(|d| d.code).collect();
        assert_eq!(codes, [Code::W0013]);
    }

    #[test]
    fn a_misspelt_flag_is_e0608_with_the_nearest_flag_and_its_span() {
        let text = format!("{SMALL} --num-layrs 4");
        let e = import_megatron(&text, &opts()).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].code, Code::E0608);
        assert_eq!(&text[e[0].primary.loc.span.range()], "--num-layrs");
        assert_eq!(e[0].help.as_deref(), Some("did you mean `--num-layers`?"));
    }

    #[test]
    fn fsdp_hybrid_and_gated_activation_flags_become_keys() {
        let text = format!(
            "{SMALL} --use-torch-fsdp2 --data-parallel-sharding-strategy optim_grads --quick-geglu \
             --hybrid-override-pattern M*M- --mamba-num-heads 64 --mamba-state-dim 128 \
             --moe-latent-size 1024 --squared-relu"
        );
        let i = import_megatron(
            &text,
            &MegatronOptions {
                gpus: Some(8),
                ..opts()
            },
        )
        .unwrap();
        // The pattern gives the layer count, so SMALL's `--num-layers` is the one note.
        assert!(
            i.warnings.iter().all(|d| d
                .notes
                .iter()
                .any(|n| n.contains("the hybrid pattern gives the layer count"))),
            "{:?}",
            i.warnings
        );
        assert!(
            i.plan.contains(&"fsdp optim_grads torch".to_string()),
            "{:?}",
            i.plan
        );
        for line in [
            "swiglu",
            "hybrid_override_pattern \"M*M-\"",
            "mamba_num_heads 64",
            "ssm_state_size 128",
            "moe_latent_size 1024",
        ] {
            assert!(i.model.contains(&line.to_string()), "{line}: {:?}", i.model);
        }
        let i = import_megatron(&format!("{SMALL} --use-megatron-fsdp"), &opts()).unwrap();
        assert!(
            i.plan.contains(&"fsdp optim_grads_params".to_string()),
            "{:?}",
            i.plan
        );
        let e = import_megatron(
            &format!("{SMALL} --use-megatron-fsdp --data-parallel-sharding-strategy zero3"),
            &opts(),
        )
        .unwrap_err();
        assert_eq!(e[0].code, Code::E0609);
        assert_eq!(
            e[0].message,
            "`--data-parallel-sharding-strategy` takes `no_shard`, `optim`, `optim_grads`, `optim_grads_params`, not `zero3`"
        );
    }

    #[test]
    fn unmodelled_flags_are_listed_in_one_warning_never_dropped() {
        let i = import_megatron(
            &format!("{SMALL} --moe-router-pre-softmax --lr 3e-4 --moe-shared-expert-overlap"),
            &MegatronOptions {
                gpus: Some(8),
                ..opts()
            },
        )
        .unwrap();
        assert_eq!(i.warnings.len(), 1);
        let w = &i.warnings[0];
        assert_eq!(w.code, Code::W0012);
        assert_eq!(
            w.message,
            "3 Megatron-LM flags are not modelled by venusc: the prediction runs without them"
        );
        assert_eq!(
            w.notes,
            [
                "`--moe-router-pre-softmax`: not modelled by venusc",
                "`--lr 3e-4`: no effect on time or memory",
                "`--moe-shared-expert-overlap`: not modelled by venusc",
                "to accept it, pass `--allow W0012` to `venusc import megatron`",
            ]
        );
        assert_eq!(
            w.help.as_deref(),
            Some("check the 3 listed flags against the imported file: where one matters for this run, state its effect there")
        );
        assert!(
            i.venus
                .contains("#   --lr 3e-4: no effect on time or memory\n"),
            "{}",
            i.venus
        );
    }

    #[test]
    fn bad_values_are_e0609_at_their_span() {
        for (bad, at) in [
            ("--tensor-model-parallel-size 0", "0"),
            (
                "--tensor-model-parallel-size 99999999999999999999999",
                "99999999999999999999999",
            ),
            ("--tensor-model-parallel-size x$TP", "$TP"),
            ("--moe-layer-freq [1,0]*2 --num-experts 8", "[1,0]*2"),
        ] {
            let text = format!("{SMALL} {bad}");
            let e = import_megatron(
                &text,
                &MegatronOptions {
                    gpus: Some(8),
                    ..opts()
                },
            )
            .unwrap_err();
            assert_eq!(e[0].code, Code::E0609, "{bad}: {:?}", e[0]);
            assert_eq!(&text[e[0].primary.loc.span.range()], at, "{bad}");
            assert!(e[0].help.is_some());
        }
    }

    #[test]
    fn conflicting_gpu_counts_are_e0610() {
        let text = format!("torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py {SMALL}");
        let e = import_megatron(
            &text,
            &MegatronOptions {
                gpus: Some(8),
                ..opts()
            },
        )
        .unwrap_err();
        assert_eq!(e[0].code, Code::E0610);
        assert_eq!(
            e[0].message,
            "the script launches 16 GPUs, and `--gpus 8` says 8"
        );
        let i = import_megatron(&text, &opts()).unwrap();
        assert!(i.venus.contains("< gpus 16 >"), "{}", i.venus);
    }

    #[test]
    fn emitted_values_the_shell_would_read_are_single_quoted_and_read_back() {
        assert_eq!(shell_quoted("([0]*3+[1]*58)"), "'([0]*3+[1]*58)'");
        assert_eq!(shell_quoted("8"), "8");
        assert_eq!(shell_quoted("it's"), "'it'\\''s'");
        let cmds = shell::commands(&format!("--x {}", shell_quoted("a'b (c)"))).unwrap();
        assert_eq!(cmds[0].words[1].text, "a'b (c)");
    }

    #[test]
    fn deepseek_style_moe_layer_freq_and_full_recompute_convert() {
        let text = format!("{SMALL} --num-experts 8 --moe-layer-freq '([0]*3+[1]*29)' --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 --fp8-format hybrid");
        let i = import_megatron(
            &text,
            &MegatronOptions {
                gpus: Some(8),
                ..opts()
            },
        )
        .unwrap();
        assert!(
            i.venus
                .contains("  experts 8\n  topk 2\n  first_k_dense 3\n"),
            "{}",
            i.venus
        );
        assert!(i.venus.contains("  recompute full\n"), "{}", i.venus);
        assert!(i.venus.contains("  precision fp8\n"), "{}", i.venus);
        assert!(i.warnings.is_empty(), "{:?}", i.warnings);
    }

    #[test]
    fn router_flags_and_an_interleaved_moe_pattern_convert() {
        let text = format!(
            "{SMALL} --num-experts 64 --moe-router-topk 8 --moe-layer-freq '([0]*1+[1])*16' \
             --moe-router-num-groups 8 --moe-router-group-topk 4 --moe-router-enable-expert-bias \
             --moe-router-bias-update-rate 1e-3 --moe-router-load-balancing-type seq_aux_loss \
             --moe-aux-loss-coeff 0.0001 --moe-permute-fusion --moe-router-fusion"
        );
        let i = import_megatron(
            &text,
            &MegatronOptions {
                gpus: Some(8),
                ..opts()
            },
        )
        .unwrap();
        for line in [
            "  moe_layer_freq 2\n",
            "  routed_groups 8\n",
            "  topk_groups 4\n",
            "  expert_bias\n",
            "  load_balancing seq_aux_loss\n",
            "  moe_permute_fusion\n",
            "  moe_router_fusion\n",
        ] {
            assert!(i.venus.contains(line), "{line:?} in {}", i.venus);
        }
        assert!(!i.venus.contains("first_k_dense"), "{}", i.venus);
        // A zero coefficient turns the loss off (router.py `get_aux_loss_coeff`).
        let off = import_megatron(
            &format!("{SMALL} --num-experts 8 --moe-router-load-balancing-type aux_loss"),
            &MegatronOptions {
                gpus: Some(8),
                ..opts()
            },
        )
        .unwrap();
        assert!(!off.venus.contains("load_balancing"), "{}", off.venus);
    }

    #[test]
    fn moe_layer_patterns_evaluate_like_megatrons_list_expressions() {
        assert_eq!(
            moe_pattern("[0,1]*2", 64),
            Some(vec![false, true, false, true])
        );
        assert_eq!(
            dense_then_every(&moe_pattern("[0,1]*24", 64).unwrap()),
            Some((0, 2))
        );
        assert_eq!(
            dense_then_every(&moe_pattern("([0]*3+[1]*58)", 64).unwrap()),
            Some((3, 1))
        );
        // Megatron's integer 2 puts experts on layers 0, 2, …: no (K, N) gives that.
        assert_eq!(dense_then_every(&moe_pattern("[1,0]*2", 64).unwrap()), None);
        // Past the cap, or malformed: not a pattern.
        assert_eq!(moe_pattern("[1]*100", 64), None);
        assert_eq!(moe_pattern("[2]", 64), None);
        assert_eq!(moe_pattern("([0]", 64), None);
        assert_eq!(moe_layer_freq_text(48, 0, 2), "([0]*1+[1])*24");
        assert_eq!(moe_layer_freq_text(5, 1, 2), "[0,1,0,1,0]");
    }
}
