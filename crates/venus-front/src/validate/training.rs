//! The rules on what a plan trains and how its model state is kept: E0319 (LoRA keys without
//! `task lora`), E0320 (an FSDP implementation Megatron-LM rejects for the plan), E0321
//! (precision-aware optimizer dtypes without the distributed optimizer) and E0346
//! (`optimizer_offload` without it).
//!
//! Input: the plan's `task`, `lora_*`, `fsdp`, optimizer dtype items, pp, ep and the model's
//! embeddings. Output: [`PlanProblem`]s. Invariant: each rule cites the Megatron-LM (or
//! Megatron-Bridge) source it reproduces; the fixes are computed here.

use super::problem::{
    LoraWithoutTask, OffloadWithoutSharding, OptimizerDtypeWithoutSharding, PlanProblem,
    TorchFsdpLimit, TorchFsdpUnsupported,
};
use super::{loc_of, on, Validator};
use venus_base::base::{Dtype, FsdpImpl, Task};

impl Validator<'_> {
    /// E0319: `lora_rank` / `lora_modules` shape adapters that only `task lora` builds
    /// (Megatron-Bridge applies `peft.LoRA` only to a PEFT run, training/setup.py).
    pub(super) fn check_lora_keys(&mut self) {
        let p = &self.def.plan;
        let task = p.task.as_ref();
        if task.is_some_and(|t| t.value == Task::Lora) {
            return;
        }
        let mut keys = Vec::new();
        if let Some(r) = &p.lora_rank {
            keys.push((format!("lora_rank {}", r.value), r.loc));
        }
        if let Some(m) = &p.lora_modules {
            keys.push(("lora_modules".to_string(), m.loc));
        }
        if keys.is_empty() {
            return;
        }
        let problem = LoraWithoutTask {
            plan: self.plan_name(),
            keys,
            task: task.map(|t| (t.value.word(), t.loc)),
        };
        self.report(PlanProblem::LoraWithoutTask(problem));
    }

    /// E0320: `--use-torch-fsdp2` is not supported with pipeline or expert parallelism, with
    /// MCore's distributed optimizer, or with tied embeddings
    /// (megatron/training/arguments.py:1031-1045 @d98e8a64).
    pub(super) fn check_fsdp(&mut self) {
        let p = &self.def.plan;
        let (Some(strategy), Some(imp)) = (&p.fsdp, &p.fsdp_impl) else {
            return;
        };
        if imp.value != FsdpImpl::Torch {
            return;
        }
        let mut limits = Vec::new();
        if self.pp > 1 {
            limits.push(TorchFsdpLimit::Pipeline {
                pp: self.pp,
                loc: loc_of(&p.pp),
            });
        }
        if self.ep > 1 {
            limits.push(TorchFsdpLimit::Expert {
                ep: self.ep,
                loc: loc_of(&p.ep),
            });
        }
        if on(&p.distributed_optimizer) {
            limits.push(TorchFsdpLimit::DistributedOptimizer {
                loc: loc_of(&p.distributed_optimizer),
            });
        }
        if !self.def.model.untied_embeddings() {
            limits.push(TorchFsdpLimit::TiedEmbeddings {
                model: self.def.model.name.clone(),
            });
        }
        if limits.is_empty() {
            return;
        }
        let problem = TorchFsdpUnsupported {
            strategy: strategy.value.word(),
            loc: strategy.loc,
            limits,
        };
        self.report(PlanProblem::TorchFsdpUnsupported(problem));
    }

    /// E0321: the precision-aware optimizer's lower-precision master weights and moments exist
    /// only in the distributed optimizer (megatron/core/optimizer/__init__.py:1057-1060
    /// @d98e8a64: "--use-precision-aware-optimizer only supported with distributed optimizer";
    /// Megatron-FSDP v1 turns the distributed optimizer on, arguments.py:1128-1136).
    pub(super) fn check_optimizer_dtypes(&mut self) {
        let p = &self.def.plan;
        if on(&p.distributed_optimizer) || p.fsdp.is_some() {
            return;
        }
        let written = [
            ("main_params_dtype", &p.main_params_dtype),
            ("exp_avg_dtype", &p.exp_avg_dtype),
            ("exp_avg_sq_dtype", &p.exp_avg_sq_dtype),
        ];
        let keys: Vec<_> = written
            .iter()
            .filter_map(|(key, d)| {
                d.as_ref()
                    .filter(|d| d.value != Dtype::Fp32)
                    .map(|d| (*key, d.value.word(), d.loc))
            })
            .collect();
        if keys.is_empty() {
            return;
        }
        let problem = OptimizerDtypeWithoutSharding {
            keys,
            distributed_optimizer_off: loc_of(&p.distributed_optimizer),
        };
        self.report(PlanProblem::OptimizerDtypeWithoutSharding(problem));
    }

    /// E0346: `optimizer_offload` (Megatron's `--optimizer-cpu-offload`) needs
    /// `--use-precision-aware-optimizer` (megatron/training/arguments.py:1884-1888 at
    /// d98e8a64: "The optimizer cpu offload must be used in conjunction with
    /// `--use-precision-aware-optimizer`"), which exists only in the distributed optimizer
    /// (megatron/core/optimizer/__init__.py:1057-1060); Megatron-FSDP runs the distributed
    /// optimizer (arguments.py:1128-1136) and offloads through it
    /// (megatron/core/optimizer/fully_sharded_optimizer.py:79).
    pub(super) fn check_optimizer_offload(&mut self) {
        let p = &self.def.plan;
        if on(&p.distributed_optimizer) || p.fsdp.is_some() {
            return;
        }
        let Some(offload) = &p.optimizer_offload else {
            return;
        };
        if offload.value.0 <= 0.0 {
            return;
        }
        let problem = OffloadWithoutSharding {
            fraction: offload.value.0,
            loc: offload.loc,
            distributed_optimizer_off: loc_of(&p.distributed_optimizer),
        };
        self.report(PlanProblem::OffloadWithoutSharding(problem));
    }

    /// `plan `p`` or `the plan` for an inline one.
    pub(super) fn plan_name(&self) -> String {
        match &self.def.plan.name {
            Some(n) => format!("plan `{n}`"),
            None => "the plan".to_string(),
        }
    }
}
