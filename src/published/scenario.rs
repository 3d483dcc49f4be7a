//! A published run → `.venus` text: the model, a stdlib cluster grown to the run's GPU count
//! and the plan, with every value the source does not state filled by one rule per source.
//!
//! Input: a [`Row`]. Output: [`Built`] (the `.venus` text and the assumptions made) or a
//! [`Skip`] saying why the row cannot be simulated. Invariant: no per-row choices — every
//! default below is a function of the source and the row's own columns, and each is written
//! into the generated file as a comment so a reader can see it.

use super::split;
use super::tsv::Row;
use crate::syntax::schema as venusc_schema;
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

/// MoE architectures the table names but does not spell out in columns (the TSV has no
/// expert columns): from the public model cards its notes cite.
struct MoeArch {
    experts: u64,
    topk: u64,
    moe_ffn: u64,
    head_dim: u64,
    vocab: u64,
}

fn moe_arch(model: &str) -> Option<MoeArch> {
    if model.starts_with("GPT-OSS-120B") {
        // openai/gpt-oss-120b config.json: 128 experts, 4 per token, intermediate 2880,
        // head_dim 64, vocabulary 201,088 (o200k_harmony), SwiGLU experts.
        Some(MoeArch {
            experts: 128,
            topk: 4,
            moe_ffn: 2880,
            head_dim: 64,
            vocab: 201_088,
        })
    } else {
        None
    }
}

/// Models the table names whose architecture a stdlib model spells out (multi-head latent
/// attention, fine-grained MoE, shared experts, dense first layers, MTP) and its columns do not:
/// the row's model inherits the stdlib one and overrides the sizes the row states.
fn stdlib_model(model: &str) -> Option<&'static str> {
    const MODELS: &[(&str, &str)] = &[
        ("DeepSeek-V3", "deepseek_v3"),
        ("Qwen3-235B-A22B", "qwen3_235b_a22b"),
        ("Qwen3-30B-A3B", "qwen3_30b_a3b"),
        ("Kimi-K2", "kimi_k2"),
        // Its sliding-window layers and attention sinks are the stdlib model's, not columns.
        ("GPT-OSS-120B", "gpt_oss_120b"),
    ];
    MODELS
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map(|&(_, name)| name)
}

fn need(v: Option<u64>, what: &str) -> Result<u64, Skip> {
    v.filter(|&x| x > 0)
        .ok_or_else(|| Skip(format!("{what} not stated")))
}

/// The smallest divisor of `n` greater than 1 (n itself when prime; 1 when n ≤ 1).
fn smallest_divisor(n: u64) -> u64 {
    (2..=n).find(|d| n.is_multiple_of(*d)).unwrap_or(1)
}

/// Builds the scenario of a row.
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
    let moe = moe_arch(&row.model);
    let stdlib = stdlib_model(&row.model);
    let hybrid = hybrid_arch(row, heads, &mut assumed);
    if row.model.contains("MoE") && moe.is_none() && stdlib.is_none() && hybrid.is_none() {
        return Err(Skip("MoE architecture not in the table".into()));
    }
    let cluster = cluster_line(row, gpus)?;
    let vocab = match (&moe, row.vocab, stdlib) {
        (_, Some(v), _) if v > 0 => v,
        (Some(m), _, _) => m.vocab,
        _ if hybrid.is_some() => {
            // NVIDIA's Nemotron-H and Nemotron 3 models share one 131,072-token vocabulary
            // (nvidia/Nemotron-H-8B-Base-8K config.json `vocab_size`; Megatron-Bridge's
            // NemotronH config tests assert 131072).
            assumed.push(format!(
                "vocab {NEMOTRON_VOCAB} (unstated; the Nemotron tokenizer's vocabulary)"
            ));
            NEMOTRON_VOCAB
        }
        (None, _, Some(name)) => {
            assumed.push(format!("vocab of the stdlib `{name}` (unstated)"));
            0
        }
        _ if source == Source::Mlperf && row.model.starts_with("GPT-3") => {
            // https://github.com/mlcommons/training/blob/master/large_language_model/megatron-lm/README.md §3: the GPT-2
            // BPE files give "the vocab size (value is 50257)"; the paxml reference's
            // pass-through vocabulary has the same size. Megatron pads it (128 × tp).
            assumed.push(format!(
                "vocab {MLPERF_GPT3_VOCAB} (unstated; the MLPerf GPT-3 reference's vocab size)"
            ));
            MLPERF_GPT3_VOCAB
        }
        _ => return Err(Skip("vocab not stated".into())),
    };
    if stdlib == Some("deepseek_v3") && source == Source::McoreDsv3 {
        // The reproduce guide's launch script (the row's megatron_args) sets no
        // `--mtp-num-layers`: Megatron's default is no MTP.
        assumed.push("mtp_layers 0 (the launch script sets no `--mtp-num-layers`)".into());
    } else if stdlib == Some("deepseek_v3") && !row.model.contains("w/o MTP") {
        assumed.push("mtp_layers 1 (the stdlib `deepseek_v3`, as its report; unstated)".into());
    }
    let cp = row.cp.filter(|&c| c > 0).unwrap_or(1);
    let ep = row.ep.filter(|&e| e > 0).unwrap_or(1);
    let mb = match row.micro_batch {
        Some(m) if m > 0 => m,
        _ => {
            assumed.push("micro_batch 1 (unstated; SC21 Table 2 uses 1)".into());
            1
        }
    };
    let vpp = match (row.vpp, source) {
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
    };
    let sp = match row.seq_parallel.as_str() {
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
    };
    let recompute = if row.recompute.starts_with("full") {
        "full"
    } else if row.recompute.starts_with("selective") {
        "selective"
    } else if row.recompute.is_empty() && source.modern() {
        // Megatron-Core runs flash attention (no s × s scores kept, which the memory model
        // follows), so an unstated recompute is taken as none.
        assumed.push("recompute none (unstated; flash attention keeps no scores)".into());
        "none"
    } else {
        if row.recompute.is_empty() {
            assumed.push("recompute none (unstated)".into());
        }
        "none"
    };
    let untied = row.ffn.is_some_and(|f| f != 4 * hidden)
        || has_flag(&row.megatron_args, "--untie-embeddings-and-output-weights");
    let fsdp = fsdp_of(row, pp, ep, untied);
    if let Some(f) = &fsdp {
        assumed.extend(f.assumed.clone());
    }
    let task = task_items(row, &mut assumed);
    let mut state = state_dtype_items(row);
    if bridge_benchmark_grads(row, source, &state) {
        assumed.push(
            "grad_dtype bf16 (unstated; Megatron-Bridge's performance recipes reduce gradients \
             in bf16)"
                .into(),
        );
        state.insert(0, "grad_dtype bf16".to_string());
    }
    let dist_opt = match row.dist_optimizer.as_str() {
        // Megatron-FSDP runs its own distributed optimizer (arguments.py:1128-1136).
        _ if fsdp.is_some() => false,
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
    };
    // The v2 `precision` column where there is one (MXFP8 and block-scaled FP8 run their
    // GEMMs on the FP8 tensor cores too; NVFP4 on the FP4 ones), else the notes of v1.
    let (fp8, fp4) = match row.precision.as_str() {
        "" => (
            row.notes.to_ascii_uppercase().contains("FP8 PRECISION")
                || row.notes.starts_with("precision FP8")
                || row.notes.starts_with("FP8"),
            false,
        ),
        p => (p.contains("fp8"), p == "nvfp4"),
    };

    let mtp = u64::from(
        stdlib == Some("deepseek_v3")
            && !row.model.contains("w/o MTP")
            && source != Source::McoreDsv3,
    );
    let pipeline = split::pipeline_items(
        row,
        split::Sizes {
            layers,
            pp,
            vpp,
            mtp,
        },
    );
    assumed.extend(pipeline.assumed.iter().cloned());
    // NVIDIA's MLPerf GPT-3 NeMo configs: `OVERLAP_P2P_COMM=True`, `BATCH_P2P_COMM=False`
    // (mlcommons/training_results_v4.x NVIDIA/benchmarks/gpt3 config_common.sh).
    let overlap_p2p = source == Source::Mlperf
        && vpp > 1
        && pp > 1
        && !pipeline.items.iter().any(|i| i == "overlap_p2p");
    if overlap_p2p {
        assumed.push("overlap_p2p (unstated; NVIDIA's MLPerf GPT-3 configs set it)".into());
    }

    let mut v = String::new();
    let _ = writeln!(v, "# {} — {} ({})", row.id, row.model, source.name());
    let _ = writeln!(
        v,
        "# published {} {} on {gpus} GPUs",
        row.metric,
        row.value.unwrap_or(0.0)
    );
    for a in &assumed {
        let _ = writeln!(v, "# assumed: {a}");
    }
    if let Some(name) = stdlib {
        write_stdlib_model(&mut v, row, name, [hidden, layers, heads, vocab, seq]);
    } else {
        let _ = write!(
            v,
            "model m <\n  hidden {hidden} layers {layers} heads {heads}\n  vocab {vocab} seq {seq}\n"
        );
    }
    match (&moe, stdlib) {
        (_, Some(_)) => {}
        _ if hybrid.is_some() => {
            for line in hybrid.iter().flatten() {
                let _ = writeln!(v, "  {line}");
            }
        }
        (Some(m), None) => {
            let kv = need(row.kv_groups, "kv_groups")?;
            let _ = writeln!(
                v,
                "  kv_groups {kv} head_dim {} swiglu untied_embeddings\n  experts {} topk {} moe_ffn {}",
                m.head_dim, m.experts, m.topk, m.moe_ffn
            );
        }
        (None, None) => {
            if let Some(f) = row.ffn.filter(|&f| f > 0) {
                let _ = writeln!(v, "  ffn {f}");
            }
            if let Some(g) = row.kv_groups.filter(|&g| g > 0 && g != heads) {
                let _ = writeln!(v, "  kv_groups {g}");
            }
            // Llama-family rows (an ffn that is not 4h) use SwiGLU and separate embeddings.
            if row.ffn.is_some_and(|f| f != 4 * hidden) {
                let _ = writeln!(v, "  swiglu untied_embeddings");
            }
        }
    }
    let _ = writeln!(v, ">\n");
    let _ = writeln!(v, "{cluster}\n");
    let _ = write!(v, "plan p <\n  tp {tp} pp {pp}");
    if vpp > 1 {
        let _ = write!(v, " vpp {vpp}");
    }
    if cp > 1 {
        let _ = write!(v, " cp {cp}");
    }
    if ep > 1 {
        let _ = write!(v, " ep {ep}");
    }
    let _ = write!(v, "\n  micro_batch {mb} global_batch {gbs}\n");
    if overlap_p2p {
        let _ = writeln!(v, "  overlap_p2p");
    }
    for item in &pipeline.items {
        let _ = writeln!(v, "  {item}");
    }
    if sp {
        let _ = writeln!(v, "  sp");
        if tp > 1 && row.notes.contains("tp-comm-overlap") {
            let _ = writeln!(v, "  overlap_tp_comm");
        }
    }
    if recompute != "none" {
        let _ = writeln!(v, "  recompute {recompute}");
    }
    if dist_opt {
        let _ = writeln!(
            v,
            "  distributed_optimizer overlap_grad_reduce overlap_param_gather"
        );
        if vpp > 1 && source.aligns_param_gather() {
            let _ = writeln!(v, "  delay_param_gather");
        }
    }
    if let Some(f) = &fsdp {
        let _ = writeln!(v, "  {}", f.item);
    }
    for item in task.iter().chain(&state) {
        let _ = writeln!(v, "  {item}");
    }
    if fp8 {
        let _ = writeln!(v, "  precision fp8");
    } else if fp4 {
        let _ = writeln!(v, "  precision fp4");
    }
    if !source.modern() {
        // FlashAttention appeared in 2022; SC21's Megatron-LM ran QKᵀ and ·V as batched GEMMs
        // with a fused scale-mask-softmax over the full scores.
        let _ = writeln!(v, "  attention unfused");
    }
    let _ = writeln!(v, ">");
    Ok(Built {
        source,
        venus: v,
        assumed,
        precision_fp8: fp8 || fp4,
        moe: moe.is_some() || stdlib.is_some() || has_flag(&row.megatron_args, "--num-experts"),
    })
}

/// The vocabulary of NVIDIA's Nemotron-H and Nemotron 3 tokenizer.
const NEMOTRON_VOCAB: u64 = 131_072;

/// A hybrid row's model lines beyond hidden, layers, heads, vocab and seq, from the flags of
/// its `megatron_args` (`--hybrid-override-pattern` and the Mamba-2, attention and MoE sizes);
/// `None` when the row is not a hybrid model.
fn hybrid_arch(row: &Row, heads: u64, assumed: &mut Vec<String>) -> Option<Vec<String>> {
    let args = row.megatron_args.as_str();
    let pattern = flag_value(args, "--hybrid-override-pattern")?;
    let mut lines = vec![format!("hybrid_override_pattern \"{pattern}\"")];
    if let Some(g) = row.kv_groups.filter(|&g| g > 0 && g != heads) {
        lines.push(format!("kv_groups {g}"));
    }
    if let Some(f) = row.ffn.filter(|&f| f > 0) {
        lines.push(format!("ffn {f}"));
    }
    let keyed = [
        ("--kv-channels", "head_dim"),
        ("--mamba-num-heads", "mamba_num_heads"),
        ("--mamba-head-dim", "mamba_head_dim"),
        ("--mamba-state-dim", "ssm_state_size"),
        ("--mamba-num-groups", "n_groups"),
        ("--num-experts", "experts"),
        ("--moe-router-topk", "topk"),
        ("--moe-ffn-hidden-size", "moe_ffn"),
        ("--moe-shared-expert-intermediate-size", "shared_expert_ffn"),
        ("--moe-latent-size", "moe_latent_size"),
    ];
    for (flag, key) in keyed {
        if let Some(value) = flag_value(args, flag) {
            lines.push(format!("{key} {value}"));
        }
    }
    if has_flag(args, "--num-experts") && flag_value(args, "--moe-router-topk").is_none() {
        // arguments.py: `--moe-router-topk` defaults to 2.
        lines.push("topk 2".into());
        assumed.push("topk 2 (Megatron's `--moe-router-topk` default)".into());
    }
    if has_flag(args, "--untie-embeddings-and-output-weights") {
        lines.push("untied_embeddings".into());
    }
    if has_flag(args, "--swiglu") {
        lines.push("swiglu".into());
    }
    Some(lines)
}

/// True when `flag` is one of the space-separated words of `args`.
pub(super) fn has_flag(args: &str, flag: &str) -> bool {
    args.split_whitespace().any(|w| w == flag)
}

/// The word after `flag` in `args`, when the flag is there with a value.
fn flag_value<'a>(args: &'a str, flag: &str) -> Option<&'a str> {
    let mut words = args.split_whitespace();
    words.find(|w| *w == flag)?;
    words.next().filter(|w| !w.starts_with("--"))
}

/// A row's `fsdp` item and what it assumes.
struct FsdpItem {
    item: String,
    assumed: Vec<String>,
}

/// `fsdp STRATEGY [torch]` for a row whose `megatron_args` name `--use-megatron-fsdp` or
/// `--use-torch-fsdp2`, or whose `dist_optimizer` says FSDP. The strategy is the row's
/// `--data-parallel-sharding-strategy`, else Megatron's default `optim_grads_params`
/// (arguments.py). `--use-torch-fsdp2` stays torch FSDP2 where Megatron's checks accept the
/// plan (pp 1, ep 1, untied embeddings, arguments.py:1031-1045); torchtitan composes FSDP2
/// with its own pipeline, which Megatron's torch path rejects, so there Megatron-FSDP (the
/// same ZeRO state, per-layer units) stands in and the scenario says so.
fn fsdp_of(row: &Row, pp: u64, ep: u64, untied: bool) -> Option<FsdpItem> {
    let args = row.megatron_args.as_str();
    let torch = has_flag(args, "--use-torch-fsdp2");
    let named = torch
        || has_flag(args, "--use-megatron-fsdp")
        || row.dist_optimizer.to_ascii_uppercase().starts_with("FSDP");
    if !named {
        return None;
    }
    let mut assumed = Vec::new();
    let strategy = match flag_value(args, "--data-parallel-sharding-strategy") {
        Some(s) if schema_strategy(s) => s.to_string(),
        _ => {
            assumed.push(
                "fsdp optim_grads_params (sharding strategy unstated; Megatron's default)".into(),
            );
            "optim_grads_params".to_string()
        }
    };
    let torch_ok = pp == 1 && ep == 1 && untied;
    let item = if torch && torch_ok {
        format!("fsdp {strategy} torch")
    } else {
        if torch {
            assumed.push(format!(
                "fsdp {strategy} megatron (the run's FSDP2 with pp {pp} / ep {ep} is outside \
                 Megatron's --use-torch-fsdp2; Megatron-FSDP shards the same state)"
            ));
        }
        format!("fsdp {strategy}")
    };
    Some(FsdpItem { item, assumed })
}

/// One of Megatron's `--data-parallel-sharding-strategy` words.
fn schema_strategy(s: &str) -> bool {
    venusc_schema::FSDP_STRATEGIES.contains(&s)
}

/// `task lora` (with the rank the notes state) or `task sft` from the `task` column.
fn task_items(row: &Row, assumed: &mut Vec<String>) -> Vec<String> {
    match row.task.as_str() {
        "lora" => {
            let rank = lora_rank_in(&row.notes);
            if rank.is_none() {
                assumed
                    .push("lora_rank 32 (unstated; Megatron-Bridge's `LoRA.dim` default)".into());
            }
            let mut items = vec!["task lora".to_string()];
            items.extend(rank.map(|r| format!("lora_rank {r}")));
            items
        }
        "sft" => vec!["task sft".to_string()],
        _ => Vec::new(),
    }
}

/// Whether a Megatron-Bridge performance-summary row ran with bf16 gradients, its flags not
/// saying: the performance recipes' `_benchmark_common` sets `grad_reduce_in_fp32 = False`
/// ("benchmark-mode default", src/megatron/bridge/perf_recipes/_common.py, Megatron-Bridge
/// @0191fc5e), except the Kimi K2 recipe, which sets it back to True (the same docstring).
fn bridge_benchmark_grads(row: &Row, source: Source, written: &[String]) -> bool {
    source == Source::Bridge
        && row.source.contains("Megatron-Bridge")
        && !row.model.starts_with("Kimi-K2")
        && !written.iter().any(|i| i.starts_with("grad_dtype"))
        && !has_flag(&row.megatron_args, "--accumulate-allreduce-grads-in-fp32")
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

/// The gradient and optimizer dtypes the row's flags state: `--grad-reduce-in-bf16` (or
/// `--main-grads-dtype bf16`) and, with `--use-precision-aware-optimizer`, the master-weight and
/// moment dtypes that are not fp32.
fn state_dtype_items(row: &Row) -> Vec<String> {
    let args = row.megatron_args.as_str();
    let mut items = Vec::new();
    if has_flag(args, "--grad-reduce-in-bf16")
        || flag_value(args, "--main-grads-dtype") == Some("bf16")
    {
        items.push("grad_dtype bf16".to_string());
    }
    if has_flag(args, "--use-precision-aware-optimizer") {
        for (flag, key, words) in [
            (
                "--main-params-dtype",
                "main_params_dtype",
                venusc_schema::MAIN_PARAMS_DTYPES,
            ),
            (
                "--exp-avg-dtype",
                "exp_avg_dtype",
                venusc_schema::MOMENT_DTYPES,
            ),
            (
                "--exp-avg-sq-dtype",
                "exp_avg_sq_dtype",
                venusc_schema::MOMENT_DTYPES,
            ),
        ] {
            if let Some(w) = flag_value(args, flag).filter(|w| *w != "fp32" && words.contains(w)) {
                items.push(format!("{key} {w}"));
            }
        }
    }
    items
}

/// `model m : NAME <` with the sizes the row states (a zero vocab: the stdlib's), and
/// `mtp_layers 0` for a row that says its run had no multi-token prediction.
fn write_stdlib_model(v: &mut String, row: &Row, name: &str, sizes: [u64; 5]) {
    let [hidden, layers, heads, vocab, seq] = sizes;
    let _ = write!(
        v,
        "model m : {name} <\n  hidden {hidden} layers {layers} heads {heads}\n  seq {seq}\n"
    );
    if vocab > 0 {
        let _ = writeln!(v, "  vocab {vocab}");
    }
    if row.model.contains("w/o MTP") || Source::of(row) == Source::McoreDsv3 {
        let _ = writeln!(v, "  mtp_layers 0");
    }
}

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
