//! The key table: every key of every block kind, declared once.
//!
//! Input: nothing (a constant). Output: [`TABLE`], one [`KeySig`] per key with its block kind,
//! argument types, default (as data and as text), unit, one-line doc, and where there is one
//! the Megatron-LM flag and the VenusSim field; and [`Key`], the typed name of each key.
//! Readers: the parser (arity, to split `heads 16 kv_groups 4` into two items), `ty` (argument
//! types, required keys), the language server (completion, hover), `venusc explain KEY` and the
//! generated `docs/language.md` ([`language_reference`]).
//! Invariants: `TABLE[k as usize].id == k` for every [`Key`] (checked at compile time); a key
//! belongs to exactly one block kind; only names read from user text are looked up by string
//! ([`lookup`]). Defaults are those of `LANGUAGE.md` of the spec and of the accessors of
//! `ty::Plan`, `ty::Model` and `ty::Gpu`. The plan block is not written here: it is the master
//! list of the plan keys, `venus_base::plan_key_list!`, which `venus_plan::plan_keys!` expands
//! into the plain-data plan too, so a plan key is declared once.

use super::ast::DefKind;

/// The kinds of block that have keys: the five definition kinds and the nested blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BlockKind {
    Def(DefKind),
    /// `measured < first T middle T last T >` in a plan.
    Measured,
    /// `expect < iteration_time_max T ... >` in a scenario.
    Expect,
    /// `train < tokens 15T price 2.5 >` in a scenario.
    Train,
}

impl BlockKind {
    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Def(k) => k.keyword(),
            BlockKind::Measured => "measured",
            BlockKind::Expect => "expect",
            BlockKind::Train => "train",
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
    /// A quoted string (`"Et|(tt|)*30L"`), read by the key's own grammar.
    Str,
    /// A count that may carry a suffix: `K` thousand, `M` million, `B` billion, `T` trillion
    /// (`15T` tokens, as model cards write budgets).
    LargeCount,
    /// A bare number of US dollars per GPU-hour (`2.5`).
    Price,
}

impl ArgType {
    /// How the argument is described in messages: `expected bandwidth (e.g. 450GB/s)`.
    pub fn describe(self) -> String {
        let e = self.example().unwrap_or_default();
        match self {
            ArgType::Count => format!("count (e.g. {e})"),
            ArgType::Bytes => format!("bytes (e.g. {e})"),
            ArgType::Bandwidth => format!("bandwidth (e.g. {e})"),
            ArgType::Time => format!("time (e.g. {e})"),
            ArgType::Rate | ArgType::RateOrTflops => format!("compute rate (e.g. {e})"),
            ArgType::Ratio => format!("ratio (e.g. {e} or 0.55)"),
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
            ArgType::Str => format!("quoted string (e.g. {e})"),
            ArgType::LargeCount => format!("count with an optional K, M, B or T suffix (e.g. {e})"),
            ArgType::Price => format!("price in dollars per GPU-hour (e.g. {e})"),
        }
    }
    /// A value of this type for messages and completion (`450GB/s`); `None` for names,
    /// words and blocks.
    pub fn example(self) -> Option<&'static str> {
        Some(match self {
            ArgType::Count => "8",
            ArgType::Bytes => "80GiB",
            ArgType::Bandwidth => "450GB/s",
            ArgType::Time => "1000ns",
            ArgType::Rate => "989TFLOP/s",
            ArgType::RateOrTflops => "400TFLOP/s",
            ArgType::Ratio => "55%",
            ArgType::Str => "\"Et|(tt|)*30L\"",
            ArgType::LargeCount => "15T",
            ArgType::Price => "2.5",
            ArgType::Ref(_) | ArgType::NewName | ArgType::Enum(_) | ArgType::Nested(_) => {
                return None
            }
        })
    }
    /// True when a bare name can be this argument (so the parser lets it take a name).
    pub fn takes_name(self) -> bool {
        matches!(self, ArgType::Ref(_) | ArgType::NewName | ArgType::Enum(_))
    }
}

pub const TOPOLOGIES: &[&str] = &["fc", "ring", "switch"];
/// The warning codes an `allow` item may name (kept equal to the code registry's warnings by
/// a test).
pub const WARNINGS: &[&str] = &[
    "W0001", "W0002", "W0003", "W0004", "W0005", "W0006", "W0007", "W0008", "W0009", "W0012",
    "W0013", "W0014", "W0015", "W0017", "W0018", "W0019", "W0020", "W0022", "W0023", "W0024",
    "W0025",
];
pub const ALGORITHMS: &[&str] = &["ring", "direct", "halving_doubling", "tree"];
/// Link technologies (`link DIM WORD`): each has a default efficiency (`base::LinkKind`).
pub const LINKS: &[&str] = &["nvswitch", "infiniband"];
pub const SCHEDULES: &[&str] = &[
    "gpipe",
    "1f1b",
    "interleaved",
    "zb_h1",
    "zb_h2",
    "dualpipe",
    "dualpipev",
    "zbv",
];
pub const RECOMPUTE: &[&str] = &["none", "selective", "full", "op"];
/// The `cross_entropy` choices (`base::CrossEntropy`).
pub const CROSS_ENTROPY: &[&str] = &["vocab_parallel", "torch"];
/// The `pipeline_runtime` choices (`base::PipelineRuntime`).
pub const PIPELINE_RUNTIMES: &[&str] = &["megatron", "torch"];
/// Megatron-LM's `--recompute-modules` choices for a transformer (transformer_config.py:560-583):
/// the words of `base::RecomputeModules`, declared there once.
pub const RECOMPUTE_MODULES: &[&str] = &venus_base::base::RecomputeModules::WORDS;
/// Megatron-LM's `--recompute-method` choices (`base::RecomputeMethod`).
pub const RECOMPUTE_METHODS: &[&str] = &["uniform", "block"];
/// GEMM precisions: the words of `base::Precision`.
pub const PRECISIONS: &[&str] = &["bf16", "fp8", "fp4"];
/// GPU architectures, the words of `base::GpuArch`: each picks a compute-model calibration
/// (every arch has its own; one added without a fit would borrow the nearest one's, with W0007).
pub const ARCHS: &[&str] = &[
    "ampere",
    "hopper",
    "blackwell",
    "blackwell_ultra",
    "ada",
    "cdna3",
    "cdna4",
];
pub const ATTENTIONS: &[&str] = &["flash", "unfused", "flash2"];
/// What an iteration trains: `task` words (`base::Task`).
pub const TASKS: &[&str] = &["pretrain", "sft", "lora"];
/// The linear layers a LoRA adapter can target (Megatron-Bridge `peft/lora.py`).
pub const LORA_MODULES: &[&str] = &["linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"];
/// Megatron-FSDP's `--data-parallel-sharding-strategy` choices (arguments.py).
pub const FSDP_STRATEGIES: &[&str] = &["no_shard", "optim", "optim_grads", "optim_grads_params"];
/// The FSDP implementations: `--use-megatron-fsdp` and `--use-torch-fsdp2`.
pub const FSDP_IMPLS: &[&str] = &["megatron", "torch"];
/// `--grad-reduce-in-bf16` off / on: the main-gradient buffer's dtype.
pub const GRAD_DTYPES: &[&str] = &["fp32", "bf16"];
/// `--main-params-dtype` choices (arguments.py, precision-aware optimizer).
pub const MAIN_PARAMS_DTYPES: &[&str] = &["fp32", "fp16"];
/// `--exp-avg-dtype` / `--exp-avg-sq-dtype` choices (arguments.py, precision-aware optimizer).
pub const MOMENT_DTYPES: &[&str] = &["fp32", "fp16", "bf16", "fp8"];
/// MoE token dispatchers (`base::MoeDispatcher`, Megatron's `--moe-token-dispatcher-type`).
pub const MOE_DISPATCHERS: &[&str] = &["alltoall", "allgather", "flex"];
/// The flex dispatcher's kernels (`base::FlexBackend`, `--moe-flex-dispatcher-backend`).
pub const FLEX_BACKENDS: &[&str] = &["deepep", "hybridep"];
/// Context-parallel attention exchanges (`base::CpComm`; Megatron's `--cp-comm-type` writes
/// `all_gather` and `a2a+p2p`).
pub const CP_COMMS: &[&str] = &["p2p", "a2a", "allgather", "a2a_p2p"];
/// Megatron-LM's `--cuda-graph-impl` choices (`base::CudaGraphImpl`, transformer_config.py:1075).
pub const CUDA_GRAPH_IMPLS: &[&str] = &["none", "local", "transformer_engine", "full_iteration"];
/// Megatron-LM's `--cuda-graph-modules` choices: the words of `base::CudaGraphModules`.
pub const CUDA_GRAPH_MODULES: &[&str] = venus_base::base::CudaGraphModules::WORDS;
/// Megatron-LM's `--offload-modules` choices: the words of `base::OffloadModules`.
pub const OFFLOAD_MODULES: &[&str] = venus_base::base::OffloadModules::WORDS;
/// The router's load-balancing losses (`--moe-router-load-balancing-type`, router.py; `none`
/// also stands for `--moe-aux-loss-coeff 0`, Megatron's default).
pub const LOAD_BALANCING: &[&str] = &["none", "aux_loss", "seq_aux_loss"];
/// FP8 scaling recipes: the words of `base::Fp8Recipe` (Megatron-LM `--fp8-recipe`).
pub const SCALING_RECIPES: &[&str] = &["delayed", "tensorwise", "blockwise", "mxfp8"];
/// FP8 encodings: the words of `base::Fp8Format` (Megatron-LM `--fp8-format`).
pub const FLOAT_FORMATS: &[&str] = &["e4m3", "hybrid"];
/// The optional word after a flag (`sp on`), so sweeps can list both (`sp [on off]`).
pub const FLAG_WORDS: &[&str] = &["on", "off"];

/// What a key stands for when it is not written, as data. The text users see is
/// [`KeySig::default_text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyDefault {
    /// The key must be written (E0103 otherwise).
    Required,
    /// Absence is a behaviour of its own (no MoE, no measured times, no bound).
    Unset,
    /// Computed from other keys (`ffn`: 4 × hidden).
    Derived,
    Count(u64),
    /// A flag that is off unless written.
    Off,
    /// One word of an `Enum` argument.
    Word(&'static str),
    /// A byte count, exact.
    Bytes(u64),
}

/// The signature of one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySig {
    pub key: &'static str,
    /// The typed name of this key; `TABLE[id as usize]` is this entry.
    pub id: Key,
    /// The one block kind the key belongs to.
    pub block: BlockKind,
    /// Positional arguments; an empty list makes the key a flag.
    pub args: &'static [ArgType],
    /// How many trailing `args` may be omitted.
    pub optional: usize,
    pub required: bool,
    /// May appear more than once (`dim`).
    pub repeatable: bool,
    /// Zero is allowed for this count (`mtp_layers 0`, `first_k_dense 0`, `shared_experts 0`:
    /// a derived model turns off what its base has).
    pub allow_zero: bool,
    /// One line for hover and completion.
    pub doc: &'static str,
    /// The value that stands in when the key is not written.
    pub default: KeyDefault,
    /// How the default reads in the language reference and `explain`.
    pub default_text: &'static str,
    /// What a count counts (`sequences`); other argument types carry their unit in the value.
    pub unit: Option<&'static str>,
    /// The Megatron-LM command-line flag with the same meaning, where there is one.
    pub megatron: Option<&'static str>,
    /// The VenusSim configuration field `emit`/`import` map the key to, where there is one.
    pub venussim: Option<&'static str>,
    /// A plausible value for helps (`hidden 4096`); `None`: one built from the argument types.
    pub example: Option<&'static str>,
}

impl KeySig {
    pub fn is_flag(&self) -> bool {
        self.args.is_empty()
    }
    pub fn min_args(&self) -> usize {
        self.args.len() - self.optional
    }

    // Builders for the table below (const so the table is a constant).
    const fn new(key: &'static str, args: &'static [ArgType], doc: &'static str) -> KeySig {
        KeySig {
            key,
            id: Key::Hidden,
            block: BlockKind::Def(DefKind::Model),
            args,
            optional: 0,
            required: false,
            repeatable: false,
            allow_zero: false,
            doc,
            default: KeyDefault::Unset,
            default_text: "unset",
            unit: None,
            megatron: None,
            venussim: None,
            example: None,
        }
    }
    const fn placed(mut self, id: Key, block: BlockKind) -> KeySig {
        self.id = id;
        self.block = block;
        self
    }
    const fn default(mut self, default: KeyDefault, text: &'static str) -> KeySig {
        self.default = default;
        self.default_text = text;
        self
    }
    const fn zero_allowed(mut self) -> KeySig {
        self.allow_zero = true;
        self
    }
    const fn unit(mut self, unit: &'static str) -> KeySig {
        self.unit = Some(unit);
        self
    }
    const fn megatron(mut self, flag: &'static str) -> KeySig {
        self.megatron = Some(flag);
        self
    }
    const fn venussim(mut self, field: &'static str) -> KeySig {
        self.venussim = Some(field);
        self
    }
    const fn example(mut self, value: &'static str) -> KeySig {
        self.example = Some(value);
        self
    }
    const fn optional(mut self, n: usize) -> KeySig {
        self.optional = n;
        self
    }
    const fn repeatable(mut self) -> KeySig {
        self.repeatable = true;
        self
    }
}

/// An optional key.
const fn key(key: &'static str, args: &'static [ArgType], doc: &'static str) -> KeySig {
    KeySig::new(key, args, doc)
}
/// A required key.
const fn req(key: &'static str, args: &'static [ArgType], doc: &'static str) -> KeySig {
    let mut s = KeySig::new(key, args, doc);
    s.required = true;
    s.default = KeyDefault::Required;
    s.default_text = "required";
    s
}
/// A flag: off unless written (`sp`, `sp on`, `sp off`).
const fn flag(key: &'static str, doc: &'static str) -> KeySig {
    KeySig::new(key, &[], doc).default(KeyDefault::Off, "off")
}

/// Declares [`Key`] and [`TABLE`] from one list, so the enum and the table cannot drift: each
/// variant is placed at its own index with its block kind.
macro_rules! key_table {
    ($( $block:expr => { $( $variant:ident = $entry:expr, )* } )*) => {
        /// Every key of every block kind, typed: code names a key as `Key::MicroBatch`, so a
        /// misspelt key does not compile. Only user text is looked up by name ([`lookup`]).
        ///
        /// ```compile_fail,E0599
        /// let _ = venusc::syntax::schema::Key::MicroBach;
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Key { $( $( $variant, )* )* }

        /// Every key, block kind by block kind, in [`Key`] order.
        pub const TABLE: &[KeySig] = &[ $( $( $entry.placed(Key::$variant, $block), )* )* ];

        /// The block kinds in table order, each with its number of keys.
        const BLOCKS: &[(BlockKind, usize)] = &[ $( ($block, [$(Key::$variant),*].len()), )* ];
    };
}

/// Places the plan keys of `venus_base::plan_key_list!` between the blocks written here and
/// declares the table: each entry's table tokens, with the `default(..)` clause of the list
/// turned into the entry's `KeyDefault` (the field, type and reading are the plain-data plan's
/// and unused here).
macro_rules! key_table_with_plan {
    (({ $($before:tt)* } { $($after:tt)* })
     $( $(#[$doc:meta])* $variant:ident = $entry:expr => $field:ident : $ty:ty, $how:ident
        $(, default($dk:ident $(($dv:expr))?, $dt:literal))? ; )*) => {
        key_table! {
            $($before)*
            PLAN => { $( $variant = $entry $(.default(KeyDefault::$dk $(($dv))?, $dt))?, )* }
            $($after)*
        }
    };
}

use ArgType::*;

/// `allow W0001`: silences one warning code for the diagnostics that point into the block
/// (repeatable; one per code). The same entry in every definition block kind.
const fn allow_key() -> KeySig {
    key(
        "allow",
        &[Enum(WARNINGS)],
        "silence one warning code inside this block (`allow W0001`); repeat for more codes",
    )
    .default(KeyDefault::Unset, "none")
    .repeatable()
    .example("W0001")
}

/// The default `reserve` (plan and cluster), 2.5 GiB: the sum `plan::memory::DEFAULT_RESERVE`
/// spells out and cites (CUDA context, cuBLAS workspaces, three NCCL communicators); a test
/// in `ty` keeps the two equal.
const RESERVE_DEFAULT: u64 = 5 << 29;
const RESERVE_DEFAULT_TEXT: &str = "2.5GiB: CUDA context 0.5 GiB, cuBLAS workspaces 0.125 GiB, 3 NCCL communicators of 0.625 GiB (NVIDIA/nccl#964); no fragmentation";

const MODEL: BlockKind = BlockKind::Def(DefKind::Model);
const GPU: BlockKind = BlockKind::Def(DefKind::Gpu);
const CLUSTER: BlockKind = BlockKind::Def(DefKind::Cluster);
const PLAN: BlockKind = BlockKind::Def(DefKind::Plan);
const SCENARIO: BlockKind = BlockKind::Def(DefKind::Scenario);

// Megatron-LM flags: megatron/training/arguments.py. VenusSim fields: the keys of
// `trace_generator_config` and `system.json` written by `emit::venussim`.
// The plan block comes from the master list of the plan keys (`venus_base::plan_key_list!`),
// which the plain-data plan expands too; the other blocks are written here.
venus_base::plan_key_list!([key_table_with_plan] ({
    MODEL => {
        Hidden = req("hidden", &[Count], "hidden size (model dimension)")
            .megatron("--hidden-size")
            .venussim("hidden-size")
            .example("4096"),
        Layers = req("layers", &[Count], "number of transformer layers")
            .unit("layers")
            .megatron("--num-layers")
            .venussim("num-layers")
            .example("32"),
        Heads = req("heads", &[Count], "attention heads")
            .unit("heads")
            .megatron("--num-attention-heads")
            .venussim("num-attention-heads")
            .example("32"),
        Vocab = req(
            "vocab",
            &[Count],
            "vocabulary size (padded to a multiple of 128 x tp, as Megatron)",
        )
        .unit("tokens")
        .megatron("--vocab-size")
        .venussim("vocab-size")
        .example("32000"),
        Seq = req("seq", &[Count], "sequence length in tokens")
            .unit("tokens")
            .megatron("--seq-length")
            .venussim("seq-length")
            .example("4096"),
        Ffn = key("ffn", &[Count], "MLP hidden size; default 4 x hidden")
            .default(KeyDefault::Derived, "4 × hidden")
            .megatron("--ffn-hidden-size")
            .venussim("ffn-hidden-size"),
        KvGroups = key(
            "kv_groups",
            &[Count],
            "query groups for grouped-query attention; default = heads",
        )
        .default(KeyDefault::Derived, "= heads")
        .unit("groups")
        .megatron("--num-query-groups")
        .venussim("num-query-groups"),
        HeadDim = key(
            "head_dim",
            &[Count],
            "size of one attention head; default hidden / heads",
        )
        .default(KeyDefault::Derived, "hidden / heads")
        .megatron("--kv-channels"),
        Swiglu = flag(
            "swiglu",
            "gated SwiGLU MLP (three FFN matrices instead of two)",
        )
        .megatron("--swiglu")
        .venussim("swiglu"),
        UntiedEmbeddings = flag(
            "untied_embeddings",
            "separate input embedding and output layer (Megatron ties them by default)",
        )
        .default(KeyDefault::Off, "off (tied, as Megatron)")
        .megatron("--untie-embeddings-and-output-weights")
        .venussim("untie-embeddings-and-output-weights"),
        Experts = key(
            "experts",
            &[Count],
            "number of MoE experts per layer; unset: dense model",
        )
        .default(KeyDefault::Unset, "dense model")
        .unit("experts")
        .megatron("--num-experts"),
        Topk = key("topk", &[Count], "experts each token is routed to")
            .default(KeyDefault::Derived, "1 with experts")
            .unit("experts")
            .megatron("--moe-router-topk"),
        MoeFfn = key("moe_ffn", &[Count], "FFN size of one expert; default = ffn")
            .default(KeyDefault::Derived, "= ffn")
            .megatron("--moe-ffn-hidden-size"),
        SharedExpertFfn = key(
            "shared_expert_ffn",
            &[Count],
            "FFN size of the shared expert; unset: none",
        )
        .default(KeyDefault::Unset, "none")
        .megatron("--moe-shared-expert-intermediate-size"),
        SharedExperts = key(
            "shared_experts",
            &[Count],
            "shared experts per MoE layer, each of moe_ffn (HF n_shared_experts); unset: none",
        )
        .default(KeyDefault::Unset, "none")
        .unit("experts")
        .zero_allowed(),
        FirstKDense = key(
            "first_k_dense",
            &[Count],
            "leading dense layers before the MoE layers (HF first_k_dense_replace)",
        )
        .default(KeyDefault::Unset, "0: every layer is MoE")
        .unit("layers")
        .megatron("--moe-layer-freq")
        .zero_allowed(),
        QLoraRank = key(
            "q_lora_rank",
            &[Count],
            "MLA query compression rank; unset with MLA: a full query projection",
        )
        .default(KeyDefault::Unset, "no query compression")
        .megatron("--q-lora-rank"),
        KvLoraRank = key(
            "kv_lora_rank",
            &[Count],
            "MLA key-value compression rank; setting it turns on multi-head latent attention",
        )
        .default(KeyDefault::Unset, "no MLA (standard attention)")
        .megatron("--kv-lora-rank"),
        QkNopeHeadDim = key(
            "qk_nope_head_dim",
            &[Count],
            "MLA per-head query/key size without rotary embedding",
        )
        .default(KeyDefault::Derived, "= head_dim")
        .megatron("--qk-head-dim"),
        QkRopeHeadDim = key(
            "qk_rope_head_dim",
            &[Count],
            "MLA per-head query/key size with rotary embedding (the key part shared by all heads)",
        )
        .default(KeyDefault::Derived, "64 with MLA")
        .megatron("--qk-pos-emb-head-dim"),
        VHeadDim = key("v_head_dim", &[Count], "MLA per-head value size")
            .default(KeyDefault::Derived, "= head_dim")
            .megatron("--v-head-dim"),
        MtpLayers = key(
            "mtp_layers",
            &[Count],
            "multi-token prediction depths, one transformer layer each (HF num_nextn_predict_layers)",
        )
        .default(KeyDefault::Unset, "none")
        .unit("layers")
        .megatron("--mtp-num-layers")
        .zero_allowed(),
        HybridOverridePattern = key(
            "hybrid_override_pattern",
            &[Str],
            "hybrid model layers in order, one symbol each: M Mamba-2, * attention, - MLP, E MoE",
        )
        .default(KeyDefault::Unset, "a transformer (attention and MLP in every layer)")
        .megatron("--hybrid-override-pattern")
        .example("\"M-M*-M-\""),
        MambaNumHeads = key("mamba_num_heads", &[Count], "Mamba-2 heads of a hybrid model")
            .default(KeyDefault::Derived, "2 x hidden / mamba_head_dim")
            .unit("heads")
            .megatron("--mamba-num-heads"),
        MambaHeadDim = key("mamba_head_dim", &[Count], "Mamba-2 head size")
            .default(KeyDefault::Derived, "64")
            .megatron("--mamba-head-dim"),
        SsmStateSize = key("ssm_state_size", &[Count], "Mamba-2 SSM state size per group")
            .default(KeyDefault::Derived, "128")
            .megatron("--mamba-state-dim"),
        NGroups = key("n_groups", &[Count], "Mamba-2 B/C groups (heads share a group's B and C)")
            .default(KeyDefault::Derived, "8")
            .unit("groups")
            .megatron("--mamba-num-groups"),
        ConvKernel = key("conv_kernel", &[Count], "Mamba-2 causal convolution width")
            .default(KeyDefault::Derived, "4"),
        MoeLatentSize = key(
            "moe_latent_size",
            &[Count],
            "latent MoE: routed experts run on (and tokens are dispatched at) this width",
        )
        .default(KeyDefault::Unset, "hidden (no latent projections)")
        .megatron("--moe-latent-size"),
        SlidingWindow = key(
            "sliding_window",
            &[Count],
            "sliding-window attention: each query sees this many keys, itself included (HF sliding_window)",
        )
        .default(KeyDefault::Unset, "full causal attention")
        .unit("tokens")
        .megatron("--window-size"),
        SlidingWindowPattern = key(
            "sliding_window_pattern",
            &[Count],
            "with sliding_window: every Nth layer keeps full attention, the others are windowed",
        )
        .default(KeyDefault::Unset, "every layer windowed")
        .unit("layers")
        .megatron("--window-attn-skip-freq"),
        AttentionSinks = flag(
            "attention_sinks",
            "a learned sink logit per head in the attention softmax (GPT-OSS sinks)",
        )
        .megatron("--softmax-type"),
        QkNorm = flag(
            "qk_norm",
            "normalise queries and keys per head before attention (Qwen3 q_norm/k_norm)",
        )
        .megatron("--qk-layernorm"),
        RoutedGroups = key(
            "routed_groups",
            &[Count],
            "group-limited routing: the routed experts in this many equal groups, each token routed inside topk_groups of them (HF n_group)",
        )
        .default(KeyDefault::Unset, "no groups (any expert)")
        .unit("groups")
        .megatron("--moe-router-num-groups"),
        TopkGroups = key(
            "topk_groups",
            &[Count],
            "with routed_groups: the groups each token may reach (HF topk_group); groups on nodes make it node-limited routing",
        )
        .default(KeyDefault::Derived, "= routed_groups")
        .unit("groups")
        .megatron("--moe-router-group-topk"),
        MoeLayerFreq = key(
            "moe_layer_freq",
            &[Count],
            "every Nth layer (N, 2N, ... from 1) has routed experts, the others the dense MLP of ffn (HF interleave_moe_layer_step)",
        )
        .default(KeyDefault::Count(1), "1: every layer")
        .unit("layers"),
        ExpertBias = flag(
            "expert_bias",
            "aux-loss-free load balancing: a per-expert routing bias updated from each step's expert loads (HF topk_method noaux_tc)",
        )
        .megatron("--moe-router-enable-expert-bias"),
        LoadBalancing = key(
            "load_balancing",
            &[Enum(LOAD_BALANCING)],
            "the router's load-balancing loss: none, aux_loss (over the micro-batch) or seq_aux_loss (per sequence)",
        )
        .default(KeyDefault::Word("none"), "none (Megatron's `--moe-aux-loss-coeff` 0)")
        .megatron("--moe-router-load-balancing-type"),
        AllowModel = allow_key(),
    }
    GPU => {
        Peak = req("peak", &[Rate], "dense BF16 tensor-core peak")
            .venussim("peak-perf")
            .example("989TFLOP/s"),
        Memory = req("memory", &[Bytes], "HBM capacity").example("80GiB"),
        MemBw = req("mem_bw", &[Bandwidth], "HBM bandwidth").example("3350GB/s"),
        Fp8Peak = key(
            "fp8_peak",
            &[Rate],
            "dense FP8 tensor-core peak; unset: the GPU has no FP8 tensor cores (`precision fp8` is E0312)",
        )
        .default(KeyDefault::Unset, "no FP8 tensor cores"),
        Arch = key(
            "arch",
            &[Enum(ARCHS)],
            "GPU architecture: picks the compute model's calibration (never the GPU's name)",
        )
        .default(KeyDefault::Word("hopper"), "hopper"),
        Fp4Peak = key(
            "fp4_peak",
            &[Rate],
            "dense FP4 tensor-core peak; unset: the GPU has no FP4 tensor cores (`precision fp4` is E0312)",
        )
        .default(KeyDefault::Unset, "no FP4 tensor cores"),
        GemmEfficiency = key(
            "gemm_efficiency",
            &[Ratio],
            "fraction of its precision's peak a very large GEMM reaches on this GPU (measured: `venusc calibrate --gemm`)",
        )
        .default(KeyDefault::Unset, "the arch's calibration")
        .example("82%"),
        GemmHalfDim = key(
            "gemm_half_dim",
            &[Count],
            "GEMM size per dimension at which that dimension halves the efficiency: each of m, n, k scales it by d / (d + gemm_half_dim) (measured: `venusc calibrate --gemm`)",
        )
        .default(KeyDefault::Unset, "the arch's calibration")
        .example("256")
        .zero_allowed(),
        Sms = key(
            "sms",
            &[Count],
            "streaming multiprocessors (AMD: compute units): a communication kernel that runs beside compute takes some of them (`overlap_tp_comm`'s userbuffers, an overlapped pair's all-to-alls)",
        )
        .default(KeyDefault::Derived, "the arch's: 108 ampere, 132 hopper, 148 blackwell, 160 blackwell_ultra, 142 ada, 304 cdna3, 256 cdna4")
        .example("132"),
        AllowGpu = allow_key(),
    }
    CLUSTER => {
        Gpu = req("gpu", &[Ref(DefKind::Gpu)], "the GPU of every rank").example("h100_sxm"),
        Dim = req(
            "dim",
            &[NewName, Enum(TOPOLOGIES), Count, Bandwidth, Time, Ratio],
            "network dimension, innermost first: NAME TOPOLOGY SIZE BANDWIDTH [LATENCY [EFFICIENCY]]; bandwidth per GPU per direction; efficiency: achieved share of it (default 100%)",
        )
        .optional(2)
        .repeatable()
        .example("nvlink fc 8 450GB/s 1000ns"),
        Nodes = key("nodes", &[Count], "sets the size of the outermost dim")
            .default(KeyDefault::Unset, "as the outermost dim")
            .unit("nodes"),
        Algo = key(
            "algo",
            &[NewName, Enum(ALGORITHMS)],
            "collective algorithm of one dim: DIM ring|direct|halving_doubling|tree; default: what NCCL would pick",
        )
        .repeatable()
        .default(KeyDefault::Derived, "what NCCL would pick"),
        Gpus = key(
            "gpus",
            &[Count],
            "the job's GPUs in all: spread evenly over NVLink domains (the dim inside the outermost); sets the outermost dim to the number of domains",
        )
        .default(KeyDefault::Unset, "the product of the dims")
        .unit("GPUs")
        .example("512"),
        PerDomain = key(
            "per_domain",
            &[Count],
            "GPUs the job uses of each NVLink domain (sets the size of the dim inside the outermost); a multiple of `tray`",
        )
        .default(
            KeyDefault::Derived,
            "with `gpus`: the largest multiple of `tray` that divides it and fits a domain",
        )
        .unit("GPUs")
        .example("64"),
        Tray = key(
            "tray",
            &[Count],
            "GPUs of the smallest share of an NVLink domain a job can be given (a GB200 NVL72 compute tray holds 4)",
        )
        .default(KeyDefault::Derived, "the whole domain")
        .unit("GPUs")
        .example("4"),
        Link = key(
            "link",
            &[NewName, Enum(LINKS)],
            "link technology of one dim: DIM nvswitch|infiniband; gives its efficiency when the `dim` states none (80% NVLink through NVSwitch, 90% InfiniBand: NCCL's measured bus bandwidth)",
        )
        .repeatable()
        .default(KeyDefault::Unset, "an unstated efficiency is 100%")
        .example("ib infiniband"),
        Rail = key(
            "rail",
            &[NewName],
            "rail-optimized scale-out on one dim: each NIC on the switch of its GPU's local index; other pairs cross the dims inside first",
        )
        .repeatable()
        .default(KeyDefault::Unset, "one ideal switch")
        .example("ib"),
        FatTree = key(
            "fat_tree",
            &[NewName, Count, Ratio],
            "one dim's switches as a fat tree: DIM LEAF SHARE, leaves of LEAF coordinates, SHARE of the bandwidth between leaves (50% = 2:1 oversubscribed)",
        )
        .repeatable()
        .default(KeyDefault::Unset, "one ideal switch")
        .example("ib 16 50%"),
        Sharp = key(
            "sharp",
            &[NewName],
            "in-network reduction on one dim (NVLink SHARP on NVSwitch 3+, SHARP on InfiniBand): an all-reduce sends and receives each byte once",
        )
        .repeatable()
        .default(KeyDefault::Unset, "off")
        .example("nvlink"),
        ClusterReserve = key(
            "reserve",
            &[Bytes],
            "memory kept back per GPU of this cluster (CUDA context, NCCL buffers, fragmentation); E0401 checks peak + reserve; a plan's `reserve` wins",
        )
        .default(KeyDefault::Bytes(RESERVE_DEFAULT), RESERVE_DEFAULT_TEXT)
        .example("4GiB"),
        SlowGpus = key(
            "slow_gpus",
            &[Ratio, Ratio, Count],
            "stragglers: FRACTION of the GPUs run at SPEED of their compute rate, picked by SEED (default 0) the same way on every run: `slow_gpus 1% 80% 7`",
        )
        .optional(1)
        .zero_allowed()
        .repeatable()
        .default(KeyDefault::Unset, "every GPU at full speed")
        .example("1% 80% 7"),
        SlowRank = key(
            "slow_rank",
            &[Count, Ratio],
            "a straggler: global RANK runs at SPEED of its compute rate (`slow_rank 17 80%`)",
        )
        .zero_allowed()
        .repeatable()
        .default(KeyDefault::Unset, "every GPU at full speed")
        .example("17 80%"),
        SlowNode = key(
            "slow_node",
            &[Count, Ratio],
            "stragglers: every GPU of NODE (a coordinate of the outermost dim, from 0) runs at SPEED of its compute rate (`slow_node 3 50%`)",
        )
        .zero_allowed()
        .repeatable()
        .default(KeyDefault::Unset, "every GPU at full speed")
        .example("3 50%"),
        SlowLink = key(
            "slow_link",
            &[Count, Ratio],
            "a slow link: the scale-out NIC of every GPU of NODE (a coordinate of the outermost dim, from 0) moves bytes at SPEED of its bandwidth (`slow_link 3 50%`)",
        )
        .zero_allowed()
        .repeatable()
        .default(KeyDefault::Unset, "every link at full bandwidth")
        .example("3 50%"),
        AllowCluster = allow_key(),
        GpuMtbf = key(
            "gpu_mtbf",
            &[Time],
            "mean time between failures of one GPU (its HBM, SRAM, system processor, thermal faults) that interrupt the job; with a storage bandwidth it turns on the goodput report",
        )
        .default(KeyDefault::Unset, "no GPU failures")
        .example("79000h"),
        NodeMtbf = key(
            "node_mtbf",
            &[Time],
            "mean time between interruptions of one node (host hardware, maintenance, software faults); a node is one element of the outermost dim",
        )
        .default(KeyDefault::Unset, "no node failures")
        .example("24000h"),
        LinkMtbf = key(
            "link_mtbf",
            &[Time],
            "mean time between failures of one scale-out link (NIC, cable, switch port; one per GPU)",
        )
        .default(KeyDefault::Unset, "no link failures")
        .example("500000h"),
        StorageWriteBw = key(
            "storage_write_bw",
            &[Bandwidth],
            "aggregate checkpoint write bandwidth of the storage; each data-parallel rank writes its shard, capped by the nodes' scale-out bandwidth",
        )
        .default(KeyDefault::Unset, "no checkpoint estimate")
        .example("2TB/s"),
        StorageReadBw = key(
            "storage_read_bw",
            &[Bandwidth],
            "aggregate checkpoint read bandwidth, for loading the checkpoint after an interruption",
        )
        .default(KeyDefault::Derived, "= storage_write_bw")
        .example("2TB/s"),
        Restart = key(
            "restart",
            &[Time],
            "time from an interruption to the job running again, before the checkpoint is read (detection, rescheduling, re-initialisation)",
        )
        .default(KeyDefault::Unset, "0s")
        .example("10min"),
    }
} {
    SCENARIO => {
        Model = req("model", &[Ref(DefKind::Model)], "the model to train").example("llama2_7b"),
        Cluster = req("cluster", &[Ref(DefKind::Cluster)], "the cluster to train on")
            .example("dgx_h100"),
        Plan = req("plan", &[Ref(DefKind::Plan)], "the parallel plan")
            .example("< micro_batch 1 global_batch 512 >"),
        Expect = key(
            "expect",
            &[Nested(BlockKind::Expect)],
            "bounds that turn predictions into checks",
        )
        .default(KeyDefault::Unset, "no checks"),
        AllowScenario = allow_key(),
        Train = key(
            "train",
            &[Nested(BlockKind::Train)],
            "a token budget (and a price of GPU time) the report turns into time to train, GPU-hours and cost",
        )
        .default(KeyDefault::Unset, "no training estimate")
        .example("< tokens 15T price 2.5 >"),
    }
    BlockKind::Measured => {
        First = req(
            "first",
            &[Time],
            "forward+backward of one microbatch on the first stage",
        )
        .example("12ms"),
        Middle = req(
            "middle",
            &[Time],
            "forward+backward of one microbatch on a middle stage",
        )
        .example("12ms"),
        Last = req(
            "last",
            &[Time],
            "forward+backward of one microbatch on the last stage",
        )
        .example("12ms"),
        Unused = flag(
            "unused",
            "keep the times for `--emit venussim` without replaying them",
        )
        .venussim("use_step_snapshot"),
    }
    BlockKind::Expect => {
        IterationTimeMax = key(
            "iteration_time_max",
            &[Time],
            "fail when the predicted iteration time is above this",
        )
        .default(KeyDefault::Unset, "no bound"),
        TflopsMin = key(
            "tflops_min",
            &[RateOrTflops],
            "fail when predicted TFLOP/s per GPU is below this",
        )
        .default(KeyDefault::Unset, "no bound"),
        MemoryMax = key(
            "memory_max",
            &[Bytes],
            "fail when the peak stage memory is above this",
        )
        .default(KeyDefault::Unset, "no bound"),
        MfuMin = key(
            "mfu_min",
            &[Ratio],
            "fail when the predicted MFU is below this",
        )
        .default(KeyDefault::Unset, "no bound"),
    }
    BlockKind::Train => {
        TrainTokens = req(
            "tokens",
            &[LargeCount],
            "tokens to train on (K, M, B, T: thousand, million, billion, trillion)",
        )
        .unit("tokens")
        .example("15T"),
        Price = key(
            "price",
            &[Price],
            "price of one GPU-hour in US dollars; unset: no cost, only time and GPU-hours",
        )
        .default(KeyDefault::Unset, "no cost")
        .unit("dollars per GPU-hour")
        .example("2.5"),
    }
}));

// The table is indexed by `Key`: checked when the crate compiles.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(TABLE[i].id as usize == i, "TABLE is not in Key order");
        i += 1;
    }
};

impl Key {
    /// This key's entry in the table.
    pub fn sig(self) -> &'static KeySig {
        &TABLE[self as usize]
    }
    /// The key as written in `.venus` files.
    pub fn name(self) -> &'static str {
        self.sig().key
    }
    pub fn block(self) -> BlockKind {
        self.sig().block
    }
    /// Every key, in table order.
    pub fn all() -> impl Iterator<Item = Key> {
        TABLE.iter().map(|s| s.id)
    }
}

/// Every block kind, in table order (model, gpu, cluster, plan, scenario, measured, expect,
/// train).
pub fn block_kinds() -> impl Iterator<Item = BlockKind> {
    BLOCKS.iter().map(|&(b, _)| b)
}

/// Every key of a block kind.
pub fn keys(block: BlockKind) -> &'static [KeySig] {
    let mut start = 0;
    for &(b, n) in BLOCKS {
        if b == block {
            return TABLE.get(start..start + n).unwrap_or(&[]);
        }
        start += n;
    }
    &[]
}

/// The signature of `key` in `block`, if the key exists there. For names read from user
/// text; code names keys by [`Key`].
pub fn lookup(block: BlockKind, key: &str) -> Option<&'static KeySig> {
    keys(block).iter().find(|k| k.key == key)
}

/// The keys named `name` in any block kind (for `venusc explain KEY`), in table order.
pub fn lookup_any(name: &str) -> impl Iterator<Item = &'static KeySig> + '_ {
    TABLE.iter().filter(move |k| k.key == name)
}

// ------------------------------------------------------------------ rendering the table

impl KeySig {
    /// How the key is written: `` `dim NAME fc|ring|switch COUNT BANDWIDTH [TIME] [RATIO]` ``.
    pub fn signature(&self) -> String {
        if self.is_flag() {
            return format!("`{0}` or `{0} on|off`", self.key);
        }
        let mut parts = vec![self.key.to_string()];
        for (i, a) in self.args.iter().enumerate() {
            let p = a.placeholder();
            parts.push(if i >= self.min_args() {
                format!("[{p}]")
            } else {
                p
            });
        }
        format!("`{}`", parts.join(" "))
    }

    /// The unit of the key's value: the table's word for a count, else the argument type's.
    pub fn unit_text(&self) -> &'static str {
        if let Some(u) = self.unit {
            return u;
        }
        match self.args {
            [Bytes] => "bytes",
            [Bandwidth] => "bytes/s",
            [Time] => "seconds",
            [Rate] | [RateOrTflops] => "FLOP/s",
            [Ratio] => "ratio",
            [LargeCount] => "count",
            [Price] => "dollars per GPU-hour",
            _ => "",
        }
    }

    /// The entry `venusc explain KEY` prints.
    pub fn explain(&self) -> String {
        let mut out = format!(
            "# `{}` ({} key)\n\n{}\n\n",
            self.key,
            self.block.name(),
            self.doc
        );
        let mut row = |name: &str, value: &str| {
            if !value.is_empty() {
                out.push_str(&format!("{name:<13}{value}\n"));
            }
        };
        row("usage:", &self.signature());
        row("default:", self.default_text);
        row("unit:", self.unit_text());
        if self.repeatable {
            row("repeatable:", "yes");
        }
        row("Megatron-LM:", self.megatron.unwrap_or("none"));
        row("VenusSim:", self.venussim.unwrap_or("none"));
        out
    }
}

impl ArgType {
    /// The argument's placeholder in a signature: `COUNT`, `fc|ring|switch`.
    pub fn placeholder(self) -> String {
        match self {
            Count => "COUNT".into(),
            Bytes => "BYTES".into(),
            Bandwidth => "BANDWIDTH".into(),
            Time => "TIME".into(),
            Rate | RateOrTflops => "RATE".into(),
            Ratio => "RATIO".into(),
            Ref(k) => k.keyword().to_uppercase(),
            NewName => "NAME".into(),
            Enum(w) => w.join("|"),
            Nested(_) => "< ... >".into(),
            Str => "\"TEXT\"".into(),
            LargeCount => "COUNT".into(),
            Price => "PRICE".into(),
        }
    }
}

/// The command that rewrites `docs/language.md` from the table.
pub const REGENERATE_REFERENCE: &str =
    "UPDATE_DOCS=1 cargo test --test integration language_reference";

/// `docs/language.md`: one section per block kind, one row per key.
pub fn language_reference() -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let code = |s: Option<&str>| s.map_or(String::new(), |s| format!("`{s}`"));
    let mut out = String::from(
        "# Keys of the `.venus` language\n\n\
         <!-- generated from the key table in crates/venus-syntax/src/syntax/schema.rs; do not edit -->\n\n\
         Every key of every block kind, generated from the key table that the parser, the type\n\
         checker, the language server and `venusc explain KEY` read. To regenerate:\n\n",
    );
    out.push_str(&format!("    {REGENERATE_REFERENCE}\n"));
    for block in block_kinds() {
        out.push_str(&format!("\n## `{}`\n\n", block.name()));
        out.push_str("| key | arguments | default | unit | doc | Megatron-LM | VenusSim |\n");
        out.push_str("|---|---|---|---|---|---|---|\n");
        for k in keys(block) {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} | {} |\n",
                k.key,
                cell(&k.signature()),
                cell(k.default_text),
                k.unit_text(),
                cell(k.doc),
                code(k.megatron),
                code(k.venussim),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_base::base::{GpuArch, Precision};

    #[test]
    fn the_arch_and_precision_words_are_those_of_the_base_enums() {
        let archs: Vec<&str> = GpuArch::ALL.iter().map(|a| a.word()).collect();
        assert_eq!(archs, ARCHS);
        let precisions: Vec<&str> = Precision::ALL.iter().map(|p| p.word()).collect();
        assert_eq!(precisions, PRECISIONS);
    }

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
            BlockKind::Train,
        ] {
            let mut names: Vec<_> = keys(b).iter().map(|k| k.key).collect();
            let n = names.len();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), n, "duplicate key in {}", b.name());
        }
    }

    #[test]
    fn the_block_slices_cover_the_table_in_order() {
        let joined: Vec<Key> = block_kinds()
            .flat_map(|b| keys(b).iter().map(|k| k.id))
            .collect();
        assert_eq!(joined, Key::all().collect::<Vec<_>>());
        for b in block_kinds() {
            assert!(keys(b).iter().all(|k| k.block == b), "{}", b.name());
        }
        assert_eq!(
            lookup(BlockKind::Def(DefKind::Plan), "micro_batch").map(|k| k.id),
            Some(Key::MicroBatch)
        );
        assert_eq!(
            lookup_any("memory").map(|k| k.id).collect::<Vec<_>>(),
            [Key::Memory]
        );
        assert_eq!(lookup_any("micro_bach").count(), 0);
    }

    #[test]
    fn dim_takes_four_or_five_arguments() {
        let dim = lookup(BlockKind::Def(DefKind::Cluster), "dim").unwrap();
        assert_eq!((dim.min_args(), dim.args.len()), (4, 6));
    }
}
