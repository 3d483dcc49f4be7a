//! venus-lower: a validated scenario → per-rank trace and network, with the cost models.
//!
//! Input: a [`venus_plan::plan::Scenario`] and lowering options. Output: [`cost`] (analytic and
//! VenusSim compute models, calibration) and [`lower`] (the trace of every simulated rank, the
//! network, the layout and what a report needs).
//! Invariants: never sees the type checker, a span or a diagnostic; durations are typed
//! (`Seconds`, `Ps`), never bare floats across a module border.

pub mod cost;
pub mod lower;
