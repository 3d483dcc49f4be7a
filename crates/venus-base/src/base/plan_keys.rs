//! The plan keys, declared once: the master list the key table's plan block and the plain-data
//! plan both expand from.
//!
//! Input: nothing (a macro). Output: [`plan_key_list!`](crate::plan_key_list), which hands the
//! list to a callback macro. Readers: `syntax::schema`'s `key_table!` (the `PLAN` block of the
//! key table: every entry, in this order) and `venus_plan::plan_keys!` (the plain entries:
//! `ty::Plan`, its fill in `ty::check`, `PlanSpec`, `to_plan`, the test builders and
//! `PlanSpec`'s generated default accessors).
//! Invariants: this crate knows no syntax type: each entry's table tokens (`key(..)`, `flag(..)`,
//! `Count`, `KeyDefault`, the word lists) stay unresolved here and are resolved where the
//! callback expands them, in `syntax::schema`; the crates that only read the plain part never
//! see them as code. The order of the entries is the order of the plan keys in the key table,
//! the language reference and completion.

/// The plan keys, in key-table order. `plan_key_list!([callback] ARGS)` expands to
/// `callback! { ARGS ENTRY* }`; the callback is written in brackets so that it may be a path
/// (`$crate::plain_plan_keys`). Each entry is
///
/// ```text
/// #[doc]* Variant = TABLE-ENTRY => field: Type, reading[, default(KIND(VALUE), "TEXT")];
/// ```
///
/// - `Variant`: the key's `schema::Key` variant; `TABLE-ENTRY`: its key-table entry without
///   its default when the `default(..)` clause gives it (the `syntax::schema` builders);
/// - `field`: the key's own name, the field of `ty::Plan` and `PlanSpec`; `Type`: the value
///   type (an absolute path: the list expands in other crates); the docs document that field;
/// - `reading`: how the type checker reads the argument: `count`, `flag` (on unless `off`),
///   `bytes`, `ratio`, `time`, `word` (one `Enum` word through `FromWord`), `words` (a set of
///   `Enum` words through `FromWords`), or `hand` for a key read by code of its own (two values
///   from one item, nested blocks, repeatable items, required keys), whose type is `_`: it
///   generates its table entry and nothing else;
/// - `default(..)`: the default as a plain value, `Count(N)`, `Word("w")` or `Off`, with the
///   text the reference shows; it becomes both the table's `KeyDefault` and `PlanSpec`'s
///   accessor of the same name. Keys whose default is a rule (derived from other keys, a
///   Megatron-LM condition) leave it out, keep their `.default(..)` in the table entry and
///   have a hand-written accessor, the code that gives them meaning.
#[macro_export]
macro_rules! plan_key_list {
    ([$($cb:tt)*] $args:tt) => {
        $($cb)*! { $args
            Tp = key("tp", &[Count], "tensor-parallel size; default 1")
                .unit("GPUs")
                .megatron("--tensor-model-parallel-size")
                .venussim("tensor-model-parallel-size")
            => tp: u64, count, default(Count(1), "1");
            Pp = key("pp", &[Count], "pipeline-parallel size; default 1")
                .unit("stages")
                .megatron("--pipeline-model-parallel-size")
                .venussim("pipeline-model-parallel-size")
            => pp: u64, count, default(Count(1), "1");
            Cp = key("cp", &[Count], "context-parallel size; default 1")
                .unit("GPUs")
                .megatron("--context-parallel-size")
                .venussim("context-parallel-size")
            => cp: u64, count, default(Count(1), "1");
            Ep = key("ep", &[Count], "expert-parallel size; default 1")
                .unit("GPUs")
                .megatron("--expert-model-parallel-size")
            => ep: u64, count, default(Count(1), "1");
            Vpp = key(
                "vpp",
                &[Count],
                "model chunks per pipeline rank (interleaving); default 1",
            )
            .unit("chunks")
            .megatron("--num-virtual-stages-per-pipeline-rank")
            .venussim("num-layers-per-virtual-pipeline-stage")
            => vpp: u64, count, default(Count(1), "1");
            FirstStageLayers = key(
                "first_stage_layers",
                &[Count],
                "layers on the first pipeline stage (uneven pipeline)",
            )
            .default(KeyDefault::Derived, "even split")
            .unit("layers")
            .megatron("--decoder-first-pipeline-num-layers")
            => first_stage_layers: u64, count;
            LastStageLayers = key(
                "last_stage_layers",
                &[Count],
                "layers on the last pipeline stage (uneven pipeline)",
            )
            .default(KeyDefault::Derived, "even split")
            .unit("layers")
            .megatron("--decoder-last-pipeline-num-layers")
            => last_stage_layers: u64, count;
            Dp = key(
                "dp",
                &[Count],
                "data-parallel size; default world / (tp x pp x cp)",
            )
            .default(KeyDefault::Derived, "world / (tp × pp × cp)")
            .unit("GPUs")
            => dp: u64, count;
            MicroBatch = req("micro_batch", &[Count], "sequences per microbatch")
                .unit("sequences")
                .megatron("--micro-batch-size")
                .venussim("micro-batch-size")
                .example("1")
            => micro_batch: _, hand;
            GlobalBatch = req("global_batch", &[Count], "sequences per iteration")
                .unit("sequences")
                .megatron("--global-batch-size")
                .venussim("global-batch-size-mlp-multiplier")
                .example("512")
            => global_batch: _, hand;
            Schedule = key(
                "schedule",
                &[Enum(SCHEDULES)],
                "pipeline schedule; default 1f1b, or interleaved when vpp > 1; zb_h1 and zb_h2 run each backward as B (input gradient) and W (weight gradient); dualpipe and dualpipev (DeepSeek) run two model chunks per rank; zbv (zero-bubble V) splits the backward on two chunks per rank",
            )
            .default(
                KeyDefault::Derived,
                "none when pp = 1; 1f1b; interleaved when vpp > 1",
            )
            => schedule: ::venus_base::base::ScheduleKind, word;
            Sp = flag("sp", "sequence parallelism (needs tp > 1)")
                .megatron("--sequence-parallel")
                .venussim("sequence-parallel")
            => sp: bool, flag, default(Off, "off");
            Recompute = key(
                "recompute",
                &[Enum(RECOMPUTE)],
                "activation recomputation: none (default), selective (Megatron's submodules, `recompute_modules`), full (each layer's input only, `recompute_method`) or op (PyTorch per-op selective checkpointing as torchtitan's `selective_ac_option = \"op\"`: every other matmul's output and the attention's kept)",
            )
            .megatron("--recompute-granularity")
            => recompute: ::venus_base::base::Recompute, word, default(Word("none"), "none");
            DistributedOptimizer = flag(
                "distributed_optimizer",
                "shard optimizer state over data-parallel ranks",
            )
            .megatron("--use-distributed-optimizer")
            .venussim("use-distributed-optimizer")
            => distributed_optimizer: bool, flag, default(Off, "off");
            OverlapGradReduce = flag(
                "overlap_grad_reduce",
                "overlap gradient reduction with backward",
            )
            .megatron("--overlap-grad-reduce")
            .venussim("overlap-grad-reduce")
            => overlap_grad_reduce: bool, flag, default(Off, "off");
            OverlapParamGather = flag(
                "overlap_param_gather",
                "overlap parameter all-gather with forward",
            )
            .megatron("--overlap-param-gather")
            .venussim("overlap-param-gather")
            => overlap_param_gather: bool, flag, default(Off, "off");
            DelayGradReduce = flag(
                "delay_grad_reduce",
                "delay gradient reduction to the end of the pipeline flush",
            )
            .venussim("no-delay-grad-reduce")
            => delay_grad_reduce: bool, flag, default(Off, "off");
            DelayParamGather = flag(
                "delay_param_gather",
                "delay parameter all-gather until the first forward",
            )
            .venussim("delay-param-gather")
            => delay_param_gather: bool, flag, default(Off, "off");
            OverlapP2p = flag("overlap_p2p", "overlap pipeline send/receive with compute")
                .megatron("--no-overlap-p2p-communication")
                .venussim("no-overlap-p2p-communication")
            => overlap_p2p: bool, flag, default(Off, "off");
            OverlapTpComm = flag(
                "overlap_tp_comm",
                "overlap tensor-parallel communication with the GEMMs (needs sp), as Transformer Engine's userbuffers do by default: the reduce-scatters after the projection and FC2 and the backward's collectives beside QKV and FC1 take 16 of the GPU's `sms` from those GEMMs",
            )
            .megatron("--tp-comm-overlap")
            => overlap_tp_comm: bool, flag, default(Off, "off");
            OverlapEpComm = flag(
                "overlap_ep_comm",
                "overlap expert all-to-alls with another microbatch's compute (interleaved, ep > 1)",
            )
            .megatron("--overlap-moe-expert-parallel-comm")
            => overlap_ep_comm: bool, flag, default(Off, "off");
            BucketSize = key(
                "bucket_size",
                &[Bytes],
                "gradient bucket size; default Megatron's",
            )
            .default(KeyDefault::Derived, "Megatron's")
            .megatron("--ddp-bucket-size")
            => bucket_size: ::venus_base::base::Bytes, bytes;
            Mfu = key(
                "mfu",
                &[Ratio],
                "VenusSim-compatible compute: every node takes FLOPs / (peak x mfu)",
            )
            .default(KeyDefault::Unset, "the simulator's own compute model")
            .venussim("mfu")
            => mfu: ::venus_base::base::Ratio, ratio;
            Measured = key(
                "measured",
                &[Nested(BlockKind::Measured)],
                "measured forward+backward time per microbatch per stage",
            )
            .default(KeyDefault::Unset, "the compute model")
            .venussim("step_snapshot_data")
            => measured: _, hand;
            Precision = key(
                "precision",
                &[Enum(PRECISIONS)],
                "GEMM precision: bf16, fp8 or fp4 (Transformer Engine NVFP4); the GPU needs `fp8_peak` / `fp4_peak` (E0312); default bf16",
            )
            => precision: ::venus_base::base::Precision, word, default(Word("bf16"), "bf16");
            Attention = key(
                "attention",
                &[Enum(ATTENTIONS)],
                "attention kernel: flash (default; fused, as Transformer Engine's cuDNN attention), unfused (batched GEMMs over the full scores, softmax through memory, as Megatron-LM before FlashAttention) or flash2 (FlashAttention-2's kernels, as PyTorch's scaled_dot_product_attention: the same work at their own efficiency)",
            )
            => attention: ::venus_base::base::Attention, word, default(Word("flash"), "flash");
            CrossEntropy = key(
                "cross_entropy",
                &[Enum(CROSS_ENTROPY)],
                "how the loss reads the logits: vocab_parallel (default; Megatron-LM's cross entropy, one fp32 copy of the logits, its gradient written in place) or torch (PyTorch's `cross_entropy` on fp32 logits, as torchtitan: three fp32 copies at the loss's backward, four through DTensor's loss_parallel when tp shards the vocabulary)",
            )
            => cross_entropy: ::venus_base::base::CrossEntropy, word, default(Word("vocab_parallel"), "vocab_parallel");
            PipelineRuntime = key(
                "pipeline_runtime",
                &[Enum(PIPELINE_RUNTIMES)],
                "what drives a pipelined schedule: megatron (default; Megatron-LM frees a stage's output once sent) or torch (PyTorch's torch.distributed.pipelining, as torchtitan: every in-flight output kept, an activation and a gradient receive buffer per microbatch of the step, and the last stage's logits of every microbatch until the step ends); no effect at pp 1",
            )
            => pipeline_runtime: ::venus_base::base::PipelineRuntime, word, default(Word("megatron"), "megatron");
            Iterations = key(
                "iterations",
                &[Count],
                "training iterations to simulate; default 1",
            )
            .unit("iterations")
            .megatron("--train-iters")
            .venussim("train-iters")
            => iterations: u64, count, default(Count(1), "1");
            /// Memory kept back per GPU (CUDA context, NCCL buffers, fragmentation).
            Reserve = key(
                "reserve",
                &[Bytes],
                "memory kept back per GPU (CUDA context, NCCL buffers, fragmentation); E0401 checks peak + reserve; overrides the cluster's `reserve`",
            )
            .default(KeyDefault::Bytes(RESERVE_DEFAULT), RESERVE_DEFAULT_TEXT)
            .example("4GiB")
            => reserve: ::venus_base::base::Bytes, bytes;
            /// Token copies the busiest EP rank receives above the mean (`None`: balanced).
            MoeImbalance = key(
                "moe_imbalance",
                &[Ratio],
                "token copies the busiest expert-parallel rank gets above the mean (measured routing is imbalanced)",
            )
            .default(KeyDefault::Unset, "0%: balanced routing")
            .example("20%")
            => moe_imbalance: ::venus_base::base::Ratio, ratio;
            /// Expert capacity above the balanced load: Megatron's capacity factor less 1
            /// (`None`: no capacity, no token dropped).
            MoeCapacityHeadroom = key(
                "moe_capacity_headroom",
                &[Ratio],
                "expert capacity above the balanced load (tokens × topk / experts), tokens over it dropped: 25% is Megatron's capacity factor 1.25",
            )
            .default(KeyDefault::Unset, "no capacity: no token dropped")
            .megatron("--moe-expert-capacity-factor")
            .example("25%")
            => moe_capacity_headroom: ::venus_base::base::Ratio, ratio;
            /// Every expert padded to its capacity (`--moe-pad-expert-input-to-capacity`).
            MoePadToCapacity = flag(
                "moe_pad_to_capacity",
                "with moe_capacity_headroom: every expert computes and receives exactly its capacity (dropped and padded)",
            )
            .megatron("--moe-pad-expert-input-to-capacity")
            => moe_pad_to_capacity: bool, flag, default(Off, "off");
            /// What the iteration trains (`None`: pretrain).
            Task = key(
                "task",
                &[Enum(TASKS)],
                "what the iteration trains: pretrain, sft (every parameter, as pretrain) or lora (adapters on a frozen base: no weight gradients, gradient sync or optimizer state for it)",
            )
            .example("lora")
            => task: ::venus_base::base::Task, word, default(Word("pretrain"), "pretrain");
            /// LoRA adapter rank (`None`: Megatron-Bridge's 32).
            LoraRank = key(
                "lora_rank",
                &[Count],
                "rank of each LoRA adapter (needs `task lora`); default Megatron-Bridge's 32",
            )
            .example("16")
            => lora_rank: u64, count, default(Count(32), "32 (Megatron-Bridge `LoRA.dim`)");
            /// LoRA target modules (`None`: all four).
            LoraModules = key(
                "lora_modules",
                &[Enum(LORA_MODULES), Enum(LORA_MODULES), Enum(LORA_MODULES), Enum(LORA_MODULES)],
                "the linear layers that get adapters (needs `task lora`): linear_qkv, linear_proj, linear_fc1, linear_fc2",
            )
            .optional(3)
            .default(KeyDefault::Derived, "all four (Megatron-Bridge `LoRA.target_modules`)")
            .example("linear_qkv linear_proj")
            => lora_modules: ::venus_base::base::LoraTargets, words;
            Fsdp = key(
                "fsdp",
                &[Enum(FSDP_STRATEGIES), Enum(FSDP_IMPLS)],
                "fully sharded data parallelism: STRATEGY [megatron|torch]; optim_grads_params (ZeRO-3) shards parameters, gradients and optimizer state over dp, all-gathering each layer's parameters before its forward and backward",
            )
            .optional(1)
            .default(KeyDefault::Unset, "off (DDP)")
            .megatron("--data-parallel-sharding-strategy")
            .example("optim_grads_params")
            => fsdp: _, hand;
            /// FSDP keeps gathered parameters and unsharded gradients for the whole step
            /// (PyTorch FSDP2 under a pipeline schedule).
            FsdpKeepUnsharded = flag(
                "fsdp_keep_unsharded",
                "keep each layer's gathered parameters and accumulate its gradients unsharded, in the gradient dtype, across the step's microbatches; one reduce-scatter after the last backward (PyTorch FSDP2 under a pipeline schedule; needs an `fsdp` strategy that shards parameters)",
            )
            => fsdp_keep_unsharded: bool, flag, default(Off, "off");
            /// Main-gradient dtype (`None`: fp32, Megatron's default with `--bf16`).
            GradDtype = key(
                "grad_dtype",
                &[Enum(GRAD_DTYPES)],
                "main-gradient buffer and its data-parallel reduction: fp32 (Megatron's default with bf16) or bf16",
            )
            .megatron("--grad-reduce-in-bf16")
            .example("bf16")
            => grad_dtype: ::venus_base::base::Dtype, word, default(Word("fp32"), "fp32");
            /// Precision-aware optimizer dtypes (`None`: fp32 each).
            MainParamsDtype = key(
                "main_params_dtype",
                &[Enum(MAIN_PARAMS_DTYPES)],
                "the optimizer's master copy of the parameters (precision-aware optimizer; needs the distributed optimizer or fsdp)",
            )
            .megatron("--main-params-dtype")
            => main_params_dtype: ::venus_base::base::Dtype, word, default(Word("fp32"), "fp32");
            ExpAvgDtype = key(
                "exp_avg_dtype",
                &[Enum(MOMENT_DTYPES)],
                "Adam's first moment (precision-aware optimizer; needs the distributed optimizer or fsdp)",
            )
            .megatron("--exp-avg-dtype")
            .example("bf16")
            => exp_avg_dtype: ::venus_base::base::Dtype, word, default(Word("fp32"), "fp32");
            ExpAvgSqDtype = key(
                "exp_avg_sq_dtype",
                &[Enum(MOMENT_DTYPES)],
                "Adam's second moment (precision-aware optimizer; needs the distributed optimizer or fsdp)",
            )
            .megatron("--exp-avg-sq-dtype")
            .example("bf16")
            => exp_avg_sq_dtype: ::venus_base::base::Dtype, word, default(Word("fp32"), "fp32");
            /// The embedding counts as a layer in the pipeline split
            /// (`--account-for-embedding-in-pipeline-split`).
            AccountForEmbedding = flag(
                "account_for_embedding",
                "the embedding counts as one layer in the pipeline split (first chunk holds one layer fewer)",
            )
            .megatron("--account-for-embedding-in-pipeline-split")
            => account_for_embedding: bool, flag, default(Off, "off");
            /// The loss counts as a layer in the pipeline split
            /// (`--account-for-loss-in-pipeline-split`).
            AccountForLoss = flag(
                "account_for_loss",
                "the loss (output layer) counts as one layer in the pipeline split (last chunk holds one layer fewer)",
            )
            .megatron("--account-for-loss-in-pipeline-split")
            => account_for_loss: bool, flag, default(Off, "off");
            PipelineLayout = key(
                "pipeline_layout",
                &[Str],
                "layers of each virtual pipeline stage in order: E embedding, t layer, m MTP, L loss, | next stage, (...)*N repeat",
            )
            .default(KeyDefault::Derived, "split by pp, vpp and the stage keys")
            .megatron("--pipeline-model-parallel-layout")
            .example("\"Et|(tt|)*30L\"")
            => pipeline_layout: _, hand;
            /// Training time between two checkpoints; `None`: the Young/Daly optimum.
            CheckpointInterval = key(
                "checkpoint_interval",
                &[Time],
                "training time between two checkpoints; unset: the Young/Daly optimum for the cluster's failure rates",
            )
            .default(KeyDefault::Derived, "the Young/Daly optimum")
            .megatron("--save-interval")
            .example("30min")
            => checkpoint_interval: ::venus_base::base::Seconds, time;
            Venussim = key(
                "venussim",
                &[Str, Str],
                "a VenusSim config field venusc does not model, as `SECTION.FIELD` and its JSON value: no effect on the simulation, written back by `--emit venussim` (`import` keeps every such field this way)",
            )
            .default(KeyDefault::Unset, "none")
            .repeatable()
            .example("\"time_line_visualizer_config.single_pp_group\" \"1\"")
            => venussim: _, hand;
            /// The submodules `recompute selective` re-runs (`None`: Megatron's `core_attn`).
            RecomputeModules = key(
                "recompute_modules",
                &[
                    Enum(RECOMPUTE_MODULES),
                    Enum(RECOMPUTE_MODULES),
                    Enum(RECOMPUTE_MODULES),
                    Enum(RECOMPUTE_MODULES),
                    Enum(RECOMPUTE_MODULES),
                    Enum(RECOMPUTE_MODULES),
                    Enum(RECOMPUTE_MODULES),
                ],
                "the submodules `recompute selective` re-runs in the backward, each dropping the tensors it saves: core_attn, mlp, moe_act, layernorm, mla_up_proj, moe (its dispatch all-to-all too), shared_experts",
            )
            .optional(6)
            .default(KeyDefault::Derived, "core_attn (Megatron's default)")
            .megatron("--recompute-modules")
            .example("core_attn mlp")
            => recompute_modules: ::venus_base::base::RecomputeModules, words;
            /// Which layers `recompute full` re-runs (`None`: `uniform`).
            RecomputeMethod = key(
                "recompute_method",
                &[Enum(RECOMPUTE_METHODS)],
                "which layers `recompute full` re-runs: uniform checkpoints each group of `recompute_num_layers` layers at its input; block recomputes the first `recompute_num_layers` layers of each model chunk",
            )
            .megatron("--recompute-method")
            .example("block")
            => recompute_method: ::venus_base::base::RecomputeMethod, word, default(Word("uniform"), "uniform");
            /// Layers per `uniform` group or recomputed per chunk with `block` (`None`: 1).
            RecomputeNumLayers = key(
                "recompute_num_layers",
                &[Count],
                "layers per recompute group (`uniform`) or recomputed layers per model chunk (`block`) of `recompute full`",
            )
            .default(KeyDefault::Count(1), "1")
            .megatron("--recompute-num-layers")
            .example("4")
            => recompute_num_layers: u64, count;
            /// FP8 weights without a BF16 copy, all-gathered in FP8 (`--fp8-param-gather`).
            Fp8ParamGather = flag(
                "fp8_param_gather",
                "keep the FP8 weights instead of a BF16 copy and all-gather them at 1 byte an element (needs `precision fp8` and the distributed optimizer or fsdp)",
            )
            .megatron("--fp8-param-gather")
            => fp8_param_gather: bool, flag, default(Off, "off");
            /// Expert tensor-parallel size as written (`None`: = tp, arguments.py:587-588).
            Etp = key(
                "etp",
                &[Count],
                "expert tensor-parallel size: the tensor parallelism of the routed experts (parallel folding: MoE layers run on etp × ep × expert dp, attention on tp × cp × dp)",
            )
            .default(KeyDefault::Derived, "= tp")
            .unit("GPUs")
            .megatron("--expert-tensor-parallel-size")
            .example("1")
            => etp: u64, count;
            MoeDispatcher = key(
                "moe_dispatcher",
                &[Enum(MOE_DISPATCHERS), Enum(FLEX_BACKENDS)],
                "MoE token dispatcher: alltoall (all-to-all over ep), allgather (every token all-gathered over etp × ep, the output reduce-scattered back) or flex [deepep|hybridep] (fused kernels over etp × ep)",
            )
            .optional(1)
            .default(KeyDefault::Word("alltoall"), "alltoall")
            .megatron("--moe-token-dispatcher-type")
            .example("flex deepep")
            => moe_dispatcher: _, hand;
            /// Context-parallel exchange (`None`: p2p).
            CpComm = key(
                "cp_comm",
                &[Enum(CP_COMMS), Count],
                "context-parallel attention exchange: p2p (K/V ring overlapped with attention), a2a (Ulysses all-to-all of Q, K, V and the output), allgather (K/V all-gathered before attention) or a2a_p2p A (a2a inside groups of A ranks, a p2p ring between them)",
            )
            .optional(1)
            .megatron("--cp-comm-type")
            .example("a2a_p2p 2")
            => cp_comm: ::venus_base::base::CpComm, word, default(Word("p2p"), "p2p");
            /// CUDA graph capture (`cuda_graphs`' first word; `None`: none).
            CudaGraphs = key(
                "cuda_graphs",
                &[
                    Enum(CUDA_GRAPH_IMPLS),
                    Enum(CUDA_GRAPH_MODULES),
                    Enum(CUDA_GRAPH_MODULES),
                    Enum(CUDA_GRAPH_MODULES),
                    Enum(CUDA_GRAPH_MODULES),
                    Enum(CUDA_GRAPH_MODULES),
                    Enum(CUDA_GRAPH_MODULES),
                ],
                "CUDA graph capture: none, local or transformer_engine (per-layer graphs of the parts named after it: attn, mlp, moe, moe_router, moe_preprocess, mamba; none named: the whole layer) or full_iteration (one graph for forward and backward); captured kernels skip the host launch cost, per-layer graphs keep static buffers",
            )
            .optional(6)
            .megatron("--cuda-graph-impl")
            .example("transformer_engine attn moe_router")
            => cuda_graphs: ::venus_base::base::CudaGraphImpl, word, default(Word("none"), "none");
            /// Fine-grained activation offloading's modules (`None`: no offloading).
            OffloadModules = key(
                "offload_modules",
                &[
                    Enum(OFFLOAD_MODULES),
                    Enum(OFFLOAD_MODULES),
                    Enum(OFFLOAD_MODULES),
                    Enum(OFFLOAD_MODULES),
                    Enum(OFFLOAD_MODULES),
                    Enum(OFFLOAD_MODULES),
                    Enum(OFFLOAD_MODULES),
                    Enum(OFFLOAD_MODULES),
                ],
                "fine-grained activation offloading: the submodules whose saved inputs are copied to host memory after their forward and back before their backward, on copy streams beside compute: attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act, fused_group_mlp",
            )
            .optional(7)
            .default(KeyDefault::Unset, "none offloaded")
            .megatron("--offload-modules")
            .example("core_attn attn_proj expert_fc1")
            => offload_modules: ::venus_base::base::OffloadModules, words;
            /// The share of eligible offload groups offloaded (`None`: all).
            OffloadFraction = key(
                "offload_fraction",
                &[Ratio],
                "the share of the eligible offload groups of `offload_modules` offloaded, the first in forward order",
            )
            .default(KeyDefault::Unset, "100%")
            .megatron("--activation-offload-fraction")
            .example("50%")
            => offload_fraction: ::venus_base::base::Ratio, ratio;
            /// Layer-level CPU offloading's layer count (`None`: 0).
            OffloadLayers = key(
                "offload_layers",
                &[Count],
                "layer-level CPU offloading: the activations of this many layers are copied to host memory (Megatron's older `--cpu-offloading-num-layers`; no pipeline parallelism, no recompute)",
            )
            .zero_allowed()
            .megatron("--cpu-offloading-num-layers")
            .example("4")
            => offload_layers: u64, count, default(Count(0), "0");
            /// Fused permute/unpermute kernels (`--moe-permute-fusion`; `None`: off, Megatron's
            /// default).
            MoePermuteFusion = flag(
                "moe_permute_fusion",
                "fused permute and unpermute kernels around the MoE dispatch (Transformer Engine's)",
            )
            .megatron("--moe-permute-fusion")
            => moe_permute_fusion: bool, flag, default(Off, "off");
            /// FP8 scaling recipe (`None`: Megatron's `delayed`); read only with `precision fp8`.
            Fp8Recipe = key(
                "fp8_recipe",
                &[Enum(SCALING_RECIPES)],
                "FP8 scaling recipe with `precision fp8`: delayed (per-tensor amax history), tensorwise (per-tensor current amax), blockwise (1x128 and 128x128 blocks; Hopper or later, E0357) or mxfp8 (a scale per 32 elements; Blackwell, E0356); it sets the cast traffic around each FP8 GEMM",
            )
            .megatron("--fp8-recipe")
            .example("mxfp8")
            => fp8_recipe: ::venus_base::base::Fp8Recipe, word, default(Word("delayed"), "delayed");
            /// FP8 encoding (`None`: `hybrid`, what `--emit megatron` writes).
            Fp8Format = key(
                "fp8_format",
                &[Enum(FLOAT_FORMATS)],
                "FP8 encoding with `precision fp8`: hybrid (E4M3 forward, E5M2 gradients) or e4m3; both one byte an element",
            )
            .megatron("--fp8-format")
            => fp8_format: ::venus_base::base::Fp8Format, word, default(Word("hybrid"), "hybrid");
            /// FP8 dot-product attention (TransformerConfig `fp8_dot_product_attention`).
            Fp8Attention = flag(
                "fp8_attention",
                "run the attention core in FP8 (Transformer Engine's FP8 dot-product attention, TransformerConfig `fp8_dot_product_attention`) at the GPU's `fp8_peak`; needs `precision fp8` or `fp4` and Hopper or later (E0358)",
            )
            => fp8_attention: bool, flag;
            /// Share of the optimizer state kept in host memory (`--optimizer-offload-fraction`
            /// with `--optimizer-cpu-offload`; `None`: none).
            OptimizerOffload = key(
                "optimizer_offload",
                &[Ratio],
                "share of the optimizer state and fp32 master weights kept in host memory (Megatron's hybrid CPU-GPU optimizer; needs the distributed optimizer or fsdp): the GPU's optimizer memory drops by it, and each step moves its gradients to the host and its updated parameters back over PCIe",
            )
            .default(KeyDefault::Unset, "0%: all optimizer state on the GPU")
            .megatron("--optimizer-offload-fraction")
            .example("50%")
            => optimizer_offload: ::venus_base::base::Ratio, ratio;
            /// Fused router kernels (`--moe-router-fusion`; `None`: off, Megatron's default).
            MoeRouterFusion = flag(
                "moe_router_fusion",
                "fused router kernels around the MoE router GEMM (Transformer Engine's): scoring, top-k, expert bias and group limit in one kernel, the balance loss's scores and loss in two",
            )
            .megatron("--moe-router-fusion")
            => moe_router_fusion: bool, flag, default(Off, "off");
            AllowPlan = allow_key()
            => allow: _, hand;
        }
    };
}
