//! A published run → `.venus` text: the model, a stdlib cluster grown to the run's GPU count
//! and the plan, with every value the source does not state filled by one rule per source.
//!
//! Input: a [`Row`]. Output: [`Built`] (the `.venus` text and the assumptions made) or a
//! [`Skip`] saying why the row cannot be simulated. Invariant: no per-row choices — every
//! default below is a function of the source and the row's own columns, and each is written
//! into the generated file as a comment so a reader can see it.

use super::split;
use super::tsv::Row;
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
        }
    }

    /// Whether the source's Megatron-LM has sequence parallelism, the distributed optimizer
    /// and overlapped gradient reduction / parameter gather (all added in 2022-2023; SC21 is
    /// 2021). Used only where the row does not say.
    fn modern(self) -> bool {
        !matches!(self, Source::Sc21Table1 | Source::Sc21Other)
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
    if row.recompute.contains("FSDP") || row.notes.contains("FSDP=8") {
        return Err(Skip("Megatron FSDP is not modelled".into()));
    }
    if rack_cluster_of(&row.gpu).is_none() {
        hardware_of(row)?;
    }
    let layers = need(row.layers, "layers")?;
    let hidden = need(row.hidden, "hidden")?;
    let heads = need(row.heads, "heads")?;
    let seq = need(row.seq, "seq_len")?;
    let gbs = need(row.global_batch, "global_batch")?;
    let tp = need(row.tp, "tp")?;
    let pp = need(row.pp, "pp")?;
    let gpus = need(row.num_gpus, "num_gpus")?;
    let moe = moe_arch(&row.model);
    let stdlib = stdlib_model(&row.model);
    if row.model.contains("MoE") && moe.is_none() && stdlib.is_none() {
        return Err(Skip("MoE architecture not in the table".into()));
    }
    let cluster = cluster_line(row, gpus)?;
    let mut assumed = Vec::new();
    let vocab = match (&moe, row.vocab, stdlib) {
        (_, Some(v), _) if v > 0 => v,
        (Some(m), _, _) => m.vocab,
        (None, _, Some(name)) => {
            assumed.push(format!("vocab of the stdlib `{name}` (unstated)"));
            0
        }
        _ => return Err(Skip("vocab not stated".into())),
    };
    if stdlib == Some("deepseek_v3") && !row.model.contains("w/o MTP") {
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
    let dist_opt = match row.dist_optimizer.as_str() {
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

    let mtp = u64::from(stdlib == Some("deepseek_v3") && !row.model.contains("w/o MTP"));
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
        moe: moe.is_some() || stdlib.is_some(),
    })
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
    if row.model.contains("w/o MTP") {
        let _ = writeln!(v, "  mtp_layers 0");
    }
}
