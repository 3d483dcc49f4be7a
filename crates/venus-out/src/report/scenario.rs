//! What `venusc check --memory` and `venusc compile --emit groups` show about a validated
//! scenario before any simulation: the memory table per stage and the process groups.
//!
//! Input: a [`plan::Scenario`] or its [`Layout`]. Output: text lines ending in `\n`, or a JSON
//! value. Invariants: presentation only; every figure comes from `plan` (the memory model and
//! the rank layout), nothing is computed here.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::table;
use venus_base::base::{Bytes, Ratio};
use venus_plan::plan::layout::{GroupKind, Layout};
use venus_plan::plan::Scenario;

/// The human memory table for `venusc check --memory`: per stage, per GPU, in GiB.
pub fn memory_table(sc: &Scenario) -> String {
    let gpu = &sc.cluster.gpu;
    let cap = gpu.memory;
    let (reserve, source) = sc.reserve();
    let g = |b: Bytes| format!("{:.2}", b.gib());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "memory per GPU of `{}` (model `{}`, tp {} pp {} dp {}{}), `{}` has {:.2} GiB",
        sc.name,
        sc.model.name,
        sc.tp,
        sc.pp,
        sc.dp,
        if sc.vpp > 1 {
            format!(" vpp {}", sc.vpp)
        } else {
            String::new()
        },
        gpu.name,
        cap.gib()
    );
    let _ = writeln!(out, "parameters: {}", super::Parameters::of(sc).summary());
    let header = [
        "stage",
        "layers",
        "weights",
        "gradients",
        "optimizer",
        "activations",
        "in flight",
        "peak",
        "of gpu",
    ];
    let rows: Vec<Vec<String>> = sc
        .memory
        .iter()
        .map(|s| {
            vec![
                s.stage.to_string(),
                s.layers.to_string(),
                g(s.weights),
                g(s.gradients),
                g(s.optimizer),
                g(s.activations),
                s.in_flight.to_string(),
                g(s.peak),
                format!(
                    "{:.0}%",
                    s.peak.0.saturating_add(reserve.0) as f64 / cap.0.max(1) as f64 * 100.0
                ),
            ]
        })
        .collect();
    table::render(&mut out, "", &header, &rows);
    let _ = writeln!(
        out,
        "reserve: {} GiB per GPU beside the peak (CUDA context, NCCL buffers, fragmentation; {})",
        g(reserve),
        source.describe()
    );
    for line in memory_choices(sc) {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "(GiB per GPU; in flight = microbatches whose activations are held at the peak; \
         of gpu = (peak + reserve) / GPU memory, what E0401 checks)"
    );
    out
}

/// The plan's choices that change the table's terms beyond the sizes, one line each, written
/// only where a plan makes them: the modules of selective recompute other than Megatron's
/// default `core_attn`, the layers of a full recompute other than every layer one by one, and
/// FP8 weights.
fn memory_choices(sc: &Scenario) -> Vec<String> {
    use venus_base::base::{RecomputeMethod, RecomputeModules};
    let p = &sc.plan;
    let mut lines = Vec::new();
    let modules = p.recompute_modules();
    if sc.recompute == venus_base::base::Recompute::Selective
        && modules != RecomputeModules::CORE_ATTN
    {
        lines.push(format!(
            "recompute: selective, modules {} (their saved tensors dropped, their inputs kept)",
            modules.words().join(" ")
        ));
    }
    let (method, n) = (p.recompute_method(), p.recompute_num_layers());
    if sc.recompute == venus_base::base::Recompute::Full
        && (method, n) != (RecomputeMethod::Uniform, 1)
    {
        lines.push(match method {
            RecomputeMethod::Uniform => format!(
                "recompute: full, one input kept per group of {n} layers, {n} layers recomputed at a time"
            ),
            RecomputeMethod::Block => format!(
                "recompute: full for the first {n} layers of each model chunk, the others keep their activations"
            ),
        });
    }
    if sc.recipe.linear_weights != sc.recipe.weights {
        lines.push(format!(
            "weights: linear layers in {} without a {} copy (`fp8_param_gather`)",
            sc.recipe.linear_weights.word(),
            sc.recipe.weights.word()
        ));
    }
    lines.extend(graphs_offload_lines(sc));
    lines
}

/// The CUDA graph pool and the offloaded activations per stage, where the plan has them.
fn graphs_offload_lines(sc: &Scenario) -> Vec<String> {
    let list = |f: &dyn Fn(&venus_plan::plan::memory::StageMemory) -> venus_base::base::Bytes| {
        sc.memory
            .iter()
            .map(|m| format!("{:.2}", f(m).gib()))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let mut lines = Vec::new();
    if sc.memory.iter().any(|m| m.graph_pool.0 > 0) {
        lines.push(format!(
            "cuda graph pool: {} GiB per stage (`cuda_graphs {}`: one static layer input per captured graph and microbatch in flight; in peak)",
            list(&|m| m.graph_pool),
            sc.plan.cuda_graphs().word()
        ));
    }
    if sc.memory.iter().any(|m| m.offloaded.0 > 0) {
        let bw = venus_plan::plan::offload::host_link_bandwidth(sc.cluster.gpu.arch);
        lines.push(format!(
            "offloaded to host: {} GiB per stage (not in activations or peak; copied at {:.1} GB/s each way beside compute)",
            list(&|m| m.offloaded),
            bw.0 / 1e9
        ));
    }
    let offload = sc.plan.optimizer_offload();
    if offload > Ratio::ZERO {
        let host = sc
            .memory
            .iter()
            .map(|m| m.optimizer_host.0)
            .max()
            .unwrap_or(0);
        lines.push(format!(
            "optimizer: {}% of the state in host memory (`optimizer_offload`), up to {:.2} GiB per GPU, not in the table",
            crate::emit::num(offload.percent()),
            host as f64 / (1u64 << 30) as f64
        ));
    }
    lines
}

/// `venusc compile --emit groups`: the sizes and every group of every kind. Large for big
/// worlds; built only on request.
pub fn groups_json(layout: &Layout) -> Value {
    let s = layout.sizes();
    let mut groups = serde_json::Map::new();
    for kind in GroupKind::ALL {
        let list: Vec<Value> = layout.groups(kind).map(|g| json!(g)).collect();
        groups.insert(kind.name().to_string(), Value::Array(list));
    }
    json!({
        "world": layout.world(),
        "order": "tp-cp-ep-dp-pp",
        "sizes": {
            "tp": s.tp, "cp": s.cp, "ep": s.ep, "dp": s.dp, "pp": s.pp,
            "etp": s.etp, "expert_dp": layout.expert_dp(),
        },
        "cluster_dims": layout.cluster_dims(),
        "groups": groups,
    })
}
