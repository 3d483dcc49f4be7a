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

use crate::report::{Report, Window};
use venus_base::base::Seconds;
use venus_lower::lower::{self, LowerError, LowerOptions, Lowered};
use venus_plan::plan::Scenario;
use venus_sim::engine::{self, EngineError, Options, Timeline};

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
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Lower(e) => write!(f, "cannot lower the scenario: {e}"),
            SimError::Engine(e) => write!(f, "simulation failed: {e}"),
            SimError::Read(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SimError {}

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
    let timeline = engine::simulate(&lowered.trace, &lowered.network, &Options::default())
        .map_err(SimError::Engine)?;
    let (start, end) = lowered.iteration_span(&timeline, iterations as usize - 1);
    let wall = Seconds(started.elapsed().as_secs_f64());
    let report = Report::new(sc, &lowered.trace, &timeline, Window { start, end }, wall);
    Ok(Simulation {
        report,
        lowered,
        timeline,
    })
}

/// What a replayed trace directory produced.
pub struct Replay {
    pub report: Report,
    pub trace: venus_sim::trace::Trace,
    pub timeline: Timeline,
    pub layout: venus_plan::plan::layout::Layout,
}

/// `sim --trace DIR`: runs the VenusSim simplified or template trace `files` (read through
/// `read`, by name) on `sc`'s cluster, at the GPU's peak × the plan's `mfu`, and reports the
/// whole run.
pub fn replay(
    sc: &Scenario,
    files: &[String],
    read: &mut dyn FnMut(&str) -> std::io::Result<Vec<u8>>,
) -> Result<Replay, SimError> {
    let started = Instant::now();
    let mfu = sc.plan.mfu.unwrap_or(venus_base::base::Ratio(1.0));
    let trace =
        crate::emit::read_trace(files, read, sc.cluster.gpu.peak, mfu).map_err(SimError::Read)?;
    let network =
        lower::network(&sc.cluster).map_err(|e| SimError::Lower(LowerError::Network(e)))?;
    let timeline =
        engine::simulate(&trace, &network, &Options::default()).map_err(SimError::Engine)?;
    let layout = venus_plan::plan::layout::Layout::for_scenario(sc)
        .map_err(|e| SimError::Lower(LowerError::Layout(e)))?;
    let window = Window::whole(&timeline);
    let wall = Seconds(started.elapsed().as_secs_f64());
    let report = Report::new(sc, &trace, &timeline, window, wall);
    Ok(Replay {
        report,
        trace,
        timeline,
        layout,
    })
}
