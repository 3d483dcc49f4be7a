//! The expert-capacity rules (E0350): `moe_capacity_headroom` and `moe_pad_to_capacity` need a
//! mixture-of-experts model, and padding needs a capacity to pad to.
//!
//! Input: the [`Validator`]'s plan and model. Output: [`PlanProblem`]s.
//! Invariants: only written keys are checked.
//!
//! Source: megatron/core/transformer/transformer_config.py (d98e8a64): "moe_expert_capacity_factor
//! must be set to use moe_pad_expert_input_to_capacity"; the capacity applies to the routed
//! experts (moe_utils.py `get_capacity`), so a dense model has none.

use super::problem::{CapacityProblem, PlanProblem};
use super::Validator;

impl Validator<'_> {
    pub(super) fn check_capacity(&mut self) {
        let p = &self.def.plan;
        let m = &self.def.model;
        let headroom = p.moe_capacity_headroom.as_ref().map(|s| s.loc);
        let pad = p
            .moe_pad_to_capacity
            .as_ref()
            .filter(|s| s.value)
            .map(|s| s.loc);
        if m.experts.is_none() {
            if let Some(at) = headroom.or(pad) {
                self.report(PlanProblem::Capacity(CapacityProblem::Dense {
                    model: m.name.clone(),
                    at,
                    key: if headroom.is_some() {
                        "moe_capacity_headroom"
                    } else {
                        "moe_pad_to_capacity"
                    },
                }));
            }
            return;
        }
        if let (Some(at), None) = (pad, headroom) {
            self.report(PlanProblem::Capacity(CapacityProblem::PadWithoutCapacity {
                at,
            }));
        }
    }
}
