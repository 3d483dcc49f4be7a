//! The lower bound `sweep --prune` skips plans by: a figure no simulation of the plan can beat,
//! computed from the plan alone in microseconds where the simulation takes milliseconds.
//!
//! The bound on the iteration time is the busiest pipeline stage's compute:
//!
//! ```text
//! T_lb = max over stages s of ( microbatches × Σ_chunks (F(s, c) + B(s, c)) + O(s) )
//! ```
//!
//! with F, B and O the forward, backward and optimizer-step times of the compute model the
//! simulation lowers with ([`crate::cost::model_for`], the same call `lower::lower` makes).
//! It holds because every one of those ops is a node on its rank's compute stream, which runs
//! one node at a time (`venus_sim::engine`: "a stream runs its nodes one at a time"), every
//! microbatch passes every chunk of every stage once per iteration, a zero-bubble schedule's
//! B + W is at least the whole backward (`ComputeModel::input_gradient` never goes below
//! zero), and a one-iteration run's window starts at 0 (`Lowered::iteration_span`). Everything
//! else the simulation adds (bubbles, exposed communication, recompute collectives, waits) only
//! lengthens the iteration. A run of several iterations reports the last one, whose window
//! starts when the previous iteration's last rank ends, so a stage may have begun it earlier:
//! no bound is claimed there (0, never pruned).
//!
//! On Megatron's 1F1B and interleaved schedules the bound adds each stage's pipeline ramp:
//!
//! ```text
//! T_lb = max over s of ( Σ_{r<s} F(r, 0) + busy(s) + max(O(s), Σ_{r<s} B(r, 0) + O(0)) )
//! ```
//!
//! with busy(s) the stage's forwards and backwards. Stage s runs nothing before the first
//! microbatch's forward has passed model chunk 0 of every earlier rank (its first op is that
//! microbatch's forward of its chunk 0, virtual stage s, which receives from rank s − 1's chunk
//! 0), and its last op is the last microbatch's backward of chunk 0
//! (megatron/core/pipeline_parallel/schedules.py, `forward_backward_pipelining_without_interleaving`
//! and `..._with_interleaving`: the cooldown runs the remaining backwards, chunk 0 last), whose
//! input gradient every earlier rank's chunk 0 must then take in turn before rank 0's optimizer
//! step. P2P and waits only add to it. The zero-bubble schedules (whose last op may be a W) and
//! DualPipe (fed from both ends) keep the plain bound.
//!
//! Every objective is a monotone function of the iteration time for a fixed plan (tokens,
//! FLOPs, GPUs and the token budget do not depend on the time), so each objective's bound is
//! its figure at `T_lb`: [`objective_bound`].

use crate::cost::{model_for, ComputeModel, Pass};
use crate::plan::Scenario;
use crate::ty::Seconds;

use super::Objective;

/// Relative slack taken off the bound: the lowering rounds every piece of a chunk to whole
/// picoseconds (`Ps::from_seconds`), so the simulated sum may be a few picoseconds under the
/// sum of the cost model's seconds; 1e-6 of an iteration is far above that and far below any
/// difference between two plans worth ranking.
const ROUNDING_SLACK: f64 = 1e-6;

/// The iteration time no simulation of `sc` can beat (see the module docs); zero when the
/// plan simulates several iterations.
pub fn iteration_time_lower_bound(sc: &Scenario) -> Seconds {
    if sc.plan.iterations() > 1 {
        return Seconds(0.0);
    }
    let model = model_for(sc);
    let ramps = has_ramps(sc);
    let mut head = 0.0;
    let mut tail = 0.0;
    let mut busiest: f64 = 0.0;
    let first_optimizer = model.optimizer_step(0).0;
    for stage in 0..sc.pp.max(1) {
        let busy = stage_busy(sc, model.as_ref(), stage);
        let own = model.optimizer_step(stage).0;
        let after = if ramps && stage > 0 {
            own.max(tail + first_optimizer)
        } else {
            own
        };
        busiest = busiest.max(head + busy + after);
        if ramps {
            head += model.chunk(stage, 0, Pass::Forward).total.0;
            tail += model.chunk(stage, 0, Pass::Backward).total.0;
        }
    }
    Seconds(busiest * (1.0 - ROUNDING_SLACK))
}

/// Whether the plan runs Megatron's 1F1B or interleaved schedule, whose ramps the bound
/// counts (see the module docs).
fn has_ramps(sc: &Scenario) -> bool {
    use crate::base::ScheduleKind;
    sc.pp > 1
        && matches!(
            sc.schedule,
            Some(ScheduleKind::OneFOneB | ScheduleKind::Interleaved)
        )
}

/// One rank of pipeline stage `stage`: every microbatch's forward and backward over each of
/// its chunks, in seconds.
fn stage_busy(sc: &Scenario, model: &dyn ComputeModel, stage: u64) -> f64 {
    let per_microbatch: f64 = (0..sc.vpp.max(1))
        .map(|chunk| {
            model.chunk(stage, chunk, Pass::Forward).total.0
                + model.chunk(stage, chunk, Pass::Backward).total.0
        })
        .sum();
    sc.microbatches as f64 * per_microbatch
}

/// The best figure `objective` can rank `sc` at (lower is better, as
/// [`Objective::cost`]): its figure at the iteration-time bound, by the formulas the report
/// uses (`Report::new`, `TrainCost::of`).
pub fn objective_bound(objective: Objective, sc: &Scenario, time: Seconds) -> f64 {
    let t = time.0;
    let world = sc.world.max(1) as f64;
    let tokens = sc.global_batch as f64 * sc.model.seq as f64;
    let figure = match objective {
        Objective::Time => t * 1e3,
        // At t = 0 the figures are infinite: a plan the bound cannot judge is never pruned.
        Objective::Throughput => -(tokens / t / world),
        // Goodput is at most 1, so the throughput bound bounds its product too.
        Objective::Goodput => -(tokens / t / world),
        Objective::GpuHours => t * world / tokens,
        Objective::Mfu => {
            let flops = crate::report::megatron_flops(sc).0;
            -(flops / (t * world) / sc.cluster.gpu.peak.0)
        }
        Objective::TimeToTrain => super::train_iterations(sc).map_or(f64::INFINITY, |n| n * t),
        Objective::Cost => match (super::train_iterations(sc), sc.train.price) {
            (Some(n), Some(price)) => price.cost(n * t * world / 3600.0).0,
            _ => f64::INFINITY,
        },
    };
    if figure.is_nan() {
        return f64::NEG_INFINITY;
    }
    if figure.is_infinite() {
        return figure;
    }
    figure - figure.abs() * ROUNDING_SLACK
}
