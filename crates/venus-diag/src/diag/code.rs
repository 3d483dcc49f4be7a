//! The registry of diagnostic codes: stable identifiers, default severity, a title and the
//! long explanation printed by `venusc explain` (one Markdown file per code in `codes/`).

use std::fmt;

macro_rules! codes {
    ($($name:ident $sev:ident $title:literal;)*) => {
        /// A stable diagnostic code (`E0301`). Once released a code keeps its meaning.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Code { $($name,)* }

        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$name,)*];
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$name => stringify!($name),)* }
            }
            pub fn severity(self) -> super::Severity {
                match self { $(Code::$name => super::Severity::$sev,)* }
            }
            /// A short title for listings.
            pub fn title(self) -> &'static str {
                match self { $(Code::$name => $title,)* }
            }
            /// The Markdown explanation with a wrong and a right example.
            pub fn explanation(self) -> &'static str {
                match self { $(Code::$name => include_str!(concat!("codes/", stringify!($name), ".md")),)* }
            }
        }
    };
}

codes! {
    E0001 Error "unexpected token or malformed input";
    E0002 Error "unclosed block or list";
    E0003 Error "malformed number or quantity";
    E0101 Error "unknown key for this block kind";
    E0102 Error "duplicate key in a block";
    E0103 Error "missing required key";
    E0104 Error "unknown reference";
    E0105 Error "inheritance cycle";
    E0106 Error "duplicate definition of a name in one file";
    E0107 Error "`use` of a file that cannot be read or parsed";
    E0108 Error "no scenario to run, or several and none chosen";
    E0109 Error "`use` of a file outside the project root";
    E0201 Error "wrong dimension or kind of value";
    E0202 Error "value out of range";
    E0203 Error "wrong number of arguments for a key";
    E0204 Error "unknown enum word";
    E0301 Error "parallel sizes do not match the cluster's GPU count";
    E0302 Error "layers not divisible across pipeline stages";
    E0303 Error "attention heads not divisible by tp";
    E0304 Error "kv_groups neither a multiple nor a divisor of tp";
    E0305 Error "global_batch not divisible by micro_batch x dp";
    E0306 Error "interleaved schedule: bad microbatch count";
    E0307 Error "vpp > 1 needs pp > 2, or pp = 2 with overlap_p2p";
    E0308 Error "seq not divisible for context or sequence parallelism";
    E0309 Error "expert parallelism does not fit the model";
    E0310 Error "optimizer flags out of order";
    E0311 Error "schedule and plan disagree";
    E0312 Error "precision the GPU has no tensor cores for";
    E0313 Error "the job's GPU count is not a whole number of trays or domain shares";
    E0314 Error "the job's share of an NVLink domain does not fit the domain";
    E0315 Error "mixture-of-experts keys do not fit";
    E0316 Error "heads not divisible by kv_groups";
    E0317 Error "hidden not divisible by heads without head_dim";
    E0318 Error "multi-head latent attention keys do not fit";
    E0319 Error "LoRA keys without `task lora`";
    E0320 Error "an FSDP implementation Megatron-LM rejects for the plan";
    E0321 Error "precision-aware optimizer dtypes without the distributed optimizer";
    E0325 Error "a zero-bubble schedule needs pipeline parallelism";
    E0326 Error "a zero-bubble schedule with a feature its reference does not support";
    E0327 Error "a zero-bubble schedule with too few microbatches for its warmup";
    E0328 Error "a DualPipe schedule on a pipeline its step loop does not run on";
    E0329 Error "a DualPipe schedule with a microbatch count its reference rejects";
    E0330 Error "a DualPipe schedule with model chunks it does not place";
    E0353 Error "a zbv schedule on layers that do not split into two chunks per stage";
    E0354 Error "a zbv schedule with a vpp other than its two chunks";
    E0322 Error "a `pipeline_layout` that does not parse";
    E0323 Error "a `pipeline_layout` that does not fit the model or the plan";
    E0324 Error "a `pipeline_layout` symbol where Megatron-LM does not allow it";
    E0337 Error "a slow rank or node outside the cluster";
    E0338 Error "a straggler at 0% speed";
    E0355 Error "a `venussim` field venusc cannot keep";
    E0335 Error "a zero mean time between failures or checkpoint interval";
    E0336 Error "goodput inputs that do not give a goodput estimate";
    E0331 Error "a hybrid pattern whose length is not the model's layers";
    E0332 Error "a hybrid pattern symbol Megatron-LM does not know";
    E0333 Error "model keys that do not fit the hybrid pattern";
    E0334 Error "Mamba-2 heads or groups that do not split";
    E0339 Error "a recompute key that refines a granularity the plan does not use";
    E0340 Error "a recompute module Megatron-LM rejects for the model";
    E0341 Error "`fp8_param_gather` without FP8 or a sharded optimizer";
    E0369 Error "`fsdp_keep_unsharded` without an `fsdp` strategy that shards parameters";
    E0342 Error "an expert tensor-parallel size the experts or the expert grid do not admit";
    E0343 Error "a MoE token dispatcher Megatron-LM does not run on this plan";
    E0344 Error "attention heads that a2a context parallelism cannot scatter";
    E0345 Error "hierarchical context-parallel sizes that do not give cp";
    E0346 Error "`optimizer_offload` without the distributed optimizer";
    E0349 Error "sliding-window keys that window no layer";
    E0350 Error "expert-capacity keys without experts or without a capacity";
    E0359 Error "`cuda_graphs` modules that do not fit the capture or the model";
    E0360 Error "CUDA graphs with a plan feature they cannot capture";
    E0361 Error "activation offloading Megatron-LM rejects for the plan";
    E0364 Error "`topk_groups` above `routed_groups`, or without it";
    E0365 Error "routed-expert groups that do not split the experts";
    E0366 Error "`moe_layer_freq` that leaves no layer with experts";
    E0356 Error "an MXFP8 or NVFP4 recipe on a GPU before Blackwell";
    E0357 Error "FP8 block scaling on a GPU before Hopper";
    E0358 Error "FP8 attention on a GPU before Hopper";
    E0401 Error "a pipeline stage does not fit in GPU memory";
    E0501 Error "an `expect` check fails";
    E0601 Error "the simulation is over its size budget";
    E0602 Error "simulated time exceeds the engine's range (213 days)";
    E0603 Error "`--timeline` output over its size budget";
    E0604 Error "a `sweep --merge` shard claims what its sweep does not give";
    E0605 Error "an imported value that the `.venus` file cannot hold";
    E0606 Error "a trace directory that cannot be replayed";
    E0607 Error "a file of another tool's format is malformed";
    E0608 Error "a flag Megatron-LM does not have";
    E0609 Error "a Megatron-LM command line venusc cannot read";
    E0610 Error "Megatron-LM flags that do not give one scenario";
    E0620 Error "a plan validation accepted that the simulator could not run";
    E0621 Error "a sweep with no simulated plan has no best plan to write";
    E0622 Error "a measurement that does not fit the scenario it calibrates";
    E0626 Error "a runs table with no measured run on the scenario's GPU arch";
    E0701 Error "an input is not a regular file";
    E0702 Error "an input file is larger than its cap";
    E0703 Error "an input file cannot be read";
    E0704 Error "an output file cannot be written";
    E0705 Error "an output would overwrite an input of the same command";
    E0706 Error "a trace file is malformed";
    E0707 Error "a malformed language-server message";
    E0708 Error "a generated scenario id is not a safe file name, or is repeated";
    E0709 Error "a directory cannot be read";
    E0713 Error "a sweep objective needs a `train` budget the scenario does not state";
    W0001 Warning "a tp, cp or ep group spans a slower, outer dim";
    W0002 Warning "bandwidth written in bits";
    W0003 Warning "pipeline bubble above 25% of the iteration";
    W0004 Warning "definition never used";
    W0005 Warning "stage memory above 90% of GPU memory";
    W0006 Warning "`sp` with tp = 1 has no effect";
    W0007 Warning "GPU arch without a compute-model calibration";
    W0008 Warning "`gpus` spread evenly takes more NVLink domains than it needs";
    W0009 Warning "GPU memory written in decimal bytes";
    W0012 Warning "Megatron-LM flags venusc does not model";
    W0013 Warning "a value the Megatron-LM flags do not state was assumed";
    W0014 Warning "a zero-bubble schedule below the microbatch count its reference asserts";
    W0017 Warning "a checkpoint interval that costs goodput against the Young/Daly optimum";
    W0018 Warning "a `slow_gpus` fraction that picks no GPU";
    W0015 Warning "`overlap_ep_comm` where Megatron-LM's combined 1F1B does not run";
    W0019 Warning "a recompute module with nothing to recompute in the model";
    W0020 Warning "an `etp`, `moe_dispatcher` or `cp_comm` key that changes nothing on this plan";
    W0022 Warning "a sliding window that covers the whole sequence";
    W0024 Warning "an offload key that offloads nothing";
    W0025 Warning "`overlap_p2p` where the interleaved schedule does not run";
    W0023 Warning "an FP8 key that the plan's precision never reads";
}

impl Code {
    /// Codes of file, trace-reader and language-server I/O (E07xx): raised by the command
    /// line or the server about files and streams, never by the text of a `.venus` file, so
    /// their explanations show commands rather than `.venus` examples.
    pub fn is_io(self) -> bool {
        self.as_str().starts_with("E07")
    }

    /// Parses `E0301` (case-insensitive, optional leading `E`/`W` required).
    pub fn parse(text: &str) -> Option<Code> {
        let up = text.trim().to_ascii_uppercase();
        Code::ALL.iter().copied().find(|c| c.as_str() == up)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
