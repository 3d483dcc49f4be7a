//! A published run → `.venus` text: the model, a stdlib cluster grown to the run's GPU count
//! and the plan, with every value the source does not state filled by one rule per source.
//!
//! Input: a [`Row`]. Output: [`Built`] (the `.venus` text and the assumptions made) or a
//! [`Skip`] saying why the row cannot be simulated. Invariant: no per-row choices — every
//! default below is a function of the source and the row's own columns, and each is written
//! into the generated file as a comment so a reader can see it.

use super::imported::{self, Block, Columns, Gemm, Imported, RecomputeColumn};
use super::split;
use super::tsv::Row;
use crate::syntax::schema::Key;
use std::fmt::Write as _;

/// Where a row comes from; decides its FLOP convention and the defaults for unstated values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// Narayanan et al. SC21, Table 1.
    Sc21Table1,
    /// Narayanan et al. SC21, Table 2 and §5.1 text.
    Sc21Other,
    /// Megatron-LM README H100 table (July 2024).
    MegatronReadme,
    /// MegaScale (NSDI'24), Table 2 Megatron-LM baseline.
    MegaScale,
    /// NeMo 24.07 performance summary (FP8).
    Nemo2407,
    /// Megatron-Bridge performance summaries.
    Bridge,
    /// Megatron-Core DeepSeek-V3 GB200 notes.
    McoreDsv3,
    /// MLPerf Training results (NVIDIA NeMo and partners' submissions).
    Mlperf,
    /// torchtitan benchmarks (FSDP2, not Megatron).
    Torchtitan,
}

impl Source {
    pub fn of(row: &Row) -> Source {
        let id = row.id.as_str();
        if id.starts_with("sc21_t1_") {
            Source::Sc21Table1
        } else if id.starts_with("sc21_") {
            Source::Sc21Other
        } else if id.starts_with("mlm_") {
            Source::MegatronReadme
        } else if id.starts_with("megascale_") {
            Source::MegaScale
        } else if id.starts_with("nemo") {
            Source::Nemo2407
        } else if id.starts_with("mcore_") {
            Source::McoreDsv3
        } else if id.starts_with("mlperf") {
            Source::Mlperf
        } else if row.framework == "torchtitan" {
            Source::Torchtitan
        } else {
            Source::Bridge
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Source::Sc21Table1 => "SC21 Table 1",
            Source::Sc21Other => "SC21 Table 2 / text",
            Source::MegatronReadme => "Megatron-LM README (H100)",
            Source::MegaScale => "MegaScale Table 2 (Megatron-LM)",
            Source::Nemo2407 => "NeMo 24.07 (FP8)",
            Source::Bridge => "Megatron-Bridge",
            Source::McoreDsv3 => "Megatron-Core DeepSeek-V3",
            Source::Mlperf => "MLPerf Training",
            Source::Torchtitan => "torchtitan",
        }
    }

    /// Whether the source's Megatron-LM has sequence parallelism, the distributed optimizer
    /// and overlapped gradient reduction / parameter gather (all added in 2022-2023; SC21 is
    /// 2021). Used only where the row does not say.
    fn modern(self) -> bool {
        !matches!(self, Source::Sc21Table1 | Source::Sc21Other)
    }

    /// Whether an interleaved run of the source dispatches each chunk's parameter all-gather
    /// ahead of the chunk's first forward (venusc's `delay_param_gather`, Megatron's
    /// `align_param_gather`). Megatron-LM made that the default on 2024-08-23 (commit
    /// 4e3840535b, `--no-align-param-gather`, arguments.py:3152 at d98e8a64): so for the
    /// Megatron-Bridge and Megatron-Core DeepSeek-V3 runs, not for the Megatron-LM README
    /// (July 2024), MegaScale or NeMo 24.07 rows. NVIDIA's MLPerf GPT-3 submissions run NeMo with
    /// `OVERLAP_PARAM_SYNC=True`, which NeMo documents as chunked per virtual stage so that
    /// it "exposes only one DP communication chunk" (NeMo performance guide, communication
    /// overlap).
    fn aligns_param_gather(self) -> bool {
        matches!(self, Source::Bridge | Source::McoreDsv3 | Source::Mlperf)
    }
}

/// Why a row is not simulated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skip(pub String);

/// A row turned into a scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Built {
    pub source: Source,
    pub venus: String,
    /// Values the source does not state, as `key value (rule)`.
    pub assumed: Vec<String>,
    /// GEMMs below BF16 (`precision fp8` or `fp4`): outside the acceptance set.
    pub precision_fp8: bool,
    pub moe: bool,
}

/// A stdlib GPU on the stdlib cluster a row's hardware is written as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hardware {
    pub gpu: &'static str,
    pub cluster: &'static str,
    /// Whether the cluster's own GPU is another one (`cluster c : dgx_h100 < gpu h100_96g >`).
    pub gpu_override: bool,
    /// GPUs per node: the unit `nodes N` counts.
    pub per_node: u64,
    /// GPUs per NVLink domain (1: no NVLink), as RUNS.md's `nvlink_domain`.
    pub nvlink_domain: u64,
    /// Scale-out Gb/s per GPU, one direction, as RUNS.md's `nic_gbps` (the cluster's `ib` dim).
    pub nic_gbps: f64,
}

const fn hw(gpu: &'static str, cluster: &'static str, per_node: u64, nic_gbps: f64) -> Hardware {
    Hardware {
        gpu,
        cluster,
        gpu_override: false,
        per_node,
        nvlink_domain: per_node,
        nic_gbps,
    }
}

// The figures of `stdlib/clusters.venus` (its comments cite them).
const DGX_A100: Hardware = hw("a100_80g", "dgx_a100", 8, 200.0);
const DGX_H100: Hardware = hw("h100_sxm", "dgx_h100", 8, 400.0);
/// Grand Teton's H100 96GB with "400 Gb/s RDMA per GPU": the DGX H100 network.
const H100_96G: Hardware = Hardware {
    gpu: "h100_96g",
    gpu_override: true,
    ..DGX_H100
};
const DGX_H200: Hardware = hw("h200", "dgx_h200", 8, 400.0);
const HGX_H800: Hardware = hw("h800", "hgx_h800", 8, 400.0);
const DGX_B200: Hardware = hw("b200", "dgx_b200", 8, 400.0);
const DGX_B300: Hardware = hw("b300", "dgx_b300", 8, 800.0);
/// Four L40S per PCIe server: no NVLink.
const L40S_SERVER: Hardware = Hardware {
    nvlink_domain: 1,
    ..hw("l40s", "l40s_server", 4, 200.0)
};
const MI300X_NODE: Hardware = hw("mi300x", "mi300x_node", 8, 400.0);

/// The stdlib hardware of a row: the GPU family from the `gpu` text, the variant from
/// `gpu_memory_gib` where a family has two (H100 80GB / 96GB), and a row whose
/// `nvlink_domain` or `nic_gbps` the cluster cannot give is skipped with the reason.
pub fn hardware_of(row: &Row) -> Result<Hardware, Skip> {
    let g = row.gpu.to_ascii_uppercase();
    let memory_96 = row.gpu_memory_gib.map_or(g.contains("96GB"), |m| m == 96.0);
    let hardware = if g.starts_with("A100") || g.contains("AMPERE") {
        DGX_A100
    } else if g.starts_with("H100") && memory_96 {
        H100_96G
    } else if g.starts_with("H100") {
        DGX_H100
    } else if g.starts_with("H200") {
        DGX_H200
    } else if g.starts_with("H800") {
        HGX_H800
    } else if g.starts_with("B200") {
        DGX_B200
    } else if g.starts_with("B300") {
        DGX_B300
    } else if g.contains("L40S") {
        L40S_SERVER
    } else if g.contains("MI300X") {
        MI300X_NODE
    } else {
        return Err(Skip(format!("no stdlib GPU for `{}`", row.gpu)));
    };
    if let Some(d) = row.nvlink_domain.filter(|&d| d > hardware.nvlink_domain) {
        return Err(Skip(format!(
            "nvlink_domain {d} is larger than `{}`'s {}",
            hardware.cluster, hardware.nvlink_domain
        )));
    }
    if let Some(nic) = row.nic_gbps.filter(|&n| n != hardware.nic_gbps) {
        return Err(Skip(format!(
            "nic_gbps {nic} is not `{}`'s {} Gb/s per GPU",
            hardware.cluster, hardware.nic_gbps
        )));
    }
    Ok(hardware)
}

/// The stdlib rack-scale cluster of a GPU description: GB200 and GB300 NVL72 racks, where a job
/// takes any multiple of the 4-GPU tray rather than whole 72-GPU racks.
fn rack_cluster_of(gpu: &str) -> Option<&'static str> {
    let g = gpu.to_ascii_uppercase();
    if g.starts_with("GB300") {
        Some("gb300_nvl72")
    } else if g.starts_with("GB200") {
        Some("gb200_nvl72")
    } else {
        None
    }
}

/// The GPUs of an NVL72 compute tray, the unit a job is given (`tray 4` in the stdlib).
const NVL72_TRAY: u64 = 4;
/// The GPUs of an NVL72 rack's NVLink domain.
const NVL72_DOMAIN: u64 = 72;

/// The cluster items of a job of `gpus` GPUs on NVL72 racks: `gpus N`, and `per_domain M` when
/// the row says the job uses a smaller NVLink domain than the rack that divides the job
/// (`nvlink_domain 32`); otherwise venusc spreads the job evenly (`gpus 512`: 8 racks of 64).
fn rack_items(gpus: u64, nvlink_domain: Option<u64>) -> Result<String, Skip> {
    if !gpus.is_multiple_of(NVL72_TRAY) {
        return Err(Skip(format!(
            "{gpus} GPUs is not a whole number of {NVL72_TRAY}-GPU NVL72 trays"
        )));
    }
    Ok(match nvlink_domain {
        Some(d)
            if d < NVL72_DOMAIN
                && d < gpus
                && d.is_multiple_of(NVL72_TRAY)
                && gpus.is_multiple_of(d) =>
        {
            format!("gpus {gpus} per_domain {d}")
        }
        _ => format!("gpus {gpus}"),
    })
}

/// The `cluster` line of a row: a rack-scale cluster sized by `gpus`, or a stdlib node
/// cluster grown by `nodes` (with its GPU replaced where the row's is a variant).
fn cluster_line(row: &Row, gpus: u64) -> Result<String, Skip> {
    if let Some(cluster) = rack_cluster_of(&row.gpu) {
        let items = rack_items(gpus, row.nvlink_domain)?;
        return Ok(format!("cluster c : {cluster} < {items} >"));
    }
    let hardware = hardware_of(row)?;
    let (cluster, per_node) = (hardware.cluster, hardware.per_node);
    if !gpus.is_multiple_of(per_node) {
        return Err(Skip(format!(
            "{gpus} GPUs is not a whole number of {per_node}-GPU `{cluster}` nodes"
        )));
    }
    let nodes = gpus / per_node;
    Ok(if hardware.gpu_override {
        format!(
            "cluster c : {cluster} < gpu {} nodes {nodes} >",
            hardware.gpu
        )
    } else {
        format!("cluster c : {cluster} < nodes {nodes} >")
    })
}
/// The vocabulary of a model the table names without a `vocab` cell, from its public card.
fn model_card_vocab(model: &str) -> Option<(u64, &'static str)> {
    if model.starts_with("GPT-OSS-120B") {
        // openai/gpt-oss-120b config.json: vocabulary 201,088 (o200k_harmony).
        Some((201_088, "the gpt-oss tokenizer's vocabulary"))
    } else if model.starts_with("Nemotron") {
        // NVIDIA's Nemotron-H and Nemotron 3 models share one 131,072-token vocabulary
        // (nvidia/Nemotron-H-8B-Base-8K config.json `vocab_size`; Megatron-Bridge's
        // NemotronH config tests assert 131072).
        Some((NEMOTRON_VOCAB, "the Nemotron tokenizer's vocabulary"))
    } else {
        None
    }
}

/// Models the table names whose architecture a stdlib model spells out (multi-head latent
/// attention, fine-grained MoE, shared experts, dense first layers, MTP) and its columns do not:
/// the row's model inherits the stdlib one and overrides what the row states. With the stdlib
/// model's vocabulary (`stdlib/models.venus`), for a row that leaves it blank.
fn stdlib_model(model: &str) -> Option<(&'static str, u64)> {
    const MODELS: &[(&str, &str, u64)] = &[
        ("DeepSeek-V3", "deepseek_v3", 129_280),
        ("Qwen3-235B-A22B", "qwen3_235b_a22b", 151_936),
        ("Qwen3-30B-A3B", "qwen3_30b_a3b", 151_936),
        ("Kimi-K2", "kimi_k2", 163_840),
        // Its sliding-window layers and attention sinks are the stdlib model's, not columns.
        ("GPT-OSS-120B", "gpt_oss_120b", 201_088),
    ];
    MODELS
        .iter()
        .find(|(prefix, _, _)| model.starts_with(prefix))
        .map(|&(_, name, vocab)| (name, vocab))
}

fn need(v: Option<u64>, what: &str) -> Result<u64, Skip> {
    v.filter(|&x| x > 0)
        .ok_or_else(|| Skip(format!("{what} not stated")))
}

/// The smallest divisor of `n` greater than 1 (n itself when prime; 1 when n ≤ 1).
fn smallest_divisor(n: u64) -> u64 {
    (2..=n).find(|d| n.is_multiple_of(*d)).unwrap_or(1)
}

/// The stdlib cluster name a row's `cluster` line derives from (for the importer's header).
fn cluster_name(row: &Row) -> &'static str {
    rack_cluster_of(&row.gpu)
        .or_else(|| hardware_of(row).ok().map(|h| h.cluster))
        .unwrap_or(crate::emit::megatron::DEFAULT_CLUSTER)
}

/// Builds the scenario of a row: its columns and `megatron_args` through the Megatron-LM
/// importer ([`imported`]), then the source's rules on the imported model and plan.
pub fn build(row: &Row) -> Result<Built, Skip> {
    let source = Source::of(row);
    if rack_cluster_of(&row.gpu).is_none() {
        hardware_of(row)?;
    }
    let layers = need(row.layers, "layers")?;
    let hidden = need(row.hidden, "hidden")?;
    let heads = need(row.heads, "heads")?;
    let seq = need(row.seq, "seq_len")?;
    let gbs = need(row.global_batch, "global_batch")?;
    let gpus = need(row.num_gpus, "num_gpus")?;
    let mut assumed = Vec::new();
    let (tp, pp) = match (row.tp, row.pp) {
        (Some(t), Some(p)) if t > 0 && p > 0 => (t, p),
        _ => sc21_table2_split(row, source, gpus, layers, &mut assumed)?,
    };
    let stdlib = stdlib_model(&row.model);
    let cluster = cluster_line(row, gpus)?;
    let vocab = vocab_of(row, source, stdlib, &mut assumed)?;
    let cp = row.cp.filter(|&c| c > 0).unwrap_or(1);
    let ep = row.ep.filter(|&e| e > 0).unwrap_or(1);
    let vpp = vpp_of(row, source, layers, pp, &mut assumed);
    let mb = match row.micro_batch {
        Some(m) if m > 0 => bridge_recipe_micro_batch(row, source, [gbs, gpus, tp, pp, cp, ep, m])
            .map_or(m, |(fixed, recipe)| {
                assumed.push(format!(
                    "micro_batch {fixed} (the table's {m} contradicts its own global batch, \
                     data-parallel size and gradient accumulation; the row's Megatron-Bridge \
                     recipe: {recipe})"
                ));
                fixed
            }),
        _ => match torchtitan_micro_batch(row, gbs, gpus, tp, pp, cp) {
            Some((m, microbatches)) => {
                assumed.push(format!(
                    "micro_batch {m} (unstated; torchtitan splits the local batch into \
                     {microbatches} microbatches, one per pipeline rank: \
                     torchtitan/parallelisms/pipelining_utils.py `build_pipeline_schedule`)"
                ));
                m
            }
            None => {
                assumed.push("micro_batch 1 (unstated; SC21 Table 2 uses 1)".into());
                1
            }
        },
    };
    let columns = Columns {
        layers,
        hidden,
        heads,
        seq,
        vocab,
        ffn: row.ffn.filter(|&f| f > 0),
        kv_groups: row.kv_groups.filter(|&g| g > 0),
        global_batch: gbs,
        micro_batch: mb,
        tp,
        pp,
        vpp,
        cp,
        ep,
        sp: sp_of(row, source, tp, &mut assumed),
        recompute: recompute_of(row, source, &mut assumed),
        distributed_optimizer: distributed_optimizer_of(row, source, &mut assumed),
        gemm: gemm_of(row),
    };
    let mut imported = imported::import(row, &columns, cluster_name(row), gpus).map_err(Skip)?;
    if row.model.contains("MoE") && !imported.model.has(Key::Experts) && stdlib.is_none() {
        return Err(Skip(
            "MoE architecture not stated: no `--num-experts` in `megatron_args`, and no stdlib model of that name"
                .into(),
        ));
    }
    let model = &mut imported.model;
    if let Some((name, _)) = stdlib {
        mtp_rules(row, source, name, model, &mut assumed);
        // Megatron's `--moe-shared-expert-intermediate-size` is the shared experts' whole width
        // (megatron/core/transformer/moe/shared_experts.py:127 at d98e8a64: one MLP of that size);
        // the stdlib model counts them as `shared_experts N` of `moe_ffn` each, which venusc
        // adds to it, so the imported width replaces the stdlib count.
        if model.has(Key::SharedExpertFfn) {
            model.set(Key::SharedExperts, 0);
        }
    }
    if stdlib.is_none() {
        llama_family_rule(row, hidden, model, &mut assumed);
    }
    let untied = model.has(Key::UntiedEmbeddings);
    let plan = &mut imported.plan;
    fsdp_rules(row, pp, ep, untied, plan, &mut assumed);
    optimizer_rules(source, vpp, plan, &mut assumed);
    tp_overlap_rule(plan, &mut assumed);
    let mtp = u64::from(
        stdlib.is_some_and(|(n, _)| n == "deepseek_v3")
            && !row.model.contains("w/o MTP")
            && source != Source::McoreDsv3,
    );
    split::pipeline_rules(
        row,
        split::Sizes {
            layers,
            pp,
            vpp,
            mtp,
        },
        plan,
        &mut assumed,
    );
    task_rules(row, plan, &mut assumed);
    bridge_benchmark_grads(row, source, plan, &mut assumed);
    nemo2407_grad_sync_dtype(row, source, plan, &mut assumed);
    torchtitan_cp_exchange(source, plan, &mut assumed);
    torchtitan_attention(source, plan, &mut assumed);
    torchtitan_memory(source, plan, &mut assumed);
    bridge_fp8_param_gather(row, source, plan, &mut assumed);
    bridge_nemotron3_etp(row, source, plan, &mut assumed);
    bridge_moe_dispatcher(row, source, plan, &mut assumed);
    bridge_ep_overlap(row, source, plan, &mut assumed);
    if let Some(recipe) = bridge_recipe_recompute(row, source).filter(|_| row.recompute.is_empty())
    {
        plan.set(Key::RecomputeModules, recipe.modules);
    }
    if !source.modern() {
        // FlashAttention appeared in 2022; SC21's Megatron-LM ran QKᵀ and ·V as batched GEMMs
        // with a fused scale-mask-softmax over the full scores.
        plan.set(Key::Attention, "unfused");
        assumed.push(
            "attention unfused (the era's default: SC21's 2021 Megatron-LM predates FlashAttention, 2022; QKᵀ and ·V as batched GEMMs, a fused scale-mask-softmax over the full scores: Megatron-LM 182841f7 megatron/model/transformer.py ParallelAttention)"
                .into(),
        );
    }
    let low = plan.value(Key::Precision).is_some_and(|p| p != "bf16");
    let moe = imported.model.has(Key::Experts) || stdlib.is_some();
    let venus = write_scenario(
        row,
        source,
        gpus,
        stdlib.map(|s| s.0),
        &imported,
        &cluster,
        &assumed,
    );
    Ok(Built {
        source,
        venus,
        assumed,
        precision_fp8: low,
        moe,
    })
}

/// The `.venus` text: the assumptions and unmodelled flags as comments, the imported model
/// (inheriting a stdlib model where the row names one), the cluster and the plan.
fn write_scenario(
    row: &Row,
    source: Source,
    gpus: u64,
    stdlib: Option<&str>,
    imported: &Imported,
    cluster: &str,
    assumed: &[String],
) -> String {
    let mut v = String::new();
    let _ = writeln!(v, "# {} — {} ({})", row.id, row.model, source.name());
    let _ = writeln!(
        v,
        "# published {} {} on {gpus} GPUs",
        row.metric,
        row.value.unwrap_or(0.0)
    );
    for a in assumed {
        let _ = writeln!(v, "# assumed: {a}");
    }
    for flag in &imported.not_modelled {
        let _ = writeln!(v, "# not modelled (W0012): {flag}");
    }
    match stdlib {
        Some(name) => {
            let _ = writeln!(v, "model m : {name} <");
        }
        None => {
            let _ = writeln!(v, "model m <");
        }
    }
    for l in imported.model.lines() {
        let _ = writeln!(v, "  {l}");
    }
    let _ = writeln!(v, ">\n");
    let _ = writeln!(v, "{cluster}\n");
    let _ = writeln!(v, "plan p <");
    for l in imported.plan.lines() {
        let _ = writeln!(v, "  {l}");
    }
    let _ = writeln!(v, ">");
    v
}

/// The row's vocabulary: its column, else one rule per model or source.
fn vocab_of(
    row: &Row,
    source: Source,
    stdlib: Option<(&str, u64)>,
    assumed: &mut Vec<String>,
) -> Result<u64, Skip> {
    if let Some(v) = row.vocab.filter(|&v| v > 0) {
        return Ok(v);
    }
    if let Some((v, why)) = model_card_vocab(&row.model) {
        assumed.push(format!("vocab {v} (unstated; {why})"));
        return Ok(v);
    }
    if let Some((name, v)) = stdlib {
        assumed.push(format!("vocab {v} (unstated; the stdlib `{name}`'s)"));
        return Ok(v);
    }
    if source == Source::Mlperf && row.model.starts_with("GPT-3") {
        // https://github.com/mlcommons/training/blob/master/large_language_model/megatron-lm/README.md §3: the GPT-2
        // BPE files give "the vocab size (value is 50257)"; the paxml reference's
        // pass-through vocabulary has the same size. Megatron pads it (128 × tp).
        assumed.push(format!(
            "vocab {MLPERF_GPT3_VOCAB} (unstated; the MLPerf GPT-3 reference's vocab size)"
        ));
        return Ok(MLPERF_GPT3_VOCAB);
    }
    Err(Skip("vocab not stated".into()))
}

/// A Megatron-Bridge recipe whose micro-batch settles a row the table prints inconsistently:
/// the row's model, GPU, table release and the recipe's parallel sizes and global batch (all
/// of which the row must share), with the recipe's micro-batch.
struct RecipeMicroBatch {
    model: &'static str,
    gpu: &'static str,
    release: &'static str,
    /// tp, pp, ep, global batch.
    sizes: [u64; 4],
    micro_batch: u64,
    recipe: &'static str,
}

/// GPT-OSS 120B on H100 in the 25.11 archive table prints micro-batch 4 and gradient
/// accumulation 2 over 16 data-parallel ranks, which is 128 sequences, not the global batch
/// of 512 it prints; its recipe (`GPT_OSS_120B_H100_BF16_BASE_CONFIG`, Megatron-Bridge v0.2.0,
/// the 25.11 release, scripts/performance/configs/gpt_oss/workload_base_configs.py) keeps the
/// base config's micro-batch 1 with pp 4, ep 8 and global batch 512, as the row, which makes
/// the 512 whole. (The B200 row beside it prints micro-batch 4 and accumulation 2 over 64
/// ranks, consistent, and its recipe sets micro-batch 4.)
const RECIPE_MICRO_BATCH: &[RecipeMicroBatch] = &[RecipeMicroBatch {
    model: "GPT-OSS-120B",
    gpu: "H100",
    release: "25.11",
    sizes: [1, 4, 8, 512],
    micro_batch: 1,
    recipe: "scripts/performance/configs/gpt_oss/workload_base_configs.py GPT_OSS_120B_H100_BF16_BASE_CONFIG",
}];

/// The recipe's micro-batch for a Megatron-Bridge row whose stated micro-batch contradicts its
/// global batch (global ≠ dp × micro × the notes' `GA n`), when [`RECIPE_MICRO_BATCH`] has
/// the row's recipe. `numbers`: global batch, GPUs, tp, pp, cp, ep and the stated micro-batch.
fn bridge_recipe_micro_batch(
    row: &Row,
    source: Source,
    numbers: [u64; 7],
) -> Option<(u64, &'static str)> {
    let [gbs, gpus, tp, pp, cp, ep, mb] = numbers;
    if !bridge_recipe_row(row, source) {
        return None;
    }
    let accumulation = gradient_accumulation_of(&row.notes)?;
    let dp = gpus.checked_div(tp.checked_mul(pp)?.checked_mul(cp)?)?;
    let consistent = dp.checked_mul(mb).and_then(|s| s.checked_mul(accumulation)) == Some(gbs);
    if consistent {
        return None;
    }
    let gpu = row.gpu.to_ascii_uppercase();
    RECIPE_MICRO_BATCH
        .iter()
        .find(|r| {
            row.model.starts_with(r.model)
                && gpu.starts_with(r.gpu)
                && row.source.contains(r.release)
                && r.sizes == [tp, pp, ep, gbs]
        })
        .map(|r| (r.micro_batch, r.recipe))
}

/// The gradient accumulation a row's notes state (`GA n`).
fn gradient_accumulation_of(notes: &str) -> Option<u64> {
    let at = notes.find("GA ")?;
    let before = notes[..at].chars().next_back();
    if before.is_some_and(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let digits: String = notes[at + 3..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok().filter(|&n| n > 0)
}

/// A pipelined torchtitan row's micro-batch, its table stating only the local batch: torchtitan
/// 9dec370 `build_pipeline_schedule` (torchtitan/parallelisms/pipelining_utils.py:79-81) runs
/// `pipeline_parallel_microbatches` microbatches, by default `pipeline_parallel_degree`: one
/// per pipeline rank, whatever the stages per rank (an interleaved run too). The local batch is
/// the global batch over the data-parallel ranks; `None` when the row does not pipeline or the
/// local batch does not split evenly. Returns (micro-batch, microbatches).
fn torchtitan_micro_batch(
    row: &Row,
    gbs: u64,
    gpus: u64,
    tp: u64,
    pp: u64,
    cp: u64,
) -> Option<(u64, u64)> {
    if pp <= 1 || !split::is_torchtitan(row) {
        return None;
    }
    let model_parallel = tp.checked_mul(pp)?.checked_mul(cp)?;
    let dp = gpus.checked_div(model_parallel).filter(|&d| d > 0)?;
    let local = gbs.checked_div(dp).filter(|&l| l > 0 && l * dp == gbs)?;
    let microbatches = pp;
    let mb = local.checked_div(microbatches).filter(|&m| m > 0)?;
    (mb * microbatches == local).then_some((mb, microbatches))
}

/// The virtual stages per rank: the column, else the source's rule.
fn vpp_of(row: &Row, source: Source, layers: u64, pp: u64, assumed: &mut Vec<String>) -> u64 {
    match (row.vpp, source) {
        (Some(v), _) if v > 0 => v,
        // SC21's Megatron-LM refused the interleaved schedule at pp 2 (NVIDIA/Megatron-LM
        // 182841f7 megatron/arguments.py: "pipeline-model-parallel size should be greater
        // than 2 with interleaved schedule", 2021-03-20; `--overlap-p2p-communication` came
        // in 2023), so a pp-2 Table 1 run was not interleaved.
        (_, Source::Sc21Table1) if pp == 2 => {
            assumed.push(
                "vpp 1 (SC21's Megatron-LM allowed interleaving only with pp > 2: Megatron-LM 182841f7 megatron/arguments.py)"
                    .into(),
            );
            1
        }
        _ if pp > 1 && split::is_torchtitan(row) && split::torchtitan_interleaved(row) => {
            let v = split::TORCHTITAN_STAGES_PER_RANK;
            assumed.push(format!(
                "vpp {v} (torchtitan's interleaved schedules build 2 stages per rank without split points: torchtitan/parallelisms/pipelining_utils.py)"
            ));
            v
        }
        (_, Source::Sc21Table1) if pp > 1 => {
            // SC21 §5: every Table 1 run uses the interleaved schedule, v unstated.
            let v = smallest_divisor(layers / pp);
            assumed.push(format!(
                "vpp {v} (interleaved per SC21 §5, v unstated: smallest divisor > 1 of layers per stage)"
            ));
            v
        }
        _ => 1,
    }
}

/// Sequence parallelism: the column, else on for a source after 2022 at tp > 1.
fn sp_of(row: &Row, source: Source, tp: u64, assumed: &mut Vec<String>) -> bool {
    match row.seq_parallel.as_str() {
        "yes" => tp > 1,
        "no" => false,
        _ => {
            let on = tp > 1 && source.modern();
            if tp > 1 {
                assumed.push(format!(
                    "sp {} (unstated; {})",
                    if on { "on" } else { "off" },
                    if on {
                        "Megatron since 2022, and required by TP comm overlap"
                    } else {
                        "not in Megatron-LM yet"
                    }
                ));
            }
            on
        }
    }
}

/// The recompute column (`megatron_args`' `--recompute-granularity`, read by the importer
/// after it, wins where the row states both).
fn recompute_of(row: &Row, source: Source, assumed: &mut Vec<String>) -> RecomputeColumn {
    if row.recompute.starts_with("full") {
        RecomputeColumn::Full
    } else if row.recompute.starts_with("selective") {
        RecomputeColumn::Selective
    } else if let Some(recipe) =
        bridge_recipe_recompute(row, source).filter(|_| row.recompute.is_empty())
    {
        assumed.push(format!(
            "recompute selective, recompute_modules {} (unstated; the row's Megatron-Bridge recipe: {})",
            recipe.modules, recipe.recipe
        ));
        RecomputeColumn::Selective
    } else if row.recompute.is_empty() && source.modern() {
        // Megatron-Core runs flash attention (no s × s scores kept, which the memory model
        // follows), so an unstated recompute is taken as none.
        assumed.push("recompute none (unstated; flash attention keeps no scores)".into());
        RecomputeColumn::None
    } else {
        if row.recompute.is_empty() {
            assumed.push("recompute none (unstated)".into());
        }
        RecomputeColumn::None
    }
}

/// The rows of the published table a Megatron-Bridge performance recipe covers: the release
/// the row's source names (`None`: any), the model's name, the GPUs' and the table's
/// precisions.
struct RecipeRows {
    release: Option<&'static str>,
    model: &'static str,
    gpus: &'static [&'static str],
    precisions: &'static [&'static str],
}

impl RecipeRows {
    fn covers(&self, row: &Row) -> bool {
        let gpu = row.gpu.to_ascii_uppercase();
        let precision = row.precision.to_ascii_lowercase();
        self.release.is_none_or(|r| row.source.contains(r))
            && row.model.starts_with(self.model)
            && self.gpus.iter().any(|g| gpu.starts_with(g))
            && self.precisions.contains(&precision.as_str())
    }
}

/// A Megatron-Bridge performance recipe that sets `recompute_modules`: the rows it covers (the
/// model's name, the GPU's, the table's precisions) and the modules it names.
struct RecipeRecompute {
    rows: RecipeRows,
    modules: &'static str,
    /// The recipe's file and workload config, for the row's note.
    recipe: &'static str,
}

/// The performance recipes that set recompute modules, each cited by file, commit and config:
/// - Nemotron 3 Super on GB200 in BF16 or MXFP8 (`BASE_NEMOTRON_3_SUPER_CONFIG_GB200`; its
///   NVFP4 config is the base one, without) and Nemotron 3 Nano on H100 in FP8
///   (`NEMOTRON_3_NANO_PRETRAIN_CONFIG_H100_FP8_CS_V1`), Megatron-Bridge @06e8da4e;
/// - DeepSeek-V3 on GB200 in BF16 (`DEEPSEEK_V3_GB200_BF16_BASE_CONFIG`: `mla_up_proj`) and on
///   H100 (`DEEPSEEK_V3_H100_BASE_CONFIG`, which its BF16 and FP8 configs are: `mla_up_proj`,
///   `mlp`), Megatron-Bridge v0.2.0 (7af9601c, the 25.11 release)
///   scripts/performance/configs/deepseek/workload_base_configs.py;
/// - GPT-OSS 120B on H100 (`GPT_OSS_120B_H100_BF16_BASE_CONFIG`: `layernorm`, `moe_act`), the
///   same release's scripts/performance/configs/gpt_oss/workload_base_configs.py.
const RECIPE_RECOMPUTE: &[RecipeRecompute] = &[
    RecipeRecompute {
        rows: RecipeRows {
            release: None,
            model: "Nemotron-3-Super",
            gpus: &["GB200"],
            precisions: &["bf16", "mxfp8"],
        },
        modules: "moe_act layernorm core_attn moe",
        recipe: NEMOTRON3_RECIPES,
    },
    RecipeRecompute {
        rows: RecipeRows {
            release: None,
            model: "Nemotron-3-Nano",
            gpus: &["H100"],
            precisions: &["fp8"],
        },
        modules: "moe layernorm core_attn moe_act",
        recipe: NEMOTRON3_RECIPES,
    },
    RecipeRecompute {
        rows: RecipeRows {
            release: None,
            model: "DeepSeek-V3",
            gpus: &["GB200"],
            precisions: &["bf16"],
        },
        modules: "mla_up_proj",
        recipe: "scripts/performance/configs/deepseek/workload_base_configs.py DEEPSEEK_V3_GB200_BF16_BASE_CONFIG",
    },
    RecipeRecompute {
        rows: RecipeRows {
            release: None,
            model: "DeepSeek-V3",
            gpus: &["H100"],
            precisions: &["bf16", "fp8"],
        },
        modules: "mla_up_proj mlp",
        recipe: "scripts/performance/configs/deepseek/workload_base_configs.py DEEPSEEK_V3_H100_BASE_CONFIG",
    },
    RecipeRecompute {
        rows: RecipeRows {
            release: None,
            model: "GPT-OSS-120B",
            gpus: &["H100"],
            precisions: &["bf16", "fp8"],
        },
        modules: "layernorm moe_act",
        recipe: "scripts/performance/configs/gpt_oss/workload_base_configs.py GPT_OSS_120B_H100_BF16_BASE_CONFIG",
    },
];

const NEMOTRON3_RECIPES: &str =
    "scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py";

/// The recipe of [`RECIPE_RECOMPUTE`] a Megatron-Bridge row runs, when one sets its recompute
/// modules.
fn bridge_recipe_recompute(row: &Row, source: Source) -> Option<&'static RecipeRecompute> {
    if !bridge_recipe_row(row, source) {
        return None;
    }
    RECIPE_RECOMPUTE.iter().find(|r| r.rows.covers(row))
}

/// Whether a row is one of Megatron-Bridge's performance-summary runs, whose recipes the
/// `RECIPE_*` tables reproduce.
fn bridge_recipe_row(row: &Row, source: Source) -> bool {
    source == Source::Bridge && row.source.contains("Megatron-Bridge")
}

/// A Megatron-Bridge performance recipe that runs the flex token dispatcher: the rows it
/// covers (the release the table names, the model's name, the GPUs', the table's precisions)
/// and the backend its workload config names.
struct RecipeDispatcher {
    rows: RecipeRows,
    backend: &'static str,
    /// The recipe's file and workload config, for the row's note.
    recipe: &'static str,
}

/// The recipes whose workload config names `moe_flex_dispatcher_backend`, by release. A
/// Megatron-Bridge MoE row none of them covers runs `alltoall`: every Bridge MoE model sets
/// `moe_token_dispatcher_type = "alltoall"` (v0.2.0 7af9601c
/// src/megatron/bridge/models/deepseek/deepseek_provider.py:76 and the GPT-OSS and Qwen
/// providers beside it; v0.5.0 fcbb6031 deepseek/deepseek_v3_bridge.py:69, gpt_oss, kimi,
/// qwen3_moe, nemotron_h bridges), and the performance scripts set `alltoall` where the config
/// names no backend (v0.4.0 0fbfe7d3 and v0.5.0 scripts/performance/utils/overrides.py
/// `set_workload_base_configs`). Megatron-LM's own default, `allgather`, is never what they run.
/// A named backend takes effect through `apply_flex_dispatcher_backend`
/// (src/megatron/bridge/training/flex_dispatcher_backend.py): at v0.2.0 HybridEP only on GB200
/// and GB300, DeepEP only on Ampere, Hopper, B200 and B300; from v0.4.0 HybridEP on every
/// compute capability 8, 9 or 10 GPU. Each entry below is on a GPU its release allows. The
/// row's config is its release's default variant (`V2` where there is one, else `V1`:
/// scripts/performance/argument_parser.py `--config_variant`), which the row's sizes match.
/// The 25.09 DeepSeek-V3 H100 run predates the workload configs: run_script.py enables DeepEP
/// on H100 (v0.1.0rc4 6725f704 scripts/performance/run_script.py:56).
const RECIPE_DISPATCHER: &[RecipeDispatcher] = &[
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("25.09"),
            model: "DeepSeek-V3",
            gpus: &["H100"],
            precisions: &["bf16", "fp8"],
        },
        backend: "deepep",
        recipe: "v0.1.0rc4 scripts/performance/run_script.py:56 `enable_deepep` on h100",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("25.11"),
            model: "DeepSeek-V3",
            gpus: &["GB200", "GB300"],
            precisions: &["bf16"],
        },
        backend: "hybridep",
        recipe: "v0.2.0 scripts/performance/configs/deepseek/workload_base_configs.py DEEPSEEK_V3_GB200_BASE_CONFIG, DEEPSEEK_V3_GB300_BASE_CONFIG",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("25.11"),
            model: "Qwen3-235B-A22B",
            gpus: &["GB200", "GB300"],
            precisions: &["bf16"],
        },
        backend: "hybridep",
        recipe: "v0.2.0 scripts/performance/configs/qwen3/workload_base_configs.py QWEN3_235B_A22B_GB200_BF16_BASE_CONFIG, QWEN3_235B_A22B_GB300_BF16_BASE_CONFIG",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("26.04.01"),
            model: "GPT-OSS-120B",
            gpus: &["GB200", "B300", "B200"],
            precisions: &["bf16"],
        },
        backend: "hybridep",
        recipe: "v0.4.0 scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_{GB200,B300,B200}_BF16_V2 (its GB300 and H100 configs name none)",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "DeepSeek-V3",
            gpus: &["GB200", "GB300", "B300"],
            precisions: &["mxfp8"],
        },
        backend: "hybridep",
        recipe: "v0.5.0 scripts/performance/configs/deepseek/deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_*_FP8_MX_V2, _GB300_FP8_MX_GBS15360",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "GPT-OSS-120B",
            gpus: &["GB200", "GB300", "B300"],
            precisions: &["mxfp8"],
        },
        backend: "hybridep",
        recipe: "v0.5.0 scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_*_FP8_MX_V2",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "Qwen3-235B-A22B",
            gpus: &["GB200", "GB300"],
            precisions: &["mxfp8"],
        },
        backend: "hybridep",
        recipe: "v0.5.0 scripts/performance/configs/qwen/qwen3_workload_base_configs.py QWEN3_235B_A22B_PRETRAIN_CONFIG_*_FP8_MX_V2",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "Qwen3-30B-A3B",
            gpus: &["GB200", "GB300", "B300", "H100"],
            precisions: &["mxfp8", "fp8"],
        },
        backend: "hybridep",
        recipe: "v0.5.0 scripts/performance/configs/qwen/qwen3_workload_base_configs.py QWEN3_30B_A3B_PRETRAIN_CONFIG_*_FP8_MX_V1, _H100_FP8_CS_V1",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "Kimi-K2",
            gpus: &["GB300"],
            precisions: &["mxfp8"],
        },
        backend: "hybridep",
        recipe: "v0.5.0 scripts/performance/configs/kimi/kimi_workload_base_configs.py KIMI_K2_PRETRAIN_CONFIG_GB300_FP8_MX",
    },
    RecipeDispatcher {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "Nemotron-3-",
            gpus: &["GB200", "GB300", "B300", "H100"],
            precisions: &["mxfp8", "nvfp4", "fp8"],
        },
        backend: "hybridep",
        recipe: "v0.5.0 scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py NEMOTRON_3_NANO_PRETRAIN_CONFIG_*_V1, NEMOTRON_3_SUPER_PRETRAIN_CONFIG_*_V1",
    },
];

/// The token dispatcher a Megatron-Bridge MoE row runs when its flags do not name one: its
/// recipe's flex backend from [`RECIPE_DISPATCHER`], else Bridge's `alltoall`. The row's own
/// `--moe-token-dispatcher-type` wins.
fn bridge_moe_dispatcher(row: &Row, source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    let applies = bridge_recipe_row(row, source)
        && plan.has(Key::MoeDispatcher)
        && !row.megatron_args.contains("--moe-token-dispatcher-type");
    if !applies {
        return;
    }
    let recipe = RECIPE_DISPATCHER.iter().find(|r| r.rows.covers(row));
    match recipe {
        Some(r) => {
            plan.set(Key::MoeDispatcher, format!("flex {}", r.backend));
            assumed.push(format!(
                "moe_dispatcher flex {} (unstated; the row's Megatron-Bridge recipe: {})",
                r.backend, r.recipe
            ));
        }
        None => {
            plan.set(Key::MoeDispatcher, "alltoall");
            assumed.push(
                "moe_dispatcher alltoall (unstated; Megatron-Bridge's MoE models set alltoall, and its performance recipe names no flex backend for this model, GPU and precision)"
                    .into(),
            );
        }
    }
}

/// A Megatron-Bridge performance recipe that overlaps the expert all-to-alls with another
/// microbatch's compute (`moe_a2a_overlap=True` in its workload config, which
/// scripts/performance/utils/overrides.py `_set_moe_a2a_overlap_overrides` turns into
/// `overlap_moe_expert_parallel_comm` and `delay_wgrad_compute`): the rows it covers.
struct RecipeEpOverlap {
    rows: RecipeRows,
    recipe: &'static str,
}

/// The recipes of the table's MoE rows that set `moe_a2a_overlap` (the configs of
/// [`RECIPE_DISPATCHER`], same tags); the 25.09 DeepSeek-V3 H100 run sets the flags directly
/// (v0.1.0rc4 scripts/performance/run_script.py:79-83, `A2A_1F1B` on h100). No 25.11 row's
/// config sets it.
const RECIPE_EP_OVERLAP: &[RecipeEpOverlap] = &[
    RecipeEpOverlap {
        rows: RecipeRows {
            release: Some("25.09"),
            model: "DeepSeek-V3",
            gpus: &["H100"],
            precisions: &["bf16", "fp8"],
        },
        recipe: "v0.1.0rc4 scripts/performance/run_script.py:79 `A2A_1F1B` on h100",
    },
    RecipeEpOverlap {
        rows: RecipeRows {
            release: Some("26.04.01"),
            model: "GPT-OSS-120B",
            gpus: &["GB200"],
            precisions: &["bf16"],
        },
        recipe: "v0.4.0 scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_GB200_BF16_V2",
    },
    RecipeEpOverlap {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "DeepSeek-V3",
            gpus: &["GB200", "GB300"],
            precisions: &["mxfp8"],
        },
        recipe: "v0.5.0 scripts/performance/configs/deepseek/deepseek_workload_base_configs.py DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_FP8_MX_V2, _GB300_FP8_MX_V2, _GB300_FP8_MX_GBS15360",
    },
    RecipeEpOverlap {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "GPT-OSS-120B",
            gpus: &["GB200", "GB300"],
            precisions: &["mxfp8"],
        },
        recipe: "v0.5.0 scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py GPT_OSS_120B_PRETRAIN_CONFIG_GB200_FP8_MX_V2, _GB300_FP8_MX_V2",
    },
    RecipeEpOverlap {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "Qwen3-235B-A22B",
            gpus: &["GB200", "GB300"],
            precisions: &["mxfp8"],
        },
        recipe: "v0.5.0 scripts/performance/configs/qwen/qwen3_workload_base_configs.py QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200_FP8_MX_V2, _GB300_FP8_MX_V2",
    },
    RecipeEpOverlap {
        rows: RecipeRows {
            release: Some("26.06"),
            model: "Qwen3-30B-A3B",
            gpus: &["GB200", "GB300", "B300"],
            precisions: &["mxfp8"],
        },
        recipe: "v0.5.0 scripts/performance/configs/qwen/qwen3_workload_base_configs.py QWEN3_30B_A3B_PRETRAIN_CONFIG_{GB200,GB300,B300}_FP8_MX_V1",
    },
];

/// `overlap_ep_comm` on a Megatron-Bridge MoE row whose recipe sets `moe_a2a_overlap`
/// ([`RECIPE_EP_OVERLAP`]) and whose flags do not say.
fn bridge_ep_overlap(row: &Row, source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    let applies = bridge_recipe_row(row, source)
        && plan.has(Key::MoeDispatcher)
        && !plan.has(Key::OverlapEpComm)
        && !row
            .megatron_args
            .contains("--overlap-moe-expert-parallel-comm");
    let recipe = RECIPE_EP_OVERLAP.iter().find(|r| r.rows.covers(row));
    if let Some(r) = recipe.filter(|_| applies) {
        plan.set_flag(Key::OverlapEpComm);
        assumed.push(format!(
            "overlap_ep_comm (unstated; the row's Megatron-Bridge recipe sets moe_a2a_overlap: {})",
            r.recipe
        ));
    }
}

/// Megatron-Bridge's Nemotron 3 performance recipes set `expert_tensor_parallel_size=1`
/// (`BASE_NEMOTRON_3_NANO_CONFIG` and `BASE_NEMOTRON_3_SUPER_CONFIG`, Megatron-Bridge @06e8da4e
/// scripts/performance/configs/nemotronh/nemotron_3_workload_base_configs.py), which the table's
/// tp does not change; Megatron's own default would be etp = tp (arguments.py,
/// `expert_tensor_parallel_size`).
fn bridge_nemotron3_etp(row: &Row, source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    let applies = bridge_recipe_row(row, source)
        && row.model.starts_with("Nemotron-3-")
        && !plan.has(Key::Etp);
    if applies {
        plan.set(Key::Etp, 1);
        assumed.push(
            "etp 1 (unstated; Megatron-Bridge's Nemotron 3 recipes set expert_tensor_parallel_size=1)"
                .into(),
        );
    }
}

/// The distributed optimizer: the column, else on for a source after 2022. An FSDP row's is
/// settled by [`fsdp_rules`].
fn distributed_optimizer_of(row: &Row, source: Source, assumed: &mut Vec<String>) -> bool {
    match row.dist_optimizer.as_str() {
        s if s.to_ascii_uppercase().starts_with("FSDP") => false,
        s if s.starts_with("yes") => true,
        "no" => false,
        _ => {
            let on = source.modern();
            assumed.push(format!(
                "distributed_optimizer{} (unstated)",
                if on {
                    " overlap_grad_reduce overlap_param_gather"
                } else {
                    " off"
                }
            ));
            on
        }
    }
}

/// The GEMM precision: the v2 `precision` column where there is one, else the notes of v1.
fn gemm_of(row: &Row) -> Gemm {
    match row.precision.as_str() {
        "" => {
            let fp8 = row.notes.to_ascii_uppercase().contains("FP8 PRECISION")
                || row.notes.starts_with("precision FP8")
                || row.notes.starts_with("FP8");
            if fp8 {
                Gemm::Fp8
            } else {
                Gemm::Bf16
            }
        }
        "fp16" => Gemm::Fp16,
        "fp8" => Gemm::Fp8,
        "fp8_blockwise" => Gemm::Fp8Blockwise,
        "mxfp8" => Gemm::Mxfp8,
        "nvfp4" => Gemm::Nvfp4,
        _ => Gemm::Bf16,
    }
}

/// DeepSeek-V3's multi-token prediction: the Megatron-Core reproduce guide's launch script
/// (the row's `megatron_args`) sets no `--mtp-num-layers`, which is Megatron's default of
/// none; a row that says "w/o MTP" has none; otherwise the stdlib model's, as its report.
fn mtp_rules(row: &Row, source: Source, name: &str, model: &mut Block, assumed: &mut Vec<String>) {
    if model.has(Key::MtpLayers) {
        return;
    }
    if name == "deepseek_v3" && source == Source::McoreDsv3 {
        assumed.push("mtp_layers 0 (the launch script sets no `--mtp-num-layers`)".into());
        model.set(Key::MtpLayers, 0);
    } else if row.model.contains("w/o MTP") {
        model.set(Key::MtpLayers, 0);
    } else if name == "deepseek_v3" {
        assumed.push("mtp_layers 1 (the stdlib `deepseek_v3`, as its report; unstated)".into());
    }
}

/// A v1 row (no `megatron_args`) whose ffn is not 4h is a Llama-family model: SwiGLU and
/// separate embeddings (a v2 row states `--swiglu` and `--untie-embeddings-and-output-weights`).
fn llama_family_rule(row: &Row, hidden: u64, model: &mut Block, assumed: &mut Vec<String>) {
    let llama =
        row.megatron_args.trim().is_empty() && row.ffn.is_some_and(|f| f > 0 && f != 4 * hidden);
    if llama && !model.has(Key::Swiglu) {
        model.set_flag(Key::Swiglu);
        model.set_flag(Key::UntiedEmbeddings);
        assumed.push("swiglu untied_embeddings (a v1 row with ffn ≠ 4h: the Llama family)".into());
    }
}

/// A pipelined torchtitan row's FSDP2 keeps its units gathered and its gradients unsharded for
/// the step: `apply_fsdp` passes `reshard_after_forward=False` when pp > 1
/// (pytorch/torchtitan@9dec370 torchtitan/parallelisms/parallelize_llama.py) and the pipeline
/// stage defers resharding and gradient sync to the last backward (torch/distributed/
/// pipelining/stage.py `backward_maybe_with_nosync`); the memory model's `fsdp_keep_unsharded`.
fn torchtitan_pipelined_fsdp(row: &Row, pp: u64, plan: &mut Block, assumed: &mut Vec<String>) {
    let shards_parameters = plan
        .value(Key::Fsdp)
        .is_some_and(|v| v.starts_with("optim_grads_params"));
    if pp <= 1 || !split::is_torchtitan(row) || !shards_parameters {
        return;
    }
    if plan.has(Key::FsdpKeepUnsharded) {
        return;
    }
    plan.set_flag(Key::FsdpKeepUnsharded);
    assumed.push(
        "fsdp_keep_unsharded (torchtitan's FSDP2 under a pipeline: reshard_after_forward=False \
         and gradient sync deferred to the last backward, torchtitan/parallelisms/parallelize_llama.py \
         `apply_fsdp`)"
            .into(),
    );
}

/// FSDP: a `dist_optimizer` cell that says FSDP without an FSDP flag is Megatron-FSDP with
/// Megatron's default strategy (arguments.py `--data-parallel-sharding-strategy`);
/// `--use-torch-fsdp2` stays torch FSDP2 where Megatron's checks accept the plan (pp 1, ep 1,
/// untied embeddings, arguments.py:1031-1045); torchtitan composes FSDP2 with its own
/// pipeline, which Megatron's torch path rejects, so there Megatron-FSDP (the same ZeRO state,
/// per-layer units) stands in and the scenario says so. Megatron-FSDP runs its own distributed
/// optimizer (arguments.py:1128-1136).
fn fsdp_rules(
    row: &Row,
    pp: u64,
    ep: u64,
    untied: bool,
    plan: &mut Block,
    assumed: &mut Vec<String>,
) {
    if !plan.has(Key::Fsdp) && row.dist_optimizer.to_ascii_uppercase().starts_with("FSDP") {
        plan.set(Key::Fsdp, "optim_grads_params");
        assumed.push(
            "fsdp optim_grads_params (sharding strategy unstated; Megatron's default)".into(),
        );
    }
    let Some(value) = plan.value(Key::Fsdp).map(str::to_string) else {
        return;
    };
    if let Some(strategy) = value.strip_suffix(" torch") {
        if !(pp == 1 && ep == 1 && untied) {
            assumed.push(format!(
                "fsdp {strategy} megatron (the run's FSDP2 with pp {pp} / ep {ep} is outside \
                 Megatron's --use-torch-fsdp2; Megatron-FSDP shards the same state)"
            ));
            plan.set(Key::Fsdp, strategy);
        }
    }
    torchtitan_pipelined_fsdp(row, pp, plan, assumed);
    for key in [
        Key::DistributedOptimizer,
        Key::OverlapGradReduce,
        Key::OverlapParamGather,
    ] {
        plan.remove(key);
    }
}

/// The distributed optimizer of every source after SC21 overlaps its gradient reduce-scatter
/// and parameter all-gather (Megatron-Core's, NeMo's and Megatron-Bridge's performance
/// configs set both); an interleaved run of a source whose Megatron aligns the gather
/// ([`Source::aligns_param_gather`]) delays it to each chunk's first forward.
fn optimizer_rules(source: Source, vpp: u64, plan: &mut Block, assumed: &mut Vec<String>) {
    if !plan.has(Key::DistributedOptimizer) {
        return;
    }
    let stated = plan.has(Key::OverlapGradReduce) && plan.has(Key::OverlapParamGather);
    plan.set_flag(Key::OverlapGradReduce);
    plan.set_flag(Key::OverlapParamGather);
    if !stated
        && !assumed
            .iter()
            .any(|a| a.starts_with("distributed_optimizer"))
    {
        assumed.push(
            "overlap_grad_reduce overlap_param_gather (unstated; with the distributed optimizer)"
                .into(),
        );
    }
    if vpp > 1 && source.aligns_param_gather() {
        plan.set_flag(Key::DelayParamGather);
    }
}

/// Megatron's TP overlap needs sequence parallelism (arguments.py:1442, P02); a row that
/// states `--tp-comm-overlap` on a plan without it (tp 1, where NeMo turns the overlap off:
/// there is no TP communication) runs without the overlap.
fn tp_overlap_rule(plan: &mut Block, assumed: &mut Vec<String>) {
    if plan.has(Key::OverlapTpComm) && !plan.has(Key::Sp) {
        plan.remove(Key::OverlapTpComm);
        assumed.push(
            "overlap_tp_comm off (stated, but the plan has no sp, which Megatron's TP overlap needs: arguments.py:1442)"
                .into(),
        );
    }
}

/// `task lora` (with the rank the notes state) or `task sft` from the `task` column.
fn task_rules(row: &Row, plan: &mut Block, assumed: &mut Vec<String>) {
    match row.task.as_str() {
        "lora" => {
            plan.set(Key::Task, "lora");
            match lora_rank_in(&row.notes) {
                Some(r) => plan.set(Key::LoraRank, r),
                None => assumed
                    .push("lora_rank 32 (unstated; Megatron-Bridge's `LoRA.dim` default)".into()),
            }
        }
        "sft" => plan.set(Key::Task, "sft"),
        _ => {}
    }
    if row.task == "lora" && Source::of(row) == Source::Mlperf {
        mlperf_lora_rules(row, plan, assumed);
    }
}

/// NVIDIA's MLPerf Llama 2 70B LoRA submissions (NeMo) put adapters on the attention only and,
/// in FP8, keep the frozen base weights in FP8: megatron_gpt_peft_tuning_config.yaml of
/// mlcommons/training_results_v4.0 NVIDIA/benchmarks/llama2_70b_lora/implementations/nemo sets
/// `target_modules: ['attention']` (NeMo's fused QKV and output projection) and
/// `fp8_params: ${FP8}` (Transformer Engine's FP8 weights, Megatron-LM's `--fp8-param-gather`).
fn mlperf_lora_rules(row: &Row, plan: &mut Block, assumed: &mut Vec<String>) {
    if !plan.has(Key::LoraModules) {
        plan.set(Key::LoraModules, "linear_qkv linear_proj");
        assumed.push(
            "lora_modules linear_qkv linear_proj (NVIDIA's MLPerf LoRA config: `target_modules: ['attention']`)"
                .into(),
        );
    }
    if row.precision.eq_ignore_ascii_case("fp8") && !plan.has(Key::Fp8ParamGather) {
        plan.set_flag(Key::Fp8ParamGather);
        assumed.push(
            "fp8_param_gather (NVIDIA's MLPerf LoRA config: `fp8_params: ${FP8}` keeps the frozen base in FP8)"
                .into(),
        );
    }
}

/// Whether a Megatron-Bridge performance-summary row ran with bf16 gradients, its flags not
/// saying: the performance recipes' `_benchmark_common` sets `grad_reduce_in_fp32 = False`
/// ("benchmark-mode default", src/megatron/bridge/perf_recipes/_common.py, Megatron-Bridge
/// @0191fc5e), except the Kimi K2 recipe, which sets it back to True (the same docstring).
fn bridge_benchmark_grads(row: &Row, source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    let applies = bridge_recipe_row(row, source)
        && !row.model.starts_with("Kimi-K2")
        && !plan.has(Key::GradDtype);
    if applies {
        assumed.push(
            "grad_dtype bf16 (unstated; Megatron-Bridge's performance recipes reduce gradients \
             in bf16)"
                .into(),
        );
        plan.set(Key::GradDtype, "bf16");
    }
}

/// Whether a NeMo 24.07 row ran with bf16 gradients, its flags not saying: the NeMo Framework
/// Launcher's Nemotron-4 340B training config sets `optim.grad_sync_dtype: bf16` under
/// `mcore_distributed_optim` (NVIDIA/NeMo-Framework-Launcher @3be81fc1
/// launcher_scripts/conf/training/nemotron/nemotron_340b.yaml), and NeMo's GPT model reduces in
/// fp32 only for `grad_sync_dtype == fp32` (`grad_reduce_in_fp32`, Megatron-LM's
/// `--grad-reduce-in-bf16` unset). Only the configs read are listed.
fn nemo2407_grad_sync_dtype(
    row: &Row,
    source: Source,
    plan: &mut Block,
    assumed: &mut Vec<String>,
) {
    const BF16_GRAD_SYNC: &[&str] = &["Nemotron-340B"];
    let applies = source == Source::Nemo2407
        && BF16_GRAD_SYNC.contains(&row.model.as_str())
        && !plan.has(Key::GradDtype);
    if applies {
        assumed.push(
            "grad_dtype bf16 (unstated; NeMo's launcher config for the model sets \
             `optim.grad_sync_dtype: bf16`)"
                .into(),
        );
        plan.set(Key::GradDtype, "bf16");
    }
}

/// torchtitan's context parallelism exchanges K/V with the rotate method its config defaults
/// to, `allgather`: every K/V shard all-gathered after the first sub-SDPA, not a ring
/// overlapped with attention (pytorch/torchtitan@9dec370 torchtitan/config_manager.py,
/// `--experimental.context_parallel_rotate_method` default `allgather`, passed to
/// `create_context_parallel_ctx` in train.py). The benchmark states no other, so every CP row
/// of the source runs it.
fn torchtitan_cp_exchange(source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    let cp = plan.value(Key::Cp).and_then(|v| v.parse::<u64>().ok());
    if source == Source::Torchtitan && cp.is_some_and(|c| c > 1) && !plan.has(Key::CpComm) {
        assumed.push(
            "cp_comm allgather (torchtitan's default context_parallel_rotate_method: \
             torchtitan/config_manager.py at 9dec370)"
                .into(),
        );
        plan.set(Key::CpComm, "allgather");
    }
}

/// torchtitan's Llama attends with PyTorch's `F.scaled_dot_product_attention`
/// (pytorch/torchtitan@9dec370 torchtitan/models/llama/model.py `Attention.forward`, causal),
/// whose flash backend is FlashAttention-2's kernels (PyTorch's
/// aten/src/ATen/native/transformers/cuda/flash_attn, flash-attn 2.x), not Transformer
/// Engine's cuDNN attention, which the Megatron rows run and `attention flash` is fitted to.
fn torchtitan_attention(source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    if source == Source::Torchtitan && !plan.has(Key::Attention) {
        assumed.push(
            "attention flash2 (torchtitan calls PyTorch's scaled_dot_product_attention, whose \
             flash backend is FlashAttention-2: torchtitan/models/llama/model.py at 9dec370)"
                .into(),
        );
        plan.set(Key::Attention, "flash2");
    }
}

/// torchtitan's own memory choices, which Megatron's flags in the row cannot say:
/// - its selective activation checkpointing is PyTorch's per-op policy (the rows' notes:
///   `selective_ac_option = "op"` in the llama3 train configs; pytorch/torchtitan@9dec370
///   torchtitan/parallelisms/parallelize_llama.py:214-276), `recompute op`, not Megatron's
///   core-attention recompute;
/// - its loss is `torch.nn.functional.cross_entropy` on fp32 logits (train.py:131-134 at
///   9dec370), `cross_entropy torch`;
/// - it pipelines with PyTorch's `torch.distributed.pipelining` (pipeline_llama.py at
///   9dec370), `pipeline_runtime torch`.
fn torchtitan_memory(source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    if source != Source::Torchtitan {
        return;
    }
    if plan.value(Key::Recompute) == Some("selective") {
        assumed.push(
            "recompute op (torchtitan's selective activation checkpointing is PyTorch's per-op \
             policy, selective_ac_option = \"op\": torchtitan/parallelisms/parallelize_llama.py \
             at 9dec370)"
                .into(),
        );
        plan.set(Key::Recompute, "op");
    }
    if !plan.has(Key::CrossEntropy) {
        assumed.push(
            "cross_entropy torch (torchtitan's loss is torch.nn.functional.cross_entropy on fp32 \
             logits: train.py at 9dec370)"
                .into(),
        );
        plan.set(Key::CrossEntropy, "torch");
    }
    let pipelined = plan.value(Key::Pp).and_then(|v| v.parse::<u64>().ok()) > Some(1);
    if pipelined && !plan.has(Key::PipelineRuntime) {
        assumed.push(
            "pipeline_runtime torch (torchtitan pipelines with torch.distributed.pipelining: \
             torchtitan/parallelisms/pipeline_llama.py at 9dec370)"
                .into(),
        );
        plan.set(Key::PipelineRuntime, "torch");
    }
}

/// Whether a Megatron-Bridge row of per-tensor FP8 keeps its linear weights in FP8, its flags
/// not saying: the performance scripts' `fp8_cs` precision is `bf16_with_fp8_current_scaling_mixed`
/// (scripts/performance/utils/precision.py), which sets `fp8_param_gather = True`
/// (src/megatron/bridge/training/mixed_precision.py, Megatron-Bridge @84fba284). The table's
/// `FP8` column is that recipe; its MXFP8 and NVFP4 rows, and a row whose notes name the
/// blockwise recipe (`bf16_with_fp8_subchannel_scaling_mixed`: `fp8_param_gather = False`),
/// keep bf16 weights.
fn bridge_fp8_param_gather(row: &Row, source: Source, plan: &mut Block, assumed: &mut Vec<String>) {
    let applies = bridge_recipe_row(row, source)
        && row.precision.eq_ignore_ascii_case("fp8")
        && !row.notes.contains("blockwise")
        && !plan.has(Key::Fp8ParamGather);
    if applies {
        assumed.push(
            "fp8_param_gather (unstated; Megatron-Bridge's per-tensor FP8 recipe gathers FP8 \
             parameters)"
                .into(),
        );
        plan.set_flag(Key::Fp8ParamGather);
    }
}

/// The rank a row's notes state as `LoRA rank N`.
fn lora_rank_in(notes: &str) -> Option<u64> {
    let at = notes.find("LoRA rank ")? + "LoRA rank ".len();
    let digits: String = notes[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|&r| r > 0)
}

/// The vocabulary of NVIDIA's Nemotron-H and Nemotron 3 tokenizer.
const NEMOTRON_VOCAB: u64 = 131_072;

/// The GPT-3 vocabulary of the MLPerf reference (GPT-2 BPE).
const MLPERF_GPT3_VOCAB: u64 = 50_257;

/// GPUs per server in SC21's Selene DGX A100 nodes.
const SC21_GPUS_PER_NODE: u64 = 8;

/// SC21 Table 2 states the data-parallel size but only the product t·p of the model-parallel
/// sizes. SC21 §3.3, Takeaway #1: "use tensor model parallelism up to degree g when using
/// g-GPU servers, and then pipeline model parallelism": tp = 8, pp = n / (dp · 8).
fn sc21_table2_split(
    row: &Row,
    source: Source,
    gpus: u64,
    layers: u64,
    assumed: &mut Vec<String>,
) -> Result<(u64, u64), Skip> {
    let dp = row.dp.filter(|&d| d > 0);
    let (Source::Sc21Other, Some(dp)) = (source, dp) else {
        return Err(Skip(if row.tp.is_none() {
            "tp not stated".into()
        } else {
            "pp not stated".into()
        }));
    };
    let model_parallel = gpus / dp;
    let tp = SC21_GPUS_PER_NODE;
    if !gpus.is_multiple_of(dp)
        || !model_parallel.is_multiple_of(tp)
        || !layers.is_multiple_of(model_parallel / tp)
    {
        return Err(Skip(format!(
            "tp not stated, and t·p = {model_parallel} has no split with t = {tp}"
        )));
    }
    let pp = model_parallel / tp;
    assumed.push(format!(
        "tp {tp} pp {pp} (Table 2 states t·p = {model_parallel}; SC21 §3.3: tp up to the GPUs per server)"
    ));
    Ok((tp, pp))
}
