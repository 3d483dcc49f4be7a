//! The rules on boolean plan flags: E0310 (a flag that needs another flag) as one table, and
//! W0006 (sp with tp 1).
//!
//! Input: the plan's flags and tp. Output: [`PlanProblem`]s.
//! Invariants: E0310 reports the rows of [`NEEDS`] in table order, one problem per row that
//! applies; a flag counts as set only when written `true`.

use super::problem::{Flag, FlagFix, FlagNeeds, P2pOverlapIgnored, PlanProblem, SpWithoutTp};
use super::{loc_of, on, Opt, ScheduleKind, Validator};
use crate::ty::Plan;

/// One "flag needs flag" rule of E0310.
struct Needs {
    flag: Flag,
    needs: Flag,
    /// What the flag does (the primary label).
    label: &'static str,
    fix: FlagFix,
}

/// E0310's rules in report order; the comment above each row cites where Megatron-LM states it.
const NEEDS: &[Needs] = &[
    // megatron/training/arguments.py:1025-1027 (D01)
    Needs {
        flag: Flag::OverlapParamGather,
        needs: Flag::DistributedOptimizer,
        label: "gathers parameters sharded by the distributed optimizer",
        fix: FlagFix::Add,
    },
    // megatron/training/arguments.py:1028-1029 (D02)
    Needs {
        flag: Flag::OverlapParamGather,
        needs: Flag::OverlapGradReduce,
        label: "overlaps the parameter all-gather",
        fix: FlagFix::Add,
    },
    // megatron/training/arguments.py:1442 (P02): "Tensor parallel communication/GEMM overlap
    // can happen only when sequence parallelism is enabled".
    Needs {
        flag: Flag::OverlapTpComm,
        needs: Flag::Sp,
        label: "overlaps the sequence-parallel all-gathers and reduce-scatters",
        fix: FlagFix::Add,
    },
    // megatron/training/training.py `train` (@core_v0.7.0, the release with these flags):
    // `delay_param_gather` is read only under `overlap_param_gather`, `delay_grad_reduce`
    // only under `overlap_grad_reduce`; Megatron ignores them otherwise, venusc rejects them.
    Needs {
        flag: Flag::DelayParamGather,
        needs: Flag::OverlapParamGather,
        label: "delays an overlapped all-gather",
        fix: FlagFix::AddOrRemove,
    },
    Needs {
        flag: Flag::DelayGradReduce,
        needs: Flag::OverlapGradReduce,
        label: "delays an overlapped reduction",
        fix: FlagFix::AddOrRemove,
    },
];

/// The plan item of a flag.
fn item(p: &Plan, flag: Flag) -> &Opt<bool> {
    match flag {
        Flag::Sp => &p.sp,
        Flag::DistributedOptimizer => &p.distributed_optimizer,
        Flag::OverlapGradReduce => &p.overlap_grad_reduce,
        Flag::OverlapParamGather => &p.overlap_param_gather,
        Flag::DelayGradReduce => &p.delay_grad_reduce,
        Flag::DelayParamGather => &p.delay_param_gather,
        Flag::OverlapTpComm => &p.overlap_tp_comm,
    }
}

impl Validator<'_> {
    pub(super) fn check_optimizer_flags(&mut self) {
        let p = &self.def.plan;
        let mut out = Vec::new();
        for row in NEEDS {
            let Some(flag) = item(p, row.flag).as_ref().filter(|s| s.value) else {
                continue;
            };
            if on(item(p, row.needs)) {
                continue;
            }
            // arguments.py:1025-1027: Megatron-FSDP gathers its own sharded parameters.
            let megatron_fsdp = p
                .fsdp_impl
                .as_ref()
                .is_some_and(|i| i.value == venus_base::base::FsdpImpl::Megatron);
            if row.needs == Flag::DistributedOptimizer && megatron_fsdp {
                continue;
            }
            // The distributed optimizer written off is the other factor worth pointing at.
            let needs_off = match row.needs {
                Flag::DistributedOptimizer => loc_of(item(p, row.needs)),
                _ => None,
            };
            out.push(FlagNeeds {
                flag: row.flag,
                needs: row.needs,
                flag_loc: flag.loc,
                label: row.label,
                fix: row.fix,
                needs_off,
            });
        }
        for problem in out {
            self.report(PlanProblem::FlagNeeds(problem));
        }
    }

    // megatron/training/arguments.py:1012 clears `overlap_p2p_comm` when vpp is None and
    // megatron/core/pipeline_parallel/schedules.py:2183 (S05) refuses it on the non-interleaved
    // schedule; venusc overlaps p2p only in the interleaved one
    // (`PipelineShape::overlap_p2p_effective`), so elsewhere the flag changes nothing: W0025.
    pub(super) fn check_overlap_p2p_without_interleaving(&mut self) {
        let p = &self.def.plan;
        let Some(flag) = p.overlap_p2p.as_ref().filter(|f| f.value) else {
            return;
        };
        let explicit = p.schedule.as_ref().map(|s| s.value);
        let schedule = super::resolved_schedule(self.pp, self.vpp, explicit);
        if schedule == Some(ScheduleKind::Interleaved) {
            return;
        }
        let problem = P2pOverlapIgnored {
            loc: flag.loc,
            pp: self.pp,
            schedule,
            vpp: self.interleaving_vpp(),
        };
        self.report(PlanProblem::P2pOverlapIgnored(problem));
    }

    // megatron/training/arguments.py:1434-1439 (P01): sp is silently disabled when tp = 1.
    pub(super) fn check_sp_without_tp(&mut self) {
        let p = &self.def.plan;
        let Some(s) = p.sp.as_ref().filter(|s| s.value) else {
            return;
        };
        if self.tp > 1 {
            return;
        }
        let problem = SpWithoutTp {
            sp_loc: s.loc,
            tp_loc: loc_of(&p.tp),
        };
        self.report(PlanProblem::SpWithoutTp(problem));
    }
}
