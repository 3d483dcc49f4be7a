//! The memory rules: E0401 (the largest pipeline stage does not fit the GPU) and W0005 (it
//! uses more than 90% of it), with the stage's breakdown and a computed repair.
//!
//! Input: a [`Scenario`] whose per-stage memory is filled in. Output: [`PlanProblem`]s.
//! Invariants: only the largest stage is reported (the others are counted); the help comes
//! from [`super::repair`], which evaluates the same memory model.

use super::problem::{MemoryBreakdown, MemoryProblem, PlanProblem, StateKeeping, Written};
use super::repair::repair;
use super::{worst, Bytes, Validator, MEMORY_WARN};
use venus_plan::plan::Scenario;

impl Validator<'_> {
    pub(super) fn check_memory(&mut self, sc: &Scenario) {
        let Some(w) = worst(&sc.memory).copied() else {
            return;
        };
        let gpu = &sc.cluster.gpu;
        let cap = gpu.memory;
        // The check is peak + reserve <= capacity: the stage peaks are compared with what the
        // reserve leaves.
        let (reserve, _) = sc.reserve();
        let need = Bytes(w.peak.0.saturating_add(reserve.0));
        let over = need > cap;
        let warn_at = Bytes((cap.0 as f64 * MEMORY_WARN) as u64);
        if !over && need <= warn_at {
            return;
        }
        let target = if over { cap } else { warn_at };
        let p = &self.def.plan;
        let written = Written::of(&[("tp", &p.tp), ("pp", &p.pp), ("dp", &p.dp)]);
        let breakdown = MemoryBreakdown {
            stage: w.stage,
            peak: w.peak,
            weights: w.weights,
            params: w.params.saturating_add(w.expert_params),
            gradients: w.gradients,
            optimizer: w.optimizer,
            sharded_over: (sc.flags.distributed_optimizer
                || sc.flags.fsdp.is_some_and(|f| f.shards_optimizer()))
            .then(|| sc.dp * sc.cp),
            activations: w.activations,
            layers: w.layers,
            in_flight: w.in_flight,
            recompute: sc.recompute,
            state: state_keeping(sc, &w),
        };
        let others = sc
            .memory
            .iter()
            .filter(|s| s.peak.0.saturating_add(reserve.0) > target.0)
            .count();
        let problem = MemoryProblem {
            over,
            gpu: gpu.name.clone(),
            capacity: cap,
            reserve,
            capacity_loc: self.def.cluster.gpu.memory.loc,
            plan_loc: p.loc,
            written,
            breakdown,
            over_limit: (others > 1).then_some((others, sc.memory.len())),
            repair: repair(self, sc, target),
        };
        self.report(PlanProblem::Memory(problem));
    }
}

/// The dtypes, LoRA share and FSDP strategy the notes of a stage's model state name.
fn state_keeping(sc: &Scenario, w: &venus_plan::plan::StageMemory) -> StateKeeping {
    let r = &sc.recipe;
    StateKeeping {
        grads: r.main_grads.word(),
        optimizer: [
            r.master_weights.word(),
            r.moments.word(),
            r.second_moment.word(),
        ],
        trainable: sc.plan.lora().then_some(w.trainable_params),
        fsdp: sc.flags.fsdp.map(|f| f.word()),
    }
}
