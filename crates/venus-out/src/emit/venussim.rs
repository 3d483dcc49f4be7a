//! `--emit venussim`: the five input files of VenusSim's `llm_sim.py` (venussim.md §3).
//!
//! Input: a validated [`Scenario`]. Output: `llm-sim-config.json`, `sim-config/system.json`,
//! `sim-config/network.yml`, `sim-config/memory.json` and `sim-config/comm-group.json` in a
//! [`Sink`], plus warnings naming what VenusSim will not model.
//! Invariants: every key of VenusSim's demo `trace_generator_config` is written, in the demo's
//! order, from the scenario (so `import` then emit gives each value back); every path is
//! relative to the run directory (`llm_sim.py` opens them against its cwd), or, with a
//! [`VenusSimPaths`] root, absolute as VenusSim's own demo writes them, so the config runs
//! from any directory; `README.md` says which; the scheduling policy is FIFO, because LIFO
//! deadlocks at random there (venussim.md §10.1).

use std::io::Write;

use serde_json::{json, Value};

use super::{num, EmitError, Sink, Warning};
use venus_base::base::{Precision, Recompute, ScheduleKind, Topology};
use venus_plan::plan::layout::{GroupKind, Layout, LayoutSizes};
use venus_plan::plan::PlanSpec;
use venus_plan::plan::Scenario;

/// VenusSim's name for a topology (NetworkParser.cc).
pub fn topology_name(t: Topology) -> &'static str {
    match t {
        Topology::FullyConnected => "FullyConnected",
        Topology::Ring => "Ring",
        Topology::Switch => "Switch",
    }
}

/// Machines: the world over the innermost dim (one node of GPUs), when the global batch
/// divides by it; VenusSim only uses it as `global_batch = multiplier × mlp-worker-num`
/// (arguments.py:239-243), so 1 is always a faithful fallback.
fn workers(sc: &Scenario) -> u64 {
    let inner = sc.cluster.dims.first().map_or(1, |d| d.size.max(1));
    let n = (sc.world / inner).max(1);
    if sc.global_batch.is_multiple_of(n) {
        n
    } else {
        1
    }
}

/// The `trace_generator_config` object, key by key in the demo's order. Public so the round
/// trip (`import` → scenario → this) can be checked key by key.
pub fn trace_generator_config(sc: &Scenario) -> Vec<(&'static str, Value)> {
    let m = &sc.model;
    let p = &sc.plan;
    let b = |v: bool| json!(u8::from(v));
    let workers = workers(sc);
    let chunk_layers = m.layers / sc.pp.max(1) / sc.vpp.max(1);
    let measured = p.measured.as_ref();
    let snapshot: Vec<Value> = match measured {
        Some(ms) => [&ms.first, &ms.middle, &ms.last]
            .iter()
            .map(|s| ms_value(s.0 * 1e3))
            .collect(),
        None => vec![json!(0), json!(0), json!(0)],
    };
    let name = file_stem(&sc.name);
    vec![
        ("mlp-worker-num", json!(workers)),
        ("world-size", json!(sc.world)),
        ("pipeline-model-parallel-size", json!(sc.pp)),
        ("context-parallel-size", json!(sc.cp)),
        ("tensor-model-parallel-size", json!(sc.tp)),
        // At tp 1 VenusSim forces it off (arguments.py); its demo writes 1 there, and so do
        // we, which keeps an imported demo's value.
        ("sequence-parallel", b(sc.sp || sc.tp == 1)),
        ("vpp-enable", b(sc.vpp > 1)),
        ("num-layers-per-virtual-pipeline-stage", json!(chunk_layers)),
        (
            "global-batch-size-mlp-multiplier",
            json!(sc.global_batch / workers),
        ),
        ("micro-batch-size", json!(sc.micro_batch)),
        ("forward_only", json!(0)),
        (
            "no-overlap-p2p-communication",
            b(!PlanSpec::flag(p.overlap_p2p)),
        ),
        (
            "use-distributed-optimizer",
            // Megatron-FSDP runs the distributed optimizer (arguments.py:1128-1136).
            b(sc.flags.distributed_optimizer || sc.flags.fsdp.is_some()),
        ),
        ("overlap-grad-reduce", b(sc.flags.overlap_grad_reduce)),
        ("no-delay-grad-reduce", b(!sc.flags.delay_grad_reduce)),
        ("overlap-param-gather", b(sc.flags.overlap_param_gather)),
        ("delay-param-gather", b(sc.flags.delay_param_gather)),
        ("train-iters", json!(p.iterations())),
        ("model-type", json!("decoder_only")),
        ("seq-length", json!(m.seq)),
        ("decoder-seq-length", json!(m.seq)),
        ("hidden-size", json!(m.hidden)),
        ("ffn-hidden-size", json!(m.ffn())),
        ("num-attention-heads", json!(m.heads)),
        ("num-query-groups", json!(m.kv_groups())),
        ("num-layers", json!(m.layers)),
        ("vocab-size", json!(m.vocab)),
        ("swiglu", b(m.swiglu())),
        (
            "untie-embeddings-and-output-weights",
            b(m.untied_embeddings()),
        ),
        ("output_filepath", json!("trace")),
        ("output_filename", json!(name)),
        ("log_filename", json!(format!("{name}.log"))),
        ("trace_generate", json!(1)),
        ("use_chakra", json!(0)),
        ("use_simplified_trace", json!(1)),
        ("use_simplified_template_trace", json!(1)),
        ("use_step_snapshot", b(p.replayed().is_some())),
        ("step_snapshot_data", Value::Array(snapshot)),
        ("total_file_size_gb_limit", json!(10)),
        ("keep_json_files", json!(0)),
    ]
}

/// Milliseconds as VenusSim's snapshot data: an integer when whole.
fn ms_value(ms: f64) -> Value {
    let r = (ms * 1e6).round() / 1e6;
    if r.fract() == 0.0 && r.abs() < 9.0e15 {
        json!(r as i64)
    } else {
        json!(r)
    }
}

/// A scenario name usable as a file prefix (VenusSim's `output_filename`).
pub fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "venusc".to_string()
    } else {
        s
    }
}

/// What VenusSim will not model for this scenario (one plain sentence each).
pub fn venussim_warnings(sc: &Scenario) -> Vec<Warning> {
    let mut w = Vec::new();
    let p = &sc.plan;
    let m = &sc.model;
    if sc.pp == 1 {
        w.push("VenusSim cannot run pp 1: its schedule asserts `forward_backward_no_pipelining is not support yet`".to_string());
    }
    if sc.tp > 1 {
        w.push(format!(
            "VenusSim generates no tensor-parallel communication: tp {} only divides compute and parameters",
            sc.tp
        ));
    }
    if sc.cp > 1 {
        w.push(format!(
            "VenusSim generates no context-parallel communication: cp {} only divides the world and the p2p sequence length",
            sc.cp
        ));
    }
    if m.is_moe() || sc.ep > 1 {
        w.push("VenusSim models dense layers only: experts, routing and expert-parallel all-to-all are not modelled".to_string());
    }
    if !sc.flags.distributed_optimizer && sc.flags.fsdp.is_none() {
        w.push("VenusSim supports only the distributed optimizer: its generator fails with `Only distributed optimzer is support yet`; venusc's traces all-reduce the gradients (`grad_allreduce`, which VenusSim's report counts in no phase) and gather no parameters, as `venusc sim` models it".to_string());
    }
    if sc.schedule == Some(ScheduleKind::Gpipe) {
        w.push("VenusSim has no GPipe schedule: it runs 1F1B".to_string());
    }
    if let Some(k) = sc.schedule.filter(|k| k.is_zero_bubble()) {
        w.push(format!(
            "VenusSim has no zero-bubble schedule and no weight-gradient pass: `{}` is emitted as 1F1B",
            k.word()
        ));
    }
    if sc.schedule == Some(ScheduleKind::Zbv) {
        w.push(
            "VenusSim has no zero-bubble schedule and no weight-gradient pass: `zbv` is emitted as interleaved 1F1B on its two chunks"
                .to_string(),
        );
    }
    if let Some(k) = sc.schedule.filter(|k| k.is_dualpipe()) {
        w.push(format!(
            "VenusSim has no DualPipe schedule: `{}` is emitted as {}",
            k.word(),
            if sc.vpp > 1 {
                "interleaved 1F1B"
            } else {
                "1F1B"
            }
        ));
    }
    if sc.schedule == Some(ScheduleKind::Interleaved) {
        if sc.pp <= 2 {
            w.push(format!(
                "VenusSim's interleaved schedule needs pp above 2, the plan has pp {}",
                sc.pp
            ));
        }
        if !sc.microbatches.is_multiple_of(sc.pp.max(1)) {
            w.push(format!(
                "VenusSim's interleaved schedule needs the microbatch count ({}) divisible by pp {}",
                sc.microbatches, sc.pp
            ));
        }
    }
    if p.first_stage_layers.is_some() || p.last_stage_layers.is_some() {
        w.push("VenusSim splits layers evenly: `first_stage_layers`/`last_stage_layers` are not modelled".to_string());
    }
    if sc.recompute != Recompute::None {
        w.push(format!(
            "VenusSim does not model activation recomputation (`recompute {}`)",
            sc.recompute.word()
        ));
    }
    if p.precision() != Precision::Bf16 {
        w.push(format!(
            "VenusSim computes every node at `peak-perf`: {} precision is not modelled",
            p.precision().word()
        ));
    }
    if p.lora() {
        w.push(
            "VenusSim trains every parameter: `task lora` (frozen base, adapters) is not modelled"
                .to_string(),
        );
    }
    if let Some(f) = sc.flags.fsdp {
        w.push(format!(
            "VenusSim has no FSDP: `fsdp {}` is emitted as the distributed optimizer",
            f.word()
        ));
    }
    if p.grad_dtype
        .is_some_and(|d| d != venus_base::base::Dtype::Fp32)
    {
        w.push("VenusSim reduces gradients in fp32: `grad_dtype` is not modelled".to_string());
    }
    if m.head_dim.is_some() && m.head_dim() * m.heads != m.hidden {
        w.push(
            "VenusSim assumes head_dim = hidden / heads: the written `head_dim` is not modelled"
                .to_string(),
        );
    }
    if p.bucket_size.is_some() {
        w.push(
            "VenusSim reduces each model chunk in one bucket: `bucket_size` is not modelled"
                .to_string(),
        );
    }
    if p.mfu.is_none() && p.replayed().is_none() {
        w.push(
            "the plan sets no `mfu`: VenusSim's system.json gets mfu 1 (compute at peak)"
                .to_string(),
        );
    }
    if sc.cluster.dims.len() > 1 && sc.world >= 256 {
        w.push("VenusSim's align-with-nccl reads uninitialized fields for flat groups at some world sizes (venussim.md §10.3): check the embedding all-reduce times".to_string());
    }
    w
}

/// VenusSim writes one `num-layers-per-virtual-pipeline-stage` for every chunk: a split whose
/// chunks differ because the embedding or loss takes a layer's slot, or a `pipeline_layout`,
/// cannot be written (an uneven first/last stage is a warning: its chunks are written even).
fn uneven_chunks(sc: &Scenario) -> Result<(), EmitError> {
    let split = &sc.split;
    let keys = if split.is_layout() {
        "`pipeline_layout`"
    } else if split.accounts() != (false, false) {
        "`account_for_embedding`/`account_for_loss`"
    } else {
        return Ok(());
    };
    if split.is_even() {
        return Ok(());
    }
    Err(EmitError::Unsupported(format!(
        "VenusSim gives every model chunk the same layers; {keys} makes them differ ({}): remove it to emit VenusSim files",
        split.describe()
    )))
}

/// Where the emitted config points: `llm_sim.py` (VenusSim trace-generator/llm_sim.py:80-114)
/// runs `simulator_config.binary` as given and opens every other path against its cwd.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VenusSimPaths {
    /// VenusSim's checkout: the binary becomes
    /// `<root>/llm-simulator/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware`
    /// (what `build.sh -t congestion_unaware` builds). `None`: the bare name, found on PATH.
    pub venussim_root: Option<String>,
    /// The absolute directory the files are written to; with it every path in the config is
    /// absolute, so `llm_sim.py` runs from any cwd. `None`: paths relative to the run directory.
    pub run_dir: Option<String>,
}

/// The simulator binary `build.sh -t congestion_unaware` builds, relative to VenusSim's root
/// (VenusSim llm-simulator/build/astra_analytical/build.sh).
pub const SIMULATOR_IN_ROOT: &str =
    "llm-simulator/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware";

impl VenusSimPaths {
    fn binary(&self) -> String {
        match &self.venussim_root {
            Some(root) => format!("{}/{SIMULATOR_IN_ROOT}", root.trim_end_matches('/')),
            None => "AstraSim_Analytical_Congestion_Unaware".to_string(),
        }
    }

    /// `rel` under the run directory, as the config writes it.
    fn path(&self, rel: &str) -> String {
        match &self.run_dir {
            Some(dir) => format!("{}/{rel}", dir.trim_end_matches('/')),
            None => rel.to_string(),
        }
    }
}

/// Writes the five files and a README, with paths relative to the run directory, and returns
/// [`venussim_warnings`].
pub fn write_venussim(sc: &Scenario, sink: &mut dyn Sink) -> Result<Vec<Warning>, EmitError> {
    write_venussim_at(sc, &VenusSimPaths::default(), sink)
}

/// [`write_venussim`] with the binary and the paths of `paths`.
pub fn write_venussim_at(
    sc: &Scenario,
    paths: &VenusSimPaths,
    sink: &mut dyn Sink,
) -> Result<Vec<Warning>, EmitError> {
    uneven_chunks(sc)?;
    write_llm_sim_config(sc, paths, &mut *sink.file("llm-sim-config.json")?)?;
    write_readme(sc, paths, &mut *sink.file("README.md")?)?;
    write_system_json(sc, true, &mut *sink.file("sim-config/system.json")?)?;
    write_network_yml(sc, &mut *sink.file("sim-config/network.yml")?)?;
    write_memory_json(&mut *sink.file("sim-config/memory.json")?)?;
    write_comm_group(sc, &mut *sink.file("sim-config/comm-group.json")?)?;
    Ok(venussim_warnings(sc))
}

fn write_llm_sim_config(
    sc: &Scenario,
    paths: &VenusSimPaths,
    out: &mut dyn Write,
) -> Result<(), EmitError> {
    writeln!(out, "{{")?;
    let mut tg: Vec<(String, Value)> = trace_generator_config(sc)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    for (k, v) in tg.iter_mut() {
        // llm_sim.py:49 joins it to the cwd, which keeps an absolute path as it is.
        if k == "output_filepath" {
            *v = json!(paths.path("trace"));
        }
    }
    keep_fields(&mut tg, sc, "trace_generator_config");
    write_section(out, "trace_generator_config", &tg, ",")?;
    // A bare binary name is looked up on PATH by `subprocess`; relative paths are opened
    // against the cwd `llm_sim.py` is run from.
    let sim = [
        ("binary", paths.binary()),
        ("system", paths.path("sim-config/system.json")),
        ("network", paths.path("sim-config/network.yml")),
        ("remote_memory", paths.path("sim-config/memory.json")),
        ("comm_group", paths.path("sim-config/comm-group.json")),
        ("trace_output", paths.path("trace_output.log")),
    ];
    let mut sim: Vec<(String, Value)> =
        sim.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    keep_fields(&mut sim, sc, "simulator_config");
    write_section(out, "simulator_config", &sim, ",")?;
    let mut timeline = vec![
        (
            "output_filename".to_string(),
            json!(paths.path("trace_output.json")),
        ),
        ("single_pp_group".to_string(), json!(0)),
    ];
    keep_fields(&mut timeline, sc, "time_line_visualizer_config");
    let extra: Vec<_> = sc
        .plan
        .venussim
        .iter()
        .filter(|f| f.field.is_none())
        .collect();
    let sep = if extra.is_empty() { "" } else { "," };
    write_section(out, "time_line_visualizer_config", &timeline, sep)?;
    for (i, f) in extra.iter().enumerate() {
        let sep = if i + 1 == extra.len() { "" } else { "," };
        writeln!(out, "    {}: {}{sep}", json!(f.section), f.value)?;
    }
    writeln!(out, "}}")?;
    Ok(())
}

/// The plan's kept `venussim` fields of `section`, over the emitted ones: a field the emitter
/// writes takes the kept value in place, any other is appended in written order.
fn keep_fields(fields: &mut Vec<(String, Value)>, sc: &Scenario, section: &str) {
    for f in &sc.plan.venussim {
        let Some(name) = f.field.as_deref().filter(|_| f.section == section) else {
            continue;
        };
        match fields.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v = f.value.clone(),
            None => fields.push((name.to_string(), f.value.clone())),
        }
    }
}

/// One section of `llm-sim-config.json`, a field per line in VenusSim's demo layout.
fn write_section(
    out: &mut dyn Write,
    name: &str,
    fields: &[(String, Value)],
    after: &str,
) -> Result<(), EmitError> {
    writeln!(out, "    \"{name}\": {{")?;
    for (i, (k, v)) in fields.iter().enumerate() {
        let sep = if i + 1 == fields.len() { "" } else { "," };
        writeln!(out, "        {}: {v}{sep}", json!(k))?;
    }
    writeln!(out, "    }}{after}")?;
    Ok(())
}

/// README.md beside the config: how `llm_sim.py` finds the files, the choices made for
/// VenusSim, and how its report compares with `venusc sim`'s.
fn write_readme(
    sc: &Scenario,
    paths: &VenusSimPaths,
    out: &mut dyn Write,
) -> Result<(), EmitError> {
    let name = file_stem(&sc.name);
    writeln!(
        out,
        "# VenusSim inputs for `{}` (written by venusc)",
        sc.name
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "Run with VenusSim's `trace-generator/llm_sim.py` (its README sets up the Python"
    )?;
    writeln!(
        out,
        "environment; `chakra_timeline_visualizer` must be on PATH):"
    )?;
    writeln!(out)?;
    writeln!(out, "```")?;
    match &paths.run_dir {
        Some(_) => {
            writeln!(out, "PYTHONPATH=$VENUSSIM/trace-generator python $VENUSSIM/trace-generator/llm_sim.py \\")?;
            writeln!(out, "  --config-file {}", paths.path("llm-sim-config.json"))?;
        }
        None => {
            writeln!(out, "cd <this directory>")?;
            writeln!(out, "PYTHONPATH=$VENUSSIM/trace-generator python $VENUSSIM/trace-generator/llm_sim.py --config-file llm-sim-config.json")?;
        }
    }
    writeln!(out, "```")?;
    writeln!(out)?;
    match &paths.run_dir {
        Some(dir) => writeln!(out, "Every path in `llm-sim-config.json` is absolute (under `{dir}`), as in VenusSim's own demo, so the config runs from any directory; logs (`llm_sim.log`, `visualizer.log`) go to the cwd.")?,
        None => writeln!(out, "The paths in `llm-sim-config.json` are relative: `llm_sim.py` opens them against its cwd, so run it from this directory (or emit with `--venussim-root DIR`, which writes absolute paths).")?,
    }
    match &paths.venussim_root {
        Some(_) => writeln!(out, "`simulator_config.binary` is `{}`, built by `bash llm-simulator/build/astra_analytical/build.sh -t congestion_unaware`.", paths.binary())?,
        None => writeln!(out, "`simulator_config.binary` is the bare name `AstraSim_Analytical_Congestion_Unaware`, run from PATH: put `$VENUSSIM/{}` on PATH after `bash llm-simulator/build/astra_analytical/build.sh -t congestion_unaware`, or emit with `--venussim-root $VENUSSIM`.", SIMULATOR_IN_ROOT.trim_end_matches("/AstraSim_Analytical_Congestion_Unaware"))?,
    }
    writeln!(out)?;
    writeln!(out, "Choices:")?;
    writeln!(out)?;
    writeln!(
        out,
        "- `scheduling-policy` FIFO: LIFO can deadlock in VenusSim."
    )?;
    writeln!(out, "- `align-with-nccl` 0: with 1, VenusSim reads uninitialized group sizes, so the template and the simplified traces of one plan give different iteration times; with 0 they agree (`venusc compile --emit template-trace` and `--emit simplified-trace` write the same DAG).")?;
    writeln!(
        out,
        "- Traces are generated as `{name}` (`output_filename`) into `trace/`."
    )?;
    writeln!(out)?;
    writeln!(out, "Comparing reports: VenusSim's `elapsed time per iteration` is the issue time of the last event divided by `train-iters`; `venusc sim` reports one iteration's end. VenusSim's TFLOP/s/GPU divides its own FLOP count (transformer + embedding, trace-generator/utils.py:16-19); `venusc sim` counts Megatron's `num_floating_point_operations` (training.py), which is {} lower for this plan, so at equal time venusc prints that much less TFLOP/s/GPU.", flop_gap(sc))?;
    Ok(())
}

/// How much lower Megatron's FLOP count is than VenusSim's for this plan, as a percentage.
fn flop_gap(sc: &Scenario) -> String {
    let ours = crate::report::flops::megatron_flops(sc).0;
    let m = venus_lower::cost::venussim::VenusModel::from_scenario(sc);
    let theirs = venus_lower::cost::venussim::flops(&m).report().0;
    if theirs > 0.0 {
        format!("{:.1} %", (1.0 - ours / theirs) * 100.0)
    } else {
        "0 %".to_string()
    }
}

/// The simulator settings we write besides peak and mfu; `import` compares a config's
/// system.json against these and reports every timing-relevant difference.
pub const SYSTEM_DEFAULTS: &[(&str, &str)] = &[
    ("scheduling-policy", "\"FIFO\""),
    ("endpoint-delay", "10"),
    ("active-chunks-per-dimension", "1"),
    ("preferred-dataset-splits", "4"),
    ("collective-optimization", "\"localBWAware\""),
    ("local-mem-bw", "50"),
    ("trace-enabled", "1"),
    ("replay-only", "0"),
    ("roofline-enabled", "1"),
    ("ignore-bandwidth", "1"),
    ("log-level", "0"),
    // 0, not the demo's 1: with 1 VenusSim sizes flat groups from `group_dim0_gpu_num` and
    // `group_gpu_num`, fields it leaves uninitialized for some groups (venussim.md §10, quirk
    // 3), so one plan's template and simplified traces disagree there (the demo's embedding
    // all-reduce: 41.8 vs 33.2 ms, iteration 1116.20 vs 1089.71 ms); with 0 both give
    // 1116.2 ms, the template figure. `import` warns when a config sets 1.
    ("align-with-nccl", "0"),
    ("simplified-trace", "1"),
    ("template-trace", "1"),
];

/// The four collective implementation keys; one `"ring"` per network dimension (a list longer
/// than the dims aborts, venussim.md §1 fix 3).
pub const IMPLEMENTATION_KEYS: [&str; 4] = [
    "all-reduce-implementation",
    "all-gather-implementation",
    "reduce-scatter-implementation",
    "all-to-all-implementation",
];

/// system.json; `template` sets `template-trace`, which tells the simulator to read
/// `<name>~template~.<r>.et` files through the mapping (1) or `<name>.<rank>.et` (0);
/// `llm_sim.py` sets it from `use_simplified_template_trace` (trace-generator/utils.py:214-221).
pub(crate) fn write_system_json(
    sc: &Scenario,
    template: bool,
    out: &mut dyn Write,
) -> Result<(), EmitError> {
    let dims = sc.cluster.dims.len().max(1);
    let ring = vec!["\"ring\""; dims].join(",");
    let peak = sc.cluster.gpu.peak.0 / 1e12;
    let mfu = sc.plan.mfu.as_ref().map_or(1.0, |m| m.0);
    let mut lines: Vec<String> = Vec::new();
    let def = |k: &str| {
        SYSTEM_DEFAULTS
            .iter()
            .find(|(n, _)| *n == k)
            .map_or("0", |(_, v)| v)
    };
    for k in [
        "scheduling-policy",
        "endpoint-delay",
        "active-chunks-per-dimension",
        "preferred-dataset-splits",
    ] {
        lines.push(format!("\"{k}\": {}", def(k)));
    }
    for k in IMPLEMENTATION_KEYS {
        lines.push(format!("\"{k}\": [\n        {ring}\n    ]"));
    }
    for k in [
        "collective-optimization",
        "local-mem-bw",
        "trace-enabled",
        "replay-only",
        "roofline-enabled",
    ] {
        lines.push(format!("\"{k}\": {}", def(k)));
    }
    lines.push(format!("\"peak-perf\": {}", num(peak)));
    lines.push(format!("\"mfu\": {}", num(mfu)));
    for k in [
        "ignore-bandwidth",
        "log-level",
        "align-with-nccl",
        "simplified-trace",
    ] {
        lines.push(format!("\"{k}\": {}", def(k)));
    }
    lines.push(format!("\"template-trace\": {}", u8::from(template)));
    let mut fields: Vec<(String, Value)> = Vec::new();
    keep_fields(&mut fields, sc, "system");
    for (k, v) in fields {
        let head = format!("{}: ", json!(k));
        match lines.iter_mut().find(|l| l.starts_with(&head)) {
            Some(l) => *l = format!("{head}{v}"),
            None => lines.push(format!("{head}{v}")),
        }
    }
    writeln!(out, "{{\n    {}\n}}", lines.join(",\n    "))?;
    Ok(())
}

/// network.yml for the analytical backend: one entry per dim, innermost first; bandwidth in
/// GB/s (which the backend reads as GiB/s, venussim.md §3.3) and latency in ns.
pub(crate) fn write_network_yml(sc: &Scenario, out: &mut dyn Write) -> Result<(), EmitError> {
    let dims = &sc.cluster.dims;
    let topo: Vec<&str> = dims.iter().map(|d| topology_name(d.topology)).collect();
    let npus: Vec<String> = dims.iter().map(|d| d.size.to_string()).collect();
    let bw: Vec<String> = dims.iter().map(|d| float1(d.bandwidth.0 / 1e9)).collect();
    let lat: Vec<String> = dims.iter().map(|d| float1(d.latency.0 * 1e9)).collect();
    writeln!(out, "# Analytical Network Input File (written by venusc)")?;
    writeln!(out)?;
    writeln!(
        out,
        "topology: [ {} ]  # Ring, Switch, FullyConnected",
        topo.join(", ")
    )?;
    writeln!(out)?;
    writeln!(out, "# {} NPUs", sc.world)?;
    writeln!(out, "npus_count: [ {} ]  # number of NPUs", npus.join(", "))?;
    writeln!(out)?;
    writeln!(out, "# Bandwidth per each link (per direction)")?;
    writeln!(out, "bandwidth: [ {} ]  # GB/s", bw.join(", "))?;
    writeln!(out)?;
    writeln!(out, "# Latency per each link")?;
    writeln!(out, "latency: [ {} ]  # ns", lat.join(", "))?;
    Ok(())
}

/// `450.0`, `0.125`: YAML floats as VenusSim's demo writes them.
fn float1(v: f64) -> String {
    let s = num(v);
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

fn write_memory_json(out: &mut dyn Write) -> Result<(), EmitError> {
    writeln!(out, "{{\n  \"memory-type\": \"NO_MEMORY_EXPANSION\"\n}}")?;
    Ok(())
}

/// The rank layout of a scenario (Megatron's order, as VenusSim's parallel_state.py).
pub(crate) fn layout(sc: &Scenario) -> Result<Layout, EmitError> {
    let sizes = LayoutSizes::new(
        sc.tp as u32,
        sc.cp as u32,
        sc.ep as u32,
        sc.dp as u32,
        sc.pp as u32,
    );
    let dims: Vec<u64> = sc.cluster.dims.iter().map(|d| d.size).collect();
    Layout::new(sizes, &dims).map_err(|e| EmitError::Unsupported(e.to_string()))
}

/// comm-group.json (trace-generator/utils.py:100-110): the dp groups (VenusSim's dp group is
/// Megatron's `dp`, stride tp·cp), the embedding groups (first and last rank of each pp group)
/// and the position-embedding groups (first rank). Streamed group by group.
pub(crate) fn write_comm_group(sc: &Scenario, out: &mut dyn Write) -> Result<(), EmitError> {
    let layout = layout(sc)?;
    let kinds = [
        ("dp_group", GroupKind::Dp),
        ("embedding_group", GroupKind::Embedding),
        ("position_embedding_group", GroupKind::PositionEmbedding),
    ];
    write!(out, "{{")?;
    for (i, (name, kind)) in kinds.iter().enumerate() {
        if i > 0 {
            write!(out, ", ")?;
        }
        write!(out, "\"{name}\": [")?;
        for (j, g) in layout.groups(*kind).enumerate() {
            if j > 0 {
                write!(out, ", ")?;
            }
            write_list(out, &g)?;
        }
        write!(out, "]")?;
    }
    writeln!(out, "}}")?;
    Ok(())
}

pub(crate) fn write_list(out: &mut dyn Write, g: &[u32]) -> std::io::Result<()> {
    write!(out, "[")?;
    for (k, r) in g.iter().enumerate() {
        if k > 0 {
            write!(out, ", ")?;
        }
        write!(out, "{r}")?;
    }
    write!(out, "]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use venus_front::testutil::{demo, set};

    /// What VenusSim cannot train is named, never dropped silently: LoRA's frozen base, FSDP
    /// (written as the distributed optimizer it runs) and bf16 gradients.
    #[test]
    fn lora_fsdp_and_bf16_gradients_are_named_in_the_warnings() {
        let sc = venus_front::validate(&demo()).0.unwrap();
        let plain = venussim_warnings(&sc);
        assert!(!plain
            .iter()
            .any(|w| w.contains("lora") || w.contains("fsdp")));
        let mut d = demo();
        set(&mut d.plan.task, venus_base::base::Task::Lora);
        set(&mut d.plan.distributed_optimizer, false);
        set(
            &mut d.plan.fsdp,
            venus_base::base::FsdpStrategy::OptimGradsParams,
        );
        set(&mut d.plan.fsdp_impl, venus_base::base::FsdpImpl::Megatron);
        set(&mut d.plan.grad_dtype, venus_base::base::Dtype::Bf16);
        let sc = venus_front::validate(&d).0.unwrap();
        let w = venussim_warnings(&sc);
        assert!(w.iter().any(|w| w.contains("`task lora`")), "{w:?}");
        assert!(
            w.iter().any(|w| w.contains("`fsdp optim_grads_params`")),
            "{w:?}"
        );
        assert!(w.iter().any(|w| w.contains("`grad_dtype`")), "{w:?}");
        assert!(
            !w.iter()
                .any(|w| w.contains("only the distributed optimizer")),
            "{w:?}"
        );
    }
}
