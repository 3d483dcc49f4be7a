//! The simulation facade: a validated scenario → lowered trace → engine timeline → report.
//!
//! Input: a [`plan::Scenario`] and [`SimOptions`]. Output: [`Simulation`] (the report, and the
//! trace and timeline for the Perfetto export) or a [`SimError`]. The report covers the last
//! of the simulated iterations. Apart from `engine.wall_ms`, the result is a function of the
//! input alone.

use std::fmt;
use std::time::Instant;

use crate::engine::{self, EngineError, Options, Timeline};
use crate::plan::Scenario;
use crate::report::{Report, Window};
use crate::trace::lower::{self, LowerError, LowerOptions, Lowered};
use crate::ty::Seconds;

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
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Lower(e) => write!(f, "cannot lower the scenario: {e}"),
            SimError::Engine(e) => write!(f, "simulation failed: {e}"),
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
