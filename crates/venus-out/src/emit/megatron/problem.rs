//! The problems `venusc import megatron` finds in a launch script, as typed values, and the one
//! place they become diagnostics.
//!
//! Input: what a step of the importer detected (the flag, the value as written, where, the
//! counts it compared, the flag it suggests). Output: [`MegatronProblem::diagnostic`], with the
//! E0608–E0610 errors and the W0012/W0013 warnings users see.
//! Invariants: every word of an import diagnostic is written here and nowhere else; the
//! importer decides, this module only renders (it cuts long values to an excerpt), so nothing
//! needs to read a message to learn what a problem was. Every diagnostic carries the problem's
//! [`Identity`], which is what deduplication compares.

use venus_diag::diag::{Code, Diagnostic, Identity, Loc};
use venus_plan::plan::HybridLayer;
use venus_syntax::syntax::megatron_flags;
use venus_syntax::syntax::schema::{Key, FSDP_STRATEGIES};

use super::shell::{ShellProblem, MAX_WORDS, MAX_WORD_BYTES};
use super::{excerpt, DEFAULT_CLUSTER};

/// How an import warning is accepted (the note `check` gives its warnings, for a command
/// line: there is no block to write `allow` in).
const ALLOW_NOTE: &str = "to accept it, pass `--allow CODE` to `venusc import megatron`";

/// One problem of an import.
#[derive(Clone, Debug, PartialEq)]
pub enum MegatronProblem {
    /// E0609: the input is not text: byte `byte` is not UTF-8 (or is a NUL).
    NotText { byte: usize, loc: Loc },
    /// E0609: text the shell reader does not understand.
    Shell { problem: ShellProblem, loc: Loc },
    /// E0609: neither a `pretrain_*.py` command nor a line of flags.
    NoFlags { loc: Loc },
    /// E0609: a word that no flag before it takes.
    NotAFlag { word: String, loc: Loc },
    /// E0609: a flag that takes a value written without one.
    MissingValue {
        flag: &'static str,
        default: &'static str,
        loc: Loc,
    },
    /// E0609: a count flag given 0.
    ZeroCount { flag: &'static str, loc: Loc },
    /// E0609: a count flag given something `int(...)` does not read.
    NotACount {
        flag: &'static str,
        text: String,
        why: CountError,
        loc: Loc,
    },
    /// E0609: a variable the script does not set (`name` as written, `$X` or `${X`).
    Unresolved { name: String, loc: Loc },
    /// E0608: a flag arguments.py does not define, with the nearest one.
    UnknownFlag {
        name: String,
        nearest: Option<&'static str>,
        loc: Loc,
    },
    /// E0609: torchrun's `--nnodes` (`nodes`) or `--nproc-per-node` that is not a count.
    LauncherCount {
        name: String,
        value: String,
        nodes: bool,
        loc: Loc,
    },
    /// E0610: a required flag is absent; `key`: the venusc key it gives.
    MissingFlag {
        flag: &'static str,
        key: Key,
        loc: Loc,
    },
    /// E0610: no vocabulary size; `tokenizer`: the loc is `--tokenizer-type`'s.
    MissingVocab { tokenizer: bool, loc: Loc },
    /// E0609: a word flag given a word it does not take.
    UnknownChoice {
        choice: Choice,
        found: String,
        loc: Loc,
    },
    /// E0609: a `--window-size` that is not a causal window.
    WindowSize { text: String, loc: Loc },
    /// E0609: a `--window-attn-skip-freq` layer list.
    WindowSkipFreq { text: String, loc: Loc },
    /// E0609: an `--optimizer-offload-fraction` outside 0–1.
    OptimizerOffloadFraction { text: String, loc: Loc },
    /// E0609: an `--moe-expert-capacity-factor` outside 1–2.
    CapacityFactor { text: String, loc: Loc },
    /// E0610: `--is-hybrid-model` without a pattern.
    HybridWithoutPattern { loc: Loc },
    /// E0609: a hybrid pattern with `bad`, a symbol venusc has no layer for.
    HybridSymbol {
        pattern: String,
        bad: char,
        loc: Loc,
    },
    /// E0609: an `--moe-layer-freq` that is not K dense layers then every Nth.
    MoeLayerFreq { text: String, layers: u64, loc: Loc },
    /// E0609: `--hierarchical-context-parallel-sizes` without two counts.
    HierarchicalSizes { loc: Loc },
    /// E0610: the deprecated CUDA graph switches together, or with `--cuda-graph-impl`.
    LegacyCudaGraph { loc: Loc },
    /// E0609: an `--activation-offload-fraction` outside 0–1.
    ActivationOffloadFraction { text: String, loc: Loc },
    /// E0610: fine-grained offloading without modules.
    OffloadWithoutModules { loc: Loc },
    /// E0610: layers per virtual stage that do not divide a stage's `stage_layers`.
    VirtualStageLayers {
        per_virtual: u64,
        stage_layers: u64,
        pp: u64,
        loc: Loc,
    },
    /// E0609: a bucket of `elements` whose bytes overflow.
    BucketTooLarge { elements: u64, loc: Loc },
    /// E0609: both `--fp4-format` and `--fp8-format`.
    BothFormats { loc: Loc },
    /// E0610: torchrun's world and `--gpus` disagree.
    GpuCountConflict { launched: u64, gpus: u64, loc: Loc },
    /// E0610: the world is not a multiple of tp × pp × cp.
    WorldNotMultiple {
        world: u64,
        tp: u64,
        pp: u64,
        cp: u64,
        model: u64,
        loc: Loc,
        sizes: Loc,
    },
    /// W0012: flags read but not modelled, each as written with why.
    NotModelled {
        flags: Vec<(String, &'static str)>,
        loc: Loc,
    },
    /// W0013: values the flags do not state; `cluster_given`: `--cluster` was passed.
    Assumed {
        assumed: Vec<Assumption>,
        cluster_given: bool,
        loc: Loc,
    },
}

/// Why a value is not a count (Python's `int(...)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountError {
    NotWhole,
    TooLarge,
}

impl CountError {
    fn text(self) -> &'static str {
        match self {
            CountError::NotWhole => "is not a whole number",
            CountError::TooLarge => "is larger than 2^64 - 1",
        }
    }
}

/// One value the import assumed (W0013): what the flags do not state, and the value taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assumption {
    /// No `--cluster`: the output names [`DEFAULT_CLUSTER`].
    Cluster,
    /// No launcher and no `--gpus`: `world` GPUs, the smallest world both the model-parallel
    /// and the expert grid divide, at data-parallel size `dp`.
    GpuCount { world: u64, dp: u64 },
}

impl Assumption {
    /// What the flags do not state, as W0013's message names it.
    fn what(self) -> &'static str {
        match self {
            Assumption::Cluster => "the cluster",
            Assumption::GpuCount { .. } => "the GPU count",
        }
    }

    /// The line the output's comment and W0013's note show.
    pub fn text(self) -> String {
        let detail = match self {
            Assumption::Cluster => format!(
                "`{DEFAULT_CLUSTER}` (give the stdlib cluster the run used with `--cluster NAME`)"
            ),
            Assumption::GpuCount { world, dp } => format!(
                "{world} (data-parallel size {dp}); the script has no torchrun `--nnodes`/`--nproc-per-node`: pass `--gpus N`"
            ),
        };
        format!("{}: {detail}", self.what())
    }
}

/// A flag that takes one of a few words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    AttentionBackend,
    SoftmaxType,
    FlexBackend,
    Dispatcher,
    CpComm,
    CudaGraphImpl,
    RecomputeMethod,
    RecomputeGranularity,
    FsdpStrategy,
    Fp8Format,
    Fp4Format,
    Fp8Recipe,
}

impl Choice {
    fn flag(self) -> &'static str {
        match self {
            Choice::AttentionBackend => "--attention-backend",
            Choice::SoftmaxType => "--softmax-type",
            Choice::FlexBackend => "--moe-flex-dispatcher-backend",
            Choice::Dispatcher => "--moe-token-dispatcher-type",
            Choice::CpComm => "--cp-comm-type",
            Choice::CudaGraphImpl => "--cuda-graph-impl",
            Choice::RecomputeMethod => "--recompute-method",
            Choice::RecomputeGranularity => "--recompute-granularity",
            Choice::FsdpStrategy => "--data-parallel-sharding-strategy",
            Choice::Fp8Format => "--fp8-format",
            Choice::Fp4Format => "--fp4-format",
            Choice::Fp8Recipe => "--fp8-recipe",
        }
    }

    /// The words the flag takes, as the message lists them.
    fn words(self) -> String {
        let words = match self {
            Choice::AttentionBackend => "`flash`, `fused`, `unfused`, `local` or `auto`",
            Choice::SoftmaxType => "`vanilla`, `off-by-one` or `learnable`",
            Choice::FlexBackend => "`deepep` or `hybridep` here",
            Choice::Dispatcher => "`allgather`, `alltoall` or `flex`",
            Choice::CpComm => "`p2p`, `a2a`, `all_gather` or `a2a+p2p`",
            Choice::CudaGraphImpl => "`none`, `local`, `transformer_engine` or `full_iteration`",
            Choice::RecomputeMethod => "`uniform` or `block`",
            Choice::RecomputeGranularity => "`full` or `selective`",
            Choice::FsdpStrategy => {
                return FSDP_STRATEGIES
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
            Choice::Fp8Format => "`e4m3` or `hybrid`",
            Choice::Fp4Format => "`e2m1`",
            Choice::Fp8Recipe => "`delayed`, `tensorwise`, `blockwise`, `mxfp8` or `custom`",
        };
        words.to_string()
    }

    fn label(self) -> &'static str {
        match self {
            Choice::AttentionBackend => "unknown backend",
            Choice::SoftmaxType => "unknown softmax",
            Choice::FlexBackend => "backend",
            Choice::Dispatcher => "dispatcher",
            Choice::CpComm => "cp comm type",
            Choice::CudaGraphImpl => "graph implementation",
            Choice::RecomputeMethod => "unknown method",
            Choice::RecomputeGranularity => "unknown granularity",
            Choice::FsdpStrategy => "unknown strategy",
            Choice::Fp8Format | Choice::Fp4Format => "unknown format",
            Choice::Fp8Recipe => "unknown recipe",
        }
    }

    fn help(self) -> &'static str {
        match self {
            Choice::AttentionBackend => "write one of `flash`, `fused`, `unfused`, `local`, `auto`",
            Choice::SoftmaxType => {
                "write `--softmax-type learnable` for attention sinks, or leave it out"
            }
            Choice::FlexBackend => {
                "write `--moe-flex-dispatcher-backend deepep`, or `hybridep` without `--moe-enable-deepep`"
            }
            Choice::Dispatcher => "write `--moe-token-dispatcher-type alltoall`",
            Choice::CpComm => "write `--cp-comm-type p2p`",
            Choice::CudaGraphImpl => "write `--cuda-graph-impl transformer_engine`",
            Choice::RecomputeMethod => {
                "write `--recompute-method uniform` or `--recompute-method block`"
            }
            Choice::RecomputeGranularity => {
                "write `--recompute-granularity full` or `--recompute-granularity selective`"
            }
            Choice::FsdpStrategy => {
                "write `--data-parallel-sharding-strategy optim_grads_params` (ZeRO-3)"
            }
            Choice::Fp8Format => {
                "write `--fp8-format hybrid` (E4M3 forward, E5M2 backward) or `--fp8-format e4m3`"
            }
            Choice::Fp4Format => "write `--fp4-format e2m1` (NVFP4's E2M1 values)",
            Choice::Fp8Recipe => {
                "write `--fp8-recipe delayed` (Megatron-LM's default), `tensorwise`, `blockwise` or `mxfp8`"
            }
        }
    }
}

impl MegatronProblem {
    /// The diagnostic users see, carrying the problem's identity.
    pub fn diagnostic(self) -> Diagnostic {
        let identity = Identity::of(&self);
        self.render().with_identity(identity)
    }

    fn render(self) -> Diagnostic {
        use MegatronProblem as P;
        match self {
            P::NotText { byte, loc } => Diagnostic::new(
                Code::E0609,
                format!("the input is not a text file: byte {byte} is not UTF-8 text"),
                loc,
                "here",
            )
            .with_help(
                "give the launch script (a shell script or a list of flags), not a binary file",
            ),
            P::Shell { problem, loc } => shell(problem, loc),
            P::NoFlags { loc } => Diagnostic::new(
                Code::E0609,
                "no Megatron-LM flags found: neither a `pretrain_*.py` command nor a list of `--flags`",
                loc,
                "in this file",
            )
            .with_help(
                "give the launch script (`torchrun ... pretrain_gpt.py --num-layers 32 ...`) or the flags, one or more per line",
            ),
            P::NotAFlag { word, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`{}` is not a flag, and no flag before it takes a value",
                    excerpt(&word)
                ),
                loc,
                "not a flag",
            )
            .with_help("write the flag this value belongs to before it, or remove the word"),
            P::MissingValue { flag, default, loc } => Diagnostic::new(
                Code::E0609,
                format!("`{flag}` takes a value, and none follows it"),
                loc,
                "needs a value",
            )
            .with_help(format!(
                "write its value after it (`{flag} VALUE`); Megatron-LM's default is `{default}`"
            )),
            P::ZeroCount { flag, loc } => Diagnostic::new(
                Code::E0609,
                format!("`{flag}` must be a positive count, not 0"),
                loc,
                "zero",
            )
            .with_help(format!("write a count of 1 or more after `{flag}`")),
            P::NotACount {
                flag,
                text,
                why,
                loc,
            } => Diagnostic::new(
                Code::E0609,
                format!("`{flag}` takes a count; `{}` {}", excerpt(&text), why.text()),
                loc,
                "not a count",
            )
            .with_help(format!(
                "write a whole number from 1 to {} after `{flag}`",
                u64::MAX
            )),
            P::Unresolved { name, loc } => unresolved(&name, loc),
            P::UnknownFlag { name, nearest, loc } => {
                let d = Diagnostic::new(
                    Code::E0608,
                    format!("`{}` is not a flag of Megatron-LM", excerpt(&name)),
                    loc,
                    "unknown flag",
                );
                match nearest {
                    Some(s) => d.with_help(format!("did you mean `{s}`?")).with_fix(loc, s),
                    None => d.with_help(format!(
                        "remove it: it is not in megatron/training/arguments.py (Megatron-LM {})",
                        &megatron_flags::COMMIT[..12]
                    )),
                }
            }
            P::LauncherCount {
                name,
                value,
                nodes,
                loc,
            } => Diagnostic::new(
                Code::E0609,
                format!(
                    "torchrun's `{name}` must be a positive count here, not `{}`",
                    excerpt(&value)
                ),
                loc,
                "not a count",
            )
            .with_help(if nodes {
                "write the node count (an elastic range `MIN:MAX` does not give one), or pass `--gpus N`"
            } else {
                "write the GPUs per node (8 on a DGX), or pass `--gpus N`"
            }),
            P::MissingFlag { flag, key, loc } => Diagnostic::new(
                Code::E0610,
                format!(
                    "the flags do not give `{}`: `{flag}` is missing",
                    key.name()
                ),
                loc,
                "in this command",
            )
            .with_help(format!("add `{flag} N` to the command")),
            P::MissingVocab { tokenizer, loc } => missing_vocab(tokenizer, loc),
            P::UnknownChoice { choice, found, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`{}` takes {}, not `{}`",
                    choice.flag(),
                    choice.words(),
                    excerpt(&found)
                ),
                loc,
                choice.label(),
            )
            .with_help(choice.help()),
            P::WindowSize { text, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`--window-size {}` is not a causal window venusc can express",
                    excerpt(&text)
                ),
                loc,
                "this window",
            )
            .with_help(
                "write `--window-size (L,0)`: L earlier keys and none after (the causal window `sliding_window L+1`)",
            ),
            P::WindowSkipFreq { text, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`--window-attn-skip-freq {}` is a layer list venusc cannot express",
                    excerpt(&text)
                ),
                loc,
                "this list",
            )
            .with_help(
                "write an integer N: every Nth layer keeps full attention (`sliding_window_pattern N`)",
            ),
            P::OptimizerOffloadFraction { text, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`--optimizer-offload-fraction {}` is not a fraction of the optimizer state",
                    excerpt(&text)
                ),
                loc,
                "this fraction",
            )
            .with_help("write a fraction from 0.0 to 1.0 (`optimizer_offload` 0% to 100%)"),
            P::CapacityFactor { text, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`--moe-expert-capacity-factor {}` is a capacity venusc cannot express",
                    excerpt(&text)
                ),
                loc,
                "this factor",
            )
            .with_help(
                "write a factor from 1.0 to 2.0 (`moe_capacity_headroom` 0% to 100% above the balanced load)",
            ),
            P::HybridWithoutPattern { loc } => Diagnostic::new(
                Code::E0610,
                "`--is-hybrid-model` without a layer pattern: the flags do not say which layer is what",
                loc,
                "no pattern",
            )
            .with_help(
                "add `--hybrid-layer-pattern` with one symbol per layer (`M` Mamba-2, `*` attention, `-` MLP, `E` MoE)",
            ),
            P::HybridSymbol { pattern, bad, loc } => hybrid_symbol(&pattern, bad, loc),
            P::MoeLayerFreq { text, layers, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`--moe-layer-freq {}` is a layer pattern venusc cannot express",
                    excerpt(&text)
                ),
                loc,
                "this pattern",
            )
            .with_help(format!(
                "venusc models K dense layers, then MoE on every Nth layer: write `([0]*K+[1]*M)` with K + M = {layers}, `([0]*(N-1)+[1])*M` with N × M = {layers}, or `1` for every layer"
            )),
            P::HierarchicalSizes { loc } => Diagnostic::new(
                Code::E0609,
                "`--hierarchical-context-parallel-sizes` takes two counts with `a2a+p2p`: the a2a and the p2p group size",
                loc,
                "sizes",
            )
            .with_help("write `--hierarchical-context-parallel-sizes A P` with A × P = cp"),
            P::LegacyCudaGraph { loc } => Diagnostic::new(
                Code::E0610,
                "`--enable-cuda-graph` and `--external-cuda-graph` are used alone: neither with the other nor with `--cuda-graph-impl`",
                loc,
                "a second CUDA graph implementation",
            )
            .with_help(
                "keep one: `--cuda-graph-impl local` or `--cuda-graph-impl transformer_engine`",
            ),
            P::ActivationOffloadFraction { text, loc } => Diagnostic::new(
                Code::E0609,
                format!(
                    "`--activation-offload-fraction {}` is not a fraction from 0 to 1",
                    excerpt(&text)
                ),
                loc,
                "this fraction",
            )
            .with_help(
                "write `--activation-offload-fraction 0.5` (transformer_config.py asserts 0 ≤ f ≤ 1)",
            ),
            P::OffloadWithoutModules { loc } => Diagnostic::new(
                Code::E0610,
                "`--fine-grained-activation-offloading` needs `--offload-modules`: it offloads the modules named there",
                loc,
                "no module to offload",
            )
            .with_help("add `--offload-modules core_attn attn_proj`"),
            P::VirtualStageLayers {
                per_virtual,
                stage_layers,
                pp,
                loc,
            } => Diagnostic::new(
                Code::E0610,
                format!(
                    "`--num-layers-per-virtual-pipeline-stage {per_virtual}` does not divide the {stage_layers} layers of each of the {pp} pipeline stages"
                ),
                loc,
                "this count",
            )
            .with_help(
                "write `--num-virtual-stages-per-pipeline-rank N` instead, or a divisor of the layers per stage",
            ),
            P::BucketTooLarge { elements, loc } => Diagnostic::new(
                Code::E0609,
                format!("`--ddp-bucket-size {elements}` is larger than a byte count holds"),
                loc,
                "too large",
            )
            .with_help("write a bucket of at most 10^18 elements"),
            P::BothFormats { loc } => Diagnostic::new(
                Code::E0609,
                "`--fp4-format` and `--fp8-format` cannot be used together",
                loc,
                "both formats",
            )
            .with_help("keep one: `--fp4-format e2m1` (NVFP4) or `--fp8-format` (FP8)"),
            P::GpuCountConflict {
                launched,
                gpus,
                loc,
            } => Diagnostic::new(
                Code::E0610,
                format!("the script launches {launched} GPUs, and `--gpus {gpus}` says {gpus}"),
                loc,
                format!("{launched} GPUs"),
            )
            .with_help(format!("drop `--gpus`, or pass `--gpus {launched}`")),
            P::WorldNotMultiple {
                world,
                tp,
                pp,
                cp,
                model,
                loc,
                sizes,
            } => Diagnostic::new(
                Code::E0610,
                format!(
                    "{world} GPUs are not a multiple of tp × pp × cp = {tp} × {pp} × {cp} = {model}"
                ),
                loc,
                format!("{world} GPUs"),
            )
            .with_secondary(sizes, "the model-parallel sizes")
            .with_help(format!(
                "run on a multiple of {model} GPUs (e.g. {}), or change the parallel sizes",
                (world / model).max(1).saturating_mul(model)
            )),
            P::NotModelled { flags, loc } => not_modelled(&flags, loc),
            P::Assumed {
                assumed,
                cluster_given,
                loc,
            } => assumed_values(&assumed, cluster_given, loc),
        }
    }
}

/// The shell reader's problems (E0609), at `loc`, the problem's span in the script.
fn shell(problem: ShellProblem, loc: Loc) -> Diagnostic {
    const NO_SELF_EXPANSION: &str = "set each variable once, without expanding it into itself";
    let too_many = format!("the script expands to more than {MAX_WORDS} words");
    let (message, label, help) = match problem {
        ShellProblem::Unterminated { open, .. } => {
            let (open, close) = (open.open(), open.close());
            (
                format!("unterminated `{open}`: the text ends before its `{close}`"),
                "opened here",
                format!("close it with `{close}`"),
            )
        }
        ShellProblem::UnclosedArray { .. } => (
            "unclosed array: `(` without `)`".to_string(),
            "this array",
            "close the array with `)`".to_string(),
        ),
        ShellProblem::TooManyWords { .. } => {
            (too_many, "this expansion", NO_SELF_EXPANSION.to_string())
        }
        ShellProblem::AssignmentTooManyWords { name, .. } => (
            too_many,
            "this assignment",
            format!("set `{name}` once, without expanding it into itself"),
        ),
        ShellProblem::WordTooLong { .. } => (
            format!("a word expands to more than {MAX_WORD_BYTES} bytes"),
            "this word",
            NO_SELF_EXPANSION.to_string(),
        ),
    };
    Diagnostic::new(Code::E0609, message, loc, label).with_help(help)
}

fn unresolved(name: &str, loc: Loc) -> Diagnostic {
    let var = name.trim_start_matches('$').trim_start_matches('{');
    let help = if var.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) && !var.is_empty() {
        format!("set `{var}=VALUE` before the command, or write a default: `${{{var}:-VALUE}}`")
    } else {
        format!("replace {name} with the value it has when the script runs")
    };
    Diagnostic::new(
        Code::E0609,
        format!(
            "`{}` is not set in the script, so its value is unknown",
            excerpt(name)
        ),
        loc,
        "unknown value",
    )
    .with_help(help)
}

fn missing_vocab(tokenizer: bool, loc: Loc) -> Diagnostic {
    let d = Diagnostic::new(
        Code::E0610,
        "the flags do not give the vocabulary size: `--vocab-size` is missing",
        loc,
        if tokenizer {
            "the tokenizer gives it at run time"
        } else {
            "in this command"
        },
    )
    .with_help("add `--vocab-size N` (the tokenizer's vocabulary, e.g. 128256 for Llama 3)");
    if tokenizer {
        d.with_note("venusc does not read tokenizers")
    } else {
        d
    }
}

fn hybrid_symbol(pattern: &str, bad: char, loc: Loc) -> Diagnostic {
    let cleaned: String = pattern
        .chars()
        .filter(|&c| HybridLayer::from_symbol(c).is_some())
        .collect();
    Diagnostic::new(
        Code::E0609,
        format!(
            "hybrid pattern `{}` has `{bad}`, a symbol venusc cannot express",
            excerpt(pattern)
        ),
        loc,
        "this pattern",
    )
    .with_help(format!(
        "venusc models `M`, `*`, `-` and `E` layers without stage boundaries or MTP patterns: write `{}`",
        excerpt(&cleaned)
    ))
}

fn not_modelled(flags: &[(String, &'static str)], loc: Loc) -> Diagnostic {
    let count = flags.len();
    let mut d = Diagnostic::new(
        Code::W0012,
        format!(
            "{count} Megatron-LM flag{} not modelled by venusc: the prediction runs without {}",
            if count == 1 { " is" } else { "s are" },
            if count == 1 { "it" } else { "them" }
        ),
        loc,
        "not modelled",
    )
    .with_help(format!(
        "check the {count} listed flag{} against the imported file: where one matters for this run, state its effect there",
        if count == 1 { "" } else { "s" }
    ));
    for (flag, why) in flags {
        d = d.with_note(format!("`{flag}`: {why}"));
    }
    d.with_note(ALLOW_NOTE.replace("CODE", "W0012"))
}

fn assumed_values(assumed: &[Assumption], cluster_given: bool, loc: Loc) -> Diagnostic {
    let whats: Vec<&str> = assumed.iter().map(|a| a.what()).collect();
    let mut d = Diagnostic::new(
        Code::W0013,
        format!(
            "the flags do not state {}, so the import assumed {}",
            whats.join(" and "),
            if assumed.len() == 1 { "it" } else { "them" }
        ),
        loc,
        "in this command",
    )
    .with_help(if cluster_given {
        "pass `--gpus N` to state the GPU count".to_string()
    } else {
        format!(
            "pass `--cluster NAME` (and `--gpus N`) to state them; the output names `{DEFAULT_CLUSTER}` in a comment"
        )
    });
    for a in assumed {
        d = d.with_note(a.text());
    }
    d.with_note(ALLOW_NOTE.replace("CODE", "W0013"))
}

#[cfg(test)]
mod tests {
    use super::super::shell::Opening;
    use super::*;
    use venus_diag::diag::{FileId, Span};

    fn at(start: usize, end: usize) -> Loc {
        Loc::new(FileId(0), Span::new(start, end))
    }

    #[test]
    fn a_problem_renders_to_its_code_message_label_and_help() {
        let d = MegatronProblem::GpuCountConflict {
            launched: 16,
            gpus: 8,
            loc: at(10, 12),
        }
        .diagnostic();
        assert_eq!(d.code, Code::E0610);
        assert_eq!(
            d.message,
            "the script launches 16 GPUs, and `--gpus 8` says 8"
        );
        assert_eq!(d.primary.loc, at(10, 12));
        assert_eq!(d.primary.message, "16 GPUs");
        assert_eq!(
            d.help.as_deref(),
            Some("drop `--gpus`, or pass `--gpus 16`")
        );
        assert!(d.identity.is_some());
    }

    #[test]
    fn a_missing_required_flag_names_the_key_it_gives() {
        let d = MegatronProblem::MissingFlag {
            flag: "--num-layers",
            key: Key::Layers,
            loc: at(0, 8),
        }
        .diagnostic();
        assert_eq!(d.code, Code::E0610);
        assert_eq!(
            d.message,
            "the flags do not give `layers`: `--num-layers` is missing"
        );
        assert_eq!(d.primary.message, "in this command");
        assert_eq!(
            d.help.as_deref(),
            Some("add `--num-layers N` to the command")
        );
    }

    #[test]
    fn assumed_values_are_named_in_the_message_and_detailed_in_notes() {
        let d = MegatronProblem::Assumed {
            assumed: vec![
                Assumption::GpuCount { world: 64, dp: 2 },
                Assumption::Cluster,
            ],
            cluster_given: false,
            loc: at(0, 8),
        }
        .diagnostic();
        assert_eq!(d.code, Code::W0013);
        assert_eq!(
            d.message,
            "the flags do not state the GPU count and the cluster, so the import assumed them"
        );
        assert_eq!(
            d.notes[..2],
            [
                "the GPU count: 64 (data-parallel size 2); the script has no torchrun `--nnodes`/`--nproc-per-node`: pass `--gpus N`".to_string(),
                format!("the cluster: `{DEFAULT_CLUSTER}` (give the stdlib cluster the run used with `--cluster NAME`)"),
            ]
        );
    }

    #[test]
    fn a_long_value_is_cut_to_an_excerpt_in_the_message() {
        let d = MegatronProblem::UnknownChoice {
            choice: Choice::Fp4Format,
            found: "x".repeat(100),
            loc: at(0, 100),
        }
        .diagnostic();
        assert_eq!(d.code, Code::E0609);
        assert_eq!(
            d.message,
            format!("`--fp4-format` takes `e2m1`, not `{}…`", "x".repeat(48))
        );
        assert_eq!(d.primary.message, "unknown format");
    }

    #[test]
    fn an_input_that_is_not_text_names_its_first_bad_byte() {
        let d = MegatronProblem::NotText {
            byte: 7,
            loc: at(7, 7),
        }
        .diagnostic();
        assert_eq!(
            parts(&d),
            (
                Code::E0609,
                "the input is not a text file: byte 7 is not UTF-8 text",
                "here",
                Some(
                    "give the launch script (a shell script or a list of flags), not a binary file"
                )
            )
        );
        assert_eq!(d.primary.loc, at(7, 7));
    }

    fn shell_diagnostic(problem: ShellProblem) -> Diagnostic {
        let loc = at(problem.span().start as usize, problem.span().end as usize);
        MegatronProblem::Shell { problem, loc }.diagnostic()
    }

    fn parts(d: &Diagnostic) -> (Code, &str, &str, Option<&str>) {
        (
            d.code,
            d.message.as_str(),
            d.primary.message.as_str(),
            d.help.as_deref(),
        )
    }

    #[test]
    fn an_unterminated_construct_names_its_opening_and_closing_characters() {
        let cases = [
            (Opening::SingleQuote, "'", "'"),
            (Opening::DoubleQuote, "\"", "\""),
            (Opening::Backquote, "`", "`"),
            (Opening::Brace, "{", "}"),
            (Opening::Paren, "(", ")"),
        ];
        for (open, o, c) in cases {
            let d = shell_diagnostic(ShellProblem::Unterminated {
                open,
                span: Span::new(3, 4),
            });
            let message = format!("unterminated `{o}`: the text ends before its `{c}`");
            let help = format!("close it with `{c}`");
            assert_eq!(
                parts(&d),
                (
                    Code::E0609,
                    message.as_str(),
                    "opened here",
                    Some(help.as_str())
                )
            );
            assert_eq!(d.primary.loc, at(3, 4));
        }
    }

    #[test]
    fn an_unclosed_array_asks_for_its_parenthesis() {
        let d = shell_diagnostic(ShellProblem::UnclosedArray {
            span: Span::new(0, 12),
        });
        assert_eq!(
            parts(&d),
            (
                Code::E0609,
                "unclosed array: `(` without `)`",
                "this array",
                Some("close the array with `)`")
            )
        );
    }

    #[test]
    fn an_expansion_past_the_caps_names_the_cap_and_the_variable() {
        let d = shell_diagnostic(ShellProblem::TooManyWords {
            span: Span::new(5, 9),
        });
        assert_eq!(
            parts(&d),
            (
                Code::E0609,
                "the script expands to more than 200000 words",
                "this expansion",
                Some("set each variable once, without expanding it into itself")
            )
        );
        let d = shell_diagnostic(ShellProblem::AssignmentTooManyWords {
            name: "A".into(),
            span: Span::new(5, 9),
        });
        assert_eq!(
            parts(&d),
            (
                Code::E0609,
                "the script expands to more than 200000 words",
                "this assignment",
                Some("set `A` once, without expanding it into itself")
            )
        );
        let d = shell_diagnostic(ShellProblem::WordTooLong {
            span: Span::new(5, 9),
        });
        assert_eq!(
            parts(&d),
            (
                Code::E0609,
                "a word expands to more than 1048576 bytes",
                "this word",
                Some("set each variable once, without expanding it into itself")
            )
        );
    }

    #[test]
    fn two_problems_of_one_code_at_one_span_keep_distinct_identities() {
        let loc = at(4, 20);
        let window = MegatronProblem::WindowSize {
            text: "(4,4)".into(),
            loc,
        }
        .diagnostic();
        let skip = MegatronProblem::WindowSkipFreq {
            text: "(4,4)".into(),
            loc,
        }
        .diagnostic();
        assert_eq!(
            (window.code, window.primary.loc),
            (skip.code, skip.primary.loc)
        );
        assert_ne!(window.identity, skip.identity);
        assert!(!window.is_same_problem(&skip));
        // The same problem found twice is one problem.
        let again = MegatronProblem::WindowSize {
            text: "(4,4)".into(),
            loc,
        }
        .diagnostic();
        assert!(window.is_same_problem(&again));
    }
}
