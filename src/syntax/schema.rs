//! The key table: which keys each block kind accepts and the signature of their arguments.
//!
//! This is the language's one list of keys. The parser uses it only for arity (to split
//! `heads 16 kv_groups 4` into two items); `ty` uses the argument types; the language server
//! uses it for completion and hover. Sources for defaults are in `LANGUAGE.md` of the spec.

use super::ast::DefKind;

/// The kinds of block that have keys: the five definition kinds and the nested blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    Def(DefKind),
    /// `measured < first T middle T last T >` in a plan.
    Measured,
    /// `expect < iteration_time_max T ... >` in a scenario.
    Expect,
}

impl BlockKind {
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Def(k) => k.keyword(),
            BlockKind::Measured => "measured",
            BlockKind::Expect => "expect",
        }
    }
}

/// The type of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// Bare integer, > 0 unless the key says otherwise.
    Count,
    /// `80GiB`
    Bytes,
    /// `450GB/s`, `400Gb/s`
    Bandwidth,
    /// `1000ns`, `1.5ms`
    Time,
    /// `989TFLOP/s`
    Rate,
    /// Like `Rate`, but a bare number means TFLOP/s (`tflops_min 400`).
    RateOrTflops,
    /// `55%` or a bare float in [0, 1]
    Ratio,
    /// A name or an inline block of that definition kind.
    Ref(DefKind),
    /// A new name introduced by this item (the NAME of `dim NAME ...`).
    NewName,
    /// One word out of a fixed set.
    Enum(&'static [&'static str]),
    /// A nested block with its own keys.
    Nested(BlockKind),
}

impl ArgType {
    /// How the argument is described in messages: `expected bandwidth (e.g. 450GB/s)`.
    pub fn describe(self) -> String {
        match self {
            ArgType::Count => "count (e.g. 8)".into(),
            ArgType::Bytes => "bytes (e.g. 80GiB)".into(),
            ArgType::Bandwidth => "bandwidth (e.g. 450GB/s)".into(),
            ArgType::Time => "time (e.g. 1000ns)".into(),
            ArgType::Rate => "compute rate (e.g. 989TFLOP/s)".into(),
            ArgType::RateOrTflops => "compute rate (e.g. 400TFLOP/s)".into(),
            ArgType::Ratio => "ratio (e.g. 55% or 0.55)".into(),
            ArgType::Ref(k) => format!(
                "{} name or inline `{} < ... >` block",
                k.keyword(),
                k.keyword()
            ),
            ArgType::NewName => "name".into(),
            ArgType::Enum(words) => format!(
                "one of {}",
                words
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ArgType::Nested(b) => format!("`{} < ... >` block", b.name()),
        }
    }
    /// True when a bare name can be this argument (so the parser lets it take a name).
    pub fn takes_name(self) -> bool {
        matches!(self, ArgType::Ref(_) | ArgType::NewName | ArgType::Enum(_))
    }
}

pub const TOPOLOGIES: &[&str] = &["fc", "ring", "switch"];
pub const ALGORITHMS: &[&str] = &["ring", "direct", "halving_doubling", "tree"];
pub const SCHEDULES: &[&str] = &["gpipe", "1f1b", "interleaved"];
pub const RECOMPUTE: &[&str] = &["none", "selective", "full"];
pub const PRECISIONS: &[&str] = &["bf16", "fp8"];
pub const ATTENTIONS: &[&str] = &["flash", "unfused"];
/// The optional word after a flag (`sp on`), so sweeps can list both (`sp [on off]`).
pub const FLAG_WORDS: &[&str] = &["on", "off"];

/// The signature of one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySig {
    pub key: &'static str,
    /// Positional arguments; an empty list makes the key a flag.
    pub args: &'static [ArgType],
    /// How many trailing `args` may be omitted.
    pub optional: usize,
    pub required: bool,
    /// May appear more than once (`dim`).
    pub repeatable: bool,
    /// Zero is allowed for this count (none of the v0 keys; kept for extensions).
    pub allow_zero: bool,
    /// One line for hover and completion.
    pub doc: &'static str,
}

impl KeySig {
    pub fn is_flag(&self) -> bool {
        self.args.is_empty()
    }
    pub fn min_args(&self) -> usize {
        self.args.len() - self.optional
    }
}

const fn key(key: &'static str, args: &'static [ArgType], doc: &'static str) -> KeySig {
    KeySig {
        key,
        args,
        optional: 0,
        required: false,
        repeatable: false,
        allow_zero: false,
        doc,
    }
}
const fn req(key: &'static str, args: &'static [ArgType], doc: &'static str) -> KeySig {
    KeySig {
        key,
        args,
        optional: 0,
        required: true,
        repeatable: false,
        allow_zero: false,
        doc,
    }
}
const fn flag(key: &'static str, doc: &'static str) -> KeySig {
    KeySig {
        key,
        args: &[],
        optional: 0,
        required: false,
        repeatable: false,
        allow_zero: false,
        doc,
    }
}

use ArgType::*;

pub const MODEL_KEYS: &[KeySig] = &[
    req("hidden", &[Count], "hidden size (model dimension)"),
    req("layers", &[Count], "number of transformer layers"),
    req("heads", &[Count], "attention heads"),
    req(
        "vocab",
        &[Count],
        "vocabulary size (padded to a multiple of 128 x tp, as Megatron)",
    ),
    req("seq", &[Count], "sequence length in tokens"),
    key("ffn", &[Count], "MLP hidden size; default 4 x hidden"),
    key(
        "kv_groups",
        &[Count],
        "query groups for grouped-query attention; default = heads",
    ),
    key(
        "head_dim",
        &[Count],
        "size of one attention head; default hidden / heads",
    ),
    flag(
        "swiglu",
        "gated SwiGLU MLP (three FFN matrices instead of two)",
    ),
    flag(
        "untied_embeddings",
        "separate input embedding and output layer (Megatron ties them by default)",
    ),
    key(
        "experts",
        &[Count],
        "number of MoE experts per layer; unset: dense model",
    ),
    key("topk", &[Count], "experts each token is routed to"),
    key("moe_ffn", &[Count], "FFN size of one expert; default = ffn"),
    key(
        "shared_expert_ffn",
        &[Count],
        "FFN size of the shared expert; unset: none",
    ),
];

pub const GPU_KEYS: &[KeySig] = &[
    req("peak", &[Rate], "dense BF16 tensor-core peak"),
    req("memory", &[Bytes], "HBM capacity"),
    req("mem_bw", &[Bandwidth], "HBM bandwidth"),
    key(
        "fp8_peak",
        &[Rate],
        "dense FP8 tensor-core peak; default 2 x peak",
    ),
];

pub const CLUSTER_KEYS: &[KeySig] = &[
    req("gpu", &[Ref(super::ast::DefKind::Gpu)], "the GPU of every rank"),
    KeySig {
        key: "dim",
        args: &[NewName, Enum(TOPOLOGIES), Count, Bandwidth, Time, Ratio],
        optional: 2,
        required: true,
        repeatable: true,
        allow_zero: false,
        doc: "network dimension, innermost first: NAME TOPOLOGY SIZE BANDWIDTH [LATENCY [EFFICIENCY]]; bandwidth per GPU per direction; efficiency: achieved share of it (default 100%)",
    },
    key("nodes", &[Count], "sets the size of the outermost dim"),
    KeySig {
        key: "algo",
        args: &[NewName, Enum(ALGORITHMS)],
        optional: 0,
        required: false,
        repeatable: true,
        allow_zero: false,
        doc: "collective algorithm of one dim: DIM ring|direct|halving_doubling|tree; default: what NCCL would pick",
    },
];

pub const PLAN_KEYS: &[KeySig] = &[
    key("tp", &[Count], "tensor-parallel size; default 1"),
    key("pp", &[Count], "pipeline-parallel size; default 1"),
    key("cp", &[Count], "context-parallel size; default 1"),
    key("ep", &[Count], "expert-parallel size; default 1"),
    key(
        "vpp",
        &[Count],
        "model chunks per pipeline rank (interleaving); default 1",
    ),
    key(
        "first_stage_layers",
        &[Count],
        "layers on the first pipeline stage (uneven pipeline)",
    ),
    key(
        "last_stage_layers",
        &[Count],
        "layers on the last pipeline stage (uneven pipeline)",
    ),
    key(
        "dp",
        &[Count],
        "data-parallel size; default world / (tp x pp x cp)",
    ),
    req("micro_batch", &[Count], "sequences per microbatch"),
    req("global_batch", &[Count], "sequences per iteration"),
    key(
        "schedule",
        &[Enum(SCHEDULES)],
        "pipeline schedule; default 1f1b, or interleaved when vpp > 1",
    ),
    flag("sp", "sequence parallelism (needs tp > 1)"),
    key(
        "recompute",
        &[Enum(RECOMPUTE)],
        "activation recomputation; default none",
    ),
    flag(
        "distributed_optimizer",
        "shard optimizer state over data-parallel ranks",
    ),
    flag(
        "overlap_grad_reduce",
        "overlap gradient reduction with backward",
    ),
    flag(
        "overlap_param_gather",
        "overlap parameter all-gather with forward",
    ),
    flag(
        "delay_grad_reduce",
        "delay gradient reduction to the end of the pipeline flush",
    ),
    flag(
        "delay_param_gather",
        "delay parameter all-gather until the first forward",
    ),
    flag("overlap_p2p", "overlap pipeline send/receive with compute"),
    flag("overlap_tp_comm", "overlap tensor-parallel communication with the GEMMs (needs sp)"),
    key(
        "bucket_size",
        &[Bytes],
        "gradient bucket size; default Megatron's",
    ),
    key(
        "mfu",
        &[Ratio],
        "VenusSim-compatible compute: every node takes FLOPs / (peak x mfu)",
    ),
    key(
        "measured",
        &[Nested(BlockKind::Measured)],
        "measured forward+backward time per microbatch per stage",
    ),
    key(
        "precision",
        &[Enum(PRECISIONS)],
        "GEMM precision; default bf16",
    ),
    key(
        "attention",
        &[Enum(ATTENTIONS)],
        "attention kernel: flash (default) or unfused (batched GEMMs over the full scores, softmax through memory, as Megatron-LM before FlashAttention)",
    ),
    key(
        "iterations",
        &[Count],
        "training iterations to simulate; default 1",
    ),
];

pub const SCENARIO_KEYS: &[KeySig] = &[
    req(
        "model",
        &[Ref(super::ast::DefKind::Model)],
        "the model to train",
    ),
    req(
        "cluster",
        &[Ref(super::ast::DefKind::Cluster)],
        "the cluster to train on",
    ),
    req(
        "plan",
        &[Ref(super::ast::DefKind::Plan)],
        "the parallel plan",
    ),
    key(
        "expect",
        &[Nested(BlockKind::Expect)],
        "bounds that turn predictions into checks",
    ),
];

pub const MEASURED_KEYS: &[KeySig] = &[
    req(
        "first",
        &[Time],
        "forward+backward of one microbatch on the first stage",
    ),
    req(
        "middle",
        &[Time],
        "forward+backward of one microbatch on a middle stage",
    ),
    req(
        "last",
        &[Time],
        "forward+backward of one microbatch on the last stage",
    ),
];

pub const EXPECT_KEYS: &[KeySig] = &[
    key(
        "iteration_time_max",
        &[Time],
        "fail when the predicted iteration time is above this",
    ),
    key(
        "tflops_min",
        &[RateOrTflops],
        "fail when predicted TFLOP/s per GPU is below this",
    ),
    key(
        "memory_max",
        &[Bytes],
        "fail when the peak stage memory is above this",
    ),
    key(
        "mfu_min",
        &[Ratio],
        "fail when the predicted MFU is below this",
    ),
];

/// Every key of a block kind.
pub fn keys(block: BlockKind) -> &'static [KeySig] {
    match block {
        BlockKind::Def(DefKind::Model) => MODEL_KEYS,
        BlockKind::Def(DefKind::Gpu) => GPU_KEYS,
        BlockKind::Def(DefKind::Cluster) => CLUSTER_KEYS,
        BlockKind::Def(DefKind::Plan) => PLAN_KEYS,
        BlockKind::Def(DefKind::Scenario) => SCENARIO_KEYS,
        BlockKind::Measured => MEASURED_KEYS,
        BlockKind::Expect => EXPECT_KEYS,
    }
}

/// The signature of `key` in `block`, if the key exists there.
pub fn lookup(block: BlockKind, key: &str) -> Option<&'static KeySig> {
    keys(block).iter().find(|k| k.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_kind_has_unique_keys() {
        for b in [
            BlockKind::Def(DefKind::Model),
            BlockKind::Def(DefKind::Gpu),
            BlockKind::Def(DefKind::Cluster),
            BlockKind::Def(DefKind::Plan),
            BlockKind::Def(DefKind::Scenario),
            BlockKind::Measured,
            BlockKind::Expect,
        ] {
            let mut names: Vec<_> = keys(b).iter().map(|k| k.key).collect();
            let n = names.len();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), n, "duplicate key in {}", b.name());
        }
    }

    #[test]
    fn dim_takes_four_or_five_arguments() {
        let dim = lookup(BlockKind::Def(DefKind::Cluster), "dim").unwrap();
        assert_eq!((dim.min_args(), dim.args.len()), (4, 6));
    }
}
