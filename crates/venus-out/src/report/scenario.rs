//! What `venusc check --memory` and `venusc compile --emit groups` show about a validated
//! scenario before any simulation: the memory table per stage and the process groups.
//!
//! Input: a [`plan::Scenario`] or its [`Layout`]. Output: text lines ending in `\n`, or a JSON
//! value. Invariants: presentation only; every figure comes from `plan` (the memory model and
//! the rank layout), nothing is computed here.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::table;
use venus_base::base::Bytes;
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
    let _ = writeln!(
        out,
        "(GiB per GPU; in flight = microbatches whose activations are held at the peak; \
         of gpu = (peak + reserve) / GPU memory, what E0401 checks)"
    );
    out
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
