//! venus-plan: the validated scenario as plain data, and the per-rank schedule.
//!
//! Input: plain specs (built by the rules in `venus-front`, or directly by the sweep and the
//! tests). Output: [`plan`] (the [`plan::Scenario`] with every derived value, the rank layout
//! and the memory model) and [`schedule`] (each pipeline rank's op order, bubble figures).
//! Invariants: this crate never sees the type checker or the syntax tree; a `Scenario` exists
//! only for a plan the rules accepted, so the code here may rely on tp × pp × cp × dp = world,
//! exact divisions and a valid layer split.

pub mod plan;
pub mod schedule;
