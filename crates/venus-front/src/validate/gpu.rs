//! The rules on the GPU a plan runs on: E0312 (a precision the GPU has no tensor cores for)
//! and W0007 (a GPU whose `arch` has no compute-model calibration of its own).
//!
//! Input: the plan's `precision`, `mfu` and `measured`, the cluster's GPU, and the stdlib's
//! GPUs (the alternatives E0312 names). Output: [`PlanProblem`]s.
//! Invariants: a GPU has a precision exactly when its peak for it is written (`peak` for
//! bf16, `fp8_peak`, `fp4_peak`): no peak is ever invented from another one; W0007 speaks only
//! when the analytic model prices the compute (neither `mfu` nor `measured` is set).

use super::problem::{PlanProblem, PrecisionUnsupported, Uncalibrated};
use super::Validator;
use crate::ty::{GpuArch, Precision};

impl Validator<'_> {
    /// E0312: `precision fp8` / `fp4` on a GPU without FP8 / FP4 tensor cores. Megatron-LM
    /// asserts the same through Transformer Engine (`transformer_engine/pytorch/fp8.py`,
    /// `check_fp8_support`: "Device compute capability 8.9 or higher required for FP8").
    pub(super) fn check_precision(&mut self) {
        let p = &self.def.plan;
        let Some(precision) = p.precision.as_ref() else {
            return;
        };
        let gpu = &self.def.cluster.gpu;
        if gpu.peak_for(precision.value).is_some() {
            return;
        }
        let alternatives = self
            .stdlib_gpus
            .iter()
            .filter(|g| g.precisions.contains(&precision.value))
            .map(|g| g.name.clone())
            .collect();
        let problem = PrecisionUnsupported {
            precision: precision.value,
            precision_loc: precision.loc,
            gpu: gpu.name.clone(),
            gpu_loc: self.def.cluster.gpu_loc,
            supported: Precision::ALL
                .iter()
                .copied()
                .filter(|&q| gpu.peak_for(q).is_some())
                .collect(),
            alternatives,
        };
        self.report(PlanProblem::PrecisionUnsupported(problem));
    }

    /// W0007: the GPU's arch has no calibration of its own, so the analytic model borrows the
    /// nearest calibrated arch's constants (`cost::Calibration::for_arch`).
    pub(super) fn check_calibration(&mut self) {
        let p = &self.def.plan;
        if p.mfu.is_some() || p.measured.is_some() {
            return;
        }
        let gpu = &self.def.cluster.gpu;
        let arch = gpu.arch();
        if arch.is_calibrated() {
            return;
        }
        let problem = Uncalibrated {
            gpu: gpu.name.clone(),
            arch,
            fallback: arch.nearest_calibrated(),
            calibrated: GpuArch::ALL
                .iter()
                .copied()
                .filter(|a| a.is_calibrated())
                .collect(),
            gpu_loc: self.user_loc_of_gpu(),
            arch_loc: gpu.arch.as_ref().map(|a| a.loc),
        };
        self.report(PlanProblem::Uncalibrated(problem));
    }

    /// Where the user chose the GPU: the cluster's `gpu` item, or, when that item is the
    /// stdlib's (`cluster c : gb200_nvl72 < gpus 512 >`), the user's cluster, or the scenario.
    /// A warning there can be allowed in the user's own block (`allow W0007`).
    fn user_loc_of_gpu(&self) -> venus_diag::diag::Loc {
        let in_stdlib = |l: &venus_diag::diag::Loc| (l.file.0 as usize) < crate::db::STDLIB.len();
        [self.def.cluster.gpu_loc, self.def.cluster.loc, self.def.loc]
            .into_iter()
            .find(|l| !in_stdlib(l))
            .unwrap_or(self.def.cluster.gpu_loc)
    }
}
