//! The simulation facade: a validated scenario → lowered trace → engine timeline → report.
//! The one place that drives lowering, the engine and the report together, for the CLI, the
//! language server, sweeps and the published-runs harness alike.
//!
//! Input: a [`plan::Scenario`] and [`SimOptions`] ([`simulate`]), or a scenario and the files
//! of a VenusSim trace directory ([`replay`]). Output: [`Simulation`] / [`Replay`] (the report,
//! and the trace and timeline for the Perfetto export) or a [`SimError`]. The report covers the last
//! of the simulated iterations. Apart from `engine.wall_ms`, the result is a function of the
//! input alone.

use std::fmt;
use std::time::Instant;

use crate::report::{Headline, Report, Window};
use venus_base::base::Seconds;
use venus_diag::diag::{Code, Diagnostic};
use venus_lower::lower::{self, LowerError, LowerOptions, Lowered};
use venus_plan::plan::Provenance;
use venus_plan::plan::Scenario;
use venus_sim::engine::{self, EngineError, Options, Timeline, OVERFLOW_DAYS};

#[derive(Clone, Copy, Debug, Default)]
pub struct SimOptions {
    /// Simulate every rank instead of one per symmetry class.
    pub all_ranks: bool,
    /// Overrides the plan's `iterations`.
    pub iterations: Option<u32>,
}

/// Everything one simulation produced.
pub struct Simulation {
    pub report: Report,
    pub lowered: Lowered,
    pub timeline: Timeline,
}

#[derive(Debug)]
pub enum SimError {
    Lower(LowerError),
    Engine(EngineError),
    /// A trace file of a replayed directory could not be read.
    Read(crate::emit::ReadError),
    /// The replayed directory's trace files hold no node at all (E0606).
    EmptyTrace {
        files: usize,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Lower(e) => write!(f, "cannot lower the scenario: {e}"),
            SimError::Engine(e) => write!(f, "simulation failed: {e}"),
            SimError::Read(e) => write!(f, "{e}"),
            SimError::EmptyTrace { files } => write!(
                f,
                "the {files} trace files hold no node: there is nothing to simulate"
            ),
        }
    }
}

impl std::error::Error for SimError {}

impl SimError {
    /// The code of a failure the input caused (see [`SimError::diagnostic`]).
    pub fn code(&self) -> Option<Code> {
        match self {
            SimError::Lower(LowerError::OverBudget { .. } | LowerError::TooManyRanks { .. }) => {
                Some(Code::E0601)
            }
            SimError::Engine(EngineError::TimeOverflow { .. }) => Some(Code::E0602),
            SimError::EmptyTrace { .. } => Some(Code::E0606),
            _ => Some(Code::E0620),
        }
    }

    /// The coded diagnostic of a failure, labelled at the scenario's plan: a trace over its
    /// budget (E0601), a run past the engine's time range (E0602), an empty replay (E0606).
    /// Anything else is a plan validation accepted and the lowering or the engine could not
    /// run: E0620, which says so instead of passing for a problem of the file.
    pub fn diagnostic(&self, sc: &Scenario, at: &Provenance, opts: &SimOptions) -> Diagnostic {
        self.input_diagnostic(sc, at, opts)
            .unwrap_or_else(|| self.internal_diagnostic(sc, at))
    }

    /// E0620: validation let the plan through, and a later stage refused it.
    fn internal_diagnostic(&self, sc: &Scenario, at: &Provenance) -> Diagnostic {
        Diagnostic::new(
            Code::E0620,
            format!(
                "venusc could not simulate `{}`, which it validated",
                sc.name
            ),
            at.plan,
            "this plan",
        )
        .with_note(self.to_string())
        .with_help(format!(
            "this is a venusc bug, not a problem of the file: report it with the file (the \
             {} stage failed); meanwhile `venusc check --memory` still gives the memory model",
            self.stage()
        ))
    }

    /// The pipeline stage a failure came from, for E0620's report.
    fn stage(&self) -> &'static str {
        match self {
            SimError::Lower(_) => "lowering",
            SimError::Engine(_) => "engine",
            SimError::Read(_) | SimError::EmptyTrace { .. } => "trace reader",
        }
    }

    fn input_diagnostic(
        &self,
        sc: &Scenario,
        at: &Provenance,
        opts: &SimOptions,
    ) -> Option<Diagnostic> {
        match self {
            SimError::Lower(LowerError::OverBudget { nodes, budget }) => Some(
                Diagnostic::new(
                    Code::E0601,
                    format!(
                        "the trace of `{}` would hold about {nodes} nodes, over the simulation \
                         budget of {budget}",
                        sc.name
                    ),
                    at.plan,
                    "this plan",
                )
                .with_help(node_budget_help(sc, opts, *nodes, *budget))
                .with_note(format!(
                    "nodes grow with iterations × microbatches × layers (with tp > 1) × \
                     simulated ranks; {budget} nodes are about 5 GiB of engine state"
                )),
            ),
            SimError::Lower(LowerError::TooManyRanks { ranks, budget }) => Some(
                Diagnostic::new(
                    Code::E0601,
                    format!(
                        "`--all-ranks` would simulate {ranks} ranks of `{}` one by one, over \
                         the budget of {budget}",
                        sc.name
                    ),
                    at.cluster,
                    format!("{ranks} GPUs"),
                )
                .with_help(
                    "drop `--all-ranks`: the symmetric run simulates one rank per stage and \
                     gives the same report",
                ),
            ),
            SimError::Engine(EngineError::TimeOverflow { op }) => {
                let d = Diagnostic::new(
                    Code::E0602,
                    format!(
                        "simulated time of `{}` exceeds {OVERFLOW_DAYS} days, the engine's range",
                        sc.name
                    ),
                    at.plan,
                    "this plan",
                )
                .with_help(time_overflow_help(sc));
                Some(match op {
                    Some(op) => d.with_note(format!("{op} would end past 2^64 ps")),
                    None => d,
                })
            }
            SimError::EmptyTrace { files } => Some(
                Diagnostic::new(
                    Code::E0606,
                    format!(
                        "the {files} trace files replayed on `{}` hold no node: there is \
                         nothing to simulate",
                        sc.name
                    ),
                    at.scenario,
                    "replayed on this scenario's cluster",
                )
                .with_help(
                    "write the traces again (`venusc compile FILE --emit simplified-trace -o DIR`) \
                     or point `--trace` at the directory that holds them",
                ),
            ),
            _ => None,
        }
    }
}

/// The one change that brings the trace under its budget: fewer iterations, fewer
/// microbatches (a smaller `global_batch`), fewer layers, or the symmetric run.
pub(crate) fn node_budget_help(
    sc: &Scenario,
    opts: &SimOptions,
    nodes: u64,
    budget: u64,
) -> String {
    let factor = nodes.div_ceil(budget.max(1)).max(2);
    let iterations = opts.iterations.map_or(sc.plan.iterations(), u64::from);
    if iterations > 1 {
        return format!(
            "simulate fewer iterations: `iterations {}` or fewer fits (the report is of the \
             last one, and each iteration repeats the same schedule)",
            (iterations / factor).max(1)
        );
    }
    if opts.all_ranks {
        return "drop `--all-ranks`: the symmetric run gives the same report".to_string();
    }
    // Microbatches, in steps of micro_batch × dp (E0305), and not below pp (E0306).
    let step = sc.micro_batch.saturating_mul(sc.dp).max(1);
    let microbatches = (sc.microbatches / factor).max(sc.pp.max(1));
    if microbatches < sc.microbatches {
        return format!(
            "lower `global_batch` from {} to {} or less: the trace grows with the microbatches",
            sc.global_batch,
            microbatches.saturating_mul(step)
        );
    }
    let per_stage = sc.pp.saturating_mul(sc.vpp).max(1);
    let layers = (sc.model.layers / factor / per_stage).max(1) * per_stage;
    format!(
        "lower `layers` from {} to {layers} or less: with tp > 1 every layer adds its own \
         collectives",
        sc.model.layers
    )
}

/// Where a time past 213 days comes from: a compute or network rate near zero.
fn time_overflow_help(sc: &Scenario) -> String {
    match sc.plan.mfu {
        Some(mfu) if mfu.0 < 1e-3 => format!(
            "`mfu` is {:e}: write the measured MFU (such as `mfu 40%`), or remove `mfu` for \
             the simulator's own compute model",
            mfu.0
        ),
        _ => "check the GPU's `peak` and each `dim`'s bandwidth and latency: one of them \
              makes a node last longer than 213 days"
            .to_string(),
    }
}

/// Simulates `sc` and reports its last iteration.
pub fn simulate(sc: &Scenario, opts: &SimOptions) -> Result<Simulation, SimError> {
    let started = Instant::now();
    let iterations = opts
        .iterations
        .unwrap_or_else(|| u32::try_from(sc.plan.iterations()).unwrap_or(u32::MAX))
        .max(1);
    let lowered = lower::lower(
        sc,
        &LowerOptions {
            all_ranks: opts.all_ranks,
            iterations,
        },
    )
    .map_err(SimError::Lower)?;
    let timeline = engine::run_trace(&lowered.trace, &lowered.network, &Options::default())
        .map_err(SimError::Engine)?;
    let (start, end) = lowered.iteration_span(&timeline, iterations as usize - 1);
    let window = Window { start, end };
    let mut report = Report::new(sc, &lowered.trace, &timeline, window, Seconds(0.0));
    let slow = sc.cluster.slow_ranks();
    let links = sc.cluster.slow_links();
    if !slow.is_empty() || !links.is_empty() {
        report.stragglers = Some(against_baseline(
            sc, opts, &report, &slow, &links, &lowered, &timeline,
        )?);
    }
    report.engine.wall = Seconds(started.elapsed().as_secs_f64());
    Ok(Simulation {
        report,
        lowered,
        timeline,
    })
}

/// The [`Headline`] figures of `sc` simulated as [`simulate`] simulates it with the default
/// options, without building the report: the same lowering, engine run and window, so every
/// figure equals the report's, and no per-rank attribution (what a sweep ranks by).
pub fn headline(sc: &Scenario) -> Result<Headline, SimError> {
    let iterations = u32::try_from(sc.plan.iterations())
        .unwrap_or(u32::MAX)
        .max(1);
    let lowered = lower::lower(
        sc,
        &LowerOptions {
            all_ranks: false,
            iterations,
        },
    )
    .map_err(SimError::Lower)?;
    let timeline = engine::run_trace(&lowered.trace, &lowered.network, &Options::default())
        .map_err(SimError::Engine)?;
    let (start, end) = lowered.iteration_span(&timeline, iterations as usize - 1);
    Ok(Headline::of(sc, Window { start, end }))
}

/// The straggler section: the same plan simulated without its `slow_*` items (`slow_link`
/// among them), compared
/// with `report` (the run with them). The baseline keeps the symmetric mode of the run.
fn against_baseline(
    sc: &Scenario,
    opts: &SimOptions,
    report: &Report,
    slow: &[venus_plan::plan::straggler::SlowRank],
    links: &[venus_plan::plan::straggler::SlowRank],
    lowered: &Lowered,
    timeline: &Timeline,
) -> Result<crate::report::straggler::Stragglers, SimError> {
    use crate::report::straggler::{comm_by_kind, stragglers};
    let mut plain = sc.clone();
    plain.cluster.slow.clear();
    let base = simulate(&plain, opts)?;
    let with = comm_by_kind(&lowered.trace, timeline, report.window);
    let without = comm_by_kind(&base.lowered.trace, &base.timeline, base.report.window);
    Ok(stragglers(report, slow, links, with, &base.report, without))
}

/// What a replayed trace directory produced.
pub struct Replay {
    pub report: Report,
    pub trace: venus_sim::trace::Trace,
    pub timeline: Timeline,
    pub layout: venus_plan::plan::layout::Layout,
}

/// The iterations a VenusSim trace holds: one more than the largest `~iter~I~` of the first
/// trace file's node names (every data-parallel node carries one, trace-generator/generator/
/// overlap_grad_reduce_helper.py), 1 when none does.
pub fn trace_iterations(
    files: &[String],
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
) -> u64 {
    let Some(first) = files.iter().find(|f| f.ends_with(".et")) else {
        return 1;
    };
    let Ok(bytes) = read(first) else {
        return 1;
    };
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once("~iter~")?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse::<u64>().ok()
        })
        .max()
        .map_or(1, |i| i.saturating_add(1))
}

/// `sim --trace DIR`: runs the VenusSim simplified or template trace `files` (read through
/// `read`, by name) on `sc`'s cluster, at the GPU's peak × the plan's `mfu`, and reports the
/// mean iteration: the whole run over `iterations`, or over the traces' own count
/// ([`trace_iterations`]) when `None`.
pub fn replay(
    sc: &Scenario,
    files: &[String],
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
    iterations: Option<u64>,
) -> Result<Replay, SimError> {
    let started = Instant::now();
    let mfu = sc.plan.mfu.unwrap_or(venus_base::base::Ratio(1.0));
    let trace =
        crate::emit::read_trace(files, read, sc.cluster.gpu.peak, mfu).map_err(SimError::Read)?;
    if trace.node_count() == 0 {
        // An iteration time of 0 ms would be a report of nothing.
        let traces = files.iter().filter(|f| f.ends_with(".et")).count();
        return Err(SimError::EmptyTrace { files: traces });
    }
    let network =
        lower::network(&sc.cluster).map_err(|e| SimError::Lower(LowerError::Network(e)))?;
    let timeline =
        engine::run_trace(&trace, &network, &Options::default()).map_err(SimError::Engine)?;
    let layout = venus_plan::plan::layout::Layout::for_scenario(sc)
        .map_err(|e| SimError::Lower(LowerError::Layout(e)))?;
    let window = Window::whole(&timeline);
    let wall = Seconds(started.elapsed().as_secs_f64());
    let iterations = iterations.unwrap_or_else(|| trace_iterations(files, read));
    let report = Report::new(sc, &trace, &timeline, window, wall).per_iteration(iterations);
    Ok(Replay {
        report,
        trace,
        timeline,
        layout,
    })
}
