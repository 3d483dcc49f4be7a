//! `--emit astra-sim`: inputs for upstream Astra-Sim 2.x with the analytical network backend.
//!
//! Input: a validated [`Scenario`]. Output: `system.json`, `network.yml` and `comm-group.json`.
//! Invariants: the network has one entry per cluster dim, innermost first (fc →
//! FullyConnected, ring → Ring, switch → Switch; bandwidth in GB/s, latency in ns); the
//! collective implementation lists have exactly one entry per dim; comm-group.json uses
//! upstream's form `{"<id>": [ranks]}` with ids from 1, listing every tp, cp, dp, pp and
//! embedding group of more than one rank in Megatron's order.

use std::io::Write;

use super::venussim::{layout, write_list, write_network_yml, IMPLEMENTATION_KEYS};
use super::{num, EmitError, Sink, Warning};
use venus_plan::plan::layout::GroupKind;
use venus_plan::plan::Scenario;

/// Writes the three files. Warnings: upstream has no `mfu` key, so peak-perf carries
/// peak × mfu when the plan sets `mfu`.
pub fn write_astra_sim(sc: &Scenario, sink: &mut dyn Sink) -> Result<Vec<Warning>, EmitError> {
    let mut warnings = Vec::new();
    write_system(sc, &mut *sink.file("system.json")?, &mut warnings)?;
    write_network_yml(sc, &mut *sink.file("network.yml")?)?;
    write_groups(sc, &mut *sink.file("comm-group.json")?)?;
    Ok(warnings)
}

fn write_system(
    sc: &Scenario,
    out: &mut dyn Write,
    warnings: &mut Vec<Warning>,
) -> Result<(), EmitError> {
    let dims = sc.cluster.dims.len().max(1);
    let ring = vec!["\"ring\""; dims].join(", ");
    let mfu = sc.plan.mfu.as_ref().map_or(1.0, |m| m.0);
    if sc.plan.mfu.is_some() {
        warnings.push(format!(
            "Astra-Sim has no `mfu`: system.json's peak-perf is peak x mfu = {} TFLOP/s",
            num(sc.cluster.gpu.peak.0 * mfu / 1e12)
        ));
    }
    let peak = sc.cluster.gpu.peak.0 * mfu / 1e12;
    // The local reduction runs at HBM speed (GB/s).
    let mem_bw = sc.cluster.gpu.mem_bw.0 / 1e9;
    writeln!(out, "{{")?;
    writeln!(out, "    \"scheduling-policy\": \"FIFO\",")?;
    writeln!(out, "    \"endpoint-delay\": 10,")?;
    writeln!(out, "    \"active-chunks-per-dimension\": 1,")?;
    writeln!(out, "    \"preferred-dataset-splits\": 4,")?;
    for k in IMPLEMENTATION_KEYS {
        writeln!(out, "    \"{k}\": [{ring}],")?;
    }
    writeln!(out, "    \"collective-optimization\": \"localBWAware\",")?;
    writeln!(out, "    \"local-mem-bw\": {},", num(mem_bw))?;
    writeln!(out, "    \"boost-mode\": 0,")?;
    writeln!(out, "    \"roofline-enabled\": 1,")?;
    writeln!(out, "    \"peak-perf\": {}", num(peak))?;
    writeln!(out, "}}")?;
    Ok(())
}

fn write_groups(sc: &Scenario, out: &mut dyn Write) -> Result<(), EmitError> {
    let layout = layout(sc)?;
    let kinds = [
        GroupKind::Tp,
        GroupKind::Cp,
        GroupKind::Dp,
        GroupKind::Pp,
        GroupKind::Embedding,
    ];
    writeln!(out, "{{")?;
    let mut id = 0u64;
    for kind in kinds {
        if layout.group_size(kind) < 2 {
            continue;
        }
        for g in layout.groups(kind) {
            if id > 0 {
                writeln!(out, ",")?;
            }
            id += 1;
            write!(out, "    \"{id}\": ")?;
            write_list(out, &g)?;
        }
    }
    if id > 0 {
        writeln!(out)?;
    }
    writeln!(out, "}}")?;
    Ok(())
}
