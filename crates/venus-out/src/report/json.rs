//! The JSON report (`venusc sim --format json`): [`Report`] → one pretty-printed object.
//!
//! Input: a [`Report`]. Output: a string ending in a newline.
//! Invariants: keys come in a fixed order (struct fields in declaration order, phases in
//! category order, exposed communication in group-kind order), numbers are written by
//! serde_json's shortest round-trip formatting, so identical reports give byte-identical text.
//! Only `engine.wall_ms` varies between runs; [`Report::deterministic`] zeroes it. Times are
//! milliseconds, memory bytes, ratios fractions in [0, 1].

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::{Exposed, GoodputReport, Phase, Report, ResolvedPlan, TrainCost};
use venus_diag::diag::render::LocatedDiagnostic;

#[derive(Serialize)]
struct ReportDto<'a> {
    scenario: &'a str,
    world_size: u64,
    iteration_time_ms: f64,
    flops_per_iteration: f64,
    tflops_per_gpu: f64,
    peak_tflops: f64,
    mfu: f64,
    tokens_per_second: f64,
    bubble_fraction: f64,
    parameters: ParametersDto,
    phases: PhasesDto<'a>,
    exposed_communication: ExposedDto<'a>,
    memory: Vec<MemoryDto>,
    /// Kept back per GPU beside every stage's peak (CUDA context, NCCL buffers, fragmentation).
    memory_reserve_bytes: u64,
    engine: EngineDto,
    // Added after the spec's fields (SIMULATION.md, "Report"); docs/report.schema.json has
    // every field.
    plan: PlanDto<'a>,
    tokens_per_iteration: u64,
    /// `null` without a `train` block.
    train: Option<TrainDto>,
    /// Written only when the cluster has `slow_*` GPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    stragglers: Option<StragglersDto>,
    /// `null` without failure rates and a checkpoint storage bandwidth in the cluster.
    goodput: Option<GoodputDto>,
    /// The scenario's warnings, as `check --format json` writes diagnostics.
    warnings: &'a [LocatedDiagnostic],
    /// The schedule's closed form of the bubble (what `venusc schedule` and hover show).
    schedule_bubble_fraction: f64,
    /// The iteration tiled: compute, bubble, exposed communication per kind, other idle.
    breakdown: BreakdownDto,
}

/// [`super::TimeBreakdown`] in milliseconds.
#[derive(Serialize)]
struct BreakdownDto {
    compute_ms: f64,
    bubble_ms: f64,
    exposed_ms: ExposedMsDto,
    other_idle_ms: f64,
}

/// Exposed communication per group kind, in milliseconds, in group-kind order.
struct ExposedMsDto(Vec<(&'static str, f64)>);

impl Serialize for ExposedMsDto {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl BreakdownDto {
    fn of(b: &super::TimeBreakdown) -> BreakdownDto {
        BreakdownDto {
            compute_ms: finite(b.compute.ms()),
            bubble_ms: finite(b.bubble.ms()),
            exposed_ms: ExposedMsDto(
                b.exposed
                    .iter()
                    .map(|(k, t)| (k.name(), finite(t.ms())))
                    .collect(),
            ),
            other_idle_ms: finite(b.other_idle.ms()),
        }
    }
}

/// The resolved plan: sizes, batch, stage split, schedule and recipe.
#[derive(Serialize)]
struct PlanDto<'a> {
    tp: u64,
    pp: u64,
    cp: u64,
    ep: u64,
    etp: u64,
    dp: u64,
    expert_dp: u64,
    vpp: u64,
    micro_batch: u64,
    global_batch: u64,
    microbatches: u64,
    layers_per_stage: &'a [u64],
    /// `null`: no pipelining (pp = 1).
    schedule: Option<&'static str>,
    precision: &'static str,
    recompute: &'static str,
    sp: bool,
    distributed_optimizer: bool,
    recompute_modules: &'a [&'static str],
    /// `null` without full recompute.
    recompute_method: Option<&'static str>,
    recompute_num_layers: Option<u64>,
    fp8_param_gather: bool,
}

impl<'a> PlanDto<'a> {
    fn of(p: &'a ResolvedPlan) -> PlanDto<'a> {
        PlanDto {
            tp: p.tp,
            pp: p.pp,
            cp: p.cp,
            ep: p.ep,
            etp: p.etp,
            dp: p.dp,
            expert_dp: p.expert_dp,
            vpp: p.vpp,
            micro_batch: p.micro_batch,
            global_batch: p.global_batch,
            microbatches: p.microbatches,
            layers_per_stage: &p.layers_per_stage,
            schedule: p.schedule.map(|s| s.word()),
            precision: p.precision.word(),
            recompute: p.recompute.word(),
            sp: p.sp,
            distributed_optimizer: p.distributed_optimizer,
            recompute_modules: &p.recompute_modules,
            recompute_method: p.recompute_layers.map(|(m, _)| m.word()),
            recompute_num_layers: p.recompute_layers.map(|(_, n)| n),
            fp8_param_gather: p.fp8_param_gather,
        }
    }
}

/// Training on the `train` block's token budget: `price_per_gpu_hour` and `cost_dollars` are
/// `null` without a `price`.
#[derive(Serialize)]
struct TrainDto {
    tokens: u64,
    iterations: u64,
    time_days: f64,
    gpu_hours: f64,
    price_per_gpu_hour: Option<f64>,
    cost_dollars: Option<f64>,
}

impl TrainDto {
    fn of(t: &TrainCost) -> TrainDto {
        TrainDto {
            tokens: t.tokens,
            iterations: t.iterations,
            time_days: finite(t.time.0 / 86_400.0),
            gpu_hours: finite(t.gpu_hours),
            price_per_gpu_hour: t.price.map(|p| finite(p.0)),
            cost_dollars: t.cost.map(|c| finite(c.0)),
        }
    }
}

/// Interruptions, checkpoints and goodput. Times in seconds (they span seconds to days);
/// `time_to_train_days` is `null` without a `train` block.
#[derive(Serialize)]
struct GoodputDto {
    interruptions_per_day: f64,
    gpu_interruptions_per_day: f64,
    node_interruptions_per_day: f64,
    link_interruptions_per_day: f64,
    job_mtbf_s: f64,
    checkpoint_bytes: u64,
    checkpoint_write_s: f64,
    checkpoint_read_s: f64,
    restart_s: f64,
    optimal_interval_s: f64,
    interval_s: f64,
    save_interval_iterations: u64,
    lost_per_interruption_s: f64,
    goodput: f64,
    optimal_goodput: f64,
    time_to_train_days: Option<f64>,
}

impl GoodputDto {
    fn of(g: &GoodputReport) -> GoodputDto {
        let m = &g.model;
        GoodputDto {
            interruptions_per_day: finite(m.interruptions.per_day().0),
            gpu_interruptions_per_day: finite(m.interruptions.gpus.0),
            node_interruptions_per_day: finite(m.interruptions.nodes.0),
            link_interruptions_per_day: finite(m.interruptions.links.0),
            job_mtbf_s: finite(m.job_mtbf.0),
            checkpoint_bytes: m.checkpoint_size.0,
            checkpoint_write_s: finite(m.checkpoint_write.0),
            checkpoint_read_s: finite(m.checkpoint_read.0),
            restart_s: finite(m.restart.0),
            optimal_interval_s: finite(m.optimal_interval.0),
            interval_s: finite(m.interval.0),
            save_interval_iterations: g.save_interval,
            lost_per_interruption_s: finite(m.lost_per_interruption.0),
            goodput: finite(m.goodput.0),
            optimal_goodput: finite(m.optimal_goodput.0),
            time_to_train_days: g.wall_time_to_train.map(|w| finite(w.0 / 86_400.0)),
        }
    }
}

/// Parameter counts: `total` and `active` (per token) exclude the MTP modules, `mtp` is them;
/// `trainable` is written only when some parameters are frozen (`task lora`).
#[derive(Serialize)]
struct ParametersDto {
    total: u64,
    active: u64,
    mtp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    trainable: Option<u64>,
}

#[derive(Serialize)]
struct MinMaxDto {
    min_ms: f64,
    max_ms: f64,
}

/// `{name: {min_ms, max_ms}}` in the report's phase order.
struct PhasesDto<'a>(&'a [Phase]);

impl Serialize for PhasesDto<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for p in self.0 {
            m.serialize_entry(
                p.category.name(),
                &MinMaxDto {
                    min_ms: p.time.min.ms(),
                    max_ms: p.time.max.ms(),
                },
            )?;
        }
        m.end()
    }
}

/// `{kind: {min_ms, max_ms}}` in group-kind order.
struct ExposedDto<'a>(&'a [Exposed]);

impl Serialize for ExposedDto<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for e in self.0 {
            m.serialize_entry(
                e.kind.name(),
                &MinMaxDto {
                    min_ms: e.time.min.ms(),
                    max_ms: e.time.max.ms(),
                },
            )?;
        }
        m.end()
    }
}

#[derive(Serialize)]
struct MemoryDto {
    stage: u64,
    weights_bytes: u64,
    gradients_bytes: u64,
    optimizer_bytes: u64,
    activations_bytes: u64,
    peak_bytes: u64,
    /// CUDA graph pool (in the peak), only when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    graph_pool_bytes: Option<u64>,
    /// Activations on the host (not in the peak), only with offloading.
    #[serde(skip_serializing_if = "Option::is_none")]
    offloaded_bytes: Option<u64>,
}

#[derive(Serialize)]
struct EngineDto {
    events: u64,
    simulated_ranks: u64,
    wall_ms: f64,
}

/// Non-finite numbers cannot be written as JSON; a report never holds one, but a zero keeps
/// the output valid if one slips through.
fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The report as pretty JSON with a trailing newline.
pub fn json(r: &Report) -> String {
    let dto = ReportDto {
        scenario: &r.scenario,
        world_size: r.world_size,
        iteration_time_ms: finite(r.iteration_time.ms()),
        flops_per_iteration: finite(r.flops.0),
        tflops_per_gpu: finite(r.tflops_per_gpu.0 / 1e12),
        peak_tflops: finite(r.peak.0 / 1e12),
        mfu: finite(r.mfu.0),
        tokens_per_second: finite(r.tokens_per_second.0),
        bubble_fraction: finite(r.bubble_fraction.0),
        parameters: ParametersDto {
            total: r.parameters.total,
            active: r.parameters.active,
            mtp: r.parameters.mtp,
            trainable: (r.parameters.trainable != r.parameters.total)
                .then_some(r.parameters.trainable),
        },
        phases: PhasesDto(&r.phases),
        exposed_communication: ExposedDto(&r.exposed),
        memory: r
            .memory
            .iter()
            .map(|m| MemoryDto {
                stage: m.stage,
                weights_bytes: m.weights.0,
                gradients_bytes: m.gradients.0,
                optimizer_bytes: m.optimizer.0,
                activations_bytes: m.activations.0,
                peak_bytes: m.peak.0,
                graph_pool_bytes: (m.graph_pool.0 > 0).then_some(m.graph_pool.0),
                offloaded_bytes: (m.offloaded.0 > 0).then_some(m.offloaded.0),
            })
            .collect(),
        memory_reserve_bytes: r.memory_reserve.0,
        engine: EngineDto {
            events: r.engine.events,
            simulated_ranks: r.engine.simulated_ranks,
            wall_ms: finite(r.engine.wall.ms()),
        },
        plan: PlanDto::of(&r.plan),
        tokens_per_iteration: r.tokens_per_iteration,
        train: r.train.as_ref().map(TrainDto::of),
        stragglers: r.stragglers.as_ref().map(StragglersDto::of),
        goodput: r.goodput.as_ref().map(GoodputDto::of),
        warnings: &r.warnings,
        schedule_bubble_fraction: finite(r.schedule_bubble_fraction.0),
        breakdown: BreakdownDto::of(&r.breakdown),
    };
    // Serialising plain structs, maps of strings and finite numbers cannot fail.
    let mut out = serde_json::to_string_pretty(&dto).unwrap_or_default();
    out.push('\n');
    out
}

/// The straggler section: times in ms, speeds as fractions, waits largest first.
#[derive(Serialize)]
struct StragglersDto {
    slow_gpus: u64,
    slowest_speed: f64,
    slow_links: u64,
    slowest_link_speed: f64,
    listed: Vec<SlowRankDto>,
    baseline_iteration_time_ms: f64,
    cost_ms: f64,
    cost_fraction: f64,
    /// The group kind of the first wait, or `null` when no peer waits longer.
    propagates_through: Option<&'static str>,
    waits: Vec<WaitDto>,
}

#[derive(Serialize)]
struct SlowRankDto {
    rank: u32,
    speed: f64,
}

#[derive(Serialize)]
struct WaitDto {
    group: &'static str,
    added_ms: f64,
}

impl StragglersDto {
    fn of(s: &super::straggler::Stragglers) -> StragglersDto {
        StragglersDto {
            slow_gpus: s.slow_gpus,
            slowest_speed: finite(s.slowest.0),
            slow_links: s.slow_links,
            slowest_link_speed: finite(s.slowest_link.0),
            listed: s
                .listed
                .iter()
                .map(|r| SlowRankDto {
                    rank: r.rank,
                    speed: finite(r.speed.0),
                })
                .collect(),
            baseline_iteration_time_ms: finite(s.baseline.ms()),
            cost_ms: finite(s.cost.ms()),
            cost_fraction: finite(s.share().0),
            propagates_through: s.path().map(|k| k.name()),
            waits: s
                .waits
                .iter()
                .map(|w| WaitDto {
                    group: w.kind.name(),
                    added_ms: finite(w.added.ms()),
                })
                .collect(),
        }
    }
}
